"""Task 144 (ptcfuzz seed 7247): a server call under a client call's id, later in their run, whose turn
``check`` walks first (a server call's blocks are a turn of their own, whole once its message is read,
while the client call's turn waits on for results sent in the model's role after it).

``check`` named the ``duplicate-call`` (policy client-and-server-call-one-id) at the client call's
message, the earlier one, as the machine says of a call made while its id waits: ``repair`` renames the
later call, the server's. Both name the later one now. (A server call that goes unanswered, its turn paused,
is dropped unrenamed since task 162: it holds no id.) (The same seed's ``moved-misplaced-result`` at
message 6, where ``check`` says ``misplaced-result`` at 5, is no disagreement: two results under the
id, each named where it is: the one at 5 misplaced, the one at 6 a ``duplicate-result``.)
"""

from __future__ import annotations

from typing import Any

import pytest

from fsm import history
from fsm.history import RepairPolicy
from tests.test_hostile_audit80 import ASK, a, ran, res, srv, use


def _found(conversation: list[dict[str, Any]]) -> list[tuple[str, int, str]]:
    return [(f.kind.value, f.message, f.id) for f in history.check(conversation, "anthropic").findings]


@pytest.mark.parametrize(
    "conversation",
    [
        [ASK, a(use("t2", None)), a(res("t2"), srv("t2", "web_search"))],
        [ASK, a(srv("s1"), use("t2", "s1")), a(res("t2")), a(ran("s1"), srv("t2", "web_search"))],
    ],
    ids=["client-call", "code-call"],
)
@pytest.mark.parametrize("policy", [RepairPolicy(), RepairPolicy(dangling="drop-call")], ids=lambda p: p.dangling)
def test_the_duplicate_call_is_named_at_the_later_server_call_which_repair_renames(
    conversation: list[dict[str, Any]], policy: RepairPolicy
) -> None:
    later = len(conversation)
    assert ("duplicate-call", later, "t2") in _found(conversation)
    assert ("duplicate-call", 2, "t2") not in _found(conversation)
    fixed, changes = history.repair(conversation, policy, format="anthropic")
    # The search waits unanswered, paused, and goes last: it was renamed first (needless, task 162), no more.
    assert ("dropped-call", later, "t2") in {(c.kind, c.message, c.id) for c in changes}
    assert [(c.message, c.id) for c in changes if c.kind == "renamed-call"] == []
    assert _found(fixed) == []


def test_the_fuzzers_seed_names_each_result_under_the_id_where_it_is() -> None:
    conversation = [
        ASK,
        a({"type": "text", "text": "so"}, srv("s1"), use("t2", "s1")),
        {"role": "user", "content": []},
        a(use("t3", "s1"), use("t2", "s1")),
        a(res("t3"), res("t2")),
        a(res("t2"), ran("s1"), srv("t2", "web_search")),
    ]
    found = _found(conversation)
    assert [f for f in found if f[0] == "duplicate-call"] == [("duplicate-call", 6, "t2"), ("duplicate-call", 4, "t2")]
    assert ("misplaced-result", 5, "t2") in found and ("duplicate-result", 6, "t2") in found
    fixed, changes = history.repair(conversation, format="anthropic")
    moved = [(c.message, c.id) for c in changes if c.kind == "moved-misplaced-result"]
    assert moved == [(5, "t3"), (5, "t2"), (6, "t2")]
    assert [(c.message, c.id) for c in changes if c.kind == "renamed-call"] == [(4, "t2")]  # 6's goes (task 162)
    assert ("dropped-call", 6, "t2") in {(c.kind, c.message, c.id) for c in changes}
    assert _found(fixed) == []


def test_a_client_call_walked_before_the_earlier_code_message_it_twins_is_the_later_duplicate_call() -> None:
    """The other order: a client call under a search's id after it in their run, left unanswered, is walked
    before the search, whose message's code waits and is paired after the runs it waited across: the
    machine said ``reused-unanswered`` at the search's message, the earlier one. Repair renames the client
    call (or drops it under drop-call, as dangling): ``duplicate-call`` there."""
    search = {"type": "web_search_tool_result", "tool_use_id": "x0", "content": []}
    conversation = [
        ASK,
        a(srv("x0", "web_search"), search, srv("s0"), use("t0", "s0")),
        a(res("t0")),
        a(use("x0", None)),
    ]
    found = _found(conversation)
    assert ("duplicate-call", 4, "x0") in found and ("dangling", 4, "x0") in found
    assert not [f for f in found if f[0] == "reused-unanswered"]
    fixed, changes = history.repair(conversation, format="anthropic")
    assert [(c.message, c.id) for c in changes if c.kind == "renamed-call"] == [(4, "x0")]
    assert _found(fixed) == []
