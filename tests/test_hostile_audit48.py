"""Audit 48: Claude's server tool blocks in an Anthropic history (fsm.history).

A client ``tool_result`` under the id of a paused server call (the history's last message, whose
server call waits for the server) was read by check as answering it (``misplaced-result``), where
repair dropped it as an orphan: check reported a change repair did not make, and a result repair
dropped as answering nothing."""

from __future__ import annotations

from collections import Counter
from typing import Any

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
