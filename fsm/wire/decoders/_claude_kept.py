"""Claude's content blocks of no call that the turn goes back with (``container_upload``,
``mcp_tool_listing``: :data:`~fsm.wire.decoders._wire.CLAUDE_KEPT_BLOCKS`) and the server tools'
result blocks, as the Anthropic decoder keeps them, and what makes one of the former no block to
send back.

A kept block goes back as it came, so one whose fields the API refuses in a request (the anthropic
SDK's ``ContainerUploadBlockParam`` requires ``file_id`` as text; ``BetaMCPToolListingBlockParam``
``mcp_server_name`` as text and ``tools`` as a list of objects) would make the next request fail:
it is reported (``part-not-reassembled``) and not kept, as the Gemini decoder does with a tool part
Gemini would refuse back. A result block's ``tool_use_id`` pairs it with its call and is read as
text (else refused); the other blocks answer no call, so that field means nothing on them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fsm.errors import kind as kind_of
from fsm.events import Event, ServerResultBlock
from fsm.wire.decoders._fields import text
from fsm.wire.decoders._wire import server_result_block


def kept_block(
    kind: str, block: Mapping[str, Any], place: int | None, diagnose: Callable[[str, str], None]
) -> list[Event]:
    """The events of a kept block of type ``kind`` (see :func:`~fsm.wire.decoders._wire.claude_kept_block`)
    starting at ``place``: the block, whole; nothing, said, for one the API would refuse back."""
    if server_result_block(kind):
        text(block.get("tool_use_id"), "content_block.tool_use_id")  # what pairs it: text, or refused
    elif (fault := kept_block_fault(kind, block)) is not None:
        diagnose("part-not-reassembled", f"a {kind} content block at index {place} whose {fault}: not kept")
        return []
    return [ServerResultBlock(dict(block), place)]


def kept_block_fault(kind: Any, block: Mapping[str, Any]) -> str | None:
    """What makes a ``container_upload``, ``mcp_tool_listing`` or ``connector_text`` block one the API refuses back,
    named with its type; None if nothing does (or the block is of another type)."""
    if kind == "container_upload":
        return _not(block.get("file_id"), "file_id", "a string", str)
    if kind == "mcp_tool_listing":
        fault = _not(block.get("mcp_server_name"), "mcp_server_name", "a string", str)
        tools = block.get("tools")
        fault = fault or _not(tools, "tools", "a list", list)
        if fault is None and not all(isinstance(tool, Mapping) for tool in tools or ()):
            return "tools holds something other than an object"
        return fault
    if kind == "connector_text":  # (the decoder reads both as text: a hand-made block may hold anything)
        fault = _not(block.get("connector_text"), "connector_text", "a string", str)
        signature = block.get("signature")
        return fault or (None if signature is None else _not(signature, "signature", "a string", str))
    return None


def _not(value: Any, name: str, said: str, wanted: type) -> str | None:
    if isinstance(value, wanted):
        return None
    return f"{name} is null or missing, not {said}" if value is None else f"{name} is {kind_of(value)}, not {said}"
