"""The errors toolcall-fsm raises, split by whose fault they are (as h11 does).

* :class:`RemoteProtocolError`: the stream is at fault (malformed framing, a violation in strict
  mode, a limit exceeded). It names the wire event number (1-based) and the rule involved.
* :class:`LocalProtocolError`: the caller misused the API (fed after close, unknown provider). A
  wrong type (``feed_bytes("text")``, a fragment whose text is not a str) is :class:`InvalidInput`,
  also a ``TypeError``; a bad option value (``Limits(max_calls=0)``, an unknown policy choice) is
  :class:`InvalidOption`, also a ``ValueError``; so either reads naturally in an ``except``.
* :class:`SpecError`: a spec file in ``specs/`` is malformed.
"""

from __future__ import annotations

import sys


class ToolcallFSMError(Exception):
    """Base class of every error this package raises on purpose."""


class SpecError(ToolcallFSMError):
    """A machine spec is malformed: unreadable, unknown keys, or an undeclared name."""


class LocalProtocolError(ToolcallFSMError):
    """The caller used the API wrongly."""


class InvalidInput(LocalProtocolError, TypeError):
    """The caller fed something of the wrong type (str where bytes belong, non-str argument text)."""

    event: int | None = None
    """The 1-based number of the event that ended the stream, for the one InvalidInput that does: an
    object of the caller's own in it raised as it was read (policy caller-object-raises)."""


class InvalidOption(LocalProtocolError, ValueError):
    """A ``Limits`` or ``Policies`` value, or a Reassembler option, is out of range or of the wrong type."""


class UnsupportedProvider(LocalProtocolError):
    """The provider is known but has no decoder yet, or could not be recognised."""

    def __init__(self, message: str, *, event: int | None = None) -> None:
        self.event = event
        """The 1-based number of the wire event the provider could not be told from, when one was read."""
        super().__init__(f"event {event}: {message}" if event is not None else message)


class RemoteProtocolError(ToolcallFSMError):
    """The stream broke the protocol. ``event`` is the 1-based wire event number, if known."""

    def __init__(self, message: str, *, event: int | None = None, rule: str | None = None) -> None:
        self.event = event
        """The 1-based number of the wire event at fault, or None when it is not known."""
        self.rule = rule
        """The spec rule (or decoder, or ``limits``) that the event broke."""
        self.detail = message
        """The message without the event and rule around it."""
        where = f"event {event}: " if event is not None else ""
        why = f" (rule {rule})" if rule else ""
        super().__init__(f"{where}{message}{why}")


class FramingError(RemoteProtocolError):
    """The bytes are no framing (SSE, NDJSON, a JSON array or document, an AWS event stream), or an event is not
    valid JSON."""


class LimitExceeded(RemoteProtocolError):
    """A configured bound (slots, argument size, nesting depth, event size) was exceeded."""


class StateError(LocalProtocolError):
    """An event the slot machine does not accept in its current state reached it."""


def shown(value: object, room: int = 80) -> str:
    """``repr(value)`` as an error's message names a value of the wrong kind: at most ``room``
    characters, then how long it was (a megabyte string). A number too long to write is named as
    one (:func:`too_long`), never written out nor named by the ``Decimal`` its digits are kept in."""
    said = too_long(value)
    if said is not None:
        return said
    return bounded(repr(value), room)


def bounded(text: str, room: int) -> str:
    """``text`` as a message keeps it: at most ``room`` characters, then how long it was."""
    return text if len(text) <= room else f"{text[:room]}... ({len(text)} characters)"


def kind(value: object) -> str:
    """What a value of the wrong type is, for an error's message: its type's name, but a number too
    long to write as :func:`too_long` names it (read from the wire, its digits are kept in a
    ``Decimal``; fed as a dict, it is an int: either is the same number, said the same way)."""
    return too_long(value) or type(value).__name__


def too_long(value: object) -> str | None:
    """ "a number too long to write as text (more than N digits)" for an integer past Python's
    int-string conversion limit (an int, or an integral ``Decimal`` the event parser kept the
    digits of), else None. Checked without writing it: a megabyte of digits costs no more."""
    limit = sys.get_int_max_str_digits()
    if limit == 0:
        return None
    if type(value) is int or (isinstance(value, int) and not isinstance(value, bool)):
        if value.bit_length() < limit * 3:  # under 10**(limit - 1): written whatever its digits
            return None
        try:
            str(value)  # refused at once when far past the limit; else at most ~limit digits written
        except ValueError:
            return f"a number too long to write as text (more than {limit} digits)"
        return None
    if type(value).__name__ == "Decimal":
        exponent = value.as_tuple().exponent  # type: ignore[attr-defined]
        if isinstance(exponent, int) and exponent >= 0 and value.adjusted() >= limit:  # type: ignore[attr-defined]
            return f"a number too long to write as text (more than {limit} digits)"
    return None
