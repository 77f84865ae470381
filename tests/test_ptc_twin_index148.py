"""Audit 148 of task 144: the index of calls by id (``fsm/history/twins.py``) asked of a call of the other
kind under a turn's id walked every call under that id that repair had dropped, each turn again: a history
where each round's unanswered search (dropped: only the provider gives its result) and the next round's
client call share one id was repaired in quadratic work (8,000 rounds, 2.9 MB: 20 s; 1 s before task 144).
"""

from __future__ import annotations

import functools
from typing import Any

from fsm import history
from fsm.history import RepairPolicy
from tests.test_hostile_audit80 import ASK, a, res, srv, u, use
from tests.test_hostile_audit87 import _steps_taken


def _searches_dropped_under_one_id(n: int) -> list[dict[str, Any]]:
    """Each round a search under ``x`` no result answers, the user's text, then a client call under ``x``."""
    conversation = [ASK]
    for _ in range(n):
        conversation += [a(srv("x", "web_search")), u({"type": "text", "text": "go"}), a(use("x", None)), u(res("x"))]
    return conversation


def _repaired(conversation: list[dict[str, Any]]) -> None:
    history.repair(conversation, RepairPolicy(), format="anthropic")


def test_searches_dropped_under_one_id_are_skipped_once_not_once_a_turn() -> None:
    fixed, changes = history.repair(_searches_dropped_under_one_id(3), format="anthropic")
    assert [(c.kind, c.message) for c in changes if c.kind == "dropped-call"] == [
        ("dropped-call", 2),
        ("dropped-call", 6),
        ("dropped-call", 10),
    ]
    assert {found.kind.value for found in history.check(fixed, "anthropic").findings} == {"reused"}  # answered first
    steps = [_steps_taken(functools.partial(_repaired, _searches_dropped_under_one_id(n))) for n in (200, 800)]
    assert steps[1] <= 4.5 * steps[0], steps  # 4x the rounds: ~16x when each turn walked the dropped ones
