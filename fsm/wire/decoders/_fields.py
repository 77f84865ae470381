"""The fields of provider JSON, read strictly: an object, a list, text, an index, each of its
type or refused with a :class:`RemoteProtocolError` naming the field and what it held."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from fsm.errors import RemoteProtocolError, shown


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
        raise RemoteProtocolError(f"{what} is {type(value).__name__}, not an object")
    return value


def items(value: Any, what: str) -> list[Any]:
    if type(value) is list:
        return value
    if value is None:
        return []
    if not isinstance(value, list):
        raise RemoteProtocolError(f"{what} is {type(value).__name__}, not a list")
    return value


def text(value: Any, what: str) -> str | None:
    if value is None or type(value) is str or isinstance(value, str):
        return value
    return number_text(value, what)


def number_text(value: Any, what: str) -> str:
    """A number where text belongs (some servers send numeric ids) as its text; anything else is
    refused, naming its type. An integer past Python's int-string conversion limit (a caller's int;
    from the wire, the digits the event parser keeps, a ``Decimal``) is refused as what it is, a
    number too long to write, the same whichever way it came."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return str(value)
        except ValueError:  # the int-string conversion limit
            raise RemoteProtocolError(f"{what} is {too_long(value)}") from None
    if type(value).__name__ == "Decimal" and value == value.to_integral_value() and not _writable(value):
        raise RemoteProtocolError(f"{what} is {too_long(value)}")
    raise RemoteProtocolError(f"{what} is {type(value).__name__}, not a string")


def too_long(value: Any) -> str:
    """An integer too long for Python to write as text, described without writing it."""
    return f"a number too long to write as text (more than {sys.get_int_max_str_digits()} digits)"


def _writable(value: Any) -> bool:
    """Would ``value`` (an integral ``Decimal``) be written as text if it were the int it holds?"""
    limit = sys.get_int_max_str_digits()
    return limit == 0 or value.adjusted() < limit


def index(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RemoteProtocolError(f"{what} is {shown(value)}, not an integer")
    return value
