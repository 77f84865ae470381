"""Task 135: what repair left of Claude's programmatic tool calling histories (task 122's fuzzer, audit 125's
random histories of a few ids).

A code's result the user sent goes first in Claude's message that ends the code's wait
(``code-result-after-its-calls``). A turn of Claude's making a client call under the code's own id ends
the wait before it (the check reads the waiting call as over there: an id a call takes again); repair
had counted a call of that turn naming the code as a later round, and put the result after that turn,
where the check found the code's call ``dangling`` and its result a ``duplicate-result``.
"""

from __future__ import annotations

from typing import Any

import pytest

from fsm import history
from fsm.history import REJECTED, RepairPolicy
from tests.test_hostile_audit80 import ASK, TEXT, a, ran, res, srv, u, use
from tests.test_ptc_fuzz122 import web

POLICIES = (RepairPolicy(), RepairPolicy(dangling="drop-call"))


def _left(conversation: list[dict[str, Any]], policy: RepairPolicy) -> set[tuple[str, str]]:
    """What the check still rejects in repair's output, but the calls repair says it kept."""
    fixed, changes = history.repair(conversation, policy, format="anthropic")
    kept = {(c.kind.removeprefix("kept-"), c.id) for c in changes if c.kind.startswith("kept-")}
    left = {(f.kind.value, f.id) for f in history.check(fixed, "anthropic").findings if f.kind in REJECTED}
    assert history.repair(fixed, policy, format="anthropic")[0] == fixed
    return {(kind, key) for kind, key in left - kept if (kind, None) not in kept}  # (kept-results-beside-text)


def _repaired(conversation: list[dict[str, Any]], policy: RepairPolicy) -> tuple[list[dict[str, Any]], set[Any]]:
    """Repair's output, which the check accepts, and its changes as (kind, id)."""
    assert _left(conversation, policy) == set()
    fixed, changes = history.repair(conversation, policy, format="anthropic")
    return fixed, {(c.kind, c.id) for c in changes}


# -- a turn taking the code's id ends its wait before it ---------------------------------------------

TAKES_THE_CODES_ID = {
    # t2 names s1 (a later round), and the same turn makes a client call under s1
    "beside-a-round": [
        *[ASK, a(srv(), use("t1")), u(res("t1"), ran())],
        *[a(use("t2"), use("s1", None)), u(res("t2"), res("s1"))],
    ],
    # the round's own call takes its code's id (random seed 1143, shrunk)
    "the-round's-own-call": [
        *[ASK, a(srv("s2"), use("t1", "s2")), u(res("t1"), ran("s2"))],
        *[a(use("s2", "s2")), u(res("s2"))],
    ],
}


@pytest.mark.parametrize("name", TAKES_THE_CODES_ID)
@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.dangling)
def test_a_turn_taking_the_codes_id_ends_its_wait(name: str, policy: RepairPolicy) -> None:
    """Before: the code's result went after that turn, where its call was over (dangling, duplicate-result)."""
    code = TAKES_THE_CODES_ID[name][1]["content"][0]["id"]
    fixed, _ = _repaired(TAKES_THE_CODES_ID[name], policy)
    assert fixed[3]["content"][0] == ran(code)  # first in the turn that ends the wait, before the call taking its id
    assert fixed[3]["content"][-1]["id"] == code


# -- a server call paired after later runs, against the runs paired in its own --------------------

MORE = {"type": "text", "text": "more"}
PAIRED_LATE = {
    # s1 waits past t4's result, sent as Claude's: repair moves it after the run, which joins w3's two calls;
    # s1's blocks are paired last, after w6's run too (the shrunk case of tests/test_ptc_fuzz122.py had none)
    "past-a-later-run": [
        *[a(*web("w3"), srv(), use("t4")), a(res("t4")), a(srv("w3", "web_search")), a(web("w3")[1])],
        *[u(MORE), a(*web("w6"))],
    ],
    # task 122's fuzzer, seed 1008 (ptcfuzz.py): the history it found, as it came
    "seed-1008": [
        *[ASK, a(srv(), use("t2")), u(res("t2")), a(ran(), TEXT, *web("w3"), srv(), use("t4")), a(res("t4"))],
        *[a(ran(), TEXT, srv("w3", "web_search")), a(web("w3")[1]), {"role": "user", "content": "more"}],
        *[u(srv("s5"), use("t6", "s5"), use("t7", "s5"))],
        *[u(res("t6"), res("t7")), a(ran("s5"), TEXT, srv("s5"), use("w3", "s5")), u(res("w3"))],
    ],
}


@pytest.mark.parametrize("name", PAIRED_LATE)
@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.dangling)
def test_a_server_call_paired_late_is_renamed_against_its_runs_later_messages(name: str, policy: RepairPolicy) -> None:
    """Before: both w3 calls kept their id in the run repair writes (``duplicate-call`` after repair)."""
    fixed, changes = _repaired(PAIRED_LATE[name], policy)
    assert ("renamed-call", "w3") in changes
    blocks = [b for m in fixed if isinstance(m["content"], list) for b in m["content"]]
    servers = [b["id"] for b in blocks if b["type"] == "server_tool_use"]
    assert servers.count("w3") == 1 and servers.count("w3_d2") == 1
