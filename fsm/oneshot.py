"""A whole stream in one call: what an agent loop holds (an SDK stream, a stream manager, body
chunks) in, the :class:`~fsm.results.Result` out. A thin loop over :class:`~fsm.reassembler.Reassembler`."""

from __future__ import annotations

from typing import Any

from fsm.reassembler import Reassembler
from fsm.results import Result


def _chunks(stream: Any) -> Any:
    if isinstance(stream, bytes | bytearray | memoryview | str):
        return (stream,)  # a whole body
    return stream


def _feed_any(reassembler: Reassembler, item: Any) -> None:
    if isinstance(item, bytes | bytearray | memoryview):
        reassembler.feed_bytes(bytes(item))
    elif isinstance(item, str):
        reassembler.feed_bytes(item.encode("utf-8"))
    else:
        reassembler.feed(item)


def reassemble(stream: Any, provider: str = "auto", **options: Any) -> Result:
    """Reassemble a whole stream in one call: an iterable of raw bytes or text (body chunks), wire
    payloads, SDK objects or stream-helper events, or a stream manager (``client.chat.completions.
    stream(...)``, ``client.messages.stream(...)``), which is entered and closed here. ``options``
    are :class:`Reassembler`'s (``strict``, ``policies``, ``limits``, ``taken``)."""
    reassembler = Reassembler(provider, **options)
    if not hasattr(stream, "__iter__") and hasattr(stream, "__enter__"):
        with stream as entered:
            for item in _chunks(entered):
                _feed_any(reassembler, item)
    else:
        for item in _chunks(stream):
            _feed_any(reassembler, item)
    return reassembler.close()


async def areassemble(stream: Any, provider: str = "auto", **options: Any) -> Result:
    """:func:`reassemble` for an async stream (``AsyncStream``, an async stream manager, an async
    generator); a plain iterable is taken too."""
    reassembler = Reassembler(provider, **options)
    if not hasattr(stream, "__aiter__") and hasattr(stream, "__aenter__"):
        async with stream as entered:
            async for item in entered:
                _feed_any(reassembler, item)
    elif hasattr(stream, "__aiter__"):
        async for item in stream:
            _feed_any(reassembler, item)
    else:
        for item in _chunks(stream):
            _feed_any(reassembler, item)
    return reassembler.close()
