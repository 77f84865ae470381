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
2. A ``signature_delta`` at the index of a block of a type the Anthropic decoder does not know (its
   start an ``unknown-event``) became a thinking block of no text, which the next turn went back with
   under a signature the API gave another block. The anthropic SDK's accumulator sets a signature
   on a thinking block alone, and passes over any other's. Now it is said (``part-not-reassembled``,
   at its event) and read as nothing.
3. A Claude ``connector_text`` block (kept in ``Result.server_tool_results`` since task 90) went out
   in no re-emitted chunk, and nothing said so. No chat field holds it, and no output of it comes
   while the stream runs, so it has no place among the chunks: ``DeltaEmitter.finish`` now lists it
   (``unsent_blocks``, policy connector-text-unsent), and ``replay --output deltas`` says it. Through
   ChatAnthropic (langchain-anthropic 1.7) it is a thinking block of no text under the connector's
   signature (its start and text deltas yield nothing, its ``signature_delta`` a thinking chunk),
   which fsm cannot tell from a thinking block under ``display: "omitted"``: held below as it reads,
   and told in the README.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from fsm import messages
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


# -- 2. a signature_delta in a block of a type no reading knows -----------------------------------------


def _mystery(*, index: bool = True) -> list[dict[str, Any]]:
    """A block of a type no reading knows that a signature_delta comes in, then a text block; with
    ``index`` False, each event of the block without its index (a proxy's)."""
    at: dict[str, Any] = {"index": 0} if index else {}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": []}
    message |= {"stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
    return [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", **at, "content_block": {"type": "mystery_block", "note": "x"}},
        {"type": "content_block_delta", **at, "delta": {"type": "signature_delta", "signature": "SIG"}},
        {"type": "content_block_stop", **at},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {}},
        {"type": "message_stop"},
    ]


@pytest.mark.parametrize("index", [True, False])
def test_a_signature_in_a_block_no_reading_knows_is_said_and_read_as_nothing(index: bool) -> None:
    """Before: a Reasoning(text="", signature="SIG") at its index, sent back as a thinking block."""
    events = _mystery(index=index)
    result = fsm.reassemble(events, "anthropic")
    assert result.codes() == ["unknown-event", "part-not-reassembled"] and result.reasoning == ()
    said = result.diagnostics[1]
    assert said.event == 3 and said.severity is fsm.Severity.WARNING
    where = 0 if index else None
    assert said.message == (
        f"a signature_delta in block {where}, a 'mystery_block' block no reading knows:"
        " not read as a thinking block's signature"
    )
    assert messages.assistant_message(result, "anthropic")["content"] == [{"type": "text", "text": "Hi"}]
    with pytest.raises(fsm.RemoteProtocolError, match=r"^event 2: unknown-event"):  # as before: its start
        fsm.reassemble(events, "anthropic", strict=True)


def test_the_anthropic_sdk_passes_the_signature_over_too() -> None:
    from anthropic.lib.streaming._messages import accumulate_event

    snapshot: Any = None
    for event in _mystery():
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs={})
    blocks = [block.to_dict() for block in snapshot.content]
    assert blocks == [{"type": "mystery_block", "note": "x"}, {"type": "text", "text": "Hi"}]


def test_a_signature_at_a_known_block_after_an_unknown_one_there_is_read() -> None:
    """A block of a known type started at the index again (a proxy's replay): its signature is its own."""
    events = _mystery()
    thinking = [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "t"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "S2"}},
    ]
    result = fsm.reassemble([*events[:3], *thinking, *events[3:]], "anthropic")
    assert [(r.text, r.signature) for r in result.reasoning] == [("t", "S2")]
    assert result.codes() == ["unknown-event", "part-not-reassembled"]


# -- 3. connector_text in a re-emitted stream, and through ChatAnthropic -----------------------------------


def _connected() -> list[Any]:
    from tests.test_fallback_leftovers90 import _connector, _unchecked

    return _unchecked([_connector("From the drive: ", "a.txt"), _said("Here.")])


@pytest.mark.parametrize("blocks", [None, "thinking_blocks", "reasoning_details"])
def test_a_connector_text_block_no_chunk_carries_is_listed(blocks: Any) -> None:
    """Before: DeltaEmitter had no unsent_blocks, and the block went unsaid."""
    reader, emitter = fsm.Reassembler("anthropic", content_deltas=True), fsm.DeltaEmitter(reasoning_blocks=blocks)
    chunks = [chunk for event in _connected() for chunk in emitter.chunks(reader.feed(event))]
    assert emitter.unsent_blocks == ()
    chunks.append(emitter.finish(reader.close()))
    assert emitter.unsent_blocks == (
        "connector_text block at content block 0: no chat chunk carries it (its text and signature)",
    )
    assert "a.txt" not in json.dumps(chunks) and "error" not in chunks[-1]
    assert fsm.reassemble(chunks, "openai-chat").text == "Here."


def test_replay_deltas_says_the_block_it_did_not_re_emit(tmp_path: Any) -> None:
    import io

    from fsm.cli import main
    from tests.test_wire_gaps79 import _named

    path = tmp_path / "c.sse"
    path.write_bytes(_named(_connected()))
    out, err = io.StringIO(), io.StringIO()
    assert main(["replay", "--provider", "anthropic", "--output", "deltas", str(path)], out, err) == 0
    assert err.getvalue() == (
        "toolcall-fsm: not re-emitted: connector_text block at content block 0: no chat chunk carries it"
        " (its text and signature)\n"
    )


@pytest.mark.parametrize("output_version", [None, "v1"])
def test_chat_anthropic_gives_the_block_as_a_thinking_block_of_no_text(output_version: str | None) -> None:
    """What ChatAnthropic yields of the block is what it yields of a thinking block whose display is
    omitted: a signature under the block's index, no text. fsm reads it so (the README says so)."""
    from tests.test_langchain_places import chat_anthropic
    from tests.test_wire_gaps79 import _named

    got = fsm.reassemble(list(chat_anthropic(_named(_connected()), output_version)[1].stream("go")))
    assert [(r.text, r.signature, r.output_index) for r in got.reasoning] == [("", "sig", 0)]
    assert got.server_tool_results == () and got.text == "Here."
