"""A high surrogate ending one text part has no low one in another part (policy
surrogate-half-ends-its-part): Claude's text blocks, a Responses message's content parts are strings
of their own, and no UTF-16 pair spans two of them. The half held at a block's end was joined to the
next block's text, so its U+FFFD (or a pair made of two blocks' halves) landed in the next block;
and the turn's fast path, which skips a piece left empty, kept no part for the first block where
decode() kept an empty one (audit 114). Now the half ends its own part as U+FFFD, either way."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fsm import Reassembler, RemoteProtocolError, Result

HIGH, LOW = "\ud83d", "\ude00"
MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [], "usage": {}}


def _text(at: int, text: str) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": at, "delta": {"type": "text_delta", "text": text}}


def _start(at: int, kind: str = "text") -> dict[str, Any]:
    block = {"type": kind, "text": ""} if kind == "text" else {"type": kind, "data": "UkVE"}
    return {"type": "content_block_start", "index": at, "content_block": block}


def _stop(at: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": at}


STREAMS = {
    "two blocks": [_start(0), _text(0, f"a{HIGH}"), _stop(0), _start(1), _text(1, "hi"), _stop(1)],
    "the half alone": [_start(0), _text(0, HIGH), _stop(0), _start(1), _text(1, "hi"), _stop(1)],
    "a block never started": [_text(0, HIGH), _start(1), _text(1, "hi"), _stop(1)],
    "halves of a pair in two blocks": [_start(0), _text(0, HIGH), _start(1), _text(1, f"{LOW}hi")],
}
WANTED = {
    "two blocks": [("a\ufffd", 0), ("hi", 1)],
    "the half alone": [("\ufffd", 0), ("hi", 1)],
    "a block never started": [("\ufffd", 0), ("hi", 1)],
    "halves of a pair in two blocks": [("\ufffd", 0), ("\ufffdhi", 1)],
}


def _read(events: list[dict[str, Any]], *, general: bool = False, strict: bool = False) -> Result:
    r = Reassembler("anthropic", strict=strict)
    if general:
        r._said = None  # the fast paths off, as the shortcut tests compare them
    for event in [{"type": "message_start", "message": MESSAGE}, *events]:
        r.feed(event)
    return r.close()


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_a_half_at_a_blocks_end_ends_that_block_as_u_fffd(name: str) -> None:
    result = _read(STREAMS[name])
    assert [(part.text, part.output_index) for part in result.text_parts] == WANTED[name]
    assert result.text == "".join(text for text, _ in WANTED[name])
    assert "lone-surrogate" in {d.code for d in result.diagnostics}
    assert "surrogate-pair-joined" not in {d.code for d in result.diagnostics}


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_the_fast_path_and_decode_keep_the_same_parts(name: str) -> None:
    fast, general = _read(STREAMS[name]), _read(STREAMS[name], general=True)
    assert fast.text_parts == general.text_parts
    assert [(d.code, d.event) for d in fast.diagnostics] == [(d.code, d.event) for d in general.diagnostics]


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_bytes_in_any_pieces_read_as_the_dicts(name: str) -> None:
    events = [{"type": "message_start", "message": MESSAGE}, *STREAMS[name]]
    wire = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
    whole = _read(STREAMS[name])
    for size in (1, 7, len(wire)):
        r = Reassembler("anthropic")
        for at in range(0, len(wire), size):
            r.feed_bytes(wire[at : at + size])
        got = r.close()
        assert got.text_parts == whole.text_parts
        assert [(d.code, d.event) for d in got.diagnostics] == [(d.code, d.event) for d in whole.diagnostics]


def test_strict_mode_raises_at_the_event_that_cut_the_half() -> None:
    with pytest.raises(RemoteProtocolError) as raised:
        _read(STREAMS["halves of a pair in two blocks"], strict=True)
    assert "no partner" in str(raised.value)
    assert raised.value.event == 5  # message_start, start 0, the half, start 1, then the low one's delta


def test_a_pair_split_within_one_block_is_still_joined() -> None:
    result = _read([_start(0), _text(0, f"a{HIGH}"), _text(0, f"{LOW}b"), _stop(0)])
    assert [(part.text, part.output_index) for part in result.text_parts] == [("a\U0001f600b", 0)]
    assert "surrogate-pair-joined" in {d.code for d in result.diagnostics}
