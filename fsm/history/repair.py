"""Repair a history so a strict provider accepts it, never losing, swapping or inventing a result.

The pairing truth is the order an agent runs calls in: within a turn, the k-th result carrying id
``x`` answers the k-th call with id ``x``. Repair keeps every such pair and touches nothing else:

* the 2nd, 3rd, ... call under one id in a turn becomes ``<id>_d2``, ``<id>_d3`` (in order, skipping any
  id used up to and in its turn; within a format's ``ID_LIMIT``), and its result gets the new id too;
* a Converse ``toolUseId`` Bedrock refuses (over 64 characters, or a character outside
  ``[a-zA-Z0-9_.:-]``) is mapped as the ``"bedrock"`` next turn maps it
  (:func:`fsm.messages.bedrock.converse_id`), in the call and in the result that answers it alike;
* a result that answers no call of its turn (an orphan, or a second result for a call already
  answered) is dropped; a call that got no result at all gets a placeholder result, or with
  ``RepairPolicy(dangling="drop-call")`` is dropped (but for a Gemini call whose part carries a
  ``thoughtSignature``, which must go back on that part: it gets a placeholder);
* Claude's server tool calls (``server_tool_use``, ``mcp_tool_use``) pair with their ``*_tool_result``
  blocks within their own message, a result only with a call before it (:mod:`fsm.history.server_blocks`);
  one without its result is dropped, whatever the policy, since only Anthropic can give that result
  (but in the history's last message, a paused turn, where the server may still run it);
* a Responses call item dropped takes along the ``reasoning`` items right before it (the API pairs
  a reasoning item with the item that followed it and refuses one sent without it);
* an Anthropic result after text in its turn's user messages moves before the text, where the API
  takes a turn's results (:mod:`fsm.history.turns`);
* a message left empty goes, and Anthropic or Converse neighbours of one role that this brings
  together are merged (both want user and assistant to alternate), unless one makes calls and the
  other answers them (no message may do both).

Every edit is a :class:`Change`. The input is never mutated; messages repair leaves alone are returned
as they are (the same objects). One pass over the messages: linear in their number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from fsm.engine.ids import IdAllocator
from fsm.errors import InvalidInput, LocalProtocolError
from fsm.history.changes import Change, RepairPolicy
from fsm.history.entries import Entry, Key, Segment
from fsm.history.findings import Format
from fsm.history.formats import (
    ID_LIMIT,
    gemini_payload,
    items,
    resolve_format,
    responses_key_field,
    shown,
)
from fsm.history.placeholders import placeholder, renamed_block, usable_id
from fsm.history.server_blocks import SERVER_CALLS, converse_holding, converse_payload
from fsm.history.turns import segments

_FIELD = {
    "openai": "tool_calls",
    "ollama": "tool_calls",
    "anthropic": "content",
    "bedrock": "content",
    "gemini": "parts",
    "responses": "",
}
_ALTERNATING = ("anthropic", "bedrock")
"""The formats whose messages must alternate user and assistant: neighbours a drop brings together merge."""


def repair(
    messages: Sequence[Mapping[str, Any]], policy: RepairPolicy | None = None, format: Format | Literal["auto"] = "auto"
) -> tuple[list[dict[str, Any]], list[Change]]:
    """The repaired messages and what changed (see the module's docstring for the rules). A history
    ``check`` accepts comes back unchanged; ``repair`` of a repaired history changes nothing.
    Malformed input raises LocalProtocolError."""
    policy = RepairPolicy() if policy is None else policy
    if not isinstance(policy, RepairPolicy):
        raise InvalidInput(f"policy must be a RepairPolicy, not {type(policy).__name__}")
    if policy.dangling not in ("placeholder", "drop-call"):
        raise LocalProtocolError(f"unknown dangling policy {policy.dangling!r} (placeholder or drop-call)")
    if not isinstance(policy.placeholder, str):  # it becomes a result's text, which every format takes as a str
        raise InvalidInput(f"the placeholder must be a str, not {type(policy.placeholder).__name__}")
    messages, fmt = resolve_format(messages, format)
    plan = _Plan(fmt, policy, messages)
    for segment in segments(messages, fmt):
        plan.pair(segment)
    fixed = plan.rewrite()
    plan.changes.sort(key=lambda c: c.message)
    return fixed, plan.changes


class _Plan:
    """What to change where, decided turn by turn, then written out in one pass."""

    def __init__(self, fmt: Format, policy: RepairPolicy, messages: Sequence[Mapping[str, Any]]):
        self.fmt, self.policy, self.messages = fmt, policy, messages
        # A new id avoids those used up to and in its turn, no later: a longer history renames alike (prompt caches)
        self.ids = IdAllocator(limit=ID_LIMIT.get(fmt))
        self.drop: set[tuple[int, int]] = set()
        self.rename: dict[tuple[int, int], str] = {}
        self.add_into: dict[int, list[dict[str, Any]]] = {}
        self.move_into: dict[int, list[Entry]] = {}  # Anthropic: results after text, moved before it
        self.add_after: dict[int, list[dict[str, Any]]] = {}
        self.touched: set[int] = set()
        self.joined: dict[str, Any] | None = None  # the message repair made by joining, latest
        self.joined_holds: set[Any] = set()  # whether it makes calls, answers them, or both (see _joinable)
        self.changes: list[Change] = []
        self.answered_last: dict[Key, bool] = {}  # did the id's latest turn answer it? (names a drop)
        self.mapped_for: dict[str, tuple[Key, int]] = {}  # Converse: each mapping given, for which id, where
        self.in_turn: set[Key] = set()  # the ids of the turn being paired

    def _change(self, kind: str, entry: Entry, detail: str, key: Key | None = None) -> None:
        self.changes.append(Change(kind, entry.message + 1, shown(entry.key if key is None else key), detail))

    def pair(self, segment: Segment) -> None:
        self.in_turn = set()
        for entry in (*segment.calls, *segment.results, *segment.beside):
            if isinstance(entry.key, str):
                self.ids.take(entry.key)
                self.in_turn.add(entry.key)
        calls_of: dict[Key, int] = {}
        for call in segment.calls:
            calls_of[call.key] = calls_of.get(call.key, 0) + 1
        answer_of: dict[tuple[Key, int], Entry] = {}
        answered: dict[Key, int] = {}
        for result in segment.results:
            k = answered.get(result.key, 0)
            if k < calls_of.get(result.key, 0):
                answered[result.key] = k + 1
                answer_of[(result.key, k)] = result
            else:
                self._drop_result(result, second=result.key in calls_of)
        seen: dict[Key, int] = {}
        placeholders: list[dict[str, Any]] = []
        for call in segment.calls:
            k = seen.get(call.key, 0)
            seen[call.key] = k + 1
            answer = answer_of.get((call.key, k))
            dropped = segment.server or (self.policy.dangling == "drop-call" and not self._signed(call))
            waits = answer is None and segment.open_end  # the server may still run it: it goes back as it came
            if answer is None and not waits and (dropped or self._type(call) == "computer_call"):
                self._edit(call, self.drop)
                if self.fmt == "responses":
                    self._drop_reasoning_before(call)
                why = (
                    ": a server tool's result comes from the provider alone; none can stand in"
                    if segment.server
                    else ""
                    if self.policy.dangling == "drop-call"
                    else ": its only output is a screenshot; none can stand in"
                )
                self._change("dropped-call", call, f"the call had no result{why}")
                continue
            wire_id = self._usable(call.key, call.message)
            if k > 0 and isinstance(call.key, str):  # id-less keys are unique within a turn
                wire_id = self._usable(self.ids.claim(call.key), call.message)
                self._rename(call, answer, wire_id)
                self._change("renamed-call", call, f"call {k + 1} under {call.key!r} in its turn is now {wire_id!r}")
                if answer is not None:
                    self._change("renamed-result", answer, f"the result that answered it now answers {wire_id!r}")
            elif wire_id != call.key:  # Converse refuses the id: both go as the next turn's builder maps it
                self._rename(call, answer, wire_id)
                why = f"Converse refuses the toolUseId {call.key!r}: it is now {wire_id!r}, as the next turn maps it"
                self._change("mapped-call", call, why)
                if answer is not None:
                    self._change("mapped-result", answer, f"the result that answered it now answers {wire_id!r}")
            if answer is None and not waits:
                placeholders.append(self._placeholder(wire_id, call))
                why = "no result answered the call: a placeholder does"
                if self.policy.dangling == "drop-call":
                    why += " (its part carries the thoughtSignature Gemini wants back on that part)"
                # Named by the id it answers: the call's own, or the one a rename just gave it.
                self._change("placeholder-result", call, why, wire_id)
        answers = {(entry.message, entry.slot) for entry in answer_of.values()}
        for result in segment.late:  # a result a call waits for goes first in its turn's user messages
            if (result.message, result.slot) in answers:
                self._edit(result, self.drop)
                self.touched.add(segment.host)
                self.move_into.setdefault(segment.host, []).append(result)
                why = "a result after text in its turn's user messages: moved before the text, as the API takes it"
                self._change("moved-result", result, why)
        for key in calls_of:
            self.answered_last[key] = key in answered
        if placeholders:
            self._place(segment, placeholders)

    def _drop_reasoning_before(self, call: Entry) -> None:
        """The reasoning items right before a Responses call item that goes: the API pairs a reasoning
        item with the item that followed it, and refuses one sent without it (400)."""
        at = call.message - 1
        while at >= 0 and self.messages[at].get("type") == "reasoning":
            item = Entry(at, -1, call.key, None)
            self._edit(item, self.drop)
            self._change("dropped-reasoning", item, "the call item that followed it was dropped")
            at -= 1

    def _usable(self, key: Key, at: int) -> Key:
        """``key`` as the format takes it; mapped (Converse), made unique against the ids in use as a
        rename is, but for the mapping an earlier message gave this very id, which it reuses as the id is."""
        mapped = usable_id(self.fmt, key)
        if mapped == key or not isinstance(mapped, str):
            return mapped
        given = self.mapped_for.get(mapped)
        if not (given is not None and given[0] == key and given[1] != at and mapped not in self.in_turn):
            mapped = self.ids.claim(mapped)
        self.mapped_for[mapped] = (key, at)
        return mapped

    def _rename(self, call: Entry, answer: Entry | None, wire_id: Key) -> None:
        """Give ``call`` and the result that answered it (if any) the id ``wire_id``."""
        assert isinstance(wire_id, str)  # only a wire id is renamed or mapped
        self.ids.take(wire_id)
        self._edit(call, self.rename, wire_id)
        if answer is not None:
            self._edit(answer, self.rename, wire_id)

    def _edit(self, entry: Entry, into: Any, value: str | None = None) -> None:
        self.touched.add(entry.message)
        if value is None:
            into.add((entry.message, entry.slot))
        else:
            into[(entry.message, entry.slot)] = value

    def _drop_result(self, result: Entry, second: bool) -> None:
        self._edit(result, self.drop)
        if second or self.answered_last.get(result.key, False):
            self._change("dropped-duplicate-result", result, "a second result for a call already answered")
        else:
            self._change("dropped-orphan", result, "no call of its turn is waiting for this result")

    def _signed(self, call: Entry) -> bool:
        """A Gemini call whose part carries a thoughtSignature: Gemini wants the signature back on
        that very part (the first call of a step must bring it), so dropping the call would leave
        the step's next call unsigned, a turn Gemini 3 refuses."""
        if self.fmt != "gemini":
            return False
        # The parts were checked as the turn was read; checking them all again per call would be
        # quadratic in the calls of one message.
        part = self.messages[call.message]["parts"][call.slot]
        return part.get("thoughtSignature") is not None or part.get("thought_signature") is not None

    def _type(self, entry: Entry) -> Any:
        return self.messages[entry.message].get("type") if self.fmt == "responses" else None

    def _placeholder(self, wire_id: Key, call: Entry) -> dict[str, Any]:
        return placeholder(self.fmt, self._type(call), wire_id, call.name, self.policy.placeholder)

    def _place(self, segment: Segment, placeholders: list[dict[str, Any]]) -> None:
        """OpenAI: new tool messages after the turn's last one. Anthropic, Converse and Gemini: into
        the turn's results message; without one, into the user message that follows (Anthropic and
        Converse, if it makes no calls), else a new user message right after the calls (after an
        Anthropic run of assistant messages, which may go on past its last call)."""
        call_message = segment.end if segment.end >= 0 else segment.calls[-1].message
        if self.fmt in ("openai", "ollama", "responses"):
            last = max((r.message for r in segment.results), default=segment.calls[-1].message)
            self.add_after.setdefault(last, []).extend(placeholders)
            return
        first = segment.results[0].message if segment.results else call_message + 1
        host = segment.host if segment.host >= 0 else first  # Anthropic: the first of the turn's user messages
        if not segment.results and not (self.fmt in _ALTERNATING and self._can_host(host)):
            self.add_after[call_message] = [{"role": "user", _FIELD[self.fmt]: placeholders}]
            return
        self.touched.add(host)
        self.add_into.setdefault(host, []).extend(placeholders)

    def _can_host(self, at: int) -> bool:
        if at >= len(self.messages) or self.messages[at].get("role") != "user":
            return False
        blocks = items(self.messages[at], self.fmt, at)
        if self.fmt == "bedrock":
            return not any(converse_payload(b) is not None for b in blocks)  # a stray result there is dropped
        return not any(b.get("type") == "tool_use" for b in blocks)

    # -- writing out ----------------------------------------------------------------------------------

    def rewrite(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        gap = False  # a message was removed since the last one written
        for at, message in enumerate(self.messages):
            kept: dict[str, Any] | None = message if isinstance(message, dict) else dict(message)
            if at in self.touched:
                kept = self._edited(message, at)
            if kept is None:
                gap = True
            else:
                self._append(out, kept, at, gap)
                gap = False
            for extra in self.add_after.get(at, ()):
                self._append(out, extra, at, False)
        return out

    def _append(self, out: list[dict[str, Any]], message: dict[str, Any], at: int, gap: bool) -> None:
        role = message.get("role")
        if (
            self.fmt in _ALTERNATING
            and gap
            and out
            and out[-1].get("role") == role
            and self._joinable(out[-1], message)
        ):
            if out[-1] is not self.joined:  # the first join into it: a copy, the input stays as it was
                self.joined = out[-1] = {**out[-1], "content": _blocks(out[-1], self.fmt)}
            # Later joins extend the copy: a long run of joins copies each block once, not once per join.
            self.joined["content"] += _blocks(message, self.fmt)
            self.joined_holds |= self._holds(message)
            detail = f"joined to the {role} message before it, which a removed message had separated"
            self.changes.append(Change("merged-messages", at + 1, None, detail))
        else:
            out.append(message)

    def _joinable(self, before: dict[str, Any], message: dict[str, Any]) -> bool:
        """Can ``message`` join ``before``? Not when one makes calls and the other answers: no message
        may do both (a history whose roles say otherwise, results sent as the assistant, keeps its two
        messages rather than become one that no reader takes). Nor when both make a server call under one id."""
        if before is not self.joined:  # the joined message's holdings are kept as it grows: no rescan, no union
            self.joined_holds = self._holds(before)
        holds, joined, either = self._holds(message), self.joined_holds, ("call", "result")
        return not all(k in joined or k in holds for k in either) and all(k in either for k in joined & holds)

    def _holds(self, message: Mapping[str, Any]) -> set[Any]:
        """Whether a message makes calls (``call``), answers (``result``); its server calls' (``server``, id)."""
        content = message.get("content")
        found: set[Any] = set()
        served: set[Any] | None = set() if message.get("role") == "assistant" else None  # as the history reads them
        for block in content if isinstance(content, list) else ():
            if self.fmt == "bedrock":
                found.add(converse_holding(block, served))
            else:
                kind = block.get("type")
                found.add("call" if kind == "tool_use" else "result" if kind == "tool_result" else "")
                if kind in SERVER_CALLS:
                    found.add(("server", block["id"]))
        found.discard("")
        return found

    def _edited(self, message: Mapping[str, Any], at: int) -> dict[str, Any] | None:
        """The message with its drops, renames and placeholders applied; None when it is removed."""
        if self.fmt == "responses" or (self.fmt in ("openai", "ollama") and message.get("role") == "tool"):
            if (at, -1) in self.drop:
                return None  # the call or result is the message: its drop is already a change
            if self.fmt == "ollama":
                return dict(message)  # keyed by name and place: never renamed
            field = "tool_call_id" if self.fmt == "openai" else responses_key_field(message)
            return {**message, field: self.rename[(at, -1)]}
        field = _FIELD[self.fmt]
        old = items(message, self.fmt, at)
        new: list[Any] = []
        added = self.add_into.get(at, [])
        moved = [self._moved(entry) for entry in self.move_into.get(at, ())]
        if self.fmt == "anthropic":  # after the results it begins with: the API takes a turn's results first
            anchor = next((j for j, item in enumerate(old) if not self._placed_after(item, message)), len(old)) - 1
            added = [*moved, *added]
        else:
            anchor = max((j for j, item in enumerate(old) if self._placed_after(item, message)), default=-1)
        if anchor < 0:
            new += added
        for slot, item in enumerate(old):
            if (at, slot) not in self.drop:
                renamed = self.rename.get((at, slot))
                new.append(item if renamed is None else renamed_block(self.fmt, item, renamed))
            if slot == anchor:
                new += added
        edited = {**message, field: new}
        if self.fmt in ("openai", "ollama"):
            del edited[field]
            if new:
                edited[field] = new
            elif message.get("content") in (None, "", []):
                self._emptied(at)
                return None
            return edited
        if self.fmt in _ALTERNATING and isinstance(message.get("content"), str):
            new += _blocks(message, self.fmt)
        if not new:
            self._emptied(at)
            return None
        edited[field] = new
        return edited

    def _moved(self, entry: Entry) -> Any:
        """A result moved before the text of its turn's user messages, with its rename if it has one."""
        item = self.messages[entry.message]["content"][entry.slot]  # read as a list already: not checked again
        renamed = self.rename.get((entry.message, entry.slot))
        return item if renamed is None else renamed_block(self.fmt, item, renamed)

    def _emptied(self, at: int) -> None:
        self.changes.append(Change("dropped-empty-message", at + 1, None, "repair left nothing in it"))

    def _placed_after(self, item: Mapping[str, Any], message: Mapping[str, Any]) -> bool:
        if self.fmt == "anthropic":
            return item.get("type") == "tool_result"
        if self.fmt == "bedrock":  # not in the model's message: after a server call of its id, it would be that call's
            return message.get("role") == "user" and "toolResult" in item and converse_payload(item) is not None
        return self.fmt == "gemini" and gemini_payload(item, "result") is not None


def _blocks(message: Mapping[str, Any], fmt: Format) -> list[Any]:
    """An Anthropic or Converse message's content as a list of blocks (a string is one text block)."""
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return []
        return [{"text": content}] if fmt == "bedrock" else [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []
