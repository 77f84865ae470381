"""Work stays linear in hostile megabyte input on paths where it grew with the square of a count:
many Gemini code parts under one id, many calls renamed from one long id, a built-in call's action
holding a huge value its tool cannot take. Work is counted (the ledger's count of characters and
routing candidates visited, or the steps an id search takes), or, where nothing counts it, compared
loosely at 1x and 8x the input."""

from __future__ import annotations

from typing import Any

import pytest

import fsm


def code_parts(n: int, wire_id: str | None, *, resent: int = 0) -> list[dict[str, Any]]:
    """n Gemini events of one ``executableCode`` part each (``wire_id`` on every part, or none), a
    different code of ~250 characters in each, then the last event again ``resent`` times."""
    events = []
    for k in range(n):
        part: dict[str, Any] = {"language": "PYTHON", "code": f"print({k})  # " + "x" * 240}
        if wire_id is not None:
            part["id"] = wire_id
        events.append({"candidates": [{"content": {"role": "model", "parts": [{"executableCode": part}]}}]})
    return events + [events[-1]] * resent


def work_per_event(events: list[dict[str, Any]]) -> float:
    limits = fsm.Limits(max_calls=10_000, max_diagnostics_per_code=5)
    r = fsm.Reassembler("gemini", limits=limits)
    for event in events:
        r.feed(event)
    result = r.close()
    assert len(result.server_tool_calls) == len(
        {e["candidates"][0]["content"]["parts"][0]["executableCode"]["code"] for e in events}
    )
    return r.ledger.work / len(events)


@pytest.mark.parametrize("wire_id", ["code-1", "", None])
def test_many_code_parts_under_one_id_cost_the_same_per_part(wire_id: str | None) -> None:
    # each part's text was compared with every call held under its id before it opened another:
    # 500 parts cost 259 units of work each, 4,000 parts (1 MB) 2,010 each (5.8 s)
    small, large = work_per_event(code_parts(500, wire_id)), work_per_event(code_parts(4_000, wire_id))
    assert large <= small * 1.25, (small, large)


def finished_reads_per_event(events: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> float:
    """How often a call is asked whether it has finished, per event: each ask is a call visited."""
    from fsm.engine.slot import Slot

    reads = [0]
    held = Slot.__dict__["finished"]

    def read(slot: Slot) -> bool:
        reads[0] += 1
        return held.__get__(slot)  # type: ignore[no-any-return]

    monkeypatch.setattr(Slot, "finished", property(read))
    work_per_event(events)
    monkeypatch.undo()
    return reads[0] / len(events)


def test_a_code_part_resent_after_many_under_one_id_costs_the_same_per_resend(monkeypatch: pytest.MonkeyPatch) -> None:
    # a resent part (the same part again: a resend of the call it opened) was compared with every
    # call under the id, and its end then looked through all of them for one still open: 4,000
    # parts each resent cost 3,127 units of work and 4,000 such looks per event, 500 cost 502 and 500
    small, large = (code_parts(n, "code-1", resent=n) for n in (500, 4_000))
    assert work_per_event(large) <= work_per_event(small) * 1.25
    small_reads = finished_reads_per_event(small, monkeypatch)
    large_reads = finished_reads_per_event(large, monkeypatch)
    assert large_reads <= small_reads * 1.25, (small_reads, large_reads)
