"""The OpenAI Responses renderer: every kind of client call in one stream, each under its legal
variations. Function calls stream JSON arguments; custom tools stream freeform input cut anywhere
(with or without ``.done``, or arriving whole in ``output_item.done``); built-in tools arrive as whole
items, announced first or not; a hosted tool may sit between them and must stay out of the calls."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from fsm.harness.fuzz.truth import (
    FREEFORM,
    Case,
    TrueCall,
    _dumps,
    _interleave,
    _split,
    _truth,
    arguments,
    first_appearance,
    maybe_bytes,
)

_BUILT_IN: dict[str, tuple[str, str, dict[str, Any]]] = {  # item type: (tool, its input's field, an action it takes)
    "apply_patch_call": ("apply_patch", "operation", {"type": "update_file", "path": "a.py", "diff": "-a\n+b\n"}),
    "shell_call": ("shell", "action", {"commands": ["ls -la", "make test"]}),
    "local_shell_call": ("local_shell", "action", {"type": "exec", "command": ["ls"], "env": {"A": "1"}}),
    "computer_call": ("computer", "action", {"type": "click", "button": "left", "x": 3, "y": 4}),
}


def _streamed(draw: st.DrawFn, at: int, k: int, call: TrueCall, text: str, freeform: bool) -> list[dict[str, Any]]:
    """A function call's arguments or a custom call's input: announced, streamed, confirmed."""
    item_type, field, prefix = (
        ("custom_tool_call", "input", "custom_tool_call_input")
        if freeform
        else (
            "function_call",
            "arguments",
            "function_call_arguments",
        )
    )
    item = {"type": item_type, "id": f"it_{k}", "call_id": call.id, "name": call.name}
    ops: list[dict[str, Any]] = []
    if draw(st.integers(0, 4)):  # else the whole call arrives in output_item.done alone
        ops.append({"type": "response.output_item.added", "output_index": at, "item": {**item, field: ""}})
        if draw(st.booleans()):
            ops += [
                {"type": f"response.{prefix}.delta", "output_index": at, "item_id": f"it_{k}", "delta": piece}
                for piece in _split(draw, text)
                if piece
            ]
            if draw(st.booleans()):
                ops.append({"type": f"response.{prefix}.done", "output_index": at, "item_id": f"it_{k}", field: text})
    ops.append({"type": "response.output_item.done", "output_index": at, "item": {**item, field: text}})
    return ops


@st.composite
def responses_case(draw: st.DrawFn) -> Case:
    calls = _truth(draw)
    offset = draw(st.integers(0, 1))
    queues: list[list[dict[str, Any]]] = []
    truths: list[TrueCall] = []
    hosted: list[dict[str, Any]] = []
    for k, (name, args) in enumerate(calls):
        at = k + offset + (k if offset else 0)  # with an offset, leave gaps for hosted items
        kind = draw(st.sampled_from(["function", "function", "custom", "built-in"]))
        if kind == "custom":
            text = draw(FREEFORM)
            call = TrueCall(name, None, f"call_{k}", type="custom", input=text)
            ops = _streamed(draw, at, k, call, text, freeform=True)
        elif kind == "built-in":
            item_type = draw(st.sampled_from(sorted(_BUILT_IN)))
            tool, field, takes = _BUILT_IN[item_type]
            value = {**draw(arguments()), **takes}  # any other fields beside those its tool needs
            call = TrueCall(tool, value, f"call_{k}", type=item_type)
            whole = {"type": item_type, "id": f"it_{k}", "call_id": call.id, field: value, "status": "completed"}
            ops = []
            if draw(st.booleans()):
                announced = {**whole, "status": "in_progress"}
                announced.pop(field)
                ops.append({"type": "response.output_item.added", "output_index": at, "item": announced})
            ops.append({"type": "response.output_item.done", "output_index": at, "item": whole})
        else:
            call = TrueCall(name, args, f"call_{k}")
            ops = _streamed(draw, at, k, call, _dumps(draw, args), freeform=False)
        if offset and draw(st.booleans()):  # a hosted tool's whole item in the gap before this call
            item = {"type": "web_search_call", "id": f"ws_{k}", "status": "completed", "action": {"query": name}}
            hosted.append({"type": "response.output_item.done", "output_index": at - 1, "item": item})
        truths.append(call)
        queues.append(ops)
    entries = _interleave(draw, queues, draw(st.booleans()))
    truth = tuple(truths[k] for k in first_appearance(entries, queues))
    for item in hosted:  # anywhere: a hosted call is no client call, so the truth is unchanged
        entries.insert(draw(st.integers(0, len(entries))), item)
    events = [{"type": "response.created", "response": {}}, *entries, {"type": "response.completed", "response": {}}]
    return maybe_bytes(draw, Case("openai-responses", truth, tuple(events)))
