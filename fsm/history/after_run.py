"""What :func:`fsm.history.repair` writes after an Anthropic run of the model's messages: two policies.

``user-content-after-the-run``: a user message making calls is read as the assistant message repair
moves them into, so one right after the model's calls (or after another such message) is one run,
one turn, with them. Split in place, what is left of it (the user's text, say) would stand between
the run's calls, and the results after it would answer only the calls after it. So what is left of
every such message after the run's first call (Claude's server calls too: one right after an
assistant message of server calls alone is in their run) goes after the run's last message, in its order, and
the turn's results go first in the first of them (``Segment.held``, as for results sent after the
user's text: ``moved-result``), its placeholders after them (``moved-user-content``, at the message).
A message of a role the format lacks holding no call, result or server block parts no run
(``unknown-role-between``). And where the run goes on with an earlier turn's server calls waiting past
their client results (``Segment.carries``: the model's message after those results makes calls again,
``server-call-waits-across-results``), the run begins with its first message, which may hold text
alone: a user message making calls after it leaves its content after the run too, since left between
that message and the calls it would end the wait, and the waiting code's call would be ``dangling``.

``paused-call-last-only``: a server call without its result may wait in the history's last message
alone, a turn paused (``pause_turn``) that the server goes on with (:mod:`fsm.history.server_blocks`).
When repair writes a message after that one (the results of the calls before it), the server can no
longer give that result and nothing else can stand in for it: the call goes, whatever the policy
(``dropped-call``), as it does anywhere else. A server call that waited past client calls
(``server-call-waits-across-results``) all of which ``RepairPolicy(dangling="drop-call")`` drops is
such a paused turn's once they are gone, where nothing of the user's is left after its message: it
stays (it went with them, and a history the check accepts ended one message short). The last message
is the last one the check reads: one that came empty goes, and one of a role the format lacks is read
as absent, so the user's content repair moves after the model's run before them is written after it.
"""

from __future__ import annotations

from bisect import bisect_left

from fsm.history.changes import Change
from fsm.history.entries import Entry, Segment
from fsm.history.formats import items, known_role, shown
from fsm.history.rewrite import Writer
from fsm.history.server_blocks import SERVER_CALLS, models_block

MOVED = "the user's content beside calls made after the model's: moved after the run of calls, their results first"
"""What the ``moved-user-content`` change says."""
NO_LONGER_LAST = "a server tool's result comes from the provider alone: repair writes a message after its paused turn"
"""What the ``dropped-call`` change says of a paused turn's server call once repair writes after it."""


def user_content_after(plan: Writer, segment: Segment) -> Segment:
    """The turn, its results to go first in the first user message that goes after its run (``held``),
    when any does (``user-content-after-the-run``); noted in ``plan.later_of``."""
    if plan.fmt != "anthropic" or not segment.calls:
        return segment
    first = _run_first_call(plan, segment.calls[0].message, segment.carries)
    end = segment.end  # the run's last message (of Claude's server blocks' run too)
    # Every user message read in the run (one of server blocks alone makes none of the turn's calls)
    later = [at for at in range(first + 1, end + 1) if at in plan.roles.calling and _leftover(plan, at)]
    for at in later:
        if at not in plan.later_of:  # (the run's server blocks and its client calls each find it)
            plan.changes.append(Change("moved-user-content", at + 1, None, MOVED))
        plan.later_of[at] = max(end, plan.later_of.get(at, end))
    return segment._replace(held=later[0]) if later else segment


def _run_first_call(plan: Writer, at: int, carries: bool = False) -> int:
    """The first message making a call, Claude's server calls too, of the turn's run of the model's
    messages that message ``at`` (making the turn's first client call) is in: the assistant messages
    before it with server calls alone, back to one with a client call or result (another turn's) or
    to a message of the user's; a message that came empty is read as if gone, and so is one of a role
    the format lacks holding no call, result or server block (``unknown-role-between``: the check reads
    the run across it, so the user's content after it goes after the run, its results first). A user
    message holding client results beside server calls begins a run of its own: its answer goes first.
    A run that ``carries`` the wait of an earlier turn's server calls (or answers it, its server result in
    a user message read as the model's) begins with its first message of the model's (text alone too,
    answering the client results): split there, it would end that wait."""
    first = at
    if any(block.get("type") == "tool_result" for block in items(plan.messages[at], plan.fmt, at)):
        return at
    for before in range(at - 1, -1, -1):
        if before in plan.roles.empty or _absent(plan, before):
            continue
        if plan.messages[before].get("role") != "assistant" and before not in plan.roles.calling:
            break
        # (a type of no str is no block's of those: a dict or list one is unhashable)
        kinds = {
            kind
            for block in items(plan.messages[before], plan.fmt, before)
            if isinstance(kind := block.get("type"), str)
        }
        if "tool_result" in kinds and before in plan.roles.calling:  # the user's answer, then its server calls
            return before
        if kinds & {"tool_use", "tool_result"}:
            break
        if carries or not kinds.isdisjoint(SERVER_CALLS):
            first = before
    return first


def _absent(plan: Writer, at: int) -> bool:
    """Is message ``at`` of a role the format lacks, holding none of the model's blocks nor a result
    (read as if absent, ``unknown-role-between``)?"""
    message = plan.messages[at]
    if known_role(plan.fmt, message.get("role")):
        return False
    return not any(models_block(block) or block.get("type") == "tool_result" for block in items(message, plan.fmt, at))


def stays(plan: Writer, at: int, called: int) -> bool:
    """Does user message ``at``, making calls in a run whose first call is in message ``called``, leave
    content of the user's where it is? Only before that first call: after it, it goes after the run."""
    return at <= called and _leftover(plan, at)


def _leftover(plan: Writer, at: int) -> bool:
    """Does Anthropic message ``at`` hold anything but the model's blocks (what splitting it leaves the user)?"""
    return not all(models_block(block) for block in items(plan.messages[at], plan.fmt, at))


def still_waits(plan: Writer, segment: Segment) -> bool:
    """May the server still run a server call of ``segment`` that waits where the history ends? It
    may in a turn paused (``pause_turn``, see :func:`drop_paused` too), and past the client results
    of calls beside it (``server-call-waits-across-results``). With all of those dropped
    (``RepairPolicy(dangling="drop-call")``) it is a paused turn's again (:func:`pauses`)."""
    return segment.open_end


def pauses(
    plan: Writer, segment: Segment, call: Entry, seen: dict[int, tuple[tuple[Entry, ...], int]]
) -> list[tuple[Entry, bool]]:
    """A waiting server call of ``segment`` as a paused turn's (``paused-call-last-only``), if it is
    one: it waits past no client call repair keeps (past one repair keeps, it stays even when repair
    writes after it); True once drop-call dropped all those (:func:`drop_paused`). The calls waited past
    are one tuple for every segment held to the end: ``seen`` keeps, by it, how many of them in a row were
    found dropped (a drop stays), so no call asks of them again (each did: quadratic, task 153)."""
    carried = segment.carried
    _, i = seen.get(id(carried), (carried, 0))  # (the tuple kept with it: its id stays its own)
    while i < len(carried) and (carried[i].message, carried[i].slot) in plan.drop:
        i += 1
    seen[id(carried)] = (carried, i)
    if i < len(carried):
        return []
    return [(call, bool(carried))]


def drop_paused(plan: Writer) -> None:
    """The paused turn's server calls, once repair writes a message after the last, or leaves one of
    the user's after theirs (``paused-call-last-only``): a call the code made that drop-call dropped
    leaves its server call paused, but only where nothing the user sent stays after it."""
    last = len(plan.messages) - 1  # what user messages of a run of server calls alone leave goes after it too
    while last > 0 and (last in plan.roles.empty or _absent(plan, last)):
        last -= 1  # one that came empty goes, one of a role the format lacks is read as absent: the last is before
    written = any(plan.add_after.get(at) for at in range(last, len(plan.messages))) or any(
        end >= last for end in plan.later_of.values()
    )
    ending: list[int] | None = None  # the messages that end the model's run, in order: made at the first ask
    for call, unpaused in plan.paused:
        if not written and not unpaused:
            continue
        if not written:
            if ending is None:  # (each asked of the messages after it: quadratic in many calls paused, task 153)
                ending = [at for at in range(len(plan.messages)) if not _in_last_run(plan, at)]
            if not ending or ending[-1] <= call.message:  # every message after it is in the run ending the history
                continue
        plan.drop.add((call.message, call.slot))
        plan.touched.add(call.message)
        plan.changes.append(Change("dropped-call", call.message + 1, shown(call.key), NO_LONGER_LAST))
        i = bisect_left(ending, call.message) if ending else 0
        if ending and i < len(ending) and ending[i] == call.message and _in_last_run(plan, call.message):
            del ending[i]  # (a drop only takes a message into the run: its last block gone, it goes)


def _in_last_run(plan: Writer, after: int) -> bool:
    """Can message ``after`` be in the model's run that ends the history once repair's drops are made (as
    decided so far)? It is the model's (which the API combines with the rest of the run), came empty or goes
    emptied, or is of a role the format lacks and read as absent. A message repair writes after one of the
    model's (the results sent in the model's role, ``misplaced-result``, moved to the user's) ends the run there."""
    message = plan.messages[after]
    if after in plan.roles.empty or _absent(plan, after):
        return True
    if message.get("role") == "assistant" and after not in plan.roles.calling:
        return not any(added.get("role") != "assistant" for added in plan.add_after.get(after, ()))
    if isinstance(message.get("content"), str) or any(
        after in edits for edits in (plan.add_into, plan.front_into, plan.move_into, plan.add_after)
    ):
        return False
    return all((after, slot) in plan.drop for slot in range(len(items(message, plan.fmt, after))))
