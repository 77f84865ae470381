"""A Vertex streamed call's commonest event (a piece of the string value open at its path) goes
straight to the registry (GeminiDecoder.commonest_fragment) and decides as decode() does: over
every Gemini vector and generated Vertex streams full of what must leave it to decode() (two
entries, a new path mid-string, numbers, empty pieces, a finish or usage in the same event, other
keys, snake_case names, revisited paths, a cut), fed as dicts and as wire bytes whole, in pieces
and a byte at a time: the same transitions in order, outputs, calls, diagnostics and rule counts
with the shortcut and without it."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import pytest

from fsm import Reassembler
from fsm.harness.vectors import load_vectors
from fsm.wire.decoders.gemini import GeminiDecoder
from tests.helpers import replay_traced
from tests.test_wire_fast_paths import replay_in_pieces

CUTS = [[1 << 20], [97, 5, 300], [1]]


def _event(call: dict[str, Any], rng: random.Random, finish: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": call}
    if rng.random() < 0.03:
        part["thoughtSignature"] = "sig"
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part]}}
    if rng.random() < 0.8:
        candidate["index"] = rng.choice([0, 0, 0, None, 1])
    if finish or rng.random() < 0.02:
        candidate[rng.choice(["finishReason", "finish_reason"])] = finish or rng.choice(["STOP", "", None])
    if rng.random() < 0.03:
        candidate["safetyRatings"] = []
    payload: dict[str, Any] = {"candidates": [candidate]}
    if rng.random() < 0.03:
        payload[rng.choice(["usageMetadata", "usage_metadata"])] = rng.choice([{"totalTokenCount": 3}, {}])
    if rng.random() < 0.05:
        payload["modelVersion"] = "gemini-3"
    if rng.random() < 0.01:
        payload["error"] = rng.choice([{"code": 500, "message": "x"}, None])
    return payload


def _leaves(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}" if key.isidentifier() else f"{path}['{key}']")
    elif isinstance(value, list):
        for k, item in enumerate(value):
            yield from _leaves(item, f"{path}[{k}]")
    else:
        yield path, value


def _entries(path: str, value: Any, rng: random.Random) -> list[dict[str, Any]]:
    """The partialArgs entries of one leaf: a string in pieces, each piece its own entry."""
    if not isinstance(value, str):
        kind = "boolValue" if isinstance(value, bool) else "nullValue" if value is None else "numberValue"
        return [{"jsonPath": path, kind: value}]
    pieces, at = [], 0
    while at < len(value) or not pieces:
        n = rng.randint(1, 6)
        pieces.append(value[at : at + n])
        at += n
    entries: list[dict[str, Any]] = [{"jsonPath": path, "stringValue": p, "willContinue": True} for p in pieces]
    if rng.random() < 0.5:
        entries[-1] = {"jsonPath": path, "stringValue": pieces[-1]}
    else:
        entries.append({"jsonPath": path, "stringValue": rng.choice(["", "", "!"])})
    for entry in entries:
        roll = rng.random()
        if roll < 0.02:
            entry["stringValue"] = 7  # not a string: decode() writes its text
        elif roll < 0.04:
            entry["extra"] = 1
        elif roll < 0.05:
            entry["willContinue"] = rng.choice([1, "yes", 0, None])
    return entries


def _vertex_streams(count: int) -> list[list[dict[str, Any]]]:
    streams = []
    words = ["a", "b c", '"', "\\", "\n", "{", "]", "caf\u00e9", "\U0001f642", "$.x"]
    for seed in range(count):
        rng = random.Random(seed)
        events: list[dict[str, Any]] = []
        for k in range(rng.randint(1, 3)):
            header: dict[str, Any] = {"name": f"f{k}", "willContinue": True}
            if rng.random() < 0.3:
                header["id"] = f"c{k}"
            events.append(_event(header, rng))
            value = {
                "q": "".join(rng.choice(words) for _ in range(rng.randint(0, 12))),
                "n": {"s": "".join(rng.choice(words) for _ in range(rng.randint(0, 8))), "m": rng.choice([1, True])},
                "l": ["".join(rng.choice(words) for _ in range(rng.randint(0, 5))), None],
                "odd key": "".join(rng.choice(words) for _ in range(rng.randint(0, 5))),
            }
            leaves = list(_leaves(value, "$"))
            if rng.random() < 0.2:  # a path comes back to a container a sibling closed
                leaves.append(("$.n.t", "back"))
            entries = [e for path, leaf in leaves for e in _entries(path, leaf, rng)]
            at = 0
            while at < len(entries):
                n = 2 if rng.random() < 0.05 else 1
                call: dict[str, Any] = {"partialArgs": entries[at : at + n], "willContinue": rng.random() < 0.95}
                if rng.random() < 0.02:
                    call = {"partial_args": call["partialArgs"], "will_continue": True}
                elif rng.random() < 0.02:
                    call["name"] = f"f{k}"
                events.append(_event(call, rng))
                at += n
                roll = rng.random()
                if roll < 0.03:  # a thought or text part, or a whole call without an id (maybe a resend), between
                    part = rng.choice([{"text": "hm", "thought": True}, {"text": "so"}])
                    events.append({"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}]})
                elif roll < 0.05:
                    events.append(_event({"name": "g", "args": {"x": rng.choice([1, 2])}}, rng))
            if rng.random() < 0.9:
                events.append(_event(rng.choice([{}, {"willContinue": False}]), rng))
        if rng.random() < 0.9:
            events.append(_event({}, rng, finish="STOP"))
        streams.append(events)
    return streams


def _replay_dicts(events: list[dict[str, Any]]) -> object:
    def feed(r: Reassembler) -> Iterator[list[Any]]:
        for event in events:
            yield r.feed(event)

    return replay_traced(Reassembler("gemini"), feed)


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    hits = [0]
    real = GeminiDecoder.commonest_fragment

    def counted(self: GeminiDecoder, payload: dict[str, Any]) -> Any:
        found = real(self, payload)
        hits[0] += found is not None
        return found

    monkeypatch.setattr(GeminiDecoder, "commonest_fragment", counted)
    return hits


def test_the_vertex_string_shortcut_decides_as_the_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    from fsm.harness.fuzz.run import sample_vectors

    vectors = [v for v in load_vectors() if v.shape == "gemini"] + sample_vectors("gemini", 60)
    streams = [(v.name, v.events) for v in vectors if all(type(e) is dict for e in v.events)]
    streams += [(f"vertex {k}", events) for k, events in enumerate(_vertex_streams(150))]
    wires = [
        (f"{name} {sizes}", b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events), sizes)
        for name, events in streams
        for sizes in CUTS
    ]

    def replays() -> list[object]:
        by_dicts = [_replay_dicts(events) for _, events in streams]
        return by_dicts + [replay_in_pieces(wire, sizes, "gemini") for _, wire, sizes in wires]

    hits = _counting(monkeypatch)
    fast = replays()
    assert hits[0] > 3000, hits  # taken, often
    monkeypatch.setattr(GeminiDecoder, "commonest_fragment", lambda self, payload: None)
    general = replays()
    names = [name for name, _ in streams] + [name for name, _, _ in wires]
    for name, a, b in zip(names, fast, general, strict=True):
        assert a == b, name
