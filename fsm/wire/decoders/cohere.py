"""Cohere v2 chat streaming.

``tool-call-start`` opens a call at ``index`` (``delta.message.tool_calls`` is one object here, not a
list), ``tool-call-delta`` appends argument text (often pretty-printed), ``tool-call-end`` ends it,
and ``message-end`` carries the finish reason. ``tool-plan-delta`` pieces (the plan the model writes
before its calls) are its reasoning: one block of their own, with no ``output_index`` (the plan is
no content item), which fsm.messages sends back as ``tool_plan``. A reasoning model's ``thinking``
content pieces (Command A Reasoning: a ``content-delta`` whose content holds ``thinking``, not
``text``) are a block apart, one per content index, whose ``output_index`` is that index (0 for a
piece that names none): fsm.messages sends it back as a ``thinking`` content item (policy
cohere-thinking-apart). They were one block with the plan, glued (``Let me thinkI will call``). A
delta at an index no ``tool-call-start`` opened (or after its ``tool-call-end``) opens a call of its
own, reported (``unopened-call``). A ``message-end`` ``error`` ends the stream with its message (an
object's ``message``, as every wire's); beside a finish reason that is not one of error (``ERROR``,
``TIMEOUT``), that finish comes first and the error after it (policy error-beside-finish, as chat's).
A ``content-start`` is read as a ``content-delta`` is (its content may hold text: the SDK's
``ChatContentStartEventDeltaMessageContent``); a ``citation-start``'s citation is reported
(``part-not-reassembled``): the text streams in no part to keep it on. A content piece holding both
``thinking`` and ``text`` (the SDK's delta and start types have a field for each) gives both: the
thinking first, then the text, as a reasoning model thinks before it answers (policy
cohere-thinking-beside-text); its text alone was kept, the thinking lost without a word.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fsm.events import (
    CallEnd,
    CallRef,
    Event,
    ReasoningDelta,
    StreamEnd,
    TextDelta,
    build_arguments_fragment,
    build_call_ref,
    build_call_seen,
    build_stream_end,
    build_usage_report,
)
from fsm.wire.decoders import error_kind, error_message, error_words
from fsm.wire.decoders._fields import index, mapping, text, written
from fsm.wire.decoders._wire import BARE_REFS, TurnSaid
from fsm.wire.decoders.chunk_form import FormSpec

_FINISH = {
    "TOOL_CALL": "tool_calls",
    "COMPLETE": "stop",
    "STOP_SEQUENCE": "stop",
    "MAX_TOKENS": "length",
    "ERROR": "error",
    "TIMEOUT": "error",
}
_QUIET = ("message-start", "content-", "citation-", "debug")


_FORM_TEXT = ("delta", "message", "tool_calls", "function", "arguments")
"""Where a ``tool-call-delta`` event holds its text."""
_SAID_TEXT = ("delta", "message", "content", "text")
_SAID_PLAN = ("delta", "message", "tool_plan")
"""Where a ``content-delta`` event holds its text, and a ``tool-plan-delta`` its plan."""
PLAN_BLOCK = -1
"""The tool plan's block: a key no thinking piece's takes (Cohere's content indexes count from 0; a
thinking piece at a negative index is keyed one lower, so one at -1 is not glued to the plan)."""


class CohereDecoder:
    name = "cohere"
    _bare = BARE_REFS

    def __init__(self) -> None:
        self._open: set[int | None] = set()  # the indexes a tool-call-start opened and no end closed

    def decode(self, payload: Mapping[str, Any], diagnose: Callable[[str, str], None]) -> list[Event]:
        kind = written(payload.get("type", ""))  # its text: a number too long to write, named
        at = index(payload.get("index"), "index")
        delta = mapping(payload.get("delta"), "delta")
        if kind in ("tool-call-start", "tool-call-delta"):
            call = mapping(mapping(delta.get("message"), "delta.message").get("tool_calls"), "tool_calls")
            function = mapping(call.get("function"), "tool_calls.function")
            call_id, name = call.get("id"), function.get("name")
            if call_id is None and name is None:
                ref = self._bare.ref(at)
            else:
                ref = build_call_ref(at, text(call_id, "id"), text(name, "name"))
            piece = text(function.get("arguments"), "arguments")
            if kind == "tool-call-start":
                self._open.add(at)
            elif at not in self._open:
                diagnose("unopened-call", f"tool-call-delta at index {at}, where no tool-call-start opened a call")
                self._open.add(at)  # reported once: the call it opens takes the deltas that follow
            return [build_arguments_fragment(ref, piece)] if piece else [build_call_seen(ref)]
        if kind == "tool-call-end":
            self._open.discard(at)
            return [CallEnd(build_call_ref(at))]
        if kind == "message-end":
            reason = text(delta.get("finish_reason"), "finish_reason")
            usage = mapping(delta.get("usage"), "usage")
            normal = _FINISH.get(reason, reason.lower()) if reason else None
            ended: list[Event] = [build_stream_end(normal, reason, None, None)] if reason else []
            if (error := delta.get("error")) and normal != "error" and ended:  # policy error-beside-finish
                ended.append(StreamEnd("error", *error_words(error)))
            elif error:  # what went wrong, beside finish_reason ERROR
                ended = [StreamEnd("error", reason or error_kind(error), error_message(error))]  # (policy error-kind)
            return ended + ([build_usage_report(dict(usage))] if usage else [])
        if kind in ("content-delta", "content-start"):  # a start's content may hold text too (the SDK's type)
            content = mapping(mapping(delta.get("message"), "delta.message").get("content"), "content")
            piece = text(content.get("text"), "content.text")
            thought = text(content.get("thinking"), "content.thinking")  # a reasoning model's thinking block
            out: list[Event] = []
            if thought:  # (policy cohere-thinking-apart: a content item, at its index)
                at = 0 if at is None else at
                block = at if at >= 0 else at - 1  # never the plan's: one below 0 goes one lower (audit 103)
                out.append(ReasoningDelta(block, thought, output_index=at))
            # Both in one piece: neither is dropped, the thinking first, as the model thinks before it answers
            return [*out, TextDelta(piece)] if piece else out  # (policy cohere-thinking-beside-text)
        if kind == "citation-start":  # a citation of the text: reported, where it was read past in silence
            cited = mapping(mapping(delta.get("message"), "delta.message").get("citations"), "citations")
            if cited:  # (the text streams in no part to keep it on, and fsm.messages sends Cohere none)
                said = ", ".join(map(str, cited))
                diagnose("part-not-reassembled", f"citation-start at index {at} ({said}) is not kept: no part holds it")
            return []
        if kind == "tool-plan-delta":
            plan = text(mapping(delta.get("message"), "delta.message").get("tool_plan"), "tool_plan")
            return [ReasoningDelta(PLAN_BLOCK, plan)] if plan else []
        if not kind.startswith(_QUIET):
            diagnose("unknown-event", f"Cohere event type {kind!r}")
        return []

    def commonest_fragment(self, payload: dict[str, Any]) -> tuple[CallRef, str] | None:
        """(ref, text) when the event is the commonest kind: a ``tool-call-delta`` at an integer
        index a start opened, whose call has no id and no name, and non-empty argument text.
        decode() makes exactly one ``ArgumentsFragment(ref, text)`` of it, with no diagnostic. None
        for any other event (a test replays every vector and fuzzed stream with and without this
        shortcut)."""
        at, delta = payload.get("index"), payload.get("delta")
        if payload.get("type") != "tool-call-delta" or type(at) is not int or type(delta) is not dict:
            return None
        message = delta.get("message")
        call = message.get("tool_calls") if type(message) is dict else None
        function = call.get("function") if type(call) is dict else None
        if type(function) is not dict or call.get("id") is not None or function.get("name") is not None:  # type: ignore[union-attr]
            return None
        piece = function.get("arguments")
        if type(piece) is not str or not piece:
            return None
        return self.fragment_at(at, piece)

    def commonest_said(self, payload: dict[str, Any], content: TurnSaid) -> bool:
        """Take the commonest event of a turn that talks, a ``content-delta`` with text (not empty)
        or a ``tool-plan-delta`` with some plan, to ``content``, as decode() and Reassembler._apply
        would take its one event, without building it; False, changing nothing, for any other
        event. Neither kind touches the calls this decoder keeps (a test replays every vector and
        fuzzed stream with and without this shortcut, and events that nearly qualify)."""
        kind, delta = payload.get("type"), payload.get("delta")
        if type(delta) is not dict:
            return False
        at = payload.get("index")  # read by decode() for every kind: one it would refuse is left to it
        if at is not None and (type(at) is not int or at.bit_length() > 64):
            return False
        message = delta.get("message")
        if type(message) is not dict:
            return False
        if kind == "content-delta":
            said = message.get("content")
            if type(said) is not dict or said.get("thinking") is not None:  # thinking beside it: decode() keeps both
                return False
            piece = said.get("text")
        elif kind == "tool-plan-delta":
            piece = message.get("tool_plan")
        else:
            return False
        return type(piece) is str and self.said_at(kind, at, piece, content)

    def said_form_of(self, payload: dict[str, Any]) -> tuple[FormSpec, str] | None:
        """Of an event commonest_said took: where its text sits (its one hole: the index, which
        no reader uses, stays as it came) and its kind."""
        kind = payload["type"]
        return FormSpec(_SAID_TEXT if kind == "content-delta" else _SAID_PLAN, None), kind

    def said_at(self, kind: str, at: Any, piece: str, content: TurnSaid) -> bool:
        """What commonest_said does with a ``kind`` event holding ``piece``: False, changing
        nothing, for an empty one (decode() makes no event of it, nor a block for a plan)."""
        if not piece:
            return False
        if kind == "content-delta":
            content.said(piece, "")  # apply(TextDelta(piece)): no part, no signature
        else:
            content.reasoned(PLAN_BLOCK, piece, None)  # apply(ReasoningDelta(PLAN_BLOCK, plan))
        return True

    def form_of(self, payload: dict[str, Any]) -> FormSpec:
        """Of an event commonest_fragment took: where its text sits and the place its form names
        (the call's index, which any integer there may be: a hole of the form)."""
        return FormSpec(_FORM_TEXT, payload["index"], place_at=("index",))

    def fragment_at(self, at: int, piece: str) -> tuple[CallRef, str] | None:
        """What commonest_fragment gives for such an event at ``at`` holding ``piece`` (not empty):
        None, changing nothing, when no start opened a call there (decode() reports it)."""
        if at not in self._open:
            return None
        return self._bare.ref(at), piece
