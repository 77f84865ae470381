"""OpenAI chat's plainest text and reasoning chunks from the wire (``OpenAIChatDecoder.commonest_said``,
issue 17): once one was parsed and taken, its form (chunk_form.FragmentForm: the text and the
padding its holes) reads the next ones unparsed, and the turn is what decode() and
Reassembler._apply make of every chunk parsed (see tests/test_said_shortcuts.py for what is
compared). A fed dict meets the chunk shortcut first, which takes every chunk this reader takes."""

from __future__ import annotations

import random
from typing import Any

import pytest

from fsm.wire.decoders.openai_chat import OpenAIChatDecoder
from tests.test_said_shortcuts import check_said_reader, read_from_the_wire

_ENVELOPE = {
    "id": "chatcmpl-CXr0aB9v",
    "object": "chat.completion.chunk",
    "created": 1764853200,
    "model": "gpt-5-mini-2025-08-07",
    "service_tier": "default",
    "system_fingerprint": None,
}


def _chunk(delta: Any, *, finish: Any = None, padding: str | None = None, **beside: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    chunk: dict[str, Any] = {**_ENVELOPE, "choices": [choice], **beside}
    if padding is not None:
        chunk["obfuscation"] = padding
    return chunk


def _pad(rng: random.Random) -> str:
    return "".join(rng.choice("abcdefXYZ0123") for _ in range(rng.randrange(1, 12)))


def _chat_talk(rng: random.Random, beside: float = 0.2) -> list[dict[str, Any]]:
    """A reasoning turn as OpenAI-compatible servers send it: reasoning under ``reasoning_content``
    (DeepSeek, vLLM) or ``reasoning`` (OpenRouter), text, a call between, OpenAI's random padding
    on each chunk, some (``beside``, a share) with their logprobs beside, then the finish and the usage."""
    padded = rng.random() < 0.5
    pad = (lambda: _pad(rng)) if padded else (lambda: None)
    key = rng.choice(["reasoning_content", "reasoning"])
    events = [_chunk({"role": "assistant", "content": None, key: ""}, padding=pad())]
    for _ in range(30):
        piece = rng.choice(["I", " should", " call", "", "\n", "é🙂", ' "quoted"', "\\"])
        events.append(_chunk({key: piece}, padding=pad()))
    for _ in range(30):
        piece = rng.choice(["Hello", " there", "\n", "🙂", " 東京", "", "\t\u0001"])
        if rng.random() < beside:
            events.append(_chunk({"content": piece}, padding=pad(), logprobs=None))
        else:
            events.append(_chunk({"content": piece}, padding=pad()))
    entry = {"index": 0, "id": "call_Ab3", "type": "function", "function": {"name": "weather", "arguments": ""}}
    events.append(_chunk({"tool_calls": [entry]}, padding=pad()))
    for piece in ['{"', "city", '": "', "Paris", '"}']:
        events.append(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}, padding=pad()))
    events += [_chunk({"content": rng.choice(["ok", " done"])}, padding=pad()) for _ in range(10)]
    events.append(_chunk({}, finish="tool_calls", padding=pad()))
    usage = {"prompt_tokens": 20, "completion_tokens": 70, "total_tokens": 90}
    return [*events, {**_ENVELOPE, "choices": [], "usage": usage}]


def _chat_near() -> list[list[dict[str, Any]]]:
    """Streams where a text or reasoning chunk nearly qualifies, each between ones that do (so a
    form is learnt before it), and streams whose envelope changes."""
    good, thought = _chunk({"content": "ok"}), _chunk({"reasoning_content": "so"})
    near = [
        _chunk({"content": ""}),
        _chunk({"content": None}),
        _chunk({"content": 7}),
        _chunk({"content": ["a"]}),
        _chunk({"content": [{"type": "text", "text": "typed"}]}),
        _chunk({"content": {"text": "x"}}),
        _chunk({"content": True}),
        _chunk({"reasoning_content": 1.5}),
        _chunk({"reasoning": ["a"]}),
        _chunk({"content": "both", "reasoning_content": "said"}),
        _chunk({"reasoning_content": "two", "reasoning": "keys"}),
        _chunk({"content": "a refusal beside", "refusal": None}),
        _chunk({"content": "calls beside", "tool_calls": None}),
        _chunk({"content": "calls beside", "tool_calls": []}),
        _chunk({"content": "x", "function_call": None}),
        _chunk({"content": "x"}, finish="stop"),
        _chunk({"content": "x"}, finish=""),
        _chunk({"content": "x"}, usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}),
        _chunk({"content": "x"}, usage=None),
        _chunk({"content": "x"}, error={"message": "overloaded"}),
        _chunk({"content": "x"}, padding="a padding where there was none"),
        {**_chunk({"content": "another model"}), "model": "gpt-5"},
        {**_chunk({"content": "another moment"}), "created": 1764853201},
        {**_ENVELOPE, "choices": [{"index": 1, "delta": {"content": "choice 1"}, "finish_reason": None}]},
        {**_ENVELOPE, "choices": [{"index": True, "delta": {"content": "a bool choice"}, "finish_reason": None}]},
        {**_ENVELOPE, "choices": [{"index": 0, "delta": {"content": "a"}}, {"index": 1, "delta": {"content": "b"}}]},
        {**_ENVELOPE, "choices": [{"index": 0, "message": {"content": "no delta"}, "finish_reason": None}]},
        {**_ENVELOPE, "choices": [{"index": 0, "delta": None, "finish_reason": None}]},
        {**_ENVELOPE, "choices": []},
        _chunk({"content": "\ud83d"}),  # a lone surrogate: kept as it came
        _chunk({"reasoning_content": "\udc00"}),
        _chunk({"content": "x", "extra_content": {"google": {"thought_signature": "c2ln"}}}),
        _chunk({"content": "x", "provider_specific_fields": {"citations": []}}),
        _chunk({"content": "a role beside", "role": "assistant"}),
    ]
    # Each after forms that paid (read a chunk), and thrice: a form learnt from it would read the third.
    streams = [[good, good, good, thought, thought, thought, piece, piece, piece, good, thought] for piece in near]
    # Text at the index of a call still open, between its fragments: not the call's.
    entry = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}}
    fragment = _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]})
    streams.append([good, good, _chunk({"tool_calls": [entry]}), good, good, fragment, good])
    # After the finish: a chunk is late, and said so (the readers take none then).
    stop = _chunk({}, finish="stop")
    streams.append([good, good, good, stop, good, thought, good])
    # The padding's key holding no string, then a string.
    streams.append([good, good, _chunk({"content": "p"}, obfuscation=5), _chunk({"content": "q"}, padding="z")])
    return streams


def test_the_chat_reader_decides_as_the_shortcut_from_the_wire(monkeypatch: pytest.MonkeyPatch) -> None:
    check_said_reader(monkeypatch, "openai-chat", OpenAIChatDecoder, _chat_talk, _chat_near(), wire=True)


def test_the_chat_reader_decides_as_the_shortcut_from_the_wire_read_by_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    check_said_reader(monkeypatch, "openai-chat", OpenAIChatDecoder, _chat_talk, _chat_near(), wire=True, forms=True)


def test_the_chat_reader_and_its_forms_decide_as_the_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the chunk shortcut off, what the reader and its forms do not take is decoded: the
    replay is then held to decode() and _apply of every chunk, not to the shortcut."""
    monkeypatch.setattr(OpenAIChatDecoder, "shortcut", lambda self, payload, registry, content: False)
    check_said_reader(monkeypatch, "openai-chat", OpenAIChatDecoder, _chat_talk, _chat_near(), wire=True, forms=True)


def test_most_text_chunks_from_the_wire_are_read_by_their_form() -> None:
    for seed in range(4):
        events = _chat_talk(random.Random(seed), beside=0)
        r = read_from_the_wire("openai-chat", events)
        # Parsed: the empty pieces (no form reads one), two of each kind before its form is
        # learnt, the call's chunks, the finish and the usage.
        empty = sum(1 for e in events if e["choices"] and not any(e["choices"][0]["delta"].values()))
        assert r._said_form is not None and r._parsed <= empty + 6 + 6 + 2, (seed, r._parsed, empty)
