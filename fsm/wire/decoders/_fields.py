"""The fields of provider JSON, read strictly: an object, a list, text, an index, each of its
type or refused with a :class:`RemoteProtocolError` naming the field and what it held."""

from __future__ import annotations

import math
import sys
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
    """``str(value)`` for a message, a finish reason or an event's type, but a number too long to
    write named as one, fed or read: a caller's int has no text (str() refuses it), and the digits
    the event parser keeps of the same number read from the wire are not written either, so that
    a stream says the same and reads on whichever way it came. So is such a number inside an object
    or a list (an error object without a message): ``{'code': 'a number too long ...'}``."""
    if type(value) is str:
        return value
    said = too_long(value)
    if said is not None:
        return said
    return str(_named(value) if isinstance(value, dict | list) else value)


def exception_message(kind: str, body: Any) -> str:
    """What a Bedrock exception says, read alike from AWS event-stream bytes, a ConverseStream event
    and an event fed among InvokeModel chunks (policy exception-words): its body's ``message``, else
    its ``Message`` (the spelling some AWS services use), else a body that is no object as written
    (a string is its text: the exception ends the stream whatever its body holds); an exception
    that says nothing (a null or empty body or message) is said by its name."""
    said = body.get("message") if isinstance(body, Mapping) else body
    if said is None and isinstance(body, Mapping):
        said = body.get("Message")
    return kind if said is None or said == "" else written(said)


def _named(value: Any) -> Any:
    """``value`` with each number too long to write in it replaced by what :func:`too_long` says of it."""
    if isinstance(value, dict):
        return {key: _named(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_named(item) for item in value]
    return too_long(value) or value


def spelled(value: Any, what: str) -> str:
    """``str(value)`` where a value of any type stands for text the call's arguments keep (Gemini's
    ``stringValue``), but a number too long to write, or an object or list holding one, is refused
    as number_text refuses it: its digits would go into the arguments one way and not the other."""
    if type(value) is str:
        return value
    if too_long(value):
        raise _too_long(what, value)
    if isinstance(value, dict | list) and _holds_long(value):
        raise LimitExceeded(f"{what} holds {too_long(10 ** sys.get_int_max_str_digits())}", rule="limits")
    return str(value)


def _holds_long(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_holds_long(item) for item in value.values())
    if isinstance(value, list):
        return any(_holds_long(item) for item in value)
    return too_long(value) is not None


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
