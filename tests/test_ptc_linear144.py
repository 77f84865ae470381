"""Task 144: many of Claude's codes waiting in one long run of assistant messages are checked and repaired
in work linear in the history (policy client-and-server-call-one-id).

What was quadratic: each turn's twins (a client and a server call under one id in one run) were looked
for by walking the whole run and reading every block in it, once a turn, in ``check`` and ``repair``
alike; and repair walked the run again for each code paired after the later runs it waited across.
1,000 codes took 38 s. Now the history's calls are indexed by id once, a run is walked only for a turn
one of whose ids a call of the other kind has, and a row of assistant messages is stepped over at once.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

from fsm import history
from fsm.history import RepairPolicy
from tests.test_hostile_audit80 import ASK, a, res, srv, u, use
from tests.test_hostile_audit87 import _steps_taken


def _searched(key: str) -> dict[str, Any]:
    return {"type": "web_search_tool_result", "tool_use_id": key, "content": []}


def _codes_waiting(n: int) -> list[dict[str, Any]]:
    """The reproducer (a135/quad2.py): each round a search and a code calling a client tool, its result
    sent in the model's role, and the search again; every message the assistant's, so one run."""
    conversation = [ASK]
    for i in range(n):
        conversation += [
            a(srv(f"w{i}", "web_search"), _searched(f"w{i}"), srv(f"s{i}"), use(f"t{i}", f"s{i}")),
            a(res(f"t{i}")),
            a(srv(f"w{i}", "web_search"), _searched(f"w{i}")),
        ]
    return conversation


def _twins_in_each_round(n: int) -> list[dict[str, Any]]:
    """Each round a search and a client call under the search's id: a twin in every turn of the run."""
    conversation = [ASK]
    for i in range(n):
        conversation += [
            a(srv(f"x{i}", "web_search"), _searched(f"x{i}"), srv(f"s{i}"), use(f"t{i}", f"s{i}")),
            a(res(f"t{i}")),
            a(use(f"x{i}", None)),
        ]
    return [*conversation, u(*[res(f"x{i}") for i in range(n)])]


def _checked_and_repaired(conversation: list[dict[str, Any]]) -> None:
    history.check(conversation, "anthropic")
    history.repair(conversation, format="anthropic")


def _kinds(conversation: list[dict[str, Any]]) -> Counter[str]:
    return Counter(found.kind.value for found in history.check(conversation, "anthropic").findings)


def test_many_codes_waiting_in_one_run_are_checked_and_repaired_in_linear_work() -> None:
    assert _kinds(_codes_waiting(30)) == {"misplaced-result": 30, "reused": 30}
    steps = [_steps_taken(functools.partial(_checked_and_repaired, _codes_waiting(n))) for n in (60, 240)]
    assert steps[1] <= 4.5 * steps[0], steps  # 4x the codes: 16x when each turn walked the run


def test_a_twin_in_every_turn_of_one_run_is_found_in_linear_work() -> None:
    assert _kinds(_twins_in_each_round(30))["misplaced-result"] == 30
    fixed, _ = history.repair(_twins_in_each_round(30), format="anthropic")
    assert history.check(fixed, "anthropic").findings == ()
    steps = [_steps_taken(functools.partial(_checked_and_repaired, _twins_in_each_round(n))) for n in (60, 240)]
    assert steps[1] <= 4.5 * steps[0], steps


def test_a_code_paired_late_finds_its_run_parted_where_repair_writes_a_message_after_one() -> None:
    """The reproducer's own history: each round's client result goes in a user message written after the
    round, which parts the rounds. A code paired after the later rounds it waited across took the last
    round's ids for its run's, walking past that message: its search went unrenamed beside the one under
    its id in its own round, and the repaired history failed its own check (``duplicate-call``)."""
    conversation = _codes_waiting(3)
    for policy in (RepairPolicy(), RepairPolicy(dangling="drop-call")):
        fixed, changes = history.repair(conversation, policy, format="anthropic")
        assert history.check(fixed, "anthropic").findings == ()
        assert history.repair(fixed, policy, format="anthropic") == (fixed, [])
        assert [(c.message, c.id) for c in changes if c.kind == "renamed-call"] == [(2, "w0"), (5, "w1"), (8, "w2")]
        assert [[b["id"] for b in m["content"] if b["type"] == "server_tool_use"] for m in fixed[1::2]] == [
            [f"w{i}_d2", f"s{i}", f"w{i}"] for i in range(3)
        ]
