"""Claude's assistant turn goes back in the order its content blocks streamed.

Anthropic wants the assistant message echoed as received: with interleaved thinking (Claude 4,
beta ``interleaved-thinking-2025-05-14``) a turn holds thinking, tool_use, thinking, tool_use, and
the sequence of thinking blocks may not be rearranged. ``fsm.messages`` used to rebuild the turn as
every thinking block, the text, then every call; it now places each block at its content block
index, over Anthropic's SSE, Bedrock InvokeModel chunks and the anthropic SDK (its own client,
``AnthropicBedrock`` and ``AsyncAnthropicBedrock``) alike."""

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


def _indexless(events: list[dict[str, Any]], at: int, every_event: bool) -> list[dict[str, Any]]:
    """``events`` with the tool block at ``at`` sent without its index: on its start, or on all its events."""
    out = [dict(e) for e in events]
    for event in out:
        if event.get("index") == at and (every_event or event["type"] == "content_block_start"):
            del event["index"]
    return out


def _read(wire: bytes, step: int) -> fsm.Result:
    r = Reassembler("auto")
    for at in range(0, len(wire), step):
        r.feed_bytes(wire[at : at + step])
    return r.close()


@pytest.mark.parametrize("every_event", [False, True], ids=["start-without-index", "no-index-at-all"])
@pytest.mark.parametrize(
    ("events", "content", "at", "places"),
    [(INTERLEAVED, INTERLEAVED_CONTENT, 3, [1, 3]), (WITH_TEXT, WITH_TEXT_CONTENT, 2, [2, 5])],
    ids=["thinking-call-thinking-call", "with-text-between-calls"],
)
def test_a_call_that_came_without_its_index_goes_back_where_it_streamed(
    events: Any, content: Any, at: int, places: list[int], every_event: bool
) -> None:
    """A tool_use without ``index`` (a proxy's: missing-routing-field) sits where it streamed: at
    the index a later event of it names, else one past the blocks before it (each block streams at
    its index in the message's content). It used to follow the call before it, so thinking,
    tool_use, thinking, tool_use went back as thinking, tool_use, tool_use, thinking, which
    Anthropic refuses (thinking blocks rearranged). Over Anthropic's SSE and Bedrock InvokeModel's
    chunks, whole and in 1- and 7-byte reads."""
    events = _indexless(events, at, every_event)
    for wire in (sse(events), invoke_stream(events)):
        for step in (len(wire), 7, 1):
            result = _read(wire, step)
            assert result.codes() == ["missing-routing-field"], (wire[:6], step)
            assert [call.output_index for call in result.calls] == places
            assert messages.assistant_message(result, "anthropic")["content"] == content, (wire[:6], step)


def test_a_first_block_without_its_index_goes_back_first() -> None:
    """No block before it: its place is 0, before the thinking that streamed after it."""
    events = turn(tool_use(0, "toolu_0", "{}"), thinking(1, "Now Bergen.", "sig_1"), tool_use(2, "toolu_2", "{}"))
    events = _indexless(events, 0, every_event=True)
    result = _read(sse(events), 7)
    assert [call.output_index for call in result.calls] == [0, 2]
    kinds = [block["type"] for block in messages.assistant_message(result, "anthropic")["content"]]
    assert kinds == ["tool_use", "thinking", "tool_use"]


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


@pytest.mark.parametrize(("events", "content"), CASES)
@pytest.mark.parametrize("indexless", [False, True], ids=["indexed", "a-call-without-its-index"])
def test_async_anthropic_bedrock_sends_the_next_turn_in_the_streamed_order(
    events: Any, content: Any, indexless: bool
) -> None:
    """The async AnthropicBedrock client, raw stream and stream helper, as the sync one above; also
    with the last tool block's start sent without its index (it keeps where it streamed)."""
    import asyncio

    if indexless:
        events = _indexless(events, max(e.get("index", -1) for e in events), every_event=False)
    replay = BedrockReplay(invoke_stream(events), anthropic_http())
    client = bedrock_client(replay, asynchronous=True)
    ask = [{"role": "user", "content": "weather in Oslo and Bergen?"}]

    async def loop() -> list[fsm.Result]:
        raw = await fsm.areassemble(
            await client.messages.create(model="claude", max_tokens=64, messages=ask, stream=True)
        )
        async with client.messages.stream(model="claude", max_tokens=64, messages=ask) as stream:
            helped = await fsm.areassemble(stream)
        for result in (raw, helped):
            sent = await client.messages.create(model="claude", max_tokens=64, messages=next_turn(result), stream=True)
            await sent.close()
            url, body = replay.sent[-1]
            assert url.endswith("/invoke-with-response-stream") and body["messages"][1]["content"] == content
            assert not check(body["messages"], "anthropic").rejected
        return [raw, helped]

    for result in asyncio.run(loop()):
        assert result.provider == "anthropic"
        assert result.codes() == (["missing-routing-field"] if indexless else [])


def server_use(at: int, call_id: str, pieces: list[str]) -> list[dict[str, Any]]:
    block = {"type": "server_tool_use", "id": call_id, "name": "web_search", "input": {}}
    deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
    return [
        {"type": "content_block_start", "index": at, "content_block": block},
        *({"type": "content_block_delta", "index": at, "delta": delta} for delta in deltas),
        {"type": "content_block_stop", "index": at},
    ]


def streamed_use(at: int, call_id: str, pieces: list[str]) -> list[dict[str, Any]]:
    start, delta, stop = tool_use(at, call_id, "")
    return [start, *({**delta, "delta": {**delta["delta"], "partial_json": p}} for p in pieces), stop]


NO_INDEX_TURNS = {
    "two-calls": turn(
        streamed_use(0, "toolu_0", ['{"city": ', '"Oslo"}']), streamed_use(1, "toolu_1", ['{"ci', 'ty": 2}'])
    ),
    "call-then-server-call": turn(
        streamed_use(0, "toolu_0", ['{"a": 1}']), server_use(1, "srvtoolu_1", ['{"query"', ': "oslo"}'])
    ),
    "thinking-text-call": turn(
        thinking(0, "Oslo first.", "sig_0"), said(1, "Looking. "), streamed_use(2, "toolu_2", ['{"a"', ": 1}"])
    ),
}


@pytest.mark.parametrize("index_less", [[0, 1], [1], [0, 1, 2]], ids=["first-two", "second", "all"])
@pytest.mark.parametrize("name", list(NO_INDEX_TURNS))
def test_blocks_sent_with_no_index_on_any_event_each_take_the_place_after_the_last_opened_one(
    name: str, index_less: list[int]
) -> None:
    """A proxy that leaves ``index`` off every event of a block: its deltas and stop go to the block
    opened last without one, placed after the last block opened. They went to the index-less block
    only for its first delta: the next ones opened calls of their own (unopened-call), a server
    block's joined the client call before it, the block never ended and two such calls shared a
    place. Now the turn is the one the indexed stream gives, but for missing-routing-field."""
    events = NO_INDEX_TURNS[name]
    reference = fsm.reassemble(sse(events), "anthropic")
    for at in index_less:
        events = _indexless(events, at, every_event=True)
    for step in (len(sse(events)), 7):
        got = _read(sse(events), step)
        for kept in ("calls", "server_tool_calls", "text_parts", "reasoning"):
            assert getattr(got, kept) == getattr(reference, kept), kept
        assert messages.assistant_message(got, "anthropic") == messages.assistant_message(reference, "anthropic")
        assert set(got.codes()) <= {"missing-routing-field"}  # said of a call block only
