"""Task 96: Claude fallback and decline leftovers (each test below failed before).

1. Hostile audit 95's finding 5: a result whose call a decline cut (``cut-by-decline``), re-emitted
   by ``DeltaEmitter`` and read back as ``"openai-chat"``, said ``unterminated-arguments`` (strict
   mode raised it) and ``provider-error``: the last chunk listed the call ``declined``, as it lists a
   declined model's broken call, and the chat decoder read every listed call as one no tool runs
   among the calls (``unusable-action``, a violation its source never said). Now ``finish()`` lists
   the cut ``cut-by-decline``, and the chat decoder ends a ``declined`` or ``cut-by-decline`` call as
   its source ended it and sets it apart in ``declined_calls`` (policy declines-read-back); fsm's own
   error that lists nothing but such calls, beside a finish, says no ``provider-error``. Whole and
   re-emitted give the same calls and codes (but ``model-fallback``, which no chat chunk carries),
   lax and strict, over every flush, reasoning dialect and source wire.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from tests.test_claude_fallback86 import _hop, _said, _stream, _use, mid_output
from tests.test_fallback_leftovers90 import _declined_mid_call

pytest.importorskip("anthropic")


def _broken_then_declined() -> list[Any]:
    """A declined model's call whose JSON never closed, a text block after it, then the fallback
    block: its cut is no decline's (a violation at the source too)."""
    return _stream([_use("tool_use", "toolu_bad", "run", '{"cmd": "l'), _said("Hm."), _hop(), _said("Here.")])


def _both() -> list[Any]:
    """A declined model's whole call, then one of its calls the decline cut."""
    return _stream(
        [_use("tool_use", "toolu_whole", "run", '{"a": 1}'), _use("tool_use", "toolu_cut", "run", '{"b": '), _hop()]
    )


STREAMS = {"cut": _declined_mid_call, "whole": mid_output, "broken": _broken_then_declined, "both": _both}


def _reemit(events: list[Any], wire: str, flush: str, blocks: Any) -> tuple[list[dict[str, Any]], fsm.Result]:
    """The stream read (lax) and re-emitted: its chunks, and the result they came from."""
    emitter = fsm.DeltaEmitter(flush, reasoning_blocks=blocks, source=wire)  # type: ignore[arg-type]
    chunks = [emitter.start()]
    if wire == "bedrock":
        from tests.test_bedrock_invoke import invoke_stream

        reader = fsm.Reassembler("bedrock", content_deltas=True)
        chunks += emitter.chunks(reader.feed_bytes(invoke_stream(events)))
    else:
        reader = fsm.Reassembler("anthropic", content_deltas=True)
        for event in events:
            chunks += emitter.chunks(reader.feed(event))
    result = reader.close()
    chunks += [*emitter.chunks(reader.drain()), emitter.finish(result)]
    return chunks, result


def _read(chunks: list[dict[str, Any]], strict: bool, piece: int | None) -> tuple[fsm.Result | None, str | None]:
    """The chunks read back, as SSE bytes in reads of ``piece`` (whole: None): the result, or the
    strict error's code."""
    wire = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    reader = fsm.Reassembler("openai-chat", strict=strict)
    try:
        for at in range(0, len(wire), piece or len(wire)):
            reader.feed_bytes(wire[at : at + (piece or len(wire))])
        return reader.close(), None
    except fsm.RemoteProtocolError as exc:
        return None, str(exc).split(": ")[1]


def _whole(events: list[Any], strict: bool) -> tuple[fsm.Result | None, str | None]:
    try:
        return fsm.reassemble(events, "anthropic", strict=strict), None
    except fsm.RemoteProtocolError as exc:
        return None, str(exc).split(": ")[1]


def _calls(calls: tuple[fsm.ToolCall, ...]) -> list[tuple[Any, ...]]:
    return [(c.index, c.id, c.name, c.status, c.arguments_json) for c in calls]


def _said_of_calls(result: fsm.Result) -> list[str]:
    """The codes a chat stream can carry: all but model-fallback (the fallback block rides on no chunk)."""
    return [code for code in result.codes() if code != "model-fallback"]


@pytest.mark.parametrize("name", list(STREAMS))
@pytest.mark.parametrize("wire", ["anthropic", "bedrock"])
@pytest.mark.parametrize("flush", ["incremental", "on-finish"])
@pytest.mark.parametrize("blocks", [None, "thinking_blocks", "reasoning_details"])
def test_whole_and_re_emitted_give_the_same_calls_and_codes_lax_and_strict(
    name: str, wire: str, flush: str, blocks: Any
) -> None:
    events = STREAMS[name]()
    chunks, result = _reemit(events, wire, flush, blocks)
    for strict in (False, True):
        whole, raised = _whole(events, strict)
        for piece in (None, 7):
            back, back_raised = _read(chunks, strict, piece)
            assert back_raised == raised, (strict, piece)
            if whole is None or back is None:
                continue
            assert _calls(back.calls) == _calls(whole.calls) == _calls(result.calls)
            assert _calls(back.declined_calls) == _calls(whole.declined_calls)
            assert _said_of_calls(back) == _said_of_calls(whole), (strict, piece)
            assert back.finish_reason == whole.finish_reason


def test_the_cut_is_listed_cut_by_decline_and_a_broken_declined_call_declined() -> None:
    chunks, _ = _reemit(_both(), "anthropic", "incremental", None)
    error = chunks[-1]["error"]
    assert error["incomplete_tool_calls"] == [
        {"index": 0, "id": "toolu_whole", "status": "declined"},
        {"index": 1, "id": "toolu_cut", "status": "cut-by-decline"},
    ]
    assert error["message"].endswith("toolu_whole (run): declined, toolu_cut (run): cut-by-decline")
    chunks, result = _reemit(_broken_then_declined(), "anthropic", "incremental", None)
    assert result.codes() == ["unterminated-arguments", "model-fallback", "declined-call"]
    assert chunks[-1]["error"]["incomplete_tool_calls"] == [{"index": 0, "id": "toolu_bad", "status": "declined"}]


def test_the_cut_read_back_is_said_as_the_source_said_it() -> None:
    chunks, _ = _reemit(_declined_mid_call(), "anthropic", "incremental", "thinking_blocks")
    back = fsm.reassemble(chunks, "openai-chat", strict=True)
    (cut, declined) = back.diagnostics
    assert (cut.code, cut.severity) == ("cut-by-decline", fsm.Severity.WARNING)
    assert (
        cut.message
        == "call toolu_cut (run): the JSON never closed, cut when its model declined, as the stream's error says"
    )
    assert declined.code == "declined-call" and "toolu_cut" in declined.message
    assert [c.id for c in back.complete_calls] == ["toolu_ok"] and back.declined_calls[0].arguments_json == '{"cmd": "l'


def test_other_listed_calls_and_other_errors_still_say_the_provider_error() -> None:
    """Only fsm's own note of declined calls, beside a finish, says nothing more than its calls."""
    chunks, _ = _reemit(_declined_mid_call(), "anthropic", "incremental", None)
    last = chunks[-1]
    for error in (
        {**last["error"], "type": "server_error"},  # another error, not fsm's note
        {**last["error"], "incomplete_tool_calls": [*last["error"]["incomplete_tool_calls"], {"index": 1}]},
        {**last["error"], "incomplete_tool_calls": [{"index": 1, "id": "toolu_ok", "status": "invalid"}]},
    ):
        back = fsm.reassemble([*chunks[:-1], {**last, "error": error}], "openai-chat")
        assert "provider-error" in back.codes(), error
    stopped = {**last, "choices": [{**last["choices"][0], "finish_reason": None}]}  # no finish beside it
    assert "provider-error" in fsm.reassemble([*chunks[:-1], stopped], "openai-chat").codes()
