"""Hostile audit 73: today's changes attacked differentially (the content limit, one-item-one-id,
audit 71's refusals, CallEnd.unmatched). Each test failed before its fix."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fsm import Limits, Reassembler
from fsm.errors import LimitExceeded


def converse_result_stream(pieces: int, piece: Any) -> list[dict[str, Any]]:
    """A Converse turn whose server tool's result streams in ``pieces`` toolResult deltas."""
    start = {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolResult": {"toolUseId": "t1"}}}}
    delta = {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolResult": [piece]}}}
    return [
        {"messageStart": {"role": "assistant"}},
        start,
        *(json.loads(json.dumps(delta)) for _ in range(pieces)),
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "end_turn"}},
    ]


def fed(events: list[dict[str, Any]], limits: Limits) -> tuple[Reassembler, LimitExceeded | None]:
    r = Reassembler("bedrock", limits=limits)
    try:
        for event in events:
            r.feed(event)
    except LimitExceeded as raised:
        return r, raised
    return r, None


@pytest.mark.parametrize("piece", [{"text": "x" * 1000}, {"json": {"found": "x" * 1000}}], ids=["text", "json"])
def test_a_converse_tool_result_counts_as_its_deltas_come(piece: Any) -> None:
    """Bedrock Converse's toolResult deltas were held by the decoder and counted only when the
    block stopped: a result streamed without end grew past Limits.max_content_chars (2 MB held
    under a limit of 20,000), and the one that ended was refused at its stop, not at the delta
    that passed the limit."""
    r, raised = fed(converse_result_stream(2000, piece), Limits(max_content_chars=20_000))
    assert raised is not None and raised.event is not None and raised.event <= 23  # a delta's, not the stop's
    assert r._content.held <= 20_000
    assert r.close().server_tool_results == ()  # its block never came whole: not kept, and said so


def test_a_converse_tool_result_under_the_limit_counts_once() -> None:
    """Counted as its pieces came, the whole block counts only what they did not: one limit reads
    the stream alike, and one below it stops at the last delta's event."""
    events = converse_result_stream(5, {"text": "abc"})
    r, raised = fed(events, Limits())
    assert raised is None
    (result,) = r.close().server_tool_results
    assert result.block == {"toolUseId": "t1", "content": [{"text": "abc" * 5}]}
    total = r._content.held
    assert total == 40  # the block's strings and values, counted once (not again for its pieces)
    r, raised = fed(events, Limits(max_content_chars=total))
    assert raised is None and len(r.close().server_tool_results) == 1
    r, raised = fed(events, Limits(max_content_chars=total - 1))
    assert raised is not None and raised.event == 8  # the stop: its pieces held 15 of the 40
