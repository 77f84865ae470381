"""Responses API output items through LangChain's ``ChatOpenAI(use_responses_api=True)``: the calls
that are no function calls, read as the Responses decoder reads the wire's items.

langchain-openai turns a function call into ``tool_call_chunks``, which the OpenAI chat reading
takes. Every other item that calls a tool it yields whole, once, as a content block at the item's
``response.output_item.done``: v0 keeps the item as it came (its ``type``, ``call_id``, ``action``,
``input``, ...) with LangChain's own item count as ``index`` (``output_version="v0"`` keeps it in
``additional_kwargs["tool_outputs"]`` instead of the content, but a custom tool's); v1 keeps a client item the same way
inside a ``non_standard`` block (the count in an ``index`` such as ``lc_ns_3``) and turns a hosted
one (``web_search_call``, ``mcp_call``, ...) into a ``server_tool_call`` block naming the tool, and an
``image_generation_call`` into an ``image`` block (the item's id, its result as ``base64``). Each
is given to a Responses decoder of the stream's own as the ``output_item.done`` it came from, so it
becomes the call the bytes give: a ``custom_tool_call`` a freeform call of type ``custom`` (LangChain
also gives it as a function call with ``{"__arg1": input}`` arguments, a tool call chunk that is
dropped for it), a ``computer_call`` or ``apply_patch_call`` a built-in call to run with its item
kept, a hosted tool a server call. An item ended ``incomplete`` is truncated, as on the wire.

An item v1 keeps in a ``non_standard`` block that the decoder does not know either, a
``server_tool_call`` naming a tool of no known item, and a block of the default output version
(``responses/v1``, or v0) of a type that is neither a known item nor a block LangChain makes (text,
refusal, reasoning, a function call's, langchain-core's standard ones), are reported
(``unknown-item``) as the decoder reports an unknown item on the wire: any may be a call. All three
only for ChatOpenAI's chunks (``model_provider`` ``openai``): whose else a block is, is not known.
What LangChain never yields cannot be read: a ``shell_call`` or ``local_shell_call`` item, and any
item the stream was cut before the end of.

The stream's reasoning items and its function calls' item ids are read beside them
(:mod:`fsm.wire.langchain_reasoning`), under the same count, which also gives the calls their
places in the turn and the text the place of its first message (a text block's count).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from fsm.events import CallSeen, Event, TextDelta
from fsm.wire.decoders._responses_items import CALL_ITEMS, QUIET_ITEMS
from fsm.wire.decoders._wire import dumps
from fsm.wire.decoders.openai_responses import OpenAIResponsesDecoder
from fsm.wire.langchain_reasoning import (
    FUNCTION_CALL_BLOCKS,
    FUNCTION_CALL_IDS,
    ResponsesReasoning,
    call_items,
    count_in,
    function_call_id,
    function_call_ids,
    is_responses_reasoning,
)

Diagnose = Callable[[str, str], None]

ITEMS = frozenset(CALL_ITEMS) - {"function_call"}
"""The item types read here: every one that calls a tool but a function call (its chunks carry it)."""

HOSTED_BY_NAME = {kind.tool: item for item, kind in CALL_ITEMS.items() if kind.server and kind.tool}
"""v1's ``server_tool_call`` name for each hosted item type that names its tool (``remote_mcp``, an
MCP call, names its tool in ``extras.tool_name``)."""

KNOWN_TOOLS = frozenset({*HOSTED_BY_NAME, "remote_mcp", "mcp_list_tools"})
"""v1's ``server_tool_call`` names known here: the hosted items read, and ``mcp_list_tools`` (an item
that calls nothing)."""

TOOL_OUTPUTS = "tool_outputs"
"""Where v0 keeps the built-in and hosted tool items (``additional_kwargs``), each as the block it
would be in the content, its count its ``index``: read as those blocks are."""

_COUNT = re.compile(r"lc_[a-z]+_(\d+)")


class ResponsesItems:
    """A stream's Responses items read so far: its decoder, its reasoning items, and the highest
    LangChain count seen on any block or call (an item whose block gives no count is placed after it)."""

    __slots__ = ("decoder", "reasoning", "texted", "top")

    def __init__(self) -> None:
        self.decoder = OpenAIResponsesDecoder()
        self.reasoning = ResponsesReasoning()
        self.top = -1
        self.texted = False  # a text block's count was taken as the text's place

    def read_chunk(
        self, content: Any, entries: list[Any], extra: Any, hosted: bool, finished: bool, diagnose: Diagnose
    ) -> tuple[list[tuple[int, Event]], list[tuple[int, CallSeen]], list[Any]]:
        """A chunk's items, its text's place and the reasoning items that have ended, as events each
        with LangChain's count for it; its calls' item ids as sightings, each with the number of the
        chunk's calls (``entries``) it goes before; and the entries without those its custom tool
        calls replace. ``extra``: its ``additional_kwargs`` (v0's reasoning and call item ids);
        ``finished``: it ends the turn (every reasoning item with it)."""
        reasoning = self.reasoning
        ids: dict[str, str] = {}
        blocks = list(content) if isinstance(content, list | tuple) else []
        if extra and isinstance(extra, Mapping):  # v0's (most chunks' is empty)
            if (at := reasoning.read_v0(extra.get("reasoning"), self.top)) is not None:
                self.top = max(self.top, at)
            ids = function_call_ids(extra)
            outputs = extra.get(TOOL_OUTPUTS)
            blocks += outputs if isinstance(outputs, list | tuple) else ()
        counted: list[tuple[int, Event]] = []
        custom: set[str] = set()
        for block in blocks:
            kind = _kind(block)
            if kind is None:
                continue
            at = _count(block.get("index"))
            if kind == "reasoning":
                at = reasoning.read_block(block, self.top)
            elif kind == "text":
                if at is not None and not self.texted:
                    # The text itself is the chunk's delta's, which keeps no place: this gives it the
                    # first message's, as the Responses decoder does (the next turn's order needs it)
                    self.texted = True
                    counted.append((at, TextDelta("", output_index=at)))
            elif kind in FUNCTION_CALL_BLOCKS:
                function_call_id(block, kind, ids)
            elif (item := _item(block, hosted)) is None:
                if hosted and _unknown_tool(block):  # it may be a call: said, as the decoder says an unknown item
                    named = block.get("name")
                    diagnose("unknown-item", f"a server_tool_call block naming the tool {named!r}, of no known item")
            else:
                at = self.top + 1 if at is None else at
                if item.get("type") == "custom_tool_call" and isinstance(item.get("call_id"), str):
                    custom.add(item["call_id"])
                done = {"type": "response.output_item.done", "output_index": at, "item": item}
                counted += [(at, event) for event in self.decoder.decode(done, diagnose)]
            if at is not None and at > self.top:
                self.top = at
        for entry in entries:
            at = entry.get("index")
            if type(at) is int and at > self.top:
                self.top = at
        if custom:
            entries = [entry for entry in entries if not _among(entry.get("id"), custom)]
        if reasoning.pending:  # before the items that end: their pieces counted, the whole counts the rest
            counted += [(piece.place, piece) for piece in reasoning.held_pieces()]
        if reasoning.fresh:
            counted += [(ended.block or 0, ended) for ended in reasoning.ended(self.top, finished)]
        return counted, call_items(entries, ids) if ids else [], entries


def holds_items(content: Any, extra: Any, hosted: bool) -> bool:
    """Whether a chunk is a Responses stream's: any of its blocks may be an item, a piece of a
    reasoning item or the start of a function call (most chunks' are text, or none), or its
    ``additional_kwargs`` hold v0's reasoning or call item ids. ``hosted``: ChatOpenAI's chunk, where
    a block of a type LangChain does not make is an item too."""
    if isinstance(extra, Mapping) and ("reasoning" in extra or FUNCTION_CALL_IDS in extra or TOOL_OUTPUTS in extra):
        return True
    return isinstance(content, list | tuple) and any(_responses_block(block, hosted) for block in content)


def _responses_block(block: Any, hosted: bool) -> bool:
    kind = _kind(block)
    if kind in READ_BLOCKS or kind == "function_call" or (hosted and kind is not None and _unknown_item(kind)):
        return True
    if kind == "image" and hosted:
        return _image_generation_call(block) is not None
    if kind == "reasoning":
        return is_responses_reasoning(block)
    extras = block.get("extras") if kind in ("tool_call_chunk", "tool_call") else None
    return isinstance(extras, Mapping) and "item_id" in extras


READ_BLOCKS = ITEMS | {"non_standard", "server_tool_call"}

LANGCHAIN_BLOCKS = frozenset(
    {
        *("text", "refusal", "reasoning", "function_call"),  # responses/v1's blocks that are no item
        *("tool_call", "invalid_tool_call", "tool_call_chunk", "non_standard"),  # langchain-core's standard ones
        *("image", "audio", "file", "text-plain", "video"),
        *("server_tool_call", "server_tool_call_chunk", "server_tool_result"),
    }
)
"""The block types LangChain makes of a Responses stream that are no item: any other type in a
ChatOpenAI chunk is an item of a type no reading knows (an item langchain-openai passed on as it came)."""


def _unknown_item(kind: str) -> bool:
    return kind not in ITEMS and kind not in QUIET_ITEMS and kind not in LANGCHAIN_BLOCKS


def _item(block: Any, hosted: bool) -> dict[str, Any] | None:
    """The Responses item a content block holds, or None: v0's item itself, v1's ``non_standard``
    value, or an item rebuilt from v1's ``server_tool_call`` (its ``args`` the item's input)."""
    kind = _kind(block)
    if kind is None:
        return None
    if kind == "non_standard":  # where langchain-core's v1 keeps every item it has no block for
        value, inner = block.get("value"), _kind(block.get("value"))
        # One the decoder does not know either goes to it, which reports it (unknown-item), as on
        # the wire: it may be a call. A function call's is the chunk's tool call chunks.
        unknown = hosted and inner is not None and inner not in QUIET_ITEMS and inner != "function_call"
        return {**value} if inner in ITEMS or unknown else None
    if kind in ITEMS or (hosted and _unknown_item(kind)):  # the decoder reports the unknown (unknown-item)
        return {key: value for key, value in block.items() if key != "index"}
    if kind == "image" and hosted:
        return _image_generation_call(block)
    if kind != "server_tool_call" or not hosted:
        return None
    name, extras, args = block.get("name"), block.get("extras"), block.get("args")
    if name == "remote_mcp":
        item: dict[str, Any] = {"type": "mcp_call", "id": block.get("id"), "arguments": dumps(args or {})}
        if isinstance(extras, Mapping) and isinstance(extras.get("tool_name"), str):
            item["name"] = extras["tool_name"]
        return item
    item_type = HOSTED_BY_NAME.get(name) if isinstance(name, str) else None
    if item_type is None:
        return None
    field = CALL_ITEMS[item_type].field
    item = {"type": item_type, "id": block.get("id")}
    if field is not None and isinstance(args, Mapping):
        item[field] = args.get(field) if field in ("code", "queries") else dict(args)
    return item


def _image_generation_call(block: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``image_generation_call`` item v1 made an ``image`` block of (its result the base64, its
    other fields in ``extras``); None for an image of no such item (one without the item's id)."""
    if not isinstance(block.get("id"), str) or not isinstance(block.get("base64"), str):
        return None
    extras = block.get("extras")
    item = {key: value for key, value in extras.items() if isinstance(key, str)} if isinstance(extras, Mapping) else {}
    item.update(type="image_generation_call", id=block["id"], result=block["base64"])
    return item


def _among(call_id: Any, ids: Any) -> bool:
    """Is ``call_id`` one of ``ids`` (str ids)? An id of another kind (a list) is none of them."""
    return isinstance(call_id, str) and call_id in ids


def _unknown_tool(block: Any) -> bool:
    """Is the block a v1 ``server_tool_call`` naming a tool no hosted item type is known for?"""
    name = block.get("name") if _kind(block) == "server_tool_call" else "mcp_list_tools"
    return not isinstance(name, str) or name not in KNOWN_TOOLS


def _kind(block: Any) -> str | None:
    """A block's ``type`` where it is a block with a str type (a hand-made chunk may hold anything)."""
    kind = block.get("type") if type(block) is dict or isinstance(block, Mapping) else None
    return kind if isinstance(kind, str) else None


def _count(value: Any) -> int | None:
    """LangChain's item count from a block's ``index``: v0's int, v1's ``lc_<kind>_<count>``. A count
    too long for Python's int-string conversion is none (LangChain counts a turn's items; no turn
    holds that many): the item goes after the others, as one with no count."""
    if type(value) is int and value >= 0:
        return value
    found = _COUNT.fullmatch(value) if isinstance(value, str) else None
    return count_in(found.group(1)) if found else None
