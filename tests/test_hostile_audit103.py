"""Hostile audit 103 of merge 448e581 (helper 97's gaps97): each test failed before its fix.

1. Ollama (policy ollama-calls-in-order): a call streamed as argument text, then given whole at its
   index, is one call (its snapshot): it was renumbered as another call, the text left invalid.
2. ``result_to_json`` puts the result's JSON values back as they are: LiteLLM's provider fields (and
   a container) nested past Python's stack raised RecursionError, an exception none of fsm's.
3. Gemini (policy will-continue-responses): a response that goes on with one before it is no text,
   so a response to another call after it is not ``result-after-text`` (which repair never fixed).
4. Cohere (policy cohere-thinking-apart): thinking at content index -1 is a block apart from the plan,
   not glued to it and sent as thinking, with no ``tool_plan``.
"""

from __future__ import annotations

from typing import Any

import fsm
from fsm import history
from fsm.serialize import result_to_json


def _ollama_line(arguments: Any) -> dict[str, Any]:
    call = {"function": {"index": 0, "name": "f", "arguments": arguments}}
    return {"model": "m", "message": {"role": "assistant", "content": "", "tool_calls": [call]}, "done": False}


def test_ollama_text_then_whole_at_its_index_is_one_call() -> None:
    done = {"model": "m", "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"}
    result = fsm.reassemble([_ollama_line('{"a":'), _ollama_line({"a": 1}), done], "ollama")
    assert [(call.name, call.status.value, call.arguments) for call in result.calls] == [("f", "complete", {"a": 1})]
    assert "unterminated-arguments" not in [d.code for d in result.diagnostics]


def test_ollama_equal_whole_calls_at_a_reused_index_are_still_two() -> None:
    result = fsm.reassemble([_ollama_line({"a": 1}), _ollama_line({"a": 1})], "ollama")
    assert [call.arguments for call in result.calls] == [{"a": 1}, {"a": 1}]


def _nested(depth: int) -> dict[str, Any]:
    top = inner = {}
    for _ in range(depth):
        inner["a"] = inner = {}
    return top


def test_result_to_json_takes_deep_provider_fields_and_container() -> None:
    chunk = {"choices": [{"index": 0, "delta": {}, "finish_reason": None}]}
    call = {"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    deep = _nested(2000)
    stream = [
        {**chunk, "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]},
        {**chunk, "choices": [{"index": 0, "delta": {"provider_specific_fields": {"phase": deep}}}]},
        {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    result = fsm.reassemble(stream, "openai-chat")
    data = result_to_json(result)
    assert data["provider_fields"] == {"phase": deep} and data["provider_fields"]["phase"] is deep
    contained = result_to_json(fsm.Result("anthropic", "stop", (), (), container={"id": "x", "deep": deep}))
    assert contained["container"]["deep"] is deep


def _gemini(role: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "parts": list(parts)}


def _response(call: str, x: int, more: bool | None = None) -> dict[str, Any]:
    said: dict[str, Any] = {"id": call, "name": "f", "response": {"x": x}}
    if more is not None:
        said["willContinue"] = more
    return {"functionResponse": said}


def test_a_response_after_a_finished_chain_is_in_its_place() -> None:
    calls = _gemini("model", *({"functionCall": {"id": i, "name": "f", "args": {}}} for i in "ab"))
    answers = _gemini("user", _response("a", 1, True), _response("a", 2), _response("b", 3))
    conversation = [_gemini("user", {"text": "hi"}), calls, answers]
    assert history.check(conversation, "gemini").findings == ()
    fixed, changes = history.repair(conversation, format="gemini")
    assert changes == [] and fixed == conversation


def _cohere(*events: dict[str, Any]) -> fsm.Result:
    start = {"type": "message-start", "id": "m", "delta": {"message": {"role": "assistant"}}}
    opened = {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    call = [
        {"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": opened}}},
        {"type": "tool-call-end", "index": 0},
    ]
    end = {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}}
    return fsm.reassemble([start, *events, *call, end], "cohere")


def test_cohere_thinking_at_index_minus_one_is_apart_from_the_plan() -> None:
    plan = {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "P"}}}
    thought = {"type": "content-delta", "index": -1, "delta": {"message": {"content": {"thinking": "T"}}}}
    for events in ((plan, thought), (thought, plan)):
        message = fsm.messages.assistant_message(_cohere(*events), "cohere")
        assert message["tool_plan"] == "P"
        assert message["content"] == [{"type": "thinking", "thinking": "T"}]
