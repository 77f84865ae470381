"""The user's content while Claude's code waits on the client's results (Anthropic programmatic tool
calling), policy results-alone-while-code-waits.

Code execution that calls the client's tools pauses for their results: each such ``tool_use`` names
the ``server_tool_use`` that made it as its ``caller`` (``tool_id``), and that server call has no
result block yet (:mod:`fsm.history.server_blocks` holds it waiting). The user message that sends
those results must hold ``tool_result`` blocks alone, no text even after them (Anthropic's
programmatic tool calling docs); the API combines the user's messages in a row into one turn, so
more of the user's before Claude's next message counts the same.

The check reports the first message of such a run holding other content (``results-beside-text``).
Repair moves that content (the user's text, images, documents: anything but a ``tool_result``)
after Claude's next message that leaves no code waiting on the client (``moved-user-content``): into
the user's messages after it, after the results of the last holding results and before what the user
said there (said later), or in a message of its own; a message whose role the format lacks is read
as absent and kept where it is (unknown-role-between). An empty message of Claude's left last (its
answer to come) and one a server call waits past (a paused turn) end no wait. Where the history has
no such message of Claude's, no place takes it, and repair keeps it (``kept-results-beside-text``), for the
caller to send after Claude's next message. Repair's own moves make such runs too (results sent in
the model's role go first in the user's text after them), so this reads repair's output.

The policy ``code-result-after-its-calls``: the code's own result (``code_execution_tool_result``)
that the user sent back beside the results of the calls it made is ``misplaced-result`` (only Claude's
message holds one), and repair moves it where the API gives it, after those results: first in Claude's
next message after the results of the code's last round of calls (later rounds name it too), the one that
answers the wait (the programmatic tool calling guide's step 5: "Once the code execution completes,
Claude provides the final response", the result its first block; Claude's messages in a row, which
the API combines, are one turn and one round, and a round of another waiting code's calls alone leaves
it waiting: a later round may name it again; a turn making a call under the code's own id ends the wait
before it, as a waiting call's id taken again does), even when the user sent it after
that message, which ended the wait; else in a message of Claude's of its own after the history's last
(:func:`after_its_calls`); where that message is a user message read as the model's (``misplaced-call``),
first in the model message repair makes of it. With every call naming it dropped, it goes right after its
call, as other server results do (and a later call naming it is said kept, ``kept-call-after-code-result``:
:mod:`fsm.history.program_callers`). Right after its call, where
a server tool's result the user sent goes, it came before the calls the code made, which it has not
answered yet."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import attrs

from fsm.history.callers import caller_code
from fsm.history.changes import Change, Latest
from fsm.history.entries import Entry, Segment
from fsm.history.formats import shown
from fsm.history.rewrite import Writer
from fsm.history.server_blocks import SERVER_CALLS, is_server_result

MOVED = "beside the results of calls Claude's waiting code made: moved after Claude's next message, which ends the wait"
AFTER_CALLS = (
    "the code's result the user sent: moved first into Claude's message after the results of the calls it made"
)
KEPT = "beside the results of calls Claude's waiting code made: kept, for the caller to send after Claude's next"


class _Run(NamedTuple):
    """A run of the user's messages after a message of Claude's whose code waits on its calls."""

    start: int
    end: int  # (exclusive) Claude's next message, or the history's end
    other: int  # its first message holding content beside the results, or -1


def _runs(messages: Sequence[Mapping[str, Any]]) -> tuple[list[_Run], list[int]]:
    """The runs that answer calls of waiting code and hold other content, and the last messages of
    Claude's turns (its messages in a row, which the API combines) that leave no code waiting on the
    client (positions, in order)."""
    found: list[_Run] = []
    free: list[int] = []
    waiting: dict[Any, int] = {}  # the server calls made and not answered yet, how many by id
    pending: set[Any] = set()  # the client calls of waiting code Claude's latest turn made
    start, answering, other = -1, False, -1
    claude = -1  # the message read last, when it was Claude's
    for at, message in enumerate(messages):
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        blocks = [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []
        role = message.get("role")
        if role not in ("user", "assistant"):  # kept as it is, read as if absent (unknown-role-between)
            continue
        if role == "assistant":
            if answering and other >= 0:
                found.append(_Run(start, at, other))
            if claude < 0:
                pending = set()
            elif free and free[-1] == claude:  # the turn goes on: its end is its last message
                free.pop()
            pending |= _made(blocks, waiting)
            start, answering, other, claude = -1, False, -1, at
            # Not an empty one, left last (Claude's answer to come), nor one a server call waits past (a paused turn)
            if not pending and content and not waiting:
                free.append(at)
            continue
        claude = -1
        if not pending:
            continue
        start = at if start < 0 else start
        if other < 0 and (isinstance(content, str) or (isinstance(content, list) and _beside(blocks, content))):
            other = at
        answering = answering or any(_answers(block, pending) for block in blocks)
    if answering and other >= 0:
        found.append(_Run(start, len(messages), other))
    return found, free


def _made(blocks: list[Mapping[str, Any]], waiting: dict[Any, int]) -> set[Any]:
    """Read a message of Claude's: its server calls wait until a result answers one (of its id, as repair pairs:
    a second under a waiting id waits on, task 165); the ids of its client calls naming a waiting one as caller."""
    pending: set[Any] = set()
    for block in blocks:
        kind, key = block.get("type"), block.get("id")
        if kind in SERVER_CALLS and is_key(key):
            waiting[key] = waiting.get(key, 0) + 1
        elif is_server_result(kind) and is_key(block.get("tool_use_id")):
            if (left := waiting.pop(block["tool_use_id"], 0) - 1) > 0:  # (none left: no key, as ``in`` asks)
                waiting[block["tool_use_id"]] = left
        elif kind == "tool_use" and is_key(key):
            code = caller_code(block)
            if code is not None and code in waiting:
                pending.add(key)
    return pending


def _beside(blocks: list[Mapping[str, Any]], content: list[Any]) -> bool:
    return len(blocks) < len(content) or any(block.get("type") != "tool_result" for block in blocks)


def _answers(block: Mapping[str, Any], pending: set[Any]) -> bool:
    return block.get("type") == "tool_result" and is_key(block.get("tool_use_id")) and block["tool_use_id"] in pending


def is_key(value: Any) -> bool:
    """An id the history can look up (a str, or an int some callers write): no unhashable value."""
    return isinstance(value, (str, int))


def beside_waiting_code(messages: Sequence[Mapping[str, Any]]) -> list[int]:
    """Each run's first message (0-based) holding content beside the results of waiting code."""
    return [run.other for run in _runs(messages)[0]]


def settle(
    out: list[dict[str, Any]], origins: list[list[tuple[int, int]]], changes: list[Change]
) -> list[dict[str, Any]]:
    """Repair's written history (``origins``: per message, where the blocks of each input message it
    holds start) with the content
    beside the results of waiting code moved after Claude's next message that leaves no code
    waiting, or kept where none does; each noted in ``changes``."""
    runs, free = _runs(out)
    if not runs:
        return out
    carried: dict[int, list[Any]] = {}  # per message of Claude's, the content to go after it
    gone: dict[int, dict[str, Any] | None] = {}  # the run's messages as they are left (None: removed)
    at_free = 0
    for run in runs:
        while at_free < len(free) and free[at_free] < run.end:
            at_free += 1
        if at_free == len(free):
            first = _sources(origins[run.other], out[run.other].get("content"))[:1]
            changes.extend(Change("kept-results-beside-text", at + 1, None, KEPT) for at in first)
            continue
        into = carried.setdefault(free[at_free], [])
        for at in range(run.start, run.end):
            message = out[at]
            content = message.get("content")
            moving = _moving(content) if message.get("role") == "user" else []  # another role's is kept apart
            if not moving or not isinstance(content, (list, str)):
                continue
            into += moving
            left = [b for b in content if _is_result(b)] if isinstance(content, list) else []
            gone[at] = {**message, "content": left} if left else None
            changes.extend(Change("moved-user-content", at + 1, None, MOVED) for at in _sources(origins[at], content))
    written: list[dict[str, Any]] = []
    tail: dict[int, list[Any]] = {}  # the user's message right after Claude's takes the content after its results
    for at, message in enumerate(out):
        kept = gone.get(at, message)
        if kept is not None and at in tail:
            content = kept.get("content")
            own = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
            results = [b for b in own if _is_result(b)]
            # after the results (the API takes them first), before what the user said later
            kept = {**kept, "content": results + tail.pop(at) + [b for b in own if not _is_result(b)]}
        if kept is not None:
            written.append(kept)
        if at in carried:
            after = _after_results(out, at + 1)
            if after >= 0:
                tail[after] = carried[at]
            else:
                written.append({"role": "user", "content": carried[at]})
    return written


def _after_results(out: list[dict[str, Any]], at: int) -> int:
    """The user's message, of those in a row from ``at`` (which the API combines into one turn), whose
    results are the turn's last: the content goes after them, before what the user said later (-1:
    none there). Claude's next message ends the user's turn; one of a role the format lacks is read as absent."""
    host = -1
    while at < len(out) and out[at].get("role") != "assistant":
        if out[at].get("role") == "user" and (host < 0 or any(_is_result(b) for b in _blocks(out[at].get("content")))):
            host = at
        at += 1
    return host


def _blocks(content: Any) -> list[Any]:
    return content if isinstance(content, list) else []


def _sources(origin: list[tuple[int, int]], content: Any) -> list[int]:
    """The input messages the content a written message moves came from (merged ones: by where their blocks start)."""
    slots = [s for s, b in enumerate(content) if not _is_result(b)] if isinstance(content, list) else [0]
    starts = [start for start, _ in origin]  # ascending: a search per slot, not a walk (a merge of many)
    return list(dict.fromkeys(origin[max(0, bisect_right(starts, slot) - 1)][1] for slot in slots))


def _moving(content: Any) -> list[Any]:
    """What of a user message's content goes: all of a text, else every block but a result."""
    if not isinstance(content, list):
        return [{"type": "text", "text": content}] if isinstance(content, str) else []
    return [block for block in content if not _is_result(block)]


def _is_result(block: Any) -> bool:
    return isinstance(block, Mapping) and block.get("type") == "tool_result"


def after_their_calls(plan: Writer, codes: Sequence[tuple[Segment, dict[Any, Entry], list[Entry]]]) -> None:
    """The server results of each message of Claude's (their ``segment``, each id's k-th result under
    ``(id, k)``) that the user sent (``moved``), once repair has read every turn (it knows which client
    calls it drops): where :func:`after_its_calls` puts them, else right after their calls; those a user
    message read as the model's holds with its calls (``server-blocks-are-the-models``)."""
    steps: dict[int, _Step] = {}  # each walk's steps, shared (codes' rounds may interleave)
    said = Latest("moved-misplaced-result")  # the change each result moved has, shared: one read of them
    for segment, answer_of, moved in codes:
        after_calls(plan, segment.calls, answer_of, after_its_calls(plan, segment, moved, steps, said))
        plan.with_the_calls(answer_of.values())


def after_its_calls(
    plan: Writer, segment: Segment, moved: list[Entry], steps: dict[int, _Step], said: Latest
) -> list[Entry]:
    """Of the server results the user sent (``moved``), each answering a call that a client call of its
    message (``segment.beside``) repair keeps names as its ``caller`` goes first into Claude's message
    after the results of those calls and of each later round of calls naming it (Claude's messages
    after their results), or in one of its own after the history's last (``code-result-after-its-calls``).
    One whose wait a user message read as the model's (``misplaced-call``) ends goes first into the model
    message repair makes of it. The others, to go right after their calls."""
    rest: list[Entry] = []
    for result in moved:
        at = _answer_of(plan, segment, result.key, steps, plan.rename.get((result.message, result.slot), result.key))
        if at is None:
            rest.append(result)
            continue
        if at in plan.roles.calling:  # first in the model message repair makes of the user's read as Claude's
            plan.split.add(at)
        if at < len(plan.messages):
            plan.touched.add(at)
            plan.front_into.setdefault(at, []).append(result)
        else:
            _own_message(plan, result)
        n = said.of(plan.changes, result.message + 1, shown(result.key))
        if n is not None:
            plan.changes[n] = attrs.evolve(plan.changes[n], detail=AFTER_CALLS)
    return rest


_Step = tuple[int, set[Any], set[Any]]
"""Claude's next turn after a message's results, the codes it names (made before it), the ids its client calls take."""


def _answer_of(plan: Writer, segment: Segment, code: Any, steps: dict[int, _Step], written: Any) -> int | None:
    """Claude's message that ends the wait of the server call ``code`` (the history's length: none), past
    the results of the calls of its message naming it and of each round after them naming it again: Claude's
    messages in a row are one turn, one round, and a round of other codes' calls alone leaves it waiting
    (a later round may name it again; with none, the first message after its last round answers it), but one
    whose client call takes the code's id as written (``written``) ends the wait before it. None
    when no call of its message that repair keeps names it (it waits on nothing: with all of them dropped,
    ``RepairPolicy(dangling="drop-call")``, right after its call)."""
    rounds = [call.message for call in segment.beside if _names(plan, call.message, call.slot) == code]
    if not rounds:
        return None
    at, answer = rounds[-1], None
    while True:
        at, callers, taken = steps[at] if at in steps else steps.setdefault(at, _step(plan, at))
        if written in taken:  # the id taken again: the wait is over before it (as Waiting.meet reads it)
            return at if answer is None else answer
        if at in plan.roles.calling and (answer is None or code in callers):
            return at
        if not callers:  # no code waits past it: the wait ends here, or at the first round of others' after its last
            return at if answer is None else answer
        # A round of another code's calls alone leaves this one waiting too: a later round may name it again
        answer = None if code in callers else at if answer is None else answer


def _step(plan: Writer, at: int) -> _Step:
    """Claude's next turn after the results of the one message ``at`` is in, the codes its kept client calls
    name that an earlier turn made (one of its own is a new wait, not this one's), and the ids its kept client
    calls are written under."""
    at = _next_models(plan, _users_after(plan, _turn_end(plan, at)) + 1)
    turn = range(at, _turn_end(plan, at) + 1) if at < len(plan.messages) else range(0)
    callers = {_names(plan, m, slot) for m in turn for slot in _slots(plan, m)} - {None}
    made = {block.get("id") for m in turn for block in _blocks(plan.messages[m].get("content")) if _made_here(block)}
    return at, callers - made, {_taken(plan, m, slot) for m in turn for slot in _slots(plan, m)} - {None}


def _made_here(block: Any) -> bool:
    return isinstance(block, Mapping) and block.get("type") in SERVER_CALLS


def _taken(plan: Writer, at: int, slot: int) -> Any:
    """The id the client call at ``slot`` of message ``at`` is written under, when repair keeps it (else None)."""
    block = plan.messages[at]["content"][slot]
    if not isinstance(block, Mapping) or block.get("type") != "tool_use" or (at, slot) in plan.drop:
        return None
    key = plan.rename.get((at, slot), block.get("id"))
    return key if is_key(key) else None


def _turn_end(plan: Writer, at: int) -> int:
    """The last of Claude's messages in a row from ``at`` (the API combines them into one turn: a round of
    calls split across them is one round), else ``at``."""
    while at + 1 < len(plan.messages) and at not in plan.roles.calling:
        # a message that came empty goes (dropped-empty-message): Claude's on either side of it are one turn
        if at + 1 not in plan.roles.empty and (
            plan.messages[at + 1].get("role") != "assistant" or at + 1 in plan.roles.calling
        ):
            break
        at += 1
    return at


def _slots(plan: Writer, at: int) -> range:
    content = plan.messages[at].get("content") if at < len(plan.messages) else None
    return range(len(content) if isinstance(content, list) else 0)


def _names(plan: Writer, at: int, slot: int) -> Any:
    """The server call the block at ``slot`` of message ``at`` names as its ``caller``, when it is a client
    call repair keeps (else None)."""
    block = plan.messages[at]["content"][slot]
    kept = (at, slot) not in plan.drop
    return caller_code(block) if kept and isinstance(block, Mapping) and block.get("type") == "tool_use" else None


def _users_after(plan: Writer, at: int) -> int:
    """The first user message after ``at`` (the results of its calls), else the history's end."""
    at += 1
    while at < len(plan.messages) and (
        plan.messages[at].get("role") != "user" or at in plan.roles.calling or at in plan.roles.empty
    ):
        at += 1
    return at


def _next_models(plan: Writer, at: int) -> int:
    """Claude's first message from ``at`` that came with content (or a user's read as the model's,
    ``misplaced-call``), else the history's end."""
    while (
        at < len(plan.messages)
        and at not in plan.roles.calling
        and (plan.messages[at].get("role") != "assistant" or at in plan.roles.empty)
    ):
        at += 1
    return at


def _own_message(plan: Writer, result: Entry) -> None:
    """The result in a message of Claude's of its own after the history's last: one such message holds
    every result repair puts there (two in a row would be one turn the API combines)."""
    added = plan.add_after.setdefault(len(plan.messages) - 1, [])
    if added and added[-1].get("role") == "assistant" and all(_server_result(b) for b in added[-1]["content"]):
        added[-1]["content"].extend(plan.moved([result]))
        return
    added.append({"role": "assistant", "content": plan.moved([result])})


def _server_result(block: Any) -> bool:
    return isinstance(block, Mapping) and is_server_result(block.get("type"))


def after_calls(plan: Writer, calls: list[Entry], answer_of: dict[Any, Entry], moved: list[Entry]) -> None:
    """Each of the ``moved`` server results (a user message sent them; those :func:`after_its_calls`
    leaves) right after the call it answers (``answer_of``: the k-th result of an id for the k-th call of it)."""
    sent = {(entry.message, entry.slot) for entry in moved}
    seen: dict[Any, int] = {}
    for call in calls:
        k = seen.get(pair := (call.key, call.kind), 0)  # (a kind is the Responses' alone: result-answers-its-kind)
        seen[pair] = k + 1
        answer = answer_of.get((pair, k))
        if answer is not None and (answer.message, answer.slot) in sent:
            plan.touched.add(call.message)
            plan.after.setdefault((call.message, call.slot), []).append(answer)
