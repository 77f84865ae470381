"""Ollama's reader of a turn's text and thinking (``OllamaDecoder.commonest_said``, issue 17) decides
as decode() and Reassembler._apply do: a line whose ``message`` holds text or thinking and no calls,
neither the last line nor an error, goes straight to the turn's content; every other line, or one
that nearly qualifies, is left to decode() (see tests/test_said_shortcuts.py for what is compared).
Ollama streams NDJSON: the shared check feeds its wire as SSE, which the framing detection reads as
well, so each stream is also fed here as NDJSON, cut in random pieces, with and without the reader."""

from __future__ import annotations

import json
import random
from types import SimpleNamespace
from typing import Any

import pytest

from fsm import Reassembler
from fsm.wire.decoders.ollama import OllamaDecoder
from tests.test_said_shortcuts import check_said_reader, read_from_the_wire
from tests.test_wire_fast_paths import replay_wire


def _line(message: Any, *, done: Any = False, **beside: Any) -> dict[str, Any]:
    at = "2026-12-04T08:00:00.4437234Z"
    return {"model": "qwen3:8b", "created_at": at, "message": message, "done": done, **beside}


def _said(content: Any = "", thinking: Any = None, **beside: Any) -> dict[str, Any]:
    message = {"role": "assistant", "content": content, **beside}
    if thinking is not None:
        message["thinking"] = thinking
    return _line(message)


_END = {
    **_line({"role": "assistant", "content": ""}, done=True, done_reason="stop"),
    "total_duration": 49235573300,
    "load_duration": 35305229300,
    "prompt_eval_count": 316,
    "prompt_eval_duration": 4145222400,
    "eval_count": 56,
    "eval_duration": 9719530300,
}


def _ollama_talk(rng: random.Random) -> list[dict[str, Any]]:
    """A turn that thinks (text empty beside each piece, as Ollama sends it), calls a tool in a line
    of its own, and talks, in many small lines, each stamped; now and then one line holds both."""
    words = ["so ", "then ", "é🙂 ", " 東京", "\n", ""]
    lines = [_said("", rng.choice(words)) for _ in range(20)]
    lines.append(_said(rng.choice(words), rng.choice(words)))
    call = {"id": "call_dwjfhc0f", "function": {"index": 0, "name": "get_weather", "arguments": {"city": "北京"}}}
    lines.append(_line({"role": "assistant", "content": "", "tool_calls": [call]}))
    lines += [_said(rng.choice(["Hello", " there", "\n", "🙂", ""])) for _ in range(30)]
    for n, line in enumerate(lines):  # Ollama stamps each line (its form's other hole)
        line["created_at"] = f"2026-12-04T08:00:{n:02d}.{rng.randrange(10**7):07d}Z"
    return [*lines, _END]


class _Sub(dict):  # type: ignore[type-arg]
    pass


def _ollama_near(paid: bool = False) -> list[list[dict[str, Any]]]:
    """Streams where a line nearly qualifies, each between ones that do."""
    good, thought = _said("ok"), _said("", "hm")
    call = {"function": {"index": 0, "name": "f", "arguments": {}}}
    near = [
        _said(""),
        _said(None),
        _said("", ""),
        _said(7),
        _said(1.5),
        _said(["a"]),
        _said(True),
        _said({"text": "x"}),
        _said("", 7),
        _said("t", ["a"]),
        _said("", {"text": "x"}),
        _said("t", tool_calls=None),
        _said("t", tool_calls=[]),
        _said("t", tool_calls=""),  # not a list: decode() refuses it, though it holds no call
        _said("t", tool_calls=0),
        _said("t", tool_calls={}),
        _said("beside a call", tool_calls=[call]),
        _said("a call of the wrong type", tool_calls={"function": {}}),
        _said("x", images=None, tool_name="f"),  # keys beside that decode() does not read
        _line(_Sub(role="assistant", content="sub")),
        _line(None),
        _line("text"),
        _line(["a"]),
        {"model": "qwen3:8b", "created_at": "2026-12-04T08:00:00Z", "done": False},
        {"model": "qwen3:8b", "message": {"role": "assistant", "content": "no done"}},
        {"message": {"content": "the message alone"}},
        {"model": "qwen3:8b", "response": "a generate line"},
        _line({"role": "assistant", "content": "done now"}, done=True),
        _line({"role": "assistant", "content": "done now", "thinking": "t"}, done=True, done_reason="length"),
        _line({"role": "assistant", "content": "done 1"}, done=1),
        _line({"role": "assistant", "content": "done text"}, done="yes"),
        _line({"role": "assistant", "content": "done 0"}, done=0),
        _line({"role": "assistant", "content": "done none"}, done=None),
        _line({"role": "assistant", "content": "an error beside"}, error="boom"),
        _line({"role": "assistant", "content": "an empty error beside"}, error=""),
        _line({"role": "assistant", "content": "a null error beside"}, error=None),
        _line({"role": "assistant", "content": "a false error beside"}, error=False),
        _line({"role": "assistant", "content": "an error object beside"}, error={"message": "m"}),
        _said("an error in the message", error="boom"),
        _said("\ud83d"),  # a lone surrogate: kept as it came
        _said("", "\udc00"),
        _said("x", extra="a key beside"),
        _line({"role": "assistant", "content": "x"}, extra="a key beside"),
        {**_said("a number for a stamp"), "created_at": 1764835200},
        {**_said("a null stamp"), "created_at": None},
        {key: value for key, value in _said("no stamp").items() if key != "created_at"},
        _said("both", "said"),
    ]
    # Or (``paid``) each after forms that read an event, and thrice: a form learnt from it would read the third.
    around = [good, good, good, thought, thought, thought] if paid else [good, thought]
    streams = [[*around, *[piece] * (3 if paid else 1), good, thought] for piece in near]
    streams.append([good, _line({"role": "assistant", "content": "", "tool_calls": [call]}), thought, _said(""), good])
    # After the finish: a line is late, and said so (the readers take none then).
    streams.append([thought, good, _END, good, thought])
    streams.append([good, {"error": "model not found"}, good])
    return streams


@pytest.mark.parametrize("strict", [False, True])
def test_the_ollama_reader_decides_as_the_decoder_for_fed_dicts(monkeypatch: pytest.MonkeyPatch, strict: bool) -> None:
    check_said_reader(monkeypatch, "ollama", OllamaDecoder, _ollama_talk, _ollama_near(), wire=False, strict=strict)


def test_the_ollama_reader_decides_as_the_decoder_from_sse(monkeypatch: pytest.MonkeyPatch) -> None:
    check_said_reader(monkeypatch, "ollama", OllamaDecoder, _ollama_talk, _ollama_near(), wire=True)


def test_the_ollama_reader_decides_as_the_decoder_from_ndjson(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ollama's own framing: each stream as NDJSON lines in random pieces, with and without the
    reader (and the forms it lets the reassembler learn: the text and the stamp their holes)."""
    made = [_ollama_talk(random.Random(seed)) for seed in range(8)] + _ollama_near() + _ollama_near(paid=True)
    vectors = [
        SimpleNamespace(name=f"ollama-ndjson-{n}", shape="ollama", events=events, body=None, policies={})
        for n, events in enumerate(made)
    ]
    wires = [b"".join(json.dumps(e).encode() + b"\n" for e in v.events) for v in vectors]
    hits = [0]
    real = OllamaDecoder.commonest_said

    def counted(self: OllamaDecoder, payload: dict[str, Any], content: Any) -> bool:
        took = real(self, payload, content)
        hits[0] += took
        return took

    monkeypatch.setattr(OllamaDecoder, "commonest_said", counted)
    fast = [replay_wire(v, w) for v, w in zip(vectors, wires, strict=True)]
    assert hits[0] > 300, hits
    monkeypatch.setattr(OllamaDecoder, "commonest_said", lambda self, payload, content: False)
    general = [replay_wire(v, w) for v, w in zip(vectors, wires, strict=True)]
    for vector, a, b in zip(vectors, fast, general, strict=True):
        assert a == b, vector.name


def test_thinking_and_text_read_by_the_reader_are_the_turns() -> None:
    r = Reassembler("ollama")
    for line in [_said("", "I will"), _said("Hi", " answer"), _said(""), _said(" there"), _END]:
        r.feed(line)
    result = r.close()
    assert result.text == "Hi there"
    assert [block.text for block in result.reasoning] == ["I will answer"]
    assert result.finish_reason == "stop"


def test_the_ollama_reader_decides_as_the_decoder_from_the_wire_read_by_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    check_said_reader(
        monkeypatch, "ollama", OllamaDecoder, _ollama_talk, _ollama_near(paid=True), wire=True, forms=True
    )


def test_most_lines_from_the_wire_are_read_by_their_form_whatever_their_stamp() -> None:
    events = _ollama_talk(random.Random(4))
    r = read_from_the_wire("ollama", events)
    assert r._said_form is not None and r._parsed < len(events) // 2, (r._parsed, len(events))
