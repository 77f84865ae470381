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

from fsm.harness import conformance
from fsm.harness.vectors import load_vectors
from fsm.jsontext import bracket_walk_exceeds, loads_event, nesting_exceeds
from fsm.wire.decoders.anthropic import AnthropicDecoder
from fsm.wire.decoders.bedrock import BedrockDecoder
from fsm.wire.decoders.chunk_form import FragmentForm
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
    b"data: \xc3\n\n",  # a character cut at the line's end
    b"data: \xc3\xa9\n\n",
    b"data: \xc2\xa0\n\n",  # blank to str.strip, not to bytes.strip: kept
    b"data: \x1c\x0b\n\n",
    b"data: \x0b\x0c \n\n",  # blank either way: skipped
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


ONE_EVENT_EDGES = [  # one read each, and what _one_event must leave to the line loop
    b"data: x\ry\n\n",
    b"data: {}\r\n\n",
    b"event: e\rdata: {}\n\n",
    b"event: " + b"e" * 40 + b"\ndata: {}\n\n",
    b"event: e\ndata: " + b"x" * 25 + b"\n\n",
    b"event: e\nid: 1\ndata: {}\n\n",
    b"event:e\ndata:{}\n\n",
    b"data: \xc3\xa9\n\n",
    b"data:\t{}\n\n",
]


@settings(max_examples=600, deadline=None)
@given(
    events=st.lists(
        st.sampled_from(EVENTS + ONE_EVENT_EDGES)
        | st.builds(bytes.__add__, st.sampled_from(EVENTS), st.sampled_from(EVENTS + ONE_EVENT_EDGES)),
        max_size=30,
    ),
    max_bytes=st.sampled_from([12, 30, 1 << 20]),
)
def test_the_sse_framer_reads_one_event_a_read_as_its_lines(events: list[bytes], max_bytes: int) -> None:
    """Each read one event, or two, or an event's pieces glued (SSEFramer._one_event and what it
    must leave to the line loop): as the general loop reads them."""
    assert framed(SSEFramer, events, max_bytes, fast=True) == framed(SSEFramer, events, max_bytes, fast=False)


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

    choice = getattr(vector, "choice", None)  # (a made stream has none)
    return replay_traced(Reassembler(vector.shape, policies=Policies(**vector.policies), choice=choice), feed)


def _counting_shortcuts(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often each decoder's commonest_fragment shortcut is taken, from now on."""
    hits: dict[str, int] = {}
    for cls in SHORTCUT_DECODERS:
        real = cls.commonest_fragment

        def counted(self: Any, payload: dict[str, Any], real: Any = real) -> Any:
            fragment = real(self, payload)
            hits[self.name] = hits.get(self.name, 0) + (fragment is not None)
            return fragment

        monkeypatch.setattr(cls, "commonest_fragment", counted)
    return hits


def test_the_commonest_fragment_shortcuts_decide_as_the_decoders(monkeypatch: pytest.MonkeyPatch) -> None:
    from fsm.harness.fuzz.run import sample_vectors

    vectors = [v for v in load_vectors() if v.shape in SHAPES]
    vectors += [v for shape in sorted(SHAPES) for v in sample_vectors(shape, 60)]
    wired = [(v, w) for v in vectors if (w := wire_of(v)) is not None]
    assert len(wired) > 250
    # Every such event read by its shortcut, none by its form (tests/test_chunk_form.py holds those
    # to the parsed path): a form takes most of them from the wire.
    monkeypatch.setattr(FragmentForm, "learn", classmethod(lambda cls, *args: None))
    hits = _counting_shortcuts(monkeypatch)
    fast = [replay_wire(v, w) for v, w in wired]
    assert all(hits.get(cls.name, 0) > 50 for cls in SHORTCUT_DECODERS), hits  # taken, often, by each
    for cls in SHORTCUT_DECODERS:
        monkeypatch.setattr(cls, "commonest_fragment", lambda self, payload: None)
    general = [replay_wire(v, w) for v, w in wired]
    for (vector, _), a, b in zip(wired, fast, general, strict=True):
        assert a == b, vector.name


def test_the_commonest_fragment_shortcuts_decide_alike_for_fed_dicts(monkeypatch: pytest.MonkeyPatch) -> None:
    # The same shortcuts for events fed as dicts (and SDK objects, which are fed as their dumps).
    from fsm.harness.fuzz.run import sample_vectors
    from tests.test_conformance import _replay_with_trace

    vectors = [v for v in load_vectors() if v.shape in SHAPES and v.body is None]
    vectors += [v for shape in sorted(SHAPES) for v in sample_vectors(shape, 60) if v.body is None]
    vectors = [v for v in vectors if all(type(e) is dict for e in v.events)]
    assert len(vectors) > 250
    hits = _counting_shortcuts(monkeypatch)
    fast = [_replay_with_trace(v) for v in vectors]
    assert all(hits.get(cls.name, 0) > 30 for cls in SHORTCUT_DECODERS), hits  # taken, often, by each
    for cls in SHORTCUT_DECODERS:
        monkeypatch.setattr(cls, "commonest_fragment", lambda self, payload: None)
    general = [_replay_with_trace(v) for v in vectors]
    for vector, a, b in zip(vectors, fast, general, strict=True):
        assert a == b, vector.name


def test_the_registry_takes_the_commonest_fragment_as_its_general_routing(monkeypatch: pytest.MonkeyPatch) -> None:
    # Registry.fragment, where the shortcuts above hand their fragment over, decides in line what
    # arguments(ref, text, "fragment") decides: the same streams, as dicts and as wire bytes, either
    # way; its in-line ``append`` (a value closing mid-fragment included) is taken too.
    from fsm.engine.registry import Registry
    from fsm.engine.slot import Slot
    from fsm.harness.fuzz.run import sample_vectors
    from tests.test_conformance import _replay_with_trace

    vectors = [v for v in load_vectors() if v.shape in SHAPES]
    vectors += [v for shape in sorted(SHAPES) for v in sample_vectors(shape, 60)]
    fed = [v for v in vectors if v.body is None and all(type(e) is dict for e in v.events)]
    wired = [(v, w) for v in vectors if (w := wire_of(v)) is not None]
    hits = {"fragment": 0, "appended": 0, "first": 0}
    real_fragment, real_appended = Registry.fragment, Registry._appended

    def fragment(self: Registry, ref: Any, text: str) -> None:
        hits["fragment"] += 1
        real_fragment(self, ref, text)

    def appended(self: Registry, slot: Any, text: str) -> str:
        hits["appended"] += 1
        return real_appended(self, slot, text)

    real_first = Slot.store_first

    def first(slot: Slot, *args: Any) -> str:
        taken = real_first(slot, *args)
        hits["first"] += bool(taken)
        return taken

    monkeypatch.setattr(Registry, "fragment", fragment)
    monkeypatch.setattr(Registry, "_appended", appended)
    monkeypatch.setattr(Slot, "store_first", first)
    fast = [_replay_with_trace(v) for v in fed] + [replay_wire(v, w) for v, w in wired]
    # (a call's first text mostly goes Slot.store_first's way; the rest, and splits, fire append)
    assert hits["fragment"] > 1000 and hits["appended"] > 10 and hits["first"] > 100, hits
    monkeypatch.setattr(Registry, "fragment", lambda self, ref, text: self.arguments(ref, text, "fragment"))
    general = [_replay_with_trace(v) for v in fed] + [replay_wire(v, w) for v, w in wired]
    names = [v.name for v in fed] + [v.name for v, _ in wired]
    for name, a, b in zip(names, fast, general, strict=True):
        assert a == b, name


_PIECES = ['{"x": ', "1", "}", '{"y": 2}', " ", "", '"s"', '}{"z": 1}', '{"x": 1}', '{"x": 1', "\n", "[1, ", "]}"]


def _random_refs_run(seed: int, fast: bool) -> object:
    """A random run of sightings, fragments and ends under a few indexes, ids and names, each
    fragment given to Registry.fragment (``fast``) or to the general arguments(): the result,
    every output, the rule and transition counts, or the error raised."""
    from fsm import Reassembler, ToolcallFSMError
    from fsm.events import CallEnd, CallRef, CallSeen

    rng = random.Random(seed)
    r = Reassembler("anthropic", strict=rng.random() < 0.2)
    steps: list[object] = []
    try:
        for _ in range(rng.randint(1, 30)):
            index = rng.choice([0, 1, None])
            ref = CallRef(index, rng.choice([None, "a", "b"]), rng.choice([None, "f", "g"]), server=rng.random() < 0.1)
            roll = rng.random()
            if roll < 0.2:
                r.feed(CallSeen(ref))
            elif roll < 0.3:
                r.feed(CallEnd(ref))
            else:
                text = "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 3)))
                if fast:
                    r.registry.fragment(ref, text)
                else:
                    r.registry.arguments(ref, text, "fragment")
            steps.append(r.drain())
    except ToolcallFSMError as exc:
        steps.append(repr(exc))
    try:
        result = repr(r.close())
    except ToolcallFSMError as exc:  # strict mode: raised once the result is complete
        result = repr(exc) + repr(r.close())
    return result, steps, dict(r.ledger.rules), dict(r.ledger.transitions)


def test_the_registry_takes_any_fragment_as_its_general_routing() -> None:
    # Refs whose id, name, index or server flag disagree with the open call of their lane, resends
    # of all the text held, whitespace, values closing mid-fragment: Registry.fragment decides as
    # arguments() does, in lax and strict mode.
    for seed in range(3000):
        assert _random_refs_run(seed, fast=True) == _random_refs_run(seed, fast=False), seed


# -- fragments held back over one read (Registry.hold) -------------------------------------------------------------


def _held_edges() -> dict[str, tuple[list[dict[str, Any]], dict[str, Any]]]:
    """OpenAI chat streams where a run of held fragments meets what ends it, with the options that
    make it bite: a limit passed mid-run, text that only a general path stores as it should."""
    from fsm import Limits
    from tests.helpers import chunk, tc

    def call(*pieces: str, index: int = 0, finish: str | None = "tool_calls") -> list[dict[str, Any]]:
        events = [chunk(tc(index, f"c{index}", "f", ""))] + [chunk(tc(index, args=p)) for p in pieces]
        return events + ([chunk(finish=finish)] if finish else [])

    def said(event: dict[str, Any], text: str) -> dict[str, Any]:
        event["choices"][0]["delta"]["content"] = text
        return event

    body = ['{"a', '": "x', "yz", " more", ' text"', ', "b": [1', ", 2", "]}"]
    return {
        "plain": (call(*body), {}),
        "cut mid-run": (call(*body[:5], finish=None), {}),
        "a limit passed mid-run": (call(*body), {"limits": Limits(max_argument_chars=14)}),
        "held bytes passed mid-run": (call(*body), {"limits": Limits(max_stream_argument_bytes=12)}),
        "a lone surrogate mid-run": (call('{"a": "', "x", "\ud83d", "\ude42", 'y"}'), {}),
        "whitespace mid-run": (call('{"a": ', "  ", "1", "}"), {}),
        "cumulative text": (call('{"a": "x', '{"a": "xy', '{"a": "xyz"}'), {}),
        "a value closed mid-run": (call('{"a": "x', 'y"}', '{"b": 1}'), {}),
        "two calls interleaved": (
            [
                chunk(tc(0, "a", "f", "")),
                chunk(tc(1, "b", "g", "")),
                *[chunk(tc(k % 2, args=p)) for k, p in enumerate(['{"x": "', '{"y": "', "1", "2", '"}', '"}'])],
                chunk(finish="tool_calls"),
            ],
            {},
        ),
        "a header for the next call mid-run": (call(*body[:4], finish=None) + call(*body[4:], index=1), {}),
        "text beside a fragment mid-run": (
            [*call(*body[:3], finish=None), said(chunk(tc(0, args="q")), "hi"), *call(*body[3:], finish="stop")[1:]],
            {},
        ),
        "after the finish reason": (
            call(*body[:3], finish="tool_calls") + [chunk(tc(0, args=p)) for p in body[3:]],
            {},
        ),
        "strict": (call(*body), {"strict": True}),
    }


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.choice(["str", "num", "lit", "list", "obj"] if depth < 4 else ["str", "num", "lit"])
    if kind == "str":
        return "".join(
            rng.choice(["a", "b c", '"', "\\", "\n", "{", "]", "caf\u00e9", "\U0001f642"])
            for _ in range(rng.randint(0, 6))
        )
    if kind == "num":
        return rng.choice([0, -12, 3.5, 1e21, 7])
    if kind == "lit":
        return rng.choice([True, False, None])
    if kind == "list":
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {f"k{i}": _random_value(rng, depth + 1) for i in range(rng.randint(0, 4))}


def _random_streams(count: int) -> list[list[dict[str, Any]]]:
    """OpenAI chat streams of one to three calls with nested values (brackets and quotes inside
    strings, escapes, unicode), in fragments of 1 to 12 characters, some with spacing, the calls
    one after another or interleaved."""
    from tests.helpers import chunk, tc

    streams = []
    for seed in range(count):
        rng = random.Random(seed)
        texts = []
        for _ in range(rng.randint(1, 3)):
            value = {"q": _random_value(rng), "r": _random_value(rng)}
            texts.append(json.dumps(value, ensure_ascii=rng.random() < 0.3, indent=rng.choice([None, 1])))
        pieces: list[list[str]] = []
        for text in texts:
            cut, at = [], 0
            while at < len(text):
                n = rng.randint(1, 12)
                cut.append(text[at : at + n])
                at += n
            pieces.append(cut)
        events = [chunk(tc(k, f"c{k}", "f", "")) for k in range(len(texts))]
        order = [k for k in range(len(texts)) for _ in pieces[k]]
        if rng.random() < 0.3:
            rng.shuffle(order)
        else:
            order.sort()
        taken = [0] * len(texts)
        for k in order:
            events.append(chunk(tc(k, args=pieces[k][taken[k]])))
            taken[k] += 1
        streams.append([*events, chunk(finish="tool_calls")])
    return streams


def _replay_held(events: list[dict[str, Any]], sizes: list[int], **options: Any) -> object:
    wire = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
    return replay_in_pieces(wire, sizes, "openai-chat", **options)


def replay_in_pieces(wire: bytes, sizes: list[int], provider: str, **options: Any) -> object:
    """replay_traced of ``wire`` read in pieces of ``sizes`` in turn, a preview read between two."""
    from fsm import Reassembler
    from tests.helpers import replay_traced

    def feed(r: Reassembler) -> Iterator[list[Any]]:
        pos, k = 0, 0
        while pos < len(wire):
            size = sizes[k % len(sizes)]
            k += 1
            yield r.feed_bytes(wire[pos : pos + size])
            if pos < 40 < pos + size and 0 in r.registry.slots:
                yield [("preview", r.partial(0))]  # a preview reads what the read held back
            pos += size

    return replay_traced(Reassembler(provider, **options), feed)


def test_fragments_held_back_over_a_read_decide_as_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """A read of many OpenAI chat events holds back the fragments whose scan waits and stores each
    run in one step (Registry.hold). Over every OpenAI chat vector, fuzzed streams and the edge
    cases above, fed whole and in pieces: the same transitions in order, outputs, previews, calls,
    diagnostics and rule counts as with nothing held back, and as through the decoder's shortcut."""
    from fsm.engine.registry import Registry
    from fsm.harness.fuzz.run import sample_vectors
    from tests.helpers import without_reader

    vectors = [v for v in load_vectors() if v.shape == "openai-chat"] + sample_vectors("openai-chat", 150)
    streams = [(v.name, v.events, {}) for v in vectors if all(type(e) is dict for e in v.events)]
    streams += [(name, events, options) for name, (events, options) in _held_edges().items()]
    streams += [(f"random {k}", events, {}) for k, events in enumerate(_random_streams(60))]
    assert len(streams) > 250
    cuts = [[1 << 20], [97, 5, 300], [1]]
    held = 0
    real = Registry.gather

    def counted(self: Registry, index: int, text: str) -> bool:
        nonlocal held
        taken = real(self, index, text)
        held += taken
        return taken

    def replays() -> list[object]:
        return [_replay_held(events, sizes, **options) for _, events, options in streams for sizes in cuts]

    monkeypatch.setattr(Registry, "gather", counted)
    holding = replays()
    assert held > 1000  # reads of one event store it at once (test_reads_of_one_event_decide_as_reads_of_many)
    monkeypatch.setattr(Registry, "gather", lambda self, index, text: False)
    one_by_one = replays()
    without_reader(monkeypatch, "lean_fragment_in")
    shortcut = replays()
    names = [f"{name} {sizes}" for name, _, _ in streams for sizes in cuts]
    for name, a, b, c in zip(names, holding, one_by_one, shortcut, strict=True):
        assert a == b, name
        assert a == c, name


def test_reads_of_one_event_decide_as_reads_of_many(monkeypatch: pytest.MonkeyPatch) -> None:
    """A read that brings one whole event (how most servers flush each, and so what most reads
    are) is framed without its lines split (SSEFramer._one_event) and its chunk is stored at once,
    not held back for a run it has none of. Over every OpenAI chat vector, fuzzed streams and the
    edge cases above, fed one event a read: the same transitions in order, outputs, previews,
    calls, diagnostics and rule counts as through the line loop and the holding."""
    from fsm import Reassembler
    from fsm.harness.fuzz.run import sample_vectors
    from fsm.wire.decoders.chat_chunks import lean_fragment_in

    vectors = [v for v in load_vectors() if v.shape == "openai-chat"] + sample_vectors("openai-chat", 150)
    streams = [(v.events, {}) for v in vectors if all(type(e) is dict for e in v.events)]
    streams += [(events, options) for events, options in _held_edges().values()]
    streams += [(events, {}) for events in _random_streams(60)]
    taken = {"framed": 0, "stored": 0}
    framed_one, ingest = SSEFramer._one_event, Reassembler._ingest_payload

    def counted_framing(self: SSEFramer, data: bytes) -> list[object] | None:
        one = framed_one(self, data)
        taken["framed"] += one is not None
        return one  # type: ignore[return-value]

    def counted_ingest(self: Reassembler, payload: Any, *, last: bool, hold: bool = True) -> None:
        if not hold and payload.startswith("{"):
            taken["stored"] += lean_fragment_in(json.loads(payload)) is not None
        ingest(self, payload, last=last, hold=hold)

    def replays() -> list[object]:
        out = []
        for events, options in streams:
            wire = [b"data: " + json.dumps(e).encode() + b"\n\n" for e in events] + [b"data: [DONE]\n\n"]
            sizes = [len(event) for event in wire]
            out.append(_replay_held(events, sizes, **options))
        return out

    monkeypatch.setattr(SSEFramer, "_one_event", counted_framing)
    monkeypatch.setattr(Reassembler, "_ingest_payload", counted_ingest)
    one_at_a_time = replays()
    assert taken["framed"] > 2500 and taken["stored"] > 1000, taken  # taken, often
    monkeypatch.setattr(SSEFramer, "_one_event", lambda self, data: None)

    def held_then_settled(self: Reassembler, payload: Any, *, last: bool, hold: bool = True) -> None:
        ingest(self, payload, last=last)  # held back, as every read's events were
        if not hold:  # the read's one event: its end settles what was held
            self.registry.settle()

    monkeypatch.setattr(Reassembler, "_ingest_payload", held_then_settled)
    as_before = replays()
    for (events, options), a, b in zip(streams, one_at_a_time, as_before, strict=True):
        assert a == b, (events, options)


def test_the_lean_fragment_reader_reads_as_the_shortcut_does() -> None:
    """lean_fragment_in finds in a chunk what plain_delta, one_entry and bare_fragment_in find
    together, or nothing; over every chunk of the vectors and fuzzed streams, and chunks with one
    more key anywhere."""
    from fsm.harness.fuzz.run import sample_vectors
    from fsm.wire.decoders.chat_chunks import bare_fragment_in, lean_fragment_in, one_entry, plain_delta

    vectors = [*load_vectors(), *sample_vectors("openai-chat", 150)]
    chunks = [e for v in vectors for e in v.events if type(e) is dict]
    chunks += [e for events in _random_streams(40) for e in events]  # (the fuzzed sample differs between runs)
    extra: list[dict[str, Any]] = []
    for e in chunks:
        if lean_fragment_in(e) is not None:
            choice = e["choices"][0]
            entry = choice["delta"]["tool_calls"][0]
            extra += [
                {**e, "usage": {"total_tokens": 1}},
                {**e, "choices": [{**choice, "finish_reason": "stop"}]},
                {**e, "choices": [{**choice, "index": 1}]},
                {**e, "choices": [{**choice, "delta": {**choice["delta"], "content": "x"}}]},
                {**e, "choices": [{**choice, "delta": {"tool_calls": [{**entry, "id": "x"}]}}]},
                {**e, "choices": [{**choice, "delta": {"tool_calls": [{**entry, "id": None}]}}]},
                {**e, "choices": [{**choice, "delta": {"tool_calls": [{**entry, "function": {"name": "g"}}]}}]},
            ]
    assert len(extra) > 500
    for e in chunks + extra:
        delta = plain_delta(e)
        found = one_entry(delta) if delta is not None else None
        general = bare_fragment_in(*found) if found is not None else None
        lean = lean_fragment_in(e)
        assert lean is None or lean == general, e
    assert sum(lean_fragment_in(e) is not None for e in chunks) > 500


def test_a_value_closed_by_a_gathered_fragment_is_remembered_as_when_fed() -> None:
    # A fragment of a read whose scan must run now (here "]}", which closes the value) is stored
    # by Registry.gather itself; the call whose value it closed is then indexed under its text as
    # a fragment fed alone would have it, so a resend of it (no id) in a lane of several calls is
    # found by the same route: the same calls, diagnostics, rules and transitions as fed as dicts.
    from fsm import Reassembler
    from tests.helpers import chunk, tc

    for calls in (2, 3, 5):
        events = []
        for k in range(calls):
            events.append(chunk(tc(index=0, id=f"c{k}", name="f", args="")))
            events += [chunk(tc(index=0, args=piece)) for piece in ['{"a": [', '"x', f'{k}"', ", 1", "]}"]]
        events.append(chunk(tc(index=0, args=f'{{"a": ["x{calls - 1}", 1]}}')))  # the last call's text again
        events.append(chunk(finish="tool_calls"))
        fed, read = Reassembler("openai-chat"), Reassembler("openai-chat")
        for event in events:
            fed.feed(event)
        read.feed_bytes(b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events))
        result = read.close()
        assert result == fed.close() and len(result.calls) == calls
        assert [d.code for d in result.diagnostics] == ["resend"]
        assert dict(read.ledger.rules) == dict(fed.ledger.rules)
        assert dict(read.ledger.transitions) == dict(fed.ledger.transitions)
