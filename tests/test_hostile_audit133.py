"""Audit 133 of task 131 (policy client-and-server-call-one-id): where repair writes the run.

A user message making calls right before the model's run is split: what it keeps of the user's stays
where it was and its calls (Claude's server blocks too) go in a model message right after, in the run.
A call there and a call of the other kind in the run under one id are one turn's: repair renamed
neither, and its own check then said ``duplicate-call`` (audit 48's seeds 90, 248, 249, 275). And a
call repair drops is not sent: a call under its id is renamed for it no more.
"""

from __future__ import annotations

from typing import Any

import pytest

from fsm import history
from fsm.history import REJECTED, RepairPolicy
from tests.test_hostile_audit48 import _history, _sound
from tests.test_hostile_audit80 import ASK, TEXT, a, res, srv, u, use

POLICIES = (RepairPolicy(), RepairPolicy(dangling="drop-call"))


def web(key: str) -> dict[str, Any]:
    return {"type": "web_search_tool_result", "tool_use_id": key, "content": []}


def _repaired(conversation: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Repaired alike under both policies: nothing rejected left, and a second repair changes nothing."""
    outs = []
    for policy in POLICIES:
        fixed, _ = history.repair(conversation, policy, format="anthropic")
        assert [f.kind.value for f in history.check(fixed, "anthropic").findings if f.kind in REJECTED] == []
        assert history.repair(fixed, policy, format="anthropic") == (fixed, [])
        outs.append(fixed)
    assert outs[0] == outs[1]
    return outs[0]


def _ids(message: dict[str, Any]) -> list[str]:
    return [block.get("id") or block["tool_use_id"] for block in message["content"] if block.get("type") != "text"]


def test_a_users_web_search_split_off_its_text_before_a_client_call_under_its_id_renames_the_client_call() -> None:
    conversation = [ASK, u(TEXT, srv("x", "web_search"), web("x")), a(use("x", None)), u(res("x"))]
    fixed = _repaired(conversation)
    assert [m["role"] for m in fixed] == ["user", "user", "assistant", "assistant", "user"]
    assert (_ids(fixed[2]), _ids(fixed[3]), _ids(fixed[4])) == (["x", "x"], ["x_d2"], ["x_d2"])


def test_a_users_mcp_call_beside_an_orphan_result_before_a_client_call_under_its_id() -> None:
    mcp = {"type": "mcp_tool_use", "id": "x", "name": "m", "server_name": "s", "input": {}}
    answer = {"type": "mcp_tool_result", "tool_use_id": "x", "content": []}
    conversation = [ASK, u(res("o"), mcp, answer), a(use("x", None)), u(res("x"))]
    fixed = _repaired(conversation)
    assert [_ids(m) for m in fixed[1:]] == [["x", "x"], ["x_d2"], ["x_d2"]]


def test_a_users_client_call_split_off_its_text_before_a_web_search_under_its_id_renames_the_search() -> None:
    conversation = [ASK, u(TEXT, use("x", None)), a(srv("x", "web_search"), web("x")), u(res("x"))]
    fixed = _repaired(conversation)
    assert [_ids(m) for m in fixed[2:]] == [["x"], ["x_d2", "x_d2"], ["x"]]


def test_a_server_call_repair_drops_leaves_the_client_call_under_its_id_as_it_was() -> None:
    """The search had no result and a turn came after it: it goes, and the run it joins holds one ``x``."""
    conversation = [ASK, a(TEXT, srv("x", "web_search")), u(res("o")), a(use("x", None)), u(res("x"))]
    for policy in POLICIES:
        _, changes = history.repair(conversation, policy, format="anthropic")
        assert not [change for change in changes if change.kind.startswith("renamed")]
    assert _repaired(conversation)[1:] == [a(TEXT, use("x", None)), u(res("x"))]


@pytest.mark.parametrize("seed", [307, 566, 676, 902, 994, 1374])
def test_audit48s_server_blocks_in_user_messages_past_its_300_seeds(seed: int) -> None:
    """Its property (repair's output checks clean, a second repair changes nothing) where a run's first
    call is a user message's (902) or a user message's content goes after the run (566)."""
    for policy in POLICIES:
        _sound(_history(seed), policy)


EMPTY = {"role": "user", "content": []}
ODD = {"role": "system", "content": [TEXT]}


@pytest.mark.parametrize(
    ("between", "expected"),
    [
        ([EMPTY], [("empty-message", 3, ""), ("duplicate-call", 4, "x")]),
        ([ODD], [("unknown-role", 3, ""), ("duplicate-call", 4, "x")]),
    ],
    ids=["empty-message", "unknown-role"],
)
def test_check_reads_the_run_across_what_repair_reads_as_gone(between: list[Any], expected: Any) -> None:
    """A web search and a client call under its id with a message read as absent between: ``check``
    said ``reused`` (which the API takes) and repair renamed the client call all the same."""
    conversation = [ASK, a(srv("x", "web_search"), web("x")), *between, a(use("x", None)), u(res("x"))]
    assert [(f.kind.value, f.message, f.id) for f in history.check(conversation, "anthropic").findings] == expected
    for policy in POLICIES:
        fixed, _ = history.repair(conversation, policy, format="anthropic")
        assert (_ids(fixed[-2])[-1], _ids(fixed[-1])) == ("x_d2", ["x_d2"])


def test_check_reads_a_users_server_call_after_a_client_call_under_its_id_in_its_run() -> None:
    conversation = [ASK, a(use("x", None)), u(srv("x", "web_search"), web("x")), u(res("x"))]
    found = [(f.kind.value, f.message, f.id) for f in history.check(conversation, "anthropic").findings]
    assert ("duplicate-call", 3, "x") in found and ("reused", 2, "x") not in found
    assert [_ids(m) for m in _repaired(conversation)[1:]] == [["x", "x_d2", "x_d2"], ["x"]]
