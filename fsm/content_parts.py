"""The pieces of a turn's content still arriving: one reasoning block and one text part, each
gathered as its pieces come and frozen into :class:`~fsm.results.Reasoning` and
:class:`~fsm.results.TextPart` when the result is built (:class:`fsm.content.TurnContent` keeps them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fsm.events import ReasoningDelta, TextDelta
from fsm.results import ContentDelta, Output, Reasoning, ReasoningData, TextPart

if TYPE_CHECKING:
    from fsm.engine.ledger import Ledger

COMPACT_CHARS = 8192
"""How many characters a turn's content takes in (at least) between two compactions of its pieces."""


def compact(pieces: list[str] | None, joined: int) -> int:
    """Join the pieces after the first ``joined`` (those that came since the last compaction) into
    one string, and say how many there are now. A piece is an object of its own: one character of
    a 1-character piece outside Latin-1 held about 76 bytes (audit 73's figure), where a string of
    them holds 2 or 4 each. Joined every COMPACT_CHARS or so, each piece is copied once more."""
    if pieces is None:
        return joined
    if len(pieces) - joined > 1:
        pieces[joined:] = ["".join(pieces[joined:])]
    return len(pieces)


def compact_parts(blocks: dict[Any, Block] | None, parts: dict[Any, Part] | None) -> int:
    """:func:`compact` each block's and part's pieces; how many lists of pieces that was."""
    for block in blocks.values() if blocks else ():
        block.joined = compact(block.text, block.joined)
    for part in parts.values() if parts else ():
        part.joined = compact(part.text, part.joined)
        part.refusal_joined = compact(part.refusal, part.refusal_joined)
    return (len(blocks) if blocks else 0) + 2 * (len(parts) if parts else 0)


def signs_apart(block: Block, piece: ReasoningDelta) -> bool:
    """Policy signatures-kept-apart: ``piece`` brings a signature other than the one ``block`` holds,
    for another item (an id the block's is not: OpenRouter names a Gemini call's signature by the
    call's id, under the index of the thought before it; two calls', or the thought's own and then a
    call's, come so under one index). It builds a block of its own, so neither signature is lost
    and each keeps its id; the same item's signature again is its latest word, and replaces it (another
    signature so is said: :func:`resigned`). One signature two items name (neither id missing) is two
    items' too: each call keeps it (audit 102)."""
    if not (piece.signature and block.signature) or piece.item_id == block.item_id:
        return False
    return piece.signature != block.signature or (piece.item_id is not None and block.item_id is not None)


def resigned(block: Block, piece: ReasoningDelta, ledger: Ledger | None) -> None:
    """Policy signatures-kept-apart: ``piece`` (of ``block``'s own item, not set apart) brings a signature
    other than the one ``block`` holds. It is the latest word and replaces the earlier one, which the turn
    no longer goes back with: said to ``ledger`` (``part-not-reassembled``, at the piece's event), never
    lost in silence (audit 102)."""
    if not (piece.signature and block.signature) or piece.signature == block.signature or ledger is None:
        return
    item = f" (item {block.item_id})" if block.item_id is not None else ""
    ledger.diagnose(
        "part-not-reassembled", f"reasoning block {block.at}{item}: another signature replaced the one it held"
    )


class Block:
    __slots__ = (
        "at",
        "detail",
        "encrypted_content",
        "format",
        "item_id",
        "joined",
        "output_index",
        "place",
        "redacted",
        "signature",
        "summary",
        "text",
    )

    def __init__(self, at: int) -> None:
        self.at = at  # the block's position in Result.reasoning
        self.text: list[str] = []
        self.signature: str | None = None
        self.redacted: str | None = None
        self.item_id: str | None = None
        self.summary: tuple[str, ...] = ()
        self.encrypted_content: str | None = None
        self.output_index: int | None = None
        self.place: int | None = None
        self.detail: str | None = None
        self.format: str | None = None
        self.joined = 0  # the pieces of text up to here are one string (see compact)

    def ended_by(self, text: str, piece: ReasoningDelta | None) -> bool:
        """Policy signed-block-ends: whether a piece of no index (``text``, made Unicode, and ``piece``, the
        event, or None on the fast paths) opens the next block rather than going on with this one, the
        latest. A signature ends its block (Claude sends it last, a Gemini run's ends the run), and redacted
        data is a block whole: text, redacted data or another signature after either is the next block's,
        so index-less blocks (LiteLLM's older ``thinking_blocks``) keep each its own. The same signature
        again, or a piece naming an item (policy signatures-kept-apart sets those apart), stays."""
        if (self.signature is None and self.redacted is None) or (piece is not None and piece.item_id is not None):
            return False
        if text or piece is None:
            return bool(text)
        return bool(piece.redacted) or piece.signature not in (None, self.signature)

    def add(self, piece: ReasoningDelta, text: str, heard: Callable[[Output], None] | None = None) -> None:
        """Take ``piece`` in (its text, ``text``, made Unicode); to ``heard`` (a reassembler asked for
        the content's pieces), what it changed of the block besides its text, then its text."""
        kept = self.kept() if heard is not None else None
        if text:
            self.text.append(text)
        # A later piece with a value is the provider's latest word (Anthropic sends the signature last).
        self.signature = piece.signature or self.signature
        self.redacted = piece.redacted or self.redacted
        self.item_id = piece.item_id or self.item_id
        self.summary = piece.summary or self.summary
        self.encrypted_content = piece.encrypted_content or self.encrypted_content
        self.output_index = piece.output_index if piece.output_index is not None else self.output_index
        self.detail = piece.detail or self.detail
        self.format = piece.format or self.format
        if heard is not None:
            now = self.kept()
            if now != kept:  # before its text: a reader learns the block's kind (its type) first
                heard(ReasoningData(self.at, *now))
            if text:
                heard(ContentDelta("reasoning", text, self.at))

    def kept(self) -> tuple[Any, ...]:
        """What the block carries besides its text, in :class:`ReasoningData`'s order."""
        return (
            self.signature,
            self.redacted,
            self.item_id,
            self.summary,
            self.encrypted_content,
            self.detail,
            self.format,
        )

    def freeze(self) -> Reasoning:
        return Reasoning(
            text="".join(self.text),
            signature=self.signature,
            redacted=self.redacted,
            item_id=self.item_id,
            summary=self.summary,
            encrypted_content=self.encrypted_content,
            output_index=self.output_index,
            place=self.place,
            detail=self.detail,
            format=self.format,
        )


class Part:
    __slots__ = (
        "citations",
        "item_id",
        "joined",
        "output_index",
        "phase",
        "place",
        "refusal",
        "refusal_joined",
        "refused_first",
        "signature",
        "status",
        "text",
    )

    def __init__(self, place: int | None, output_index: int | None) -> None:
        self.text: list[str] = []
        self.signature: str | None = None
        self.place = place
        self.output_index = output_index
        self.item_id: str | None = None
        self.status: str | None = None
        self.phase: str | None = None
        self.citations: list[dict[str, Any]] | None = None
        self.refusal: list[str] | None = None
        self.refused_first = False
        self.joined = self.refusal_joined = 0  # see compact

    def add(self, piece: TextDelta, text: str) -> None:
        """Take a text delta's ``text`` (mended) and what it says of its part."""
        if text:
            self.text.append(text)
        if piece.signature or piece.item_id or piece.status or piece.phase:  # (a text delta alone: none)
            self.signature = piece.signature or self.signature
            self.item_id = piece.item_id or self.item_id
            self.status = piece.status or self.status  # the item's end, after its start: the latest word
            self.phase = piece.phase or self.phase
        if piece.citation is not None:
            if self.citations is None:
                self.citations = [piece.citation]
            else:
                self.citations.append(piece.citation)

    def refused(self, text: str) -> None:
        if self.refusal is None:
            self.refusal = [text]
            self.refused_first = not self.text  # the API streams a message's content parts one after another
        else:
            self.refusal.append(text)

    def freeze(self) -> TextPart:
        return TextPart(
            "".join(self.text),
            self.signature,
            self.place,
            self.output_index,
            self.item_id,
            self.status,
            self.phase,
            tuple(self.citations) if self.citations else (),
            "".join(self.refusal) if self.refusal is not None else None,
            self.refused_first,
        )
