"""Claude's content blocks of no call whose content streams, as the Anthropic decoder keeps them to
go back with the turn, each in its place:

- ``compaction`` (context management: the summary of the context before it, with its opaque
  ``encrypted_content``): each ``compaction_delta`` holds the whole of both, as the anthropic SDK's
  accumulator takes them, so each gives the block as it stands (a
  :class:`~fsm.events.CompactionBlock`, which replaces the one before it at its place).
- ``connector_text`` (text a connector gave, signed as thinking is): no anthropic SDK type holds it
  yet (2.17 names it only as a request block the API checks as it checks thinking, a
  ``thinking_dropped`` input transformation), and Anthropic's refusals-and-fallback guide leaves it
  out before a turn's last ``fallback`` block as it does thinking. Its start gives
  ``connector_text`` (and may give ``signature``), each ``connector_text_delta`` adds to its
  ``connector_text`` and a ``signature_delta`` sets its ``signature``; its stop keeps it whole
  (a :class:`~fsm.events.ServerResultBlock`, in ``Result.server_tool_results``), its text counted
  against the content limit as it comes. One that never stopped by the message's end (or by
  ``close()``, no ``message_delta`` read) is said (``part-not-reassembled``) and not kept, as a
  Bedrock server tool's result that never stopped is: its signature may never have come.

And a block of a type no reading knows (``unknown-event`` at its start), by its index: a
``signature_delta``, ``text_delta``, ``thinking_delta`` or ``citations_delta`` in it is said
(``part-not-reassembled``, naming the block's index and type) and not read as a thinking block's
signature or thinking, nor as the turn's text or a citation of it: the turn would go back to Claude
with what the block never was (a signature the API gave another block on a thinking block of no
text, the block's own text as Claude's). The anthropic SDK's accumulator takes text and citations
in a text block alone, thinking and signatures in a thinking block alone, and passes over the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fsm.events import CompactionBlock, Event, HeldPiece, ServerResultBlock
from fsm.wire.decoders._fields import text

CONNECTOR_TEXT = "connector_text"


class _Connector:
    __slots__ = ("pieces", "place", "start")

    def __init__(self, place: int | None, start: dict[str, Any]) -> None:
        self.place = place
        self.start = start
        self.pieces: list[str] = [start.pop(CONNECTOR_TEXT)]

    def block(self) -> dict[str, Any]:
        block = {key: value for key, value in self.start.items() if key != "signature"}
        block[CONNECTOR_TEXT] = "".join(self.pieces)
        signature = self.start.get("signature")
        if signature:  # (an empty one is a start's placeholder: none came, none goes back)
            block["signature"] = signature
        return block


class StreamedBlocks:
    """The compaction and connector_text blocks of one stream, by the index their events name."""

    def __init__(self) -> None:
        self._compacted: dict[int | None, tuple[int | None, dict[str, Any]]] = {}
        self._connectors: dict[int | None, _Connector] = {}
        self.unknown_types: dict[int | None, str] = {}  # the type of each block of a type no reading knows, by index

    def start(self, kind: str, at: int | None, place: int | None, block: Mapping[str, Any]) -> list[Event] | None:
        """The events of a block of type ``kind`` starting at index ``at`` (its place ``place``); None
        for a kind read elsewhere."""
        if self.unknown_types:
            self.unknown_types.pop(at, None)  # (a block of a known type started there again)
        if kind == "compaction":  # the context's summary: it goes back as it came, in its place
            self._compacted[at] = (place, dict(block))
            return [CompactionBlock(dict(block), place)]
        if kind != CONNECTOR_TEXT:
            return None
        start = {key: value for key, value in block.items() if value is not None}
        start[CONNECTOR_TEXT] = text(block.get(CONNECTOR_TEXT), "content_block.connector_text") or ""
        text(start.get("signature"), "content_block.signature")  # text, or refused naming it
        self._connectors[at] = connector = _Connector(place, start)
        said = connector.pieces[0]
        return [HeldPiece(len(said), place)] if said and place is not None else []

    def unknown(self, kind: str, at: int | None, diagnose: Callable[[str, str], None]) -> None:
        """A block of type ``kind``, which no reading knows, starts at index ``at``: said, and kept in mind."""
        diagnose("unknown-event", f"a {kind!r} content block at index {at}")
        self.unknown_types[at] = kind

    def delta(
        self, kind: str | None, at: int | None, delta: Mapping[str, Any], diagnose: Callable[[str, str], None]
    ) -> list[Event] | None:
        """The events of a delta of type ``kind`` in a block of this kind at ``at``; None where no
        such block is open there (the decoder reads it). A signature in a block of a type no reading
        knows is said and read as nothing, and so is its text, thinking or citation (see the module docstring)."""
        if self.unknown_types and at in self.unknown_types and kind in _NOT_READ:
            said = f"a {kind} in block {at}, a {self.unknown_types[at]!r} block no reading knows"
            diagnose("part-not-reassembled", f"{said}: not read as {_NOT_READ[kind]}")
            return []
        if kind == "compaction_delta" and at in self._compacted:
            place, block = self._compacted[at]
            for key in ("content", "encrypted_content"):
                block[key] = text(delta.get(key), f"compaction_delta.{key}")
            return [CompactionBlock(dict(block), place)]
        connector = self._connectors.get(at)
        if connector is None or kind not in _CONNECTOR_DELTAS:
            return None
        if kind == "signature_delta":
            connector.start["signature"] = text(delta.get("signature"), "signature")
            return []
        piece = text(delta.get(CONNECTOR_TEXT), "connector_text") or ""
        connector.pieces.append(piece)
        return [HeldPiece(len(piece), connector.place)] if piece and connector.place is not None else []

    def stop(self, at: int | None) -> list[Event] | None:
        """The events of the stop of a connector_text block at ``at``: the block, whole; None where
        none is open there."""
        connector = self._connectors.pop(at, None) if self._connectors else None
        return None if connector is None else [ServerResultBlock(connector.block(), connector.place)]

    def unstopped(self, diagnose: Callable[[str, str], None]) -> None:
        """At the message's end, or close() before it: say each connector_text block that never stopped,
        which is not kept."""
        for at in self._connectors:
            diagnose("part-not-reassembled", f"the connector_text block at index {at} never stopped; it is not kept")
        self._connectors.clear()


_NOT_READ = {
    "signature_delta": "a thinking block's signature",
    "thinking_delta": "a thinking block's thinking",
    "text_delta": "the turn's text",
    "citations_delta": "a citation of the turn's text",
}
"""The deltas of a known block's that a block of a type no reading knows may carry, and what each is not read as."""
_CONNECTOR_DELTAS = frozenset({"connector_text_delta", "signature_delta"})
