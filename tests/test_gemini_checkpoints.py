"""Gemini's continuation tokens (policy gemini-checkpoint-tokens).

A candidate's ``continuationToken`` is a checkpoint: the raw wire sends one beside chunks in the
middle of a stream, and google-genai's automatic continuation (on by default) resumes a hop that
ended ``CONTINUATION`` by itself, clears that finish and leaves the tokens on the chunks it yields.
So a token matters to the caller only where the turn ends ``CONTINUATION``: that is the one place it
is said (``part-not-reassembled``: no Result field holds it, and only a request sending it back goes
on). Before, every chunk with a token said it, a warning on a stream the SDK had finished normally
(audit 92's G8)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import fsm

genai = pytest.importorskip("google.genai")


def chunk(parts: list[dict[str, Any]], finish: str | None = None, token: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
    if finish is not None:
        candidate["finishReason"] = finish
    if token is not None:
        candidate["continuationToken"] = token
    return {"candidates": [candidate]}


def told(result: fsm.Result) -> list[int]:
    """The events at which the token was said."""
    return [d.event for d in result.diagnostics if d.message.startswith("candidate.continuationToken")]


CALL = {"functionCall": {"name": "lookup", "args": {"q": "tides"}, "id": "c1"}}


def test_checkpoints_in_a_turn_that_finishes_say_nothing() -> None:
    events = [
        chunk([{"text": "Let me "}], token="Y2sx"),
        chunk([{"text": "check."}], token="Y2sy"),
        chunk([CALL], token="Y2sz"),
        chunk([], "STOP"),
    ]
    for event in events:
        genai.types.GenerateContentResponse.model_validate(event)
    result = fsm.reassemble(events, provider="gemini")
    assert [(c.id, c.name, c.arguments) for c in result.complete_calls] == [("c1", "lookup", {"q": "tides"})]
    assert result.text == "Let me check." and told(result) == [] and result.problems() == ()


def test_a_turn_that_ends_continuation_says_its_token_at_the_finish() -> None:
    # The token came a chunk before the finish: it is said where the turn ends, not where it came.
    events = [chunk([{"text": "Part one"}], token="Y2sx"), chunk([], "CONTINUATION")]
    result = fsm.reassemble(events, provider="gemini")
    assert told(result) == [2] and result.finish_reason == "length"
    strict = fsm.Reassembler("gemini", strict=True)
    strict.feed(events[0])  # a checkpoint alone is no violation of anything
    assert strict.close().codes() == ["no-finish-reason"]


def test_whole_bytes_and_one_byte_reads_agree() -> None:
    events = [chunk([{"text": "a"}], token="dA=="), chunk([CALL]), chunk([], "CONTINUATION", token="dQ==")]
    wire = b"".join(b"data: " + json.dumps(e).encode() + b"\r\n\r\n" for e in events)
    whole = fsm.Reassembler("gemini")
    whole.feed_bytes(wire)
    pieces = fsm.Reassembler("gemini")
    for at in range(len(wire)):
        pieces.feed_bytes(wire[at : at + 1])
    assert whole.close() == pieces.close() == fsm.reassemble(events, provider="gemini")
    assert told(fsm.reassemble(events, provider="gemini")) == [3]


def test_google_genai_automatic_continuation_reaches_fsm_without_a_warning() -> None:
    """The real client over a mock transport: its first hop ends CONTINUATION with a token, so it asks
    again with that token and yields the second hop's chunks after the first's."""
    hops = [
        [chunk([{"text": "Looking "}], token="aG9wMQ=="), chunk([], "CONTINUATION", token="aG9wMQ==")],
        [chunk([CALL], token="aG9wMg=="), chunk([], "STOP")],
    ]
    sent: list[dict[str, Any]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        body = b"".join(b"data: " + json.dumps(e).encode() + b"\r\n\r\n" for e in hops[len(sent) - 1])
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    client = genai.Client(
        api_key="test",
        http_options=genai.types.HttpOptions(
            base_url="http://mock", httpx_client=httpx.Client(transport=httpx.MockTransport(answer))
        ),
    )
    stream = client.models.generate_content_stream(model="gemini-3-flash", contents="Tides today?")
    result = fsm.reassemble(stream)
    assert len(sent) == 2  # the SDK resumed by itself
    assert [(c.id, c.name, c.arguments) for c in result.complete_calls] == [("c1", "lookup", {"q": "tides"})]
    assert result.finish_reason == "tool_calls" and told(result) == [] and result.problems() == ()
