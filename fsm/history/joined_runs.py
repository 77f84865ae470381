"""Which of the model's messages are one once repair has written the history.

Anthropic: which assistant runs making server calls the API reads as one turn once repair is done.

The Messages API combines consecutive messages of one role into one turn, which takes a server
call's id once. Two runs of the model's messages making server calls under one id are one turn
when nothing parts them once repair has written the history: every message between goes, or is
read in the model's run (an assistant message; a user message making calls whose other content
goes after the run, :mod:`fsm.history.after_run`); or is of a role the format lacks and makes
calls (read as the model's) or, once repair is done, holds no result or server block (policy
``unknown-role-between``: such a message is read as if it were absent, :mod:`fsm.history.turns`).
The later run's server call under such an id is then renamed as a second call within one message.
A message's server blocks whose code waits past client results are paired after the later runs it
waited across (:class:`ServerRuns` keeps each run's ids for them): looked at against the run before
them, and against the runs paired first in their own (results sent in the model's role that repair
moves after the run join them), where their own call under such an id is the one renamed (task 135).
Converse alike, where only a message that goes (or an assistant message) leaves the two joined.

A call repair drops holds no id (``dropped-call-frees-id``), so none of these collides with it; where the drop
is found only after the calls under its id were paired, repair pairs again knowing the first pass's drops
(``ServerRuns.doomed``, task 162). The runs joined share one order of their ids, each a view of it (:class:`RunIds`).

Converse, Gemini: a model's message holding results sent in its role (``misplaced-result``) that keeps
more than them joins the calls' message before it, as repair writes messages of one role in a row; but
not across a message of a role the format lacks, which stays between (``unknown-role-kept-apart``), nor into
calls sent in such a role: the turn's answer then goes right after the calls, not after that message
(:func:`kept_apart`).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Container
from itertools import islice
from typing import Any

from fsm.history.after_run import stays
from fsm.history.entries import Entry, Key, Segment
from fsm.history.formats import ANTHROPIC_CALLS, items, known_role
from fsm.history.rewrite import ALTERNATING, Writer
from fsm.history.server_blocks import is_server_result, models_block
from fsm.history.twins import CallIndex, CodeCalls, Stretches, Twin, twin_calls

Dropped = frozenset[tuple[int, int]]
"""The blocks (message, slot) a first pass of repair found it drops."""


class RunIds:
    """The server ids of a run of Claude's messages as its latest server blocks were paired: a view of the ids
    a chain of runs joined one to the next took, in order (``order``, shared by the chain's views), the first
    ``count`` of them, and those taken by this view alone after later runs joined (``own``). A run that joins
    the latest takes its ids into the shared order and is a longer view of it: a copy of the ids so far for each
    run joined was quadratic (thousands of rounds joined as repair removes their user messages, task 162)."""

    __slots__ = ("count", "order", "own")

    def __init__(self, order: dict[Key, int] | None = None) -> None:
        self.order: dict[Key, int] = {} if order is None else order
        self.count, self.own = len(self.order), set[Key]()

    def among(self, keys: set[Key]) -> set[Key]:
        """Those of ``keys`` held (read through ``keys``: the run's may be many)."""
        return {key for key in keys if self.order.get(key, self.count) < self.count or key in self.own}

    def take(self, keys: set[Key]) -> None:
        """Hold ``keys`` too: in the shared order when this view is its longest (no view after it reads them)."""
        if self.count == len(self.order):
            for key in keys:
                self.order.setdefault(key, len(self.order))
            self.count = len(self.order)
        else:
            self.own |= keys

    def joined(self, keys: set[Key]) -> RunIds:
        """The view of a run joining this one, the latest, that holds ``keys`` too (this view stays as it was).
        One no longer the order's longest (a run joined it taking no id, then the run before took one: both
        views were the longest) is copied to an order of its own: rare, where an assert stood."""
        if self.own or self.count != len(self.order):
            held = [key for key, at in self.order.items() if at < self.count]
            later = RunIds({key: n for n, key in enumerate([*held, *self.own])})
        else:
            later = RunIds(self.order)
        later.take(keys)
        return later


class ServerRuns:
    """The server blocks paired so far: the last message of the latest (``end``) and the server ids of the
    run they are in (``ids``); and, for each paired in message order, its last message (``ends``, ascending)
    and its run's ids then (``taken``, whose last is ``ids`` itself), where a segment paired after later ones
    finds the run before it and the runs paired in its own (task 135). And (Anthropic) the history's calls
    by id (``index``), read once a repair when a turn first asks for its twins."""

    __slots__ = (
        *("added", "code_calls", "doomed", "end", "ends", "gone", "ids", "index", "seen", "size", "stretches", "taken"),
        "took",
    )

    def __init__(self, doomed: Dropped = frozenset()) -> None:
        self.doomed = doomed  # the blocks a first pass found repair drops, dropped or not as yet (task 162)
        self.end, self.ids = -1, RunIds()
        self.ends: list[int] = []
        self.taken: list[RunIds] = []
        self.index: CallIndex | None = None
        self.code_calls: CodeCalls | None = None
        self.size: dict[int, int] = {}  # a message's blocks, and how many of them in a row repair drops
        self.gone: dict[int, int] = {}
        self.added: list[int] = []  # the messages repair writes one after, in order
        # Stretches of messages found read in the model's run below a turn's first call, which a later turn's
        # walk down its run steps over at once (see :meth:`low`).
        self.stretches = Stretches()
        self.seen = (0, 0, 0)  # how many messages repair had moved results into when last looked
        # The view the segment being paired took its ids into, if any, and from which message on its calls' ids
        self.took: tuple[RunIds, int] | None = None

    def renamed(self, plan: Writer, call: Entry, wire_id: str) -> None:
        """``call`` (of the segment being paired) goes under ``wire_id``: the run's ids hold the name as written,
        and the history's calls by id find it there, not under the id sent. A later run joined read the ids
        sent, and its call under a name a rename gave stayed beside it (``duplicate-call``, task 165)."""
        if self.took is not None and call.message >= self.took[1]:  # (one answered in an earlier run is free)
            self.took[0].take({wire_id})
        if plan.fmt == "anthropic":
            self.calls(plan).rename(plan.messages, call.message, call.slot, wire_id)

    def dropping(self, plan: Writer) -> Container[tuple[int, int]]:
        """The blocks repair drops: as decided so far, and (a second pass) those the first found it drops. A
        block dropped after a call under its id was paired held no id, and that call's rename was needless."""
        return _Dropping(plan.drop, self.doomed) if self.doomed else plan.drop

    def row(self, plan: Writer, at: int) -> int:
        """The last of the assistant messages in a row from message ``at`` (``at`` itself when it is none)."""
        return self.calls(plan).on[at]

    def parted(self, plan: Writer, at: int) -> int:
        """The first message from ``at`` on that repair writes a message after, as decided so far (else past
        the last). Those it writes after are kept in order as they come (a key once added stays)."""
        grown = len(plan.add_after) - len(self.added)
        for key in islice(reversed(plan.add_after), grown):
            insort(self.added, key)
        i = bisect_left(self.added, at)
        return self.added[i] if i < len(self.added) else len(plan.messages)

    def dropped(self, plan: Writer, at: int) -> bool:
        """Does repair drop every block of message ``at``, as decided so far? Its blocks found dropped are
        not asked of again (a drop stays): a user message of many results bounds many runs (task 144)."""
        if at not in self.size:
            self.size[at] = len(items(plan.messages[at], plan.fmt, at))
        while self.gone.get(at, 0) < self.size[at] and (at, self.gone.get(at, 0)) in plan.drop:
            self.gone[at] = self.gone.get(at, 0) + 1
        return self.gone.get(at, 0) == self.size[at]

    def low(self, plan: Writer, first: int, inside: Callable[[int], bool]) -> int:
        """The first message of the run of the model's messages that ends with message ``first`` (its first
        call's) as repair writes it, walking down while ``inside`` holds. Below a turn's first call, whether a
        message is read in its run does not depend on the turn, and as repair goes on it only turns true, but
        where repair moves a result into the message: so a stretch found once is stepped over by every later
        turn's walk, but where such a message parts it (a run joined from many once a removed message is gone
        was walked down whole by each turn of it: quadratic, task 153)."""
        self._parted(plan)
        stretches, index = self.stretches, self.calls(plan)
        low = first
        while low > 0:
            if (start := stretches.first_of(low - 1)) is not None:
                low = start
            elif inside(low - 1):
                low = index.back[low - 1]
            else:
                break
        stretches.note(low, first - 1)  # the stretches it stepped over are within it: one now
        return low

    def _parted(self, plan: Writer) -> None:
        """Part the stretches at each message repair moved results into since last looked (it may now part
        a run: it stays). The maps only gain keys, in order, so the new ones are their last."""
        moved: tuple[dict[int, Any], ...] = (plan.add_into, plan.front_into, plan.move_into)
        for into, seen in zip(moved, self.seen, strict=True):
            for at in islice(reversed(into), len(into) - seen):
                self.stretches.part(at)
        self.seen = (len(plan.add_into), len(plan.front_into), len(plan.move_into))

    def calls(self, plan: Writer) -> CallIndex:
        """The history's calls by id, and its rows of assistant messages: read once a repair."""
        if self.index is None:
            self.index = CallIndex(plan.messages)
        return self.index

    def made_by(self, plan: Writer) -> CodeCalls:
        """The history's calls by the code they name as their caller: read once a repair."""
        if self.code_calls is None:
            self.code_calls = CodeCalls(plan.messages)
        return self.code_calls


class _Dropping:
    __slots__ = ("doomed", "drop")

    def __init__(self, drop: set[tuple[int, int]], doomed: Dropped) -> None:
        self.drop, self.doomed = drop, doomed

    def __contains__(self, place: object) -> bool:
        return place in self.drop or place in self.doomed


def joined_server_ids(plan: Writer, segment: Segment, runs: ServerRuns) -> dict[Key, str]:
    """The server ids of ``segment``'s run that the run of the server blocks before it has too, when the
    two are one turn once repair is done (else none), and (Anthropic) those under which its calls come after
    a call of the other kind in their run (``client-and-server-call-one-id``), each with why it is renamed;
    noting the server run it ends in ``runs``."""
    first = min((call.message for call in (*segment.calls[:1], *segment.beside)), default=-1)  # the run's first call
    twins = _twins(plan, segment, first, runs) if plan.fmt == "anthropic" else {}
    why = "a server call" if segment.server else "a client call"
    collide = {
        key: f"{why} under {key!r} after a call of the other kind in its turn" for key, t in twins.items() if t[0]
    }
    runs.took = None
    if plan.fmt not in ALTERNATING or not segment.server or not segment.calls:
        return collide
    doomed = runs.doomed  # a call repair drops holds no id, and none collides with it (dropped-call-frees-id)
    kept = [call for call in segment.calls if (call.message, call.slot) not in doomed]
    start, keys = segment.calls[0].message, {call.key for call in kept}
    end, before = runs.end, runs.ids
    called = min((call.message for call in segment.beside), default=start)  # the run's first client call
    joined = _joins(plan, runs, end, start, called)
    why = "in an assistant message a removed message joins to one making it"
    sent = {(entry.message, entry.slot) for entry in segment.misplaced}  # a set: a scan of the tuple was O(n^2)
    ends = max(e.message for e in (*segment.calls, *segment.results) if (e.message, e.slot) not in sent)
    first = ends  # the run of Claude's that holds ``ends``: a code's result may end a later one than its call's
    while first > start and _in_run(plan, runs, first - 1, called):  # (no walk past its own turn)
        first -= 1
    held = {call.key for call in kept if call.message >= first}  # an id answered in an earlier run is free
    if ends < end:  # paired after a later segment: a server call that waited past client results is paired after
        # the later runs it waited across (task 122), and the run its result ends is paired before the segments
        # it ends (task 125): the latest run stays the one a later run may join, and takes these ids when one
        prior = bisect_left(runs.ends, start) - 1  # the run before it, which a removed message may join it to
        if prior >= 0 and _joins(plan, runs, runs.ends[prior], start, called):
            collide |= {key: f"a server call under {key!r} {why}" for key in runs.taken[prior].among(keys)}
        reach = ends  # the run of Claude's holding ``ends``, up to the latest run's end: the runs paired in it
        # (a message repair writes after one parts the run there, as in _joins; a row of assistant messages is
        # stepped over at once, up to such a message: each code that waited to the end walked it, task 144)
        while reach < end and reach not in plan.add_after and _in_run(plan, runs, reach + 1, called):
            row = min(runs.row(plan, reach + 1), end)
            reach = min(row, runs.parted(plan, reach + 1))
        later = bisect_right(runs.ends, reach) - 1  # the last of them, whose ids are the run's: it takes these
        if later >= 0 and runs.ends[later] >= ends:
            why = "that a later message of its run, paired first, has too"
            collide |= {
                key: f"a server call under {key!r} {why}" for key in runs.taken[later].among(held - set(collide))
            }
            runs.taken[later].take(held)  # (the latest run's are ``runs.ids``: that view)
            runs.took = (runs.taken[later], first)
        return collide
    collide |= {key: f"a server call under {key!r} {why}" for key in (before.among(keys) if joined else ())}
    runs.end, runs.ids = ends, before.joined(held) if joined else RunIds({key: n for n, key in enumerate(held)})
    runs.ends.append(ends)
    runs.taken.append(runs.ids)
    runs.took = (runs.ids, first)
    return collide


def _joins(plan: Writer, runs: ServerRuns, end: int, start: int, called: int) -> bool:
    """Is the run ending at message ``end`` one turn with the one starting at ``start`` once repair is done
    (``called``: the later run's first client call)? Only messages between not read in the run part them."""
    between = range(end + 1, start)  # assistant messages there are of the run: only the others part it
    joined = 0 <= end < start and all(_in_run(plan, runs, at, called) for at in between)
    return joined and not any(at in plan.add_after for at in range(end, start))


def _twins(plan: Writer, segment: Segment, first: int, runs: ServerRuns) -> dict[Key, Twin]:
    """``twin_calls`` of ``segment`` in its run as repair writes it (``client-and-server-call-one-id``).
    A user message making calls right before the run joins it: split, its calls go in a model message
    after what it keeps of the user's (which then parts it from the messages before). A block repair
    dropped while pairing an earlier turn (a server call without its result) is no twin: it is not sent.
    The run is walked only for a turn whose ids a kept call of the other kind has (linear, task 144)."""
    index = runs.calls(plan)
    if not index.shared(segment, gone := runs.dropping(plan)):
        return {}

    def inside(at: int) -> bool:  # the run's first call's message, and one whose content goes after the run
        return at == first or _in_run(plan, runs, at, first) or (at in plan.roles.calling and at in plan.later_of)

    low = runs.low(plan, first, inside)  # (a row of assistant messages, or a stretch walked before, in one step)
    known = low  # the messages from ``known`` to ``first`` are read in the run: stepped over again at once
    if low > 0 and low - 1 in plan.roles.calling and _calls_kept(plan, low - 1):
        low -= 1
    down = lambda at: known if known <= at < first else index.back[at]  # noqa: E731
    in_run = lambda at: at >= low and (at == low or inside(at))  # noqa: E731
    return twin_calls(plan.messages, segment, index, in_run, gone, down)[0]


def _calls_kept(plan: Writer, at: int) -> bool:
    """Does repair keep a block of the model's in message ``at`` (its calls, once split, then make a message)?"""
    return any(
        models_block(block) and (at, j) not in plan.drop
        for j, block in enumerate(items(plan.messages[at], plan.fmt, at))
    )


def _in_run(plan: Writer, runs: ServerRuns, at: int, called: int) -> bool:
    """Is message ``at`` read in the model's run once repair is done (``called``: the run's first client
    call)? An assistant message, one that goes, a user message whose calls join the run and whose other
    content goes after it, or one of a role the format lacks read in the run (Anthropic)."""
    return (
        plan.messages[at].get("role") == "assistant"
        or _going(plan, runs, at)
        or (plan.fmt == "anthropic" and at in plan.roles.calling and not stays(plan, at, called))
        or (plan.fmt == "anthropic" and _unknown_in_run(plan, at))  # Converse's stays apart (tail), read apart
    )


def _going(plan: Writer, runs: ServerRuns, at: int) -> bool:
    """Will message ``at`` be removed, as decided so far? (Every edit of a message before a turn's
    server blocks comes from an earlier turn.)"""
    if at in plan.roles.empty:
        return True  # it came empty (empty-message)
    if at not in plan.touched or _takes_results(plan, at):
        return False
    content = plan.messages[at].get("content")
    if isinstance(content, str):
        return not content
    return runs.dropped(plan, at)


def _unknown_in_run(plan: Writer, at: int) -> bool:
    """Is message ``at``, of a role the format lacks, read in the model's run around it once repair is
    done? It is when it makes calls (read as the model's), or when no result or server block stays
    in it (``unknown-role-between``: kept for the caller to name, it is read as if absent)."""
    message = plan.messages[at]
    if known_role(plan.fmt, message.get("role")) or _takes_results(plan, at):
        return False
    return all(
        (at, j) in plan.drop or block.get("type") == "tool_use" or not _pairs(block.get("type"))
        for j, block in enumerate(items(message, plan.fmt, at))
    )


def _pairs(kind: object) -> bool:
    """Is a block of this type a call or a result (Claude's server blocks too)?"""
    return kind in ANTHROPIC_CALLS or is_server_result(kind)


def _takes_results(plan: Writer, at: int) -> bool:
    """Does repair move results or placeholders into message ``at``?"""
    return any(at in added for added in (plan.add_into, plan.front_into, plan.move_into))


def kept_apart(plan: Writer, segment: Segment, answer: int) -> bool:
    """Converse, Gemini: does a message of a role the format lacks stand between the calls' message and
    the model's message sending ``segment``'s results in its role before ``answer``, the user's message
    answering the turn, when it keeps more than them? Kept as it came, it parts the two once written.
    So does the calls' message itself when of such a role (a Gemini content of role ``function`` making
    calls, kept as it came): the model's message after it joins it no more than one between would
    (``function-role-calls-kept-apart``, task 141)."""
    first = segment.misplaced[0].message if segment.misplaced else answer
    # the messages read as if absent (came empty, or of an unknown role), and the calls' own
    absent = range(max(segment.end, 0), first)
    sent = {(entry.message, entry.slot) for entry in segment.misplaced}
    return (
        plan.fmt in ("bedrock", "gemini")
        and first < answer
        and any(at not in plan.roles.empty and not known_role(plan.fmt, plan.messages[at].get("role")) for at in absent)
        and not left_empty(plan, sent)
    )


def left_empty(plan: Writer, sent: set[tuple[int, int]]) -> bool:
    """Does every block of the messages holding ``sent`` go (moved, or dropped as answering nothing)?"""
    held = {at for at, _ in sent}
    return all((at, j) in plan.drop for at in held for j in range(len(items(plan.messages[at], plan.fmt, at))))
