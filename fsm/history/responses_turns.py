"""OpenAI Responses input items grouped in turns: each item is one call, one output or neither, so
its turns are read apart from the messages of the other formats (:func:`fsm.history.turns.segments`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from fsm.history.entries import Roles, Segment
from fsm.history.formats import Reader, known_role


def responses_segments(items: Sequence[Mapping[str, Any]], roles: Roles | None) -> Iterator[Segment]:
    """Responses items, one call or output each: a turn is a run of call items (the model's
    reasoning, assistant messages and hosted tool items may sit among them: a turn goes back
    reasoning, message, call, web search, call) and the run of output items right after it. User message items
    among its outputs or right after its calls leave it open: outputs after them still answer it
    (``Segment.held``), until an item of the model's."""
    reader = Reader("responses")
    if roles is not None:
        reader.roles = roles
    taking: Segment | None = None
    answering = False  # the turn's outputs have begun: a call now starts the next turn
    held = -1  # the user's message items after the turn's calls: outputs after them still answer it
    for at, item in enumerate(items):
        results, calls = reader.read(item, at)
        if calls:
            if taking is None or answering or held >= 0:
                if taking is not None:
                    yield taking
                taking, answering, held = Segment([], []), False, -1
            taking.calls.extend(calls)
        elif results is not None:
            if taking is None:
                yield Segment([], results)
            else:
                taking = taking if held < 0 else taking._replace(held=held)
                taking.results.extend(results)
                answering = True
        elif taking is not None and _user_said(item):
            held = at if held < 0 else held
        elif taking is not None and (answering or held >= 0 or not _model_said(item)) and not _odd_message(item):
            yield taking
            taking, held = None, -1
    if taking is not None:
        yield taking


def _odd_message(item: Mapping[str, Any]) -> bool:
    """A message item of a role Responses lacks (``unknown-role``): kept for the caller to name, it ends no turn."""
    return item.get("type") in (None, "message") and not known_role("responses", item.get("role"))


def _user_said(item: Mapping[str, Any]) -> bool:
    """A user message item, or the user's answer to an MCP approval request: the turn before it waits
    on, for outputs sent after it (``Segment.held``)."""
    kind = item.get("type")
    return (kind in (None, "message") and item.get("role") == "user") or kind == "mcp_approval_response"


HOSTED_ITEMS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "tool_search_call",
        "program",
        "program_output",
        "multi_agent_call",
        "multi_agent_call_output",
        "agent_message",
        "item_reference",
    }
)
"""The provider's own tool items (its hosted calls, an MCP server's listing or approval request, a
program of programmatic tool calling and what it gave, the multi-agent beta's calls, their outputs
and its agents' messages), and a reference to an item the API stored: the model's output among its
calls, as its reasoning is, in a turn appended as the API gave it."""


def _model_said(item: Mapping[str, Any]) -> bool:
    """A reasoning item, an assistant message or a hosted tool's item: what the model said among its
    calls, before their outputs (an item with no ``type`` is a message)."""
    kind = item.get("type")
    return (
        kind == "reasoning"
        or (type(kind) is str and kind in HOSTED_ITEMS)  # (a type of no str may be unhashable)
        or (kind in (None, "message") and item.get("role") == "assistant")
    )
