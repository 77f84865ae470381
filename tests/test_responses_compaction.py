"""A Responses ``compaction`` item (server-side context compaction: the summary of the context
before it, opaque ``encrypted_content``) is kept in ``result.compactions`` and goes back in its place
in the next request, as Claude's compaction blocks do. It was skipped as an item that calls nothing,
so the next request lost the compacted context."""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from fsm import history, messages

COMPACTION = {"type": "compaction", "id": "cmp_1", "encrypted_content": "ENC"}
CALL = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup", "arguments": "{}"}
EVENTS: list[dict[str, Any]] = [
    {"type": "response.created", "response": {"id": "r", "status": "in_progress", "output": []}},
    {"type": "response.output_item.added", "output_index": 0, "item": {"type": "compaction", "id": "cmp_1"}},
    {"type": "response.compaction.compacting", "item_id": "cmp_1", "output_index": 0, "sequence_number": 2},
    {"type": "response.output_item.done", "output_index": 0, "item": COMPACTION},
    {"type": "response.output_item.added", "output_index": 1, "item": {**CALL, "arguments": ""}},
    {"type": "response.function_call_arguments.delta", "output_index": 1, "item_id": "fc_1", "delta": "{}"},
    {"type": "response.output_item.done", "output_index": 1, "item": {**CALL, "status": "completed"}},
    {"type": "response.completed", "response": {"id": "r", "status": "completed", "output": []}},
]
BODY = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in EVENTS).encode()


def read(how: str) -> fsm.Result:
    if how == "dicts":
        return fsm.reassemble(EVENTS, provider="openai-responses")
    if how == "bytes":
        return fsm.reassemble(BODY)
    return fsm.reassemble([BODY[at : at + 1] for at in range(len(BODY))])


@pytest.mark.parametrize("how", ["dicts", "bytes", "1-byte pieces"])
def test_a_compaction_item_is_kept_in_its_place_however_the_stream_comes(how: str) -> None:
    result = read(how)
    assert result.codes() == ["finish-reason-mapped"]  # nothing unknown: the compacting event is expected
    assert [(c.block, c.output_index) for c in result.compactions] == [(COMPACTION, 0)]
    assert [(call.id, call.status.value) for call in result.complete_calls] == [("call_1", "complete")]


def test_the_next_request_sends_it_back_before_the_items_after_it() -> None:
    result = read("bytes")
    said = messages.assistant_message(result, "openai-responses")
    assert said[0] == COMPACTION and said[0] is not result.compactions[0].block  # the caller's own copy
    assert [item["type"] for item in said] == ["compaction", "function_call"]
    answers = [messages.tool_result(call, "found", "openai-responses") for call in result.complete_calls]
    conversation = [{"role": "user", "content": "go"}, *said, *messages.tool_results(answers, "openai-responses")]
    assert history.check(conversation).findings == ()
    adapter = pytest.importorskip("pydantic").TypeAdapter
    item_param = pytest.importorskip("openai.types.responses").ResponseInputItemParam
    for item in said:
        adapter(item_param).validate_python(item)  # the SDK's own request type takes it


def test_it_counts_against_the_content_limit() -> None:
    big = {**COMPACTION, "encrypted_content": "E" * 5000}
    events = [*EVENTS[:3], {**EVENTS[3], "item": big}, *EVENTS[4:]]
    with pytest.raises(fsm.LimitExceeded) as raised:
        fsm.reassemble(events, provider="openai-responses", limits=fsm.Limits(max_content_chars=4000))
    assert raised.value.event == 4
