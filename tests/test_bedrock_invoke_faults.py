"""Bedrock's InvokeModelWithResponseStream, read hostilely: chunks that carry nothing usable,
exception and error frames wherever they fall, ConverseStream events mixed in, boto3's events in
every shape their bytes take, and limits on what a chunk carries. Every outcome is a typed answer
naming its event, the same however the bytes are cut."""

from __future__ import annotations

import base64
import json
import random
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

import fsm
from fsm import Reassembler
from fsm.errors import FramingError, LimitExceeded, ToolcallFSMError
from fsm.options import Limits
from tests.conftest import captures
from tests.helpers import aws_message, provider_error
from tests.test_bedrock_invoke import (
    ANTHROPIC,
    _two_calls,
    exception_message,
    from_bytes,
    invoke_stream,
    pieces,
    seen,
    sse_events,
)

pytest.importorskip("botocore")

SIZES = (1, 2, 3, 7, 4093)


def chunk_body(body: Any) -> bytes:
    """A ``chunk`` message whose JSON is ``body`` as it is (not an event's base64)."""
    return aws_message(json.dumps(body).encode(), "chunk")


def headed_message(headers: dict[str, str], payload: bytes = b"") -> bytes:
    """An AWS event-stream message with string headers of any names."""
    raw = b""
    for name, value in headers.items():
        raw += bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(value)) + value.encode()
    prelude = struct.pack(">II", 12 + len(raw) + len(payload) + 4, len(raw))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + raw + payload
    return body + struct.pack(">I", zlib.crc32(body))


def outcome(wire: bytes, size: int | None, provider: str = "auto", **options: Any) -> tuple[Any, ...]:
    """What a stream gives read in reads of ``size`` bytes: the error raised (type, event) and all
    the result says. Any exception that is not fsm's fails the test."""
    r = Reassembler(provider, **options)
    raised = None
    try:
        for piece in pieces(wire, size) if size else [wire]:
            r.feed_bytes(piece)
    except ToolcallFSMError as exc:
        raised = (type(exc).__name__, exc.event)
    try:
        result = r.close()
    except ToolcallFSMError as exc:
        raised, result = raised or (type(exc).__name__, exc.event), r.close()
    return raised, result.provider, *seen(result)


# -- chunks that carry nothing usable --------------------------------------------------------------

NOT_CHUNKS = [
    ({"bytes": 5, "p": "x"}, "a chunk's bytes are int"),
    ({"bytes": None}, "a chunk has no bytes"),
    ({"bytes": [1, 2]}, "a chunk's bytes are list"),
    ({"bytes": {"type": "ping"}}, "a chunk's bytes are dict"),
    ({"p": "only padding"}, "a chunk has no bytes"),
    ([1, 2], "a chunk must be an object holding bytes, not list"),
    ("abc", "a chunk must be an object holding bytes, not str"),
]


@pytest.mark.parametrize(("body", "said"), NOT_CHUNKS, ids=[s for _, s in NOT_CHUNKS])
@pytest.mark.parametrize("at", [0, 1])
def test_a_chunk_without_usable_bytes_is_one_bad_event_wherever_it_comes(body: Any, said: str, at: int) -> None:
    """Before, a first such chunk stopped the stream ("cannot tell the provider", or under bedrock
    every later event read as a ConverseStream's and raised), and a later one was reported as an
    Anthropic event of type None."""
    events = _two_calls()
    wire = invoke_stream(events[:at]) + chunk_body(body) + invoke_stream(events[at:])
    boto3 = [{"chunk": {"bytes": json.dumps(e).encode()}} for e in events]
    boto3.insert(at, {"chunk": body})
    for provider in ("auto", "anthropic", "bedrock"):
        for result in (from_bytes([wire], provider), _fed(boto3, provider)):
            assert [c.status for c in result.calls] == [fsm.CallStatus.COMPLETE] * 2, provider
            assert [(d.event, d.code) for d in result.diagnostics] == [(at + 1, "bad-event")], provider
            assert said in result.diagnostics[0].message
        with pytest.raises(FramingError, match=said) as raised:
            from_bytes([wire], provider, strict=True)
        assert raised.value.event == at + 1


def _fed(items: list[Any], provider: str = "auto", **options: Any) -> fsm.Result:
    r = Reassembler(provider, **options)
    for item in items:
        r.feed(item)
    return r.close()


# -- boto3's events --------------------------------------------------------------------------------


def test_boto3_chunk_bytes_read_alike_as_bytes_bytearray_memoryview_and_base64_text() -> None:
    """A memoryview (what a zero-copy reader hands on) was not read: "cannot tell the provider"."""
    events = _two_calls()
    raw = [json.dumps(e).encode() for e in events]
    own = seen(_fed([{"chunk": {"bytes": b}} for b in raw]))
    for shape in (bytearray, memoryview, lambda b: base64.b64encode(b).decode()):
        assert seen(_fed([{"chunk": {"bytes": shape(b)}} for b in raw])) == own, shape


def test_boto3_chunks_fed_after_bytes_are_read_as_the_bytes_chunks_are() -> None:
    """Before, once bytes had been fed, a boto3 chunk event was given to the model's decoder whole
    and reported as an unknown event."""
    events = _two_calls()
    r = Reassembler()
    r.feed_bytes(invoke_stream(events[:3]))
    for event in events[3:]:
        r.feed({"chunk": {"bytes": json.dumps(event).encode()}})
    assert seen(r.close()) == seen(from_bytes([invoke_stream(events)]))


def test_what_a_boto3_chunk_carries_is_held_to_max_event_bytes_and_max_event_depth() -> None:
    """The carried event is read from bytes, so it is held to the limits bytes are: before, a
    carried event of any length was read."""
    events = _two_calls()
    limits = Limits(max_event_bytes=4096)
    long_event = json.dumps({"type": "ping", "pad": "x" * 5000}).encode()
    for carried, kind in [(long_event, LimitExceeded), (b"[" * 400 + b"]" * 400, LimitExceeded)]:
        r = Reassembler(limits=limits)
        r.feed({"chunk": {"bytes": json.dumps(events[0]).encode()}})
        with pytest.raises(kind) as raised:
            r.feed({"chunk": {"bytes": carried}})
        assert raised.value.event == 2
        assert r.close().finish_reason is None
    deep = invoke_stream(events[:1]) + chunk_body({"bytes": base64.b64encode(b"[" * 400 + b"]" * 400).decode()})
    for size in (None, 3):
        assert outcome(deep, size)[0] == ("LimitExceeded", 2)
    assert outcome(invoke_stream(events[:1]) + chunk_body({"bytes": "A" * 8000}), None, limits=limits)[0] == (
        "LimitExceeded",
        2,
    )


def test_a_chunk_within_a_chunk_is_never_unwrapped_however_deep() -> None:
    events = _two_calls()
    deep: dict[str, Any] = {"chunk": {"bytes": json.dumps(events[0]).encode()}}
    for _ in range(50_000):
        deep = {"chunk": {"bytes": deep}}
    result = _fed([deep, *({"chunk": {"bytes": json.dumps(e).encode()}} for e in events)])
    assert len(result.complete_calls) == 2
    assert [(d.event, d.code) for d in result.diagnostics] == [(1, "bad-event")]


# -- exception and error frames --------------------------------------------------------------------


def _opened(events: list[dict[str, Any]]) -> int:
    return next(n for n, e in enumerate(events) if "partial_json" in str(e))


EXCEPTIONS = [
    (b'{"message": "Rate exceeded"}', "Rate exceeded"),
    (b'{"Message": "capital M"}', "capital M"),
    (b"<html>503 Service Unavailable</html>", "<html>503 Service Unavailable</html>"),
    (b"\xff\xfeboom", "\ufffd\ufffdboom"),
    (b"[1, 2]", "[1, 2]"),
    (b"", "modelStreamErrorException"),
    (b'{"other": 1}', "modelStreamErrorException"),
]


@pytest.mark.parametrize(("payload", "said"), EXCEPTIONS, ids=[s[:12] for _, s in EXCEPTIONS])
def test_an_exception_frame_ends_the_stream_whatever_its_payload(payload: bytes, said: str) -> None:
    """Before, an exception whose payload was not a JSON object with ``message`` was a bad event (the
    stream then ended with no finish reason) or lost its message."""
    events = _two_calls()
    opened = _opened(events)
    frame = aws_message(payload, "modelStreamErrorException", ":exception-type")
    wire = invoke_stream(events[: opened + 1]) + frame
    for provider in ("auto", "anthropic", "bedrock"):
        for size in (None, 1, 7):
            raised, _, finish, calls, diagnostics, *_ = outcome(wire, size, provider)
            assert raised is None and finish == "error"
            assert calls[-1].status is fsm.CallStatus.TRUNCATED
            assert diagnostics[0] == (opened + 2, "provider-error", _reported(said))
    converse = aws_message(json.dumps({"role": "assistant"}).encode(), "messageStart") + frame
    result = from_bytes([converse])
    assert (result.provider, result.finish_reason) == ("bedrock", "error")
    assert result.diagnostics[0].message == _reported(said)


def _reported(said: str) -> str:
    """provider-error of the exception: its name, then its message (none, where it is said by its name)."""
    kind = "modelStreamErrorException"
    return provider_error("no message" if said == kind else said, kind)


def test_a_service_error_message_ends_the_stream_with_what_its_headers_say() -> None:
    """``:message-type: error`` frames carry their code and message in headers, with no event type:
    before, such a frame was an unknown event named 'unknown', and the stream ran on."""
    events = _two_calls()
    opened = _opened(events)
    error = headed_message(
        {":message-type": "error", ":error-code": "InternalFailure", ":error-message": "try again later"}
    )
    converse = aws_message(json.dumps({"role": "assistant"}).encode(), "messageStart")
    said = provider_error("try again later", "InternalFailure")
    for head, provider in [(invoke_stream(events[: opened + 1]), "anthropic"), (converse, "bedrock"), (b"", "auto")]:
        result = from_bytes([head + error])
        assert result.finish_reason == "error" and result.provider == provider
        assert (result.diagnostics[0].code, result.diagnostics[0].message) == ("provider-error", said)


@pytest.mark.parametrize("provider", ["auto", "anthropic", "bedrock", "openai-chat"])
def test_an_exception_before_any_chunk_ends_the_stream_under_each_name(provider: str) -> None:
    """A throttled InvokeModel stream whose chunks still follow (a proxy's replay, a log): before,
    under auto or bedrock the exception decided the stream was a ConverseStream and the first chunk
    raised; under anthropic the exception was an unknown event and the stream did not end."""
    events = _two_calls()
    wire = exception_message("throttlingException", "Rate exceeded") + invoke_stream(events)
    raised, named, finish, _, diagnostics, *_ = outcome(wire, 5, provider)
    assert raised is None and finish == "error"
    assert named == ("bedrock" if provider == "auto" else provider)
    assert diagnostics[0] == (1, "provider-error", provider_error("Rate exceeded", "throttlingException"))
    after = {"event-after-finish", "second-finish-reason"} | ({"unknown-event"} if provider == "openai-chat" else set())
    assert {code for _, code, _ in diagnostics[1:]} <= after  # (Anthropic's events are no OpenAI chat chunks)


# -- ConverseStream events and InvokeModel chunks in one stream -------------------------------------


def test_the_first_event_tells_which_api_and_an_event_of_the_other_is_reported_and_not_read() -> None:
    """Before, a chunk after a ConverseStream event raised ("type is str, not an object"), and a
    ConverseStream event among chunks was reported as an Anthropic event of type None."""
    events = _two_calls()
    delta = {"contentBlockIndex": 0, "delta": {"text": "hi"}}
    converse = aws_message(json.dumps(delta).encode(), "contentBlockDelta")
    for provider in ("auto", "anthropic", "bedrock"):
        among = from_bytes([invoke_stream(events[:3]) + converse + invoke_stream(events[3:])], provider)
        assert len(among.complete_calls) == 2 and among.finish_reason == "tool_calls"
        assert [(d.event, d.code) for d in among.diagnostics] == [(4, "bad-event")]
        assert "'contentBlockDelta' event in an InvokeModel stream" in among.diagnostics[0].message

        after = from_bytes([converse + invoke_stream(events[:2])], provider)
        mixed = [d for d in after.diagnostics if d.code == "bad-event"]
        assert [d.event for d in mixed] == [2, 3] and after.calls == ()
        assert "an InvokeModel chunk in a ConverseStream stream" in mixed[0].message


@pytest.mark.parametrize("provider", ["auto", "bedrock"])
def test_boto3_events_of_both_apis_are_reported_not_misread(provider: str) -> None:
    """Before, under auto a ConverseStream event or exception among boto3's chunks went to the
    model's decoder (an Anthropic event of type None; the exception did not end the stream), and
    under bedrock a chunk after a ConverseStream event raised."""
    events = _two_calls()
    chunks = [{"chunk": {"bytes": json.dumps(e).encode()}} for e in events]
    delta = {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "hi"}}}
    among = _fed([*chunks[:3], delta, *chunks[3:]], provider)
    assert len(among.complete_calls) == 2
    assert [(d.event, d.code) for d in among.diagnostics] == [(4, "unknown-event")]
    assert "ConverseStream event ['contentBlockDelta'] among InvokeModel chunks" in among.diagnostics[0].message
    after = _fed([delta, *chunks[:2]], provider)
    assert [(d.event, d.code) for d in after.diagnostics][:2] == [(2, "unknown-event"), (3, "unknown-event")]
    assert "an event of anthropic's wire in a ConverseStream" in after.diagnostics[0].message
    ended = _fed([*chunks[:5], {"throttlingException": {"message": "slow"}}], provider)
    assert ended.finish_reason == "error" and ended.diagnostics[0].message.endswith("slow")
    assert ended.diagnostics[0].event == 6 and ended.calls[-1].status is fsm.CallStatus.TRUNCATED


# -- differential: every capture, every corruption, every chunking --------------------------------


def _corruptions(events: list[dict[str, Any]], rng: random.Random) -> list[bytes]:
    """One invoke stream per kind of damage, each at a random place."""
    at = rng.randrange(len(events))
    before, after = invoke_stream(events[:at]), invoke_stream(events[at:])
    good = base64.b64encode(json.dumps(events[at]).encode()).decode()
    flipped = list(good)
    flipped[rng.randrange(len(flipped))] = rng.choice("!*-_ \n")
    bodies: list[Any] = [
        {"bytes": "".join(flipped)},
        {"bytes": good.rstrip("=") + ("" if good.endswith("=") else "A")},
        {"bytes": base64.urlsafe_b64encode(b"\xfb\xff" + json.dumps(events[at]).encode()).decode()},
        {"bytes": "\n".join(good[i : i + 76] for i in range(0, len(good), 76))},
        {"bytes": ""},
        {"bytes": base64.b64encode(b"null").decode()},
        {"bytes": base64.b64encode(b"[1]").decode()},
        {"bytes": base64.b64encode(b"7").decode()},
        {"bytes": good, "p": "p" * 100_000, "extra": {"k": [1, 2]}},
        {"bytes": rng.choice([1, [1], {"a": 1}, None])},
        rng.choice([[1], "x", 3, None]),
    ]
    wires = [before + chunk_body(body) + after for body in bodies]
    wires.append(before + exception_message("modelStreamErrorException", "boom") + after)
    wires.append(before + aws_message(b"not json", "modelStreamErrorException", ":exception-type") + after)
    return wires


@pytest.mark.parametrize("capture", ANTHROPIC, ids=[c.name for c in ANTHROPIC])
def test_every_corruption_of_every_capture_reads_alike_however_chunked(capture: Path) -> None:
    rng = random.Random(capture.name)
    events = sse_events(capture)
    for wire in _corruptions(events, rng):
        for provider, strict in [("auto", False), ("bedrock", False), ("bedrock", True)]:
            whole = outcome(wire, None, provider, strict=strict)
            for size in SIZES:
                assert outcome(wire, size, provider, strict=strict) == whole, (provider, strict, size)
            if strict and whole[0] is not None:
                assert whole[0][1] is not None  # the error names its event


def test_a_megabyte_invoke_stream_costs_linear_framing_work_in_any_read_size() -> None:
    events = _two_calls()
    opened = _opened(events)
    fragment = dict(events[opened])
    text = json.dumps({"a": "x" * 1_000_000})
    pieces_ = [text[i : i + 1000] for i in range(0, len(text), 1000)]
    fragments = [{**fragment, "delta": {**fragment["delta"], "partial_json": p}} for p in pieces_]
    wire = invoke_stream([*events[:opened], *fragments, *events[opened + 1 :]])
    assert len(wire) > 1_300_000
    works, results = [], []
    for size in (len(wire), 4093, 7, 1):
        r = Reassembler("bedrock")
        for piece in pieces(wire, size):
            r.feed_bytes(piece)
        results.append(seen(r.close()))
        works.append(r.framing_work)
    assert all(result == results[0] for result in results)
    # Each byte is taken in once and handed to botocore once, and read whole, the framing detector
    # reads it once more.
    assert all(work <= 3 * len(wire) for work in works), works


# -- other wires carried -----------------------------------------------------------------------------


def _chat_events(capture: Path) -> list[dict[str, Any]]:
    lines = capture.read_text().splitlines()
    texts = [line[5:].strip() for line in lines if line.startswith("data:")] if capture.suffix == ".sse" else lines
    return [json.loads(t) for t in texts if t.strip() and t.strip() != "[DONE]"]


CHAT = captures(
    "openai_chat", "groq", "deepseek", "mistral", "openrouter", "ollama_openai_compat", "gemini_openai_compat"
)


@pytest.mark.parametrize("capture", CHAT, ids=[c.name for c in CHAT])
@pytest.mark.parametrize("provider", ["auto", "bedrock", "openai-chat"])
def test_openai_chat_chunks_carried_in_an_invoke_stream_give_what_their_own_wire_gives(
    capture: Path, provider: str
) -> None:
    """gpt-oss on Bedrock streams OpenAI chat chunks inside InvokeModel chunks: read as bytes in any
    read size and as boto3's events (the chat decoder's held fragments settle on either path)."""
    own = from_bytes([capture.read_bytes()], "openai-chat")
    events = _chat_events(capture)
    wire = invoke_stream(events)
    for size in (None, 1, 7, 4093):
        assert seen(from_bytes(pieces(wire, size) if size else [wire], provider)) == seen(own), size
    assert seen(_fed([{"chunk": {"bytes": json.dumps(e).encode()}} for e in events], provider)) == seen(own)


# -- the async AnthropicBedrock client -----------------------------------------------------------------


@pytest.mark.parametrize("capture", ANTHROPIC, ids=[c.name for c in ANTHROPIC])
def test_async_anthropic_bedrock_client_streams_give_what_the_bytes_give(capture: Path) -> None:
    import asyncio

    from tests.test_bedrock_invoke import Replay, _http, bedrock_client

    wire = invoke_stream(sse_events(capture))
    replay = Replay(wire, _http())
    client = bedrock_client(replay, asynchronous=True)
    ask = [{"role": "user", "content": "go"}]

    async def both() -> tuple[fsm.Result, fsm.Result]:
        raw = await fsm.areassemble(
            await client.messages.create(model="claude", max_tokens=64, messages=ask, stream=True)
        )
        async with client.messages.stream(model="claude", max_tokens=64, messages=ask) as stream:
            helped = await fsm.areassemble(stream)
        return raw, helped

    raw, helped = asyncio.run(both())
    from_wire = from_bytes([wire], "anthropic")
    assert raw.calls == helped.calls == from_wire.calls
    assert raw.finish_reason == helped.finish_reason == from_wire.finish_reason
    assert replay.sent[-1][0].endswith("/invoke-with-response-stream")
