"""Task 120: what a Claude client call's ``caller`` says, by its type (programmatic tool calling).

Before, only ``caller.tool_id`` was read: a ``{"type": "direct", "tool_id": ...}`` caller counted as
code execution's (policy caller-by-its-type now reads the type first), and a caller the API does not
type (not an object, a type of no string or an unknown one, a code type without a ``tool_id`` string)
passed the check unsaid; it is ``malformed-caller`` now (policy malformed-caller-kept), kept by repair
and said so. And an old leftover of drop-call: a server call a user message made, moved into a message
of Claude's, stayed where the user's text was moved after it when an empty message ended the history.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fsm import history
from fsm.history import RepairPolicy
from tests.test_hostile_audit80 import ASK, TEXT, a, ran, res, srv, u, use
from tests.test_ptc_leftovers106 import POLICIES, _kept

EMPTY = {"role": "user", "content": ""}


def _found(conversation: list[dict[str, Any]]) -> list[tuple[str, int, str]]:
    return [(f.kind.value, f.message, f.id) for f in history.check(conversation, "anthropic").findings]


def _called(key: str, caller: Any) -> dict[str, Any]:
    return {**use(key), "caller": caller}


def test_a_direct_caller_naming_a_tool_id_is_no_code_caller() -> None:
    """Before: its tool_id made it the waiting code's call, the user's text beside its result
    ``results-beside-text``; now the type says direct, the tool_id contradicting it."""
    conversation = [ASK, a(srv(), _called("t1", {"type": "direct", "tool_id": "s1"})), u(res("t1"), TEXT)]
    assert _found(conversation) == [("malformed-caller", 2, "t1")]
    [finding] = history.check(conversation, "anthropic").findings
    assert "block 2 of the message" in finding.detail and "direct" in finding.detail
    for policy in POLICIES:
        fixed, changes = _kept(conversation, policy)
        assert fixed == conversation  # kept as it came: which half is wrong only the caller knows
        assert changes == {("kept-malformed-caller", 2, "t1")}


def test_a_direct_caller_naming_code_the_history_lacks_is_not_unknown_caller() -> None:
    """Before: ``unknown-caller`` (the tool_id read as code); the type says Claude's own call."""
    conversation = [ASK, a(_called("t1", {"type": "direct", "tool_id": "s9"})), u(res("t1")), a(TEXT)]
    assert _found(conversation) == [("malformed-caller", 2, "t1")]


@pytest.mark.parametrize(
    ("caller", "said"),
    [
        ("s1", "not an object (type str)"),
        (["code_execution_20250825", "s1"], "not an object (type list)"),
        (7, "not an object (type int)"),
        ({"tool_id": "s1"}, "type is not a string (type NoneType)"),
        ({"type": {"v": 1}, "tool_id": "s1"}, "type is not a string (type dict)"),  # unhashable: no TypeError escapes
        ({"type": ["direct"]}, "type is not a string (type list)"),
        ({"type": "program", "caller_id": "s1"}, "'program' is neither direct nor code execution's"),
        ({"type": "code_execution_latest", "tool_id": "s1"}, "neither direct nor code execution's"),
        ({"type": "code_execution_2099011", "tool_id": "s1"}, "neither direct nor code execution's"),
        ({"type": "code_execution_20250825", "tool_id": 1}, "no tool_id string (type int)"),
        ({"type": "code_execution_20250825", "tool_id": ["s1"]}, "no tool_id string (type list)"),
        ({"type": "code_execution_20260120"}, "no tool_id string (type NoneType)"),
    ],
)
def test_a_malformed_caller_is_reported_at_its_block_and_kept(caller: Any, said: str) -> None:
    """Before: no finding (only a str or int tool_id was read, as code), the call read as Claude's own."""
    conversation = [ASK, a(srv(), ran(), TEXT, _called("t1", caller)), u(res("t1")), a(TEXT)]
    report = history.check(conversation, "anthropic")
    assert [(f.kind.value, f.message, f.id, f.name) for f in report.findings] == [("malformed-caller", 2, "t1", "q")]
    assert (
        report.rejected and "block 4 of the message" in report.findings[0].detail and said in report.findings[0].detail
    )
    for policy in POLICIES:
        fixed, changes = _kept(conversation, policy)
        assert fixed == conversation and changes == {("kept-malformed-caller", 2, "t1")}


def test_a_malformed_callers_call_drop_call_drops_is_not_said_kept() -> None:
    """No result answered it: drop-call drops it (``dropped-call``), and says no keep of it; the
    placeholder policy keeps it, its caller as it came."""
    conversation = [ASK, a(_called("t1", {"type": "direct", "tool_id": "s1"})), u(TEXT)]
    fixed, changes = _kept(conversation, RepairPolicy(dangling="drop-call"))
    assert ("dropped-call", 2, "t1") in changes and not any(kind.startswith("kept-") for kind, _, _ in changes)
    fixed, changes = _kept(conversation, RepairPolicy())
    assert ("kept-malformed-caller", 2, "t1") in changes and fixed[1]["content"][0]["caller"]["tool_id"] == "s1"


@pytest.mark.parametrize("caller", [{"type": "direct"}, None, {"type": "direct", "tool_id": None}])
def test_a_direct_caller_or_none_is_claudes_own_call_unsaid(caller: Any) -> None:
    conversation = [ASK, a(_called("t1", caller)), u(res("t1")), a(TEXT)]
    assert _found(conversation) == []


@pytest.mark.parametrize("kind", ["code_execution_20250825", "code_execution_20260120", "code_execution_20260521"])
def test_each_code_type_names_its_code(kind: str) -> None:
    """A code type's tool_id names the waiting code: the user's text beside its result is refused."""
    conversation = [ASK, a(srv(), _called("t1", {"type": kind, "tool_id": "s1"})), u(res("t1"), TEXT)]
    assert _found(conversation) == [("results-beside-text", 3, "")]


@pytest.mark.parametrize(
    "after",
    [
        [EMPTY],  # the brief's case
        [EMPTY, EMPTY],
        [{"role": "tool", "content": "x"}],  # a role the format lacks: read as absent, kept
    ],
)
def test_drop_call_drops_a_moved_server_call_the_users_text_goes_after(after: list[dict[str, Any]]) -> None:
    """Before: ``dangling w1`` after repair (a second repair dropped it). The user message's server call
    goes into a message of Claude's, its text after that: the call no longer ends the history, so its
    result no longer the server's to give; the empty message after it, which goes, hid that."""
    conversation = [a(use("t3", "s2")), u(TEXT, srv("w1", "web_search")), *after]
    fixed, changes = history.repair(copy.deepcopy(conversation), RepairPolicy(dangling="drop-call"), "anthropic")
    assert ("dropped-call", 2, "w1") in {(c.kind, c.message, c.id) for c in changes}
    assert fixed[0] == u(TEXT)
    left = [f for f in history.check(fixed, "anthropic").findings if f.kind is not history.Kind.UNKNOWN_ROLE]
    assert left == []
    assert history.repair(fixed, RepairPolicy(dangling="drop-call"), "anthropic")[0] == fixed
