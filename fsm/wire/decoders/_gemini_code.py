"""Gemini's own code execution, as the Gemini decoder reads it: each ``executableCode`` part a
server call, and each ``codeExecutionResult`` the result of one, with what tells a resent part or
result from a new one (:class:`CodeRuns`), and what makes either no part to send back.

Both kinds of part are whole, so a stream that sends one again (a resent event, or calls streamed
one per event and then resent as one batch) sends it unchanged. A code part without an id takes the
position of the part of an earlier event with the same code (as a whole call does: see
``GeminiDecoder._resend_position``), so its text lands beside that call and identical_text decides;
a result is waited for once per code part that is not such a resend.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fsm.errors import kind
from fsm.events import ArgumentsSnapshot, CallEnd, CallRef, CallSeen, Event, ServerResultBlock
from fsm.options import Policies
from fsm.wire.decoders._fields import text


class CodeRuns:
    """The code parts and results of one stream."""

    def __init__(self, policies: Policies | None) -> None:
        # Under identical_text new-call the same code again is another call, which runs again.
        self.rerun = policies is not None and policies.identical_text == "new-call"
        # Each part's code once seen, under its id or (with none) the position it resolved to: the
        # same code there again is a resend, whose result was already waited for.
        self._seen: set[tuple[str | None, int | None, str]] = set()
        self._waiting = 0  # code parts whose codeExecutionResult has not come yet
        self._kept: set[tuple[Any, ...]] = set()  # every codeExecutionResult kept, by what it says
        # Whether the event's latest code part (since its latest result) waits for a result: False
        # when it resends one, so a result kept before that follows it is its resent result, even
        # while other code waits (a batch resent while a later result was still to come).
        self._after: bool | None = None

    def begin(self) -> None:
        """A new event (a chunk): no code part of it is seen yet."""
        self._after = None

    def part(
        self,
        code: Mapping[str, Any],
        position: int,
        signature: str | None,
        resend_position: Callable[[int, int], int],
    ) -> list[Event]:
        """The server call of an ``executableCode`` part at ``position`` among the event's code
        parts: its code is the call's input, the part its item. The part is whole, so the call ends
        with it: left open, the code of the next event at this position replaced it in silence, and
        a later cut called code that ran truncated."""
        code_id = text(code.get("id"), "executableCode.id")
        source = text(code.get("code"), "executableCode.code") or ""
        if code_id is None:  # the key is only a hint, apart from whole calls' (the registry compares text)
            position = resend_position(hash((True, "executable_code", source)), position)
        ref = CallRef(None, code_id, "code_execution", position, True, "executable_code")
        seen = (code_id, None if code_id is not None else position, source)
        new = seen not in self._seen
        if new:
            self._seen.add(seen)
        self.expect(new)
        if not new and not self.rerun and not source:
            # Empty code lands in no call (no text to compare), so its sighting would open another
            # one after the call it resends: the resend is only ended.
            return [ArgumentsSnapshot(ref, source), CallEnd(ref)]
        # The text first: it decides the call. The sighting carries the part (and its signature) to
        # the call the text landed in, a resend's too (Reassembler._apply).
        return [ArgumentsSnapshot(ref, source), CallSeen(ref, signature, dict(code)), CallEnd(ref)]

    def expect(self, new: bool) -> None:
        """A code part, ``new`` unless it resends one: a new one (under identical_text new-call, any)
        waits for its result."""
        self._after = new or self.rerun
        if self._after:
            self._waiting += 1

    def ran(self, outcome: Mapping[str, Any], signature: str | None, events: list[Event]) -> bool:
        """A ``codeExecutionResult`` part: what the code Gemini ran gave, kept whole (in the REST
        wire's name) so the turn goes back with it after its code; False for a resend (see fresh)."""
        block: dict[str, Any] = {"codeExecutionResult": dict(outcome)}
        if signature is not None:
            block["thoughtSignature"] = signature
        if not self.fresh(block):
            return False
        events.append(ServerResultBlock(block))
        return True

    def fresh(self, block: Mapping[str, Any]) -> bool:
        """Whether a result's part is a result to keep: any while code waits for one, unless it says
        what a result kept before said and follows a resent code part in its event; else only one
        saying what no result kept before said. The same again with no new code waiting is a resend,
        as its code's is, not a second result."""
        ran = block["codeExecutionResult"]
        said = (ran.get("outcome"), ran.get("output"), ran.get("id"), block.get("thoughtSignature"))
        after, self._after = self._after, None
        if after is False and said in self._kept:  # after its resent code part: resent with it
            return False
        if self._waiting:
            self._waiting -= 1
        elif said in self._kept:
            return False
        self._kept.add(said)
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
