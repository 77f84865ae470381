"""Claude's server tool blocks in an Anthropic history: a ``server_tool_use`` or ``mcp_tool_use``
block is a call Anthropic ran itself, and the ``*_tool_result`` block naming its id
(``web_search_tool_result``, ``code_execution_tool_result``, ``mcp_tool_result``, ...) its answer,
both in the assistant message Claude wrote. So each message's server blocks are a turn of their own,
closed by the end of that message. Anthropic refuses a server call without its result unless it is
in the request's last message: a turn paused (``pause_turn``) after such a call goes back as it
came, as the last message, and the API runs the call (anthropic-sdk-python issues 961 and 1339:
with a message after it, the API answers 400). Nothing but the server can stand in for that result,
so repair drops such a call anywhere else, and there too once it writes a message after it
(:mod:`fsm.history.after_run`). Bedrock Converse's server tools are read the same way: a
``toolUse`` of ``type: server_tool_use`` and a ``toolResult`` naming it later in the model's own message.

A result answers a call that comes before it in the message, as Claude writes them (Anthropic
refuses a result placed before its call). The results are paired first come, first served: each
answers the earliest call of its id before it that nothing answered yet, which is the history's k-th
rule whenever every result follows its call. When that leaves a call of an id waiting, the k-th rule
would give it a result placed before it: such results answer nothing, read as stray results just
ahead of their message's blocks.

A server tool's result the user's message right after sends back (beside the client's results, say)
answers that message's server calls as if Claude's message held it, after them; it is a
``misplaced-result``, which repair moves right after its call (:mod:`fsm.history.turns`).

The policy ``server-blocks-are-the-models``: only Claude writes a server call, so a user message
holding one is read as the model's message, as one making client calls is (``misplaced-call``, the
API combining it with the assistant messages beside it in one turn); the server results it holds
answer the server calls of that run, and are ``misplaced-result``. Repair moves every server block of
such a message (:func:`models_block`) with its client calls into the model message it makes of them,
in their order, where they pair as they were read. Left in the user's message, a server call
answered there was read as answered and written where the next repair read it alone: dropped, its
real result with it.

The policy ``server-call-waits-across-results``: a server call left waiting at the end of an
Anthropic assistant message that makes client calls waits on past their results (:class:`Waiting`).
Code execution that calls the client's tools (programmatic tool calling: each such ``tool_use``
names the server call its ``caller``) pauses for their results: the API wants the waiting call back
in the request that sends them, and its result comes in a later assistant message, once the code has
run on. So such a call is answered by the server results of the model's message after the user's
results, and of the ones after that while each makes client calls again (results sent in the model's
role, ``misplaced-result``, count as the user's where repair moves them: in the user's message after
the model's run they are in, the model's messages up to it before them, or first in the user's text
between the calls and them, or in what a user message read in the calls' run leaves after it
(``user-content-after-the-run``), the rest of their message after them); one no such message answers
is ``dangling`` there (repair drops it, as any server call without its result), but where the user's
message right after it sends its result (:meth:`Waiting.answer_later`: as after a message of Claude's
server calls, it answers as that message's, ``misplaced``), or where the history ends with that
message (paused as the code runs on: the server goes on with the turn); and one still waiting where
the history ends (the client's results sent, or not yet) is the server's to run, as a paused turn's
is, and stays even when repair writes a message after it (the placeholders of the calls beside it)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from fsm.history.entries import Entry, Key, Segment

# The wire's own names for these blocks, under the names the history reads them by.
from fsm.wire.decoders._wire import CLAUDE_SERVER_CALLS as SERVER_CALLS
from fsm.wire.decoders._wire import server_result_block as is_server_result

__all__ = [
    "SERVER_CALLS",
    "Waiting",
    "converse_holding",
    "converse_payload",
    "in_order",
    "is_server_result",
    "models_block",
]


def models_block(block: Mapping[str, Any]) -> bool:
    """Is an Anthropic block one only the model's message holds: a client call, or Claude's server
    call or its result (``server-blocks-are-the-models``)? A user message's such blocks go in the
    model message repair makes of its calls."""
    kind = block.get("type")
    return kind == "tool_use" or kind in SERVER_CALLS or is_server_result(kind)


def in_order(served: Segment) -> tuple[list[Entry], Segment]:
    """The results placed before the call they would answer, and the blocks (of a message, or of
    Anthropic's run of assistant messages) with their results ordered so that the k-th rule pairs
    them first come, first served."""
    waiting: dict[Key, int] = {}  # calls of the id read so far that no result answers yet
    paired: list[Entry] = []
    unpaired: list[Entry] = []
    calls = iter(served.calls)
    call = next(calls, None)
    for result in served.results:
        while call is not None and (call.message, call.slot) < (result.message, result.slot):
            waiting[call.key] = waiting.get(call.key, 0) + 1
            call = next(calls, None)
        if waiting.get(result.key, 0):
            waiting[result.key] -= 1
            paired.append(result)
        else:
            unpaired.append(result)
    # First come, first served leaves an id's last calls waiting, if any. Under the k-th rule its
    # unpaired results would answer them, each a call it comes before: they are early, and answer
    # nothing. When no call of the id is left waiting, they are its second results.
    left = _count(served.calls)
    for result in paired:
        left[result.key] -= 1
    early: list[Entry] = []
    under: dict[Key, list[Entry]] = {}  # each id's results: those paired first, then its second ones
    for result in paired:
        under.setdefault(result.key, []).append(result)
    for result in unpaired:
        if left.get(result.key, 0):
            early.append(result)
        else:
            under.setdefault(result.key, []).append(result)
    # Each id's results take the places its own results held, so ids keep their order among each other.
    taken = {key: iter(entries) for key, entries in under.items()}
    gone = {(result.message, result.slot) for result in early}  # a run's messages each number their slots from 0
    kept = [next(taken[result.key]) for result in served.results if (result.message, result.slot) not in gone]
    return early, served._replace(results=kept)


def _count(entries: list[Entry]) -> dict[Key, int]:
    counts: dict[Key, int] = {}
    for entry in entries:
        counts[entry.key] = counts.get(entry.key, 0) + 1
    return counts


def converse_payload(block: Any) -> tuple[Literal["toolUse", "toolResult"], Any] | None:
    """A Converse content block's call (``toolUse``) or result (``toolResult``) and its value. Converse
    blocks are told by their one field; a block with a ``type`` is another format's."""
    if not isinstance(block, Mapping) or "type" in block:
        return None
    if "toolUse" in block:
        return "toolUse", block["toolUse"]
    if "toolResult" in block:
        return "toolResult", block["toolResult"]
    return None


def converse_holding(block: Any, served: set[Any] | None) -> Any:
    """What a Converse block holds, read as the history reads it: ``call``, ``result``,
    ``("server", id)`` for a server tool's call, or ``""`` (a server call's result: in the model's
    message after that call, whose id is in ``served``, None in a user's message; other blocks)."""
    payload = converse_payload(block)
    if payload is None or not isinstance(payload[1], Mapping):
        return ""
    field, value = payload
    wire_id = value.get("toolUseId")
    if field == "toolUse" and value.get("type") == "server_tool_use":
        if served is not None:
            served.add(wire_id)
        return ("server", wire_id)
    if field == "toolResult" and served and wire_id in served:
        return ""
    return "call" if field == "toolUse" else "result"


class _Held:
    """A unit's server blocks held (:class:`Waiting`), with the calls of each id still waiting and
    the results they took since, gathered in lists (a history of many rounds appends to them)."""

    __slots__ = ("chunk", "misplaced", "order", "results", "waits")

    def __init__(self, chunk: Segment, order: int) -> None:
        self.chunk, self.order, self.waits = chunk, order, _waiting(chunk)
        self.results, self.misplaced = [*chunk.results], [*chunk.misplaced]

    def segment(self, open_end: bool = False, carried: tuple[Entry, ...] = ()) -> Segment:
        """The blocks as a turn; ``open_end`` where the history ends with calls of them waiting,
        past the client calls ``carried`` (none: paused as the code runs on)."""
        chunk = self.chunk._replace(results=self.results, misplaced=tuple(self.misplaced))
        return chunk._replace(open_end=True, carried=carried) if open_end else chunk


class Waiting:
    """The server blocks of the model's messages whose calls wait past the client results of their
    message's calls (``server-call-waits-across-results``), held whole, so a waiting call stays in
    the turn it was made in (and renamed within it, as any call), until the model's message after
    those results answers it or does not: a unit at a time, the model's message that made them,
    then the user's results, then the model's message that may answer them. Each id's waiting
    calls are indexed (``under``), so a history of many rounds is read in linear time."""

    def __init__(self, fmt: str) -> None:
        self.held: dict[int, _Held] = {}  # by order held, oldest first
        self.under: dict[Key, deque[_Held]] = {}  # per id, the blocks holding a call of it waiting, oldest first
        self.answered = False  # the user's results of the calls beside them came
        self.anthropic = fmt == "anthropic"  # Converse's server tools pause for no client call
        self.pausing: tuple[Entry, ...] = ()  # the client calls they wait past, of the latest message
        self.moved = False  # their results came in the model's role: the model's units up to the user's are their run
        self.through = False  # the unit met last made client calls they wait on past, or answered one making calls
        self._order = 0

    def meet(
        self,
        served: list[Segment],
        results: list[Entry] | None,
        users: bool,
        calls: list[Entry],
        moved: bool = False,
        ends: bool = False,
    ) -> Iterator[Segment]:
        """Read the next unit (its server blocks ``served``, the results it holds, is it the user's,
        the client calls it makes, were its results sent in the model's role, does the history end
        with it) against the blocks held: the user's results answering a client call beside them let
        them wait on (sent in the model's role, after the model's run they are in, where repair moves
        them); the model's message after them answers them with its server results, which go to
        their calls' blocks (out of ``served``, in place), and those it leaves waiting wait on past
        its own client calls' results, if it made any and no call of it takes a waiting call's id,
        or where the history ends with it and it makes no call (a turn paused, ``pause_turn``, as
        the code runs on: the server goes on with it); anything else finds them dangling."""
        self.through = False
        if not self.held:
            return
        pausing = {call.key for call in self.pausing}
        sent = any(result.key in pausing for result in results or ())
        if self.moved or (moved and sent and not self.answered):
            # Results sent in the model's role go to the user's message after the model's run they are in
            # (repair moves them there): the model's units up to it are the run the waiting calls were made
            # in, whose server results answer them; the model's message after that user's message, as ever.
            if self.moved and users:
                self._answer(served, misplaced=True)
                self.moved, self.answered = False, True
                return
            if not (self.moved and calls):
                self._answer(served)
                self.moved = True
                return
            self.moved, self.answered = False, True  # a unit making calls ends the run: the results go before it
        if not self.answered and users and sent:
            # a server result sent there answers its call too (server-blocks-are-the-models: repair
            # moves it to its call)
            self._answer(served, misplaced=True)
            self.answered = True
            return
        if not self.answered or users:
            yield from self.over()
            return
        # a waiting call whose id the unit calls again, leaving that call waiting too, is over before it
        # (not one whose result the unit gives before that call: answered, its id is free again, task 122;
        # but only once every call of the id held waiting is: one still waiting is over, audit 125)
        first: dict[Key, tuple[int, int]] = {}
        for call in calls:
            first.setdefault(call.key, (call.message, call.slot))
        early = _count(
            [r for chunk in served for r in chunk.results if (r.message, r.slot) < first.get(r.key, (-1, -1))]
        )
        freed = {key for key, n in early.items() if n >= sum(held.waits[key] for held in self._waiting_under(key))}
        taken = ({call.key for call in calls} - freed) | {key for chunk in served for key in _waiting(chunk)}
        clash = {held.order for key in taken for held in self._waiting_under(key)}
        yield from (self.held.pop(order).segment() for order in sorted(clash))
        took = self._answer(served)
        # nothing pauses them any more (answered or not, they are over), but where the history ends with
        # a message making no call: paused as the code runs on, the server goes on with the turn
        if not (calls or (ends and not any(chunk.calls for chunk in served))):
            yield from self.over()
            return
        done = sorted(held.order for held in took if not any(held.waits.values()))
        yield from (self.held.pop(order).segment() for order in done)
        # (a unit answering one, making calls, is a run the wait went into too: split, its first message ends it)
        self.answered, self.pausing, self.through = False, tuple(calls), bool(calls and (self.held or took))

    def carry(self, turn: Segment | None, last: int) -> Segment | None:
        """The turn of the unit met last (ending at message ``last``), ``carries`` when calls held wait
        on past its calls, or it answered one and makes calls (the wait went into its run); any other
        turn as it is."""
        if turn is None or not self.through or turn.end != last:
            return turn
        return turn._replace(carries=True)

    def hold(self, chunk: Segment) -> bool:
        """Hold a unit's server blocks (paired by :func:`in_order`) that made client calls, when a
        call of them waits."""
        if not self.anthropic:
            return False
        held = _Held(chunk, self._order)
        if not held.waits:
            return False
        self._order += 1
        self.held[held.order] = held
        for key in held.waits:
            self.under.setdefault(key, deque()).append(held)
        self.pausing = chunk.beside  # its unit's: those of any held before too
        return True

    def over(self, open_end: bool = False) -> Iterator[Segment]:
        """The blocks held, each a turn, and none held any more: ``open_end`` where the history
        ends, the server may still run their waiting calls."""
        held, self.held, self.under, self.answered, self.moved = self.held, {}, {}, False, False
        yield from (chunk.segment(open_end, self.pausing) for chunk in held.values())

    def answer_later(self, before: list[Segment], served: list[Segment]) -> list[Segment]:
        """The results a user's unit sends (``served``) of server calls waiting past the client results,
        right after the model's unit (its server blocks ``before``) that answers that wait making no
        server call (text alone): they go with it, ``misplaced``, as repair moves them (first into it,
        code-result-after-its-calls); the user's unit's server blocks, without them."""
        if not self.answered:
            return served
        sent = [result for chunk in served for result in chunk.results if self._waiting_under(result.key)]
        if sent:
            before.append(Segment([], sent, server=True, misplaced=tuple(sent)))
            gone = {(result.message, result.slot) for result in sent}
            served = [
                chunk._replace(results=[r for r in chunk.results if (r.message, r.slot) not in gone])
                for chunk in served
            ]
        return served

    def _waiting_under(self, key: Key) -> deque[_Held]:
        """The blocks still held with a call of ``key`` waiting, oldest first (those no longer are
        let go of here, as they come to the front)."""
        queue = self.under.get(key)
        if queue is None:
            return deque()
        while queue and (queue[0].order not in self.held or not queue[0].waits.get(key)):
            queue.popleft()
        if not queue:
            del self.under[key]
        return queue if queue else deque()

    def _answer(self, served: list[Segment], misplaced: bool = False) -> list[_Held]:
        """Each server result of ``served`` naming a call held waiting goes to that call's blocks,
        the earliest call first (first come, first served); ``misplaced`` when the user sent it.
        The blocks that took one."""
        took: dict[int, _Held] = {}
        for n, chunk in enumerate(served):
            sent_by_user = {(entry.message, entry.slot) for entry in chunk.misplaced}
            kept: list[Entry] = []
            for result in chunk.results:
                queue = self._waiting_under(result.key)
                if not queue:
                    kept.append(result)
                    continue
                held = queue[0]
                held.waits[result.key] -= 1
                held.results.append(result)
                if misplaced or (result.message, result.slot) in sent_by_user:
                    held.misplaced.append(result)
                took[held.order] = held
            gone = sent_by_user - {(entry.message, entry.slot) for entry in kept}
            misplaced_kept = tuple(e for e in chunk.misplaced if (e.message, e.slot) not in gone)
            served[n] = chunk._replace(results=kept, misplaced=misplaced_kept)
        return list(took.values())


def _waiting(chunk: Segment) -> dict[Key, int]:
    """Per id, how many of a chunk's calls no result answers (the last of the id's calls)."""
    left = _count(chunk.calls)
    for result in chunk.results:
        if left.get(result.key, 0):
            left[result.key] -= 1
    return {key: n for key, n in left.items() if n}
