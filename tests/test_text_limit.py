"""``Limits.max_text_chars``: the turn's text, reasoning and refusal are bounded as argument text is.

Every path that takes text in (the decoders' events, the wires' shortcuts, the learnt forms, SDK
objects) counts each piece as it came, so a stream holds at most the limit whatever its wire and
however it is delivered; the piece that passes it is not taken in, the error names its event, and
``close()`` still returns the result so far."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fsm import Limits, Policies, Reassembler, Result, reassemble, result_so_far
from fsm.errors import LimitExceeded, ToolcallFSMError
from fsm.harness.conformance import replay
from fsm.harness.vectors import load_vectors
from tests.conftest import CAPTURES, captures

MENDED = {"surrogate-pair-joined", "lone-surrogate"}  # text whose length the mending changed


def counted(result: Result) -> bool:
    """Whether a stream's text can be counted from its result: it has some, and none was mended."""
    return held(result) > 0 and not MENDED & set(result.codes())


def held(result: Result) -> int:
    """The characters of text, reasoning and refusal the result holds."""
    return len(result.text) + len(result.refusal or "") + sum(len(block.text) for block in result.reasoning)


FOUND = [path for path in captures() if counted(reassemble(path.read_bytes()))]
MISSING = f"recorded captures not found at {CAPTURES} (../shared is beside the project in CI)"
STREAMS = FOUND or [pytest.param(None, marks=pytest.mark.skip(reason=MISSING))]
IDS = [f"{p.parent.name}/{p.name}" for p in FOUND] or ["no-captures"]
VECTORS = [vector for vector in load_vectors() if counted(replay(vector)[0])]


def read_bytes(data: bytes, piece: int | None, limits: Limits) -> tuple[Result, LimitExceeded | None]:
    r = Reassembler(limits=limits)
    cuts = [data] if piece is None else [data[at : at + piece] for at in range(0, len(data), piece)]
    try:
        for cut in cuts:
            r.feed_bytes(cut)
    except LimitExceeded as error:
        return r.close(), error
    try:
        return r.close(), None
    except LimitExceeded as error:  # not raised in lax mode: close() reports a limit it passes
        raise AssertionError("close() raised in lax mode") from error


def passed(result: Result) -> list[str]:
    return [d.message for d in result.diagnostics if d.code == "stream-failed" and "characters" in d.message]


def check_bounded(name: str, total: int, read: Any) -> None:
    """At the limit ``total`` the stream reads as with the default limits; one below, the piece that
    passes it is refused, naming the same event however the stream was delivered."""
    whole, error = read(Limits(max_text_chars=total))
    assert error is None and not passed(whole), name
    events = set()
    for how, (result, error) in read(Limits(max_text_chars=total - 1)).items():
        said = passed(result)
        assert said or error is not None, (name, how)  # a limit passed, raised or (at close) reported
        assert held(result) <= total - 1, (name, how)
        events.add(error.event if error is not None else next(d.event for d in result.diagnostics if d.message in said))
    assert len(events) == 1 and None not in events, (name, events)


@pytest.mark.parametrize("stream", STREAMS, ids=IDS)
def test_every_capture_holds_at_most_the_limit_whole_and_in_pieces(stream: Path) -> None:
    data = stream.read_bytes()
    plain, error = read_bytes(data, None, Limits())
    assert error is None
    total = held(plain)

    def read(limits: Limits) -> Any:
        if limits.max_text_chars == total:
            result, error = read_bytes(data, None, limits)
            assert result == plain
            return result, error
        return {piece: read_bytes(data, piece, limits) for piece in (None, 1, 9)}

    check_bounded(stream.name, total, read)


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v.name)
def test_every_vector_holds_at_most_the_limit(vector: Any) -> None:
    def run(limits: Limits) -> tuple[Result, LimitExceeded | None]:
        r = Reassembler(vector.shape, policies=Policies(**vector.policies), limits=limits, choice=vector.choice)
        try:
            if vector.body is not None:
                r.feed_bytes(vector.body.encode("utf-8"))
            for event in vector.events:
                r.feed(event)
        except LimitExceeded as error:
            return r.close(), error
        except ToolcallFSMError:
            pass
        return r.close(), None

    plain, _ = run(Limits())
    total = held(plain)

    def read(limits: Limits) -> Any:
        if limits.max_text_chars == total:
            result, error = run(limits)
            assert result == plain
            return result, error
        return {"as the vector gives it": run(limits)}

    check_bounded(vector.name, total, read)


def chat(text: str, key: str = "content") -> bytes:
    return b"data: " + json.dumps({"choices": [{"index": 0, "delta": {key: text}}]}).encode() + b"\n\n"


def test_a_megabyte_of_text_stops_at_the_limit_and_keeps_what_came_before() -> None:
    piece = "x" * 1000
    body = b"".join(chat(piece) for _ in range(1000)) + b"data: [DONE]\n\n"
    with pytest.raises(LimitExceeded) as raised:
        reassemble(body, limits=Limits(max_text_chars=250_500))
    assert raised.value.event == 251  # the 251st piece passes 250,500 characters
    result = result_so_far(raised.value)
    assert result is not None and result.text == piece * 250


def test_reasoning_and_refusal_count_with_the_text() -> None:
    body = chat("abc") + chat("de", "reasoning_content") + chat("fg", "refusal") + chat("h")
    assert reassemble(body, limits=Limits(max_text_chars=8)).text == "abch"
    with pytest.raises(LimitExceeded, match="more than 7 characters") as raised:
        reassemble(body, limits=Limits(max_text_chars=7))
    assert raised.value.event == 4


def test_a_half_pair_waiting_at_the_close_takes_no_more_room() -> None:
    body = chat("ab\ud83d")  # a high surrogate ending the text: U+FFFD at the close, in its place
    result = reassemble(body, limits=Limits(max_text_chars=3))
    assert result.text == "ab\ufffd" and "lone-surrogate" in result.codes()


@pytest.mark.parametrize("strict", [False, True])
def test_a_limit_passed_by_the_last_event_read_at_the_close(strict: bool) -> None:
    body = chat("abc") + chat("defg")[:-2]  # the last event has no blank line: read by close()
    r = Reassembler(strict=strict, limits=Limits(max_text_chars=5))
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
    assert reassemble(objects, limits=Limits(max_text_chars=6)).text == "abcdef"
    with pytest.raises(LimitExceeded) as raised:
        reassemble(objects, limits=Limits(max_text_chars=5))
    assert raised.value.event == 6
