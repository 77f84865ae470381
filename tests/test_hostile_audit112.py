"""Audit 112: hostile audit of Claude's code callers (merge 45e9a5d, helper 106).

A: an id reused by a later turn after its call was answered is allowed (policy reused). A code
execution that takes the id of one that had finished is new code; ``check`` read the calls it made
as naming the finished one (``call-after-code-result``), rejecting a valid history, and ``repair``
said it kept them.

B: ``repair`` said where a kept call came from by the call's object, the last input message
holding it: a caller's list holding one block object twice (a history built in Python) had each
kept call said at the last of them, not at its own message as ``check`` says.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fsm import history
from fsm.history import REJECTED, RepairPolicy
from tests.test_hostile_audit80 import ASK, TEXT, a, ran, res, srv, u, use

POLICIES = (RepairPolicy(), RepairPolicy(dangling="drop-call"))


def _found(conversation: list[dict[str, Any]]) -> list[tuple[str, int, str]]:
    return [(f.kind.value, f.message, f.id) for f in history.check(conversation, "anthropic").findings]


@pytest.mark.parametrize("policy", POLICIES)
def test_a_code_execution_reusing_a_finished_ones_id_makes_calls_of_its_own(policy: RepairPolicy) -> None:
    """Before: call-after-code-result at message 6 (t2), kept-call-after-code-result from repair."""
    conversation = [
        ASK,
        a(srv("s1"), use("t1", "s1")),
        u(res("t1")),
        a(ran("s1"), TEXT),
        u(TEXT),
        a(srv("s1"), use("t2", "s1")),
        u(res("t2")),
        a(ran("s1"), TEXT),
    ]
    assert _found(conversation) == [("reused", 6, "s1")]
    given = copy.deepcopy(conversation)
    assert history.repair(conversation, policy, format="anthropic") == (given, [])


def test_a_call_naming_the_finished_code_before_its_id_is_reused_is_still_reported() -> None:
    """The reuse clears the finished code from the new call on: a call before it names code that had finished."""
    conversation = [
        ASK,
        a(srv("s1"), use("t1", "s1")),
        u(res("t1")),
        a(ran("s1"), use("t3", "s1")),
        u(res("t3")),
        a(srv("s1"), use("t2", "s1")),
        u(res("t2")),
        a(ran("s1"), TEXT),
    ]
    assert [f for f in _found(conversation) if f[0] != "reused"] == [("call-after-code-result", 4, "t3")]


@pytest.mark.parametrize("policy", POLICIES)
def test_a_kept_call_whose_object_the_list_holds_twice_is_said_at_its_own_message(policy: RepairPolicy) -> None:
    """Before: both kept-unknown-caller changes said message 6; check says 2 and 6."""
    call = use("t1", "s9")  # s9: no server_tool_use makes it
    conversation = [ASK, a(call), u(res("t1")), a(TEXT), u(TEXT), a(call), u(res("t1")), a(TEXT)]
    kept = [("unknown-caller", 2, "t1"), ("unknown-caller", 6, "t1")]
    assert [f for f in _found(conversation) if f[0] != "reused"] == kept
    fixed, changes = history.repair(conversation, policy, format="anthropic")
    assert [(c.kind, c.message, c.id) for c in changes] == [("kept-" + k, at, key) for k, at, key in kept]
    left = [(f.kind.value, f.message, f.id) for f in history.check(fixed, "anthropic").findings if f.kind in REJECTED]
    assert left == kept


def test_code_results_the_user_sent_are_moved_in_linear_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: each code result the user sent looked its change up by a scan back over every change
    (8x the turns read 8x as many per turn; 5,000 turns, 8 MB, took 3.9 s against 0.5 s for 1,250)."""
    from fsm.history.rewrite import Writer

    read = [0]

    class Counted(list):  # type: ignore[type-arg]
        def __getitem__(self, at: Any) -> Any:
            read[0] += 1
            return super().__getitem__(at)

    start = Writer.start_writing

    def counted(self: Writer, *args: Any) -> None:
        start(self, *args)
        self.changes = Counted(self.changes)

    def read_per_turn(n: int) -> float:
        read[0] = 0
        conversation = [ASK]
        for i in range(n):  # the code's result sent by the user beside the results of the calls it made
            conversation += [a(srv(f"s{i}"), use(f"t{i}", f"s{i}")), u(res(f"t{i}"), ran(f"s{i}")), a(TEXT), u(TEXT)]
        with monkeypatch.context() as patched:
            patched.setattr(Writer, "start_writing", counted)
            fixed, changes = history.repair(conversation, format="anthropic")
        assert [c.kind for c in changes] == ["moved-misplaced-result"] * n
        assert not history.check(fixed, "anthropic").rejected
        return read[0] / n

    assert read_per_turn(800) < 1.5 * read_per_turn(100)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_finished_codes_id_reused_in_the_run_its_result_ends_stays(policy: RepairPolicy) -> None:
    """Before: repair renamed the second s1 (renamed-call), which check accepts (reused), leaving t5 naming
    the finished code (kept-call-after-code-result); as one message (the API combines them) it was left alone."""
    conversation = [ASK, a(srv("s1"), use("t2", "s1")), u(res("t2")), a(ran("s1"), TEXT), a(srv("s1"), use("t5", "s1"))]
    conversation += [u(res("t5")), a(ran("s1"), TEXT)]
    assert _found(conversation) == [("reused", 5, "s1")]
    given = copy.deepcopy(conversation)
    assert history.repair(conversation, policy, format="anthropic") == (given, [])


def test_repair_of_a_misplaced_call_before_a_reused_code_id_is_idempotent() -> None:
    """Before: the second repair renamed s1 in the run the first one's moves made (renamed-call)."""
    more = {"type": "text", "text": "more"}
    conversation = [a(srv("s1"), use("t3", "s1")), u(res("t3")), a(ran("s1")), u(use("t2", "s1"), more), a(srv("s1"))]
    fixed, changes = history.repair(conversation, format="anthropic")
    assert ("kept-call-after-code-result", 4, "t2") in {(c.kind, c.message, c.id) for c in changes}
    again, more_changes = history.repair(fixed, format="anthropic")
    assert again == fixed and [(c.kind, c.message, c.id) for c in more_changes] == [
        ("kept-call-after-code-result", 4, "t2")
    ]
