"""Spec and code agree: the spec names every guard, action, rule and diagnostic the code has, and
the code has every one the spec names. A malformed spec is refused with a clear error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fsm.engine.machine import slot_machine
from fsm.engine.roles import spec_members
from fsm.engine.scanner import ACTIONS, GUARDS
from fsm.engine.slot import Slot
from fsm.errors import SpecError
from fsm.history import CallId
from fsm.spec import SPEC_DIR, history_spec, identity_spec, load_identity, load_machine, scanner_spec, slot_spec

PACKAGE = Path(__file__).resolve().parent.parent / "fsm"


def code_citations(pattern: str) -> set[str]:
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        found |= set(re.findall(pattern, path.read_text()))
    return found


def test_slot_guards_and_actions_match_the_spec_exactly() -> None:
    spec = slot_spec()
    assert spec_members(Slot, "guard") == {g.name for g in spec.guards}
    assert spec_members(Slot, "action") == {a.name for a in spec.actions}


def test_history_actions_match_the_spec_exactly() -> None:
    spec = history_spec()
    assert spec_members(CallId, "guard") == {g.name for g in spec.guards}
    assert spec_members(CallId, "action") == {a.name for a in spec.actions}


def test_scanner_guards_and_actions_match_the_spec_exactly() -> None:
    spec = scanner_spec()
    assert set(GUARDS) == {g.name for g in spec.guards}
    assert set(ACTIONS) == {a.name for a in spec.actions}


def test_every_rule_is_applied_by_code_and_no_other() -> None:
    spec = identity_spec()
    applied = code_citations(r'apply\(\s*"([a-z-]+)"')
    diagnosed = code_citations(r'diagnose\(\s*"([a-z-]+)"') | code_citations(r'_fail\([^,]+,\s*"([a-z-]+)"')
    # A diagnostic applies the rule it cites (the ledger counts it so).
    cited = applied | {spec.diagnostic_by_code[code].rule for code in diagnosed}
    assert applied <= spec.rule_names, applied - spec.rule_names
    assert cited == spec.rule_names


def test_every_diagnostic_code_is_declared_and_used() -> None:
    cited = code_citations(r'diagnose\(\s*"([a-z-]+)"') | code_citations(r'_fail\([^,]+,\s*"([a-z-]+)"')
    cited |= code_citations(r'recode\([^,]+,\s*"([a-z-]+)"')  # a diagnostic said again as what a later event told
    declared = set(identity_spec().diagnostic_by_code)
    assert cited <= declared, cited - declared
    assert declared <= cited, declared - cited


def test_every_self_loop_is_declared_and_the_machine_builds() -> None:
    machine = slot_machine()
    loops = [
        label
        for by_state in machine.candidates.values()
        for state, cands in by_state.items()
        for (_, dest, _, label) in cands
        if dest == state
    ]
    assert "accumulating--append->accumulating" in loops
    assert set(machine.machine.engine.states) == set(slot_spec().state_names())


def test_strict_mode_runs_every_trigger_through_the_transitions_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    from fsm import Reassembler
    from fsm.events import ArgumentsFragment, CallRef, CallSeen, StreamEnd

    engine = slot_machine(reference=True).machine.engine
    seen: list[tuple[str, str]] = []
    for name, event in engine.events.items():
        real = event.trigger

        def traced(model: Slot, *args: object, _name: str = name, _real: object = real) -> bool:
            before = model.state
            done = _real(model, *args)  # type: ignore[operator]
            seen.append((before, f"{_name}->{model.state}"))
            return bool(done)

        monkeypatch.setattr(event, "trigger", traced)
    r = Reassembler(strict=True)
    ref = CallRef(index=0, id="a", name="f")
    for wire_event in (
        CallSeen(ref),
        ArgumentsFragment(ref, '{"q": '),
        ArgumentsFragment(ref, '"x"'),
        ArgumentsFragment(ref, "}"),
    ):
        r.feed(wire_event)
    r.feed(StreamEnd("tool_calls"))
    assert seen == [
        ("opened", "append->accumulating"),
        ("accumulating", "append->accumulating"),
        ("accumulating", "append->value_closed"),
        ("value_closed", "end->flushed"),
    ]
    assert r.close().calls[0].arguments == {"q": "x"}
    seen.clear()
    plain = Reassembler()  # the default runs on the compiled table alone
    plain.feed(CallSeen(ref))
    plain.feed(ArgumentsFragment(ref, "{}"))
    plain.feed(StreamEnd("tool_calls"))
    assert seen == [] and plain.close().calls[0].arguments == {}


def test_the_spec_engine_refuses_callbacks_it_would_not_run() -> None:
    from fsm.engine.reference import _SpecEngine

    with pytest.raises(SpecError, match="no other callbacks"):
        _SpecEngine(model=None, states=["a", "b"], transitions=[["go", "a", "b"]], initial="a", after_state_change="x")
    with pytest.raises(SpecError, match="no other callbacks"):
        _SpecEngine(
            model=None,
            states=["a", "b"],
            transitions=[{"trigger": "go", "source": "a", "dest": "b", "before": "x"}],
            initial="a",
        )
    from transitions.core import MachineError

    engine = _SpecEngine(model=None, states=["a", "b"], transitions=[["go", "a", "b"]], initial="a")

    class Model:
        state = "b"

    with pytest.raises(MachineError, match="Can't trigger event go from state b"):
        engine.events["go"].trigger(Model())
    model = Model()
    model.state = "a"
    assert engine.events["go"].trigger(model) is True
    assert model.state == "b"
    with pytest.raises(SpecError, match="unqueued"):
        _SpecEngine(model=None, states=["a", "b"], transitions=[["go", "a", "b"]], initial="a", queued=True)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s.replace('name = "slot"', 'name = "slot"\ncolour = "red"'), "colour"),
        (lambda s: s.replace('dest = "truncated"', 'dest = "nowhere"'), "'nowhere' is not a declared state"),
        (lambda s: s.replace('guards = ["no_text"]', 'guards = ["maybe"]'), "guard 'maybe' is not declared"),
        (lambda s: s.replace('action = "mark_truncated"', 'action = "shrug"'), "action 'shrug' is not declared"),
        (lambda s: s.replace('initial = "opened"', 'initial = "limbo"'), "initial state 'limbo'"),
        (
            lambda s: s + '\n[[transitions]]\nsource = ["flushed"]\ntrigger = "cut"\ndest = "opened"\nreason = "x"\n',
            "leaves terminal state",
        ),
        (lambda s: s + '\n[[guards]]\nname = "unused"\nreason = "x"\n', "never used"),
        (lambda s: s.replace("[machine]", "[machine"), "not valid TOML"),
    ],
)
def test_malformed_slot_spec_is_refused(tmp_path: Path, edit: object, message: str) -> None:
    text = (SPEC_DIR / "slot.toml").read_text()
    bad = tmp_path / "slot.toml"
    bad.write_text(edit(text))  # type: ignore[operator]
    with pytest.raises(SpecError, match=re.escape(message)):
        load_machine(bad)


def test_malformed_identity_spec_is_refused(tmp_path: Path) -> None:
    text = (SPEC_DIR / "identity.toml").read_text()
    bad = tmp_path / "identity.toml"
    bad.write_text(text.replace('rule = "one-choice"', 'rule = "no-such-rule"'))
    with pytest.raises(SpecError, match="undeclared rule 'no-such-rule'"):
        load_identity(bad)
    bad.write_text(text.replace('default = "resend"', 'default = "sometimes"'))
    with pytest.raises(SpecError, match="is not one of its choices"):
        load_identity(bad)


def test_missing_spec_file_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="not found"):
        load_machine(tmp_path / "absent.toml")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s.replace('severity = "info"', 'severity = "meh"', 1), "severity 'meh' is not one of"),
        (lambda s: s.replace('yes = "by-index"', 'yes = "nowhere"'), "goes on to undeclared step 'nowhere'"),
        (lambda s: s.replace('no = "has-id"', 'no = "by-position"'), "never reached"),
        (lambda s: s.replace('diagnostics = ["split-fragment"]\n', ""), "diagnostics missing from the flow"),
        (lambda s: s.replace('policy = "id_rotation"\n', ""), "policies missing from the flow"),
        (lambda s: s.replace('rules = ["positional-fallback"]', "rules = []"), "rules missing from the flow"),
        (lambda s: s.replace('ask = "Does it carry an index?"', 'does = "Look"'), "goes on with next"),
        (lambda s: s.replace('policy = "id_rotation"', 'policy = "whim"'), "undeclared policy 'whim'"),
    ],
)
def test_malformed_identity_flow_or_severity_is_refused(tmp_path: Path, edit: object, message: str) -> None:
    text = (SPEC_DIR / "identity.toml").read_text()
    bad = tmp_path / "identity.toml"
    changed = edit(text)  # type: ignore[operator]
    assert changed != text
    bad.write_text(changed)
    with pytest.raises(SpecError, match=re.escape(message)):
        load_identity(bad)


def test_every_diagnostic_has_a_severity_and_normal_streams_read_as_info() -> None:
    spec = identity_spec()
    severity = {d.code: d.severity for d in spec.diagnostics}
    # What every Gemini and Responses stream reports (no ids; stop with calls) is not a fault.
    assert severity["synthesized-id"] == "info" and severity["finish-reason-mapped"] == "info"
    assert {d.severity for d in spec.diagnostics} == {"info", "warning", "violation"}


def test_importing_the_package_loads_no_spec_and_neither_cattrs_nor_transitions() -> None:
    """Specs load (tomllib, cattrs) when a Reassembler is first made; the transitions machine is
    built only for strict mode, the reference executor: ``import fsm`` pays for neither."""
    import subprocess
    import sys

    probe = "import sys, fsm; print(sorted({'cattrs', 'tomllib', 'transitions'} & set(sys.modules)))"
    eager = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert eager.strip() == "[]"
    probe = "import sys, fsm; fsm.Reassembler().close(); print('transitions' in sys.modules)"
    used = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert used.strip() == "False"  # the default runs on the compiled table alone
