"""Incremental JSON completeness scanner, compiled from ``specs/scanner.toml``.

Answers one question per fragment: has the top-level value closed yet, and where? Each character is
read once over the life of a slot, so tracking completeness is linear in the argument bytes.

The spec's transition table is compiled into, for each state, a regular expression matching only the
characters whose transition does something (changes state, or runs an action). Runs of other
characters (string content, digits, whitespace) are skipped by one ``re.search`` call instead of a
Python-level loop, which is what keeps the per-fragment cost near the cost of appending the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Final

from fsm.errors import LimitExceeded, SpecError
from fsm.spec import MachineSpec, scanner_spec

OTHER: Final = "other"
ANY: Final = "any"

_Step = tuple[Callable[["Scanner"], bool] | None, str, Callable[["Scanner"], None] | None]

DEFAULT_MAX_DEPTH: Final = 256


def _outermost(scanner: Scanner) -> bool:
    return scanner.depth == 1


def _push(scanner: Scanner) -> None:
    scanner.depth += 1
    if scanner.depth > scanner.max_depth:
        raise LimitExceeded(f"arguments nest deeper than {scanner.max_depth} levels", rule="limits")


def _pop(scanner: Scanner) -> None:
    scanner.depth -= 1


GUARDS: Final[dict[str, Callable[[Scanner], bool]]] = {"outermost": _outermost}
ACTIONS: Final[dict[str, Callable[[Scanner], None]]] = {"push": _push, "pop": _pop}


class CompiledScanner:
    """The scanner spec turned into lookup tables and per-state stop patterns."""

    def __init__(self, spec: MachineSpec) -> None:
        self.spec = spec
        self.initial = spec.machine.initial
        self.done = {s.name for s in spec.states if s.terminal}
        self.char_class: dict[str, str] = {}
        for klass, chars in spec.classes.items():
            for ch in chars:
                self.char_class.setdefault(ch, klass)
        classes = (*spec.classes, OTHER)
        self.table: dict[str, dict[str, tuple[_Step, ...]]] = {}
        self.stop: dict[str, re.Pattern[str] | None] = {}
        self.step_every: set[str] = set()
        for state in spec.state_names():
            per_class: dict[str, tuple[_Step, ...]] = {}
            for klass in classes:
                steps = tuple(
                    (
                        self._guards(t.guards),
                        t.destination(state),
                        self._action(t.action) if t.action else None,
                    )
                    for src, t in spec.edges()
                    if src == state and t.trigger in (klass, ANY)
                )
                if not steps and state not in self.done:
                    raise SpecError(f"scanner.toml: state {state!r} has no transition for class {klass!r}")
                per_class[klass] = steps
            self.table[state] = per_class
            self._compile_stop(state, per_class)

    def _guards(self, names: tuple[str, ...]) -> Callable[[Scanner], bool] | None:
        """One callable for a transition's guards, None when it has none (most of them)."""
        try:
            guards = [GUARDS[name] for name in names]
        except KeyError as exc:
            raise SpecError(f"scanner.toml: guard {exc.args[0]!r} has no implementation") from None
        if not guards:
            return None
        if len(guards) == 1:
            return guards[0]
        return lambda scanner: all(g(scanner) for g in guards)

    def _action(self, name: str) -> Callable[[Scanner], None]:
        try:
            return ACTIONS[name]
        except KeyError:
            raise SpecError(f"scanner.toml: action {name!r} has no implementation") from None

    def _compile_stop(self, state: str, per_class: dict[str, tuple[_Step, ...]]) -> None:
        def skippable(klass: str) -> bool:
            steps = per_class[klass]
            return len(steps) == 1 and steps[0] == (None, state, None)

        quiet = [k for k in per_class if skippable(k)]
        loud = [k for k in per_class if not skippable(k)]
        if not loud:
            self.stop[state] = None  # nothing here can change anything: skip to the end
        elif not quiet:
            self.stop[state] = None
            self.step_every.add(state)
        elif OTHER in loud:
            chars = "".join(self.spec.classes[k] for k in quiet)
            self.stop[state] = re.compile(f"[^{re.escape(chars)}]")
        else:
            chars = "".join(self.spec.classes[k] for k in loud)
            self.stop[state] = re.compile(f"[{re.escape(chars)}]")


_compiled: CompiledScanner | None = None


def compiled() -> CompiledScanner:
    global _compiled
    if _compiled is None:
        _compiled = CompiledScanner(scanner_spec())
    return _compiled


def spec_steps(text: str, spec: MachineSpec | None = None) -> Iterator[tuple[int, str, str]]:
    """Step the scanner spec's table directly, one character at a time, without the compiled
    stop patterns: the reference the compiled scanner is tested against, and how coverage counts
    scanner transitions. Yields (offset, transition label, state after) per character consumed,
    and stops at the first character no transition takes (after the value, anything but
    whitespace)."""
    spec = spec or scanner_spec()
    classes = {ch: k for k, chars in reversed(list(spec.classes.items())) for ch in chars}
    state, depth = spec.machine.initial, 0
    for offset, ch in enumerate(text):
        klass = classes.get(ch, OTHER)
        for src, t in spec.edges():
            if src != state or t.trigger not in (klass, ANY):
                continue
            if "outermost" in t.guards and depth != 1:
                continue
            depth += {"push": 1, "pop": -1}.get(t.action or "", 0)
            state = t.destination(src)
            yield offset, t.label(src), state
            break
        else:
            return


class Scanner:
    """Completeness state of one argument text. Feed it fragments in order."""

    __slots__ = ("_c", "depth", "max_depth", "state")

    def __init__(self, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        self._c = compiled()
        self.state = self._c.initial
        self.depth = 0
        self.max_depth = max_depth

    @property
    def complete(self) -> bool:
        return self.state in self._c.done

    @property
    def between_tokens(self) -> bool:
        """Inside the top-level container and outside any string (state ``value`` of the spec)."""
        return self.state == "value"

    def feed(self, text: str, start: int = 0) -> int | None:
        """Scan ``text`` from ``start``; return the offset just past the character that closed the
        top-level value, or None if it is still open. Stops there: the caller decides about the rest."""
        c = self._c
        state = self.state
        pos = start
        end = len(text)
        done, step_every, stops, table, char_class = c.done, c.step_every, c.stop, c.table, c.char_class
        while state not in done:
            if state in step_every:
                if pos >= end:
                    break
                i = pos
            else:
                stop = stops[state]
                if stop is None:
                    break
                m = stop.search(text, pos)
                if m is None:
                    break
                i = m.start()
            for check, dest, action in table[state][char_class.get(text[i], OTHER)]:
                if check is None or check(self):
                    if action is not None:
                        action(self)
                    state = dest
                    break
            pos = i + 1
        self.state = state
        return pos if state in done else None
