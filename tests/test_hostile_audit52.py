"""Audit 52: Converse (``"bedrock"``) repairs a second repair changed, 44 over audit 51's corpus, all
older than audit 51's merge. Three causes, each case here failing before its fix:

* Writing a join, repair read the message joining by itself: a server tool's result whose call the
  message before it makes read as a client result, so the joined message "answered calls" and the
  assistant message making calls after it stayed apart (``assistant-after-assistant``).
* Two assistant messages making a server call under one id, which a removed message brings together,
  stayed apart (no message may make a server call twice); read as one turn, the next repair renamed
  the later call. Repair now renames it at once, as it does for Anthropic's runs.
* A model's message sending a turn's results in its role and keeping its text stays apart from the
  calls' message when a message of an unknown role stands between (kept as it came); the turn's
  answer went after it, where it answers nothing, and the next repair dropped those results.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import pytest

from fsm import history
from fsm.history import REJECTED, Kind, RepairPolicy

PLACEHOLDER = "The tool call was not completed"


def use(key: str, tag: str = "C", server: bool = False) -> dict[str, Any]:
    call: dict[str, Any] = {"toolUseId": key, "name": "web_search" if server else "f", "input": {"tag": tag}}
    return {"toolUse": {**call, "type": "server_tool_use"} if server else call}


def result(key: str, tag: str, server: bool = False) -> dict[str, Any]:
    value: dict[str, Any] = {"toolUseId": key, "content": [{"text": tag}]}
    return {"toolResult": {**value, "type": "web_search_result"} if server else value}


def said(role: Any, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "content": list(blocks)}


def _tags(messages: list[dict[str, Any]]) -> Counter[str]:
    """The client results a history holds, by their content (server results are the model's own)."""
    found: Counter[str] = Counter()
    for message in messages:
        for block in message["content"] if isinstance(message["content"], list) else ():
            value = block.get("toolResult") if isinstance(block, dict) else None
            if isinstance(value, dict) and "type" not in value:
                text = json.dumps(value["content"])
                found[text] += 0 if PLACEHOLDER in text else 1
    return +found


def _sound(messages: list[dict[str, Any]], policy: RepairPolicy | None = None) -> list[dict[str, Any]]:
    """Repair's promises: a history check accepts (but the roles kept for the caller to name), which a
    second repair leaves as it is; each real result kept, or dropped by a change saying so."""
    fixed, changes = history.repair(messages, policy, "bedrock")
    found = history.check(fixed, "bedrock").findings
    assert [(f.kind.value, f.id, f.message) for f in found if f.kind in REJECTED - {Kind.UNKNOWN_ROLE}] == []
    again, more = history.repair(fixed, policy, "bedrock")
    assert again == fixed
    assert [(c.kind, c.message, c.id) for c in more if c.kind != "kept-unknown-role"] == []
    sent, kept = _tags(messages), _tags(fixed)
    assert not kept - sent  # none made up or doubled
    dropped = [change for change in changes if change.kind in ("dropped-orphan", "dropped-duplicate-result")]
    assert sum((sent - kept).values()) == len(dropped), (sent - kept, changes)
    return fixed


def test_a_server_result_a_joined_message_holds_answers_its_call_there() -> None:
    # (repro_preexisting_bedrock_server_not_idempotent) the duplicate server call goes, messages 1-2 join;
    # message 3 stayed apart: the joined message was read as answering calls.
    messages = [
        said("assistant", use("s2", server=True)),
        said("assistant", use("s2", server=True), result("s2", "R6", server=True)),
        said("assistant", use("tu11")),
    ]
    fixed = _sound(messages)
    assert [m["role"] for m in fixed] == ["assistant", "user"]
    assert [block for block in fixed[0]["content"] if "toolUse" in block][-1] == use("tu11")


def test_server_calls_under_one_id_a_removed_message_joins_are_renamed() -> None:
    # (audit 51's case 50545, reduced) the stray result between goes: the two assistant messages are one turn.
    messages = [
        said("user", {"text": "go"}),
        said("assistant", use("s1", server=True), result("s1", "R2", server=True)),
        said("user", result("s1", "R3")),
        said("assistant", {"text": "looking"}, use("s1", server=True), result("s1", "R4", server=True)),
    ]
    fixed = _sound(messages)
    assert [m["role"] for m in fixed] == ["user", "assistant"]
    ids = [b[k]["toolUseId"] for b in fixed[1]["content"] for k in ("toolUse", "toolResult") if k in b]
    assert ids == ["s1", "s1", "s1_d2", "s1_d2"]


@pytest.mark.parametrize("key", ["a_d2", "a"])
def test_results_the_model_sent_past_a_message_of_unknown_role_answer_right_after_the_calls(key: str) -> None:
    # (repro_preexisting_bedrock_unknown_role_not_idempotent) the answer went into message 4, after the
    # model's text: check found the call dangling and the answer an orphan, the next repair dropped it.
    messages = [
        said("assistant", use(key)),
        said("function"),
        said("assistant", result("a", "R8"), {"text": "u"}),
        said("user", result("a", "R14"), {"text": "u"}),
        said("user", result("a", "R16")),
    ]
    fixed = _sound(messages)
    assert [m["role"] for m in fixed] == ["assistant", "function", "user", "assistant", "user"]
    answer = fixed[2]["content"]
    assert [b["toolResult"]["toolUseId"] for b in answer] == [key]
    assert (PLACEHOLDER in json.dumps(answer)) == (key != "a")  # the model's result answers a call of its id


def test_real_results_past_a_message_of_unknown_role_are_kept() -> None:
    messages = [
        said("assistant", use("a"), use("b")),
        said("function"),
        said("assistant", result("a", "Ra"), {"text": "u"}),
        said("user", result("b", "Rb"), {"text": "u"}),
        said("user", result("a", "Ra2")),
    ]
    fixed = _sound(messages)
    assert _tags(fixed) == Counter({json.dumps([{"text": "Ra"}]): 1, json.dumps([{"text": "Rb"}]): 1})


def _history(seed: int) -> list[dict[str, Any]]:
    """Converse turns as audit 51's generator writes them (server blocks in the model's message, client
    calls, results, a few shared ids), with hostile edits: messages of an unknown role, empty or not,
    results sent as the model, the user's text, messages of one role in a row."""
    rng = random.Random(seed)
    count = 0

    def tag(prefix: str) -> str:
        nonlocal count
        count += 1
        return f"{prefix}{count}"

    ids = ["s1", "s2", "a", "a_d2"]
    messages = [said("user", {"text": "go"})]
    for _ in range(rng.randint(1, 6)):
        blocks: list[dict[str, Any]] = [{"text": "looking"}] if rng.random() < 0.5 else []
        for _ in range(rng.randint(0, 2)):
            key = rng.choice(ids[:2]) if rng.random() < 0.4 else tag("srv")
            blocks.append(use(key, tag("C"), server=True))
            if rng.random() < 0.8:
                blocks.append(result(key, tag("R"), server=True))
        calls = [rng.choice(ids) if rng.random() < 0.4 else tag("tu") for _ in range(rng.choice([0, 1, 1, 2]))]
        blocks += [use(key, tag("C")) for key in calls]
        messages.append(said("assistant", *(blocks or [{"text": "hi"}])))
        roll = rng.random()
        if roll < 0.15:
            messages.append(said(rng.choice(["function", "tool"]), *([] if rng.random() < 0.5 else [{"text": "odd"}])))
        elif roll < 0.3 and calls:
            sent = [result(rng.choice(calls), tag("R")) for _ in range(rng.randint(1, 2))]
            messages.append(said("assistant", *sent, *([{"text": "u"}] if rng.random() < 0.6 else [])))
        elif roll < 0.4:
            messages.append(said("user", {"text": "u"}))
        if calls or rng.random() < 0.3:
            sent = [result(key, tag("R")) for key in calls if rng.random() < 0.85]
            if rng.random() < 0.2:
                sent.append(result(rng.choice(ids), tag("R")))
            if rng.random() < 0.25:
                sent.insert(rng.randint(0, len(sent)), {"text": "u"})
            messages.append(said("user", *(sent or [{"text": "next"}])))
            if rng.random() < 0.15:
                messages.append(said("user", result(rng.choice(ids), tag("R"))))
    return messages


@pytest.mark.parametrize("seed", range(300))
def test_converse_repair_is_idempotent_and_says_what_it_drops(seed: int) -> None:
    messages = _history(seed)
    for policy in (RepairPolicy(), RepairPolicy(dangling="drop-call")):
        _sound(messages, policy)
