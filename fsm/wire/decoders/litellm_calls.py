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

Two keys LiteLLM reads back on the next request's assistant message are kept as they last came
(``Result.provider_fields``; policy litellm-fields-said): ``openai_responses_replay``, its Responses
bridge's record of the order of the turn's output items with a checksum of the chat message they
make, and ``phase``. ``fsm.messages`` sends them back in the openai-chat message's
``provider_specific_fields``, where LiteLLM replays the items exactly when the checksum matches the
message (fsm's rebuilt message does: the same text, calls and reasoning items).

Every other key with a value is reported once a stream (``part-not-reassembled``, at the event that
first carries it; policy litellm-fields-said), unless it is a copy of what the delta holds itself:
the same key as one of the delta's, or a copy of the reasoning LiteLLM also writes as the delta's
``reasoning_content`` and ``thinking_blocks`` (``thinking_blocks``, ``reasoning_content``, and
Bedrock Converse's ``reasoningContent`` block), which the decoder reads where they stand: no key
passes in silence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fsm.errors import RemoteProtocolError
from fsm.events import ArgumentsSnapshot, CallEnd, CallRef, CallSeen, Event, ProviderFields
from fsm.wire.decoders._wire import dumps
from fsm.wire.decoders.chat_reasoning import LITELLM_FIELDS as LITELLM_FIELDS  # its decoders read it here

_READ = frozenset(("server_tool_calls", "web_search_calls"))
"""The keys of ``provider_specific_fields`` read here."""
KEPT_FIELDS = ("openai_responses_replay", "phase")
"""The keys kept as they came and sent back (``Result.provider_fields``)."""
_COPIES = frozenset(("thinking_blocks", "reasoning_content", "reasoningContent"))
"""Its keys that copy the reasoning LiteLLM gives the delta itself (``reasoningContent``: the
Converse block its Bedrock route reads ``reasoning_content`` and ``thinking_blocks`` from)."""
_WEB_TOOLS = {"search": "web_search", "open_page": "web_fetch"}
"""The Claude tool a ``web_search_calls`` item's action type stands for (LiteLLM writes one for each)."""


class ServerCalls:
    """A stream's LiteLLM server calls: the text each was read with (None: opened, not yet whole)."""

    __slots__ = ("read", "told")

    def __init__(self) -> None:
        self.read: dict[str, str | None] = {}
        self.told: set[str] = set()  # the unread keys already reported (LiteLLM repeats its snapshots)

    def events(self, fields: Any, delta: Mapping[str, Any], diagnose: Callable[[str, str], None]) -> list[Event]:
        """The events of a delta's ``provider_specific_fields``: calls opened, calls given whole;
        its other keys said (policy litellm-fields-said)."""
        if not isinstance(fields, Mapping):
            return []
        kept = {key: fields[key] for key in KEPT_FIELDS if not _empty(fields.get(key))}
        events: list[Event] = [ProviderFields(kept)] if kept else []
        for key, value in fields.items():
            if (
                key in _READ
                or key in KEPT_FIELDS
                or key in _COPIES
                or key in self.told
                or _empty(value)
                or key in delta
            ):
                continue
            self.told.add(key)
            named = key if isinstance(key, str) else repr(key)
            diagnose(
                "part-not-reassembled",
                f"LiteLLM's provider_specific_fields.{named} is not kept: no Result field holds it",
            )
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


def _empty(value: Any) -> bool:
    """A value that says nothing: None, or an empty object, list or text."""
    return value is None or (isinstance(value, (Mapping, list, tuple, str)) and not value)
