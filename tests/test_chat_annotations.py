"""OpenAI chat ``annotations``: the search-preview models send the sources of their text as
``url_citation`` annotations in a delta of the message. They were read past without a word; no
Result field holds them (a chat message takes none back), so each delta that brings some is
reported (``part-not-reassembled``) at its event, whichever path reads the chunk."""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm

CITED = {
    "type": "url_citation",
    "url_citation": {"start_index": 0, "end_index": 9, "title": "Oslo weather", "url": "https://example.org/oslo"},
}
CALL = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "x",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def as_sse(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


TURNS = {
    # as gpt-4o-search-preview streams it: the text, then a delta holding the annotations alone
    "alone": [
        chunk({"role": "assistant", "content": "It is -3 C."}),
        chunk({"annotations": [CITED, CITED]}),
        chunk({}, "stop"),
    ],
    # beside text, beside a call's one entry, and on the last chunk: each a shortcut's case
    "beside-text": [chunk({"content": "It is -3 C.", "annotations": [CITED, CITED]}), chunk({}, "stop")],
    "beside-a-call": [
        chunk({"content": "It is -3 C."}),
        chunk({"tool_calls": [CALL], "annotations": [CITED, CITED]}),
        chunk({}, "tool_calls"),
    ],
    "on-the-last-chunk": [chunk({"content": "It is -3 C."}), chunk({"annotations": [CITED, CITED]}, "stop")],
}


@pytest.mark.parametrize("name", list(TURNS))
def test_annotations_are_reported_not_read_past(name: str) -> None:
    turn = TURNS[name]
    at = next(n for n, c in enumerate(turn, 1) if "annotations" in c["choices"][0]["delta"])
    for result in (fsm.reassemble(turn, "openai-chat"), fsm.reassemble(as_sse(turn), "auto")):
        assert result.text == "It is -3 C."
        assert [(d.event, d.message) for d in result.diagnostics if d.code == "part-not-reassembled"] == [
            (at, "delta.annotations (2 of them) is not kept: no Result holds it")
        ]
        assert [c.arguments for c in result.calls] == ([{"a": 1}] if name == "beside-a-call" else [])


def test_no_annotations_or_an_empty_list_says_nothing() -> None:
    turn = [chunk({"content": "Hi", "annotations": []}), chunk({}, "stop")]
    assert fsm.reassemble(turn, "openai-chat").codes() == []
