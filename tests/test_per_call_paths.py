"""The per-call shortcuts (issue 17) decide exactly as the general paths they stand beside: the
whole-call chunk and the call header taken straight to the registry, and the strict parse's quick
first try."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from fsm import Limits, Reassembler
from fsm.harness.fuzz.run import sample_vectors
from fsm.jsontext import parse_strict
from tests.helpers import chunk, replay_traced, tc, without_reader
from tests.test_conformance import VECTORS, _replay_with_trace


def _trace(events: list[dict[str, Any]], **options: Any) -> object:
    """Outputs, result, every transition taken in order and the rule counts of one replay (or the
    error it raised, with what came before)."""
    return replay_traced(Reassembler("openai-chat", **options), lambda r: (r.feed(event) for event in events))


def whole(index: Any, id: Any, name: Any, args: Any) -> dict[str, Any]:
    return chunk(tc(index, id, name, args))


# Whole-call chunks where the general routing has something to decide, and chunks that look like one.
EDGES: dict[str, list[dict[str, Any]]] = {
    "plain": [whole(0, "a", "f", '{"x": 1}'), whole(1, "b", "g", "{}"), chunk(finish="tool_calls")],
    "same index twice": [whole(0, "a", "f", '{"x": 1}'), whole(0, "b", "f", '{"x": 2}'), chunk(finish="tool_calls")],
    "same index, same text": [whole(0, "a", "f", "{}"), whole(0, "a", "f", "{}"), chunk(finish="tool_calls")],
    "id seen at another index": [whole(0, "a", "f", "{}"), whole(1, "a", "f", '{"y": 2}'), chunk(finish="stop")],
    "streamed first, whole after": [
        chunk(tc(0, "a", "f", "")),
        chunk(tc(0, args='{"x"')),
        chunk(tc(0, args=": 1}")),
        whole(1, "b", "f", '{"x": 2}'),
        chunk(finish="tool_calls"),
    ],
    "whole, then its continuation": [whole(0, "a", "f", '{"x"'), chunk(tc(0, args=": 1}")), chunk(finish="tool_calls")],
    "a name held for the next call": [
        whole(0, "a", "f", "{}"),
        chunk(tc(0, name="f")),
        whole(1, "b", "g", "{}"),
        chunk(tc(0, args='{"z": 3}')),
        chunk(finish="tool_calls"),
    ],
    "whitespace only": [whole(0, "a", "f", "  \n"), chunk(finish="tool_calls")],
    "two values in one text": [whole(0, "a", "f", '{"a": 1} {"b": 2}'), chunk(finish="tool_calls")],
    "value closed, whitespace after": [whole(0, "a", "f", '{"a": 1}  '), chunk(finish="tool_calls")],
    "not JSON": [whole(0, "a", "f", '{"a": '), chunk(finish="tool_calls")],
    "a cut": [whole(0, "a", "f", '{"a": "b'), chunk(finish="length")],
    "no finish": [whole(0, "a", "f", '{"a": 1}')],
    "empty id": [whole(0, "", "f", "{}"), chunk(finish="tool_calls")],
    "empty name": [whole(0, "a", "", "{}"), chunk(finish="tool_calls")],
    "numeric id": [whole(0, 7, "f", "{}"), chunk(finish="tool_calls")],
    "no index": [chunk(tc(id="a", name="f", args="{}")), chunk(finish="tool_calls")],
    "bool index": [whole(True, "a", "f", "{}"), chunk(finish="tool_calls")],
    "string index": [whole("0", "a", "f", "{}"), chunk(finish="tool_calls")],
    "after the finish": [chunk(finish="tool_calls"), whole(0, "a", "f", "{}")],
    "content beside": [
        {"choices": [{"index": 0, "delta": {"content": "hi", "tool_calls": [tc(0, "a", "f", "{}")]}}]},
        chunk(finish="tool_calls"),
    ],
    "usage beside": [{**whole(0, "a", "f", "{}"), "usage": {"total_tokens": 3}}, chunk(finish="tool_calls")],
    "second choice": [
        {"choices": [{"index": 1, "delta": {"tool_calls": [tc(0, "a", "f", "{}")]}}]},
        chunk(finish="tool_calls"),
    ],
    "finish beside": [chunk(tc(0, "a", "f", "{}"), finish="stop")],
    "custom tool": [chunk({"index": 0, "id": "a", "custom": {"name": "f", "input": "x"}}), chunk(finish="tool_calls")],
    "two entries": [chunk(tc(0, "a", "f", "{}"), tc(1, "b", "g", "{}")), chunk(finish="tool_calls")],
    "lone surrogate": [whole(0, "a", "f", '{"s": "\ud83d"}'), chunk(finish="tool_calls")],
    "duplicate key": [whole(0, "a", "f", '{"k": 1, "k": 2}'), chunk(finish="tool_calls")],
    "NaN": [whole(0, "a", "f", '{"k": NaN}'), chunk(finish="tool_calls")],
    "many calls": [whole(k, f"c{k}", "get", json.dumps({"i": k})) for k in range(40)] + [chunk(finish="tool_calls")],
}
OPTIONS: list[dict[str, Any]] = [{}, {"strict": True}, {"limits": Limits(max_calls=1)}, {"taken": ["a"]}]


def _decides_alike(
    monkeypatch: pytest.MonkeyPatch, shortcut: str, edges: dict[str, list[dict[str, Any]]], *, at_least: int
) -> None:
    """Every vector, 300 fuzzed OpenAI streams and ``edges`` in every option set replay alike
    (transitions in order, outputs, calls, rule counts) with and without the OpenAI shortcut
    ``shortcut`` (a reader of fsm.wire.decoders.chat_chunks), which the streams take at least
    ``at_least`` times."""
    from fsm.wire.decoders import chat_chunks

    vectors = [*VECTORS, *sample_vectors("openai-chat", 300)]
    deltas = [chat_chunks.plain_delta(e) or {} for v in vectors for e in v.events if type(e) is dict]
    entries = [found for delta in deltas if (found := chat_chunks.one_entry(delta)) is not None]
    assert sum(getattr(chat_chunks, shortcut)(*found) is not None for found in entries) > at_least
    streams = [(events, options) for events in edges.values() for options in OPTIONS]
    fast = [_replay_with_trace(v) for v in vectors] + [_trace(e, **o) for e, o in streams]
    without_reader(monkeypatch, shortcut)
    general = [_replay_with_trace(v) for v in vectors] + [_trace(e, **o) for e, o in streams]
    names = [v.name for v in vectors] + [f"{name} {options}" for name in edges for options in OPTIONS]
    for name, a, b in zip(names, fast, general, strict=True):
        assert a == b, name


def test_the_whole_call_shortcut_decides_as_the_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk holding one whole call (index, id, name and text) goes straight to the registry,
    which opens the call without the general routing when nothing else can own it. Without the
    shortcut every such chunk goes through the decoder and the routing: same transitions in order,
    outputs, calls, diagnostics and rule counts either way, over every vector, fuzzed streams and
    the edge cases above (lax, strict, at the call limit, with ids taken)."""
    _decides_alike(monkeypatch, "whole_call_in", EDGES, at_least=150)  # taken ~380 times


# Call headers (index, id and name, no text) where the general routing has something to decide.
HEADERS: dict[str, list[dict[str, Any]]] = {
    "streamed": [chunk(tc(0, "a", "f", "")), chunk(tc(0, args='{"x": 1}')), chunk(finish="tool_calls")],
    "no arguments key": [chunk({"index": 0, "id": "a", "function": {"name": "f"}}), chunk(finish="tool_calls")],
    "two headers, one index": [chunk(tc(0, "a", "f", "")), chunk(tc(0, "b", "g", "")), chunk(finish="tool_calls")],
    "the same header again": [chunk(tc(0, "a", "f", "")), chunk(tc(0, "a", "f", "")), chunk(finish="tool_calls")],
    "id seen at another index": [chunk(tc(0, "a", "f", "{}")), chunk(tc(1, "a", "f", "")), chunk(finish="stop")],
    "a name held for the next call": [
        whole(0, "a", "f", "{}"),
        chunk(tc(0, name="f")),
        chunk(tc(1, "b", "g", "")),
        chunk(finish="tool_calls"),
    ],
    "after a whole call at its index": [whole(0, "a", "f", "{}"), chunk(tc(0, "b", "g", "")), chunk(finish="stop")],
    "empty id": [chunk(tc(0, "", "f", "")), chunk(finish="tool_calls")],
    "empty name": [chunk(tc(0, "a", "", "")), chunk(finish="tool_calls")],
    "arguments not text": [chunk({"index": 0, "id": "a", "function": {"name": "f", "arguments": None}})],
    "arguments an object": [chunk({"index": 0, "id": "a", "function": {"name": "f", "arguments": {}}})],
    "after the finish": [chunk(finish="tool_calls"), chunk(tc(0, "a", "f", ""))],
    "content beside": [{"choices": [{"index": 0, "delta": {"content": "hi", "tool_calls": [tc(0, "a", "f", "")]}}]}],
    "many headers": [chunk(tc(k, f"c{k}", "get", "")) for k in range(40)] + [chunk(finish="tool_calls")],
}


def test_the_call_header_shortcut_decides_as_the_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk that opens a call (index, id and name, no text) goes straight to the registry,
    which opens the call without the general routing when nothing else can own it. Same
    transitions in order, outputs, calls, diagnostics and rule counts with and without the
    shortcut, over every vector, fuzzed streams and the edge cases above in every option set."""
    _decides_alike(monkeypatch, "header_in", HEADERS, at_least=40)  # taken 80 times or more


def test_whole_calls_open_one_call_each_at_their_index() -> None:
    r = Reassembler("openai-chat")
    for k in range(3):
        r.feed(whole(k, f"c{k}", "get", json.dumps({"i": k})))
    r.feed(chunk(finish="tool_calls"))
    result = r.close()
    assert [(c.id, c.name, c.arguments) for c in result.calls] == [(f"c{k}", "get", {"i": k}) for k in range(3)]
    assert result.diagnostics == ()


# -- the strict parse's quick first try --------------------------------------------------------------

PARSE_CASES = [
    '{"i": 0}',
    "{}",
    '{"a": [1, 2.5, {"b": null}], "c": {"d": true}}',
    '{"a": 1, "a": 2}',
    '{"a": {"b": 1, "b": 2}}',
    '{"t": "x:y", "u": "{"}',
    '{"t": "a\\":1"}',
    '{"x": 1e999}',
    '{"x": -1e999, "y": [1E400]}',
    '{"x": 1.5e308}',
    '{"x": NaN}',
    '{"x": -Infinity}',
    '{"x": ' + "9" * 5000 + "}",
    '{"x": 1} ',
    ' {"x": 1}',
    '{"x": 1} x',
    '{"x": }',
    "[1, 2]",
    '"s"',
    "12",
    '{"k": 1,}',
    '{"\\u0061": 1, "a": 2}',
    '{"a": 1, "b": {"c": [{"d": 1, "d": 1}]}}',
    '{"é": "ü", "é": 0}',
    '{"a": 1, "b": "x", "c": null, "d": false, "e": 2.5, "f": -0.0}',
    '{"a": 1.5, "b": -1e999}',
    '{"k": 1, "k": 1}',
    '{"a": {}}',
    '{"a": "["}',
    '{"a": 1}}',
    "{}}",
]


def _old_parse(text: str) -> tuple[Any, list[str]] | tuple[str, str]:
    """parse_strict's general path alone: the reference its quick try must agree with."""
    from fsm import jsontext

    try:
        return jsontext.parse_general(text)
    except ValueError as exc:
        return type(exc).__name__, str(exc)


def _new_parse(text: str) -> tuple[Any, list[str]] | tuple[str, str]:
    try:
        return parse_strict(text)
    except ValueError as exc:
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("text", PARSE_CASES)
def test_the_quick_strict_parse_agrees_with_the_general_one(text: str) -> None:
    quick, general = _new_parse(text), _old_parse(text)
    assert quick == general
    assert repr(quick) == repr(general)  # Decimal stays Decimal, int stays int, 1.0 stays a float


def test_the_quick_strict_parse_keeps_exact_numbers_and_reports_duplicates() -> None:
    assert parse_strict('{"x": 1e999}') == ({"x": Decimal("1e999")}, [])
    assert parse_strict('{"a": 1, "a": 2, "b": {"a": 3, "a": 4}}') == ({"a": 2, "b": {"a": 4}}, ["a", "a"])
    with pytest.raises(ValueError, match="NaN is not JSON"):
        parse_strict('{"x": NaN}')


# -- closed calls share one finished scanner -----------------------------------------------------------


def test_calls_whose_value_closed_share_one_finished_scanner_and_it_never_moves() -> None:
    from fsm.events import ArgumentsSnapshot, CallRef

    r = Reassembler("openai-chat")
    r.feed(whole(0, "a", "f", '{"x": 1}'))
    r.feed(whole(1, "b", "g", '{"y": [1, {"z": 2}]}'))
    r.feed(chunk(tc(2, "c", "h", '{"open": ')))
    registry = r.registry
    shared = registry._scanned
    first, second, third = registry.slots
    assert first.scanner is shared and second.scanner is shared
    assert third.scanner is not shared  # still open: its own scan goes on
    r.feed(chunk(tc(0, args="  \n")))  # whitespace after a closed value is scanned by the shared one
    r.feed(ArgumentsSnapshot(CallRef(1, "b", "g"), '{"y": 3'))  # a replaced value scans afresh
    assert second.scanner is not shared and not second.scanner.complete
    r.feed(chunk(tc(2, args="true}")))
    assert third.scanner is shared
    assert (shared.state, shared.depth) == ("done", 0)
    r.feed(chunk(finish="tool_calls"))
    result = r.close()
    assert [(c.id, c.status.value, c.arguments) for c in result.calls] == [
        ("a", "complete", {"x": 1}),
        ("b", "invalid", None),
        ("c", "complete", {"open": True}),
    ]
    assert first.text() == '{"x": 1}  \n'


PLAIN_STREAMS = [
    "openai-a-b-b",
    "openai-parallel-one-event",
    "openai-fragments-one-slot",
    "openai-identical-resend",
    "gemini-a-b-b",
    "gemini-identical-resend",
    "ollama-whole-calls",
    "bedrock-converse-stream",
    "cohere-tool-calls",
    "responses-deltas-then-done",
    "responses-no-deltas",
    "responses-parallel-by-output-index",
]


@pytest.mark.parametrize("name", PLAIN_STREAMS)
def test_plain_calls_keep_the_rarely_written_fields_as_class_defaults(name: str) -> None:
    """A slot's rarely written fields live in a __dict__ made by the first write (issue 17: state
    per call). The streams every provider sends in the common case, resends and several calls to
    one lane included, write none of them: a hot path that starts writing one costs every call a
    dict, and fails here."""
    from fsm.harness import conformance

    vector = next(v for v in VECTORS if v.name == name)
    _, reassembler = conformance.replay(vector)
    slots = reassembler.registry.slots
    assert slots
    for slot in slots:
        written = dict(vars(slot))
        if name.startswith("responses-"):
            # A Responses call keeps its item id: fsm.messages pairs the call with its reasoning by it.
            assert set(written.pop("item", {})) <= {"type", "id"}, (name, slot.id)
        assert not written, (name, slot.id, written)  # the fields this call wrote apart


def _all_shapes_alike(
    monkeypatch: pytest.MonkeyPatch,
    module: Any,
    name: str,
    off: Any,
    edges: dict[str, list[dict[str, Any]]],
    *,
    taken: Callable[[Any], int],
    at_least: int,
) -> None:
    """Every vector, fuzzed streams of every shape and ``edges`` in every option set replay alike
    (transitions in order, outputs, calls, diagnostics, rule counts) with ``module.name`` as it is
    and replaced by ``off``; as it is, ``taken`` (of each value it returns) adds up past ``at_least``."""
    from fsm.harness.fuzz.shapes import CASES

    vectors = [*VECTORS, *(v for shape in CASES for v in sample_vectors(shape, 60))]
    streams = [(events, options) for events in edges.values() for options in OPTIONS]
    count = 0
    real = getattr(module, name)

    def counted(*args: Any) -> Any:
        nonlocal count
        found = real(*args)
        count += taken(found)
        return found

    monkeypatch.setattr(module, name, counted)
    on = [_replay_with_trace(v) for v in vectors] + [_trace(e, **o) for e, o in streams]
    assert count > at_least
    monkeypatch.setattr(module, name, off)
    without = [_replay_with_trace(v) for v in vectors] + [_trace(e, **o) for e, o in streams]
    names = [v.name for v in vectors] + [f"{name} {options}" for name in edges for options in OPTIONS]
    for label, a, b in zip(names, on, without, strict=True):
        assert a == b, label


def test_a_first_text_that_is_a_flat_object_skips_its_scan_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call whose first text, a fragment, is a whole flat object takes the closed scanner without
    scanning it (jsontext.is_flat_object; a snapshot's is _whole_object's, below). Without that,
    over every vector, fuzzed streams of every shape and the whole-call edge cases in every option
    set: the same transitions in order, outputs, calls, diagnostics and rule counts."""
    from fsm.engine import slot

    _all_shapes_alike(monkeypatch, slot, "is_flat_object", lambda text: False, EDGES, taken=int, at_least=50)


def test_a_snapshot_that_is_a_whole_object_skips_its_scan_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """A snapshot that is one whole object within the depth limit, nested or not, takes the closed
    scanner without scanning it, and its call's end takes the parse that found it so
    (slot._whole_object). Without that, over every vector, fuzzed streams of every shape and the
    whole-call edge cases in every option set: the same transitions in order, outputs, calls,
    diagnostics and rule counts."""
    from fsm.engine import slot

    def found(parsed: object) -> int:
        return parsed is not None

    _all_shapes_alike(monkeypatch, slot, "_whole_object", lambda text, depth: None, EDGES, taken=found, at_least=50)


# Replays formatted anew (registry._replays): escapes, spacing, key spelling, numbers and literals.
REPLAYS: dict[str, list[dict[str, Any]]] = {
    name: [whole(0, None, "f", first), whole(0, None, "f", again), chunk(finish="tool_calls")]
    for name, first, again in [
        ("spaced", '{"a":1,"b":"x"}', '{"a": 1, "b": "x"}'),
        ("escaped letter", '{"key": "A"}', '{"k\\u0065y": "\\u0041"}'),
        ("escaped backslash then u", '{"k": "\\\\u0041"}', '{"k": "\\u005cu0041"}'),
        ("escaped non-ASCII", '{"k": "café 🙂"}', '{"k": "caf\\u00e9 \\ud83d\\ude42"}'),
        ("exponent", '{"n": 100000.0}', '{"n": 1e5}'),
        ("float and int", '{"n": 1.0}', '{"n": 1}'),
        ("true and one", '{"n": true}', '{"n": 1}'),
        ("other letters", '{"q": "A"}', '{"q": "B"}'),
        ("newline escape and n", '{"q": "a\\nb"}', '{"q": "anb"}'),
        ("an object", '{"q": "A"}', {"q": "A"}),
    ]
}


def test_the_replay_prefilter_decides_as_the_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before it parses, the check for a replay formatted anew compares the letters the two texts
    spell (registry._letters): only a necessary condition, so it must never turn away a replay the
    parse and canonical forms would take. Without it, over every vector, fuzzed streams of every
    shape and the replays above in every option set: the same transitions, outputs, calls,
    diagnostics and rule counts, the filter having run over a hundred times."""
    from fsm.engine import registry

    _all_shapes_alike(monkeypatch, registry, "_letters", lambda text: b"", REPLAYS, taken=lambda _: 1, at_least=100)


ONE_CALL = {"spaced", "escaped letter", "escaped backslash then u", "escaped non-ASCII", "exponent", "an object"}


@pytest.mark.parametrize("name", list(REPLAYS))
def test_a_replay_formatted_anew_is_one_call_and_another_value_is_two(name: str) -> None:
    r = Reassembler("openai-chat")
    for event in REPLAYS[name]:
        r.feed(event)
    assert len(r.close().calls) == (1 if name in ONE_CALL else 2)


def _late_metadata_streams() -> list[tuple[str, str, str | None, list[Any], dict[str, Any], int | None]]:
    """Every vector, fuzzed streams of every shape, and calls said more of after the finish."""
    from fsm.harness.fuzz.shapes import CASES

    vectors = [*VECTORS, *(v for shape in CASES for v in sample_vectors(shape, 40))]
    streams = [(v.name, v.shape, v.body, v.events, v.policies, getattr(v, "choice", None)) for v in vectors]
    signed = {"index": 0, "id": "a", "function": {"name": "f"}, "extra_content": {"google": {"thought_signature": "s"}}}
    late = {  # a call ended by the finish, then said more of (event-after-finish)
        "late signature": [whole(0, "a", "f", "{}"), chunk(finish="tool_calls"), chunk(signed)],
        "late id": [chunk(tc(0, name="f", args="{}")), chunk(finish="tool_calls"), chunk(tc(0, id="b"))],
        "late name": [chunk(tc(0, id="a", args="{}")), chunk(finish="tool_calls"), chunk(tc(0, id="a", name="g"))],
    }
    return streams + [(name, "openai-chat", None, events, {}, None) for name, events in late.items()]


def _read(shape: str, body: str | None, events: list[Any], policies: dict[str, Any], choice: int | None) -> Any:
    """The stream's result, outputs and reassembler (None when it raised)."""
    from fsm import Policies

    r = Reassembler(shape, policies=Policies(**policies), choice=choice)
    outputs: list[Any] = []
    try:
        if body is not None:
            outputs += r.feed_bytes(body.encode("utf-8"))
        for event in events:
            outputs += r.feed(event)
        result = r.close()
    except Exception:  # a stream that raises has no result to hold its calls
        return None
    return result, outputs + r.drain(), r


def test_a_call_made_at_its_end_is_what_its_slot_makes_at_the_close(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registry._ended (in line) and Slot.to_call make the call of a slot that wrote none of its
    rarely written fields with their class defaults (Slot.reread), and to_call reuses a call made
    until a late name, id, signature or item drops it (close() reads every call again). Over
    every vector, fuzzed streams of every shape and late metadata: the same results and outputs
    as a stream whose every call is made from every field (by to_call, at its end too); each call
    as the result holds it is what its slot makes anew at the close (but its place among the
    outputs, the ledger's at its end); and some streams do change a call after its end (its
    CallFinished told another one)."""
    import attrs

    from fsm.engine.registry import Registry
    from fsm.engine.slot import Slot
    from fsm.results import CallFinished

    streams = _late_metadata_streams()
    plain = [_read(*stream[1:]) for stream in streams]
    real = Slot.to_call

    def from_every_field(slot: Slot) -> Any:
        if slot._call is None:
            slot.reread()
        return real(slot)

    def ended_from_every_field(registry: Registry, slot: Slot) -> None:
        if slot._call is None:  # Registry._ended makes such a call in line: to_call makes it here
            slot.reread()
        ended(registry, slot)

    ended = Registry._ended
    monkeypatch.setattr(Slot, "to_call", from_every_field)
    monkeypatch.setattr(Registry, "_ended", ended_from_every_field)
    full = [_read(*stream[1:]) for stream in streams]
    monkeypatch.setattr(Slot, "to_call", real)
    monkeypatch.setattr(Registry, "_ended", ended)
    changed = 0
    for (name, *_), read, reference in zip(streams, plain, full, strict=True):
        assert (read is None) == (reference is None), name
        if read is None:
            continue
        result, outputs, r = read
        assert (result, outputs) == reference[:2], name
        told = {o.call.id: o.call for o in outputs if type(o) is CallFinished}  # (ids are unique in a turn)
        held = {call.id: call for call in (*result.calls, *result.server_tool_calls)}
        for slot in r.registry.slots:
            if slot.status is None:
                continue
            kept = slot._call
            slot.reread()  # made anew from every field it reads
            fresh = attrs.evolve(slot.to_call(), output_index=kept.output_index)
            assert kept == fresh, (name, slot.id)
            if slot.id in held:
                assert held[slot.id] == fresh, (name, slot.id)
            changed += slot.id in told and told[slot.id] != fresh
    assert changed > 0


def test_an_item_put_on_a_finished_plain_call_is_in_its_call() -> None:
    """Registry.seen_on puts an item on a call the text of its part decided (Gemini's code and
    tool parts), ended or not: a plain call (none of its rarely written fields written, made
    with their class defaults) made before then is made anew with the item."""
    from fsm.events import build_call_ref

    r = Reassembler("openai-chat")
    r.feed(whole(0, "a", "f", '{"x": 1}'))
    r.feed(chunk(finish="tool_calls"))
    slot = r.registry.slots[0]
    assert slot.to_call().item is None
    item = {"type": "tool_call", "id": "t1"}
    r.registry.seen_on(slot, build_call_ref(0, "a", "f", 0), item)
    assert slot.to_call().item is item and r.close().calls[0].item is item


def _slot_fields(slot: Any) -> dict[str, Any]:
    from fsm.engine.slot import Slot

    fields = {name: getattr(slot, name, "<unset>") for name in Slot.__slots__ if name != "__dict__"}
    return {**fields, "__class__": type(slot), "__dict__": dict(vars(slot))}


def test_the_commonest_call_opens_as_its_slot_class_makes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registry._open_new fills in a bare Slot itself (no Slot.__init__, whose call through the
    class costs more than the assignments): each call it opens, as it opens it, holds every field
    and nothing else that Slot(...) makes of the same arguments, over every OpenAI chat vector,
    the whole-call and header edge cases and fuzzed streams; and a stream of whole calls opens
    them without running Slot.__init__ (counted by a tracer)."""
    import sys

    from fsm.engine.registry import Registry
    from fsm.engine.slot import Slot

    real, seen = Registry._open_new, []

    def checked(self: Registry, index: int, wire_id: str, name: str, whole: bool = False) -> Slot:
        used = wire_id in self._ids._used
        slot = real(self, index, wire_id, name, whole)
        if whole:  # its state and text fields left to store_whole: as they are when it refuses
            self._no_text(slot)
        made = Slot(slot.ordinal, index, index, wire_id, slot.id, name, self.ledger, self._start, self._initial_json)
        assert _slot_fields(slot) == _slot_fields(made), (index, wire_id, name, used)
        seen.append(used)
        return slot

    monkeypatch.setattr(Registry, "_open_new", checked)
    vectors = [*VECTORS, *sample_vectors("openai-chat", 60)]
    for vector in vectors:
        _replay_with_trace(vector)
    for events in (*EDGES.values(), *HEADERS.values()):
        for options in ({}, {"strict": True}, {"taken": ["a", "c0"]}):
            _trace(events, **options)
    assert len(seen) > 100 and any(seen)  # and an id taken before: claimed anew
    monkeypatch.setattr(Registry, "_open_new", real)
    if sys.gettrace() is not None:
        pytest.skip("a coverage tracer is set: the count of Slot.__init__ calls is read by one")
    inits = []

    def tracer(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is Slot.__init__.__code__:
            inits.append(frame)

    r = Reassembler("openai-chat")
    sys.settrace(tracer)
    try:
        for k in range(5):
            r.feed(whole(k, f"c{k}", "get", f'{{"i": {k}}}'))
        r.feed(chunk(finish="tool_calls"))
        result = r.close()
    finally:
        sys.settrace(None)
    assert len(result.calls) == 5 and not inits


def _mistral(entry: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """A chunk as Mistral's OpenAI endpoint sends it: the delta's own index and empty content beside the entry."""
    delta = {"tool_calls": [entry], "index": 0, "content": ""}
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


# Fragments that name no call with an empty id or name (which CallRef reads as none), and their neighbours.
EMPTY_NAMED: dict[str, list[dict[str, Any]]] = {
    "mistral": [
        _mistral({"id": "t1", "type": "function", "function": {"name": "web", "arguments": ""}, "index": 0}),
        _mistral({"type": "function", "function": {"name": "", "arguments": '{"query": "Berlin"}'}, "index": 0}),
        chunk(finish="tool_calls"),
    ],
    "empty id and name, streamed": [
        chunk(tc(0, "a", "f", "")),
        chunk(tc(0, "", "", '{"x": ')),
        chunk(tc(0, "", "", "1}")),
        chunk(finish="tool_calls"),
    ],
    "empty name, no call open": [chunk(tc(0, name="", args="{}")), chunk(finish="tool_calls")],
    "empty name after a closed value": [
        whole(0, "a", "f", "{}"),
        chunk(tc(0, name="", args="{}")),
        chunk(finish="stop"),
    ],
    "empty id, a name": [chunk(tc(0, "a", "f", "")), chunk(tc(0, "", "f", "{}")), chunk(finish="tool_calls")],
    "empty name, an id": [chunk(tc(0, "a", "f", "")), chunk(tc(0, "a", "", "{}")), chunk(finish="tool_calls")],
    "a name of zero": [chunk(tc(0, "a", "f", "")), chunk(tc(0, name=0, args="{}")), chunk(finish="tool_calls")],
    "an id of zero": [chunk(tc(0, "a", "f", "")), chunk(tc(0, 0, "", "{}")), chunk(finish="tool_calls")],
    "empty name, empty text": [chunk(tc(0, "a", "f", "")), chunk(tc(0, "", "", "")), chunk(finish="tool_calls")],
    "empty name, whitespace": [chunk(tc(0, "a", "f", "")), chunk(tc(0, name="", args=" ")), chunk(finish="stop")],
}


def test_a_fragment_with_an_empty_id_or_name_decides_as_the_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fragment whose id or name is "" (Mistral's after the call's header) is a bare fragment, as
    the decoder's CallRef reads it, and the shortcut takes it as one: the same transitions in
    order, outputs, calls, diagnostics and rule counts with and without the bare-fragment reader,
    over every vector, fuzzed streams and the edges above in every option set."""
    from fsm.wire.decoders.openai_chat import OpenAIChatDecoder

    taken: list[int] = []
    real = OpenAIChatDecoder.shortcut

    def counted(decoder: Any, payload: Any, registry: Any, content: Any) -> bool:
        entry = (payload.get("choices") or [{}])[0].get("delta", {}).get("tool_calls", [{}])[0]
        took = real(decoder, payload, registry, content)
        taken.append(took and entry.get("function", {}).get("name") == "" and "id" not in entry)
        return took

    with monkeypatch.context() as m:
        m.setattr(OpenAIChatDecoder, "shortcut", counted)
        for events in EMPTY_NAMED.values():
            _trace(events)
    assert sum(taken) >= 4  # the empty-named fragments are the shortcut's now
    _decides_alike(monkeypatch, "bare_fragment_in", EMPTY_NAMED, at_least=150)


def test_a_first_text_that_closes_flat_ends_in_the_shared_scanner_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call's first text that is one whole flat object as the scanner reads it (closes_flat's
    match), a whole call's (Slot.store_whole) or a fragment after the call's header
    (Slot.store_first: ``{}`` after Groq's, pydantic-ai's and Mistral's headers), takes the closed
    scanner without a scanner made and fed. Without the match (every such text scanned), over every
    vector, fuzzed streams of every shape and the edges in every option set: the same transitions
    in order, outputs, calls, diagnostics and rule counts."""
    from fsm.engine import slot

    r = Reassembler("openai-chat")
    for event in [*EMPTY_NAMED["mistral"][:2], chunk(tc(1, "b", "g", "")), chunk(tc(1, args='{"a" 1}'))]:
        r.feed(event)
    # Both closed, the second though it is not JSON (the parse at the end tells): one shared scanner.
    assert all(each.scanner is r.registry._scanned for each in r.registry.slots)
    edges = {**EDGES, **HEADERS, **EMPTY_NAMED}
    edges["not JSON, flat"] = [chunk(tc(0, "a", "f", "")), chunk(tc(0, args='{"a" 1}')), chunk(finish="stop")]
    edges["flat, space after"] = [chunk(tc(0, "a", "f", "")), chunk(tc(0, args='{"a": 1} ')), chunk(finish="stop")]
    edges["flat, more after"] = [chunk(tc(0, "a", "f", "")), chunk(tc(0, args='{"a": 1}{}')), chunk(finish="stop")]
    taken = lambda found: found is not None  # noqa: E731
    _all_shapes_alike(monkeypatch, slot, "flat_match", lambda text: None, edges, taken=taken, at_least=50)


def test_a_delta_of_no_key_chat_said_reads_decodes_as_chat_said_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The decoder skips chat_said for a dict delta that holds none of the keys it reads (a call's
    delta, with ``role`` or not: Gemini's OpenAI endpoint's whole call beside its finish): the same
    events, diagnostics and errors with chat_said asked of every delta, over the vectors' and fuzzed
    streams' chunks, the edges above and their deltas with each key chat_said reads added."""
    from fsm.wire.decoders import openai_chat
    from fsm.wire.decoders._wire import SAID_KEYS

    class _Never:  # a set of keys no delta is disjoint from: chat_said asked every time
        def isdisjoint(self, other: Any) -> bool:
            return False

    chunks = [e for v in [*VECTORS, *sample_vectors("openai-chat", 300)] for e in v.events if type(e) is dict]
    chunks += [e for edges in (EDGES, HEADERS, EMPTY_NAMED) for events in edges.values() for e in events]
    called = [c for c in chunks if "tool_calls" in str(c)][:300]
    for key in SAID_KEYS:
        for value in (None, "", "x", [], {}, 0):
            for c in called[:20]:
                delta = c.get("choices", [{}])[0].get("delta") if type(c.get("choices")) is list else None
                if type(delta) is dict:
                    chunks.append({**c, "choices": [{**c["choices"][0], "delta": {**delta, key: value}}]})

    def decoded() -> list[Any]:
        out: list[Any] = []
        for c in chunks:
            said: list[tuple[str, str]] = []
            try:
                events = openai_chat.OpenAIChatDecoder().decode(
                    c, lambda code, why, said=said: said.append((code, why))
                )
            except Exception as exc:  # the same error either way is the same decision
                out.append(("raised", type(exc).__name__, str(exc), said))
                continue
            out.append((events, said))
        return out

    skipped = decoded()
    monkeypatch.setattr(openai_chat, "SAID_KEY_SET", _Never())
    asked = decoded()
    assert len(chunks) > 2000
    for chunk_, a, b in zip(chunks, skipped, asked, strict=True):
        assert a == b, chunk_


def test_exact_finish_and_usage_events_are_applied_as_the_isinstance_tests_apply_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reassembler._apply takes a StreamEnd and a UsageReport of exactly their class before the
    isinstance tests: the same outputs, result and rule counts as those tests give (a StreamEnd
    subclass goes through them; the reassembler's own name for UsageReport taken away, so does usage)."""
    from fsm import reassembler
    from fsm.events import StreamEnd, UsageReport, build_arguments_fragment, build_call_ref

    class End(StreamEnd):
        pass

    def replay(end: type[StreamEnd]) -> tuple[Any, ...]:
        r = Reassembler("openai-chat")
        out = r.feed(build_arguments_fragment(build_call_ref(0, "a", "f"), '{"x": 1}'))
        out += r.feed(UsageReport({"total_tokens": 3}))
        out += r.feed(end("tool_calls", "tool_calls"))
        out += r.feed(end("stop", "stop"))  # a second finish: reported
        result = r.close()
        return out, result.calls, result.usage, result.finish_reason, result.diagnostics, dict(r.ledger.rules)

    exact = replay(StreamEnd)
    assert exact[2] == {"total_tokens": 3} and exact[4]  # the usage kept, the second finish reported
    assert exact == replay(End)
    monkeypatch.setattr(reassembler, "UsageReport", type("NoUsage", (), {}))  # usage by TURN_CONTENT_TYPES
    assert exact == replay(End)
