"""What an OpenAI chat stream's error lists of its calls (``incomplete_tool_calls``, as
``DeltaEmitter.finish`` lists the calls it left unfinished): each call ended as its status says,
for a re-emitted stream to read back as the result it came from. Without them a call cut or found
unusable reads as complete wherever its text is a whole value.

Policy declines-read-back: a call listed ``declined`` (a Claude model that declined made it, before a
``fallback`` block: policy fallback-declined-calls) or ``cut-by-decline`` (one the decline cut mid-JSON:
policy decline-cut-waits) ends by its text, as its source ended it, and is set apart at close in
``Result.declined_calls`` (``declined-call``); the cut's open JSON is said ``cut-by-decline``, no
violation. One listed ``declined-truncated`` (a declined model's call the stream cut before it ended: a
tool block still open when the fallback block came, which the message's end truncated) is truncated, as
its source said, and set apart too (audit 101's C). An error of fsm's own (``type``
``incomplete_tool_call``, its ``message`` as fsm words it) beside a finish that lists nothing but such
calls tells nothing more than they do (it is there so that a client runs none of them): no
``provider-error`` is said of it, so a stream strict mode read whole reads back strictly too (an entry
naming a call the stream never opened is said, as any is). Any other entry or message (an upstream's own
word under that type), a stream that stopped (no finish beside the error), or another error keeps the
``provider-error`` it always was.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fsm.errors import too_long
from fsm.events import CallEnd, CallRef, Event
from fsm.results import CallStatus, Result, ToolCall

CUT, UNTERMINATED, DECLINED_CUT = "cut-by-decline", "unterminated-arguments", "declined-truncated"
LISTED = ("truncated", "invalid", "declined", CUT, DECLINED_CUT)
"""The statuses ``DeltaEmitter.finish`` lists a call with."""
_DECLINES = ("declined", CUT)
OWN_ERROR = "incomplete_tool_call"
"""The ``type`` of the error ``DeltaEmitter.finish`` ends a stream with when a call did not complete."""
DECLINES_NOTE = "calls that did not complete or that a model that declined made, not to be run: "
"""How that error's ``message`` begins where it lists a declined call: one that begins otherwise is
someone else's word (an upstream's message under the same type), which is said, not passed over."""


def listed_incomplete(error: Any, diagnose: Callable[[str, str], None]) -> list[Event]:
    """The ends of the calls ``error`` lists (see the module docstring), each entry that names no call
    said (``part-not-reassembled``)."""
    listed = error.get("incomplete_tool_calls") if isinstance(error, Mapping) else None
    if listed is None:
        return []
    if type(listed) is not list:
        diagnose("part-not-reassembled", f"error.incomplete_tool_calls is a {type(listed).__name__}, not a list")
        return []
    ends: list[Event] = []
    first: dict[tuple[Any, str], int] = {}  # the entry that listed each call (by its index and id)
    for at, entry in enumerate(listed):
        entry = entry if isinstance(entry, Mapping) else {}
        index, call_id, status = entry.get("index"), entry.get("id"), entry.get("status")
        usable = type(index) is int and index >= 0 and too_long(index) is None  # (read from the wire: digits, no int)
        named = f"error.incomplete_tool_calls[{at}]"
        if not usable or type(call_id) is not str or status not in LISTED:
            diagnose("part-not-reassembled", f"{named} names no call (an index, an id, status truncated or invalid)")
        elif (index, call_id) in first:  # the call ended by its first entry: a second ends nothing
            again = f"lists call {call_id} at index {index} again (entry {first[index, call_id]} stands)"
            diagnose("part-not-reassembled", f"{named} {again}")
        else:
            first[index, call_id] = at
            unknown = f"{named} names call {call_id} at index {index}, which the stream never opened"
            ref = CallRef(index=index, id=call_id)
            if status in _DECLINES:  # as its source ended it (policy declines-read-back)
                ends.append(CallEnd(ref, unmatched=unknown, declined=status))
                continue
            cut = status in ("truncated", DECLINED_CUT)
            if status == DECLINED_CUT:  # truncated, and a declined model's
                ends.append(CallEnd(ref, incomplete=True, said=_LISTED_CUT, unmatched=unknown, declined="declined"))
                continue
            said = _LISTED_CUT if cut else ""
            unusable = "" if cut else f"the stream's error listed it {status}"
            ends.append(CallEnd(ref, incomplete=cut, said=said, unusable=unusable, unmatched=unknown))
    return ends


_LISTED_CUT = "incomplete, as the stream's error listed it"


def declines_noted(error: Any, ends: list[Event]) -> bool:
    """Whether ``error`` is fsm's own note of declined calls alone, ``ends`` the ends read of it: fsm's
    message, and every entry it lists a declined one (policy declines-read-back)."""
    if not isinstance(error, Mapping) or error.get("type") != OWN_ERROR:
        return False
    message = error.get("message")
    if not (isinstance(message, str) and message.startswith(DECLINES_NOTE)):
        return False
    listed = error.get("incomplete_tool_calls")
    if type(listed) is not list or not listed or len(ends) != len(listed):  # (an entry that named no call)
        return False
    return all(type(end) is CallEnd and end.declined for end in ends)


def declined_statuses(result: Result) -> dict[int, str]:
    """How ``DeltaEmitter.finish`` lists each declined call, by index: ``cut-by-decline`` where the
    decline cut its JSON (its source said so, no violation: policy decline-cut-waits), so that a reader
    tells the cut from a declined model's broken call (``declined``, its violation said). Told by the
    diagnostic that names the call as the call's own diagnostics do. An invalid call neither names
    had its diagnostic pass its code's per-code bound: it is listed as the code's whose bound alone
    was passed (``declined`` where both were, which a reader then reads as a violation)."""
    said: dict[str, list[str]] = {CUT: [], UNTERMINATED: []}
    for diagnostic in result.diagnostics:
        if diagnostic.code in said:
            said[diagnostic.code].append(diagnostic.message)
    past = result.suppressed_diagnostics
    unnamed = CUT if CUT in past and UNTERMINATED not in past else "declined"

    def status(call: ToolCall) -> str:
        if call.status is CallStatus.TRUNCATED:  # its stream cut it: truncated, read back, as it was here
            return DECLINED_CUT
        head = f"call {call.id} ({call.name}): "
        if any(m.startswith(head) for m in said[CUT]):
            return CUT
        named = any(m.startswith(head) for m in said[UNTERMINATED])
        return unnamed if call.status is CallStatus.INVALID and not named else "declined"

    return {call.index: status(call) for call in result.declined_calls}
