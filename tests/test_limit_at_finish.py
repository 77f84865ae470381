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


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("case", [case for case in CASES if case != "no-text"])  # a cut adds no {}
def test_a_limit_passed_while_close_ends_the_calls_still_gives_the_result(case: str, strict: bool) -> None:
    """The same calls cut after a surrogate half, the stream ending without a finish reason:
    close() ends them, and the half's escape passes the limit there. Every call ends with a status,
    the one that passed the limit is reported as finished like the others, and close() returns the
    result (``stream-failed`` naming the limit); in strict mode the error is raised once the result
    is complete, and close() then returns it."""
    events, limit, _, held = CASES[case]
    events = [event for event in events if not event["choices"][0].get("finish_reason")]
    events.append(chunk(tc(index=1, id="y", name="h", args='{"b": 1')))  # a second call, open too
    r = Reassembler("openai-chat", strict=strict, limits=Limits(max_stream_argument_bytes=limit + 7))
    for event in events:
        r.feed(event)
    if strict:
        with pytest.raises(LimitExceeded):
            r.close()
    result = r.close()
    assert [call.status for call in result.calls] == [CallStatus.TRUNCATED, CallStatus.TRUNCATED]
    assert (result.calls[0].input if result.calls[0].type == "custom" else result.calls[0].arguments_json) == held
    assert result.calls[1].arguments_json == '{"b": 1'
    assert "stream-failed" in result.codes() and "no-finish-reason" in result.codes()
    finished = [output.call.id for output in r.drain() if type(output).__name__ == "CallFinished"]
    assert finished == ["x" if result.calls[0].type != "custom" else "c", "y"]


@pytest.mark.parametrize("strict", [False, True])
def test_a_stream_that_failed_at_a_limit_reports_one_failure_when_close_passes_it_again(strict: bool) -> None:
    """The stream fails at its byte limit (event 3); close() then cuts a call that ended in a surrogate
    half, whose escape passes the limit again. The stream's fault stays the first error: close()
    added a second stream-failed naming no event, for the consequence of the first."""
    events = [
        chunk(tc(index=0, id="a", name="f", args="")),
        chunk(tc(index=1, id="b", name="f", args='{"a":"\ud83d')),
        chunk(tc(index=2, id="c", name="f", args='{"b":1')),
    ]
    r = Reassembler("openai-chat", strict=strict, limits=Limits(max_stream_argument_bytes=10))
    with pytest.raises(LimitExceeded) as raised:
        for event in events:
            r.feed(event)
    assert raised.value.event == 3
    result = r.close()
    failed = [(d.event, d.message) for d in result.diagnostics if d.code == "stream-failed"]
    assert failed == [(3, f"stopped at an error, so unfinished calls are cut: {raised.value}")]
    assert [(c.status, c.arguments_json) for c in result.calls] == [
        (CallStatus.TRUNCATED, ""),
        (CallStatus.TRUNCATED, '{"a":"'),  # the half's escape was not taken in
        (CallStatus.TRUNCATED, ""),
    ]
