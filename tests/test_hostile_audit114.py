"""Hostile audit 114 of helper 108's work (merge a10ed9e).

1. Policy signed-block-ends: an index-less reasoning piece (LiteLLM's ``thinking_blocks`` before it
   numbered them, a proxy's) that follows a block already signed was read into that block: a Claude
   turn of interleaved thinking (thinking, call, thinking, call) came back as one block, its first
   signature lost. Task 108 made that loss said (``part-not-reassembled``: "another signature replaced
   the one it held") on a legitimate stream. A signature ends its block (Claude sends it last, Gemini's
   ends its run): a piece with text, redacted data or another signature after it opens the next block,
   so both blocks and both signatures are kept and nothing is said.
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
