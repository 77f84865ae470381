"""Bedrock ConverseStream's commonest text and reasoning events, taken straight to the turn's
content (``BedrockDecoder.commonest_said``, issue 17), decide exactly as decode() and
Reassembler._apply do: over every vector, fuzzed streams, talk-heavy turns and events that nearly
qualify, fed as dicts (lax and strict) and as wire bytes in random pieces (check_said_reader).

The reader marks the block as decode() does (a text block has text, so its citations go back on
it; a reasoning block takes none), and takes nothing until the stream is known to be a
ConverseStream: the decoder also reads InvokeModel streams, whose events are another wire's.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from fsm.wire.decoders.bedrock import BedrockDecoder
from tests.test_said_shortcuts import check_said_reader, read_from_the_wire


def _padding(rng: random.Random) -> str:
    """Bedrock's random-length ``p`` field, beside every event's members."""
    return "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[: rng.randint(1, 60)]


def _talk(rng: random.Random) -> list[dict[str, Any]]:
    """A turn of Claude through Converse: it reasons, talks, calls a tool and talks again in a block
    with no start (as Nova does), in many small deltas, each event padded."""

    def event(kind: str, **body: Any) -> dict[str, Any]:
        return {kind: {**body, "p": _padding(rng)}}

    def delta(at: int, said: dict[str, Any]) -> dict[str, Any]:
        return event("contentBlockDelta", contentBlockIndex=at, delta=said)

    words = ["Hello", " there", "\n", "🙂", " café", " 東京"]
    events = [event("messageStart", role="assistant")]
    events += [delta(0, {"reasoningContent": {"text": rng.choice([*words, ""])}}) for _ in range(20)]
    events += [delta(0, {"reasoningContent": {"signature": "RXF1"}}), event("contentBlockStop", contentBlockIndex=0)]
    events += [delta(1, {"text": rng.choice(words)}) for _ in range(30)]
    events.append(event("contentBlockStop", contentBlockIndex=1))
    start = {"toolUse": {"toolUseId": "tooluse_1", "name": "get_temperature"}}
    events.append(event("contentBlockStart", contentBlockIndex=2, start=start))
    events += [delta(2, {"toolUse": {"input": piece}}) for piece in ['{"city"', ':"Paris"}']]
    events.append(event("contentBlockStop", contentBlockIndex=2))
    events += [delta(3, {"text": rng.choice(words)}) for _ in range(10)]
    events += [event("contentBlockStop", contentBlockIndex=3), event("messageStop", stopReason="tool_use")]
    usage = {"inputTokens": 471, "outputTokens": 91, "totalTokens": 562}
    return [*events, event("metadata", usage=usage, metrics={"latencyMs": 422})]


class _Body(dict):  # type: ignore[type-arg]
    pass


def _near(paid: bool = False) -> list[list[Any]]:
    """Streams where a text or reasoning delta nearly qualifies, each between ones that do."""

    def delta(at: Any, said: Any, **beside: Any) -> dict[str, Any]:
        return {"contentBlockDelta": {"contentBlockIndex": at, "delta": said, **beside}}

    def stop(at: int) -> dict[str, Any]:
        return {"contentBlockStop": {"contentBlockIndex": at}}

    result = {"toolResult": {"toolUseId": "tooluse_s", "type": "nova_code_interpreter_result", "status": "success"}}
    server = {"toolUse": {"toolUseId": "tooluse_s", "name": "nova_code_interpreter", "type": "server_tool_use"}}
    start = [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": {"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "t", "name": "f"}}}},
        {"contentBlockStart": {"contentBlockIndex": 3, "start": server}},
        {"contentBlockStart": {"contentBlockIndex": 4, "start": result}},
    ]
    good = delta(1, {"text": "ok"})
    thought = delta(0, {"reasoningContent": {"text": "so"}})
    cited = {"title": "t", "location": {"documentChar": {"documentIndex": 0, "start": 0, "end": 2}}}
    no_index = {"contentBlockDelta": {"delta": {"text": "no index"}}}
    near: list[Any] = [
        delta(1, {"text": ""}),
        delta(5, {"text": ""}),  # empty: no event, so no text part at 5
        delta(1, {"text": None}),
        delta(1, {"text": 7}),
        delta(1, {"text": ["a"]}),
        delta(1, {"text": "a", "citation": cited}),
        delta(1, {"text": "a", "reasoningContent": {"text": "b"}}),
        delta(1, {"text": "a", "toolUse": None}),
        delta(1, {"text": "a", "image": {"format": "png"}}),
        delta(1, {"text": "a", "toolResult": [{"text": "r"}]}),
        delta(1, {"citation": cited}),
        delta(1, {}),
        delta(1, None),
        delta(1, [("text", "a")]),
        delta(1, _Body(text="a dict of its own")),
        delta(0, {"reasoningContent": {"text": ""}}),
        delta(0, {"reasoningContent": {"text": None}}),
        delta(0, {"reasoningContent": {"text": 1.5}}),
        delta(0, {"reasoningContent": {"text": "b", "signature": "c2ln"}}),
        delta(0, {"reasoningContent": {"signature": "c2ln"}}),
        delta(0, {"reasoningContent": {"redactedContent": "UkVE"}}),
        delta(0, {"reasoningContent": {}}),
        delta(0, {"reasoningContent": None}),
        delta(0, {"reasoningContent": "text"}),
        delta(0, {"reasoningContent": _Body(text="a dict of its own")}),
        delta(2, {"text": "text in the tool block"}),
        delta(2, {"reasoningContent": {"text": "reasoning in the tool block"}}),
        delta(3, {"text": "text in the server tool's block"}),
        delta(4, {"text": "text in the server tool's result block"}),
        delta(4, {"reasoningContent": {"text": "reasoning in the result block"}}),
        no_index,
        delta(None, {"text": "a null index"}),
        delta(True, {"text": "a bool index"}),
        delta(-1, {"text": "below 0"}),
        delta(-1, {"reasoningContent": {"text": "below 0"}}),
        delta(1 << 63, {"text": "past 63 bits"}),
        delta(10**5000, {"text": "past the int-string limit"}),
        delta(10**5000, {"reasoningContent": {"text": "past the int-string limit"}}),
        delta(1.0, {"text": "a float index"}),
        delta("1", {"text": "a text index"}),
        delta(1, {"text": "\ud83d"}),  # a lone surrogate: kept as it came
        delta(1, {"text": "beside"}, p="abc", extra={"any": 1}),  # the body's other members are not read
        {**delta(1, {"text": "and a stop"}), "contentBlockStop": {"contentBlockIndex": 0}},
        {**delta(1, {"text": "and usage"}), "metadata": {"usage": {"inputTokens": 1}}},
        {**delta(1, {"text": "typed"}), "type": "contentBlockDelta"},
        {"contentBlockDelta": _Body(contentBlockIndex=1, delta={"text": "a body of its own"})},
        {"contentBlockDelta": None},
        {"contentBlockDelta": "text"},
    ]
    # Or (``paid``) each after forms that read an event, and thrice: a form learnt from it would read the third.
    around = [good, good, good, thought, thought, thought] if paid else [good, thought]
    streams: list[list[Any]] = [[*start, *around, *[piece] * (3 if paid else 1), good, thought] for piece in near]
    # Citations of a block the reader read: on the text block's text; refused on a reasoning block.
    streams.append([*start, good, delta(1, {"citation": cited}), stop(1), thought, delta(0, {"citation": cited})])
    streams.append([*start, thought, good, delta(1, {"citation": cited}), delta(0, {"citation": cited}), stop(0)])
    # The first events before any ConverseStream event: an exception's, or none at all.
    streams.append([{"throttlingException": {"message": "slow down"}}, good, thought])
    streams.append([good, thought, good, stop(1)])
    # An InvokeModel stream fed as its events, not its chunks: a ConverseStream event among them.
    claude = {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}}
    streams.append([claude, good, thought, {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}])
    # Said after the finish: late, and said so (the readers take none then).
    streams.append([*start, good, {"messageStop": {"stopReason": "end_turn"}}, good, thought])
    return streams


@pytest.mark.parametrize("strict", [False, True])
def test_the_bedrock_reader_decides_as_the_decoder_for_fed_dicts(monkeypatch: pytest.MonkeyPatch, strict: bool) -> None:
    check_said_reader(monkeypatch, "bedrock", BedrockDecoder, _talk, _near(), wire=False, strict=strict)


def test_the_bedrock_reader_decides_as_the_decoder_from_the_wire(monkeypatch: pytest.MonkeyPatch) -> None:
    check_said_reader(monkeypatch, "bedrock", BedrockDecoder, _talk, _near(), wire=True)


def test_the_bedrock_reader_decides_as_the_decoder_from_the_wire_read_by_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    # Talking events read by the form learnt from one parsed (the text, the block's index and the
    # padding its holes), as parsed ones are read.
    check_said_reader(monkeypatch, "bedrock", BedrockDecoder, _talk, _near(paid=True), wire=True, forms=True)


def test_most_talking_events_from_the_wire_are_read_by_their_form() -> None:
    events = _talk(random.Random(4))
    r = read_from_the_wire("bedrock", events)
    assert r._said_form is not None and r._parsed < len(events) // 3, (r._parsed, len(events))
