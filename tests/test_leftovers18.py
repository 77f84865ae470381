"""Cases an earlier stop left undone (its closing note's "Left undone"), each failing before its fix."""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm

CALL = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}


def chat_turn(delta: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"choices": [{"index": 0, "delta": delta}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [CALL]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]


def as_sse(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks) + b"data: [DONE]\n\n"


# -- A chat delta's text or reasoning of a wrong type ------------------------------------------------------


@pytest.mark.parametrize(
    ("delta", "said", "text"),
    [
        ({"content": 5}, "delta.content is int, not a string or list, is not read", ""),
        ({"content": {"text": "x"}}, "delta.content is dict, not a string or list, is not read", ""),
        ({"reasoning_content": ["a"]}, "delta.reasoning_content is list, not a string, is not read", ""),
        ({"content": "Hi", "reasoning": {"x": 1}}, "delta.reasoning is dict, not a string, is not read", "Hi"),
        (
            {"content": [{"type": "text", "text": "T"}], "reasoning": 3},
            "delta.reasoning is int, not a string, is not read",
            "T",
        ),
    ],
)
def test_a_chat_delta_text_or_reasoning_of_a_wrong_type_is_reported_and_read_past(
    delta: dict[str, Any], said: str, text: str
) -> None:
    # It was read past without a word (a turn's text or reasoning lost unseen); the call after it is kept
    from_bytes = fsm.Reassembler(provider="openai-chat")
    from_bytes.feed_bytes(as_sse(chat_turn(delta)))
    for result in (fsm.reassemble(chat_turn(delta), "openai-chat"), from_bytes.close()):
        assert [(c.id, c.arguments) for c in result.calls] == [("c1", {"a": 1})]
        assert result.text == text
        assert [(d.code, d.event, d.message) for d in result.diagnostics] == [("part-not-reassembled", 1, said)]


def test_reasoning_over_thinking_blocks_is_not_reported() -> None:
    # LiteLLM's thinking_blocks are read over reasoning_content, whatever that holds
    block = {"type": "thinking", "thinking": "Hm.", "signature": "s"}
    result = fsm.reassemble(chat_turn({"thinking_blocks": [block], "reasoning_content": {"x": 1}}), "openai-chat")
    assert ([r.text for r in result.reasoning], result.codes()) == (["Hm."], [])


# -- What a Converse block's start or delta holds besides text, reasoning and tool input ---------------------


def test_a_converse_citation_and_a_server_tool_result_are_kept() -> None:
    # A citation delta, a server tool's toolResult block (start and delta) were read as nothing, unseen.
    # They were reported; the result block is kept whole since (tests/test_bedrock_server_tools.py),
    # and the citation on its text block's part (tests/test_bedrock_citations.py).
    events = [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "Oslo is cold."}}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"citation": {"title": "Weather"}}}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"contentBlockStart": {"contentBlockIndex": 1, "start": {"toolResult": {"toolUseId": "t1"}}}},
        {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolResult": [{"text": "found"}]}}},
        {"contentBlockStop": {"contentBlockIndex": 1}},
        {"contentBlockStart": {"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "c1", "name": "f"}}}},
        {"contentBlockDelta": {"contentBlockIndex": 2, "delta": {"toolUse": {"input": '{"a": 1}'}}}},
        {"contentBlockStop": {"contentBlockIndex": 2}},
        {"messageStop": {"stopReason": "tool_use"}},
    ]
    result = fsm.reassemble(events, "bedrock")
    assert ([(c.id, c.arguments) for c in result.calls], result.text) == ([("c1", {"a": 1})], "Oslo is cold.")
    assert result.diagnostics == ()
    assert [(p.text, p.citations) for p in result.text_parts] == [("Oslo is cold.", ({"title": "Weather"},))]
    assert [r.block for r in result.server_tool_results] == [{"toolUseId": "t1", "content": [{"text": "found"}]}]
    plain = fsm.reassemble(
        [events[1], {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": None}}}], "bedrock"
    )
    assert "part-not-reassembled" not in plain.codes()  # a field holding nothing is no content
