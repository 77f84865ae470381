"""Builds a machine from its spec (specs/slot.toml, specs/history.toml) and fires its triggers.

One ``transitions.Machine`` per spec serves every model instance: models are not registered with it (registration costs
tens of microseconds per slot and keeps a reference to each), the machine's events are triggered on
the slot directly. A transition whose destination is its own source (a self-loop, such as another
fragment while ``accumulating``) is executed from the compiled table without a full machine trigger:
same guards, same action, no state change, a fraction of the cost. Any transition that changes state
goes through the ``transitions`` machine, so a slot changes state only through it.

The machine is built from lean subclasses of the library's Transition and Event (its documented
``transition_cls``/``event_cls`` hooks). A spec transition is guards, a
state change and one action; the generic classes also walk seven empty callback lists and make
about ten logging calls per trigger, which made a state change cost ~15 us. The lean engine refuses
any callback it would not run, so leaving those walks out changes no behaviour.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

from transitions import Event, Machine, Transition
from transitions.core import EventData, MachineError

from fsm.engine.roles import spec_members
from fsm.engine.slot import Slot
from fsm.errors import SpecError, StateError
from fsm.spec import SELF, MachineSpec, slot_spec

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


class _SpecTransition(Transition):
    """A transition of a spec machine: guards (``conditions``), then the state change, then the
    one action (``after``). Specs declare no prepare or before callbacks and _SpecEngine refuses
    machine-wide ones, so those empty walks are left out; guards and actions are resolved on the
    model by name, as ``transitions`` does."""

    def execute(self, event_data: EventData) -> bool:
        model, args = event_data.model, event_data.args
        for condition in self.conditions:
            if getattr(model, condition.func)(*args) != condition.target:  # type: ignore[arg-type]
                return False
        if self.dest:
            self._change_state(event_data)
        for action in self.after:
            getattr(model, action)(*args)  # type: ignore[arg-type]  # spec actions are names
        return True

    def _change_state(self, event_data: EventData) -> None:
        # Spec states are plain strings, never enums, so the state objects are looked up directly.
        machine = event_data.machine
        source = machine.states[self.source]
        if source.on_exit:
            source.exit(event_data)
        dest = machine.states[cast(str, self.dest)]
        setattr(event_data.model, machine.model_attribute, dest.value)
        event_data.state = dest
        if dest.on_enter:
            dest.enter(event_data)


class _SpecEvent(Event):
    """A trigger of a spec machine: find the model's state, try that state's transitions in
    declared order, take the first whose guards hold. _SpecEngine refuses the machine-wide
    prepare, finalize and exception callbacks, so those walks are left out; a trigger from a state
    that has none of its transitions raises MachineError, as in ``transitions``."""

    def trigger(self, model: Any, *args: Any, **kwargs: Any) -> bool:
        # _SpecEngine refuses a queued machine, so there is nothing for Machine._process to order.
        return self._trigger(EventData(None, self, self.machine, model, args=args, kwargs=kwargs))

    def _trigger(self, event_data: EventData) -> bool:
        machine = event_data.machine
        name = getattr(event_data.model, machine.model_attribute)
        event_data.state = state = machine.states[name]
        candidates = self.transitions.get(name)
        if candidates is None:
            self._is_valid_source(state)  # raises MachineError, or warns if invalid triggers are ignored
            return False
        for transition in candidates:
            event_data.transition = transition
            if transition.execute(event_data):
                event_data.result = True
                break
        return bool(event_data.result)


class _SpecEngine(Machine):
    transition_cls = _SpecTransition
    event_cls = _SpecEvent

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        hooks = (
            "prepare_event",
            "before_state_change",
            "after_state_change",
            "finalize_event",
            "on_exception",
            "on_final",
        )
        if (
            self.has_queue
            or any(getattr(self, hook) for hook in hooks)
            or any(t.prepare or t.before for e in self.events.values() for ts in e.transitions.values() for t in ts)
        ):
            raise SpecError("a spec machine runs guards and one action per transition, no other callbacks, unqueued")


class SpecMachine:
    """The machine of ``spec`` over instances of ``model``, whose ``@guard``/``@action`` methods are
    exactly the ones the spec names. A model reports each transition taken to ``model.covered``."""

    def __init__(self, spec: MachineSpec, model: type) -> None:
        self.spec = spec
        missing = ({g.name for g in spec.guards} - spec_members(model, "guard")) | (
            {a.name for a in spec.actions} - spec_members(model, "action")
        )
        if missing:
            raise SpecError(f"{spec.name} spec names guards or actions that {model.__name__} lacks: {sorted(missing)}")
        self.machine = _SpecEngine(
            model=None,
            states=list(spec.state_names()),
            transitions=[
                {
                    "trigger": t.trigger,
                    "source": list(t.source),
                    "dest": SELF if t.dest == SELF else t.dest,
                    "conditions": list(t.guards),
                    "after": [t.action] if t.action else [],
                }
                for t in spec.transitions
            ],
            initial=spec.machine.initial,
            auto_transitions=False,
        )
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
        if dest == state:
            if act is not None:
                act(slot, text)
        else:
            try:
                self.machine.events[trigger].trigger(slot, text)
            except MachineError as exc:  # the compiled table and the machine disagree
                raise StateError(f"call {slot.id}: {exc}") from None
            if slot.state != dest:
                raise StateError(f"call {slot.id}: machine went to {slot.state!r}, spec says {dest!r}")
        slot.covered(label)
        return rest


@functools.cache
def slot_machine() -> SpecMachine:
    return SpecMachine(slot_spec(), Slot)
