"""Task 158: repair reads the ids the messages hold (policy rename-skips-held-ids) only when a rename
claims a name, and then only up to the turn that claims it; the names it gives are those an eager
read gave. A clean history of 4,000 turns cost ~23% more to repair when every message was read."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import history
from fsm.history import placeholders


def _turn(call_ids: list[str]) -> list[dict[str, Any]]:
    uses = [{"type": "tool_use", "id": i, "name": "f", "input": {}} for i in call_ids]
    results = [{"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in call_ids]
    return [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    read: list[int] = []
    held = placeholders._held

    def counting(fmt: Any, message: Any) -> Any:
        read.append(1)
        return held(fmt, message)

    monkeypatch.setattr(placeholders, "_held", counting)
    return read


def test_a_clean_repair_reads_no_messages_held_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    read = _counted(monkeypatch)
    conversation = [{"role": "user", "content": "go"}, *(m for k in range(50) for m in _turn([f"t{k}"]))]
    assert history.repair(conversation, format="anthropic") == (conversation, [])
    assert read == []


def test_a_rename_reads_up_to_its_turn_and_skips_an_id_held_there(monkeypatch: pytest.MonkeyPatch) -> None:
    """Turn 3 makes two calls under ``x``: the second would be ``x_d2``, which turn 1 holds, so ``x_d3``;
    the ten turns after it are never read."""
    read = _counted(monkeypatch)
    conversation = [{"role": "user", "content": "go"}, *_turn(["x_d2"]), *_turn(["y"]), *_turn(["x", "x"])]
    conversation += [m for k in range(10) for m in _turn([f"t{k}"])]
    fixed, changes = history.repair(conversation, format="anthropic")
    assert [(c.kind, c.id, c.detail.rsplit(" ", 1)[-1]) for c in changes if c.kind == "renamed-call"] == [
        ("renamed-call", "x", "'x_d3'")
    ]
    assert len(read) == 7  # the question and three turns of two messages, none after
    assert history.repair(fixed, format="anthropic") == (fixed, [])
