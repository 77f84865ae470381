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
    __slots__ = ("encrypted_content", "item_id", "output_index", "redacted", "signature", "summary", "text")

    def __init__(self) -> None:
        self.text: list[str] = []
        self.signature: str | None = None
        self.redacted: str | None = None
        self.item_id: str | None = None
        self.summary: tuple[str, ...] = ()
        self.encrypted_content: str | None = None
        self.output_index: int | None = None

    def add(self, piece: ReasoningDelta) -> None:
        if piece.text:
            self.text.append(piece.text)
        # A later piece with a value is the provider's latest word (Anthropic sends the signature last).
        self.signature = piece.signature or self.signature
        self.redacted = piece.redacted or self.redacted
        self.item_id = piece.item_id or self.item_id
        self.summary = piece.summary or self.summary
        self.encrypted_content = piece.encrypted_content or self.encrypted_content
        self.output_index = piece.output_index if piece.output_index is not None else self.output_index

    def freeze(self) -> Reasoning:
        return Reasoning(
            text="".join(self.text),
            signature=self.signature,
            redacted=self.redacted,
            item_id=self.item_id,
            summary=self.summary,
            encrypted_content=self.encrypted_content,
            output_index=self.output_index,
        )


class TurnContent:
    """The accumulator the facade keeps beside the engine. Made for every stream, and most streams
    carry little or no text or reasoning: the fields start as class defaults and each container is
    made by the first piece that needs it."""

    text_signature: str | None = None
    text_output_index: int | None = None
    usage: dict[str, Any] | None = None
    _text: list[str] | None = None
    _blocks: dict[int | str, _Block] | None = None
    _latest: int | str | None = None
    _anonymous = 0

    def apply(self, event: TextDelta | ReasoningDelta | UsageReport) -> None:
        if type(event) is TextDelta:
            if self._text is None:
                self._text = [event.text]
            else:
                self._text.append(event.text)
            if event.signature:
                self.text_signature = event.signature
            if self.text_output_index is None:
                self.text_output_index = event.output_index  # the first message: the text goes back there
        elif type(event) is ReasoningDelta:
            self._block(event.block).add(event)
        elif type(event) is UsageReport:
            if event.cumulative and self.usage is not None:
                self.usage = {**self.usage, **event.usage}
            else:
                self.usage = dict(event.usage)

    def usage_replaced(self, usage: dict[str, Any]) -> None:
        """What ``apply(UsageReport(usage))`` does (a report that replaces), without the event."""
        self.usage = dict(usage)

    def _block(self, wire_key: int | None) -> _Block:
        blocks = self._blocks
        if blocks is None:
            blocks = self._blocks = {}
        key: int | str | None = wire_key
        if key is None:
            if self._latest is not None:
                return blocks[self._latest]
            # Keys of their own, which no provider's block index or item id can equal.
            self._anonymous += 1
            key = f"#{self._anonymous}"
        block = blocks.get(key)
        if block is None:
            block = blocks[key] = _Block()
        self._latest = key
        return block

    @property
    def text(self) -> str:
        return "".join(self._text) if self._text is not None else ""

    @property
    def reasoning(self) -> tuple[Reasoning, ...]:
        return tuple([block.freeze() for block in self._blocks.values()]) if self._blocks else ()
