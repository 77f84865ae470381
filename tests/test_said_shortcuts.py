"""The other wires' commonest text and reasoning events, taken straight to the turn's content
(a decoder's ``commonest_said``, issue 17), decide exactly as decode() and Reassembler._apply do.

Most events of a turn that talks are pieces of its text or reasoning; OpenAI chat's chunk shortcut
has long read them without building an event, and these readers do the same for the other wires.
Without them every event goes through the decoder. Over every vector and fuzzed streams of those
shapes, talk-heavy streams, and events that nearly qualify (a piece of the wrong type, an index no
reader takes, a text piece for a tool block), fed as dicts and as wire bytes in random pieces, lax
and strict: the same result, outputs, transitions in order, diagnostics and rule counts, or the
same error, either way.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from fsm import Policies, Reassembler
from fsm.harness.fuzz.run import sample_vectors
from fsm.harness.vectors import load_vectors
from fsm.wire.decoders.anthropic import AnthropicDecoder
from fsm.wire.decoders.chunk_form import FragmentForm
from tests.helpers import replay_traced
from tests.test_wire_fast_paths import replay_wire, wire_of


def _anthropic_talk(rng: random.Random) -> list[dict[str, Any]]:
    """A turn that thinks, talks, calls a tool and talks again, in many small deltas."""

    def delta(at: int, kind: str, **piece: Any) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": at, "delta": {"type": kind, **piece}}

    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": [], "usage": {"a": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
    ]
    events += [delta(0, "thinking_delta", thinking=rng.choice(["so ", "then ", "", "é🙂 "])) for _ in range(20)]
    events += [delta(0, "signature_delta", signature="c2ln"), {"type": "content_block_stop", "index": 0}]
    events.append({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}})
    events += [delta(1, "text_delta", text=rng.choice(["Hello", " there", "\n", "🙂"])) for _ in range(30)]
    events.append({"type": "content_block_stop", "index": 1})
    block = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
    events.append({"type": "content_block_start", "index": 2, "content_block": block})
    events += [delta(2, "input_json_delta", partial_json=p) for p in ['{"q"', ': "x', '"}']]
    events.append({"type": "content_block_stop", "index": 2})
    events.append({"type": "content_block_start", "index": 3, "content_block": {"type": "text", "text": ""}})
    events += [delta(3, "text_delta", text=rng.choice(["Done", ".", " ok"])) for _ in range(10)]
    events += [{"type": "content_block_stop", "index": 3}]
    events += [{"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}]
    return [*events, {"type": "message_stop"}]


def _anthropic_near() -> list[list[dict[str, Any]]]:
    """Streams where a text or thinking delta nearly qualifies, each between ones that do."""

    def delta(at: Any, piece: Any, **extra: Any) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": at, "delta": piece, **extra}

    class Piece(dict):  # type: ignore[type-arg]
        pass

    start = [
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t", "name": "f"}},
    ]
    good = delta(0, {"type": "text_delta", "text": "ok"})
    near = [
        delta(0, {"type": "text_delta", "text": ""}),
        delta(0, {"type": "text_delta", "text": None}),
        delta(0, {"type": "text_delta", "text": 7}),
        delta(0, {"type": "text_delta", "text": ["a"]}),
        delta(0, {"type": "text_delta"}),
        delta(0, {"type": "thinking_delta", "thinking": None}),
        delta(0, {"type": "thinking_delta", "thinking": ""}),
        delta(0, {"type": "thinking_delta", "thinking": 1.5}),
        delta(0, {"type": "signature_delta", "signature": "s"}),
        delta(0, {"type": "citations_delta", "citation": {"cited_text": "c"}}),
        delta(0, {"type": "weird_delta", "text": "w"}),
        delta(0, {"type": None, "text": "w"}),
        delta(0, Piece(type="text_delta", text="sub")),
        delta(0, [("type", "text_delta")]),
        delta(0, None),
        delta(1, {"type": "text_delta", "text": "in the tool block"}),
        delta(1, {"type": "thinking_delta", "thinking": "in the tool block"}),
        delta(5, {"type": "text_delta", "text": "at a block never started"}),
        delta(None, {"type": "text_delta", "text": "no index"}),
        delta(True, {"type": "text_delta", "text": "a bool index"}),
        delta(-1, {"type": "text_delta", "text": "below 0"}),
        delta(1 << 63, {"type": "text_delta", "text": "past 63 bits"}),
        delta(10**5000, {"type": "text_delta", "text": "past the int-string limit"}),
        delta(0.0, {"type": "text_delta", "text": "a float index"}),
        delta("0", {"type": "text_delta", "text": "a text index"}),
        delta(0, {"type": "text_delta", "text": "\ud83d"}),  # a lone surrogate: kept as it came
        delta(0, {"type": "text_delta", "text": "x"}, extra="a key beside"),
    ]
    streams = [[*start, good, piece, good] for piece in near]
    # Text ahead of the blocks started: a block started without its index takes the place after it.
    bare = {"type": "tool_use", "id": "u", "name": "g", "input": {}}
    streams.append(
        [
            *start,
            delta(4, {"type": "text_delta", "text": "ahead"}),
            {"type": "content_block_start", "content_block": bare},
            {"type": "content_block_delta", "delta": {"type": "input_json_delta", "partial_json": "{}"}},
            {"type": "content_block_stop"},
        ]
    )
    # After the finish: an event is late, and said so (the readers take none then).
    stop = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}
    streams.append([*start, good, stop, good, delta(0, {"type": "thinking_delta", "thinking": "late"})])
    # ... also once the events before the finish taught the wire's reading their form.
    streams.append([*start, good, good, good, good, stop, good, good, good])
    return streams


def _streams(decoders: dict[str, Any], talk: Callable[[random.Random], list[Any]], near: list[list[Any]]) -> list[Any]:
    """Every vector of these wires, fuzzed ones, talk-heavy ones and the near ones, as vectors."""
    vectors: list[Any] = [v for v in load_vectors() if v.shape in decoders]
    vectors += [v for shape in sorted(decoders) for v in sample_vectors(shape, 60)]
    (shape,) = decoders
    made = [talk(random.Random(seed)) for seed in range(8)] + near
    vectors += [
        SimpleNamespace(name=f"{shape}-made-{n}", shape=shape, events=events, body=None, policies={})
        for n, events in enumerate(made)
    ]
    return vectors


def _replay(vector: Any, strict: bool) -> object:
    def feed(r: Reassembler) -> Iterator[list[Any]]:
        if vector.body is not None:
            yield r.feed_bytes(vector.body.encode("utf-8"))
        for event in vector.events:
            yield r.feed(event)

    policies, choice = Policies(**vector.policies), getattr(vector, "choice", None)  # (a made stream has none)
    return replay_traced(Reassembler(vector.shape, policies=policies, strict=strict, choice=choice), feed)


def _wire(vector: Any) -> bytes | None:
    """wire_of(vector), None for a stream no JSON text writes (an index past the int-string limit)."""
    try:
        return wire_of(vector)
    except ValueError:
        return None


def check_said_reader(
    monkeypatch: pytest.MonkeyPatch,
    shape: str,
    decoder: Any,
    talk: Callable[[random.Random], list[Any]],
    near: list[list[Any]],
    *,
    wire: bool,
    strict: bool = False,
    least: int = 300,
    forms: bool = False,
) -> None:
    """``decoder.commonest_said`` takes more than ``least`` events of ``shape``'s vectors, fuzzed
    streams, streams ``talk`` makes and the ``near`` ones, fed as dicts (``wire``: as SSE bytes in
    random pieces, with no event read by its form, or, ``forms``, with the forms the reassembler
    learns, and then the events ``decoder.said_at`` takes by their form count too), and every
    replay is the same without it."""
    vectors = _streams({shape: decoder}, talk, near)
    if wire and not forms:
        monkeypatch.setattr(FragmentForm, "learn", classmethod(lambda cls, *args: None))
    if wire:
        wired = [(v, w) for v in vectors if (w := _wire(v)) is not None]

        def replay_all() -> list[object]:
            return [replay_wire(v, w) for v, w in wired]

        names = [v.name for v, _ in wired]
    else:

        def replay_all() -> list[object]:
            return [_replay(v, strict) for v in vectors]

        names = [v.name for v in vectors]
    hits = [0]
    real = decoder.commonest_said

    def counted(self: Any, payload: dict[str, Any], content: Any) -> bool | None:
        took: bool | None = real(self, payload, content)
        hits[0] += took is not False  # None: taken, an event decode() makes nothing of
        return took

    monkeypatch.setattr(decoder, "commonest_said", counted)
    if forms:
        by_form = decoder.said_at

        def read(self: Any, kind: Any, place: Any, piece: str, content: Any) -> bool | None:
            took: bool | None = by_form(self, kind, place, piece, content)
            hits[0] += took is not False
            return took

        monkeypatch.setattr(decoder, "said_at", read)
    fast = replay_all()
    assert hits[0] > least, hits  # taken, often
    monkeypatch.setattr(decoder, "commonest_said", lambda self, payload, content: False)
    general = replay_all()
    for name, a, b in zip(names, fast, general, strict=True):
        assert a == b, name


@pytest.mark.parametrize("strict", [False, True])
def test_the_anthropic_reader_decides_as_the_decoder_for_fed_dicts(
    monkeypatch: pytest.MonkeyPatch, strict: bool
) -> None:
    check_said_reader(
        monkeypatch, "anthropic", AnthropicDecoder, _anthropic_talk, _anthropic_near(), wire=False, strict=strict
    )


def test_the_anthropic_reader_decides_as_the_decoder_from_the_wire(monkeypatch: pytest.MonkeyPatch) -> None:
    check_said_reader(monkeypatch, "anthropic", AnthropicDecoder, _anthropic_talk, _anthropic_near(), wire=True)


def test_the_anthropic_reader_decides_as_the_decoder_from_the_wire_read_by_forms(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """From the wire, once talking events were parsed and taken, their form (chunk_form.FragmentForm,
    the text and the block's index its holes) reads the next ones unparsed (said_at)."""
    check_said_reader(
        monkeypatch, "anthropic", AnthropicDecoder, _anthropic_talk, _anthropic_near(), wire=True, forms=True
    )


def read_from_the_wire(shape: str, events: list[dict[str, Any]]) -> Reassembler:
    """A reassembler closed after ``events`` came as SSE bytes, whose result was found to be the
    one they give fed as dicts."""
    wire = _wire(SimpleNamespace(events=events, body=None))
    assert wire is not None
    r = Reassembler(shape)
    r.feed_bytes(wire)
    from_wire = r.close()
    fed = Reassembler(shape)
    for event in events:
        fed.feed(event)
    assert from_wire == fed.close()
    return r


def test_most_talking_events_from_the_wire_are_read_by_their_form() -> None:
    events = _anthropic_talk(random.Random(5))
    r = read_from_the_wire("anthropic", events)
    assert r._said_form is not None and r._parsed < len(events) // 2, (r._parsed, len(events))
