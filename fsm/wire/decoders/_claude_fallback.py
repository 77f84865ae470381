"""Claude's server-side fallback (the beta ``fallbacks`` request parameter): when the model asked
for declines (its refusal classifiers), the API goes on with a fallback model in the same response,
and a ``fallback`` content block (``from``, ``to``, ``trigger``; a start and a stop, no delta) marks
where one model's output gives way to the next.

What the block is to fsm, as Anthropic's refusals-and-fallback guide ("Continuing the
conversation") and the anthropic SDK's ``BetaFallbackBlockParam`` tell it: the block goes back in its
place (the API checks the thinking on either side of it by it), and of what stands before the turn's
last one, the declined models' ``thinking``, ``redacted_thinking`` and client ``tool_use`` blocks do
not go back, nor a server call no result answered; text, server calls with their results and every
block after it do. A client call left out is answered by nothing (policy fallback-declined-calls):
it is not the client's to run, so the result keeps it apart (``Result.declined_calls``).

A decline mid-call closes the open block, its JSON cut, and the ``fallback`` block comes next (the
guide's "Streaming"): such a stop is no violation but the decline's cut (``cut-by-decline``), which
only the next block tells. So the strict raise of ``unterminated-arguments`` at a Claude tool
block's stop waits for it (policy decline-cut-waits: :func:`handed_over_at`), and names the stop's
event when it is raised.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from fsm.errors import kind as kind_of
from fsm.results import ServerToolResult, ToolCall

FALLBACK_BLOCK = "fallback"


def handed_over(block: Mapping[str, Any], at: int | None) -> str:
    """What a ``fallback`` block says, in words (a note: a field of another shape is passed over):
    which model declined and why, and which goes on from there."""
    trigger = block.get("trigger")
    why = trigger.get("type") if type(trigger) is dict else None
    category = trigger.get("category") if type(trigger) is dict else None
    said = f"{why}, category {category}" if type(why) is str and type(category) is str else why
    reason = f" ({said})" if type(said) is str else ""
    where = f" at content block {at}" if at is not None else ""
    return f"{_model(block.get('from'))} declined{reason}; {_model(block.get('to'))} goes on{where}"


def fallback_said(block: Mapping[str, Any], at: int | None, diagnose: Callable[[str, str], None]) -> None:
    """Say a ``fallback`` block (``model-fallback``), and what in it the API refuses back
    (``part-not-reassembled``; audit 88): a ``from`` or ``to`` that is no object naming its
    ``model`` in text (the anthropic SDK's ``BetaFallbackInfoParam``), a ``trigger`` neither an
    object nor null. Such a block is kept all the same: its place still sets the declined model's
    calls apart, and the next turn without it would merge the thinking on either side of it."""
    diagnose("model-fallback", handed_over(block, at))
    fault = _hop_fault(block, "from") or _hop_fault(block, "to")
    trigger = block.get("trigger")
    if fault is None and trigger is not None and type(trigger) is not dict:
        fault = f"trigger is {kind_of(trigger)}, not an object or null"
    if fault is not None:
        where = f" at index {at}" if at is not None else ""
        diagnose("part-not-reassembled", f"a fallback content block{where} whose {fault}: the API refuses it back")


def _hop_fault(block: Mapping[str, Any], key: str) -> str | None:
    hop = block.get(key)
    if type(hop) is not dict:
        return f"{key} is {'null or missing' if hop is None else kind_of(hop)}, not an object with a model"
    model = hop.get("model")
    return None if type(model) is str and model else f"{key} names no model in text"


def _model(hop: Any) -> str:
    model = hop.get("model") if type(hop) is dict else None  # a note: only what is plainly text is said
    return model if type(model) is str and model else "a model not named"


def final_fallback(results: Iterable[ServerToolResult]) -> int | None:
    """The place of the turn's last ``fallback`` block: what stands before it is the declined
    models'. None where the turn has none with a place (or none at all)."""
    places = [kept.output_index for kept in results if kept.output_index is not None and _fallback(kept.block)]
    return max(places) if places else None


def _fallback(block: Mapping[str, Any]) -> bool:
    kind = block.get("type")
    return type(kind) is str and kind == FALLBACK_BLOCK  # a caller's own object (a fed dict's) is never asked


def before(place: int | None, cut: int | None) -> bool:
    """Whether a block at ``place`` stands before the last fallback block, at ``cut``: a declined
    model's. A block without a place stands nowhere, so before nothing."""
    return place is not None and cut is not None and place < cut


def set_apart(calls: tuple[ToolCall, ...], cut: int) -> tuple[tuple[ToolCall, ...], tuple[ToolCall, ...]]:
    """The client calls to run, and those a declined model made before the last fallback block, at
    ``cut`` (policy fallback-declined-calls), each in the calls' order."""
    declined = tuple(call for call in calls if before(call.output_index, cut))
    if not declined:
        return calls, ()
    return tuple(call for call in calls if not before(call.output_index, cut)), declined


UNTERMINATED = "unterminated-arguments"
_UNTOLD = frozenset({"content_block_delta", "content_block_stop", "ping"})
"""Events that tell nothing of a cut block's model (policy decline-cut-waits): a block still open
goes on or stops, a ping keeps the line up. The deltas are also all the fast paths read, so every
path waits for the same event."""


def handed_over_at(payload: Mapping[str, Any]) -> bool | None:
    """What a Claude event tells of a tool block that stopped with its JSON open just before it
    (policy decline-cut-waits): True where it starts a ``fallback`` block (its model declined mid-call:
    the decline cut it), False where the turn went on otherwise (another block, the message's end),
    None where it tells nothing yet (:data:`_UNTOLD`)."""
    kind = payload.get("type")
    if type(kind) is not str:
        return False
    if kind == "content_block_start":
        block = payload.get("content_block")
        return type(block) is dict and _fallback(block)
    return None if kind in _UNTOLD else False


def declined_cut(said: str, payload: Mapping[str, Any]) -> str:
    """The message of ``cut-by-decline``: what ``unterminated-arguments`` said, and the decline."""
    at = payload.get("index")
    where = f" at content block {at}" if type(at) is int and 0 <= at < 1 << 63 else ""  # as index() reads one
    return f"{said}, cut when its model declined: the fallback block{where} came next"
