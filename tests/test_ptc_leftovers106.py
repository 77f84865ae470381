"""Task 106: Claude's client calls naming code that had finished, or code the history lacks.

Audit 105's A: ``check`` accepted a client call whose ``caller`` names code execution whose result
came before it (the code had finished: it made no call after), and ``repair`` wrote that order in
silence where the code's result the user sent goes right after its call. It is
``call-after-code-result`` now (policy no-call-after-code-result), kept and said by repair.

Audit 105's B: ``repair`` drops a server call no result answers (only the server can give one), and
kept the client calls naming it as their caller without a word: they name code the history no longer
holds. Such a call is ``unknown-caller`` to ``check`` (policy code-call-first, as a Responses call
naming a program the history lacks), kept and said by repair (``kept-unknown-caller``).
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


def _kept(conversation: list[dict[str, Any]], policy: RepairPolicy) -> tuple[list[dict[str, Any]], set[Any]]:
    """Repair's output and the calls it says it kept; the output's rejected findings are those calls
    alone, and a second repair changes nothing and says the same."""
    given = copy.deepcopy(conversation)
    fixed, changes = history.repair(conversation, policy, format="anthropic")
    assert conversation == given
    kept = {(c.kind.removeprefix("kept-"), c.id) for c in changes if c.kind.startswith("kept-")}
    left = {(f.kind.value, f.id) for f in history.check(fixed, "anthropic").findings if f.kind in REJECTED}
    assert left == kept
    again, more = history.repair(fixed, policy, format="anthropic")
    assert again == fixed and {(c.kind.removeprefix("kept-"), c.id) for c in more} == kept
    return fixed, {(c.kind, c.message, c.id) for c in changes}


@pytest.mark.parametrize(
    ("conversation", "at"),
    [
        # a later turn's call names the code whose result Claude's message gave
        ([ASK, a(srv(), use("t1")), u(res("t1")), a(ran(), TEXT), u(TEXT), a(use("t2")), u(res("t2")), a(TEXT)], 6),
        # in the same message, after the result
        ([ASK, a(srv(), ran(), use("t1")), u(res("t1")), a(TEXT)], 2),
    ],
)
def test_a_call_naming_code_whose_result_came_before_it_is_reported_and_kept(
    conversation: list[dict[str, Any]], at: int
) -> None:
    """Before: no finding (audit 105's A)."""
    call = "t2" if at == 6 else "t1"
    assert _found(conversation) == [("call-after-code-result", at, call)]
    for policy in POLICIES:
        fixed, changes = _kept(conversation, policy)
        assert fixed == conversation and changes == {("kept-call-after-code-result", at, call)}


@pytest.mark.parametrize(
    ("conversation", "policy", "change"),
    [
        # the code's message makes no call naming it: its result goes right after it, before t3
        ([ASK, a(srv()), u(ran(), TEXT), a(use("t3")), u(res("t3"))], RepairPolicy(), ("t3", 4)),
        # drop-call drops t1, the one call of its message naming it: the code waits on nothing there
        (
            [ASK, a(srv(), use("t1")), u(ran()), a(use("t2")), u(res("t2")), a(TEXT)],
            RepairPolicy(dangling="drop-call"),
            ("t2", 4),
        ),
    ],
)
def test_the_order_repair_writes_itself_is_said(
    conversation: list[dict[str, Any]], policy: RepairPolicy, change: tuple[str, int]
) -> None:
    """Before: written in silence, and its check accepted it."""
    assert not [f for f in _found(conversation) if f[0] == "call-after-code-result"]
    _, changes = _kept(conversation, policy)
    assert ("kept-call-after-code-result", change[1], change[0]) in changes


def test_a_call_naming_code_repair_dropped_is_said_kept() -> None:
    """s1 never got its result: repair drops it (only the server can give it); t1 stays, naming it.
    Before: kept in silence (audit 105's B), and the output's check accepted it."""
    conversation = [ASK, a(srv(), use("t1")), u(res("t1")), a(TEXT), u(TEXT), a(TEXT)]
    assert _found(conversation) == [("dangling", 2, "s1")]
    for policy in POLICIES:
        fixed, changes = _kept(conversation, policy)
        assert changes == {("dropped-call", 2, "s1"), ("kept-unknown-caller", 2, "t1")}
        assert fixed[1] == a(use("t1")) and _found(fixed) == [("unknown-caller", 2, "t1")]


def test_a_call_naming_code_the_history_lacks_before_it_is_unknown_caller() -> None:
    assert _found([ASK, a(use("t1")), u(res("t1")), a(TEXT)]) == [("unknown-caller", 2, "t1")]
    # the code later in the history is no code before it
    assert _found([ASK, a(use("t1", "s2")), u(res("t1")), a(srv("s2"), ran("s2"))])[0] == ("unknown-caller", 2, "t1")
    # a call of Claude's own names no code
    direct = {**use("t1"), "caller": {"type": "direct"}}
    assert _found([ASK, a(direct), u(res("t1")), a(TEXT)]) == []


def test_code_calling_across_rounds_with_its_result_last_has_nothing_to_say() -> None:
    conversation = [ASK, a(srv(), use("t1")), u(res("t1")), a(use("t2")), u(res("t2")), a(ran(), TEXT)]
    assert _found(conversation) == []
    for policy in POLICIES:
        assert history.repair(conversation, policy, format="anthropic") == (conversation, [])


@pytest.mark.parametrize("policy", POLICIES)
def test_the_users_text_goes_after_the_run_that_answers_the_codes_wait(policy: RepairPolicy) -> None:
    """Audit 100's xfail, under each policy: the code's result and a call the user's message sends after
    Claude's text are that run's; the user's text goes after it (before: between, ending the wait)."""
    conversation = [ASK, a(srv("s4"), use("t5", "s4")), u(res("t5")), a(TEXT), u(ran("s4"), TEXT, use("t2", None))]
    fixed, changes = _kept(conversation, policy)
    assert ("moved-user-content", 5, None) in changes
    calls = [use("t2", None)] if policy.dangling == "placeholder" else []  # drop-call drops t2
    assert fixed[3:5] == [a(TEXT), a(ran("s4"), *calls)] and fixed[-1]["content"][-1] == TEXT


SEARCH = [srv("w6", "web_search"), {"type": "web_search_tool_result", "tool_use_id": "w6", "content": []}]


@pytest.mark.parametrize(
    ("conversation", "answer"),
    [
        # the user's message holding Claude's search ends the wait (read as Claude's, misplaced-call)
        (
            [ASK, a(srv("s2"), use("t3", "s2")), u(ran("s2")), u(TEXT, *SEARCH), u(res("t3")), a(TEXT)],
            a(ran("s2"), *SEARCH, TEXT),
        ),
        # a later code run and its result in the user's message, the first code's result before it
        (
            [ASK, a(srv("s2"), use("t3", "s2")), u(res("t3")), u(ran("s2")), u(srv("s5"), ran("s5"))],
            a(ran("s2"), srv("s5"), ran("s5")),
        ),
    ],
)
def test_the_codes_result_goes_first_into_the_model_message_made_of_the_users(
    conversation: list[dict[str, Any]], answer: dict[str, Any]
) -> None:
    """Before: right after its call, ahead of the calls naming it in its own message (kept, said)."""
    fixed, changes = _kept(conversation, RepairPolicy())
    assert answer in fixed and not [c for c in changes if c[0] == "kept-call-after-code-result"]
    assert [b["type"] for b in fixed[1]["content"]][:2] == ["server_tool_use", "tool_use"]


@pytest.mark.parametrize(
    "conversation",
    [
        [ASK, a(srv(), use("t2")), u(res("t2")), a(TEXT), u(ran())],
        [ASK, a(srv(), use("t2")), u(res("t2")), a(TEXT), u(ran()), a(TEXT)],
        [ASK, a(srv(), use("t2")), u(res("t2")), a(), a(TEXT), u(ran())],  # a message that came empty between
    ],
)
@pytest.mark.parametrize("policy", POLICIES)
def test_the_codes_result_the_user_sent_after_claudes_text_keeps_the_code(
    conversation: list[dict[str, Any]], policy: RepairPolicy
) -> None:
    """Claude's text after the results ends the code's wait; the user's message right after sends the
    code's result, as it does after Claude's search (audit 100): it answers the wait, and goes first in
    Claude's text. Before: the code ``dangling`` and its result an ``orphan``, both dropped, and the call
    naming the code kept naming nothing (audit 105's B)."""
    assert [f[0] for f in _found(conversation) if f[0] != "empty-message"] == ["misplaced-result"]
    fixed, changes = _kept(conversation, policy)
    assert fixed[1:3] == conversation[1:3] and fixed[3]["content"][0] == ran()
    assert not [c for c in changes if c[0] in ("dropped-call", "dropped-orphan", "kept-unknown-caller")]
