"""Audit 72: a long agent loop (20-40 turns) in every fsm.messages format, each turn's stream drawn
from the captures, their hostile variants, the conformance vectors and fuzzed streams (a helper's
driver; the loop itself is not a unit test). It held once each turn's ``taken`` held the ids the
turn sent:

* A Responses call whose ``call_id`` came late (``late-id``) keeps the id its deltas carried as
  ``call.id`` and goes back under its ``reply_id``. An agent passing ``[c.id for c in
  result.calls]`` as the next turn's ``taken`` (as tests/test_sdk_loop.py did) left the reply id
  out: a later turn's call under that id kept it, and the history held one ``call_id`` twice
  (``reused``). :func:`fsm.messages.ids_sent` lists the ids a turn sends."""

from __future__ import annotations

from typing import Any

import fsm
from fsm import history, messages

LATE = [  # the call's arguments before its item: the call_id arrives with the item's end
    {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}},
    {"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc_0", "delta": '{"a": 1}'},
    {
        "type": "response.output_item.done",
        "output_index": 0,
        "item": {"type": "function_call", "id": "fc_0", "call_id": "call_w", "name": "f", "arguments": '{"a": 1}'},
    },
    {"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}},
]


def _plain(call_id: str, item_id: str) -> list[dict[str, Any]]:
    item = {"type": "function_call", "id": item_id, "call_id": call_id, "name": "f", "arguments": "{}"}
    return [
        {"type": "response.created", "response": {"id": "resp_2", "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "arguments": ""}},
        {"type": "response.function_call_arguments.done", "output_index": 0, "item_id": item_id, "arguments": "{}"},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {"id": "resp_2", "status": "completed"}},
    ]


def _turn(conversation: list[Any], result: fsm.Result) -> None:
    conversation += messages.assistant_message(result, "openai-responses")
    conversation += [messages.tool_result(c, "ok", "openai-responses") for c in result.complete_calls]


def test_a_late_ids_reply_id_is_among_the_ids_a_turn_sends() -> None:
    first = fsm.reassemble(LATE, "openai-responses")
    assert [(c.id, c.reply_id) for c in first.calls] == [("call_0", "call_w")]
    assert messages.ids_sent(first) == ("call_0", "call_w")

    conversation: list[Any] = [{"role": "user", "content": "go"}]
    _turn(conversation, first)
    second = fsm.reassemble(_plain("call_w", "fc_1"), "openai-responses", taken=messages.ids_sent(first))
    assert [c.id for c in second.calls] == ["call_w_d2"]
    _turn(conversation, second)
    assert history.check(conversation).findings == ()
    assert history.repair(conversation) == (conversation, [])

    # the ids alone leave the reply id out: the second turn's call_w went back as it came
    alone = fsm.reassemble(_plain("call_w", "fc_1"), "openai-responses", taken=[c.id for c in first.calls])
    assert [c.id for c in alone.calls] == ["call_w"]


def test_ids_sent_names_server_calls_and_each_id_once() -> None:
    from fsm.harness.conformance import replay
    from fsm.harness.vectors import load_vectors

    vector = next(v for v in load_vectors() if v.name == "anthropic-server-tool-use-apart")
    result, _ = replay(vector)
    assert result.server_tool_calls
    sent = messages.ids_sent(result)
    assert set(sent) == {c.id for c in (*result.calls, *result.server_tool_calls)}
    assert len(sent) == len(set(sent))
