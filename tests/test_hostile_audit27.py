"""Hostile audit 27: fsm.history (check, repair, uniquify, anything_dangling) across its formats,
run against random and hostile histories.

Each test failed before its fix. Nothing is timed."""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from fsm import history, messages
from fsm.messages.bedrock import converse_id


def _anthropic_ids(message: dict[str, Any]) -> list[str]:
    return [b["id"] for b in message["content"] if b["type"] in ("tool_use", "server_tool_use")]


def _converse_ids(message: dict[str, Any]) -> list[str]:
    return [b["toolUse"]["toolUseId"] for b in message["content"] if "toolUse" in b]


def _server_twice_beside(fmt: str) -> list[dict[str, Any]]:
    """An assistant message making a server call twice under ``a`` (each answered in the message),
    then a client call that already holds ``a_d2``, answered by the next message."""
    if fmt == "anthropic":
        search = {"type": "server_tool_use", "id": "a", "name": "web_search", "input": {}}
        found = {"type": "web_search_tool_result", "tool_use_id": "a", "content": []}
        client = {"type": "tool_use", "id": "a_d2", "name": "f", "input": {}}
        answer = {"type": "tool_result", "tool_use_id": "a_d2", "content": "ok"}
        ask: dict[str, Any] = {"role": "user", "content": "go"}
    else:
        search = {"toolUse": {"toolUseId": "a", "name": "web_grounding", "input": {}, "type": "server_tool_use"}}
        found = {"toolResult": {"toolUseId": "a", "content": [{"text": "found"}], "type": "web_grounding_result"}}
        client = {"toolUse": {"toolUseId": "a_d2", "name": "f", "input": {}}}
        answer = {"toolResult": {"toolUseId": "a_d2", "content": [{"text": "ok"}]}}
        ask = {"role": "user", "content": [{"text": "go"}]}
    turn = {"role": "assistant", "content": [search, found, search, found, client]}
    return [ask, turn, {"role": "user", "content": [answer]}]


# Repair renamed a server call's second use of an id to the first free `<id>_d<n>`, free of the ids
# read so far: the client calls of the same message are read as a turn of their own after its server
# blocks, so `a_d2` was given while a client call of that message held it (one message, two calls
# under one id). 573 of 10,000 random Anthropic and Converse histories with server blocks, now none.
@pytest.mark.parametrize("fmt", ["anthropic", "bedrock"])
def test_a_server_call_renamed_keeps_clear_of_the_client_ids_of_its_message(fmt: str) -> None:
    messages = _server_twice_beside(fmt)
    fixed, changes = history.repair(messages)
    ids = (_anthropic_ids if fmt == "anthropic" else _converse_ids)(fixed[1])
    assert ids == ["a", "a_d3", "a_d2"]
    assert [(c.kind, c.id) for c in changes] == [("renamed-call", "a"), ("renamed-result", "a")]
    assert "'a_d3'" in changes[0].detail
    assert not history.check(fixed).rejected
    assert history.repair(fixed) == (fixed, [])


_ASK = {"role": "user", "content": "go"}
_THOUGHT = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e1"}
_CALL = {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f", "arguments": "{}"}
_SCREEN = {
    "type": "computer_call",
    "id": "cu_1",
    "call_id": "c2",
    "action": {"type": "wait"},
    "pending_safety_checks": [],
    "status": "completed",
}


# The Responses API pairs a reasoning item with the item that followed it and answers a reasoning
# item sent without it with HTTP 400 ("Item 'rs_...' of type 'reasoning' was provided without its
# required following item"). Repair dropped a call (a computer call nothing answered, or any call
# under drop-call) and kept the reasoning before it: 427 of 3,776 reasoning items kept in 6,000
# random repairs were left without their follower, now none.
@pytest.mark.parametrize(
    ("call", "policy"),
    [(_CALL, history.RepairPolicy(dangling="drop-call")), (_SCREEN, history.RepairPolicy())],
)
def test_a_responses_call_dropped_takes_the_reasoning_before_it_along(
    call: dict[str, Any], policy: history.RepairPolicy
) -> None:
    second = {**_THOUGHT, "id": "rs_0"}
    messages = [_ASK, second, _THOUGHT, call, {"role": "user", "content": "next"}]
    fixed, changes = history.repair(messages, policy)
    assert fixed == [_ASK, {"role": "user", "content": "next"}]
    assert [(c.kind, c.message, c.id) for c in changes] == [
        ("dropped-reasoning", 2, call["call_id"]),
        ("dropped-reasoning", 3, call["call_id"]),
        ("dropped-call", 4, call["call_id"]),
    ]
    assert history.repair(fixed, policy) == (fixed, [])


def test_reasoning_before_a_call_that_stays_stays() -> None:
    answered = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
    messages = [_ASK, _THOUGHT, _CALL, {**_THOUGHT, "id": "rs_2"}, _SCREEN, answered]
    fixed, changes = history.repair(messages)  # the computer call goes, its reasoning with it; c1 stays
    assert fixed == [_ASK, _THOUGHT, _CALL, answered]
    assert [c.kind for c in changes] == ["dropped-reasoning", "dropped-call"]
    placeholder, _ = history.repair([_ASK, _THOUGHT, _CALL])  # a placeholder answers: nothing goes
    assert placeholder[:3] == [_ASK, _THOUGHT, _CALL] and placeholder[3]["type"] == "function_call_output"


def _responses_stream(events: list[dict[str, Any]]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def _reasoning(item_id: str) -> dict[str, Any]:
    return {"type": "reasoning", "id": item_id, "summary": [], "encrypted_content": f"enc-{item_id}"}


def _function_call(n: int, arguments: str, status: str | None = None) -> dict[str, Any]:
    item = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": "f", "arguments": arguments}
    return item if status is None else {**item, "status": status}


# Reasoning, call, reasoning, call, cut by max_output_tokens inside the second call's arguments: the
# "openai-responses" next turn left the cut call out (incomplete="omit") and sent the reasoning item
# before it all the same, last in the turn, without the item that followed it: HTTP 400.
_CUT_AFTER_REASONING = [
    {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}},
    {"type": "response.output_item.added", "output_index": 0, "item": _reasoning("rs_1")},
    {"type": "response.output_item.done", "output_index": 0, "item": _reasoning("rs_1")},
    {"type": "response.output_item.added", "output_index": 1, "item": _function_call(1, "")},
    {"type": "response.function_call_arguments.delta", "output_index": 1, "item_id": "fc_1", "delta": "{}"},
    {"type": "response.output_item.done", "output_index": 1, "item": _function_call(1, "{}", "completed")},
    {"type": "response.output_item.added", "output_index": 2, "item": _reasoning("rs_2")},
    {"type": "response.output_item.done", "output_index": 2, "item": _reasoning("rs_2")},
    {"type": "response.output_item.added", "output_index": 3, "item": _function_call(2, "")},
    {"type": "response.function_call_arguments.delta", "output_index": 3, "item_id": "fc_2", "delta": '{"q": "Os'},
    {
        "type": "response.incomplete",
        "response": {"id": "resp_1", "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}},
    },
]


def test_a_responses_call_left_out_takes_the_reasoning_before_it_along() -> None:
    reassembler = fsm.Reassembler("openai-responses")
    reassembler.feed_bytes(_responses_stream(_CUT_AFTER_REASONING))
    result = reassembler.close()
    assert [c.status for c in result.calls] == [fsm.CallStatus.COMPLETE, fsm.CallStatus.TRUNCATED]
    items = messages.assistant_message(result, "openai-responses")
    assert [(i["type"], i["id"]) for i in items] == [("reasoning", "rs_1"), ("function_call", "fc_1")]
    kept = messages.assistant_message(result, "openai-responses", incomplete="include")
    assert [i["id"] for i in kept] == ["rs_1", "fc_1", "rs_2", "fc_2"]  # the cut call goes back: so does rs_2
    answers = [messages.tool_result(result.calls[0], "ok", "openai-responses")]
    conversation = [{"role": "user", "content": "go"}, *items, *answers]
    assert history.check(conversation).findings == ()
    assert history.repair(conversation) == (conversation, [])


def _converse_turn(call_id: str) -> list[dict[str, Any]]:
    use = {"toolUse": {"toolUseId": call_id, "name": "f", "input": {}}}
    return [
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": call_id, "content": [{"text": "ok"}]}}]},
    ]


# A Converse toolUseId Bedrock refuses is mapped as the "bedrock" next turn maps it (converse_id),
# and only "a mapping another id of its turn already holds" becomes <mapping>_d2. An id reused by a
# later turn (allowed once answered) was mapped to <mapping>_d2 there, its own earlier mapping counted
# as taken: turn by turn `..._c71bd109227e2343`, `..._c71bd109227e2_d2`, `..._d3`, not what the next
# turn sends, and differing from turn to turn for one id.
@pytest.mark.parametrize("call_id", ["x" * 70, "toolu_01/+="])
def test_a_refused_id_reused_by_a_later_turn_maps_as_the_next_turn_does(call_id: str) -> None:
    ask = {"role": "user", "content": [{"text": "go"}]}
    messages = [ask, *_converse_turn(call_id), *_converse_turn(call_id), *_converse_turn(call_id)]
    fixed, changes = history.repair(messages)
    ids = [block["toolUse"]["toolUseId"] for m in fixed for block in m["content"] if "toolUse" in block]
    assert ids == [converse_id(call_id)] * 3
    assert [c.kind for c in changes] == ["mapped-call", "mapped-result"] * 3
    assert [f.kind for f in history.check(fixed).findings] == [history.Kind.REUSED] * 2
    # Beside another id of its turn already holding the mapping, it still becomes <mapping>_d2.
    held = {"toolUse": {"toolUseId": converse_id(call_id), "name": "g", "input": {}}}
    answer = {"toolResult": {"toolUseId": converse_id(call_id), "content": [{"text": "ok"}]}}
    crowded = [*messages[:3], {"role": "assistant", "content": [held, *messages[3]["content"]]}]
    crowded.append({"role": "user", "content": [answer, *messages[4]["content"]]})
    fixed, _ = history.repair(crowded)
    mapping = converse_id(call_id)
    renamed = f"{mapping[: 64 - 3]}_d2"  # cut as far as _d2 needs, within Converse's 64
    assert [b["toolUse"]["toolUseId"] for b in fixed[3]["content"]] == [mapping, renamed]


_SEARCH = {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "q"}}

# Reasoning, a web search (a hosted call, which the next turn does not send back), reasoning, a
# function call: the first reasoning item went back followed by the second, not by its search.
_SEARCH_AFTER_REASONING = [
    {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}},
    {"type": "response.output_item.added", "output_index": 0, "item": _reasoning("rs_1")},
    {"type": "response.output_item.done", "output_index": 0, "item": _reasoning("rs_1")},
    {"type": "response.output_item.added", "output_index": 1, "item": {**_SEARCH, "status": "in_progress"}},
    {"type": "response.output_item.done", "output_index": 1, "item": _SEARCH},
    {"type": "response.output_item.added", "output_index": 2, "item": _reasoning("rs_2")},
    {"type": "response.output_item.done", "output_index": 2, "item": _reasoning("rs_2")},
    {"type": "response.output_item.added", "output_index": 3, "item": _function_call(1, "")},
    {"type": "response.output_item.done", "output_index": 3, "item": _function_call(1, "{}", "completed")},
    {"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}},
]


def test_a_hosted_call_that_does_not_go_back_takes_the_reasoning_before_it_along() -> None:
    reassembler = fsm.Reassembler("openai-responses")
    reassembler.feed_bytes(_responses_stream(_SEARCH_AFTER_REASONING))
    result = reassembler.close()
    assert [c.type for c in result.server_tool_calls] == ["web_search_call"]
    items = messages.assistant_message(result, "openai-responses")
    assert [(i["type"], i["id"]) for i in items] == [("reasoning", "rs_2"), ("function_call", "fc_1")]
