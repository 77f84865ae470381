"""Decoding hazards for the robustness fuzzer, put in a call's own argument text or object: a UTF-16
surrogate pair split across two fragments, ``NaN``/``Infinity``, a key given twice, an integer of
5000 digits (fsm/harness/fuzz/robust.py runs them)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from fsm.jsontext import dumps

_TEXT_KEYS = frozenset({"arguments", "partial_json", "input", "stringValue", "delta"})  # argument text, per shape
_OBJECT_KEYS = frozenset({"arguments", "args", "input"})  # arguments as an object (Gemini, Ollama, a prefill)
_MEMBERS = {
    "nan": ["NaN", "Infinity", "-Infinity"],
    "duplicate-key": ['1, "h": 2'],
    "huge-int": ["7" * 5000, "-1" + "0" * 4999],
}
_PLACEHOLDER = "__fuzz-hazard-member__"  # a key no shape draws, swapped for the raw member text once dumped


def _argument_slots(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], bool]]:
    """Where an event holds argument text (True) or an argument object (False)."""
    found: list[tuple[tuple[Any, ...], bool]] = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if key in _TEXT_KEYS and isinstance(item, str):
            found.append(((*path, key), True))
        elif key in _OBJECT_KEYS and isinstance(item, dict):
            found.append(((*path, key), False))
        else:
            found += _argument_slots(item, (*path, key))
    return found


def _edit(event: Any, path: tuple[Any, ...], change: Any) -> Any:
    """A copy of ``event`` with the value at ``path`` replaced by ``change(value)``."""
    if not path:
        return change(event)
    copy = dict(event) if isinstance(event, dict) else list(event)
    copy[path[0]] = _edit(event[path[0]], path[1:], change)
    return copy


def _with_member(text: str, member: str) -> str:
    """``text`` with ``"h": member`` as its object's first member (at the front if it opens none)."""
    at = text.find("{") + 1
    return f'{text[:at]}"h": {member}, {text[at:]}' if at else f'"h": {member}{text}'


def with_argument_hazard(draw: st.DrawFn, events: list[Any]) -> list[bytes]:
    """The events as UTF-8 JSON texts, one hazard put in the arguments of one of them."""
    slots = [(i, path, text) for i, e in enumerate(events) for path, text in _argument_slots(e)]
    hazard = draw(st.sampled_from(["surrogate-split", "surrogate-split", *_MEMBERS]))
    raw: dict[int, str] = {}  # event: the member text to put in place of the placeholder
    if slots:
        i, path, text = slots[draw(st.integers(0, len(slots) - 1))]
        if hazard == "surrogate-split":
            high, low = draw(st.sampled_from([("\ud83d", "\ude00"), ("\\ud83d", "\\ude00"), ("\ud83d", "")]))
            later = [(j, p) for j, p, t in slots if j > i and t]
            events[i] = _edit(events[i], path, lambda v: v + high if text else {**v, "s": high + low})
            if later and text and low:
                j, p = later[0]
                events[j] = _edit(events[j], p, lambda v: low + v)
        else:
            member = draw(st.sampled_from(_MEMBERS[hazard]))
            if text:
                events[i] = _edit(events[i], path, lambda v: _with_member(v, member))
            else:
                events[i] = _edit(events[i], path, lambda v: {_PLACEHOLDER: 0, **v})
                raw[i] = member
    texts = [dumps(e).encode() for e in events]  # a lone surrogate goes out escaped
    for i, member in raw.items():
        key = json.dumps(_PLACEHOLDER).encode()
        texts[i] = texts[i].replace(key + b": 0", b'"h": ' + member.encode())
    return texts
