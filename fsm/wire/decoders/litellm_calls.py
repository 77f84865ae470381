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

Its Gemini route writes ``thought_signatures`` on each chunk it streams: the ``thoughtSignature`` of each
part of that Gemini event, in the parts' order, and a part's signature nowhere else but for a call's (on
its entry, ``provider_specific_fields.thought_signature``, which is read, and in the id it mints, after
``__thought__``) and a thought's in a whole response (its block's ``signature``). A chunk's parts are its thought
(``reasoning_content``), its text (``content``) and its calls; an entry a call or block of the chunk
carries is theirs; the one entry left is the one part left unsigned, where the chunk has one: the
thought's, read onto its reasoning block in Gemini's format (so it goes to ``gemini`` alone: policy
signature-by-origin), or the text's (a chunk of no part but a signature: the empty text part Gemini ends
a turn with), read as the text's and kept as the list of it alone (``Result.provider_fields``), which
``fsm.messages`` sends back in the ``openai-chat`` message's ``provider_specific_fields``, where LiteLLM
reads the text part's (policy litellm-thought-signatures). A call's is read from its entry; its
``openai-chat`` entry goes back under the id that holds it, with no ``extra_content`` beside. Any other
entry (no text, more than the chunk's unsigned parts) is reported (``part-not-reassembled``); one
listed twice is one signature.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fsm.errors import RemoteProtocolError
from fsm.events import ArgumentsSnapshot, CallEnd, CallRef, CallSeen, Event, ProviderFields, ReasoningDelta, TextDelta
from fsm.wire.decoders._fields import text
from fsm.wire.decoders._wire import COMPAT_SIGNATURE, compat_signature, dumps
from fsm.wire.decoders.chat_reasoning import GEMINI_FORMAT
from fsm.wire.decoders.chat_reasoning import LITELLM_FIELDS as LITELLM_FIELDS  # its decoders read it here

_READ = frozenset(("server_tool_calls", "web_search_calls", "thought_signatures"))
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

    __slots__ = ("read", "text_signed", "told")

    def __init__(self) -> None:
        self.read: dict[str, str | None] = {}
        self.told: set[str] = set()  # the unread keys already reported (LiteLLM repeats its snapshots)
        self.text_signed: str | None = None  # the text's signature, read from thought_signatures

    def events(self, fields: Any, delta: Mapping[str, Any], diagnose: Callable[[str, str], None]) -> list[Event]:
        """The events of a delta's ``provider_specific_fields``: calls opened, calls given whole;
        its other keys said (policy litellm-fields-said)."""
        if not isinstance(fields, Mapping):
            return []
        kept = {key: fields[key] for key in KEPT_FIELDS if not _empty(fields.get(key))}
        events: list[Event] = [ProviderFields(kept)] if kept else []
        if not _empty(listed := fields.get("thought_signatures")):
            events += self._placed(listed, delta, diagnose)
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

    def _placed(self, listed: Any, delta: Mapping[str, Any], diagnose: Callable[[str, str], None]) -> list[Event]:
        """Policy litellm-thought-signatures: the one entry of ``listed`` (a delta's ``thought_signatures``)
        that no call or block of ``delta`` carries, onto the one part of it left unsigned, as a piece of
        no text that joins it; every entry not placed so, said."""
        what = f"LiteLLM's {LITELLM_FIELDS}.thought_signatures"
        if type(listed) is not list:
            diagnose("part-not-reassembled", f"{what} is {type(listed).__name__}, not a list: none of it is kept")
            return []
        carried, left = _carried(delta), dict[str, int]()
        for at, entry in enumerate(listed):
            if type(entry) is not str or not entry:
                diagnose("part-not-reassembled", f"{what}[{at}] is {_shown(entry)}, not a signature: not kept")
            elif entry not in carried:
                left.setdefault(entry, at)  # (listed twice: one part's signature, kept once)
        # (the text's signature, told twice: fsm's own re-emission writes it in extra_content too)
        part = "text" if [*left] == [_google(delta)] else _unsigned(delta) if len(left) == 1 else None
        if part is None:
            for entry, at in left.items():  # (a megabyte of it would say nothing more than its size)
                said = f"{what}[{at}] ({len(entry)} characters) is not kept: no part of its delta is left for it"
                diagnose("part-not-reassembled", said if len(left) == 1 else f"{said} alone ({len(left)} are left)")
            return []
        signature = next(iter(left))
        if part == "reasoning":
            return [ReasoningDelta(None, "", signature, format=GEMINI_FORMAT)]
        if self.text_signed is not None and self.text_signed != signature:
            diagnose("part-not-reassembled", f"{what}: another text signature replaced the text's earlier one")
        self.text_signed = signature
        # kept as LiteLLM's own message keeps it too, where it reads the text part's signature back
        return [TextDelta("", signature), ProviderFields({"thought_signatures": [signature]})]


def signed_by(entry: Mapping[str, Any], position: int, delta: Mapping[str, Any]) -> str | None:
    """The thought signature of a chat tool-call entry (``tool_calls[position]`` of ``delta``): Gemini's OpenAI
    endpoint's (``extra_content``), else LiteLLM's Gemini route's (``provider_specific_fields.thought_signature``;
    policy litellm-thought-signatures), else None. LiteLLM's is read where ``delta`` carries LiteLLM's fields too,
    as LiteLLM writes them, both of the one part's signature: the chunk shortcut, which takes a delta of one
    call and no such field, reads no entry's fields (a look at each call's entry would cost every call)."""
    what = f"tool_calls[{position}]"
    if COMPAT_SIGNATURE in entry:
        return compat_signature(entry, what)
    if not delta.get(LITELLM_FIELDS):
        return None
    fields = entry.get(LITELLM_FIELDS)
    signed = fields.get("thought_signature") if isinstance(fields, Mapping) else None
    return text(signed, f"{what}.{LITELLM_FIELDS}.thought_signature") or None


ID_SIGNATURE = "__thought__"
"""What LiteLLM's Gemini route writes between a call's id and its signature, in the id it gives the call."""


def _carried(delta: Mapping[str, Any]) -> set[str]:
    """The signatures ``delta``'s calls and blocks carry themselves, read leniently:
    a value of another type carries none (the decoder reports it where it reads it)."""
    carried: list[Any] = []
    entries = delta.get("tool_calls")
    for entry in entries if type(entries) is list else [entries] if isinstance(entries, Mapping) else ():
        if isinstance(entry, Mapping):
            fields = entry.get(LITELLM_FIELDS)
            carried.append(fields.get("thought_signature") if isinstance(fields, Mapping) else None)
            carried.append(_google(entry))  # (an id alone that holds one gives the call none: said, not carried)
    blocks = delta.get("thinking_blocks")
    for block in blocks if type(blocks) is list else ():
        carried.append(block.get("signature") if isinstance(block, Mapping) else None)
    return {signature for signature in carried if type(signature) is str and signature}


def _google(said: Mapping[str, Any]) -> Any:
    """The signature an entry's or a delta's ``extra_content`` holds (Gemini's OpenAI endpoint's shape), or None."""
    extra = said.get(COMPAT_SIGNATURE)
    google = extra.get("google") if isinstance(extra, Mapping) else None
    return google.get("thought_signature") if isinstance(google, Mapping) else None


_QUIET = frozenset(("role", LITELLM_FIELDS))
"""A delta's keys that say no part of the turn."""


def _unsigned(delta: Mapping[str, Any]) -> str | None:
    """The one part of ``delta`` that can take a signature it does not carry: its thought
    (``reasoning``: plain reasoning text, no blocks) or its text (``text``), or, in a delta that says
    nothing at all, the empty text part Gemini ends a turn with; None for none, or for both."""
    said = delta.get("content")
    thought = delta.get("reasoning_content") or delta.get("reasoning")
    blocks = delta.get("thinking_blocks") or delta.get("reasoning_details")  # (read in its stead)
    thought = thought if type(thought) is str and not blocks else None
    written = said if type(said) is str and said and not delta.get(COMPAT_SIGNATURE) else None
    if thought and written:
        return None  # (which of the two the signature is LiteLLM's list does not say)
    if thought or written:
        return "reasoning" if thought else "text"
    silent = all(key in _QUIET or _empty(value) for key, value in delta.items())
    return "text" if silent else None


def _shown(value: Any) -> str:
    return "an empty text" if type(value) is str else type(value).__name__


def _empty(value: Any) -> bool:
    """A value that says nothing: None, or an empty object, list or text."""
    return value is None or (isinstance(value, (Mapping, list, tuple, str)) and not value)
