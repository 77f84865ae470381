"""Hostile input against the Bedrock Converse history reading and Claude's server tool turns, each
case one that went wrong before its fix."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import history
from fsm.history import RepairPolicy


def converse_use(cid: str) -> dict[str, Any]:
    return {"toolUse": {"toolUseId": cid, "name": "weather", "input": {}}}


def converse_answer(cid: str) -> dict[str, Any]:
    return {"toolResult": {"toolUseId": cid, "content": [{"text": "-3 C"}]}}


def claude_use(cid: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": cid, "name": "weather", "input": {}}


def claude_answer(cid: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": cid, "content": "-3 C"}


@pytest.mark.parametrize(
    ("fmt", "use", "answer"), [("bedrock", converse_use, converse_answer), ("anthropic", claude_use, claude_answer)]
)
def test_repair_never_joins_a_calls_message_to_a_results_message(fmt: str, use: Any, answer: Any) -> None:
    # Results sent as the assistant: dropping the dangling call's message brought two assistant
    # messages together, and the join made one message that both calls and answers, which check and
    # repair itself then refused ("a message cannot both make tool calls and answer them").
    conversation = [
        {"role": "user", "content": [{"text": "q"}] if fmt == "bedrock" else "q"},
        {"role": "assistant", "content": [use("t1")]},
        {"role": "assistant", "content": [answer("t1")]},
        {"role": "assistant", "content": [use("t2")]},
        {"role": "assistant", "content": [use("t3")]},
        {"role": "user", "content": [answer("t3")]},
    ]
    fixed, changes = history.repair(conversation, RepairPolicy(dangling="drop-call"), fmt)  # type: ignore[arg-type]
    assert [c.kind for c in changes] == ["dropped-call", "dropped-empty-message"]
    assert fixed == [*conversation[:3], *conversation[4:]]
    assert history.check(fixed, fmt).findings == ()  # type: ignore[arg-type]
    assert history.repair(fixed, RepairPolicy(dangling="drop-call"), fmt) == (fixed, [])  # type: ignore[arg-type]
