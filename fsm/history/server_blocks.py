"""Claude's server tool blocks in an Anthropic history: a ``server_tool_use`` or ``mcp_tool_use``
block is a call Anthropic ran itself, and the ``*_tool_result`` block naming its id
(``web_search_tool_result``, ``code_execution_tool_result``, ``mcp_tool_result``, ...) its answer,
both in the assistant message Claude wrote. So each message's server blocks are a turn of their own,
closed by the end of that message. Anthropic refuses a server call without its result unless it is
in the request's last message: a turn paused (``pause_turn``) after such a call goes back as it
came, as the last message, and the API runs the call (anthropic-sdk-python issues 961 and 1339:
with a message after it, the API answers 400). Nothing but the server can stand in for that result,
so repair drops such a call anywhere else, and there too once it writes a message after it
(:mod:`fsm.history.after_run`). Bedrock Converse's server tools are read the same way: a
``toolUse`` of ``type: server_tool_use`` and a ``toolResult`` naming it later in the model's own message.

A result answers a call that comes before it in the message, as Claude writes them (Anthropic
refuses a result placed before its call). The results are paired first come, first served: each
answers the earliest call of its id before it that nothing answered yet, which is the history's k-th
rule whenever every result follows its call. When that leaves a call of an id waiting, the k-th rule
would give it a result placed before it: such results answer nothing, read as stray results just
ahead of their message's blocks.

A server tool's result the user's message right after sends back (beside the client's results, say)
answers that message's server calls as if Claude's message held it, after them; it is a
``misplaced-result``, which repair moves right after its call (:mod:`fsm.history.turns`).

The policy ``server-blocks-are-the-models``: only Claude writes a server call, so a user message
holding one is read as the model's message, as one making client calls is (``misplaced-call``, the
API combining it with the assistant messages beside it in one turn); the server results it holds
answer the server calls of that run, and are ``misplaced-result``. Repair moves every server block of
such a message (:func:`models_block`) with its client calls into the model message it makes of them,
in their order, where they pair as they were read. Left in the user's message, a server call
answered there was read as answered and written where the next repair read it alone: dropped, its
real result with it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from fsm.history.entries import Entry, Key, Segment

# The wire's own names for these blocks, under the names the history reads them by.
from fsm.wire.decoders._wire import CLAUDE_SERVER_CALLS as SERVER_CALLS
from fsm.wire.decoders._wire import server_result_block as is_server_result

__all__ = ["SERVER_CALLS", "converse_holding", "converse_payload", "in_order", "is_server_result", "models_block"]


def models_block(block: Mapping[str, Any]) -> bool:
    """Is an Anthropic block one only the model's message holds: a client call, or Claude's server
    call or its result (``server-blocks-are-the-models``)? A user message's such blocks go in the
    model message repair makes of its calls."""
    kind = block.get("type")
    return kind == "tool_use" or kind in SERVER_CALLS or is_server_result(kind)


def in_order(served: Segment) -> tuple[list[Entry], Segment]:
    """The results placed before the call they would answer, and the blocks (of a message, or of
    Anthropic's run of assistant messages) with their results ordered so that the k-th rule pairs
    them first come, first served."""
    waiting: dict[Key, int] = {}  # calls of the id read so far that no result answers yet
    paired: list[Entry] = []
    unpaired: list[Entry] = []
    calls = iter(served.calls)
    call = next(calls, None)
    for result in served.results:
        while call is not None and (call.message, call.slot) < (result.message, result.slot):
            waiting[call.key] = waiting.get(call.key, 0) + 1
            call = next(calls, None)
        if waiting.get(result.key, 0):
            waiting[result.key] -= 1
            paired.append(result)
        else:
            unpaired.append(result)
    # First come, first served leaves an id's last calls waiting, if any. Under the k-th rule its
    # unpaired results would answer them, each a call it comes before: they are early, and answer
    # nothing. When no call of the id is left waiting, they are its second results.
    left = _count(served.calls)
    for result in paired:
        left[result.key] -= 1
    early: list[Entry] = []
    under: dict[Key, list[Entry]] = {}  # each id's results: those paired first, then its second ones
    for result in paired:
        under.setdefault(result.key, []).append(result)
    for result in unpaired:
        if left.get(result.key, 0):
            early.append(result)
        else:
            under.setdefault(result.key, []).append(result)
    # Each id's results take the places its own results held, so ids keep their order among each other.
    taken = {key: iter(entries) for key, entries in under.items()}
    gone = {(result.message, result.slot) for result in early}  # a run's messages each number their slots from 0
    kept = [next(taken[result.key]) for result in served.results if (result.message, result.slot) not in gone]
    return early, served._replace(results=kept)


def _count(entries: list[Entry]) -> dict[Key, int]:
    counts: dict[Key, int] = {}
    for entry in entries:
        counts[entry.key] = counts.get(entry.key, 0) + 1
    return counts


def converse_payload(block: Any) -> tuple[Literal["toolUse", "toolResult"], Any] | None:
    """A Converse content block's call (``toolUse``) or result (``toolResult``) and its value. Converse
    blocks are told by their one field; a block with a ``type`` is another format's."""
    if not isinstance(block, Mapping) or "type" in block:
        return None
    if "toolUse" in block:
        return "toolUse", block["toolUse"]
    if "toolResult" in block:
        return "toolResult", block["toolResult"]
    return None


def converse_holding(block: Any, served: set[Any] | None) -> Any:
    """What a Converse block holds, read as the history reads it: ``call``, ``result``,
    ``("server", id)`` for a server tool's call, or ``""`` (a server call's result: in the model's
    message after that call, whose id is in ``served``, None in a user's message; other blocks)."""
    payload = converse_payload(block)
    if payload is None or not isinstance(payload[1], Mapping):
        return ""
    field, value = payload
    wire_id = value.get("toolUseId")
    if field == "toolUse" and value.get("type") == "server_tool_use":
        if served is not None:
            served.add(wire_id)
        return ("server", wire_id)
    if field == "toolResult" and served and wire_id in served:
        return ""
    return "call" if field == "toolUse" else "result"
