"""Ollama's native ``/api/chat`` NDJSON stream.

Each line may carry ``message.tool_calls[]``, every call whole, with ``arguments`` as a JSON object
and the index at ``function.index``. ``done: true`` ends the stream with ``done_reason`` (``stop``
also for tool turns, which the engine reports as ``tool_calls``). A line with neither ``message``
nor ``done`` is not this wire shape: ``unknown-event``. An ``error`` ends the stream; beside a
``message`` or ``done`` it comes after what they say, which is read first (policy error-beside-finish,
as an OpenAI chat error beside choices): the line's calls and text stand, and a finish it gave first.

A whole call (its ``arguments`` an object) that carries no ``id``, and either no
``function.index`` or one an earlier call of the stream already took, is numbered by its order
among the stream's calls (policy ollama-calls-in-order): Ollama sends each call once, whole, one
call a line. The ollama client's ``Message.ToolCall`` keeps neither field, so its position in its
line (0 on every line) would make a second call of the same name and arguments on a later line look
like a resend of the first, which policy ``identical_text`` drops; and some servers number every
line's call 0, which does the same. A fresh index is kept as the wire gave it; a call with an id,
or with arguments as text (which may go on), is left to the registry, and so is a whole call at the
index of one that came as text: its whole form, not another call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fsm.events import (
    Event,
    ReasoningDelta,
    StreamEnd,
    TextDelta,
    build_arguments_fragment,
    build_arguments_snapshot,
    build_call_ref,
    build_stream_end,
    build_usage_report,
)
from fsm.wire.decoders import error_words
from fsm.wire.decoders._fields import index, items, mapping, text, written
from fsm.wire.decoders._wire import TurnSaid, dumps
from fsm.wire.decoders.chunk_form import FormSpec

_USAGE = ("prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration", "load_duration", "total_duration")
"""The counts and timings the final line carries at its top level: Ollama's usage."""
_FINISH = {"stop": "stop", "length": "length", "load": "stop", "unload": "stop"}


class OllamaDecoder:
    name = "ollama"

    def __init__(self) -> None:
        self._next = 0  # the index the next call without index or id takes (policy ollama-calls-in-order)
        self._streamed: set[int] = set()  # where a call without id came as text: its whole form may follow

    def decode(self, payload: Mapping[str, Any], diagnose: Callable[[str, str], None]) -> list[Event]:
        error = payload.get("error")
        if "message" not in payload and "done" not in payload:
            if error:
                return [StreamEnd("error", *error_words(error, payload))]  # as error_in reads it
            shown = ", ".join(repr(k) for k in list(payload)[:6]) or "none"
            diagnose("unknown-event", f"an Ollama line with neither message nor done (keys: {shown})")
            return []
        message = mapping(payload.get("message"), "message")
        events: list[Event] = _said(message)
        for position, call in enumerate(items(message.get("tool_calls"), "tool_calls")):
            call = mapping(call, f"tool_calls[{position}]")
            function = mapping(call.get("function"), f"tool_calls[{position}].function")
            at = index(function.get("index", call.get("index")), f"tool_calls[{position}].function.index")
            said_id = text(call.get("id"), "id")
            arguments = function.get("arguments")
            whole = not isinstance(arguments, str)
            if (at is None or at < self._next) and not said_id and whole and at not in self._streamed:
                at = self._next  # a whole call, never resent: an index taken before is another call's
            if at is not None and not said_id:  # a text call's whole form ends its streaming (audit 103)
                (self._streamed.discard if whole else self._streamed.add)(at)
            self._next = max(self._next, at + 1) if at is not None else self._next
            ref = build_call_ref(at, said_id, text(function.get("name"), "name"), position)
            if isinstance(arguments, str):
                events.append(build_arguments_fragment(ref, arguments))
            else:
                events.append(build_arguments_snapshot(ref, dumps(mapping(arguments, "arguments"))))
        if payload.get("done"):
            given = payload.get("done_reason")  # none given reads as stop, but is no word of Ollama's
            reason = written(given or "stop")
            events.append(build_stream_end(_FINISH.get(reason, reason), reason if given else None, None, None))
            usage = {key: payload[key] for key in _USAGE if key in payload}
            if usage:
                events.append(build_usage_report(usage))
        if error:  # beside a message or done: read after them, as chat's beside choices (policy error-beside-finish)
            events.append(StreamEnd("error", *error_words(error, payload)))
        return events

    def commonest_said(self, payload: dict[str, Any], content: TurnSaid) -> bool:
        """Take the commonest line of a turn that talks, a ``message`` with text or thinking (or
        both) and no calls, not the last line and no error, to ``content``, as decode() and
        Reassembler._apply would take its events, without building them; False, changing nothing,
        for any other line (a test replays every vector and fuzzed stream with and without this
        shortcut, and lines that nearly qualify). The text and the thinking land in containers of
        their own, so the order said() keeps them in is decode()'s as well."""
        message = payload.get("message")
        if type(message) is not dict or message.get("tool_calls") is not None:
            return False
        done = payload.get("done")
        if (done is not None and done is not False) or payload.get("error") is not None:
            return False
        said, thinking = message.get("content"), message.get("thinking")
        if (said is not None and type(said) is not str) or (thinking is not None and type(thinking) is not str):
            return False  # a number decode() writes as text, or a value it refuses: left to it
        if not said and not thinking:
            return False  # no event: _apply is never reached, so nothing it resets may be
        content.said(said or "", thinking or "")
        return True

    def said_form_of(self, payload: dict[str, Any]) -> tuple[FormSpec, str] | None:
        """Of a line commonest_said took: where its one piece sits (``content`` or ``thinking``,
        its kind) beside its timestamp, which differs on every line and is never read (a hole, as
        padding is); None for a line that says both (a form has one text hole)."""
        message = payload["message"]
        if message.get("content") and message.get("thinking"):
            return None
        kind = "content" if message.get("content") else "thinking"
        return FormSpec(("message", kind), None, padding_at=("created_at",)), kind

    def said_at(self, kind: str, place: Any, piece: str, content: TurnSaid) -> bool:
        """What commonest_said does with a line of said_form_of's form holding ``piece`` (never
        empty) as its ``kind``: the other piece is the learnt line's, empty or null."""
        if kind == "content":
            content.said(piece, "")
        else:
            content.said("", piece)
        return True


def _said(message: Mapping[str, Any]) -> list[Event]:
    said: list[Event] = []
    thinking = text(message.get("thinking"), "message.thinking")
    if thinking:
        said.append(ReasoningDelta(None, thinking))
    content = text(message.get("content"), "message.content")
    if content:
        said.append(TextDelta(content))
    return said
