"""What a turn said besides its tool calls: text, reasoning and usage, accumulated from the decoders'
:class:`~fsm.events.TextDelta`, :class:`~fsm.events.ReasoningDelta` and :class:`~fsm.events.UsageReport`.

Kept apart from the engine on purpose: none of it bears on a call's identity or arguments, so the
slot machine never sees it and the tool-call path pays nothing for it.
"""

from __future__ import annotations

from typing import Any

from fsm.events import ReasoningDelta, TextDelta, UsageReport
from fsm.results import Reasoning


class _Block:
    __slots__ = ("encrypted_content", "item_id", "redacted", "signature", "summary", "text")

    def __init__(self) -> None:
        self.text: list[str] = []
        self.signature: str | None = None
        self.redacted: str | None = None
        self.item_id: str | None = None
        self.summary: tuple[str, ...] = ()
        self.encrypted_content: str | None = None

    def add(self, piece: ReasoningDelta) -> None:
        if piece.text:
            self.text.append(piece.text)
        # A later piece with a value is the provider's latest word (Anthropic sends the signature last).
        self.signature = piece.signature or self.signature
        self.redacted = piece.redacted or self.redacted
        self.item_id = piece.item_id or self.item_id
        self.summary = piece.summary or self.summary
        self.encrypted_content = piece.encrypted_content or self.encrypted_content

    def freeze(self) -> Reasoning:
        return Reasoning(
            text="".join(self.text),
            signature=self.signature,
            redacted=self.redacted,
            item_id=self.item_id,
            summary=self.summary,
            encrypted_content=self.encrypted_content,
        )


class TurnContent:
    """The accumulator the facade keeps beside the engine."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self.text_signature: str | None = None
        self._blocks: dict[int | str, _Block] = {}
        self._latest: int | str | None = None
        self._anonymous = 0
        self.usage: dict[str, Any] | None = None

    def apply(self, event: TextDelta | ReasoningDelta | UsageReport) -> None:
        if type(event) is TextDelta:
            self._text.append(event.text)
            if event.signature:
                self.text_signature = event.signature
        elif type(event) is ReasoningDelta:
            self._block(event.block).add(event)
        elif type(event) is UsageReport:
            if event.cumulative and self.usage is not None:
                self.usage = {**self.usage, **event.usage}
            else:
                self.usage = dict(event.usage)

    def _block(self, wire_key: int | None) -> _Block:
        key: int | str | None = wire_key
        if key is None:
            if self._latest is not None:
                return self._blocks[self._latest]
            # Keys of their own, which no provider's block index or item id can equal.
            self._anonymous += 1
            key = f"#{self._anonymous}"
        block = self._blocks.get(key)
        if block is None:
            block = self._blocks[key] = _Block()
        self._latest = key
        return block

    @property
    def text(self) -> str:
        return "".join(self._text)

    @property
    def reasoning(self) -> tuple[Reasoning, ...]:
        return tuple(block.freeze() for block in self._blocks.values())
