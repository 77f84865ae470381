"""A stream the caller's side stopped before it ended: what the result says of it, and the result
kept on the error that stopped it.

A network error raised by the stream's iterator, or a timeout's cancellation, stops
:func:`~fsm.oneshot.reassemble` part-way. That error is the caller's to catch where it always was,
so it goes up unchanged; but the calls read before it are the caller's too (which call was cut, and
its text so far), so the result so far rides on the error, read back with :func:`result_so_far`.
"""

from __future__ import annotations

import contextlib
from typing import Final

from fsm.errors import InvalidInput, ToolcallFSMError
from fsm.results import CallStatus, Result

_KEPT: Final = "_toolcall_fsm_result"
"""The attribute the result so far is kept under, on the error itself: a table beside it would
hold every error (and its traceback's frames) for as long as the table lives."""

_CHAIN: Final = 64
"""The most errors asked for a kept result (a chain of causes, an exception group's members): a
chain is a few long, but a caller's may loop."""

_ROOM: Final = 300
"""The most of the error's own message the diagnostic quotes (a message is one line a person reads)."""

_NOTE: Final = "toolcall-fsm kept the result so far"
"""How the error's note begins: an error raised again by a later stream loses the earlier's note."""

_CAUSE: Final = BaseException.__dict__["__cause__"]
_MEMBERS: Final = BaseExceptionGroup.__dict__["exceptions"]
"""Read from the error past its class's own attribute lookup, which a caller's error may override."""


def described(error: BaseException) -> str:
    """What stopped the stream, as the ``stream-interrupted`` diagnostic says it: the error's type,
    with its module where that is not Python's own, and its message, shortened; raised by the
    caller's stream, or by this package at what the stream handed it (``InvalidInput``). An error
    whose ``__str__`` raises, or gives no text, is named by its type alone."""
    if not isinstance(error, BaseException):
        raise InvalidInput(
            f"close(interrupted=...) takes the error that stopped the stream, not {type(error).__name__}"
        )
    kind = type(error)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    try:
        said = str(error)
    except Exception:  # a caller's error class with a broken __str__: its type says enough
        said = ""
    # A str subclass's own methods are the caller's too: its text, as a plain str, is what is quoted.
    said = str.__str__(said) if issubclass(type(said), str) else ""
    if len(said) > _ROOM:
        said = f"{said[:_ROOM]}... ({len(said)} characters)"
    named = f"{name}: {said}" if said else name
    return (
        f"the input was refused: {named}"
        if isinstance(error, ToolcallFSMError)
        else f"the caller's stream raised {named}"
    )


def keep(error: BaseException, result: Result) -> None:
    """Keep ``result`` on ``error`` for :func:`result_so_far`, and say so in the error's notes (what a
    traceback shows), in place of a note an earlier stream left on the same error. Set past the
    error's own ``__setattr__`` (a frozen attrs exception refuses it); an error that can hold no
    attribute at all keeps nothing, and the error goes up as it is."""
    try:
        object.__setattr__(error, _KEPT, result)
    except (AttributeError, TypeError):
        return
    cut = sum(1 for call in result.calls if call.status is CallStatus.TRUNCATED)
    told = f"{len(result.calls)} call{'s' if len(result.calls) != 1 else ''}" + (f", {cut} cut" if cut else "")
    with contextlib.suppress(Exception):  # a caller's error whose notes are no list: the note is a nicety
        notes = object.__getattribute__(error, "__dict__").get("__notes__")
        if type(notes) is list:
            notes[:] = [note for note in notes if not (type(note) is str and note.startswith(_NOTE))]
        error.add_note(f"{_NOTE} ({told}): fsm.result_so_far(error)")


def result_so_far(error: BaseException) -> Result | None:
    """The result :func:`~fsm.reassemble` or :func:`~fsm.areassemble` had read when ``error`` stopped
    it: a network error from the stream's iterator, a cancellation, or an error of this package's
    own (a strict violation, a limit). Calls completed before the error are kept, unfinished ones
    truncated with their text (diagnostic ``stream-interrupted``, or ``stream-failed`` for this
    package's own error).

    The error caught may be another raised from that one (``raise ... from``): ``asyncio.wait_for``'s
    ``TimeoutError`` raised over the cancellation, an SDK's error wrapping the network one; so its
    causes are asked too, in turn. Not an error it was raised while handling (``__context__``):
    that may be an earlier stream's, whose calls are not this one's. An exception group
    (``asyncio.TaskGroup``) is asked through its members, and answers when exactly one result is
    found among them; with more, ask each member. None for an error that came out of neither."""
    if not isinstance(error, BaseException):
        raise InvalidInput(f"result_so_far takes an error, not {type(error).__name__}")
    found: list[Result] = []
    asked: set[int] = set()
    errors = [error]
    while errors and len(asked) < _CHAIN:
        error = errors.pop()
        if id(error) in asked:
            continue
        asked.add(id(error))
        kept = _kept(error)
        if kept is not None:  # (its own causes came before it: not this stream's)
            if not any(kept is other for other in found):
                found.append(kept)
            continue
        errors.extend(reversed(_linked(error)))
    return found[0] if len(found) == 1 else None


def _kept(error: BaseException) -> Result | None:
    try:
        held = object.__getattribute__(error, "__dict__")
    except Exception:  # an error without a __dict__, or whose class refuses it
        return None
    kept = held.get(_KEPT) if type(held) is dict else None
    return kept if type(kept) is Result else None


def _linked(error: BaseException) -> list[BaseException]:
    """The errors ``error`` was raised from: its cause, and an exception group's members."""
    linked = []
    cause = _CAUSE.__get__(error)
    if isinstance(cause, BaseException):
        linked.append(cause)
    if issubclass(type(error), BaseExceptionGroup):
        linked.extend(member for member in _MEMBERS.__get__(error) if isinstance(member, BaseException))
    return linked
