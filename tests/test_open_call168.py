"""The general routing opens its commonest call (a client function call at a new index under a new
wire id, no name held: a Claude tool block's, an Ollama call's) by Registry._open_new, as the chat
shortcuts do, not through Slot's __init__ (task 168): every stream, of every wire shape, reads as
when _open_call made each such call itself."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from fsm import Limits, Reassembler
from fsm.harness.fuzz.run import sample_vectors
from fsm.harness.fuzz.shapes import CASES
from tests.helpers import replay_traced
from tests.test_conformance import VECTORS, _replay_with_trace, _slot_state
from tests.test_per_call_paths import EDGES, HEADERS, _slot_fields


def block(index: int, **content: Any) -> list[dict[str, Any]]:
    """A Claude content block, started and stopped (a tool block by default)."""
    started = {"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", **content}}
    return [started, {"type": "content_block_stop", "index": index}]


END = {"type": "message_delta", "delta": {"stop_reason": "tool_use"}}
TEXT = {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"x": 1}'}}
ANTHROPIC: dict[str, list[dict[str, Any]]] = {
    "two tool blocks": [*block(0, id="a", name="f")[:1], TEXT, *block(0)[1:], *block(1, id="a", name="g"), END],
    "a block at an index used before": [*block(0, type="text", text=""), *block(0, id="b", name="f"), END],
    "a server tool beside": [*block(0, type="server_tool_use", id="s", name="w"), *block(1, id="s", name="f"), END],
}
OPTIONS: list[dict[str, Any]] = [{}, {"strict": True}, {"limits": Limits(max_calls=1)}, {"taken": ["a", "b"]}]


class _Held(dict):  # type: ignore[type-arg]
    """No name held, yet truthy: _open_call's general way then runs, as it did for every call."""

    def __bool__(self) -> bool:
        return True


def _tables(registry: Any) -> object:
    """The registry's lanes and wire ids, each with the ordinals of its calls."""

    def ordinals(calls: Any) -> list[int]:
        return [slot.ordinal for slot in (calls if isinstance(calls, list) else [calls])]

    return [(key, ordinals(calls)) for table in (registry._lanes, registry._by_wire_id) for key, calls in table.items()]


def _replays(vectors: list[Any]) -> list[object]:
    out = [_replay_with_trace(v) for v in vectors]
    streams = [("anthropic", events) for events in ANTHROPIC.values()]
    streams += [("openai-chat", events) for events in (*EDGES.values(), *HEADERS.values())]
    for provider, events in streams:
        for options in OPTIONS:
            r = Reassembler(provider, **options)
            out.append(replay_traced(r, lambda r, events=events: (r.feed(event) for event in events)))
            out.append([(_slot_state(slot), slot.id, slot.name, slot.lane) for slot in r.registry.slots])
            out.append(_tables(r.registry))
    return out


def test_the_general_routing_opens_its_commonest_call_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over every vector, fuzzed streams of every shape and the Claude blocks above in every option
    set: the same transitions in order, outputs, calls, rule counts and slots as when _open_call
    makes each call itself (a name it holds, truthy but empty, turns its way to _open_new off); and
    each call it opens by _open_new holds what Slot(...) makes of the same fields."""
    from fsm.engine.registry import Registry
    from fsm.engine.slot import Slot

    real_open, real_new, opened = Registry._open_call, Registry._open_new, [0]

    def checked(self: Registry, index: int, wire_id: str, name: str | None, whole: bool = False) -> Slot:
        slot = real_new(self, index, wire_id, name, whole)
        if sys._getframe(1).f_code is real_open.__code__:  # opened by the general routing
            ledger, start = self.ledger, self._start
            made = Slot(slot.ordinal, index, index, wire_id, slot.id, name, ledger, start, self._initial_json)
            assert _slot_fields(slot) == _slot_fields(made), (index, wire_id, name)
            opened[0] += 1
        return slot

    vectors = [*VECTORS, *(v for shape in CASES for v in sample_vectors(shape, 30))]
    monkeypatch.setattr(Registry, "_open_new", checked)
    routed = _replays(vectors)
    assert opened[0] > 150, opened
    monkeypatch.setattr(Registry, "_open_new", real_new)

    def general(self: Registry, *fields: Any) -> Slot:
        held = self._pending_header
        self._pending_header = held or _Held()
        try:
            return real_open(self, *fields)
        finally:
            if not held:
                self._pending_header = held

    monkeypatch.setattr(Registry, "_open_call", general)
    made = _replays(vectors)
    assert len(routed) == len(made)
    for a, b in zip(routed, made, strict=True):
        assert a == b
