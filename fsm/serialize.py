"""JSON-ready forms of events and results, for the CLI, traces and vectors.

Decoded events are a tagged union, (un)structured by ``cattrs``: each JSON object carries ``"type"``
with the class name (``{"type": "ArgumentsFragment", "ref": {...}, "text": "..."}``).

A result needs no union, so :func:`result_to_json` uses ``attr.asdict`` (enums as their values):
``toolcall-fsm replay`` then never imports cattrs, which with its converter would be about a fifth
of the command's start-up. tests/test_serialize.py checks that it gives what the cattrs converter
gives, on every bundled vector's result.
"""

from __future__ import annotations

import enum
import functools
from typing import TYPE_CHECKING, Any

import attr
import attrs

from fsm.events import Event
from fsm.results import Output, Result

if TYPE_CHECKING:
    from cattrs import Converter


@functools.cache
def converter() -> Converter:
    """The cattrs converter for events and outputs (tagged by ``"type"``), built on first use."""
    from cattrs import Converter
    from cattrs.strategies import configure_tagged_union

    made = Converter()
    configure_tagged_union(Event, made, tag_name="type")
    configure_tagged_union(Output, made, tag_name="type")
    return made


def _plain(_: object, __: attrs.Attribute[Any], value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


def result_to_json(result: Result) -> dict[str, Any]:
    """The result as plain JSON types: tuples as lists, enums as their values."""
    return attr.asdict(result, value_serializer=_plain)  # attrs.asdict would keep tuples


def event_to_json(event: Event) -> dict[str, Any]:
    data: dict[str, Any] = converter().unstructure(event, Event)
    return data


def event_from_json(data: dict[str, Any]) -> Event:
    event: Event = converter().structure(data, Event)  # type: ignore[arg-type]
    return event
