"""Gemini's server-side tool calls through langchain-google-genai, read back as the Gemini decoder
reads the bytes' ``toolCall`` and ``toolResponse`` parts (the calls of Gemini's built-in tools under
tool combination, and what each gave): a server call of type ``tool_call`` and its result, which the
``"gemini"`` next turn sends back in their places (:mod:`fsm.messages.gemini_code`).

LangChain gives a ``toolCall`` as a ``server_tool_call`` block (its ``id``, ``args``, and the tool as
``name``) and a ``toolResponse`` as a ``server_tool_result`` (``tool_call_id``, ``output``, the tool
in ``extras.block_type``), each part's signature in ``extras.signature``; ``output_version="v1"``
holds each inside a ``non_standard`` block. It names the tool by its ``toolType`` lower-cased, and an
absent one ``media_processing``; it makes up a ``uuid4`` for a call Gemini gave no id, writes a
result's missing id as ``""`` and a missing ``args`` or ``response`` as ``{}``. Read back (policy
langchain-gemini-tool-parts): the ``toolType`` upper-cased (``MEDIA_PROCESSING`` where it was absent
too: the type LangChain says it stands for), an id of LangChain's (a ``uuid4``, or ``""``) as none,
the payload as given. Code's blocks (``code_interpreter``, a code result) are
:mod:`fsm.wire.langchain_gemini_code`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fsm.events import CallRef, Event, ServerResultBlock
from fsm.wire.decoders._wire import dumps
from fsm.wire.langchain_gemini_code import CODE_RESULT, MADE_UP, GeminiSeen, block_signature, call_events

ToolPart = tuple[str, dict[str, Any], str | None]
"""A tool part read back: its key (``toolCall``, ``toolResponse``), the part, and its signature."""


def tool_part(block: Mapping[str, Any], kind: Any) -> ToolPart | None:
    """The ``toolCall`` or ``toolResponse`` part a block of a server-side tool call of Gemini's
    built-in tools was made from (v0's own block, v1's in a ``non_standard`` one), with its key
    and its signature; None for any other block (code's: ``code_interpreter``, a code result)."""
    if kind == "non_standard" and isinstance(block.get("value"), Mapping):
        block = block["value"]
        kind = block.get("type")
    extras = block.get("extras")
    extras = extras if isinstance(extras, Mapping) else {}
    if kind == "server_tool_call":
        key, named, call_id, payload = "toolCall", block.get("name"), block.get("id"), ("args", block.get("args"))
    elif kind == "server_tool_result":
        named, call_id = extras.get("block_type"), block.get("tool_call_id")
        key, payload = "toolResponse", ("response", block.get("output"))
    else:
        return None
    if not isinstance(named, str) or named in ("code_interpreter", CODE_RESULT):
        return None
    made_up = isinstance(call_id, str) and (not call_id or MADE_UP.fullmatch(call_id))
    part: dict[str, Any] = {} if call_id is None or made_up else {"id": call_id}
    part["toolType"] = named.upper()
    if payload[1] is not None:
        part[payload[0]] = payload[1]
    return key, part, block_signature(block)


def tool_events(found: ToolPart, kind: Any, seen: GeminiSeen, notes: list[tuple[str, str]], at: int) -> list[Event]:
    """A tool part (``found``: :func:`tool_part`'s, of a ``kind`` block) as the Gemini decoder reads
    it: a call of type ``tool_call`` named by its ``toolType`` (at ``at`` among the chunk's tool
    calls), told from a resend as a code block's call is, or the result that answers one; one
    Gemini would refuse back is reported into ``notes``, as the decoder reports it."""
    from fsm.wire.decoders._gemini_code import tool_part_fault

    key, part, signature = found
    fault = tool_part_fault(part, "args" if key == "toolCall" else "response")
    if fault is not None:
        notes.append(("part-not-reassembled", f"a {kind!r} content block whose {fault}: it is not read"))
        return []
    if key == "toolResponse":
        kept = {key: part} if signature is None else {key: part, "thoughtSignature": signature}
        return seen.kept([ServerResultBlock(kept)], notes)
    source = dumps(part["args"]) if "args" in part else "{}"
    ref, resent = seen.code_call(source, CallRef(None, part.get("id"), part["toolType"], at, True, "tool_call"))
    return call_events(ref, resent, signature, part, source)
