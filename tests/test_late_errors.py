"""A provider's error that arrives after the turn finished (an Anthropic error after message_stop, a
Bedrock exception after messageStop, a Responses error after response.completed, a chat chunk with
an error object after the finish chunk). Before, each was only a second finish reason ``'error'
after 'tool_calls'``, a warning: the provider's message was lost, and strict mode raised nothing.
Now it is ``provider-error`` at its own event, with the provider's message and the event that
finished the turn; that finish reason and the calls it ended stand. Each stream is read from the
bytes the provider sends, whole and a byte at a time."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from fsm import CallStatus, Reassembler, Result
from fsm.cli import main
from fsm.errors import RemoteProtocolError
from tests.helpers import aws_message, provider_error, sse

ARGS = '{"city": "Paris"}'


def _anthropic_events() -> list[dict[str, Any]]:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude"}
    return [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1",
                                                                        "name": "weather", "input": {}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": ARGS}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]  # fmt: skip


def _named_sse(events: list[dict[str, Any]]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def _anthropic() -> tuple[bytes, int, int, str]:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    return _named_sse([*_anthropic_events(), error]), 5, 7, "Overloaded"


def _converse(exception: bytes) -> bytes:
    events = [
        ("messageStart", {"role": "assistant"}),
        ("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "weather"}}}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": ARGS}}}),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("messageStop", {"stopReason": "tool_use"}),
    ]
    return b"".join(aws_message(json.dumps(body).encode(), kind) for kind, body in events) + exception


def _exception(kind: str, message: str) -> bytes:
    return aws_message(json.dumps({"message": message}).encode(), kind, ":exception-type")


def _bedrock_converse() -> tuple[bytes, int, int, str]:
    return _converse(_exception("throttlingException", "Too many requests")), 5, 6, "Too many requests"


def _bedrock_invoke() -> tuple[bytes, int, int, str]:
    pytest.importorskip("botocore")
    from tests.test_bedrock_invoke import invoke_stream

    wire = invoke_stream(_anthropic_events()) + _exception("modelStreamErrorException", "Model stream broke")
    return wire, 5, 7, "Model stream broke"


def _responses() -> tuple[bytes, int, int, str]:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather", "arguments": ""}
    done = {**item, "arguments": ARGS, "status": "completed"}
    events = [
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "status": "in_progress"}},
        {"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc_1", "delta": ARGS},
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "output": [done]}},
        {"type": "error", "code": "server_error", "message": "The server had an error", "param": None},
    ]
    return _named_sse(events), 5, 6, "The server had an error"


def _chat_chunks() -> list[dict[str, Any]]:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "weather", "arguments": ARGS}}
    return [
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]


def _openai_chat() -> tuple[bytes, int, int, str]:
    return sse([*_chat_chunks(), {"error": {"message": "upstream died", "code": 502}}]), 2, 3, "upstream died"


OPENROUTER_ERROR = {  # OpenRouter's mid-stream error: an error object beside a choice whose finish is "error"
    "object": "chat.completion.chunk",
    "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
    "error": {"code": 502, "message": "Provider disconnected"},
}


def _openrouter() -> tuple[bytes, int, int, str]:
    return sse([*_chat_chunks(), OPENROUTER_ERROR]), 2, 3, "Provider disconnected"


def _gemini() -> tuple[bytes, int, int, str]:
    part = {"functionCall": {"name": "weather", "args": json.loads(ARGS)}}
    first = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}]}
    error = {"error": {"code": 500, "message": "Internal error", "status": "INTERNAL"}}
    return sse([first, error], done=False), 1, 2, "Internal error"


def _ollama() -> tuple[bytes, int, int, str]:
    lines = [
        {"model": "m", "message": {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "weather", "arguments": json.loads(ARGS)}}]}, "done": False},
        {"model": "m", "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"},
        {"error": "model runner stopped"},
    ]  # fmt: skip
    return "".join(json.dumps(line) + "\n" for line in lines).encode(), 2, 3, "model runner stopped"


STREAMS = {
    "anthropic": _anthropic,
    "bedrock-converse": _bedrock_converse,
    "bedrock-invoke": _bedrock_invoke,
    "openai-responses": _responses,
    "openai-chat": _openai_chat,
    "openai-chat-openrouter": _openrouter,
    "gemini": _gemini,
    "ollama": _ollama,
}
KINDS = {  # the kind each late error's provider-error names before its message (policy error-kind)
    "anthropic": "overloaded_error",
    "bedrock-converse": "throttlingException",
    "bedrock-invoke": "modelStreamErrorException",
    "openai-responses": "error: server_error",
    "openai-chat": "502",
    "openai-chat-openrouter": "502",
    "gemini": "INTERNAL",
    "ollama": None,
}
PROVIDER = {"bedrock-converse": "bedrock", "bedrock-invoke": "bedrock", "openai-chat-openrouter": "openai-chat"}


def _read(wire: bytes, provider: str, size: int, **options: Any) -> tuple[Exception | None, Result]:
    r = Reassembler(provider, **options)
    raised = None
    try:
        for at in range(0, len(wire), size):
            r.feed_bytes(wire[at : at + size])
    except RemoteProtocolError as exc:
        raised = exc
    return raised, r.close()


@pytest.mark.parametrize("stream", STREAMS)
@pytest.mark.parametrize("provider", ["named", "auto"])
def test_an_error_after_the_finish_says_the_providers_message_and_the_calls_stand(stream: str, provider: str) -> None:
    wire, finished_at, error_at, message = STREAMS[stream]()
    name = PROVIDER.get(stream, stream) if provider == "named" else "auto"
    for size in (len(wire), 1):
        raised, result = _read(wire, name, size)
        assert raised is None
        assert result.finish_reason == "tool_calls"
        assert [(c.name, c.status, c.arguments) for c in result.calls] == [
            ("weather", CallStatus.COMPLETE, json.loads(ARGS))
        ]
        late = [(d.event, d.message) for d in result.diagnostics if d.code == "provider-error"]
        said = provider_error(f"{message} (after the turn finished at event {finished_at}", KINDS[stream])
        assert len(late) == 1 and late[0][0] == error_at and late[0][1].startswith(said), late
        assert "second-finish-reason" not in result.codes()


@pytest.mark.parametrize("stream", STREAMS)
def test_strict_mode_raises_the_late_error_at_its_event_and_close_keeps_the_calls(stream: str) -> None:
    wire, _, error_at, message = STREAMS[stream]()
    raised, result = _read(wire, PROVIDER.get(stream, stream), len(wire), strict=True)
    assert isinstance(raised, RemoteProtocolError) and raised.event == error_at
    assert raised.rule == "finish-ends-calls" and message in str(raised)
    assert result.finish_reason == "tool_calls" and [c.status for c in result.calls] == [CallStatus.COMPLETE]


def test_the_same_error_again_after_an_error_finish_is_quiet_and_another_is_reported() -> None:
    events = _anthropic_events()[:3]
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    other = {"type": "error", "error": {"type": "api_error", "message": "Internal"}}
    r = Reassembler("anthropic")
    for event in [*events, overloaded, overloaded, other]:
        r.feed(event)
    result = r.close()
    assert result.finish_reason == "error"
    assert [(d.event, d.message) for d in result.diagnostics if d.code == "provider-error"] == [
        (4, 'the provider reported an error "overloaded_error": Overloaded'),
        (6, 'the provider reported an error "api_error": Internal (after the turn finished at event 4: '
            "its finish reason and calls stand)"),
    ]  # fmt: skip
    assert "second-finish-reason" not in result.codes()


def test_a_finish_reason_after_the_finish_is_still_a_second_finish_reason() -> None:
    r = Reassembler("openai-chat")
    for chunk in [
        *_chat_chunks(),
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "finish_reason": "length"}]},
    ]:
        r.feed(chunk)
    result = r.close()
    assert result.codes() == ["second-finish-reason"] and result.finish_reason == "tool_calls"


def test_an_openrouter_error_chunk_that_finishes_the_turn_says_its_message() -> None:
    """Before, the error object beside the choices was not read: the stream ended with finish
    reason error and the diagnostic said the provider reported an error: None."""
    r = Reassembler("openai-chat")
    r.feed(_chat_chunks()[0])
    r.feed(OPENROUTER_ERROR)
    result = r.close()
    assert result.finish_reason == "error"
    assert [(d.event, d.code, d.message) for d in result.diagnostics] == [
        (2, "provider-error", provider_error("Provider disconnected", "502"))
    ]


@pytest.mark.parametrize(
    ("provider", "event", "said"),
    [
        ("openai-responses", {"type": "response.failed", "response": {"id": "r", "status": "failed", "error": None}},
         '"response.failed": no message'),
        ("gemini", {"candidates": [{"content": {"role": "model", "parts": [{"text": "x"}]},
                                    "finishReason": "MALFORMED_FUNCTION_CALL"}]},
         '"MALFORMED_FUNCTION_CALL": no message'),
    ],
)  # fmt: skip
def test_an_error_finish_without_a_message_names_the_providers_word(provider: str, event: Any, said: str) -> None:
    """Before, such a finish said the provider reported an error: ``{}`` or ``None``."""
    r = Reassembler(provider)
    r.feed(event)
    result = r.close()
    messages = [d.message for d in result.diagnostics if d.code == "provider-error"]
    assert messages == [f"the provider reported an error {said}"]  # its word, as its kind


def test_replay_shows_the_late_error(tmp_path: Path) -> None:
    path = tmp_path / "late.sse"
    path.write_bytes(_anthropic()[0])
    out, err = io.StringIO(), io.StringIO()
    assert main(["replay", str(path)], stdout=out, stderr=err) == 0
    shown = json.loads(out.getvalue())
    assert shown["finish_reason"] == "tool_calls" and [c["status"] for c in shown["calls"]] == ["complete"]
    assert [(d["event"], d["code"]) for d in shown["diagnostics"]] == [(7, "provider-error")]
    assert "Overloaded" in shown["diagnostics"][0]["message"]


def test_a_cohere_message_end_with_an_error_says_its_message_before_or_after_the_finish() -> None:
    """Cohere's message-end carries what went wrong in ``delta.error`` beside ``finish_reason:
    ERROR``: before, it was not read (the error said nothing), and a second message-end with an
    error after the turn finished was only a second finish reason."""
    start = {
        "type": "tool-call-start",
        "index": 0,
        "delta": {
            "message": {
                "tool_calls": {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": ARGS}}
            }
        },
    }
    end = {"type": "tool-call-end", "index": 0}
    failed = {"type": "message-end", "delta": {"finish_reason": "ERROR", "error": "generation failed"}}
    finished = {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}}
    for events, at, finish, said in [
        ([start, failed], 2, "error", "generation failed"),
        ([start, end, finished, failed], 4, "tool_calls", "generation failed (after the turn finished at event 3"),
    ]:
        r = Reassembler("cohere")
        for event in events:
            r.feed(event)
        result = r.close()
        assert result.finish_reason == finish and [c.arguments for c in result.calls] == [json.loads(ARGS)]
        late = [(d.event, d.message) for d in result.diagnostics if d.code == "provider-error"]
        assert len(late) == 1 and late[0][0] == at
        assert late[0][1].startswith(provider_error(said, "ERROR"))  # its message-end's finish reason


def test_a_bedrock_exception_among_boto3_chunks_after_the_stop_says_its_message() -> None:
    """boto3's InvokeModel events as it yields them (``{"chunk": {"bytes": ...}}``), with Bedrock's
    exception after the model's message_stop, as boto3 hands it on (``{"throttlingException": ...}``)."""
    events: list[Any] = [{"chunk": {"bytes": json.dumps(e).encode()}} for e in _anthropic_events()]
    events.append({"throttlingException": {"message": "Rate exceeded"}})
    for provider in ("auto", "bedrock", "anthropic"):
        r = Reassembler(provider)
        for event in events:
            r.feed(event)
        result = r.close()
        assert result.finish_reason == "tool_calls" and [c.status for c in result.calls] == [CallStatus.COMPLETE]
        assert [(d.event, d.code) for d in result.diagnostics] == [(7, "provider-error")]
        assert result.diagnostics[0].message.startswith(provider_error("Rate exceeded (after", "throttlingException"))
