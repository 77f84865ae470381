"""Load the machine specs in ``specs/`` into typed, validated ``attrs`` objects.

The TOML files are read with the standard library and structured with ``cattrs``; unknown keys are
rejected, and every name a spec refers to (a state, trigger, guard or action) must be declared in
that spec. A malformed spec raises :class:`~fsm.errors.SpecError` naming the file and the problem.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from fsm.errors import SpecError

if TYPE_CHECKING:
    from cattrs import Converter


def _spec_dir() -> Path:
    # An installed wheel carries the specs inside the package (pyproject force-includes them);
    # a source checkout or editable install reads the project's top-level specs/ folder.
    packaged = Path(__file__).resolve().parent / "specs"
    return packaged if packaged.is_dir() else packaged.parent.parent / "specs"


SPEC_DIR = _spec_dir()

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


# cattrs and tomllib are imported only to read a spec from its TOML: the specs built ahead of time
# (fsm/spec_compiled.py, see _built) spare a program's start-up both.
@functools.cache
def _converter() -> Converter:
    from cattrs import Converter

    return Converter(forbid_extra_keys=True)


def _structure(data: dict[str, Any], cls: type[Any], path: Path) -> Any:
    from cattrs.errors import ClassValidationError

    try:
        return _converter().structure(data, cls)
    except ClassValidationError as exc:
        raise SpecError(f"{path.name}: {describe_validation(exc)}") from None


def describe_validation(exc: BaseException) -> str:
    """The leaf problems of a cattrs validation error, each with the note saying where it was."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe_validation(e) for e in exc.exceptions)
    note = "".join(getattr(exc, "__notes__", [])[:1])
    return f"{note}: {exc}" if note else str(exc)


def _read(path: Path) -> dict[str, Any]:
    import tomllib

    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise SpecError(f"spec file not found: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path.name}: not valid TOML: {exc}") from None


def _require_unique(kind: str, names: list[str], path: Path) -> set[str]:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise SpecError(f"{path.name}: {kind} {name!r} is declared twice")
        seen.add(name)
    return seen


def validate_machine(spec: MachineSpec, path: Path) -> None:
    """Check that every name a transition uses is declared, and that the machine is well formed."""
    states = _require_unique("state", [s.name for s in spec.states], path)
    triggers = _require_unique("trigger", list(spec.trigger_names()), path)
    guards = _require_unique("guard", [g.name for g in spec.guards], path)
    actions = _require_unique("action", [a.name for a in spec.actions], path)
    if spec.machine.initial not in states:
        raise SpecError(f"{path.name}: initial state {spec.machine.initial!r} is not declared")
    kinds = _require_unique("input kind", [k.name for k in spec.kinds], path)
    for kind in spec.kinds:
        if kind.initial not in states:
            raise SpecError(f"{path.name}: input kind {kind.name!r} starts in undeclared state {kind.initial!r}")
    if spec.kinds and spec.machine.initial not in {k.initial for k in spec.kinds}:
        raise SpecError(f"{path.name}: initial state {spec.machine.initial!r} is no input kind's initial state")
    kind_of = {s.name: s.kind for s in spec.states}
    for state in spec.states:
        if state.kind is not None and state.kind not in kinds:
            raise SpecError(f"{path.name}: state {state.name!r} has undeclared input kind {state.kind!r}")
    for trig in spec.triggers:
        if trig.prepare is not None and trig.prepare not in actions:
            raise SpecError(f"{path.name}: trigger {trig.name!r} prepares with undeclared action {trig.prepare!r}")
    terminal = {s.name for s in spec.states if s.terminal}
    for t in spec.transitions:
        where = f"{path.name}: transition {t.trigger!r} from {list(t.source)}"
        if not t.source:
            raise SpecError(f"{where}: has no source state")
        for src in t.source:
            if src not in states:
                raise SpecError(f"{where}: source {src!r} is not a declared state")
            if src in terminal and t.destination(src) != src:
                raise SpecError(f"{where}: leaves terminal state {src!r}")
        if t.dest != SELF and t.dest not in states:
            raise SpecError(f"{where}: destination {t.dest!r} is not a declared state")
        for src in t.source:
            crossing = {kind_of[src], kind_of[t.destination(src)]} - {None}
            if len(crossing) > 1:
                raise SpecError(f"{where}: goes from input kind {kind_of[src]!r} to another kind")
        if t.trigger not in triggers:
            raise SpecError(f"{where}: trigger is not declared")
        for g in t.guards:
            if g not in guards:
                raise SpecError(f"{where}: guard {g!r} is not declared")
        if t.action is not None and t.action not in actions:
            raise SpecError(f"{where}: action {t.action!r} is not declared")
        if not t.reason.strip():
            raise SpecError(f"{where}: needs a one-line reason")
    used = {g for t in spec.transitions for g in t.guards}
    used |= {t.action for t in spec.transitions if t.action}
    used |= {t.prepare for t in spec.triggers if t.prepare}
    unused = (guards | actions) - used
    if unused:
        raise SpecError(f"{path.name}: declared but never used: {sorted(unused)}")


def validate_identity(spec: IdentitySpec, path: Path) -> None:
    rules = _require_unique("rule", [r.name for r in spec.rules], path)
    _require_unique("rule order", [str(r.order) for r in spec.rules], path)
    _require_unique("policy", [p.name for p in spec.policies], path)
    _require_unique("diagnostic", [d.code for d in spec.diagnostics], path)
    for p in spec.policies:
        if p.rule not in rules:
            raise SpecError(f"{path.name}: policy {p.name!r} tunes undeclared rule {p.rule!r}")
        if p.default not in p.choices:
            raise SpecError(f"{path.name}: policy {p.name!r} default {p.default!r} is not one of its choices")
    for d in spec.diagnostics:
        if d.rule not in rules:
            raise SpecError(f"{path.name}: diagnostic {d.code!r} cites undeclared rule {d.rule!r}")
        if d.severity not in SEVERITIES:
            raise SpecError(f"{path.name}: diagnostic {d.code!r} severity {d.severity!r} is not one of {SEVERITIES}")
    validate_flow(spec, path)


def validate_flow(spec: IdentitySpec, path: Path) -> None:
    """Every step is a question or an action, names only declared things, and is reachable from the
    first; every rule, policy and diagnostic appears somewhere in the flow."""
    if not spec.flow:
        return
    steps = _require_unique("flow step", [s.step for s in spec.flow], path)
    codes = {d.code for d in spec.diagnostics}
    rules = {r.name for r in spec.rules}
    policies = {p.name for p in spec.policies}
    for s in spec.flow:
        where = f"{path.name}: flow step {s.step!r}"
        if (s.ask is None) == (s.does is None):
            raise SpecError(f"{where}: needs exactly one of ask or does")
        if s.ask is not None and (s.yes is None or s.no is None or s.next is not None):
            raise SpecError(f"{where}: a question needs yes and no, and no next")
        if s.does is not None and (s.yes is not None or s.no is not None):
            raise SpecError(f"{where}: an action goes on with next, not yes or no")
        for _, target in s.targets():
            if target not in steps:
                raise SpecError(f"{where}: goes on to undeclared step {target!r}")
        for name, declared, kind in (
            *((r, rules, "rule") for r in s.rules),
            *((d, codes, "diagnostic") for d in s.diagnostics),
            *(((s.policy, policies, "policy"),) if s.policy else ()),
        ):
            if name not in declared:
                raise SpecError(f"{where}: names undeclared {kind} {name!r}")
    by_name = {s.step: s for s in spec.flow}
    reached, todo = set(), [spec.flow[0].step]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo += [target for _, target in by_name[name].targets()]
    if steps - reached:
        raise SpecError(f"{path.name}: flow steps never reached from {spec.flow[0].step!r}: {sorted(steps - reached)}")
    for kind, declared, used in (
        ("rules", rules, {r for s in spec.flow for r in s.rules}),
        ("policies", policies, {s.policy for s in spec.flow if s.policy}),
        ("diagnostics", codes, {d for s in spec.flow for d in s.diagnostics}),
    ):
        if declared - used:
            raise SpecError(f"{path.name}: {kind} missing from the flow: {sorted(declared - used)}")


def load_machine(path: Path) -> MachineSpec:
    spec: MachineSpec = _structure(_read(path), MachineSpec, path)
    validate_machine(spec, path)
    return spec


def load_identity(path: Path) -> IdentitySpec:
    spec: IdentitySpec = _structure(_read(path), IdentitySpec, path)
    validate_identity(spec, path)
    return spec


_Spec = TypeVar("_Spec")


def _built(name: str, kind: type[_Spec]) -> _Spec | None:
    """Spec ``name`` built ahead of time (no TOML, no cattrs), or None if its file changed since."""
    from fsm.spec_compiled import load  # written by tools/compile_specs.py from specs/*.toml

    built = load(name, SPEC_DIR / f"{name}.toml", sys.modules[__name__])
    return built if isinstance(built, kind) else None


@functools.cache
def slot_spec() -> MachineSpec:
    return _built("slot", MachineSpec) or load_machine(SPEC_DIR / "slot.toml")


@functools.cache
def scanner_spec() -> MachineSpec:
    return _built("scanner", MachineSpec) or load_machine(SPEC_DIR / "scanner.toml")


@functools.cache
def history_spec() -> MachineSpec:
    return _built("history", MachineSpec) or load_machine(SPEC_DIR / "history.toml")


@functools.cache
def identity_spec() -> IdentitySpec:
    return _built("identity", IdentitySpec) or load_identity(SPEC_DIR / "identity.toml")
