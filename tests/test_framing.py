"""Framing: SSE, NDJSON and JSON arrays, with chunk boundaries anywhere."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fsm import FramingError, Reassembler
from fsm.wire.framing import DONE, Framing, JSONArrayFramer, NDJSONFramer, SSEFramer, detect_framing
from tests.helpers import chunk, sse, tc

STREAM = [
    chunk(tc(index=0, id="a", name="say", args='{"text": "h\\u00e9llo \\"w\\""')),
    chunk(tc(index=0, args=', "emoji": "🙂 ñ"}')),
    chunk(finish="tool_calls"),
]


def replay(data: bytes, sizes: list[int] | None = None) -> list[tuple[str | None, object]]:
    r = Reassembler()
    if sizes is None:
        r.feed_bytes(data)
    else:
        pos = 0
        for size in sizes:
            r.feed_bytes(data[pos : pos + size])
            pos += size
        r.feed_bytes(data[pos:])
    return [(c.name, c.arguments) for c in r.close().calls]


EXPECTED = [("say", {"text": 'héllo "w"', "emoji": "🙂 ñ"})]


def test_sse_whole() -> None:
    assert replay(sse(STREAM)) == EXPECTED


def test_sse_byte_by_byte() -> None:
    data = sse(STREAM)
    assert replay(data, [1] * len(data)) == EXPECTED


@given(st.lists(st.integers(min_value=1, max_value=40), max_size=60))
def test_sse_any_chunking(sizes: list[int]) -> None:
    assert replay(sse(STREAM).replace(b"\n", b"\r\n"), sizes) == EXPECTED


def test_sse_crlf_cr_comments_stray_space_and_no_final_newline() -> None:
    lines = [
        ": keep-alive",
        " data: " + json.dumps(STREAM[0]),
        "",
        "event: chunk",
        "data: " + json.dumps(STREAM[1]),
        "",
    ]
    body = "\r\n".join(lines) + "\r\n" + "data:" + json.dumps(STREAM[2])  # no space, no newline at the end
    assert replay(body.encode()) == EXPECTED
    assert replay(body.replace("\r\n", "\r").encode()) == EXPECTED


def test_sse_multiline_data_is_joined() -> None:
    framer = SSEFramer(1 << 20)
    assert framer.feed(b'data: {"a":\ndata: 1}\n\n') == ['{"a":\n1}']


def test_sse_done_is_passed_on() -> None:
    framer = SSEFramer(1 << 20)
    assert framer.feed(b"data: [DONE]\n\n") == [DONE]


def test_ndjson_and_json_array() -> None:
    ndjson = "\n".join(json.dumps(c) for c in STREAM).encode()
    array = ("[\n" + ",\n".join(json.dumps(c) for c in STREAM) + "\n]").encode()
    assert replay(ndjson) == EXPECTED
    assert replay(array) == EXPECTED
    assert replay(array, [1] * len(array)) == EXPECTED


def test_json_array_framer_yields_elements_as_they_close() -> None:
    framer = JSONArrayFramer(1 << 20)
    assert framer.feed(b'[{"a": "]"}, {"b"') == ['{"a": "]"}']
    assert framer.feed(b": [1]}]") == ['{"b": [1]}']
    assert framer.close() == []


def test_ndjson_skips_blank_lines() -> None:
    assert NDJSONFramer(1 << 20).feed(b'{"a":1}\n\n{"b":2}\n') == ['{"a":1}', '{"b":2}']


def test_detect_framing() -> None:
    assert detect_framing(b"  ") is None
    assert detect_framing(b"\xef\xbb\xbfdata: {}") is Framing.SSE
    assert detect_framing(b"da") is None  # more bytes may still make it something else
    assert detect_framing(b"data: {}") is Framing.SSE
    assert detect_framing(b"data\n") is Framing.SSE
    assert detect_framing(b"[{") is Framing.JSON_ARRAY
    assert detect_framing(b'{"') is Framing.NDJSON
    assert detect_framing(b"{") is None  # "{" alone on its line would be a pretty-printed document
    assert detect_framing(b"{\n") is Framing.JSON_DOCUMENT
    assert detect_framing(b"{\r") is Framing.JSON_DOCUMENT
    assert detect_framing(b"{ \n") is Framing.NDJSON  # not what a pretty-printer writes
    assert detect_framing(b"{", final=True) is Framing.JSON_DOCUMENT  # cut short: its framer says so
    assert detect_framing(b"{\n{") is Framing.NDJSON  # no document goes on so: a junk line, then NDJSON
    assert detect_framing(b'{\n  "error"') is Framing.JSON_DOCUMENT
    assert detect_framing(b"hello") is None  # a junk first line: the lines after it may still tell
    assert detect_framing(b'hello\n{"') is Framing.NDJSON
    with pytest.raises(FramingError):
        detect_framing(b"hello", final=True)


def test_an_event_that_is_not_json_names_its_number() -> None:
    r = Reassembler(strict=True)
    with pytest.raises(FramingError, match="event 2: not valid JSON"):
        r.feed_bytes(sse([chunk()], done=False) + b"data: {nope\n\n")
    lax = Reassembler()
    lax.feed_bytes(sse([chunk()], done=False) + b"data: {nope\n\n")
    assert [(d.event, d.code) for d in lax.close().diagnostics][:1] == [(2, "bad-event")]


def test_a_stream_cut_inside_its_last_event_truncates_the_open_call() -> None:
    data = sse(STREAM[:1], done=False) + b'data: {"choices": [{"index": 0, "delta": {"tool_ca'
    r = Reassembler()
    r.feed_bytes(data)
    result = r.close()
    assert result.calls[0].status.value == "truncated"
    assert "cut-event" in result.codes()


def test_invalid_utf8_is_a_framing_error() -> None:
    with pytest.raises(FramingError, match="UTF-8"):
        Reassembler(strict=True).feed_bytes(b"data: {\xff}\n\n")


def test_outputs_caused_by_close_are_kept_for_drain() -> None:
    # The last NDJSON line has no newline: it is only read at close(), and its outputs must not be lost.
    data = "\n".join(json.dumps(c) for c in STREAM[:2]).encode()
    r = Reassembler()
    before = r.feed_bytes(data)
    result = r.close()
    after = r.drain()
    texts = [o.text for o in before + after if hasattr(o, "text")]
    assert json.loads("".join(texts)) == result.calls[0].arguments


def test_a_first_line_that_is_an_opening_brace_alone_before_ndjson_is_one_bad_event() -> None:
    """A first line that is ``{`` alone opens a pretty-printed document, but one whose next line opens
    another object cannot be one: it is NDJSON with a junk first line, so the calls after it are read
    and that line is one bad-event, however the bytes are cut (found by the robustness fuzzer, seed
    1130: the whole stream was read as one document cut short, its call lost, nothing said of the
    junk). Blank lines between change nothing; a document still reads as one."""
    line = json.dumps(chunk(tc(index=0, id="c", name="A", args="{}"), finish="tool_calls")).encode() + b"\n"
    for data in (b"{\n" + line, b"{\r\n \n\t" + line):
        for size in (1, 2, 3, 7, len(data)):
            r = Reassembler("openai-chat")
            for at in range(0, len(data), size):
                r.feed_bytes(data[at : at + size])
            result = r.close()
            assert [(c.id, c.arguments) for c in result.calls] == [("c", {})], (data, size)
            assert [(d.event, d.code) for d in result.diagnostics] == [(1, "bad-event")], (data, size)
    body = json.dumps({"error": {"message": "boom", "type": "overloaded_error"}}, indent=2).encode()
    for size in (1, 3, len(body)):
        r = Reassembler("openai-chat")
        for at in range(0, len(body), size):
            r.feed_bytes(body[at : at + size])
        assert r.close().codes() == ["provider-error"]
