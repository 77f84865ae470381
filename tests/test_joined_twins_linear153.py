"""Task 153: repair walked a run of Claude's messages joined from many (each message between them removed
under ``RepairPolicy(dangling="drop-call")``) down from each turn's first call, to look for the turn's twins
(policy client-and-server-call-one-id): quadratic in the runs joined (400 rounds: 1.07 s against 0.085 s
for 100 on main, 12.6x for 4x the rounds). The stretches of a run found once are stepped over by the walks
of the turns after them now (:meth:`fsm.history.joined_runs.ServerRuns.low`). And each rename read its call's
whole message again. Work is counted, not timed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest

from fsm import history
from fsm.history import RepairPolicy
from fsm.history.joined_runs import ServerRuns
from tests.test_hostile_audit80 import ASK, a, res, srv, u, use
from tests.test_hostile_audit87 import _steps_taken

DROP = RepairPolicy(dangling="drop-call")


def _searched(key: str) -> dict[str, Any]:
    return {"type": "web_search_tool_result", "tool_use_id": key, "content": []}


def _searches_then_their_ids_called(n: int) -> list[dict[str, Any]]:
    """Each round a search and a client call no result answers, then the user's message of an orphan (both
    removed under drop-call, which joins the rounds in one run); at the end a client call under each
    search's id: the twins of every round, at the far end of that run."""
    conversation = [ASK]
    for i in range(n):
        conversation += [a(srv(f"x{i}", "web_search"), _searched(f"x{i}"), use(f"d{i}", None)), u(res(f"o{i}"))]
    return [*conversation, a(*[use(f"x{i}", None) for i in range(n)]), u(*[res(f"x{i}") for i in range(n)])]


def _twin_in_each_round(n: int) -> list[dict[str, Any]]:
    """As above, but each round's search id is called by the client right after it (no result answers it)."""
    conversation = [ASK]
    for i in range(n):
        conversation += [a(srv(f"x{i}", "web_search"), _searched(f"x{i}"), use(f"d{i}", None)), u(res(f"o{i}"))]
        conversation += [a(use(f"x{i}", None), use(f"e{i}", None)), u(res(f"z{i}"))]
    return conversation


def _repaired(conversation: list[dict[str, Any]]) -> None:
    history.repair(conversation, DROP, format="anthropic")


def test_searches_joined_in_one_run_rename_their_twins_in_linear_work() -> None:
    fixed, changes = history.repair(_searches_then_their_ids_called(3), DROP, format="anthropic")
    assert [(c.kind, c.message, c.id) for c in changes if c.kind in ("renamed-call", "dropped-call")] == [
        ("dropped-call", 2, "d0"),
        ("dropped-call", 4, "d1"),
        ("dropped-call", 6, "d2"),
        *[("renamed-call", 8, f"x{i}") for i in range(3)],
    ]
    assert [m["role"] for m in fixed] == ["user", "assistant", "user"]
    assert history.check(fixed, "anthropic").findings == ()
    steps = [_steps_taken(functools.partial(_repaired, _searches_then_their_ids_called(n))) for n in (100, 400)]
    assert steps[1] <= 4.5 * steps[0], steps  # 4x the rounds: ~12x when each turn walked the run down


def test_a_twin_in_each_joined_round_is_found_in_linear_work() -> None:
    fixed, changes = history.repair(_twin_in_each_round(3), DROP, format="anthropic")
    assert {c.id for c in changes if c.kind == "dropped-call"} == {f"{k}{i}" for k in "dex" for i in range(3)}
    assert [m["role"] for m in fixed] == ["user", "assistant"]
    assert history.check(fixed, "anthropic").findings == ()
    steps = [_steps_taken(functools.partial(_repaired, _twin_in_each_round(n))) for n in (100, 400)]
    assert steps[1] <= 4.5 * steps[0], steps


class _Plan:
    """What ``ServerRuns.low`` reads of repair's plan: the messages and where results are moved into."""

    def __init__(self, roles: str) -> None:
        self.messages = [{"role": "assistant" if r == "a" else "user", "content": []} for r in roles]
        self.add_into: dict[int, list[Any]] = {}
        self.front_into: dict[int, list[Any]] = {}
        self.move_into: dict[int, list[Any]] = {}


def test_a_stretch_walked_once_is_stepped_over_and_parted_where_a_result_is_moved_in() -> None:
    plan = _Plan("uauauauau")
    runs, asked = ServerRuns(), []
    going = {2, 4, 6}  # the user messages between the assistant ones are removed, as decided so far

    def inside(at: int) -> bool:
        asked.append(at)
        return plan.messages[at]["role"] == "assistant" or at in going

    assert runs.low(plan, 7, inside) == 1  # type: ignore[arg-type]  # walked down: 6 .. 1, then 0 is no one's
    assert (runs.stretches.lows, runs.stretches.highs) == ([1], [6])
    asked.clear()
    assert runs.low(plan, 8, inside) == 1  # type: ignore[arg-type]  # 7 asked, then the stretch in one step
    assert asked == [7, 0]
    plan.front_into[4] = []  # a result moved into message 4: it stays, and parts the run there
    going.discard(4)
    assert runs.low(plan, 8, inside) == 5  # type: ignore[arg-type]
    assert (runs.stretches.lows, runs.stretches.highs) == ([1, 5], [3, 7])


def _calls_under_one_id(n: int) -> list[dict[str, Any]]:
    """One message of n client calls under one id, each answered: all but the first renamed."""
    return [ASK, a(*[use("x", None) for _ in range(n)]), u(*[res("x") for _ in range(n)])]


def _searches_under_one_id(n: int) -> list[dict[str, Any]]:
    """One message of n searches under one id, each with its result after it: all but the first renamed."""
    return [ASK, a(*[block for _ in range(n) for block in (srv("w", "web_search"), _searched("w"))])]


def _repaired_both_ways(conversation: list[dict[str, Any]]) -> None:
    history.repair(conversation, format="anthropic")
    history.repair(conversation, DROP, format="anthropic")


@pytest.mark.parametrize(
    ("build", "kind", "key"),
    [(_calls_under_one_id, "tool_use", "x"), (_searches_under_one_id, "server_tool_use", "w")],
    ids=["client", "server"],
)
def test_renames_in_one_message_read_it_once_not_once_a_rename(
    build: Callable[[int], list[dict[str, Any]]], kind: str, key: str
) -> None:
    """Each rename read its call's whole message again (and a renamed server call's blocks before it), to
    follow the calls its code made: 8,192 calls under one id took 3.8 s of repair on main, 0.07 s for 1,024."""
    fixed, changes = history.repair(build(3), format="anthropic")
    assert [(c.kind, c.message, c.id) for c in changes if c.kind == "renamed-call"] == [("renamed-call", 2, key)] * 2
    assert [b["id"] for b in fixed[1]["content"] if b["type"] == kind] == [key, f"{key}_d2", f"{key}_d3"]
    assert history.check(fixed, "anthropic").findings == ()
    steps = [_steps_taken(functools.partial(_repaired_both_ways, build(n))) for n in (200, 800)]
    assert steps[1] <= 4.5 * steps[0], steps  # 4x the calls: ~10x when each rename read them all


def _searches_unanswered_under_one_id(n: int) -> list[dict[str, Any]]:
    """Each round three searches under one id no result answers, in one run (the messages between came
    empty): the second and third renamed, each followed to the history's end for calls naming it."""
    empty = {"role": "user", "content": ""}
    conversation = [ASK]
    for i in range(n):
        search = srv(f"t{i}", "web_search")
        conversation += [a(search), a(search), empty, a(search), empty]
    return conversation


def test_a_rename_with_no_result_after_it_reads_the_history_after_it_once() -> None:
    fixed, changes = history.repair(_searches_unanswered_under_one_id(2), format="anthropic")
    assert [(c.kind, c.message, c.id) for c in changes if c.kind == "renamed-call"] == [
        ("renamed-call", 3, "t0"),
        ("renamed-call", 5, "t0"),
        ("renamed-call", 8, "t1"),
        ("renamed-call", 10, "t1"),
    ]
    assert not [f for f in history.check(fixed, "anthropic").findings if f.kind in history.REJECTED]
    steps = [
        _steps_taken(functools.partial(_repaired_both_ways, _searches_unanswered_under_one_id(n))) for n in (60, 240)
    ]
    assert steps[1] <= 4.5 * steps[0], steps  # 4x the rounds: ~11x when each rename read the rest


def _codes_left_waiting(n: int) -> list[dict[str, Any]]:
    """One run of n codes, each making a client call no result answers: under drop-call each call goes
    and each code is left paused, the server's to run (paused-call-last-only)."""
    return [ASK, *[a(srv(f"s{i}"), use(f"t{i}", f"s{i}")) for i in range(n)]]


def test_codes_left_paused_ask_of_the_calls_they_wait_past_once() -> None:
    """Each paused code asked whether every call the codes wait past was dropped, and whether the run it is in
    ends the history: each a walk of them all (quadratic: 9.7x the time for 4x the codes on main)."""
    fixed, changes = history.repair(_codes_left_waiting(3), DROP, format="anthropic")
    assert [(c.kind, c.id) for c in changes] == [("dropped-call", f"t{i}") for i in range(3)]
    assert [[b["id"] for b in m["content"]] for m in fixed[1:]] == [["s0"], ["s1"], ["s2"]]
    steps = [_steps_taken(functools.partial(_repaired, _codes_left_waiting(n))) for n in (200, 800)]
    assert steps[1] <= 4.5 * steps[0], steps
