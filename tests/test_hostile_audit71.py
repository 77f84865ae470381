"""Hostile audit 71: aliasing and lifecycle misuse through the public API.

Gateways and agent frameworks edit what they get (append to a messages list, edit a call's arguments,
pop a field before sending) and reuse objects across turns. What the audit found, each fixed here
with a test that failed before:

* ``fsm.messages.assistant_message`` put the result's own dicts and lists in the message: a call's
  ``arguments`` as Anthropic's ``input``, Gemini's ``args``, Ollama's and Converse's arguments, a
  server result's ``block`` contents, a Responses built-in call's ``action``/``operation``. A caller
  editing the message (redacting an argument before logging, say) changed ``call.arguments``, the
  calls it then ran and every later message built from the result.
* ``DeltaEmitter`` took anything in any order: ``chunks()`` after ``finish()`` sent chunks after the
  stream's last one, a second ``finish()`` a second last chunk, a second stream's outputs a second
  header for call 0 (the client joined both streams' text under one call), and ``finish()`` given
  another stream's result ended the stream with that stream's finish and calls that never went out.
* ``copy.copy(reassembler)`` shared the original's calls, framing and ledger: feeding the copy
  completed the original's calls, and the copy took input after the original closed. It is a fork
  now, as ``copy.deepcopy`` and ``pickle`` already made (checked over every vector and capture).
* An event fed while ``feed_bytes`` held the bytes of one not yet ended (an SSE event before its
  blank line) was read ahead of it: the calls out of order, the events misnumbered, a call's id
  synthesized and the wire's a late-id. It is refused (InvalidInput) now; bytes then events stay
  allowed where no event is held (boto3's InvokeModel chunks after the stream's bytes).
* An SDK object whose ``model_dump`` fed the reassembler reading it had its event read inside the
  outer one (the outer feed's outputs handed out by the inner); one that closed it had the outer
  event read into the closed stream. Both are refused now (LocalProtocolError).

Left as it was, documented as a policy (repair-keeps-objects): ``fsm.history.repair`` returns what it
leaves alone as the input's own objects, the messages it did not change (documented before) and,
in those it changed, the blocks, calls and values it did not (a renamed call's ``function``): some
14,000 of 5,700 hostile histories' changed messages held such an object. A copy would cost every
turn its history's size, and a caller editing in place must copy the messages left alone anyway.

Checked and found safe: the input of reassemble, the messages builders and repair is never mutated
(every vector); ``r.partial()`` is a fresh value; ``taken`` is copied; ``Limits`` and ``Policies``
are frozen; DeltaEmitter chunks a caller empties as they come change no later chunk (280 runs);
two repairs share nothing and no output holds one object twice (5,700 histories); ``copy`` and
``pickle`` of results, calls and diagnostics give equal objects; a Reassembler forked by
``copy.deepcopy`` or ``pickle`` halfway through any vector or capture (167 streams, bytes and
dicts) gives the whole stream's result, and so does the original; feed after close, close twice,
close(interrupted=) after close are typed or the same result; areassemble cancelled part-way
keeps the calls so far (result_so_far) and closes the async generator.
"""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest

import fsm
from fsm import history
from fsm.errors import InvalidInput, LocalProtocolError
from fsm.harness.vectors import Vector, load_vectors
from fsm.messages import FORMATS, assistant_message

# -- fsm.messages: the message is the caller's to edit ------------------------------------------------------


def _read(vector: Vector) -> fsm.Result:
    reassembler = fsm.Reassembler(vector.shape, choice=vector.choice, policies=fsm.Policies(**vector.policies))
    try:
        for event in copy.deepcopy(vector.events):
            reassembler.feed(event)
        return reassembler.close()
    except fsm.ToolcallFSMError:
        return reassembler.close()


def _containers(value: Any) -> list[Any]:
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            found.append(item)
            stack.extend(item)
    return found


def _vandalise(message: Any) -> None:
    """What a careless caller may do to a message it was given: every dict and list in it emptied."""
    for container in _containers(message):
        container.clear()


_VECTORS = [vector for vector in load_vectors() if vector.events]


@pytest.mark.parametrize("vector", _VECTORS, ids=[vector.name for vector in _VECTORS])
def test_editing_a_next_turn_message_changes_neither_the_result_nor_the_next_message(vector: Vector) -> None:
    result = _read(vector)
    before = repr(result)
    for format in FORMATS:
        for incomplete in ("omit", "include"):
            try:
                message = assistant_message(result, format, incomplete=incomplete)  # type: ignore[call-overload]
            except LocalProtocolError:  # a call the format cannot carry
                continue
            sent = json.dumps(message, sort_keys=True, default=repr)
            _vandalise(message)
            assert repr(result) == before, (format, incomplete)
            again = assistant_message(result, format, incomplete=incomplete)  # type: ignore[call-overload]
            assert json.dumps(again, sort_keys=True, default=repr) == sent, (format, incomplete)


def test_an_anthropic_input_edited_leaves_the_call_to_run_as_it_came() -> None:
    stream = [
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": [], "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t1", "name": "pay"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"to":'}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": ' "bob"}'}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]
    result = fsm.reassemble(stream)
    message = assistant_message(result, "anthropic")
    message["content"][0]["input"]["to"] = "[redacted]"  # a gateway's log redaction
    assert result.calls[0].arguments == {"to": "bob"}
    assert assistant_message(result, "anthropic")["content"][0]["input"] == {"to": "bob"}


def test_a_result_built_by_hand_nested_past_the_stack_or_holding_itself_is_copied_too() -> None:
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(5000):
        inner["a"] = inner = {}
    looped: dict[str, Any] = {"x": 1}
    looped["self"] = looped
    for arguments in (deep, looped):
        complete = fsm.CallStatus.COMPLETE
        call = fsm.ToolCall(0, "c", "c", "f", arguments=arguments, arguments_json="{}", status=complete)
        result = fsm.Result(provider="anthropic", finish_reason="tool_calls", calls=(call,), diagnostics=())
        sent = assistant_message(result, "anthropic")["content"][0]["input"]
        assert sent is not arguments
        assert type(sent) is dict
    assert sent["self"] is sent  # the loop copied as a loop of the copy


# -- DeltaEmitter: one stream's outputs, each once, then its last chunk ------------------------------------

_TWO_CALLS = (
    '{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_a", "type": "function",'
    ' "function": {"name": "f", "arguments": "{\\"x\\": "}}]}}]}',
    '{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}}]}',
    '{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "id": "call_b", "type": "function",'
    ' "function": {"name": "g", "arguments": "{}"}}]}, "finish_reason": "tool_calls"}]}',
)


def _outputs(stream: tuple[str, ...] = _TWO_CALLS) -> tuple[list[list[fsm.Output]], fsm.Result]:
    reassembler = fsm.Reassembler()
    outputs = [reassembler.feed(json.loads(event)) for event in stream]
    result = reassembler.close()
    return [*outputs, reassembler.drain()], result


def _emitted(emitter: fsm.DeltaEmitter, outputs: list[list[fsm.Output]]) -> list[dict[str, Any]]:
    return [chunk for each in outputs for chunk in emitter.chunks(each)]


def test_nothing_goes_out_after_the_last_chunk() -> None:
    # chunks() after finish() sent a call's header after the stream's last chunk, and a second
    # finish() a second last chunk: a client had read the stream as ended at the first.
    outputs, result = _outputs()
    emitter = fsm.DeltaEmitter()
    _emitted(emitter, outputs)
    last = emitter.finish(result)
    assert last["choices"][0]["finish_reason"] == "tool_calls"
    for late in (lambda: emitter.chunks(outputs[0]), lambda: emitter.finish(result), emitter.start):
        with pytest.raises(LocalProtocolError, match=r"after finish\(\): the last chunk went out"):
            late()


def test_outputs_of_a_second_stream_are_refused_and_nothing_of_them_goes_out() -> None:
    # Two reassemblers' outputs in one emitter sent call 0's header twice: the client joined both
    # streams' text under one call ('{"x": 1}{"x": 1}').
    outputs, result = _outputs()
    emitter = fsm.DeltaEmitter()
    sent = _emitted(emitter, outputs)
    again, _ = _outputs()
    with pytest.raises(InvalidInput, match=r"outputs\[0\] opens call 0 again \('call_a'\)"):
        emitter.chunks(again[0])
    with pytest.raises(InvalidInput, match=r"outputs\[2\] opens call 0 again"):
        fsm.DeltaEmitter().chunks([*again[0], *again[0]])
    assert sent == _emitted(fsm.DeltaEmitter(), outputs)  # the refusal changed nothing
    assert emitter.finish(result)["choices"][0]["finish_reason"] == "tool_calls"


def test_finish_refuses_another_streams_result() -> None:
    # finish() given another stream's result ended the stream with that stream's finish and an
    # error naming calls that never went out.
    outputs, result = _outputs()
    other = fsm.reassemble([json.loads(_TWO_CALLS[0].replace("call_a", "call_z"))])
    emitter = fsm.DeltaEmitter()
    _emitted(emitter, outputs)
    with pytest.raises(InvalidInput, match="call 0 went out as 'call_a', and this result's call 0 is 'call_z'"):
        emitter.finish(other)
    with pytest.raises(InvalidInput, match="call 1 went out as 'call_b', and this result's call 1 is missing"):
        emitter.finish(fsm.reassemble([json.loads(_TWO_CALLS[0])]))
    assert emitter.finish(result)["choices"][0]["finish_reason"] == "tool_calls"  # the right one still ends it


# -- Reassembler: copied, a fork -----------------------------------------------------------------------------


@pytest.mark.parametrize("fork", [copy.copy, copy.deepcopy, lambda r: pickle.loads(pickle.dumps(r))])
@pytest.mark.parametrize("as_bytes", [False, True])
def test_a_copied_reassembler_is_a_fork_of_the_stream(fork: Any, as_bytes: bool) -> None:
    # copy.copy gave a reassembler sharing the original's calls, framing and ledger: the rest fed to
    # the copy completed the original's calls, and the copy took input after the original closed.
    def feed(reassembler: fsm.Reassembler, events: tuple[str, ...]) -> None:
        for event in events:
            if as_bytes:
                reassembler.feed_bytes(f"data: {event}\n\n".encode())
            else:
                reassembler.feed(json.loads(event))

    whole = fsm.Reassembler()
    feed(whole, _TWO_CALLS)
    original = fsm.Reassembler()
    feed(original, _TWO_CALLS[:1])
    copied = fork(original)
    feed(copied, _TWO_CALLS[1:])
    cut = original.close()
    assert [(call.id, call.status.value) for call in cut.calls] == [("call_a", "truncated")]
    assert copied.close() == whole.close()


# -- Reassembler: an event fed while bytes hold one not yet ended ---------------------------------------------

_CONVERSE = (
    {"messageStart": {"role": "assistant"}},
    {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "tu_1", "name": "f"}}}},
    {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"x": 1}'}}}},
    {"contentBlockStop": {"contentBlockIndex": 0}},
    {"messageStop": {"stopReason": "tool_use"}},
)


def _framed(framing: str) -> tuple[list[bytes], list[Any]]:
    """A stream's events as ``framing`` writes each (its bytes), and as dicts."""
    if framing == "aws":
        from tests.helpers import aws_message

        events: list[Any] = list(_CONVERSE)
        return [aws_message(json.dumps(next(iter(e.values()))).encode(), next(iter(e))) for e in events], events
    events = [json.loads(event) for event in _TWO_CALLS]
    texts = [json.dumps(event) for event in events]
    if framing == "sse":
        return [f"data: {text}\n\n".encode() for text in texts], events
    if framing == "ndjson":
        return [f"{text}\n".encode() for text in texts], events
    return [f"[{texts[0]},".encode(), f"{texts[1]},".encode(), f"{texts[2]}]".encode()], events  # a JSON array


@pytest.mark.parametrize("framing", ["sse", "ndjson", "json-array", "aws"])
@pytest.mark.parametrize("cut", [2, -1])  # the framing not told yet; the event's last byte missing
def test_an_event_fed_while_bytes_hold_one_not_yet_ended_is_refused_not_read_ahead_of_it(
    framing: str, cut: int
) -> None:
    # SSE: the first event's bytes without the blank line that ends it, then the second event as a
    # dict: the dict was read first (call 0 opened without its id, call_0 synthesized, the wire's id
    # a late-id at event 2), and the held bytes at close() as event 2.
    wire, events = _framed(framing)
    whole = fsm.Reassembler()
    for event in events:
        whole.feed(event)
    if framing == "json-array" and cut == -1:
        cut = -2  # its "}" (the "," after it ends no element)
    reassembler = fsm.Reassembler()
    reassembler.feed_bytes(wire[0][:cut])
    with pytest.raises(InvalidInput, match=r"feed\(\) while feed_bytes\(\) holds the bytes of an event not yet ended"):
        reassembler.feed(events[1])
    reassembler.feed_bytes(wire[0][cut:])  # the event ends: what comes next may come as a dict
    reassembler.feed(events[1])
    for piece in wire[2:]:
        reassembler.feed_bytes(piece)
    assert reassembler.close() == whole.close()


def test_events_before_bytes_and_empty_bytes_change_nothing() -> None:
    reassembler = fsm.Reassembler()
    reassembler.feed(json.loads(_TWO_CALLS[0]))  # read at once: the bytes after it come after it
    reassembler.feed_bytes(b"")
    reassembler.feed(json.loads(_TWO_CALLS[1]))
    reassembler.feed_bytes(f"data: {_TWO_CALLS[2]}\n\n".encode())
    assert [(call.id, call.status.value) for call in reassembler.close().calls] == [
        ("call_a", "complete"),
        ("call_b", "complete"),
    ]


# -- Reassembler: an object of the caller's that calls it back as it is read -----------------------------------


class _CallsBack:
    """An SDK object (read by its model_dump) whose reading feeds or closes the reassembler reading it."""

    def __init__(self, event: dict[str, Any], back: Any) -> None:
        self.event, self.back = event, back

    def model_dump(self, **_: Any) -> dict[str, Any]:
        self.back()
        return self.event


@pytest.mark.parametrize("back", ["feed", "feed_bytes", "close", "interrupted"])
def test_a_reassembler_called_back_while_it_reads_an_event_refuses_it(back: str) -> None:
    # Fed from inside an SDK object's model_dump, the event was read in the middle of the outer one
    # (its outputs handed out by the inner feed); closed from there, the outer event was read into a
    # closed stream, its CallOpened handed out after the result was made.
    reassembler = fsm.Reassembler()
    reassembler.feed(json.loads(_TWO_CALLS[0]))
    calls = {
        "feed": lambda: reassembler.feed(json.loads(_TWO_CALLS[1])),
        "feed_bytes": lambda: reassembler.feed_bytes(b"data: {}\n\n"),
        "close": reassembler.close,
        "interrupted": lambda: reassembler.close(interrupted=OSError("x")),
    }
    refused: list[Exception] = []

    def call_back() -> None:
        try:
            calls[back]()
        except LocalProtocolError as exc:
            refused.append(exc)

    reassembler.feed(_CallsBack(json.loads(_TWO_CALLS[1]), call_back))  # the caller's object caught the refusal
    assert [str(exc) for exc in refused] == [
        "this reassembler is reading an event (another thread's call, or an object of the caller's own fed to it"
        " calling it back): feed(), feed_bytes() and close() take one call at a time; nothing was taken in"
    ]  # (the refusal of audit 75's one-call-at-a-time, which covers both)
    reassembler.feed(json.loads(_TWO_CALLS[2]))  # the stream goes on as if it had not called back
    whole = fsm.Reassembler()
    for event in _TWO_CALLS:
        whole.feed(json.loads(event))
    assert reassembler.close() == whole.close()


def test_a_refusal_the_callers_object_lets_go_up_stops_the_stream_as_its_own_errors_do() -> None:
    reassembler = fsm.Reassembler()
    reassembler.feed(json.loads(_TWO_CALLS[0]))
    with pytest.raises(LocalProtocolError, match="this reassembler is reading an event"):
        reassembler.feed(_CallsBack(json.loads(_TWO_CALLS[1]), reassembler.close))
    with pytest.raises(LocalProtocolError, match="the stream already failed"):
        reassembler.feed(json.loads(_TWO_CALLS[2]))
    result = reassembler.close()
    assert [(call.id, call.status.value) for call in result.calls] == [("call_a", "truncated")]
    assert [d.code for d in result.diagnostics] == ["stream-failed", "truncated"]


# -- fsm.history: what repair leaves alone is the input's own (policy repair-keeps-objects) ----------------------


def test_repair_returns_what_it_left_alone_as_the_inputs_objects_and_a_new_list() -> None:
    call = {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    history_in = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call, copy.deepcopy(call)]},
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "tool", "tool_call_id": "a", "content": "2"},
    ]
    before = copy.deepcopy(history_in)
    fixed, changes = history.repair(history_in, None, "openai")
    assert [c.kind for c in changes] == ["renamed-call", "renamed-result"]
    assert fixed is not history_in and fixed[0] is history_in[0]  # a message left alone: the same object
    renamed = fixed[1]["tool_calls"][1]
    assert renamed["id"] == "a_d2" and renamed is not history_in[1]["tool_calls"][1]
    assert renamed["function"] is history_in[1]["tool_calls"][1]["function"]  # what the rename left alone
    fixed.append({"role": "user", "content": "more"})  # the list is the caller's
    assert history_in == before
    edited = copy.deepcopy(fixed)  # the documented way to edit it in place
    edited[1]["tool_calls"][1]["function"]["arguments"] = '{"x": 1}'
    edited[0]["content"] = "changed"
    assert history_in == before
