"""A call's end (issue 17, per call): the strict parse's reading of a flat object (jsontext.flat_object)
decides exactly as the general parse, and a closed value's end, taken in line (Slot.end_closed),
ends every call as the general way does."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fsm import Limits, Reassembler, jsontext
from fsm.harness.fuzz.run import sample_vectors
from fsm.harness.fuzz.shapes import CASES
from fsm.jsontext import flat_object, parse_general, parse_strict
from tests.helpers import chunk, tc
from tests.test_conformance import VECTORS, _replay_with_trace
from tests.test_per_call_paths import EDGES, OPTIONS, PARSE_CASES, _trace, whole


def _general(text: str) -> object:
    """parse_general's value and duplicate keys, or its error (type and words)."""
    try:
        return parse_general(text)
    except ValueError as exc:
        return type(exc).__name__, str(exc)


def _agrees(text: str) -> bool:
    """flat_object decides ``text`` as parse_general does (it may leave it undecided: None); says
    whether it decided it."""
    value = flat_object(text)
    if value is None:
        return False
    general = _general(text)
    assert general == (value, []), text
    assert repr(general) == repr((value, [])), text  # an int stays an int, a float a float
    assert parse_strict(text) == general
    return True


# Pieces of flat objects where a reading can go wrong: keys given twice (by escape too), escapes,
# lone surrogates (escaped and raw), colons and brackets inside strings, numbers past a float or
# an int, minus zero, the constants JSON refuses, whitespace and text around the object.
_KEYS = st.sampled_from(['"a"', '"b"', '"\\u0061"', '"a:b"', '"{"', '"\\ud800"', '"\ud83d"', '"é"', '""'])
_VALUES = st.one_of(
    st.sampled_from(
        [
            "0",
            "-0",
            "-0.0",
            "1e400",
            "-1e400",
            "1E308",
            "1.7976931348623157e308",
            "1.8e308",
            "1e-400",
            "2.5",
            "1" * 400,
            "1" * 400 + ".0",
            "9" * 5000,
            "true",
            "false",
            "null",
            "NaN",
            "-Infinity",
            "Infinity",
            '"x"',
            '"\\"}"',
            '"\\udc00"',
            '"\\ud83d\\ude42"',
            '"a\\nb"',
            '"{}"',
            '"["',
            '"::"',
            "{}",
            "[1]",
            "01",
            "1.",
            "'q'",
        ]
    ),
    st.integers().map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.text(max_size=6).map(json.dumps),
)
_GAPS = st.sampled_from(["", " ", "\n", "\t "])


@st.composite
def _flat_texts(draw: st.DrawFn) -> str:
    pairs = draw(st.lists(st.tuples(_KEYS, _VALUES), max_size=5))
    gap = draw(_GAPS)
    body = f",{gap}".join(f"{key}:{gap}{value}" for key, value in pairs)
    return draw(_GAPS).join(["", "{" + body + "}", ""]) + draw(st.sampled_from(["", "", "}", " x", ","]))


@given(_flat_texts())
@settings(max_examples=1500, deadline=None)
@example('{"a": 1, "a": 2}')
@example('{"a": 1, "\\u0061": 2}')
@example('{"a": 1e400}')
@example('{"a": -1e400}')
@example('{"a": -0}')
@example('{"a": NaN}')
@example('{"a": "\\ud800"}')
def test_the_flat_object_reading_decides_as_the_general_parse(text: str) -> None:
    _agrees(text)


@st.composite
def _nested_texts(draw: st.DrawFn) -> str:
    """Flat texts nested in objects and arrays, cut short or run on at times."""
    text = draw(_flat_texts())
    for wrap in draw(st.lists(st.sampled_from(['{"k": %s}', "[%s]", '{"a": 1, "b": [%s, 2]}']), max_size=3)):
        text = wrap % text
    return text[: draw(st.integers(0, len(text)))] if draw(st.booleans()) else text


def _decoded(text: str, monkeypatch: pytest.MonkeyPatch) -> object:
    """_general(text) with parse_general's direct scan refused: decode() reads every text."""

    def refused(text: str, at: int) -> tuple[object, int]:
        raise StopIteration(at)

    with monkeypatch.context() as patched:
        patched.setattr(jsontext, "_STRICT_SCAN", refused)
        return _general(text)


@given(st.one_of(_flat_texts(), _nested_texts()))
@settings(max_examples=800, deadline=None)
@example('{"a": [1, 2], "a": {}}')
@example('{"a": {"b": 1e400}} ')
@example('{"a": [' + "9" * 5000 + "]}")
@example('{"a": [1]}{"b": 2}')
@example('{"a": ["\ud800"]')
def test_the_general_parse_reads_as_decode_does(text: str) -> None:
    """parse_general's scan of a text that starts with its object gives the value, the keys given
    twice and the error (type and words) that the decoder's decode() gives."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert repr(_general(text)) == repr(_decoded(text, monkeypatch)), text


def test_the_flat_object_reading_decides_every_case_and_argument_text_as_the_general_parse() -> None:
    """The quick parse's own cases, and every call's argument text in every vector and in fuzzed
    streams of every shape; most of those are flat objects it reads itself."""
    texts = list(PARSE_CASES)
    for vector in [*VECTORS, *(v for shape in CASES for v in sample_vectors(shape, 40))]:
        result = _replay_with_trace(vector)
        calls = result[0].calls if type(result) is tuple and hasattr(result[0], "calls") else ()
        texts += [call.arguments_json for call in calls if call.arguments_json is not None]
    decided = sum(_agrees(text) for text in texts)
    assert decided > 200, decided


def test_the_flat_object_reading_leaves_what_it_cannot_prove() -> None:
    refused = ['{"a": 1, "a": 2}', '{"a": 1e400}', '{"a": -1e999}', '{"a": NaN}', '{"a": [1]}', '{"a": {}}', " {}"]
    refused += ['"{"', '"{:"', '"a{b::"', '"{\\u003a"', "1{", "{}1"]  # one value, but no object
    for text in refused:
        assert flat_object(text) is None, text
    assert flat_object('{"a": -0, "b": "\\ud800", "c": 1e308}') == {"a": 0, "b": "\ud800", "c": 1e308}


# Ends where the in-line reading has something to decide, each in a stream of whole calls.
ENDS: dict[str, list[dict[str, Any]]] = {
    name: [whole(k, f"c{k}", "f", text) for k, text in enumerate(texts)] + [chunk(finish=finish)]
    for name, finish, texts in [
        ("flat objects", "tool_calls", ['{"i": 0}', "{}", '{"a": "x", "b": null, "c": -0, "d": 2.5}']),
        ("keys given twice", "tool_calls", ['{"k": 1, "k": 2}', '{"k": 1, "\\u006b": 2}']),
        ("numbers past a float", "tool_calls", ['{"x": 1e400}', '{"x": -1E999}', '{"x": ' + "7" * 5000 + "}"]),
        ("not JSON", "tool_calls", ['{"x": NaN}', '{"x": -Infinity}', '{"x": 01}', "{'x': 1}"]),
        ("surrogates", "tool_calls", ['{"s": "\\ud800"}', '{"s": "\ud83d"}', '{"s": "\\ud83d\\ude42"}']),
        ("nested", "tool_calls", ['{"a": {"b": 1}}', '{"a": [1, {"b": 2, "b": 3}]}', "[1]"]),
        ("a cut", "length", ['{"i": 0}', '{"i": "']),
        ("stop", "stop", ['{"i": 0}']),
    ]
}
ENDS["no finish"] = [whole(0, "a", "f", '{"i": 0}')]
ENDS["nameless"] = [chunk({"index": 0, "id": "a", "function": {"arguments": '{"i": 0}'}}), chunk(finish="stop")]
END_OPTIONS = [*OPTIONS, {"limits": Limits(max_depth=1)}, {"limits": Limits(max_stream_argument_bytes=12)}]


def _replays(vectors: list[Any], ends: dict[str, list[dict[str, Any]]]) -> list[object]:
    streams = [(events, options) for events in ends.values() for options in END_OPTIONS]
    return [_replay_with_trace(v) for v in vectors] + [_trace(e, **o) for e, o in streams]


def test_a_call_ends_alike_with_and_without_the_flat_object_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    """parse_arguments and Slot.end_closed read a short flat object with flat_object before the
    nesting check and the general parse. Without it (every text through the nesting check and
    parse_general), over every vector, fuzzed streams of every shape and the ends above in lax
    and strict mode and at tight limits: the same transitions in order, outputs, calls,
    diagnostics and rule counts."""
    from fsm.engine import slot

    taken = 0
    real = slot.flat_object

    def counted(text: str) -> dict[str, Any] | None:
        nonlocal taken
        value = real(text)
        taken += value is not None
        return value

    vectors = [*VECTORS, *(v for shape in CASES for v in sample_vectors(shape, 40))]  # drawn once
    monkeypatch.setattr(slot, "flat_object", counted)
    on = _replays(vectors, {**ENDS, **EDGES})
    assert taken > 300, taken
    monkeypatch.setattr(slot, "flat_object", lambda text: None)
    off = _replays(vectors, {**ENDS, **EDGES})
    for a, b in zip(on, off, strict=True):
        assert a == b


def test_a_closed_value_ends_alike_in_line_and_through_fire(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registry.finish ends a call whose value closed with Slot.end_closed, not fire(), in lax
    mode. Without it (Registry.end_directly off), over the ends above in every option set: the
    same transitions in order (end_closed counts its own, as fire() does), outputs, calls,
    diagnostics and rule counts. test_transitions_taken_directly_decide_as_firing_append holds it
    to fire() over every vector and fuzzed streams too."""
    from fsm.engine.registry import Registry
    from fsm.engine.slot import Slot

    taken = 0
    real = Slot.end_closed

    def counted(slot: Slot, label: str, dest: str) -> bool:
        nonlocal taken
        taken += 1
        return real(slot, label, dest)

    monkeypatch.setattr(Slot, "end_closed", counted)
    streams = [(events, options) for events in ENDS.values() for options in END_OPTIONS]
    direct = [_trace(e, **o) for e, o in streams]
    assert taken > 40, taken
    monkeypatch.setattr(Registry, "end_directly", False)
    general = [_trace(e, **o) for e, o in streams]
    for (events, options), a, b in zip(streams, direct, general, strict=True):
        assert a == b, (events, options)


# Calls that open after a finish, ended by the next finish or by close().
AFTER: dict[str, list[dict[str, Any]]] = {
    "a call after the finish": [whole(0, "a", "f", "{}"), chunk(finish="tool_calls"), whole(1, "b", "f", '{"i": 1}')],
    "two finishes": [
        whole(0, "a", "f", "{}"),
        chunk(finish="tool_calls"),
        whole(1, "b", "f", '{"i": 1}'),
        chunk(tc(2, "c", "g", '{"i": ')),
        chunk(finish="length"),
        whole(3, "d", "f", "{}"),
        chunk(tc(2, args="2}")),
    ],
    "open at the finish": [chunk(tc(0, "a", "f", '{"i": ')), chunk(finish="stop"), whole(1, "b", "f", "{}")],
}


def test_a_finish_walks_only_the_calls_opened_since_the_last_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registry.finish skips the calls that had all ended at the last finish (Registry._settled).
    Walking every call each time instead, over every vector, fuzzed streams of every shape and
    calls opened after a finish in every option set: the same transitions in order, outputs,
    calls, diagnostics and rule counts; and every call has ended once the stream is closed."""
    from fsm.engine.registry import Registry

    vectors = [*VECTORS, *(v for shape in CASES for v in sample_vectors(shape, 40))]
    skipping = _replays(vectors, {**AFTER, **ENDS})
    # (no class default since task 150 writes it at construction: the property stands in for it)
    monkeypatch.setattr(
        Registry, "_settled", property(lambda registry: 0, lambda registry, settled: None), raising=False
    )
    walking = _replays(vectors, {**AFTER, **ENDS})
    for a, b in zip(skipping, walking, strict=True):
        assert a == b
    for name, events in AFTER.items():
        r = Reassembler("openai-chat")
        for event in events:
            r.feed(event)
        calls = r.close().calls
        assert len(calls) == (4 if name == "two finishes" else 2), name
        assert all(slot.status is not None for slot in r.registry.slots), name


def _counts_in_order(events: list[dict[str, Any]], **options: Any) -> object:
    """The rule counts and the transition counts, keys in the order they were first counted, of
    one replay (and the error it ended with, if any)."""
    r = Reassembler("openai-chat", **options)
    error = None
    try:
        for event in events:
            r.feed(event)
        r.close()
    except Exception as exc:  # the same error either way is the same behaviour
        error = (type(exc).__name__, str(exc))
    return error, list(r.ledger.rules.items()), list(r.ledger.transitions.items())


def test_a_finish_counts_its_flat_ends_as_each_end_did(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registry.finish counts the rule parse-once-at-finish and the end's transition once for all
    the calls it ends as flat objects (Slot.end_closed says True), not as two dict updates a
    call. The counts, and the order in which the Counter first met each transition, are those
    of every end counted through fire(): over the ends above, nameless and cut calls among flat
    ones, and a limit met mid-finish, in every option set. Counted work: a finish of 60 flat
    calls updates the end's transition count twice, not 60 times."""
    from fsm.engine.ledger import _Counts
    from fsm.engine.registry import Registry

    flats = [whole(k, f"c{k}", "f", f'{{"i": {k}}}') for k in range(4)]
    mixed = {
        **ENDS,
        "nameless among flat": [
            *flats[:2],
            chunk({"index": 2, "id": "n", "function": {"arguments": '{"i": 2}'}}),
            *flats[3:],
            chunk(finish="stop"),
        ],
        "open among flat": [*flats[:2], chunk(tc(2, "o", "f", '{"i": ')), *flats[3:], chunk(finish="stop")],
        "limit mid-finish": [*flats[:2], chunk(tc(2, "o", "f", '{"i": "')), *flats[3:], chunk(finish="stop")],
    }
    options = [*END_OPTIONS, {"limits": Limits(max_stream_argument_bytes=32)}, {"strict": True}]
    streams = [(events, o) for events in mixed.values() for o in options]
    batched = [_counts_in_order(e, **o) for e, o in streams]
    assert sum(error is not None for error, _, _ in batched) > 3
    monkeypatch.setattr(Registry, "end_directly", False)
    fired = [_counts_in_order(e, **o) for e, o in streams]
    for (events, o), a, b in zip(streams, batched, fired, strict=True):
        assert a == b, (events, o)
    monkeypatch.undo()

    updates: dict[str, int] = {}

    class Recording(_Counts):
        def __setitem__(self, key: str, value: int) -> None:
            updates[key] = updates.get(key, 0) + 1
            super().__setitem__(key, value)

    r = Reassembler("openai-chat")
    r.ledger.transitions = Recording()
    for k in range(60):
        r.feed(whole(k, f"c{k}", "f", f'{{"i": {k}}}'))
    r.feed(chunk(finish="tool_calls"))
    label = r.registry._ending[0]
    assert r.ledger.transitions[label] == 60 and r.ledger.rules["parse-once-at-finish"] == 60
    assert updates[label] == 2, updates
