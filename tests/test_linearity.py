"""Work stays linear in the input: the ledger counts characters scanned, joined and compared and
routing candidates visited. (Speed itself is measured by tools/bench, never in unit tests.)"""

from __future__ import annotations

import json

import pytest

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


def _ordinal_reads(events: list[dict[str, object]], provider: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """How often the calls' order (Slot.ordinal) is read while ``events`` are reassembled: each read
    is a call compared with another, which a list kept in call order costs."""
    from fsm.engine.slot import Slot

    reads = [0]
    held = Slot.__dict__["ordinal"]

    def read(slot: Slot) -> int:
        reads[0] += 1
        return held.__get__(slot)  # type: ignore[no-any-return]

    monkeypatch.setattr(Slot, "ordinal", property(read, held.__set__))
    r = Reassembler(provider, limits=Limits(max_calls=10_000, max_diagnostics_per_code=5))
    for event in events:
        r.feed(event)
    assert len(r.close().calls) == len(events) // (3 if provider == "anthropic" else 1)
    monkeypatch.undo()
    return reads[0]


def _blocks_without_index(n: int) -> list[dict[str, object]]:
    events: list[dict[str, object]] = []
    for k in range(n):
        block = {"type": "tool_use", "id": f"toolu_{k}", "name": "f", "input": {}}
        events += [
            {"type": "content_block_start", "content_block": block},
            {"type": "content_block_delta", "index": k, "delta": {"type": "input_json_delta", "partial_json": "{}"}},
            {"type": "content_block_stop", "index": k},
        ]
    return events


def _calls_at_index_0(n: int) -> list[dict[str, object]]:
    return [chunk(tc(index=0, id=f"c{k}", name="f", args="{}")) for k in range(n)]


def test_many_calls_of_one_text_in_one_lane_are_kept_in_order_without_sorting(monkeypatch: pytest.MonkeyPatch) -> None:
    """The calls holding one text (a resend is looked up among them) were sorted again on each new
    one: quadratic for Ollama's parallel calls all at index 0 with ``{}`` and for Claude tool blocks
    that came without their index (about n*n/2 order reads; 12.5 million for 5000 calls, ~20 s at
    20000 blocks). Now a new call goes last: a constant number of reads per call."""
    for events, provider in ((_blocks_without_index, "anthropic"), (_calls_at_index_0, "openai-chat")):
        small = _ordinal_reads(events(300), provider, monkeypatch)
        large = _ordinal_reads(events(3000), provider, monkeypatch)
        assert large <= 11 * small, (provider, small, large)


def test_a_lanes_first_call_is_digested_once_when_the_lane_gets_its_second() -> None:
    # (fuzz, seed 1202) A long whole call, then another at its index: the first was indexed in the
    # lane as the second came, and again in all its lanes as it ended, its whole text read each
    # time: five passes over it where the fuzzer's bound allows four
    text = json.dumps({"": [["long " * 400]]})
    events = [chunk(tc(index=0, id="", name="A", args=text)), chunk(tc(index=0, id="", name="A", args="{}"))]
    events.append(chunk(finish="tool_calls"))
    r = Reassembler()
    for event in events:
        r.feed(event)
    result = r.close()
    assert [c.arguments for c in result.calls] == [json.loads(text), {}]
    assert r.ledger.work <= 4 * len(text) + 64, (r.ledger.work, len(text))
