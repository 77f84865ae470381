"""Writing out what :func:`fsm.history.repair` decided: each message with its drops, renames, placeholders and
moved results applied, empty ones removed (those it empties, and those that came empty: ``empty-message``),
neighbours of one role a removal brings together merged (Anthropic, Converse; but two of a role the format lacks
stay apart, as they came: ``unknown-role-kept-apart``), and Converse and Gemini messages of one role in a row merged
however they came (a Gemini content without a role read as ``roleless-as-user`` reads it); but a Gemini turn's
function responses and the user's other parts go in user contents of their own, a placeholder model content between
them (``results-beside-text``). One pass over the messages."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fsm.history.chains import Chains, chained, chains, models
from fsm.history.changes import Change, RepairPolicy
from fsm.history.empty import DROPPED, NO_LONGER_LAST, blank
from fsm.history.entries import Entry, Roles
from fsm.history.findings import Format
from fsm.history.formats import (
    ALTERNATE,
    CALLER,
    gemini_payload,
    gemini_role,
    holds_tool_call,
    items,
    known_role,
    read_role,
    responses_key_field,
    shown,
)
from fsm.history.placeholders import renamed_block
from fsm.history.responses_apart import put_apart
from fsm.history.server_blocks import SERVER_CALLS, converse_holding, converse_payload, models_block

FIELD = {
    "openai": "tool_calls",
    "ollama": "tool_calls",
    "anthropic": "content",
    "bedrock": "content",
    "gemini": "parts",
    "responses": "",
}
SERVER_WHY = "a server tool's result in a user message: moved into the assistant message, right after its call"
"""Why repair moves a server tool's result a user message holds (Anthropic: only Claude's own message holds one)."""
CALLED_WHY = "a server tool's result in a user message making calls: moved with them into the assistant message"
"""Why repair moves one a user message read as the model's holds (``server-blocks-are-the-models``)."""
FORMAT_NAME = {"bedrock": "Converse", "gemini": "Gemini", "anthropic": "the API"}
ALTERNATING = ("anthropic", "bedrock")
"""The formats whose messages must alternate user and assistant: neighbours a drop brings together merge."""


class Writer:
    """The edits decided (filled in by the repair plan), and writing them out."""

    fmt: Format
    messages: Sequence[Mapping[str, Any]]
    drop: set[tuple[int, int]]
    chains: Chains
    rename: dict[tuple[int, int], str]
    add_into: dict[int, list[dict[str, Any]]]
    move_into: dict[int, list[Entry]]
    """Anthropic: results after text, moved before it."""
    front_into: dict[int, list[Entry]]
    """Results sent in the model's role, moved first into a user message (before any result in it)."""
    add_after: dict[int, list[dict[str, Any]]]
    roles: Roles
    split: set[int]
    """Messages that make calls in another role than the model's: their calls go in a model message."""
    retool: set[int]
    """OpenAI: messages that answer a call in another role than ``tool``, which becomes theirs."""
    touched: set[int]
    emptied: set[int]
    """Messages repair left nothing in, which go."""
    joined: dict[str, Any] | None
    joined_holds: set[Any]
    joined_served: set[Any]  # Converse: the joined message's server calls' ids (a later result there answers one)
    changes: list[Change]
    after: dict[tuple[int, int], list[Entry]]
    """Server tools' results a user message sent, each to go right after the call it answers."""
    to_user: set[int]
    """Gemini contents of role ``function`` written as the ``user`` contents they stand for."""
    later_of: dict[int, int]
    """Anthropic user messages making calls after a call of their run, each with the run's last message,
    after which what is left of it goes (``user-content-after-the-run``, :mod:`fsm.history.after_run`)."""
    paused: list[tuple[Entry, bool]]
    """Server calls left for the server to run (a paused turn), each True once drop-call left it so."""
    trail: list[tuple[int, Entry]]
    """Gemini strays, each with the message of the calls it came after, first in their answer (``chains``)."""
    origins: list[list[tuple[int, int]]]
    recall: dict[tuple[int, int], str]
    """Client calls naming a renamed code's server call their ``caller``: its new id (audit 125)."""
    policy: RepairPolicy
    made_between: dict[int, dict[str, Any]]
    """The placeholder model contents written between a turn's responses and the user's other parts, by id."""
    going_on: set[int]
    """Gemini responses going on with a chain begun before them, by id: they stay where they came."""
    model: set[int]
    """The contents read as the model's that hold a chain's response, by index (:func:`fsm.history.chains.models`)."""
    copies: dict[int, tuple[tuple[int, int], Any]]
    """Each result :meth:`moved` wrote, by id, with where it came from (and itself, so the id stays its own)."""

    def start_writing(self, fmt: Format, messages: Sequence[Mapping[str, Any]]) -> None:
        self.fmt, self.messages, self.chains = fmt, messages, chains(messages, fmt)
        self.going_on = {id(messages[e.message]["parts"][e.slot]) for run in self.chains.values() for e in run}
        self.model = models(messages, self.chains)  # the contents read as the model's holding a chain's response
        self.drop, self.rename, self.touched, self.retool, self.split = set(), {}, set(), set(), set()
        self.emptied, self.recall = set(), {}
        self.add_into, self.move_into, self.front_into, self.add_after = {}, {}, {}, {}
        self.joined = None  # the message repair made by joining, latest
        # The role the last message written is read in (a Gemini content without one: roleless-as-user),
        # kept as it is written: a joined content is not scanned again per join.
        self.tail: Any = None
        self.joined_holds, self.joined_served = set(), set()  # whether it makes calls, answers them (see _joinable)
        self.changes, self.made_between = [], {}
        self.to_user, self.trail = set(), []
        self.after, self.copies = {}, {}
        self.later_of, self.paused, self.origins = {}, [], []  # origins: where each input's blocks start, per output

    def rewrite(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        gap = False  # a message was removed since the last one written
        came_empty = set(self.roles.empty)
        # what is left of user messages, after their run's last message (keyed so before any is left)
        later: dict[int, list[tuple[dict[str, Any], int]]] = {end: [] for end in self.later_of.values()}
        for at, message in enumerate(self.messages):
            kept: dict[str, Any] | None = message if isinstance(message, dict) else dict(message)
            if at in came_empty or ((self.add_after.get(at) or at in later) and blank(self.fmt, message)):
                # empty-message (the final Claude message Anthropic takes empty is one once another follows)
                why = DROPPED if at in came_empty else NO_LONGER_LAST
                self.changes.append(Change("dropped-empty-message", at + 1, None, why))
                kept = None
            elif at in self.touched:
                kept = self._edited(message, at)
            asked = None  # the calls a message of another role made, in a model message of their own
            if kept is not None and at in self.split:
                kept, asked = self._split(kept)
            waits = False  # what is left of it waits for the end of the run of calls it is read in
            if kept is not None and at in self.later_of:
                later.setdefault(self.later_of[at], []).append((kept, at))
                kept, waits = None, True
            if kept is not None and self.fmt == "gemini" and message.get("role") == "function":
                kept = self._function_role(message, kept, at)
            if kept is not None and self.fmt == "gemini" and message.get("role") is None and at in self.touched:
                kept = self._model_role(message, kept, at)
            if kept is None:
                gap = gap or not waits  # moved, not removed: the model's calls before and after it need no join
            else:
                self._put(out, kept, at, gap)
                gap = False
            if asked is not None:  # joins a model message before it when its own message is gone
                self._append(out, asked, at, gap)
                gap = False
            elif kept is not None and at in self.roles.calling:  # a user's calls all dropped: as if removed
                gap = True
            for extra, source in (*later.pop(at, ()), *((added, at) for added in self.add_after.get(at, ()))):
                self._put(out, extra, source, False)
        return out

    def _put(self, out: list[dict[str, Any]], message: dict[str, Any], at: int, gap: bool) -> None:
        """Append a message; a Gemini user content's responses and its other parts go apart
        (``results-beside-text``, :mod:`fsm.history.responses_apart`)."""
        parts = message.get("parts")
        if self.fmt != "gemini" or gemini_role(message) != "user" or not isinstance(parts, list):
            self._append(out, message, at, gap)
        else:
            put_apart(self, out, message, at, gap)

    def _can_host(self, at: int) -> bool:
        """Can message ``at`` of the user's take a turn's placeholders (it makes and answers no call)?"""
        if at >= len(self.messages) or at in self.roles.empty:
            return False  # none, or one that came empty (empty-message), which goes
        if read_role(self.fmt, self.messages[at], False) != "user":
            return False
        if at in self.roles.calling:  # its calls go to a model message after it: what stays is the user's
            return True
        blocks = items(self.messages[at], self.fmt, at)
        if self.fmt == "bedrock":
            return not any(converse_payload(b) is not None for b in blocks)  # a stray result there is dropped
        if self.fmt == "gemini":
            return not any(gemini_payload(b, "call") or gemini_payload(b, "result") for b in blocks)
        return not any(b.get("type") == "tool_use" for b in blocks)

    def _split(self, message: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """A message that makes calls in another role than the model's: what is left of it (None
        when nothing is) and a model message making its calls (Anthropic: with its server blocks,
        ``server-blocks-are-the-models``)."""
        if self.fmt in ("openai", "ollama"):
            made = message.get("tool_calls")
            rest = {key: value for key, value in message.items() if key != "tool_calls"}
            empty = message.get("content") in (None, "", [])
            asked: dict[str, Any] = {"role": "assistant", "content": None if self.fmt == "openai" else ""}
            return (None if empty else rest), ({**asked, "tool_calls": made} if made else None)
        field = FIELD[self.fmt]
        blocks = message.get(field)
        if not isinstance(blocks, list):
            return message, None
        calls = [block for block in blocks if self._is_call(block)]
        others = [block for block in blocks if not self._is_call(block)]
        return ({**message, field: others} if others else None), (
            {"role": CALLER[self.fmt], field: calls} if calls else None
        )

    def with_the_calls(self, answers: Iterable[Entry]) -> None:
        """Server results a user message read as the model's holds go with its calls into the model
        message repair makes of them (``server-blocks-are-the-models``): the answers among them."""
        for result in answers:
            if result.message in self.roles.calling:
                self.split.add(result.message)
                self.changes.append(Change("moved-misplaced-result", result.message + 1, shown(result.key), CALLED_WHY))

    def _function_role(self, message: Mapping[str, Any], kept: dict[str, Any], at: int) -> dict[str, Any]:
        """A Gemini content of role ``function`` (older Gemini and Vertex AI examples send function
        responses so): the API takes ``user`` and ``model`` alone, so one holding responses and no call
        is written as the ``user`` content it stands for (``kept``, as repair left it: its responses may
        have moved, and the user's text left in it is still the user's, which the check read so); any
        other is kept as it is (``kept-unknown-role``)."""
        parts, left = items(message, self.fmt, at), items(kept, self.fmt, at)  # a call drop-call dropped is none
        if any(gemini_payload(p, "call") for p in left) or not any(gemini_payload(p, "result") for p in parts):
            return kept
        self.to_user.add(at)
        why = "a content of role 'function' holding function responses: Gemini takes them from a user content"
        self.changes.append(Change("function-role-to-user", at + 1, None, why))
        return {**kept, "role": "user"}

    def _model_role(self, message: Mapping[str, Any], kept: dict[str, Any], at: int) -> dict[str, Any]:
        """A Gemini content without a role that made function calls was read as the model's
        (``roleless-as-user``): when repair leaves it none (dropped, or moved out), it is written with
        the role ``model``, which it was read in; without a role or calls, Gemini reads it as the user's."""
        if (
            gemini_role(kept) == "model"
            or gemini_role(message) != "model"
            or any(gemini_payload(p, "result") for p in items(kept, self.fmt, at))
        ):
            return kept  # one left holding responses (drop-call) is the user's as it reads: no model sends them
        why = "a content without a role that made function calls, read as the model's, has none left: its role"
        why += " is now 'model' (without one, Gemini reads a content as the user's)"
        self.changes.append(Change("named-model-role", at + 1, None, why))
        return {**kept, "role": "model"}

    def _is_call(self, block: Mapping[str, Any]) -> bool:
        if self.fmt == "anthropic":
            return models_block(block)
        if self.fmt == "bedrock":
            return converse_payload(block) is not None and "toolUse" in block
        return gemini_payload(block, "call") is not None

    def _append(self, out: list[dict[str, Any]], message: dict[str, Any], at: int, gap: bool) -> None:
        role = gemini_role(message) if self.fmt == "gemini" else message.get("role")
        # Converse and Gemini refuse user after user and assistant (model) after assistant, however it came;
        # two messages of a role the format lacks stay apart, as they came (unknown-role-kept-apart)
        repeated = role in ALTERNATE.get(self.fmt, ())
        if (
            ((self.fmt in ALTERNATING and gap and known_role(self.fmt, role)) or repeated)
            and out
            and self.tail == role
            and self._joinable(out[-1], message)
        ):
            field = FIELD[self.fmt]
            if out[-1] is not self.joined:  # the first join into it: a copy, the input stays as it was
                self.joined = out[-1] = {**out[-1], field: _blocks(out[-1], self.fmt)}
            self.origins[-1].append((len(self.joined[field]), at))  # later joins extend the copy: no copy per join
            self.joined[field] += _blocks(message, self.fmt)
            self.joined_holds |= self._holds(message, self.joined_served)
            if role == "user" and self.fmt == "gemini" and self.joined.get("role") is None and holds_tool_call(message):
                self.joined["role"] = "user"  # roleless, a toolCall joined to it would make it read as the model's
            other = ("model" if self.fmt == "gemini" else "assistant") if role == "user" else "user"
            why = f": {FORMAT_NAME[self.fmt]} wants {role} and {other} to alternate" if not gap else ""
            detail = f"joined to the {role} message before it{why or ', which a removed message had separated'}"
            self.changes.append(Change("merged-messages", at + 1, None, detail))
        else:
            out.append(message)
            self.tail = role
            self.origins.append([(0, at)])

    def _joinable(self, before: dict[str, Any], message: dict[str, Any]) -> bool:
        """Can ``message`` join ``before``? Not when one makes calls and the other answers: no message
        may do both (a history whose roles say otherwise, results sent as the assistant, keeps its two
        messages rather than become one that no reader takes). Nor when both make a server call under one id."""
        if before is not self.joined:  # the joined message's holdings are kept as it grows: no rescan, no union
            self.joined_served = set()
            self.joined_holds = self._holds(before, self.joined_served)
        # Read as joined: a server result whose call ``before`` makes is not a result (one not joined is read afresh)
        holds, joined, either = self._holds(message, self.joined_served), self.joined_holds, ("call", "result")
        return not all(k in joined or k in holds for k in either) and all(k in either for k in joined & holds)

    def _holds(self, message: Mapping[str, Any], served: set[Any]) -> set[Any]:
        """Whether a message makes calls (``call``), answers (``result``); its server calls' (``server``, id).
        Converse: ``served`` holds the ids of the server calls before it in its (joined) message, and takes its own."""
        content = message.get(FIELD[self.fmt])
        found: set[Any] = set()
        ids = served if message.get("role") == "assistant" else None  # as the history reads them
        for block in content if isinstance(content, list) else ():
            if self.fmt == "gemini":
                found.add(
                    "call" if gemini_payload(block, "call") else "result" if gemini_payload(block, "result") else ""
                )
            elif self.fmt == "bedrock":
                found.add(converse_holding(block, ids))
            else:
                kind = block.get("type")
                found.add("call" if kind == "tool_use" else "result" if kind == "tool_result" else "")
                if kind in SERVER_CALLS:
                    found.add(("server", block["id"]))
        found.discard("")
        return found

    def _edited(self, message: Mapping[str, Any], at: int) -> dict[str, Any] | None:
        """The message with its drops, renames and placeholders applied; None when it is removed."""
        is_result = message.get("role") == "tool" or at in self.retool or (at, -1) in self.drop
        if self.fmt == "responses" or (self.fmt in ("openai", "ollama") and is_result):
            if (at, -1) in self.drop:
                return None  # the call or result is the message: its drop is already a change
            if self.fmt == "ollama":  # keyed by name and place: never renamed
                return {**message, "role": "tool"} if at in self.retool else dict(message)
            field = "tool_call_id" if self.fmt == "openai" else responses_key_field(message)
            edited = {**message, "role": "tool"} if at in self.retool else {**message}
            renamed = self.rename.get((at, -1))
            if renamed is not None:
                edited[field] = renamed
            return edited
        field = FIELD[self.fmt]
        old = items(message, self.fmt, at)
        new: list[Any] = []
        added = self.add_into.get(at, [])
        moved, front = self.moved(self.move_into.get(at, ())), self.moved(self.front_into.get(at, ()))
        if self.fmt in ("anthropic", "gemini", "bedrock"):  # after the results it begins with: results go first
            anchor = next((j for j, item in enumerate(old) if not self._placed_after(item, message)), len(old)) - 1
            added = [*moved, *added]
        else:
            anchor = max((j for j, item in enumerate(old) if self._placed_after(item, message)), default=-1)
        new += front  # first in the turn, before the results already there: the k-th rule keeps its order
        if anchor < 0:
            new += added
        for slot, item in enumerate(old):
            if (at, slot) not in self.drop:
                new.append(self._written(at, slot, item))
            new += self.moved(self.after.get((at, slot), ()))
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
        if self.fmt in ALTERNATING and isinstance(message.get("content"), str):
            new += _blocks(message, self.fmt)
        if not new:
            self._emptied(at)
            return None
        edited[field] = new
        return edited

    def moved(self, entries: Iterable[Entry]) -> list[Any]:
        """Results moved where the API takes them, with their renames, each followed by the Gemini
        responses going on with it (:mod:`fsm.history.chains`: one result, moved as one, in order)."""
        out = []
        for each in chained(self.chains, entries):
            item = self.messages[each.message][FIELD[self.fmt]][each.slot]  # read as a list already: not checked again
            written = self._written(each.message, each.slot, item)
            if id(written) in self.copies:  # one object sent at two places: a copy each, so that a chain cut
                written, was = {**written}, written  # (chains) takes out only its own (audit 137)
                if id(was) in self.going_on:
                    self.going_on.add(id(written))
            out.append(written)
            self.copies[id(written)] = ((each.message, each.slot), written)  # held: a chain cut takes it out (chains)
        return out

    def _written(self, at: int, slot: int, item: Any) -> Any:
        """An item as written: renamed, and naming its code's new id (a client call whose code was renamed)."""
        renamed, code = self.rename.get((at, slot)), self.recall.get((at, slot))
        was, item = item, item if renamed is None else renamed_block(self.fmt, item, renamed)
        if item is not was and id(was) in self.going_on:  # renamed, it goes on with its chain still (audit 164)
            self.going_on.add(id(item))
        return item if code is None else {**item, "caller": {**item["caller"], "tool_id": code}}

    def _emptied(self, at: int) -> None:
        self.emptied.add(at)
        self.changes.append(Change("dropped-empty-message", at + 1, None, "repair left nothing in it"))

    def _placed_after(self, item: Mapping[str, Any], message: Mapping[str, Any]) -> bool:
        if self.fmt == "anthropic":
            return item.get("type") == "tool_result"
        if self.fmt == "bedrock":  # not in the model's message: after a server call of its id, it would be that call's
            return message.get("role") == "user" and "toolResult" in item and converse_payload(item) is not None
        return self.fmt == "gemini" and gemini_payload(item, "result") is not None


def _blocks(message: Mapping[str, Any], fmt: Format) -> list[Any]:
    """An Anthropic or Converse message's content, a Gemini content's parts, as a list of blocks (a
    string is one text block)."""
    content = message.get(FIELD[fmt])
    if isinstance(content, str):
        if not content:
            return []
        return [{"text": content}] if fmt == "bedrock" else [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []
