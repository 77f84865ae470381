"""Load the machine specs in ``specs/`` into typed, validated ``attrs`` objects.

The TOML files are read with the standard library and structured with ``cattrs``; unknown keys are
rejected, and every name a spec refers to (a state, trigger, guard or action) must be declared in
that spec. A malformed spec raises :class:`~fsm.errors.SpecError` naming the file and the problem.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import TYPE_CHECKING, Any, TypeVar

from fsm.errors import SpecError
from fsm.spec_types import (
    SELF,
    SEVERITIES,
    DiagnosticSpec,
    FlowStep,
    IdentitySpec,
    InputKind,
    MachineInfo,
    MachineSpec,
    Named,
    Policy,
    Rule,
    TransitionSpec,
)

if TYPE_CHECKING:
    from pathlib import Path

    from cattrs import Converter

__all__ = [  # the specs' classes live in fsm.spec_types, and are read from here too
    "SELF",
    "SEVERITIES",
    "DiagnosticSpec",
    "FlowStep",
    "IdentitySpec",
    "InputKind",
    "MachineInfo",
    "MachineSpec",
    "Named",
    "Policy",
    "Rule",
    "TransitionSpec",
]


def _spec_root() -> str:
    # An installed wheel carries the specs inside the package (pyproject force-includes them);
    # a source checkout or editable install reads the project's top-level specs/ folder.
    package = os.path.dirname(os.path.realpath(__file__))
    packaged = os.path.join(package, "specs")
    return packaged if os.path.isdir(packaged) else os.path.join(os.path.dirname(package), "specs")


_SPEC_ROOT = _spec_root()
"""The specs' folder, as text: a start that finds its specs built ahead of time needs no pathlib
(with urllib.parse, which it imports, about a twentieth of a start's import time)."""


def __getattr__(name: str) -> Any:
    if name == "SPEC_DIR":  # the specs' folder as a Path, made when first asked for
        from pathlib import Path

        globals()["SPEC_DIR"] = spec_dir = Path(_SPEC_ROOT)
        return spec_dir
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:
    SPEC_DIR: Path


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

    built = load(name, os.path.join(_SPEC_ROOT, f"{name}.toml"), sys.modules[__name__])
    return built if isinstance(built, kind) else None


def _toml(name: str) -> Path:
    """The spec file ``name`` (read from its TOML only when it changed since it was built)."""
    from pathlib import Path

    return Path(_SPEC_ROOT, f"{name}.toml")


@functools.cache
def slot_spec() -> MachineSpec:
    return _built("slot", MachineSpec) or load_machine(_toml("slot"))


@functools.cache
def scanner_spec() -> MachineSpec:
    return _built("scanner", MachineSpec) or load_machine(_toml("scanner"))


@functools.cache
def history_spec() -> MachineSpec:
    return _built("history", MachineSpec) or load_machine(_toml("history"))


@functools.cache
def identity_spec() -> IdentitySpec:
    return _built("identity", IdentitySpec) or load_identity(_toml("identity"))
