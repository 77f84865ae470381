"""Incremental JSON completeness scanner, compiled from ``specs/scanner.toml``.

Answers one question per fragment: has the top-level value closed yet, and where? Tracking
completeness is linear in the argument bytes: each character is read at most twice over the life of
a slot (see below), never once per fragment.

The spec's transition table is compiled into, for each state, a regular expression matching the
longest run of characters that leaves the state where it is without doing anything: its quiet
characters (string content, digits, whitespace), escape pairs inside a string, and whole strings
inside an object (a trip to another state and straight back). One ``re.match`` skips a run; only
the characters that change something (brackets, and a quote that opens a string the fragment does
not close) go through the table in Python. A string left open at the end of a fragment is read by
the failed trip, then again from the ``string`` state: the "at most twice".

Most fragments are not scanned as they arrive: the slot holds them until one could close the value
or pass the depth limit (``may_wait``, ``defer``) and scans the held text in one go, which costs a
fraction of a scan per fragment; what the held text can do is bounded by counting its brackets.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Final

from fsm.errors import LimitExceeded, SpecError, StateError
from fsm.spec import MachineSpec, scanner_spec

OTHER: Final = "other"
ANY: Final = "any"

_Step = tuple[Callable[["Scanner"], bool] | None, str, Callable[["Scanner"], None] | None]
_Find = Callable[[str, int], "re.Match[str] | None"]

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
        self.step_every: set[str] = set()  # states where every character does something
        self.inert: set[str] = set()  # states where no character does anything
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
            self._classify(state, per_class)
        self.pivotal = self._pivotal()
        self.brackets = self._brackets()
        # JSON's two pushing and two popping characters, apart, when they are all the pivotal ones:
        # looked for and counted one by one, a third of the time a regex or a map over them takes
        # on a fragment (Scanner.may_wait runs for nearly every one, Scanner.defer for most with a bracket).
        self.two_by_two: tuple[str, ...] | None = None
        if self.brackets is not None and len(self.brackets[0]) == 2 == len(self.brackets[1]):
            chars = "".join(self.brackets)
            others = "".join(set(self.char_class) - set(chars))  # an unclassed character is never pivotal
            if all(self.pivotal.fullmatch(ch) for ch in chars) and not self.pivotal.search(others):
                self.two_by_two = tuple(chars)
        self.skip: dict[str, re.Pattern[str]] = {}
        for state in spec.state_names():
            run = self._run(state, excursions=True)
            if run is not None:
                self.skip[state] = re.compile(run)
        # What Scanner.feed looks up once a step, per state not done: how to find the next
        # character that may do something (a skip's match; None where every character does; one
        # matching everything where none does), and the steps keyed by the character itself, so
        # that a step costs one lookup, not a class's and then a table's.
        everything = re.compile(r"[\s\S]*+").match
        self.plan: dict[str, tuple[_Find | None, dict[str, tuple[_Step, ...]], tuple[_Step, ...]]] = {}
        for state, per_class in self.table.items():
            if state not in self.done:
                find = (
                    None if state in self.step_every else self.skip[state].match if state in self.skip else everything
                )
                by_char = {ch: per_class[klass] for ch, klass in self.char_class.items()}
                self.plan[state] = (find, by_char, per_class[OTHER])

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

    def _classify(self, state: str, per_class: dict[str, tuple[_Step, ...]]) -> None:
        quiet = [k for k in per_class if self._is_quiet(state, k, per_class)]
        if len(quiet) == len(per_class):
            self.inert.add(state)
        elif not quiet:
            self.step_every.add(state)

    def _pivotal(self) -> re.Pattern[str]:
        """The characters that can change the nesting depth or close the value: those of a class
        with a transition, from any state, that has a guard or an action or ends in a done state.
        Text without any can move the scanner only between the states that say nothing about
        completeness (into and out of strings and escapes), so its scan can wait."""
        classes = {
            klass
            for state, per_class in self.table.items()
            for klass, steps in per_class.items()
            for check, dest, act in steps
            if check is not None or act is not None or (dest in self.done and state not in self.done)
        }
        if OTHER in classes:
            raise SpecError("scanner.toml: an 'other' character may close the value; nothing could wait")
        return re.compile(f"[{self._chars(sorted(classes))}]")

    def _brackets(self) -> tuple[str, str] | None:
        """(the characters that push, those that pop) when nothing but pushes and pops acts, no
        guard but ``outermost`` on a pop, and the value closes only by such a pop: then the depth
        after any text lies between the depth before it minus its popping characters and plus its
        pushing ones, whatever states the text goes through, so a scan can wait while those bounds
        keep the value open and the depth within its limit (Scanner.defer). None when the spec
        does not say so: then no text with a pivotal character waits."""
        pushing: set[str] = set()
        popping: set[str] = set()
        for state, per_class in self.table.items():
            for klass, steps in per_class.items():
                for check, dest, act in steps:
                    if act is _push or act is _pop:
                        if klass in (OTHER, ANY):
                            return None
                        (pushing if act is _push else popping).update(self.spec.classes[klass])
                    elif act is not None:
                        return None
                    if check is not None and (check is not _outermost or act is not _pop):
                        return None
                    if dest in self.done and state not in self.done and check is not _outermost:
                        return None
        if pushing & popping:
            return None
        return "".join(sorted(pushing)), "".join(sorted(popping))

    def _is_quiet(self, state: str, klass: str, per_class: dict[str, tuple[_Step, ...]]) -> bool:
        steps = per_class[klass]
        return len(steps) == 1 and steps[0] == (None, state, None)

    def _chars(self, classes: list[str]) -> str:
        return re.escape("".join(self.spec.classes[k] for k in classes))

    def _only_step(self, state: str, klass: str) -> str | None:
        """Where ``klass`` takes ``state`` when that is its one transition, with no guard or action."""
        steps = self.table[state][klass]
        if len(steps) == 1 and steps[0][0] is None and steps[0][2] is None:
            return steps[0][1]
        return None

    def _run(self, state: str, *, excursions: bool) -> str | None:
        """A pattern for the longest run of characters that starts and ends in ``state`` with no
        guard or action on the way: its quiet characters; pairs whose first character goes to a
        state that any next character sends straight back (an escape in a string); and, with
        ``excursions``, whole trips to another state and back (a string inside an object). Runs
        are what the compiled scanner skips with one ``re.match``; the transitions they contain
        do nothing, so skipping them changes nothing but the cost."""
        if state in self.done or state in self.step_every or state in self.inert:
            return None
        per_class = self.table[state]
        quiet = [k for k in per_class if self._is_quiet(state, k, per_class)]
        loud = [k for k in per_class if k not in quiet]
        # Every spec class is listed, so OTHER quiet means: anything but the loud characters.
        body = f"[{self._chars(quiet)}]" if OTHER in loud else f"[^{self._chars(loud)}]"
        detours: list[str] = []
        for klass in loud:
            if klass == OTHER:
                continue
            there = self._only_step(state, klass)
            if there is None or there == state:
                continue
            if there in self.step_every and all(self._only_step(there, k) == state for k in self.table[there]):
                detours.append(f"[{self._chars([klass])}][\\s\\S]")
            elif excursions:
                back = [k for k in self.table[there] if k != OTHER and self._only_step(there, k) == state]
                inner = self._run(there, excursions=False)
                if len(back) == 1 and inner is not None and self._leaves_only_by(there, back[0]):
                    detours.append(f"[{self._chars([klass])}]{inner}[{self._chars(back)}]")
        # Possessive (*+): a run never gives characters back, so matching keeps no backtracking
        # state (with plain * the regex engine held memory in proportion to the run's escapes).
        if not detours:
            return f"{body}*+"
        return f"{body}*+(?:(?:{'|'.join(detours)}){body}*+)*+"

    def _leaves_only_by(self, state: str, klass: str) -> bool:
        """Does every transition out of ``state`` other than ``klass`` come straight back (through
        a quiet character or an escape-like pair)? Then a trip into it can only end by ``klass``."""
        per_class = self.table[state]
        for k in per_class:
            if k == klass or self._is_quiet(state, k, per_class):
                continue
            there = self._only_step(state, k)
            if there is None or there not in self.step_every:
                return False
            if not all(self._only_step(there, c) == state for c in self.table[there]):
                return False
        return True


_compiled: CompiledScanner | None = None


def compiled() -> CompiledScanner:
    global _compiled
    if _compiled is None:
        _compiled = CompiledScanner(scanner_spec())
    return _compiled


def closes_flat(text: str) -> bool:
    """Does a fresh scan of ``text`` close its value at the last character, never deeper than one
    level? Read by one regular expression where it can be: ``{`` first and ``}`` last, no other
    bracket, no backslash and quotes in pairs (so that closing brace is outside any string),
    which is what the scanner spec's classes make of it (open, close, quote, backslash; every
    other character passes inside a value or a string). False for any other text, which the
    caller scans: test_closes_flat_reads_as_the_scanner holds it to a scan over edge and fuzzed texts."""
    return _FLAT(text) is not None


_FLAT = re.compile(r'\{[^"{}\[\]\\]*+(?:"[^"{}\[\]\\]*+"[^"{}\[\]\\]*+)*+\}').fullmatch
flat_match: Callable[[str], re.Match[str] | None] = _FLAT
"""closes_flat's match itself (None where it says False), for the hot caller (Slot.store_whole),
to whom a call of closes_flat would cost as much again as the match."""


@functools.cache
def closed_scanner(max_depth: int) -> Scanner:
    """A scanner whose value closed: its one final state, which feeding never changes, so every
    stream with this depth limit shares it."""
    scanner = Scanner(max_depth)
    scanner.feed("{}")
    return scanner


class Scanner:
    """Completeness state of one argument text. Feed it fragments in order."""

    __slots__ = ("_c", "_pops_waiting", "_pushes_waiting", "depth", "max_depth", "state")

    def __init__(self, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        self._c = compiled()
        self.state = self._c.initial
        self.depth = 0
        self.max_depth = max_depth
        # Bracket characters in the text whose scan waits (see defer); the depth is as scanned.
        self._pushes_waiting = 0
        self._pops_waiting = 0

    @property
    def complete(self) -> bool:
        return self.state in self._c.done

    @property
    def between_tokens(self) -> bool:
        """Inside the top-level container and outside any string (state ``value`` of the spec)."""
        return self.state == "value"

    def may_wait(self, text: str) -> bool:
        """Can scanning ``text`` wait? Not once the value is complete. Yes when ``text`` has no
        pivotal character (see CompiledScanner._pivotal): it cannot close the value or change the
        depth, so what it does to the state can be worked out later, together with what follows.
        Yes too when its brackets stay within the bounds ``defer`` keeps (and then they are
        counted as waiting). The caller stores ``text`` after the held text whose scan waits."""
        c = self._c
        if self.state in c.done:
            return False
        if c.two_by_two is not None:
            push, push_too, pop, pop_too = c.two_by_two
            if push not in text and push_too not in text and pop not in text and pop_too not in text:
                return True
            return self.defer(text)
        return c.pivotal.search(text) is None or self.defer(text)

    def defer(self, text: str) -> bool:
        """Can scanning ``text``, which has brackets, wait too? Yes when, counted with the text
        already waiting, its brackets can neither close the value (fewer popping characters than
        the depth) nor pass the depth limit (see CompiledScanner._brackets); they are counted as
        waiting then, and the caller stores ``text`` after the held text whose scan waits.
        Scanning many fragments at once costs a fraction of scanning each."""
        c = self._c
        brackets = c.brackets
        if brackets is None or self.state in c.done or not self.depth:
            return False  # not self.depth: no value open, so any popping character would close it
        if c.two_by_two is not None:
            push, push_too, pop, pop_too = c.two_by_two
            pushes = self._pushes_waiting + text.count(push) + text.count(push_too)
            pops = self._pops_waiting + text.count(pop) + text.count(pop_too)
        else:
            pushing, popping = brackets
            pushes = self._pushes_waiting + sum(map(text.count, pushing))
            pops = self._pops_waiting + sum(map(text.count, popping))
        if pops >= self.depth or self.depth + pushes > self.max_depth:
            return False
        self._pushes_waiting, self._pops_waiting = pushes, pops
        return True

    def feed(self, text: str, start: int = 0) -> int | None:
        """Scan ``text`` from ``start``; return the offset just past the character that closed the
        top-level value, or None if it is still open. Stops there: the caller decides about the rest."""
        c = self._c
        state, depth, pushes, pops = self.state, self.depth, self._pushes_waiting, self._pops_waiting
        self._pushes_waiting = self._pops_waiting = 0  # the text that waited is scanned now
        pos = start
        end = len(text)
        plan = c.plan
        try:
            while (row := plan.get(state)) is not None:  # None: done
                find, by_char, other = row
                if find is None:
                    if pos >= end:
                        break
                    i = pos
                else:
                    i = find(text, pos).end()  # type: ignore[union-attr]  # a run may be empty
                    if i >= end:
                        pos = end
                        break
                for check, dest, action in by_char.get(text[i], other):
                    if check is None or check(self):
                        if action is not None:
                            action(self)
                        state = dest
                        break
                pos = i + 1
        except LimitExceeded:
            # Refused text leaves the scanner as it was, as the slot's limit checks leave the call:
            # else the state after the refusal would depend on how the text was cut into scans.
            self.depth, self._pushes_waiting, self._pops_waiting = depth, pushes, pops
            raise
        self.state = state
        return pos if state in c.done else None


class StartScanner(Scanner):
    """The scanner of a call that has scanned nothing yet, one shared by all such calls (per depth
    limit), so that opening a call makes none: the call takes one of its own with its first text
    (Slot.scan_fragment), and a snapshot makes a new one. It refuses to change, since a change
    would reach every call that shares it."""

    __slots__ = ()

    def defer(self, text: str) -> bool:
        raise StateError("the shared start scanner is never changed: a call scans with a scanner of its own")

    def feed(self, text: str, start: int = 0) -> int | None:
        raise StateError("the shared start scanner is never changed: a call scans with a scanner of its own")


@functools.cache
def start_scanner(max_depth: int) -> StartScanner:
    return StartScanner(max_depth)
