"""Task 131: a client ``tool_use`` and Claude's server call under one id in one assistant turn.

The Messages API refuses two calls under one id in a turn whatever their kinds ("tool_use ids must be
unique"); ``check`` read the later one as ``reused`` and ``repair`` left the history as it was (policy
client-and-server-call-one-id). Now the two are a ``duplicate-call`` at the later one, which repair
renames ``<id>_d2``, its result with it (and the calls a renamed code made name its new id).
"""

from __future__ import annotations

from typing import Any

from fsm import history
from fsm.history import REJECTED, RepairPolicy
from tests.test_hostile_audit80 import ASK, a, ran, res, srv, u, use

POLICIES = (RepairPolicy(), RepairPolicy(dangling="drop-call"))


def web(key: str) -> dict[str, Any]:
    return {"type": "web_search_tool_result", "tool_use_id": key, "content": []}


def _found(conversation: list[dict[str, Any]]) -> list[tuple[str, int, str]]:
    return [(f.kind.value, f.message, f.id) for f in history.check(conversation, "anthropic").findings]


def _repaired(conversation: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Repaired alike under both policies: nothing rejected left, and a second repair changes nothing."""
    outs = []
    for policy in POLICIES:
        fixed, _ = history.repair(conversation, policy, format="anthropic")
        assert not [f for f in history.check(fixed, "anthropic").findings if f.kind in REJECTED]
        assert history.repair(fixed, policy, format="anthropic") == (fixed, [])
        outs.append(fixed)
    assert outs[0] == outs[1]
    return outs[0]


def test_a_client_call_then_a_web_search_under_its_id_is_a_duplicate_call_and_the_search_is_renamed() -> None:
    conversation = [ASK, a(use("x", None), srv("x", "web_search"), web("x")), u(res("x"))]
    assert _found(conversation) == [("duplicate-call", 2, "x")]
    fixed = _repaired(conversation)
    assert [b.get("id") or b.get("tool_use_id") for b in fixed[1]["content"]] == ["x", "x_d2", "x_d2"]
    assert fixed[2] == u(res("x"))


def test_a_web_search_then_a_client_call_under_its_id_renames_the_client_call_and_its_result() -> None:
    conversation = [ASK, a(srv("x", "web_search"), web("x"), use("x", None)), u(res("x"))]
    assert _found(conversation) == [("duplicate-call", 2, "x")]
    fixed = _repaired(conversation)
    assert [b.get("id") or b.get("tool_use_id") for b in fixed[1]["content"]] == ["x", "x", "x_d2"]
    assert [b["tool_use_id"] for b in fixed[2]["content"]] == ["x_d2"]


def test_waiting_code_under_a_client_calls_id_is_renamed_with_its_callers_and_its_later_result() -> None:
    conversation = [ASK, a(use("x", None), srv("x"), use("t1", "x")), u(res("x"), res("t1")), a(ran("x"))]
    assert _found(conversation) == [("duplicate-call", 2, "x")]
    fixed = _repaired(conversation)
    assert fixed[1]["content"][1]["id"] == "x_d2"
    assert fixed[1]["content"][2]["caller"]["tool_id"] == "x_d2"
    assert fixed[3]["content"][0]["tool_use_id"] == "x_d2"
    assert [b["tool_use_id"] for b in fixed[2]["content"]] == ["x", "t1"]


def test_the_two_in_one_run_of_assistant_messages_are_one_turn_too() -> None:
    """A turn continued after ``pause_turn``, kept as a second assistant message: the API reads one turn."""
    conversation = [ASK, a(srv("x", "web_search"), web("x")), a(use("x", None)), u(res("x"))]
    assert _found(conversation) == [("duplicate-call", 3, "x")]
    fixed = _repaired(conversation)
    assert fixed[2]["content"][0]["id"] == "x_d2"
    assert fixed[3]["content"][0]["tool_use_id"] == "x_d2"


def test_a_server_call_taking_an_answered_client_id_in_a_later_turn_stays_a_reuse() -> None:
    conversation = [ASK, a(use("x", None)), u(res("x")), a(srv("x", "web_search"), web("x"))]
    assert _found(conversation) == [("reused", 4, "x")]
    assert history.repair(conversation, format="anthropic") == (conversation, [])
