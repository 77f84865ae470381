"""Task 165: three defects task 162's PTC fuzzers found, shrunk. Repair's promises: its output passes its own
check but for what it says it kept, and a second repair changes nothing; and a history check accepts comes
back from repair unchanged.

1. Runs of server calls joined (a removed message between): the ids a run held were those sent, not the
   names renames gave, so a later run's call under such a name joined it unrenamed (``duplicate-call``).
2. A server call under a waiting code's id, answered in one message of Claude's: the code's result ended
   the wait as read by ``results-alone-while-code-waits``, whose move of the user's text wrote after the
   paused turn, leaving its server call ``dangling`` (a second repair dropped it).
3. A client call beside a server call of its id, the server call waiting past a later use of the id:
   ``check`` read it as ``reused`` alone, yet repair renamed the client call."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import history
from fsm.history import REJECTED, RepairPolicy
from tests.test_hostile_audit80 import ASK, TEXT, a, ran, res, srv, u, use

DROP = RepairPolicy(dangling="drop-call")
POLICIES = (RepairPolicy(), DROP)


def web(key: str) -> dict[str, Any]:
    return {"type": "server_tool_use", "id": key, "name": "web_search", "input": {}}


def found(key: str) -> dict[str, Any]:
    return {"type": "web_search_tool_result", "tool_use_id": key, "content": []}


def _repaired(conversation: list[dict[str, Any]], policy: RepairPolicy) -> tuple[list[Any], list[tuple[str, int, str]]]:
    fixed, changes = history.repair(conversation, policy, format="anthropic")
    kept = {c.kind.removeprefix("kept-") for c in changes if c.kind.startswith("kept-")}
    left = [(f.kind.value, f.message, f.id) for f in history.check(fixed, "anthropic").findings if f.kind in REJECTED]
    assert [f for f in left if f[0] not in kept] == []
    again, more = history.repair(fixed, policy, format="anthropic")
    assert again == fixed and [c for c in more if not c.kind.startswith("kept-")] == []
    return fixed, [(c.kind, c.message, c.id) for c in changes]


def _ids(fixed: list[Any]) -> list[str]:
    return [b["id"] for m in fixed if isinstance(m["content"], list) for b in m["content"] if "id" in b]


JOINED = {  # (task 162's joined-runs generator, seeds shrunk)
    "seed-606": [ASK, a(web("w"), found("w")), a(web("w"), found("w")), u(res("zz")), a(web("w_d2"))],
    "seed-1627": [ASK, a(web("w"), found("w"), web("w")), a(ran("w")), u(res("zz")), a(web("w_d2"))],
    "seed-1808": [ASK, a(web("w"), ran("w")), a(web("w"), found("w")), u(res("zz")), a(web("w_d2"))],
    "seed-2313": [ASK, a(web("w")), a(ran("w"), web("w"), found("w")), u(res("zz")), a(web("w_d2"))],
    "seed-174": [ASK, a(web("w"), web("w"), found("w"), ran("w")), u(res("zz")), a(web("w_d2"))],
}


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.dangling)
@pytest.mark.parametrize("name", JOINED)
def test_a_later_run_joined_takes_no_name_a_rename_gave(name: str, policy: RepairPolicy) -> None:
    fixed, changes = _repaired(JOINED[name], policy)
    ids = _ids(fixed)
    assert ids.count("w_d2") == 1 and "w_d2_d2" in ids  # the later run's call, joined, takes a name of its own
    assert ("renamed-call", len(JOINED[name]), "w_d2") in changes


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.dangling)
def test_a_client_call_of_a_later_run_joined_takes_no_name_a_server_call_s_rename_gave(policy: RepairPolicy) -> None:
    """Seed 1833: the client call meets the renamed server call in one run once the user message goes."""
    conversation = [ASK, a(srv("w")), a(srv("w"), found("w"), ran("w")), u(res("zz")), a(use("w_d2", None))]
    conversation.append(u(res("w_d2")))
    fixed, changes = _repaired(conversation, policy)
    assert ("renamed-call", 5, "w_d2") in changes and _ids(fixed).count("w_d2") == 1


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.dangling)
def test_a_server_call_under_the_waiting_code_s_id_keeps_the_turn_paused(policy: RepairPolicy) -> None:
    """PTC fuzzer seed 4654: the message that answers the code makes a call under its id, and waits on it."""
    conversation = [ASK, a(srv("x_d2"), use("s1", "x_d2")), u(res("s1"), TEXT), a(srv("x_d2"), ran("x_d2"))]
    fixed, changes = _repaired(conversation, policy)
    assert ("kept-results-beside-text", 3, None) in changes
    assert fixed[-1] == conversation[-1] and fixed[2] == conversation[2]


def test_check_says_the_duplicate_repair_renames() -> None:
    conversation = [ASK, a(srv("s1"), srv("s1_d2"), use("s1", "s1_d2")), u(res("s1"))]
    conversation += [a(TEXT, ran("s1"), use("s1", "s1_d2")), u(res("s1"))]
    findings = [(f.kind.value, f.message, f.id) for f in history.check(conversation, "anthropic").findings]
    assert ("duplicate-call", 2, "s1") in findings
    for policy in POLICIES:
        fixed, changes = _repaired(conversation, policy)
        assert ("renamed-call", 2, "s1") in changes and fixed[1]["content"][2]["id"] == "s1_d3"


def test_a_code_renamed_and_answered_in_an_earlier_run_leaves_its_new_name_free() -> None:
    """Joined runs' seed 2216, shrunk: the code renamed ``w_d2`` waits past the client results and is answered
    in the run a later one joins; as under its own id, answered in an earlier run, its name holds there no more."""
    conversation = [ASK, a(srv("w"), ran("w"), use("t1", None), srv("w")), u(res("t1")), a(ran("w"), use("t2", None))]
    conversation += [u(res("zz")), a(web("w_d2"), found("w_d2"))]
    fixed, changes = _repaired(conversation, DROP)
    assert [c for c in changes if c[0] == "renamed-call"] == [("renamed-call", 2, "w")]
    assert fixed[-1]["content"][-2:] == conversation[-1]["content"]


def test_check_says_the_duplicate_when_another_code_under_the_id_is_read_between() -> None:
    """PTC fuzzer seed 5419, repair's rename undone: the server call beside the client call of its id is read
    after it and after an earlier code under the id that waited past results (so the id's last call read is
    neither the twin nor after it): a ``duplicate-call`` all the same, which repair renames."""
    conversation = [ASK, a(use("t1", None), srv("s1")), a(ran("s1"), srv("t1_d2")), a(use("s1_d2", None))]
    conversation += [u(res("s1_d2"), res("t1")), a(srv("s1"), use("s1", "t1_d2"), TEXT, srv("s1_d2")), u(res("s1"))]
    findings = [(f.kind.value, f.message, f.id) for f in history.check(conversation, "anthropic").findings]
    assert ("duplicate-call", 6, "s1") in findings and ("reused", 6, "s1") not in findings
    assert ("renamed-call", 6, "s1") in _repaired(conversation, RepairPolicy())[1]
