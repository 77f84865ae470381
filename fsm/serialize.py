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

from fsm.errors import InvalidInput
from fsm.events import EVENT_TYPES, Event, event_fault
from fsm.fieldcheck import refuse_wrong
from fsm.results import Output, Result, ToolCall
from fsm.spec import describe_validation

if TYPE_CHECKING:
    from cattrs import Converter


_EVENT_NAMES = frozenset(cls.__name__ for cls in EVENT_TYPES)


@functools.cache
def converter() -> Converter:
    """The cattrs converter for events (tagged by ``"type"``) and outputs (tagged by ``"output"``),
    built on first use."""
    from cattrs import Converter
    from cattrs.strategies import configure_tagged_union

    made = Converter(forbid_extra_keys=True)  # a misspelt field (incomplet) would be dropped in silence
    exact_scalars(made)
    # A dict or list is a JSON value already (arguments, a built-in item, usage), and it may nest as
    # deep as a wire event may (544 levels), where cattrs' frames per level would pass Python's
    # recursion limit: it goes out as the value the event or call holds, not a copy.
    for value_kind in (dict, list):
        made.register_unstructure_hook(value_kind, _as_is)
    configure_tagged_union(Event, made, tag_name="type")
    # An output has a field named "type" of its own (CallOpened.type, the call's type): its class name
    # goes under "output", where it cannot overwrite a field.
    configure_tagged_union(Output, made, tag_name="output")
    return made


def exact_scalars(made: Converter) -> None:
    """Make ``made`` take a str, int or bool field only from a value of that type. cattrs' own hooks
    convert (str([1]) is "[1]", int("7") is 7, bool("no") is True): a value of another type in JSON
    read back (an event, a vector) is a wrong one, not one to make up."""
    for kind in (str, int, bool):
        made.register_structure_hook(kind, functools.partial(_exactly, kind))


def _exactly(kind: type, value: Any, _: object) -> Any:
    if type(value) is kind or (kind is str and isinstance(value, str)):
        return value
    raise TypeError(f"{value!r:.40} is {type(value).__name__}, not {kind.__name__}")


def _as_is(value: Any) -> Any:
    return value


def _plain(_: object, __: attrs.Attribute[Any], value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


def result_to_json(result: Result) -> dict[str, Any]:
    """The result as plain JSON types: tuples as lists, enums as their values. A call's arguments and
    item, the usage, the container and the provider fields are the values the result holds (JSON
    already), not copies: they may nest as deep as ``max_depth`` allows (512), or a fed dict does,
    where asdict's frames per level would pass Python's recursion limit, so asdict walks the result
    without them and they are put back in place."""
    if not isinstance(result, Result):
        raise InvalidInput(f"result_to_json takes a Result, not {type(result).__name__}")
    # A result built by hand may hold anything where a str or a part belongs (a list that holds
    # itself, which asdict's walk follows to the stack's end): refused as the message builders refuse it.
    refuse_wrong(result, Result, "result")
    calls, server_calls, declined = result.calls, result.server_tool_calls, result.declined_calls
    bare = attrs.evolve(
        result, calls=_bare(calls), server_tool_calls=_bare(server_calls), declined_calls=_bare(declined), usage=None
    )
    bare = attrs.evolve(bare, container=None, provider_fields=None)
    data = attr.asdict(bare, value_serializer=_plain)  # attrs.asdict would keep tuples
    data.update((name, getattr(result, name)) for name in _AS_IS)
    for name, held in (("calls", calls), ("server_tool_calls", server_calls), ("declined_calls", declined)):
        for row, call in zip(data[name], held, strict=True):
            row["arguments"], row["item"] = call.arguments, call.item
    return data


_AS_IS = ("usage", "container", "provider_fields")
"""The result's fields that hold a JSON value as it came (as deep as a fed dict may nest: audit 103)."""


def _bare(calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
    return tuple(attrs.evolve(call, arguments=None, item=None) for call in calls)


def event_to_json(event: Event) -> dict[str, Any]:
    """The event as plain JSON types, tagged with ``"type"``; a built-in item or usage it holds is that
    same value (JSON already, as deep as a wire event may nest), not a copy."""
    if not isinstance(event, EVENT_TYPES):
        raise InvalidInput(f"event_to_json takes an event (fsm.events), not {type(event).__name__}")
    data: dict[str, Any] = converter().unstructure(event, Event)
    return data


def event_from_json(data: dict[str, Any]) -> Event:
    """The event ``data`` (as :func:`event_to_json` wrote it) stands for. Data that is no event (no
    or an unknown ``"type"``, a field missing, of the wrong type or one the event does not have) is
    InvalidInput saying why."""
    if not isinstance(data, dict):
        raise InvalidInput(f"an event is a JSON object, not {type(data).__name__}")
    kind = data.get("type")
    if type(kind) is not str or kind not in _EVENT_NAMES:
        raise InvalidInput(f'an event\'s "type" is one of {", ".join(sorted(_EVENT_NAMES))}, not {kind!r}')
    try:
        event: Event = converter().structure(data, Event)  # type: ignore[arg-type]
    except (LookupError, TypeError, ValueError, ExceptionGroup) as exc:  # cattrs' errors for data of the wrong shape
        why = describe_validation(exc) if isinstance(exc, ExceptionGroup) else repr(exc)
        raise InvalidInput(f"not an event of type {kind!r}: {why}") from None
    fault = event_fault(event)
    if fault is not None:
        raise InvalidInput(f"not an event of type {kind!r}: {fault}")
    return event
