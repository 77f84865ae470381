"""The reasoning of a re-emitted chat stream block by block, with what each block must go back with
(``DeltaEmitter(reasoning_blocks=...)``), in one of the two chat dialects that stream it:

* ``"thinking_blocks"``, as LiteLLM streams Claude's reasoning: each piece of a block's text a
  ``{"type": "thinking", "thinking": piece}`` entry, its signature an entry of its own
  ``{"type": "thinking", "thinking": "", "signature": ...}`` after its text, a redacted block one
  ``{"type": "redacted_thinking", "data": ...}`` entry, beside ``reasoning_content`` saying the
  same text. LiteLLM's entries carry no ``index``; these carry the block's (its position in
  ``Result.reasoning``), as toolcall-fsm's chat decoder and LangChain's conversion read it: without
  one, two blocks of a turn (Claude's interleaved thinking, a block each side of a call) are one.
* ``"reasoning_details"``, as OpenRouter streams it: each piece a ``reasoning.text`` entry (or
  ``reasoning.summary``, for a block read from one) under the block's ``index``, naming the block's
  ``format`` where it is known, the signature in a later entry of its own with empty text, and what
  is encrypted or redacted a ``reasoning.encrypted`` entry holding it in ``data`` (with a Responses
  item's ``id``), beside ``reasoning`` saying the same text. A redacted block (Claude's) names the
  format ``anthropic-claude-v1`` and a Responses item ``openai-responses-v1``, as OpenRouter's do,
  where the block named none.

Policy reasoning-format-by-source: every entry of a block names the format OpenRouter names for
the block's source, where the block named none and the source is known
(``DeltaEmitter(source=...)``, the provider the outputs were read from): ``anthropic-claude-v1``
for Anthropic's, and for Bedrock Converse's where the emitter's ``model`` names a Claude (Bedrock
streams DeepSeek's, gpt-oss's and Nova's reasoning too, and the stream does not say whose);
``google-gemini-v1`` for Gemini's; ``openai-responses-v1`` for a Responses item's. OpenRouter's
recorded streams name them so on every entry (``reasoning.text`` pieces of Claude's through
Anthropic and through Amazon Bedrock, of Gemini's), and its docs list no other format for these
sources; another source's entries name none (a chat source's blocks keep the format they came
with). Read back, a block keeps its text, signature and data, and takes the format named.

Policy gemini-signature-encrypted: a block's signature goes out as a ``reasoning.encrypted`` entry
holding it in ``data`` (with the ``id`` it came with), where the block is of Gemini's format (its
own, or its source's): OpenRouter sends a Gemini thought signature so (charmbracelet/fantasy's
recorded streams of Gemini 3 through OpenRouter: the text a ``reasoning.text`` entry, the signature a
``reasoning.encrypted`` one of the same index, a call's naming the call's id), and the chat decoder
reads such an entry back as the block's signature; an id such a block learns after its signature
goes out alone, on an empty ``reasoning.text`` entry (a resend of the signature naming it reads back
as another item's where the block named one before: policy signatures-kept-apart). Any other block's
signature goes out on a text entry of its own, empty, as OpenRouter sends Claude's; encrypted content a
Gemini block holds (read from an entry that named no format) goes out naming none, so that it reads
back as what it was.

A signature, data, id or format holding a lone surrogate goes out as its ``\\udXXX`` escape (policy
emitted-lone-surrogate: no chunk holding one can be written as UTF-8); the text holds none (the
engine mends it). Each piece goes out as it comes, in a chunk of its own (never held behind a call, never retracted):
a signature or encrypted data as soon as the reassembler reports it (:class:`fsm.ReasoningData`),
which is after the block's text on every wire that streams both. Fed back to toolcall-fsm's chat
decoder, the stream gives each block its text, signature and encrypted or redacted data, in order.

Each block's entries go out under the ``index`` it first went out as, from 0: the block's place in
``Result.reasoning``, but for the entries of Gemini calls' signatures (policy
gemini-call-signature-as-openrouter, :mod:`fsm.reemit_signatures`), which take an index of their own
between, so that no two blocks share one read back. Policy reasoning-blocks-in-order: a reader puts a
block where its index first came, so a block's first entry goes out after an empty one (a ``thinking``
entry of no text, a ``reasoning.text`` entry of none) for each block before it that was told nothing yet
(none of its text, nor its data: one whose data the dialect had no field for goes out not at all), under
that block's index, and ``finish()`` sends one for each block that was told nothing: a block that
opened empty and said something only after a later block did (a proxy's interleaving of Claude's
blocks), or said nothing at all, reads back in its place (audit 102).

What a dialect has no field for is not sent, and listed instead (``DeltaEmitter.unsent_reasoning``,
policy reasoning-block-unsent): under ``thinking_blocks``, a Responses reasoning item's id, summary
and encrypted content and an OpenRouter ``reasoning.encrypted`` entry's data (its text, if any,
goes out as a thinking block, unsigned; a block with no text goes out not at all); a summary goes
out under ``reasoning_details`` as ``reasoning.summary`` entries of its block, which the chat
decoder reads as the block's text (policy reasoning-summary-as-text: the chat dialects have no
block that holds a summary apart).

Policy connector-text-unsent: a Claude ``connector_text`` block (a connector's text, signed as
thinking is, kept in ``Result.server_tool_results``) goes out in no chunk, whatever the dialect: no
chat field holds it, and the reassembler gives no output of it while the stream runs, so it has no
place among the chunks. ``finish()`` lists each (``DeltaEmitter.unsent_blocks``), so that a gateway
learns its client cannot send the turn back as it came."""

from __future__ import annotations

from typing import Any, Final, Literal

from fsm.errors import InvalidOption, shown
from fsm.reemit_signatures import sendable
from fsm.results import ContentDelta, ReasoningData, Result
from fsm.wire.decoders import PROVIDERS
from fsm.wire.decoders.chat_reasoning import GEMINI_FORMAT

ReasoningBlocks = Literal["thinking_blocks", "reasoning_details"]
REASONING_BLOCKS: Final[tuple[ReasoningBlocks, ...]] = ("thinking_blocks", "reasoning_details")
"""The dialects ``DeltaEmitter(reasoning_blocks=...)`` takes, each named by the delta field it fills."""

PLAIN_FIELD: Final = {"thinking_blocks": "reasoning_content", "reasoning_details": "reasoning"}
"""The plain text field each dialect's servers send beside the blocks, saying the same text."""

_TEXT_KEYS: Final = {"reasoning.text": "text", "reasoning.summary": "summary"}
_CLAUDE, _RESPONSES = "anthropic-claude-v1", "openai-responses-v1"
SOURCE_FORMATS: Final = {"anthropic": _CLAUDE, "gemini": GEMINI_FORMAT, "openai-responses": _RESPONSES}
"""The ``format`` OpenRouter names for a block of each source's (policy reasoning-format-by-source);
Bedrock's is Claude's only for a Claude model (:func:`source_format`)."""


def source_format(source: str | None, model: str) -> str | None:
    """The format the blocks of ``source`` (a provider's name, as ``Reassembler`` takes it) name, where
    they name none of their own; ``model`` is the emitter's (a Bedrock model id names its maker)."""
    if source is not None and source not in PROVIDERS:  # a misspelt one would name no format, silently
        raise InvalidOption(f"source must be None or one of {list(PROVIDERS)}, not {shown(source)}")
    if source == "bedrock":
        return _CLAUDE if "claude" in model.lower() else None
    return SOURCE_FORMATS.get(source) if source is not None else None


class BlockEmitter:
    """One stream's reasoning in one dialect: the delta of each piece, and what went out of each
    block's data (a :class:`ReasoningData` repeats every field; only what changed goes out)."""

    _calls = 0  # the calls' signatures sent as entries of their own (call_signed)

    def __init__(self, dialect: ReasoningBlocks, source_format: str | None = None) -> None:
        self.dialect = dialect
        self._format = source_format  # what a block names where it names none (reasoning-format-by-source)
        self._sent: dict[int, ReasoningData] = {}  # each block's data as last given
        self._out: dict[int, int] = {}  # each block's index as it goes out: its first, counted with the calls' entries
        self.unsent: list[str] = []
        self._unsendable: set[int] = set()  # the blocks of which something went unsent (reasoning-block-unsent)

    def index(self, block: int) -> int:
        """The ``index`` ``block``'s entries go out under: numbered as they first go out, from 0, with the
        entries of the calls' signatures (policy gemini-call-signature-as-openrouter), so none shares another's."""
        out = self._out.get(block)
        if out is None:
            out = self._out[block] = self._taken()
        return out

    def _placed(self, block: int | None) -> list[dict[str, Any]]:
        """Before ``block``'s first entry: an empty entry for each block before it that sent nothing yet,
        under its index (policy reasoning-blocks-in-order: read back, a block is where its index first came)."""
        if block is None or block in self._out:
            return []
        return [self._empty(before) for before in range(block) if self._unheard(before)]

    def unsaid(self, delta: dict[str, Any], blocks: int) -> None:
        """Put on ``delta`` (the last chunk's) an empty entry for each of the turn's ``blocks`` that never sent one."""
        held = [self._empty(block) for block in range(blocks) if self._unheard(block)]
        if held:
            delta[self.dialect] = held

    def _unheard(self, block: int) -> bool:
        """Whether nothing of ``block`` went out, nor was told that the dialect has no field for (such a block
        goes out as nothing at all, policy reasoning-block-unsent): it opened empty, and may stay so."""
        return block not in self._out and block not in self._unsendable

    def _empty(self, block: int) -> dict[str, Any]:
        """An entry of ``block`` that says nothing but that it is there (its place among the blocks)."""
        if self.dialect == "thinking_blocks":
            return {"type": "thinking", "thinking": "", "index": self.index(block)}
        entry: dict[str, Any] = {"type": "reasoning.text", "text": ""}
        if self._format is not None:
            entry["format"] = sendable(self._format)
        return entry | {"index": self.index(block)}

    def _taken(self) -> int:
        """The indexes gone out so far (blocks' and calls' signatures'): the next one's."""
        return len(self._out) + self._calls

    def call_signed(self, call_id: str, signature: str) -> dict[str, Any]:
        """The delta of a Gemini call's thought signature, as OpenRouter sends Gemini 3's (policy
        gemini-call-signature-as-openrouter): a ``reasoning.encrypted`` entry holding it in ``data``, naming the
        call's id, under an index of its own (read back, a block of its own, which policy gemini-signature-by-call-id
        puts back on the call's part)."""
        entry: dict[str, Any] = {"type": "reasoning.encrypted", "data": sendable(signature), "id": sendable(call_id)}
        entry |= {"format": GEMINI_FORMAT, "index": self._taken()}
        self._calls += 1
        return {self.dialect: [entry]}

    def said(self, piece: ContentDelta) -> dict[str, Any]:
        """The delta of a piece of a block's text."""
        known = self._sent.get(piece.block) if piece.block is not None else None
        if self.dialect == "thinking_blocks":
            entry: dict[str, Any] = {"type": "thinking", "thinking": piece.text}
        else:
            kind = known.detail if known is not None and known.detail in _TEXT_KEYS else "reasoning.text"
            entry = {"type": kind, _TEXT_KEYS[kind]: piece.text}
            fmt = known.format if known is not None and known.format is not None else self._format
            if fmt is not None:
                entry["format"] = sendable(fmt)
        held = self._placed(piece.block)
        if piece.block is not None:  # (a ContentDelta built by hand may name none: the latest block, read back)
            entry["index"] = self.index(piece.block)
        return {PLAIN_FIELD[self.dialect]: piece.text, self.dialect: [*held, entry]}

    def kept(self, data: ReasoningData) -> dict[str, Any] | None:
        """The delta of what ``data`` changed of its block, or None when nothing of it goes out."""
        before = self._sent.get(data.block) or ReasoningData(data.block)
        self._sent[data.block] = data
        changed = {
            name
            for name in ("signature", "redacted", "item_id", "summary", "encrypted_content")
            if getattr(data, name) != getattr(before, name) and getattr(data, name)
        }
        if not changed:
            return None
        held = self._placed(data.block)  # (first: the entries below take the block's index after theirs)
        entries = self._thinking(data, changed) if self.dialect == "thinking_blocks" else self._details(data, changed)
        if held and not entries:  # its index is taken now: it holds its place too
            entries = [self._empty(data.block)]
        return {self.dialect: [*held, *entries]} if entries else None

    def _thinking(self, data: ReasoningData, changed: set[str]) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = []
        if "signature" in changed:
            signed = sendable(data.signature)
            entries.append({"type": "thinking", "thinking": "", "signature": signed, "index": self.index(data.block)})
        if "redacted" in changed:
            entries.append(
                {"type": "redacted_thinking", "data": sendable(data.redacted), "index": self.index(data.block)}
            )
        unsent = sorted(changed - {"signature", "redacted"})
        if unsent:  # policy reasoning-block-unsent: no thinking block holds them
            self._unsendable.add(data.block)
            self.unsent.append(f"reasoning block {data.block}: its {', '.join(unsent)} (thinking_blocks has no field)")
        return entries

    def _details(self, data: ReasoningData, changed: set[str]) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = []
        kind = data.detail if data.detail in _TEXT_KEYS else "reasoning.text"
        if "summary" in changed:  # policy reasoning-summary-as-text
            entries += [
                self._entry(data, "reasoning.summary", _RESPONSES, summary=sendable(said))
                for said in data.summary
                if said
            ]
        gemini = (data.format or self._format) == GEMINI_FORMAT
        if "signature" in changed and gemini:  # policy gemini-signature-encrypted: with the id OpenRouter gave it
            held = {"data": sendable(data.signature), **({"id": sendable(data.item_id)} if data.item_id else {})}
            entries.append(self._entry(data, "reasoning.encrypted", **held))
        elif "signature" in changed:
            entries.append(self._entry(data, kind, **{_TEXT_KEYS[kind]: "", "signature": sendable(data.signature)}))
        elif "item_id" in changed and gemini and data.signature:  # an id told after the signature
            entries.append(self._entry(data, "reasoning.text", text="", id=sendable(data.item_id)))
        if "redacted" in changed:
            entries.append(self._entry(data, "reasoning.encrypted", _CLAUDE, data=sendable(data.redacted)))
        if changed & ({"encrypted_content"} if gemini and data.signature else {"encrypted_content", "item_id"}):
            held = {"data": sendable(data.encrypted_content or "")}
            if data.item_id is not None:
                held["id"] = sendable(data.item_id)
            entry = self._entry(data, "reasoning.encrypted", _RESPONSES, **held)
            if gemini:  # it came in an entry of no Gemini format: under Gemini's it would read back as the signature
                del entry["format"]
            entries.append(entry)
        return entries

    def _entry(self, of: ReasoningData, kind: str, usual: str | None = None, **fields: Any) -> dict[str, Any]:
        """An entry of ``of``'s block; its format the block's, else its source's, else the one such an
        entry usually has."""
        entry = {"type": kind, **fields}
        fmt = of.format or self._format or usual
        if fmt is not None:
            entry["format"] = sendable(fmt)
        entry["index"] = self.index(of.block)
        return entry


def unsent_blocks(result: Result) -> list[str]:
    """The blocks of ``result`` no chunk carries, one line each (policy connector-text-unsent)."""
    return [
        f"connector_text block at content block {kept.output_index}: no chat chunk carries it (its text and signature)"
        for kept in result.server_tool_results
        if kept.block.get("type") == "connector_text"
    ]
