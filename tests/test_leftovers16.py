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


# -- A thinking of the wrong type --------------------------------------------------------------------------


def mistral_turn(thinking: Any) -> list[dict[str, Any]]:
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    return [
        {"choices": [{"index": 0, "delta": {"content": [{"type": "thinking", "thinking": thinking}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]


@pytest.mark.parametrize("bad", [{"text": "Hm."}, 5, True])
def test_a_mistral_thinking_chunk_of_no_list_is_reported_and_the_stream_reads_on(bad: Any) -> None:
    # It failed the stream (RemoteProtocolError, content[0].thinking), losing the call after it, where
    # the same delta's content or reasoning_content of a wrong type is read past, and typed content
    # reports a chunk it does not read (part-not-reassembled)
    result = fsm.reassemble(mistral_turn(bad), "openai-chat")
    assert [(c.id, c.arguments, c.status) for c in result.calls] == [("c1", {"a": 1}, CallStatus.COMPLETE)]
    (said,) = [d for d in result.diagnostics if d.code == "part-not-reassembled"]
    assert (said.event, said.message) == (
        1,
        f"content[0], a 'thinking' chunk whose thinking is {type(bad).__name__}, not a list, is not read",
    )
    text = fsm.reassemble([{"choices": [{"index": 0, "delta": {"content": [{"type": "text", "text": bad}]}}]}])
    assert "a 'text' chunk whose text is" in " ".join(d.message for d in text.diagnostics)


def test_a_mistral_thinking_given_as_a_str_is_its_text() -> None:
    # as LangChain's reading of the same chunk takes it (it failed the stream: str, not a list)
    result = fsm.reassemble(mistral_turn("Hm."), "openai-chat")
    assert ([r.text for r in result.reasoning], result.codes()) == (["Hm."], [])


@pytest.mark.parametrize("where", ["start", "delta"])
def test_an_anthropic_thinking_of_no_str_is_a_typed_error_naming_its_event(where: str) -> None:
    # No change, pinned: the Anthropic decoder reads every text field so (a text_delta's text, a
    # signature), a RemoteProtocolError naming the field and the event; close() keeps what came before
    block: dict[str, Any] = {"type": "thinking", "thinking": {"a": 1} if where == "start" else ""}
    events = [
        {"type": "message_start", "message": {"id": "m", "content": [], "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": ["a"]}},
    ]
    r = fsm.Reassembler(provider="anthropic")
    with pytest.raises(fsm.RemoteProtocolError) as raised:
        for event in events:
            r.feed(event)
    assert raised.value.event == (2 if where == "start" else 3)
    assert "thinking is" in str(raised.value) and "not a string" in str(raised.value)
    assert "stream-failed" in r.close().codes()
