"""Hostile input against the Bedrock Converse history reading and Claude's server tool turns, each
case one that went wrong before its fix."""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from fsm import history, messages
from fsm.errors import LocalProtocolError
from fsm.history import RepairPolicy
from fsm.results import Result
from tests.test_server_tool_turns import CITED, FOUND, MCP, MCP_RESULT, SEARCH, block_events


def converse_use(cid: str) -> dict[str, Any]:
    return {"toolUse": {"toolUseId": cid, "name": "weather", "input": {}}}


def converse_answer(cid: str) -> dict[str, Any]:
    return {"toolResult": {"toolUseId": cid, "content": [{"text": "-3 C"}]}}


def claude_use(cid: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": cid, "name": "weather", "input": {}}


def claude_answer(cid: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": cid, "content": "-3 C"}


@pytest.mark.parametrize(
    ("fmt", "use", "answer"), [("bedrock", converse_use, converse_answer), ("anthropic", claude_use, claude_answer)]
)
def test_repair_never_joins_a_calls_message_to_a_results_message(fmt: str, use: Any, answer: Any) -> None:
    # Results sent as the assistant: dropping the dangling call's message brought two assistant
    # messages together, and the join made one message that both calls and answers, which check and
    # repair itself then refused ("a message cannot both make tool calls and answer them").
    conversation = [
        {"role": "user", "content": [{"text": "q"}] if fmt == "bedrock" else "q"},
        {"role": "assistant", "content": [use("t1")]},
        {"role": "assistant", "content": [answer("t1")]},
        {"role": "assistant", "content": [use("t2")]},
        {"role": "assistant", "content": [use("t3")]},
        {"role": "user", "content": [answer("t3")]},
    ]
    # (Since audit 30 the result sent as the assistant moves into a user message of its own there.)
    fixed, changes = history.repair(conversation, RepairPolicy(dangling="drop-call"), fmt)  # type: ignore[arg-type]
    assert [c.kind for c in changes] == [
        "moved-misplaced-result",
        "dropped-empty-message",
        "dropped-call",
        "dropped-empty-message",
    ]
    assert fixed == [*conversation[:2], {"role": "user", "content": [answer("t1")]}, *conversation[4:]]
    assert history.check(fixed, fmt).findings == ()  # type: ignore[arg-type]
    assert history.repair(fixed, RepairPolicy(dangling="drop-call"), fmt) == (fixed, [])  # type: ignore[arg-type]


def claude_turn(*blocks: list[dict[str, Any]]) -> Result:
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}}
    ]
    for block in blocks:
        events += block
    events.append({"type": "message_delta", "delta": {"stop_reason": "end_turn"}})
    return fsm.reassemble(events, "anthropic")


def searched(at: int, query: str) -> list[dict[str, Any]]:
    return block_events(at, SEARCH, {"type": "input_json_delta", "partial_json": json.dumps({"query": query})})


def kinds_and_ids(result: Result) -> list[tuple[str, str]]:
    content = messages.assistant_message(result, "anthropic")["content"]
    return [(block["type"], block.get("id") or block.get("tool_use_id")) for block in content]


def searched_and_found(cid: str) -> list[tuple[str, str]]:
    return [("server_tool_use", cid), ("web_search_tool_result", cid)]


def test_a_server_result_without_its_index_goes_back_after_its_call() -> None:
    # It took the place of the block before it in the list, the other server call's: the result went
    # back before the call it answers, which Anthropic refuses.
    no_index = [{k: v for k, v in e.items() if k != "index"} for e in block_events(3, MCP_RESULT)]
    result = claude_turn(searched(0, "a"), block_events(1, FOUND), block_events(2, MCP), no_index)
    assert kinds_and_ids(result) == [
        *searched_and_found("srvtoolu_1"),
        ("mcp_tool_use", "mcptoolu_1"),
        ("mcp_tool_result", "mcptoolu_1"),
    ]


def test_a_server_result_at_a_falling_index_goes_back_after_its_call() -> None:
    result = claude_turn(block_events(0, FOUND), searched(1, "a"), block_events(2, {"type": "text", "text": "ok"}))
    assert kinds_and_ids(result) == [*searched_and_found("srvtoolu_1"), ("text", None)]


def test_duplicate_server_ids_go_back_under_the_ids_the_calls_were_given() -> None:
    # Both calls went back as srvtoolu_1 (Anthropic refuses ids used twice), each result under it.
    result = claude_turn(searched(0, "a"), block_events(1, FOUND), searched(2, "b"), block_events(3, FOUND))
    assert [call.id for call in result.server_tool_calls] == ["srvtoolu_1", "srvtoolu_1_d2"]
    assert kinds_and_ids(result) == [*searched_and_found("srvtoolu_1"), *searched_and_found("srvtoolu_1_d2")]


def test_a_replayed_server_result_goes_back_once() -> None:
    # A proxy repeated the result block's start: two results for one call went back.
    replayed = block_events(1, FOUND)
    result = claude_turn(searched(0, "a"), [replayed[0], *replayed], block_events(2, {"type": "text", "text": "ok"}))
    assert len(result.server_tool_results) == 2  # what the stream said, kept
    assert kinds_and_ids(result) == [*searched_and_found("srvtoolu_1"), ("text", None)]


def test_citations_stay_when_a_text_delta_came_without_its_index() -> None:
    # Text that came in no block goes back as one text block: its citations were left out of it.
    cited = block_events(0, {"type": "text", "text": ""}, {"type": "citations_delta", "citation": CITED})
    cited[2:2] = [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "It is cold."}}]
    stray = {"type": "content_block_delta", "delta": {"type": "text_delta", "text": " More."}}
    result = claude_turn(cited, [stray])
    assert messages.assistant_message(result, "anthropic")["content"] == [
        {"type": "text", "text": "It is cold. More.", "citations": [CITED]}
    ]


def test_a_converse_block_both_calling_and_answering_is_refused() -> None:
    # Read as its call, the result beside it unseen: the history was clean to check, and boto3
    # refuses such a block (one member of its union, not two).
    both = {**converse_use("t1"), **converse_answer("t1")}
    conversation = [{"role": "assistant", "content": [both]}, {"role": "user", "content": [converse_answer("t1")]}]
    with pytest.raises(LocalProtocolError, match="message 1: a Converse block holds both toolUse and toolResult"):
        history.check(conversation)
    with pytest.raises(LocalProtocolError, match="holds both"):
        history.repair(conversation)


@pytest.mark.parametrize("strict", [False, True])
def test_a_citation_that_names_no_text_is_said(strict: bool) -> None:
    # It vanished from the turn without a word: no text part to hold it, no diagnostic.
    stray = {"type": "content_block_delta", "delta": {"type": "citations_delta", "citation": CITED}}
    text = block_events(0, {"type": "text", "text": "Cold."})
    result = fsm.reassemble(
        [*text, stray, {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}], "anthropic", strict=strict
    )
    assert [(d.code, d.event) for d in result.diagnostics] == [("part-not-reassembled", 3)]
    annotation = {
        "type": "response.output_text.annotation.added",
        "item_id": "msg_1",
        "annotation": {"type": "url_citation"},
    }
    result = fsm.reassemble(
        [annotation, {"type": "response.completed", "response": {}}], "openai-responses", strict=strict
    )
    assert [(d.code, d.event) for d in result.diagnostics] == [("part-not-reassembled", 1)]
    assert "without output_index" in result.diagnostics[0].message
