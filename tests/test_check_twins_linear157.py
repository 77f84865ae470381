"""Task 157: check walked a run of Claude's messages joined by messages that came empty down and up from
each turn's first call, to find the turn's twins (policy client-and-server-call-one-id): quadratic in the
turns of the run (400 rounds took 13.4x the work of 100 on main). Whether a message is read in the run only
turns from no to yes as check reads the history, so a stretch found once is stepped over by the walks of
the turns after it (:class:`fsm.history.twins.Stretches`). Work is counted, not timed.
"""

from __future__ import annotations

import functools
from typing import Any

from fsm import history
from fsm.history.twins import Stretches
from tests.test_hostile_audit80 import ASK, a, res, srv, use
from tests.test_hostile_audit87 import _steps_taken


def _searched(key: str) -> dict[str, Any]:
    return {"type": "web_search_tool_result", "tool_use_id": key, "content": []}


def _rounds_joined_by_empty_messages(n: int) -> list[dict[str, Any]]:
    """Each round a search, a client call under its id, a message that came empty, and the call's result sent
    in Claude's role (a turn of its own): one run of every round, each turn with a twin in it."""
    conversation = [ASK]
    for i in range(n):
        key = f"x{i}"
        conversation += [a(srv(key, "web_search"), _searched(key), use(key, None)), {"role": "user", "content": ""}]
        conversation.append(a(res(key)))
    return conversation


def test_twins_in_a_run_joined_by_empty_messages_are_found_in_linear_work() -> None:
    found = history.check(_rounds_joined_by_empty_messages(2), "anthropic").findings
    assert [(f.kind.value, f.id, f.message) for f in found] == [
        ("empty-message", "", 3),
        ("empty-message", "", 6),
        ("duplicate-call", "x0", 2),
        ("misplaced-result", "x0", 4),
        ("duplicate-call", "x1", 5),
        ("misplaced-result", "x1", 7),
    ]
    check = functools.partial(history.check, format="anthropic")
    steps = [_steps_taken(functools.partial(check, _rounds_joined_by_empty_messages(n))) for n in (100, 400)]
    assert steps[1] <= 4.5 * steps[0], steps  # 4x the rounds: ~13x when each turn walked the run


def test_stretches_join_where_they_touch_and_are_stepped_over_both_ways() -> None:
    stretches = Stretches()
    stretches.note(5, 7)
    stretches.note(1, 2)
    stretches.note(10, 9)  # none
    assert (stretches.lows, stretches.highs) == ([1, 5], [2, 7])
    assert (stretches.down(6, 6), stretches.up(6, 6), stretches.down(4, 4), stretches.up(4, 4)) == (5, 7, 4, 4)
    assert stretches.down(7, 3) == 3  # a row reaching lower than the stretch is taken
    stretches.note(3, 4)  # touches both: one stretch
    assert (stretches.lows, stretches.highs) == ([1], [7])
    stretches.note(9, 12)
    stretches.note(6, 10)
    assert (stretches.lows, stretches.highs) == ([1], [12])
    assert (stretches.down(12, 12), stretches.up(1, 1)) == (1, 12)
