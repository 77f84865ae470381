"""Audit 102 of merge 5addebf (task 99: signatures kept apart under one ``reasoning_details`` index, Gemini call
signatures as OpenRouter entries, LangChain's source provider). Each test failed before its fix, but the one that
says what a fix keeps.

1. A signature resent under an index after another item's was set apart there built one more block each time: the
   next OpenRouter message sent the entry twice, and Gemini got a thought part of no text signed with a call's
   signature (two signatures resent in turn: a block per resend, 40000 for 40000 entries). Policy
   signatures-kept-apart: the same item's signature again goes to that item's block under the index, its latest word.
2. The same signature named by a second call's id took the first call's block over: the first call went back to
   Gemini unsigned, in silence. Two items' ids (neither missing) keep two blocks, though the signature is one.
3. Under ``DeltaEmitter(reasoning_blocks="reasoning_details")`` the id a Gemini-format block learnt after its
   signature did not go out: read back the block named no call, and the call went back to Gemini unsigned. It goes
   out alone, on an empty ``reasoning.text`` entry (policy gemini-signature-encrypted).
"""

from __future__ import annotations

from typing import Any

import pytest

import fsm
from fsm.reemit import DeltaEmitter
from tests.test_reemit_leftovers99 import _entry as _signed
from tests.test_reemit_leftovers99 import _openrouter_two_signed as _turn
from tests.test_reemit_leftovers99 import _read as _read_bytes
from tests.test_reemit_leftovers99 import _sse


def _read(turn: list[dict[str, Any]], piece: int | None) -> fsm.Result:
    return _read_bytes(_sse(turn), piece=piece)


def _next_turns(result: fsm.Result) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    parts = fsm.messages.assistant_message(result, "gemini")["parts"]
    gemini = [(p["functionCall"]["id"] if "functionCall" in p else "thought", p.get("thoughtSignature")) for p in parts]
    details = fsm.messages.assistant_message(result, "openai-chat")["reasoning_details"]
    return gemini, [(e["type"], e.get("data"), e.get("id")) for e in details]


RESENT = {
    "a call's after another's": (_signed("S1", "tool_1"), _signed("S2", "tool_2"), _signed("S1", "tool_1")),
    "the thought's after a call's": (_signed("OWN"), _signed("S1", "tool_1"), _signed("OWN")),
    "both, many times": (_signed("OWN"), _signed("S1", "tool_1"), _signed("S2", "tool_2")) * 50,
}


@pytest.mark.parametrize("piece", [None, 1])
@pytest.mark.parametrize("case", list(RESENT))
def test_a_signature_resent_under_its_index_goes_back_once(case: str, piece: int | None) -> None:
    """Before (the first case): the blocks ``[S1 tool_1, S2 tool_2, S1 tool_1]``; the Gemini turn held a thought
    part signed S1 beside tool_1's, and OpenRouter got S1's entry twice."""
    result = _read(_turn(*RESENT[case]), piece)
    distinct = list(dict.fromkeys((e["data"], e.get("id")) for e in RESENT[case]))
    assert [(r.signature, r.item_id) for r in result.reasoning] == distinct
    gemini, details = _next_turns(result)
    signed = dict(distinct)
    assert gemini[1:] == [("tool_1", "S1"), ("tool_2", signed.get("S2") and "S2")]
    assert gemini[0] == ("thought", "OWN" if "OWN" in signed else None)
    assert details[1:] == [("reasoning.encrypted", data, item) for data, item in distinct]
    assert result.codes() == []


def test_one_signature_named_by_two_calls_signs_both() -> None:
    """Before: one block ``S tool_2``, and tool_1 went back to Gemini unsigned."""
    result = _read(_turn(_signed("S", "tool_1"), _signed("S", "tool_2")), None)
    assert [(r.signature, r.item_id) for r in result.reasoning] == [("S", "tool_1"), ("S", "tool_2")]
    assert _next_turns(result)[0] == [("thought", None), ("tool_1", "S"), ("tool_2", "S")]


def test_the_same_signature_without_the_id_is_still_a_resend() -> None:
    """What the fix keeps: a resend naming no id is the block's own again (no block of its own)."""
    result = _read(_turn(_signed("S", "tool_1"), _signed("S")), None)
    assert [(r.signature, r.item_id) for r in result.reasoning] == [("S", "tool_1")]


def _reemitted(turn: list[dict[str, Any]]) -> tuple[fsm.Result, fsm.Result]:
    reader = fsm.Reassembler("openai-chat", content_deltas=True)
    emitter = DeltaEmitter(reasoning_blocks="reasoning_details", source="openai-chat")
    chunks = [c for event in turn for c in emitter.chunks(reader.feed(event))]
    source = reader.close()
    chunks += [*emitter.chunks(reader.drain()), emitter.finish(source)]
    return source, _read(chunks, None)


@pytest.mark.parametrize("how", ["resent with it", "told by a piece of no signature"])
def test_a_gemini_signatures_id_told_after_it_is_re_emitted(how: str) -> None:
    """Before: under ``reasoning_details`` the id a signed Gemini block learnt after its signature did not go out:
    read back the block named no call, and the call went back to Gemini unsigned, its signature on the thought."""
    later = _signed("S1", "tool_1") if how == "resent with it" else {**_signed("", "tool_1"), "type": "reasoning.text"}
    source, back = _reemitted(_turn(_signed("S1") | {"index": 1}, later | {"index": 1}))
    assert [(r.signature, r.item_id) for r in source.reasoning] == [(None, None), ("S1", "tool_1")]
    assert [(r.signature, r.item_id) for r in back.reasoning] == [(None, None), ("S1", "tool_1")]
    assert _next_turns(back) == _next_turns(source)
    assert _next_turns(back)[0] == [("thought", None), ("tool_1", "S1"), ("tool_2", None)]
