"""Leftovers of audit 16: input each reading got wrong, one test a defect, each failing before its fix."""

from __future__ import annotations

import functools
import operator
from typing import Any

import pytest

import fsm
from fsm import CallStatus
from tests.test_langchain_places import chat_anthropic
from tests.test_langchain_server_calls import CLAUDE, server_calls, sse

# -- OpenAI Responses: two items under one item id -------------------------------------------------------


def function_call(item_id: str, call_id: str, status: str = "in_progress", arguments: str = "") -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": "f",
        "arguments": arguments,
        "status": status,
    }


Y = '{"y": 2}'


def two_items_under_one_id(call_ids: tuple[str, str], end: str) -> list[dict[str, Any]]:
    """Items 0 and 1 both carry item id fc_1; item 1 streams and ends (``end``: its input's .done, or
    the item's), then a delta naming only fc_1 comes: item 0's input, the only one still open."""
    first, second = call_ids
    events: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": 0, "item": function_call("fc_1", first)},
        {"type": "response.output_item.added", "output_index": 1, "item": function_call("fc_1", second)},
        {"type": "response.function_call_arguments.delta", "output_index": 1, "item_id": "fc_1", "delta": Y},
        {"type": "response.function_call_arguments.done", "output_index": 1, "item_id": "fc_1", "arguments": Y},
    ]
    if end == "item":
        done = function_call("fc_1", second, "completed", Y)
        events.append({"type": "response.output_item.done", "output_index": 1, "item": done})
    return [
        *events,
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '{"x": 1}'},
        {"type": "response.completed", "response": {"status": "completed"}},
    ]


def test_input_naming_an_item_id_two_items_share_goes_to_the_one_still_open() -> None:
    # It went to item 1, which had ended, and so opened a third call (fc_1_d3 / call_b_d2) no item
    # announced, with a duplicate-id; item 0 was left with {} it never sent
    for call_ids in (("call_a", "call_b"), ("call_a", "call_a")):
        for end in ("input", "item"):
            result = fsm.reassemble(two_items_under_one_id(call_ids, end), "openai-responses")
            assert [(c.wire_id or c.id, c.arguments, c.status) for c in result.calls] == [
                (call_ids[0], {"x": 1}, CallStatus.COMPLETE),
                (call_ids[1], {"y": 2}, CallStatus.COMPLETE),
            ]
            (said,) = [d for d in result.diagnostics if d.code == "stray-input"]
            assert said.event == 5 + (end == "item")
            assert "item_id 'fc_1'" in said.message and "at output_index 0" in said.message
            assert "duplicate-id" not in result.codes() or call_ids[0] == call_ids[1]  # the shared call id's own


def test_input_naming_an_item_id_whose_items_all_ended_still_opens_a_call_of_its_own() -> None:
    # Nothing open takes it: as before, it is the text of a call of its own, never dropped
    events = two_items_under_one_id(("call_a", "call_b"), "item")
    done = function_call("fc_1", "call_a", "completed", "{}")
    events.insert(1, {"type": "response.output_item.done", "output_index": 0, "item": done})
    result = fsm.reassemble(events, "openai-responses")
    assert [c.arguments for c in result.calls] == [{}, {"y": 2}, {"x": 1}]
    assert "stray-input" not in result.codes()


# -- LangChain ChatOpenAI, default output version: a block of no type it makes -----------------------------


def lc_chunk(content: Any, parts: Any = (), provider: str | None = "openai", **metadata: Any) -> Any:
    core = pytest.importorskip("langchain_core.messages")
    meta = ({"model_provider": provider} if provider else {}) | metadata
    return core.AIMessageChunk(content=content, tool_call_chunks=list(parts), response_metadata=meta)


FUTURE = {"type": "future_call", "id": "fut_1", "call_id": "call_f", "input": "x", "status": "completed"}


@pytest.mark.parametrize("before", ["text", "call"])
def test_a_responses_block_of_an_item_type_no_reading_knows_is_reported(before: str) -> None:
    # langchain-openai passes an item on as it came (responses/v1, and v0 keeps what it does not move
    # to additional_kwargs): one of a type no reading knows may be a call. v1's non_standard block of
    # it was unknown-item; this one was read as nothing, without a word
    first = (
        lc_chunk([{"type": "text", "text": "Hi. ", "index": 0}])
        if before == "text"
        else lc_chunk(
            [{"type": "function_call", "id": "fc_0", "call_id": "call_a", "name": "f", "arguments": "", "index": 0}],
            [{"index": 0, "id": "call_a", "name": "f", "args": "{}"}],
        )
    )
    chunks = [first, lc_chunk([{**FUTURE, "index": 1}]), lc_chunk([], status="completed")]
    result = fsm.reassemble(chunks)
    (said,) = [d for d in result.diagnostics if d.code == "unknown-item"]
    assert "'future_call' at output_index 1" in said.message
    v1 = [first, lc_chunk([{"type": "non_standard", "value": FUTURE, "index": "lc_ns_1"}]), chunks[-1]]
    assert said.message in [d.message for d in fsm.reassemble(v1).diagnostics if d.code == "unknown-item"]


def test_blocks_of_no_known_integration_are_not_taken_for_responses_items() -> None:
    # with no model_provider whose block it is is not known: read as before, nothing said of it
    chunks = [lc_chunk([{**FUTURE, "index": 1}], provider=None), lc_chunk([], provider=None, status="completed")]
    assert "unknown-item" not in fsm.reassemble(chunks).codes()


# -- Claude's server tool blocks through a ChatAnthropic that names no model_provider ------------------------


@pytest.mark.parametrize("name", list(CLAUDE))
def test_claude_server_blocks_are_read_by_their_shapes_where_no_model_provider_names_claude(name: str) -> None:
    # langchain-anthropic before 1.0 names no model_provider: its server_tool_use / mcp_tool_use
    # blocks were read as nothing (no server call, finish-without-calls), where the bytes have one
    body = sse(CLAUDE[name])
    reference = fsm.reassemble(body, "anthropic")
    chunks = list(chat_anthropic(body, None)[1].stream("go"))
    for chunk in chunks:
        chunk.response_metadata.pop("model_provider", None)
    for stream in (chunks, [functools.reduce(operator.add, chunks)]):
        got = fsm.reassemble(stream)
        assert server_calls(got) == server_calls(reference)
        assert [(c.id, c.arguments, c.status) for c in got.calls] == [
            (c.id, c.arguments, c.status) for c in reference.calls
        ]
        assert got.codes() == reference.codes()


def test_blocks_only_like_claudes_server_blocks_are_not_read_as_them() -> None:
    # what tells a Claude server block is a block only Claude makes: another integration's server
    # call block (ChatOpenAI's v1 server_tool_call) and an input_json_delta under no open server
    # block (a client tool's) are not taken for one
    chunks = [
        lc_chunk(
            [{"type": "server_tool_call", "id": "ws_1", "name": "web_search", "args": {}, "index": "lc_1"}],
            provider=None,
        ),
        lc_chunk([{"type": "input_json_delta", "partial_json": '{"q": 1}', "index": 1}], provider=None),
        lc_chunk([{"type": "text", "text": "Done.", "index": 2}], provider=None, stop_reason="end_turn"),
    ]
    got = fsm.reassemble(chunks)
    assert (got.server_tool_calls, got.calls, got.text) == ((), (), "Done.")
