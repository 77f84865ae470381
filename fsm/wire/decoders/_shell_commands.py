"""A Responses ``shell_call``'s commands as its command events stream them, written as the call's
raw text, so a stream cut before the item's ``output_item.done`` reports the call truncated with the
commands that came (read past, they were lost with the cut).

The events (openai ``ResponseShellCallCommandAddedEvent`` / ``...DeltaEvent`` / ``...DoneEvent``)
name the item by ``output_index`` alone and the command by ``command_index``: ``added`` puts a
command at the next index (its ``command``, the text so far), ``delta`` appends to one, ``done``
gives one whole, the last word on it (as the openai SDK's Responses WebSocket accumulator reads
them). The text is the action's JSON as far as it came, ``{"commands": ["ls -la", "make te``: a
prefix, never a whole value, so no cut leaves a call that reads as complete. Each command's text is
appended as it streams; a command that changes where the text cannot grow to say it (an earlier
command again, a ``done`` that differs from its pieces) rewrites the whole text, reported as a
final word that differs from what streamed (``arguments-replaced``), once the command events have
paid for it (policy shell-rewrites-paid: see :class:`ShellCommands`), so the work stays linear in
the stream.

The item's ``output_item.done`` is the last word, as elsewhere on Responses: its action becomes the
call's text. Its commands equal to those that streamed, the rest of its action (limits the events
never carry) replaces the text without a word; different, the replacement is reported."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from fsm.events import CallRef, Event, build_arguments_fragment, build_arguments_snapshot
from fsm.wire.decoders._fields import index, text
from fsm.wire.decoders._wire import dumps

_OPENING = '{"commands": ['


class _Item(Protocol):
    """What the decoder holds of an item (``_responses_items.Item``) that this module reads."""

    ref: CallRef
    ended: bool


class ShellCalls:
    """The shell calls of one stream, each with its commands so far (by the decoder's item)."""

    def __init__(self) -> None:
        self._calls: dict[Any, ShellCommands] = {}

    def announced(self, item: _Item, said: Mapping[str, Any]) -> None:
        """An item announced (``said``, as ``output_item.added`` gave it): a shell call's commands start."""
        if item.ref.type == "shell_call":
            self._calls[item] = ShellCommands.of(said)

    def read(
        self, item: _Item, payload: Mapping[str, Any], kind: str, diagnose: Callable[[str, str], None]
    ) -> list[Event]:
        """A command event for ``item``, the call at its output index: what it adds to the call's
        text. One for an item that holds its whole action already (announced completed, or ended)
        adds nothing (the item's word stands); one for a call of another type is said, not read."""
        if item.ref.type != "shell_call":
            diagnose("part-not-reassembled", f"{kind} for the {item.ref.type} call at output_index {item.ref.index}")
            return []
        commands = self._calls.get(item)
        if commands is None and not item.ended:  # opened by this event (unopened-call)
            commands = self._calls[item] = ShellCommands([])
        if commands is None or commands.whole or item.ended:
            return []
        read = commands.read(payload, kind)
        if isinstance(read, str):
            diagnose("part-not-reassembled", read)
            return []
        said, whole = read
        if whole:
            return [build_arguments_snapshot(item.ref, said, confirms=True)]
        return [build_arguments_fragment(item.ref, said)] if said else []

    def agreed(self, item: _Item, said: Mapping[str, Any]) -> bool:
        """At the item's end (``said``, its last word): whether commands streamed and are the item's
        (its action then replaces their text quietly). The call's commands are forgotten."""
        commands = self._calls.pop(item, None)
        return commands is not None and commands.started and commands.agrees(said)


_EVENT_CREDIT = 32
"""Characters of the call's text each command event pays for rewriting, beside its own command text."""


class ShellCommands:
    """One shell call's commands so far, and how much of their text has been written.

    Each command is held as the pieces that came (joined when it is compared or written whole), so a
    command streamed in many deltas costs the length of its text, not a copy per delta. A rewrite of
    the whole text is paid for by the command events: each pays for the characters it brings and a
    few more (``_EVENT_CREDIT``), and a rewrite costs the text's length. One the events so far cannot
    pay for is put off (said once a call, ``part-not-reassembled``): the text holds the commands as they
    were until later events pay for writing them as they are now (or the item's action replaces
    them). Rewritten at every change, a stream of small events each changing an earlier command made
    work growing with the square of the stream."""

    __slots__ = ("chars", "closed", "credit", "lengths", "pieces", "stale", "started", "told", "whole")

    def __init__(self, commands: list[str], *, whole: bool = False) -> None:
        self.pieces = [[each] for each in commands]
        """Each command's text so far, by its index, as the pieces that came (those the item came with first)."""
        self.lengths = [len(each) for each in commands]
        """Each command's length so far."""
        self.chars = sum(self.lengths)
        """The commands' lengths together."""
        self.closed = True
        """The last command's string is closed (its ``done`` came, or it came with the item)."""
        self.started = False
        """Some text has been written (the opening and the commands the item came with)."""
        self.whole = whole
        """The item came whole (announced ``completed``): its action is the call's text, and the
        command events add nothing to it."""
        self.credit = self._size()
        """Characters of rewriting paid for and not yet spent (the item's own commands pay for
        writing them once)."""
        self.stale = False
        """A rewrite was put off: the text holds the commands as they were before it."""
        self.told = False
        """A rewrite put off was said (once a call: a stream of them would say it at every other event)."""

    @classmethod
    def of(cls, item: Mapping[str, Any]) -> ShellCommands:
        """The commands a ``shell_call`` item is announced with (its action's, when they are text)."""
        action = item.get("action")
        commands = action.get("commands") if isinstance(action, Mapping) else None
        whole = item.get("status") == "completed"
        if isinstance(commands, list) and all(type(each) is str for each in commands):
            return cls(list(commands), whole=whole)
        return cls([], whole=whole)

    @property
    def commands(self) -> list[str]:
        """Each command's whole text so far."""
        return [self._command(at) for at in range(len(self.pieces))]

    def read(self, payload: Mapping[str, Any], kind: str) -> tuple[str, bool] | str:
        """What a command event adds: ``(text, whole)``, the text to append (``whole``: the call's
        whole text, which replaces what it held) or ``""`` for nothing; a str alone when the event
        names a command past the next one, which it cannot be read as (said, not read), or changes
        the text where a rewrite is put off (said once: see the class)."""
        at = index(payload.get("command_index"), "command_index")
        event = kind.rsplit(".", 1)[-1]
        said = text(payload.get("delta" if event == "delta" else "command"), "command") or ""
        count = len(self.pieces)
        if at is None or at < 0 or at > count:
            return f"{kind} for command_index {at}, while {count} commands came: not read"
        self.credit += len(said) + _EVENT_CREDIT
        opening = "" if self.started else self._text(count)
        self.started = True
        if at == count:  # the next command: a delta before its added opens it as well
            piece = ('"' if not self.closed else "") + (", " if count else "") + '"' + _escaped(said)
            self.pieces.append([said])
            self.lengths.append(len(said))
            self.chars += len(said)
            self.closed = event == "done"
            return self._current(opening + piece + ('"' if self.closed else ""), kind, at)
        last = at == count - 1 and not self.closed
        if event == "delta" and last:
            self._extend(at, said)
            return self._current(opening + _escaped(said), kind, at)
        if event == "done" and last and self._equals(at, said):
            self.closed = True
            return self._current(opening + '"', kind, at)
        if event == "delta":
            changed = bool(said)
            self._extend(at, said)
        else:
            changed = not self._equals(at, said)
            if changed:
                self.chars += len(said) - self.lengths[at]
                self.pieces[at], self.lengths[at] = [said], len(said)
        if last or changed:
            self.closed = self.closed or (last and event == "done")
            return self._rewritten(kind, at)
        return self._current(opening, kind, at)  # an added or done saying again what came

    def agrees(self, item: Mapping[str, Any]) -> bool:
        """Whether the item's commands are those that streamed (then its text replaces theirs quietly)."""
        action = item.get("action")
        return isinstance(action, Mapping) and action.get("commands") == self.commands

    def _current(self, piece: str, kind: str, at: int) -> tuple[str, bool] | str:
        """``piece`` to append to the text, unless a rewrite was put off: then the whole text, once
        paid for (an appended piece would follow text that is not the commands' now)."""
        return self._rewritten(kind, at) if self.stale else (piece, False)

    def _rewritten(self, kind: str, at: int) -> tuple[str, bool] | str:
        """The whole text, when the events so far pay for writing it; else nothing, said the first time."""
        size = self._size()
        if size <= self.credit:
            self.credit -= size
            self.stale = False
            return self._text(len(self.pieces)), True
        if self.stale or self.told:
            self.stale = True
            return "", False
        self.stale = self.told = True
        return (
            f"{kind} for command_index {at} changes the commands where the call's text cannot grow to say it: "
            f"rewriting its {size} characters is put off until later command events pay for it, and until "
            "then the text holds the commands as they were"
        )

    def _size(self) -> int:
        """About the length of the whole text (the commands unescaped, and what joins them)."""
        return len(_OPENING) + self.chars + 4 * len(self.lengths)

    def _extend(self, at: int, piece: str) -> None:
        held = self.pieces[at]
        held.append(piece)
        self.lengths[at] += len(piece)
        self.chars += len(piece)
        if len(held) > 64 and 8 * len(held) > self.lengths[at]:  # many small pieces: held joined (paid 8 a piece)
            held[:] = ["".join(held)]

    def _equals(self, at: int, said: str) -> bool:
        """Whether command ``at`` is ``said`` (joined only when the lengths agree: the cost is ``said``'s)."""
        return self.lengths[at] == len(said) and self._command(at) == said

    def _command(self, at: int) -> str:
        held = self.pieces[at]
        if len(held) != 1:
            held[:] = ["".join(held)]
        return held[0]

    def _text(self, count: int) -> str:
        """The whole text of the first ``count`` commands, the last left open unless it is closed."""
        written = ", ".join(dumps(self._command(at)) for at in range(count))
        if count and not (self.closed or count < len(self.pieces)):
            written = written[:-1]
        return _OPENING + written


def _escaped(piece: str) -> str:
    """A piece of a command as it sits inside the JSON string (escaped character by character, so
    pieces escaped apart join to the whole string escaped)."""
    return dumps(piece)[1:-1]
