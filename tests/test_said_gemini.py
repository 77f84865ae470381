"""Gemini's commonest events of a turn that talks (one candidate of text or thought parts, its usage
beside), taken straight to the turn's content by ``GeminiDecoder.commonest_said``, decide exactly
as decode() and Reassembler._apply do: over every Gemini vector, fuzzed Gemini and Vertex streams,
talk-heavy streams and events that nearly qualify, from dicts (lax and strict) and from the wire.
"""

from __future__ import annotations

import contextlib
import json
import random
from typing import Any

import pytest

import tests.test_said_shortcuts as said_shortcuts
from fsm import Reassembler
from fsm.harness.fuzz.run import sample_vectors
from fsm.wire.decoders.gemini import GeminiDecoder
from tests.test_said_shortcuts import check_said_reader, read_from_the_wire

_SIGNATURE = "c2lnbmF0dXJl"


def _chunk(parts: list[Any], n: int, vertex: bool = False, **beside: Any) -> dict[str, Any]:
    """An event as the API streams it: one candidate, the usage so far, the model and response ids."""
    usage: dict[str, Any] = {"promptTokenCount": 161, "candidatesTokenCount": n, "totalTokenCount": 161 + n}
    if n % 3 == 0:
        usage["thoughtsTokenCount"] = 45
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0, **beside}
    event = {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "gemini-3-flash-preview"}
    if vertex:
        event["createTime"] = "2026-04-02T17:03:50.399550Z"
    return {**event, "responseId": "aiS5abqwJJf7nsEPuIy3wQQ"}


def _talk(rng: random.Random) -> list[dict[str, Any]]:
    """A turn that thinks, talks, calls a tool (a whole call, or on odd seeds a Vertex call whose
    arguments stream) and talks again, each piece an event carrying its metadata."""
    vertex = rng.random() < 0.5
    n = iter(range(1, 1 << 20))
    events = [_chunk([{"text": rng.choice(["So ", "then ", "", "é🙂 "]), "thought": True}], next(n), vertex)]
    events += [_chunk([{"text": rng.choice(["So ", "then ", "é🙂 "]), "thought": True}], next(n)) for _ in range(15)]
    # The thought run's end and the text's start in one event; the text is signed at its end (Gemini 3).
    events.append(_chunk([{"text": "done.", "thought": True}, {"text": "Hello"}], next(n), vertex))
    events += [_chunk([{"text": rng.choice([" there", "\n", "🙂", " 東京"])}], next(n), vertex) for _ in range(25)]
    events.append(_chunk([{"text": ".", "thoughtSignature": _SIGNATURE}], next(n), vertex))
    if vertex:
        opening = {"functionCall": {"name": "getWeather", "willContinue": True}, "thoughtSignature": _SIGNATURE}
        events.append(_chunk([opening], next(n), vertex))
        for piece, more in (("Bos", True), ("ton", False)):
            entry = {"jsonPath": "$.location", "stringValue": piece, "willContinue": more}
            events.append(_chunk([{"functionCall": {"partialArgs": [entry], "willContinue": True}}], next(n), vertex))
        events.append(_chunk([{"functionCall": {}}], next(n), vertex))
    else:
        call = {"functionCall": {"name": "sum", "args": {"a": 2, "b": 3}, "id": "3ae8iwca"}}
        events.append(_chunk([{**call, "thoughtSignature": _SIGNATURE}], next(n)))
    events += [_chunk([{"text": rng.choice(["Done", ".", " ok", ""])}], next(n), vertex) for _ in range(10)]
    end = _chunk([{"text": ""}], next(n), vertex, finishReason="STOP")
    return [*events, end]


class _Sub(dict):  # type: ignore[type-arg]
    pass


def _near(paid: bool = False) -> list[list[dict[str, Any]]]:
    """Streams where an event nearly qualifies, each between two that do; or (``paid``) each after
    forms that read an event, and thrice, so that a form learnt from it would read the third."""
    good = _chunk([{"text": "ok"}], 1)
    thought = _chunk([{"text": "hm", "thought": True}], 2)

    def candidate(**changed: Any) -> dict[str, Any]:
        return {"content": {"parts": [{"text": "x"}]}, "index": 0, **changed}

    def with_candidate(**changed: Any) -> dict[str, Any]:
        return {"candidates": [candidate(**changed)], "usageMetadata": {"totalTokenCount": 3}}

    def beside(**changed: Any) -> dict[str, Any]:
        return {**_chunk([{"text": "y"}], 3), **changed}

    parts: list[Any] = [
        {"text": ""},
        {"text": "", "thought": True},
        {"text": None},
        {"text": 7},
        {"text": 1.5},
        {"text": ["a"]},
        {"thought": True},
        {},
        {"text": "t", "thought": None},
        {"text": "t", "thought": False},
        {"text": "t", "thought": "yes"},
        {"text": "t", "thought": 1},
        {"text": "t", "thought": 0},
        {"text": "t", "thoughtSignature": _SIGNATURE},
        {"text": "t", "thought": True, "thoughtSignature": _SIGNATURE},
        {"text": "", "thought": True, "thoughtSignature": _SIGNATURE},
        {"text": "t", "thought_signature": _SIGNATURE},
        {"text": "t", "inlineData": None},
        {"text": "t", "inlineData": {"mimeType": "image/png", "data": "AA=="}},
        {"inlineData": {"mimeType": "image/png", "data": "AA=="}},
        {"text": "t", "functionCall": {"name": "f", "args": {}}},
        {"functionCall": {"name": "f", "args": {}}},
        {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
        {"text": "\ud83d"},  # a lone surrogate: kept as it came
        _Sub(text="a dict subclass"),
        None,
        ["text", "t"],
        "t",
    ]
    events: list[dict[str, Any]] = [_chunk([part], 4) for part in parts]
    events += [_chunk([{"text": "a"}, part], 5) for part in parts[2:]]  # a good part before it
    events += [
        _chunk([], 6),
        _chunk([{"text": "a", "thought": True}, {"text": "b"}, {"text": "c", "thought": True}], 7),
        _chunk([{"text": "a"}, {"text": "", "thought": True}, {"text": "b"}], 8),
        {"candidates": [candidate()]},
        {"candidates": [candidate()], "usageMetadata": None},
        {"candidates": [candidate()], "usageMetadata": {}},
        {"candidates": [candidate()], "usageMetadata": 0},
        {"candidates": [candidate()], "usageMetadata": [1]},
        {"candidates": [candidate()], "usageMetadata": _Sub(totalTokenCount=1)},
        {"candidates": [candidate()], "usage_metadata": {"total_token_count": 4}},
        {"candidates": [candidate()], "error": None},
        {"candidates": [candidate()], "error": {"code": 500, "message": "boom"}},
        {"candidates": [candidate()], "promptFeedback": {"blockReason": "OTHER"}},
        {"candidates": (candidate(),)},  # a tuple: no JSON array
        {"candidates": []},
        {"candidates": None, "usageMetadata": {"totalTokenCount": 9}},
        {"candidates": [candidate(), candidate(index=1)]},
        {"candidates": [_Sub(candidate())]},
        {"candidates": [None]},
        {"candidates": [candidate(content={"parts": [{"text": "x"}], "role": "model", "extra": 1})]},
        {"usageMetadata": {"totalTokenCount": 9}},
        {"x": 1},
        beside(modelVersion=None),
        beside(sdkHttpResponse={"headers": {}}),
    ]
    for at in (None, 0, 1, True, False, -1, 1 << 63, 10**5000, 0.0, 1.0, "0", "", [0]):
        events.append(with_candidate(index=at))
    contents = (None, [], {"parts": None}, {"parts": {"text": "x"}}, {"role": "model"}, _Sub(parts=[{"text": "s"}]))
    for content in contents:
        events.append(with_candidate(content=content))
    for finish in (None, "", "STOP", "MAX_TOKENS", "MALFORMED_FUNCTION_CALL"):
        events.append(with_candidate(finishReason=finish))
        events.append(with_candidate(finish_reason=finish))
    events += [with_candidate(finishMessage="a note, no finish"), with_candidate(safetyRatings=[])]
    streams = [[good, thought, *[event] * (3 if paid else 1), good, thought] for event in events]
    # Last, so no later event's usage replaces what it reports (an SDK's dump names it in snake case).
    streams.append([good, {"candidates": [candidate()], "usage_metadata": {"total_token_count": 4}}])
    # A streamed Vertex call open: text between its pieces leaves it open (decode() keeps it).
    opening = {"functionCall": {"name": "w", "willContinue": True}}
    piece = {"functionCall": {"partialArgs": [{"jsonPath": "$.q", "stringValue": "a", "willContinue": True}]}}
    streams.append([good, _chunk([opening], 1), _chunk([piece], 2), good, thought, _chunk([{"functionCall": {}}], 3)])
    streams.append([good, _chunk([opening], 1), good, _chunk([{"text": "x"}, {"functionCall": {}}], 2), good])
    # Code that runs: its runs begin at each event (decode() keeps them), text after it.
    code = {"executableCode": {"language": "PYTHON", "code": "print(1)"}}
    ran = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}}
    streams.append([thought, _chunk([code], 1), good, _chunk([ran], 2), good, _chunk([code], 3), good])
    # Whole calls without ids between text, then resent: where each lands must not move.
    call = {"functionCall": {"name": "f", "args": {"a": 1}}}
    other = {"functionCall": {"name": "f", "args": {"a": 2}}}
    streams.append([good, _chunk([call], 1), good, _chunk([other], 2), thought, _chunk([call, other], 3), good])
    streams.append([good, _chunk([call, call], 1), good, _chunk([call], 2), good, _chunk([call, call, call], 3)])
    # A signed part ends its run: the next piece of the same kind is another part.
    signed = _chunk([{"text": "s", "thoughtSignature": _SIGNATURE}], 1)
    signed_thought = _chunk([{"text": "s", "thought": True, "thoughtSignature": _SIGNATURE}], 1)
    streams += [[good, signed, good, thought], [thought, signed_thought, thought, good, signed, good]]
    # After the finish: an event is late, and said so (the reader takes none then).
    stop = _chunk([{"text": ""}], 9, finishReason="STOP")
    streams.append([good, thought, stop, good, thought, _chunk([{"text": ""}], 10)])
    if paid:  # (the text's form last: the streams after it begin with text, read by it)
        return [[thought, thought, thought, good, good, good, *stream] for stream in streams]
    return streams


@pytest.fixture
def vertex_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fuzzed streams of both shapes this decoder reads (a Vertex stream is a Gemini one)."""

    def both(shape: str, count: int) -> list[Any]:
        return [*sample_vectors(shape, count), *sample_vectors("vertex", count)]

    monkeypatch.setattr(said_shortcuts, "sample_vectors", both)


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.usefixtures("vertex_too")
def test_the_gemini_reader_decides_as_the_decoder_for_fed_dicts(monkeypatch: pytest.MonkeyPatch, strict: bool) -> None:
    check_said_reader(monkeypatch, "gemini", GeminiDecoder, _talk, _near(), wire=False, strict=strict)


@pytest.mark.usefixtures("vertex_too")
def test_the_gemini_reader_decides_as_the_decoder_from_the_wire(monkeypatch: pytest.MonkeyPatch) -> None:
    check_said_reader(monkeypatch, "gemini", GeminiDecoder, _talk, _near(), wire=True)


def test_a_talking_turn_reads_its_runs_in_their_places() -> None:
    """What the reader keeps, read back: the thoughts and text in runs, each in its place around
    the call, the signature on its part, and the latest usage."""
    events = _talk(random.Random(2))
    r = Reassembler("gemini")
    for event in events:
        r.feed(event)
    result = r.close()
    said = [p for e in events for p in e["candidates"][0]["content"]["parts"] if p.get("text")]
    thought = "".join(p["text"] for p in said if p.get("thought"))
    assert [(b.place, b.text) for b in result.reasoning] == [(0, thought)]
    assert result.text == "".join(p["text"] for p in said if not p.get("thought"))
    assert [(p.place, p.signature) for p in result.text_parts] == [(1, _SIGNATURE), (3, None)]
    assert result.usage == events[-1]["usageMetadata"]


def _state(r: Reassembler) -> tuple[Any, ...]:
    decoder = r._decoder
    assert isinstance(decoder, GeminiDecoder)
    placed = decoder._placed_now, decoder._passed, decoder._seen_at, decoder._seen_order, decoder._top
    runs = vars(decoder._runs) if decoder._runs is not None else None  # code parts and results
    return decoder._run, decoder._run_thought, decoder._open is None, runs, *placed


def test_the_reader_leaves_the_decoder_as_decode_leaves_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """After each event, what the decoder keeps (its runs, where whole calls were placed in this
    event and before) is the same whether the reader took the event or decode() did; and a decoder
    whose shortcuts are off (as tests compare them) has the reader take nothing."""
    streams = [_talk(random.Random(seed)) for seed in range(4)] + _near()
    real = GeminiDecoder.commonest_said
    taken = [0]

    def counted(self: GeminiDecoder, payload: dict[str, Any], content: Any) -> bool:
        took: bool = real(self, payload, content)
        taken[0] += took
        return took

    monkeypatch.setattr(GeminiDecoder, "commonest_said", counted)
    for events in streams:
        fast, general = Reassembler("gemini"), Reassembler("gemini")
        general._said = None  # what the reassembler asks, kept when the decoder is taken up
        for event in events:
            for r in (fast, general):
                with contextlib.suppress(Exception):  # the same error either way (the tests above)
                    r.feed(event)
            assert _state(fast) == _state(general), event
    assert taken[0] > 100, taken
    quiet = GeminiDecoder()
    quiet.shortcuts = False
    assert not quiet.commonest_said(_chunk([{"text": "ok"}], 1), Reassembler("gemini")._content)


@pytest.mark.usefixtures("vertex_too")
def test_the_gemini_reader_decides_as_the_decoder_from_the_wire_read_by_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    # Events of one text or thought part read by the form learnt from one parsed (the text and each
    # count of the usage beside it its holes), as parsed ones are read.
    check_said_reader(monkeypatch, "gemini", GeminiDecoder, _talk, _near(paid=True), wire=True, forms=True)


def test_most_talking_events_from_the_wire_are_read_by_their_form_with_their_usage() -> None:
    events = [_chunk([{"text": piece, "thought": n < 40}], n) for n, piece in enumerate(["So", " then", "é🙂"] * 30)]
    for event in events:  # the same usage keys in each, as a stream has them once its thinking began
        event["usageMetadata"]["thoughtsTokenCount"] = 45
    r = read_from_the_wire("gemini", events)
    assert r._said_form is not None and r._parsed < 10, r._parsed
    assert r.close().usage == events[-1]["usageMetadata"]


def test_the_reader_by_forms_leaves_the_decoder_as_decode_leaves_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """test_the_reader_leaves_the_decoder_as_decode_leaves_it from the wire: each event as SSE
    bytes of its own, read by its form where one was learnt (said_at), else parsed."""
    streams = [_talk(random.Random(seed)) for seed in range(4)] + _near(paid=True)
    real = GeminiDecoder.said_at
    read = [0]

    def counted(self: GeminiDecoder, kind: Any, counts: Any, piece: str, content: Any) -> bool:
        took: bool = real(self, kind, counts, piece, content)
        read[0] += took
        return took

    monkeypatch.setattr(GeminiDecoder, "said_at", counted)
    for events in streams:
        try:
            wire = [b"data: " + json.dumps(event).encode() + b"\n\n" for event in events]
        except ValueError:  # an index past the int-string limit: no JSON text writes it
            continue
        fast, general = Reassembler("gemini"), Reassembler("gemini")
        general._said = None  # (nor are forms learnt then)
        for event, data in zip(events, wire, strict=True):
            for r in (fast, general):
                with contextlib.suppress(Exception):  # the same error either way (the tests above)
                    r.feed_bytes(data)
            assert _state(fast) == _state(general), event
    assert read[0] > 100, read
