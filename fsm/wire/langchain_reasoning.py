"""Responses API reasoning items and function call item ids through LangChain's
``ChatOpenAI(use_responses_api=True)``: what a stateless (``store=false``) next turn must send back,
read from the chunks as the Responses decoder reads it from the bytes.

langchain-openai yields a reasoning item in pieces, each under LangChain's own item count (equal to
the wire's ``output_index`` where every message holds one part and no item LangChain drops came
before): the item's start with its ``rs_`` id, each summary part's start and text deltas, and, at the
item's end, its ``encrypted_content`` (only where the item has some: no piece marks an end without
it). How each output version holds a piece:

* ``responses/v1`` (the default): a ``reasoning`` block with the count as ``index``, the summary
  parts under ``summary`` (each with its summary ``index``), ``id`` and ``encrypted_content``;
* ``v1``: a ``reasoning`` block per summary part, its text in ``reasoning``, its ``index``
  ``lc_rs_`` and the hex of ``"<count>_<summary index>"``, the encrypted content in ``extras``;
* ``v0``: ``additional_kwargs["reasoning"]``, with no count; LangChain keeps the id of the turn's
  first reasoning item only (one item a message, as in its 0.3 format): a later one is read without
  its id, so it is not sent back (:mod:`fsm.messages` needs the id).

The Responses decoder reads a reasoning item whole at its ``output_item.done``. Here the item is
given once it has ended: its encrypted content came, something at a later count came (a call, a
text, another item), or the turn finished. A stream cut before then gives none, as the bytes give
none for an item cut before its end. Its raw ``reasoning_text`` (gpt-oss, LM Studio) langchain-openai
drops: lost.

A function call's item id (``fc_...``), which the next turn sends back beside its reasoning, is on
the call's start: a ``function_call`` block's ``id`` beside its ``call_id`` (``responses/v1``), the
``tool_call_chunk`` block's ``extras.item_id`` (``v1``), or the ``__openai_function_call_ids__`` map
from call id to item id in ``additional_kwargs`` (``v0``). It is given to the call as the
Responses decoder gives it, on a sighting of the call before the call's own chunk entry.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from fsm.events import CallRef, CallSeen, HeldPiece, ReasoningDelta

FUNCTION_CALL_IDS = "__openai_function_call_ids__"
"""The ``additional_kwargs`` key of v0's map from a function call's ``call_id`` to its item id."""

_V1_PLACE = re.compile(r"lc_rs_((?:[0-9a-f]{2})+)")


class _Item:
    """A reasoning item read so far: its id, summary parts by summary index, encrypted content."""

    __slots__ = ("at", "encrypted", "ended", "given_once", "item_id", "parts")

    def __init__(self, at: int) -> None:
        self.at = at
        self.item_id: str | None = None
        self.parts: dict[int, list[str]] = {}
        self.encrypted: str | None = None
        self.ended = False
        self.given_once = False

    def given(self) -> ReasoningDelta:
        summary = tuple("".join(self.parts[n]) for n in sorted(self.parts))
        return ReasoningDelta(
            self.at, output_index=self.at, item_id=self.item_id, summary=summary, encrypted_content=self.encrypted
        )


class ResponsesReasoning:
    """A stream's reasoning items read so far, by LangChain's count; those read since they were last
    given (``fresh``: the open one, a hand-made piece of one that ended); v0's latest (it has none)."""

    __slots__ = ("fresh", "items", "latest", "pending")

    def __init__(self) -> None:
        self.items: dict[int, _Item] = {}
        self.fresh: dict[int, _Item] = {}
        self.latest: _Item | None = None
        # An item's summary text read since it was last counted, by its count: held here until the
        # item ends, so counted against the content limit as it comes (held_pieces)
        self.pending: dict[int, int] = {}

    def read_v0(self, said: Any, top: int) -> int | None:
        """v0's ``additional_kwargs["reasoning"]``: its item (a new one, placed after the highest count
        ``top`` seen, where the piece is an item's start), or None where it is no reasoning piece."""
        if not isinstance(said, Mapping):
            return None
        summary, latest, named = said.get("summary"), self.latest, said.get("id")
        starts = (
            latest is None
            or (isinstance(summary, list) and not summary and "encrypted_content" not in said)
            or (isinstance(named, str) and latest.item_id not in (None, named))
        )
        item = self._item(top + 1) if starts or latest is None else latest
        self._take(item, said)
        return item.at

    def read_block(self, block: Mapping[str, Any], top: int) -> int | None:
        """A ``reasoning`` block of ``responses/v1`` or ``v1``: the count of its item, or None where the
        block is none of these (another integration's reasoning, with its text)."""
        extras = block.get("extras")
        encrypted = extras.get("encrypted_content") if isinstance(extras, Mapping) else None
        index = block.get("index")
        if not is_responses_reasoning(block):
            return None
        if isinstance(index, str) and (found := _V1_PLACE.fullmatch(index)) is not None:
            at, part = _v1_place(found.group(1))
        else:
            at, part = (index if type(index) is int and index >= 0 else None), None
        item = self.items.get(at) if at is not None else self.latest
        item = self._item(top + 1 if at is None else at) if item is None else item
        self.latest = item
        self._take(item, block)
        said = block.get("reasoning")
        if isinstance(said, str):  # v1: one summary part's text
            item.parts.setdefault(part if part is not None else len(item.parts), []).append(said)
            self._held(item, said)
        if isinstance(encrypted, str):
            item.encrypted = encrypted
        return item.at

    def ended(self, top: int, finished: bool) -> list[ReasoningDelta]:
        """The items that have ended and hold what was not given yet: each whole, as the Responses
        decoder gives an item at its end."""
        given: list[ReasoningDelta] = []
        for item in list(self.fresh.values()):  # the open one at most, and any late piece's
            if item.given_once and not finished:
                # a hand-made piece of an item given already: given again whole once the turn ends,
                # not at every such piece (each would rebuild every summary part: quadratic)
                continue
            item.ended = item.ended or finished or item.encrypted is not None or item.at < top
            if item.ended:
                item.given_once = True
                given.append(item.given())
                del self.fresh[item.at]
        return given

    def held_pieces(self) -> list[HeldPiece]:
        """What the items hold of the summary text read since the last call, to be counted now."""
        pieces = [HeldPiece(chars, at, reasoning=True) for at, chars in self.pending.items() if chars]
        self.pending.clear()
        return pieces

    def _held(self, item: _Item, text: str) -> None:
        self.pending[item.at] = self.pending.get(item.at, 0) + str.__len__(text)

    def _item(self, at: int) -> _Item:
        item = self.items.get(at)
        if item is None:
            item = self.items[at] = _Item(at)
        self.latest = item
        return item

    def _take(self, item: _Item, piece: Mapping[str, Any]) -> None:
        """What a ``responses/v1`` block or v0 piece says of its item: its id, summary parts, encrypted
        content (a v1 block's text is its caller's to take)."""
        self.fresh[item.at] = item
        if isinstance(piece.get("id"), str) and piece["id"]:
            item.item_id = piece["id"]
        summary = piece.get("summary")
        for n, part in enumerate(summary if isinstance(summary, list) else ()):
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                at = part.get("index")
                item.parts.setdefault(at if type(at) is int and at >= 0 else n, []).append(part["text"])
                self._held(item, part["text"])
        if isinstance(piece.get("encrypted_content"), str):
            item.encrypted = piece["encrypted_content"]


def is_responses_reasoning(block: Mapping[str, Any]) -> bool:
    """Whether a ``reasoning`` block is a piece of a Responses reasoning item (read here, not as text)."""
    index, extras = block.get("index"), block.get("extras")
    return (
        (isinstance(index, str) and _V1_PLACE.fullmatch(index) is not None)
        or "summary" in block
        or "encrypted_content" in block
        or (isinstance(extras, Mapping) and "encrypted_content" in extras)
    )


def _v1_place(hexed: str) -> tuple[int | None, int | None]:
    """v1's ``lc_rs_`` index: LangChain's count and the summary index it hex-encodes (``0_1``)."""
    try:
        at, _, part = bytes.fromhex(hexed).decode("ascii").partition("_")
    except (ValueError, UnicodeDecodeError):
        return None, None
    return count_in(at), count_in(part)


def count_in(digits: str) -> int | None:
    """The count ``digits`` spell in one of LangChain's indices, or None (no digits, or more than
    Python converts: no turn holds that many items or summary parts, so such an index places
    nothing, as none does)."""
    if not digits.isdigit():
        return None
    try:
        return int(digits)
    except ValueError:  # past sys.get_int_max_str_digits
        return None


FUNCTION_CALL_BLOCKS = frozenset({"function_call", "tool_call_chunk", "tool_call"})
"""The blocks that may give a function call's item id: ``responses/v1``'s, and v1's call blocks."""


def function_call_ids(extra: Any) -> dict[str, str]:
    """v0's item id of each function call a chunk starts, by its ``call_id``."""
    mapped = extra.get(FUNCTION_CALL_IDS) if isinstance(extra, Mapping) else None
    if not isinstance(mapped, Mapping):
        return {}
    return {k: v for k, v in mapped.items() if isinstance(k, str) and isinstance(v, str) and v}


def function_call_id(block: Mapping[str, Any], kind: str, ids: dict[str, str]) -> None:
    """The item id a call block gives into ``ids``, by ``call_id``: a ``function_call`` block's
    ``id`` (``responses/v1``), v1's call block's ``extras.item_id``. Most such blocks (an argument
    delta's) give none."""
    if kind == "function_call":
        if "id" not in block:  # an argument delta's block
            return
        call_id, item_id = block.get("call_id"), block.get("id")
    else:
        extras = block.get("extras")
        call_id, item_id = block.get("id"), extras.get("item_id") if isinstance(extras, Mapping) else None
    if isinstance(call_id, str) and isinstance(item_id, str) and item_id:
        ids[call_id] = item_id


def call_items(entries: list[Any], ids: Mapping[str, str]) -> list[tuple[int, CallSeen]]:
    """A sighting of each call among the chunk's ``entries`` whose item id ``ids`` holds, with the
    item the Responses decoder keeps for it, each before the call's own entry (the number of the
    chunk's calls before it): there the call is still open, even where the chunk ends the turn."""
    seen: list[tuple[int, CallSeen]] = []
    for n, entry in enumerate(entries):
        call_id = entry.get("id")
        item_id = ids.get(call_id) if isinstance(call_id, str) else None
        if item_id is None:
            continue
        index, name = entry.get("index"), entry.get("name")
        ref = CallRef(index if type(index) is int else None, call_id, name if isinstance(name, str) else None)
        seen.append((n, CallSeen(ref, item={"type": "function_call", "id": item_id})))
    return seen
