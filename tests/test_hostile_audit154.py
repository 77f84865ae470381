"""Audit 154 of task 152 (renames clear of held ids, a dropped call frees its id).

A rename of a Claude client call looked up the block it renames by reading its whole message again
(``items`` checks every block of the list it returns), to learn whether the call was a code's server
call, whose callers follow it: once a rename, so thousands of calls under one id in one message took
work quadratic in their count (4,000: 7 s of repair, 16 million blocks looked at). Work is counted,
not timed."""

from __future__ import annotations

from typing import Any

from fsm import history
from tests.test_hostile_audit87 import _steps_taken


def _same_id(n: int) -> list[dict[str, Any]]:
    calls = [{"type": "tool_use", "id": "x", "name": "f", "input": {}} for _ in range(n)]
    results = [{"type": "tool_result", "tool_use_id": "x", "content": "r"} for _ in range(n)]
    return [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": calls},
        {"role": "user", "content": results},
    ]


def test_many_client_calls_under_one_id_in_one_message_are_renamed_in_linear_work() -> None:
    steps = []
    for n in (150, 600):
        conversation = _same_id(n)
        fixed, changes = history.repair(conversation, format="anthropic")
        ids = [block["id"] for block in fixed[1]["content"]]
        assert ids == ["x", *(f"x_d{k}" for k in range(2, n + 1))]
        assert [block["tool_use_id"] for block in fixed[2]["content"]] == ids  # the k-th answers the k-th
        assert len([c for c in changes if c.kind == "renamed-call"]) == n - 1
        steps.append(_steps_taken(lambda conversation=conversation: history.repair(conversation, format="anthropic")))
    assert steps[1] < 4 * steps[0] * 1.25, steps  # 4x the calls: well under quadratic (16x)


def _code(n: int) -> list[dict[str, Any]]:
    """n code runs under one id in one message, then their n results: each run after the first is renamed."""
    done = {"type": "code_execution_result", "stdout": "", "stderr": "", "return_code": 0, "content": []}
    runs = [{"type": "server_tool_use", "id": "s", "name": "code_execution", "input": {}} for _ in range(n)]
    ends = [{"type": "code_execution_tool_result", "tool_use_id": "s", "content": done} for _ in range(n)]
    return [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": runs + ends},
        {"role": "user", "content": "ok"},
    ]


def test_many_code_runs_under_one_id_are_renamed_in_linear_work() -> None:
    # Each renamed run's callers were looked for from its message's first block, not from the run on.
    steps = []
    for n in (150, 600):
        conversation = _code(n)
        fixed, changes = history.repair(conversation, format="anthropic")
        ids = [block.get("id") or block["tool_use_id"] for block in fixed[1]["content"]]
        assert ids == 2 * ["s", *(f"s_d{k}" for k in range(2, n + 1))]
        assert len([c for c in changes if c.kind == "renamed-call"]) == n - 1
        assert not [f for f in history.check(fixed, "anthropic").findings if f.kind in history.REJECTED]
        steps.append(_steps_taken(lambda conversation=conversation: history.repair(conversation, format="anthropic")))
    assert steps[1] < 4 * steps[0] * 1.25, steps
