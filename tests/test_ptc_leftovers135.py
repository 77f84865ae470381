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
MORE = {"type": "text", "text": "more"}


def _left(conversation: list[dict[str, Any]], policy: RepairPolicy) -> set[tuple[str, str]]:
    """What the check still rejects in repair's output, but the calls repair says it kept."""
    fixed, changes = history.repair(conversation, policy, format="anthropic")
    kept = {(c.kind.removeprefix("kept-"), c.id) for c in changes if c.kind.startswith("kept-")}
    left = {(f.kind.value, f.id) for f in history.check(fixed, "anthropic").findings if f.kind in REJECTED}
    assert history.repair(fixed, policy, format="anthropic")[0] == fixed
    return {(kind, key) for kind, key in left - kept if (kind, None) not in kept}  # (kept-results-beside-text)


def _result_first(fixed: list[dict[str, Any]], changes: set[Any]) -> None:
    """A turn taking the code's id ends its wait before it: the code's result goes first in it, before the call
    taking its id (before: after that turn, where its call was over: ``dangling``, ``duplicate-result``)."""
    first, last = fixed[3]["content"][0], fixed[3]["content"][-1]
    assert first["type"] == "code_execution_tool_result" and last["id"] == first["tool_use_id"]


def _earlier_renamed(fixed: list[dict[str, Any]], changes: set[Any]) -> None:
    """A server call paired after later runs is looked at against the runs paired first in its own: one of the
    two w3 calls is renamed (before: both kept the id in the run repair writes, ``duplicate-call``)."""
    assert ("renamed-call", "w3") in changes
    blocks = [b for m in fixed if isinstance(m["content"], list) for b in m["content"]]
    servers = [b["id"] for b in blocks if b["type"] == "server_tool_use"]
    assert servers.count("w3") == 1 and servers.count("w3_d2") == 1


CASES = {
    # t2 names s1 (a later round), and the same turn makes a client call under s1
    "takes-the-codes-id-beside-a-round": (
        [ASK, a(srv(), use("t1")), u(res("t1"), ran()), a(use("t2"), use("s1", None)), u(res("t2"), res("s1"))],
        _result_first,
    ),
    # the round's own call takes its code's id (random seed 1143, shrunk)
    "the-round's-own-call-takes-the-codes-id": (
        [ASK, a(srv("s2"), use("t1", "s2")), u(res("t1"), ran("s2")), a(use("s2", "s2")), u(res("s2"))],
        _result_first,
    ),
    # a round of s1 takes s2's id; a later one names s2 again (said kept): s2's wait ended at the first
    "a-round-of-another-code-takes-its-id": (
        [
            ASK,
            a(srv("s1"), srv("s2"), use("t1", "s2"), use("t9", "s1")),
            u(res("t1"), res("t9"), ran("s2")),
            a(use("s2", "s1")),
            u(res("s2")),
            a(use("t3", "s2")),
            u(res("t3")),
        ],
        _result_first,
    ),
    # s1 waits past t4's result, sent as Claude's: repair moves it after the run, which joins w3's two calls;
    # s1's blocks are paired last, after w6's run too (the shrunk case of tests/test_ptc_fuzz122.py had none)
    "paired-past-a-later-run": (
        [
            a(*web("w3"), srv(), use("t4")),
            a(res("t4")),
            a(srv("w3", "web_search")),
            a(web("w3")[1]),
            u(MORE),
            a(*web("w6")),
        ],
        _earlier_renamed,
    ),
    # task 122's fuzzer, seed 1008 (ptcfuzz.py): the history it found, as it came
    "paired-late-seed-1008": (
        [
            ASK,
            a(srv(), use("t2")),
            u(res("t2")),
            a(ran(), TEXT, *web("w3"), srv(), use("t4")),
            a(res("t4")),
            a(ran(), TEXT, srv("w3", "web_search")),
            a(web("w3")[1]),
            {"role": "user", "content": "more"},
            u(srv("s5"), use("t6", "s5"), use("t7", "s5")),
            u(res("t6"), res("t7")),
            a(ran("s5"), TEXT, srv("s5"), use("w3", "s5")),
            u(res("w3")),
        ],
        _earlier_renamed,
    ),
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.dangling)
def test_repair_leaves_what_the_check_accepts(name: str, policy: RepairPolicy) -> None:
    """Each left case repaired: the check accepts the output, a second repair changes nothing, and the
    result or the call goes where the case's check says."""
    conversation, expected = CASES[name]
    assert _left(conversation, policy) == set()
    fixed, changes = history.repair(conversation, policy, format="anthropic")
    expected(fixed, {(c.kind, c.id) for c in changes})
