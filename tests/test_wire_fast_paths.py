"""The wire path's shortcuts decide exactly as the general code they skip.

* The line framers split a chunk with no CR at C speed; the general loop is the reference
  (``_LineFramer.fast = False``). Compared on generated SSE and NDJSON bytes full of the hard cases
  (CR, CRLF, BOMs, comments, keep-alives, multi-line data, fields, bytes that are not UTF-8, lines
  and events past a small limit) cut into random chunks, feeding on after a fault.
* ``jsontext.loads_event`` gives json.loads's value or json.loads's error.
* ``nesting_exceeds`` skips text no longer than the limit: it agrees with its bracket walk.
* Anthropic, Responses, Bedrock and Cohere take their commonest fragment event straight to the
  registry from the wire path (``commonest_fragment``); without it every event goes through the
  decoder. Over every vector and fuzzed streams of those shapes, fed as wire bytes: the same
  transitions in order, outputs, calls, diagnostics and rule counts either way.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsm.engine.scanner import bracket_walk_exceeds, nesting_exceeds
from fsm.harness import conformance
from fsm.harness.vectors import load_vectors
from fsm.jsontext import loads_event
from fsm.wire.decoders.anthropic import AnthropicDecoder
from fsm.wire.decoders.bedrock import BedrockDecoder
from fsm.wire.decoders.cohere import CohereDecoder
from fsm.wire.decoders.openai_responses import OpenAIResponsesDecoder
from fsm.wire.framing import BOM, NDJSONFramer, SSEFramer
from fsm.wire.lines import _LineFramer

# -- the line framers ------------------------------------------------------------------------------------------------

PIECES = [
    b"data:",
    b"data: ",
    b"data:  ",
    b"event: x",
    b"id: 7",
    b"retry: 10",
    b": ping",
    b":",
    b"\n",
    b"\n",
    b"\n\n",
    b"\r",
    b"\r\n",
    b" ",
    b"\t",
    BOM,
    b'{"a": 1}',
    b'{"b": [1, 2]}',
    b"[DONE]",
    b"xyz",
    b"x" * 40,
    b"\xff",
    b"\xc3",
    b"\xa9",
    b"dat",
    b"a:",
]


@st.composite
def chunked_bytes(draw: st.DrawFn) -> tuple[list[bytes], int]:
    data = b"".join(draw(st.lists(st.sampled_from(PIECES), max_size=60)))
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=12)))
    chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    return chunks, draw(st.sampled_from([4, 12, 30, 1 << 20]))


EVENTS = [  # mostly the plainest events, which the SSE framer reads in bulk, and what breaks the pattern
    b'data: {"a": 1}\n\n',
    b'data: {"a": 1}\n\n',
    b'data:{"b": 2}\n\n',
    b'event: e\ndata: {"c": 3}\n\n',
    b'event: e\ndata: {"c": 3}\n\n',
    b"data: [DONE]\n\n",
    b"data:\n\n",
    b"data:  \n\n",
    b"data: " + b"x" * 40 + b"\n\n",
    b"data: \xff\n\n",
    b": ping\n\n",
    b"event: e\n\n",
    b"data: a\ndata: b\n\n",
    b"id: 1\ndata: {}\n\n",
    b" data: {}\n\n",
    b"data: {}\n \n",
    b"data: {}\r\n\r\n",
    b"data: {}\n",
    b"\n",
    b" \n",
    b": c\n",
    BOM + b"data: {}\n\n",
]


@st.composite
def chunked_events(draw: st.DrawFn) -> tuple[list[bytes], int]:
    data = b"".join(draw(st.lists(st.sampled_from(EVENTS), max_size=40)))
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=6)))
    chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    return chunks, draw(st.sampled_from([12, 30, 1 << 20]))


def framed(cls: type[_LineFramer], chunks: list[bytes], max_bytes: int, *, fast: bool) -> list[object]:
    framer = cls(max_bytes)
    framer.fast = fast
    seen: list[object] = []
    for piece in chunks:
        seen.append(framer.feed(piece))  # type: ignore[attr-defined]
        seen.append((bytes(framer._buf), framer._scanned))
    seen.append(framer.close())  # type: ignore[attr-defined]
    seen.append(framer.cut)
    return seen


@pytest.mark.parametrize("cls", [SSEFramer, NDJSONFramer])
@settings(max_examples=600, deadline=None)
@given(case=chunked_bytes())
def test_the_line_framers_split_as_the_general_loop(cls: type[_LineFramer], case: tuple[list[bytes], int]) -> None:
    chunks, max_bytes = case
    assert framed(cls, chunks, max_bytes, fast=True) == framed(cls, chunks, max_bytes, fast=False)


@settings(max_examples=600, deadline=None)
@given(case=chunked_events())
def test_the_sse_framer_reads_plain_events_in_bulk_as_one_at_a_time(case: tuple[list[bytes], int]) -> None:
    chunks, max_bytes = case
    assert framed(SSEFramer, chunks, max_bytes, fast=True) == framed(SSEFramer, chunks, max_bytes, fast=False)


def test_an_event_begun_in_one_chunk_and_ended_by_a_blank_line_of_spaces_in_the_next() -> None:
    chunks = [b"data: a\n", b" \n: c\n: d\n: e\n", b"data: b\n\ndata: c\n\n"]
    assert framed(SSEFramer, chunks, 1 << 20, fast=True) == framed(SSEFramer, chunks, 1 << 20, fast=False)


@pytest.mark.parametrize("event_line", [b"", b"event: content_block_delta\n"])
def test_the_bulk_reading_is_taken_wherever_the_chunks_are_cut(
    event_line: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    event = event_line + b'data: {"type": "content_block_delta", "delta": {"partial_json": "abc"}}\n\n'
    wire = event * 400
    taken: list[int] = []
    real = SSEFramer._plain_events

    def counted(self: SSEFramer, lines: list[bytes], start: int, out: list[object]) -> int:
        taken.append(real(self, lines, start, out))  # type: ignore[arg-type]
        return taken[-1]

    monkeypatch.setattr(SSEFramer, "_plain_events", counted)
    for size in [1000, 1001, 1013, 4096]:
        taken.clear()
        framer = SSEFramer(1 << 20)
        out = [p for i in range(0, len(wire), size) for p in framer.feed(wire[i : i + size])]
        assert len(out) == 400 and len(taken) >= len(wire) // size - 1 and all(taken), (size, taken)


def test_the_fast_split_is_taken_and_held_lines_carry_over() -> None:
    framer = SSEFramer(1 << 20)
    framer.fast = True
    out = framer.feed(b'data: {"a"') + framer.feed(b": 1}\n\ndata: [DO") + framer.feed(b"NE]\n\n")
    assert out == ['{"a": 1}', "[DONE]"] and framer.work == 2 * len(b'data: {"a": 1}\n\ndata: [DONE]\n\n')


# -- json.loads, exactly ---------------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def event_texts(draw: st.DrawFn) -> str:
    text = json.dumps(draw(st.dictionaries(st.text(max_size=4), json_values, max_size=4)))
    edit = draw(st.sampled_from(["none", "cut", "extra", "space", "bom", "lead", "swap"]))
    if edit == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    elif edit == "extra":
        text += draw(st.sampled_from(["x", "{}", " 1", ",", "\u00a0"]))
    elif edit == "space":
        text += draw(st.sampled_from([" ", "\n", "\r\n\t", "\x0b"]))
    elif edit == "bom":
        text = "\ufeff" + text
    elif edit == "lead":
        text = " " + text
    elif edit == "swap":
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(['"', "}", "NaN", "\\", "\x00"])) + text[at:]
    return text


def parsed(loads: Any, text: str) -> object:
    try:
        return ("value", loads(text))
    except Exception as exc:  # the same error, word for word, is the same behaviour
        return (type(exc).__name__, str(exc))


@settings(max_examples=800, deadline=None)
@given(text=event_texts())
def test_loads_event_is_json_loads(text: str) -> None:
    # repr: NaN is not equal to itself
    assert repr(parsed(loads_event, text)) == repr(parsed(json.loads, text))


# -- the nesting check -----------------------------------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(text=st.text(alphabet='[]{}"\\a', max_size=30), limit=st.integers(0, 12))
def test_nesting_exceeds_agrees_with_the_bracket_walk(text: str, limit: int) -> None:
    assert nesting_exceeds(text, limit) == bracket_walk_exceeds(text, limit)


# -- the decoders' commonest fragment --------------------------------------------------------------------------------

SHORTCUT_DECODERS = [AnthropicDecoder, OpenAIResponsesDecoder, BedrockDecoder, CohereDecoder]
SHAPES = {"anthropic", "openai-responses", "bedrock", "cohere"}


def wire_of(vector: conformance.Vector) -> bytes | None:
    """The vector as SSE bytes (None if an event is not a plain dict)."""
    if not all(type(e) is dict for e in vector.events):
        return None
    body = vector.body.encode("utf-8") if vector.body is not None else b""
    return body + b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in vector.events)


def replay_wire(vector: conformance.Vector, wire: bytes) -> object:
    """Result, outputs, each call's transitions in order and the rule counts, of the wire fed in
    pieces of sizes drawn from the vector's name."""
    from fsm import Policies, Reassembler
    from tests.helpers import replay_traced

    rng = random.Random(vector.name)

    def feed(r: Reassembler) -> Iterator[list[Any]]:
        pos = 0
        while pos < len(wire):
            size = rng.choice([1, 7, 64, 4096, len(wire)])
            yield r.feed_bytes(wire[pos : pos + size])
            pos += size

    return replay_traced(Reassembler(vector.shape, policies=Policies(**vector.policies)), feed)


def test_the_commonest_fragment_shortcuts_decide_as_the_decoders(monkeypatch: pytest.MonkeyPatch) -> None:
    from fsm.harness.fuzz.run import sample_vectors

    vectors = [v for v in load_vectors() if v.shape in SHAPES]
    vectors += [v for shape in sorted(SHAPES) for v in sample_vectors(shape, 60)]
    wired = [(v, w) for v in vectors if (w := wire_of(v)) is not None]
    assert len(wired) > 250
    hits: dict[str, int] = {}
    for cls in SHORTCUT_DECODERS:
        real = cls.commonest_fragment

        def counted(self: Any, payload: dict[str, Any], real: Any = real) -> Any:
            fragment = real(self, payload)
            hits[self.name] = hits.get(self.name, 0) + (fragment is not None)
            return fragment

        monkeypatch.setattr(cls, "commonest_fragment", counted)
    fast = [replay_wire(v, w) for v, w in wired]
    assert all(hits.get(cls.name, 0) > 50 for cls in SHORTCUT_DECODERS), hits  # taken, often, by each
    for cls in SHORTCUT_DECODERS:
        monkeypatch.setattr(cls, "commonest_fragment", lambda self, payload: None)
    general = [replay_wire(v, w) for v, w in wired]
    for (vector, _), a, b in zip(wired, fast, general, strict=True):
        assert a == b, vector.name
