"""A chat delta's reasoning as the blocks the model gave it, with what its provider wants back,
where a server in front of the provider streams them: LiteLLM's ``thinking_blocks`` (Claude's
signed and redacted thinking) and OpenRouter's ``reasoning_details``. Each is read in the stead of
the delta's plain ``reasoning_content`` or ``reasoning``, which say the same text without the rest:
read alone, they drop the signatures, and a Claude turn of calls sent back without them is refused.

OpenRouter streams each block in pieces under one ``index``: the text (or a summary's text) a piece
at a time, the signature in a later piece of its own; every piece names its ``type`` and ``format``
(a Claude block's ``signature``, an OpenAI reasoning item's encrypted ``data``). OpenRouter's docs
ask for the blocks back, as they came, on tool-calling turns. A ``reasoning.encrypted`` entry of
Claude's format is a redacted thinking block: its data is read as redacted data, which goes back to
Claude as the ``redacted_thinking`` block it was (and to OpenRouter as the entry it came as); one of
Gemini's holds a thought signature, read as its block's signature (policy gemini-signature-encrypted),
which goes back to OpenRouter as the entry it came as.

LiteLLM's ``reasoning_items`` (its chat stream served from the Responses API) are the Responses
reasoning items themselves, read beside the rest: :func:`reasoning_items`.

LiteLLM's ``thinking_blocks`` carry Claude's signatures and Gemini's in one shape; its Gemini route
alone writes ``provider_specific_fields.thought_signatures`` beside them (every ``thoughtSignature`` of
the parts it read the blocks from), so a block whose signature that list holds is Gemini's, and its
block names Gemini's format, as OpenRouter's entries do (policy litellm-gemini-signature)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fsm.events import ReasoningDelta

TEXT_FIELDS = {"reasoning.text": "text", "reasoning.summary": "summary", "reasoning.encrypted": "data"}
"""Each type of entry, and the field that holds its piece of text (the encrypted entry's opaque data)."""

CLAUDE_FORMAT = "anthropic-claude-v1"
"""The ``format`` of an entry of Claude's: its ``reasoning.encrypted`` entry is a redacted thinking block."""
GEMINI_FORMAT = "google-gemini-v1"
"""The ``format`` of an entry of Gemini's: its ``reasoning.encrypted`` entry holds a thought signature
(policy gemini-signature-encrypted)."""

LITELLM_FIELDS = "provider_specific_fields"
"""The key of a LiteLLM delta under which it keeps what the OpenAI chat shape has no field for."""

_KNOWN_KEYS = frozenset({"type", "text", "summary", "data", "signature", "format", "index", "id"})


def thinking_blocks(value: Any, delta: Mapping[str, Any] | None = None) -> list[ReasoningDelta] | None:
    """LiteLLM's ``thinking_blocks`` (in its chunks and its proxy's stream): a Claude turn's reasoning
    blocks, ``{type: thinking, thinking, signature}`` or ``{type: redacted_thinking, data}``, each
    under an ``index`` of its own. Its ``reasoning_content`` joins every block's text and drops the
    signatures Anthropic wants back, so these are read instead. None when there are none, or when
    any entry is no such block (``reasoning_content`` is read then).

    ``delta``: the delta that holds them. A block whose signature its LiteLLM fields'
    ``thought_signatures`` lists is a Gemini thought's (policy litellm-gemini-signature): LiteLLM
    writes that list in its Gemini route alone, from the parts it read the blocks from (a response
    it streams whole, as its fake streams do; a streamed Gemini turn gives no blocks).
    Any other block names no maker: Claude's route tells none."""
    if type(value) is not list or not value:
        return None
    told = _gemini_signatures(delta.get(LITELLM_FIELDS) if delta is not None else None)
    pieces = []
    for block in value:
        if not isinstance(block, Mapping) or block.get("type") not in ("thinking", "redacted_thinking"):
            return None
        key, said = block.get("index"), block.get("thinking")
        signature, data = block.get("signature"), block.get("data")
        signature = signature if type(signature) is str and signature else None
        pieces.append(
            ReasoningDelta(
                key if type(key) is int else None,
                said if type(said) is str else "",
                signature,
                data if type(data) is str and data else None,
                format=GEMINI_FORMAT if signature in told else None,
            )
        )
    return pieces


def _gemini_signatures(fields: Any) -> frozenset[str]:
    """The signatures a LiteLLM delta's ``provider_specific_fields.thought_signatures`` lists (its
    Gemini route's; policy litellm-gemini-signature): empty where it lists none, or is no list."""
    listed = fields.get("thought_signatures") if isinstance(fields, Mapping) else None
    if type(listed) is not list:
        return frozenset()
    return frozenset(entry for entry in listed if type(entry) is str and entry)


def reasoning_details(value: Any) -> list[ReasoningDelta] | None:
    """The pieces of ``delta.reasoning_details``, one :class:`ReasoningDelta` each, under its
    ``index`` (the block it builds). None when there are none, or when any entry is not such a
    piece: then :func:`unreadable` says which, and the delta's ``reasoning`` is read instead."""
    if type(value) is not list or not value or unreadable(value) is not None:
        return None
    pieces = []
    for entry in value:
        detail = entry["type"]
        piece = entry.get(TEXT_FIELDS[detail])
        index, signature, item_id = entry.get("index"), entry.get("signature"), entry.get("id")
        encrypted = detail == "reasoning.encrypted"
        # Claude's redacted thinking, as OpenRouter gives it: redacted data, which goes back to Claude so
        redacted = encrypted and entry.get("format") == CLAUDE_FORMAT
        # Gemini's thought signature (a call's under the call's id): the block's signature, as a
        # Claude block's is, which goes back to Gemini on its part (policy gemini-signature-encrypted)
        signed = encrypted and entry.get("format") == GEMINI_FORMAT
        pieces.append(
            ReasoningDelta(
                index,
                "" if encrypted else piece or "",
                signature=(piece or signature or None) if signed else signature or None,
                redacted=(piece or None) if redacted else None,
                item_id=item_id or None,
                encrypted_content=(piece or None) if encrypted and not redacted and not signed else None,
                detail="reasoning.text" if signed else detail,  # its block is of text, signed
                format=entry.get("format") or None,
            )
        )
    return pieces


def unreadable(value: list[Any]) -> str | None:
    """Why the entries of ``reasoning_details`` are not read (the first entry that is no piece of
    the three types, or a field of another type than it takes), or None when every one is read."""
    for at, entry in enumerate(value):
        if type(entry) is not dict:
            return f"delta.reasoning_details[{at}] is {type(entry).__name__}, not an object"
        detail = entry.get("type")
        if type(detail) is not str or detail not in TEXT_FIELDS:
            shown = repr(detail) if type(detail) is str else f"no type ({type(detail).__name__})"
            return f"delta.reasoning_details[{at}] is of type {shown[:80]}, which is not read"
        for key, field in entry.items():
            wanted = int if key == "index" else str  # an index is the block's label (a bool is none)
            if key in _KNOWN_KEYS and field is not None and type(field) is not wanted:
                return f"delta.reasoning_details[{at}].{key} is {type(field).__name__}, not {wanted.__name__}"
            if key == "index" and field is not None and field < 0:
                return f"delta.reasoning_details[{at}].index is {field}, not an index"
    return None


def reasoning_items(value: Any) -> list[ReasoningDelta] | None:
    """LiteLLM's ``reasoning_items``: the Responses API's reasoning items, ``{type: "reasoning", id,
    encrypted_content, summary: [{type: "summary_text", text}]}``, which LiteLLM puts on the last
    chunk of a chat stream it serves from the Responses API and takes back on the assistant message
    (they win there over ``thinking_blocks``: they carry the id the API minted; an item without an id
    goes back without one). Each is a block of its own, under a key no block index can be (``-1``,
    ``-2``, ... in the list's order: the list again sets the same blocks' fields), with no text: its
    summary's text came before as ``reasoning_content``. None when :func:`item_fault` finds one
    that is no such item (the decoder reports it); [] for an empty list."""
    if item_fault(value) is not None:
        return None
    return [
        ReasoningDelta(
            -1 - at,
            "",
            item_id=item.get("id") or None,
            summary=tuple(part["text"] for part in item.get("summary") or ()),
            encrypted_content=item.get("encrypted_content") or None,
        )
        for at, item in enumerate(value)
    ]


def item_fault(value: Any) -> str | None:
    """Why ``reasoning_items`` is not read (it is no list, or an entry is no reasoning item: a field
    of another type, a summary part without its text), or None when every entry is read."""
    if type(value) is not list:
        return f"delta.reasoning_items is {type(value).__name__}, not a list"
    for at, item in enumerate(value):
        if type(item) is not dict or item.get("type") != "reasoning":
            return f"delta.reasoning_items[{at}] is no reasoning item"
        for key in ("id", "encrypted_content"):
            if item.get(key) is not None and type(item[key]) is not str:
                return f"delta.reasoning_items[{at}].{key} is {type(item[key]).__name__}, not str"
        summary = item.get("summary")
        if summary is not None and (
            type(summary) is not list
            or any(type(part) is not dict or type(part.get("text")) is not str for part in summary)
        ):
            return f"delta.reasoning_items[{at}].summary is no list of parts with text"
    return None


def items_said(delta: Mapping[str, Any], events: list[Any] | None, diagnose: Callable[[str, str], None] | None) -> bool:
    """A delta's ``reasoning_items`` read into ``events``, or, given ``diagnose``, reported when they
    are not read (``part-not-reassembled``). False when there are some and they are not read."""
    value = delta.get("reasoning_items")
    if value is None:
        return True
    why = item_fault(value)
    if why is not None and diagnose is not None:
        diagnose("part-not-reassembled", f"{why}: no reasoning item of the delta is read")
    if events is not None and why is None:
        events += reasoning_items(value) or ()
    return why is None
