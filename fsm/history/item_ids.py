"""Responses input items sent twice under one item id (policy one-item-one-id).

The Responses API refuses a request whose input holds two items of one ``id`` (HTTP 400 "Duplicate
item found with id ...": continuedev/continue#10723, OpenRouterTeam/ai-sdk-provider#254). An agent
that appends a turn's output twice, or replays a stored turn, sends one. The pairing never sees it:
calls pair by ``call_id``, which a rename makes unique, while the item ids stay as they were.

``check`` reports each later item of an id an earlier item has (``duplicate-item``). ``repair``
settles it before the pairing, by what the API takes of the item's type:

* a reasoning item, an output message or an item reference is the same item again where it equals
  an earlier one of its id that is kept (the first, or one kept as differing): the later copy is
  dropped (``dropped-duplicate-item``); it holds no call or result;
* any other item (a call, a call's output, a built-in or hosted tool's item) loses its ``id``
  (``removed-item-id``): the API takes those items without one (openai-python's input types mark it
  optional) and pairs them by ``call_id``, which the pairing keeps;
* one of those that differs from the earlier item of its id needs the id (the API requires one) and
  only the caller knows which of the two to keep: it stays, and repair says so
  (``kept-duplicate-item``), each time, as ``check`` names it.

A local shell call's output without ``call_id`` names its call by ``id``: that is the id it pairs by,
read (and its repeats settled) by the pairing, not here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from fsm.history.changes import Change
from fsm.history.findings import Finding, Kind
from fsm.history.formats import responses_key_field

NEEDS_ITS_ID = frozenset({"reasoning", "message", "item_reference"})
"""Item types the Responses API takes only with their ``id`` (a message without one is the user's
or an easy input message, which carries none; a reference is its id)."""


def _repeats(messages: Sequence[Mapping[str, Any]]) -> list[tuple[int, str, int]]:
    """Each item whose ``id`` an earlier item has: its position, the id and the first one's position."""
    first: dict[str, int] = {}
    found = []
    for at, item in enumerate(messages):
        item_id = item.get("id")
        if type(item_id) is not str or not item_id or responses_key_field(item) == "id":
            continue  # (a local shell call's output names its call by ``id``: a result the pairing reads)
        if item_id in first:
            found.append((at, item_id, first[item_id]))
        else:
            first[item_id] = at
    return found


def duplicate_items(messages: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """What ``check`` reports of a Responses history's repeated item ids (``duplicate-item``)."""
    return [
        Finding(
            Kind.DUPLICATE_ITEM,
            item_id,
            at + 1,
            f"item id {item_id} was sent in message {earlier + 1} already: the API refuses a second item of one id",
        )
        for at, item_id, earlier in _repeats(messages)
    ]


def settle_items(messages: Sequence[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], list[int], list[Change]]:
    """The messages with each repeated item id settled (see the module's docstring), where each kept
    message stood in the input (to number repair's later changes by), and what was done."""
    repeats = _repeats(messages)
    if not repeats:
        return list(messages), list(range(len(messages))), []
    settled: list[Mapping[str, Any]] = list(messages)
    dropped: set[int] = set()
    changes = []
    kept: dict[str, list[int]] = {}  # an id: the items of it kept so far, each unlike the others
    for at, item_id, earlier in repeats:
        item = messages[at]
        # Any kept copy, not only the first: the pairing may drop the first (its call gone), and
        # a copy of the one left would then be a duplicate a second repair drops.
        same = next((k for k in kept.setdefault(item_id, [earlier]) if messages[k] == item), None)
        kind = item.get("type")
        if not (type(kind) is str and kind in NEEDS_ITS_ID):
            settled[at] = {key: value for key, value in item.items() if key != "id"}
            why = f"item id {item_id} was sent in message {earlier + 1} already; this item goes without one"
            changes.append(Change("removed-item-id", at + 1, item_id, why))
        elif same is not None:
            dropped.add(at)
            why = f"the same item as message {same + 1}, sent again"
            changes.append(Change("dropped-duplicate-item", at + 1, item_id, why))
        else:
            kept[item_id].append(at)
            why = f"item id {item_id} was sent in message {earlier + 1} already, on another item: keep one of the two"
            changes.append(Change("kept-duplicate-item", at + 1, item_id, why))
    left = [at for at in range(len(messages)) if at not in dropped]
    return [settled[at] for at in left], left, changes


def settled_changes(settled: list[Change], changes: list[Change], fixed: Sequence[Mapping[str, Any]]) -> list[Change]:
    """Repair's changes, in message order: those of the items settled first (``settled``), less each
    ``kept-duplicate-item`` whose id the repaired history no longer holds twice for it, and the rest
    (``changes``). The pairing may drop the earlier item of the id (a reasoning item whose call
    went): the later one is then no duplicate, and ``check`` names none."""
    told: Counter[str | None] = Counter(c.id for c in settled if c.kind == "kept-duplicate-item")
    if told:
        left: Counter[str | None] = Counter(key for _, key, _ in _repeats(fixed))  # each id's later items still held
        stale = {key: told[key] - left[key] for key in told}  # the first said of an id are the ones gone stale
        kept = []
        for change in settled:
            if change.kind == "kept-duplicate-item" and stale[change.id] > 0:
                stale[change.id] -= 1
                continue
            kept.append(change)
        settled = kept
    return sorted([*settled, *changes], key=lambda change: change.message)


def renumbered(changes: list[Change], kept: list[int] | None) -> list[Change]:
    """Repair's ``changes`` to the settled messages numbered by where each stood in the input."""
    if kept is None or not kept or len(kept) == kept[-1] + 1:  # nothing dropped: the same numbers
        return changes
    return [attrs.evolve(change, message=kept[change.message - 1] + 1) for change in changes]
