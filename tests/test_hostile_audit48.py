"""Audit 48: Claude's server tool blocks sent in a user message (fsm.history, Anthropic).

A server call (``server_tool_use``, ``mcp_tool_use``) is Claude's: only its own message holds one.
One in a user message was read with the user's message: alone there, check found nothing; beside
a client ``tool_use`` (a ``misplaced-call``) it was read as the model's, and repair said
``moved-misplaced-call`` for it but left it, with its result, in the user's message, where the next
repair read it alone and dropped both (a real result lost on the second pass); and a server call
right after an assistant run had the results meant for it taken by that run, or its run's results
dropped as orphans. The policy server-blocks-are-the-models: a user message holding a server call
is a ``misplaced-call`` as one holding a ``tool_use`` is, read as the model message repair makes of
it, and every server block of it goes there with its calls (``moved-misplaced-call``,
``moved-misplaced-result``). And a client ``tool_result`` under the id of a paused server call (the
history's last message) was read by check as answering it, where repair dropped it as an orphan."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from fsm import history
from fsm.history import REJECTED, RepairPolicy


def srv(key: str, kind: str = "server_tool_use") -> dict[str, Any]:
    return {"type": kind, "id": key, "name": "web_search", "input": {}}


def srv_result(key: str, tag: str, kind: str = "web_search_tool_result") -> dict[str, Any]:
    return {"type": kind, "tool_use_id": key, "content": tag}


def use(key: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": key, "name": "f", "input": {}}


def result(key: str, tag: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": key, "content": tag}


TEXT = {"type": "text", "text": "and?"}
SERVER = ("server_tool_use", "mcp_tool_use")


def _server_block(block: dict[str, Any]) -> bool:
    kind = block.get("type", "")
    return kind in SERVER or (kind.endswith("_tool_result") and kind != "tool_result")


def _tags(messages: list[dict[str, Any]]) -> Counter[str]:
    """The results' own contents (placeholders say why, and are not counted)."""
    return Counter(
        block["content"]
        for message in messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if block["type"].endswith("tool_result") and isinstance(block["content"], str) and block["content"][:1] == "R"
    )


def _sound(messages: list[dict[str, Any]], policy: RepairPolicy | None = None) -> tuple[list[Any], list[Any]]:
    """Repair's promises: a history check accepts, which a second repair leaves as it is; each
    server block in the model's message; each real result kept once, or dropped by a change saying so."""
    fixed, changes = history.repair(messages, policy)
    assert [(f.kind.value, f.id, f.message) for f in history.check(fixed).findings if f.kind in REJECTED] == []
    assert history.repair(fixed, policy) == (fixed, [])
    for message in fixed:
        if isinstance(message["content"], list) and any(_server_block(block) for block in message["content"]):
            assert message["role"] == "assistant", message
    sent, kept = _tags(messages), _tags(fixed)
    assert not kept - sent  # none made up or doubled
    dropped = [change for change in changes if change.kind in ("dropped-orphan", "dropped-duplicate-result")]
    assert sum((sent - kept).values()) == len(dropped), (sent - kept, changes)
    return fixed, changes


@pytest.mark.parametrize("client", [False, True], ids=["alone", "beside a client call"])
def test_a_server_call_and_its_result_in_a_user_message_go_to_the_model(client: bool) -> None:
    # (repro_server_call_in_user) Alone there, check found nothing; beside a client call, repair
    # said moved-misplaced-call for the server call and left it in the user's message.
    sent = [srv("srvtoolu_1"), srv_result("srvtoolu_1", "R-web")] + ([use("toolu_1")] if client else [])
    messages = [{"role": "user", "content": "go"}, {"role": "user", "content": sent}]
    if client:
        messages.append({"role": "user", "content": [result("toolu_1", "R-client")]})
    messages.append({"role": "assistant", "content": "ok"})
    found = {(f.kind.value, f.id) for f in history.check(messages).findings}
    assert {("misplaced-call", "srvtoolu_1"), ("misplaced-result", "srvtoolu_1")} <= found
    fixed, changes = _sound(messages)
    assert fixed[1] == {"role": "assistant", "content": sent}  # in its order: the k-th rule pairs as read
    said = {(change.kind, change.id) for change in changes}
    assert {("moved-misplaced-call", "srvtoolu_1"), ("moved-misplaced-result", "srvtoolu_1")} <= said


def test_a_user_message_of_server_and_client_calls_after_a_server_run_keeps_its_result() -> None:
    # (repro_server_call_user_split) The server call b and its result stayed in a user message after
    # the client's placeholders; check(repair(h)) found the result an orphan, and a second repair dropped it.
    messages = [
        {"role": "assistant", "content": [srv("x"), srv_result("x", "R-x"), use("x")]},
        {"role": "user", "content": [srv("b"), srv_result("b", "R-b"), use("t1")]},
    ]
    fixed, _ = _sound(messages)
    (holder,) = [message for message in fixed if srv_result("b", "R-b") in message["content"]]
    assert holder["role"] == "assistant"
    assert holder["content"].index(srv("b")) < holder["content"].index(srv_result("b", "R-b"))


def test_a_client_result_answers_no_paused_server_call() -> None:
    # (repro_unreported_drop) The server call under b waits in the last message (a paused turn); the
    # client tool_result under b before it was read by check as answering it (misplaced-result),
    # where repair dropped it as an orphan.
    messages = [
        {"role": "user", "content": [use("s")]},
        {"role": "assistant", "content": [result("b", "R5"), srv("b", "mcp_tool_use")]},
    ]
    found = [(f.kind.value, f.id, f.message) for f in history.check(messages).findings if f.id == "b"]
    assert found == [("orphan", "b", 2)]
    _, changes = _sound(messages)
    assert ("dropped-orphan", "b", 2) in {(change.kind, change.id, change.message) for change in changes}


CASES = {
    # Client results beside a server call and its result: the user's answer, then Claude's message.
    "beside the user's results": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [use("toolu_1")]},
        {"role": "user", "content": [result("toolu_1", "R1"), srv("srvtoolu_1"), srv_result("srvtoolu_1", "RS")]},
        {"role": "assistant", "content": "ok"},
    ],
    # A server call in the user's message after a server run, both answered by the assistant message
    # after: both results were dropped as orphans.
    "in a server run": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [srv("srvtoolu_a")]},
        {"role": "user", "content": [srv("srvtoolu_b"), TEXT]},
        {"role": "assistant", "content": [srv_result("srvtoolu_a", "RA"), srv_result("srvtoolu_b", "RB")]},
    ],
    # After a run holding the turn's result sent as the model, before the user's second result.
    "after results sent as the model": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [use("toolu_1")]},
        {"role": "assistant", "content": [result("toolu_1", "R1"), srv("srvtoolu_a")]},
        {"role": "user", "content": [srv("srvtoolu_b"), srv_result("srvtoolu_b", "RB"), TEXT]},
        {"role": "user", "content": [result("toolu_1", "R2")]},
        {"role": "assistant", "content": "ok"},
    ],
    # The last message: its server call would wait for the server, but the user's text goes after it.
    "last, with text": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [srv("srvtoolu_a")]},
        {"role": "assistant", "content": "txt"},
        {"role": "user", "content": [srv_result("srvtoolu_a", "R2"), TEXT, srv("srvtoolu_b")]},
    ],
}


@pytest.mark.parametrize("name", CASES)
def test_server_blocks_a_user_message_holds_end_in_the_models_message(name: str) -> None:
    fixed, changes = _sound(CASES[name])
    served = [block for message in CASES[name] if isinstance(message["content"], list) for block in message["content"]]
    served = [block for block in served if _server_block(block) and block["type"] not in SERVER]
    assert all(_tags(fixed)[block["content"]] == 1 for block in served)  # each answers its call: none is lost
    assert {"moved-misplaced-call", "moved-misplaced-result"} & {change.kind for change in changes}


def _history(seed: int) -> list[dict[str, Any]]:
    """Anthropic messages of either role holding server calls and results, client calls and results
    and text, under a few ids (server ids and client ids alike, or apart)."""
    rng = random.Random(seed)
    keys = ["s", "a", "b"][: rng.randint(1, 3)]
    server = "srvtoolu_" if rng.random() < 0.5 else ""
    count = 0

    def block() -> dict[str, Any]:
        nonlocal count
        count += 1
        key, roll = rng.choice(keys), rng.random()
        if roll < 0.25:
            return srv(server + key, rng.choice(SERVER))
        if roll < 0.45:
            return srv_result(server + key, f"R{count}", rng.choice(["web_search_tool_result", "mcp_tool_result"]))
        if roll < 0.6:
            return use(key)
        if roll < 0.8:
            return result(key, f"R{count}")
        return dict(TEXT)

    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for _ in range(rng.randint(1, 8)):
        role = rng.choice(["assistant", "assistant", "user"])
        blocks = [block() for _ in range(rng.randint(0, 4))]
        if role == "assistant" and rng.random() < 0.8:
            blocks = [b for b in blocks if b["type"] != "tool_result"]
        if {"tool_use", "tool_result"} <= {b["type"] for b in blocks}:  # (malformed: repair refuses it)
            gone = rng.choice(["tool_use", "tool_result"])
            blocks = [b for b in blocks if b["type"] != gone]
        messages.append({"role": role, "content": blocks if blocks or rng.random() < 0.5 else "txt"})
    return messages


@pytest.mark.parametrize("seed", range(300))
def test_repair_of_server_blocks_in_user_messages_is_idempotent_and_says_what_it_drops(seed: int) -> None:
    messages = _history(seed)
    for policy in (RepairPolicy(), RepairPolicy(dangling="drop-call")):
        _sound(messages, policy)
