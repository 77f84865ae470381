"""``Limits.max_content_chars``: what a turn says beside its calls is bounded as argument text is.

Every path that takes content in (the decoders' events, the wires' shortcuts, the learnt forms, SDK
objects) counts each piece as it came: the text, reasoning and refusal, the strings beside them,
server tool results and compaction blocks. A stream's count is the same however it is delivered, so
it holds at most the limit whatever its wire; the piece that passes it is not taken in, the error
names its event, and ``close()`` still returns the result so far."""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from fsm import Limits, Policies, Reassembler, Result, reassemble, result_so_far
from fsm.content import BLOCK_CHARS
from fsm.errors import LimitExceeded, ToolcallFSMError
from fsm.harness.vectors import Vector, load_vectors
from tests.conftest import CAPTURES, captures
from tests.helpers import feed_vector

FOUND = captures()
MISSING = f"recorded captures not found at {CAPTURES} (../shared is beside the project in CI)"
STREAMS = FOUND or [pytest.param(None, marks=pytest.mark.skip(reason=MISSING))]
IDS = [f"{p.parent.name}/{p.name}" for p in FOUND] or ["no-captures"]
PIECES = (None, 1, 9)  # whole, then in pieces of that many bytes


def text_held(result: Result) -> int:
    """The characters of text, reasoning and refusal the result holds (the count includes them)."""
    return len(result.text) + len(result.refusal or "") + sum(len(block.text) for block in result.reasoning)


def read_bytes(data: bytes, piece: int | None, limits: Limits) -> tuple[Result, LimitExceeded | None, int]:
    """The result, the limit raised (if any) and the characters counted, ``data`` fed whole or in pieces."""
    r = Reassembler(limits=limits)
    cuts = [data] if piece is None else [data[at : at + piece] for at in range(0, len(data), piece)]
    error = None
    try:
        for cut in cuts:
            r.feed_bytes(cut)
    except LimitExceeded as raised:
        error = raised
    return r.close(), error, r._content.held  # lax: close() reports a limit it passes, never raises


def read_vector(vector: Vector, limits: Limits) -> tuple[Result, LimitExceeded | None, int]:
    r = Reassembler(vector.shape, policies=Policies(**vector.policies), limits=limits, choice=vector.choice)
    error = None
    try:
        feed_vector(r, vector)
    except LimitExceeded as raised:
        error = raised
    except ToolcallFSMError:
        pass
    return r.close(), error, r._content.held


def passed(result: Result) -> list[Any]:
    """The limit as close() reports it (stream-failed naming it)."""
    return [d for d in result.diagnostics if d.code == "stream-failed" and "beside its calls holds" in d.message]


def check_bounded(name: str, reads: Any) -> None:
    """``reads(limits)`` gives the readings of one stream (whole, in pieces). With the default limits
    they count the same; at that count each reads as with the defaults; one below, each stops at
    the same event, holding no more than the limit."""
    plain = reads(Limits())
    counts = {count for _, _, count in plain}
    assert len(counts) == 1, (name, counts)  # counted alike however the stream was delivered
    total = counts.pop()
    assert total >= max(text_held(result) for result, _, _ in plain)
    if not total:
        return
    for (result, error, _), (before, _, _) in zip(reads(Limits(max_content_chars=total)), plain, strict=True):
        assert error is None and not passed(result) and result == before, name
    events = set()
    for result, error, count in reads(Limits(max_content_chars=total - 1)):
        said = passed(result)
        assert error is not None or said, name  # raised by a feed, or passed as close() read the last event
        assert count <= total - 1 and text_held(result) <= total - 1, name
        events.add(error.event if error is not None else said[0].event)
    assert len(events) == 1 and None not in events, (name, events)


@pytest.mark.parametrize("stream", STREAMS, ids=IDS)
def test_every_capture_counts_alike_and_holds_at_most_the_limit(stream: Path) -> None:
    data = stream.read_bytes()
    check_bounded(stream.name, lambda limits: [read_bytes(data, piece, limits) for piece in PIECES])


@pytest.mark.parametrize("vector", load_vectors(), ids=lambda v: v.name)
def test_every_vector_holds_at_most_the_limit(vector: Vector) -> None:
    check_bounded(vector.name, lambda limits: [read_vector(vector, limits)])


def chat(text: str, key: str = "content") -> bytes:
    return b"data: " + json.dumps({"choices": [{"index": 0, "delta": {key: text}}]}).encode() + b"\n\n"


def test_a_megabyte_of_text_stops_at_the_limit_and_keeps_what_came_before() -> None:
    piece = "x" * 1000
    body = b"".join(chat(piece) for _ in range(1000)) + b"data: [DONE]\n\n"
    with pytest.raises(LimitExceeded, match="holds more than 250500 characters") as raised:
        reassemble(body, limits=Limits(max_content_chars=250_500))
    assert raised.value.event == 251  # the 251st piece passes 250,500 characters
    result = result_so_far(raised.value)
    assert result is not None and result.text == piece * 250


def test_reasoning_and_refusal_count_with_the_text() -> None:
    body = chat("abc") + chat("de", "reasoning_content") + chat("fg", "refusal") + chat("h")
    # 8 characters, and BLOCK_CHARS for the reasoning block
    assert reassemble(body, limits=Limits(max_content_chars=8 + BLOCK_CHARS)).text == "abch"
    with pytest.raises(LimitExceeded) as raised:
        reassemble(body, limits=Limits(max_content_chars=8 + BLOCK_CHARS - 1))
    assert raised.value.event == 4


def test_a_half_pair_waiting_at_the_close_takes_no_more_room() -> None:
    body = chat("ab\ud83d")  # a high surrogate ending the text: U+FFFD at the close, in its place
    result = reassemble(body, limits=Limits(max_content_chars=3))
    assert result.text == "ab\ufffd" and "lone-surrogate" in result.codes()


@pytest.mark.parametrize("strict", [False, True])
def test_a_limit_passed_by_the_last_event_read_at_the_close(strict: bool) -> None:
    body = chat("abc") + chat("defg")[:-2]  # the last event has no blank line: read by close()
    r = Reassembler(strict=strict, limits=Limits(max_content_chars=5))
    r.feed_bytes(body)
    if strict:
        with pytest.raises(LimitExceeded):
            r.close()
    result = r.close()
    assert result.text == "abc" and passed(result)


def test_sdk_objects_count_as_the_bytes_do() -> None:
    chunk = pytest.importorskip("openai.types.chat").ChatCompletionChunk
    made = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    objects = [chunk.model_validate({**made, "choices": [{"index": 0, "delta": {"content": t}}]}) for t in "abcdef"]
    assert reassemble(objects, limits=Limits(max_content_chars=6)).text == "abcdef"
    with pytest.raises(LimitExceeded) as raised:
        reassemble(objects, limits=Limits(max_content_chars=5))
    assert raised.value.event == 6


def claude_result(n: int, content: Any) -> list[dict[str, Any]]:
    block = {"type": "web_search_tool_result", "tool_use_id": f"srvtoolu_{n}", "content": content}
    return [
        {"type": "content_block_start", "index": n, "content_block": block},
        {"type": "content_block_stop", "index": n},
    ]


def test_server_tool_results_count_so_thousands_of_them_stop_at_the_limit() -> None:
    found = [{"type": "web_search_result", "url": "https://e.x/" + "p" * 100, "encrypted_content": "E" * 900}]
    events = [{"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}}]
    for n in range(5000):
        events += claude_result(n, found)
    r = Reassembler("anthropic", limits=Limits(max_content_chars=1_000_000))
    with pytest.raises(LimitExceeded, match="beside its calls holds more than 1000000"):
        for event in events:
            r.feed(event)
    result = r.close()
    assert 880 < len(result.server_tool_results) < 910  # about 1,110 characters each


def test_a_shared_list_is_counted_once_as_it_is_held_once() -> None:
    """A caller's dicts may share one list many times over (2**40 paths through 40 of them): it is
    held once, so counted once, and the count is reached at once."""
    shared: Any = ["x" * 10]
    for _ in range(40):
        shared = [shared, shared]
    events = [{"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}}]
    events += claude_result(0, shared)
    r = Reassembler("anthropic")
    for event in events:
        r.feed(event)
    assert len(r.close().server_tool_results) == 1
    assert r._content.held < 200


class Sly(str):
    def __len__(self) -> int:  # a caller's string that says it is short
        return 0


def test_a_caller_string_is_counted_by_what_it_holds() -> None:
    events = [{"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}}]
    events += claude_result(0, [{"type": "web_search_result", "encrypted_content": Sly("E" * 5000)}])
    r = Reassembler("anthropic", limits=Limits(max_content_chars=4000))
    with pytest.raises(LimitExceeded):
        for event in events:
            r.feed(event)


def _held_bytes(provider: str, events: list[dict[str, Any]]) -> tuple[Result, int]:
    """The result of ``events``, and the bytes the reassembler held just before close (imports and
    the decoder's first-use work done by a warm-up stream first, so they are not counted)."""
    warm = Reassembler(provider)
    for event in events[:50]:
        warm.feed(event)
    warm.close()
    tracemalloc.start()
    try:
        r = Reassembler(provider)
        for event in events:
            r.feed(event)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return r.close(), held


@pytest.mark.parametrize("kind", ["content", "reasoning_content", "refusal"])
def test_one_character_pieces_hold_a_few_bytes_each(kind: str) -> None:
    # A 1-character piece outside Latin-1 is a string object of about 76 bytes: held as pieces, such a
    # stream held some 109 bytes a counted character. Joined as the count grows, it holds its text.
    pieces = 20_000
    events = [{"choices": [{"index": 0, "delta": {kind: "\u6f22"}}]} for _ in range(pieces)]
    result, held = _held_bytes("openai-chat", events)
    said = result.refusal if kind == "refusal" else result.text if kind == "content" else result.reasoning[0].text
    assert said == "\u6f22" * pieces
    assert held < 8 * pieces, held / pieces


def test_pieces_in_many_parts_and_blocks_are_joined_in_their_own() -> None:
    # Claude's thinking and text blocks taking turns, one character at a time: each block's pieces
    # join in that block, in order; the count compacts every list, not only the turn's text.
    def delta(index: int, kind: str, piece: str) -> dict[str, Any]:
        key = "thinking" if kind == "thinking_delta" else "text"
        return {"type": "content_block_delta", "index": index, "delta": {"type": kind, key: piece}}

    events: list[dict[str, Any]] = [{"type": "message_start", "message": {"id": "m", "role": "assistant"}}]
    for index, kind in ((0, "thinking"), (1, "text"), (2, "thinking"), (3, "text")):
        events.append({"type": "content_block_start", "index": index, "content_block": {"type": kind, kind: ""}})
    for at in range(20_000):
        index = at % 4
        events.append(delta(index, "thinking_delta" if index % 2 == 0 else "text_delta", chr(0x4E00 + index)))
    result, held = _held_bytes("anthropic", events)
    assert [block.text for block in result.reasoning] == ["\u4e00" * 5_000, "\u4e02" * 5_000]
    assert [part.text for part in result.text_parts] == ["\u4e01" * 5_000, "\u4e03" * 5_000]
    assert held < 12 * 20_000, held / 20_000
