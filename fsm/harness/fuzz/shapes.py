"""Renderers, one per wire shape: ground-truth calls into that shape's events under its legal variations."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from fsm.harness.fuzz.responses import responses_case
from fsm.harness.fuzz.truth import (
    _IDENT,
    NAMES,
    Case,
    TrueCall,
    _distinct,
    _dumps,
    _interleave,
    _split,
    _split_utf16,
    _truth,
    arguments,
    first_appearance,
    maybe_bytes,
)

# -- renderers, one per wire shape -------------------------------------------------------------------------


@st.composite
def openai_case(draw: st.DrawFn) -> Case:
    calls = _truth(draw)
    # Weighted toward the hard cases: ids that must bind, index 0 reused, calls interleaved.
    ids = draw(st.sampled_from(["present", "present", "empty", "absent"]))
    index_mode = draw(st.sampled_from(["distinct", "reuse0", "reuse0", "absent"]))
    interleave = draw(st.integers(0, 3)) > 0 and (index_mode == "distinct" or ids == "present")
    repeat = draw(st.booleans())
    header = draw(st.booleans())
    resend = draw(st.booleans())
    utf16 = draw(st.integers(0, 3)) == 0  # a server slicing strings by UTF-16 code unit
    queues: list[list[dict[str, Any]]] = []
    for k, (name, args) in enumerate(calls):
        call_id = f"call_{k}x" if ids == "present" else ("" if ids == "empty" else None)
        text = _dumps(draw, args)
        pieces = _split_utf16(draw, text) if utf16 else _split(draw, text)

        def entry(
            first: bool, piece: str | None, *, k: int = k, name: str = name, call_id: str | None = call_id
        ) -> dict[str, Any]:
            e: dict[str, Any] = {}
            if index_mode == "distinct":
                e["index"] = k
            elif index_mode == "reuse0":
                e["index"] = 0
            carries_id = first or repeat or (interleave and index_mode != "distinct")
            if call_id is not None and carries_id:
                e["id"], e["type"] = call_id, "function"
            fn: dict[str, Any] = {}
            if first or repeat:
                fn["name"] = name
            if piece is not None:
                fn["arguments"] = piece
            e["function"] = fn
            return e

        ops = [entry(True, "")] if header else []
        ops += [entry(not header and i == 0, p) for i, p in enumerate(pieces)]
        if resend:  # the same text again, or the same value formatted anew (a gateway's replay)
            ops.append(entry(True, text if draw(st.booleans()) else _dumps(draw, args)))
        queues.append(ops)
    entries = _interleave(draw, queues, interleave)
    events: list[dict[str, Any]] = [
        {
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"tool_calls": [e]}, "finish_reason": None}],
        }
        for e in entries
    ]
    if draw(st.booleans()):
        events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    else:
        events[-1]["choices"][0]["finish_reason"] = "tool_calls"
    order = first_appearance(entries, queues)
    truth = tuple(TrueCall(calls[k][0], calls[k][1], f"call_{k}x" if ids == "present" else None) for k in order)
    return maybe_bytes(draw, Case("openai-chat", truth, tuple(events)))


@st.composite
def gemini_case(draw: st.DrawFn) -> Case:
    calls = _truth(draw)
    with_ids = draw(st.booleans())
    sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=len(calls)))
    groups: list[list[int]] = []
    start = 0
    while start < len(calls):
        size = sizes[len(groups) % len(sizes)]
        groups.append(list(range(start, min(len(calls), start + size))))
        start += size
    events: list[dict[str, Any]] = []
    signatures: dict[int, str] = {}
    for g, group in enumerate(groups):
        parts = []
        for j, k in enumerate(group):
            call: dict[str, Any] = {"name": calls[k][0], "args": calls[k][1]}
            if with_ids:
                call["id"] = f"g{k}"
            part: dict[str, Any] = {"functionCall": call}
            if j == 0 and draw(st.booleans()):
                part["thoughtSignature"] = signatures[k] = f"sig{g}"
            parts.append(part)
        event = {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]}
        events.append(event)
        if draw(st.booleans()):  # the same event again, maybe now carrying a late signature
            again = json.loads(json.dumps(event))
            first = again["candidates"][0]["content"]["parts"][0]
            if "thoughtSignature" not in first and draw(st.booleans()):
                first["thoughtSignature"] = signatures[group[0]] = f"late{g}"
            events.append(again)
    if not with_ids and draw(st.booleans()):
        # Some of the calls resent in one event, in another order and at other positions (a
        # one-per-event stream resent as a batch; a batch's second call resent alone): resends all.
        order = draw(st.permutations(range(len(calls))))
        resent = order[: draw(st.integers(1, len(calls)))]
        parts = [{"functionCall": {"name": calls[k][0], "args": calls[k][1]}} for k in resent]
        events.append({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]})
    final = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}]
    }
    if draw(st.booleans()):
        events.append(final)
    else:
        events[-1]["candidates"][0]["finishReason"] = "STOP"
    truth = tuple(TrueCall(n, a, f"g{k}" if with_ids else None, signatures.get(k)) for k, (n, a) in enumerate(calls))
    return maybe_bytes(draw, Case("gemini", truth, tuple(events)))


def _leaves(value: Any, path: str) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, f"{path}[{i}]")]
    return [(path, value)]


def _no_empty_containers(value: Any, top: bool = True) -> bool:
    if isinstance(value, dict):
        return (top or bool(value)) and all(_no_empty_containers(v, False) for v in value.values())
    if isinstance(value, list):
        return bool(value) and all(_no_empty_containers(v, False) for v in value)
    return True


@st.composite
def vertex_case(draw: st.DrawFn) -> Case:
    # Path-addressed values cannot express an empty container, and keys are plain names here.
    calls = draw(
        st.lists(st.tuples(NAMES, arguments(_IDENT).filter(_no_empty_containers)), min_size=1, max_size=3).filter(
            _distinct
        )
    )
    events: list[dict[str, Any]] = []

    def part(call: dict[str, Any]) -> dict[str, Any]:
        return {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": call}]}, "index": 0}]}

    for k, (name, args) in enumerate(calls):
        events.append(part({"name": name, "willContinue": True}))
        entries: list[dict[str, Any]] = []
        for path, value in _leaves(args, "$"):
            if isinstance(value, str):
                pieces = _split(draw, value) if value else [""]
                for i, piece in enumerate(pieces):
                    entry: dict[str, Any] = {"jsonPath": path, "stringValue": piece}
                    if i < len(pieces) - 1:
                        entry["willContinue"] = True
                    entries.append(entry)
            elif isinstance(value, bool):
                entries.append({"jsonPath": path, "boolValue": value})
            elif value is None:
                entries.append({"jsonPath": path, "nullValue": None})
            else:
                entries.append({"jsonPath": path, "numberValue": value})
        while entries:
            take = draw(st.integers(1, len(entries)))
            events.append(part({"partialArgs": entries[:take], "willContinue": True}))
            entries = entries[take:]
            if draw(st.booleans()):
                events.append(part({"willContinue": True}))  # keep-alive
        if k < len(calls) - 1 or draw(st.booleans()):
            events.append(part({}))
    events.append(
        {"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}]}
    )
    return Case("vertex", tuple(TrueCall(n, a) for n, a in calls), tuple(events))


@st.composite
def anthropic_case(draw: st.DrawFn) -> Case:
    calls = _truth(draw)
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {"content": []}}]
    index = 0
    for k, (name, args) in enumerate(calls):
        if draw(st.booleans()):
            events += [
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": "ok"}},
                {"type": "content_block_stop", "index": index},
            ]
            index += 1
        index += draw(st.integers(0, 2))  # proxies skip block indices
        events.append(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "tool_use", "id": f"toolu_{k}", "name": name, "input": {}},
            }
        )
        with_text = bool(args) or draw(st.booleans())
        text = _dumps(draw, args) if with_text else ""
        for piece in _split(draw, text) if text else [""]:
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                }
            )
            if draw(st.booleans()):
                events.append({"type": "ping"})
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    events += [{"type": "message_delta", "delta": {"stop_reason": "tool_use"}}, {"type": "message_stop"}]
    return maybe_bytes(
        draw, Case("anthropic", tuple(TrueCall(n, a, f"toolu_{k}") for k, (n, a) in enumerate(calls)), tuple(events))
    )


@st.composite
def ollama_case(draw: st.DrawFn) -> Case:
    calls = _truth(draw)
    with_ids, reuse = draw(st.booleans()), draw(st.booleans())
    events: list[dict[str, Any]] = []
    for k, (name, args) in enumerate(calls):
        call: dict[str, Any] = {"function": {"index": 0 if reuse else k, "name": name, "arguments": args}}
        if with_ids:
            call["id"] = f"call_{k}"
        events.append({"message": {"role": "assistant", "content": "", "tool_calls": [call]}, "done": False})
    events.append({"message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"})
    truth = tuple(TrueCall(n, a, f"call_{k}" if with_ids else None) for k, (n, a) in enumerate(calls))
    return Case("ollama", truth, tuple(events))


@st.composite
def bedrock_case(draw: st.DrawFn) -> Case:
    calls = _truth(draw)
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant", "p": "abc"}}]
    for k, (name, args) in enumerate(calls):
        events.append(
            {
                "contentBlockStart": {
                    "contentBlockIndex": k,
                    "start": {"toolUse": {"toolUseId": f"tu_{k}", "name": name}},
                    "p": "x" * k,
                }
            }
        )
        with_input = bool(args) or draw(st.booleans())
        if with_input:
            for piece in _split(draw, _dumps(draw, args)):
                events.append({"contentBlockDelta": {"contentBlockIndex": k, "delta": {"toolUse": {"input": piece}}}})
        events.append({"contentBlockStop": {"contentBlockIndex": k}})
    events += [{"messageStop": {"stopReason": "tool_use"}}, {"metadata": {"usage": {}}}]
    return Case("bedrock", tuple(TrueCall(n, a, f"tu_{k}") for k, (n, a) in enumerate(calls)), tuple(events))


@st.composite
def cohere_case(draw: st.DrawFn) -> Case:
    calls = _truth(draw)
    events: list[dict[str, Any]] = [{"type": "message-start", "delta": {"message": {"role": "assistant"}}}]
    for k, (name, args) in enumerate(calls):
        start = {"id": f"c_{k}", "type": "function", "function": {"name": name, "arguments": ""}}
        events.append({"type": "tool-call-start", "index": k, "delta": {"message": {"tool_calls": start}}})
        text = json.dumps(args, indent=draw(st.sampled_from([None, 2])), ensure_ascii=False)
        for piece in _split(draw, text):
            events.append(
                {
                    "type": "tool-call-delta",
                    "index": k,
                    "delta": {"message": {"tool_calls": {"function": {"arguments": piece}}}},
                }
            )
        events.append({"type": "tool-call-end", "index": k})
    events.append({"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}})
    return Case("cohere", tuple(TrueCall(n, a, f"c_{k}") for k, (n, a) in enumerate(calls)), tuple(events))


CASES: dict[str, Callable[[], st.SearchStrategy[Case]]] = {
    "openai-chat": openai_case,
    "openai-responses": responses_case,
    "anthropic": anthropic_case,
    "gemini": gemini_case,
    "vertex": vertex_case,
    "ollama": ollama_case,
    "bedrock": bedrock_case,
    "cohere": cohere_case,
}
