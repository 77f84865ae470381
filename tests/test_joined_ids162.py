"""Task 162: the server ids of runs of Claude's messages that repair joins (``joined_server_ids``) are one
shared order that each joined run's view reads a longer prefix of, not a copy of the ids so far per run:
thousands of rounds of searches whose user messages repair removes under ``drop-call`` copied a growing
set each round (quadratic). What each view holds is as before: an earlier run's view never sees the ids
of a run joined after it, unless a late-paired segment gave them to it alone."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from fsm import history
from fsm.history import RepairPolicy
from fsm.history.joined_runs import Dropped, RunIds, ServerRuns
from tests.test_hostile_audit80 import ASK, a, res, srv, u, use

repair_module = importlib.import_module("fsm.history.repair")

DROP = RepairPolicy(dangling="drop-call")


def _searched(key: str) -> dict[str, Any]:
    return {"type": "web_search_tool_result", "tool_use_id": key, "content": []}


def _rounds(n: int, key: str = "w{}") -> list[dict[str, Any]]:
    """Each round a search and a client call no result answers, then the user's message of an orphan:
    under drop-call both go, and every round joins the run before it."""
    conversation = [ASK]
    for i in range(n):
        k = key.format(i)
        conversation += [a(srv(k, "web_search"), _searched(k), use(f"t{i}", None)), u(res(f"o{i}"))]
    return conversation


def _runs_of(monkeypatch: pytest.MonkeyPatch, conversation: list[dict[str, Any]]) -> tuple[ServerRuns, Any]:
    made: list[ServerRuns] = []

    class Recorded(ServerRuns):
        def __init__(self, doomed: Dropped = frozenset()) -> None:
            super().__init__(doomed)
            made.append(self)

    monkeypatch.setattr(repair_module, "ServerRuns", Recorded)
    out = history.repair(conversation, DROP, format="anthropic")
    return made[-1], out  # (the last pass's, were there two)


def test_joined_runs_share_one_order_each_view_a_longer_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    n = 50
    runs, (fixed, changes) = _runs_of(monkeypatch, _rounds(n))
    assert [m["role"] for m in fixed] == ["user", "assistant"]  # one run: every round joined
    assert not [c for c in changes if c.kind == "renamed-call"]
    assert len(runs.taken) == n and len({id(view.order) for view in runs.taken}) == 1  # one order, shared
    assert list(runs.ids.order) == [f"w{i}" for i in range(n)]  # each id once: no copy per run
    assert [view.count for view in runs.taken] == list(range(1, n + 1))
    first, last = runs.taken[0], runs.taken[-1]
    assert first.among({"w0", "w1", f"w{n - 1}"}) == {"w0"}  # an earlier view reads none joined after it
    assert last.among({"w0", f"w{n - 1}", "w-none"}) == {"w0", f"w{n - 1}"}


def test_a_search_id_reused_across_joined_rounds_is_still_renamed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shared order answers as the copies did: the second round's search under one id is renamed."""
    runs, (fixed, changes) = _runs_of(monkeypatch, _rounds(3, key="w"))
    renamed = [(c.message, c.detail) for c in changes if c.kind == "renamed-call"]
    assert [at for at, _ in renamed] == [4, 6] and "joins" in renamed[0][1]
    ids = [b["id"] for m in fixed if isinstance(m["content"], list) for b in m["content"] if "id" in b]
    # the run's ids as repair leaves them: each rename held where its old id was (task 165), none twice
    assert ids == ["w", "w_d2", "w_d3"] and list(runs.ids.order) == ["w", "w_d2", "w_d3"]
    assert history.check(fixed, "anthropic").findings == ()


def test_an_earlier_view_takes_ids_of_its_own_without_the_later_views_seeing_them() -> None:
    """A segment paired late gives ids to an earlier run's view: that view alone holds them."""
    earlier = RunIds({"a": 0})
    later = earlier.joined({"b"})
    earlier.take({"c"})  # (not the order's longest view: its own)
    assert earlier.among({"a", "b", "c"}) == {"a", "c"} and later.among({"a", "b", "c"}) == {"a", "b"}
    later.take({"d"})  # the longest view takes into the shared order
    assert later.among({"d"}) == {"d"} and earlier.among({"d"}) == set() and list(later.order) == ["a", "b", "d"]


def test_a_view_joined_after_the_order_grew_past_it_holds_its_own_ids_and_the_new_ones() -> None:
    """A run joining one that took no id leaves two views the order's longest; the earlier then takes an
    id into the shared order, and the later, joined again, copies what it holds (it raised before)."""
    earlier = RunIds({"a": 0})
    later = earlier.joined(set())  # both views hold "a" alone, both the order's longest
    earlier.take({"c"})  # into the shared order: the later view does not see it
    latest = later.joined({"d"})
    assert latest.among({"a", "c", "d"}) == {"a", "d"} and later.among({"a", "c", "d"}) == {"a"}
    assert earlier.among({"a", "c", "d"}) == {"a", "c"}
    latest.take({"e"})
    assert latest.among({"e"}) == {"e"} and earlier.among({"e"}) == set()
