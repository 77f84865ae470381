"""``Reassembler.partial(index)``: the live preview of a call's arguments agrees with jiter's partial
mode ``trailing-strings`` (what the SDKs use for previews) on every prefix of every capture's
arguments and of fuzzed arguments, never raises, and costs nothing until it is asked for."""

from __future__ import annotations

import decimal
import json
import math
from pathlib import Path
from typing import Any

import jiter
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fsm import CallOpened, Reassembler
from fsm.engine.partial import PartialReader, partial_value
from fsm.events import ArgumentsFragment, ArgumentsSnapshot, CallRef, CallSeen
from fsm.harness.fuzz.truth import arguments
from tests.conftest import CAPTURES, captures, meta_for
from tests.helpers import chunk, tc
from tests.test_call_kinds import CREATED, added, custom_item, delta

FOUND = captures()
MISSING = f"recorded captures not found at {CAPTURES} (../shared is beside the project in CI)"
STREAMS = FOUND or [pytest.param(None, marks=pytest.mark.skip(reason=MISSING))]
IDS = [f"{p.parent.name}/{p.name}" for p in FOUND] or ["no-captures"]


def previewed_by_jiter(prefix: str) -> Any:
    try:
        return jiter.from_json(prefix.encode("utf-8"), partial_mode="trailing-strings")
    except ValueError:
        return None  # jiter refuses a prefix that promises nothing yet: partial says None


def same(have: Any, want: Any) -> bool:
    """Equal as values and as types (1 is not 1.0 here), key order included; NaN equals NaN."""
    if type(have) is not type(want):
        return False
    if isinstance(have, dict):
        return list(have) == list(want) and all(same(have[k], want[k]) for k in have)
    if isinstance(have, list):
        return len(have) == len(want) and all(same(a, b) for a, b in zip(have, want, strict=True))
    if isinstance(have, float) and math.isnan(have):
        return math.isnan(want)
    return bool(have == want)


def disagreements(text: str) -> list[tuple[str, Any, Any]]:
    """Every prefix of ``text`` on which partial_value and jiter differ."""
    out = []
    for end in range(len(text) + 1):
        prefix = text[:end]
        have, want = partial_value(prefix), previewed_by_jiter(prefix)
        if not same(have, want):
            out.append((prefix, have, want))
    return out


def streamed_previews(text: str) -> list[tuple[str, Any]]:
    """Stream ``text`` one character a fragment into a Reassembler; the preview after each."""
    r = Reassembler("openai-chat")
    r.feed(chunk(tc(index=0, id="c", name="f", args="")))
    seen = []
    for end in range(1, len(text) + 1):
        r.feed(chunk(tc(index=0, args=text[end - 1])))
        seen.append((text[:end], r.partial(0)))
    return seen


@pytest.mark.parametrize("stream", STREAMS, ids=IDS)
def test_partial_agrees_with_jiter_on_every_prefix_of_every_capture_call(stream: Path) -> None:
    r = Reassembler()
    r.feed_bytes(stream.read_bytes())
    result = r.close()
    for call in result.calls:
        if call.status.value == "complete":
            assert r.partial(call.index) == call.arguments  # once whole, the preview is the arguments
    # The argument texts as the wire sent them (a cut call's too: it is a prefix), and the expected
    # values written out compact, and spaced with every non-ASCII character escaped.
    texts = [c.arguments_json for c in result.calls]
    for expected in json.loads(meta_for(stream).read_text())["expected_tool_calls"]:
        value = expected["arguments"]
        texts += [json.dumps(value, ensure_ascii=False, separators=(",", ":")), json.dumps(value, indent=1)]
    assert texts
    for text in texts:
        assert disagreements(text) == []
        previews = streamed_previews(text)
        assert [p for p, value in previews if not same(value, previewed_by_jiter(p))] == []


_DUMPS = st.sampled_from(
    [
        {"ensure_ascii": True},
        {"ensure_ascii": False},
        {"ensure_ascii": False, "separators": (",", ":")},
        {"ensure_ascii": True, "indent": 2},
    ]
)


@settings(max_examples=60, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(arguments(), _DUMPS)
def test_partial_agrees_with_jiter_on_every_prefix_of_fuzzed_arguments(value: dict[str, Any], style: Any) -> None:
    text = json.dumps(value, **style)
    assert disagreements(text) == []
    assert same(partial_value(text), json.loads(text))


@pytest.mark.parametrize(
    ("prefix", "value"),
    [
        ("", None),
        ("  ", None),
        ("{", {}),
        ('{"ke', {}),
        ('{"key": ', {}),
        ('{"a": "x\\u00', {"a": "x"}),
        ('{"a": "x\\ud83d', {"a": "x"}),
        ('{"a": "x\\ud83d\\ude00', {"a": "x\U0001f600"}),
        ('{"a": "x\\\\ud83d', {"a": "x\\ud83d"}),  # an escaped backslash, then plain text
        ('{"a": 1.', {}),
        ('{"a": 12', {"a": 12}),
        ('{"a": -', {}),
        ('{"a": tru', {}),
        ('{"a": [1, "b', {"a": [1, "b"]}),
        ('{"a": [1, ', {"a": [1]}),
        ('{"a": {"b": [', {"a": {"b": []}}),
        ('{"a": 1} trailing', {"a": 1}),
        ('"cut', "cut"),
        ("tr", None),
    ],
)
def test_partial_value_of_named_prefixes(prefix: str, value: Any) -> None:
    assert same(partial_value(prefix), value)
    assert same(previewed_by_jiter(prefix), value)  # the same answer as jiter's


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(st.text(alphabet='{}[]:,"\\ u0123456789abcdeftrulsnE.-+\t\n\x01'))
def test_partial_value_never_raises(text: str) -> None:
    value = partial_value(text)
    json.dumps(value)  # whatever it is, it is a JSON value


def test_partial_value_beyond_what_json_loads_reads() -> None:
    digits = "7" * 5000  # past the interpreter's 4300-digit limit on reading ints from text
    assert partial_value('{"n": ' + digits) == {"n": int(decimal.Decimal(digits))}
    assert partial_value("[" * 100_000) is None  # deeper than json's parser goes: no preview, no error


def test_partial_of_the_reassembler_by_call_index() -> None:
    r = Reassembler()
    server = CallRef(index=0, id="srv", name="web_search", server=True)
    r.feed(CallSeen(server))
    r.feed(ArgumentsFragment(server, '{"query": "ser'))
    ref = CallRef(index=1, id="a", name="f")
    r.feed(ArgumentsFragment(ref, '{"city": "Par'))
    assert r.partial(0) == {"city": "Par"}  # index 0 is the first client call; server calls apart
    assert r.partial(1) is None  # no such call
    r.feed(ArgumentsFragment(ref, 'is", "days": 1'))
    assert r.partial(0) == {"city": "Paris", "days": 1}
    result = r.close()
    assert result.calls[0].status.value == "truncated"
    assert r.partial(0) == {"city": "Paris", "days": 1}  # a cut call still previews what it had
    r.partial(0)["city"] = "changed"
    assert r.partial(0) == {"city": "Paris", "days": 1}  # a fresh value each time


def test_partial_costs_nothing_until_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any) -> None:
        raise AssertionError("preview work done while streaming")

    monkeypatch.setattr(PartialReader, "_scan", refuse)
    monkeypatch.setattr(PartialReader, "_close", refuse)
    r = Reassembler("openai-chat")
    for piece in ['{"a": ', '"long', " text", '"}']:
        r.feed(chunk(tc(index=0, id="c", name="f", args=piece)))
    assert r.close().calls[0].arguments == {"a": "long text"}


def test_a_reader_scans_each_character_once_however_often_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    scanned: list[int] = []
    scan = PartialReader._scan

    def counting(reader: PartialReader, text: str) -> None:
        start = reader._pos
        scan(reader, text)
        scanned.append(reader._pos - start)

    monkeypatch.setattr(PartialReader, "_scan", counting)
    text = json.dumps({"rows": [{"id": n, "tags": ["a", "b"], "ok": True} for n in range(50)]})
    previews = streamed_previews(text)
    assert [p for p, value in previews if not same(value, previewed_by_jiter(p))] == []
    # Each preview resumed where the last stopped: every character was taken once over the stream
    # (a token the text ends inside is looked at again, by the regular expression, not taken).
    assert len(scanned) == len(text)
    assert sum(scanned) <= len(text)


def test_a_replaced_text_is_previewed_afresh() -> None:
    r = Reassembler()
    ref = CallRef(index=0, id="g", name="f")
    r.feed(ArgumentsSnapshot(ref, '{"a": [1, 2'))
    assert r.partial(0) == {"a": [1, 2]}
    r.feed(ArgumentsSnapshot(ref, '{"b": "x'))
    assert r.partial(0) == {"b": "x"}


def test_a_first_snapshot_on_an_empty_call_then_fragments_and_a_replacement_preview_right() -> None:
    """A snapshot where the call held no text does not count as a replacement (Slot.revision stays):
    the reader asked while the call was empty reads on from there, and a later replacement is still
    previewed afresh. Each preview is what a fresh reader makes of the text held then."""
    r = Reassembler("openai-chat")
    ref = CallRef(index=0, id="x")
    steps = [
        CallSeen(CallRef(index=0, id="x", name="f")),
        ArgumentsSnapshot(ref, '{"a": [1, 2'),
        ArgumentsFragment(CallRef(index=0), ', 3], "s": "hel'),
        ArgumentsSnapshot(ref, '{"b": "z'),
        ArgumentsFragment(CallRef(index=0), 'z"}'),
    ]
    shown = []
    for event in steps:
        r.feed(event)
        shown.append(r.partial(0))
        assert shown[-1] == PartialReader().read(r.registry.slots[0].text())
    assert shown == [None, {"a": [1, 2]}, {"a": [1, 2, 3], "s": "hel"}, {"b": "z"}, {"b": "zz"}]


def test_previews_move_on_responses_calls_whose_deltas_wait() -> None:
    """The README's preview loop: on a Responses stream, where no ArgumentsDelta goes out before a
    call finishes, the previews still follow the text."""
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "weather", "arguments": ""}
    stream = [
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": '{"city": "Par'},
        {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": 'is"}'},
    ]
    r = Reassembler()
    opened: list[int] = []
    shown = []
    for event in stream:
        opened += [out.index for out in r.feed(event) if isinstance(out, CallOpened)]
        for index in opened:
            shown.append(r.partial(index))
    assert shown == [None, {"city": "Par"}, {"city": "Paris"}]  # None: no text yet


def test_a_freeform_call_previews_as_the_input_it_holds() -> None:
    r = Reassembler("openai-responses")
    for event in (CREATED, added(0, custom_item()), delta(0, "*** Begin Patch\n{")):
        r.feed(event)
    assert r.partial(0) == "*** Begin Patch\n{"  # not JSON, and not read as JSON
