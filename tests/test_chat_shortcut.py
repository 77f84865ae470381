"""OpenAIChatDecoder.shortcut reads the commonest chunks in line (issue 17): it must decide every
chunk as its readers do one after another (tests.helpers.shortcut_by_readers), which the tests of
each reader prove against the decoder. Compared here chunk by chunk, over the vectors, fuzzed
streams and chunks mutated at every field the shortcut reads, and stream by stream."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from fsm.content import TurnContent
from fsm.events import ReasoningDelta, TextDelta
from fsm.harness.fuzz.run import sample_vectors
from fsm.wire.decoders.chat_chunks import plain_said
from fsm.wire.decoders.openai_chat import OpenAIChatDecoder
from tests.helpers import shortcut_by_readers
from tests.test_conformance import VECTORS, _replay_with_trace
from tests.test_per_call_paths import EDGES, HEADERS


class _Recorder:
    """Stands for the registry: what the shortcut hands it, in order."""

    def __init__(self) -> None:
        self.taken: list[tuple[Any, ...]] = []

    def bare_fragment(self, index: int, text: str, ref: Any) -> None:
        self.taken.append(("bare", index, text, ref(index)))

    def whole_call(self, index: int, wire_id: str, name: str, text: str) -> None:
        self.taken.append(("whole", index, wire_id, name, text))

    def call_header(self, index: int, wire_id: str, name: str) -> None:
        self.taken.append(("header", index, wire_id, name))


class _Said:
    """Stands for the turn's content: the events it is given, and those TurnContent.said stands for."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def apply(self, event: Any) -> None:
        self.events.append(event)

    def said(self, text: str, reasoning: str) -> None:
        self.events += [TextDelta(text)] if text else []
        self.events += [ReasoningDelta(None, reasoning)] if reasoning else []


def _decided(read: Any, chunk: dict[str, Any]) -> tuple[Any, ...]:
    registry, content = _Recorder(), _Said()
    try:
        took = read(OpenAIChatDecoder(), chunk, registry, content)
    except Exception as exc:  # the same error either way is the same decision
        return ("raised", type(exc).__name__, str(exc))
    return took, registry.taken, content.events


# What a field the shortcut reads may hold instead (absent is _GONE).
_GONE = object()
_VALUES: list[Any] = [_GONE, None, "", "x", "0", 0, 1, 7, True, False, 1.0, {}, [], {"a": 1}, ["x"], " ", "{}", '{"a"']


def _mutants(chunk: dict[str, Any], rng: random.Random) -> list[dict[str, Any]]:
    """``chunk`` with one field the shortcut reads (the envelope's, the choice's, the delta's, the
    entry's and the function's) set to another value or taken out, and with one key more."""
    out = []
    paths: list[tuple[str, ...]] = [("choices",), ("error",), ("usage",)]
    choice = (chunk.get("choices") or [None])[0]
    if type(choice) is dict:
        paths += [("choices", 0, k) for k in ("index", "finish_reason", "delta", "extra")]  # type: ignore[misc]
        delta = choice.get("delta")
        if type(delta) is dict:
            keys = ("tool_calls", "content", "reasoning_content", "reasoning", "role", "refusal")
            paths += [("choices", 0, "delta", k) for k in keys]  # type: ignore[misc]
            entries = delta.get("tool_calls")
            if type(entries) is list and entries and type(entries[0]) is dict:
                keys = ("index", "id", "type", "function", "extra_content")
                paths += [("choices", 0, "delta", "tool_calls", 0, k) for k in keys]  # type: ignore[misc]
                if type(entries[0].get("function")) is dict:
                    keys = ("name", "arguments", "extra")
                    paths += [("choices", 0, "delta", "tool_calls", 0, "function", k) for k in keys]  # type: ignore[misc]
    for path in paths:
        for value in rng.sample(_VALUES, 6):
            mutant = copy.deepcopy(chunk)
            place: Any = mutant
            for step in path[:-1]:
                place = place[step]
            if value is _GONE:
                place.pop(path[-1], None)
            else:
                place[path[-1]] = copy.deepcopy(value)
            out.append(mutant)
    return out


def _chunks() -> list[dict[str, Any]]:
    vectors = [*VECTORS, *sample_vectors("openai-chat", 300)]
    chunks = [e for v in vectors for e in v.events if type(e) is dict]
    chunks += [e for edges in (EDGES, HEADERS) for events in edges.values() for e in events]
    rng = random.Random(22)
    called = [c for c in chunks if "tool_calls" in str(c)]
    chunks += [m for c in rng.sample(called, min(len(called), 400)) for m in _mutants(c, rng)]
    # Text and reasoning side by side, as the dialects send them (the decoder keeps one reasoning).
    values = [None, "", "a", "b"]
    for text in values:
        for first in values:
            for second in values:
                delta = {"content": text, "reasoning_content": first, "reasoning": second, "role": "assistant"}
                chunks.append({"choices": [{"index": 0, "delta": delta}]})
    said = [c for c in chunks if "tool_calls" not in str(c) and "delta" in str(c)]
    chunks += [m for c in rng.sample(said, min(len(said), 200)) for m in _mutants(c, rng)]
    return chunks


def test_the_chunk_shortcut_decides_as_its_readers() -> None:
    chunks = _chunks()
    kinds: dict[str, int] = {}
    for chunk in chunks:
        fast, by_readers = _decided(OpenAIChatDecoder.shortcut, chunk), _decided(shortcut_by_readers, chunk)
        assert fast == by_readers, chunk
        kind = "raised" if fast[0] == "raised" else fast[1][0][0] if fast[1] else "said" if fast[0] else "none"
        kinds[kind] = kinds.get(kind, 0) + 1
        kinds["plain said"] = kinds.get("plain said", 0) + (kind == "said" and plain_said(_delta(chunk)) is not None)
    # Every way out is taken, often: the comparison is not empty anywhere.
    assert len(chunks) > 20_000
    assert all(kinds.get(kind, 0) > 100 for kind in ("bare", "whole", "header", "said", "plain said", "none")), kinds


def _delta(chunk: dict[str, Any]) -> dict[str, Any]:
    return chunk["choices"][0]["delta"]  # type: ignore[no-any-return]


def test_plain_text_and_reasoning_are_kept_as_their_events_keep_them() -> None:
    """TurnContent.said(text, reasoning), the shortcut's way with the plainest chunk, keeps what
    apply() keeps of TextDelta(text) and ReasoningDelta(None, reasoning): over random turns that mix
    them with the other pieces of text and reasoning (signed, in parts, in numbered blocks,
    refusals, pieces that only name their item)."""
    rng = random.Random(7)
    others: list[Any] = [
        TextDelta("s", signature="sig"),
        TextDelta("p", part=1, output_index=3),
        TextDelta("", item_id="msg_1", status="completed"),
        TextDelta("no", refusal=True),
        ReasoningDelta(0, "b0"),
        ReasoningDelta(2, "b2", signature="x"),
        ReasoningDelta(None, "", redacted="r"),
        ReasoningDelta("item", "i", item_id="rs_1", output_index=1),
    ]
    for _ in range(400):
        by_said, by_events = TurnContent(), TurnContent()
        if rng.random() < 0.3:
            by_said.place_by(lambda: 2)
            by_events.place_by(lambda: 2)
        for _ in range(rng.randrange(12)):
            if rng.random() < 0.6:
                text, reasoning = rng.choice(["", "t", "u"]), rng.choice(["", "r", "q"])
                by_said.said(text, reasoning)
                for event in [TextDelta(text)] * bool(text) + [ReasoningDelta(None, reasoning)] * bool(reasoning):
                    by_events.apply(event)
            else:
                other = rng.choice(others)
                by_said.apply(other)
                by_events.apply(other)
        assert by_said.frozen() == by_events.frozen()
        assert (by_said.text_signature, by_said.text_output_index) == (
            by_events.text_signature,
            by_events.text_output_index,
        )


def test_streams_replay_alike_with_the_shortcut_read_by_its_readers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every vector, fuzzed OpenAI streams and the edge cases of the per-call paths: the same
    transitions in order, outputs, calls, diagnostics and rule counts either way."""
    vectors = [*VECTORS, *sample_vectors("openai-chat", 300)]
    fast = [_replay_with_trace(v) for v in vectors]
    monkeypatch.setattr(OpenAIChatDecoder, "shortcut", shortcut_by_readers)
    by_readers = [_replay_with_trace(v) for v in vectors]
    for vector, a, b in zip(vectors, fast, by_readers, strict=True):
        assert a == b, vector.name


def test_an_empty_delta_says_nothing() -> None:
    """finish_in reads a last chunk's empty delta (most last chunks' delta) without said_in, as
    saying nothing: what said_in finds in it."""
    from fsm.wire.decoders.chat_chunks import finish_in, said_in

    assert said_in({}) == []
    last = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}], "usage": {"total_tokens": 3}}
    assert finish_in(last) == ([], "tool_calls", {"total_tokens": 3})


# Every kind of value a side key may carry: empty or null, falsy of another type, and some that say something.
SIDE_VALUES: list[Any] = [None, "", [], {}, 0, 0.0, False, "x", [1], {"id": "a"}, 1, True]
HEADER = {"index": 0, "id": "a", "function": {"name": "f", "arguments": ""}}
OPENED = {"choices": [{"index": 0, "delta": {"tool_calls": [HEADER]}, "finish_reason": None}]}
END = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}


def _beside(entry: dict[str, Any], key: str, value: Any, **delta: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"tool_calls": [entry], **delta, key: value}, "finish_reason": None}]}


def _both_ways(monkeypatch: pytest.MonkeyPatch, streams: list[list[Any]], *, as_bytes: bool) -> int:
    """Replay each stream (from dicts, and from its SSE bytes too when ``as_bytes``) with the chat
    shortcut and without it, requiring the same transitions in order, outputs, calls, diagnostics
    and rule counts; the number of chunks the shortcut took."""
    from fsm import Reassembler
    from tests.helpers import replay_traced, sse

    def replayed() -> list[object]:
        traces = []
        for events in streams:
            traces.append(replay_traced(Reassembler("openai-chat"), lambda r, events=events: map(r.feed, events)))
            if as_bytes:
                body = sse(events)
                traces.append(replay_traced(Reassembler("openai-chat"), lambda r, body=body: [r.feed_bytes(body)]))
        return traces

    taken: list[bool] = []
    real = OpenAIChatDecoder.shortcut
    with monkeypatch.context() as m:
        m.setattr(OpenAIChatDecoder, "shortcut", lambda *a: taken.append(real(*a)) or taken[-1])
        shortcut = replayed()
    with monkeypatch.context() as m:
        m.setattr(OpenAIChatDecoder, "shortcut", lambda *a: False)
        decoded = replayed()
    fed = [events for events in streams for _ in range(2 if as_bytes else 1)]
    for events, a, b in zip(fed, shortcut, decoded, strict=True):
        assert a == b, events
    return sum(taken)


def _side_streams() -> list[list[dict[str, Any]]]:
    """A call's chunk of every kind the shortcut takes (a whole call, a header, a bare fragment,
    an empty-named one, Mistral's with its content ``""`` beside) with each key chat_said reads
    beside it holding each of SIDE_VALUES."""
    from fsm.wire.decoders._wire import SAID_KEYS

    streams = []
    for key in SAID_KEYS:
        for value in SIDE_VALUES:
            streams += [
                [_beside({"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}}, key, value), END],
                [_beside(HEADER, key, value), END],
                [OPENED, _beside({"index": 0, "function": {"arguments": '{"x": 1}'}}, key, value), END],
                [OPENED, _beside({"index": 0, "function": {"name": "", "arguments": "{}"}}, key, value), END],
                [OPENED, _beside({"index": 0, "function": {"arguments": "{}"}}, key, value, role="assistant"), END],
                [_beside(HEADER, key, value, content="", index=0), END],
            ]
    return streams


def test_every_side_value_beside_a_call_decides_alike_both_ways(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whichever path a call's chunk takes (the shortcut, or the decoder and _apply: stream state
    decides), a value beside the call under any key chat_said reads is decided alike: an empty
    ``reasoning_details``, ``reasoning_items`` or ``audio`` string is reported both ways, an empty
    text neither (policy side-values-by-type). Same transitions in order, outputs, calls,
    diagnostics and rule counts with the shortcut and without it, from dicts and from bytes."""
    streams = _side_streams()
    # most of the chunks are the shortcut's, the empty texts' too
    assert _both_ways(monkeypatch, streams, as_bytes=True) > len(streams)
    for key in ("reasoning_details", "reasoning_items", "audio", "content", "reasoning", "annotations"):
        said: list[str] = []
        chunk = _beside({"index": 0, "function": {"arguments": "{}"}}, key, "")
        OpenAIChatDecoder().decode(chunk, lambda code, why, said=said: said.append(code))
        assert said == (["part-not-reassembled"] if key in ("reasoning_details", "reasoning_items", "audio") else [])


class _Text(str):
    """A caller's str subclass: never read as a str by the shortcut's exact type tests."""


def test_hostile_ids_and_names_beside_a_call_decide_alike_both_ways(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shortcut's reading of an id or name as none (``""``, as CallRef reads it) against the
    decoder's, for ids and names of every type (str subclasses, empty or not; numbers; containers)
    on a call's first chunk, after its header and beside Mistral's own index and empty content:
    the same transitions in order, outputs, calls, diagnostics and rule counts with the shortcut
    and without it (task 155's audit of task 151)."""
    values: list[Any] = [None, "", "a", 0, 1, 1.5, True, [], {}, _Text(""), _Text("b")]
    streams = []
    for call_id in values:
        for name in values:
            for text in ("", "{}", '{"x": ', '{"x": 1} '):
                entry = {"index": 0, "id": call_id, "function": {"name": name, "arguments": text}}
                called = {"choices": [{"index": 0, "delta": {"tool_calls": [entry]}, "finish_reason": None}]}
                streams += [[called, END], [OPENED, called, END], [OPENED, _beside(entry, "content", "", index=0), END]]
    # the headers, and the chunks it reads as bare or whole
    assert _both_ways(monkeypatch, streams, as_bytes=False) > len(streams) // 2
