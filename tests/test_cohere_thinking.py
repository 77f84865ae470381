"""Cohere v2's reasoning models (Command A Reasoning) stream their thinking in ``content-delta``
events whose content holds ``thinking``, not ``text``: it is the turn's reasoning, in the block the
tool plan goes in, and goes back in the next request's ``tool_plan``. It was dropped without a word."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fsm import Reassembler, messages


def content(index: int, **said: str) -> dict[str, Any]:
    return {"type": "content-delta", "index": index, "delta": {"message": {"content": said}}}


THINKING = [
    {"type": "message-start", "id": "m", "delta": {"message": {"role": "assistant"}}},
    {"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "thinking", "thinking": ""}}}},
    content(0, thinking="The user wants "),
    content(0, thinking="the weather."),
    {"type": "content-end", "index": 0},
    {
        "type": "tool-call-start",
        "index": 0,
        "delta": {
            "message": {
                "tool_calls": {
                    "id": "w_1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": ""},
                }
            }
        },
    },
    {
        "type": "tool-call-delta",
        "index": 0,
        "delta": {"message": {"tool_calls": {"function": {"arguments": '{"c": 1}'}}}},
    },
    {"type": "tool-call-end", "index": 0},
    {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}},
]


@pytest.mark.parametrize("form", ["dicts", "bytes whole", "bytes in 3-byte pieces"])
def test_thinking_is_the_turns_reasoning_and_goes_back_as_the_plan(form: str) -> None:
    r = Reassembler("cohere", strict=True)
    if form == "dicts":
        for event in THINKING:
            r.feed(event)
    else:
        body = "".join(f"data: {json.dumps(event)}\n\n" for event in THINKING).encode()
        step = len(body) if form == "bytes whole" else 3
        for at in range(0, len(body), step):
            r.feed_bytes(body[at : at + step])
    result = r.close()
    assert [block.text for block in result.reasoning] == ["The user wants the weather."]
    assert result.text == "" and result.diagnostics == ()
    assert [(c.id, c.arguments) for c in result.calls] == [("w_1", {"c": 1})]
    assert messages.assistant_message(result, "cohere")["tool_plan"] == "The user wants the weather."


def test_text_and_thinking_in_one_turn_stay_apart() -> None:
    r = Reassembler("cohere")
    for event in [
        content(0, thinking="hm"),
        content(1, text="Hi"),
        {"type": "message-end", "delta": {"finish_reason": "COMPLETE"}},
    ]:
        r.feed(event)
    result = r.close()
    assert result.text == "Hi" and [block.text for block in result.reasoning] == ["hm"]
