"""Where a form's holes sit (chunk_form.FragmentForm.learn): the tokens of an event's text that a
key's string or integer value is written as, found from the end, and the values a probe changes in
the event's parse. Learning a form reads these; reading one needs INTEGER alone."""

from __future__ import annotations

import json.decoder
import re
from collections.abc import Callable, Iterator
from typing import Any, Final

scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
"""json's string reader (C): the text of the string whose opening quote is just before the offset, and
the offset past its closing quote; ValueError when there is none."""
INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
"""A JSON integer (the piece after it decides that no fraction or exponent follows)."""
_CANDIDATES: Final = 8
"""How many keys of a hole's name, from the event's end, are tried before giving up."""

Path = tuple[str | int, ...]
"""Where a string sits in a parsed event: its keys and list indexes from the top."""


def value_at(value: Any, path: Path) -> Any:
    """What sits at ``path`` in ``value``; None where the path leads nowhere."""
    for step in path:
        if type(value) is dict:
            value = value.get(step)
        elif type(value) is list and type(step) is int:
            try:
                value = value[step]
            except IndexError:  # (a negative step counts from the end, as it does in range)
                return None
        else:
            return None
    return value


def swapped(value: Any, path: Path, was: Any, put: Any) -> bool:
    """Whether ``was`` sits at ``path`` in ``value`` (the same type, equal); if so, ``put`` there."""
    parent = value_at(value, path[:-1])
    held = (
        value_at(parent, path[-1:]) if type(parent) is list else parent.get(path[-1]) if type(parent) is dict else None
    )
    if type(held) is not type(was) or held != was:  # (also where the path leads nowhere: None)
        return False
    parent[path[-1]] = put
    return True


def string_after(payload: str, key: str, want: str, hole: int) -> tuple[int, int, int] | None:
    """Where the string value of ``key`` equal to ``want`` sits in ``payload``, the last one first:
    (just past its opening quote, just past its closing quote, ``hole``); None if none of the last few is."""
    for pos in _values_of(payload, key):
        if payload[pos : pos + 1] != '"':
            continue
        try:
            found, end = scanstring(payload, pos + 1)
        except ValueError:
            continue
        if found == want:
            return pos + 1, end, hole
    return None


def integer_after(payload: str, key: str, want: int, hole: int) -> tuple[int, int, int] | None:
    """Where the integer value of ``key`` equal to ``want`` sits in ``payload``, the last one first:
    (its first character, just past its last, ``hole``); None if none of the last few is."""
    for pos in _values_of(payload, key):
        number = INTEGER.match(payload, pos)
        if number is not None and len(number[0]) < 20 and int(number[0]) == want:
            return pos, number.end(), hole
    return None


def _values_of(payload: str, key: str) -> Iterator[int]:
    """Where the values of the last few ``key``s (with their quotes) in ``payload`` start."""
    stop = len(payload)
    for _ in range(_CANDIDATES):
        at = payload.rfind(key, 0, stop)
        if at < 0:
            return
        stop = at
        pos = at + len(key)
        while payload[pos : pos + 1] in (" ", "\t", "\n", "\r"):
            pos += 1
        if payload[pos : pos + 1] != ":":
            continue
        pos += 1
        while payload[pos : pos + 1] in (" ", "\t", "\n", "\r"):
            pos += 1
        yield pos
