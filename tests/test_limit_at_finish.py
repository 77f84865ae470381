"""A stream's byte limit passed by what a finishing call adds (the ``{}`` of a call with no text, the
escape of a surrogate half its text ended in). The machine has moved to a terminal state by then:
the call must end with a status before the limit error is raised, so that close() afterwards gives
the result so far. Without one, close() tried to cut a terminal call and raised StateError."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import CallStatus, LimitExceeded, Limits, Reassembler
from tests.helpers import chunk, tc


def _custom(text: str) -> dict[str, Any]:
    entry = {"index": 0, "id": "c", "type": "custom", "custom": {"name": "g", "input": text}}
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [entry]}}]}


CASES = {
    # no text: the {} it would get is 2 bytes, over a limit of 1
    "no-text": ([chunk(tc(index=0, id="x", name="f")), chunk(finish="tool_calls")], 1, CallStatus.INVALID, ""),
    # 6 bytes held, the half kept as \\ud83d would be 6 more: over 10
    "cut-after-a-half": (
        [chunk(tc(index=0, id="x", name="f", args='{"a":"\ud83d')), chunk(finish="length")],
        10,
        CallStatus.TRUNCATED,
        '{"a":"',
    ),
    "unterminated-after-a-half": (
        [chunk(tc(index=0, id="x", name="f", args='{"a":"\ud83d')), chunk(finish="tool_calls")],
        10,
        CallStatus.INVALID,
        '{"a":"',
    ),
    # freeform input: the half becomes U+FFFD, 3 bytes, over 4
    "freeform-after-a-half": ([_custom("ab\ud83d"), chunk(finish="tool_calls")], 4, CallStatus.INVALID, "ab"),
}


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("case", list(CASES))
def test_a_limit_passed_while_a_call_finishes_leaves_close_a_result(case: str, strict: bool) -> None:
    events, limit, status, held = CASES[case]
    r = Reassembler("openai-chat", strict=strict, limits=Limits(max_stream_argument_bytes=limit))
    with pytest.raises(LimitExceeded) as raised:
        for event in events:
            r.feed(event)
    assert raised.value.event == len(events)  # the finish that ended the call
    (call,) = r.close().calls
    assert call.status is status
    assert call.arguments is None
    assert (call.input if call.type == "custom" else call.arguments_json) == held
    assert "stream-failed" in r.close().codes()
