"""What a turn said besides its tool calls: text (with its citations), reasoning, usage and the results of the
provider's own tools, accumulated from the decoders' :class:`~fsm.events.TextDelta`,
:class:`~fsm.events.ReasoningDelta`, :class:`~fsm.events.UsageReport` and :class:`~fsm.events.ServerResultBlock`.

Kept apart from the engine on purpose: none of it bears on a call's identity or arguments, so the slot machine never
sees it and the tool-call path pays nothing for it.

Where the wire's thought and text parts go back apart, in their places among the calls (Gemini: a signature must go back
on the part it came on), the facade gives :meth:`TurnContent.place_by` the count of calls opened so far: each new
reasoning block and text part then takes the next place in the turn, counted over those parts and the calls
(:attr:`fsm.results.TextPart.place`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fsm.content_parts import COMPACT_CHARS, Block, Part, compact, compact_parts, resigned, signs_apart
from fsm.errors import LimitExceeded
from fsm.events import (
    CompactionBlock,
    ContainerReport,
    HeldPiece,
    ProviderFields,
    ReasoningDelta,
    ServerResultBlock,
    TextDelta,
    TurnEvent,
    UsageReport,
    chars_held,
)
from fsm.jsontext import mend_surrogates
from fsm.results import Compaction, ContentDelta, Output, Reasoning, ServerToolResult, TextPart

if TYPE_CHECKING:
    from fsm.engine.ledger import Ledger

_SURROGATE = re.compile("[\ud800-\udfff]").search  # asked of text that is not ASCII (isascii() costs nothing)

_Frozen = tuple[
    str, tuple[Reasoning, ...], tuple[TextPart, ...], str | None, tuple[ServerToolResult, ...], tuple[Compaction, ...]
]

BLOCK_CHARS = 64
"""What a reasoning block or text part counts as it opens: its object holds about 240 bytes, so a stream
of empty blocks is bounded as their text would be (at one it held some 240 bytes a counted character)."""


class TurnContent:
    """The accumulator the facade keeps beside the engine. Made for every stream, and most streams carry little or no
    text or reasoning: each container is made by the first piece that needs it, and the fields start as class defaults
    but those the close reads of every stream, which ``__init__`` writes.
    """

    text_signature: str | None = None
    text_output_index: int | None = None
    usage: dict[str, Any] | None = None
    container: dict[str, Any] | None = None
    provider_fields: dict[str, Any] | None = None
    _text: list[str] | None = None
    _refusal: list[str] | None = None
    _blocks: dict[int | str, Block] | None = None
    _latest: int | str | None = None
    _anonymous = 0
    _renamed: dict[Any, int | str | None] | None = None  # a wire index's latest block; (index, item id)'s: _apart
    _parts: dict[int, Part] | None = None
    _server_results: list[ServerToolResult] | None = None
    _compactions: dict[int | None, Compaction] | None = None
    _pieces: dict[tuple[bool, int | None], int] | None = None  # a held part (see HeldPiece): what its pieces counted
    _calls: Callable[[], int] | None = None  # set by place_by: the calls opened so far
    heard: Callable[[Output], None] | None = None  # Reassembler(content_deltas=True): the ledger's emit
    ledger: Ledger | None = None  # the engine's, set by the facade: where text-is-unicode's diagnostics go
    _high: dict[Any, tuple[str, int | None, int | None, int | None]] | None = None  # see _unicode, settle
    _placed = 0  # reasoning blocks and text parts given a place so far
    held = 0  # characters of the turn's content taken in (each piece as it came): see take()
    max_held = 16 * 1024 * 1024  # Limits.max_content_chars, set by the facade
    check_at = COMPACT_CHARS  # past it, take() asks more than a count: the limit, or the next compaction
    _text_joined = _refusal_joined = 0  # see content_parts.compact

    def __init__(self, ledger: Ledger | None = None, max_held: int | None = None) -> None:
        """``ledger``: the engine's, where text-is-unicode's diagnostics go; ``max_held``: the
        characters the turn's content may hold (Limits.max_content_chars; None: the default)."""
        self.ledger = ledger
        if max_held is not None:
            self.max_held, self.check_at = max_held, min(max_held, COMPACT_CHARS)
        # What close() reads of every stream (frozen(), settle() and the result's fields), written
        # here though most streams never change it: a class default read through the instance is
        # an unspecialised load in Python 3.11 (some 200 instructions), the store some 80.
        self._text = self._refusal = self._blocks = self._parts = self._server_results = self._compactions = None
        self._high = self.text_signature = self.text_output_index = self.usage = None
        self.container = self.provider_fields = None
        self.heard, self.held = None, 0  # (read by every piece of text: the same)

    def place_by(self, calls: Callable[[], int]) -> None:
        """Give each new reasoning block and text part its place in the turn: the calls opened so far
        (``calls()``) and the blocks and parts before it. Asked by wires whose parts go back apart."""
        self._calls = calls

    def _place(self) -> int | None:
        if self._calls is None:
            return None
        self._placed += 1
        return self._calls() + self._placed - 1

    def apply(self, event: TurnEvent) -> None:
        if type(event) is TextDelta:
            text = event.text
            if text:
                self.take(len(text))
            if event.signature or event.item_id or event.status or event.phase or event.citation is not None:
                self.take(chars_held((event.signature, event.item_id, event.status, event.phase, event.citation)))
            if text and (self._high is not None or (not text.isascii() and _SURROGATE(text))):
                text = self._unicode("refusal" if event.refusal else "text", text, event.part, event.output_index)
            if event.refusal:
                if self.heard is not None and text:
                    self.heard(ContentDelta("refusal", text))
                refused = self._refusal = self._refusal or []
                refused.append(text)
                if event.part is not None:  # a Responses message's refusal part: it goes back in that message
                    self._part(event.part, event.output_index).refused(text)
                return
            # A piece only naming its message item (id, status) or citing: no text, so not where the text goes back.
            if text or (
                event.item_id is None and event.status is None and event.phase is None and event.citation is None
            ):
                said = self._text = self._text or []
                said.append(text)
                if self.heard is not None and text:
                    self.heard(ContentDelta("text", text))
                if event.signature:
                    self.text_signature = event.signature
                if self.text_output_index is None:
                    self.text_output_index = event.output_index  # the first message: the text goes back there
            if event.part is not None:
                self._part(event.part, event.output_index).add(event, text)
        elif type(event) is ReasoningDelta:
            text = event.text
            if text:
                self.take(len(text))
            if event.signature or event.redacted or event.item_id or event.summary or event.encrypted_content:
                beside = (event.signature, event.redacted, event.item_id, event.summary, event.encrypted_content)
                counted = self._pieces.pop((True, event.block), 0) if self._pieces else 0
                self.take(max(0, chars_held(beside) - counted))  # what its pieces were not counted for
            if text and (self._high is not None or (not text.isascii() and _SURROGATE(text))):
                text = self._unicode(("reasoning", event.block), text, None, event.output_index)
            block = self._block(event.block, text, event)
            block = self._apart(event.block, block, event.item_id) if signs_apart(block, event) else block
            resigned(block, event, self.ledger)  # another signature for the block's item: said as it replaces
            if event.format is not None and event.format != block.format:  # OpenRouter sends it with each piece
                self.take(len(event.format))
            block.add(event, text, self.heard)
        elif type(event) is UsageReport:
            if event.cumulative and self.usage is not None:
                self.take(chars_held(event.usage))  # kept beside what came before (a replacement is not)
                self.usage = {**self.usage, **event.usage}
            else:
                self.usage = dict(event.usage)
        elif type(event) is ServerResultBlock:
            counted = self._pieces.pop((False, event.output_index), 0) if self._pieces else 0
            self.take(max(0, chars_held(event.block) - counted))  # what its pieces were not counted for
            self._server_results = self._server_results or []
            # A wire whose parts are placed (Gemini's code results) gives it no index: its place is its index.
            at = event.output_index if event.output_index is not None else self._place()
            self._server_results.append(ServerToolResult(event.block, at))
        elif type(event) is HeldPiece:
            if event.chars > 0:
                self.take(event.chars)
                pieces = self._pieces = self._pieces or {}
                key = (event.reasoning, event.place)
                pieces[key] = pieces.get(key, 0) + event.chars
        elif type(event) is ContainerReport:
            self.container = dict(event.container)  # the latest word (a message_delta's, after the start's)
        elif type(event) is ProviderFields:
            self.take(chars_held(event.fields))
            self.provider_fields = {**(self.provider_fields or {}), **event.fields}
        elif type(event) is CompactionBlock:
            self.take(chars_held(event.block))
            compactions = self._compactions = self._compactions or {}
            # by place: a delta's block replaces its start's; one without a place, the latest such
            compactions[event.output_index] = Compaction(dict(event.block), event.output_index)

    def said(self, text: str, reasoning: str) -> None:
        """What ``apply(TextDelta(text))`` then ``apply(ReasoningDelta(None, reasoning))`` do (each text not empty),
        without the events: hundreds a turn (test_plain_text_and_reasoning_are_kept_as_their_events_keep_them)."""
        self.held += len(text) + len(reasoning)  # take(), in line: the commonest pieces of all
        if self.held > self.check_at:
            self.take(0, len(text) + len(reasoning))
        if self._high is not None or (not (text.isascii() and reasoning.isascii()) and _SURROGATE(text + reasoning)):
            text = self._unicode("text", text) if text else text
            reasoning = self._unicode(("reasoning", None), reasoning) if reasoning else reasoning
        if text:
            if self._text is None:
                self._text = [text]
            else:
                self._text.append(text)
        block = self._block(None, reasoning) if reasoning else None
        if block is not None:
            block.text.append(reasoning)
        heard = self.heard
        if heard is not None:
            if text:
                heard(ContentDelta("text", text))
            if block is not None:
                heard(ContentDelta("reasoning", reasoning, block.at))

    def said_in_part(self, text: str, part: int, output_index: int | None) -> None:
        """What ``apply(TextDelta(text, output_index=output_index, part=part))`` does with ``text``
        (not empty), without the event: a text delta alone, the commonest event of most turns on
        the wires whose text goes back in parts (a decoder's ``commonest_said``)."""
        self.held += len(text)  # take(), in line
        if self.held > self.check_at:
            self.take(0, len(text))
        if self._high is not None or (not text.isascii() and _SURROGATE(text)):
            text = self._unicode("text", text, part, output_index)
            if not text:
                return
        if self._text is None:
            self._text = [text]
        else:
            self._text.append(text)
        if self.heard is not None:
            self.heard(ContentDelta("text", text))
        if self.text_output_index is None:
            self.text_output_index = output_index
        found = self._parts.get(part) if self._parts is not None else None
        if found is None:
            found = self._part(part, output_index)
        found.text.append(text)

    def reasoned(self, block: int | None, text: str, output_index: int | None) -> None:
        """What ``apply(ReasoningDelta(block, text, output_index=output_index))`` does, without the
        event: a piece of reasoning alone (a decoder's ``commonest_said``)."""
        self.held += len(text)  # take(), in line
        if self.held > self.check_at:
            self.take(0, len(text))
        if text and (self._high is not None or (not text.isascii() and _SURROGATE(text))):
            text = self._unicode(("reasoning", block), text, None, output_index)
        found = self._block(block, text)
        if text:
            found.text.append(text)
            if self.heard is not None:
                self.heard(ContentDelta("reasoning", text, found.at))
        if output_index is not None:
            found.output_index = output_index

    def usage_replaced(self, usage: dict[str, Any]) -> None:
        """What ``apply(UsageReport(usage))`` does (a report that replaces), without the event."""
        self.usage = dict(usage)

    def _block(self, wire_key: int | None, text: str = "", piece: ReasoningDelta | None = None) -> Block:
        if self._high is not None:  # another block's half pair has no partner: its U+FFFD goes before
            self.settle(("reasoning", wire_key))
        blocks = self._blocks = self._blocks if self._blocks is not None else {}
        key: int | str | None = wire_key if self._renamed is None else self._renamed.get(wire_key, wire_key)
        if key is None:
            if self._latest is not None and not blocks[self._latest].ended_by(text, piece):
                return blocks[self._latest]
            self._anonymous += 1
            key = f"#{self._anonymous}"  # a key of its own, which no provider's block index or item id can equal
        block = blocks.get(key)
        if block is None:
            self.take(BLOCK_CHARS)  # a block holds its own fields, though it be given no text
            block = blocks[key] = Block(len(blocks))
            block.place = self._place()
        self._latest = key
        return block

    def _apart(self, wire_key: int | None, latest: Block, item_id: str | None) -> Block:
        """Policy signatures-kept-apart: ``item_id``'s block at ``wire_key`` (a resend goes there), or a new one."""
        renamed = self._renamed = self._renamed if self._renamed is not None else {}
        renamed.setdefault((wire_key, latest.item_id), self._latest)  # the tuples: each item's block under the index
        known, blocks = renamed.get((wire_key, item_id)), self._blocks or {}
        if known is None or blocks[known].item_id != item_id:  # (or a later piece named its block another item)
            self._anonymous += 1
            known = renamed[wire_key] = renamed[(wire_key, item_id)] = f"#{self._anonymous}"
        return blocks[known] if known in blocks else self._block(wire_key)

    def _part(self, key: int, output_index: int | None) -> Part:
        parts = self._parts = self._parts if self._parts is not None else {}
        part = parts.get(key)
        if part is None:
            self.take(BLOCK_CHARS)  # a part holds its own fields, though it be given no text
            part = parts[key] = Part(self._place(), output_index)
        return part

    def take(self, chars: int, counted: int = 0) -> None:
        """Count ``chars`` more characters taken in (beyond the ``counted`` a caller added in line), or raise
        LimitExceeded: the piece is not taken in, nor counted. What is counted: the text, reasoning and refusal; the
        strings beside them (signatures, item ids, summaries, citations); the server tool results, compaction blocks and
        usage kept beside earlier usage (each string, one for every other value); BLOCK_CHARS a block and text part."""
        self.held += chars
        if self.held > self.check_at:
            if self.held > self.max_held:
                self.held -= chars + counted
                said = f"the turn's content beside its calls holds more than {self.max_held} characters"
                raise LimitExceeded(said, event=self.ledger.event if self.ledger else None, rule="limits")
            # Small pieces cost more than their characters until joined: compacted as the count grows
            # (the hot paths pay nothing more), each list at most once per BLOCK_CHARS it counts.
            self._text_joined = compact(self._text, self._text_joined)
            self._refusal_joined = compact(self._refusal, self._refusal_joined)
            lists = 2 + compact_parts(self._blocks, self._parts)
            self.check_at = min(self.max_held, self.held + max(COMPACT_CHARS, BLOCK_CHARS * lists))

    # -- Unicode (rule text-is-unicode) -----------------------------------------------------------

    def _unicode(self, kind: Any, text: str, part: int | None = None, output_index: int | None = None) -> str:
        """``text`` as Unicode a request can carry (rule text-is-unicode): the high surrogate held from ``kind``'s last
        piece joined with a low one that starts this one, pairs sent as two code points joined, any other surrogate
        U+FFFD (literal text: an escape would be characters of its own). A high surrogate ending the piece waits for the
        next of its kind (a server slicing by UTF-16 unit splits a pair), with the part, output index and event."""
        held = self._high
        if held is not None and kind in held:
            half = held.pop(kind)
            if not held:
                self._high = None
            if half[1] == part and half[2] == output_index:
                text = half[0] + text
            else:  # no pair spans two parts (policy surrogate-half-ends-its-part): U+FFFD ends its own
                self._lone(kind, half, None)
        if "\ud800" <= text[-1] <= "\udbff":
            if self._high is None:
                self._high = {}
            self._high[kind] = (text[-1], part, output_index, self.ledger.event if self.ledger else None)
            text = text[:-1]
        mended, pairs, lone = mend_surrogates(text, json_text=False)
        self._surrogates(kind, pairs, lone)
        return mended

    def _surrogates(self, kind: Any, pairs: int, lone: int) -> None:
        if self.ledger is None:
            return
        said = kind if isinstance(kind, str) else "reasoning"
        if pairs:
            self.ledger.diagnose(
                "surrogate-pair-joined", f"the turn's {said}: {pairs} UTF-16 surrogate pair(s) sent as halves, joined"
            )
        if lone:
            self.ledger.diagnose("lone-surrogate", f"the turn's {said}: {lone} surrogate(s) with no partner, as U+FFFD")

    def settle(self, going_on: Any = None) -> None:
        """The turn ended, or a piece of reasoning block ``going_on`` came, cutting any other block's pair: a high
        surrogate still waiting for its low one has none (U+FFFD, ``heard`` too), told at the event that sent it."""
        if self._high is None:  # nothing waits (every stream's close, nearly): no dicts made to say so
            return
        held, self._high = self._high, None
        kept = {k: v for k, v in held.items() if isinstance(k, str) or k == going_on} if going_on else {}
        for kind, half in [(k, v) for k, v in held.items() if k not in kept]:
            self._lone(kind, half, None if going_on else half[3])  # (mid-stream: at the event that cut it)
        self._high = kept or None  # the text's and the refusal's wait on, and this block's

    def _lone(self, kind: Any, half: tuple[str, int | None, int | None, int | None], event: int | None) -> None:
        """The held high surrogate ``half`` of ``kind`` has no low one: U+FFFD where it was, told at ``event``
        (None: the event being read)."""
        _, part, output_index, _ = half
        self.held -= 1  # the half was taken in as it came: its U+FFFD stands in its place
        if self.ledger is not None and event is not None:
            self.ledger.event = event
        self._surrogates(kind, 0, 1)
        if kind == "text" or kind == "refusal":
            self.apply(TextDelta("\ufffd", output_index=output_index, part=part, refusal=kind == "refusal"))
        else:
            self.apply(ReasoningDelta(kind[1], "\ufffd", output_index=output_index))

    def frozen(self) -> _Frozen:
        """What the result holds of the turn's content, as the properties below give it (``text``, ``reasoning``,
        ``text_parts``, ``refusal``, ``server_results``, ``compactions``), in one call: close() asks once a stream."""
        text, blocks, parts, refusal = self._text, self._blocks, self._parts, self._refusal
        return (
            "".join(text) if text is not None else "",
            tuple([block.freeze() for block in blocks.values()]) if blocks else (),
            tuple([part.freeze() for part in parts.values()]) if parts else (),
            "".join(refusal) if refusal is not None else None,
            tuple(self._server_results) if self._server_results else (),
            tuple(self._compactions.values()) if self._compactions else (),
        )

    @property
    def text_parts(self) -> tuple[TextPart, ...]:
        return tuple([part.freeze() for part in self._parts.values()]) if self._parts else ()

    @property
    def text(self) -> str:
        return "".join(self._text) if self._text is not None else ""

    @property
    def server_results(self) -> tuple[ServerToolResult, ...]:
        return tuple(self._server_results) if self._server_results else ()

    @property
    def compactions(self) -> tuple[Compaction, ...]:
        return tuple(self._compactions.values()) if self._compactions else ()

    @property
    def refusal(self) -> str | None:
        return "".join(self._refusal) if self._refusal is not None else None

    @property
    def reasoning(self) -> tuple[Reasoning, ...]:
        return tuple([block.freeze() for block in self._blocks.values()]) if self._blocks else ()
