"""Cohere v2 chat's reader of a turn's text and plan (``CohereDecoder.commonest_said``, issue 17)
decides as decode() and Reassembler._apply do: a ``content-delta`` piece is the turn's text, a
``tool-plan-delta`` piece its one reasoning block, and every other event, or one that nearly
qualifies, is left to decode() (see tests/test_said_shortcuts.py for what is compared)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from fsm import Reassembler
from fsm.wire.decoders.cohere import CohereDecoder
from tests.test_said_shortcuts import check_said_reader, read_from_the_wire


def _text(at: Any, piece: Any, **beside: Any) -> dict[str, Any]:
    return {"type": "content-delta", "index": at, "delta": {"message": {"content": {"text": piece}}}, **beside}


def _plan(piece: Any, **beside: Any) -> dict[str, Any]:
    return {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": piece}}, **beside}


_START = {
    "id": "2941521a-b87a-45f6-9b0d-235fd66c3025",
    "type": "message-start",
    "delta": {"message": {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}},
}
_USAGE = {"billed_units": {"input_tokens": 119, "output_tokens": 44}, "tokens": {"input_tokens": 1549}}


def _cohere_talk(rng: random.Random, logprobs: float = 0.3) -> list[dict[str, Any]]:
    """A turn that plans (no index, as Cohere sends it), calls a tool, then talks in many small
    deltas, some (``logprobs``, a share) with their logprobs beside, as a turn asked for them carries."""
    events: list[dict[str, Any]] = [_START]
    events += [_plan(rng.choice(["I", " will", " use", "", " the tool", "é🙂"])) for _ in range(20)]
    call = {"id": "weather_e8p4pn45zt0t", "type": "function", "function": {"name": "weather", "arguments": ""}}
    events.append({"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": call}}})
    for piece in ['{"', "location", '": "', "San Francisco", '"}']:
        fragment = {"function": {"arguments": piece}}
        events.append({"type": "tool-call-delta", "index": 0, "delta": {"message": {"tool_calls": fragment}}})
    events.append({"type": "tool-call-end", "index": 0})
    opened = {"message": {"content": {"type": "text", "text": ""}}}
    events.append({"type": "content-start", "index": 0, "delta": opened})
    for _ in range(40):
        piece = rng.choice(["Hello", " there", "\n", "🙂", " 東京", ""])
        beside = {"logprobs": {"token_ids": [rng.randrange(9999)]}} if rng.random() < logprobs else {}
        events.append(_text(0, piece, **beside))
    events.append({"type": "content-end", "index": 0})
    return [*events, {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL", "usage": _USAGE}}]


class _Sub(dict):  # type: ignore[type-arg]
    pass


def _cohere_near(paid: bool = False) -> list[list[dict[str, Any]]]:
    """Streams where a text or plan delta nearly qualifies, each between ones that do."""
    opened = {"message": {"content": {"type": "text", "text": ""}}}
    start = [_START, {"type": "content-start", "index": 0, "delta": opened}]
    good, plan = _text(0, "ok"), _plan("so")
    near = [
        _text(0, ""),
        _text(0, None),
        _text(0, 7),
        _text(0, 1.5),
        _text(0, ["a"]),
        _text(0, True),
        {"type": "content-delta", "index": 0, "delta": {"message": {"content": {}}}},
        {"type": "content-delta", "index": 0, "delta": {"message": {"content": None}}},
        {"type": "content-delta", "index": 0, "delta": {"message": {"content": "text"}}},
        {"type": "content-delta", "index": 0, "delta": {"message": {"content": _Sub(text="sub")}}},
        {"type": "content-delta", "index": 0, "delta": {"message": _Sub(content={"text": "sub"})}},
        {"type": "content-delta", "index": 0, "delta": _Sub(message={"content": {"text": "sub"}})},
        {"type": "content-delta", "index": 0, "delta": {"message": None}},
        {"type": "content-delta", "index": 0, "delta": {"message": ["a"]}},
        {"type": "content-delta", "index": 0, "delta": None},
        {"type": "content-delta", "index": 0, "delta": [("message", "m")]},
        {"type": "content-delta", "index": 0},
        _plan(""),  # no event, so no reasoning block: taking it would make an empty one
        _plan(None),
        _plan(3),
        _plan({"text": "x"}),
        _plan("at an index", index=2),
        {"type": "tool-plan-delta", "delta": {"message": {"content": {"text": "the wrong key"}}}},
        {"type": "content-delta", "index": 0, "delta": {"message": {"tool_plan": "the wrong key"}}},
        _text(None, "no index"),
        _text(True, "a bool index"),
        _text(-1, "below 0"),
        _text(1 << 63, "past 63 bits"),
        _text(1 << 64, "past 64 bits"),
        _text(10**5000, "past the int-string limit"),
        _text(0.0, "a float index"),
        _text("0", "a text index"),
        _text(5, "at a part never started"),
        _plan("plan", index=True),
        _plan("plan", index=1.5),
        {**_text(0, "no type"), "type": None},
        {**_text(0, "a number for its type"), "type": 7},
        {**_text(0, "another kind"), "type": "content-start"},
        {**_text(0, "an unknown kind"), "type": "content-deltas"},
        {**_plan("an unknown kind"), "type": "citation-start"},
        _text(0, "\ud83d"),  # a lone surrogate: kept as it came
        _plan("\udc00"),
        _text(0, "x", extra="a key beside"),
        {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "x", "thinking": "y"}}}},
        {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"thinking": "y", "text": "x"}}}},
        {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "x", "thinking": ""}}}},
        _text(0, "x", error="a key beside"),
    ]
    # Or (``paid``) each after forms that read an event, and thrice: a form learnt from it would read the third.
    around = [good, good, good, plan, plan, plan] if paid else [good, plan]
    streams = [[*start, *around, *[piece] * (3 if paid else 1), good, plan] for piece in near]
    # Text at the index of a call still open, a plan between its deltas: neither is the call's.
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}}
    piece = {"message": {"tool_calls": {"function": {"arguments": "{}"}}}}
    fragment = {"type": "tool-call-delta", "index": 0, "delta": piece}
    opened_call = {"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": call}}}
    streams.append([_START, opened_call, _text(0, "beside"), plan, fragment, {"type": "tool-call-end", "index": 0}])
    # An empty plan first: taken, it would make an empty reasoning block the stream never had.
    streams.append([*start, _plan(""), good, _plan("")])
    # After the finish: an event is late, and said so (the readers take none then).
    end = {"type": "message-end", "delta": {"finish_reason": "COMPLETE"}}
    streams.append([*start, good, end, good, plan])
    streams.append([*start, plan, {"type": "message-end", "delta": {"error": "boom"}}, good])
    return streams


@pytest.mark.parametrize("strict", [False, True])
def test_the_cohere_reader_decides_as_the_decoder_for_fed_dicts(monkeypatch: pytest.MonkeyPatch, strict: bool) -> None:
    check_said_reader(monkeypatch, "cohere", CohereDecoder, _cohere_talk, _cohere_near(), wire=False, strict=strict)


def test_the_cohere_reader_decides_as_the_decoder_from_the_wire(monkeypatch: pytest.MonkeyPatch) -> None:
    check_said_reader(monkeypatch, "cohere", CohereDecoder, _cohere_talk, _cohere_near(), wire=True)


def test_a_plan_and_text_read_by_the_reader_are_the_turns() -> None:
    r = Reassembler("cohere")
    for event in [_START, _plan("I will"), _plan(" call"), _text(0, "Hi"), _text(0, ""), _text(3, " there")]:
        r.feed(event)
    r.feed({"type": "message-end", "delta": {"finish_reason": "COMPLETE"}})
    result = r.close()
    assert result.text == "Hi there"
    assert [block.text for block in result.reasoning] == ["I will call"]


def test_the_cohere_reader_decides_as_the_decoder_from_the_wire_read_by_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    # Talking events read by the form learnt from one parsed (the text its one hole), as parsed ones are read.
    check_said_reader(
        monkeypatch, "cohere", CohereDecoder, _cohere_talk, _cohere_near(paid=True), wire=True, forms=True
    )


def test_most_talking_events_from_the_wire_are_read_by_their_form() -> None:
    events = _cohere_talk(random.Random(4), logprobs=0)
    r = read_from_the_wire("cohere", events)
    assert r._said_form is not None and r._parsed < len(events) // 2, (r._parsed, len(events))
