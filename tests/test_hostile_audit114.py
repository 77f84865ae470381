"""Hostile audit 114 of helper 108's work (merge a10ed9e).

1. Policy signed-block-ends: an index-less reasoning piece (LiteLLM's ``thinking_blocks`` before it
   numbered them, a proxy's) that follows a block already signed was read into that block: a Claude
   turn of interleaved thinking (thinking, call, thinking, call) came back as one block, its first
   signature lost. Task 108 made that loss said (``part-not-reassembled``: "another signature replaced
   the one it held") on a legitimate stream. A signature ends its block (Claude sends it last, Gemini's
   ends its run): a piece with text, redacted data or another signature after it opens the next block,
   so both blocks and both signatures are kept and nothing is said.

The rest found no bug and is pinned here: hostile ``declined-truncated`` entries (a call that completed,
one never opened, another call's id, an index of another type, twice) end no call in silence and read
alike in pieces; the empty entries of policy reasoning-blocks-in-order make no block LiteLLM's builder
keeps, and none that goes back to Claude unsigned.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from fsm import messages


def _chunk(**delta: Any) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion.chunk", "model": "claude", "choices": [{"index": 0, "delta": delta}]}


def _finish(reason: str) -> dict[str, Any]:
    choice = {"index": 0, "delta": {}, "finish_reason": reason}
    return {"id": "c", "object": "chat.completion.chunk", "choices": [choice]}


def _thinking(said: str, **more: Any) -> dict[str, Any]:
    return _chunk(reasoning_content=said, thinking_blocks=[{"type": "thinking", "thinking": said, **more}])


def _call(at: int, call_id: str) -> dict[str, Any]:
    entry = {"index": at, "id": call_id, "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}
    return _chunk(tool_calls=[entry])


def _interleaved(redacted: bool = False) -> list[dict[str, Any]]:
    """LiteLLM's chunks of a Claude turn of interleaved thinking, its thinking_blocks without index."""
    chunks = [_thinking("first "), _thinking("thought"), _thinking("", signature="SIG1"), _call(0, "toolu_1")]
    if redacted:
        chunks.append(_chunk(thinking_blocks=[{"type": "redacted_thinking", "data": "UkVE"}]))
    chunks += [_thinking("second"), _thinking("", signature="SIG2"), _call(1, "toolu_2"), _finish("tool_calls")]
    return chunks


def _sse(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def _read(wire: bytes, piece: int | None, strict: bool) -> fsm.Result:
    reader = fsm.Reassembler("openai-chat", strict=strict)
    step = piece or len(wire)
    for at in range(0, len(wire), step):
        reader.feed_bytes(wire[at : at + step])
    return reader.close()


@pytest.mark.parametrize("piece", [None, 1, 7])
@pytest.mark.parametrize("strict", [False, True])
def test_index_less_signed_blocks_stay_apart_and_nothing_is_said(piece: int | None, strict: bool) -> None:
    result = _read(_sse(_interleaved()), piece, strict)
    assert [(r.text, r.signature) for r in result.reasoning] == [("first thought", "SIG1"), ("second", "SIG2")]
    assert "part-not-reassembled" not in result.codes()
    assert [c.id for c in result.calls] == ["toolu_1", "toolu_2"]
    assert fsm.reassemble(_interleaved(), "openai-chat").reasoning == result.reasoning  # dicts read alike


def test_a_redacted_block_between_them_is_a_block_of_its_own() -> None:
    result = fsm.reassemble(_interleaved(redacted=True), "openai-chat")
    shown = [(r.text, r.signature, r.redacted) for r in result.reasoning]
    assert shown == [("first thought", "SIG1", None), ("", None, "UkVE"), ("second", "SIG2", None)]
    assert "part-not-reassembled" not in result.codes()
    # each goes back to Claude as the block it was, its signature on it
    sent = messages.assistant_message(result, "anthropic")["content"]
    kinds = [(b["type"], b.get("signature"), b.get("data")) for b in sent if "thinking" in b["type"]]
    assert kinds == [("thinking", "SIG1", None), ("redacted_thinking", None, "UkVE"), ("thinking", "SIG2", None)]


def test_the_same_signature_again_or_text_before_a_signature_keeps_one_block() -> None:
    again = [_thinking("a"), _thinking("", signature="SIG1"), _thinking("", signature="SIG1"), _finish("stop")]
    result = fsm.reassemble(again, "openai-chat")
    assert [(r.text, r.signature) for r in result.reasoning] == [("a", "SIG1")]
    assert result.codes().count("part-not-reassembled") == 0
    # an indexed block's own second signature is still said (task 108's rule, under its index)
    indexed = [_thinking("a", index=0), _thinking("", signature="S1", index=0), _thinking("", signature="S2", index=0)]
    said = fsm.reassemble([*indexed, _finish("stop")], "openai-chat")
    assert [(r.text, r.signature) for r in said.reasoning] == [("a", "S2")]
    assert said.codes().count("part-not-reassembled") == 1


# -- declined-truncated entries, hostile ------------------------------------------------------------------

_OPENED = [
    _chunk(tool_calls=[{"index": 0, "id": "call_a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]),
    _chunk(
        tool_calls=[{"index": 1, "id": "call_b", "type": "function", "function": {"name": "g", "arguments": '{"y": '}}]
    ),
]
_HOSTILE = [
    {"index": 1, "id": "call_b", "status": "declined-truncated"},
    {"index": 0, "id": "call_a", "status": "declined-truncated"},  # a call that completed
    {"index": 5, "id": "call_zz", "status": "declined-truncated"},  # one never opened
    {"index": 1, "id": "call_a", "status": "declined-truncated"},  # another call's id
    {"index": "1", "id": "call_b", "status": "declined-truncated"},
    {"index": True, "id": "call_b", "status": "declined-truncated"},
    {"index": 1, "id": "call_b", "status": "DECLINED-TRUNCATED"},
    "declined-truncated",
]


@pytest.mark.parametrize("finish", ["tool_calls", None])
@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("entries", [[e] for e in _HOSTILE] + [_HOSTILE[:1] * 2, _HOSTILE], ids=str)
def test_hostile_declined_truncated_entries_give_typed_answers_and_lose_no_call(
    entries: list[Any], strict: bool, finish: str | None
) -> None:
    # DeltaEmitter.finish's error names the status on the last chunk, beside the finish; here anyone's
    from fsm.wire.decoders._listed_calls import DECLINES_NOTE, OWN_ERROR

    last = _chunk() if finish is None else _finish(finish)
    last["error"] = {"type": OWN_ERROR, "message": DECLINES_NOTE + "x", "incomplete_tool_calls": entries}
    wire = _sse([*_OPENED, last])
    seen = []
    for piece in (None, 7):
        try:
            result = _read(wire, piece, strict)
        except fsm.RemoteProtocolError:
            continue  # strict: a violation the stream holds (call_b's JSON, an entry naming no call)
        every = sorted(c.id for c in (*result.calls, *result.declined_calls))
        assert every == ["call_a", "call_b"]  # none silently ended away
        assert all(c.status is not fsm.CallStatus.COMPLETE for c in result.calls if c.id == "call_b")
        seen.append((result.calls, result.declined_calls, [(d.code, d.message) for d in result.diagnostics]))
    assert all(s == seen[0] for s in seen)


# -- reasoning-blocks-in-order's empty entries, read by LiteLLM -----------------------------------------


def _claude_empty_between() -> list[dict[str, Any]]:
    message = {"id": "m", "type": "message", "role": "assistant", "model": "m", "content": []}
    message |= {"stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
    thinking = {"type": "thinking", "thinking": ""}

    def delta(at: int, **fields: Any) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": at, "delta": fields}

    return [
        {"type": "message_start", "message": message},
        *({"type": "content_block_start", "index": at, "content_block": thinking} for at in (0, 1)),
        delta(1, type="thinking_delta", thinking="x"),
        delta(1, type="signature_delta", signature="S1"),
        {"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}},
        delta(2, type="text_delta", text="Hi"),
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {}},
        {"type": "message_stop"},
    ]


@pytest.mark.parametrize("flush", ["incremental", "on-finish"])
def test_the_empty_entries_make_no_empty_block_litellm_keeps_nor_one_claude_gets_back(
    offline_litellm: Any, flush: str
) -> None:
    # Block 0 opened and said nothing: it goes out as an empty entry before block 1's first (policy
    # reasoning-blocks-in-order). LiteLLM's own builder keeps no block of it; fsm reads it back in its
    # place, and neither reading sends Claude an unsigned thinking block.
    reader = fsm.Reassembler("anthropic", content_deltas=True)
    outputs = [out for event in _claude_empty_between() for out in reader.feed(event)]
    whole = reader.close()
    emitter = fsm.DeltaEmitter(flush, reasoning_blocks="thinking_blocks", source="anthropic")
    chunks = [emitter.start(), *emitter.chunks([*outputs, *reader.drain()]), emitter.finish(whole)]
    built = offline_litellm.stream_chunk_builder([offline_litellm.ModelResponseStream(**c) for c in chunks])
    assert built.choices[0].message.thinking_blocks == [{"type": "thinking", "thinking": "x", "signature": "S1"}]
    back = fsm.reassemble(_sse(chunks), "openai-chat")
    assert [(r.text, r.signature) for r in back.reasoning] == [(r.text, r.signature) for r in whole.reasoning]
    sent = messages.assistant_message(back, "anthropic")["content"]
    assert [b for b in sent if b["type"] == "thinking"] == [{"type": "thinking", "thinking": "x", "signature": "S1"}]
