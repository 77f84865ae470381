"""Task 152: a rename repair chooses clear of every id the messages up to its turn hold (policy
rename-skips-held-ids), whatever block holds it; the engine's own renames against a stream carrying
``<id>_d2`` itself stay unique and the same every run.

Before: Claude's server blocks beside its client calls are paired as a segment of their own, after the
client turn when their message is the history's last; a client call renamed ``<id>_d2`` there took the
id of a server call of its own message (a hostile fuzzer's seed 206, shrunk), and repair's output failed
its own check (``duplicate-call``) and a second repair renamed again."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from fsm import history
from fsm.history import REJECTED, RepairPolicy
from tests.helpers import chunk, run, tc
from tests.test_hostile_audit80 import ASK, a, srv, use

POLICIES = (RepairPolicy(), RepairPolicy(dangling="drop-call"))


def _ids(conversation: list[dict[str, Any]]) -> list[str]:
    return [b["id"] for m in conversation if isinstance(m["content"], list) for b in m["content"] if "id" in b]


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.dangling)
def test_a_client_call_renamed_beside_a_server_call_of_that_name_takes_the_next_free_id(policy: RepairPolicy) -> None:
    """Code ``s1_d3`` then a client call under ``s1_d3``: the client call is the later, renamed; the
    message's other code holds ``s1_d3_d2``, so it becomes ``s1_d3_d3``."""
    conversation = [ASK, a(srv("s1_d3_d2"), srv("s1_d3"), use("s1_d3", "s1_d3_d2"))]
    fixed, changes = history.repair(conversation, policy, format="anthropic")
    kept = policy.dangling == "placeholder"  # under drop-call the unanswered client call goes, unrenamed
    assert ("renamed-call" if kept else "dropped-call", 2, "s1_d3") in {(c.kind, c.message, c.id) for c in changes}
    calls = _ids(fixed)
    assert ("s1_d3_d3" in calls) is kept and len(calls) == len(set(calls)), calls
    assert [f for f in history.check(fixed, "anthropic").findings if f.kind in REJECTED] == []
    assert history.repair(fixed, policy, format="anthropic") == (fixed, [])


def test_a_rename_skips_an_id_only_a_caller_names() -> None:
    """A code's client call names ``x_d2`` as its caller (a code the history lacks): a second ``x`` in
    the turn must not become ``x_d2``, or the caller would name it."""
    conversation = [
        ASK,
        a(use("x", None), use("x", None), use("t1", "x_d2")),
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": k, "content": "R"} for k in ["x", "x", "t1"]],
        },
    ]
    fixed, changes = history.repair(conversation, format="anthropic")
    assert [c.detail for c in changes if c.kind == "renamed-call"] == ["call 2 under 'x' in its turn is now 'x_d3'"]
    left = [(f.kind.value, f.id) for f in history.check(fixed, "anthropic").findings if f.kind in REJECTED]
    assert left == [("unknown-caller", "t1")]  # as it came, and kept: the caller's to send that code


@pytest.mark.parametrize("interleaved", [False, True])
def test_the_engine_renames_a_reused_wire_id_clear_of_one_the_stream_carries_itself(interleaved: bool) -> None:
    """Every order of four calls under ``a``, ``a_d2``, ``a_d3``: ids unique, each call its own
    arguments, the same ids on a second run (no state kept between runs)."""
    for ids in itertools.product(["a", "a_d2", "a_d3"], repeat=4):
        if interleaved:  # every header first, then the arguments by index
            chunks = [chunk(tc(index=i, id=k, name="f", args="")) for i, k in enumerate(ids)]
            chunks += [chunk(tc(index=i, args=f'{{"i": {i}}}')) for i in range(4)]
        else:
            chunks = [chunk(tc(index=i, id=k, name="f", args=f'{{"i": {i}}}')) for i, k in enumerate(ids)]
        chunks.append(chunk(finish="tool_calls"))
        first, again = run(chunks), run(chunks)
        got = [c.id for c in first.calls]
        assert len(set(got)) == 4 and got == [c.id for c in again.calls], (ids, got)
        assert [c.arguments for c in first.calls] == [{"i": i} for i in range(4)]
        assert got[0] == ids[0]  # the first call keeps its id
