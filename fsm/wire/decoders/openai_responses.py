"""OpenAI Responses API streaming.

``response.output_item.added`` opens a ``function_call`` at its ``output_index`` with its ``call_id``
(the id a result must answer) and name; ``response.function_call_arguments.delta`` appends text;
``.done`` carries the final arguments and ``response.output_item.done`` the final item. Identity is
the output index and ``call_id``: item ids may change between events, so they are only used to find
the output index of a delta that lacks one. The final arguments are the provider's word: equal to
the streamed text they change nothing; different, they replace it (``arguments-replaced``); with no
deltas at all (LM Studio), they are the arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fsm.errors import RemoteProtocolError
from fsm.events import ArgumentsFragment, ArgumentsSnapshot, CallEnd, CallRef, CallSeen, Event, StreamEnd
from fsm.wire.decoders._wire import index, mapping, text

_QUIET_PREFIXES = (
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.content_part.",
    "response.output_text.",
    "response.refusal.",
    "response.reasoning",
    "response.web_search_call.",
    "response.file_search_call.",
    "response.code_interpreter_call",
    "response.image_generation_call.",
    "response.mcp_",
)
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


class _Item:
    __slots__ = ("finalized", "ref")

    def __init__(self, ref: CallRef) -> None:
        self.ref = ref
        self.finalized = False


class OpenAIResponsesDecoder:
    name = "openai-responses"
    final_arguments_win = True
    """``.done`` may differ from the deltas and then replaces them: streamed text is not final."""

    def __init__(self) -> None:
        self._items: dict[int, _Item] = {}
        self._index_of_item: dict[str, int] = {}

    def decode(self, payload: Mapping[str, Any], diagnose: Callable[[str, str], None]) -> list[Event]:
        kind = str(payload.get("type", ""))
        if kind == "response.output_item.added":
            return self._added(payload)
        if kind == "response.function_call_arguments.delta":
            item = self._item(payload)
            piece = text(payload.get("delta"), "delta")
            return [ArgumentsFragment(item.ref, piece)] if item and piece else []
        if kind == "response.function_call_arguments.done":
            item = self._item(payload)
            if item is None:
                return []
            item.finalized = True
            return [ArgumentsSnapshot(item.ref, text(payload.get("arguments"), "arguments") or "", confirms=True)]
        if kind == "response.output_item.done":
            return self._item_done(payload)
        if kind == "response.completed":
            return [StreamEnd("stop", "completed")]
        if kind == "response.incomplete":
            response = mapping(payload.get("response"), "response")
            reason = str(mapping(response.get("incomplete_details"), "incomplete_details").get("reason"))
            return [StreamEnd(_INCOMPLETE.get(reason, "length"), f"incomplete: {reason}")]
        if kind in ("response.failed", "error"):
            error = payload.get("error") or mapping(payload.get("response"), "response").get("error") or {}
            message = error.get("message", error) if isinstance(error, Mapping) else error
            return [StreamEnd("error", kind, str(message))]
        if not kind.startswith(_QUIET_PREFIXES) and not kind.endswith((".done", ".added", ".delta")):
            diagnose("unknown-event", f"Responses event type {kind!r}")
        return []

    def _added(self, payload: Mapping[str, Any]) -> list[Event]:
        item = mapping(payload.get("item"), "item")
        if item.get("type") != "function_call":
            return []
        at = index(payload.get("output_index"), "output_index")
        ref = CallRef(at, text(item.get("call_id"), "call_id"), text(item.get("name"), "name"))
        if at is None:
            raise RemoteProtocolError("a function_call item without output_index")
        self._items[at] = _Item(ref)
        if item.get("id"):
            self._index_of_item[str(item["id"])] = at
        prefilled = text(item.get("arguments"), "arguments")
        return [ArgumentsFragment(ref, prefilled)] if prefilled else [CallSeen(ref)]

    def _item(self, payload: Mapping[str, Any]) -> _Item | None:
        at = index(payload.get("output_index"), "output_index")
        if at is None and payload.get("item_id") is not None:
            at = self._index_of_item.get(str(payload["item_id"]))
        return self._items.get(at) if at is not None else None

    def _item_done(self, payload: Mapping[str, Any]) -> list[Event]:
        item = mapping(payload.get("item"), "item")
        if item.get("type") != "function_call":
            return []
        known = self._item(payload)
        if known is None:  # never announced: the whole call arrives here
            added = self._added(payload)
            known = self._item(payload)
            if known is None:
                return added
        events: list[Event] = []
        if not known.finalized:
            final = text(item.get("arguments"), "arguments") or ""
            events.append(ArgumentsSnapshot(known.ref, final, confirms=True))
        events.append(CallEnd(known.ref))
        return events
