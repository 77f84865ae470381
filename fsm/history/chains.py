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
repair moves it right after the response of its chain before it that stays where it is, in order
(a chain moved or dropped with its first response takes its strays along, as it takes the rest).
It was read past: no finding, and repair left the ``functionResponse`` in the model's content.

A chain is told by its responses' ids: responses without ids never chain (policy
id-less-responses-unchained). ``willContinue`` applies to NON_BLOCKING functions alone, which the
Live API's ``BidiGenerateContent`` declares, and its calls carry ids the client answers by (Vertex AI
takes no ``willContinue`` at all); an id-less response pairs by name and order, so a second one of a
name answers the next call of that name, and read as going on with the first it would leave that
call unanswered: which it is, nothing on the wire tells. Read as a result of its own, it is
paired or reported (``orphan``, dropped by repair with a change), never swallowed in silence."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from fsm.history.changes import Change
from fsm.history.entries import Entry
from fsm.history.findings import Format
from fsm.history.formats import Reader, shown

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


class _Plan(Protocol):
    messages: Sequence[Mapping[str, Any]]
    chains: Chains
    drop: set[tuple[int, int]]
    touched: set[int]
    after: dict[tuple[int, int], list[Entry]]
    changes: list[Change]


def home_strays(plan: _Plan) -> None:
    """Repair: each stray right after the response of its chain before it that stays where it is
    (once every turn is paired: a chain dropped or moved with its first response took it along)."""
    anchor: Entry | None = None
    for entry, stray in strays(plan.messages, plan.chains):
        if not stray or anchor is None:
            anchor = entry if (entry.message, entry.slot) not in plan.drop else None
            continue
        plan.drop.add((entry.message, entry.slot))
        plan.touched |= {entry.message, anchor.message}
        plan.after.setdefault((anchor.message, anchor.slot), []).append(entry)
        why = f"{STRAY_WHY}: moved right after the response of its chain before it (message {anchor.message + 1})"
        plan.changes.append(Change("moved-misplaced-result", entry.message + 1, shown(entry.key), why))
