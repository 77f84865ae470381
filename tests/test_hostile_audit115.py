"""Hostile audit 115 of helper 110's per-call cost work (issue 17: flat_object with no count of
braces, the chat chunk shortcut reading by subscript, Slot.to_call's made call kept until
Slot.reread drops it) and helper 109's ``unnamed`` trigger (mark_nameless). Each test compares a
fast path with the slow one it stands for: the general parse, the chunk's readers, a call made
anew from every field at every read."""

from __future__ import annotations

import functools
import random
from collections import OrderedDict, defaultdict
from typing import Any

import pytest

from fsm import Reassembler
from fsm.errors import ToolcallFSMError
from fsm.jsontext import flat_object, parse_general, parse_strict
from fsm.wire.decoders.openai_chat import OpenAIChatDecoder
from tests.helpers import chunk, shortcut_by_readers, tc
from tests.test_chat_shortcut import _decided

# --- flat_object, no count of braces --------------------------------------------------------------

_STRINGS = ['"a"', '"{"', '"}"', '":"', '"\\""', '"\\\\"', '"\\u003a"', '"\\u007b"', '"\\ud800"', '"\ud800"', '""']
_STRINGS += ['"a:b{c}"', '"\\u005b"', '"é"']
_NUMBERS = ["0", "-0", "1.5", "1e400", "-1e400", "1e-400", "9" * 30, "9" * 5000, "0.1" + "0" * 40 + "1"]
_NUMBERS += ["NaN", "Infinity", "-Infinity", "01", "1.", "2.5e308", "1.7976931348623157e308"]
_LITERALS = ["true", "false", "null", "nul"]
_SPACE = ["", "", "", " ", "\n", "\t", "\u00a0"]
_KEYS = ['"a"', '"b"', '"a"', '""', '":"', '"{"', '"\\u0061"', '"a:"']


def _value(rng: random.Random, depth: int) -> str:
    roll = rng.random()
    if depth < 3 and roll < 0.12:
        return _object(rng, depth + 1)
    if depth < 3 and roll < 0.2:
        return "[" + ",".join(_value(rng, depth + 1) for _ in range(rng.randrange(3))) + "]"
    return rng.choice(_STRINGS if roll < 0.5 else _NUMBERS if roll < 0.8 else _LITERALS)


def _object(rng: random.Random, depth: int = 0) -> str:
    members = [
        f"{rng.choice(_SPACE)}{rng.choice(_KEYS)}{rng.choice(_SPACE)}:{rng.choice(_SPACE)}{_value(rng, depth)}"
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3, 4]))
    ]
    return "{" + ",".join(members) + rng.choice(_SPACE) + "}"


def _mutated(rng: random.Random, text: str) -> str:
    for _ in range(rng.randrange(3)):
        at = rng.randrange(len(text) + 1)
        text = rng.choice(
            [text[:at] + rng.choice('{}[]:,"\\ ') + text[at:], text[:at] + text[at + 1 :], text[:at], " " + text]
        )
    return text


def _outcome(read: Any, text: str) -> tuple[str, ...]:
    try:
        value = read(text)
    except Exception as exc:  # the same error, type and words, is the same decision
        return ("raised", type(exc).__name__, str(exc))
    return ("read", repr(value), repr([type(v) for v in value[0].values()]) if type(value[0]) is dict else "")


def test_the_flat_object_reading_decides_hostile_texts_as_the_general_parse() -> None:
    """Objects nested in every position (empty ones too), strings holding braces, colons, quotes,
    escapes and surrogate halves, keys given twice, numbers past a float or an int's digits, NaN and
    the infinities, whitespace around and inside, and such texts cut or run on: what flat_object
    takes is what parse_general gives (value and the types of its values, no key twice), and
    parse_strict decides every text as parse_general. (The audit ran 100,000 such texts.)"""
    rng = random.Random(115)
    took = 0
    for _ in range(20_000):
        text = _object(rng)
        if rng.random() < 0.35:
            text = _mutated(rng, text)
        general = _outcome(parse_general, text)
        flat = flat_object(text)
        if flat is not None:
            took += 1
            assert general == ("read", repr((flat, [])), repr([type(v) for v in flat.values()])), text
        assert _outcome(parse_strict, text) == general, text
    assert took > 3000, took


@pytest.mark.parametrize(
    "text",
    ['{"a": {}}', '{"a": {}, "b": 1e400}', '{"a": 1e400, "b": {}}', '{"a": {"b": 1}}', '{"a": {"a": 1}}', '{"{": "}"}'],
)
def test_an_object_among_a_flat_texts_values_is_left_to_the_general_parse(text: str) -> None:
    # An empty object beside an infinity: isdisjoint may stop at either first; both mean not flat.
    assert flat_object(text) is None or flat_object(text) == parse_general(text)[0]
    assert parse_strict(text) == parse_general(text) or "1e400" in text


# --- the chat chunk shortcut, read by subscript ---------------------------------------------------


class _Dict(dict):  # type: ignore[type-arg]
    pass


_HOSTILE_CHOICES: list[Any] = [
    None, {}, {"delta": {"content": "a"}}, "x", [], [None], [[]], [{}], [{"delta": None}], [{"index": 0}],
    [{"delta": []}], [{"delta": "x"}], [{"delta": {}}], [{"delta": {"content": None}}],
    [_Dict(delta={"content": "a"})], [{"delta": _Dict(content="a")}], [defaultdict(dict, delta={"content": "a"})],
    [{"delta": defaultdict(list, content="a")}], [OrderedDict(delta={"content": "a"})],
    [{"delta": {"content": "a"}}] * 2,
    [{"delta": {"tool_calls": None}}], [{"delta": {"tool_calls": {}}}], [{"delta": {"tool_calls": [None]}}],
    [{"delta": {"tool_calls": [{"index": 0, "function": None}]}}], [{"index": None, "delta": {"content": "b"}}],
    [{"finish_reason": None, "delta": {"content": "b"}}], [{"delta": {"tool_calls": [tc(0, "a", "f", "{}")]}}],
]  # fmt: skip


@pytest.mark.parametrize("choices", _HOSTILE_CHOICES, ids=range(len(_HOSTILE_CHOICES)))
@pytest.mark.parametrize("beside", [{}, {"usage": None}, {"error": None}, {"usage": {}}])
def test_the_chunk_shortcut_decides_hostile_choices_as_its_readers(choices: Any, beside: dict[str, Any]) -> None:
    """choices of every wrong type, empty, a dict; a choice or delta missing, None, a list, a
    subclass of dict (defaultdict: a subscript would make the key it lacks): decided as the readers
    decide it, and nothing added to what was fed."""
    for payload in ({"choices": choices, **beside}, {**beside}, {"delta": {"content": "a"}, **beside}):
        before = repr(payload)
        assert _decided(OpenAIChatDecoder.shortcut, payload) == _decided(shortcut_by_readers, payload), payload
        assert repr(payload) == before


@pytest.mark.parametrize("strict", [False, True], ids=["lax", "strict"])
@pytest.mark.parametrize("choices", _HOSTILE_CHOICES, ids=range(len(_HOSTILE_CHOICES)))
def test_a_hostile_chunk_gives_the_same_stream_fed_or_read_as_bytes(choices: Any, strict: bool) -> None:
    """Fed as a dict (the shortcut first) and as the wire's bytes (JSON: no subclass survives), a
    stream holding the chunk reads alike; only fsm's own errors escape."""
    import json

    events = [chunk(tc(0, "c", "g", '{"x": 1}')), {"choices": choices}, chunk(finish="tool_calls")]
    wire = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"

    def read(fed: bool) -> Any:
        r = Reassembler("openai-chat", strict=strict)
        try:
            for event in events if fed else [wire]:
                r.feed(event) if fed else r.feed_bytes(event)  # type: ignore[arg-type]
        except ToolcallFSMError as exc:
            return type(exc).__name__, str(exc)
        result = r.close()
        return result.calls, [(d.code, d.message) for d in result.diagnostics]

    assert read(True) == read(False)


# --- the close's reading of calls with no server call ----------------------------------------------

_SEARCH = {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"query": "q"}}


def _added(at: int, call_id: str | None, name: str) -> dict[str, Any]:
    item = {"type": "function_call", "name": name, "arguments": ""} | ({"call_id": call_id} if call_id else {})
    return {"type": "response.output_item.added", "output_index": at, "item": item}


@pytest.mark.parametrize("strict", [False, True], ids=["lax", "strict"])
def test_a_call_that_failed_to_open_leaves_server_calls_apart(strict: bool) -> None:
    """A call whose opening raised in strict mode (its id already in use) was counted as opened
    but never held: close() took the client count's match with the calls held for "no server
    call", and listed the web search among the client calls (found by the audit's differential
    of fuzzed Responses streams against b839522)."""
    events = [
        {"type": "response.output_item.done", "output_index": 0, "item": _SEARCH},
        _added(1, "c", "f"),
        _added(2, "c", "g"),
        {"type": "response.completed", "response": {}},
    ]
    r = Reassembler("openai-responses", strict=strict)
    try:
        for event in events:
            r.feed(event)
    except ToolcallFSMError:
        assert strict
    result = r.close()
    assert [(c.id, c.type) for c in result.server_tool_calls] == [("ws_1", "web_search_call")]
    assert [c.type for c in result.calls] == ["function"] * (1 if strict else 2)


# --- nameless calls of every wire, and calls kept made after their end ----------------------------

_NAME_KEYS = frozenset({"name", "toolName", "tool_name"})


def _without_names(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        return {k: _without_names(v, rng) for k, v in value.items() if k not in _NAME_KEYS or rng.random() < 0.3}
    if isinstance(value, list):
        return [_without_names(v, rng) for v in value]
    return value


@functools.cache
def _nameless_streams() -> list[tuple[str, list[Any]]]:
    """Fuzzed streams of every shape with names taken off (most), some events again later (late
    metadata, an item done again), a name-bearing event moved past the finish, or cut short."""
    from fsm.harness.fuzz import SHAPES
    from fsm.harness.fuzz.run import sample_vectors

    rng = random.Random(1151)
    streams: list[tuple[str, list[Any]]] = []
    for shape in SHAPES:
        for vector in sample_vectors(shape, 25):
            events = _without_names(vector.events, rng)
            if events and rng.random() < 0.5:
                at = rng.randrange(len(events))
                events.insert(rng.randrange(at, len(events) + 1), events[at])
            if events and rng.random() < 0.3:
                events.append(events.pop(rng.randrange(len(events))))
            if events and rng.random() < 0.2:
                events = events[: rng.randrange(len(events))]
            streams.append((vector.shape, events))
    return streams


def _read(shape: str, events: list[Any], strict: bool) -> Any:
    r = Reassembler(shape, strict=strict)
    outputs: list[Any] = []
    try:
        for event in events:
            outputs += r.feed(event)
    except ToolcallFSMError:
        assert strict
    try:
        result = r.close()
    except ToolcallFSMError:  # strict: a violation found while closing, raised once; the result then
        assert strict
        result = r.close()
    return result, outputs + r.drain()


@pytest.mark.parametrize("strict", [False, True], ids=["lax", "strict"])
def test_nameless_calls_of_every_wire_are_reported_once_and_never_complete(strict: bool) -> None:
    from fsm.results import CallStatus

    nameless = 0
    for shape, events in _nameless_streams():
        result, _ = _read(shape, events, strict)
        told = [d.message for d in result.diagnostics if d.code == "missing-name" and "finished without" in d.message]
        for call in (*result.calls, *result.server_tool_calls):
            if call.name is None:
                nameless += 1
                assert call.status is not CallStatus.COMPLETE and call.arguments is None, (shape, call)
                assert [m for m in told if f"call {call.id}:" in m] != [], (shape, call.id)
    assert nameless > 100, nameless


@pytest.mark.parametrize("strict", [False, True], ids=["lax", "strict"])
def test_a_call_kept_made_is_the_call_made_anew_at_every_read(strict: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Slot.to_call's call, kept from its end until Slot.reread drops it: over nameless streams of
    every wire with late metadata (an event again after the call ended, past the finish), the
    result and the outputs are those of a run where every read makes the call anew from every
    field. (The audit ran 26,000 fuzzed streams so, lax and strict, and the captures in 1-, 7-byte
    and whole reads.)"""
    from fsm.engine.registry import Registry
    from fsm.engine.slot import Slot

    streams = _nameless_streams()
    kept = [_read(shape, events, strict) for shape, events in streams]
    real = Slot.to_call

    def anew(slot: Slot) -> Any:
        slot.reread()
        return real(slot)

    def ended_anew(registry: Registry, slot: Slot) -> None:
        slot.reread()  # Registry._ended makes an unmade call in line: to_call makes it anew here
        ended(registry, slot)

    ended = Registry._ended
    monkeypatch.setattr(Slot, "to_call", anew)
    monkeypatch.setattr(Registry, "_ended", ended_anew)
    for (shape, events), (result, outputs) in zip(streams, kept, strict=True):
        again, outputs_again = _read(shape, events, strict)
        assert result == again, shape
        assert outputs == outputs_again, shape
