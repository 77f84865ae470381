"""Anthropic's context management compacts a long conversation into a ``compaction`` block (its
``content`` and opaque ``encrypted_content`` set by ``compaction_delta``), which must go back in the
next request so the context stays compacted. Before, the block and its deltas were reported
(``unknown-event``) and dropped: the next turn sent the whole context again."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

import fsm
from fsm import messages
from fsm.errors import InvalidInput
from fsm.results import Compaction
from tests.test_server_tool_turns import accumulated, block_events, sse

SUMMARY = "The user asked for the weather in Oslo; it was -3 C."


def compacted_turn(*deltas: dict[str, Any], stop: bool = True) -> list[dict[str, Any]]:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude", "content": []}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {**message, "usage": {"input_tokens": 9}}}]
    start = {"type": "compaction", "content": None, "signature": "c2ln", "tool_changes": []}
    events += block_events(0, start, *deltas) if stop else block_events(0, start, *deltas)[:-1]
    events += block_events(1, {"type": "text", "text": ""}, {"type": "text_delta", "text": "Now Bergen."})
    use = {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}
    events += block_events(2, use, {"type": "input_json_delta", "partial_json": '{"city": "Bergen"}'})
    events.append({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}})
    return [*events, {"type": "message_stop"}]


DELTA = {"type": "compaction_delta", "content": SUMMARY, "encrypted_content": "ZW5j"}


def test_the_compaction_block_is_kept_and_goes_back_first() -> None:
    result = fsm.reassemble(compacted_turn(DELTA), "anthropic")
    assert result.codes() == []
    block = {
        "type": "compaction",
        "content": SUMMARY,
        "signature": "c2ln",
        "tool_changes": [],
        "encrypted_content": "ZW5j",
    }
    assert result.compactions == (Compaction(block, 0),)
    sent = messages.assistant_message(result, "anthropic")["content"]
    assert [b["type"] for b in sent] == ["compaction", "text", "tool_use"] and sent[0] == block


def test_each_delta_sets_the_whole_summary() -> None:
    # as the anthropic SDK takes them: a later delta's content replaces, it does not append
    later = {"type": "compaction_delta", "content": SUMMARY + " Then Bergen.", "encrypted_content": "ZW5jMg=="}
    (kept,) = fsm.reassemble(compacted_turn(DELTA, later), "anthropic").compactions
    assert (kept.block["content"], kept.block["encrypted_content"]) == (SUMMARY + " Then Bergen.", "ZW5jMg==")


def test_a_failed_compaction_goes_back_as_it_came() -> None:
    # content null: the compaction produced no summary; Anthropic takes the block back as a no-op
    (kept,) = fsm.reassemble(compacted_turn(), "anthropic").compactions
    assert kept.block["content"] is None


def test_a_cut_stream_keeps_the_block_as_it_stands() -> None:
    events = compacted_turn(DELTA, stop=False)[:3]
    result = fsm.reassemble(events, "anthropic")
    assert [c.block["content"] for c in result.compactions] == [SUMMARY]


def test_the_next_turn_is_the_message_the_sdk_accumulates() -> None:
    ask: list[dict[str, Any]] = [{"role": "user", "content": "And Bergen?"}]
    client, replay, theirs = accumulated(sse(compacted_turn(DELTA)), ask)
    result = fsm.reassemble(client.beta.messages.create(model="m", max_tokens=64, messages=ask, stream=True))
    ours = messages.assistant_message(result, "anthropic")["content"]
    assert ours == theirs
    conversation = [*ask, messages.assistant_message(result, "anthropic")]
    client.beta.messages.create(model="m", max_tokens=64, messages=conversation, stream=True).close()  # type: ignore[arg-type]
    assert replay.sent[-1]["messages"][1]["content"] == ours


@pytest.mark.parametrize(
    ("delta", "says"),
    [
        ({"type": "compaction_delta", "content": ["x"]}, "compaction_delta.content"),
        (
            {"type": "compaction_delta", "content": "x", "encrypted_content": {"a": 1}},
            "compaction_delta.encrypted_content",
        ),
    ],
)
def test_a_delta_field_of_a_wrong_type_is_a_typed_error_naming_it(delta: dict[str, Any], says: str) -> None:
    reader = fsm.Reassembler(provider="anthropic")
    with pytest.raises(fsm.RemoteProtocolError, match=says):
        for event in compacted_turn(delta):
            reader.feed(event)
    assert reader.close().compactions[0].block["content"] is None  # what came before stays


def test_a_compaction_delta_without_its_block_is_reported() -> None:
    events = [{"type": "content_block_delta", "index": 4, "delta": DELTA}]
    result = fsm.reassemble(events, "anthropic")
    assert result.compactions == () and "unknown-event" in result.codes()


def test_a_hand_made_compaction_of_the_wrong_type_is_refused_by_name() -> None:
    turn = attrs.evolve(fsm.reassemble(compacted_turn(DELTA), "anthropic"), compactions=({"type": "compaction"},))
    with pytest.raises(InvalidInput, match=r"result.compactions\[0\] must be"):
        messages.assistant_message(turn, "anthropic")


def test_a_compaction_block_without_an_index_takes_its_place_as_other_blocks() -> None:
    # a proxy that leaves the index off: the block takes the place after the last opened one, as a
    # text block does (it was kept at no place, and went back first whatever came before it)
    events = [{k: v for k, v in e.items() if k != "index"} for e in compacted_turn(DELTA)[:4]]
    text = [{"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "Hi."}}]
    result = fsm.reassemble([events[0], *text, {"type": "content_block_stop", "index": 0}, *events[1:]], "anthropic")
    assert [(c.output_index, c.block["content"]) for c in result.compactions] == [(1, SUMMARY)]
    assert [b["type"] for b in messages.assistant_message(result, "anthropic")["content"]] == ["text", "compaction"]
