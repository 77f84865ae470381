"""A whole stream in one call: what an agent loop holds (an SDK stream, a stream manager, body
chunks) in, the :class:`~fsm.results.Result` out. A thin loop over :class:`~fsm.reassembler.Reassembler`.

What the caller's own code raises (the stream's iterator, a stream manager, an SDK object's
``model_dump()``) is not the stream's fault nor a misuse of this API: it goes up unchanged, so a
network error is caught where it always was. Any error that stops the stream part-way (that one, a
cancellation, a strict violation) goes up with the result so far kept on it: which call was cut,
and its text (:func:`fsm.result_so_far`).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from typing import Any

from fsm.errors import InvalidInput, ToolcallFSMError
from fsm.interrupted import keep
from fsm.reassembler import Reassembler
from fsm.results import Result

_OPTIONS = frozenset({"strict", "policies", "limits", "taken", "choice"})


def _chunks(stream: Any, caller: str = "reassemble") -> Any:
    if isinstance(stream, bytes | bytearray | memoryview | str):
        return (stream,)  # a whole body
    if isinstance(stream, Mapping):  # iterating it would feed its keys as text
        raise InvalidInput(f"{caller} takes a stream of events, not one event (a dict): feed it to a Reassembler")
    if not isinstance(stream, Iterable):
        raise InvalidInput(f"{caller} takes an iterable stream or a stream manager, not {_told(stream, caller)}")
    return stream


def _told(stream: Any, caller: str) -> str:
    """What the caller handed over instead of a stream, and what to do about it."""
    if inspect.iscoroutine(stream):
        # An async SDK call without its `await`. Nothing will run it now: closed, so that Python
        # does not add a "never awaited" warning to the error that says what to do.
        stream.close()
        return "a coroutine: await the SDK call first" + (", then use areassemble" if caller == "reassemble" else "")
    if hasattr(stream, "__await__"):
        return "an awaitable: await it first"
    return "an async stream: use areassemble" if hasattr(stream, "__aiter__") else type(stream).__name__


def _reassembler(provider: str, options: dict[str, Any]) -> Reassembler:
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:  # a misspelt option would otherwise be a TypeError naming Reassembler.__init__
        raise InvalidInput(f"unknown option {unknown[0]!r} (options: {', '.join(sorted(_OPTIONS))})")
    return Reassembler(provider, **options)


def _feed_any(reassembler: Reassembler, item: Any) -> None:
    kind = type(item)  # (not isinstance, which asks the item's own __class__: a caller's object may raise there)
    if issubclass(kind, bytes | bytearray | memoryview):
        reassembler.feed_bytes(bytes(item))
    elif issubclass(kind, str):
        # A lone surrogate (text decoded with surrogateescape) cannot be UTF-8: passed through, its
        # bytes are not UTF-8 either, so the framing reports the event holding it (bad-event).
        reassembler.feed_bytes(item.encode("utf-8", "surrogatepass"))
    else:
        reassembler.feed(item)


def reassemble(stream: Any, provider: str = "auto", **options: Any) -> Result:
    """Reassemble a whole stream in one call: an iterable of raw bytes or text (body chunks), wire
    payloads, SDK objects or stream-helper events, or a stream manager (``client.chat.completions.
    stream(...)``, ``client.messages.stream(...)``), which is entered and closed here. ``options``
    are :class:`Reassembler`'s (``strict``, ``policies``, ``limits``, ``taken``, ``choice``)."""
    reading = _Reading(_reassembler(provider, options))
    try:
        if not hasattr(stream, "__iter__") and hasattr(stream, "__enter__"):
            with stream as entered:
                for item in _chunks(entered):
                    reading.feed(item)
        else:
            for item in _chunks(stream):
                reading.feed(item)
        return reading.close()
    except BaseException as exc:
        reading.keep(exc)
        raise


async def areassemble(stream: Any, provider: str = "auto", **options: Any) -> Result:
    """:func:`reassemble` for an async stream (``AsyncStream``, an async stream manager, an async
    generator); a plain iterable is taken too."""
    reading = _Reading(_reassembler(provider, options))
    try:
        if not hasattr(stream, "__aiter__") and hasattr(stream, "__aenter__"):
            async with stream as entered:
                if not hasattr(entered, "__aiter__"):
                    raise InvalidInput(f"the stream manager gave {type(entered).__name__}, not an async stream")
                async for item in entered:
                    reading.feed(item)
        elif hasattr(stream, "__aiter__"):
            async for item in stream:
                reading.feed(item)
        else:
            for item in _chunks(stream, "areassemble"):
                reading.feed(item)
        return reading.close()
    except BaseException as exc:  # a cancellation too: a timeout's caller wants the calls read so far
        reading.keep(exc)
        raise


class _Reading:
    """One stream a one-shot call reads: its reassembler, and whether the engine was at work (reading
    an event, or closing) when an error came."""

    __slots__ = ("reassembler", "started", "working")

    def __init__(self, reassembler: Reassembler) -> None:
        self.reassembler = reassembler
        self.started = False  # the stream handed over something
        self.working = False

    def feed(self, item: Any) -> None:
        self.started = self.working = True
        _feed_any(self.reassembler, item)
        self.working = False

    def close(self) -> Result:
        self.working = True
        result = self.reassembler.close()
        self.working = False
        return result

    def keep(self, error: BaseException) -> None:
        """The result so far, kept on the error that stopped the stream (:func:`fsm.result_so_far`).
        This package's own error (a strict violation, a limit) leaves the engine whole and the result
        says ``stream-failed``; an error from the caller's side between events is
        ``stream-interrupted``. Any other error raised while the engine was at work (a
        ``KeyboardInterrupt`` landing there) may have stopped it part-way through a change, so no
        result it could give is trusted, and none is kept; nor where the stream handed over nothing
        (no stream at all, a connection refused): the error says all there is. The error goes up as
        it is whatever happens here."""
        if not self.started or (self.working and not isinstance(error, ToolcallFSMError)):
            return
        try:
            result = self.reassembler.close(interrupted=error)
        except Exception:  # nothing of ours may stand in for the caller's error
            return
        keep(error, result)
