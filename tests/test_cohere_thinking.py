"""Cohere v2's reasoning models (Command A Reasoning) stream their thinking in ``content-delta``
events whose content holds ``thinking``, not ``text``: it is the turn's reasoning, a block apart from
the tool plan's, and goes back in the next request as a ``thinking`` content item, beside the calls
(policy cohere-thinking-apart). It was dropped without a word, then glued to the plan in
``tool_plan`` (audit 92's G4)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fsm import Reassembler, Result, messages


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


def fed(events: list[dict[str, Any]], form: str, strict: bool = True) -> Result:
    """The events read as ``form`` says: as dicts, or as the SSE body, whole or in 3-byte pieces."""
    r = Reassembler("cohere", strict=strict)
    if form == "dicts":
        for event in events:
            r.feed(event)
    else:
        body = "".join(f"data: {json.dumps(event)}\n\n" for event in events).encode()
        step = len(body) if form == "bytes whole" else 3
        for at in range(0, len(body), step):
            r.feed_bytes(body[at : at + step])
    return r.close()


@pytest.mark.parametrize("form", ["dicts", "bytes whole", "bytes in 3-byte pieces"])
def test_thinking_is_the_turns_reasoning_and_goes_back_as_thinking_content(form: str) -> None:
    result = fed(THINKING, form)
    assert [block.text for block in result.reasoning] == ["The user wants the weather."]
    assert result.text == "" and result.diagnostics == ()
    assert [(c.id, c.arguments) for c in result.calls] == [("w_1", {"c": 1})]
    message = messages.assistant_message(result, "cohere")
    assert message["content"] == [{"type": "thinking", "thinking": "The user wants the weather."}]
    assert "tool_plan" not in message  # no plan streamed


ANSWER = [
    content(0, thinking="hm"),
    content(1, text="Hi"),
    {"type": "message-end", "delta": {"finish_reason": "COMPLETE"}},
]


def read(events: list[dict[str, Any]]) -> Result:
    r = Reassembler("cohere")
    for event in events:
        r.feed(event)
    return r.close()


def test_text_and_thinking_in_one_turn_stay_apart() -> None:
    result = read(ANSWER)
    assert result.text == "Hi" and [block.text for block in result.reasoning] == ["hm"]


PLANNED = [
    *THINKING[:5],
    {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "I will call "}}},
    {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "weather."}}},
    *THINKING[5:],
]


@pytest.mark.parametrize("form", ["dicts", "sdk objects"])
def test_thinking_and_the_tool_plan_are_blocks_apart_and_go_back_apart(form: str) -> None:
    """Policy cohere-thinking-apart: the thinking goes back as a content item, the plan alone as
    ``tool_plan``; cohere's own types take the message (audit 92's G4: ``The user wants the
    weather.I will call weather.`` in ``tool_plan``)."""
    cohere = pytest.importorskip("cohere")
    from cohere.core.unchecked_base_model import construct_type
    from cohere.v2.types import V2ChatStreamResponse

    r = Reassembler("cohere", strict=True)
    for event in PLANNED:
        r.feed(event if form == "dicts" else construct_type(type_=V2ChatStreamResponse, object_=event))
    result = r.close()
    assert [(b.text, b.output_index) for b in result.reasoning] == [
        ("The user wants the weather.", 0),
        ("I will call weather.", None),
    ]
    message = messages.assistant_message(result, "cohere")
    assert message["content"] == [{"type": "thinking", "thinking": "The user wants the weather."}]
    assert message["tool_plan"] == "I will call weather."
    sent = cohere.AssistantChatMessageV2.model_validate(message)
    assert sent.tool_plan == "I will call weather." and sent.content[0].thinking == "The user wants the weather."
    assert sent.tool_calls[0].id == "w_1"


def test_a_final_answer_sends_its_thinking_before_its_text() -> None:
    """Without calls the thinking goes back too, as the response's own message holds it: a
    thinking item, then the text as a text item (a string without thinking, as before)."""
    cohere = pytest.importorskip("cohere")
    message = messages.assistant_message(read(ANSWER), "cohere")
    assert message["content"] == [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "Hi"}]
    assert [item.type for item in cohere.AssistantChatMessageV2.model_validate(message).content] == ["thinking", "text"]
    assert messages.assistant_message(read(ANSWER[1:]), "cohere") == {"role": "assistant", "content": "Hi"}


def test_the_plan_with_text_beside_the_calls_and_no_thinking_is_as_before() -> None:
    message = messages.assistant_message(
        read([PLANNED[5], PLANNED[6], content(0, text="Sure."), *THINKING[5:]]), "cohere"
    )
    assert message["tool_plan"] == "I will call weather.\n\nSure." and "content" not in message
