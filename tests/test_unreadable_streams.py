"""Input that is no stream (an error page), and a stream that is only a provider's error.

A gateway meets both every day: a proxy answers a streaming request with its HTML error page, or the
provider refuses the request with one error event (a rate limit, an overload) before any event that
names it. Each gets one clear diagnostic, the same however long the input is and however it is
chunked, and never the wrong one (a cut, or "cannot tell the provider")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fsm import Limits, Reassembler
from fsm.cli import main
from fsm.errors import FramingError, LimitExceeded, RemoteProtocolError
from fsm.wire.detect import FRAMING_NAMES, Framing
from tests.helpers import NO_FRAMING, aws_message, provider_error

PAGE = b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<h1>502 Bad Gateway</h1>\r\n"


def read(pieces: list[bytes], **options: Any) -> tuple[Exception | None, Any, Reassembler]:
    """The error raised, if any, the result (close() returns it after an error too), the reassembler."""
    r, error = Reassembler(**options), None
    try:
        for piece in pieces:
            r.feed_bytes(piece)
        r.close()
    except RemoteProtocolError as exc:
        error = exc
    return error, r.close(), r


def chunked(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize(
    ("body", "limit"),
    [
        (PAGE, None),  # shorter than the detection window: told when the input ends
        (PAGE * 200, 4096),  # past the window: told as soon as the window is read
        (PAGE * 40_000, None),  # 3.8 MB, inside the default window (16 MB): told at the end
        (PAGE * 40_000, 1 << 20),  # 3.8 MB past a 1 MB window
    ],
    ids=["short", "past-a-small-window", "megabytes", "megabytes-past-the-window"],
)
def test_input_no_framing_reads_is_one_not_a_stream_however_long_or_chunked(body: bytes, limit: int | None) -> None:
    options: dict[str, Any] = {"limits": Limits(max_event_bytes=limit)} if limit else {}
    seen = set()
    for size in (len(body), 65536, 4096, 7):
        if size == 7 and len(body) > 100_000:
            continue  # byte-sized reads of megabytes are for the framing tests' timing, not this one
        error, result, r = read(chunked(body, size), **options)
        assert error is None
        assert [(d.event, d.code) for d in result.diagnostics] == [(1, "not-a-stream"), (None, "no-finish-reason")]
        said = result.diagnostics[0].message
        assert said.startswith(f"input is {NO_FRAMING} (starts with b'<')") and "<html>" in said
        assert not result.calls and result.finish_reason is None
        seen.add(said)
        window = limit or Limits().max_event_bytes
        assert r.framing_work <= 3 * (min(len(body), window) + size)  # linear; what follows the window is not read
        assert r._detector is not None and r._detector.held == b""  # nothing of it is kept once reported
    assert len(seen) == 1  # the same answer, message and all, however the bytes came
    if limit:
        assert f"no framing in the first {limit} bytes" in said  # the window, not what the read crossing it held
    error, result, _ = read(chunked(body, 4096), strict=True, **options)
    assert isinstance(error, FramingError) and error.event == 1 and NO_FRAMING in str(error)


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"da", "cut-event"),  # the start of "data:"
        (b"data", "cut-event"),
        (b"\n\n  even", "cut-event"),  # of "event:", after blank lines
        (b"\xef\xbb", "cut-event"),  # half a BOM
        (b"xy", "not-a-stream"),
        (b"<", "not-a-stream"),
        (b"Internal Server Error", "not-a-stream"),
        (b"\xef\xbb\xbfnope", "not-a-stream"),
    ],
)
def test_input_that_could_still_begin_a_framing_is_a_cut_and_any_other_is_not_a_stream(data: bytes, code: str) -> None:
    error, result, _ = read([data])
    assert error is None and result.codes() == [code, "no-finish-reason"]
    error, result, _ = read(chunked(data, 1))
    assert error is None and result.codes() == [code, "no-finish-reason"]


ERRORS = {  # each provider's error event: the event, and the message it carries
    "anthropic": ({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "Overloaded"),
    "openai": ({"error": {"message": "Rate limit", "type": "requests", "code": "rate_limit"}}, "Rate limit"),
    "gemini": ({"error": {"code": 429, "message": "Exhausted", "status": "RESOURCE_EXHAUSTED"}}, "Exhausted"),
    "ollama": ({"error": "model 'qwen' not found"}, "model 'qwen' not found"),
    "responses": ({"type": "error", "code": "rate_limit_exceeded", "message": "Slow", "sequence_number": 0}, "Slow"),
    "openai-compatible": ({"object": "error", "message": "Too long", "type": "BadRequest", "code": 400}, "Too long"),
}
KINDS = {  # each one's kind, which provider-error names before its message (policy error-kind)
    "anthropic": "overloaded_error",
    "openai": "rate_limit",
    "gemini": "RESOURCE_EXHAUSTED",
    "ollama": None,
    "responses": "error: rate_limit_exceeded",
    "openai-compatible": "BadRequest",
}


@pytest.mark.parametrize("shape", ERRORS)
def test_a_stream_that_is_only_an_error_says_the_providers_message(shape: str) -> None:
    event, message = ERRORS[shape]
    framings = {
        "dicts": None,
        "sse": b"event: error\ndata: " + json.dumps(event).encode() + b"\n\n",
        "ndjson": json.dumps(event).encode() + b"\n",
        "json-array": b"[" + json.dumps(event).encode() + b"]",
    }
    for framing, body in framings.items():
        r = Reassembler()
        if body is None:
            r.feed(event)
        else:
            r.feed_bytes(body)
        result = r.close()
        assert (result.provider, result.finish_reason, len(result.calls)) == ("auto", "error", 0), framing
        assert [(d.event, d.code, d.message) for d in result.diagnostics] == [
            (1, "provider-error", provider_error(message, KINDS[shape]))
        ]
    strict = Reassembler(strict=True)
    with pytest.raises(RemoteProtocolError, match=f"event 1: provider-error: .*{message}"):
        strict.feed(event)


def test_events_after_an_error_that_came_before_the_provider_are_reported() -> None:
    r = Reassembler()
    r.feed(ERRORS["anthropic"][0])
    r.feed({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "f"}})
    result = r.close()
    assert (result.provider, result.finish_reason) == ("anthropic", "error")  # named by the later event
    assert [(d.event, d.code) for d in result.diagnostics][:2] == [(1, "provider-error"), (2, "event-after-finish")]


def test_an_event_that_names_no_provider_after_such_an_error_is_reported_not_raised() -> None:
    body = b"data: " + json.dumps(ERRORS["openai-compatible"][0]).encode() + b'\n\ndata: {"usage": {}}\n\n'
    for pieces in ([body], chunked(body, 1)):
        error, result, _ = read(pieces)
        assert error is None and (result.provider, result.finish_reason) == ("auto", "error")
        assert [(d.event, d.code) for d in result.diagnostics] == [(1, "provider-error"), (2, "event-after-finish")]


def test_an_event_that_tells_nothing_and_reports_no_error_still_asks_for_the_provider() -> None:
    for event in ({"hello": "world"}, {"error": None, "x": 1}, {"error": ""}):
        r = Reassembler()
        with pytest.raises(Exception, match="cannot tell the provider"):
            r.feed(event)


def _replay(path: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    import io

    out, err = io.StringIO(), io.StringIO()
    code = main(["replay", *args, str(path)], stdout=out, stderr=err)
    return code, json.loads(out.getvalue()) if out.getvalue() else {}, err.getvalue()


def test_input_no_framing_reads_is_said_to_be_none_of_the_framings_read() -> None:
    # The message names every framing the detector reads, a JSON document among them: built from the
    # same enum, so a framing added without a name in it fails at import.
    assert set(FRAMING_NAMES) == set(Framing)
    error, _, _ = read([b"hello world"], strict=True)
    assert isinstance(error, FramingError) and NO_FRAMING in str(error)
    assert all(name in str(error) for name in FRAMING_NAMES.values())
    # and a JSON document is indeed read: a first line "{" alone
    _, result, _ = read([b'{\n  "error": {"message": "overloaded"}\n}\n'])
    assert "not-a-stream" not in result.codes()


def test_replay_reports_an_error_page_and_an_error_only_stream(tmp_path: Path) -> None:
    page, only_error = tmp_path / "page.sse", tmp_path / "error.sse"
    page.write_bytes(PAGE)
    only_error.write_bytes(b"data: " + json.dumps(ERRORS["openai"][0]).encode() + b"\n\n")
    code, out, err = _replay(page)
    assert code == 0 and [d["code"] for d in out["diagnostics"]] == ["not-a-stream", "no-finish-reason"]
    code, out, err = _replay(only_error)
    assert code == 0 and out["finish_reason"] == "error" and out["diagnostics"][0]["code"] == "provider-error"
    code, out, err = _replay(page, "--strict")
    assert code == 1 and NO_FRAMING in err and "Traceback" not in err


def test_a_bedrock_stream_that_is_only_an_exception_frame_says_bedrocks_message() -> None:
    pytest.importorskip("botocore")
    event = {"throttlingException": {"message": "Rate exceeded"}}
    frame = aws_message(json.dumps(event["throttlingException"]).encode(), "throttlingException", ":exception-type")
    for feed in ("dict", "bytes", "bytes-1"):
        r = Reassembler()
        if feed == "dict":
            r.feed(event)
        else:
            for piece in chunked(frame, 1 if feed == "bytes-1" else len(frame)):
                r.feed_bytes(piece)
        result = r.close()
        assert (result.provider, result.finish_reason) == ("bedrock", "error"), feed
        assert [(d.event, d.code, d.message) for d in result.diagnostics] == [
            (1, "provider-error", provider_error("Rate exceeded", "throttlingException"))
        ]


def test_a_responses_error_event_says_its_message_with_the_provider_named_or_told_before() -> None:
    told = {"type": "response.created", "sequence_number": 0, "response": {"id": "r", "output": []}}
    error = ERRORS["responses"][0]
    for provider, events in [("openai-responses", [error]), ("auto", [told, error]), ("auto", [error])]:
        r = Reassembler(provider)
        for event in events:
            r.feed(event)
        result = r.close()
        assert result.finish_reason == "error"
        said = [d.message for d in result.diagnostics]
        assert said == [provider_error("Slow", KINDS["responses"])], (provider, events)


def test_an_error_page_past_the_window_is_held_once_never_copied() -> None:
    import tracemalloc

    window, pieces = 1 << 20, chunked(PAGE * 50_000, 65536)  # 4 MB past a 1 MB window, in 64 KB reads
    tracemalloc.start()
    try:
        error, result, _ = read(pieces, limits=Limits(max_event_bytes=window))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert error is None and result.codes() == ["not-a-stream", "no-finish-reason"]
    assert peak < 1.5 * window  # the window and one read: not a second copy of the window to report it


def pretty(value: Any) -> bytes:
    """As providers and pretty-printers write a JSON body: "{" alone on the first line."""
    return json.dumps(value, indent=2).encode() + b"\n"


@pytest.mark.parametrize("shape", ["openai", "gemini", "anthropic", "openai-compatible"])
def test_a_pretty_printed_error_body_says_the_providers_message(shape: str) -> None:
    """What a provider sends as the body of a 4xx or 5xx answer to a streaming request: one JSON
    document over many lines. A gateway that reads the body whatever the status meets it often."""
    event, message = ERRORS[shape]
    body = pretty(event)
    for size in (len(body), 7, 1):
        error, result, _ = read(chunked(body, size))
        assert error is None and (result.finish_reason, len(result.calls)) == ("error", 0)
        assert [(d.event, d.code, d.message) for d in result.diagnostics] == [
            (1, "provider-error", provider_error(message, KINDS[shape]))
        ]
    error, _, _ = read([body], strict=True)
    assert error is not None and f"provider-error: {provider_error(message, KINDS[shape])}" in str(error)


NOT_STREAMED = {
    "openai-chat": {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "get", "arguments": '{"q": "A"}'}},
                        {"id": "call_2", "type": "function", "function": {"name": "get", "arguments": '{"q": "B"}'}},
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
    },
    "gemini": {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"functionCall": {"name": "get", "args": {"q": "A"}}},
                        {"functionCall": {"name": "get", "args": {"q": "B"}}},
                    ],
                },
                "finishReason": "STOP",
            }
        ]
    },
}


@pytest.mark.parametrize("provider", NOT_STREAMED)
def test_a_pretty_printed_response_saved_whole_reads_as_its_one_line_form(provider: str) -> None:
    response = NOT_STREAMED[provider]
    one_line = json.dumps(response).encode() + b"\n"
    _, want, _ = read([one_line])
    assert [(c.name, c.arguments) for c in want.calls] == [("get", {"q": "A"}), ("get", {"q": "B"})]
    body = pretty(response)
    for size in (len(body), 64, 1):
        error, result, _ = read(chunked(body, size))
        assert error is None and result == want


def test_pretty_printed_documents_one_after_another_are_events_and_junk_between_is_reported() -> None:
    gemini = NOT_STREAMED["gemini"]
    body = pretty(gemini) + pretty({"usageMetadata": {"totalTokenCount": 7}})
    _, result, _ = read([body])
    assert [c.arguments for c in result.calls] == [{"q": "A"}, {"q": "B"}] and result.codes() == [
        "synthesized-id",
        "synthesized-id",
        "finish-reason-mapped",
    ]
    assert result.usage == {"totalTokenCount": 7}
    _, result, _ = read([pretty(gemini) + b"]\n" + pretty({"usageMetadata": {"totalTokenCount": 7}})])
    assert [(d.event, d.code) for d in result.problems()] == [(2, "bad-event")] and result.usage is not None


def test_a_megabyte_pretty_printed_response_reads_in_linear_work() -> None:
    big = {"q": "x" * (1 << 20), "n": list(range(2000))}
    response = json.loads(json.dumps(NOT_STREAMED["openai-chat"]))
    response["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = json.dumps(big)
    body = pretty(response)
    for size in (len(body), 65536, 4096):
        error, result, r = read(chunked(body, size))
        assert error is None and result.calls[0].arguments == big and result.calls[1].arguments == {"q": "B"}
        assert r.framing_work <= 3 * len(body)


def test_replay_reads_a_pretty_printed_error_body(tmp_path: Path) -> None:
    path = tmp_path / "429.json"
    path.write_bytes(pretty(ERRORS["openai"][0]))
    code, out, _ = _replay(path)
    assert (
        code == 0 and out["finish_reason"] == "error" and [d["code"] for d in out["diagnostics"]] == ["provider-error"]
    )


@pytest.mark.parametrize(
    ("lead", "between"),
    [
        (b"keep-alive\n", b""),
        (b": ping\r\n", b""),
        (b"", b"hello\n"),
        (b"", b"1\n"),
        (b"", b'x{ "\n'),
        (b"", b"<html>\r\n"),
    ],
)
def test_a_junk_line_before_or_between_documents_is_one_bad_event_and_the_documents_are_read(
    lead: bytes, between: bytes
) -> None:
    """Junk between documents runs to its line's end, never on through the next document, which a
    bracket in it (a scalar, a keep-alive, half a string) would otherwise swallow to the stream's end."""
    event, message = ERRORS["gemini"]
    unfinished = pretty({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}}]})
    body = lead + unfinished * bool(between) + between + pretty(event)
    junk_at = 2 if between else 1
    for size in (len(body), 7, 3, 2, 1):
        error, result, _ = read(chunked(body, size))
        assert error is None and result.finish_reason == "error"
        want = [(junk_at, "bad-event"), (junk_at + 1, "provider-error")]
        assert [(d.event, d.code) for d in result.problems()] == want
        assert result.problems()[-1].message == provider_error(message, KINDS["gemini"])


@pytest.mark.parametrize("start", [b"{\n", b"[\n{"], ids=["document", "array"])
@pytest.mark.parametrize("padding", ["x", "\u00e9", "\u20ac\U0001f600"])
def test_an_element_too_long_and_too_deep_is_refused_for_the_limit_it_passed_first_however_chunked(
    start: bytes, padding: str
) -> None:
    """The scanner reads all of a read before the element's size is counted: when one read passes both
    limits, the one passed first is named, as it is when the bytes come one by one."""
    limits = Limits(max_event_bytes=500)
    filler = (padding * 400).encode()
    for body, says in [
        (start + b'"a": "' + filler + b'", "b": ' + b"[" * 400, "longer than 500 bytes"),
        (start + b'"b": ' + b"[" * 400 + b'"' + filler, "nests deeper than"),
    ]:
        for size in (len(body), 65536, 7, 3, 2, 1):
            error, _, _ = read(chunked(body, size), limits=limits)
            assert isinstance(error, LimitExceeded) and says in str(error) and error.event == 1


@pytest.mark.parametrize("depth", [300, 100_000])
def test_a_document_or_array_nested_too_deep_is_refused_as_an_ndjson_line_is(depth: int) -> None:
    deep = b'{"a": ' + b"[" * depth
    said = set()
    for body in (deep + b"\n", b"{\n" + deep[1:], b"[" + deep):
        for strict in (False, True):
            error, result, _ = read(chunked(body, 7), strict=strict)
            assert isinstance(error, LimitExceeded) and error.event == 1 and result.calls == ()
            said.add(str(error))
    assert said == {"event 1: the event nests deeper than 288 levels (rule limits)"}
