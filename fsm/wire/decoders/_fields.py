"""The fields of provider JSON, read strictly: an object, a list, text, an index, each of its
type or refused with a :class:`RemoteProtocolError` naming the field and what it held."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from fsm.errors import LimitExceeded, RemoteProtocolError, kind, shown, too_long


def field(obj: Mapping[str, Any], camel: str, snake: str | None = None) -> Any:
    """``obj[camel]``, or ``obj[snake]`` for SDK dumps that use Python names."""
    value = obj.get(camel)
    if value is None and snake is not None:
        value = obj.get(snake)
    return value


def mapping(value: Any, what: str) -> Mapping[str, Any]:
    if type(value) is dict:  # what json.loads gives; the ABC check below costs several times more
        return value
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise RemoteProtocolError(f"{what} is {kind(value)}, not an object")
    return value


def items(value: Any, what: str) -> list[Any]:
    if type(value) is list:
        return value
    if value is None:
        return []
    if not isinstance(value, list):
        raise RemoteProtocolError(f"{what} is {kind(value)}, not a list")
    return value


def text(value: Any, what: str) -> str | None:
    if value is None or type(value) is str or isinstance(value, str):
        return value
    return number_text(value, what)


def number_text(value: Any, what: str) -> str:
    """A number where text belongs (some servers send numeric ids) as its text; anything else is
    refused, naming its type. Two numbers have no text to give and are refused as what they are:
    an integer past Python's int-string conversion limit (a caller's int; from the wire, the digits
    the event parser keeps, a ``Decimal``: said the same way either way), and NaN or an infinity
    (Python's parser reads ``NaN``, ``Infinity`` and a number past a float's range, such as
    ``1e400``, as these: the id would have been the word ``nan`` or ``inf``)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            said = "NaN" if math.isnan(value) else "Infinity or a number past a float's range"
            raise RemoteProtocolError(f"{what} is {said}, which no text stands for")
        try:
            return str(value)
        except ValueError:  # the int-string conversion limit
            raise _too_long(what, value) from None
    if too_long(value):
        raise _too_long(what, value)
    raise RemoteProtocolError(f"{what} is {kind(value)}, not a string")


def written(value: Any) -> str:
    """``str(value)`` for a message, but a number too long to write named as one (fed or read)."""
    return too_long(value) or str(value)


def index(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        if too_long(value):  # a Decimal the event parser kept the digits of: an integer all the same
            raise _too_long(what, value)
        raise RemoteProtocolError(f"{what} is {shown(value)}, not an integer")
    if (type(value) is not int or value.bit_length() > 64) and too_long(value):  # as its digits from the wire
        raise _too_long(what, value)
    return value


def _too_long(what: str, value: Any) -> LimitExceeded:
    """The error for a number past Python's int-string conversion limit where text or an index
    belongs: a limit (as an event holding such a number elsewhere is), naming the field."""
    return LimitExceeded(f"{what} is {too_long(value)}", rule="limits")
