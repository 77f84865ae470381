"""Bedrock's InvokeModelWithResponseStream: AWS event-stream ``chunk`` messages whose base64 ``bytes``
hold the model's own events (a Claude model's are Anthropic's). Read as bytes, as boto3's events and
through the anthropic SDK's ``AnthropicBedrock`` client, such a stream must give exactly what the
same events give over Anthropic's own SSE, whichever provider is named."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

import fsm
from fsm import Reassembler, messages
from fsm.errors import FramingError
from fsm.history import check
from tests.conftest import captures
from tests.helpers import aws_message, provider_error

pytest.importorskip("botocore")

ANTHROPIC = captures("anthropic")


def sse_events(capture: Path) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in capture.read_text().splitlines() if line.startswith("data:")]


def chunk_message(event: dict[str, Any] | bytes, padding: str = "abcdefghij") -> bytes:
    """One InvokeModel ``chunk`` message, as Bedrock frames it: the event's JSON, base64, beside a
    padding field."""
    raw = event if isinstance(event, bytes) else json.dumps(event).encode()
    body = {"bytes": base64.b64encode(raw).decode(), "p": padding}
    return aws_message(json.dumps(body).encode(), "chunk")


def exception_message(kind: str, message: str) -> bytes:
    return aws_message(json.dumps({"message": message}).encode(), kind, ":exception-type")


def invoke_stream(events: list[dict[str, Any]]) -> bytes:
    return b"".join(chunk_message(event, "p" * (n % 7)) for n, event in enumerate(events))


def pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def seen(result: fsm.Result) -> tuple[Any, ...]:
    """All a result says but which wire named the provider."""
    return (
        result.finish_reason,
        result.calls,
        [(d.event, d.code, d.message) for d in result.diagnostics],
        result.text,
        result.reasoning,
        result.usage,
    )


def from_bytes(data: list[bytes], provider: str = "auto", **options: Any) -> fsm.Result:
    r = Reassembler(provider, **options)
    for piece in data:
        r.feed_bytes(piece)
    return r.close()


@pytest.mark.parametrize("capture", ANTHROPIC, ids=[c.name for c in ANTHROPIC])
@pytest.mark.parametrize("provider", ["auto", "anthropic", "bedrock"])
def test_an_invoke_stream_gives_what_the_models_own_wire_gives(capture: Path, provider: str) -> None:
    own = from_bytes([capture.read_bytes()], "anthropic")
    wire = invoke_stream(sse_events(capture))
    for size in (len(wire), 7, 1):
        result = from_bytes(pieces(wire, size), provider)
        assert seen(result) == seen(own), (provider, size)
        assert result.provider == ("bedrock" if provider == "bedrock" else "anthropic")


@pytest.mark.parametrize("capture", ANTHROPIC, ids=[c.name for c in ANTHROPIC])
@pytest.mark.parametrize("provider", ["auto", "bedrock"])
def test_boto3s_invoke_events_give_what_the_models_own_wire_gives(capture: Path, provider: str) -> None:
    """boto3 hands each chunk over decoded from base64: ``{"chunk": {"bytes": b"..."}}``."""
    own = from_bytes([capture.read_bytes()], "anthropic")
    r = Reassembler(provider)
    for event in sse_events(capture):
        r.feed({"chunk": {"bytes": json.dumps(event).encode()}})
    assert seen(r.close()) == seen(own)


def _two_calls() -> list[dict[str, Any]]:
    capture = next((c for c in ANTHROPIC if "parallel" in c.name), None)
    if capture is None:
        pytest.skip("the Anthropic captures are not here (../shared is beside the project in CI)")
    return sse_events(capture)


def test_an_exception_mid_stream_ends_it_with_bedrocks_message_and_cuts_the_open_call() -> None:
    events = _two_calls()
    opened = next(n for n, e in enumerate(events) if e.get("type") == "input_json_delta" or "partial_json" in str(e))
    wire = invoke_stream(events[: opened + 1]) + exception_message("throttlingException", "Rate exceeded")
    for provider in ("auto", "anthropic", "bedrock"):
        result = from_bytes(pieces(wire, 5), provider)
        assert result.finish_reason == "error"
        assert [c.status for c in result.calls][-1] is fsm.CallStatus.TRUNCATED
        errors = [(d.event, d.message) for d in result.diagnostics if d.code == "provider-error"]
        assert errors == [(opened + 2, provider_error("Rate exceeded", "throttlingException"))], provider


def test_a_chunk_whose_bytes_are_not_base64_is_one_bad_event_and_the_rest_is_read() -> None:
    events = _two_calls()
    broken = aws_message(json.dumps({"bytes": "not base64!", "p": "x"}).encode(), "chunk")
    wire = chunk_message(events[0]) + broken + invoke_stream(events[1:])
    result = from_bytes([wire])
    assert [c.status for c in result.calls] == [fsm.CallStatus.COMPLETE] * 2
    assert [(d.event, d.code) for d in result.diagnostics] == [(2, "bad-event")]
    assert "a chunk's bytes are not base64" in result.diagnostics[0].message
    with pytest.raises(FramingError, match="not base64") as raised:
        from_bytes([wire], strict=True)
    assert raised.value.event == 2


def test_a_chunk_that_carries_no_json_or_no_utf8_is_a_bad_event_named_by_its_position() -> None:
    events = _two_calls()
    for carried, said in [(b"<html>", "not valid JSON"), (b"\xff\xfe{}", "not UTF-8")]:
        result = from_bytes([chunk_message(events[0]) + chunk_message(carried) + invoke_stream(events[1:])])
        assert len(result.complete_calls) == 2
        assert [(d.event, d.code) for d in result.diagnostics] == [(2, "bad-event")], carried
        assert said in result.diagnostics[0].message


def test_a_chunk_is_unwrapped_once_never_the_chunk_it_carries() -> None:
    """A chunk whose event is itself a chunk is no event of any provider: it is not read as one."""
    events = _two_calls()
    inner = json.dumps({"bytes": base64.b64encode(json.dumps(events[0]).encode()).decode()}).encode()
    nested = json.dumps({"chunk": json.loads(inner)}).encode()
    for feed in ("bytes", "boto3"):
        r = Reassembler("anthropic")
        try:
            if feed == "bytes":
                r.feed_bytes(chunk_message(nested))
            else:
                r.feed({"chunk": {"bytes": nested}})
        except fsm.RemoteProtocolError:
            pass
        result = r.close()
        assert result.calls == () and result.text == "", feed


def test_a_megabyte_call_through_an_invoke_stream_reads_alike_whole_and_in_small_reads() -> None:
    value = "é🙂x" * 200_000
    arguments = json.dumps({"text": value}, ensure_ascii=False)
    fragments = [arguments[i : i + 997] for i in range(0, len(arguments), 997)]
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": [], "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "w"}},
        *(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": f}}
            for f in fragments
        ),
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    ]
    wire = invoke_stream(events)
    assert len(wire) > 3_000_000
    whole = from_bytes([wire], "bedrock")
    assert whole.calls[0].arguments == {"text": value} and whole.diagnostics == ()
    assert seen(from_bytes(pieces(wire, 4093), "bedrock")) == seen(whole)


# -- the anthropic SDK's Bedrock client over a mock transport -------------------------------------------


class Replay:
    def __init__(self, body: bytes, http: Any) -> None:
        self.body, self.http, self.sent = body, http, []  # type: ignore[var-annotated]

    def __call__(self, request: Any) -> Any:
        self.sent.append((str(request.url), json.loads(request.content)))
        headers = {"content-type": "application/vnd.amazon.eventstream"}
        return self.http.Response(200, headers=headers, content=self.body)


def bedrock_client(replay: Replay, *, asynchronous: bool = False) -> Any:
    """``AnthropicBedrock`` (``AsyncAnthropicBedrock`` when ``asynchronous``) over the mock transport."""
    anthropic = pytest.importorskip("anthropic")
    pytest.importorskip("boto3")  # AnthropicBedrock signs its requests with boto3's credentials
    made, http = (
        (anthropic.AsyncAnthropicBedrock, replay.http.AsyncClient)
        if asynchronous
        else (
            anthropic.AnthropicBedrock,
            replay.http.Client,
        )
    )
    return made(
        aws_access_key="test",
        aws_secret_key="test",
        aws_region="us-east-1",
        base_url="http://mock",
        http_client=http(transport=replay.http.MockTransport(replay)),
    )


def _http() -> Any:
    from tests.test_clients import anthropic_http

    return anthropic_http()


@pytest.mark.parametrize("capture", ANTHROPIC, ids=[c.name for c in ANTHROPIC])
def test_anthropic_bedrock_client_streams_give_what_the_bytes_give_and_the_next_turn_pairs(capture: Path) -> None:
    wire = invoke_stream(sse_events(capture))
    replay = Replay(wire, _http())
    client = bedrock_client(replay)
    ask = [{"role": "user", "content": "go"}]

    raw = fsm.reassemble(client.messages.create(model="claude", max_tokens=64, messages=ask, stream=True))
    with client.messages.stream(model="claude", max_tokens=64, messages=ask) as stream:
        helped = fsm.reassemble(stream)
    from_wire = from_bytes([wire], "anthropic")
    assert raw.calls == helped.calls == from_wire.calls
    assert raw.finish_reason == helped.finish_reason == from_wire.finish_reason

    answers = [messages.tool_result(call, {"ok": call.name}, "anthropic") for call in helped.complete_calls]
    history = [*ask, messages.assistant_message(helped, "anthropic"), *messages.tool_results(answers, "anthropic")]
    client.messages.create(model="claude", max_tokens=64, messages=history, stream=True).close()
    url, body = replay.sent[-1]
    assert url.endswith("/invoke-with-response-stream") and body["messages"] == history
    assert not check(history).rejected
