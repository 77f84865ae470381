"""Hostile audit 101 of the merge of fallback96 (policies declines-read-back and
connector-text-unsent, a ``signature_delta`` in a Claude block of a type no reading knows).

Found and fixed (each test below failed before):

1. Past ``cut-by-decline``'s per-code bound (``Limits.max_diagnostics_per_code``, 100): a stream of
   more than a hundred declines each cutting a call keeps the first hundred diagnostics and counts
   the rest in ``suppressed_diagnostics``. ``DeltaEmitter.finish`` told a cut by the diagnostic naming
   its call, so it listed each cut past the bound ``declined``, as a declined model's broken call, and
   the read back said ``unterminated-arguments`` of each (a violation its source never said: strict
   mode raised it). Now a declined call whose JSON is invalid and that no kept diagnostic names is
   listed as the one of ``cut-by-decline`` and ``unterminated-arguments`` whose bound was passed
   (``declined`` where both were, or neither: policy declines-read-back).
2. An entry of an error's ``incomplete_tool_calls`` that names a call's index with the id of a call
   at another index ended the call at the named index all the same, without a word (routing takes
   a known id at another index for a call reusing it, and ends the index's newest): listed
   ``declined`` it set that call apart in ``declined_calls``, listed ``truncated`` or ``invalid`` it
   cut it, though the entry named the other one. Now an entry that names no call the stream opened
   at its index by its id ends nothing and is said (``part-not-reassembled``), as one naming an id
   the stream never gave was.
3. ``DeltaEmitter.finish`` given a hand-built result whose fields are not of their declared types (a
   server result's block that is no dict, ``declined_calls`` that is no tuple of calls) raised
   ``AttributeError`` or ``TypeError`` from deep inside, and the emitter was left finished. Now it is
   refused as ``fsm.messages`` refuse one (``InvalidInput`` naming the field), the emitter still open.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

import fsm
import fsm.errors
from tests.test_claude_fallback86 import _hop, _said, _stream, _use
from tests.test_fallback_leftovers96 import _calls, _read, _reemit, _whole

pytest.importorskip("anthropic")


def _cuts(n: int) -> list[Any]:
    """``n`` declines, each cutting a call of the model before it mid-JSON."""
    blocks = []
    for at in range(n):
        blocks += [_use("tool_use", f"toolu_{at}", "run", '{"cmd": "l'), _hop()]
    return _stream([*blocks, _said("Here.")])


@pytest.mark.parametrize("strict", [False, True])
def test_cuts_past_the_per_code_bound_read_back_as_cuts(strict: bool) -> None:
    """Before: the 5 cuts past the bound were listed declined; read back, each was unterminated-arguments."""
    events = _cuts(105)
    chunks, _ = _reemit(events, "anthropic", "incremental", None)
    statuses = {entry["status"] for entry in chunks[-1]["error"]["incomplete_tool_calls"]}
    assert statuses == {"cut-by-decline"}
    whole, raised = _whole(events, strict)
    back, back_raised = _read(chunks, strict, None)
    assert raised is back_raised is None and whole is not None and back is not None
    assert _calls(back.declined_calls) == _calls(whole.declined_calls) and back.calls == ()
    assert back.suppressed_diagnostics == {"cut-by-decline": 5, "declined-call": 5}
    assert sorted(set(back.codes())) == ["cut-by-decline", "declined-call"]


def _chunk(delta: dict[str, Any], finish: str | None = None, **beside: Any) -> dict[str, Any]:
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    } | beside


def _opened(index: int, call_id: str, arguments: str) -> dict[str, Any]:
    function = {"name": "run", "arguments": arguments}
    return _chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": function}]})


@pytest.mark.parametrize("status", ["declined", "cut-by-decline", "truncated", "invalid"])
@pytest.mark.parametrize("named", ["call_b", "call_zzz"])
def test_an_entry_naming_an_index_by_another_id_ends_no_call(status: str, named: str) -> None:
    """Before: call_a (index 0) was ended as the entry said, though the entry named another id."""
    listed = [{"index": 0, "id": named, "status": status}]
    error = {"message": "calls that did not complete", "type": "incomplete_tool_call", "incomplete_tool_calls": listed}
    stream = [_opened(0, "call_a", '{"a": 1}'), _opened(1, "call_b", '{"b": 2}'), _chunk({}, "tool_calls", error=error)]
    result = fsm.reassemble(stream, "openai-chat")
    assert [(c.id, c.status) for c in result.calls] == [
        ("call_a", fsm.CallStatus.COMPLETE),
        ("call_b", fsm.CallStatus.COMPLETE),
    ]
    assert result.declined_calls == ()
    said = f"error.incomplete_tool_calls[0] names call {named} at index 0, which the stream never opened"
    assert [d.message for d in result.diagnostics if d.code == "part-not-reassembled"] == [said]


@pytest.mark.parametrize("message", ["quota exceeded: retry in 60s", None])
def test_an_upstreams_own_error_under_fsms_type_is_said(message: str | None) -> None:
    """Before: an error typed ``incomplete_tool_call`` beside a finish, listing only declined calls,
    was taken for fsm's own note and its message went unsaid, though it was an upstream's word."""
    listed = [{"index": 0, "id": "call_a", "status": "declined"}]
    error = {"message": message, "type": "incomplete_tool_call", "incomplete_tool_calls": listed}
    result = fsm.reassemble([_opened(0, "call_a", '{"a": 1}'), _chunk({}, "tool_calls", error=error)], "openai-chat")
    assert [c.id for c in result.declined_calls] == ["call_a"]
    assert "provider-error" in result.codes()
    if message is not None:
        assert any(message in d.message for d in result.diagnostics if d.code == "provider-error")


def test_fsms_own_note_of_declined_calls_is_no_provider_error() -> None:
    """The note ``DeltaEmitter.finish`` writes passes as before (policy declines-read-back)."""
    chunks, _ = _reemit(
        _stream([_use("tool_use", "toolu_1", "run", '{"a": 1}'), _hop()]), "anthropic", "incremental", None
    )
    assert chunks[-1]["error"]["message"].startswith("calls that did not complete or that a model that declined made")
    assert "provider-error" not in fsm.reassemble(chunks, "openai-chat").codes()


@pytest.mark.parametrize(
    ("field", "bad", "named"),
    [
        ("server_tool_results", None, "result.server_tool_results must be"),
        ("server_tool_results", [None], "result.server_tool_results must be"),
        ("declined_calls", None, "result.declined_calls must be"),
        ("declined_calls", (5,), "result.declined_calls[0] must be"),
        ("block", ["connector_text"], "result.server_tool_results[0].block must be"),
    ],
)
def test_finish_refuses_a_hand_built_result_of_wrong_types_and_stays_open(field: str, bad: Any, named: str) -> None:
    import attrs

    connector = {"type": "connector_text", "connector_text": "pre"}
    result = fsm.reassemble(
        [
            {"type": "message_start", "message": {"id": "m", "content": []}},
            {"type": "content_block_start", "index": 0, "content_block": connector},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
            {"type": "message_stop"},
        ],
        "anthropic",
    )
    assert result.server_tool_results, "the connector_text block is kept among the server results"
    if field == "block":
        broken = attrs.evolve(result, server_tool_results=(attrs.evolve(result.server_tool_results[0], block=bad),))
    else:
        broken = attrs.evolve(result, **{field: bad})
    emitter = fsm.DeltaEmitter()
    emitter.start()
    with pytest.raises(fsm.errors.InvalidInput, match=re.escape(named)):
        emitter.finish(broken)
    assert emitter.finish(result)["choices"][0]["finish_reason"] == "stop"  # not left finished by the refusal


@pytest.mark.parametrize("declined", ["bogus", "Declined", " declined"])
def test_a_hand_built_call_end_takes_the_two_decline_statuses_alone(declined: str) -> None:
    from fsm.events import ArgumentsFragment, CallEnd, CallRef, CallSeen

    ref = CallRef(index=0, id="a", name="f")
    reader = fsm.Reassembler("openai-chat")
    reader.feed(CallSeen(ref))
    reader.feed(ArgumentsFragment(ref, '{"x": 1}'))
    with pytest.raises(fsm.errors.InvalidInput, match=re.escape("CallEnd.declined")):
        reader.feed(CallEnd(CallRef(index=0, id="a"), declined=declined))  # type: ignore[arg-type]
    assert [call.id for call in reader.close().calls] == ["a"]  # close() gives the result so far
