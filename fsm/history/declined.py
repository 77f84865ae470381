"""What an Anthropic history must leave out of a turn Claude's server-side fallback served: Anthropic's
refusals-and-fallback guide ("Continuing the conversation"; the anthropic SDK's
``BetaFallbackBlockParam``: "Some blocks from before the turn's final ``fallback`` block must be left
out when you send the turn back, and no ``tool_result`` is sent for a ``tool_use`` block you left
out"). Before an assistant message's last ``fallback`` block stand the models that declined: their
``thinking``, ``redacted_thinking`` and ``connector_text`` blocks, their client ``tool_use`` calls
and a server call no result in the message answered do not go back; text, a server call with its
result, the block itself and all after it do (policy fallback-declined-calls, as
:mod:`fsm.messages` builds the turn).

:func:`check` reports each such block (``declined-content``) and reads the history without it, so
a declined call is neither dangling nor answered, and a result sent for it answers nothing
(``orphan``); :func:`repair` drops each (``dropped-declined``), and the results that answered a
dropped call go as orphans do."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fsm.errors import shown
from fsm.history.changes import Change
from fsm.history.server_blocks import SERVER_CALLS
from fsm.wire.decoders._claude_fallback import FALLBACK_BLOCK

_LEFT_OUT = frozenset({"tool_use", "thinking", "redacted_thinking", "connector_text"})

Declined = tuple[int, str, str, str | None]
"""A block left out: its message's place (0-based), its call's id (``""`` for a block of no call),
what it is, in words, and its call's name."""


def without_declined(messages: Sequence[Mapping[str, Any]]) -> tuple[Sequence[Mapping[str, Any]], list[Declined]]:
    """The history with the declined models' blocks left out of each assistant message that holds a
    ``fallback`` block (a new list, those messages new dicts; the history itself where none does),
    and what was left out, in order."""
    left_out: list[Declined] = []
    kept: list[Mapping[str, Any]] | None = None
    for at, message in enumerate(messages):
        content = message.get("content") if message.get("role") == "assistant" else None
        cut = _last_fallback(content) if type(content) is list else None
        if cut is None or type(content) is not list:
            continue
        answered = {_text(block.get("tool_use_id")) for block in content if isinstance(block, Mapping)}
        blocks: list[Any] = []
        for place, block in enumerate(content):
            said = _declined(block, answered) if place < cut else None
            if said is None:
                blocks.append(block)
                continue
            call = block.get("id") if said[1] else None
            name = block.get("name") if said[1] else None
            left_out.append((at, call if type(call) is str else "", said[0], name if type(name) is str else None))
        if len(blocks) < len(content):
            kept = list(messages) if kept is None else kept
            kept[at] = {**message, "content": blocks}
    return (messages if kept is None else kept), left_out


def dropped_declined(
    messages: Sequence[Mapping[str, Any]], fmt: str
) -> tuple[Sequence[Mapping[str, Any]], None, list[Change]]:
    """What :func:`~fsm.history.repair` starts from: an Anthropic history without the declined
    models' blocks, and a ``dropped-declined`` change for each (no message is added or taken away,
    so later changes keep their numbers: None)."""
    if fmt != "anthropic":
        return messages, None, []
    kept, left_out = without_declined(messages)
    return (
        kept,
        None,
        [Change("dropped-declined", at + 1, call or None, declined_why(said)) for at, call, said, _ in left_out],
    )


def declined_why(said: str) -> str:
    """Why a block left out does not go back, in words."""
    return f"a {said} before the message's last fallback block: a model that declined gave it, so it does not go back"


def _last_fallback(content: list[Any]) -> int | None:
    for place in range(len(content) - 1, -1, -1):
        block = content[place]
        if isinstance(block, Mapping) and block.get("type") == FALLBACK_BLOCK:
            return place
    return None


def _declined(block: Any, answered: set[Any]) -> tuple[str, bool] | None:
    """What a block before the last fallback block is, in words, and whether it is a call, where it
    does not go back; None where it does."""
    if not isinstance(block, Mapping):
        return None
    kind = block.get("type")
    if type(kind) is not str:
        return None
    if kind in _LEFT_OUT:
        return (f"{kind} block" if kind != "tool_use" else f"client call {shown(block.get('id'))}"), kind == "tool_use"
    if kind in SERVER_CALLS and _text(block.get("id")) not in answered:
        return f"server call {shown(block.get('id'))} no result answered", True
    return None


def _text(value: Any) -> str | None:
    return value if type(value) is str else None  # (a caller's own object is never hashed)
