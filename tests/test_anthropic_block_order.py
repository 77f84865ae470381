"""Claude's assistant turn goes back in the order its content blocks streamed.

Anthropic wants the assistant message echoed as received: with interleaved thinking (Claude 4,
beta ``interleaved-thinking-2025-05-14``) a turn holds thinking, tool_use, thinking, tool_use, and
the sequence of thinking blocks may not be rearranged. ``fsm.messages`` used to rebuild the turn as
every thinking block, the text, then every call; it now places each block at its content block
index, over Anthropic's SSE, Bedrock InvokeModel chunks and the anthropic SDK (its own client and
``AnthropicBedrock``) alike."""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from fsm import Reassembler, TextPart, messages
from fsm.history import check
from tests.test_bedrock_invoke import Replay as BedrockReplay
from tests.test_bedrock_invoke import bedrock_client, invoke_stream
from tests.test_clients import Replay, anthropic_http


def thinking(at: int, words: str, signature: str) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "index": at, "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_delta", "index": at, "delta": {"type": "thinking_delta", "thinking": words}},
        {"type": "content_block_delta", "index": at, "delta": {"type": "signature_delta", "signature": signature}},
        {"type": "content_block_stop", "index": at},
    ]


def said(at: int, words: str) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "index": at, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": at, "delta": {"type": "text_delta", "text": words}},
        {"type": "content_block_stop", "index": at},
    ]


def tool_use(at: int, call_id: str, arguments: str) -> list[dict[str, Any]]:
    block = {"type": "tool_use", "id": call_id, "name": "weather", "input": {}}
    return [
        {"type": "content_block_start", "index": at, "content_block": block},
        {"type": "content_block_delta", "index": at, "delta": {"type": "input_json_delta", "partial_json": arguments}},
        {"type": "content_block_stop", "index": at},
    ]


def turn(*blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    start = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude", "content": []}
    start |= {"stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 1}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for block in blocks:
        events += block
    events.append({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}})
    events.append({"type": "message_stop"})
    return events


INTERLEAVED = turn(
    thinking(0, "Oslo first.", "sig_0"),
    tool_use(1, "toolu_1", '{"city": "Oslo"}'),
    thinking(2, "Now Bergen.", "sig_2"),
    tool_use(3, "toolu_3", '{"city": "Bergen"}'),
)
INTERLEAVED_CONTENT = [
    {"type": "thinking", "thinking": "Oslo first.", "signature": "sig_0"},
    {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}},
    {"type": "thinking", "thinking": "Now Bergen.", "signature": "sig_2"},
    {"type": "tool_use", "id": "toolu_3", "name": "weather", "input": {"city": "Bergen"}},
]
WITH_TEXT = turn(
    thinking(0, "Oslo first.", "sig_0"),
    said(1, "Looking up Oslo. "),
    tool_use(2, "toolu_2", '{"city": "Oslo"}'),
    thinking(3, "Now Bergen.", "sig_3"),
    said(4, "And Bergen."),
    tool_use(5, "toolu_5", '{"city": "Bergen"}'),
)
WITH_TEXT_CONTENT = [
    {"type": "thinking", "thinking": "Oslo first.", "signature": "sig_0"},
    {"type": "text", "text": "Looking up Oslo. "},
    {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Oslo"}},
    {"type": "thinking", "thinking": "Now Bergen.", "signature": "sig_3"},
    {"type": "text", "text": "And Bergen."},
    {"type": "tool_use", "id": "toolu_5", "name": "weather", "input": {"city": "Bergen"}},
]
CASES = [
    pytest.param(INTERLEAVED, INTERLEAVED_CONTENT, id="thinking-call-thinking-call"),
    pytest.param(WITH_TEXT, WITH_TEXT_CONTENT, id="with-text-between-calls"),
]


def sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def from_bytes(data: bytes, provider: str) -> fsm.Result:
    r = Reassembler(provider)
    r.feed_bytes(data)
    return r.close()


def next_turn(result: fsm.Result) -> list[dict[str, Any]]:
    answers = [messages.tool_result(call, {"ok": True}, "anthropic") for call in result.complete_calls]
    ask: list[dict[str, Any]] = [{"role": "user", "content": "weather in Oslo and Bergen?"}]
    return [*ask, messages.assistant_message(result, "anthropic"), *messages.tool_results(answers, "anthropic")]


@pytest.mark.parametrize(("events", "content"), CASES)
def test_the_assistant_message_keeps_the_streamed_block_order(events: list[dict[str, Any]], content: Any) -> None:
    r = Reassembler("anthropic")
    for event in events:
        r.feed(event)
    result = r.close()
    assert result.diagnostics == ()
    assert messages.assistant_message(result, "anthropic") == {"role": "assistant", "content": content}
    assert not check(next_turn(result), "anthropic").rejected


def test_each_block_reports_its_content_block_index() -> None:
    r = Reassembler("anthropic")
    for event in WITH_TEXT:
        r.feed(event)
    result = r.close()
    assert [call.output_index for call in result.calls] == [2, 5]
    assert [block.output_index for block in result.reasoning] == [0, 3]
    assert result.text_output_index == 1
    assert result.text == "Looking up Oslo. And Bergen."
    assert result.text_parts == (TextPart("Looking up Oslo. ", output_index=1), TextPart("And Bergen.", output_index=4))


def test_text_without_its_block_index_goes_back_whole_at_the_first_text_block() -> None:
    """A text delta without ``index`` belongs to no block: the parts no longer hold all the text, so
    the text goes back as one block, none of it lost."""
    events = [dict(e) for e in WITH_TEXT]
    for event in events:
        if event["type"] == "content_block_delta" and event.get("index") == 4:
            del event["index"]
    r = Reassembler("anthropic")
    for event in events:
        r.feed(event)
    result = r.close()
    content = messages.assistant_message(result, "anthropic")["content"]
    thought, _, call, second, _, last = WITH_TEXT_CONTENT
    assert content == [thought, {"type": "text", "text": "Looking up Oslo. And Bergen."}, call, second, last]


@pytest.mark.parametrize(("events", "content"), CASES)
@pytest.mark.parametrize("provider", ["auto", "anthropic", "bedrock"])
def test_bytes_and_bedrock_invoke_chunks_keep_the_order(events: Any, content: Any, provider: str) -> None:
    pytest.importorskip("botocore")
    for wire in (sse(events), invoke_stream(events)):
        if wire.startswith(b"event:") and provider == "bedrock":
            continue  # SSE is no Bedrock framing
        result = from_bytes(wire, provider)
        assert messages.assistant_message(result, "anthropic")["content"] == content, (provider, wire[:6])


def test_a_call_that_came_without_its_index_follows_the_call_before_it() -> None:
    """A tool_use without ``index`` (a violation) has no place of its own: it goes back right after
    the call before it, and every block that has a place keeps it."""
    events = [dict(e) for e in INTERLEAVED]
    for event in events:
        if event.get("index") == 3 and event["type"] == "content_block_start":
            del event["index"]
    r = Reassembler("anthropic")
    for event in events:
        r.feed(event)
    result = r.close()
    assert result.codes() == ["missing-routing-field"]
    assert [call.output_index for call in result.calls] == [1, None]
    first, call, second, last = INTERLEAVED_CONTENT
    assert messages.assistant_message(result, "anthropic")["content"] == [first, call, last, second]


@pytest.mark.parametrize(("events", "content"), CASES)
def test_the_anthropic_sdk_sends_the_next_turn_in_the_streamed_order(events: Any, content: Any) -> None:
    anthropic = pytest.importorskip("anthropic")
    replay = Replay(sse(events), anthropic_http())
    client = anthropic.Anthropic(api_key="test", base_url="http://mock", http_client=replay.client())
    ask = [{"role": "user", "content": "weather in Oslo and Bergen?"}]
    raw = fsm.reassemble(client.messages.create(model="claude", max_tokens=64, messages=ask, stream=True))
    with client.messages.stream(model="claude", max_tokens=64, messages=ask) as stream:
        helped = fsm.reassemble(stream)
    for result in (raw, helped):
        history = next_turn(result)
        client.messages.create(model="claude", max_tokens=64, messages=history, stream=True).close()
        assert replay.sent[-1]["messages"][1]["content"] == content
        assert not check(replay.sent[-1]["messages"], "anthropic").rejected


@pytest.mark.parametrize(("events", "content"), CASES)
def test_anthropic_bedrock_sends_the_next_turn_in_the_streamed_order(events: Any, content: Any) -> None:
    replay = BedrockReplay(invoke_stream(events), anthropic_http())
    client = bedrock_client(replay)
    ask = [{"role": "user", "content": "weather in Oslo and Bergen?"}]
    raw = fsm.reassemble(client.messages.create(model="claude", max_tokens=64, messages=ask, stream=True))
    with client.messages.stream(model="claude", max_tokens=64, messages=ask) as stream:
        helped = fsm.reassemble(stream)
    for result in (raw, helped):
        assert result.provider == "anthropic"
        client.messages.create(model="claude", max_tokens=64, messages=next_turn(result), stream=True).close()
        url, body = replay.sent[-1]
        assert url.endswith("/invoke-with-response-stream") and body["messages"][1]["content"] == content


def test_converse_stream_calls_still_have_no_output_index() -> None:
    """ConverseStream's block index is not used as a place: no message builder takes its turn back."""
    events = [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "Hi."}}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"contentBlockStart": {"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "t1", "name": "w"}}}},
        {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{}"}}}},
        {"contentBlockStop": {"contentBlockIndex": 1}},
        {"messageStop": {"stopReason": "tool_use"}},
    ]
    r = Reassembler("bedrock")
    for event in events:
        r.feed(event)
    result = r.close()
    assert [call.output_index for call in result.calls] == [None]
    assert result.text_output_index is None
