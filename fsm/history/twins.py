"""Anthropic's client and server calls under one id in one run of the model's messages (policy
``client-and-server-call-one-id``): the API reads such a run as one turn and refuses two calls under
one id in it, whatever their kinds.

The history's calls of each kind are indexed by id once (:class:`CallIndex`), so a turn asks only of its
own ids whether a call of the other kind has them: a run of many turns is walked for those that do, not
once for each of its turns (task 144: a run of 1,000 codes was walked 1,500 times, check and repair alike).
Check's walk of a run steps over the stretches an earlier turn's walk found in it (:class:`Stretches`, task 157).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Container, Mapping, Sequence
from typing import Any

from fsm.history.callers import caller_code
from fsm.history.entries import Key, Segment
from fsm.history.objects import is_object
from fsm.history.server_blocks import SERVER_CALLS

__all__ = ["CallIndex", "CodeCalls", "Stretches", "Twin", "twin_calls"]

_Place = tuple[int, int, str | None]  # a call's message, its slot there, and its name
Twin = tuple[bool, int, str | None, int]
"""A call's twin of the other kind: whether the call comes later, and the twin's message, name and slot (its
place whole: check knows which call it walked by slot, as a call of the same message, id and name may be
another, task 167)."""


class CallIndex:
    """Every call block of an Anthropic history by id, in message order: the client ``tool_use`` blocks
    (``client``) and Claude's server calls (``server``), each where it is and with its name."""

    __slots__ = ("back", "client", "kept", "moved", "on", "server")

    def __init__(self, messages: Sequence[Mapping[str, Any]]) -> None:
        self.client: dict[str, list[_Place]] = {}
        self.server: dict[str, list[_Place]] = {}
        # For each list of places, the place after each found dropped (itself when none is known): a drop
        # stays, so a turn skips those found before in one step, not each again (audit 148: a run of
        # searches no result answers under one id, dropped, was walked once a later turn under it).
        self.kept: dict[tuple[bool, str], list[int]] = {}  # (by kind, server or not, and id)
        self.moved: dict[tuple[int, int], str] = {}  # the calls repair renamed, each to its new id (task 165)
        # Each message's row of assistant messages, which every run holds whole: its first (``back``) and
        # last (``on``) message, so a run is walked a row at a time (itself, when not the assistant's).
        self.back, self.on = list(range(len(messages))), list(range(len(messages)))
        for at, message in enumerate(messages):
            if at and message.get("role") == "assistant" == messages[at - 1].get("role"):
                self.back[at] = self.back[at - 1]
        for at in range(len(messages) - 2, -1, -1):
            if self.back[at + 1] != at + 1:
                self.on[at] = self.on[at + 1]
        for at, message in enumerate(messages):
            content = message.get("content")
            for slot, block in enumerate(content if isinstance(content, list) else ()):
                if not is_object(block) or not isinstance(block.get("id"), str):
                    continue
                kind = block.get("type")
                calls = self.client if kind == "tool_use" else self.server if kind in SERVER_CALLS else None
                if calls is not None:
                    name = block.get("name")
                    calls.setdefault(block["id"], []).append((at, slot, name if isinstance(name, str) else None))

    def rename(self, messages: Sequence[Mapping[str, Any]], at: int, slot: int, key: str) -> None:
        """The call at ``slot`` of message ``at`` goes under ``key`` (repair renamed it): found there from now
        on, and no more under the id it came with (passed over as a drop is: a rename stays too)."""
        block = messages[at]["content"][slot]
        kind = block.get("type")
        calls = self.client if kind == "tool_use" else self.server if kind in SERVER_CALLS else None
        if calls is None or (at, slot) in self.moved or not isinstance(block.get("id"), str):
            return  # (a block the index never held)
        self.moved[(at, slot)] = key
        name = block.get("name")
        insort(calls.setdefault(key, []), (at, slot, name if isinstance(name, str) else None))
        self.kept.pop((calls is self.server, key), None)  # (its skips were made for the list before it)

    def others(self, turn: Segment) -> dict[str, list[_Place]]:
        """The calls of the kind ``turn``'s calls are not, by id."""
        return self.client if turn.server else self.server

    def shared(self, turn: Segment, gone: Container[tuple[int, int]]) -> bool:
        """Has a call of the other kind, anywhere and kept, the id of one of ``turn``'s calls?"""
        others = self.others(turn)
        return any(
            isinstance(call.key, str) and self.first(others, call.key, 0, -1, gone) is not None for call in turn.calls
        )

    def first(
        self, calls: dict[str, list[_Place]], key: str, start: int, end: int, gone: Container[tuple[int, int]]
    ) -> _Place | None:
        """The first of ``calls`` under ``key`` in messages ``start`` to ``end`` that repair keeps (``gone``: those
        it drops, a set that only grows over the index's life: check drops none, and a drop of repair's stays)."""
        places = calls.get(key, [])
        at = self.kept.get((calls is self.server, key))
        if at is None:  # (made once: setdefault would make it each call)
            at = self.kept[(calls is self.server, key)] = list(range(len(places)))
        i = j = bisect_left(places, (start,))  # (no slice: a copy of the rest would be walked each turn)
        moved = self.moved
        while j < len(places) and (at[j] != j or places[j][:2] in gone or moved.get(places[j][:2], key) != key):
            at[j] = max(at[j], j + 1)
            j = at[j]
        while i < j:  # the dropped ones walked now point past them all
            at[i], i = j, at[i]
        return None if j == len(places) or 0 <= end < places[j][0] else places[j]  # (an end below 0: no end)


class CodeCalls:
    """The calls of an Anthropic history naming code as their ``caller`` (client calls, and server calls its
    code ran), by the code's id in message order, read once a repair; and which messages repair has read
    whole since (``unread``: from each message, the next not read, each pointing on once read)."""

    __slots__ = ("by_code", "unread")

    def __init__(self, messages: Sequence[Mapping[str, Any]]) -> None:
        self.by_code: dict[str, list[tuple[int, int]]] = {}
        for at, message in enumerate(messages):
            content = message.get("content")
            for slot, block in enumerate(content if isinstance(content, list) else ()):
                kind = block.get("type") if is_object(block) else None
                if type(kind) is str and (kind == "tool_use" or kind in SERVER_CALLS):
                    code = caller_code(block)
                    if code is not None:
                        self.by_code.setdefault(code, []).append((at, slot))
        self.unread = list(range(len(messages) + 1))

    def read(self, low: int, high: int, read: Callable[[int], object]) -> None:
        """``read`` each message from ``low`` to ``high`` not read before: each once a repair."""
        at = self._next(low)
        while at <= high:
            read(at)
            self.unread[at] = at + 1
            at = self._next(at + 1)

    def _next(self, at: int) -> int:
        unread = self.unread
        while unread[at] != at:
            unread[at] = unread[unread[at]]  # (halving the path: each later ask is shorter)
            at = unread[at]
        return at


class Stretches:
    """Stretches of messages found read in the model's run, sorted and apart (``lows``, ``highs``), for a
    walk whose answers only turn from no to yes as the history is read (check's: a message of the user's is
    read in the run once found making calls, never the other way): a stretch found once stays one, so a later
    walk steps over it at once. Runs joined by empty user messages were walked whole by each of their turns
    (quadratic, task 157). Repair's answers may turn back to no where it moves a result in: it parts the
    stretch there (:meth:`part`, ``ServerRuns.low``)."""

    __slots__ = ("highs", "lows")

    def __init__(self) -> None:
        self.lows: list[int] = []
        self.highs: list[int] = []

    def _holding(self, at: int) -> int:
        """The stretch holding message ``at`` (its place in the lists), else -1."""
        i = bisect_right(self.lows, at) - 1
        return i if i >= 0 and self.highs[i] >= at else -1

    def first_of(self, at: int) -> int | None:
        """The first message of the stretch holding message ``at``, else None."""
        i = self._holding(at)
        return None if i < 0 else self.lows[i]

    def part(self, at: int) -> None:
        """Message ``at`` may no longer be read in the run: the stretch holding it, if any, is parted there."""
        i = self._holding(at)
        if i >= 0:
            parts = [(lo, hi) for lo, hi in ((self.lows[i], at - 1), (at + 1, self.highs[i])) if lo <= hi]
            self.lows[i : i + 1], self.highs[i : i + 1] = [lo for lo, _ in parts], [hi for _, hi in parts]

    def down(self, at: int, row: int) -> int:
        """Where a walk down goes on from message ``at``, read in the run: ``row`` (the first of its row),
        or the first of the stretch holding it when lower."""
        i = self._holding(at)
        return row if i < 0 else min(row, self.lows[i])

    def up(self, at: int, row: int) -> int:
        """Where a walk up goes on from message ``at``, read in the run: ``row`` or its stretch's last."""
        i = self._holding(at)
        return row if i < 0 else max(row, self.highs[i])

    def note(self, low: int, high: int) -> None:
        """Messages ``low`` to ``high`` are read in the run: one stretch with those they touch or overlap."""
        if low > high:
            return
        i, j = bisect_left(self.highs, low - 1), bisect_right(self.lows, high + 1)
        if i < j:
            low, high = min(low, self.lows[i]), max(high, self.highs[j - 1])
        self.lows[i:j], self.highs[i:j] = [low], [high]


def twin_calls(
    messages: Sequence[Mapping[str, Any]],
    turn: Segment,
    index: CallIndex,
    in_run: Callable[[int], bool] | None = None,
    gone: Container[tuple[int, int]] = frozenset(),
    down: Callable[[int], int] | None = None,
    up: Callable[[int], int] | None = None,
) -> tuple[dict[Key, Twin], range]:
    """The ids ``turn``'s calls share with a call of the other kind (a client ``tool_use`` beside Claude's
    server call) in their run of assistant messages, each with whether ``turn``'s first call under it comes
    later than the other's, and the other's message and name. And the run's messages: assistant messages in
    a row, or those ``in_run`` says are read in it (repair), of whose blocks those ``gone`` holds (repair
    drops them) are none (``down``: where the walk down the run goes on from a message read in it, by default
    the first of its row of assistant messages; ``up``, the walk up's, by default the last of the row; check's
    and repair's know the stretches they walked before). A turn none of whose ids a kept call of the other kind
    has anywhere has no twin, and its run is not walked (an empty range)."""
    if not index.shared(turn, gone):
        return {}, range(0)
    others = index.others(turn)
    if in_run is None:
        in_run = lambda at: messages[at].get("role") == "assistant"  # noqa: E731
    start = end = turn.calls[0].message
    while start > 0 and in_run(start - 1):  # (``in_run`` holds of every assistant message)
        start = index.back[start - 1] if down is None else down(start - 1)
    while end + 1 < len(messages) and in_run(end + 1):
        end = index.on[end + 1] if up is None else up(end + 1)
    twins: dict[Key, Twin] = {}
    for call in turn.calls:
        if not isinstance(call.key, str) or call.key in twins or not start <= call.message <= end:
            continue
        place = index.first(others, call.key, start, end, gone)  # its first call of the other kind in the run
        if place is not None:
            twins[call.key] = ((call.message, call.slot) > place[:2], place[0], place[2], place[1])
    return twins, range(start, end + 1)
