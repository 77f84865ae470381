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
from tests.test_hostile_audit80 import ASK, a, ran, res, srv, u, use

POLICIES = (RepairPolicy(), RepairPolicy(dangling="drop-call"))


def _left(conversation: list[dict[str, Any]], policy: RepairPolicy) -> set[tuple[str, str]]:
    """What the check still rejects in repair's output, but the calls repair says it kept."""
    fixed, changes = history.repair(conversation, policy, format="anthropic")
    kept = {(c.kind.removeprefix("kept-"), c.id) for c in changes if c.kind.startswith("kept-")}
    left = {(f.kind.value, f.id) for f in history.check(fixed, "anthropic").findings if f.kind in REJECTED}
    assert history.repair(fixed, policy, format="anthropic")[0] == fixed
    return left - kept


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
    conversation = TAKES_THE_CODES_ID[name]
    assert _left(conversation, policy) == set()
    fixed, _ = history.repair(conversation, policy, format="anthropic")
    code = conversation[1]["content"][0]["id"]
    # first in the turn that ends the wait, before the call taking its id
    assert fixed[3]["content"][0] == ran(code)
    assert [b.get("id") for b in fixed[3]["content"][1:]][-1] == code
