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
from fsm.wire.decoders._form_tokens import value_at as _at
from fsm.wire.decoders._responses_items import DELTAS
from fsm.wire.decoders.chat_chunks import LEAN_INDEX_PATH, LEAN_TEXT_PATH, lean_fragment_in
from fsm.wire.decoders.chunk_form import FragmentForm
from fsm.wire.decoders.partial_args import string_piece
from tests.helpers import chunk, tc
from tests.test_vertex_fast_path import _vertex_streams
from tests.test_wire_fast_paths import _held_edges, _random_streams, _random_value, replay_in_pieces

CUTS = [[1 << 20], [97, 5, 300], [1]]


def _replay_lines(
    lines: list[str], sizes: list[int], provider: str = "openai-chat", names: list[Any] | None = None, **options: Any
) -> object:
    """replay_traced of the SSE stream of these event texts (each after an ``event:`` line of its
    name in ``names``, where one is given), read in pieces of ``sizes`` in turn."""
    heads = [f"event: {name}\n".encode() if name else b"" for name in names or [None] * len(lines)]
    data = [b"data: " + line.encode("utf-8", "surrogatepass") + b"\n\n" for line in lines]
    wire = b"".join(head + each for head, each in zip(heads, data, strict=True))
    return replay_in_pieces(wire, sizes, provider, **options)


def _padded(event: dict[str, Any], rng: random.Random, first: bool, shape: str = "") -> dict[str, Any]:
    """The event with an OpenAI ``obfuscation`` string (quotes, escapes, unicode, empty), as its
    last key or its first; Bedrock's ``p`` in its one body."""
    padding = "".join(
        rng.choice(["a", "Z9", '"', "\\", "\n", "\u00e9", "\U0001f642", ""]) for _ in range(rng.randint(0, 9))
    )
    if shape == "bedrock" and len(event) == 1 and type(body := next(iter(event.values()))) is dict:
        padded = {"p": padding, **body} if first else {**body, "p": padding}
        return {next(iter(event)): padded}
    return {"obfuscation": padding, **event} if first else {**event, "obfuscation": padding}


def _chat_text(event: dict[str, Any]) -> str | None:
    lean = lean_fragment_in(event)
    return None if lean is None else lean[1]


def _chat_decoy(event: dict[str, Any], text: str) -> dict[str, Any]:
    choice = event["choices"][0]
    return {**event, "choices": [{**choice, "logprobs": {"arguments": text}}]}


def _anthropic_text(event: dict[str, Any]) -> str | None:
    delta = event.get("delta")
    if event.get("type") != "content_block_delta" or type(delta) is not dict or type(event.get("index")) is not int:
        return None
    piece = delta.get("partial_json") if delta.get("type") == "input_json_delta" else None
    return piece if type(piece) is str and piece else None


def _cohere_text(event: dict[str, Any]) -> str | None:
    piece = _at(event, ("delta", "message", "tool_calls", "function", "arguments"))
    return piece if event.get("type") == "tool-call-delta" and type(piece) is str and piece else None


def _bedrock_text(event: dict[str, Any]) -> str | None:
    piece = _at(event, ("contentBlockDelta", "delta", "toolUse", "input"))
    return piece if type(piece) is str and piece else None


def _bedrock_decoy(event: dict[str, Any], text: str) -> dict[str, Any]:
    return {"contentBlockDelta": {**event["contentBlockDelta"], "meta": {"input": text}}}


def _vertex_text(event: dict[str, Any]) -> str | None:
    found = string_piece(event)
    return found[1] if found is not None and found[1] else None


def _responses_text(event: dict[str, Any]) -> str | None:
    piece = event.get("delta")
    streamed = event.get("type") in DELTAS and type(event.get("output_index")) is int
    return piece if streamed and type(piece) is str and piece else None


PLACES = {  # where a shape's commonest events name their call by an integer: a hole of their form
    "openai-chat": LEAN_INDEX_PATH,
    "anthropic": ("index",),
    "cohere": ("index",),
    "bedrock": ("contentBlockDelta", "contentBlockIndex"),
}
_SENTINEL = 987654321012
PLACED = ["0", "1", "2", "3", "17", "9" * 17, "9" * 18, "1" + "0" * 18, "-1", "-0", "01", "00"]
PLACED += ["2.5", "1e0", "1E2", "1.0", "true", "null", '"1"', " 2 ", "\t2"]
"""What a place hole may be given: other calls' places, places past what it reads, what is no integer."""


def _placed_elsewhere(event: dict[str, Any], at: tuple[str | int, ...], rng: random.Random) -> str:
    """The event's text with its place written as one of PLACED."""
    moved = json.loads(json.dumps(event))
    parent = _at(moved, at[:-1])
    parent[at[-1]] = _SENTINEL
    return json.dumps(moved).replace(str(_SENTINEL), rng.choice(PLACED))


def _decoy_of(key: str) -> Any:
    return lambda event, text: {**event, "meta": {key: text}}


SHAPES = {  # per shape: the key of the text, the reader of a commonest event's text, a decoy maker
    "openai-chat": ("arguments", _chat_text, _chat_decoy),
    "anthropic": ("partial_json", _anthropic_text, _decoy_of("partial_json")),
    "cohere": ("arguments", _cohere_text, _decoy_of("arguments")),
    "bedrock": ("input", _bedrock_text, _bedrock_decoy),
    "gemini": ("stringValue", _vertex_text, _decoy_of("stringValue")),
    "openai-responses": ("delta", _responses_text, _decoy_of("delta")),
}


def _variants(name: str, shape: str, events: list[dict[str, Any]]) -> Iterator[tuple[str, list[str]]]:
    """The stream's events as texts: as json.dumps writes them, compact, padded, with a decoy after
    the text (the same text under the same key), with the text's key given twice, and with a bad
    event of the form after each commonest one."""
    key_name, text_of, decoy = SHAPES[shape]
    rng = random.Random(name)
    yield "plain", [json.dumps(e) for e in events]
    yield "compact", [json.dumps(e, separators=(",", ":"), ensure_ascii=False) for e in events]
    first = rng.random() < 0.3
    yield "padded", [json.dumps(_padded(e, rng, first, shape), ensure_ascii=rng.random() < 0.5) for e in events]
    decoyed, doubled, spoiled = [], [], []
    for e in events:
        text = json.dumps(e)
        piece = text_of(e)
        if piece is None:
            decoyed.append(text)
            doubled.append(text)
            spoiled.append(text)
            continue
        decoyed.append(json.dumps(decoy(e, piece)))
        key = f'"{key_name}": {json.dumps(piece)}'
        if text.count(key) != 1:  # the text written otherwise (or twice): kept as it is
            decoyed.append(text)
            doubled.append(text)
            spoiled.append(text)
            continue
        doubled.append(
            text.replace(key, f'"{key_name}": "junk", {key}')
            if rng.random() < 0.5
            else text.replace(key, f'{key}, "{key_name}": "x"')
        )
        spoiled.append(text)
        bad = rng.choice(['"a\x01b"', '"a\\qb"', '""', '"a" ', '"a', '"a"x', "12", '"\\ud83d"', '"\\u00"'])
        spoiled.append(text.replace(key, f'"{key_name}": {bad}'))
    yield "decoyed", decoyed
    yield "doubled", doubled
    yield "spoiled", spoiled
    at = PLACES.get(shape)
    if at is not None:  # places of other calls, and of none, in the events of a form
        yield (
            "placed",
            [
                _placed_elsewhere(e, at, rng)
                if text_of(e) is not None and type(_at(e, at)) is int and rng.random() < 0.4
                else json.dumps(e)
                for e in events
            ],
        )
    if shape == "openai-responses":  # as OpenAI sends them: a counter first, padding last
        counted = []
        for k, e in enumerate(events):
            number: Any = k if rng.random() < 0.97 else rng.choice([2.5, "7", -1, 10**30, True])
            counted.append(
                json.dumps({"type": e.get("type"), "sequence_number": number, **e, **_padded({}, rng, False)})
            )
        yield "counted", counted


def _anthropic_streams(count: int) -> list[list[dict[str, Any]]]:
    """Anthropic streams of text and tool blocks, tool input in fragments of 1 to 12 characters."""
    streams = []
    for seed in range(count):
        rng = random.Random(seed)
        events: list[dict[str, Any]] = [{"type": "message_start", "message": {"id": "m", "content": []}}]
        for at in range(rng.randint(1, 4)):
            if rng.random() < 0.3:
                events.append(
                    {"type": "content_block_start", "index": at, "content_block": {"type": "text", "text": ""}}
                )
                events.append(
                    {"type": "content_block_delta", "index": at, "delta": {"type": "text_delta", "text": "hi"}}
                )
            else:
                block = {"type": "tool_use", "id": f"t{at}", "name": "f", "input": {}}
                events.append({"type": "content_block_start", "index": at, "content_block": block})
                text = json.dumps({"q": _random_value(rng), "r": _random_value(rng)}, ensure_ascii=rng.random() < 0.3)
                for start in range(0, len(text), step := rng.randint(1, 12)):
                    piece = {"type": "input_json_delta", "partial_json": text[start : start + step]}
                    events.append({"type": "content_block_delta", "index": at, "delta": piece})
            if rng.random() < 0.9:
                events.append({"type": "content_block_stop", "index": at})
            if rng.random() < 0.05:  # a piece for a block already stopped
                piece = {"type": "input_json_delta", "partial_json": "1"}
                events.append({"type": "content_block_delta", "index": at, "delta": piece})
        if rng.random() < 0.9:
            events += [{"type": "message_delta", "delta": {"stop_reason": "tool_use"}}, {"type": "message_stop"}]
        streams.append(events)
    return streams


def _streams() -> list[tuple[str, str, list[dict[str, Any]], dict[str, Any]]]:
    from fsm import Policies
    from fsm.harness.fuzz.run import sample_vectors

    streams = []
    for shape in SHAPES:
        vectors = [v for v in load_vectors() if v.shape == shape] + sample_vectors(shape, 80)
        streams += [
            (v.name, shape, v.events, {"policies": Policies(**v.policies)})
            for v in vectors
            if all(type(e) is dict for e in v.events)
        ]
    streams += [(name, "openai-chat", events, options) for name, (events, options) in _held_edges().items()]
    streams += [(f"random {k}", "openai-chat", events, {}) for k, events in enumerate(_random_streams(40))]
    streams += [(f"anthropic {k}", "anthropic", events, {}) for k, events in enumerate(_anthropic_streams(60))]
    streams += [(f"vertex {k}", "gemini", events, {}) for k, events in enumerate(_vertex_streams(60))]
    return streams


def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many chunks were read by their form, in the one item of the list returned."""
    hits = [0]
    for name in ("_read_one", "_read_two", "_read_place_text", "_read_holes"):
        real = getattr(FragmentForm, name)

        def counted(self: FragmentForm, payload: str, real: Any = real) -> str | None:
            text = real(self, payload)
            hits[0] += text is not None
            return text

        monkeypatch.setattr(FragmentForm, name, counted)
    return hits


def test_chunks_read_by_their_form_decide_as_parsed_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    cases = [
        (f"{name} {variant} {sizes}", shape, lines, sizes, options)
        for name, shape, events, options in _streams()
        for variant, lines in _variants(name, shape, events)
        for sizes in CUTS
    ]
    assert len(cases) > 9000
    hits = _counting_reads(monkeypatch)

    by_shape: dict[str, int] = dict.fromkeys(SHAPES, 0)

    def replays() -> list[object]:
        out = []
        for _, shape, lines, sizes, options in cases:
            before = hits[0]
            # Anthropic's and Cohere's as they send them, each after an event: line (not kept).
            names = ["e"] * len(lines) if shape in ("anthropic", "cohere") else None
            out.append(_replay_lines(lines, sizes, shape, names, **options))
            by_shape[shape] += hits[0] - before
        return out

    by_form = replays()
    # Taken, often, for each shape: some 2,000 to 28,000 reads on a run of this file alone, fewer for
    # Responses and Gemini in the whole suite, where hypothesis's sample of fuzzed streams differs.
    assert all(count > 200 for count in by_shape.values()), by_shape
    monkeypatch.setattr(FragmentForm, "learn", classmethod(lambda cls, *args: None))
    parsed = replays()
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
    return FragmentForm.learn(text, value, LEAN_TEXT_PATH, lean[0], ("obfuscation",), None, LEAN_INDEX_PATH)


def test_a_form_reads_the_text_of_its_chunks_and_nothing_else() -> None:
    form = _learnt(chunk(tc(2, args='{"a": ')))
    assert form is not None and form.place == 2
    assert form.read(json.dumps(chunk(tc(2, args='"b\\"c\u00e9\U0001f642}')))) == '"b\\"c\u00e9\U0001f642}'
    assert form.read(json.dumps(chunk(tc(2, args="\ud83d")))) == "\ud83d"  # json.loads gives it so too
    for other in (
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
    assert form is not None and form.read == form._read_placed and form.fixed.read == form.fixed._read_two
    assert form.read(json.dumps({**chunk(tc(0, args='"q"')), "obfuscation": 'g7"em\\'})) == '"q"'
    assert form.read(json.dumps({**chunk(tc(0, args='"q"')), "obfuscation": 5})) is None
    first = _learnt({"obfuscation": "S8ct", **chunk(tc(0, args="{"))})
    assert first is not None and first.read(json.dumps({"obfuscation": "", **chunk(tc(0, args="1"))})) == "1"


def test_a_place_hole_reads_the_call_of_each_event() -> None:
    form = _learnt(chunk(tc(12, args="{")))
    assert form is not None and form.read == form._read_place_text
    for place in (12, 1, 123, 0, 7, 10**18 - 1, 12):
        assert form.read(json.dumps(chunk(tc(place, args=f"t{place}")))) == f"t{place}"
        assert form.place == place
    plain = json.dumps(chunk(tc(12, args="x")))
    for other in ("-1", "-0", "01", "00", "012", "1" + "0" * 18, "2.5", "1e0", "1.0", "true", '"1"', "12 "):
        assert form.read(plain.replace('"index": 12', f'"index": {other}')) is None, other
        assert form.place == 12  # (as last read)
    padded = _learnt({**chunk(tc(4, args="{")), "obfuscation": "a"})  # the place among other holes
    assert padded is not None and padded.read == padded._read_placed
    for place in (4, 40, 4, 0):
        assert padded.read(json.dumps({**chunk(tc(place, args="q")), "obfuscation": str(place)})) == "q"
        assert padded.place == place and padded.fixed.place == place
    assert padded.read(json.dumps({**chunk(tc(4, args="q")), "obfuscation": 1})) is None
    assert padded.read(json.dumps({**chunk(tc(-4, args="q")), "obfuscation": "a"})) is None
    # Only the call's index is a hole: the choice's index is a fixed piece.
    assert form.read(plain.replace('[{"index": 0', '[{"index": 1')) is None


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
    # A learning parses the chunk once more, so after the first few, forms are learnt once in
    # eight events, not at each, however often they fail or change.
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
    assert learnt[0] == 1  # two calls whose fragments alternate: the index is a hole, one form reads both
    learnt[0] = 0
    # Padding first and last by turns: every chunk a form other than the last learnt.
    turns = [
        json.dumps({"obfuscation": "p", **e} if k % 2 else {**e, "obfuscation": "p"}) for k, e in enumerate(events)
    ]
    _replay_lines([*turns, lines[-1]], [1 << 22])
    assert 8 < learnt[0] <= 8 + len(lines) // 8
    learnt[0] = 0
    # One call whose every chunk holds a decoy: each learning fails, and they are held back too.
    decoyed = json.dumps(_chat_decoy(chunk(tc(0, args="y" * 500)), "y" * 500))
    _replay_lines([*lines[:2], *[decoyed] * 4000, lines[-1]], [1 << 22])
    assert 8 < learnt[0] <= 8 + 4003 // 8
    learnt[0] = 0
    _replay_lines(lines[:2] + [lines[2]] * 4000 + lines[-1:], [1 << 22])  # one form: learnt once
    assert learnt[0] == 1


def test_an_anthropic_form_reads_its_block_and_is_proven_as_a_chat_one() -> None:
    from fsm.wire.decoders.anthropic import _FORM_TEXT

    event = {"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "{"}}
    form = FragmentForm.learn(json.dumps(event), event, _FORM_TEXT, 3)
    assert form is not None and form.place == 3
    piece = {**event, "delta": {**event["delta"], "partial_json": '"\\u00e9'}}
    assert form.read(json.dumps(piece)) == '"\\u00e9'
    assert form.read(json.dumps({**event, "index": 4})) is None
    decoyed = {**event, "meta": {"partial_json": "{"}}  # the last key of the name is not the one read
    assert FragmentForm.learn(json.dumps(decoyed), decoyed, _FORM_TEXT, 3) is None


def test_forms_are_learnt_and_read_for_anthropic_tool_input(monkeypatch: pytest.MonkeyPatch) -> None:
    hits = _counting_reads(monkeypatch)
    lines = [json.dumps(e) for e in _anthropic_streams(1)[0]]
    assert sum(_anthropic_text(json.loads(line)) is not None for line in lines) > 20
    _replay_lines(lines, [1 << 20], "anthropic")
    assert hits[0] >= sum(_anthropic_text(json.loads(line)) is not None for line in lines) - 4


def test_a_key_given_twice_whose_string_is_not_read_is_no_hole() -> None:
    # The last "arguments" holding the text is a key given twice in another object, whose later
    # value (no string) is the one read there: the probe changes nothing any reader sees. Kept, such
    # a form would read that string as the fragment's text.
    text = json.dumps(chunk(tc(0, args="T")))
    decoy = text[:-1] + ', "x": {"arguments": "T", "arguments": 5}}'
    assert json.loads(decoy)["x"] == {"arguments": 5}
    assert _learnt(decoy) is None


def _gemini_chunk(text: str, counts: tuple[Any, ...], **usage: Any) -> dict[str, Any]:
    names = ("promptTokenCount", "candidatesTokenCount", "totalTokenCount")
    candidate = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
    return {"candidates": [candidate], "usageMetadata": {**dict(zip(names, counts, strict=True)), **usage}}


def _counted(event: dict[str, Any]) -> FragmentForm | None:
    from fsm.wire.decoders.gemini import GeminiDecoder

    found = GeminiDecoder().said_form_of(event)
    assert found is not None
    text = json.dumps(event)
    return FragmentForm.learn(text, json.loads(text), *found[0])


def test_a_form_of_counts_reads_each_count_and_the_text() -> None:
    form = _counted(_gemini_chunk("Hello", (9, 1, 10)))
    assert form is not None and form.read == form._read_counted and form.place == (9, 1, 10)
    for text, counts in (("a", (9, 2, 11)), ('"q"\\ é🙂\n\t\u2028', (0, 123, 10**18)), ("\ud83d", (-1, 7, 0))):
        assert form.read(json.dumps(_gemini_chunk(text, counts))) == text
        assert form.place == counts
    plain = json.dumps(_gemini_chunk("x", (9, 5, 14)))
    # Not JSON's integer there (or one of 20 digits), not JSON's string, no text: no match, and the
    # counts stay as last read.
    assert form.read(plain.replace('"candidatesTokenCount": 5', '"candidatesTokenCount": -0')) == "x"
    assert form.place == (9, 0, 14)  # (json reads -0 as the integer 0)
    for other in ("01", "2.5", "1e0", "true", '"5"', "1" * 20, "5 "):
        assert form.read(plain.replace('"candidatesTokenCount": 5', f'"candidatesTokenCount": {other}')) is None, other
    for spoilt in ('"a\x01b"', '"a\\qb"', '"a\\u12"', '"a', '""'):
        assert form.read(plain.replace('"x"', spoilt)) is None, spoilt
    assert form.place == (9, 0, 14)  # as last read
    # A count the learnt event did not have is no part of its form; nor is a count's key renamed.
    assert form.read(json.dumps(_gemini_chunk("x", (9, 5, 14), thoughtsTokenCount=3))) is None
    assert form.read(plain.replace("totalTokenCount", "totalTokens")) is None
    one = _counted({**_gemini_chunk("Hi", (9, 1, 10)), "usageMetadata": {"totalTokenCount": 4, "note": "x"}})
    assert one is not None and one.place == (4,)
    moved = {**_gemini_chunk("Hi", (9, 1, 10)), "usageMetadata": {"totalTokenCount": 8, "note": "x"}}
    assert one.read(json.dumps(moved)) == "Hi" and one.place == (8,)


def test_a_form_of_counts_is_kept_only_when_its_probe_proves_each() -> None:
    same = _gemini_chunk("Hello", (5, 5, 10))  # two counts of one value, under their own keys
    form = _counted(same)
    assert form is not None
    assert form.read(json.dumps(_gemini_chunk("x", (6, 7, 13)))) == "x" and form.place == (6, 7, 13)
    text = json.dumps(same)
    # A count's key given twice: the one read is the last, the other is a fixed piece.
    twice = text.replace('"totalTokenCount": 10', '"totalTokenCount": 1, "totalTokenCount": 10')
    from fsm.wire.decoders.gemini import GeminiDecoder

    spec = GeminiDecoder().said_form_of(json.loads(twice))
    assert spec is not None
    learnt = FragmentForm.learn(twice, json.loads(twice), *spec[0])
    assert learnt is not None
    assert learnt.read(twice.replace(": 10}", ": 12}")) == "Hello" and learnt.place == (5, 5, 12)
    assert learnt.read(twice.replace(": 1,", ": 2,")) is None
    # A decoy: the last key of a count's name with its value is not the count's own.
    decoyed = {**same, "modelVersion": {"totalTokenCount": 10}}
    found = GeminiDecoder().said_form_of(decoyed)
    assert found is not None and FragmentForm.learn(json.dumps(decoyed), decoyed, *found[0]) is None
