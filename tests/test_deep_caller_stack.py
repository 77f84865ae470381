"""A parse that runs out of Python's stack: a call's end parse, and a wire event's. The recursion
limit is shared with the caller's frames: on Python 3.11 a caller some 600 frames deep (a deep agent
framework, a recursive retry) that feeds arguments nested within ``Limits.max_depth`` sees the end's
parse raise RecursionError. It is a limit, as an event too deep to read is: the call ends invalid
with its raw text, the error is LimitExceeded naming the event and the call, and close() returns the
result. Before, the call was left in its end state without a status and close() raised
AssertionError; an event read from wire bytes that deep let RecursionError out of feed_bytes() and
close().

The contract is held by making the parse raise RecursionError (every Python version); the real deep
stack meets it on 3.11 only: from 3.12 on the C parser counts its depth apart from Python's frames,
and the same streams read whole (test_from_312_on_a_deep_caller_stack_reads_the_call_whole)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import pytest

from fsm import LimitExceeded, Limits, Reassembler, Result
from fsm import reassembler as reassembler_module
from fsm.engine import slot as slot_module
from fsm.wire import eventstream as eventstream_module
from fsm.wire.decoders import chunk_form as chunk_form_module
from tests.helpers import aws_message, chunk, sse, tc

DEEP = '{"a": ' * 499 + '{"b": [1]}' + "}" * 499  # 500 levels: within max_depth=512
NESTED = '{"a": {"b": [1, {"c": null}]}}'  # nested, so the end's general parse reads it
ITEM = {"type": "function_call", "id": "fc_0", "call_id": "call_0", "name": "f"}


def responses(text: str, *, deltas: bool) -> list[dict[str, Any]]:
    """A Responses call whose arguments arrive as deltas, or only as the item's final arguments (a
    snapshot, whose parse the scan keeps for the end)."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "r", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**ITEM, "arguments": ""}},
    ]
    if deltas:
        events += [
            {"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc_0", "delta": piece}
            for piece in (text[k : k + 500] for k in range(0, len(text), 500))
        ]
    done = {**ITEM, "arguments": text, "status": "completed"}
    events.append({"type": "response.output_item.done", "output_index": 0, "item": done})
    events.append({"type": "response.completed", "response": {"id": "r", "status": "completed"}})
    return events


def chat(text: str) -> list[dict[str, Any]]:
    """Two OpenAI chat calls and no finish reason: close() ends both."""
    return [chunk(tc(0, "call_a", "f", text)), chunk(tc(1, "call_b", "g", '{"x": 1}'))]


def _line(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode() + b"\n"


def at_depth(frames: int, fn: Callable[[], Any]) -> Any:
    return fn() if frames <= 0 else at_depth(frames - 1, fn)


@pytest.fixture
def parse_out_of_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    """The general parse of NESTED raises RecursionError, as a deep stack makes it on 3.11."""
    general = slot_module.parse_general

    def parse(text: str) -> Any:
        if text == NESTED:
            raise RecursionError("maximum recursion depth exceeded while decoding a JSON object")
        return general(text)

    monkeypatch.setattr(slot_module, "parse_general", parse)


def feed_all(r: Reassembler, events: list[dict[str, Any]]) -> list[LimitExceeded]:
    raised = []
    for event in events:
        try:
            r.feed(event)
        except LimitExceeded as exc:
            raised.append(exc)
            break
    return raised


def assert_cut_at_the_parse(result: Result, text: str) -> None:
    call = result.calls[0]
    assert (call.status.value, call.arguments, call.arguments_json) == ("invalid", None, text)
    failed = [d for d in result.diagnostics if d.code == "stream-failed"]
    assert len(failed) == 1 and "too deeply to parse this far down the caller's stack" in failed[0].message


@pytest.mark.usefixtures("parse_out_of_stack")
@pytest.mark.parametrize("deltas", [False, True], ids=["snapshot", "deltas"])
@pytest.mark.parametrize("strict", [False, True], ids=["lax", "strict"])
def test_an_end_parse_out_of_stack_is_a_limit_and_the_call_ends_invalid(deltas: bool, strict: bool) -> None:
    events = responses(NESTED, deltas=deltas)
    r = Reassembler("openai-responses", strict=strict)
    raised = feed_all(r, events)
    done_at = len(events) - 1  # the item's done event ends the call (1-based event numbers)
    assert len(raised) == 1 and raised[0].event == done_at and raised[0].rule == "limits"
    assert "call call_0 (f)" in str(raised[0])
    result = r.close()  # after the error was raised: the result so far, raising nothing
    assert_cut_at_the_parse(result, NESTED)
    assert r.close() is result


@pytest.mark.usefixtures("parse_out_of_stack")
def test_an_end_parse_out_of_stack_at_close_leaves_the_other_calls_their_end() -> None:
    r = Reassembler("openai-chat")
    assert feed_all(r, chat(NESTED)) == []
    result = r.close()
    assert_cut_at_the_parse(result, NESTED)
    # Cut after the limit, the next call's value had closed: its text is whole, and it parses
    assert (result.calls[1].status.value, result.calls[1].arguments) == ("complete", {"x": 1})


@pytest.mark.usefixtures("parse_out_of_stack")
def test_an_end_parse_out_of_stack_at_close_is_raised_in_strict_mode_once_the_result_is_complete() -> None:
    r = Reassembler("openai-chat", strict=True)
    feed_all(r, chat(NESTED))
    with pytest.raises(LimitExceeded, match="call call_a"):
        r.close()
    assert_cut_at_the_parse(r.close(), NESTED)


@pytest.mark.usefixtures("parse_out_of_stack")
@pytest.mark.parametrize("strict", [False, True], ids=["lax", "strict"])
def test_a_finish_reason_that_ends_the_call_out_of_stack_reports_its_end(strict: bool) -> None:
    # Lax mode ends a closed value in line (Registry.finish), strict mode through the reference
    # machine: both tell each call's end (CallFinished) before the limit goes up.
    r = Reassembler("openai-chat", strict=strict)
    outputs: list[Any] = []
    raised = []
    for event in [*chat(NESTED), chunk(finish="tool_calls")]:
        try:
            outputs += r.feed(event)
        except LimitExceeded as exc:
            raised.append(exc)
            outputs += r.drain()
            break
    assert [exc.event for exc in raised] == [3]
    finished = [(o.call.id, o.call.status.value) for o in outputs if type(o).__name__ == "CallFinished"]
    assert finished == [("call_a", "invalid"), ("call_b", "complete")]
    result = r.close()
    assert_cut_at_the_parse(result, NESTED)
    assert [c.status.value for c in result.calls] == ["invalid", "complete"]


def test_the_same_text_on_a_shallow_stack_parses() -> None:
    for events in (responses(NESTED, deltas=False), responses(NESTED, deltas=True)):
        r = Reassembler("openai-responses")
        assert feed_all(r, events) == []
        assert r.close().calls[0].arguments == {"a": {"b": [1, {"c": None}]}}


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="from 3.12 on, the C parser's depth is not Python's stack")
@pytest.mark.parametrize("deltas", [False, True], ids=["snapshot", "deltas"])
def test_a_real_deep_caller_stack_gets_the_limit_and_the_result(deltas: bool) -> None:
    r = Reassembler("openai-responses", limits=Limits(max_depth=512))
    raised: list[LimitExceeded] = []
    for event in responses(DEEP, deltas=deltas):
        try:
            at_depth(600, lambda event=event: r.feed(event))
        except LimitExceeded as exc:
            raised.append(exc)
            break
    assert len(raised) == 1 and "call call_0 (f)" in str(raised[0])
    assert_cut_at_the_parse(at_depth(600, r.close), DEEP)
    # The same stream on a shallow stack: the text is within the limit, and parses
    shallow = Reassembler("openai-responses", limits=Limits(max_depth=512))
    assert feed_all(shallow, responses(DEEP, deltas=deltas)) == []
    assert shallow.close().calls[0].status.value == "complete"


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="from 3.12 on, the C parser's depth is not Python's stack")
def test_an_event_read_deep_in_the_callers_stack_names_the_shared_limit() -> None:
    args: dict[str, Any] = {"b": [1]}
    for _ in range(499):  # a Gemini call's args, 500 levels: within max_depth=512, written out as they are read
        args = {"a": args}
    part = {"functionCall": {"name": "f", "args": args}}
    event = {"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}]}
    r = Reassembler("gemini", limits=Limits(max_depth=512))
    with pytest.raises(LimitExceeded, match=r"^event 1: the event nests too deeply to read \(Python's recursion limit"):
        at_depth(600, lambda: r.feed(event))
    assert [d.code for d in r.close().diagnostics] == ["stream-failed"]
    shallow = Reassembler("gemini", limits=Limits(max_depth=512))
    shallow.feed(event)
    assert shallow.close().calls[0].arguments == args


MARK = "deep-marker"
SAID = {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]}
MARKED = {"choices": [{"index": 0, "delta": {"content": MARK}, "finish_reason": None}]}


@pytest.fixture
def events_out_of_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading an event that holds MARK raises RecursionError, as a deep stack makes it on 3.11."""

    def reader(module: Any) -> None:
        loads = module.loads_event

        def loads_event(text: str) -> Any:
            if MARK in text:
                raise RecursionError("maximum recursion depth exceeded while decoding a JSON object")
            return loads(text)

        monkeypatch.setattr(module, "loads_event", loads_event)

    for module in (reassembler_module, eventstream_module, chunk_form_module):
        reader(module)


WIRES = {
    "sse": (sse([SAID, MARKED, SAID]), 2),
    "ndjson": (_line(SAID) + _line(MARKED) + _line(SAID), 2),
    "json array": (b"[" + b",".join(_line(p).strip() for p in (SAID, MARKED, SAID)) + b"]", 2),
    "last event unterminated": (sse([SAID], done=False) + b"data: " + _line(MARKED).strip(), 2),
}


@pytest.mark.usefixtures("events_out_of_stack")
@pytest.mark.parametrize("name", WIRES)
def test_a_wire_event_out_of_stack_is_a_limit_naming_its_event(name: str) -> None:
    wire, at = WIRES[name]
    r = Reassembler("openai-chat")
    try:
        r.feed_bytes(wire)
        raised = None
    except LimitExceeded as exc:
        raised = exc
    result = r.close()
    failed = [d for d in result.diagnostics if d.code == "stream-failed"]
    assert len(failed) == 1 and failed[0].event == at and "recursion limit" in failed[0].message
    assert result.text == "hi"  # the event before it was taken in, and nothing after it
    if name == "last event unterminated":  # read as the stream closes
        assert raised is None
    else:
        assert raised is not None and raised.event == at and str(raised).startswith(f"event {at}: the event nests")


@pytest.mark.usefixtures("events_out_of_stack")
def test_an_aws_message_out_of_stack_is_a_limit() -> None:
    pytest.importorskip("botocore", reason="the AWS event stream framing needs botocore (toolcall-fsm[bedrock])")
    said = aws_message(json.dumps({"delta": {"text": "hi"}, "contentBlockIndex": 0}).encode())
    marked = aws_message(json.dumps({"delta": {"text": MARK}, "contentBlockIndex": 0}).encode())
    r = Reassembler("bedrock")
    with pytest.raises(LimitExceeded, match=r"^event 2: contentBlockDelta payload nests too deeply to read"):
        r.feed_bytes(said + marked + said)
    assert r.close().text == "hi"


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="from 3.12 on, the C parser's depth is not Python's stack")
@pytest.mark.parametrize("cut", [False, True], ids=["whole", "last event unterminated"])
def test_wire_bytes_read_deep_in_the_callers_stack_get_the_limit(cut: bool) -> None:
    args: dict[str, Any] = {"b": [1]}
    for _ in range(499):
        args = {"a": args}
    event = {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "f", "args": args}}]}}]}
    wire = sse([event], done=False)
    wire = wire[:-2] if cut else wire
    r = Reassembler("gemini", limits=Limits(max_depth=512))
    if cut:
        at_depth(600, lambda: r.feed_bytes(wire))
    else:
        with pytest.raises(LimitExceeded, match="recursion limit"):
            at_depth(600, lambda: r.feed_bytes(wire))
    result = at_depth(600, r.close)
    assert [(d.event, d.code) for d in result.diagnostics] == [(1, "stream-failed")]
    shallow = Reassembler("gemini", limits=Limits(max_depth=512))
    shallow.feed_bytes(wire)
    assert shallow.close().calls[0].arguments == args


@pytest.mark.skipif(sys.version_info < (3, 12), reason="on 3.11 the C parser counts Python's frames: the tests above")
@pytest.mark.parametrize("deltas", [False, True], ids=["snapshot", "deltas"])
def test_from_312_on_a_deep_caller_stack_reads_the_call_whole(deltas: bool) -> None:
    # The C parser's depth is counted apart from Python's frames: the same stream, fed 600 frames
    # down, reads as it does on a shallow stack (the 3.11 tests above meet the limit instead).
    r = Reassembler("openai-responses", limits=Limits(max_depth=512))
    for event in responses(DEEP, deltas=deltas):
        at_depth(600, lambda event=event: r.feed(event))
    assert at_depth(600, r.close).calls[0].status.value == "complete"
    args: dict[str, Any] = {"b": [1]}
    for _ in range(499):
        args = {"a": args}
    part = {"functionCall": {"name": "f", "args": args}}
    gemini = Reassembler("gemini", limits=Limits(max_depth=512))
    at_depth(600, lambda: gemini.feed_bytes(sse([{"candidates": [{"content": {"role": "model", "parts": [part]}}]}])))
    assert at_depth(600, gemini.close).calls[0].arguments == args
