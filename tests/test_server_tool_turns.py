"""A Claude turn that used its own tools (web search, code execution, MCP) goes back whole: the
``server_tool_use`` blocks with their result blocks and the text with its citations, in the places
they streamed, as the anthropic SDK's own accumulator gives the message. Before, the result blocks
and the citations were dropped without a word and the server calls were not sent back, so a turn
continued after ``pause_turn`` lost its searches. Also Responses ``output_text`` annotations."""

from __future__ import annotations

import functools
import json
import operator
from typing import Any

import attrs
import pytest

import fsm
from fsm import messages
from fsm.errors import InvalidInput
from fsm.results import CallStatus, Result, ServerToolResult, TextPart, ToolCall
from tests.test_clients import Replay, anthropic_http

SEARCH = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
FOUND = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": [
        {
            "type": "web_search_result",
            "title": "Oslo weather",
            "url": "https://example.org/oslo",
            "encrypted_content": "EqgfCioIARgBIiQ3",
            "page_age": "1 hour ago",
        }
    ],
}
CITED = {
    "type": "web_search_result_location",
    "cited_text": "Oslo: -3 C, clear",
    "url": "https://example.org/oslo",
    "title": "Oslo weather",
    "encrypted_index": "Eo8BCioIAhgBIiQy",
}
MCP = {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "lookup", "server_name": "wiki", "input": {}}
MCP_RESULT = {
    "type": "mcp_tool_result",
    "tool_use_id": "mcptoolu_1",
    "is_error": False,
    "content": [{"type": "text", "text": "Oslo is the capital of Norway."}],
}


def block_events(at: int, start: dict[str, Any], *deltas: dict[str, Any]) -> list[dict[str, Any]]:
    events = [{"type": "content_block_start", "index": at, "content_block": start}]
    events += [{"type": "content_block_delta", "index": at, "delta": delta} for delta in deltas]
    return [*events, {"type": "content_block_stop", "index": at}]


def web_search_turn(stop_reason: str = "tool_use", *, client_call: bool = True) -> list[dict[str, Any]]:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude", "content": []}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {**message, "usage": {"input_tokens": 9}}}]
    events += block_events(0, {"type": "text", "text": ""}, {"type": "text_delta", "text": "Let me search."})
    events += block_events(1, SEARCH, {"type": "input_json_delta", "partial_json": '{"query": "Oslo weather"}'})
    events += block_events(2, FOUND)
    events += block_events(
        3,
        {"type": "text", "text": "", "citations": None},
        {"type": "citations_delta", "citation": CITED},
        {"type": "text_delta", "text": "It is -3 C."},
    )
    events += block_events(4, MCP, {"type": "input_json_delta", "partial_json": '{"q": "Oslo"}'})
    events += block_events(5, MCP_RESULT)
    if client_call:
        use = {"type": "tool_use", "id": "toolu_1", "name": "remember", "input": {}}
        events += block_events(6, use, {"type": "input_json_delta", "partial_json": '{"fact": "cold"}'})
    events.append({"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 5}})
    return [*events, {"type": "message_stop"}]


def sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def test_the_turn_keeps_the_result_blocks_and_citations() -> None:
    result = fsm.reassemble(web_search_turn(), "anthropic")
    assert [d.code for d in result.problems()] == []
    assert result.server_tool_results == (ServerToolResult(FOUND, 2), ServerToolResult(MCP_RESULT, 5))
    assert [(c.wire_id, c.arguments, c.item) for c in result.server_tool_calls] == [
        ("srvtoolu_1", {"query": "Oslo weather"}, {k: v for k, v in SEARCH.items() if k != "input"}),
        ("mcptoolu_1", {"q": "Oslo"}, {k: v for k, v in MCP.items() if k != "input"}),
    ]
    assert result.text_parts[1] == TextPart("It is -3 C.", output_index=3, citations=(CITED,))
    assert result.text == "Let me search.It is -3 C."  # a citation is no text


def test_the_next_turn_is_the_message_the_sdk_accumulates() -> None:
    """The anthropic SDK's stream helper accumulates the message users send back (response.content):
    fsm's turn is that message, block for block (the beta helper's: MCP blocks are beta)."""
    ask: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Oslo?"}]
    client, replay, theirs = accumulated(sse(web_search_turn()), ask)
    result = fsm.reassemble(client.messages.create(model="m", max_tokens=64, messages=ask, stream=True))
    ours = messages.assistant_message(result, "anthropic")["content"]
    assert ours == [_without_empty(block) for block in theirs]
    # And it goes back through the SDK as it is, with the client call answered.
    answer = messages.tool_result(result.calls[0], "noted", "anthropic")
    conversation = [
        *ask,
        messages.assistant_message(result, "anthropic"),
        *messages.tool_results([answer], "anthropic"),
    ]
    client.messages.create(model="m", max_tokens=64, messages=conversation, stream=True).close()
    assert replay.sent[-1]["messages"][1]["content"] == ours
    # The non-beta helper leaves the MCP call's input as the block started it (MCP blocks are beta).
    with client.messages.stream(model="m", max_tokens=64, messages=ask) as stream:
        plain = stream.get_final_message()
    assert [block.input for block in plain.content if block.type == "mcp_tool_use"] == [{}]  # type: ignore[union-attr]


def accumulated(body: bytes, ask: list[dict[str, Any]]) -> tuple[Any, Replay, list[dict[str, Any]]]:
    """An anthropic client replaying ``body`` (and the replay, which keeps what it was sent), with
    the content the SDK's beta stream helper accumulates from it (``get_final_message``)."""
    anthropic = pytest.importorskip("anthropic")
    replay = Replay(body, anthropic_http())
    client = anthropic.Anthropic(api_key="test", base_url="http://mock", http_client=replay.client())
    with client.beta.messages.stream(model="m", max_tokens=64, messages=ask) as stream:
        final = stream.get_final_message()
    return client, replay, [block.model_dump(mode="json", exclude_none=True) for block in final.content]


def _without_empty(block: dict[str, Any]) -> dict[str, Any]:
    """The SDK's model keeps fields the stream never set as their defaults (a text block's empty
    citations list, a result's caller): the wire's block leaves them out."""
    return {key: value for key, value in block.items() if value not in ([], None)}


def test_a_paused_turn_goes_back_with_its_unanswered_server_call() -> None:
    """pause_turn: Claude stopped its own tool loop; the turn goes back as it is and the API runs the
    server call that has no result yet. A server call's result without the call is never sent."""
    events = web_search_turn("pause_turn", client_call=False)
    paused = [e for e in events if e.get("index") not in (2, 3, 4, 5)]  # the search asked, not answered
    result = fsm.reassemble(paused, "anthropic")
    assert result.finish_reason == "pause_turn" and result.calls == ()
    content = messages.assistant_message(result, "anthropic")["content"]
    assert content == [{"type": "text", "text": "Let me search."}, {**SEARCH, "input": {"query": "Oslo weather"}}]
    # A cut server call does not go back, nor do results that answer it.
    cut = block_events(1, SEARCH, {"type": "input_json_delta", "partial_json": '{"query": "Os'})[:-1]
    result = fsm.reassemble([*cut, {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}}], "anthropic")
    assert result.server_tool_calls[0].status is CallStatus.TRUNCATED
    stray = ServerToolResult(FOUND, 2)  # as a hand-made result might hold it
    for incomplete in ("omit", "include"):
        said = messages.assistant_message(
            attrs.evolve(result, server_tool_results=(stray,)), "anthropic", incomplete=incomplete
        )
        assert said["content"] == []


def test_whole_blocks_in_message_start_and_unknown_blocks() -> None:
    text = {"type": "text", "text": "Cold.", "citations": [CITED]}
    start = {"type": "message_start", "message": {"role": "assistant", "content": [SEARCH, FOUND, text]}}
    result = fsm.reassemble([start, {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}], "anthropic")
    assert result.server_tool_results == (ServerToolResult(FOUND, 1),)
    assert result.text_parts == (TextPart("Cold.", output_index=2, citations=(CITED,)),)
    odd = fsm.reassemble(
        [*block_events(0, {"type": "future_block", "file_id": "f"}), {"type": "message_stop"}], "anthropic"
    )
    assert "unknown-event" in odd.codes()  # a block no reading knows is said, not dropped unseen
    with pytest.raises(fsm.RemoteProtocolError, match="citation is str"):
        fsm.reassemble(block_events(0, {"type": "text"}, {"type": "citations_delta", "citation": "x"}), "anthropic")


def test_other_providers_server_calls_do_not_go_to_claude() -> None:
    hosted = ToolCall(0, "ws_1", "ws_1", "web_search", {}, "{}", CallStatus.COMPLETE, type="web_search_call")
    turn = Result("openai-responses", "stop", (), (), server_tool_calls=(hosted,), text="Done.")
    assert messages.assistant_message(turn, "anthropic")["content"] == [{"type": "text", "text": "Done."}]


def test_responses_annotations_go_back_on_their_message() -> None:
    cited = {"type": "url_citation", "start_index": 0, "end_index": 5, "url": "https://example.org", "title": "E"}
    item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}
    events = [
        {"type": "response.output_item.added", "output_index": 1, "item": item},
        {"type": "response.output_text.delta", "output_index": 1, "item_id": "msg_1", "delta": "Cold."},
        {
            "type": "response.output_text.annotation.added",
            "output_index": 1,
            "item_id": "msg_1",
            "content_index": 0,
            "annotation_index": 0,
            "annotation": cited,
        },
        {"type": "response.output_item.done", "output_index": 1, "item": {**item, "status": "completed"}},
        {"type": "response.completed", "response": {}},
    ]
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
    events[:0] = [
        {"type": "response.output_item.added", "output_index": 0, "item": reasoning},
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
    ]
    result = fsm.reassemble(events, "openai-responses")
    assert result.text_parts[0].citations == (cited,) and result.text == "Cold."
    said = messages.assistant_message(result, "openai-responses")
    assert said[1]["content"] == [{"type": "output_text", "text": "Cold.", "annotations": [cited]}]


def test_a_hand_made_result_block_of_the_wrong_type_is_refused_by_name() -> None:
    turn = Result("anthropic", "stop", (), (), server_tool_results=(FOUND,))  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match=r"result.server_tool_results\[0\] must be"):
        messages.assistant_message(turn, "anthropic")
    cited = Result("anthropic", "stop", (), (), text="a", text_parts=(TextPart("a", citations=("x",)),))  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match=r"text_parts\[0\].citations\[0\] must be"):
        messages.assistant_message(cited, "anthropic")


@pytest.mark.parametrize(
    ("event", "says"),
    [
        # A delta whose type is no string raised TypeError (unhashable) where its kind was looked up.
        ({"type": "content_block_delta", "index": 0, "delta": {"type": [5]}}, "delta.type is list"),
        # A result block's tool_use_id that is no string reached the next turn and raised TypeError there.
        (
            {"type": "content_block_start", "index": 0, "content_block": {**FOUND, "tool_use_id": {"a": 1}}},
            "content_block.tool_use_id is dict",
        ),
    ],
)
def test_wrong_typed_fields_are_refused_naming_them(event: dict[str, Any], says: str) -> None:
    with pytest.raises(fsm.RemoteProtocolError, match=says):
        fsm.reassemble([event, {"type": "message_stop"}], "anthropic")


def test_a_hand_made_result_with_odd_block_fields_still_builds() -> None:
    odd_call = ToolCall(0, "s", "s", "web_search", {}, "{}", CallStatus.COMPLETE, item={"type": ["server_tool_use"]})
    odd = Result(
        "anthropic",
        "stop",
        (),
        (),
        server_tool_calls=(odd_call,),
        server_tool_results=(ServerToolResult({"type": "web_search_tool_result", "tool_use_id": ["s"]}),),
    )
    assert messages.assistant_message(odd, "anthropic")["content"] == []


def test_a_citation_s_null_file_id_does_not_go_back() -> None:
    """A streamed document citation carries "file_id": null, and Anthropic refuses it back."""
    located = {
        "type": "char_location",
        "cited_text": "Oslo is cold.",
        "document_index": 0,
        "document_title": None,
        "start_char_index": 0,
        "end_char_index": 13,
        "file_id": None,
    }
    events = [
        *block_events(
            0,
            {"type": "text", "text": ""},
            {"type": "citations_delta", "citation": located},
            {"type": "text_delta", "text": "It is cold."},
        ),
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
    ]
    result = fsm.reassemble(events, "anthropic")
    assert result.text_parts[0].citations == (located,)  # kept as it came
    (block,) = messages.assistant_message(result, "anthropic")["content"]
    assert block["citations"] == [{k: v for k, v in located.items() if k != "file_id"}]  # document_title: null stays


def _unnulled(value: Any) -> Any:
    """A value with its null fields left out: LangChain's blocks are the SDK's models dumped whole,
    every optional field the wire left out written as null (a search result's page_age)."""
    if isinstance(value, dict):
        return {key: _unnulled(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_unnulled(item) for item in value]
    return value


def test_through_chat_anthropic_the_next_turn_is_the_bytes_one() -> None:
    """ChatAnthropic (v0) keeps Claude's blocks in their places: the server calls, their result blocks
    and the text's citations read from its chunks make the next turn the bytes make. Before, the
    result blocks and citations were read as nothing, and the server calls had no block to go back as."""
    from tests.test_langchain_places import chat_anthropic

    body = sse(web_search_turn())
    reference = messages.assistant_message(fsm.reassemble(body, "anthropic"), "anthropic")
    chunks = list(chat_anthropic(body, None)[1].stream("go"))
    for stream in (chunks, [functools.reduce(operator.add, chunks)]):  # a summed chunk merges blocks by index
        said = messages.assistant_message(fsm.reassemble(stream), "anthropic")
        assert _unnulled(said) == reference
        # no field the block type lacks: a summed chunk writes text and citations onto every block
        assert all(None not in block.values() for block in said["content"])
    # Chunks that name no model_provider (langchain-anthropic before 1.0) carry no places: their server
    # calls and results are read all the same and go back, after the turn's text (one block)
    for chunk in chunks:
        chunk.response_metadata.pop("model_provider", None)
    unplaced = fsm.reassemble(chunks)
    assert [c.wire_id for c in unplaced.server_tool_calls] == ["srvtoolu_1", "mcptoolu_1"]
    sent = _unnulled(messages.assistant_message(unplaced, "anthropic"))["content"]
    assert sent[0]["type"] == "text" and [b for b in sent if b["type"] == "text"] == sent[:1]
    assert sent[1:] == [_unnulled(b) for b in reference["content"] if b["type"] != "text"]


def test_the_code_execution_container_is_kept_for_the_next_request() -> None:
    """The container Claude ran code in: the next request names it (a turn continued after
    pause_turn must). The message_delta's word is the latest; the SDK's accumulator agrees."""
    anthropic = pytest.importorskip("anthropic")
    started = {"id": "container_1", "expires_at": "2026-12-02T01:00:00Z"}
    renewed = {"id": "container_1", "expires_at": "2026-12-02T02:00:00Z"}
    events = web_search_turn("pause_turn", client_call=False)
    events[0]["message"]["container"] = started
    events[-2]["delta"]["container"] = renewed
    result = fsm.reassemble(events, "anthropic")
    assert result.container == renewed
    assert fsm.reassemble(web_search_turn(), "anthropic").container is None  # no code ran: none named
    replay = Replay(sse(events), anthropic_http())
    client = anthropic.Anthropic(api_key="test", base_url="http://mock", http_client=replay.client())
    with client.beta.messages.stream(model="m", max_tokens=64, messages=[]) as stream:
        final = stream.get_final_message()
    assert final.container is not None and final.container.id == result.container["id"]
    assert (
        fsm.reassemble(client.messages.create(model="m", max_tokens=64, messages=[], stream=True)).container == renewed
    )
