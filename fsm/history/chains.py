"""Gemini responses going on with one before them (policy will-continue-responses).

A Gemini ``functionResponse`` that follows one to the same id saying ``willContinue: true`` goes on
with it: no result of its own, so the reader gives it no entry and notes it in the chain of the
response that began it (``Roles.chains``). Repair edits a chain as the one result it is: dropped,
renamed and moved with that first response, in order, each named in the changes as that one is
(else a chain's first response dropped alone left the rest an orphan, and one renamed alone left
the rest a second result to the old id: audit 103). The chains are read whole before repair pairs
a turn: a chain may go on past the turn holding its first response (the model's text between),
which the turns, read one at a time, have not reached yet.

A chain's response sent in a model content while the chain began in the user's (a stray, policy
chain-response-in-the-model-content) is a ``misplaced-result`` to check, as a result sent so is;
repair moves it to the end of the responses the latest user content before it keeps, when that
content comes after where the response of its chain before it goes; else right after that response
(a chain moved or dropped with its first response takes its strays along, as it takes the rest).
So the repaired history says the model saw it no sooner than it did: put right after the chain's
response before it, it went back past the model's calls made in between (audit 111), while sent in
the user's content after them it is no finding. It was read past before: no finding, and repair
left the ``functionResponse`` in the model's content.

A chain is told by its responses' ids: responses without ids never chain (policy
id-less-responses-unchained). ``willContinue`` applies to NON_BLOCKING functions alone, which the
Live API's ``BidiGenerateContent`` declares, and its calls carry ids the client answers by (Vertex AI
takes no ``willContinue`` at all); an id-less response pairs by name and order, so a second one of a
name answers the next call of that name, and read as going on with the first it would leave that
call unanswered: which it is, nothing on the wire tells. Read as a result of its own, it is
paired or reported (``orphan``, dropped by repair with a change), never swallowed in silence."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from fsm.history.changes import Change
from fsm.history.entries import Entry
from fsm.history.findings import Finding, Format, Kind
from fsm.history.formats import Reader, gemini_payload, read_role, shown

Chains = dict[tuple[int, int], list[Entry]]
"""Where each chain's first response sits (message, part), with the responses going on with it, in order."""

STRAY_WHY = "a functionResponse going on with one before it (willContinue), in a model content"
"""What check and repair say of a stray (policy chain-response-in-the-model-content)."""


def chains(messages: Sequence[Mapping[str, Any]], fmt: Format) -> Chains:
    """The history's chains (only Gemini's responses go on so)."""
    if fmt != "gemini":
        return {}
    reader = Reader(fmt)
    for at, message in enumerate(messages):
        reader.read(message, at)
    return reader.roles.chains


def chained(found: Chains, entries: Iterable[Entry]) -> Iterator[Entry]:
    """Each of ``entries``, then the responses going on with it."""
    for entry in entries:
        yield entry
        yield from found.get((entry.message, entry.slot), ())


def strays(messages: Sequence[Mapping[str, Any]], found: Chains) -> Iterator[tuple[Entry, bool]]:
    """Each response of a chain begun outside a model content, with whether it sits in one (a stray)."""
    for (at, slot), rest in found.items():
        if messages[at].get("role") != "model":  # one begun there moves whole with its first response
            anchor = Entry(at, slot, rest[0].key, rest[0].name)
            yield from ((entry, messages[entry.message].get("role") == "model") for entry in [anchor, *rest])


def stray_findings(
    messages: Sequence[Mapping[str, Any]], found: Chains, told: Mapping[tuple[int, int], set[Kind]]
) -> Iterator[Finding]:
    """Check: each stray, a ``misplaced-result``; but one whose chain is an orphan, or is moved for
    what its first response is (``result-after-text``, ``misplaced-result``), is what that response is,
    as repair drops or moves it with that one (policy chain-response-in-the-model-content). ``told``:
    the kinds found of each response read as a result (a chain's first)."""
    why = f"{STRAY_WHY}: Gemini takes responses from a user content, as its chain began"
    for (at, slot), rest in found.items():
        if messages[at].get("role") == "model":  # one begun there moves whole with its first response
            continue
        said = told.get((at, slot), set()) & {Kind.ORPHAN, Kind.RESULT_AFTER_TEXT, Kind.MISPLACED_RESULT}
        kind = min(said, key=lambda each: each.value) if said else None
        going = (
            f"{STRAY_WHY}: it goes with the response its chain began with (message {at + 1}), a {kind and kind.value}"
        )
        for entry in rest:
            if messages[entry.message].get("role") == "model":
                shown_as = (entry.message + 1, why if kind is None else going, entry.name)
                yield Finding(kind or Kind.MISPLACED_RESULT, shown(entry.key), *shown_as)


class _Plan(Protocol):
    messages: Sequence[Mapping[str, Any]]
    chains: Chains
    drop: set[tuple[int, int]]
    touched: set[int]
    after: dict[tuple[int, int], list[Entry]]
    move_into: dict[int, list[Entry]]
    front_into: dict[int, list[Entry]]
    changes: list[Change]


def home_strays(plan: _Plan) -> None:
    """Repair: each stray at the end of the responses kept by the latest user content before it, when
    that comes after where the response of its chain before it goes, else right after that response
    (once every turn is paired: a chain dropped or moved with its first response took it along)."""
    ends: list[tuple[int, int]] | None = None  # read once, and only for a history holding a stray
    home: tuple[int, int] | None = None  # where the response of the chain before the stray goes
    for entry, stray in strays(plan.messages, plan.chains):
        if not stray or home is None:
            home = (entry.message, entry.slot) if (entry.message, entry.slot) not in plan.drop else None
            continue
        ends = _kept_ends(plan) if ends is None else ends
        before = bisect_left(ends, entry.message, key=lambda end: end[0])  # in message order: no scan a stray
        latest = ends[before - 1] if before else home
        home = latest if latest[0] > home[0] else home  # never before the chain's response before it
        plan.drop.add((entry.message, entry.slot))
        plan.touched |= {entry.message, home[0]}
        plan.after.setdefault(home, []).append(entry)
        why = f"{STRAY_WHY}: moved to the end of the responses of the latest user content before it"
        why += f" that comes no sooner than its chain's response before it (message {home[0] + 1})"
        plan.changes.append(Change("moved-misplaced-result", entry.message + 1, shown(entry.key), why))


def _kept_ends(plan: _Plan) -> list[tuple[int, int]]:
    """The last response each user content keeps (message, part), in message order: where it is, or
    moved within it (before the user's text: a stray keyed after it goes with the content's responses)."""
    ends = []
    for at, message in enumerate(plan.messages):
        parts = message.get("parts") or []  # read as a list of objects already: not checked again
        role = read_role("gemini", message, any(gemini_payload(part, "call") for part in parts))
        within = {e.slot for e in (*plan.move_into.get(at, ()), *plan.front_into.get(at, ())) if e.message == at}
        kept = [
            slot
            for slot, part in enumerate(parts)
            if gemini_payload(part, "result") and ((at, slot) not in plan.drop or slot in within)
        ]
        ends += [(at, kept[-1])] if kept and role in ("user", "function") else []
    return ends
