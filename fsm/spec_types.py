"""The machine specs' typed form: frozen ``attrs`` classes that a spec in ``specs/`` is read into
(by :mod:`fsm.spec`, from its TOML or from the copy built ahead of time), with the questions the
engine, the options and the diagrams ask of them."""

from __future__ import annotations

import functools

import attrs

SELF = "="
"""A transition destination meaning "the state it came from" (a self-loop)."""


@attrs.frozen
class MachineInfo:
    name: str
    initial: str
    reason: str


@attrs.frozen
class Named:
    """A state, trigger, guard or action: a name and the one-line reason it exists."""

    name: str
    reason: str
    terminal: bool = False
    prepare: str | None = None
    kind: str | None = None
    """For a state: the input kind whose calls pass through it (None: shared by every kind)."""


@attrs.frozen
class InputKind:
    """How a call's input arrives and when it is whole: each kind starts in its own state."""

    name: str
    initial: str
    reason: str
    scanned: bool = True
    """False: its states run no trigger ``prepare`` step (those feed the completeness scanner)."""


@attrs.frozen
class TransitionSpec:
    source: tuple[str, ...]
    trigger: str
    dest: str
    reason: str
    guards: tuple[str, ...] = ()
    action: str | None = None

    def destination(self, source: str) -> str:
        return source if self.dest == SELF else self.dest

    def label(self, source: str) -> str:
        """A stable id for one (source, trigger, guard) edge, used by coverage and diagrams."""
        guard = f"[{' & '.join(self.guards)}]" if self.guards else ""
        return f"{source}--{self.trigger}{guard}->{self.destination(source)}"


@attrs.frozen
class MachineSpec:
    machine: MachineInfo
    states: tuple[Named, ...]
    transitions: tuple[TransitionSpec, ...]
    triggers: tuple[Named, ...] = ()
    guards: tuple[Named, ...] = ()
    actions: tuple[Named, ...] = ()
    classes: dict[str, str] = attrs.field(factory=dict)
    kinds: tuple[InputKind, ...] = ()

    @property
    def name(self) -> str:
        return self.machine.name

    def initials(self) -> dict[str, str]:
        """The initial state of each input kind (a spec without kinds has one, the machine's)."""
        return {k.name: k.initial for k in self.kinds} or {"": self.machine.initial}

    def prepared(self, state: str) -> bool:
        """Do triggers fired from ``state`` run their prepare step?"""
        kind = next((s.kind for s in self.states if s.name == state), None)
        return all(k.scanned for k in self.kinds if k.name == kind)

    def state_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.states)

    def trigger_names(self) -> tuple[str, ...]:
        if self.classes:  # the scanner's triggers are its character classes
            return (*self.classes, "other", "any")
        return tuple(t.name for t in self.triggers)

    def edges(self) -> list[tuple[str, TransitionSpec]]:
        """Every (source state, transition) pair, in declaration order."""
        return [(src, t) for t in self.transitions for src in t.source]


@attrs.frozen
class Rule:
    name: str
    order: int
    reason: str


@attrs.frozen
class Policy:
    name: str
    rule: str
    default: str
    choices: tuple[str, ...]
    reason: str


SEVERITIES = ("info", "warning", "violation")
"""A diagnostic's severity, mildest first (fsm.results.Severity holds the same values)."""


@attrs.frozen
class DiagnosticSpec:
    code: str
    rule: str
    severity: str
    """One of :data:`SEVERITIES`."""
    reason: str

    @property
    def violation(self) -> bool:
        """The stream broke its protocol: strict mode raises on it."""
        return self.severity == "violation"


@attrs.frozen
class FlowStep:
    """One step of the registry's decision for an event: a question (``ask``, ``yes``, ``no``) or an
    action (``does``, then ``next``, or nothing at the end of the flow)."""

    step: str
    rules: tuple[str, ...] = ()
    ask: str | None = None
    does: str | None = None
    yes: str | None = None
    no: str | None = None
    next: str | None = None
    policy: str | None = None
    diagnostics: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return self.ask or self.does or ""

    def targets(self) -> list[tuple[str, str]]:
        """(label, step) for each way on from here: ("yes", ...), ("no", ...) or ("", next)."""
        found = [("yes", self.yes), ("no", self.no), ("", self.next)]
        return [(label, target) for label, target in found if target is not None]


@attrs.frozen
class IdentitySpec:
    rules: tuple[Rule, ...]
    policies: tuple[Policy, ...]
    diagnostics: tuple[DiagnosticSpec, ...]
    flow: tuple[FlowStep, ...] = ()

    @functools.cached_property
    def diagnostic_by_code(self) -> dict[str, DiagnosticSpec]:
        return {d.code: d for d in self.diagnostics}

    @functools.cached_property
    def rule_names(self) -> frozenset[str]:
        return frozenset(r.name for r in self.rules)
