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
which goes back to OpenRouter as the entry it came as."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fsm.events import ReasoningDelta

TEXT_FIELDS = {"reasoning.text": "text", "reasoning.summary": "summary", "reasoning.encrypted": "data"}
"""Each type of entry, and the field that holds its piece of text (the encrypted entry's opaque data)."""

CLAUDE_FORMAT = "anthropic-claude-v1"
"""The ``format`` of an entry of Claude's: its ``reasoning.encrypted`` entry is a redacted thinking block."""
GEMINI_FORMAT = "google-gemini-v1"
"""The ``format`` of an entry of Gemini's: its ``reasoning.encrypted`` entry holds a thought signature
(policy gemini-signature-encrypted)."""

_KNOWN_KEYS = frozenset({"type", "text", "summary", "data", "signature", "format", "index", "id"})


def thinking_blocks(value: Any) -> list[ReasoningDelta] | None:
    """LiteLLM's ``thinking_blocks`` (in its chunks and its proxy's stream): a Claude turn's reasoning
    blocks, ``{type: thinking, thinking, signature}`` or ``{type: redacted_thinking, data}``, each
    under an ``index`` of its own. Its ``reasoning_content`` joins every block's text and drops the
    signatures Anthropic wants back, so these are read instead. None when there are none, or when
    any entry is no such block (``reasoning_content`` is read then)."""
    if type(value) is not list or not value:
        return None
    pieces = []
    for block in value:
        if not isinstance(block, Mapping) or block.get("type") not in ("thinking", "redacted_thinking"):
            return None
        key, said = block.get("index"), block.get("thinking")
        signature, data = block.get("signature"), block.get("data")
        pieces.append(
            ReasoningDelta(
                key if type(key) is int else None,
                said if type(said) is str else "",
                signature if type(signature) is str and signature else None,
                data if type(data) is str and data else None,
            )
        )
    return pieces


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
