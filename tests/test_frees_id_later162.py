"""Task 162: a call repair drops holds no id even when it is dropped only after a later call under its id
was paired (policy dropped-call-frees-id): repair pairs a second time, knowing what the first pass dropped.

Before: Claude's server blocks of a message are paired apart from its client calls, a server call waiting
past client results after the turn they end, and a paused turn's calls are dropped once every turn is
paired; so a call under an id whose first holder went only later was renamed ``<id>_d2`` all the same (a
client call's twin, a server call's, the second server call of a message), a change no rule needed; and
a code's client calls were renamed to name ``<id>_d2``, a code repair then dropped: ``kept-unknown-caller``
naming an id no block ever had. Found by a PTC fuzzer (task 162): 623 needless renames under drop-call and
119 under the default policy in 10,000 seeds, 15 callers naming a made-up id; the cases below, shrunk."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import history
from fsm.history import REJECTED, RepairPolicy
from tests.test_hostile_audit80 import ASK, a, ran, res, srv, u, use

DROP = RepairPolicy(dangling="drop-call")
POLICIES = (RepairPolicy(), DROP)


def _repaired(conversation: list[dict[str, Any]], policy: RepairPolicy) -> tuple[list[Any], list[tuple[str, int, str]]]:
    """Repair's promises: its check finds only what it said it kept, and a second repair changes nothing."""
    fixed, changes = history.repair(conversation, policy, format="anthropic")
    kept = {c.kind.removeprefix("kept-") for c in changes if c.kind.startswith("kept-")}
    found = [f for f in history.check(fixed, "anthropic").findings if f.kind in REJECTED]
    assert [f for f in found if f.kind.value not in kept] == []
    again, more = history.repair(fixed, policy, format="anthropic")
    assert again == fixed and [c for c in more if not c.kind.startswith("kept-")] == []
    return fixed, [(c.kind, c.message, c.id) for c in changes]


def _blocks(fixed: list[Any]) -> list[tuple[str, str | None]]:
    """Each call's id, and the code its caller names."""
    return [
        (b["id"], (b.get("caller") or {}).get("tool_id"))
        for m in fixed
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] in ("tool_use", "server_tool_use")
    ]


def _renamed(changes: list[tuple[str, int, str]]) -> list[tuple[str, int, str]]:
    return [c for c in changes if c[0].startswith("renamed-")]


TWIN_DROPPED = {  # the client call goes (no result, drop-call) after the server call beside it was paired
    "seed-6": [ASK, a(use("s1", None), srv("s1"), ran("s1"))],
    "seed-16": [ASK, a(use("s1_d2", "s1"), srv("s1_d2"), ran("s1_d2"))],
}


@pytest.mark.parametrize("name", TWIN_DROPPED)
def test_a_server_call_keeps_its_id_when_the_client_call_before_it_is_dropped(name: str) -> None:
    conversation = TWIN_DROPPED[name]
    fixed, changes = _repaired(conversation, DROP)
    key = conversation[1]["content"][1]["id"]
    assert ("dropped-call", 2, key) in changes and _renamed(changes) == []
    assert _blocks(fixed) == [(key, None)]
    fixed, changes = _repaired(conversation, RepairPolicy())  # kept with a placeholder: the server call is renamed
    assert _blocks(fixed) == [
        (key, conversation[1]["content"][0].get("caller", {}).get("tool_id")),
        (f"{key}_d2", None),
    ]


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.dangling)
def test_a_client_call_keeps_its_id_when_the_server_call_before_it_is_dropped_later(policy: RepairPolicy) -> None:
    """Seed 17: the server call waits, unanswered, past the client turn, and goes once paired after it."""
    conversation = [ASK, a(srv("x")), a(use("x", None)), u(res("x")), a(use("x", None))]
    fixed, changes = _repaired(conversation, policy)
    assert ("dropped-call", 2, "x") in changes and _renamed(changes) == []
    assert _blocks(fixed)[0] == ("x", None)


def test_a_paused_call_dropped_is_not_renamed_nor_its_callers() -> None:
    """Seed 22: the second code under s1 is renamed under the default policy; under drop-call its client call
    goes, the turn is paused and its code goes too: neither it nor its call is renamed first."""
    conversation = [ASK, a(srv("s1"), srv("s1"), use("t2", "s1")), u({"type": "text", "text": "more"})]
    fixed, changes = _repaired(conversation, RepairPolicy())
    assert _blocks(fixed) == [("s1", None), ("s1_d2", None), ("t2", "s1_d2")]
    fixed, changes = _repaired(conversation, DROP)
    assert _renamed(changes) == [] and ("dropped-call", 2, "t2") in changes


def test_a_call_whose_code_is_dropped_names_it_as_it_came() -> None:
    """Seed 549: the code s1 named went (paused, under drop-call) after its calls were renamed to name t1_d2,
    an id no block had: the kept-unknown-caller call now names t1, as sent."""
    conversation = [ASK, a(srv("t1"), srv("t1"), use("s1", "t1")), u(res("s1")), a(use("t2", None))]
    fixed, changes = _repaired(conversation, DROP)
    assert _blocks(fixed) == [("s1", "t1")] and _renamed(changes) == []
    assert ("kept-unknown-caller", 2, "s1") in changes
