"""``fsm.reassemble`` / ``fsm.areassemble``: one call for any stream, and the SDK objects read by duck
typing (fsm/wire/sdk.py). The real clients are driven in tests/test_clients.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

import fsm
from fsm.errors import InvalidInput, LocalProtocolError
from fsm.events import ReasoningDelta, TextDelta, UsageReport
from fsm.wire.langchain_chunks import langchain_chunk
from fsm.wire.sdk import sdk_payload
from tests.conftest import CAPTURES, require_captures
from tests.helpers import chunk, tc

WIRE = [
    {**chunk(tc(index=0, id="a", name="f", args='{"q": ')), "usage": None},
    chunk(tc(index=0, args='"A"}')),
    chunk(finish="tool_calls"),
]


def calls(result: fsm.Result) -> list[tuple[str, str | None, Any]]:
    return [(c.id, c.name, c.arguments) for c in result.calls]


def test_payloads_bytes_text_and_whole_bodies_give_one_result() -> None:
    body = "".join(f"data: {json.dumps(w)}\n\n" for w in WIRE) + "data: [DONE]\n\n"
    expected = [("a", "f", {"q": "A"})]
    assert calls(fsm.reassemble(WIRE)) == expected
    assert calls(fsm.reassemble(body)) == expected
    assert calls(fsm.reassemble(body.encode())) == expected
    pieces = [body.encode()[i : i + 7] for i in range(0, len(body), 7)]  # cut anywhere, even mid-character
    assert calls(fsm.reassemble(iter(pieces), "openai-chat")) == expected


def test_options_reach_the_reassembler() -> None:
    invalid = [chunk(tc(index=0, id="a", name="f", args="[1]"), finish="tool_calls")]
    assert fsm.reassemble(invalid).codes() == ["arguments-not-object"]
    with pytest.raises(fsm.RemoteProtocolError):
        fsm.reassemble(invalid, strict=True)
    assert calls(fsm.reassemble(WIRE, taken=["a"]))[0][0] != "a"


def test_areassemble_takes_async_and_plain_iterables() -> None:
    async def stream() -> AsyncIterator[dict[str, Any]]:
        for w in WIRE:
            yield w

    assert calls(asyncio.run(fsm.areassemble(stream()))) == [("a", "f", {"q": "A"})]
    assert calls(asyncio.run(fsm.areassemble(WIRE))) == [("a", "f", {"q": "A"})]


class Manager:
    """A stream manager like the SDKs' ``.stream()`` helpers: not iterable until entered."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items
        self.closed = False

    def __enter__(self) -> Iterator[Any]:
        return iter(self.items)

    def __exit__(self, *exc: object) -> None:
        self.closed = True


def test_a_stream_manager_is_entered_and_closed() -> None:
    manager = Manager(WIRE)
    assert calls(fsm.reassemble(manager)) == [("a", "f", {"q": "A"})]
    assert manager.closed


class GivesNoStream:
    """A stream manager (sync and async) whose entered value is not a stream."""

    def __enter__(self) -> int:
        return 5

    def __exit__(self, *exc: object) -> None:
        pass

    async def __aenter__(self) -> int:
        return 5

    async def __aexit__(self, *exc: object) -> None:
        pass


class Pending:
    """An awaitable that is no coroutine (as an asyncio Future is): there is nothing to close."""

    def __await__(self) -> Iterator[None]:
        yield


async def one_event() -> AsyncIterator[dict[str, Any]]:
    yield WIRE[0]


@pytest.mark.parametrize(
    ("stream", "said"),
    [
        (5, "takes an iterable stream or a stream manager, not int"),
        (None, "not NoneType"),
        (WIRE[0], "not one event"),  # iterated, its keys were fed as text: a cut-event and no call
        (GivesNoStream(), "int"),
        (Pending(), "not an awaitable: await it first"),
    ],
)
def test_what_is_no_stream_is_invalid_input_for_reassemble_and_areassemble(stream: Any, said: str) -> None:
    with pytest.raises(InvalidInput, match=said):
        fsm.reassemble(stream)
    with pytest.raises(InvalidInput, match=said):
        asyncio.run(fsm.areassemble(stream))


def test_an_async_stream_handed_to_reassemble_is_told_to_use_areassemble() -> None:
    stream = one_event()
    with pytest.raises(InvalidInput, match="use areassemble"):
        fsm.reassemble(stream)
    asyncio.run(stream.aclose())


def test_an_unknown_option_is_invalid_input_naming_it() -> None:
    with pytest.raises(InvalidInput, match="unknown option 'stric'"):
        fsm.reassemble(WIRE, stric=True)
    with pytest.raises(InvalidInput, match="unknown option 'stric'"):
        asyncio.run(fsm.areassemble(WIRE, stric=True))


def test_text_with_a_lone_surrogate_is_a_bad_event_not_an_encoding_error() -> None:
    body = f"data: {json.dumps(WIRE[0])}\n\ndata: \ud800\n\n" + "".join(f"data: {json.dumps(w)}\n\n" for w in WIRE[1:])
    result = fsm.reassemble([body])
    assert calls(result) == [("a", "f", {"q": "A"})]
    assert [(d.event, d.code) for d in result.problems()] == [(2, "bad-event")]
    with pytest.raises(fsm.FramingError, match="event 2"):
        fsm.reassemble(body, strict=True)


def test_captures_reassemble_in_one_call_as_fed_byte_by_byte() -> None:
    require_captures()
    stream = CAPTURES / "anthropic" / "anthropic-sdk-max-tokens-truncated-tool-json.sse"
    r = fsm.Reassembler()
    r.feed_bytes(stream.read_bytes())
    assert fsm.reassemble(stream.read_bytes()) == r.close()


class Event:
    """An SDK event object: attributes and ``model_dump``, like the pydantic models the SDKs yield."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)
        self.dumped_with: dict[str, Any] = {}

    def model_dump(self, **options: Any) -> dict[str, Any]:
        self.dumped_with = options
        excluded = options.get("exclude") or set()
        return {k: v for k, v in self.__dict__.items() if k not in excluded and k != "dumped_with"}


def test_openai_chunk_events_are_unwrapped_and_derived_events_skipped() -> None:
    events = [Event(type="chunk", chunk=w, snapshot={"big": "x" * 100}) for w in WIRE]
    derived = Event(type="tool_calls.function.arguments.delta", name="f", index=0, arguments_delta="{")
    stream = [events[0], derived, Event(type="content.delta", delta="hi", snapshot="hi"), *events[1:]]
    result = fsm.reassemble(stream, strict=True)
    assert calls(result) == [("a", "f", {"q": "A"})] and result.diagnostics == ()
    assert sdk_payload(derived) is None


def test_anthropic_helper_events_are_recognised_even_as_dicts() -> None:
    wire: list[Any] = [
        {"type": "message_start", "message": {"content": [], "usage": {"input_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "text", "text": "Hi", "snapshot": "Hi"},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
    result = fsm.reassemble(wire, strict=True)
    assert (result.text, result.usage, result.diagnostics) == ("Hi", {"input_tokens": 1, "output_tokens": 2}, ())


def test_helper_snapshots_are_not_dumped() -> None:
    event = Event(type="response.function_call_arguments.delta", output_index=0, delta="{", snapshot="{")
    assert "snapshot" not in sdk_payload(event)  # type: ignore[operator]
    assert event.dumped_with["exclude"] == {"snapshot"}


def test_objects_without_a_dump_are_refused_by_name() -> None:
    with pytest.raises(LocalProtocolError, match="cannot feed a object"):
        fsm.reassemble([object()])


def test_langchain_chunks_with_content_blocks_and_reasoning() -> None:
    messages = pytest.importorskip("langchain_core.messages")
    chunks = [
        messages.AIMessageChunk(
            content=[{"type": "text", "text": "Let me ", "index": 0}, {"type": "thinking", "thinking": "x"}],
            additional_kwargs={"reasoning_content": "hmm"},
        ),
        messages.AIMessageChunk(content=[{"type": "text", "text": "check.", "index": 0}]),
        messages.AIMessageChunk(content="", tool_call_chunks=[{"name": "f", "args": '{"a": ', "id": "t1", "index": 1}]),
        messages.AIMessageChunk(content="", tool_call_chunks=[{"name": None, "args": "1}", "id": None, "index": 1}]),
        messages.AIMessageChunk(
            content="",
            response_metadata={"stop_reason": "tool_use"},
            usage_metadata={"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
        ),
    ]
    result = fsm.reassemble(chunks, strict=True)
    assert calls(result) == [("t1", "f", {"a": 1})]
    assert (result.text, result.finish_reason) == ("Let me check.", "tool_calls")
    # a thinking block is read over reasoning_content, as LiteLLM's thinking_blocks are (its
    # reasoning_content joins the blocks and drops their signatures)
    assert [r.text for r in result.reasoning] == ["x"]
    assert result.usage == {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
    assert langchain_chunk(chunks[0])["choices"][0]["delta"] == {
        "content": "Let me ",
        "thinking_blocks": [{"type": "thinking", "thinking": "x"}],
        "reasoning_content": "hmm",
    }


def test_turn_content_events_can_be_fed_directly() -> None:
    r = fsm.Reassembler("openai-chat")
    for event in [
        ReasoningDelta(None, "think "),
        ReasoningDelta(None, "more", signature="S"),
        TextDelta("Hello"),
        UsageReport({"a": 1}),
        UsageReport({"b": 2}, cumulative=True),
        UsageReport({"c": 3}),
    ]:
        r.feed(event)
    result = r.close()
    assert [(x.text, x.signature) for x in result.reasoning] == [("think more", "S")]
    assert (result.text, result.usage) == ("Hello", {"c": 3})
