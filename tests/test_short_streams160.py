"""Short OpenAI chat streams (issue 17, task 160): the chunks every short stream pays for decide as
the decoder does. A tool-call entry the general routing takes (no index, an empty id: Gemini's
OpenAI endpoint) goes from the shortcut straight to the registry, and a last chunk holding calls
beside its finish reason is read as its delta alone and then its finish; without the readers, both
go through the decoder and its events."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import Reassembler
from fsm.harness.fuzz.run import sample_vectors
from fsm.wire.decoders import chat_chunks
from tests.helpers import chunk, tc
from tests.test_conformance import VECTORS
from tests.test_per_stream import _decides_alike


def last(*calls: dict[str, Any], finish: str = "tool_calls", **beside: Any) -> dict[str, Any]:
    """A last chunk: ``calls`` in its delta (a role beside them, as most servers send), its finish."""
    made = chunk(*calls, finish=finish)
    made["choices"][0]["delta"]["role"] = "assistant"
    return {**made, **beside}


GEMINI_ENTRY = {"function": {"arguments": '{"value":true}', "name": "return_bool"}, "id": "", "type": "function"}
"""The entry of Gemini's OpenAI endpoint's one chunk (magentic's capture): no index, an empty id."""

# Entries no other shortcut reader takes, and entries that look like them but are the decoder's.
ROUTED: dict[str, list[dict[str, Any]]] = {
    "gemini's whole call": [chunk(GEMINI_ENTRY), chunk(finish="stop")],
    "no index, streamed": [chunk(tc(id="a", name="f", args="")), chunk(tc(args='{"x": ')), chunk(tc(args="1}"))],
    "no index, two calls": [chunk(tc(id="a", name="f", args="{}")), chunk(tc(id="b", name="g", args='{"y": 1}'))],
    "null index": [chunk(tc(None, "a", "f", '{"x": 1}')), chunk(tc(None, args="")), chunk(finish="tool_calls")],
    "no index, id or name": [chunk(tc(args='{"x": 1}')), chunk(finish="tool_calls")],
    "no index, a name alone": [chunk(tc(name="f")), chunk(tc(args="{}")), chunk(finish="stop")],
    "no index, null arguments": [chunk(tc(id="a", name="f", args=None)), chunk(tc(args="{}"))],
    "an index, an id, no name": [chunk(tc(0, "a", args='{"x": 1}')), chunk(finish="tool_calls")],
    "an index, empty id and name": [chunk(tc(0, "", "", "")), chunk(tc(0, args="{}")), chunk(finish="stop")],
    "an index, a name, no text": [chunk(tc(0, name="f", args="")), chunk(tc(0, args="{}"))],
    "an index past 63 bits": [chunk(tc(1 << 63, "a", "f", "{}")), chunk(tc(None, "b", "g", "{}"))],
    "a negative index": [chunk(tc(-1, "a", "f", "{}")), chunk(tc(id="b", name="g", args="{}"))],
    "an index as text or bool": [chunk(tc("0", "a", "f", "{}")), chunk(tc(True, "b", "g", "{}"))],
    "an id or name not text": [chunk(tc(id=7, name="f", args="{}")), chunk(tc(id="b", name=8, args="{}"))],
    "arguments an object": [chunk(tc(id="a", name="f", args={"x": 1})), chunk(finish="tool_calls")],
    "arguments a number": [chunk(tc(id="a", name="f", args=12)), chunk(finish="tool_calls")],
    "signed": [chunk({**GEMINI_ENTRY, "extra_content": {"google": {"thought_signature": "c2ln"}}})],
    "after the finish": [chunk(finish="stop"), chunk(GEMINI_ENTRY)],
    "resent whole": [chunk(GEMINI_ENTRY), chunk(GEMINI_ENTRY), chunk(finish="stop")],
    "a bare index's call, then none": [chunk(tc(0, "a", "f", '{"x"')), chunk(tc(args=": 1}"))],
    "many": [chunk(tc(id=f"c{k}", name="f", args="{}")) for k in range(40)] + [chunk(finish="tool_calls")],
}

# Last chunks with calls beside their finish reason, and chunks that look like them.
ENDINGS: dict[str, list[dict[str, Any]]] = {
    "gemini's one chunk": [last(GEMINI_ENTRY, finish="stop", usage={"total_tokens": 12})],
    "a whole call": [last(tc(0, "a", "f", '{"x": 1}'))],
    "a whole call, no role": [chunk(tc(0, "a", "f", '{"x": 1}'), finish="tool_calls")],
    "the last fragment": [chunk(tc(0, "a", "f", '{"x": ')), last(tc(0, args="1}"))],
    "a header, cut": [last(tc(0, "a", "f", ""), finish="length")],
    "a fragment cut": [chunk(tc(0, "a", "f", "")), last(tc(0, args='{"x'), finish="length")],
    "usage beside": [last(tc(0, "a", "f", "{}"), usage={"total_tokens": 3})],
    "empty usage": [last(tc(0, "a", "f", "{}"), usage={})],
    "usage not an object": [last(tc(0, "a", "f", "{}"), usage=[1])],
    "an error beside": [last(tc(0, "a", "f", "{}"), error={"message": "boom"})],
    "two entries": [last(tc(0, "a", "f", "{}"), tc(1, "b", "g", "{}"))],
    "text beside": [{"choices": [{"index": 0, "delta": {"content": "hi", "tool_calls": [tc(0, "a", "f", "{}")]}}]}],
    "text beside, finished": [
        {
            "choices": [
                {"index": 0, "delta": {"content": "hi", "tool_calls": [tc(0, "a", "f", "{}")]}, "finish_reason": "stop"}
            ]
        }
    ],
    "no calls in the list": [last()],
    "calls not a list": [
        {"choices": [{"index": 0, "delta": {"tool_calls": tc(0, "a", "f", "{}")}, "finish_reason": "stop"}]}
    ],
    "native finish beside": [
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [tc(0, "a", "f", '{"x"')]},
                    "finish_reason": "length",
                    "native_finish_reason": "MAX_TOKENS",
                }
            ]
        }
    ],
    "after the finish": [chunk(finish="stop"), last(tc(0, "a", "f", "{}"))],
    "twice": [last(tc(0, "a", "f", "{}")), last(tc(1, "b", "g", "{}"), finish="stop")],
    "the second choice": [
        {"choices": [{"index": 1, "delta": {"tool_calls": [tc(0, "a", "f", "{}")]}, "finish_reason": "stop"}]}
    ],
    "an empty finish": [last(tc(0, "a", "f", "{}"), finish="")],
    "a whole call past the limit": [chunk(tc(0, "a", "f", "{}")), last(tc(1, "b", "g", '{"y": 2}'))],
}


def said(delta: dict[str, Any], finish: str = "stop") -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


# Last chunks whose delta says nothing but is not empty (a role, empty or null text), and look-alikes.
QUIET: dict[str, list[dict[str, Any]]] = {
    "a role, empty text": [chunk(tc(0, "a", "f", "{}")), said({"role": "assistant", "content": ""}, "tool_calls")],
    "a role, null text": [chunk(tc(0, "a", "f", "{}")), said({"role": "assistant", "content": None})],
    "empty text alone": [said({"content": ""})],
    "empty reasoning": [said({"reasoning_content": "", "reasoning": None, "content": None})],
    "a null role": [said({"role": None})],
    "text": [said({"role": "assistant", "content": "hi"})],
    "reasoning": [said({"content": "", "reasoning": "hm"})],
    "text not a string": [said({"content": 0}), said({"content": []})],
    "reasoning not a string": [said({"reasoning": {}}), said({"reasoning_content": False})],
    "a refusal beside": [said({"content": "", "refusal": ""})],
    "an index beside (Mistral's)": [said({"index": 0, "content": ""})],
    "after the finish": [said({}), said({"role": "assistant", "content": ""}, "length")],
}


def _routed_only(found: tuple[dict[str, Any], dict[str, Any]]) -> bool:
    """Does the new reader take an entry none of the three before it takes?"""
    entry, function = found
    if type(entry.get("index")) is int and any(
        reader(entry, function) is not None
        for reader in (chat_chunks.bare_fragment_in, chat_chunks.whole_call_in, chat_chunks.header_in)
    ):
        return False
    return chat_chunks.routed_entry_in(entry, function) is not None


def test_an_entry_the_general_routing_takes_decides_as_the_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry of a plain delta that is no bare fragment, whole call or header, but one the decoder
    reads plainly, goes from the shortcut to the registry's general routing as _apply would take
    the decoder's one event; without the reader, through the decoder. Same transitions in order,
    outputs, calls, diagnostics and rule counts either way, over every vector, 300 fuzzed streams,
    the OpenAI-shaped captures and the streams above (lax, strict, at the call limit, ids taken)."""
    vectors = [*VECTORS, *sample_vectors("openai-chat", 300)]
    deltas = [chat_chunks.plain_delta(e) or {} for v in vectors for e in v.events if type(e) is dict]
    deltas += [chat_chunks.plain_delta(e) or {} for events in ROUTED.values() for e in events]
    entries = [found for delta in deltas if (found := chat_chunks.one_entry(delta)) is not None]
    assert sum(map(_routed_only, entries)) >= 40  # the new reader is reached, and takes entries
    _decides_alike(monkeypatch, "routed_entry_in", ROUTED)


def test_a_last_chunk_with_calls_decides_as_the_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """A last chunk whose delta holds calls is taken as a chunk of its delta alone, then as its
    finish; without the reader, through the decoder. Same everything either way, over the same
    streams and the chunks above."""
    found = [chat_chunks.calls_ending_in(e) for events in ENDINGS.values() for e in events]
    assert sum(f is not None for f in found) >= 15
    _decides_alike(monkeypatch, "calls_ending_in", ENDINGS)


def test_gemini_s_one_chunk_is_one_whole_call_and_the_finish() -> None:
    """What the shortcuts make of Gemini's one chunk: the call (its id made, as none came), the
    finish mapped to tool calls, the usage; the same diagnostics as the decoder's route reports."""
    r = Reassembler("openai-chat")
    outputs = r.feed(last(GEMINI_ENTRY, finish="stop", usage={"total_tokens": 12}))
    result = r.close()
    assert [type(o).__name__ for o in outputs] == ["CallOpened", "ArgumentsDelta", "CallFinished"]
    assert [(c.id, c.name, c.arguments) for c in result.calls] == [("call_0", "return_bool", {"value": True})]
    assert (result.finish_reason, result.raw_finish_reason, result.usage) == (
        "tool_calls",
        "stop",
        {"total_tokens": 12},
    )
    assert result.codes() == ["synthesized-id", "finish-reason-mapped"]


def test_a_last_chunk_the_shortcut_refuses_takes_nothing_before_the_decoder() -> None:
    """A last chunk whose delta the shortcut refuses (text beside two calls) is left whole to the
    decoder: the text, both calls and the finish, once each, in the decoder's order."""
    r = Reassembler("openai-chat")
    delta = {"content": "hi", "tool_calls": [tc(0, "a", "f", "{}"), tc(1, "b", "g", "{}")]}
    r.feed({"choices": [{"index": 0, "delta": delta, "finish_reason": "tool_calls"}]})
    result = r.close()
    assert result.text == "hi" and [c.name for c in result.calls] == ["f", "g"]
    assert result.finish_reason == "tool_calls" and not result.diagnostics


def test_a_last_chunk_that_says_nothing_decides_as_the_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """finish_in reads a delta of a role and empty or null text alone as it reads an empty one,
    without said_in: the same everything as without the reader, over the streams and chunks above."""
    assert sum(chat_chunks.finish_in(e) == ([], "stop", None) for events in QUIET.values() for e in events) >= 5
    _decides_alike(monkeypatch, "finish_in", QUIET)
