"""OpenAI Responses calls a program made (programmatic tool calling, beta), policy caller-program-first.

A ``program`` item holds the JavaScript the model wrote and its ``call_id``; each client call it made
(a ``function_call``, and a custom tool's, shell's or apply-patch call alike) names it in ``caller``:
``{"type": "program", "caller_id": X}``, X being the program item's ``call_id`` (openai's beta types:
"The call ID of the program item that produced this tool call"). Without stored state the request
that sends those calls back carries the program before them, as it came (policy program-goes-back,
:mod:`fsm.messages.responses`): a call naming a program the history does not hold before it is one
the API cannot tie to the code that made it. The pairing never sees it: calls pair with their
outputs by their own ``call_id``.

``check`` reports such a call (``unknown-caller``, at the call): its ``caller_id`` is no ``call_id`` of
a ``program`` item before it, nor of one later among the model's items of its response (policy
program-in-its-response: up to the next output of the client's or message of another role than the
model's). A stream gives the program first (its ``output_index``), but the call names it by
``call_id``, not by place, and nothing in the API's docs asks the items of one response in an order:
the request holds that program, so it is not the one the API cannot tie to the code.
But an ``item_reference`` before it, or later in its response, may stand for that program (it names
an item by its item ``id``, which says nothing of its ``call_id``): after one, no call is reported,
nor one of its response before it. A ``program_output`` item (what a program gave once resumed)
names its program by its own ``call_id``: one naming no program before it is ``unknown-caller``
alike (audit 94). ``repair`` keeps the call (or output) as it is and says so
(``kept-unknown-caller``): only the caller holds the program, whose code and opaque ``fingerprint`` nothing can
stand in for; dropping the call would lose it and its output, and writing it as the model's own
(``direct``) would say the model called a tool a program called, which may be one the model cannot
call itself (``allowed_callers``). A call repair drops (one no output answered, under
``RepairPolicy(dangling="drop-call")``) is not kept, and not said so.

Claude's client calls name their code alike (policy code-call-first): a ``tool_use`` whose ``caller``
names (``tool_id``) a server call no ``server_tool_use`` (or ``mcp_tool_use``) before it made is
``unknown-caller`` too (one that repair drops, without its result, leaves its calls so); and one naming
code whose result an assistant message gave before it is ``call-after-code-result`` (policy
no-call-after-code-result): the code had finished, so the call cannot be one it made (a later
``server_tool_use`` reusing its id, as any answered id may be, makes code of its own). Repair keeps
each and says so (``kept-unknown-caller``, ``kept-call-after-code-result``): dropping the call would
lose it and its result, and writing it as Claude's own would say Claude called a tool its code
called (``allowed_callers`` may not let it). Repair writes the second itself only where it cannot
do otherwise: a code result the user sent goes right after its call when no call of its message that
repair keeps names it (the check reads no wait past it), and a later call naming it then follows it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fsm.history.callers import caller_code, malformed
from fsm.history.changes import Change
from fsm.history.code_waits import is_key
from fsm.history.entries import Entry
from fsm.history.findings import Finding, Kind
from fsm.history.formats import RESPONSES_OUTPUT_OF, RESPONSES_OUTPUTS, items, shown
from fsm.history.objects import is_object
from fsm.history.rewrite import Writer
from fsm.history.server_blocks import SERVER_CALLS, is_server_result

if TYPE_CHECKING:
    from fsm.history.joined_runs import ServerRuns

WHY = "it names as its caller a program no program item before it has as its call_id: the API cannot tie it to the code"
"""What an ``unknown-caller`` finding says."""
OUTPUT_WHY = (
    "a program_output naming a program no program item before it has as its call_id: the API cannot tie it to the code"
)
"""What an ``unknown-caller`` finding says of a ``program_output`` item."""
KEPT = "it names a program the history does not hold before it: kept, for the caller to send that program"
"""What the ``kept-unknown-caller`` change says."""
CODE_WHY = "it names as its caller a server call no server_tool_use before it made: the API cannot tie it to the code"
"""What an ``unknown-caller`` finding says of Claude's client call."""
AFTER_WHY = "it names as its caller code whose result came before it: the code had finished, and made no call after"
"""What a ``call-after-code-result`` finding says."""
CODE_KEPT = "it names a server call the history does not hold before it: kept, for the caller to send that call"
"""What the ``kept-unknown-caller`` change says of Claude's client call."""
AFTER_KEPT = "it names code whose result comes before it: kept, no place before that result being the call's"
"""What the ``kept-call-after-code-result`` change says."""
MALFORMED_WHY = ": read as Claude's own call, naming no code"
"""How a ``malformed-caller`` finding ends (policy malformed-caller-kept)."""
MALFORMED_KEPT = "its caller is none the API types: kept as it came, for the caller to say who made the call"
"""What the ``kept-malformed-caller`` change says."""


def _unknown(messages: Sequence[Mapping[str, Any]]) -> list[tuple[int, str, Any, str]]:
    """Each call item (and ``program_output`` item) naming a program no ``program`` item before it,
    nor later among the model's items of its response (``program-in-its-response``), has (none after
    an item reference): its position, its ``call_id`` (as text), its name and why."""
    programs: set[str] = set()
    found: list[tuple[int, str, Any, str]] = []
    waiting: list[tuple[int, str, Any, str, Any]] = []  # calls of the response read so far naming no program yet
    for at, item in enumerate(messages):
        kind = item.get("type")
        if _ends_response(item, kind):
            found += [entry[:4] for entry in waiting]
            waiting = []
        if type(kind) is not str:  # (a type of no str may be unhashable)
            continue
        if kind == "program" and isinstance(item.get("call_id"), str):
            programs.add(item["call_id"])
            waiting = [entry for entry in waiting if entry[4] != item["call_id"]]
        elif kind == "item_reference":  # it may be the program: nothing after it is told
            return sorted(found)
        elif kind == "program_output":  # what the program gave, under its call_id: it names it too
            named = item.get("call_id")
            if not (isinstance(named, str) and named in programs):
                found.append((at, str(named), None, OUTPUT_WHY))
        elif kind in RESPONSES_OUTPUT_OF:
            caller = item.get("caller")
            if not isinstance(caller, Mapping) or caller.get("type") != "program":
                continue
            named = caller.get("caller_id")
            if not (isinstance(named, str) and named in programs):
                name = item.get("name")
                waiting.append((at, str(item.get("call_id")), name if isinstance(name, str) else None, WHY, named))
    return sorted(found + [entry[:4] for entry in waiting])


def _ends_response(item: Mapping[str, Any], kind: Any) -> bool:
    """Does an item end the model's response it follows: an output of the client's (a call's, a
    program's) or a message (``type`` message, or none: an easy input message) of another role than the model's?"""
    if type(kind) is str and (kind in RESPONSES_OUTPUTS or kind == "program_output"):
        return True
    return kind in (None, "message") and "role" in item and item.get("role") != "assistant"


def unknown_callers(messages: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """What ``check`` reports of a Responses history's calls naming a program it lacks (``unknown-caller``)."""
    return [Finding(Kind.UNKNOWN_CALLER, call_id, at + 1, why, name) for at, call_id, name, why in _unknown(messages)]


def kept_callers(messages: Sequence[Mapping[str, Any]], drop: set[tuple[int, int]]) -> list[Change]:
    """What ``repair`` says of those calls it keeps (``kept-unknown-caller``; ``drop``: the items it drops)."""
    return [
        Change("kept-unknown-caller", at + 1, call_id, KEPT)
        for at, call_id, _, _ in _unknown(messages)
        if (at, -1) not in drop
    ]


def _code_callers(messages: Sequence[Any]) -> list[tuple[int, int, str, Any, Kind, str]]:
    """Each of Claude's client calls naming code no server call before it made (``unknown-caller``),
    code whose result an assistant message gave before it (``call-after-code-result``), or with a
    caller the API does not type (``malformed-caller``, :mod:`fsm.history.callers`): its message,
    slot, id (as text), name, kind and why."""
    made: set[Any] = set()
    done: set[Any] = set()
    found: list[tuple[int, int, str, Any, Kind, str]] = []
    for at, message in enumerate(messages):
        content = message.get("content") if is_object(message) else None
        for slot, block in enumerate(content if isinstance(content, list) else ()):
            kind = block.get("type") if is_object(block) else None
            if type(kind) is not str:  # (a type of no str may be unhashable)
                continue
            if kind in SERVER_CALLS and is_key(block.get("id")):
                made.add(block["id"])
                done.discard(block["id"])  # an id reused by a later call names that call's code (policy reused)
            elif is_server_result(kind) and message.get("role") == "assistant" and is_key(block.get("tool_use_id")):
                done.add(block["tool_use_id"])
            elif kind == "tool_use":
                code, why = caller_code(block), malformed(block)
                name = block.get("name")
                named = (at, slot, str(block.get("id")), name if isinstance(name, str) else None)
                if why is not None:
                    found.append((*named, Kind.MALFORMED_CALLER, f"{why}{MALFORMED_WHY}"))
                elif code is not None and code not in made:
                    found.append((*named, Kind.UNKNOWN_CALLER, CODE_WHY))
                elif code is not None and code in done:
                    found.append((*named, Kind.CALL_AFTER_CODE_RESULT, AFTER_WHY))
    return found


def code_callers(messages: Sequence[Any], sent: Sequence[Any]) -> list[Finding]:
    """What ``check`` reports of Claude's client calls naming code the history lacks before them, or code
    that had finished (``unknown-caller``, ``call-after-code-result``), or with a malformed caller, its
    block named as ``sent`` holds it (``messages``: read as it goes back, the declined models' blocks out)."""
    found, slots = [], {}
    for at, slot, key, name, kind, why in _code_callers(messages):
        if kind is Kind.MALFORMED_CALLER:
            if at not in slots:  # once a message: a message of many such calls costs linear work
                slots[at] = _sent_slots(messages[at]["content"], sent[at]["content"])
            why = f"block {slots[at][slot] + 1} of the message: {why}"
        found.append(Finding(kind, key, at + 1, why, name))
    return found


def _sent_slots(read: list[Any], content: list[Any]) -> list[int]:
    """Where each block of a message as read stands in its content as sent: the same objects in order, some
    left out (a declined model's)."""
    if read is content:
        return list(range(len(read)))
    slots, place = [], 0
    for block in read:
        while content[place] is not block:
            place += 1
        slots.append(place)
        place += 1
    return slots


def kept_code_callers(
    written: Sequence[Any], messages: Sequence[Mapping[str, Any]], origins: list[list[tuple[int, int]]]
) -> list[Change]:
    """What ``repair`` says of those calls its written history holds (``origins``: per written message,
    where the blocks of each input message it holds start), each at the input message it came from."""
    found = _code_callers(written)
    held: dict[int, list[int]] = {}
    for n, message in enumerate(messages if found else ()):
        for block in _listed(message.get("content")):
            held.setdefault(id(block), []).append(n)
    changes = []
    for at, slot, key, _, kind, _ in found:
        starts = [start for start, _ in origins[at]]
        here = origins[at][max(0, bisect_right(starts, slot) - 1)][1]  # where it stands (every message written has one)
        # The very block (repair-keeps-objects) may have moved (a misplaced call): its input message tells, unless
        # one object stands in several (the caller's list holding it twice), where the place decides among them.
        places = held.get(id(written[at]["content"][slot]), [here])
        came = here if here in places else places[0]  # a copy (renamed) is held by none: where it stands
        if kind is Kind.UNKNOWN_CALLER:
            changes.append(Change("kept-unknown-caller", came + 1, key, CODE_KEPT))
        elif kind is Kind.CALL_AFTER_CODE_RESULT:
            changes.append(Change("kept-call-after-code-result", came + 1, key, AFTER_KEPT))
        else:
            changes.append(Change("kept-malformed-caller", came + 1, key, MALFORMED_KEPT))
    return changes


def _listed(content: Any) -> list[Any]:
    return content if isinstance(content, list) else []


def follow_renamed_code(plan: Writer, call: Entry, answer: Entry | None, wire_id: str, runs: ServerRuns) -> None:
    """Anthropic: the client calls a code's server call made (``caller``) after it, up to its result, name it
    by its new id when repair renames it (a second call under its id in one turn): left naming the old id they
    name the call it took that from, or the finished code (``call-after-code-result``, audit 125). So do the
    server calls it made (a search or fetch its code ran, which the API sends with the code as its ``caller``:
    policy server-call-caller-followed, task 144). Up to another server call under its old id: the calls after
    it are that one's. They are found in the history's calls by caller, read once (``runs.made_by``), and the
    messages up to the last looked at are read as a walk of them read them, each once a repair (each rename
    walked them: one message of many calls under one id, or of server calls under one id no result answers
    with the history after them, was quadratic to repair, task 153)."""
    own = plan.messages[call.message].get("content") if plan.fmt == "anthropic" else None
    made = own[call.slot] if isinstance(own, list) else None
    if not isinstance(made, Mapping) or made.get("type") not in SERVER_CALLS or not isinstance(call.key, str):
        return
    end = (answer.message, answer.slot) if answer is not None else (len(plan.messages), 0)
    last = min(end[0], len(plan.messages) - 1)  # the last message the walk reads, unless it stops before
    servers = runs.calls(plan).server.get(call.key, [])
    after = bisect_right(servers, (call.message, call.slot), key=lambda place: place[:2])
    if after < len(servers) and servers[after][:2] < end:
        end, last = servers[after][:2], servers[after][0]
    runs.made_by(plan).read(call.message + 1, last, lambda at: items(plan.messages[at], plan.fmt, at))
    callers = runs.made_by(plan).by_code.get(call.key, [])
    for at, slot in callers[bisect_right(callers, (call.message, call.slot)) :]:
        if (at, slot) >= end:
            break
        plan.recall[(at, slot)] = wire_id
        plan.touched.add(at)
        why = f"the code that made it, {shown(call.key)!r} renamed, is now {wire_id!r}"
        key = plan.messages[at]["content"][slot].get("id")
        plan.changes.append(Change("renamed-caller", at + 1, key if isinstance(key, str) else None, why))
