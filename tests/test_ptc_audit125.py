"""Audit 125 of task 122's fixes (Claude's programmatic tool calling histories): main and branch read
side by side on seeded histories of a few ids, and by hand around what the fixes touched.

Found, fixed: task 122's guard for a server call paired after the later runs it waited across (its
segment ends before the latest run remembered, so it leaves that run in place) also caught the later
segments of a run whose code's result is paired first: a run of two messages of Claude's (continued
after ``pause_turn``), a web search in the first, the waiting code's result in the second. The code's
segment ends the run and is paired first; the search's, ending before it, was left out of the run, so
a later run joined to it once the message between went kept a second call under the search's id
(``duplicate-call`` after repair, either policy; main renamed it).

Left, fixed by task 135: a server call of a message whose code waited past client results, paired after
the later runs it waited across, was not looked at against the run before it, which a removed message
joins it to: the later call kept its id (main alike).
"""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from fsm import history
from fsm.history import REJECTED, RepairPolicy
from tests.test_hostile_audit80 import ASK, TEXT, a, ran, res, srv, u, use
from tests.test_ptc_fuzz122 import broken, properties, valid, web

POLICIES = (RepairPolicy(), RepairPolicy(dangling="drop-call"))


def _callers(conversation: list[dict[str, Any]]) -> dict[str, str]:
    """Each client call's id, with the code it names."""
    blocks = [b for m in conversation if isinstance(m["content"], list) for b in m["content"]]
    return {b["id"]: b["caller"]["tool_id"] for b in blocks if b.get("caller")}


def _left(conversation: list[dict[str, Any]], policy: RepairPolicy) -> list[tuple[str, int, str]]:
    fixed, _ = history.repair(conversation, policy, format="anthropic")
    return [(f.kind.value, f.message, f.id) for f in history.check(fixed, "anthropic").findings if f.kind in REJECTED]


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.dangling)
def test_a_search_in_the_run_a_waiting_codes_result_ends_joins_the_next_run(policy: RepairPolicy) -> None:
    """s1 waits past t1's result; Claude's next run is two messages, w5's search then s1's result; the
    orphan's message goes, joining the next run making w5. Before: the second w5 kept its id."""
    conversation = [a(srv(), use("t1")), u(res("t1")), a(*web("w5")), a(ran()), u(res("zz")), a(*web("w5"))]
    assert _left(conversation, policy) == []
    fixed, changes = history.repair(conversation, policy, format="anthropic")
    assert ("renamed-call", 6, "w5") in {(c.kind, c.message, c.id) for c in changes}
    assert [b.get("id") for m in fixed for b in m["content"] if b.get("type") == "server_tool_use"] == [
        "s1",
        "w5",
        "w5_d2",
    ]


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.dangling)
def test_a_message_whose_code_waited_joins_the_run_before_it(policy: RepairPolicy) -> None:
    """zz's orphan goes, joining w9's runs; s1's message is paired after w5's (task 135: the later w9 is renamed)."""
    conversation = [a(*web("w9")), u(res("zz")), a(*web("w9"), srv(), use("t2")), u(res("t2"))]
    conversation += [a(*web("w5"), use("t3", None)), u(res("t3")), a(TEXT)]
    assert _left(conversation, policy) == []
    fixed, changes = history.repair(conversation, policy, format="anthropic")
    assert ("renamed-call", 3, "w9") in {(c.kind, c.message, c.id) for c in changes}
    assert [b.get("id") for b in fixed[0]["content"] if b["type"] == "server_tool_use"] == ["w9", "w9_d2", "s1"]


# -- task 122's left D: the calls a renamed code made name its new id --------------------------------

RENAMED_CODE = {
    "second-in-the-run": [a(srv(), ran()), a(srv(), use("t1")), u(res("t1")), a(ran())],
    "second-in-the-message": [a(srv(), ran(), srv(), use("t1")), u(res("t1")), a(ran())],
    "joined-by-a-removed-message": [
        *[ASK, a(*web("s1"), use("t0", None)), u(res("zz"))],
        *[a(srv(), use("t1")), u(res("t1")), a(srv("w2", "web_search"), use("t2")), u(res("t2")), a(ran())],
    ],
}


@pytest.mark.parametrize("name", RENAMED_CODE)
@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.dangling)
def test_the_calls_a_renamed_code_made_name_its_new_id(name: str, policy: RepairPolicy) -> None:
    """Before: the code's call became s1_d2, its calls kept naming s1 (``call-after-code-result``
    after repair, ``kept-call-after-code-result``: the API would tie them to the finished code)."""
    conversation = RENAMED_CODE[name]
    if name == "joined-by-a-removed-message" and policy.dangling != "drop-call":
        return  # t0's placeholder keeps the orphan's message: the runs stay apart
    fixed, changes = history.repair(conversation, policy, format="anthropic")
    assert _left(conversation, policy) == []
    callers = _callers(fixed)
    assert set(callers.values()) == {"s1_d2"}, callers
    assert {(c.kind, c.id) for c in changes} >= {("renamed-call", "s1"), ("renamed-caller", "t1")}
    assert history.repair(fixed, policy, format="anthropic") == (fixed, [])


def test_a_call_after_a_renamed_codes_result_still_names_the_old_id() -> None:
    """A call naming s1 after the renamed code's result is none it made: kept, as before."""
    conversation = [a(srv(), ran()), a(srv(), use("t1")), u(res("t1")), a(ran(), use("t9")), u(res("t9"))]
    fixed, changes = history.repair(conversation, RepairPolicy(), format="anthropic")
    callers = _callers(fixed)
    assert callers == {"t1": "s1_d2", "t9": "s1"}
    assert ("kept-call-after-code-result", "t9") in {(c.kind, c.id) for c in changes}


# -- task 122's A, narrowed: a result frees the id only once no call of it is left waiting ------------


def test_a_client_call_under_an_id_one_of_two_waiting_calls_still_holds_ends_that_wait() -> None:
    """Task 122's fuzzer, seed 2309 (broken): two server calls under s2 wait past client results; the
    next run answers one, then makes a client call s2. The id is not free (the other call waits): that
    call is over, as on main. Before: read as a reuse, repair kept a code check then found dangling."""
    rng = random.Random(2309)
    conversation = valid(rng)
    properties(broken(rng, copy.deepcopy(conversation)), False)
