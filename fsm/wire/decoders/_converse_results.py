"""A server tool's result block of a Bedrock ConverseStream (Amazon Nova's code interpreter and
grounding): ``contentBlockStart.start.toolResult``, then each ``contentBlockDelta.delta.toolResult``
list of ``{json}`` or ``{text}`` items, kept whole for the next turn once its block stops (read by
fsm.wire.decoders.bedrock, whose module docstring tells the stream)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fsm.events import Event, HeldPiece, chars_held


class ConverseResult:
    """A server tool's ``toolResult`` block as its start and deltas build it: the start's fields as
    they came, then the ``content`` items in order, a run of text pieces held apart until the
    block stops (joined once, so a long streamed result costs its length)."""

    def __init__(self, at: int, start: Mapping[str, Any]) -> None:
        self._at = at
        self._start = {key: value for key, value in start.items() if value is not None and key != "content"}
        self._content: list[dict[str, Any] | list[str]] = []  # an item, or a run of text pieces

    def add(self, pieces: Any, where: str, diagnose: Callable[[str, str], None], events: list[Event]) -> bool:
        """Reads a delta's ``toolResult`` items; False (nothing read) when it is no list. What it
        keeps is held here until the block stops, so it is counted against the content limit as it
        comes: a HeldPiece of its characters goes in ``events``."""
        if type(pieces) is not list:
            return False
        kept = 0
        for piece in pieces:
            said = piece.get("text") if isinstance(piece, Mapping) and len(piece) == 1 else None
            if isinstance(said, str):
                if self._content and type(self._content[-1]) is list:
                    self._content[-1].append(said)
                else:
                    self._content.append([said])
                kept += str.__len__(said)  # (a caller's str subclass: what it holds)
            elif isinstance(piece, Mapping) and len(piece) == 1 and "json" in piece:
                self._content.append({"json": piece["json"]})
                kept += chars_held(piece["json"])
            else:
                what = ", ".join(str(key) for key in piece)[:80] if isinstance(piece, Mapping) else type(piece).__name__
                diagnose("part-not-reassembled", f"a toolResult item of {where} holds {what}, which is not kept")
        if kept:
            events.append(HeldPiece(kept, self._at))
        return True

    def block(self) -> dict[str, Any]:
        content = [{"text": "".join(item)} if type(item) is list else item for item in self._content]
        return {**self._start, "content": content}


def unstopped(results: dict[int, ConverseResult], carried: Any, diagnose: Callable[[str, str], None]) -> None:
    """At the message's end (``messageStop``), or ``close()`` before it: say each result block that
    never stopped, which is not kept, and let an InvokeModel stream's model's decoder say its own."""
    for at in results:
        diagnose("part-not-reassembled", f"the toolResult block {at} never stopped; it is not kept")
    results.clear()
    if (said := getattr(carried, "unstopped", None)) is not None:
        said(diagnose)
