"""The compiled scanner must behave exactly as its spec (specs/scanner.toml) reads."""

from __future__ import annotations

import json
import random
from unittest import mock

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fsm.engine.ledger import Ledger
from fsm.engine.machine import slot_machine
from fsm.engine.scan_reference import spec_steps
from fsm.engine.scanner import Scanner, closes_flat, start_scanner
from fsm.engine.slot import Slot, _whole_object
from fsm.errors import LimitExceeded
from fsm.jsontext import is_flat_object, parse_strict
from fsm.options import Policies
from fsm.spec import scanner_spec


def reference(text: str) -> tuple[str, int | None]:
    """The spec's own table, stepped one character at a time: no compilation, no skipping."""
    terminal = {s.name for s in scanner_spec().states if s.terminal}
    state = scanner_spec().machine.initial
    for offset, _, state in spec_steps(text):
        if state in terminal:
            return state, offset + 1  # where the value closed
    return state, None


def compiled(parts: list[str]) -> tuple[str, int | None]:
    scanner, consumed = Scanner(), 0
    for part in parts:
        end = scanner.feed(part)
        if end is not None:
            return scanner.state, consumed + end
        consumed += len(part)
    return scanner.state, None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)
json_ish = st.text(alphabet='{}[]"\\ :,ab1\n', max_size=40)


@given(json_ish, st.lists(st.integers(min_value=0, max_value=40), max_size=6))
def test_compiled_scanner_agrees_with_the_spec_table(text: str, cuts: list[int]) -> None:
    points = sorted({min(c, len(text)) for c in cuts})
    parts = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    assert compiled(parts) == reference(text)


@given(json_values.filter(lambda v: isinstance(v, dict | list)), st.integers(min_value=1, max_value=7))
def test_every_json_container_completes_exactly_at_its_end(value: object, step: int) -> None:
    text = json.dumps(value, ensure_ascii=False)
    parts = [text[i : i + step] for i in range(0, len(text), step)]
    assert compiled([*parts, "  "]) == ("done", len(text))


def test_brackets_and_quotes_inside_strings_do_not_count() -> None:
    assert compiled(['{"a": "}]\\"{"', "}"]) == ("done", 14)


def test_top_level_scalars_never_complete() -> None:
    assert compiled(["123", " true"]) == ("scalar", None)


def test_only_brackets_are_pivotal() -> None:
    """Derived from the spec table: only characters that push, pop or close can't wait."""
    scanner = Scanner()
    assert scanner.may_wait('"caf\u00e9 \\" : , 12 true')
    for ch in "{}[]":
        assert not scanner.may_wait(f'"x{ch}')
    scanner.feed("{}")
    assert not scanner.may_wait(" ")  # a complete value is never left waiting


def slot_for_scan_tests(max_depth: int = 256) -> Slot:
    ledger = Ledger(Policies(), strict=False)
    return Slot(
        ordinal=0,
        lane=("index", 0),
        index=0,
        wire_id=None,
        call_id="c",
        name="f",
        ledger=ledger,
        scanner=start_scanner(max_depth),
        initial="opened",
    )


# Mostly string content, so that many fragments have no bracket and their scan waits.
# Multibyte characters too, caught up in pieces as small as a byte.
stringy = st.lists(
    st.sampled_from([*'ab :,1"\\', *"ab :,1\u00e9\U0001f642", '"', '"', "{", "}", "[", "]"]), max_size=40
).map("".join)


@given(stringy, st.lists(st.integers(min_value=0, max_value=41), max_size=8), st.sampled_from([1, 2, 3, 16384]))
def test_a_slot_whose_scans_wait_completes_and_splits_where_the_spec_says(
    text: str, cuts: list[int], piece: int
) -> None:
    text = "{" + text  # an object, so that quotes, brackets and escapes all matter
    points = sorted({min(c, len(text)) for c in cuts})
    parts = [p for p in (text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)) if p]
    slot, machine, consumed = slot_for_scan_tests(), slot_machine(), 0
    state, closed_at = reference(text)
    with mock.patch("fsm.engine.slot._CATCH_UP_BYTES", piece):
        for part in parts:
            rest = machine.fire(slot, "append", part)
            consumed += len(part) - len(rest)
            if slot.state == "value_closed":
                break
    if closed_at is None:
        assert slot.state != "value_closed"
        assert slot.between_tokens() == (state == "value")
    else:
        assert slot.state == "value_closed"
        # Stored up to the close and any whitespace after it; the rest went back to the registry.
        assert consumed >= closed_at
        assert not text[closed_at:consumed].strip()


def test_a_waiting_scan_is_caught_up_before_a_bracket_is_read() -> None:
    slot, machine = slot_for_scan_tests(), slot_machine()
    assert machine.fire(slot, "append", '{"a": ') == ""
    assert machine.fire(slot, "append", '"x') == ""  # no bracket: its scan waits
    assert machine.fire(slot, "append", '}"}') == ""  # so this } is inside the string
    assert slot.state == "value_closed"
    assert slot.text() == '{"a": "x}"}'


def test_catching_up_in_small_pieces_keeps_characters_whole() -> None:
    """The waiting text is decoded from the held bytes a piece at a time; a piece never ends
    inside a character, and an escape split across pieces still escapes."""
    with mock.patch("fsm.engine.slot._CATCH_UP_BYTES", 3):
        slot, machine = slot_for_scan_tests(), slot_machine()
        for part in ['{"a": ', '"\u00e9\u6771\U0001f642 \\', '" still a string', " x", '"', "}"]:
            assert machine.fire(slot, "append", part) == ""
        assert slot.state == "value_closed"
        assert slot.text() == '{"a": "\u00e9\u6771\U0001f642 \\" still a string x"}'


def test_a_too_deep_value_is_refused_at_the_fragment_that_opens_the_level() -> None:
    slot, machine = slot_for_scan_tests(max_depth=2), slot_machine()
    machine.fire(slot, "append", '{"a": ')
    machine.fire(slot, "append", '"long string, its scan waits"')
    machine.fire(slot, "append", ', "b": [')
    with pytest.raises(LimitExceeded, match="deeper than 2"):
        machine.fire(slot, "append", "[")


def test_the_bracket_bounds_are_read_from_the_spec() -> None:
    """Brackets can wait only because the spec says pushes, pops and the outermost close are
    all the scanner does; a spec where another character acts, or the value closes some other
    way, leaves every bracket to be scanned at once."""
    import attrs

    from fsm.engine.scanner import CompiledScanner

    spec = scanner_spec()
    assert CompiledScanner(spec).brackets == ("[{", "]}")

    def changed(trigger: str, **change: object) -> object:
        transitions = tuple(
            attrs.evolve(t, **change) if t.source == ("value",) and t.trigger == trigger and not t.guards else t
            for t in spec.transitions
        )
        return CompiledScanner(attrs.evolve(spec, transitions=transitions)).brackets

    assert changed("quote", action="push") == ('"[{', "]}")  # a quote that nests is counted with them
    assert changed("quote", guards=("outermost",)) is None  # a guard that is not the outermost pop
    assert changed("close", dest="done") is None  # a close at any depth ends the value


def test_defer_counts_the_brackets_of_any_spec_alike() -> None:
    """Scanner.may_wait looks for JSON's two pushing and two popping characters, and Scanner.defer
    counts them, one by one; any other spec's (here one where a quote nests too) by a regex and a
    map: either way, every bracket of the text, so the same decision and the same counts waiting
    as looking at each character of the text."""
    import attrs

    from fsm.engine.scanner import CompiledScanner

    spec = scanner_spec()
    quoted = tuple(
        attrs.evolve(t, action="push") if t.source == ("value",) and t.trigger == "quote" else t
        for t in spec.transitions
    )
    rng = random.Random(5)
    for variant in (spec, attrs.evolve(spec, transitions=quoted)):
        compiled = CompiledScanner(variant)
        assert (compiled.two_by_two is not None) == (variant is spec)
        pushing, popping = compiled.brackets  # type: ignore[misc]
        for _ in range(400):
            text = "".join(rng.choice('{}[]"a ') for _ in range(rng.randrange(12)))
            scanner = Scanner(max_depth=8)
            scanner._c, scanner.state, scanner.depth = compiled, "value", rng.randrange(1, 6)
            scanner._pushes_waiting, scanner._pops_waiting = waiting = (rng.randrange(3), rng.randrange(2))
            pushes = waiting[0] + sum(ch in pushing for ch in text)
            pops = waiting[1] + sum(ch in popping for ch in text)
            waits = pops < scanner.depth and scanner.depth + pushes <= 8
            if rng.random() < 0.5:
                assert scanner.defer(text) is waits
            else:  # may_wait: no pivotal character (in both specs, the brackets) waits without defer
                waits = waits or not any(ch in pushing + popping for ch in text)
                assert scanner.may_wait(text) is waits
                pushes, pops = (pushes, pops) if any(ch in pushing + popping for ch in text) else waiting
            assert (scanner._pushes_waiting, scanner._pops_waiting) == ((pushes, pops) if waits else waiting)


def _fire_all(parts: list[str], max_depth: int) -> list[object]:
    slot, machine, seen = slot_for_scan_tests(max_depth), slot_machine(), []
    for part in parts:
        try:
            seen.append((machine.fire(slot, "append", part), slot.state))
        except LimitExceeded as exc:
            seen.append(str(exc))
            break
        if slot.state == "value_closed":
            break
    seen.append((slot.between_tokens(), slot.scanner.depth, slot.scanner.state))
    return seen


@given(stringy, st.lists(st.integers(min_value=0, max_value=41), max_size=8), st.integers(min_value=1, max_value=4))
@example('aa{""{', [1, 5], 2)  # refused mid-scan: the scanner as before the refused text, however cut
def test_brackets_whose_scan_waits_give_what_scanning_each_fragment_gives(
    text: str, cuts: list[int], max_depth: int
) -> None:
    """Scanner.defer lets fragments with brackets wait while the brackets cannot close the value
    or pass the depth limit. Fragment by fragment, the same split, state and limit error (at the
    same fragment) as when every fragment with a bracket is scanned as it arrives."""
    text = "{" + text
    points = sorted({min(c, len(text)) for c in cuts})
    parts = [p for p in (text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)) if p]
    deferred = _fire_all(parts, max_depth)
    with mock.patch.object(Scanner, "defer", lambda self, text: False):
        assert _fire_all(parts, max_depth) == deferred
    # The waiting text is scanned together with the fragment that needs it; scanned apart (a
    # catch-up of its own, then the fragment), the same too.
    with mock.patch("fsm.engine.slot._CATCH_UP_BYTES", 0):
        assert _fire_all(parts, max_depth) == deferred


def test_fragments_with_brackets_wait_and_are_scanned_once() -> None:
    slot, machine = slot_for_scan_tests(), slot_machine()
    feeds: list[str] = []
    real = Scanner.feed

    def counted(scanner: Scanner, text: str, start: int = 0) -> int | None:
        feeds.append(text)
        return real(scanner, text, start)

    with mock.patch.object(Scanner, "feed", counted):
        for part in ['{"a": [', '{"b": 1}, ', '{"b": 2}', "], ", '"c": {"d": [1, [2]]', "}", "}"]:
            assert machine.fire(slot, "append", part) == ""
    assert slot.state == "value_closed"
    # Scanned: the opening fragment (at depth 0 any bracket may matter), then the text waiting
    # with each fragment whose pops, counted with those waiting, reach the depth last scanned.
    assert feeds == ['{"a": [', '{"b": 1}, {"b": 2}', '], "c": {"d": [1, [2]]', "}}"]


# Text near a flat object: keys, scalars, escapes, brackets and quotes inside strings, junk and
# constants the strict reading refuses, whitespace the C parser and the scanner must agree on.
_NEAR_FLAT = ['{"a": 1', '"k"', ":", ",", " ", "\t", "\x0c", "}", "{", "[", "]", '"}"', '"{"', '"\\u00e9"']
_NEAR_FLAT += ['"\\ud800"', "NaN", "-0.5e3", "01", "true", "null", '"x\\"y"', '"\x01"', "\U0001f642", "1.e5"]
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=6))
flat_ish = st.one_of(
    st.lists(st.sampled_from(_NEAR_FLAT), max_size=12).map("".join),
    st.dictionaries(st.text(max_size=4), _SCALARS, max_size=5).map(lambda d: json.dumps(d, ensure_ascii=False)),
)


@given(flat_ish)
def test_a_flat_object_is_what_a_fresh_scan_finds_closed_at_its_end(text: str) -> None:
    """jsontext.is_flat_object lets a call's first text skip its scan (issue 17): it may say yes
    only where a fresh scanner, fed the text, closes the value at its very last character."""
    if is_flat_object(text):
        assert Scanner().feed(text) == len(text), text


def test_a_flat_object_is_recognised() -> None:
    assert is_flat_object('{"i": 0}') and is_flat_object("{}") and is_flat_object('{"s": "}]"}')
    assert not is_flat_object('{"a": {}}') and not is_flat_object('{"a": 1} ') and not is_flat_object('{"a": NaN}')
    assert not is_flat_object('{"a": 1}{"b": 2}') and not is_flat_object('{"a": [1]}') and not is_flat_object("[]")


@given(st.one_of(flat_ish, st.text(alphabet='{}[]"\\ :,a1', max_size=12)))
@example('{"a": "}')
@example('{"a": "x"}}')
@example('{"a\\"": 1}')
@example(' {"a": 1}')
@settings(max_examples=400)
def test_closes_flat_reads_as_the_scanner(text: str) -> None:
    """scanner.closes_flat lets a whole call's first text skip its scan (Slot.store_whole): it
    says yes exactly where a fresh scanner, fed the text, closes the value at its very last
    character without going deeper than one level, on text with no backslash and no bracket
    but its first and last; it never says yes to other text (the scan decides those)."""
    scanner = Scanner()
    closed_at_end = scanner.feed(text) == len(text)
    # Its brackets first and last: the scanner skips whitespace before the value, closes_flat does not.
    plain = text[:1] == "{" and text.count("{") + text.count("}") == 2 and not any(c in text for c in "[]\\")
    assert closes_flat(text) == (closed_at_end and plain), text


def test_closes_flat_is_recognised() -> None:
    assert closes_flat('{"i": 0}') and closes_flat("{}") and closes_flat('{"q": }') and closes_flat('{"a": NaN}')
    assert not closes_flat('{"s": "}]"}') and not closes_flat('{"a": 1} ') and not closes_flat('{"a": "}')
    assert not closes_flat('{"a": 1}{"b": 2}') and not closes_flat('{"a": [1]}') and not closes_flat('{"e": "\\n"}')


_VALUES = st.recursive(
    _SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
)
whole_ish = st.one_of(
    st.lists(st.sampled_from([*_NEAR_FLAT, '{"b": {', "[{", "}]", "}}"]), max_size=16).map("".join),
    st.dictionaries(st.text(max_size=4), _VALUES, max_size=4).map(lambda d: json.dumps(d, ensure_ascii=False)),
    st.dictionaries(st.text(max_size=4), _VALUES, max_size=4).map(lambda d: json.dumps(d, separators=(",", ":"))),
)


@given(whole_ish)
@example('{"a": 1}}')
@example('{"a": {"b": 1}')
@example('{"a": "}"')
@example('{"a": [1}, "b": 2}')
@settings(max_examples=400)
def test_a_whole_object_is_what_a_fresh_scan_finds_closed_at_its_end(text: str) -> None:
    """slot._whole_object lets a snapshot skip its scan, and its end the parse (issue 17): it may
    give a value only where a fresh scanner, fed the text, closes the value at its very last
    character, and only the value and repeated keys the strict parse gives."""
    found = _whole_object(text, 64)
    if found is not None:
        assert Scanner().feed(text) == len(text), text
        assert found == parse_strict(text), text


def test_a_whole_object_is_recognised_nested_or_not() -> None:
    def whole(text: str, depth: int = 64) -> bool:
        return _whole_object(text, depth) is not None

    assert whole('{"a": {"b": [1, {"c": null}]}}') and whole('{"i": 0}')
    assert not whole('{"a": {}} ') and not whole('{"a": [NaN]}') and not whole("[{}]")
    assert not whole('{"a": {}}{"b": 2}') and not whole('{"a": {"b": 1}')
    assert not whole("{" + " " * (1 << 16) + "}")  # past the length it reads: unsure
    assert not whole('{"a": {"b": {}}}', 2) and whole('{"a": {"b": {}}}', 3)  # the depth limit, as the end's
    assert _whole_object('{"k": 1, "k": 2}', 64) == ({"k": 2}, ["k"])  # the repeated key, for the end to report


# -- the nesting check a closed scan makes needless ---------------------------------------------

_JSONISH = st.text(alphabet='{}[]"\\\n :,a1', max_size=40)


def _outcome(pieces: list[str], snapshot: bool, max_depth: int) -> object:
    from fsm import Limits, Reassembler
    from fsm.events import ArgumentsFragment, ArgumentsSnapshot, CallRef, CallSeen, StreamEnd

    r = Reassembler("gemini" if snapshot else "openai-chat", limits=Limits(max_depth=max_depth))
    outputs: list[object] = [r.feed(CallSeen(CallRef(0, "a", "f")))]
    try:
        for piece in pieces:
            event = ArgumentsSnapshot(CallRef(0), piece) if snapshot else ArgumentsFragment(CallRef(0), piece)
            outputs.append(r.feed(event))
        outputs.append(r.feed(StreamEnd("tool_calls")))
    except Exception as exc:  # the same error either way is the same behaviour
        outputs.append((type(exc).__name__, str(exc)))
    return r.close(), outputs, r.drain()


@given(st.lists(_JSONISH, min_size=1, max_size=6), st.booleans(), st.integers(1, 4))
@settings(max_examples=300)
@example(["{}[[[[[["], True, 2)  # a snapshot that goes on past its close, nested past the limit
@example(['{"a": "\\\n[[[[["}'], False, 2)  # brackets nesting_exceeds counts: after a backslash-newline
def test_the_scanned_nesting_shortcut_decides_as_the_walk(pieces: list[str], snapshot: bool, max_depth: int) -> None:
    """A call whose scan closed its value skips nesting_exceeds before the strict parse
    (Slot._nesting_scanned). Over text of brackets, strings, escapes and line breaks, sent as
    fragments or as snapshots (whose text may go on past the close), at depth limits the text
    reaches: the same result, outputs and errors with the shortcut and without it."""
    fast = _outcome(pieces, snapshot, max_depth)
    with mock.patch.object(Slot, "_nesting_scanned", lambda self, raw: False):
        assert _outcome(pieces, snapshot, max_depth) == fast


def test_the_scanned_nesting_shortcut_is_taken_on_long_nested_arguments() -> None:
    """Long arguments with more opening brackets than the depth limit (where nesting_exceeds walks
    every string and bracket) parse without the walk once their scan closed; a snapshot that goes
    on past its close, or a backslash before a line break, still takes the walk."""
    text = json.dumps({"items": [{"id": k, "tags": ["x", "y"]} for k in range(300)]})
    walked: list[str] = []
    real = Slot._nesting_scanned

    def spy(self: Slot, raw: str) -> bool:
        taken = real(self, raw)
        walked.append("skip" if taken else "walk")
        return taken

    with mock.patch.object(Slot, "_nesting_scanned", spy):
        result, _, _ = _outcome([text[:1000], text[1000:]], False, 256)  # type: ignore[misc]
        assert result.calls[0].arguments == json.loads(text)
        _outcome([text + ' {"b": 1}'], True, 256)
        _outcome(['{"a": "\\\n' + "[" * 300 + '"}'], False, 256)
    assert walked == ["skip", "walk", "walk"]


def test_calls_share_one_start_scanner_that_nothing_changes() -> None:
    """A call opened without text holds the shared StartScanner (no scanner made per call); its
    first text gives it one of its own. Over every vector and fuzzed streams of every shape, the
    shared one is left as it was, and feeding it is refused rather than felt by every call."""
    from fsm import Reassembler
    from fsm.engine.scanner import StartScanner
    from fsm.errors import StateError
    from fsm.events import ArgumentsFragment, CallRef, CallSeen
    from fsm.harness.fuzz.run import sample_vectors
    from fsm.harness.fuzz.shapes import CASES
    from tests.test_conformance import VECTORS, _replay_with_trace

    r = Reassembler("openai-chat")
    r.feed(CallSeen(CallRef(0, "a", "f")))
    r.feed(CallSeen(CallRef(1, "b", "g")))
    first, second = r.registry.slots
    assert first.scanner is second.scanner and type(first.scanner) is StartScanner
    r.feed(ArgumentsFragment(CallRef(0), '{"x": [1'))
    assert type(first.scanner) is Scanner and type(second.scanner) is StartScanner
    for vector in [*VECTORS, *(v for shape in CASES for v in sample_vectors(shape, 30))]:
        _replay_with_trace(vector)
    shared = start_scanner(256)
    assert (shared.state, shared.depth, shared._pushes_waiting, shared._pops_waiting) == ("start", 0, 0, 0)
    with pytest.raises(StateError):
        shared.feed("{")
    with pytest.raises(StateError):
        shared.defer("{")
