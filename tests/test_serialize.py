"""cattrs (un)structures events and results: the form used by the CLI, traces and vectors."""

from __future__ import annotations

from typing import Any

import pytest

from fsm.errors import InvalidInput
from fsm.events import ArgumentsFragment, CallRef, CallSeen, StreamEnd, UsageReport
from fsm.results import Output
from fsm.serialize import event_from_json, event_to_json, result_to_json
from tests.helpers import chunk, run, tc


def test_events_round_trip_as_a_tagged_union() -> None:
    for event in [
        CallSeen(CallRef(0, "a", "f")),
        ArgumentsFragment(CallRef(None, None, None, 2), '{"x"'),
        StreamEnd("length", "max_tokens"),
    ]:
        data = event_to_json(event)
        assert data["type"] == type(event).__name__
        assert event_from_json(data) == event


def test_blank_id_and_name_are_no_evidence() -> None:
    assert CallRef(0, "", "") == CallRef(0, None, None)


def test_result_unstructures_to_plain_json_types() -> None:
    data = result_to_json(run([chunk(tc(index=0, id="a", name="f", args="{}"), finish="tool_calls")]))
    assert data["calls"][0]["status"] == "complete"
    assert data["diagnostics"] == []


def test_result_to_json_gives_what_the_cattrs_converter_gives() -> None:
    """The CLI's result form skips cattrs (start-up); on every bundled vector and a fuzzed sample of
    every shape it must equal the converter's, down to list-not-tuple and enum-as-value."""
    from fsm.harness.conformance import replay
    from fsm.harness.fuzz import SHAPES
    from fsm.harness.fuzz.run import sample_vectors
    from fsm.harness.vectors import load_vectors
    from fsm.serialize import converter

    vectors = load_vectors() + [v for shape in SHAPES for v in sample_vectors(shape, 15)]
    for vector in vectors:
        result, _ = replay(vector)
        assert repr(result_to_json(result)) == repr(converter().unstructure(result)), vector.name
    assert len(vectors) > 200


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (None, "an event is a JSON object, not NoneType"),
        ([], "not list"),
        ({}, 'an event\'s "type" is one of'),  # KeyError from cattrs before
        ({"type": "Nope"}, "not 'Nope'"),
        ({"type": ["ArgumentsFragment"]}, "not \\['ArgumentsFragment'\\]"),
        ({"type": "ArgumentsFragment"}, "attribute ref"),  # a ClassValidationError before
        ({"type": "ArgumentsFragment", "ref": None, "text": "x"}, "attribute ref"),
        ({"type": "ArgumentsFragment", "ref": {"index": "0"}, "text": "x"}, "'0' is str, not int"),  # was index 0
        ({"type": "StreamEnd", "finish_reason": ["stop"]}, "is list, not str"),  # was "['stop']"
        ({"type": "CallEnd", "ref": {"index": 0}, "incomplete": "no"}, "is str, not bool"),  # was True
        ({"type": "ArgumentsFragment", "ref": {"index": True}, "text": "x"}, "is bool, not int"),
    ],
)
def test_json_that_is_no_event_is_invalid_input_and_nothing_is_made_up(data: Any, said: str) -> None:
    with pytest.raises(InvalidInput, match=said):
        event_from_json(data)


def test_serializing_what_is_no_event_or_result_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="takes an event"):
        event_to_json({"type": "StreamEnd"})  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="takes a Result"):
        result_to_json(None)  # type: ignore[arg-type]


def test_a_result_nesting_as_deep_as_the_limits_allow_is_written() -> None:
    import json

    from fsm import Limits, Reassembler
    from fsm.jsontext import dumps

    depth = 500  # max_depth may be 512; asdict's frames per level passed Python's recursion limit at ~330
    usage: dict[str, Any] = {"n": 1}
    for _ in range(depth):
        usage = {"n": usage}
    text = '{"a":' * depth + "1" + "}" * depth
    event = {**chunk(tc(index=0, id="a", name="f", args=text), finish="tool_calls"), "usage": usage}
    r = Reassembler(limits=Limits(max_depth=512))
    r.feed_bytes(b"data: " + json.dumps(event).encode() + b"\n\n")
    result = r.close()
    data = result_to_json(result)
    assert data["calls"][0]["arguments"] == json.loads(text) and data["usage"] == usage
    assert json.loads(dumps(data))["calls"][0]["status"] == "complete"


def test_an_event_nesting_as_deep_as_a_wire_event_may_round_trips() -> None:
    """A built-in item (CallSeen.item) and usage are a wire event's JSON, which may nest
    max_event_depth levels (544 with max_depth 512): cattrs' frames per level passed Python's
    recursion limit at ~330, so event_to_json raised RecursionError."""
    from fsm import Limits
    from fsm.results import CallFinished, CallStatus, ToolCall
    from fsm.serialize import converter

    value: dict[str, Any] = {"n": 1}
    for _ in range(Limits(max_depth=512).max_event_depth - 2):
        value = {"n": [value]} if len(repr(value)) % 2 else {"n": value}
    for event in [CallSeen(CallRef(0, "a", "shell"), item=value), UsageReport(value, cumulative=True)]:
        data = event_to_json(event)
        assert data["type"] == type(event).__name__
        assert event_from_json(data) == event
    call = ToolCall(0, "a", "a", "f", value, "{}", CallStatus.COMPLETE, item=value)
    assert converter().structure(converter().unstructure(CallFinished(call), Output), Output) == CallFinished(call)


def test_every_output_round_trips_keeping_its_own_type_field() -> None:
    """CallOpened has a field named ``type`` (the call's type): a union tagged by ``"type"`` wrote the
    class name over it, so a custom call read back as a call of type ``"CallOpened"``."""
    from fsm.results import ArgumentsDelta, CallFinished, CallNamed, CallOpened, CallStatus, ToolCall
    from fsm.serialize import converter

    call = ToolCall(1, "c", None, "patch", None, None, CallStatus.COMPLETE, type="custom", input="*** Begin")
    outputs = [
        CallOpened(0, "a", "a", "f"),
        CallOpened(1, "c", None, "patch", type="custom"),
        CallNamed(1, "patch"),
        ArgumentsDelta(1, "*** Begin"),
        CallFinished(call),
    ]
    for output in outputs:
        data = converter().unstructure(output, Output)
        assert converter().structure(data, Output) == output, data


@pytest.mark.parametrize(
    "data",
    [
        {"type": "CallEnd", "ref": {"index": 0}, "incomplet": True},  # read as a complete call before
        {"type": "CallSeen", "ref": {"index": 0, "nmae": "f"}},  # read as a call with no name before
        {"type": "StreamEnd", "finish_reason": "stop", "eror": "overloaded"},
    ],
)
def test_a_key_an_event_does_not_have_is_invalid_input_not_dropped(data: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput, match=r"Extra fields in constructor for \w+: (incomplet|nmae|eror)"):
        event_from_json(data)


def _event_strategies() -> Any:
    from hypothesis import strategies as st

    from fsm.events import ArgumentsSnapshot, CallEnd, ReasoningDelta, TextDelta

    text = st.text(max_size=12) | st.sampled_from(["\ud800", "a\udfff", "\U0001f600", "", "\x00"])
    maybe = st.none() | text
    number = st.integers() | st.just(10**100)
    value = st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
        max_leaves=10,
    )
    ref = st.builds(CallRef, st.none() | number, maybe, maybe, number, st.booleans(), text)
    return st.one_of(
        st.builds(CallSeen, ref, maybe, st.none() | st.dictionaries(text, value, max_size=3)),
        st.builds(ArgumentsFragment, ref, text, maybe),
        st.builds(ArgumentsSnapshot, ref, text, maybe, st.booleans()),
        st.builds(CallEnd, ref, st.booleans()),
        st.builds(StreamEnd, maybe, maybe, maybe),
        st.builds(TextDelta, text, maybe),
        st.builds(ReasoningDelta, st.none() | number, text, maybe, maybe, maybe, st.lists(text).map(tuple), maybe),
        st.builds(UsageReport, st.dictionaries(text, value, max_size=3), st.booleans()),
    )


def test_every_event_round_trips_through_json_text() -> None:
    """Any event (non-BMP text, lone surrogates, 100-digit ints, nested items) comes back equal from
    its JSON form, and from that form written as text and read back."""
    import json

    from hypothesis import HealthCheck, given, settings

    from fsm.jsontext import dumps

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(_event_strategies())
    def round_trips(event: Any) -> None:
        data = event_to_json(event)
        assert event_from_json(data) == event
        assert event_to_json(event_from_json(data)) == data
        assert event_from_json(json.loads(dumps(data))) == event

    round_trips()
