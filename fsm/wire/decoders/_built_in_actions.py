"""What each Responses built-in client tool's action must hold to be run: the fields its tool needs,
of the types the API gives them, and of the values its schema lists where it lists them (the openai
SDK's item models). An action that is an object but
lacks one, or gives one of another type, is no call to run, and the API refuses it back: the
decoder ends such a call as unusable (``unusable-action``). Only what a tool needs is checked:
fields the API may add later pass, and so does a computer action of a type not listed here."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from fsm.errors import kind as what_kind
from fsm.errors import too_long
from fsm.jsontext import dumps


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _number(value: Any) -> bool:
    # An integer too long to write is none, fed as an int or read as the digits the event parser keeps.
    return type(value) is int and too_long(value) is None


def _texts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(each, str) for each in value)


def _point(value: Any) -> bool:
    return isinstance(value, Mapping) and _number(value.get("x")) and _number(value.get("y"))


def _points(value: Any) -> bool:
    return isinstance(value, list) and all(_point(each) for each in value)


def _text_map(value: Any) -> bool:
    return isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values())


class _OneOf:
    """A field whose values the API's schema enumerates: one of these strings, spelt as they are."""

    def __init__(self, *names: str) -> None:
        self.names = frozenset(names)
        self.said = f", not one of {', '.join(names)}"

    def __call__(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.names


Check = Callable[[Any], bool]
_XY: dict[str, Check] = {"x": _number, "y": _number}
# The values the API's schema fixes, per the openai SDK's item models (ComputerAction and the
# computer_call item's Action*): a click names one of five mouse buttons; x, y, a scroll's deltas and
# each point of a drag's path are integers (``_number``: a bool is none, though Python counts it one);
# every ``keys`` is a list of strings.
_BUTTON = _OneOf("left", "right", "wheel", "back", "forward")
# Per tool (and per computer action type): the fields it needs, then those that may be absent or null.
_NEEDS: dict[str, tuple[dict[str, Check], dict[str, Check]]] = {
    "shell_call": ({"commands": _texts}, {"timeout_ms": _number, "max_output_length": _number}),
    "local_shell_call": (
        {"command": _texts, "env": _text_map},
        {"timeout_ms": _number, "user": _text, "working_directory": _text},
    ),
    "create_file": ({"path": _text, "diff": _text}, {}),
    "update_file": ({"path": _text, "diff": _text}, {}),
    "delete_file": ({"path": _text}, {}),
    "click": ({**_XY, "button": _BUTTON}, {"keys": _texts}),
    "double_click": (_XY, {"keys": _texts}),
    "drag": ({"path": _points}, {"keys": _texts}),
    "keypress": ({"keys": _texts}, {}),
    "move": (_XY, {"keys": _texts}),
    "scroll": ({**_XY, "scroll_x": _number, "scroll_y": _number}, {"keys": _texts}),
    "type": ({"text": _text}, {}),
}
_OPERATIONS = ("create_file", "update_file", "delete_file")


def action_fault(call_type: str, value: Mapping[str, Any]) -> str | None:
    """What makes ``value``, the whole ``operation`` or ``action`` object (for a computer batch,
    ``{"actions": [...]}``) of a built-in client call of ``call_type``, no call its tool can run;
    None if nothing does (and for any other call type)."""
    if call_type == "computer_call" and "actions" in value:
        for at, each in enumerate(value["actions"]):  # a list of objects: the decoder checked
            if (fault := _fault(each, each.get("type"), "computer action")) is not None:
                return f"actions[{at}]: {fault}"
        return None
    if call_type == "computer_call":
        return _fault(value, value.get("type"), "computer action")
    if call_type == "apply_patch_call":
        kind = value.get("type")
        if kind not in _OPERATIONS:
            return f"the operation's type is {_named(kind)}, not one of {', '.join(_OPERATIONS)}"
        return _fault(value, kind, "operation")
    if call_type == "local_shell_call" and value.get("type") != "exec":
        return f"the action's type is {_named(value.get('type'))}, not 'exec'"
    return _fault(value, call_type, "action") if call_type in _NEEDS else None


def _fault(value: Mapping[str, Any], kind: Any, what: str) -> str | None:
    if not isinstance(kind, str):
        return f"the {what}'s type is {what_kind(kind)}, not a string"
    needs, may = _NEEDS.get(kind, ({}, {}))  # a computer action of another type: nothing known to check
    for field, check in needs.items():
        if field not in value:
            return f"the {what} ({kind}) has no {field}"
        if not check(value[field]):
            return f"the {what} ({kind}) has {field} {_shown(value[field])}{getattr(check, 'said', '')}"
    for field, check in may.items():
        if value.get(field) is not None and not check(value[field]):
            return f"the {what} ({kind}) has {field} {_shown(value[field])}"
    return None


_SHOWN = 60
"""How many characters of a value a diagnostic shows."""


def _named(value: Any) -> str:
    """A type's name as Python writes it (``'run'``), any other value as :func:`_shown` does (a
    number the event parser kept the digits of, or one no int writes, as its digits)."""
    return repr(value) if isinstance(value, str) and len(value) <= _SHOWN else _shown(value)


def _shown(value: Any) -> str:
    """The value as the wire wrote it (JSON), cut to 60 characters. Written only as far as the cut
    (a multi-megabyte value costs what its first characters do): the same text as the whole value
    written out and cut, but where a value past the cut is one JSON does not write (an SDK
    object's field), which only the whole value's writing would have found."""
    pieces: list[str] = []
    size = 0
    try:
        for piece in _json(value, set()):
            pieces.append(piece)
            size += len(piece)
            if size > _SHOWN:
                break
    except (TypeError, ValueError):  # not JSON (an SDK object's field): as Python says it
        said = _repr(value)
    else:
        said = "".join(pieces)
    return said if len(said) <= _SHOWN else f"{said[: _SHOWN - 3]}..."


def _json(value: Any, within: set[int]) -> Iterator[str]:
    """``json.dumps(value, ensure_ascii=False)`` in pieces, each written as it is asked for (a long
    string's first characters, to the cut, and no further); TypeError or ValueError where
    json.dumps raises them (a value JSON does not write, a container within itself)."""
    if isinstance(value, str):
        if len(value) <= _SHOWN:
            yield json.dumps(value, ensure_ascii=False)
        else:  # each character is written alone: the first ones written are the start of the whole
            yield json.dumps(value[: _SHOWN + 1], ensure_ascii=False)[:-1]
    elif value is None or isinstance(value, int | float):  # bool is an int
        try:
            yield json.dumps(value)
        except ValueError:  # an integer past Python's int-string limit: its digits, as the raw text has them
            if not isinstance(value, int):
                raise
            yield dumps(value)
    elif isinstance(value, list | tuple | dict):
        if id(value) in within:
            raise ValueError("Circular reference detected")
        within.add(id(value))
        if isinstance(value, dict):
            yield "{"
            for n, (key, item) in enumerate(value.items()):
                if not isinstance(key, str | int | float) and key is not None:
                    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
                yield (", " if n else "") + json.dumps(
                    key if isinstance(key, str) else json.dumps(key), ensure_ascii=False
                )
                yield ": "
                yield from _json(item, within)
            yield "}"
        else:
            yield "["
            for n, item in enumerate(value):
                if n:
                    yield ", "
                yield from _json(item, within)
            yield "]"
        within.discard(id(value))
    elif type(value).__name__ == "Decimal":  # the digits the event parser kept of a long integer, as written
        yield dumps(value)
    else:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _repr(value: Any) -> str:
    try:
        return repr(value)
    except ValueError:  # an integer past the int-string limit inside an object JSON cannot write
        return f"a {type(value).__name__} that holds an integer too long to write"
