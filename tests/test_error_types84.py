"""Task 84: an error event says what kind of error it is (policy error-kind).

Anthropic's error event (``{"type": "error", "error": {"type": "overloaded_error", "message":
"Overloaded"}}``) reached the result as its message alone: a caller could not tell an overload (retry)
from an ``invalid_request_error`` (do not) without matching on a message whose wording Anthropic
says may change. OpenAI chat's ``error.code``, Gemini's ``error.status`` and the code of a Responses
``error`` or ``response.failed`` were lost the same way. Each now reaches ``raw_finish_reason`` (as a
Bedrock exception's name did), and the ``request_id`` an Anthropic error body carries beside its
error is said in the message.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

import fsm
from tests.helpers import provider_error
from tests.test_clients import Replay, anthropic_client, anthropic_http

OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
INVALID = {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long"}}
_START = {
    "type": "message_start",
    "message": {"id": "m", "type": "message", "role": "assistant", "content": [], "usage": {"output_tokens": 1}},
}
_BLOCK = {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "f"}}
_PIECE = {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"a": '}}


def sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e.get('type', 'x')}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def said(result: fsm.Result) -> tuple[str | None, str | None, str | None]:
    return result.finish_reason, result.raw_finish_reason, result.finish_message


# Each provider's error shape: what reaches the result (finish reason, raw finish reason, message).
SHAPES: list[tuple[str, str, list[dict[str, Any]], tuple[str, str | None, str]]] = [
    ("anthropic", "anthropic", [_START, OVERLOADED], ("error", "overloaded_error", "Overloaded")),
    ("anthropic-invalid", "anthropic", [_START, INVALID], ("error", "invalid_request_error", "prompt is too long")),
    (
        "anthropic-request-id",
        "anthropic",
        [_START, {**OVERLOADED, "request_id": "req_011CS"}],
        ("error", "overloaded_error", "Overloaded (request_id req_011CS)"),
    ),
    (
        "anthropic-string",
        "anthropic",
        [_START, {"type": "error", "error": "Overloaded"}],
        ("error", None, "Overloaded"),
    ),
    (
        "chat-code",
        "openai-chat",
        [{"error": {"message": "Slow down", "type": "requests", "param": None, "code": "rate_limit_exceeded"}}],
        ("error", "rate_limit_exceeded", "Slow down"),
    ),
    (
        "chat-type",
        "openai-chat",
        [{"error": {"message": "Oops", "type": "server_error", "param": None, "code": None}}],
        ("error", "server_error", "Oops"),
    ),
    (
        "openrouter-status",
        "openai-chat",
        [{"error": {"code": 502, "message": "Upstream failed"}, "choices": []}],
        ("error", "502", "Upstream failed"),
    ),
    (
        "vllm",
        "openai-chat",
        [{"object": "error", "message": "Too long", "type": "BadRequestError", "param": None, "code": 400}],
        ("error", "BadRequestError", "Too long"),
    ),
    (
        "gemini",
        "gemini",
        [{"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}}],
        ("error", "RESOURCE_EXHAUSTED", "Quota exceeded"),
    ),
    ("ollama", "ollama", [{"error": "model not found"}], ("error", None, "model not found")),
]


@pytest.mark.parametrize(("provider", "events", "expected"), [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES])
def test_an_error_reaches_the_result_with_its_kind(
    provider: str, events: list[dict[str, Any]], expected: tuple[str, str | None, str]
) -> None:
    result = fsm.reassemble(events, provider=provider)
    assert said(result) == expected
    assert [d.message for d in result.diagnostics if d.code == "provider-error"] == [
        provider_error(expected[2], expected[1])  # its kind first (task 91)
    ]
    alone = fsm.reassemble(events[-1:])  # read before any event told the provider: the same words
    assert said(alone) == expected


def test_an_overload_and_a_bad_request_are_told_apart_by_their_type_not_their_message() -> None:
    overloaded = fsm.reassemble(sse([_START, OVERLOADED]))
    invalid = fsm.reassemble(sse([_START, {"type": "error", "error": {**INVALID["error"], "message": "Overloaded"}}]))
    assert overloaded.finish_message == invalid.finish_message == "Overloaded"
    assert (overloaded.raw_finish_reason, invalid.raw_finish_reason) == ("overloaded_error", "invalid_request_error")


def test_a_call_an_anthropic_error_cuts_names_the_error_s_type() -> None:
    result = fsm.reassemble(sse([_START, _BLOCK, _PIECE, OVERLOADED]))
    assert [d.message for d in result.diagnostics if d.code == "truncated"] == [
        'call t (f): cut after 6 characters by the provider\'s error "overloaded_error": Overloaded'
    ]


@pytest.mark.parametrize(
    ("event", "word"),
    [
        (
            {"type": "error", "sequence_number": 3, "code": "rate_limit_exceeded", "message": "m"},
            "error: rate_limit_exceeded",
        ),
        ({"type": "error", "sequence_number": 3, "code": None, "message": "m"}, "error"),
        (
            {
                "type": "response.failed",
                "response": {"status": "failed", "error": {"code": "server_error", "message": "m"}},
            },
            "response.failed: server_error",
        ),
        ({"type": "response.failed", "response": {"status": "failed", "error": {"message": "m"}}}, "response.failed"),
    ],
    ids=["error-code", "error-no-code", "failed-code", "failed-no-code"],
)
def test_a_responses_error_keeps_its_code_beside_its_event_type(event: dict[str, Any], word: str) -> None:
    """As an incomplete response's reason (``incomplete: max_output_tokens``): the event, then the code."""
    started = {"type": "response.created", "sequence_number": 0, "response": {"id": "r", "status": "in_progress"}}
    result = fsm.reassemble([started, event], provider="openai-responses")
    assert said(result) == ("error", word, "m")


def test_a_bedrock_exception_keeps_its_name_as_before() -> None:
    event = {"type": "error", "error": {"type": "throttlingException", "message": "slow down"}}
    assert said(fsm.reassemble([event])) == ("error", "throttlingException", "slow down")


# -- through the anthropic SDK ------------------------------------------------------------------------


ASK = [{"role": "user", "content": "hi"}]


def test_through_the_anthropic_client_s_raw_bytes_the_type_reaches_the_result() -> None:
    """The anthropic client's own HTTP stream, its bytes read by fsm: the error event's type is kept."""
    client = anthropic_client(Replay(sse([_START, _BLOCK, _PIECE, OVERLOADED]), anthropic_http()))
    with client.messages.with_streaming_response.create(model="c", max_tokens=9, messages=ASK, stream=True) as got:
        result = fsm.reassemble(got.iter_bytes())
    assert said(result) == ("error", "overloaded_error", "Overloaded")
    assert [c.status for c in result.calls] == [fsm.CallStatus.TRUNCATED]


def test_through_the_anthropic_client_s_events_its_own_error_says_the_type() -> None:
    """The SDK raises at an error event (APIStatusError, whose body is the event) instead of yielding
    it: that error goes up to the caller unchanged, with the result so far kept on it, which says
    what stopped the stream in the SDK's words, the type among them."""
    anthropic = pytest.importorskip("anthropic")
    client = anthropic_client(Replay(sse([_START, _BLOCK, _PIECE, OVERLOADED]), anthropic_http()))
    with pytest.raises(anthropic.APIStatusError) as raised:
        fsm.reassemble(client.messages.create(model="c", max_tokens=9, messages=ASK, stream=True))
    assert raised.value.body == OVERLOADED
    so_far = fsm.result_so_far(raised.value)
    assert so_far is not None and [c.status for c in so_far.calls] == [fsm.CallStatus.TRUNCATED]
    assert any("overloaded_error" in d.message for d in so_far.diagnostics if d.code == "stream-interrupted")


# -- through toolcall-fsm replay ----------------------------------------------------------------------


def replay(*args: str, stdin: bytes) -> tuple[int, str, str]:
    """``toolcall-fsm replay`` in a process of its own, as a user runs it."""
    ran = subprocess.run(
        [sys.executable, "-m", "fsm", "replay", *args, "-"], input=stdin, capture_output=True, check=False
    )
    return ran.returncode, ran.stdout.decode(), ran.stderr.decode()


def test_replay_shows_the_error_s_type_without_a_traceback() -> None:
    code, out, err = replay(stdin=sse([_START, _BLOCK, _PIECE, {**OVERLOADED, "request_id": "req_1"}]))
    shown = json.loads(out)
    assert code == 0 and "Traceback" not in err
    assert (shown["finish_reason"], shown["raw_finish_reason"]) == ("error", "overloaded_error")
    assert shown["finish_message"] == "Overloaded (request_id req_1)"
    strict_code, strict_out, strict_err = replay("--strict", stdin=sse([_START, OVERLOADED]))
    assert strict_code == 1 and "Traceback" not in strict_err and "provider-error" in strict_err
    assert json.loads(strict_out)["raw_finish_reason"] == "overloaded_error"


def test_a_re_emitted_error_keeps_its_kind() -> None:
    """A gateway's clients tell a retryable error too: the error chunk ``DeltaEmitter`` ends with
    carries the kind as its ``code``, which the chat decoder reads back as the same raw finish reason."""
    from openai.types.chat import ChatCompletionChunk

    from fsm.reemit import DeltaEmitter

    reader = fsm.Reassembler("anthropic")
    emitter = DeltaEmitter()
    chunks: list[dict[str, Any]] = []
    for event in [_START, _BLOCK, _PIECE, OVERLOADED]:
        chunks += emitter.chunks(reader.feed(event))
    result = reader.close()
    chunks += emitter.chunks(reader.drain())
    chunks.append(emitter.finish(result))
    assert chunks[-1]["error"]["code"] == "overloaded_error"
    for chunk in chunks:
        ChatCompletionChunk.model_validate(chunk)
    back = fsm.reassemble(b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks), "openai-chat")
    assert said(back)[:2] == ("error", "overloaded_error")


def test_a_cohere_error_with_no_finish_reason_keeps_its_kind() -> None:
    """A ``message-end`` error beside no finish reason: its kind was dropped (audit 88's leftover)."""
    reader = fsm.Reassembler("cohere")
    reader.feed({"type": "message-start", "id": "m", "delta": {"message": {"role": "assistant"}}})
    reader.feed({"type": "message-end", "delta": {"error": {"code": "rate_limited", "message": "slow down"}}})
    assert said(reader.close()) == ("error", "rate_limited", "slow down")


@pytest.mark.parametrize("error", [{}, None, ""], ids=["empty", "null", "blank"])
def test_a_chat_error_that_says_nothing_is_reported(error: Any) -> None:
    """Gemini and Ollama report such an event; OpenAI chat read it as a usage-only chunk, silently."""
    reader = fsm.Reassembler("openai-chat")
    reader.feed({"choices": [{"index": 0, "delta": {"content": "hi"}}]})
    reader.feed({"error": error})
    assert "unknown-event" in [d.code for d in reader.close().diagnostics]
