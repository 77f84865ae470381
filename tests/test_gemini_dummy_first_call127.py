"""Policy gemini-dummy-signature, keyed on the step's first ``functionCall`` part (audit of task 121).

Gemini 3's check is of function calls: a step's first ``functionCall`` part must carry a signature
("Function call ... is missing a thought_signature in functionCall parts"), and Gemini 3 signs that
part itself whenever a step makes calls. A signature on another part of the step does not stand in
for it. Before, a signature anywhere in the content kept the dummy off, so a Claude turn read through
LiteLLM (its ``thinking_blocks`` carry Claude's signature, whose maker a chat result does not say:
policy signature-by-origin sends it on as it came) went to Gemini 3 with its calls unsigned, and so
did a Gemini step whose signed first call was left out (``incomplete="omit"``) beside a signed part."""

from __future__ import annotations

import json
from typing import Any

import fsm
from fsm import Result, messages
from fsm.messages.gemini_code import DUMMY_SIGNATURE
from fsm.results import CallStatus, Reasoning, ToolCall


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "c", "object": "chat.completion.chunk", "model": "claude-sonnet-4", "choices": [choice]}


def test_a_claude_turn_read_through_litellm_goes_to_gemini_with_the_dummy_on_its_call() -> None:
    block = {"type": "thinking", "thinking": "One sum.", "signature": "ErUBQ2xhdWRl"}
    call = {"index": 0, "id": "toolu_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}
    events = [
        _chunk({"role": "assistant", "reasoning_content": "One sum.", "thinking_blocks": [block]}),
        _chunk({"tool_calls": [call]}),
        _chunk({}, "tool_calls"),
    ]
    parts = messages.assistant_message(fsm.reassemble(events, "openai-chat"), "gemini")["parts"]
    assert parts == [
        {"text": "One sum.", "thought": True, "thoughtSignature": "ErUBQ2xhdWRl"},  # as it came (no maker told)
        {"functionCall": {"name": "add", "args": {"a": 1}, "id": "toolu_1"}, "thoughtSignature": DUMMY_SIGNATURE},
    ]


def _call(n: int, status: CallStatus, signature: str | None = None) -> ToolCall:
    text = json.dumps({"n": n}) if status is CallStatus.COMPLETE else '{"n": '
    arguments = {"n": n} if status is CallStatus.COMPLETE else None
    return ToolCall(n, f"c{n}", f"c{n}", "f", arguments, text, status, thought_signature=signature)


def test_a_step_whose_signed_first_call_is_left_out_signs_the_call_it_sends() -> None:
    """Gemini 3 signed the first of two calls, whose arguments were cut; a text part of the step is
    signed too. The call that goes back is the step's first: it takes the dummy, the text keeps its own."""
    calls = (_call(0, CallStatus.TRUNCATED, "UmVhbA=="), _call(1, CallStatus.COMPLETE))
    result = Result(
        finish_reason="tool_calls",
        calls=calls,
        diagnostics=(),
        provider="gemini",
        text="ok",
        text_signature="VGV4dA==",
    )
    parts = messages.assistant_message(result, "gemini")["parts"]
    assert parts == [
        {"text": "ok", "thoughtSignature": "VGV4dA=="},
        {"functionCall": {"name": "f", "args": {"n": 1}, "id": "c1"}, "thoughtSignature": DUMMY_SIGNATURE},
    ]
    # sent too, the signed call goes first with its own signature, and nothing joins it
    included = messages.assistant_message(result, "gemini", incomplete="include")["parts"]
    assert [p.get("thoughtSignature") for p in included] == ["VGV4dA==", "UmVhbA==", None]


def test_a_signed_thought_before_an_unsigned_call_does_not_keep_the_dummy_off() -> None:
    thought = Reasoning(text="t", signature="VGhvdWdodA==", place=0)
    calls = (_call(0, CallStatus.COMPLETE),)
    result = Result(finish_reason="stop", calls=calls, diagnostics=(), provider="gemini", reasoning=(thought,))
    parts = messages.assistant_message(result, "gemini")["parts"]
    assert [p.get("thoughtSignature") for p in parts] == ["VGhvdWdodA==", DUMMY_SIGNATURE]
    off = messages.assistant_message(result, "gemini", dummy_signature=False)["parts"]
    assert [p.get("thoughtSignature") for p in off] == ["VGhvdWdodA==", None]
