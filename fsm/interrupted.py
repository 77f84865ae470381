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
"""The most errors of a chain (causes and contexts) asked for a kept result: a chain is a few long,
but a caller's may loop."""

_ROOM: Final = 300
"""The most of the error's own message the diagnostic quotes (a message is one line a person reads)."""


def described(error: BaseException) -> str:
    """What stopped the stream, as the ``stream-interrupted`` diagnostic says it: the error's type,
    with its module where that is not Python's own, and its message, shortened; raised by the
    caller's stream, or by this package at what the stream handed it (``InvalidInput``). An error
    whose ``__str__`` raises is named by its type alone."""
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
    if not isinstance(said, str):
        said = ""
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
    traceback shows). Set past the error's own ``__setattr__`` (a frozen attrs exception refuses
    it); an error that can hold no attribute at all keeps nothing, and the error goes up as it is."""
    try:
        object.__setattr__(error, _KEPT, result)
    except (AttributeError, TypeError):
        return
    cut = sum(1 for call in result.calls if call.status is CallStatus.TRUNCATED)
    told = f"{len(result.calls)} call{'s' if len(result.calls) != 1 else ''}" + (f", {cut} cut" if cut else "")
    with contextlib.suppress(Exception):  # a caller's error whose notes are no list: the note is a nicety
        error.add_note(f"toolcall-fsm kept the result so far ({told}): fsm.result_so_far(error)")


def result_so_far(error: BaseException) -> Result | None:
    """The result :func:`~fsm.reassemble` or :func:`~fsm.areassemble` had read when ``error`` stopped
    it: a network error from the stream's iterator, a cancellation, or an error of this package's
    own (a strict violation, a limit). Calls completed before the error are kept, unfinished ones
    truncated with their text (diagnostic ``stream-interrupted``, or ``stream-failed`` for this
    package's own error). The error caught may be another raised from that one, or while it was
    handled: ``asyncio.wait_for``'s ``TimeoutError`` raised over the cancellation, an SDK's error
    wrapping a network one; so its cause and context are asked too, in turn. None for an error that
    came out of neither."""
    if not isinstance(error, BaseException):
        raise InvalidInput(f"result_so_far takes an error, not {type(error).__name__}")
    asked: set[int] = set()
    errors = [error]
    while errors and len(asked) < _CHAIN:
        error = errors.pop()
        if id(error) in asked:
            continue
        asked.add(id(error))
        try:
            kept = vars(error).get(_KEPT)
        except TypeError:  # an error without a __dict__
            kept = None
        if type(kept) is Result:
            return kept
        errors.extend(link for link in (error.__context__, error.__cause__) if isinstance(link, BaseException))
    return None
