"""Gemini chains moved with their first response and cut at a stray whose place comes later (task 136, policy
chain-response-in-the-model-content), and what repair keeps between a stray and the places it may go: the parts
(the user's text, the model's content) that would put it back past them (policies chain-goes-on-where-it-came,
stray-where-it-came), and the model contents that join the calls before them (:func:`fsm.history.chains.home_strays`
places the strays with these)."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from fsm.history.changes import Change
from fsm.history.entries import Entry
from fsm.history.formats import gemini_payload, gemini_role, read_role, shown


class StrayPlan(Protocol):
    """What of the repair plan (:class:`fsm.history.rewrite.Writer`) placing strays reads and edits (no import)."""

    messages: Sequence[Mapping[str, Any]]
    chains: dict[tuple[int, int], list[Entry]]
    model: set[int]
    drop: set[tuple[int, int]]
    touched: set[int]
    after: dict[tuple[int, int], list[Entry]]
    move_into: dict[int, list[Entry]]
    front_into: dict[int, list[Entry]]
    add_into: dict[int, list[dict[str, Any]]]
    add_after: dict[int, list[dict[str, Any]]]
    changes: list[Change]
    trail: list[tuple[int, Entry]]
    origins: list[list[tuple[int, int]]]
    copies: dict[int, tuple[tuple[int, int], Any]]

    def moved(self, entries: Iterable[Entry]) -> list[Any]: ...


class Cut:
    """The chains moved with their first response (carried) that :func:`~fsm.history.chains.home_strays` cuts at a stray
    whose home is later than that response's new place: the stray and the chain's responses after it
    no longer go with it (each said once, where it goes: not ``going on with it``)."""

    def __init__(self, plan: StrayPlan) -> None:
        self.plan = plan
        self.to: dict[tuple[int, int], tuple[int, int]] | None = None  # where each moved result is written
        self.head = (-1, -1)  # the chain read: its first response
        self.index = 0  # the response of it read: 1, its first going on
        self.carried = self.done = False  # moved with its first response; cut
        self.taken, self.said = list[Entry](), list[tuple[int, int]]()  # responses cut; kept parts in user contents
        self.kept: list[tuple[int, int]] | None = None  # every part repair keeps that is no response, in order
        self.runs: dict[int, int] = {}  # each model content read, the first content after it written apart from it
        self.late: list[int] = []  # the user contents a cut puts back, and strays' contents: see chains._Again
        self.back: tuple[tuple[int, int], int] | None = None  # the response whose cut's are in late

    def begin(self, spot: tuple[int, int]) -> tuple[int, int] | None:
        """A chain's first response (at ``spot``): where it is written (None: dropped)."""
        self.head, self.index, self.done, self.carried = spot, 0, False, False
        if spot not in self.plan.drop:
            return spot
        self.to = _destinations(self.plan) if self.to is None else self.to
        self.carried = spot in self.to
        return self.to.get(spot)

    def past(self, entry: Entry, before: tuple[int, int]) -> bool:
        """Does a part repair keeps, not a response (the user's text, the model's content), stand between where the
        chain's first response is written and ``entry``, a response of it in a later user content? Then it stays
        where it came (policy chain-goes-on-where-it-came). Not a part the response before it (``before``) was carried
        past, nor one before it in its own content: ``U[t1 a1+] U[a2.]`` is repaired as ``U[t1 a1+ a2.]`` (task 163)."""
        to = self.to.get(self.head) if self.to is not None else None
        if to is None or entry.message <= max(to[0], self.head[0]):
            return False
        return self.between(max(to, before), (entry.message, 0))

    def between(self, home: tuple[int, int], end: tuple[int, int], users: bool = False) -> bool:
        """Does a part repair keeps, not a response (``users``: in a user content; the model's in a row join), stand
        after ``home`` and before ``end``? Listed once, bisected (a scan was quadratic, audit 147). A stray going with
        a later user content's responses is written before its text: from its first part then (audit 164)."""
        if self.kept is None:  # (no non-response part is dropped or kept again here: only responses are)
            drop, messages = self.plan.drop, self.plan.messages
            self.kept = [
                (at, slot)
                for at, message in enumerate(messages)
                for slot, part in enumerate(message.get("parts") or [])
                if (at, slot) not in drop and gemini_payload(part, "result") is None
            ]
            self.said = [spot for spot in self.kept if gemini_role(messages[spot[0]]) != "model"]
        kept = self.said if users else self.kept
        found = bisect_left(kept, (home[0], home[1] + 1))  # (x, -1): from x's first part; (x, 1 << 62): after x
        return found < len(kept) and kept[found] < end

    def apart_from(self, at: int) -> int:
        """The first message whose content repair writes apart from model content ``at`` (the one holding the calls a
        stray goes first in the answer to): the model's contents after it join it (Gemini takes no two in a row) until
        repair writes a content after one, or keeps a part of another role's. Not always the next: a content that held
        only a dropped orphan leaves none (``M[call a] M[c9+ m]`` goes as ``M[call a] U[a's placeholder] M[m]``: audit
        164). Each content looked at once (the run's end noted for every content in it). Not the contents written for
        strays (added once all are placed): one kept apart inside such a run is past a boundary found here already, or
        its chain's response before it went after those calls, and a content of responses alone parts no text from
        them; made to see them, repair wrote the same in 44,000 histories of audit 164's fuzzer (task 170)."""
        plan, read = self.plan, list[int]()
        while at not in self.runs and not plan.add_after.get(at) and at + 1 < len(plan.messages):
            read.append(at)
            at += 1
            edits = (plan.add_into, plan.front_into, plan.move_into)
            kept = any(at in edit for edit in edits) or any(
                (at, slot) not in plan.drop for slot in range(len(plan.messages[at].get("parts") or ()))
            )
            if kept and gemini_role(plan.messages[at]) != "model":
                break
        else:
            at = self.runs.get(at, at + 1)
        self.runs.update((each, at) for each in read)
        return at

    def take(self, entry: Entry) -> None:
        """A stray placed on its own: if it went with its chain, the chain is cut at it."""
        if self.carried and not self.done:
            self.done = True
            if self.back != (self.head, self.index):  # (placing the stray may have marked its cut's already)
                self.returning()
            rest = self.plan.chains[self.head]
            self.plan.chains[self.head] = rest[: self.index - 1]
            self.taken += rest[self.index - 1 :]

    def returning(self) -> list[int]:
        """Cut at the response read (a stray, or one :meth:`past`), where its chain's responses from it on in the user's
        contents stay (:meth:`keep`): each such content's mark (2 * its message, as
        :func:`~fsm.history.chains._kept_calls` gives) put in ``late``, before a stray is placed: one placed as if they
        still went with the chain could go in the answer to calls they part it from (``M[call a] -[u] U[a8+ u]
        M[a14+] U[a18] M[call c]``: ``a14`` after ``a18``, a ``duplicate-result``, task 173). Once a chain's cut."""
        plan, marks = self.plan, list[int]()
        for entry in plan.chains[self.head][self.index - 1 :]:
            parts = plan.messages[entry.message].get("parts") or []  # (a list of objects, read already)
            calls = any(gemini_payload(part, "call") for part in parts)
            if entry.message not in plan.model and read_role("gemini", plan.messages[entry.message], calls) != "model":
                marks.append(2 * entry.message)
                insort(self.late, marks[-1])
        self.back = (self.head, self.index)
        return marks

    def keep(self, entry: Entry, marks: Any) -> tuple[int, int]:
        """A response in a user content after the cut: it stays where it came (where a stray after it goes after)."""
        spot = (entry.message, entry.slot)
        self.plan.drop.discard(spot)
        if marks is not None and read_role("gemini", self.plan.messages[entry.message], False) in ("user", "function"):
            at = bisect_left(ends := marks[0], entry.message, key=lambda end: end[0])
            if at < len(ends) and ends[at][0] == entry.message:
                ends[at] = max(ends[at], spot)
            else:
                ends.insert(at, spot)
        return spot

    def finish(self) -> None:
        """Take the cut responses out of what was written of their chains at pairing, and their changes."""
        if not self.taken:
            return
        plan, gone = self.plan, {(entry.message, entry.slot) for entry in self.taken}
        copies = {key for key, (spot, _) in plan.copies.items() if spot in gone}
        for items in plan.add_into.values():
            items[:] = [item for item in items if id(item) not in copies]
        for contents in plan.add_after.values():
            for content in contents:
                if isinstance(content.get("parts"), list):
                    content["parts"] = [item for item in content["parts"] if id(item) not in copies]
        said: Counter[tuple[int, str | None]] = Counter((entry.message + 1, shown(entry.key)) for entry in self.taken)
        kept = []
        for change in reversed(plan.changes):  # the cut ones are the last of their chain's
            mark = (change.message, change.id)
            if change.detail.endswith("(going on with it)") and change.kind.startswith("moved") and said[mark]:
                said[mark] -= 1
                continue
            kept.append(change)
        plan.changes[:] = kept[::-1]


def _destinations(plan: StrayPlan) -> dict[tuple[int, int], tuple[int, int]]:
    """Where each result repair moves is written: (the message it goes into, -1), or (the message it
    goes after, a part past any) for a content repair writes after it."""
    to: dict[tuple[int, int], tuple[int, int]] = {}
    for into in (plan.move_into, plan.front_into):
        to.update(((entry.message, entry.slot), (at, -1)) for at, entries in into.items() for entry in entries)
    written = {key: spot for key, (spot, _) in plan.copies.items()}
    for at, items in plan.add_into.items():
        to.update((written[id(item)], (at, -1)) for item in items if id(item) in written)
    for at, contents in plan.add_after.items():
        for content in contents:
            found = parts if isinstance(parts := content.get("parts"), list) else []
            to.update((written[id(item)], (at, 1 << 62)) for item in found if id(item) in written)
    return to
