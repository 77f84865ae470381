"""Work stays linear in the input: the ledger counts characters scanned, joined and compared and
routing candidates visited. (Speed itself is measured by tools/bench, never in unit tests.)"""

from __future__ import annotations

import json

from fsm import Limits, Reassembler
from tests.helpers import chunk, tc


def work_per_event(events: list[dict[str, object]]) -> float:
    r = Reassembler(limits=Limits(max_calls=10_000))
    for event in events:
        r.feed(event)
    r.close()
    return r.ledger.work / len(events)


def gemini_calls(n: int) -> list[dict[str, object]]:
    # Many calls to one tool, no ids, one per event at part 0, each also resent: all in one lane.
    events = []
    for i in range(n):
        event = {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": {"i": i}}}]}}]}
        events += [event, event]
    return events


def test_many_calls_in_one_lane_cost_the_same_per_event() -> None:
    small, large = work_per_event(gemini_calls(50)), work_per_event(gemini_calls(800))
    assert large <= small * 1.25


def test_one_long_argument_in_tiny_fragments_is_scanned_once() -> None:
    text = json.dumps({"body": 'x\\"y{}' * 20_000})
    events = [chunk(tc(index=0, id="a", name="f", args=""))]
    events += [chunk(tc(index=0, args=text[i : i + 3])) for i in range(0, len(text), 3)]
    r = Reassembler()
    for event in events:
        r.feed(event)
    result = r.close()
    assert result.calls[0].arguments_json == text
    assert r.ledger.work <= 3 * len(text)
