"""OpenAI chat bare fragments read from the wire by their learnt form (FragmentForm) decide exactly
as parsed ones: the same transitions in order, outputs, previews, calls, diagnostics and rule
counts, over every OpenAI chat vector, fuzzed and random streams and hostile variants of their
text (OpenAI's padding, decoys, keys given twice, bad strings in a chunk of the form), fed in one
read, in odd pieces and a byte at a time. A form is kept only when its probe proves it, and
learning is bounded however the chunks change."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import pytest

from fsm.harness.vectors import load_vectors
from fsm.wire.decoders.chat_chunks import lean_fragment_in
from fsm.wire.decoders.chunk_form import FragmentForm
from tests.helpers import chunk, tc
from tests.test_wire_fast_paths import _held_edges, _random_streams, replay_in_pieces

CUTS = [[1 << 20], [97, 5, 300], [1]]


def _replay_lines(lines: list[str], sizes: list[int], provider: str = "openai-chat", **options: Any) -> object:
    """replay_traced of the SSE stream of these event texts, read in pieces of ``sizes`` in turn."""
    wire = b"".join(b"data: " + line.encode("utf-8", "surrogatepass") + b"\n\n" for line in lines)
    return replay_in_pieces(wire, sizes, provider, **options)


def _padded(event: dict[str, Any], rng: random.Random, first: bool) -> dict[str, Any]:
    """The event with an OpenAI ``obfuscation`` string (quotes, escapes, unicode, empty), as its
    last key or its first."""
    padding = "".join(
        rng.choice(["a", "Z9", '"', "\\", "\n", "\u00e9", "\U0001f642", ""]) for _ in range(rng.randint(0, 9))
    )
    return {"obfuscation": padding, **event} if first else {**event, "obfuscation": padding}


def _variants(name: str, events: list[dict[str, Any]]) -> Iterator[tuple[str, list[str]]]:
    """The stream's events as texts: as json.dumps writes them, compact, padded, with a decoy, with
    the argument key given twice, and with a bad chunk of the form after each fragment."""
    rng = random.Random(name)
    yield "plain", [json.dumps(e) for e in events]
    yield "compact", [json.dumps(e, separators=(",", ":"), ensure_ascii=False) for e in events]
    first = rng.random() < 0.3
    yield "padded", [json.dumps(_padded(e, rng, first), ensure_ascii=rng.random() < 0.5) for e in events]
    decoyed, doubled, spoiled = [], [], []
    for e in events:
        text = json.dumps(e)
        lean = lean_fragment_in(e)
        if lean is None:
            decoyed.append(text)
            doubled.append(text)
            spoiled.append(text)
            continue
        choice = e["choices"][0]
        # A decoy with the same text after the real one: the last "arguments" key is not the one read.
        decoyed.append(json.dumps({**e, "choices": [{**choice, "logprobs": {"arguments": lean[1]}}]}))
        literal = json.dumps(lean[1])
        key = f'"arguments": {literal}'
        assert text.count(key) == 1
        doubled.append(
            text.replace(key, f'"arguments": "junk", {key}')
            if rng.random() < 0.5
            else text.replace(key, f'{key}, "arguments": "x"')
        )
        spoiled.append(text)
        bad = rng.choice(['"a\x01b"', '"a\\qb"', '""', '"a" ', '"a', '"a"x', "12", '"\\ud83d"', '"\\u00"'])
        spoiled.append(text.replace(key, f'"arguments": {bad}'))
    yield "decoyed", decoyed
    yield "doubled", doubled
    yield "spoiled", spoiled


def _streams() -> list[tuple[str, list[dict[str, Any]], dict[str, Any]]]:
    from fsm.harness.fuzz.run import sample_vectors

    vectors = [v for v in load_vectors() if v.shape == "openai-chat"] + sample_vectors("openai-chat", 80)
    streams = [(v.name, v.events, {}) for v in vectors if all(type(e) is dict for e in v.events)]
    streams += [(name, events, options) for name, (events, options) in _held_edges().items()]
    streams += [(f"random {k}", events, {}) for k, events in enumerate(_random_streams(40))]
    return streams


def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many chunks were read by their form, in the one item of the list returned."""
    hits = [0]
    for name in ("_read_one", "_read_holes"):
        real = getattr(FragmentForm, name)

        def counted(self: FragmentForm, payload: str, real: Any = real) -> str | None:
            text = real(self, payload)
            hits[0] += text is not None
            return text

        monkeypatch.setattr(FragmentForm, name, counted)
    return hits


def test_chunks_read_by_their_form_decide_as_parsed_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    cases = [
        (f"{name} {variant} {sizes}", lines, sizes, options)
        for name, events, options in _streams()
        for variant, lines in _variants(name, events)
        for sizes in CUTS
    ]
    assert len(cases) > 3000
    hits = _counting_reads(monkeypatch)
    by_form = [_replay_lines(lines, sizes, **options) for _, lines, sizes, options in cases]
    assert hits[0] > 10000, hits  # taken, often: in reads of many events and of one
    monkeypatch.setattr(FragmentForm, "learn", classmethod(lambda cls, *args: None))
    parsed = [_replay_lines(lines, sizes, **options) for _, lines, sizes, options in cases]
    for (name, *_), a, b in zip(cases, by_form, parsed, strict=True):
        assert a == b, name


def test_a_stream_told_by_its_first_bytes_reads_by_form_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    # provider "auto": the decoder is adopted at the first event; forms are learnt after it.
    streams = [(f"random {k}", events) for k, events in enumerate(_random_streams(30))]
    hits = _counting_reads(monkeypatch)
    cases = [(name, [json.dumps(e) for e in events], sizes) for name, events in streams for sizes in CUTS]
    by_form = [_replay_lines(lines, sizes, "auto") for _, lines, sizes in cases]
    assert hits[0] > 500
    monkeypatch.setattr(FragmentForm, "learn", classmethod(lambda cls, *args: None))
    for (name, lines, sizes), a in zip(cases, by_form, strict=True):
        assert a == _replay_lines(lines, sizes, "auto"), name


def _learnt(event: dict[str, Any] | str) -> FragmentForm | None:
    text = event if isinstance(event, str) else json.dumps(event)
    value = json.loads(text)
    lean = lean_fragment_in(value)
    assert lean is not None
    return FragmentForm.learn(text, value, lean[0], lean[1])


def test_a_form_reads_the_text_of_its_chunks_and_nothing_else() -> None:
    form = _learnt(chunk(tc(2, args='{"a": ')))
    assert form is not None and form.index == 2
    assert form.read(json.dumps(chunk(tc(2, args='"b\\"c\u00e9\U0001f642}')))) == '"b\\"c\u00e9\U0001f642}'
    assert form.read(json.dumps(chunk(tc(2, args="\ud83d")))) == "\ud83d"  # json.loads gives it so too
    for other in (
        chunk(tc(3, args="x")),  # another index
        chunk(tc(2, args="")),  # no text: the general path decides
        chunk(tc(2, args="x"), finish="stop"),
        {**chunk(tc(2, args="x")), "usage": {"total_tokens": 1}},
    ):
        assert form.read(json.dumps(other)) is None, other
    plain = json.dumps(chunk(tc(2, args="x")))
    for spoilt in ('"a\x01b"', '"a\\qb"', '"a', '"a"x', "12", '"a" '):
        assert form.read(plain.replace('"x"', spoilt)) is None, spoilt


def test_openai_padding_is_a_hole_of_its_own() -> None:
    form = _learnt({**chunk(tc(0, args="{")), "obfuscation": "3Y6y"})
    assert form is not None and len(form.rest) == 2
    assert form.read(json.dumps({**chunk(tc(0, args='"q"')), "obfuscation": 'g7"em\\'})) == '"q"'
    assert form.read(json.dumps({**chunk(tc(0, args='"q"')), "obfuscation": 5})) is None
    first = _learnt({"obfuscation": "S8ct", **chunk(tc(0, args="{"))})
    assert first is not None and first.read(json.dumps({"obfuscation": "", **chunk(tc(0, args="1"))})) == "1"


def test_a_form_is_kept_only_when_its_probe_proves_it() -> None:
    event = chunk(tc(0, args="same"))
    decoyed = {**event, "choices": [{**event["choices"][0], "logprobs": {"arguments": "same"}}]}
    assert _learnt(decoyed) is None  # the last "arguments" with that text is the decoy: no form
    text = json.dumps(event)
    read_last = _learnt(text.replace('"arguments": "same"', '"arguments": "junk", "arguments": "same"'))
    assert read_last is not None
    assert read_last.read(text.replace('"arguments": "same"', '"arguments": "junk", "arguments": "new"')) == "new"
    twice = json.dumps({**event, "obfuscation": "a"}).replace(
        '"obfuscation": "a"', '"obfuscation": "b", "obfuscation": "a"'
    )
    read_twice = _learnt(twice)  # the padding read is the last: its hole; the first is a fixed piece
    assert read_twice is not None
    assert read_twice.read(twice.replace('"a"}', '"c"}').replace('"same"', '"new"')) == "new"
    assert read_twice.read(twice.replace('"b"', '"c"')) is None
    assert _learnt(text.replace('"arguments"', '"argu\\u006dents"')) is None  # no key written so


def test_learning_forms_is_bounded_however_the_chunks_change(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two calls whose fragments alternate change form at every chunk: a learning parses the chunk
    # once more, so after the first few they are learnt once in eight events, not at each.
    learnt = [0]
    real = FragmentForm.learn.__func__  # type: ignore[attr-defined]

    def counted(cls: type[FragmentForm], *args: Any) -> FragmentForm | None:
        learnt[0] += 1
        return real(cls, *args)

    monkeypatch.setattr(FragmentForm, "learn", classmethod(counted))
    events = [chunk(tc(0, "a", "f", "")), chunk(tc(1, "b", "g", ""))]
    events += [chunk(tc(k % 2, args='{"x": "' if k < 2 else "y" * 500)) for k in range(4000)]
    lines = [json.dumps(e) for e in events] + [json.dumps(chunk(finish="tool_calls"))]
    _replay_lines(lines, [1 << 22])
    assert learnt[0] <= 8 + len(lines) // 8
    learnt[0] = 0
    _replay_lines(lines[:2] + [lines[2]] * 4000 + lines[-1:], [1 << 22])  # one form: learnt once
    assert learnt[0] == 1
