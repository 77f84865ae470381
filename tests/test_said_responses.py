"""OpenAI Responses' commonest text and reasoning events, taken straight to the turn's content
(``OpenAIResponsesDecoder.commonest_said``, issue 17), decide exactly as decode() and
Reassembler._apply do: over every vector, fuzzed streams, talk-heavy turns and events that nearly
qualify, fed as dicts (lax and strict) and as wire bytes in random pieces (check_said_reader).

``response.reasoning_summary_text.delta``, the commonest event of an o-series reasoning turn, is
taken as what decode() makes of it, nothing: the reader says so with None, not True, for no event
means no _apply, so the snapshot a resent built-in item's start landed in still names its call for
that item's end (the stream ``_SUMMARY_BETWEEN_A_RESEND``); taken as an event, the reassembler
would forget it and bind the end apart.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from fsm import Reassembler
from fsm.content import TurnContent
from fsm.wire.decoders.openai_responses import OpenAIResponsesDecoder
from tests.helpers import replay_traced
from tests.test_said_shortcuts import check_said_reader, read_from_the_wire


def _talk(rng: random.Random) -> list[dict[str, Any]]:
    """A reasoning turn as OpenAI streams it: a summary and reasoning text, a message in many
    small deltas, a function call, then a second message; every event with its sequence number,
    the deltas with their item id, content index, logprobs and obfuscation padding."""
    words = ["Hello", " there", "\n", "🙂", " café", ""]
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}},
        {"type": "response.in_progress", "response": {"id": "resp_1", "status": "in_progress", "output": []}},
    ]
    reasoning = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAA"}
    events.append({"type": "response.output_item.added", "output_index": 0, "item": reasoning})
    part = {"item_id": "rs_1", "output_index": 0, "summary_index": 0}
    events.append({"type": "response.reasoning_summary_part.added", **part, "part": {"type": "summary_text"}})
    for _ in range(rng.randint(3, 8)):
        piece = rng.choice(words[:-1])
        events.append({"type": "response.reasoning_summary_text.delta", **part, "delta": piece, "obfuscation": "Zx"})
    events.append({"type": "response.reasoning_summary_text.done", **part, "text": "..."})
    for _ in range(15):
        said = {"item_id": "rs_1", "output_index": 0, "content_index": 0, "delta": rng.choice(words)}
        events.append({"type": "response.reasoning_text.delta", **said, "obfuscation": "q"})
    reasoning_done = {**reasoning, "summary": [{"type": "summary_text", "text": "..."}]}
    events.append({"type": "response.output_item.done", "output_index": 0, "item": reasoning_done})

    def message(at: int, item_id: str, n: int) -> None:
        item = {"id": item_id, "type": "message", "status": "in_progress", "content": [], "role": "assistant"}
        events.append({"type": "response.output_item.added", "output_index": at, "item": item})
        where = {"item_id": item_id, "output_index": at, "content_index": 0}
        text_part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        events.append({"type": "response.content_part.added", **where, "part": text_part})
        for _ in range(n):
            piece = rng.choice(words)
            events.append(
                {"type": "response.output_text.delta", **where, "delta": piece, "logprobs": [], "obfuscation": "k3"}
            )
        events.append({"type": "response.output_text.done", **where, "text": "...", "logprobs": []})
        events.append({"type": "response.content_part.done", **where, "part": {**text_part, "text": "..."}})
        done = {**item, "status": "completed", "content": [{**text_part, "text": "..."}]}
        events.append({"type": "response.output_item.done", "output_index": at, "item": done})

    message(1, "msg_1", 30)
    call = {"id": "fc_1", "type": "function_call", "status": "in_progress", "arguments": "", "call_id": "call_1"}
    call["name"] = "get_weather"
    events.append({"type": "response.output_item.added", "output_index": 2, "item": call})
    for piece in ['{"city"', ': "Pa', 'ris"}']:
        events.append(
            {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 2, "delta": piece}
        )
    arguments = '{"city": "Paris"}'
    events.append(
        {"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 2, "arguments": arguments}
    )
    done_call = {**call, "status": "completed", "arguments": arguments}
    events.append({"type": "response.output_item.done", "output_index": 2, "item": done_call})
    message(3, "msg_2", 10)
    usage = {"input_tokens": 9, "output_tokens": 90, "output_tokens_details": {"reasoning_tokens": 40}}
    end = {"id": "resp_1", "status": "completed", "output": [], "usage": usage}
    events.append({"type": "response.completed", "response": end})
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


class _Typed(str):
    """A type that is equal to the text delta's but writes itself as a refusal's (str() of it)."""

    __slots__ = ()

    def __str__(self) -> str:
        return "response.refusal.delta"


class _Event(dict):  # type: ignore[type-arg]
    pass


_SHELL = {"type": "shell_call", "id": "sh_1", "call_id": "c1", "status": "completed", "action": {"commands": ["ls"]}}
_SUMMARY = {"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "delta": "x"}
_SUMMARY_BETWEEN_A_RESEND = [
    {"type": "response.created", "response": {"id": "resp_1"}},
    {"type": "response.output_item.added", "output_index": 1, "item": _SHELL},
    {"type": "response.output_item.done", "output_index": 1, "item": _SHELL},
    {"type": "response.output_item.added", "output_index": 1, "item": _SHELL},  # resent: it lands in the ended call
    _SUMMARY,
    {"type": "response.output_item.done", "output_index": 1, "item": {**_SHELL, "note": "its item, the latest"}},
    {"type": "response.completed", "response": {"id": "resp_1"}},
]
"""A summary delta between a resent built-in item's start and its end: decode() makes no event of
it, so its end's item goes on the call the start's snapshot landed in."""


def _near() -> list[list[Any]]:
    """Streams where a text or reasoning delta nearly qualifies, each between ones that do."""

    def said(at: Any, piece: Any, kind: Any = "response.output_text.delta", **beside: Any) -> dict[str, Any]:
        return {"type": kind, "item_id": "msg_1", "output_index": at, "content_index": 0, "delta": piece, **beside}

    reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
    message = {"type": "message", "id": "msg_1", "role": "assistant", "content": [], "status": "in_progress"}
    call = {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "f", "arguments": ""}
    start = [
        {"type": "response.created", "response": {"id": "resp_1"}},
        {"type": "response.output_item.added", "output_index": 0, "item": reasoning},
        {"type": "response.output_item.added", "output_index": 1, "item": message},
        {"type": "response.output_item.added", "output_index": 2, "item": call},
    ]
    good = said(1, "ok")
    thought = said(0, "so", "response.reasoning_text.delta")
    no_index = said(1, "no index")
    del no_index["output_index"]
    near: list[Any] = [
        said(1, ""),
        said(4, ""),  # empty: no event, so no text part at 4
        said(1, None),
        said(1, 7),
        said(1, 1.5),
        said(1, ["a"]),
        said(1, {"text": "a"}),
        {"type": "response.output_text.delta", "output_index": 1},
        said(0, "", "response.reasoning_text.delta"),
        said(0, None, "response.reasoning_text.delta"),
        said(0, 3, "response.reasoning_text.delta"),
        said(0, "summed up", "response.reasoning_summary_text.delta", summary_index=0),
        said(1, "no", "response.refusal.delta"),
        said(1, "typo", "response.output_text.deltas"),
        said(1, "a number", 7),
        said(1, "none", None),
        said(1, "a list", ["response.output_text.delta"]),
        said(1, "a type of its own", _Typed("response.output_text.delta")),
        _Event(said(1, "a dict of its own")),
        {"type": "response.output_text.annotation.added", "output_index": 1, "annotation": {"url": "u"}},
        said(2, "text for the call's item"),
        said(2, "reasoning for the call's item", "response.reasoning_text.delta"),
        said(7, "at an item never announced"),
        no_index,
        said(None, "a null index"),
        said(True, "a bool index"),
        said(-1, "below 0"),
        said(-1, "below 0", "response.reasoning_text.delta"),
        said(1 << 63, "past 63 bits"),
        said(10**5000, "past the int-string limit"),
        said(10**5000, "past the int-string limit", "response.reasoning_text.delta"),
        said(1.0, "a float index"),
        said("1", "a text index"),
        said(1, "\ud83d"),  # a lone surrogate: kept as it came
        said(1, "logprobs", logprobs=[{"token": "a", "logprob": -0.1}], obfuscation=None, sequence_number="7"),
        said(1, "an item id of another", item_id=42, content_index=None),
    ]
    streams: list[list[Any]] = [[*start, good, thought, piece, good, thought] for piece in near]
    streams.append(_SUMMARY_BETWEEN_A_RESEND)
    # Said after the finish: late, and said so (the readers take none then).
    streams.append([*start, good, {"type": "response.completed", "response": {}}, good, thought])
    # An error ends the turn; what follows is late.
    streams.append([*start, thought, {"type": "error", "message": "overloaded"}, thought, good])
    return streams


@pytest.mark.parametrize("strict", [False, True])
def test_the_responses_reader_decides_as_the_decoder_for_fed_dicts(
    monkeypatch: pytest.MonkeyPatch, strict: bool
) -> None:
    decoder = OpenAIResponsesDecoder
    check_said_reader(monkeypatch, "openai-responses", decoder, _talk, _near(), wire=False, strict=strict)


def test_the_responses_reader_decides_as_the_decoder_from_the_wire(monkeypatch: pytest.MonkeyPatch) -> None:
    check_said_reader(monkeypatch, "openai-responses", OpenAIResponsesDecoder, _talk, _near(), wire=True)


def test_the_reader_decides_as_the_decoder_from_the_wire_read_by_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    # Talking events read by the form learnt from one parsed (the text, the output index, the
    # sequence number and the padding its holes), as parsed ones are read.
    check_said_reader(monkeypatch, "openai-responses", OpenAIResponsesDecoder, _talk, _near(), wire=True, forms=True)


def test_most_talking_events_from_the_wire_are_read_by_their_form() -> None:
    events = _talk(random.Random(3))
    r = read_from_the_wire("openai-responses", events)
    assert r._said_form is not None and r._parsed < len(events) // 2, (r._parsed, len(events))


def test_a_summary_delta_is_taken_as_no_event_as_a_resent_items_end_needs_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Policy: the reader takes an event decode() makes nothing of as no event (None), which leaves
    what _apply resets as it was. Taken as an event (True), the summary delta would bind the item's
    end to its call once more, a rule count apart; left to decode() (False), it reads the same."""

    def replay() -> object:
        def feed(r: Reassembler) -> Any:
            for event in _SUMMARY_BETWEEN_A_RESEND:
                yield r.feed(event)

        return replay_traced(Reassembler("openai-responses"), feed)

    real = OpenAIResponsesDecoder.commonest_said
    assert real(OpenAIResponsesDecoder(), dict(_SUMMARY), TurnContent()) is None
    taken = replay()

    def told(answer: bool) -> Any:
        def reader(self: Any, payload: dict[str, Any], content: Any) -> bool | None:
            took = real(self, payload, content)
            return answer if took is None else took

        return reader

    monkeypatch.setattr(OpenAIResponsesDecoder, "commonest_said", told(False))
    assert replay() == taken
    monkeypatch.setattr(OpenAIResponsesDecoder, "commonest_said", told(True))
    assert replay() != taken
