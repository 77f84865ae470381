"""Gemini's own code execution, as the Gemini decoder reads it: each ``executableCode`` part a
server call, and each ``codeExecutionResult`` the result of one, with what tells a resent part or
result from a new one (:class:`CodeRuns`), and what makes either no part to send back.

Both kinds of part are whole, so a stream that sends one again (a resent event, or calls streamed
one per event and then resent as one batch) sends it unchanged. A code part without an id takes the
position of the part of an earlier event with the same code (as a whole call does: see
``GeminiDecoder._resend_position``), so its text lands beside that call and identical_text decides;
a result is waited for once per code part that is not such a resend.

A ``toolCall`` part (a server-side tool call of Gemini's built-in tools: google-genai ``ToolCall``,
its ``id``, ``toolType`` and ``args``) and its ``toolResponse`` (``ToolResponse``: ``id``, ``toolType``,
``response``) are read the same way, apart from the code's: a server call of type ``tool_call``
named by its ``toolType`` (``tool_call`` without one), whose input is its ``args``, and the result
that answers it, each kind waited for and told from a resend on its own. The API wants both back in
the next turn ("the client should pass this ToolCall back to the API in a subsequent turn within a
Content message, along with the corresponding ToolResponse": js-genai ``ToolCall``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fsm.errors import kind
from fsm.events import ArgumentsSnapshot, CallEnd, CallRef, CallSeen, Event, ServerResultBlock
from fsm.options import Policies
from fsm.wire.decoders._fields import field as either
from fsm.wire.decoders._fields import text
from fsm.wire.decoders._wire import dumps


@dataclass(slots=True)
class _Runs:
    """What one kind of server part (code, or a server-side tool call) has seen so far (compared by
    value: a test holds the decoder's state after the reader's shortcut to decode()'s)."""

    # Each part's input once seen, under its id or (with none) the position it resolved to: the
    # same input there again is a resend, whose result was already waited for.
    seen: set[tuple[str | None, int | None, str]] = field(default_factory=set)
    waiting: int = 0  # parts whose result has not come yet
    kept: set[tuple[Any, ...]] = field(default_factory=set)  # every result kept, by what it says
    # Whether the event's latest part (since its latest result) waits for a result: False when
    # it resends one, so a result kept before that follows it is its resent result, even while
    # other parts wait (a batch resent while a later result was still to come).
    after: bool | None = None


class CodeRuns:
    """The code parts and results of one stream, and its server-side tool calls and responses."""

    def __init__(self, policies: Policies | None) -> None:
        # Under identical_text new-call the same code again is another call, which runs again.
        self.rerun = policies is not None and policies.identical_text == "new-call"
        self._code = _Runs()
        self._tools = _Runs()

    def begin(self) -> None:
        """A new event (a chunk): no code part of it is seen yet."""
        self._code.after = self._tools.after = None

    def part(
        self,
        code: Mapping[str, Any],
        position: int,
        signature: str | None,
        resend_position: Callable[[int, int], int],
        *,
        tool: bool = False,
    ) -> list[Event]:
        """The server call of an ``executableCode`` part (``tool``: a ``toolCall`` part) at
        ``position`` among the event's parts of its kind: its code (its ``args`` as JSON) is the
        call's input, the part its item. The part is whole, so the call ends with it: left open, the
        code of the next event at this position replaced it in silence, and a later cut called code
        that ran truncated."""
        what = "toolCall" if tool else "executableCode"
        code_id = text(code.get("id"), f"{what}.id")
        if tool:
            args = code.get("args")
            source = dumps(args) if args is not None else "{}"
            name, kind = text(either(code, "toolType", "tool_type"), "toolCall.toolType") or "tool_call", "tool_call"
        else:
            source = text(code.get("code"), "executableCode.code") or ""
            name, kind = "code_execution", "executable_code"
        if code_id is None:  # the key is only a hint, apart from whole calls' (the registry compares text)
            position = resend_position(hash((True, kind, source)), position)
        ref = CallRef(None, code_id, name, position, True, kind)
        runs = self._tools if tool else self._code
        seen = (code_id, None if code_id is not None else position, source)
        new = seen not in runs.seen
        if new:
            runs.seen.add(seen)
        self.expect(new, tool=tool)
        if not new and not self.rerun and not source:
            # Empty code lands in no call (no text to compare), so its sighting would open another
            # one after the call it resends: the resend is only ended.
            return [ArgumentsSnapshot(ref, source), CallEnd(ref)]
        # The text first: it decides the call. The sighting carries the part (and its signature) to
        # the call the text landed in, a resend's too (Reassembler._apply).
        return [ArgumentsSnapshot(ref, source), CallSeen(ref, signature, dict(code)), CallEnd(ref)]

    def expect(self, new: bool, *, tool: bool = False) -> None:
        """A code part (``tool``: a tool call part), ``new`` unless it resends one: a new one (under
        identical_text new-call, any) waits for its result."""
        runs = self._tools if tool else self._code
        runs.after = new or self.rerun
        if runs.after:
            runs.waiting += 1

    def ran(
        self, outcome: Mapping[str, Any], signature: str | None, events: list[Event], *, tool: bool = False
    ) -> bool:
        """A ``codeExecutionResult`` part (``tool``: a ``toolResponse`` part): what the code Gemini
        ran gave (what its tool gave), kept whole (in the REST wire's name) so the turn goes back
        with it after its call; False for a resend (see fresh)."""
        block: dict[str, Any] = {"toolResponse" if tool else "codeExecutionResult": dict(outcome)}
        if signature is not None:
            block["thoughtSignature"] = signature
        if not self.fresh(block):
            return False
        events.append(ServerResultBlock(block))
        return True

    def fresh(self, block: Mapping[str, Any]) -> bool:
        """Whether a result's part is a result to keep: any while a part of its kind waits for one,
        unless it says what a result kept before said and follows a resent part in its event; else
        only one saying what no result kept before said. The same again with nothing new waiting
        is a resend, as its part's is, not a second result."""
        ran = block.get("codeExecutionResult")
        if ran is not None:
            runs = self._code
            said: tuple[Any, ...] = (
                ran.get("outcome"),
                ran.get("output"),
                ran.get("id"),
                block.get("thoughtSignature"),
            )
        else:
            runs = self._tools
            said = (dumps(block.get("toolResponse")), block.get("thoughtSignature"))
        after, runs.after = runs.after, None
        if after is False and said in runs.kept:  # after its resent part: resent with it
            return False
        if runs.waiting:
            runs.waiting -= 1
        elif said in runs.kept:
            return False
        runs.kept.add(said)
        return True


def code_result_fault(ran: Mapping[str, Any]) -> str | None:
    """What makes a ``codeExecutionResult`` no part to send back: its ``outcome`` (an enum's name),
    ``output`` or ``id`` given as something other than text, named with its type; None if none is."""
    return _fault(ran, ("outcome", "output", "id"))


def code_part_fault(code: Mapping[str, Any]) -> str | None:
    """What makes an ``executableCode`` part no part to send back: its ``code``, ``language`` (an
    enum's name) or ``id`` given as something other than text (a number too), named with its type."""
    return _fault(code, ("code", "language", "id"))


def _fault(part: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = part.get(key)
        if value is not None and not isinstance(value, str):
            return f"{key} is {kind(value)}, not a string"
    return None


def tool_part_fault(part: Mapping[str, Any], payload: str) -> str | None:
    """What makes a ``toolCall`` or ``toolResponse`` part no part to send back: its ``id`` or
    ``toolType`` (an enum's name) given as something other than text, or its ``payload`` (``args``,
    ``response``) as something other than an object, named with its type; None if none is."""
    value = part.get(payload)
    if value is not None and not isinstance(value, Mapping):
        return f"{payload} is {kind(value)}, not an object"
    return _fault(part, ("id", "toolType", "tool_type"))
