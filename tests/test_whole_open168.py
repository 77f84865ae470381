"""A whole call's chunk opens its call without first writing the state and text fields that
Slot.store_whole writes next (Registry._open_new's ``whole``, task 168): every call it stores
whole, and every one it refuses (Registry._no_text then), holds and shows what writing those
fields twice made of it."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import Limits, Reassembler
from fsm.harness.fuzz.run import sample_vectors
from tests.helpers import chunk, replay_traced, tc
from tests.test_conformance import VECTORS, _replay_with_trace, _slot_state
from tests.test_per_call_paths import EDGES, OPTIONS, whole

# Whole calls store_whole refuses (nested, escaped, a surrogate, past a limit, not JSON) beside
# ones it takes, in one stream: the refused call's fields are written after _open_new's.
REFUSED: dict[str, list[dict[str, Any]]] = {
    "nested, then flat": [whole(0, "a", "f", '{"a": {"b": 1}}'), whole(1, "b", "f", '{"c": 2}'), chunk(finish="stop")],
    "escaped": [whole(0, "a", "f", '{"a": "\\n"}'), whole(1, "b", "f", "{}"), chunk(finish="tool_calls")],
    "a list": [whole(0, "a", "f", '{"a": [1, 2]}'), chunk(tc(0, args="")), chunk(finish="tool_calls")],
    "a surrogate": [whole(0, "a", "f", '{"s": "\ud83d"}'), whole(1, "b", "f", '{"s": "\ude42"}'), chunk(finish="stop")],
    "long": [whole(0, "a", "f", '{"q": "' + "x" * 200 + '"}'), whole(1, "b", "f", '{"q": 1}'), chunk(finish="stop")],
    "then its fragments": [whole(0, "a", "f", '{"a": {'), chunk(tc(0, args='"b": 1}}')), chunk(finish="stop")],
    "whole, then a header": [whole(0, "a", "f", '{"a": 1}'), chunk(tc(1, "b", "g", "")), chunk(finish="stop")],
}
LIMITS = [{"limits": Limits(max_argument_chars=60)}, {"limits": Limits(max_stream_argument_bytes=40)}]


def _replays(vectors: list[Any]) -> list[object]:
    out = [_replay_with_trace(v) for v in vectors]
    for events in (*EDGES.values(), *REFUSED.values()):
        for options in (*OPTIONS, *LIMITS):
            r = Reassembler("openai-chat", **options)
            out.append(replay_traced(r, lambda r, events=events: (r.feed(event) for event in events)))
            out.append([(_slot_state(slot), slot._text, slot.arguments) for slot in r.registry.slots])
    return out


def test_a_whole_call_opens_as_when_its_fields_were_written_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over every vector, fuzzed OpenAI chat streams and the whole calls above in every option
    set: the same transitions in order, outputs, calls, rule counts and slots (state, scan, text,
    how much went out) as when _open_new writes a call with no text first, whatever ``whole`` says."""
    from fsm.engine.registry import Registry
    from fsm.engine.slot import Slot

    real, store, asked = Registry._open_new, Slot.store_whole, {True: 0, False: 0}

    def counted(slot: Slot, text: str, label: str, dest: str, closed: Any) -> bool:
        took = store(slot, text, label, dest, closed)
        asked[took] += 1
        return took

    vectors = [*VECTORS, *sample_vectors("openai-chat", 100)]
    monkeypatch.setattr(Slot, "store_whole", counted)
    once = _replays(vectors)
    assert asked[True] > 200 and asked[False] > 30, asked  # stored whole, and refused (then _no_text)
    monkeypatch.setattr(
        Registry, "_open_new", lambda self, index, wire_id, name, whole=False: real(self, index, wire_id, name)
    )
    twice = _replays(vectors)
    assert len(once) == len(twice)
    for a, b in zip(once, twice, strict=True):
        assert a == b


def test_a_whole_call_refused_has_the_fields_of_a_call_with_no_text() -> None:
    """Refused by store_whole, a whole call's text goes the general way from the fields a call
    opened with no text holds (Registry._no_text): here a nested value, stored and parsed."""
    r = Reassembler("openai-chat")
    r.feed(whole(0, "a", "f", '{"a": {"b": 1}}'))
    slot = r.registry.slots[0]
    assert slot.state == "value_closed" and bytes(slot._buf) == b'{"a": {"b": 1}}'
    r.feed(chunk(finish="tool_calls"))
    assert r.close().calls[0].arguments == {"a": {"b": 1}}
