"""``cattrs`` (un)structuring of events and results, for the CLI, traces and vectors.

Decoded events are a tagged union: each JSON object carries ``"type"`` with the class name
(``{"type": "ArgumentsFragment", "ref": {...}, "text": "..."}``).
"""

from __future__ import annotations

from typing import Any

from cattrs import Converter
from cattrs.strategies import configure_tagged_union

from fsm.events import Event
from fsm.results import Output, Result

converter = Converter()
configure_tagged_union(Event, converter, tag_name="type")
configure_tagged_union(Output, converter, tag_name="type")


def result_to_json(result: Result) -> dict[str, Any]:
    data: dict[str, Any] = converter.unstructure(result)
    return data


def event_to_json(event: Event) -> dict[str, Any]:
    data: dict[str, Any] = converter.unstructure(event, Event)
    return data


def event_from_json(data: dict[str, Any]) -> Event:
    event: Event = converter.structure(data, Event)  # type: ignore[arg-type]
    return event
