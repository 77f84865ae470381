"""OpenAI chat-completions streaming (and its many "OpenAI-compatible" dialects).

``choices[0].delta.tool_calls[]`` entries become :class:`CallSeen` (no argument text),
:class:`ArgumentsFragment` (text to append) or :class:`ArgumentsSnapshot` (a server that sends the
arguments as a JSON object instead of text). Dialect quirks handled here, not in the registry:

* ``index`` missing or null, ``id``/``name`` empty strings: passed on as absent evidence;
* ``choices[].message`` duplicating ``choices[].delta`` (Writer): ``delta`` is read, ``message``
  only when there is no ``delta``;
* the legacy ``delta.function_call`` (one call, no id);
* ``extra_content.google.thought_signature``: a call's on its entry (Gemini), the text's on the delta;
* LiteLLM's ``thinking_blocks`` (Claude's signed and redacted reasoning) and OpenRouter's
  ``reasoning_details`` (its blocks with their signatures), read over the plain reasoning;
* a custom tool's call (``type: custom``, ``custom: {name, input}``): freeform input text; an entry
  of a type with neither ``function`` nor ``custom`` is reported (``unknown-event``);
* LiteLLM's server tool calls, in ``delta.provider_specific_fields`` (``litellm_calls.py``);
* ``finish_reason`` normalised, OpenRouter's ``native_finish_reason`` kept beside it; an ``error``
  (beside choices too; or vLLM's payload of ``"object": "error"``) ends the stream with ``error``. Beside
  a finish reason that is not ``error`` (``tool_calls``, ``length``, ...), that finish comes first and the
  error after it: the turn ended as its choice says, and its calls stand (policy error-beside-finish). An error's
  ``incomplete_tool_calls`` (``[{"index", "id", "status"}]``, as ``DeltaEmitter.finish`` lists the calls that did
  not complete) ends each call listed as it says, before the finish: ``truncated`` as an item the provider gave up,
  ``invalid`` (or ``declined``: a model that declined made it) as a call no tool can run (policy
  incomplete-calls-not-run), ``cut-by-decline`` as one whose open JSON a Claude decline cut (no violation:
  policy decline-cut-waits).

A payload with none of ``choices``, ``usage``, ``error`` or a ``chat.completion`` object type is not
this wire shape at all (another provider's stream, a proxy's own message): ``unknown-event``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from fsm.errors import RemoteProtocolError
from fsm.events import (
    Event,
    StreamEnd,
    build_arguments_fragment,
    build_arguments_snapshot,
    build_call_ref,
    build_call_seen,
    build_usage_report,
)
from fsm.wire.decoders import error_words
from fsm.wire.decoders._fields import index as read_index
from fsm.wire.decoders._fields import number_text, written
from fsm.wire.decoders._listed_calls import declines_noted, listed_incomplete
from fsm.wire.decoders._wire import (
    BARE_REFS,
    COMPAT_SIGNATURE,
    TurnSaid,
    chat_finish,
    chat_said,
    dumps,
    unsaid,
)
from fsm.wire.decoders.chat_chunks import (
    PLAIN_CHOICE,
    PLAIN_ENDS,
    PLAIN_SAID_KEYS,
    SAID_KEY_SET,
    bare_fragment_in,
    calls_ending_in,
    empty_text,
    finish_in,
    header_in,
    plain_delta,
    plain_said,
    routed_entry_in,
    said_beside,
    said_in,
    unkept,
    usage_in,
    whole_call_in,
)
from fsm.wire.decoders.chunk_form import FormSpec
from fsm.wire.decoders.litellm_calls import LITELLM_FIELDS, ServerCalls, signed_by

if TYPE_CHECKING:
    from fsm.engine.registry import Registry


_SAID_IN_ORDER = ("content", "reasoning_content", "reasoning")
"""The keys plain_said reads text and reasoning from."""
_BARE_REF = BARE_REFS.ref
"""The shortcut's refs of bare fragments (made only when the general routing needs one): the bound
method made once, not once a chunk."""


class OpenAIChatDecoder:
    name = "openai-chat"
    _bare = BARE_REFS
    _served: ServerCalls | None = None  # made by the first delta that carries LiteLLM's server calls

    def decode(self, payload: Mapping[str, Any], diagnose: Callable[[str, str], None]) -> list[Event]:
        error, choices = payload.get("error"), payload.get("choices")
        if not error and payload.get("object") == "error":  # the payload is the error, as error_in reads it
            error = payload
        if error and not choices:
            return [*listed_incomplete(error, diagnose), StreamEnd("error", *error_words(error, payload))]
        if choices is None:
            if not _recognised(payload):
                diagnose("unknown-event", f"an OpenAI chat payload with no choices (keys: {_keys(payload)})")
                return []
            choices = []  # a usage-only chunk
        if type(choices) is not list:
            raise RemoteProtocolError("choices is not a list")
        events: list[Event] = []
        for choice in choices:
            if type(choice) is not dict and not isinstance(choice, Mapping):
                raise RemoteProtocolError("a choice is not an object")
            if choice.get("index"):
                diagnose("choice-ignored", f"choice {written(choice.get('index'))} is not reassembled")
                continue
            delta = choice.get("delta")
            if delta is None:
                delta = choice.get("message")
            if type(delta) is dict or isinstance(delta, Mapping):
                # A dict with no key chat_said reads (a call's delta, role beside it or not) says
                # nothing: chat_said would find so, key by key (a caller's Mapping is never iterated).
                if (type(delta) is not dict or not SAID_KEY_SET.isdisjoint(delta)) and not chat_said(delta, events):
                    events += unsaid(delta, diagnose)
                    unkept(delta, diagnose)
                self._calls(delta, events, diagnose)
                if delta.get(LITELLM_FIELDS):
                    self._served = self._served or ServerCalls()
                    events += self._served.events(delta[LITELLM_FIELDS], delta, diagnose)
            elif delta is not None:
                raise RemoteProtocolError("delta is not an object")
            finish = choice.get("finish_reason")
            if finish:
                events.append(chat_finish(choice, written(finish)))
        usage = payload.get("usage")
        if usage and isinstance(usage, Mapping):
            events.append(build_usage_report(dict(usage)))
        if error:  # beside choices (OpenRouter's mid-stream error): it ends the stream, with its message
            # A finish of the choice's own (not OpenRouter's "error") ended the turn first: the error
            # comes after it, as the same two in two chunks would (policy error-beside-finish).
            finish = [e for e in events if type(e) is StreamEnd and e.finish_reason != "error"]
            rest = [e for e in events if type(e) is not StreamEnd]
            ends = listed_incomplete(error, diagnose)
            if finish and declines_noted(error, ends):  # fsm's own note of them (policy declines-read-back)
                return [*rest, *ends, *finish]
            return [*rest, *ends, *finish, StreamEnd("error", *error_words(error, payload))]
        return events

    def shortcut(self, payload: dict[str, Any], registry: Registry, content: TurnSaid) -> bool:
        """Take a chunk of the commonest kinds (see chat_chunks.plain_delta) straight to ``registry``
        (text and reasoning to ``content``), as decode() and Reassembler._apply would take its events,
        without building them; False, having done nothing, for any other chunk. Only while the stream
        has no finish reason: after it, events are reported as late, which _apply does.

        It decides as plain_delta, one_entry and entry(), then plain_said and said_in, together, the
        three commonest entries (a bare fragment, a whole call, a call's header) and plain text or
        reasoning read in line: two to four calls fewer a chunk, a tenth of what a fragment costs,
        and no event made for a piece of text (test_the_chunk_shortcut_decides_as_its_readers)."""
        try:  # (a subscript costs half a get; a key missing here means False, as None would)
            choices = payload["choices"]
            if type(choices) is not list or len(choices) != 1 or payload.get("error") or payload.get("usage"):
                return False
            choice = choices[0]
            if type(choice) is not dict or choice.get("index") or choice.get("finish_reason"):
                return False
            delta = choice["delta"]
        except KeyError:
            return False
        if type(delta) is not dict:
            return False
        entries = delta.get("tool_calls")
        if type(entries) is list and len(entries) == 1 and (len(delta) == 1 or not said_beside(delta)):
            entry = entries[0]
            if type(entry) is dict and ((size := len(entry)) < 3 or COMPAT_SIGNATURE not in entry):
                function = entry.get("function")
                if type(function) is dict:
                    index, text = entry.get("index"), function.get("arguments", "")
                    if type(index) is int and type(text) is str:
                        # Two keys (index and function): no id. An id or a name of "" is none (CallRef).
                        if size > 2 and type(call_id := entry.get("id")) is str and call_id:
                            if type(name := function.get("name")) is str and name:
                                if text:
                                    registry.whole_call(index, call_id, name, text)
                                else:  # header_in's: the call's first chunk, no text yet
                                    registry.call_header(index, call_id, name)
                                return True
                        elif (
                            (size < 3 or call_id is None or type(call_id) is str)
                            and text  # Mistral's fragments after a call's header name it "":
                            and (len(function) == 1 or (name := function.get("name")) is None or empty_text(name))
                        ):
                            registry.bare_fragment(index, text, _BARE_REF)
                            return True
                    return self.entry(entry, function, registry)
        elif entries is None and delta.keys() <= PLAIN_SAID_KEYS:  # plain_said
            text, first, second = delta.get("content"), delta.get("reasoning_content"), delta.get("reasoning")
            if (
                (text is None or type(text) is str)
                and (first is None or type(first) is str)
                and (second is None or type(second) is str)
            ):
                content.said(text or "", first or second or "")
                return True
        events = said_in(delta)  # no call, or more than one, or text beside one: said_in tells
        if events is None:
            return False
        for event in events:
            content.apply(event)
        return True

    def commonest_said(self, payload: dict[str, Any], content: TurnSaid) -> bool | None:
        """shortcut()'s plainest chunk of text or reasoning alone (plain_delta, plain_said), taken
        to ``content`` as shortcut() takes it: None (taken; no event made, so nothing for the
        reassembler to reset), or False, doing nothing, for any other chunk. Asked of a chunk
        from the wire, so that its form is learnt (said_form_of) and the next such chunks are
        read unparsed; a fed dict meets shortcut() first, which takes every chunk this takes."""
        delta = plain_delta(payload)
        said = plain_said(delta) if delta is not None else None
        if said is None:
            return False
        content.said(said[0], said[1])
        return None

    def said_form_of(self, payload: dict[str, Any]) -> tuple[FormSpec, str] | None:
        """Of a chunk commonest_said took: where its one piece of text sits and which key holds it
        (``content``, ``reasoning_content`` or ``reasoning``); None when it says nothing or more
        than one (a form has one text hole). The choice is 0, no hole: shortcut() reads no other."""
        delta = payload["choices"][0]["delta"]
        keys = [key for key in _SAID_IN_ORDER if delta.get(key)]
        if len(keys) != 1:
            return None
        return FormSpec(("choices", 0, "delta", keys[0]), 0), keys[0]

    def said_at(self, key: str, place: int, piece: str, content: TurnSaid) -> None:
        """What commonest_said does with a chunk of said_form_of's form holding ``piece`` under
        ``key``: the form's other strings are the learnt chunk's, empty or null, so plain_said
        reads ``piece`` as the text or the reasoning. None: taken, as commonest_said answers."""
        if key == "content":
            content.said(piece, "")
        else:
            content.said("", piece)

    def entry(self, entry: dict[str, Any], function: dict[str, Any], registry: Registry) -> bool:
        """What shortcut() does with the one entry of a plain delta (see one_entry): False, having
        done nothing, when it is none of a bare fragment, a whole call, a call's header and an entry
        the general routing takes (routed_entry_in)."""
        if type(entry.get("index")) is int:  # (the first three readers need one: else the last reads alone)
            # An entry with an id is never a bare fragment (bare_fragment_in), and one without is never
            # a whole call or a header: the id picks which readers can take it, so each runs alone.
            if (len(entry) < 3 or not entry.get("id")) and (fragment := bare_fragment_in(entry, function)) is not None:
                registry.bare_fragment(fragment[0], fragment[1], self._bare.ref)
                return True
            whole = whole_call_in(entry, function)
            if whole is not None:
                registry.whole_call(whole[0], whole[1], whole[2], whole[3])
                return True
            header = header_in(entry, function)
            if header is not None:
                registry.call_header(header[0], header[1], header[2])
                return True
        routed = routed_entry_in(entry, function)
        if routed is None:
            return False
        # The one event decode() makes of it, taken as Reassembler._apply takes it, without the event.
        index, call_id, name, text = routed
        ref = build_call_ref(index, call_id, name, 0) if call_id is not None or name is not None else _BARE_REF(index)
        if text:
            registry.arguments(ref, text, "fragment")
        else:
            registry.call_seen(ref)
        return True

    def fragment(self, index: int, text: str, registry: Registry) -> None:
        registry.bare_fragment(index, text, self._bare.ref)  # entry() of a bare fragment (index, text)

    def hold(self, index: int, text: str, registry: Registry) -> None:
        """fragment() for a read of many events (see lean_fragment_in): held back with those before
        it (Registry.hold), the caller settling the registry before anything else and at the end of
        the read. Only while the stream has no finish reason, as for shortcut()."""
        registry.hold(index, text, self._bare.ref)

    def ending(
        self,
        payload: dict[str, Any],
        content: TurnSaid,
        finished: Callable[[StreamEnd], None] | None,
        registry: Registry,
    ) -> bool:
        """Take the last chunk (see finish_in) to ``content.apply``, ``finished`` and
        ``content.usage_replaced``, or a chunk of usage alone (see usage_in) to
        ``content.usage_replaced``, in the order Reassembler._apply would take their events, without
        building the others; a last chunk with calls (calls_ending_in) too, its delta first as
        shortcut() takes it alone. False, having done nothing, for any other chunk (or a delta
        shortcut() refuses). ``finished`` is None once the stream has its finish reason: then only
        usage alone is taken. (``content`` itself, not its two methods: every stream's last chunk
        comes here, and most use neither.)"""
        if finished is not None:
            last = finish_in(payload)
            if last is None and (calls := calls_ending_in(payload)) is not None:
                if not self.shortcut({"choices": [{"delta": calls[0]}]}, registry, content):  # its delta alone
                    return False
                last = [], calls[1], calls[2]
            if last is not None:
                said, raw, usage = last
                for event in said:
                    content.apply(event)
                choice = payload["choices"][0]  # a choice with nothing beside its word: the word's one end
                plain = PLAIN_ENDS.get(raw) if choice.keys() <= PLAIN_CHOICE else None
                finished(plain or chat_finish(choice, raw))
                if usage:
                    content.usage_replaced(usage)
                return True
        alone = usage_in(payload)
        if alone is None:
            return False
        if alone:
            content.usage_replaced(alone)
        return True

    def _calls(self, delta: Mapping[str, Any], events: list[Event], diagnose: Callable[[str, str], None]) -> None:
        entries = delta.get("tool_calls")
        if entries is None:
            legacy = delta.get("function_call")
            entries = [{"function": legacy}] if isinstance(legacy, Mapping) else []
        elif type(entries) is not list and isinstance(entries, Mapping):
            entries = [entries]
        elif type(entries) is not list:
            raise RemoteProtocolError("tool_calls is not a list")
        for position, entry in enumerate(entries):
            if type(entry) is not dict and not isinstance(entry, Mapping):
                raise RemoteProtocolError(f"tool_calls[{position}] is not an object")
            function = entry.get("function")
            if function is None:
                if self._custom(entry, position, events, diagnose):
                    continue
                function = {}
            if type(function) is not dict and not isinstance(function, Mapping):
                raise RemoteProtocolError(f"tool_calls[{position}].function is not an object")
            index, call_id, name = entry.get("index"), entry.get("id"), function.get("name")
            if type(index) is not int or index >> 63:  # past 63 bits or below 0: _index reads it
                index = _index(index, position)
            if call_id is not None or name is not None:
                ref = build_call_ref(index, _text(call_id, "id", position), _text(name, "name", position), position)
            else:
                ref = self._bare.ref(index, position)
            arguments = function.get("arguments")
            signed = signed_by(entry, position, delta) if COMPAT_SIGNATURE in entry or LITELLM_FIELDS in entry else None
            if type(arguments) is str:
                events.append(
                    build_arguments_fragment(ref, arguments, signed) if arguments else build_call_seen(ref, signed)
                )
            elif isinstance(arguments, Mapping):
                events.append(build_arguments_snapshot(ref, dumps(arguments), signed))
            elif arguments:
                events.append(build_arguments_fragment(ref, _text(arguments, "arguments", position) or "", signed))
            else:
                events.append(build_call_seen(ref, signed))

    def _custom(
        self, entry: Mapping[str, Any], position: int, events: list[Event], diagnose: Callable[[str, str], None]
    ) -> bool:
        """A tool call without ``function``: a custom tool's (``custom: {name, input}``, freeform
        text), or one of a type this decoder cannot read, which is reported. True when handled."""
        custom = entry.get("custom")
        index = _index(entry.get("index"), position)
        if not isinstance(custom, Mapping):
            kind = entry.get("type")
            if kind not in (None, "function") or len(entry.keys() - {"index", "id", "type"}):
                diagnose("unknown-event", f"tool_calls[{position}] of type {kind!r} has no function")
                return True
            return False
        call_id, name = _text(entry.get("id"), "id", position), _text(custom.get("name"), "name", position)
        ref = build_call_ref(index, call_id, name, position, type="custom")
        piece = _text(custom.get("input"), "input", position)
        events.append(build_arguments_fragment(ref, piece) if piece else build_call_seen(ref))
        return True


def _recognised(payload: Mapping[str, Any]) -> bool:
    """A chunk with no choices that is still this shape: usage-only, or typed as a chunk. (An error
    that says nothing, null or empty, makes none: such a payload is reported, as Gemini's and Ollama's are.)"""
    return "usage" in payload or written(payload.get("object", "")).startswith("chat.completion")


def _keys(payload: Mapping[str, Any]) -> str:
    shown = ", ".join(repr(k) for k in list(payload)[:6])
    return shown + (", ..." if len(payload) > 6 else "") if shown else "none"


def _index(value: Any, position: int) -> int | None:
    if value is None or (type(value) is int and value.bit_length() <= 64):
        return value
    return read_index(value, f"tool_calls[{position}].index")


def _text(value: Any, field: str, position: int) -> str | None:
    if value is None or type(value) is str:
        return value
    return number_text(value, f"tool_calls[{position}].{field}")
