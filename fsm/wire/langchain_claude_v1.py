"""langchain-core's v1 blocks for the tools Anthropic runs itself (``output_version="v1"``), read back
as the Claude blocks they were made from, so that the next turn sends them as Claude wrote them.

v1 renames and moves fields: a ``server_tool_call`` (or the first ``server_tool_call_chunk``) calls
Claude's ``code_execution`` tool ``code_interpreter`` and any MCP tool ``remote_mcp`` (the tool's own
name in ``extras.tool_name``); a ``server_tool_result`` keeps the block's type in
``extras.block_type``, its ``content`` as ``output`` and an MCP result's ``is_error`` as its
``status``. Every field v1 has no place for waits in ``extras`` (an MCP call's ``server_name``, say),
and goes back on its block. So does what a client call's block says beside its input (its
``caller``, under programmatic tool calling, and ``toolset_name``), which v0 keeps on its
``tool_use`` block and v1 in the ``extras`` of its ``tool_call_chunk`` (summed: ``tool_call``).

A text block's citations are its ``annotations``: a ``citation`` holds ``cited_text``, ``title`` (a
document's ``document_title``) and a web result's ``url``, every other field in ``extras``; a
citation of a type v1 has no shape for (or missing ``cited_text``) is a ``non_standard_annotation``
holding it whole. The citation's type is not kept: the fields in ``extras`` tell it (a search
result's ``search_result_index``, a document's character, page or block range)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fsm.events import CallRef, CallSeen
from fsm.wire.decoders._fields import written
from fsm.wire.decoders._wire import server_result_block
from fsm.wire.decoders.anthropic import CLIENT_CONTEXT, NOTHING_SAID

V1_NAMES = {"code_interpreter": "code_execution"}
"""Anthropic's tool names that v1 renames (``remote_mcp`` keeps an MCP tool's own name in ``extras``)."""

_MOVED = frozenset({"tool_name", "block_type", "partial_json"})
"""Fields of ``extras`` that v1 moved there from a block field it has (or, a sum's text, that holds
the input, which goes back parsed): not the block's own fields."""


def call_block(block: Mapping[str, Any]) -> dict[str, Any]:
    """The Claude block, without its input, that a v1 call block of a server tool was made from."""
    kind = "mcp_tool_use" if block.get("name") == "remote_mcp" else "server_tool_use"
    kept = _left(block)
    kept.update(type=kind, id=block.get("id"), name=tool_name(block))
    return kept


def tool_name(block: Mapping[str, Any]) -> Any:
    """The name Anthropic gave the tool a v1 call block calls."""
    name = block.get("name")
    if name == "remote_mcp":
        return _extras(block).get("tool_name")
    return V1_NAMES.get(name, name) if isinstance(name, str) else name


def result_block(block: Mapping[str, Any]) -> dict[str, Any] | None:
    """The Claude result block a v1 ``server_tool_result`` was made from; None when its ``extras``
    name no result block of Claude's (a block LangChain did not make from one)."""
    extras = _extras(block)
    kind = extras.get("block_type")
    if not server_result_block(kind) or kind == "server_tool_result":
        return None
    rebuilt = _left(block)
    # v1 leaves the output out where Claude's content was empty
    rebuilt.update(type=kind, tool_use_id=block.get("tool_call_id"), content=block.get("output", []))
    if kind == "mcp_tool_result":
        rebuilt["is_error"] = block.get("status") == "error"
    return rebuilt


CLIENT_BLOCKS = ("tool_use", "tool_call_chunk", "tool_call")
"""ChatAnthropic's blocks of a client call: v0's ``tool_use``, v1's ``tool_call_chunk`` (summed: ``tool_call``)."""


def client_call(block: Mapping[str, Any], at: int | None, indexes: Mapping[str, int]) -> list[CallSeen]:
    """A sighting that gives a client call, as its item, what the Anthropic decoder keeps of its
    block beside the input (v0's own fields, v1's ``extras``); none where the block says nothing
    more. Its index is the block's (``at``), else, v1's summed ``tool_call`` having none, that of
    the chunk's call under its id (``indexes``)."""
    said = block if block.get("type") == "tool_use" else _extras(block)
    context = {key: said[key] for key in CLIENT_CONTEXT if said.get(key) not in NOTHING_SAID}
    call_id, name = block.get("id"), block.get("name")
    if not context or not isinstance(call_id, str):
        return []
    ref = CallRef(indexes.get(call_id) if at is None else at, call_id, name if isinstance(name, str) else None)
    return [CallSeen(ref, item={"type": "tool_use", **context})]


_DROPPED = (
    "ChatAnthropic yields nothing of a block of a type it does not know (container_upload, mcp_tool_listing, fallback)"
)


def skipped_blocks(content: Any, entries: Any, top: int, notes: list[tuple[str, str]]) -> int:
    """Report into ``notes`` the Claude content block indexes a ChatAnthropic chunk (either version) passes with no
    block or call come at them, ``top`` the highest one came at before; returns the highest now. It yields a message's
    blocks in order, each at Claude's index, and nothing of a block of a type it does not know (``container_upload``,
    ``mcp_tool_listing``, ``fallback``: blocks the turn goes back with) nor of an empty text block, so such a block was
    lost before fsm saw it. One after the last block that came cannot be told."""
    found = {at for entry in entries if type(at := entry.get("index")) is int and at >= 0}
    for block in content if isinstance(content, list | tuple) else ():
        if isinstance(block, Mapping) and type(at := block.get("index")) is int and at >= 0:
            found.add(at)
    for at in sorted(found):
        if at > top + 1:
            gap = f"index {written(top + 1)}" if at == top + 2 else f"indexes {written(top + 1)} to {written(at - 1)}"
            notes.append(
                ("part-not-reassembled", f"no content block came at {gap}, before index {written(at)}: {_DROPPED}")
            )
        top = max(top, at)
    return top


def _extras(block: Mapping[str, Any]) -> Mapping[str, Any]:
    extras = block.get("extras")
    return extras if isinstance(extras, Mapping) else {}


def _left(block: Mapping[str, Any]) -> dict[str, Any]:
    """The fields v1 had no place for, that go back on the block (named as JSON names a field)."""
    return {key: value for key, value in _extras(block).items() if isinstance(key, str) and key not in _MOVED}


# Which Claude citation a v1 ``citation`` without a url was, by a field only that type has; the
# search result first, which has a block range too. ``document_title``: the type's name for ``title``.
_DOCUMENT_CITATIONS = (
    ("search_result_index", "search_result_location", False),
    ("start_char_index", "char_location", True),
    ("start_page_number", "page_location", True),
    ("start_block_index", "content_block_location", True),
)


def citations(annotations: Any, at: int | None, notes: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The Claude citations a v1 text block's ``annotations`` were made from. One of no Claude shape
    (a block of no ChatAnthropic's) cannot go back: left out, and said so in ``notes``, as the
    Anthropic decoder reports what it does not read."""
    found = []
    for number, annotation in enumerate(annotations if isinstance(annotations, list) else ()):
        rebuilt = _citation(annotation) if isinstance(annotation, Mapping) else None
        if rebuilt:
            found.append(rebuilt)
        else:
            kind = annotation.get("type") if isinstance(annotation, Mapping) else type(annotation).__name__
            where = f"text block at index {written(at)}" if at is not None else "text block"
            said = written(kind) if type(kind) is not str else repr(kind)
            notes.append(("part-not-reassembled", f"annotation {number} ({said}) of the {where}: no Claude citation"))
    return found


def _citation(annotation: Mapping[str, Any]) -> dict[str, Any] | None:
    if annotation.get("type") == "non_standard_annotation":
        value = annotation.get("value")
        return dict(value) if isinstance(value, Mapping) else None
    if annotation.get("type") != "citation":
        return None
    rebuilt = _left(annotation)
    rebuilt["cited_text"] = annotation.get("cited_text")
    if "url" in annotation:
        # v1 keeps a title only when it is not empty: Claude's is required, null where there was none
        rebuilt.update(type="web_search_result_location", url=annotation["url"], title=annotation.get("title"))
        return rebuilt
    for field, kind, document in _DOCUMENT_CITATIONS:
        if field in rebuilt:
            rebuilt["type"] = kind
            rebuilt["document_title" if document else "title"] = annotation.get("title")
            return rebuilt
    return None
