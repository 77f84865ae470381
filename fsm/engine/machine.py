"""Runs a machine spec (specs/slot.toml, specs/history.toml) from the table compiled from it.

The spec is compiled into, for each trigger and state, the transitions to try in declared order:
their guards (one callable), destination, action and coverage label. Firing a trigger runs the
trigger's prepare step, takes the first candidate whose guards hold, sets the state and runs the
action: what a ``transitions`` machine built from the same spec does, at a fraction of the cost
(a state change through it cost ~7 us). That machine is kept as the reference executor
(fsm/engine/reference.py): ``reference=True`` (strict mode) runs every trigger through it, checked
against the table, and a test proves over every vector and thousands of fuzzed streams that both
executors take the same transitions, emit the same outputs and count the same rules.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fsm.engine.roles import spec_members
from fsm.engine.slot import Slot
from fsm.errors import SpecError, StateError
from fsm.spec import MachineSpec, slot_spec

if TYPE_CHECKING:
    from fsm.engine.reference import ReferenceMachine

_Candidate = tuple[Callable[..., bool] | None, str, Callable[..., Any] | None, str]
_Prepare = Callable[[Any, str], tuple[str, str]]
_NOTHING: tuple[None, tuple[_Candidate, ...]] = (None, ())


def _all_of(guards: tuple[Callable[..., bool], ...]) -> Callable[..., bool] | None:
    """One callable for a transition's guards (None when it has none), so firing a trigger calls
    at most one function per candidate."""
    if not guards:
        return None
    if len(guards) == 1:
        return guards[0]
    return lambda model, text: all(g(model, text) for g in guards)


class SpecMachine:
    """The machine of ``spec`` over instances of ``model``, whose ``@guard``/``@action`` methods are
    exactly the ones the spec names. A model reports each transition taken to ``model.covered``.
    With ``reference``, every trigger also runs through the ``transitions`` machine."""

    def __init__(self, spec: MachineSpec, model: type, *, reference: bool = False) -> None:
        self.spec = spec
        self.reference = reference
        missing = ({g.name for g in spec.guards} - spec_members(model, "guard")) | (
            {a.name for a in spec.actions} - spec_members(model, "action")
        )
        if missing:
            raise SpecError(f"{spec.name} spec names guards or actions that {model.__name__} lacks: {sorted(missing)}")
        self.initial = spec.machine.initial
        self.initials = spec.initials()
        """The state a call of each input kind starts in."""
        prepare: dict[str, _Prepare] = {t.name: getattr(model, t.prepare) for t in spec.triggers if t.prepare}
        # By trigger, then state: the transitions fire() tries, in declared order.
        self.candidates: dict[str, dict[str, tuple[_Candidate, ...]]] = {t.name: {} for t in spec.triggers}
        for src, t in spec.edges():
            entry = (
                _all_of(tuple(getattr(model, g) for g in t.guards)),
                t.destination(src),
                getattr(model, t.action) if t.action else None,
                t.label(src),
            )
            by_state = self.candidates[t.trigger]
            by_state[src] = (*by_state.get(src, ()), entry)
        # The prepare step rides with the state's candidates, so a state of an unscanned input kind
        # skips it with no test of its own when a trigger fires.
        self.table: dict[
            str, dict[str, tuple[Callable[[Any, str], tuple[str, str]] | None, tuple[_Candidate, ...]]]
        ] = {
            trigger: {
                state: (prepare.get(trigger) if spec.prepared(state) else None, cands)
                for state, cands in by_state.items()
            }
            for trigger, by_state in self.candidates.items()
        }

    def fire(self, slot: Any, trigger: str, text: str = "") -> str:
        """Run ``trigger`` on ``slot`` with ``text``; return any text the prepare step split off
        (the start of another value, for the registry to route)."""
        rest = ""
        state = slot.state
        prepare, candidates = self.table[trigger].get(state, _NOTHING)
        if prepare is not None:
            text, rest = prepare(slot, text)
        for candidate in candidates:
            check = candidate[0]
            if check is None or check(slot, text):
                break
        else:
            raise StateError(f"{slot!r}: the {self.spec.name} machine has no {trigger!r} from {state!r}")
        _, dest, act, label = candidate
        if self.reference:
            self.machine.trigger(slot, trigger, text, dest)
        else:
            # As a transitions machine does it: guards (above), then the state change, then the action.
            slot.state = dest
            if act is not None:
                act(slot, text)
        slot.covered(label)
        return rest

    def staying(self, trigger: str, state: str, action: str) -> str:
        """The label of the transition ``trigger`` takes from ``state`` when its first (guarded) one
        does not hold: as ``otherwise``, and it must stay in ``state``. How such a transition is
        counted when the code that takes it without fire() applies it (Registry.settle,
        Slot.store_waiting), which is only right while the spec says so."""
        label, dest = self.otherwise(trigger, state, action)
        if dest != state:
            raise SpecError(f"{self.spec.name}: {trigger!r} from {state!r} does not stay when unguarded")
        return label

    def otherwise(self, trigger: str, state: str, action: str) -> tuple[str, str]:
        """The label and destination of the transition ``trigger`` takes from ``state`` when its
        first one (see ``first``) does not hold: the state's second and last candidate, which must be
        unguarded and run ``action``. How the code that takes it without fire() (Slot.store_waiting,
        Slot.store_first) counts it, which is only right while the spec says so."""
        candidates = self.table[trigger][state][1]
        check, dest, act, label = candidates[-1]
        if len(candidates) != 2 or check is not None or getattr(act, "__name__", None) != action:
            raise SpecError(
                f"{self.spec.name}: {trigger!r} from {state!r} is not one guarded transition, then an"
                f" unguarded one that runs {action!r}"
            )
        return label, dest

    def first(self, trigger: str, state: str, guard: str, action: str) -> tuple[str, str]:
        """The label and destination of the first transition ``trigger`` tries from ``state``, which
        must be guarded by ``guard`` alone and run ``action``: whenever that guard holds, it is the
        one taken. How the code that takes it without fire() (Slot.store_whole) counts it, which is
        only right while the spec says so."""
        check, dest, act, label = self.table[trigger][state][1][0]
        if getattr(check, "__name__", None) != guard or getattr(act, "__name__", None) != action:
            raise SpecError(
                f"{self.spec.name}: the first {trigger!r} from {state!r} is not guarded by {guard!r} alone"
                f" and running {action!r}"
            )
        return label, dest

    def sole(self, trigger: str, state: str, action: str) -> tuple[str, str]:
        """The label and destination of the one transition ``trigger`` has from ``state``, which must
        be unguarded and run ``action``: the one fire() always takes there. How the code that takes
        it without fire() (Registry._finish) counts it, which is only right while the spec says so."""
        prepare, candidates = self.table[trigger][state]
        if prepare is not None or len(candidates) != 1 or candidates[0][0] is not None:
            raise SpecError(f"{self.spec.name}: {trigger!r} from {state!r} is not one unguarded transition")
        _, dest, act, label = candidates[0]
        if getattr(act, "__name__", None) != action:
            raise SpecError(f"{self.spec.name}: {trigger!r} from {state!r} does not run {action!r}")
        return label, dest

    @functools.cached_property
    def machine(self) -> ReferenceMachine:
        """The reference executor, built from the spec when first asked for."""
        from fsm.engine.reference import ReferenceMachine

        return ReferenceMachine(self.spec)


def slot_machine(*, reference: bool = False) -> SpecMachine:
    """The slot machine; with ``reference``, one that runs every trigger through ``transitions``."""
    return _slot_machine(reference)


@functools.cache
def _slot_machine(reference: bool) -> SpecMachine:
    return SpecMachine(slot_spec(), Slot, reference=reference)
