"""The reference executor: the ``transitions`` machine of a spec, built from the same spec as the
compiled table the engine runs (fsm/engine/machine.py).

The table executor is what streams run on; this one is the check on it. Strict mode runs every
trigger through it, and a test replays every conformance vector and thousands of fuzzed streams on
both, requiring the same transitions, outputs and rule counts. Imported only when first needed, so
``import fsm`` does not load ``transitions``.

It is built from lean subclasses of the library's Transition and Event (its documented
``transition_cls``/``event_cls`` hooks). A spec transition is guards, a state change and one action;
the generic classes also walk seven empty callback lists and make about ten logging calls per
trigger, which made a state change cost ~15 us. The lean engine refuses any callback it would not
run, so leaving those walks out changes no behaviour.
"""

from __future__ import annotations

from typing import Any, cast

from transitions import Event, Machine, Transition
from transitions.core import EventData, MachineError

from fsm.errors import SpecError, StateError
from fsm.spec import SELF, MachineSpec

__all__ = ["MachineError", "ReferenceMachine"]


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


class ReferenceMachine:
    """One ``transitions`` machine per spec serves every model instance: models are not registered
    with it (registration costs tens of microseconds per slot and keeps a reference to each), the
    machine's events are triggered on the model directly."""

    def __init__(self, spec: MachineSpec) -> None:
        self.engine = _SpecEngine(
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

    def trigger(self, model: Any, trigger: str, text: str, dest: str) -> None:
        """Fire ``trigger`` on ``model``; the compiled table said it goes to ``dest``."""
        try:
            self.engine.events[trigger].trigger(model, text)
        except MachineError as exc:  # the compiled table and the machine disagree
            raise StateError(f"{model!r}: {exc}") from None
        if model.state != dest:
            raise StateError(f"{model!r}: machine went to {model.state!r}, spec says {dest!r}")
