"""Gemini responses going on with one before them (policy will-continue-responses).

A Gemini ``functionResponse`` that follows one to the same id saying ``willContinue: true`` goes on
with it: no result of its own, so the reader gives it no entry and notes it in the chain of the
response that began it (``Roles.chains``). Repair edits a chain as the one result it is: dropped,
renamed and moved with that first response, in order, each named in the changes as that one is
(else a chain's first response dropped alone left the rest an orphan, and one renamed alone left
the rest a second result to the old id: audit 103). The chains are read whole before repair pairs
a turn: a chain may go on past the turn holding its first response (the model's text between),
which the turns, read one at a time, have not reached yet."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from fsm.history.entries import Entry
from fsm.history.findings import Format
from fsm.history.formats import Reader

Chains = dict[tuple[int, int], list[Entry]]
"""Where each chain's first response sits (message, part), with the responses going on with it, in order."""


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
