"""The engine builds its hot outputs (ToolCall, CallOpened, ArgumentsDelta, CallFinished), each
diagnostic, every stream's Result and its finish (StreamEnd), and the decoders the events of nearly
every call (CallRef, CallSeen, ArgumentsFragment, ArgumentsSnapshot, UsageReport) through
constructors that set slots directly (fsm.results.positional): they must build exactly what attrs'
own __init__ builds, by position or by name, converters included, stay frozen, and refuse a class
whose __init__ does more than they write out."""

from __future__ import annotations

import copy
import pickle
import weakref
from typing import Any

import attrs
import pytest

from fsm import Reassembler, events, positional, results
from fsm.events import CallRef, StreamEnd, build_stream_end
from fsm.results import ArgumentsDelta, CallFinished, CallOpened, CallStatus, Diagnostic, Result, ToolCall
from tests.helpers import chunk, tc

BUILT = [
    (ToolCall, results.build_tool_call),
    (CallOpened, results.build_call_opened),
    (ArgumentsDelta, results.build_arguments_delta),
    (CallFinished, results.build_call_finished),
    (Diagnostic, results.build_diagnostic),
    (Result, results.build_result),
    (StreamEnd, build_stream_end),  # an event: one a stream, at its finish
    (CallRef, events.build_call_ref),  # the events of nearly every call, built by the decoders
    (events.CallSeen, events.build_call_seen),
    (events.ArgumentsFragment, events.build_arguments_fragment),
    (events.ArgumentsSnapshot, events.build_arguments_snapshot),
    (events.UsageReport, events.build_usage_report),
]


def _values(cls: type) -> list[object]:
    """A distinct value for every field, so a field set from the wrong argument shows."""
    return [f"{cls.__name__}.{f.name}" for f in attrs.fields(cls)]


@pytest.mark.parametrize(("cls", "build"), BUILT, ids=[cls.__name__ for cls, _ in BUILT])
def test_built_by_position_equals_built_by_attrs(cls: type, build: object) -> None:
    values = _values(cls)
    made = build(*values)  # type: ignore[operator]
    assert type(made) is cls
    usual = cls(**{f.name: v for f, v in zip(attrs.fields(cls), values, strict=True)})
    assert made == usual
    assert hash(made) == hash(usual)
    assert [getattr(made, f.name) for f in attrs.fields(cls)] == values
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        made.index = 99  # type: ignore[attr-defined, misc]


@pytest.mark.parametrize(("cls", "build"), BUILT, ids=[cls.__name__ for cls, _ in BUILT])
def test_a_builder_takes_what_init_takes_by_name_and_by_default(cls: type, build: object) -> None:
    """Call sites pass the builder what they passed the class: the fields by name, and the last
    ones left out when their defaults will do (a factory's default is never shared: given)."""
    fields = attrs.fields(cls)
    values = _values(cls)
    named = {f.name: v for f, v in zip(fields, values, strict=True)}
    assert build(**named) == cls(**named)  # type: ignore[operator]
    given = len(fields)
    while given and fields[given - 1].default is not attrs.NOTHING:
        given -= 1
    if not any(isinstance(f.default, attrs.Factory) for f in fields):  # type: ignore[arg-type]
        made = build(*values[:given])  # type: ignore[operator]
        assert made == cls(**{f.name: v for f, v in zip(fields[:given], values, strict=False)})
        assert type(made) is cls


@pytest.mark.parametrize("blank", ["", None])
def test_a_call_ref_built_by_position_converts_as_its_class_does(blank: str | None) -> None:
    """CallRef's id and name convert an empty string to None (no evidence): the builder writes
    that converter out, and must do just what it does, for each value it can be given."""
    for wire_id in (blank, "call_1", "0"):
        for name in (blank, "get", " "):
            made = events.build_call_ref(3, wire_id, name, 1, True, "custom")
            assert made == CallRef(3, wire_id, name, 1, True, "custom")
            assert (made.id, made.name) == (wire_id or None, name or None)


def test_a_builder_must_write_out_every_converter_and_no_other_field() -> None:
    """A converter left out would be skipped; one written out for a field without a converter
    would change what the class keeps."""
    with pytest.raises(TypeError, match="does more in __init__"):
        results.positional(CallRef, {"id": "id or None"})  # name's converter left out
    with pytest.raises(TypeError, match="does more in __init__"):
        results.positional(CallRef, {"id": "id or None", "name": "name or None", "index": "index"})
    with pytest.raises(TypeError, match="does more in __init__"):
        results.positional(CallRef, {"id": "id or None", "name": "name or None", "nothing": "1"})


def test_a_class_whose_init_does_more_is_refused() -> None:
    @attrs.frozen(slots=True)
    class Checked:
        value: int = attrs.field(validator=attrs.validators.instance_of(int))

    @attrs.frozen(slots=True)
    class Converted:
        value: int = attrs.field(converter=int)

    @attrs.frozen(slots=True)
    class Hooked:
        value: int

        def __attrs_post_init__(self) -> None:
            pass

    @attrs.frozen(slots=True)
    class Made:  # the builder calls its class with no argument: a __new__ of its own would run
        value: int

        def __new__(cls, *args: object, **kwargs: object) -> Made:
            return super().__new__(cls)

    for cls in (Checked, Converted, Hooked, Made):
        with pytest.raises(TypeError, match="does more in __init__"):
            results.positional(cls)
        with pytest.raises(TypeError, match="does more in __init__"):
            positional.unfrozen(cls)  # the twin a hot caller builds in line: converters too refused


def test_the_engine_outputs_are_the_classes_users_import() -> None:
    """What a stream gives out through the builders is the public classes, equal to objects built
    the usual way from the same fields."""
    r = Reassembler("openai-chat")
    outputs = r.feed(chunk(tc(index=0, id="a", name="f", args='{"x": 1}'), finish="tool_calls"))
    call = r.close().calls[0]
    assert call == ToolCall(0, "a", "a", "f", {"x": 1}, '{"x": 1}', CallStatus.COMPLETE)
    assert outputs == [
        CallOpened(0, "a", "a", "f"),
        ArgumentsDelta(0, '{"x": 1}'),
        CallFinished(call),
    ]


def test_the_result_and_its_diagnostics_are_the_classes_users_import() -> None:
    """close() builds the Result, and the ledger each Diagnostic, through the builders: the public
    classes, equal (and hashed alike) to copies attrs' own __init__ makes of them."""
    result = Reassembler("openai-chat").close()
    (said,) = result.diagnostics
    assert type(result) is Result and type(said) is Diagnostic
    assert said == attrs.evolve(said) and hash(said) == hash(attrs.evolve(said))
    assert said.code == "no-finish-reason" and said.event is None
    assert result == attrs.evolve(result)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        result.text = "changed"  # type: ignore[misc]


@pytest.mark.parametrize(("cls", "build"), BUILT, ids=[cls.__name__ for cls, _ in BUILT])
def test_a_built_object_is_its_class_in_every_use(cls: type, build: object) -> None:
    """A builder makes the object as a private subclass that allows assignment and then gives it
    its class: nothing of that subclass may show afterwards (copies, pickles, weak references,
    evolve, the class's own refusal of assignment and deletion)."""
    made = build(*_values(cls))  # type: ignore[operator]
    assert type(made) is cls and made.__class__ is cls
    for again in (copy.copy(made), copy.deepcopy(made), pickle.loads(pickle.dumps(made)), attrs.evolve(made)):
        assert type(again) is cls and again == made
    assert weakref.ref(made)() is made
    first = attrs.fields(cls)[0].name
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        setattr(made, first, "changed")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        delattr(made, first)
    assert not hasattr(made, "__dict__")


def _twin_free(made: object) -> None:
    """``made`` is its public class in every way a caller can tell: every field set, equal to the
    copy attrs' own __init__ makes of its fields (and written alike), frozen, pickled alike."""
    cls = type(made)
    assert cls in (ToolCall, CallOpened, ArgumentsDelta, CallFinished) and made.__class__ is cls
    fields = {f.name: getattr(made, f.name) for f in attrs.fields(cls)}  # an unset slot raises here
    usual = cls(**fields)
    assert made == usual and repr(made) == repr(usual)  # (no hash: a ToolCall holds its dict)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        setattr(made, attrs.fields(cls)[0].name, "changed")
    assert pickle.loads(pickle.dumps(made)) == made and not hasattr(made, "__dict__")


def test_outputs_built_in_line_equal_attrs_built_ones() -> None:
    """The commonest call's outputs (CallOpened at Registry._open_new, ArgumentsDelta at
    Slot.store_whole, the ToolCall of Slot.to_call and its CallFinished at Registry._ended) are
    built in line through positional.unfrozen, a frame less each than a builder's call: each is
    the public class with every field set, equal to attrs' own, over whole calls, headers and
    fragments; and a stream of whole calls runs none of the builders (counted by a tracer)."""
    import sys

    r = Reassembler("openai-chat")
    outputs = []
    for k in range(3):
        outputs += r.feed(chunk(tc(index=k, id=f"c{k}", name="get", args=f'{{"i": {k}}}')))
    outputs += r.feed(chunk(tc(index=3, id="c3", name="put")))
    outputs += r.feed(chunk(tc(index=3, args='{"a": "b"')))
    outputs += r.feed(chunk(tc(index=3, args="}")))
    outputs += r.feed(chunk(finish="tool_calls"))
    result = r.close()
    assert [type(o).__name__ for o in outputs].count("CallFinished") == 4
    for made in [*outputs, *result.calls]:
        _twin_free(made)
    assert outputs[:3] == [
        CallOpened(0, "c0", "c0", "get"),
        ArgumentsDelta(0, '{"i": 0}'),
        CallOpened(1, "c1", "c1", "get"),
    ]
    assert result.calls[0] == ToolCall(0, "c0", "c0", "get", {"i": 0}, '{"i": 0}', CallStatus.COMPLETE)
    if sys.gettrace() is not None:
        pytest.skip("a coverage tracer is set: the builders' calls are counted by one")
    builders = {
        b.__code__
        for b in (
            results.build_tool_call,
            results.build_call_opened,
            results.build_arguments_delta,
            results.build_call_finished,
        )
    }
    ran = []

    def tracer(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in builders:
            ran.append(frame.f_code)

    r = Reassembler("openai-chat")
    sys.settrace(tracer)
    try:
        for k in range(5):
            r.feed(chunk(tc(index=k, id=f"c{k}", name="get", args=f'{{"i": {k}}}')))
        r.feed(chunk(finish="tool_calls"))
        calls = r.close().calls
    finally:
        sys.settrace(None)
    assert len(calls) == 5 and not ran


def test_a_call_ends_made_without_a_call_of_to_call() -> None:
    """Registry._ended makes the commonest call (no rarely written field: Slot.reread never ran)
    in line, as Slot.to_call would, a frame less on each call's end: a stream of whole calls and
    its finish enter to_call for none of them (counted by a tracer), and the calls are those
    attrs builds; a call that wrote a rarely written field is still made by to_call."""
    import sys

    from fsm.engine.slot import Slot

    if sys.gettrace() is not None:
        pytest.skip("a coverage tracer is set: the calls are counted by one")
    entered = []

    def tracer(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is Slot.to_call.__code__:
            entered.append(frame.f_code)

    r = Reassembler("openai-chat")
    sys.settrace(tracer)
    try:
        outputs = []
        for k in range(5):
            outputs += r.feed(chunk(tc(index=k, id=f"c{k}", name="get", args=f'{{"i": {k}}}')))
        outputs += r.feed(chunk(finish="tool_calls"))
    finally:
        sys.settrace(None)
    assert not entered
    finished = [o.call for o in outputs if type(o) is CallFinished]
    assert finished == [
        ToolCall(k, f"c{k}", f"c{k}", "get", {"i": k}, f'{{"i": {k}}}', CallStatus.COMPLETE) for k in range(5)
    ]
    assert r.close().calls == tuple(finished)
    r = Reassembler("openai-chat")
    r.feed(chunk(tc(index=0, id="c0", name="get", args="{}")))
    r.registry.slots[0].reread()
    sys.settrace(tracer)
    try:
        r.feed(chunk(finish="tool_calls"))
    finally:
        sys.settrace(None)
    assert len(entered) == 1 and r.close().calls == (ToolCall(0, "c0", "c0", "get", {}, "{}", CallStatus.COMPLETE),)


def test_a_call_ends_without_a_read_of_its_rare_class_attributes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registry._ended reads neither ``server`` nor ``_diverged`` (class attributes: a read through
    the call that Python 3.11 does not specialize) of the commonest call, whose ``_call`` is None
    until it ends: a server call's is not, nor that of a call whose text a snapshot replaced after
    it went out. Counted by properties standing for the class attributes over a finish of whole
    calls (the differential and the snapshot tests hold the tails of diverged calls)."""
    from fsm.engine.slot import Slot

    reads = {"server": 0, "_diverged": 0}

    def counted(name: str) -> property:
        def read(slot: Slot) -> bool:
            reads[name] += 1
            return bool(slot.__dict__.get(name, False))

        def write(slot: Slot, value: bool) -> None:
            slot.__dict__[name] = value

        return property(read, write)

    monkeypatch.setattr(Slot, "server", counted("server"))
    monkeypatch.setattr(Slot, "_diverged", counted("_diverged"))
    r = Reassembler("openai-chat")
    for k in range(5):
        r.feed(chunk(tc(index=k, id=f"c{k}", name="get", args=f'{{"i": {k}}}')))
    before = dict(reads)
    r.feed(chunk(finish="tool_calls"))
    assert reads == before, (before, reads)
    assert len(r.close().calls) == 5
