"""Hostile audit 128 of task 120 (a Claude client call's ``caller`` read by its type; drop-call's leftover).

What was found: a server call paused in the last message Claude sent, followed only by a message of a
role the format lacks (policy unknown-role-between: read as absent) or one that came empty, was
``dangling`` to ``check`` (it read that message as one after the call), while ``repair`` under
``RepairPolicy(dangling="drop-call")`` read it as absent and kept the call: its history failed its own
check, and a second repair dropped the call the first had kept. Both read it as absent now.
"""

from __future__ import annotations

from typing import Any

import pytest

from fsm import history
from fsm.history import RepairPolicy
from tests.test_hostile_audit80 import ASK, TEXT, a, ran, res, srv, u, use
from tests.test_hostile_audit87 import _steps_taken

POLICIES = (RepairPolicy(), RepairPolicy(dangling="drop-call"))
TOOL = {"role": "tool", "content": "x"}
SYSTEM = {"role": "system", "content": [{"type": "text", "text": "be brief"}]}
EMPTY = {"role": "user", "content": ""}


def _found(conversation: list[dict[str, Any]]) -> list[tuple[str, int, str]]:
    return [(f.kind.value, f.message, f.id) for f in history.check(conversation, "anthropic").findings]


@pytest.mark.parametrize("policy", POLICIES, ids=lambda policy: policy.dangling)
def test_a_code_call_drop_call_drops_before_a_message_read_as_absent_leaves_its_code_paused(
    policy: RepairPolicy,
) -> None:
    """Task 120's leftover (its reproducer): the client call goes under drop-call, its code stays paused."""
    conversation = [ASK, a(srv("s1"), use("t2", "s1")), TOOL]
    fixed, _ = history.repair(conversation, policy, format="anthropic")
    assert ("dangling", 2, "s1") not in _found(fixed)
    assert _found(fixed) == [("unknown-role", len(fixed), "")]
    again, more = history.repair(fixed, policy, format="anthropic")
    assert again == fixed
    assert [change.kind for change in more] == ["kept-unknown-role"]


@pytest.mark.parametrize(
    "after", [[TOOL], [TOOL, SYSTEM], [SYSTEM, EMPTY], [EMPTY]], ids=["tool", "two", "odd-empty", "empty"]
)
def test_a_paused_server_call_before_messages_read_as_absent_still_waits(after: list[dict[str, Any]]) -> None:
    """Check and repair alike: the unknown-role-between message, or one that came empty, is no message after
    the paused turn (check read the call ``dangling``, and repair dropped it)."""
    conversation = [ASK, a(srv("s1")), *after]
    assert all(kind != "dangling" for kind, _, _ in _found(conversation))
    for policy in POLICIES:
        fixed, changes = history.repair(conversation, policy, format="anthropic")
        assert fixed[1] is conversation[1]
        assert "dropped-call" not in {change.kind for change in changes}
        assert all(kind != "dangling" for kind, _, _ in _found(fixed))


def test_a_message_after_the_absent_one_still_ends_the_pause() -> None:
    """The user's text after the junk message is a message after the call: it is dangling, and goes."""
    conversation = [ASK, a(srv("s1")), TOOL, u({"type": "text", "text": "go on"})]
    assert ("dangling", 2, "s1") in _found(conversation)
    _, changes = history.repair(conversation, RepairPolicy(), format="anthropic")
    assert ("dropped-call", 2, "s1") in {(change.kind, change.message, change.id) for change in changes}


def test_the_code_answered_before_the_absent_one_is_untouched() -> None:
    conversation = [ASK, a(srv("s1"), use("t2", "s1")), u(res("t2")), TOOL]
    assert _found(conversation) == [("unknown-role", 4, "")]


# -- a code execution version the engine does not list (policy caller-by-its-type) -----------------


@pytest.mark.parametrize("kind", ["code_execution_20270301", "code_execution_20991231"])
def test_a_later_code_execution_version_names_its_code(kind: str) -> None:
    """The API names each new version of the tool ``code_execution_`` and a date: its caller names code as
    the listed ones do (task 120 read it ``malformed-caller``, refused, and as Claude's own call, so the
    user's text beside the waiting code's results went unsaid and a call after its code's result passed)."""
    waiting = [ASK, a(srv(), {**use("t1"), "caller": {"type": kind, "tool_id": "s1"}}), u(res("t1"), TEXT)]
    assert _found(waiting) == [("results-beside-text", 3, "")]
    late = [ASK, a(srv(), ran(), {**use("t1"), "caller": {"type": kind, "tool_id": "s1"}}), u(res("t1"))]
    assert [kind for kind, _, _ in _found(late)] == ["call-after-code-result"]
    for policy in POLICIES:
        _, changes = history.repair(late, policy, format="anthropic")
        assert {change.kind for change in changes} == {"kept-call-after-code-result"}


FULLWIDTH = "code_execution_" + "\uff12\uff10\uff12\uff17\uff10\uff13\uff10\uff11"  # digits, not ASCII ones


@pytest.mark.parametrize("kind", ["code_execution", "code_execution_2027030", "code_execution_2027030a", FULLWIDTH])
def test_a_code_execution_type_of_no_date_is_still_malformed(kind: str) -> None:
    conversation = [ASK, a(srv(), {**use("t1"), "caller": {"type": kind, "tool_id": "s1"}}), u(res("t1"))]
    assert [kind for kind, _, _ in _found(conversation)] == ["malformed-caller"]


# -- malformed-caller's block, named in the message as sent ---------------------------------------


def test_a_malformed_callers_block_is_counted_in_the_message_as_sent() -> None:
    """The check reads Claude's message without a declined model's blocks (policy fallback-declined-calls):
    the block it names was counted in that copy, block 2 for the message's 4th (policy malformed-caller-kept)."""
    fallback = {"type": "fallback", "model": "claude-x"}
    declined = [{**use("t0"), "caller": None}, {"type": "thinking", "thinking": "x", "signature": "s"}]
    malformed = {**use("t9"), "caller": 7}
    twice = {**use("t8"), "caller": "s1"}
    conversation = [ASK, a(*declined, fallback, malformed, twice, twice), u(res("t9"), res("t8"))]
    said = [f.detail for f in history.check(conversation, "anthropic").findings if f.kind.value == "malformed-caller"]
    assert [detail.split(":")[0] for detail in said] == [
        "block 4 of the message",
        "block 5 of the message",
        "block 6 of the message",
    ]


def test_naming_the_blocks_of_many_malformed_callers_after_a_fallback_is_linear() -> None:
    """Each block's place in the message as sent was looked for from its start: quadratic in its calls."""

    def conversation(n: int) -> list[dict[str, Any]]:
        calls = [{**use(f"t{k}"), "caller": 7} for k in range(n)]
        thinking = {"type": "thinking", "thinking": "x", "signature": "s"}
        return [ASK, a(thinking, {"type": "fallback", "model": "m"}, *calls), u(*[res(f"t{k}") for k in range(n)])]

    small, large = (_steps_taken(lambda n=n: history.check(conversation(n), "anthropic")) for n in (300, 1200))
    assert large < 5 * small, (small, large)
