"""Audit 44: a hostile audit of fsm.history's repair (a helper's fuzzer, every finding re-checked).

Gemini calls without ids pair with their function responses by name and order. A turn whose
responses came over several user contents, one of them sent in a model content (misplaced), was
repaired with the moved response ahead of the user's own responses sent before it: the user contents
merge into one in their order, and the moved one had been put into the first of them, so the second
call's answer came first and answered the first call. No change said so, and check() found the
repaired history clean. The moved response now goes after the user's responses sent before it, the
placeholders last, so the k-th rule ("in the order sent") still pairs."""

from __future__ import annotations

import random
from typing import Any

import pytest

from fsm import history


def call(n: int, name: str = "f") -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": {"n": n}}}


def answer(tag: str, name: str = "f") -> dict[str, Any]:
    return {"functionResponse": {"name": name, "response": {"r": tag}}}


def answered(messages: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """Each id-less call's args ``n`` with the response that answers it as Gemini pairs them: the
    k-th response of a name in the contents after the calls answers the k-th call of that name."""
    pairs: list[tuple[int, str]] = []
    for at, message in enumerate(messages):
        calls = [part["functionCall"] for part in message.get("parts", []) if "functionCall" in part]
        if not calls:
            continue
        responses: dict[str, list[str]] = {}
        for later in messages[at + 1 :]:
            parts = later.get("parts", [])
            if any("functionCall" in part for part in parts):
                break
            for part in parts:
                if "functionResponse" in part:
                    response = part["functionResponse"]
                    said = response["response"].get("r", "placeholder")  # (a placeholder says why)
                    responses.setdefault(response["name"], []).append(said)
        for made in calls:
            given = responses.get(made["name"], [])
            pairs.append((made["args"]["n"], given.pop(0) if given else "none"))
    return pairs


CASES = {
    "a stray response first": [
        {"role": "model", "parts": [call(1), call(2)]},
        {"role": "user", "parts": [answer("stray", "g")]},
        {"role": "user", "parts": [answer("A1")]},
        {"role": "model", "parts": [answer("A2")]},
    ],
    "another tool's response first": [
        {"role": "model", "parts": [call(1), call(2), call(3, "g")]},
        {"role": "user", "parts": [answer("G", "g")]},
        {"role": "user", "parts": [answer("A1")]},
        {"role": "model", "parts": [answer("A2")]},
    ],
    "a dangling call after them": [
        {"role": "model", "parts": [call(1), call(2), call(3)]},
        {"role": "user", "parts": [answer("G", "g")]},
        {"role": "user", "parts": [answer("A1")]},
        {"role": "model", "parts": [answer("A2")]},
    ],
}


@pytest.mark.parametrize("name", CASES)
def test_idless_gemini_responses_keep_the_order_they_were_sent_in(name: str) -> None:
    messages = CASES[name]
    fixed, changes = history.repair(messages)
    pairs = dict(answered(fixed))
    assert (pairs[1], pairs[2]) == ("A1", "A2")
    assert any(change.kind == "moved-misplaced-result" for change in changes)
    assert not [finding for finding in history.check(fixed).findings if finding.kind in history.REJECTED]
    assert history.repair(fixed)[1] == []


def _turn(rng: random.Random, tag: str) -> list[dict[str, Any]]:
    """Calls to f and g without ids, then their responses in the order made (some missing), spread
    over user contents with some sent as model contents, and the user's text now and then after
    a user content."""
    names = [rng.choice("fg") for _ in range(rng.randint(1, 4))]
    messages: list[dict[str, Any]] = [{"role": "model", "parts": [call(k, name) for k, name in enumerate(names)]}]
    answers = [answer(f"{tag}-{k}", name) for k, name in enumerate(names)][: rng.randint(0, len(names))]
    while answers:
        size = rng.randint(1, 2)
        take, answers = answers[:size], answers[size:]
        role = rng.choice(["user", "user", "model"])
        messages.append({"role": role, "parts": take})
        if role == "user" and rng.random() < 0.2:  # (after a model content, text would end the turn)
            messages.append({"role": "user", "parts": [{"text": "and?"}]})
    return messages


@pytest.mark.parametrize("seed", range(300))
def test_idless_gemini_repair_pairs_every_response_as_it_was_sent(seed: int) -> None:
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "go"}]}]
    for turn in range(rng.randint(1, 3)):
        messages += _turn(rng, f"t{turn}")
        messages.append({"role": "user", "parts": [{"text": "next"}]})
    fixed, changes = history.repair(messages)
    # Each response answers the call of its own tag: the k-th of its name in the order sent
    for n, given in answered(fixed):
        assert given in ("none", "placeholder") or given.endswith(f"-{n}"), (n, given, fixed)
    kept = [part for message in fixed for part in message.get("parts", []) if "functionResponse" in part]
    sent = [part for message in messages for part in message.get("parts", []) if "functionResponse" in part]
    dropped = [change for change in changes if change.kind == "dropped-orphan"]  # (check's orphans: the turn was over)
    assert len([part for part in sent if part in kept]) == len(sent) - len(dropped)
    assert len(dropped) == len([f for f in history.check(messages).findings if f.kind.value == "orphan"])
    assert history.repair(fixed)[1] == []


def _converse_call(key: str) -> dict[str, Any]:
    return {"toolUse": {"toolUseId": key, "name": "f", "input": {}}}


def _converse_result(key: str) -> dict[str, Any]:
    return {"toolResult": {"toolUseId": key, "content": [{"text": f"R-{key}"}]}}


def _answered_by(rest: list[tuple[str, list[str]]], text: bool) -> list[dict[str, Any]]:
    """Converse: calls a, b, c, then their results in messages of the roles ``rest`` gives."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"text": "go"}]},
        {"role": "assistant", "content": [_converse_call(key) for key in "abc"]},
    ]
    for role, keys in rest:
        messages.append({"role": role, "content": [_converse_result(key) for key in keys]})
        if text and role == "user" and keys == ["b"]:
            messages.append({"role": "user", "content": [{"text": "and?"}]})
    return [*messages, {"role": "assistant", "content": [{"text": "ok"}]}]


@pytest.mark.parametrize("text", [False, True], ids=["in a row", "text between"])
def test_the_users_results_after_those_the_model_sent_all_answer_the_turn(text: bool) -> None:
    # The model's message sent a's result; the user's next two messages, b's and c's. c's was read
    # as an orphan (the turn over after one user message) and dropped, c given a placeholder.
    messages = _answered_by([("assistant", ["a"]), ("user", ["b"]), ("user", ["c"])], text)
    kinds = {finding.kind.value for finding in history.check(messages).findings}
    assert not kinds & {"orphan", "dangling"}
    fixed, changes = history.repair(messages)
    blocks = [block for message in fixed for block in message["content"] if "toolResult" in block]
    results = [block["toolResult"]["content"][0]["text"] for block in blocks]
    assert results == ["R-a", "R-b", "R-c"]  # each its own, in the order sent
    assert not [change for change in changes if change.kind in ("dropped-orphan", "placeholder-result")]
    assert history.repair(fixed)[1] == []


def test_what_a_user_message_leaves_after_a_run_of_server_calls_is_never_lost() -> None:
    # A user message making a client call beside a server call under the id of the one before it
    # (one run with it) and that call's result: what is left of it goes after the run. The run,
    # of server calls alone, has no end of its own, and what was left went nowhere (no change said so).
    history_in = [
        {
            "role": "assistant",
            "content": [
                {"type": "mcp_tool_use", "id": "m1", "name": "m", "server_name": "x", "input": {}},
                {"type": "mcp_tool_result", "tool_use_id": "m1", "content": "R-first"},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
                {"type": "server_tool_use", "id": "m1", "name": "web_search", "input": {}},
                {"type": "mcp_tool_result", "tool_use_id": "m1", "content": "R-second"},
            ],
        },
    ]
    fixed, changes = history.repair(history_in)
    blocks = [block for message in fixed for block in message["content"]]
    assert [block.get("content") for block in blocks if block["type"] == "mcp_tool_result"] == ["R-first", "R-second"]
    assert [block["id"] for block in blocks if block["type"] == "server_tool_use"] == ["m1_d2"]  # as its change says
    # Nothing of it is the user's (audit 48, server-blocks-are-the-models): its server blocks go with its call
    kinds = {change.kind for change in changes}
    assert {"moved-misplaced-call", "moved-misplaced-result", "renamed-call", "renamed-result"} <= kinds


def test_a_user_message_making_calls_in_a_server_run_leaves_its_text_after_the_run() -> None:
    # The user's text stayed between the server call and its result: check then found the call
    # dangling and its result an orphan, and a second repair dropped both (the real result lost).
    history_in = [
        {
            "role": "assistant",
            "content": [{"type": "server_tool_use", "id": "srvtoolu_a", "name": "web_search", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "text", "text": "x"}, {"type": "tool_use", "id": "toolu_b", "name": "f", "input": {}}],
        },
        {
            "role": "assistant",
            "content": [{"type": "web_search_tool_result", "tool_use_id": "srvtoolu_a", "content": "REAL"}],
        },
    ]
    fixed, changes = history.repair(history_in)
    roles_and_kinds = [(m["role"], [block["type"] for block in m["content"]]) for m in fixed]
    assert roles_and_kinds == [
        ("assistant", ["server_tool_use"]),
        ("assistant", ["tool_use"]),
        ("assistant", ["web_search_tool_result"]),
        ("user", ["tool_result", "text"]),
    ]
    assert "moved-user-content" in {change.kind for change in changes}
    assert not [finding for finding in history.check(fixed).findings if finding.kind in history.REJECTED]
    assert history.repair(fixed) == (fixed, [])


def test_a_deque_history_holding_an_sdk_message_is_read_as_a_list_is() -> None:
    # Copying it once a message needed reading sliced it, which a deque cannot: the answer blamed
    # the caller's deque (InvalidInput) for what a list of the same messages passes
    from collections import deque

    from openai.types.chat import ChatCompletionMessage

    messages = [{"role": "user", "content": "q"}, ChatCompletionMessage(role="assistant", content="hi")]
    assert history.check(deque(messages)).findings == history.check(messages).findings
    assert history.repair(deque(messages)) == history.repair(messages)
