"""Task 108: the re-emitter's and the Claude fallback's leftovers (each test below failed before, but
those that hold what a fix keeps).

1. Audit 102's 1: a second, different signature for a reasoning block's own item replaced the one it
   held (its latest word, policy signatures-kept-apart) in silence. Now it is said
   (``part-not-reassembled``, at the event that brought it); the same signature again says nothing.
2. Audit 102's 2: a reasoning block that opened empty went out under the index of its first entry,
   after a later block's: read back, the blocks came in another order (and a block that never sent
   anything was not read back at all). Policy reasoning-blocks-in-order: a block's first entry goes out
   after an empty entry for each block before it that sent nothing yet, and ``finish()`` sends one for
   each block that never sent any.
3. ``Reassembler.source_provider`` (policy langchain-source-provider) took the first integration a
   LangChain chunk named and said nothing of a later chunk naming another: now said, the first stands.
4. Audit 101's C: a declined model's call that the stream cut (a tool block still open when the
   fallback block came, truncated at the message's end) was listed ``declined`` and read back as
   ``unterminated-arguments`` (strict mode raised it). It is listed ``declined-truncated`` now, and
   reads back truncated and set apart, as its source said (policy declines-read-back).
5. Audit 101's F: a ``text_delta`` or ``thinking_delta`` in a Claude block of a type no reading knows
   was read as the turn's text or thinking (and went back to Claude as what it never was), said only by
   the block's ``unknown-event``. Now each is said (``part-not-reassembled``, naming the block's index
   and type) and read as nothing, as a ``signature_delta`` there is (task 96), and as the anthropic SDK's
   accumulator passes them over.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from fsm import messages
from tests.test_fallback_leftovers96 import _calls, _read, _reemit, _whole

pytest.importorskip("anthropic")

_MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": []}
_MESSAGE |= {"stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
_THINKING = {"type": "thinking", "thinking": ""}


def _turn(*body: dict[str, Any], stop: str = "end_turn") -> list[dict[str, Any]]:
    end = {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {}}
    return [{"type": "message_start", "message": _MESSAGE}, *body, end, {"type": "message_stop"}]


def _start(at: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": at, "content_block": block}


def _delta(at: int, kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": at, "delta": {"type": kind, **fields}}


def _stop(at: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": at}


def _sse(events: list[Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def _bytes_read(wire: bytes, provider: str, piece: int | None, strict: bool = False) -> fsm.Result:
    reader = fsm.Reassembler(provider, strict=strict)
    step = piece or len(wire)
    for at in range(0, len(wire), step):
        reader.feed_bytes(wire[at : at + step])
    return reader.close()


def _reasoning(result: fsm.Result) -> list[tuple[Any, ...]]:
    return [(r.text, r.signature, r.redacted) for r in result.reasoning]


# -- 1. a signature replaced under the block's own item -------------------------------------------------


def _resigned(second: str) -> list[dict[str, Any]]:
    return _turn(
        _start(0, _THINKING),
        _delta(0, "thinking_delta", thinking="t"),
        _delta(0, "signature_delta", signature="S1"),
        _delta(0, "signature_delta", signature=second),
        _stop(0),
    )


@pytest.mark.parametrize("piece", [None, 1, 7])
def test_a_signature_replaced_under_the_blocks_own_item_is_said(piece: int | None) -> None:
    """Before: ``[("t", "S2")]`` and no diagnostic: S1 was lost in silence."""
    result = _bytes_read(_sse(_resigned("S2")), "anthropic", piece)
    assert _reasoning(result) == [("t", "S2", None)]
    (said,) = result.diagnostics
    assert (said.code, said.severity, said.event) == ("part-not-reassembled", fsm.Severity.WARNING, 5)
    assert said.message == "reasoning block 0: another signature replaced the one it held"
    assert fsm.reassemble(_resigned("S2"), "anthropic", strict=True).reasoning == result.reasoning  # a warning


def test_the_same_signature_again_says_nothing() -> None:
    """What the fix keeps: a resend of the signature the block holds is no replacement."""
    result = fsm.reassemble(_resigned("S1"), "anthropic")
    assert _reasoning(result) == [("t", "S1", None)] and result.codes() == []


def test_an_openrouter_items_second_signature_is_said_naming_the_item() -> None:
    from tests.test_reemit_leftovers99 import _entry, _openrouter_two_signed

    result = _bytes_read(_sse(_openrouter_two_signed(_entry("S1", "tool_1"), _entry("S2", "tool_1"))), "openai-chat", 1)
    assert [(r.signature, r.item_id) for r in result.reasoning] == [("S2", "tool_1")]
    said = [d.message for d in result.diagnostics if d.code == "part-not-reassembled"]
    assert said == ["reasoning block 0 (item tool_1): another signature replaced the one it held"]


# -- 2. a block that opens empty keeps its place read back ------------------------------------------------


def _interleaved() -> list[dict[str, Any]]:
    """Two thinking blocks opened empty, the second's text first (a proxy's interleaving)."""
    return _turn(
        _start(0, _THINKING),
        _start(1, _THINKING),
        _delta(1, "thinking_delta", thinking="second"),
        _delta(0, "thinking_delta", thinking="first"),
        _delta(0, "signature_delta", signature="S0"),
        _stop(0),
        _delta(1, "signature_delta", signature="S1"),
        _stop(1),
    )


def _empty_around() -> list[dict[str, Any]]:
    """An empty thinking block, a signed one, another empty one, then text."""
    return _turn(
        _start(0, _THINKING),
        _stop(0),
        _start(1, _THINKING),
        _delta(1, "thinking_delta", thinking="x"),
        _delta(1, "signature_delta", signature="S1"),
        _stop(1),
        _start(2, _THINKING),
        _stop(2),
        _start(3, {"type": "text", "text": ""}),
        _delta(3, "text_delta", text="Hi"),
        _stop(3),
    )


@pytest.mark.parametrize("events", [_interleaved, _empty_around])
@pytest.mark.parametrize("blocks", ["thinking_blocks", "reasoning_details"])
@pytest.mark.parametrize("flush", ["incremental", "on-finish"])
def test_blocks_read_back_in_their_order(events: Any, blocks: str, flush: str) -> None:
    """Before: ``[second, first]`` read back; the empty blocks around a signed one were not read back."""
    chunks, result = _reemit(events(), "anthropic", flush, blocks)
    whole = fsm.reassemble(events(), "anthropic")
    assert _reasoning(result) == _reasoning(whole)
    for piece in (None, 1, 7):
        back, raised = _read(chunks, False, piece)
        assert raised is None and back is not None
        assert _reasoning(back) == _reasoning(whole), piece
        assert back.text == whole.text and back.codes() == whole.codes() == []


def test_each_block_goes_out_under_its_own_index_in_order() -> None:
    chunks, _ = _reemit(_interleaved(), "anthropic", "incremental", "thinking_blocks")
    entries = [e for c in chunks for e in c["choices"][0]["delta"].get("thinking_blocks", ())]
    assert entries[:2] == [
        {"type": "thinking", "thinking": "", "index": 0},  # block 0 holds its place before block 1's text
        {"type": "thinking", "thinking": "second", "index": 1},
    ]
    assert sorted({e["index"] for e in entries}) == [0, 1]


def test_blocks_that_send_in_order_go_out_as_before() -> None:
    """What the fix keeps: no empty entry where each block sends before the next."""
    from tests.test_claude_fallback86 import _said, _stream, _thought

    chunks, _ = _reemit(
        _stream([_thought("a", "A"), _said("x"), _thought("b", "B")]), "anthropic", "incremental", "thinking_blocks"
    )
    entries = [e for c in chunks for e in c["choices"][0]["delta"].get("thinking_blocks", ())]
    assert [(e["thinking"], e.get("signature"), e["index"]) for e in entries] == [
        ("a", None, 0),
        ("", "A", 0),
        ("b", None, 1),
        ("", "B", 1),
    ]


# -- 3. a LangChain chunk naming another integration --------------------------------------------------------


def test_a_later_langchain_chunk_naming_another_integration_is_said() -> None:
    """Before: ``source_provider`` stayed ``anthropic`` and nothing was said."""
    from tests.test_reemit_leftovers99 import _lc

    reader = fsm.Reassembler("openai-chat")
    for chunk in (_lc("Hi", "anthropic"), _lc(" there", "google_genai"), _lc("!", "anthropic")):
        reader.feed(chunk)
    assert reader.source_provider == "anthropic"
    result = reader.close()
    assert result.text == "Hi there!"
    (said,) = [d for d in result.diagnostics if d.code == "part-not-reassembled"]
    assert said.event == 2 and said.severity is fsm.Severity.WARNING
    assert said.message == (
        "a LangChain chunk names the integration 'google_genai', not the 'anthropic' an earlier chunk named:"
        " the first stands (source_provider)"
    )


def test_chat_openais_responses_items_are_no_change_of_integration() -> None:
    """What the fix keeps: ChatOpenAI names ``openai`` throughout; its Responses items tell the API."""
    from tests.test_reemit_leftovers99 import _lc

    reader = fsm.Reassembler("openai-chat")
    reader.feed(_lc("Hi", None))
    reader.feed(_lc("Hi", "openai"))
    reader.feed(_lc([{"type": "reasoning", "id": "rs_1", "summary": [], "index": 0}], "openai"))
    assert reader.source_provider == "openai-responses"
    assert "part-not-reassembled" not in reader.close().codes()


# -- 4. a declined model's call the stream cut ------------------------------------------------------------


def _declined_truncated(stop: str = "max_tokens") -> list[dict[str, Any]]:
    """A tool block still open when the fallback block came (a hostile ordering: Claude closes it
    first), the message then ended: the call is truncated, and a declined model's."""
    fallback = {"type": "fallback", "from": {"model": "x"}, "to": {"model": "y"}, "trigger": None}
    return _turn(
        _start(0, {"type": "tool_use", "id": "toolu_a", "name": "run", "input": {}}),
        _delta(0, "input_json_delta", partial_json='{"a": '),
        _start(1, fallback),
        _stop(1),
        _start(2, {"type": "text", "text": ""}),
        _delta(2, "text_delta", text="Hi"),
        _stop(2),
        stop=stop,
    )


@pytest.mark.parametrize("stop", ["max_tokens", "end_turn"])
@pytest.mark.parametrize("flush", ["incremental", "on-finish"])
@pytest.mark.parametrize("blocks", [None, "thinking_blocks", "reasoning_details"])
def test_a_declined_call_the_stream_cut_reads_back_truncated(stop: str, flush: str, blocks: Any) -> None:
    """Before: listed ``declined``, read back ``unterminated-arguments`` (strict mode raised it)."""
    events = _declined_truncated(stop)
    chunks, result = _reemit(events, "anthropic", flush, blocks)
    cut = stop == "max_tokens"  # (a normal end: the block's JSON never closed, a violation, listed declined)
    assert result.declined_calls[0].status is (fsm.CallStatus.TRUNCATED if cut else fsm.CallStatus.INVALID)
    assert chunks[-1]["error"]["incomplete_tool_calls"] == [
        {"index": 0, "id": "toolu_a", "status": "declined-truncated" if cut else "declined"}
    ]
    for strict in (False, True):
        whole, raised = _whole(events, strict)
        assert raised == (None if cut or not strict else "unterminated-arguments")
        for piece in (None, 1, 7):
            back, back_raised = _read(chunks, strict, piece)
            assert back_raised == raised, (strict, piece)
            if whole is None or back is None:
                continue
            assert _calls(back.calls) == _calls(whole.calls) == []
            assert _calls(back.declined_calls) == _calls(whole.declined_calls)
            said = ["truncated" if cut else "unterminated-arguments", "declined-call"]
            assert back.codes() == [c for c in whole.codes() if c != "model-fallback"] == said


# -- 5. text and thinking in a block of a type no reading knows ----------------------------------------------


def _mystery(*, index: bool = True) -> list[dict[str, Any]]:
    at: dict[str, Any] = {"index": 0} if index else {}
    return _turn(
        {"type": "content_block_start", **at, "content_block": {"type": "mystery_block"}},
        {"type": "content_block_delta", **at, "delta": {"type": "text_delta", "text": "secret"}},
        {"type": "content_block_delta", **at, "delta": {"type": "thinking_delta", "thinking": "hm"}},
        {"type": "content_block_delta", **at, "delta": {"type": "citations_delta", "citation": {"type": "x"}}},
        {"type": "content_block_stop", **at},
        _start(1, {"type": "text", "text": ""}),
        _delta(1, "text_delta", text="Hi"),
        _stop(1),
    )


@pytest.mark.parametrize("index", [True, False])
@pytest.mark.parametrize("piece", [None, 1, 7])
def test_text_and_thinking_in_a_block_no_reading_knows_are_said_and_read_as_nothing(
    index: bool, piece: int | None
) -> None:
    """Before: the turn's text was ``secretHi``, a thinking block ``hm`` went back to Claude, and only the
    block's start said anything (``unknown-event``)."""
    result = _bytes_read(_sse(_mystery(index=index)), "anthropic", piece)
    assert result.text == "Hi" and result.reasoning == ()
    assert result.codes() == ["unknown-event", *["part-not-reassembled"] * 3]
    where = 0 if index else None
    assert [(d.event, d.message) for d in result.diagnostics[1:]] == [
        (3, f"a text_delta in block {where}, a 'mystery_block' block no reading knows: not read as the turn's text"),
        (
            4,
            f"a thinking_delta in block {where}, a 'mystery_block' block no reading knows:"
            " not read as a thinking block's thinking",
        ),
        (
            5,
            f"a citations_delta in block {where}, a 'mystery_block' block no reading knows:"
            " not read as a citation of the turn's text",
        ),
    ]
    assert messages.assistant_message(result, "anthropic")["content"] == [{"type": "text", "text": "Hi"}]


def test_the_anthropic_sdk_passes_them_over_too() -> None:
    from anthropic.lib.streaming._messages import accumulate_event

    snapshot: Any = None
    for event in _mystery():
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs={})
    assert [block.to_dict() for block in snapshot.content] == [
        {"type": "mystery_block"},
        {"type": "text", "text": "Hi"},
    ]


def test_a_known_block_started_again_there_reads_its_text() -> None:
    """What the fix keeps: a text block started at the index again (a proxy's replay) reads its own."""
    events = _mystery()
    again = [_start(0, {"type": "text", "text": ""}), _delta(0, "text_delta", text="own ")]
    result = fsm.reassemble([*events[:3], *again, *events[3:]], "anthropic")
    assert result.text == "own Hi"
