"""Task 93: a hostile audit of merge errs91, and the gap it left.

Fixed (each test below failed before):

- OpenRouter sends a Gemini 3 call's thought signature as a ``reasoning.encrypted`` entry naming the
  call's id; it is read as the signature of a reasoning block (``item_id`` the call's id), and
  ``fsm.messages`` for ``"gemini"`` put it on a thought part, where Gemini 3 wants it on the call's
  ``functionCall`` part (it refuses a call sent back without it). Policy gemini-signature-by-call-id:
  it goes on that call's part now, the thought unsigned (a block of no text, only the signature, is
  no part at all); where the id names no call sent, or several, or a call signed already, it stays
  on the thought as read.

Judged fine (tried, nothing to fix):

- native Gemini -> DeltaEmitter (every ``reasoning_blocks``) -> the chat decoder -> ``"gemini"``
  next turn: each call's signature is on its part, as read from Gemini itself (it goes out in
  ``extra_content``, policy gemini-signatures-reemitted).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from fsm.reemit import DeltaEmitter

GEMINI = "google-gemini-v1"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "gen-1", "object": "chat.completion.chunk", "created": 1, "model": "g", "choices": [choice]}


def _openrouter_turn(thought: str | None = "**Weather**", signed: str = "tool_1", calls: int = 1) -> list[Any]:
    """Gemini 3 through OpenRouter: the thought a ``reasoning.text`` entry, the first call's signature a
    ``reasoning.encrypted`` one of the same index naming ``signed`` (the call's id), then the calls."""
    details = [{"type": "reasoning.text", "text": thought, "format": GEMINI, "index": 0}] if thought else []
    sig = {"type": "reasoning.encrypted", "data": "CiQBjz1r", "format": GEMINI, "id": signed, "index": 0}
    opened = [
        {"index": n, "id": f"tool_{n + 1}", "type": "function", "function": {"name": "weather", "arguments": ""}}
        for n in range(calls)
    ]
    args = [{"index": n, "function": {"arguments": '{"location":"Florence"}'}} for n in range(calls)]
    return [
        *([_chunk({"role": "assistant", "content": "", "reasoning_details": details})] if details else []),
        _chunk({"role": "assistant", "content": "", "reasoning_details": [sig]}),
        _chunk({"tool_calls": opened}),
        _chunk({"tool_calls": args}),
        _chunk({"content": ""}, "tool_calls"),
    ]


def _sse(payloads: list[Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(p).encode() + b"\n\n" for p in payloads) + b"data: [DONE]\n\n"


def _read(wire: bytes, provider: str, piece: int | None = None) -> fsm.Result:
    reader = fsm.Reassembler(provider)
    step = piece or len(wire)
    for at in range(0, len(wire), step):
        reader.feed_bytes(wire[at : at + step])
    return reader.close()


def _parts(result: fsm.Result) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = fsm.messages.assistant_message(result, "gemini")["parts"]
    return parts


_CALL = {"functionCall": {"name": "weather", "args": {"location": "Florence"}, "id": "tool_1"}}


@pytest.mark.parametrize("piece", [None, 1])
def test_openrouter_s_call_signature_goes_back_to_gemini_on_the_call_s_part(piece: int | None) -> None:
    """Before: ``{"text": "**Weather**", "thought": true, "thoughtSignature": "CiQBjz1r"}`` and an
    unsigned call, which Gemini 3 refuses."""
    result = _read(_sse(_openrouter_turn()), "openai-chat", piece)
    assert _parts(result) == [{"text": "**Weather**", "thought": True}, {**_CALL, "thoughtSignature": "CiQBjz1r"}]
    # OpenRouter itself still gets it back as it came, once
    details = fsm.messages.assistant_message(result, "openai-chat")
    assert [e["type"] for e in details["reasoning_details"]] == ["reasoning.text", "reasoning.encrypted"]
    assert "extra_content" not in details["tool_calls"][0]


def test_a_signature_alone_makes_no_thought_part() -> None:
    """A turn that streamed no thought text: before, an empty thought part held the call's signature."""
    result = fsm.reassemble(_openrouter_turn(thought=None), "openai-chat")
    assert _parts(result) == [{**_CALL, "thoughtSignature": "CiQBjz1r"}]


def test_parallel_calls_only_the_named_one_is_signed() -> None:
    result = fsm.reassemble(_openrouter_turn(calls=2), "openai-chat")
    parts = _parts(result)
    assert [p.get("thoughtSignature") for p in parts] == [None, "CiQBjz1r", None]
    assert parts[1]["functionCall"]["id"] == "tool_1"


def test_an_id_naming_no_call_sent_leaves_the_signature_on_the_thought() -> None:
    """Nothing dropped: an id naming no call of the turn (or a call left out as incomplete)."""
    result = fsm.reassemble(_openrouter_turn(signed="tool_9"), "openai-chat")
    assert _parts(result) == [{"text": "**Weather**", "thought": True, "thoughtSignature": "CiQBjz1r"}, _CALL]


def test_a_call_signed_already_keeps_its_own_and_the_block_keeps_its() -> None:
    turn = _openrouter_turn()
    turn[2]["choices"][0]["delta"]["tool_calls"][0]["extra_content"] = {"google": {"thought_signature": "T1dO"}}
    parts = _parts(fsm.reassemble(turn, "openai-chat"))
    assert [p.get("thoughtSignature") for p in parts] == ["CiQBjz1r", "T1dO"]


@pytest.mark.parametrize("piece", [None, 1])
def test_openrouter_re_emitted_by_a_gateway_then_read_back_signs_the_call_for_gemini(piece: int | None) -> None:
    """OpenRouter -> Result -> DeltaEmitter (as OpenRouter sends it) -> the chat decoder -> Gemini."""
    r = fsm.Reassembler("openai-chat", content_deltas=True)
    emitter = DeltaEmitter(reasoning_blocks="reasoning_details", source="openai-chat")
    chunks = emitter.chunks(r.feed_bytes(_sse(_openrouter_turn())))
    result = r.close()
    chunks += [*emitter.chunks(r.drain()), emitter.finish(result)]
    back = _read(_sse(chunks), "openai-chat", piece)
    signed = [{"text": "**Weather**", "thought": True}, {**_CALL, "thoughtSignature": "CiQBjz1r"}]
    assert _parts(back) == _parts(result) == signed


def _gemini_3_turn() -> list[dict[str, Any]]:
    def event(*parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
        return {"candidates": [candidate | ({"finishReason": finish} if finish else {})]}

    call = {"functionCall": {"name": "weather", "args": {"location": "Florence"}, "id": "tool_1"}}
    second = {"functionCall": {"name": "weather", "args": {"location": "Oslo"}, "id": "tool_2"}}
    return [
        event({"text": "**Weather**", "thought": True}),
        event({**call, "thoughtSignature": "CiQBjz1r"}),
        event(second),
        event({"text": ""}, finish="STOP"),
    ]


@pytest.mark.parametrize("blocks", [None, "thinking_blocks", "reasoning_details"])
@pytest.mark.parametrize("piece", [None, 1])
def test_native_gemini_re_emitted_and_read_back_signs_the_same_call(blocks: Any, piece: int | None) -> None:
    wire = _sse(_gemini_3_turn())
    r = fsm.Reassembler("gemini", content_deltas=True)
    emitter = DeltaEmitter(reasoning_blocks=blocks, source="gemini") if blocks else DeltaEmitter()
    chunks = emitter.chunks(r.feed_bytes(wire))
    source = r.close()
    chunks += [*emitter.chunks(r.drain()), emitter.finish(source)]
    back = _read(_sse(chunks), "openai-chat", piece)
    assert _parts(back) == _parts(source)
    assert [p.get("thoughtSignature") for p in _parts(back)] == [None, "CiQBjz1r", None]
