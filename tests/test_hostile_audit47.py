"""Audit 47: the Result's content (text, reasoning, usage, server results, container, finish words,
diagnostics) held the same however a stream is delivered (a helper's differential harness: every
capture, vector and example stream, whole and in pieces of 1 to 64 bytes, as dicts, as the SDKs'
objects, through reassemble and areassemble, and some 29,400 mutated streams). What it found:

* A well-formed Anthropic ``message_delta`` carrying the code execution ``container`` beside its
  ``stop_reason`` was a violation (``event-after-finish``): the container was decoded after the finish.
* A Bedrock exception fed as a dict with a null ``message`` said ``None``, and its ``Message`` went
  unread, where the same exception read from the AWS event stream says its type, or reads ``Message``.
* A Bedrock event fed as ``{}`` vanished without a word; every other decoder reports it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from tests.helpers import aws_message


def _anthropic_with_container() -> list[dict[str, Any]]:
    usage = {"input_tokens": 1, "output_tokens": 1}
    message = {"id": "m", "type": "message", "role": "assistant", "content": [], "usage": usage}
    container = {"id": "container_1", "expires_at": "2030-01-01T00:00:00Z"}
    return [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "container": container}, "usage": usage},
        {"type": "message_stop"},
    ]


@pytest.mark.parametrize("strict", [False, True])
def test_a_container_beside_the_stop_reason_is_the_turns(strict: bool) -> None:
    events = _anthropic_with_container()
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
    for result in (fsm.reassemble(events, "anthropic", strict=strict), fsm.reassemble([body], strict=strict)):
        assert result.container == {"id": "container_1", "expires_at": "2030-01-01T00:00:00Z"}
        assert result.diagnostics == () and result.finish_reason == "stop"


def _bedrock_bytes(events: list[dict[str, Any]]) -> bytes:
    out = b""
    for event in events:
        ((kind, body),) = event.items()
        header = ":exception-type" if kind.endswith("Exception") else ":event-type"
        out += aws_message(json.dumps(body).encode(), kind, header)
    return out


@pytest.mark.parametrize(
    "payload",
    [{"message": None}, {}, {"Message": "slow down"}, {"message": "the model failed"}, {"message": 7}],
    ids=["null", "none", "capital-M", "text", "number"],
)
def test_a_bedrock_exceptions_message_reads_alike_from_dicts_and_bytes(payload: dict[str, Any]) -> None:
    pytest.importorskip("botocore")
    events = [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "hi"}}},
        {"throttlingException": payload},
    ]
    dicts = fsm.reassemble(events, "bedrock")
    wire = fsm.reassemble([_bedrock_bytes(events)], "bedrock")
    assert (dicts.finish_reason, dicts.finish_message) == (wire.finish_reason, wire.finish_message)
    assert [(d.event, d.code, d.message) for d in dicts.diagnostics] == [
        (d.event, d.code, d.message) for d in wire.diagnostics
    ]
    assert dicts.finish_message not in (None, "None")


def test_an_empty_bedrock_event_is_reported() -> None:
    for before in ([], [{"messageStart": {"role": "assistant"}}]):
        r = fsm.Reassembler("bedrock")
        for event in [*before, {}]:
            r.feed(event)
        said = [(d.event, d.code, d.message) for d in r.close().diagnostics if d.code == "unknown-event"]
        assert said == [(len(before) + 1, "unknown-event", "an empty Bedrock event")]
        strict = fsm.Reassembler("bedrock", strict=True)
        for event in before:
            strict.feed(event)
        with pytest.raises(fsm.RemoteProtocolError, match="an empty Bedrock event"):
            strict.feed({})
