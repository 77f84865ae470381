"""Audit 65: memory and work bounded and linear in the input, for the entry points audit 62 did not
reach (the re-emitter, the next request's builders, the command line, the one-shot calls).

Each test counts what its path does (or measures the memory it holds), never the time it takes."""

from __future__ import annotations

import sys
import tracemalloc
from collections.abc import Callable
from types import FrameType
from typing import Any

import fsm
from fsm import DeltaEmitter, messages
from fsm.results import ArgumentsDelta, CallFinished, CallOpened, CallStatus, Result, TextPart, ToolCall

# -- DeltaEmitter: a call's deltas that wait behind another's cost their text, not a dict each ---------------


def _call(index: int, arguments: str) -> ToolCall:
    return ToolCall(
        index=index,
        id=f"c{index}",
        wire_id=f"c{index}",
        name="f",
        arguments=None,
        arguments_json=arguments,
        status=CallStatus.COMPLETE,
    )


def test_deltas_waiting_behind_a_call_that_owes_its_text_are_held_as_their_text() -> None:
    # Call 1 streams while call 0 has sent nothing: its chunks wait (openai-python would read call
    # 1's first chunk as the end of call 0). Each waiting delta was kept as its own tool-call entry,
    # some 1 KB a delta: 500,000 1-character deltas held 532 MB, and the default limits let a stream
    # hold millions. A waiting call's run of deltas is now one entry, its text joined as it goes out.
    deltas = 50_000
    emitter = DeltaEmitter()
    first = emitter.chunks([CallOpened(0, "c0", "c0", "f"), CallOpened(1, "c1", "c1", "f")])
    pieces = ['{"a": "', *["x"] * deltas, '"}']
    outputs = [ArgumentsDelta(1, piece) for piece in pieces]
    tracemalloc.start()
    try:
        held = emitter.chunks(outputs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert held == []
    assert peak < 24 * deltas, peak  # the text's pieces, a pointer each (before: 1 KB each)
    released = emitter.chunks([ArgumentsDelta(0, "{}")])
    last = emitter.chunks([CallFinished(_call(0, "{}")), CallFinished(_call(1, "".join(pieces)))])
    sent = [entry for chunk in first + released + last for entry in chunk["choices"][0]["delta"]["tool_calls"]]
    text: dict[int, str] = {}
    for entry in sent:
        text[entry["index"]] = text.get(entry["index"], "") + entry["function"].get("arguments", "")
    assert text == {0: "{}", 1: "".join(pieces)}
    assert [entry["index"] for entry in sent] == [0, 0, 1, 1]  # call 1: its header, then its text in one


def test_a_waiting_calls_deltas_keep_their_place_around_its_other_entries() -> None:
    # A late name (CallNamed) between deltas ends a run: the text before it and after it go out in
    # their order around it.
    emitter = DeltaEmitter()
    emitter.chunks([CallOpened(0, "c0", "c0", "f"), CallOpened(1, "c1", "c1", None)])
    named = fsm.results.CallNamed(1, "g")
    emitter.chunks(
        [ArgumentsDelta(1, '{"a"'), ArgumentsDelta(1, ": "), named, ArgumentsDelta(1, "1"), ArgumentsDelta(1, "}")]
    )
    out = emitter.chunks([ArgumentsDelta(0, "{}")])
    entries = [chunk["choices"][0]["delta"]["tool_calls"][0] for chunk in out]
    assert entries[0] == {"index": 0, "function": {"arguments": "{}"}}
    assert entries[1]["index"] == 1 and entries[1]["function"]["arguments"] == ""  # its header
    bodies = [entry["function"] for entry in entries[2:]]
    assert bodies == [{"name": "g", "arguments": '{"a": '}, {"arguments": "1}"}]


# -- fsm.messages: a Responses turn of many message items, each with its refusal, built in linear work ------


def _lines_run(build: Callable[[], Any]) -> int:
    """The lines of fsm.messages that ``build`` runs: a count, which a scan per item multiplies."""
    counted = 0

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal counted
        if frame.f_code.co_filename.endswith(("responses.py", "shared.py")):
            if event == "line":
                counted += 1
            return trace
        return None

    sys.settrace(trace)
    try:
        build()
    finally:
        sys.settrace(None)
    return counted


def _refused_turn(items: int) -> Result:
    parts = tuple(
        TextPart(text="t", output_index=k, item_id=f"msg_{k}", status="completed", refusal="r") for k in range(items)
    )
    return Result(
        provider="openai-responses",
        finish_reason="stop",
        calls=(),
        diagnostics=(),
        text="t" * items,
        text_parts=parts,
        refusal="r" * items,
    )


def test_many_message_items_with_their_refusals_are_built_without_a_scan_each() -> None:
    # Each message item whose refusal went back beside its text was looked for in the list of those
    # items, by identity, once an item: 20,000 such items took 3.4 s of CPU, now 0.03 s.
    small, large = (
        _lines_run(lambda n=n: messages.assistant_message(_refused_turn(n), "openai-responses")) for n in (500, 2_000)
    )
    assert large < 5 * small, (small, large)  # linear: 4x; a scan each was 16x
    items = messages.assistant_message(_refused_turn(3), "openai-responses")
    assert [item["content"] for item in items] == [
        [{"type": "output_text", "text": "t", "annotations": []}, {"type": "refusal", "refusal": "r"}]
    ] * 3
