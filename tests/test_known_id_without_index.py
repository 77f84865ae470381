"""A call opened without an index under an id already known sits in the lane of the call that first
had the id. It must not also join another index lane: text sent later at that other index belongs to
the call there (or to a new one), never to this call.

Until 9a697e0 a call in an index lane took a second lane named ``("index", position)``, its position
within the event read as an index (the rename meant for id lanes left ``index`` as it was): a client
call opened so took text sent at another index. Main stopped that for client calls when a client
call's lane became its index itself; these tests hold it, and hold server calls to the same rule.
"""

from __future__ import annotations

from typing import Any

from fsm import CallStatus, Reassembler
from fsm.events import ArgumentsFragment, CallEnd, CallRef, CallSeen, StreamEnd
from tests.helpers import chunk, run, tc


def _summary(calls: Any) -> list[tuple[str, str | None, str | None, str]]:
    return [(c.id, c.name, c.arguments_json, c.status.value) for c in calls]


def test_text_at_an_index_goes_to_that_index_not_to_a_call_opened_at_that_position_by_id() -> None:
    # Event 2: "x" (known at index 0) comes back without an index, at position 1 of its event, with
    # new text: a call of its own. Text then sent at index 1 continues the call open there.
    result = run(
        [
            chunk(tc(index=0, id="x", name="f", args='{"a":1}')),
            chunk(tc(index=1, id="y", name="g", args='{"c":'), tc(id="x", args='{"b":2}')),
            chunk(tc(index=1, args="3}")),
            chunk(finish="tool_calls"),
        ]
    )
    assert _summary(result.calls) == [
        ("x", "f", '{"a":1}', "complete"),
        ("y", "g", '{"c":3}', "complete"),
        ("x_d2", None, '{"b":2}', "invalid"),  # nothing named it: kept with its text, not run (missing-name)
    ]


def _anthropic(kind: str, *, server_at_zero: bool) -> list[dict[str, Any]]:
    def block(index: int | None, call_id: str) -> dict[str, Any]:
        event: dict[str, Any] = {
            "type": "content_block_start",
            "content_block": {"type": kind, "id": call_id, "name": "web_search", "input": {}},
        }
        if index is not None:
            event["index"] = index
        return event

    def delta(index: int, text: str) -> dict[str, Any]:
        body = {"type": "input_json_delta", "partial_json": text}
        return {"type": "content_block_delta", "index": index, "delta": body}

    events = [
        {"type": "message_start", "message": {"id": "m", "content": []}},
        block(2, "s1"),
        delta(2, '{"q":"a"}'),
        {"type": "content_block_stop", "index": 2},
        block(None, "s1"),  # no index: routed by its id, to the lane of the call at index 2
        delta(3, '{"q":'),  # an index no block opened: the block without one
    ]
    if server_at_zero:
        events.append(block(0, "s9"))
    events += [
        delta(0, '{"z":1}'),
        delta(3, '"b"}'),
        {"type": "content_block_stop", "index": 3},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]
    return events


def test_anthropic_block_without_index_keeps_its_text_apart_from_index_zero() -> None:
    r = Reassembler("anthropic")
    for event in _anthropic("tool_use", server_at_zero=False):
        r.feed(event)
    result = r.close()
    assert _summary(result.calls) == [
        ("s1", "web_search", '{"q":"a"}', "complete"),
        ("s1_d2", "web_search", '{"q":"b"}', "complete"),
        ("call_2", None, '{"z":1}', "invalid"),  # no block named it: kept with its text, not run (missing-name)
    ]


def test_anthropic_server_block_without_index_is_not_in_the_lane_of_index_zero() -> None:
    r = Reassembler("anthropic")
    for event in _anthropic("server_tool_use", server_at_zero=True):
        r.feed(event)
    result = r.close()
    assert _summary(result.server_tool_calls) == [
        ("s1", "web_search", '{"q":"a"}', "complete"),
        ("s1_d2", "web_search", '{"q":"b"}', "complete"),
        ("s9", "web_search", '{"z":1}', "complete"),
    ]
    # The server call at index 0 found its lane empty: nothing there to reuse.
    assert r.ledger.rules["index-reuse"] == 0


def test_server_text_at_an_index_is_not_taken_by_a_server_call_opened_by_id_elsewhere() -> None:
    r = Reassembler("anthropic")
    for event in [
        CallSeen(CallRef(index=2, id="s1", name="web", server=True)),
        ArgumentsFragment(CallRef(index=2, server=True), '{"q":"a"}'),
        CallEnd(CallRef(index=2, server=True)),
        ArgumentsFragment(CallRef(id="s1", server=True), '{"q":'),  # a second call under "s1", no index
        ArgumentsFragment(CallRef(index=0, server=True), '{"z":1}'),  # index 0: not that call
        ArgumentsFragment(CallRef(id="s1", server=True), '"b"}'),
        StreamEnd("tool_calls"),
    ]:
        r.feed(event)
    calls = r.close().server_tool_calls
    # The two calls no sighting named are kept apart with their text, and invalid (missing-name).
    assert [(c.arguments_json, c.status) for c in calls] == [
        ('{"q":"a"}', CallStatus.COMPLETE),
        ('{"q":"b"}', CallStatus.INVALID),
        ('{"z":1}', CallStatus.INVALID),
    ]
