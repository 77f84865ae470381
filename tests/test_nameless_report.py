"""A call that finished without a name (diagnostic missing-name) is decided by the slot spec: the
``unnamed`` trigger, fired once right after whichever trigger finished it, runs ``mark_nameless``
from either terminal state, in either executor (the compiled table; the transitions machine in
strict mode). A named call fires nothing more: its end stays the hot path it was."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from fsm import Reassembler
from fsm.engine import machine as machine_module
from fsm.engine.roles import action
from fsm.engine.slot import Slot
from fsm.errors import RemoteProtocolError
from fsm.results import CallStatus
from tests.helpers import chunk, tc

INVALID, TRUNCATED = CallStatus.INVALID, CallStatus.TRUNCATED
NAMELESS = {"index": 0, "id": "a", "type": "function"}

# How a nameless call can finish, and the status it is reported with.
FINISHES: dict[str, tuple[list[dict[str, Any]], CallStatus]] = {
    "a closed value's end": (
        [chunk({**NAMELESS, "function": {"arguments": '{"i": 0}'}}), chunk(finish="stop")],
        INVALID,
    ),
    "a closed value cut": (
        [chunk({**NAMELESS, "function": {"arguments": '{"i": 0}'}}), chunk(finish="length")],
        INVALID,
    ),
    "no text at its end ({})": ([chunk(NAMELESS), chunk(tc(0, args=" ")), chunk(finish="tool_calls")], INVALID),
    "JSON that never closed": (
        [chunk({**NAMELESS, "function": {"arguments": '{"i": '}}), chunk(finish="stop")],
        INVALID,
    ),
    "cut mid-value": ([chunk({**NAMELESS, "function": {"arguments": '{"i": '}}), chunk(finish="length")], TRUNCATED),
}


def _finish(events: list[dict[str, Any]], *, strict: bool) -> tuple[tuple[Any, ...], list[str], list[str]]:
    taken: list[str] = []
    real = Slot.covered

    def traced(slot: Slot, label: str) -> None:
        taken.append(label)
        real(slot, label)

    Slot.covered = traced  # type: ignore[method-assign]
    try:
        r = Reassembler("openai-chat", strict=strict)
        try:
            for event in events:
                r.feed(event)
            result = r.close()
        except RemoteProtocolError as exc:
            assert str(exc).startswith("missing-name") or "missing-name" in [d.code for d in r.ledger.diagnostics]
            result = r.close()
    finally:
        Slot.covered = real  # type: ignore[method-assign]
    return result.calls, [d.code for d in result.diagnostics], [t for t in taken if "unnamed" in t]


@pytest.mark.parametrize("strict", [False, True], ids=["lax", "strict"])
@pytest.mark.parametrize("how", list(FINISHES))
def test_a_nameless_call_is_reported_by_the_spec_however_it_finished(how: str, strict: bool) -> None:
    events, status = FINISHES[how]
    (call,), codes, reports = _finish(events, strict=strict)
    assert call.name is None and call.status == status and call.arguments is None
    assert call.arguments_json is not None  # its raw text kept
    assert codes.count("missing-name") == 1
    end = "truncated" if status is TRUNCATED else "flushed"
    assert reports == [f"{end}--unnamed->{end}"]


@pytest.mark.parametrize("strict", [False, True], ids=["lax", "strict"])
def test_a_named_call_fires_no_unnamed(strict: bool) -> None:
    events = [chunk(tc(0, "a", "f", '{"i": 0}')), chunk(tc(1, "b", "g", '{"i": ')), chunk(finish="length")]
    calls, _, reports = _finish(events, strict=strict)
    assert [c.status for c in calls] == [CallStatus.COMPLETE, TRUNCATED]
    assert reports == []


@pytest.fixture
def action_does_nothing(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The spec's mark_nameless, made to do nothing: the machines built while it is in place run
    the patched action (the table takes its actions when built, so it is built anew)."""

    @action
    def mark_nameless(slot: Slot, text: str) -> None:
        return None

    monkeypatch.setattr(Slot, "mark_nameless", mark_nameless)
    machine_module._slot_machine.cache_clear()
    yield
    monkeypatch.undo()
    machine_module._slot_machine.cache_clear()


@pytest.mark.usefixtures("action_does_nothing")
@pytest.mark.parametrize("strict", [False, True], ids=["lax", "strict"])
def test_the_spec_not_the_registry_decides(strict: bool) -> None:
    # With the spec's action doing nothing, a nameless call goes through as complete, unreported:
    # nothing but the spec's transition makes it invalid.
    events, _ = FINISHES["a closed value's end"]
    (call,), codes, reports = _finish(events, strict=strict)
    assert call.status is CallStatus.COMPLETE and call.arguments == {"i": 0} and "missing-name" not in codes
    assert reports == ["flushed--unnamed->flushed"]


def test_strict_mode_fires_unnamed_on_the_transitions_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    event = machine_module.slot_machine(reference=True).machine.engine.events["unnamed"]
    seen: list[str] = []
    real = event.trigger

    def traced(model: Slot, *args: object) -> bool:
        seen.append(model.state)
        return bool(real(model, *args))

    monkeypatch.setattr(event, "trigger", traced)
    (call,), _, _ = _finish(FINISHES["a closed value cut"][0], strict=True)
    assert seen == ["flushed"] and call.status is INVALID
