"""Task 122: a seeded property fuzzer of Claude's programmatic tool calling histories, and what it found.

Histories valid by construction (code execution making client calls across rounds, two codes waiting
at once, web searches, runs split in two assistant messages as after ``pause_turn``, a paused server
call last, ids reused once answered: a finished server call's id by code or by a client call, in the
run its result came in too, an answered client id), then broken (audit 80's moves, plus ids reused at
random, results misplaced, empty user messages). Properties: a valid history has no rejected finding
and nothing to repair; ``check(repair(h))`` finds only what repair says it kept; repair is idempotent;
a ``kept-*`` change names the message its call is in, where check names it; nothing but a typed error
escapes.

What it found, fixed:

A. A client call taking the id of code whose result came earlier in its run (the code waited past
   the client results, its result in Claude's next message, then a call under its id) read as the id
   called again while the code waited: ``dangling`` code, its result an ``orphan`` (repair then dropped
   both). The same reuse by a web search's id, or by code, was accepted (policy reused).
B. ``repair`` under ``drop-call`` joins two assistant runs making a server call under one id once the
   message between goes, renaming the later call; but a server call waiting past client results is
   paired after the runs it waited across, and the later run's ids were forgotten: the join went
   unrenamed (``duplicate-call`` after repair, the fuzzer's seed 7364).

Left, fixed by task 135: results sent in the model's role that repair moves after a run of Claude's
messages join server runs it had not seen as joined (``duplicate-call`` after repair). A code's server
call renamed by such a join left the calls it made naming the old id, which repair then kept as
``call-after-code-result``: fixed by audit 125.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from fsm import history
from fsm.errors import LocalProtocolError
from fsm.history import REJECTED, RepairPolicy
from tests.test_hostile_audit80 import ASK, TEXT, _broken, a, ran, res, srv, u, use

POLICIES = (RepairPolicy(), RepairPolicy(dangling="drop-call"))
KEPT = {
    "kept-unknown-caller": "unknown-caller",
    "kept-call-after-code-result": "call-after-code-result",
    "kept-results-beside-text": "results-beside-text",
}


def web(key: str) -> list[dict[str, Any]]:
    return [srv(key, "web_search"), {"type": "web_search_tool_result", "tool_use_id": key, "content": f"R{key}"}]


def _found(conversation: list[dict[str, Any]]) -> list[tuple[str, int, str]]:
    return [(f.kind.value, f.message, f.id) for f in history.check(conversation, "anthropic").findings]


def _left(conversation: list[dict[str, Any]], policy: RepairPolicy) -> list[tuple[str, int, str]]:
    fixed, _ = history.repair(conversation, policy, format="anthropic")
    return [(f.kind.value, f.message, f.id) for f in history.check(fixed, "anthropic").findings if f.kind in REJECTED]


# -- A: a client call taking a finished code's id in the run its result came in ---------------------

CODE_ID_TAKEN = {
    "in-the-results-message": [
        ASK,
        a(srv(), use("t1")),
        u(res("t1")),
        a(ran(), use("s1", None)),
        u(res("s1")),
        a(TEXT),
    ],
    "in-the-runs-next-message": [ASK, a(srv(), use("t1")), u(res("t1")), a(ran()), a(use("s1", None)), u(res("s1"))],
    "by-a-call-of-new-code": [
        *[ASK, a(srv(), use("t1")), u(res("t1"))],
        *[a(ran(), srv("s2"), use("s1", "s2")), u(res("s1")), a(ran("s2"))],
    ],
}


@pytest.mark.parametrize("name", CODE_ID_TAKEN)
def test_a_client_call_taking_a_finished_codes_id_in_its_run_is_a_reuse(name: str) -> None:
    """Before: dangling s1 at 2, its result an orphan, reused-unanswered; repair dropped both."""
    conversation = CODE_ID_TAKEN[name]
    assert [f for f in _found(conversation) if f[0] != "reused"] == []
    for policy in POLICIES:
        assert history.repair(conversation, policy, format="anthropic") == (conversation, [])


def test_a_client_call_taking_the_id_of_code_still_waiting_is_still_found() -> None:
    """The id called while its code waits (no result before the call): the code is over, dangling."""
    conversation = [ASK, a(srv(), use("t1")), u(res("t1")), a(use("s1", None)), u(res("s1")), a(ran())]
    assert ("dangling", 2, "s1") in _found(conversation)


# -- B: the later run's server ids kept past a waiting call paired late ----------------------------


def test_runs_joined_past_a_waiting_server_call_rename_the_later_call() -> None:
    """w1 waits past t2's result and is paired after w5's run; under drop-call t3 and the orphan's
    message go, joining w5's two runs. Before: the second w5 kept its id (duplicate-call after repair)."""
    conversation = [
        a(srv("w1", "web_search"), use("t2", None)),
        u(res("t2")),
        a(*web("w5"), use("t3", None)),
        u(res("zz")),
        a(srv("w5")),
    ]
    assert _left(conversation, RepairPolicy()) == []
    fixed, changes = history.repair(conversation, RepairPolicy(dangling="drop-call"), format="anthropic")
    assert ("renamed-call", 5, "w5") in {(c.kind, c.message, c.id) for c in changes}
    assert (
        _found(fixed) == [] and history.repair(fixed, RepairPolicy(dangling="drop-call"), format="anthropic")[1] == []
    )


# -- left ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.dangling)
def test_results_moved_after_the_run_join_its_server_calls_renamed(policy: RepairPolicy) -> None:
    """Seed 1008, shrunk: t4's result sent as Claude's goes after the run, joining w3's two calls. s1's
    blocks, its call waiting past t4's result, are paired after the later message's w3: the earlier w3
    is renamed (task 135; before, both kept the id: ``duplicate-call`` after repair)."""
    conversation = [a(*web("w3"), srv(), use("t4")), a(res("t4")), a(srv("w3", "web_search")), a(web("w3")[1])]
    assert _left(conversation, policy) == []
    fixed, changes = history.repair(conversation, policy, format="anthropic")
    assert ("renamed-call", 1, "w3") in {(c.kind, c.message, c.id) for c in changes}
    calls = [b["id"] for m in fixed for b in m["content"] if b["type"] in ("server_tool_use", "tool_use")]
    assert calls == ["w3_d2", "s1", "t4", "w3"]
    assert history.repair(fixed, policy, format="anthropic") == (fixed, [])


def test_a_code_renamed_for_a_join_keeps_its_calls() -> None:
    """Fixed in audit 125 (tests/test_ptc_audit125.py): t2 names w1's new id, ``renamed-caller``."""
    conversation = [ASK, a(*web("w1"), use("t1", None)), u(res("zz")), a(srv("w1"), use("t2", "w1")), u(res("t2"))]
    conversation.append(a(ran("w1")))
    assert _left(conversation, RepairPolicy(dangling="drop-call")) == []


# -- the fuzzer ------------------------------------------------------------------------------------


def valid(rng: random.Random) -> list[dict[str, Any]]:
    """A history the API takes, by construction (README: the pairing rule, code's waits, reused ids)."""
    serial = iter(range(1, 10_000))
    finished: list[str] = []  # answered ids, free to be taken again in a later run
    conversation: list[dict[str, Any]] = [ASK]
    waiting: list[str] = []

    def new_id(prefix: str, used: set[str]) -> str:
        key = rng.choice(finished) if finished and rng.random() < 0.3 else f"{prefix}{next(serial)}"
        key = key if key not in used and key not in waiting else f"{prefix}{next(serial)}"
        used.add(key)
        return key

    turns = rng.randint(1, 6)
    for turn in range(turns):
        blocks: list[dict[str, Any]] = []
        used: set[str] = set()  # the ids of this run (one turn to the API)
        again: list[str] = []  # a code's id its result in this run freed
        if waiting and rng.random() < 0.5:  # another round of calls
            for code in waiting:
                if rng.random() < 0.7 or code == waiting[-1]:
                    blocks += [use(new_id("t", used), code) for _ in range(rng.randint(1, 2))]
        else:
            for code in waiting:
                blocks.append(ran(code))
                used.add(code)
                again += [code] if rng.random() < 0.5 else []
            waiting = []
            blocks += [TEXT] if rng.random() < 0.4 else []
            blocks += web(new_id("w", used)) if rng.random() < 0.3 else []
            for _ in range(2 if rng.random() < 0.15 else 1):
                if rng.random() < 0.6:
                    waiting.append(again.pop() if again else new_id("s", used))
                    blocks += [
                        srv(waiting[-1]),
                        *[use(new_id("t", used), waiting[-1]) for _ in range(rng.randint(1, 2))],
                    ]
            if not waiting and rng.random() < 0.4:
                blocks.append(use(again.pop() if again and rng.random() < 0.5 else new_id("d", used), None))
        blocks = blocks or [TEXT]
        if len(blocks) > 1 and rng.random() < 0.2:  # continued after pause_turn: one run, two messages
            cut = rng.randint(1, len(blocks) - 1)
            conversation += [a(*blocks[:cut]), a(*blocks[cut:])]
        else:
            conversation.append(a(*blocks))
        calls = [b["id"] for b in blocks if b["type"] == "tool_use"]
        finished += [b["id"] for b in blocks if b["type"] == "server_tool_use" and b["id"] not in waiting]
        finished += [b["tool_use_id"] for b in blocks if b["type"] == "code_execution_tool_result"] + calls
        if calls:
            conversation.append(u(*[res(k) for k in calls]))
        elif turn < turns - 1 or rng.random() < 0.5:
            conversation.append({"role": "user", "content": "more"})
    if not waiting and rng.random() < 0.15:  # paused: the server's to run
        conversation.append(a(TEXT, srv(f"w{next(serial)}", "web_search")))
    return conversation


def broken(rng: random.Random, conversation: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Audit 80's moves, then an id taken at random, a result misplaced or an empty user message."""
    out = _broken(rng, conversation)
    ids = [b.get("id") or b.get("tool_use_id") for m in out if isinstance(m["content"], list) for b in m["content"]]
    listed = [at for at, m in enumerate(out) if isinstance(m["content"], list) and m["content"]]
    move = rng.randrange(3)
    if move == 0 and listed:
        block = rng.choice(out[rng.choice(listed)]["content"])
        field = "id" if "id" in block else "tool_use_id" if "tool_use_id" in block else None
        if field:
            block[field] = rng.choice([k for k in ids if k])
    elif move == 1 and len(listed) > 1:
        held = [(at, n) for at in listed for n, b in enumerate(out[at]["content"]) if "tool_use_id" in b]
        if held:
            at, n = rng.choice(held)
            block = out[at]["content"].pop(n)
            to = out[rng.choice(listed)]["content"]
            to.insert(rng.randint(0, len(to)), block)
    else:
        out.insert(rng.randint(1, len(out)), {"role": "user", "content": rng.choice(["", []])})
    return out


def _holds(conversation: list[dict[str, Any]], at: int, key: str, renamed: set[str]) -> bool:
    """Does input message ``at`` (1-based) hold the client call ``key`` (or the one renamed to it)?"""
    ids = {b.get("id") for b in conversation[at - 1]["content"] if isinstance(b, dict) and b.get("type") == "tool_use"}
    return key in ids or any(key.startswith(f"{old}_d") for old in renamed & ids)


def properties(conversation: list[dict[str, Any]], valid: bool) -> None:
    try:
        report = history.check(conversation, "anthropic")
    except LocalProtocolError:  # a message both making calls and answering them: refused, typed
        assert not valid
        return
    assert not valid or not report.rejected, report
    named = {(f.kind.value, f.id, f.message) for f in report.findings}
    for policy in POLICIES:
        fixed, changes = history.repair(conversation, policy, format="anthropic")
        assert not valid or changes == []
        kept = {(KEPT[c.kind], c.id) for c in changes if c.kind in KEPT}
        left = {(f.kind.value, f.id) for f in history.check(fixed, "anthropic").findings if f.kind in REJECTED}
        assert {k for k in left if k not in kept and (k[0], None) not in kept} == set(), changes
        again, more = history.repair(fixed, policy, format="anthropic")
        assert again == fixed and {c.kind for c in more} <= set(KEPT), more
        renamed = {c.id for c in changes if c.kind == "renamed-call" and c.id is not None}
        for c in changes:
            if c.kind in KEPT and c.id is not None:  # said where its call is, where check says it
                assert _holds(conversation, c.message, c.id, renamed), c
                assert all(at == c.message for kind, key, at in named if (kind, key) == (KEPT[c.kind], c.id)) or any(
                    _holds(conversation, at, c.id, renamed) for kind, key, at in named if kind == KEPT[c.kind]
                ), c


@pytest.mark.parametrize("start", range(0, 300, 100))
def test_ptc_histories_valid_and_broken_keep_repairs_promises(start: int) -> None:
    for seed in range(start, start + 100):
        rng = random.Random(seed)
        conversation = valid(rng)
        properties(conversation, True)
        properties(broken(rng, copy.deepcopy(conversation)), False)
