"""A delta that repeats its choice's index (Mistral's OpenAI endpoint: ``{"index": 0, "content": ""}``
on every chunk, its last one too) is a plain delta to the chunk readers (task 168): the decoder
never reads that index, so its text, reasoning or silence is read by plain_said, and a last delta
of it says nothing without said_in's reading of every key. Same everything as without the readers."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import Reassembler
from fsm.wire.decoders import chat_chunks
from tests.helpers import tc
from tests.test_per_stream import _decides_alike

USAGE = {"prompt_tokens": 171, "total_tokens": 185, "completion_tokens": 14}


def said(delta: dict[str, Any], finish: str | None = None, **beside: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}], **beside}


def mistral(entry: dict[str, Any]) -> dict[str, Any]:
    return said({"tool_calls": [entry], "index": 0, "content": ""})


MISTRAL: dict[str, list[dict[str, Any]]] = {
    "its capture's shape": [
        mistral(tc(0, "call-a", "search", "")),
        mistral(tc(0, name="", args='{"query": "Berlin"}')),
        said({"index": 0, "content": ""}, "tool_calls", usage=USAGE),
    ],
    "text, then a call": [
        said({"index": 0, "content": "Let me look. "}),
        said({"index": 0, "role": "assistant", "reasoning_content": "a search"}),
        said({"index": 0, "reasoning": "then", "content": None}),
        mistral(tc(0, "call-a", "search", '{"q": 1}')),
        said({"index": 0, "content": None, "role": "assistant"}, "tool_calls"),
    ],
    "text in the last delta": [said({"index": 0, "content": "hi"}), said({"index": 0, "content": " there"}, "stop")],
    "an index alone": [said({"index": 0}), said({"index": 0}, "stop", usage=USAGE)],
    "other indexes": [said({"index": 3, "content": "x"}), said({"index": None, "content": "y"}), said({}, "stop")],
    "an index of another type": [said({"index": "0", "content": "x"}), said({"index": [0], "content": ""}, "stop")],
    "text of another type": [said({"index": 0, "content": 5}), said({"index": 0, "content": [{"a": 1}]}, "stop")],
    "a refusal beside": [said({"index": 0, "refusal": "no"}), said({"index": 0, "content": ""}, "stop")],
}


def test_a_delta_with_its_index_is_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    """plain_said reads past the delta's index; the last chunk of Mistral's capture says nothing,
    read without said_in (which would raise here)."""
    assert chat_chunks.plain_said({"index": 0, "content": ""}) == ("", "")
    assert chat_chunks.plain_said({"index": 0, "content": "hi", "reasoning": "r"}) == ("hi", "r")
    assert chat_chunks.plain_said({"index": 0, "refusal": "no"}) is None

    def refused(delta: dict[str, Any]) -> None:
        raise AssertionError(delta)

    monkeypatch.setattr(chat_chunks, "said_in", refused)
    last = MISTRAL["its capture's shape"][-1]
    assert chat_chunks.finish_in(last) == ([], "tool_calls", USAGE)
    r = Reassembler("openai-chat")
    for chunk in MISTRAL["its capture's shape"]:
        r.feed(chunk)
    result = r.close()
    assert [(c.name, c.arguments) for c in result.calls] == [("search", {"query": "Berlin"})]
    assert (result.finish_reason, result.usage, result.diagnostics) == ("tool_calls", USAGE, ())


@pytest.mark.parametrize("reader", ["plain_said", "finish_in"])
def test_deltas_with_their_index_decide_as_the_decoder(monkeypatch: pytest.MonkeyPatch, reader: str) -> None:
    """Over every vector, fuzzed OpenAI streams, the OpenAI-shaped captures and the streams above in
    every option set: the same transitions, outputs, result and rule counts with ``reader`` as without."""
    _decides_alike(monkeypatch, reader, MISTRAL)
