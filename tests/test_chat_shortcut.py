"""OpenAIChatDecoder.shortcut reads the commonest chunks in line (issue 17): it must decide every
chunk as its readers do one after another (tests.helpers.shortcut_by_readers), which the tests of
each reader prove against the decoder. Compared here chunk by chunk, over the vectors, fuzzed
streams and chunks mutated at every field the shortcut reads, and stream by stream."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from fsm.harness.fuzz.run import sample_vectors
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


def _decided(read: Any, chunk: dict[str, Any]) -> tuple[Any, ...]:
    registry, said = _Recorder(), []
    try:
        took = read(OpenAIChatDecoder(), chunk, registry, said.append)
    except Exception as exc:  # the same error either way is the same decision
        return ("raised", type(exc).__name__, str(exc))
    return took, registry.taken, said


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
            paths += [("choices", 0, "delta", k) for k in ("tool_calls", "content", "reasoning_content", "role")]  # type: ignore[misc]
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
    return chunks


def test_the_chunk_shortcut_decides_as_its_readers() -> None:
    chunks = _chunks()
    kinds: dict[str, int] = {}
    for chunk in chunks:
        fast, by_readers = _decided(OpenAIChatDecoder.shortcut, chunk), _decided(shortcut_by_readers, chunk)
        assert fast == by_readers, chunk
        kind = "raised" if fast[0] == "raised" else fast[1][0][0] if fast[1] else "said" if fast[0] else "none"
        kinds[kind] = kinds.get(kind, 0) + 1
    # Every way out is taken, often: the comparison is not empty anywhere.
    assert len(chunks) > 20_000
    assert all(kinds.get(kind, 0) > 100 for kind in ("bare", "whole", "header", "said", "none")), kinds


def test_streams_replay_alike_with_the_shortcut_read_by_its_readers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every vector, fuzzed OpenAI streams and the edge cases of the per-call paths: the same
    transitions in order, outputs, calls, diagnostics and rule counts either way."""
    vectors = [*VECTORS, *sample_vectors("openai-chat", 300)]
    fast = [_replay_with_trace(v) for v in vectors]
    monkeypatch.setattr(OpenAIChatDecoder, "shortcut", shortcut_by_readers)
    by_readers = [_replay_with_trace(v) for v in vectors]
    for vector, a, b in zip(vectors, fast, by_readers, strict=True):
        assert a == b, vector.name
