"""LiteLLM's server tool calls: the calls a provider ran itself (Claude's web search, web fetch, code
execution), which LiteLLM's OpenAI-shaped chunks carry only in ``delta.provider_specific_fields``, never
in ``tool_calls``. Through LiteLLM's SDK and its proxy alike:

* ``server_tool_calls``: each call whole, as a chat tool call entry (``id``, ``function.name``,
  ``function.arguments`` text), once its block ended; the list grows through the stream, so a call
  already read with the same text is not read again;
* ``web_search_calls``: a hosted web call by its tool use id, from the moment its block opens, as a
  Responses ``web_search_call`` item whose ``action`` says the tool (``search``: ``web_search``,
  ``open_page``: ``web_fetch``, as LiteLLM maps them). Its input text is not there (LiteLLM gathers
  it until the block stops), but a call opened here and never given whole (a stream cut inside the
  block, at ``max_tokens``) is reported as cut, under its name, not lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fsm.errors import RemoteProtocolError
from fsm.events import ArgumentsSnapshot, CallEnd, CallRef, CallSeen, Event
from fsm.wire.decoders._wire import dumps

LITELLM_FIELDS = "provider_specific_fields"
"""The key of a LiteLLM delta under which it keeps what the OpenAI chat shape has no field for."""

_WEB_TOOLS = {"search": "web_search", "open_page": "web_fetch"}
"""The Claude tool a ``web_search_calls`` item's action type stands for (LiteLLM writes one for each)."""


class ServerCalls:
    """A stream's LiteLLM server calls: the text each was read with (None: opened, not yet whole)."""

    __slots__ = ("read",)

    def __init__(self) -> None:
        self.read: dict[str, str | None] = {}

    def events(self, fields: Any) -> list[Event]:
        """The events of a delta's ``provider_specific_fields``: calls opened, calls given whole."""
        if not isinstance(fields, Mapping):
            return []
        events: list[Event] = []
        opened = fields.get("web_search_calls")
        for call_id, item in opened.items() if isinstance(opened, Mapping) else ():
            if isinstance(call_id, str) and call_id and call_id not in self.read:
                self.read[call_id] = None
                action = item.get("action") if isinstance(item, Mapping) else None
                tool = action.get("type") if isinstance(action, Mapping) else None
                name = _WEB_TOOLS.get(tool) if isinstance(tool, str) else None
                events.append(CallSeen(CallRef(None, call_id, name, server=True)))
        whole = fields.get("server_tool_calls")
        for n, entry in enumerate(whole if isinstance(whole, list) else ()):
            function = entry.get("function") if isinstance(entry, Mapping) else None
            call_id = entry.get("id") if isinstance(entry, Mapping) else None
            if not isinstance(function, Mapping) or not isinstance(call_id, str) or not call_id:
                raise RemoteProtocolError(f"provider_specific_fields.server_tool_calls[{n}] is no call with an id")
            name, arguments = function.get("name"), function.get("arguments")
            text = arguments if isinstance(arguments, str) else dumps(arguments if arguments is not None else {})
            if call_id in self.read and self.read[call_id] == text:
                continue  # read from an earlier chunk's list
            self.read[call_id] = text
            ref = CallRef(None, call_id, name if isinstance(name, str) else None, server=True)
            events += [CallSeen(ref), ArgumentsSnapshot(ref, text), CallEnd(ref)]
        return events
