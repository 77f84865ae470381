"""The ``"anthropic"`` next turn's blocks besides thinking and client calls: each text block with
its citations, Claude's own tool calls (``server_tool_use``, ``mcp_tool_use``) with the result
blocks that answered them, and its ``container_upload``, ``mcp_tool_listing``, ``fallback`` and
``connector_text`` blocks, as the stream gave them, in their places."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, TypeGuard

from fsm.messages.shared import Message, signature_for
from fsm.messages.shared import arguments_object as _arguments
from fsm.results import CallStatus, Result, ServerToolResult, TextPart, ToolCall
from fsm.wire.decoders._claude_fallback import before
from fsm.wire.decoders._claude_kept import kept_block_fault
from fsm.wire.decoders._claude_streamed import CONNECTOR_TEXT
from fsm.wire.decoders._wire import CLAUDE_KEPT_BLOCKS, CLAUDE_SERVER_CALLS, server_result_block


def anthropic_text(text: str, part: TextPart | None) -> Message:
    block: Message = {"type": "text", "text": text}
    # A citation without a type is no Claude citation (Bedrock Converse's have none), which
    # Anthropic refuses: it is left out.
    citations = [cited for cited in part.citations if "type" in cited] if part is not None else []
    if citations:
        # A streamed citation carries "file_id": null, which Anthropic refuses back ("Extra inputs are
        # not permitted"): the field goes where it holds nothing.
        block["citations"] = [
            {key: value for key, value in cited.items() if value is not None or key != "file_id"} for cited in citations
        ]
    return block


def server_blocks(result: Result, cut: int | None = None) -> list[tuple[int | None, Message]]:
    """Claude's own tool calls (``server_tool_use``, ``mcp_tool_use``) as they came, each with the
    result blocks that answer it, in their places: Anthropic wants the turn echoed so (a call whose
    result is missing is run when the turn goes back, as after ``pause_turn``; a result without its
    call, before it, or a second one is refused). The k-th result naming an id answers the k-th call
    under it, and goes back right after that call if its place was before it (or it had none); a call
    the stream gave an id already used goes back under its new id (:attr:`ToolCall.id`), and its
    result with it. A call that did not complete, or that no Claude block gave, is not sent; nor are
    its results, nor a second result of a call. A result naming no call of the turn goes back in its
    place: it answers a call of an earlier message, the turn's server call waiting past a pause
    (``pause_turn``, or the client results of calls beside it), which :mod:`fsm.history` pairs it
    with. A call still waiting for its result goes back too when the message makes client calls
    (policy server-call-waits-across-results): code execution paused for them (programmatic tool
    calling, a client call naming it its ``caller``) goes on once their results come, and the API
    wants it in the request that sends them (with the response's ``container``), its result coming
    in a later assistant message. A block of no call that Anthropic wants back as it came
    (``container_upload``, ``mcp_tool_listing``, ``fallback``, ``connector_text``: CLAUDE_KEPT_BLOCKS)
    goes back in its place, unless its fields are such as the API refuses back (a hand-made result's:
    the decoder keeps none). A call no result answered before the turn's last ``fallback`` block, at
    ``cut``, is a declined model's and does not go back (Anthropic's refusals-and-fallback guide); one
    answered does; nor does a ``connector_text`` block before it, as the thinking there does not."""
    calls: list[tuple[ToolCall, Message]] = []
    under: dict[str, list[int]] = {}  # by wire id: where its calls are in `calls`, in stream order
    for call in result.server_tool_calls:
        item, wire_id = call.item, call.wire_id
        if item is None or not _one_of(item.get("type"), _CLAUDE_SERVER) or wire_id is None:
            continue  # no Claude block gave it (another provider's hosted tool, a LangChain chunk's)
        under.setdefault(wire_id, []).append(len(calls))
        calls.append((call, item))
    answer_of: dict[int, ServerToolResult] = {}
    taken: dict[str, int] = {}  # by wire id: how many of its calls a result answered
    blocks: list[tuple[int | None, Message]] = []
    for answer in result.server_tool_results:
        if _one_of(kind := answer.block.get("type"), CLAUDE_KEPT_BLOCKS):
            if kind == CONNECTOR_TEXT and before(answer.output_index, cut):
                continue  # a declined model's, as its thinking (the refusals-and-fallback guide)
            if (
                kept_block_fault(kind, answer.block) is None
            ):  # one the API refuses back stays out, as the decoder leaves it
                blocks.append((answer.output_index, _given(answer.block)))
            continue
        answers = answer.block.get("tool_use_id")  # a hand-made block may hold anything there
        if not _one_of(answers, under):
            if isinstance(answers, str) and server_result_block(answer.block.get("type")):
                blocks.append((answer.output_index, _given(answer.block)))  # answers an earlier message's call
            continue
        k = taken.get(answers, 0)
        if k < len(under[answers]):
            taken[answers] = k + 1
            answer_of[under[answers][k]] = answer
    for n, (call, item) in enumerate(calls):
        got = answer_of.get(n)
        if call.status is not CallStatus.COMPLETE or (got is None and before(call.output_index, cut)):
            continue
        blocks.append((call.output_index, {**_given(item), "id": call.id, "input": _arguments(call)}))
        if got is not None:
            place = got.output_index
            if place is None or (call.output_index is not None and place < call.output_index):
                place = call.output_index
            blocks.append((place, {**_given(got.block), "tool_use_id": call.id}))
    return blocks


def _given(block: Mapping[str, Any]) -> Message:
    """A block's fields that hold something: a null one is a field the wire left out that an SDK
    model wrote (LangChain's blocks are dumped so, a summed chunk's with text and citations), and
    Anthropic refuses a field its block type does not have."""
    return {key: value for key, value in block.items() if value is not None}


_CLAUDE_SERVER = frozenset(CLAUDE_SERVER_CALLS)


def _one_of(value: Any, names: Collection[str]) -> TypeGuard[str]:
    return isinstance(value, str) and value in names


def placed_thinking(result: Result, format: str, *, details: bool = True) -> list[tuple[int | None, Message]]:
    """Claude's reasoning as its blocks go back (Anthropic's content, LiteLLM's ``thinking_blocks``:
    ``format``), each with its place: signed thinking and redacted thinking; a block that never got
    its signature is refused there, and so is one signed by another model (policy signature-by-origin:
    Gemini's thought, left out). ``details=False`` leaves out the blocks read from OpenRouter's
    ``reasoning_details``, which go back to a chat server there instead."""
    blocks: list[tuple[int | None, Message]] = []
    for reasoning in result.reasoning:
        if not details and reasoning.detail is not None:
            continue
        if reasoning.redacted is not None:
            blocks.append((reasoning.output_index, {"type": "redacted_thinking", "data": reasoning.redacted}))
        elif (signature := signature_for(reasoning, result, format)) is not None:
            block = {"type": "thinking", "thinking": reasoning.text, "signature": signature}
            blocks.append((reasoning.output_index, block))
    return blocks
