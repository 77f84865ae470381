"""Hostile audit 83: the chat re-emitters (``DeltaEmitter``, its reasoning blocks and Gemini's
signatures) attacked differentially. Every capture under ../shared/captures and fuzzed streams
(megabyte reasoning in a thousand pieces and in one, thousands of signed blocks with calls between,
lone surrogates in every string, 1 MB signatures, empty blocks, redacted-only turns, thoughts
between calls, Responses items by the hundred, an OpenRouter chat source with late signatures) went
through ``DeltaEmitter`` in every mode (``incremental`` and ``on-finish``, no ``reasoning_blocks``
and both dialects, with and without ``source``); every chunk was validated as openai-python's
``ChatCompletionChunk`` and written as UTF-8, read back by ``Reassembler("openai-chat")`` whole and a
byte at a time and by openai-python's ``ChatCompletionStreamState``, and timed at two sizes (time
grew as size did: x3.8 to x4.8 for x4, at 1 to 4 MB). Found and fixed:

- F1: a reasoning block's signature, redacted data, encrypted content, item id, summary or format
  holding a lone surrogate went out as it was under ``reasoning_blocks``: no chunk holding one can
  be written as UTF-8 (``json.dumps(chunk, ensure_ascii=False).encode()`` raised
  ``UnicodeEncodeError``), though a call's id, name and signature went out escaped. Now each goes
  out as its ``\\udXXX`` escape too (policy emitted-lone-surrogate).
- F2: a reasoning piece that ended in a high surrogate (half a pair a server sliced by UTF-16 code
  unit) waited for its low half until the stream closed, even after its block ended: its U+FFFD
  came out after every later block's pieces, so the re-emitted plain ``reasoning_content`` read back
  in another order, and a block whose only text it was went out after the blocks behind it (read
  back out of place). Now a piece of another block cuts the pair (``fsm/content.py``: settle).
- F3: outputs built by hand whose fields are of the wrong type (a ``CallFinished`` of no call, a
  ``ContentDelta`` of an unknown kind or unhashable block) raised ``AttributeError``, ``KeyError``
  or ``TypeError`` out of ``DeltaEmitter.chunks()``; and some went out into a chunk as they were (a
  piece of text that is no string). Now each is ``InvalidInput`` naming the output, nothing of the
  list sent.

Leftover 1 (a late Gemini signature under ``incremental``) and leftover 2 (the ``format`` of a block
whose source is known) are held by tests/test_reemit_gemini_signatures.py and
tests/test_reemit_reasoning_blocks.py."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from openai.types.chat import ChatCompletionChunk

import fsm
from fsm import Reassembler, Result
from fsm.reemit import DeltaEmitter

DIALECTS = (None, "thinking_blocks", "reasoning_details")


def sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def reemit(data: bytes, provider: str, dialect: str | None) -> tuple[list[dict[str, Any]], Result]:
    r = Reassembler(provider, content_deltas=True)
    emitter = DeltaEmitter(reasoning_blocks=dialect, source=provider)  # type: ignore[arg-type]
    chunks = emitter.chunks(r.feed_bytes(data))
    result = r.close()
    chunks += [*emitter.chunks(r.drain()), emitter.finish(result)]
    for chunk in chunks:
        ChatCompletionChunk.model_validate(chunk)
    return chunks, result


def written(chunks: list[dict[str, Any]]) -> bytes:
    """The chunks as a gateway writes them: UTF-8 JSON, not ASCII-escaped."""
    body = b"".join(b"data: " + json.dumps(c, ensure_ascii=False).encode("utf-8") + b"\n\n" for c in chunks)
    return body + b"data: [DONE]\n\n"


def thinking(at: int, pieces: list[str], signature: str | None) -> list[dict[str, Any]]:
    events = [{"type": "content_block_start", "index": at, "content_block": {"type": "thinking", "thinking": ""}}]
    delta = [{"type": "thinking_delta", "thinking": p} for p in pieces]
    delta += [{"type": "signature_delta", "signature": signature}] if signature is not None else []
    events += [{"type": "content_block_delta", "index": at, "delta": d} for d in delta]
    return [*events, {"type": "content_block_stop", "index": at}]


def redacted(at: int, data: str) -> list[dict[str, Any]]:
    start = {"type": "content_block_start", "index": at, "content_block": {"type": "redacted_thinking", "data": data}}
    return [start, {"type": "content_block_stop", "index": at}]


def claude(*blocks: list[dict[str, Any]]) -> bytes:
    start = {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}}
    end = [{"type": "message_delta", "delta": {"stop_reason": "end_turn"}}, {"type": "message_stop"}]
    return sse([start, *[e for block in blocks for e in block], *end])


def blocks_of(result: Result) -> list[tuple[Any, ...]]:
    return [(r.text, r.signature, r.redacted, r.encrypted_content, r.item_id) for r in result.reasoning]


@pytest.mark.parametrize("dialect", DIALECTS[1:])
def test_f1_a_blocks_strings_holding_a_lone_surrogate_go_out_escaped(dialect: str) -> None:
    data = claude(thinking(0, ["Think."], "S\udc00"), redacted(1, "R\ud800"))
    chunks, source = reemit(data, "anthropic", dialect)
    assert blocks_of(source) == [("Think.", "S\udc00", None, None, None), ("", None, "R\ud800", None, None)]
    body = written(chunks)  # raised UnicodeEncodeError: the signature and data went out raw
    back = fsm.reassemble(body, provider="openai-chat")
    assert blocks_of(back) == [("Think.", "S\\udc00", None, None, None), ("", None, "R\\ud800", None, None)]


def test_f1_a_responses_items_strings_holding_a_lone_surrogate_go_out_escaped() -> None:
    item = {"type": "reasoning", "id": "rs_\ud800"}
    done = {**item, "summary": [{"type": "summary_text", "text": "Sum."}], "encrypted_content": "gA\udc00"}
    events = [
        {"type": "response.created", "response": {"id": "r"}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.completed", "response": {"id": "r"}},
    ]
    chunks, source = reemit(sse(events), "openai-responses", "reasoning_details")
    assert blocks_of(source) == [("", None, None, "gA\udc00", "rs_\ud800")]
    back = fsm.reassemble(written(chunks), provider="openai-chat")
    assert blocks_of(back) == [("Sum.", None, None, "gA\\udc00", "rs_\\ud800")]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_f2_half_a_pair_that_ends_a_block_is_cut_by_the_next_block(dialect: str | None) -> None:
    # Block 0 ends in a high surrogate; block 1 is a redacted block, block 2 signed thinking. Before,
    # block 0's U+FFFD waited for the stream's end: it went out after blocks 1 and 2.
    data = claude(thinking(0, ["a\ud800"], None), redacted(1, "RED"), thinking(2, ["b"], "SIG"))
    r = Reassembler("anthropic", content_deltas=True)
    said = [(o.text, o.block) for o in r.feed_bytes(data) if type(o) is fsm.ContentDelta]
    assert said == [("a", 0), ("\ufffd", 0), ("b", 2)]
    chunks, source = reemit(data, "anthropic", dialect)
    assert [r.text for r in source.reasoning] == ["a\ufffd", "", "b"]
    assert [d.code for d in source.diagnostics] == ["lone-surrogate"]
    back = fsm.reassemble(written(chunks), provider="openai-chat")
    if dialect is None:  # plain reasoning_content: one text, in the source's order
        assert [r.text for r in back.reasoning] == ["a\ufffdb"]
    else:
        assert blocks_of(back) == blocks_of(source)


def test_f2_a_block_whose_only_text_is_half_a_pair_keeps_its_place() -> None:
    data = claude(thinking(0, ["\ud800"], None), redacted(1, "RED"))
    chunks, source = reemit(data, "anthropic", "reasoning_details")
    assert blocks_of(source) == [("\ufffd", None, None, None, None), ("", None, "RED", None, None)]
    assert blocks_of(fsm.reassemble(written(chunks), provider="openai-chat")) == blocks_of(source)


def test_f2_a_pair_split_across_pieces_of_one_block_still_joins() -> None:
    data = claude(thinking(0, ["x\ud83d", "\ude00y"], "SIG"), thinking(1, ["\ud83d"], None))
    result = fsm.reassemble(data, provider="anthropic")
    assert [r.text for r in result.reasoning] == ["x\U0001f600y", "\ufffd"]
    assert sorted(d.code for d in result.diagnostics) == ["lone-surrogate", "surrogate-pair-joined"]


@pytest.mark.parametrize(
    ("output", "said"),
    [
        (fsm.CallFinished("x"), "outputs[1].call must be a ToolCall, not str"),  # type: ignore[arg-type]
        (fsm.ContentDelta("weird", "x"), "outputs[1].kind must be one of"),  # type: ignore[arg-type]
        (fsm.ContentDelta("text", 5), "outputs[1].text must be a str, not int"),  # type: ignore[arg-type]
        (fsm.ContentDelta("reasoning", "x", [1]), "outputs[1].block must be an int or None, not list"),  # type: ignore[arg-type]
        (fsm.ReasoningData([1], signature="s"), "outputs[1].block must be an int, not list"),  # type: ignore[arg-type]
        (fsm.ReasoningData(0, signature=5), "outputs[1].signature must be a str or None, not int"),  # type: ignore[arg-type]
        (fsm.ArgumentsDelta(True, "{}"), "outputs[1].index must be an int, not bool"),
    ],
    ids=lambda v: v if isinstance(v, str) else type(v).__name__,
)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_f3_an_output_built_of_the_wrong_types_is_refused_and_nothing_goes(
    output: Any, said: str, dialect: str | None
) -> None:
    emitter = DeltaEmitter(reasoning_blocks=dialect)  # type: ignore[arg-type]
    opened = fsm.CallOpened(0, "c1", "c1", "f")
    with pytest.raises(fsm.errors.InvalidInput, match=re.escape(said)):  # raised AttributeError, KeyError, TypeError
        emitter.chunks([opened, output])
    assert len(emitter.chunks([opened])) == 1  # nothing of the list went: the call opens now
