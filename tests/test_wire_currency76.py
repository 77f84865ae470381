"""Audit 76: fields and events the providers' SDKs define today that the decoders dropped in silence.

Every stream is built inline, shaped as the installed SDK's own type says (cited beside each), and
validated by that type where it is cheap."""

from __future__ import annotations

from typing import Any

import botocore.session
import cohere
import pytest
from anthropic.types import RawMessageStreamEvent, ToolUseBlockParam
from google.genai.types import FinishReason, GenerateContentResponse
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseFunctionToolCallParam, ResponseStreamEvent
from pydantic import TypeAdapter

import fsm
import fsm.errors
import fsm.messages

_RESPONSES = TypeAdapter(ResponseStreamEvent)
_CLAUDE = TypeAdapter(RawMessageStreamEvent)


def _fed(provider: str, events: list[dict[str, Any]], adapter: TypeAdapter[Any]) -> fsm.Result:
    for event in events:
        adapter.validate_python(event)  # the shape is the SDK's
    reassembler = fsm.Reassembler(provider)
    for event in events:
        reassembler.feed(event)
    return reassembler.close()


_RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 0,
    "model": "gpt-x",
    "output": [],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "status": "completed",
}


def _function_call(**context: Any) -> list[dict[str, Any]]:
    # openai types/responses/response_function_tool_call.py: ResponseFunctionToolCall has
    # namespace ("The namespace of the function to run"), caller (CallerDirect | CallerProgram
    # {caller_id}) and async (alias of async_).
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_customer", "arguments": ""}
    item |= {"status": "in_progress", **context}
    return [
        {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": item},
        {
            "type": "response.function_call_arguments.delta",
            "sequence_number": 2,
            "output_index": 0,
            "item_id": "fc_1",
            "delta": '{"id": 7}',
        },
        {
            "type": "response.output_item.done",
            "sequence_number": 3,
            "output_index": 0,
            "item": {**item, "arguments": '{"id": 7}', "status": "completed"},
        },
        {"type": "response.completed", "sequence_number": 4, "response": _RESPONSE},
    ]


def test_a_responses_call_keeps_its_namespace_and_caller_and_they_go_back() -> None:
    """A function in a namespace tool group: the name alone may be another group's tool. Dropped,
    the call went back as a call to a tool of no namespace."""
    caller = {"type": "program", "caller_id": "call_prog"}
    result = _fed("openai-responses", _function_call(namespace="crm", caller=caller, **{"async": True}), _RESPONSES)
    (call,) = result.complete_calls
    assert call.item == {"type": "function_call", "id": "fc_1", "namespace": "crm", "caller": caller, "async": True}
    (sent,) = fsm.messages.assistant_message(result, "openai-responses")
    assert sent["namespace"] == "crm" and sent["caller"] == caller and sent["async"] is True
    # ResponseFunctionToolCallParam (the input item) takes them back
    assert {"namespace", "caller", "async"} <= ResponseFunctionToolCallParam.__annotations__.keys()


def test_a_responses_call_without_them_is_as_before() -> None:
    result = _fed("openai-responses", _function_call(), _RESPONSES)
    assert result.calls[0].item == {"type": "function_call", "id": "fc_1"}
    assert fsm.messages.assistant_message(result, "openai-responses") == [
        {"type": "function_call", "call_id": "call_1", "name": "get_customer", "arguments": '{"id": 7}'}
    ]


_MESSAGE_START = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    },
}
_TOOL_USE_STOP = {
    "type": "message_delta",
    "delta": {"stop_reason": "tool_use", "stop_sequence": None},
    "usage": {"output_tokens": 5},
}


def test_a_claude_tool_use_keeps_its_caller_and_toolset_and_they_go_back() -> None:
    """anthropic types/tool_use_block.py: ToolUseBlock.caller (DirectCaller | ServerToolCaller
    {type: code_execution_..., tool_id}: a call made from Claude's code execution, programmatic
    tool calling) and toolset_name; ToolUseBlockParam takes both back."""
    caller = {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}
    block = {"type": "tool_use", "id": "toolu_1", "name": "q", "input": {}, "caller": caller, "toolset_name": "crm"}
    events = [
        _MESSAGE_START,
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"a": 1}'}},
        {"type": "content_block_stop", "index": 0},
        _TOOL_USE_STOP,
    ]
    result = _fed("anthropic", events, _CLAUDE)
    (call,) = result.complete_calls
    assert call.item == {"type": "tool_use", "caller": caller, "toolset_name": "crm"}
    (use,) = fsm.messages.assistant_message(result, "anthropic")["content"]
    assert use == {**block, "input": {"a": 1}}
    assert {"caller", "toolset_name"} <= ToolUseBlockParam.__annotations__.keys()
    # another provider's format takes neither: a Claude caller is no Responses caller
    (sent,) = fsm.messages.assistant_message(result, "openai-responses")
    assert "caller" not in sent and "toolset_name" not in sent


def test_a_claude_tool_use_without_them_has_no_item() -> None:
    block = {"type": "tool_use", "id": "toolu_1", "name": "q", "input": {}}
    events = [_MESSAGE_START, {"type": "content_block_start", "index": 0, "content_block": block}]
    events += [{"type": "content_block_stop", "index": 0}]
    assert _fed("anthropic", events, _CLAUDE).calls[0].item is None


def _converse_call_then(reason: str) -> list[dict[str, Any]]:
    return [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "tu_1", "name": "f"}}}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"a": 1}'}}}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": reason}},
    ]


@pytest.mark.parametrize("reason", ["malformed_tool_use", "malformed_model_output"])
def test_a_converse_malformed_stop_is_an_error_not_a_quiet_finish(reason: str) -> None:
    """botocore bedrock-runtime service-2.json, StopReason: ... malformed_model_output |
    malformed_tool_use (the Converse API reference's MessageStopEvent lists them). Read before as a
    finish word of no meaning, with no diagnostic at all; now an error finish, as Gemini's
    MALFORMED_FUNCTION_CALL (LangChain.js's @langchain/aws normalises both to error too)."""
    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    assert reason in model.shape_for("StopReason").enum
    result = fsm.reassemble(_converse_call_then(reason), provider="bedrock")
    assert result.finish_reason == "error" and result.raw_finish_reason == reason
    assert "provider-error" in result.codes()
    with pytest.raises(fsm.errors.RemoteProtocolError):
        fsm.reassemble(_converse_call_then(reason), provider="bedrock", strict=True)


def test_a_direct_caller_the_default_is_no_context() -> None:
    """Claude sends ``caller: {"type": "direct"}`` on its ordinary tool_use blocks (a recording of
    Haiku 4.5 does), as Responses may: the default, which says nothing, so no item is made of it
    (the call reads as one without it, through every path, LiteLLM's too)."""
    block = {"type": "tool_use", "id": "toolu_1", "name": "q", "input": {}, "caller": {"type": "direct"}}
    events = [_MESSAGE_START, {"type": "content_block_start", "index": 0, "content_block": block}]
    events += [{"type": "content_block_stop", "index": 0}]
    assert _fed("anthropic", events, _CLAUDE).calls[0].item is None
    result = _fed("openai-responses", _function_call(caller={"type": "direct"}), _RESPONSES)
    assert result.calls[0].item == {"type": "function_call", "id": "fc_1"}


def test_responses_audio_events_are_reported_not_read_past_in_silence() -> None:
    """openai types/responses/response_audio_transcript_delta_event.py (and response.audio.delta,
    .done, .transcript.done: members of ResponseStreamEvent): the spoken answer and its transcript,
    which nothing here reassembles. Any event ending in .delta, .done or .added was read past
    without a word; now only the quiet prefixes are (text, reasoning, a hosted tool's progress)."""
    events = [
        {"type": "response.audio.transcript.delta", "sequence_number": 1, "delta": "Hello"},
        {"type": "response.audio.delta", "sequence_number": 2, "delta": "AAAA"},
        {"type": "response.audio.transcript.done", "sequence_number": 3},
        {"type": "response.audio.done", "sequence_number": 4},
        {"type": "response.completed", "sequence_number": 5, "response": _RESPONSE},
    ]
    result = _fed("openai-responses", events, _RESPONSES)
    told = [d.message for d in result.diagnostics if d.code == "unknown-event"]
    assert told == [f"Responses event type {e['type']!r}" for e in events[:4]]


def test_a_chat_delta_audio_is_reported_not_dropped_in_silence() -> None:
    """openai types/chat/chat_completion_chunk.py: ChoiceDelta.audio (an audio model's spoken
    answer, id, data and transcript, piece by piece). No Result field holds it, and it was dropped
    without a word; now reported, as a search model's annotations are, beside a call too."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        payload = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [choice]}
        ChatCompletionChunk.model_validate(payload)
        return payload

    audio = {"id": "audio_1", "transcript": "Hello", "data": "AAAA", "expires_at": 1}
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    for delta in ({"role": "assistant", "audio": audio}, {"audio": audio, "tool_calls": [call]}):
        result = fsm.reassemble([chunk(delta), chunk({}, "stop")], provider="openai-chat")
        (told,) = [d.message for d in result.diagnostics if d.code == "part-not-reassembled"]
        assert told == "delta.audio (id, transcript, data, expires_at) is not kept: no Result holds it"


def test_cohere_content_start_text_is_read_and_a_citation_reported() -> None:
    """cohere ChatContentStartEventDeltaMessageContent holds text (and thinking) as a content-delta's
    does; CitationStartV2ChatStreamResponse's delta.message.citations is a Citation (start, end,
    text, sources). Both were read past in silence under the quiet ``content-`` and ``citation-``
    prefixes: the start's text was lost from the turn."""
    citation = {"start": 0, "end": 2, "text": "Hi", "sources": [], "type": "TEXT_CONTENT"}
    events = [
        {"type": "message-start", "id": "m1", "delta": {"message": {"role": "assistant"}}},
        {"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "text", "text": "Hi "}}}},
        {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "there"}}}},
        {"type": "citation-start", "index": 0, "delta": {"message": {"citations": citation}}},
        {"type": "citation-end", "index": 0},
        {"type": "content-end", "index": 0},
        {"type": "message-end", "delta": {"finish_reason": "COMPLETE"}},
    ]
    result = _fed("cohere", events, TypeAdapter(cohere.StreamedChatResponseV2))
    assert result.text == "Hi there" and result.finish_reason == "stop"
    (told,) = [d.message for d in result.diagnostics if d.code == "part-not-reassembled"]
    assert told == "citation-start at index 0 (start, end, text, sources, type) is not kept: no part holds it"


@pytest.mark.parametrize(
    ("word", "normal"),
    [
        ("CONTINUATION", "length"),
        ("IMAGE_PROHIBITED_CONTENT", "content_filter"),
        ("IMAGE_RECITATION", "content_filter"),
        ("MODEL_ARMOR", "content_filter"),
        ("MALFORMED_RESPONSE", "error"),
        ("MISSING_THOUGHT_SIGNATURE", "error"),
        ("TOO_MANY_TOOL_CALLS", "length"),
        ("LANGUAGE", "content_filter"),
        ("ESCALATION", "content_filter"),
        ("PUP_LIMITED_DISABLED", "error"),
    ],
)
def test_gemini_later_finish_words_are_normalised(word: str, normal: str) -> None:
    """google-genai types.FinishReason: CONTINUATION ("reached the per-request token limit, but
    generation is not yet complete"), IMAGE_PROHIBITED_CONTENT, IMAGE_RECITATION, MODEL_ARMOR
    (blocked by Model Armor), MALFORMED_RESPONSE, MISSING_THOUGHT_SIGNATURE (a request missing one);
    3.6's TOO_MANY_TOOL_CALLS (the server-side tool loop stopped), LANGUAGE, ESCALATION (filtered) and
    PUP_LIMITED_DISABLED (an account disabled: the provider's error).
    They came out lowercased, meaning nothing; an error's is a provider-error now."""
    assert word in {reason.value for reason in FinishReason}
    event = {"candidates": [{"content": {"role": "model", "parts": [{"text": "x"}]}, "finishReason": word}]}
    GenerateContentResponse.model_validate(event)
    result = fsm.reassemble([event], provider="gemini")
    assert (result.finish_reason, result.raw_finish_reason) == (normal, word)
    assert ("provider-error" in result.codes()) == (normal == "error")


def test_a_gemini_continuation_token_is_reported_not_dropped() -> None:
    """google-genai types.Candidate.continuation_token: "returned when finish_reason is CONTINUATION.
    Clients can pass this token in a subsequent GenerateContentRequest to continue generation." No
    Result field holds it, so it is reported where it was dropped in silence."""
    candidate = {"content": {"role": "model", "parts": [{"text": "x"}]}, "finishReason": "CONTINUATION"}
    event = {"candidates": [{**candidate, "continuationToken": "Q09OVElOVUU="}]}
    GenerateContentResponse.model_validate(event)
    result = fsm.reassemble([event], provider="gemini")
    (told,) = [d for d in result.diagnostics if d.code == "part-not-reassembled"]
    assert told.event == 1 and told.message.startswith("candidate.continuationToken is not kept")
    assert result.text == "x" and result.finish_reason == "length"
    assert fsm.reassemble([{"candidates": [candidate]}], provider="gemini").diagnostics == ()
