"""Audit 74: a Bedrock exception says the same on every path, and nothing in such an event is dropped.

A Bedrock exception reaches fsm four ways: as an AWS event-stream frame (``:exception-type``) of a
ConverseStream or of an InvokeModel stream, as a ConverseStream event fed as a dict, and as such an
event fed among boto3's InvokeModel ``chunk`` items. The last read its body with the generic
``error_message``: ``{"Message": "x"}`` said ``{'Message': 'x'}``, ``{}`` said ``{}`` and a null
body ``None``, where the others said ``x`` and the exception's name; a ConverseStream event whose
body was a string, a number or a list raised RemoteProtocolError where the frame said its text. All
four now read it with one function (``exception_message``, policy exception-words).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest

import fsm
from tests.helpers import aws_message, provider_error
from tests.test_hostile_audit70 import _CHUNKS, _INVOKED

_KIND = "throttlingException"
_STARTED = {"messageStart": {"role": "assistant"}}


def _chunk_frame(event: dict[str, Any]) -> bytes:
    return aws_message(json.dumps({"bytes": base64.b64encode(json.dumps(event).encode()).decode()}).encode(), "chunk")


def _exception_frame(body: Any) -> bytes:
    return aws_message(json.dumps(body).encode(), _KIND, ":exception-type")


def _among_chunks(r: fsm.Reassembler, body: Any) -> None:
    for item in _CHUNKS:
        r.feed(item)
    r.feed({_KIND: body})


def _converse(r: fsm.Reassembler, body: Any) -> None:
    r.feed(_STARTED)
    r.feed({_KIND: body})


def _invoke_bytes(r: fsm.Reassembler, body: Any) -> None:
    pytest.importorskip("botocore")
    r.feed_bytes(b"".join(_chunk_frame(e) for e in _INVOKED) + _exception_frame(body))


def _converse_bytes(r: fsm.Reassembler, body: Any) -> None:
    pytest.importorskip("botocore")
    r.feed_bytes(aws_message(json.dumps(_STARTED["messageStart"]).encode(), "messageStart") + _exception_frame(body))


_PATHS: dict[str, Callable[[fsm.Reassembler, Any], None]] = {
    "among-chunks": _among_chunks,
    "converse": _converse,
    "invoke-bytes": _invoke_bytes,
    "converse-bytes": _converse_bytes,
}
_BODIES: list[tuple[Any, str]] = [
    ({"message": "slow down"}, "slow down"),
    ({"Message": "slow down"}, "slow down"),  # before, among chunks: {'Message': 'slow down'}
    ({"message": None, "Message": "slow down"}, "slow down"),  # before: the name, or None among chunks
    ({}, _KIND),  # before, among chunks: {}
    (None, _KIND),  # before, among chunks: None
    ({"message": ""}, _KIND),  # before: an empty message on every path
    ("slow down", "slow down"),  # before, converse: RemoteProtocolError
    ("", _KIND),
    (5, "5"),  # before, converse: RemoteProtocolError
    (["a"], "['a']"),
    ({"originalStatusCode": 429}, _KIND),
]


@pytest.mark.parametrize("path", list(_PATHS))
@pytest.mark.parametrize(("body", "said"), _BODIES, ids=[repr(b)[:24] for b, _ in _BODIES])
def test_an_exception_says_the_same_on_every_path(path: str, body: Any, said: str) -> None:
    for strict in (False, True):
        r = fsm.Reassembler("bedrock", strict=strict)
        try:
            _PATHS[path](r, body)
            result = r.close()
        except fsm.errors.RemoteProtocolError as exc:  # strict: the provider's error, raised with its words
            assert strict
            assert str(exc).endswith(f"provider-error: {_bedrock_error(said)} (rule finish-ends-calls)")
            continue
        assert not strict
        assert result.finish_reason == "error"
        assert result.finish_message == said
        errors = [d.message for d in result.diagnostics if d.code == "provider-error"]
        assert errors == [_bedrock_error(said)]


def _bedrock_error(said: str) -> str:
    """An exception that says nothing is said by its name, which provider-error names once."""
    return provider_error("no message" if said == _KIND else said, _KIND)


_DELTA = {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"a": 1}'}}}}
_UNREAD = "a ConverseStream event ['contentBlockDelta'] among InvokeModel chunks"


@pytest.mark.parametrize("delta_first", [True, False], ids=["delta-first", "exception-first"])
def test_keys_beside_an_exception_among_chunks_are_reported_in_their_place(delta_first: bool) -> None:
    """Such an event ended at the exception and the rest went unread without a word; it is now
    reported as the same key alone among chunks is (unknown-event), before or after the error as
    it stands in the event, as the ConverseStream decoder reads an event of several keys."""
    exception = {_KIND: {"message": "slow down"}}
    event = {**_DELTA, **exception} if delta_first else {**exception, **_DELTA}
    r = fsm.Reassembler("bedrock")
    for item in [*_CHUNKS, event]:
        r.feed(item)
    result = r.close()
    assert result.raw_finish_reason == _KIND
    said = [(d.event, d.code, d.message) for d in result.diagnostics if d.code != "truncated"]
    unread = (3, "unknown-event", _UNREAD)
    error = (3, "provider-error", provider_error("slow down", _KIND))
    assert said == ([unread, error] if delta_first else [error, unread])


def test_every_key_beside_exceptions_among_chunks_is_reported() -> None:
    event = {"metadata": {}, _KIND: {}, "contentBlockStop": {}, "other": 1, "validationException": {}, "p": "x"}
    r = fsm.Reassembler("bedrock")
    for item in [*_CHUNKS, event]:
        r.feed(item)
    said = [(d.code, d.message.split(" (")[0]) for d in r.close().diagnostics if d.code != "truncated"]
    assert said == [
        ("unknown-event", "a ConverseStream event ['metadata'] among InvokeModel chunks"),
        ("provider-error", provider_error("no message", _KIND)),
        ("unknown-event", "a ConverseStream event ['contentBlockStop', 'other'] among InvokeModel chunks"),
        ("provider-error", provider_error("no message", "validationException")),
        ("unknown-event", "a ConverseStream event ['p'] among InvokeModel chunks"),
    ]


_CHAT = [
    {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [
            {
                "index": 0,
                "delta": {"tool_calls": [{"index": 0, "id": "t", "type": "function", "function": {"name": "f"}}]},
            }
        ],
    }
]


@pytest.mark.parametrize("provider", ["auto", "bedrock"])
@pytest.mark.parametrize("carried", [_INVOKED, _CHAT], ids=["claude", "chat"])
def test_an_invoke_stream_s_exception_keeps_its_name_as_bytes_as_among_chunks(
    provider: str, carried: list[dict[str, Any]]
) -> None:
    """The exception frame of an InvokeModel stream is read by its model's wire's decoder, which
    ended the turn with no raw finish reason (and a truncated call's message without the name):
    fed among boto3's chunks, the same exception kept its name."""
    pytest.importorskip("botocore")
    r = fsm.Reassembler(provider)
    r.feed_bytes(b"".join(map(_chunk_frame, carried)) + _exception_frame({"message": "slow down"}))
    framed = r.close()
    r = fsm.Reassembler(provider)
    for event in carried:
        r.feed({"chunk": {"bytes": json.dumps(event).encode()}})
    r.feed({_KIND: {"message": "slow down"}})
    fed = r.close()
    assert framed.raw_finish_reason == fed.raw_finish_reason == _KIND  # before, as bytes: None
    assert [(d.event, d.code, d.message) for d in framed.diagnostics] == [
        (d.event, d.code, d.message) for d in fed.diagnostics
    ]
    assert framed.calls == fed.calls


def _error_read(provider: str, events: list[dict[str, Any]]) -> tuple[Any, ...]:
    r = fsm.Reassembler(provider)
    try:
        for event in events:
            r.feed(event)
        result = r.close()
    except fsm.errors.ToolcallFSMError as exc:
        return ("raised", str(exc))
    said = [d.message for d in result.diagnostics if d.code == "provider-error"]
    return result.finish_reason, result.finish_message, said


_ANTHROPIC_START = {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant"}}


@pytest.mark.parametrize(
    "error",
    [{"type": "error", "error": "Overloaded"}, {"type": "error", "error": None, "message": "Overloaded"}],
    ids=["string-error", "message-beside-null-error"],
)
def test_an_anthropic_error_reads_alike_before_and_after_the_provider_is_known(error: dict[str, Any]) -> None:
    """Read first with provider auto, such an event is an error saying ``Overloaded`` (error_in); read
    by the Anthropic decoder, a string error raised RemoteProtocolError (lax mode too) and a null one
    said ``{}``."""
    alone = _error_read("auto", [error])
    assert alone == ("error", "Overloaded", ["the provider reported an error: Overloaded"])
    assert _error_read("anthropic", [error]) == alone
    assert _error_read("auto", [_ANTHROPIC_START, error]) == alone


@pytest.mark.parametrize(
    ("provider", "error", "said", "kind"),
    [
        ("openai-chat", {"error": {"message": None}}, "no message", None),
        ("openai-chat", {"error": {"message": "", "code": "rate_limited"}}, "{'code': 'rate_limited'}", "rate_limited"),
        (
            "anthropic",
            {"type": "error", "error": {"type": "overloaded_error", "message": None}},
            "{'type': 'overloaded_error'}",
            "overloaded_error",
        ),
        (
            "gemini",
            {"error": {"code": 500, "message": None, "status": "INTERNAL"}},
            "{'code': 500, 'status': 'INTERNAL'}",
            "INTERNAL",
        ),
        ("bedrock", {"internalServerException": None}, "internalServerException", "internalServerException"),
    ],
)
def test_an_error_with_a_null_message_says_what_else_it_holds(
    provider: str, error: dict[str, Any], said: str, kind: str | None
) -> None:
    """A null or empty ``message`` read as the word None ("the provider reported an error: None"):
    the error says what else it holds instead (its type, code, status), or "no message" (a Bedrock
    exception's result says its name, which provider-error names as its kind)."""
    told = "no message" if said == kind else said
    assert _error_read(provider, [error]) == ("error", said, [provider_error(told, kind)])
    assert _error_read("auto", [error])[1] == said


_VLLM_ERROR = {"object": "error", "message": "Too long", "type": "BadRequestError", "param": None, "code": 400}
_CHAT_CALL = {
    "id": "c",
    "object": "chat.completion.chunk",
    "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "t", "function": {"name": "f"}}]}}],
}


def test_an_object_error_payload_is_an_error_after_chat_chunks_too() -> None:
    """An OpenAI-compatible server's ``"object": "error"`` payload ended a stream it began with its
    message (error_in), but after a chunk the chat decoder reported it (``unknown-event``) and the
    stream ended with no finish reason, its open call closed as if nothing went wrong."""
    alone = _error_read("auto", [_VLLM_ERROR])
    assert alone == ("error", "Too long", [provider_error("Too long", "BadRequestError")])
    assert _error_read("openai-chat", [_VLLM_ERROR]) == alone
    assert _error_read("auto", [_CHAT_CALL, _VLLM_ERROR]) == alone
    r = fsm.Reassembler("openai-chat")
    r.feed(_CHAT_CALL)
    r.feed(_VLLM_ERROR)
    assert [c.status for c in r.close().calls] == [fsm.CallStatus.TRUNCATED]


_AFTER_FINISH = "after the turn finished at event 2: its finish reason and calls stand"
_OLLAMA_LINE = {"model": "m", "created_at": "t", "message": {"role": "assistant", "content": "hi"}, "done": False}


def test_an_ollama_error_object_says_its_message_after_lines_too() -> None:
    """Read first in a stream, ``{"error": {"message": ...}}`` said its message (error_in); read by
    the Ollama decoder it said the object, ``{'message': 'boom'}``."""
    error = {"error": {"message": "boom"}}
    alone = _error_read("auto", [error])
    assert alone == ("error", "boom", ["the provider reported an error: boom"])
    assert _error_read("ollama", [error]) == alone
    assert _error_read("auto", [_OLLAMA_LINE, error]) == alone


def _call_line(name: str, done: bool) -> dict[str, Any]:
    call = {"function": {"name": name, "arguments": {"a": 1}}}
    return {
        "model": "m",
        "created_at": "t",
        "message": {"role": "assistant", "content": "", "tool_calls": [call]},
        "done": done,
    }


@pytest.mark.parametrize("done", [False, True], ids=["mid-stream", "last-line"])
def test_an_ollama_line_holding_an_error_beside_its_message_keeps_what_it_says(done: bool) -> None:
    """The line ended the stream at its error, and the calls and text of its message went unread
    without a word. Read as an OpenAI chat error beside choices is (policy error-beside-finish):
    what the line says first, then the error; after the finish on the last line, the turn stands
    and the error is reported after it."""
    r = fsm.Reassembler("ollama")
    r.feed(_call_line("f", False))
    r.feed({**_call_line("g", done), "error": "boom"})
    result = r.close()
    assert [(c.name, c.status) for c in result.calls] == [
        ("f", fsm.CallStatus.COMPLETE),
        ("g", fsm.CallStatus.COMPLETE),
    ]
    assert_error_beside(result, finished=bool(done))


def _gemini_call(name: str, finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"functionCall": {"name": name, "args": {}}}]}}
    return {"candidates": [{**candidate, "finishReason": finish} if finish else candidate]}


@pytest.mark.parametrize("finish", [None, "STOP"])
def test_a_gemini_error_beside_candidates_keeps_what_they_say(finish: str | None) -> None:
    """The event ended the stream at its error, and its candidates (a call here) went unread without
    a word. Read as an OpenAI chat error beside choices is (policy error-beside-finish): the
    candidates first, then the error; after their finish, the turn stands and the error is
    reported after it."""
    r = fsm.Reassembler("gemini")
    r.feed(_gemini_call("f"))
    r.feed({**_gemini_call("g", finish), "error": {"code": 500, "message": "boom"}})
    result = r.close()
    assert [c.name for c in result.calls] == ["f", "g"]
    assert_error_beside(result, finished=bool(finish), kind="500")


# The differential the audit ran: every bundled vector whose stream holds an error, and an error of
# each wire in the shapes its servers send, read as dicts, as bytes in the wire's framing and as the
# official SDK's objects (where its types hold the event: Anthropic's and Gemini's raise on an error
# instead, Ollama's client too), must give the same finish, codes and messages, lax and strict.
_R_START = {
    "type": "response.created",
    "sequence_number": 0,
    "response": {"id": "r", "object": "response", "created_at": 1, "model": "m", "output": [], "status": "in_progress"},
}
_R_FAILED = {
    **_R_START["response"],
    "status": "failed",
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
}
_R_START["response"].update(parallel_tool_calls=True, tool_choice="auto", tools=[])
_COHERE_CALL = [
    {"type": "message-start", "id": "x", "delta": {"message": {"role": "assistant"}}},
    {
        "type": "tool-call-start",
        "index": 0,
        "delta": {
            "message": {"tool_calls": {"id": "t", "type": "function", "function": {"name": "f", "arguments": ""}}}
        },
    },
]
_HAND_MADE: list[tuple[str, str, list[dict[str, Any]]]] = [
    ("anthropic", "anthropic", [*_INVOKED, {"type": "error", "error": {"type": "overloaded_error", "message": "x"}}]),
    ("anthropic-string", "anthropic", [*_INVOKED, {"type": "error", "error": "Overloaded"}]),
    ("chat", "openai-chat", [_CHAT_CALL, {"error": {"message": "boom", "code": 500}}]),
    ("chat-beside", "openai-chat", [_CHAT_CALL, {**_CHAT_CALL, "choices": [], "error": {"message": "boom"}}]),
    ("chat-vllm", "openai-chat", [_CHAT_CALL, _VLLM_ERROR]),
    ("responses", "openai-responses", [_R_START, {"type": "error", "sequence_number": 1, "code": "c", "message": "m"}]),
    (
        "responses-failed",
        "openai-responses",
        [
            _R_START,
            {"type": "response.failed", "sequence_number": 1, "response": {**_R_FAILED, "error": {"message": "m"}}},
        ],
    ),
    ("gemini", "gemini", [_gemini_call("f"), {"error": {"code": 429, "message": "quota", "status": "EXHAUSTED"}}]),
    ("gemini-beside", "gemini", [_gemini_call("f"), {**_gemini_call("g"), "error": {"message": "boom"}}]),
    ("ollama", "ollama", [_OLLAMA_LINE, {"error": {"message": "boom"}}]),
    ("ollama-beside", "ollama", [_OLLAMA_LINE, {**_call_line("g", False), "error": "boom"}]),
    ("cohere", "cohere", [*_COHERE_CALL, {"type": "message-end", "delta": {"finish_reason": "ERROR", "error": "x"}}]),
    ("bedrock", "bedrock", [_STARTED, _DELTA, {_KIND: {"Message": "slow down"}}]),
    ("bedrock-string", "bedrock", [_STARTED, {_KIND: "slow down"}]),
]


def _error_streams() -> list[tuple[str, str, list[dict[str, Any]]]]:
    from tests.test_conformance import VECTORS

    found = list(_HAND_MADE)
    for vector in VECTORS:
        said = json.dumps(vector.events)
        if vector.body is None and ('"error"' in said or "Exception" in said):
            found.append((vector.name, vector.shape, vector.events))
    return found


def _framed(shape: str, events: list[dict[str, Any]]) -> bytes | None:
    from fsm.wire.decoders import BEDROCK_ERRORS
    from tests.capture_variants import render

    if shape == "bedrock":
        if any(len(e) != 1 for e in events) or not pytest.importorskip("botocore"):
            return None
        framed = [(kind, body) for e in events for kind, body in e.items()]
        return b"".join(
            aws_message(json.dumps(b).encode(), k, ":exception-type" if k in BEDROCK_ERRORS else ":event-type")
            for k, b in framed
        )
    if shape in ("ollama", "cohere"):
        return b"".join(json.dumps(e).encode() + b"\n" for e in events)
    return render(events, shape)


def _sdk_objects(shape: str, events: list[dict[str, Any]]) -> list[Any] | None:
    from pydantic import TypeAdapter, ValidationError

    try:
        if shape == "openai-chat":
            chat = pytest.importorskip("openai.types.chat")
            envelope = {"id": "x", "created": 1, "model": "m", "object": "chat.completion.chunk"}
            return [chat.ChatCompletionChunk.model_validate({**envelope, **e}) for e in events]
        if shape == "openai-responses":
            responses = pytest.importorskip("openai.types.responses")
            adapter: TypeAdapter[Any] = TypeAdapter(responses.ResponseStreamEvent)
            return [adapter.validate_python(e) for e in events]
        if shape == "cohere":
            cohere = pytest.importorskip("cohere")
            adapter = TypeAdapter(cohere.StreamedChatResponseV2)
            return [adapter.validate_python(e) for e in events]
    except ValidationError:
        return None
    return None


def _read_all(provider: str, strict: bool, feed: Callable[[fsm.Reassembler], Any]) -> tuple[Any, ...]:
    r = fsm.Reassembler(provider, strict=strict)
    try:
        feed(r)
        result = r.close()
    except fsm.errors.ToolcallFSMError as exc:
        return ("raised", type(exc).__name__, str(exc))
    return (
        result.finish_reason,
        result.raw_finish_reason,
        result.finish_message,
        [(d.event, d.code, d.message) for d in result.diagnostics],
        [(c.id, c.name, c.status, c.arguments) for c in result.calls],
    )


@pytest.mark.parametrize(("shape", "events"), [s[1:] for s in _error_streams()], ids=[s[0] for s in _error_streams()])
def test_a_stream_with_an_error_reads_alike_as_dicts_bytes_and_sdk_objects(shape: str, events: list[Any]) -> None:
    data = _framed(shape, events)
    objects = _sdk_objects(shape, events)
    for provider in (shape, "auto"):
        for strict in (False, True):
            fed = _read_all(provider, strict, lambda r: [r.feed(e) for e in events])
            if data is not None:
                assert _read_all(provider, strict, lambda r: r.feed_bytes(data)) == fed
            if objects is not None:
                assert _read_all(provider, strict, lambda r: [r.feed(o) for o in objects]) == fed


_FRAMED_ERROR = {"type": "error", "error": {"type": _KIND, "message": "slow down"}}
_TOOL_START = {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t", "name": "f"}}}}


@pytest.mark.parametrize(
    "events",
    [
        [_STARTED, _TOOL_START, {**_FRAMED_ERROR, **_DELTA}],
        [_STARTED, _TOOL_START, {**_DELTA, **_FRAMED_ERROR}],
        [{**_FRAMED_ERROR, **_DELTA}],
    ],
    ids=["error-first", "delta-first", "first-event"],
)
def test_keys_beside_an_error_event_in_a_converse_stream_are_reported(events: list[dict[str, Any]]) -> None:
    """An exception as the AWS framing hands it on, fed as a dict with a ConverseStream key beside
    it: the stream ended at the error and the key went unread without a word (as the first event,
    the decoder raised on its ``type``). It is reported now, as a key beside an exception among
    InvokeModel chunks is."""
    r = fsm.Reassembler("bedrock")
    for event in events:
        r.feed(event)
    result = r.close()
    assert (result.finish_reason, result.raw_finish_reason, result.finish_message) == ("error", _KIND, "slow down")
    said = [(d.code, d.message) for d in result.diagnostics if d.code != "truncated"]
    assert said == [
        ("unknown-event", "Bedrock events ['contentBlockDelta'] beside an error event: not read"),
        ("provider-error", provider_error("slow down", _KIND)),
    ]


@pytest.mark.parametrize(
    ("delta", "expected"),
    [
        ({"finish_reason": "ERROR", "error": {"message": "boom"}}, ("error", "ERROR", "boom", "")),
        (
            {"finish_reason": "TOOL_CALL", "error": "boom"},
            ("tool_calls", "TOOL_CALL", None, " (after the turn finished"),
        ),
    ],
    ids=["error-object", "beside-tool-call"],
)
def test_a_cohere_error_reads_as_every_wire_s(delta: dict[str, Any], expected: tuple[Any, ...]) -> None:
    """A ``message-end`` error object said the object (``{'message': 'boom'}``), where every other
    wire says its message; and beside a finish reason that is not an error it took that finish's
    place, where chat's policy error-beside-finish keeps the finish and its calls, the error after."""
    r = fsm.Reassembler("cohere")
    for event in [*_COHERE_CALL, {"type": "message-end", "delta": delta}]:
        r.feed(event)
    result = r.close()
    finish, raw, message, after = expected
    assert (result.finish_reason, result.raw_finish_reason, result.finish_message) == (finish, raw, message)
    errors = [d.message for d in result.diagnostics if d.code == "provider-error"]
    assert len(errors) == 1
    assert errors[0].startswith(provider_error(f"boom{after}", "ERROR" if finish == "error" else None))


def test_an_exception_frame_holding_a_number_too_long_to_write_says_what_the_event_does() -> None:
    """The framing parsed an exception's payload with json.loads, which refuses an integer past
    Python's int-string limit: the frame's whole text became the message, thousands of digits,
    where the same exception as a decoded JSON event (read by loads_event) named the number."""
    pytest.importorskip("botocore")
    raw = b'{"message": ' + b"9" * 5000 + b"}"
    r = fsm.Reassembler("bedrock")
    r.feed_bytes(aws_message(b"{}", "messageStart") + aws_message(raw, _KIND, ":exception-type"))
    framed = r.close().finish_message
    r = fsm.Reassembler("bedrock")
    r.feed_bytes(b'{"messageStart": {}}\n{"' + _KIND.encode() + b'": ' + raw + b"}\n")
    assert framed == r.close().finish_message == "a number too long to write as text (more than 4300 digits)"


def assert_error_beside(result: fsm.Result, *, finished: bool, kind: str | None = None) -> None:
    """An error "boom" of ``kind`` read beside the turn's last event (policy error-beside-finish): after
    a finish the turn stands and the error is reported after it; without one, the error ends the turn."""
    errors = [d.message for d in result.diagnostics if d.code == "provider-error"]
    if finished:
        assert result.finish_reason == "tool_calls"
        assert errors == [provider_error(f"boom ({_AFTER_FINISH})", kind)]
    else:
        assert (result.finish_reason, result.finish_message) == ("error", "boom")
        assert errors == [provider_error("boom", kind)]
