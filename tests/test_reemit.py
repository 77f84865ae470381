"""Re-emitted deltas mean what the result says: fed to openai-python's own chunk accumulator
(``ChatCompletionStreamState``, chunks built with ``ChatCompletionChunk.model_validate``), the
re-emitted stream gives exactly the result's calls, under both flush policies, for every conformance
vector, every recorded capture and a few hundred fuzzed streams."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from openai import ContentFilterFinishReasonError, LengthFinishReasonError
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

from fsm import Reassembler, RemoteProtocolError, Result
from fsm.cli import main
from fsm.errors import InvalidInput, InvalidOption
from fsm.events import ArgumentsSnapshot, CallRef
from fsm.harness.fuzz.run import sample_vectors
from fsm.harness.fuzz.shapes import CASES
from fsm.harness.vectors import Vector, load_vectors
from fsm.jsontext import parse_strict
from fsm.options import Policies
from fsm.reemit import DeltaEmitter, FlushPolicy
from tests.conftest import CAPTURES, captures
from tests.helpers import chunk, reemitted, tc, went_out

VECTORS = load_vectors()
FUZZED_PER_SHAPE = 40  # x 8 shapes: 320 streams, each under both policies
FOUND = captures()
MISSING = f"recorded captures not found at {CAPTURES} (../shared is beside the project in CI)"
STREAMS = FOUND or [pytest.param(None, marks=pytest.mark.skip(reason=MISSING))]
IDS = [f"{p.parent.name}/{p.name}" for p in FOUND] or ["no-captures"]

SdkCall = tuple[str | None, str | None, str]


def sdk_message(chunks: list[dict[str, Any]]) -> Any:
    """What openai-python makes of the chunks: its final message."""
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for data in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(data))
    try:
        completion = state.get_final_completion()
    except (LengthFinishReasonError, ContentFilterFinishReasonError) as exc:
        # The SDK refuses to parse a completion cut by a limit; the accumulated one is on the error.
        completion = exc.completion
    return completion.choices[0].message


def sdk_calls(chunks: list[dict[str, Any]]) -> list[SdkCall]:
    """What openai-python makes of the chunks: its final tool calls as (id, name, arguments)."""
    calls = sdk_message(chunks).tool_calls or []
    out: list[SdkCall] = []
    for call in calls:
        custom = getattr(call, "custom", None)  # a custom call's body is no field the SDK declares
        if custom is not None:
            out.append((call.id, custom.get("name"), custom["input"]))
        else:
            out.append((call.id, getattr(call.function, "name", None), call.function.arguments))  # type: ignore[union-attr]
    return out


def expected(result: Result) -> list[SdkCall]:
    """The calls as (id, name, text): argument text, or a freeform call's input."""
    return [(c.id, c.name, c.input if c.input is not None else c.arguments_json or "") for c in went_out(result)]


def reemit(
    shape: str, events: list[dict[str, Any]], flush: FlushPolicy, body: str | None = None, **policies: str
) -> tuple[Result, list[dict[str, Any]]]:
    """Reassemble a stream; return its result and the whole re-emitted chunk stream."""
    r = Reassembler(shape, policies=Policies(**policies))
    emitter = DeltaEmitter(flush)
    out = []
    try:
        if body is not None:
            out += emitter.chunks(r.feed_bytes(body.encode("utf-8")))
        for event in events:
            out += emitter.chunks(r.feed(event))
    except RemoteProtocolError:
        pass  # a stream that fails part-way: the deltas must still mean the result so far
    result = r.close()
    return result, [*out, *emitter.chunks(r.drain()), emitter.finish(result)]


def reemit_vector(vector: Vector, flush: FlushPolicy) -> tuple[Result, list[dict[str, Any]]]:
    return reemit(vector.shape, vector.events, flush, vector.body, **vector.policies)


def assert_sdk_agrees(result: Result, chunks: list[dict[str, Any]]) -> None:
    got = sdk_calls(chunks)
    assert got == expected(result)
    for call, (_, _, arguments) in zip(went_out(result), got, strict=True):
        if call.status.value == "complete" and call.input is None:  # freeform input is not JSON
            assert parse_strict(arguments)[0] == call.arguments  # numbers exact, however long


@pytest.mark.parametrize("flush", list(FlushPolicy), ids=lambda f: f.value)
@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v.name)
def test_sdk_accumulates_every_vector_to_its_calls(vector: Vector, flush: FlushPolicy) -> None:
    result, chunks = reemit_vector(vector, flush)
    assert_sdk_agrees(result, chunks)


@pytest.mark.parametrize("flush", list(FlushPolicy), ids=lambda f: f.value)
@pytest.mark.parametrize("stream", STREAMS, ids=IDS)
def test_sdk_accumulates_every_capture_replayed_as_deltas(stream: Path, flush: FlushPolicy) -> None:
    out = io.StringIO()
    assert main(["replay", "--output", "deltas", "--flush", flush.value, str(stream)], stdout=out) == 0
    chunks = [json.loads(line) for line in out.getvalue().splitlines()]
    calls = io.StringIO()
    assert main(["replay", str(stream)], stdout=calls) == 0
    listed = json.loads(calls.getvalue())["calls"]
    want = [(c["id"], c["name"], c["input"] if c["input"] is not None else c["arguments_json"]) for c in listed]
    assert sdk_calls(chunks) == want
    assert want  # every capture has at least one call


@pytest.mark.parametrize("shape", sorted(CASES))
def test_sdk_accumulates_fuzzed_streams_to_their_calls(shape: str) -> None:
    vectors = sample_vectors(shape, FUZZED_PER_SHAPE)
    assert len(vectors) == FUZZED_PER_SHAPE
    for vector in vectors:
        for flush in FlushPolicy:
            result, chunks = reemit_vector(vector, flush)
            assert_sdk_agrees(result, chunks)


# -- the cases the differential found, each pinned -------------------------------------------------


def events_of(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for c in chunks for e in c["choices"][0]["delta"].get("tool_calls", [])]


def replay_chat(chunks: list[dict[str, Any]], flush: FlushPolicy) -> tuple[Result, list[dict[str, Any]]]:
    return reemit("openai-chat", chunks, flush)


def test_every_chunk_is_a_valid_chat_completion_chunk() -> None:
    chunks = replay_chat(
        [chunk(tc(index=0, id="a", name="f", args="{}")), chunk(finish="tool_calls")], FlushPolicy.INCREMENTAL
    )[1]
    for data in chunks:
        parsed = ChatCompletionChunk.model_validate(data)
        assert (parsed.id, parsed.model, parsed.created, parsed.object) == (
            "chatcmpl-toolcall-fsm",
            "toolcall-fsm",
            0,
            "chat.completion.chunk",
        )
    mine = DeltaEmitter(completion_id="chatcmpl-1", model="m", created=7).finish(
        replay_chat([], FlushPolicy.ON_FINISH)[0]
    )
    assert (mine["id"], mine["model"], mine["created"]) == ("chatcmpl-1", "m", 7)


@pytest.mark.parametrize("flush", list(FlushPolicy), ids=lambda f: f.value)
def test_whitespace_only_arguments_go_out_as_the_empty_object(flush: FlushPolicy) -> None:
    result, chunks = replay_chat([chunk(tc(index=0, id="e", name="now", args=" ")), chunk(finish="tool_calls")], flush)
    assert result.calls[0].arguments_json == "{}"
    assert sdk_calls(chunks) == [("e", "now", "{}")]


def test_leading_whitespace_goes_out_with_the_first_text_after_it() -> None:
    stream = [
        chunk(tc(index=0, id="e", name="f", args=" ")),
        chunk(tc(index=0, args="\n")),
        chunk(tc(index=0, args='{"a": 1}')),
    ]
    result, chunks = replay_chat([*stream, chunk(finish="tool_calls")], FlushPolicy.INCREMENTAL)
    texts = [e["function"]["arguments"] for e in events_of(chunks) if e["function"].get("arguments")]
    assert texts == [' \n{"a": 1}']
    assert sdk_calls(chunks) == [("e", "f", result.calls[0].arguments_json)]


def responses(deltas: list[str], done: str) -> list[dict[str, Any]]:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "f", "arguments": ""}
    return [
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        *[{"type": "response.function_call_arguments.delta", "output_index": 0, "delta": d} for d in deltas],
        {"type": "response.function_call_arguments.done", "output_index": 0, "arguments": done},
        {"type": "response.output_item.done", "output_index": 0, "item": {**item, "arguments": done}},
        {"type": "response.completed", "response": {}},
    ]


@pytest.mark.parametrize("flush", list(FlushPolicy), ids=lambda f: f.value)
def test_responses_done_that_differs_wins_in_the_deltas(flush: FlushPolicy) -> None:
    result, chunks = reemit("openai-responses", responses(['{"a": ', "1}"], '{"a": 2}'), flush)
    assert result.calls[0].arguments == {"a": 2}
    assert sdk_calls(chunks) == [("call_a", "f", '{"a": 2}')]


def test_responses_text_is_held_until_the_call_finishes() -> None:
    """Under incremental, a Responses call's text goes out once its ``.done`` can no longer replace it."""
    r = Reassembler("openai-responses")
    emitter = DeltaEmitter(FlushPolicy.INCREMENTAL)
    events = responses(['{"a": ', "1}"], '{"a": 1}')
    streamed = [emitter.chunks(r.feed(e)) for e in events[:3]]
    assert [events_of(c) for c in streamed] == [
        [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "f", "arguments": ""}}],
        [],
        [],
    ]
    rest = [d for e in events[3:] for d in emitter.chunks(r.feed(e))]
    assert [e["function"]["arguments"] for e in events_of(rest)] == ['{"a": 1}']


@pytest.mark.parametrize("flush", list(FlushPolicy), ids=lambda f: f.value)
def test_a_late_name_goes_out_before_any_arguments(flush: FlushPolicy) -> None:
    stream = [
        chunk(tc(index=0, id="a", args='{"x"')),
        chunk(tc(index=0, name="f", args=": 1")),
        chunk(tc(index=0, args="}")),
        chunk(finish="tool_calls"),
    ]
    result, chunks = replay_chat(stream, flush)
    entries = events_of(chunks)
    named = next(n for n, e in enumerate(entries) if "name" in e["function"])
    assert all(not e["function"].get("arguments") for e in entries[:named])
    assert sdk_calls(chunks) == [("a", "f", '{"x": 1}')] == expected(result)
    if flush is FlushPolicy.INCREMENTAL:  # the held text goes out with the name, the rest as it comes
        assert [e["function"].get("arguments") for e in entries[named:]] == ['{"x"', ": 1", "}"]


def test_a_finish_reason_chat_cannot_carry_goes_out_as_null() -> None:
    stream = [chunk(tc(index=0, id="a", name="f", args="{}")), chunk(finish="error")]
    result, chunks = replay_chat(stream, FlushPolicy.INCREMENTAL)
    assert result.finish_reason == "error"
    assert chunks[-1]["choices"][0]["finish_reason"] is None
    assert sdk_calls(chunks) == [("a", "f", "{}")]


# -- concatenating per index, the naive way ----------------------------------------------------------

SCENARIOS = {
    "collision": [chunk(tc(index=0, name="s", args='{"q": "A"}')), chunk(tc(index=0, name="s", args='{"q": "B"}'))],
    "a-b-b": [chunk(tc(index=0, name="s", args='{"q": "A"}'))] + [chunk(tc(index=0, name="s", args='{"q": "B"}'))] * 2,
    "fragments": [chunk(tc(index=0, id="a", name="f", args='{"x": ')), chunk(tc(index=0, args="[1, 2]}"))],
    "cumulative": [chunk(tc(index=0, id="c", name="f", args='{"a"')), chunk(tc(index=0, args='{"a": 1}'))],
    "duplicate-ids": [chunk(tc(index=0, id="X", name="f", args="{}")), chunk(tc(index=1, id="X", name="g", args="{}"))],
    "empty-args": [chunk(tc(index=0, id="e", name="now", args="")), chunk(finish="tool_calls")],
}


@pytest.mark.parametrize("flush", list(FlushPolicy))
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_concatenated_deltas_equal_the_calls(name: str, flush: FlushPolicy) -> None:
    r = Reassembler("openai-chat")
    for c in SCENARIOS[name]:
        r.feed(c)
    result = r.close()
    merged = reemitted(SCENARIOS[name], flush)
    assert sorted(merged) == [c.index for c in result.calls]
    for call in result.calls:
        got = merged[call.index]
        assert (got["id"], got["name"]) == (call.id, call.name)
        assert json.loads(got["arguments"]) == call.arguments


def test_replaced_snapshot_goes_out_only_once_final() -> None:
    r = Reassembler()
    emitter = DeltaEmitter(FlushPolicy.INCREMENTAL)
    ref = CallRef(index=0, id="g", name="f")
    out = emitter.chunks(r.feed(ArgumentsSnapshot(ref, '{"a": 1}')))
    out += emitter.chunks(r.feed(ArgumentsSnapshot(ref, '{"a": 2}')))
    result = r.close()
    out += emitter.chunks(r.drain())
    texts = [e["function"].get("arguments") for c in out for e in c["choices"][0]["delta"]["tool_calls"]]
    assert "".join(t for t in texts if t) == '{"a": 2}'
    assert result.calls[0].arguments == {"a": 2}


def test_wrong_arguments_are_refused_and_a_flush_choice_by_name_is_taken() -> None:
    outputs = [*Reassembler("openai-chat").feed(chunk(tc(index=0, id="a", name="f", args='{"x": 1}')))]
    by_name = DeltaEmitter("on-finish").chunks(outputs)  # was taken as incremental, without a word
    assert by_name == DeltaEmitter(FlushPolicy.ON_FINISH).chunks(outputs)
    assert by_name != DeltaEmitter(FlushPolicy.INCREMENTAL).chunks(outputs)
    with pytest.raises(InvalidOption, match="flush must be"):
        DeltaEmitter("on_finish")  # type: ignore[arg-type]
    for envelope in [{"completion_id": None}, {"model": 4}, {"created": "0"}, {"created": 1.5}]:
        with pytest.raises(InvalidInput, match="must be"):
            DeltaEmitter(**envelope)
    emitter = DeltaEmitter()
    with pytest.raises(InvalidInput, match="takes the list feed"):
        emitter.chunks(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="takes outputs"):  # it was dropped without a word
        emitter.chunks([{"index": 0}])  # type: ignore[list-item]
    with pytest.raises(InvalidInput, match="takes the Result"):
        emitter.finish(None)  # type: ignore[arg-type]


@pytest.mark.parametrize("flush", ["incremental", "on-finish"])
def test_outputs_refused_for_one_item_change_nothing_that_was_sent(flush: str) -> None:
    """A list with an item that is no output is refused whole, wherever the item is: the outputs
    before it were taken in before (their names and held text counted as sent, their chunks lost)."""
    r = Reassembler("openai-chat")
    first = r.feed(chunk(tc(index=0, id="a", args='{"x": ')))  # no name yet: its text is held
    outputs = [*first, *r.feed(chunk(tc(index=0, name="f", args="1}"), tc(index=1, id="b", name="g", args="{}")))]
    outputs += r.feed(chunk(finish="tool_calls"))
    want = DeltaEmitter(flush).chunks(outputs)
    for at in range(len(outputs) + 1):
        emitter = DeltaEmitter(flush)
        with pytest.raises(InvalidInput, match=rf"not dict \(outputs\[{at}\]\); nothing was sent"):
            emitter.chunks([*outputs[:at], {"index": 0}, *outputs[at:]])  # type: ignore[list-item]
        assert emitter.chunks(outputs) == want


@pytest.mark.parametrize("late", [False, True], ids=["error-finish", "error-after-finish"])
def test_a_provider_error_goes_out_on_the_last_chunk_and_the_openai_client_raises_it(late: bool) -> None:
    """The provider's error, whether it ended the turn or came after its finish, reaches a consumer of
    the re-emitted stream: the last chunk carries it as OpenAI-compatible servers send one, so
    openai-python raises APIError with the provider's message after the calls went out (before,
    the re-emitted stream ended as if nothing had happened)."""
    import openai

    from tests.test_clients import Replay

    error = {"error": {"message": "overloaded, try again", "type": "overloaded_error"}}
    stream = [chunk(tc(index=0, id="a", name="f", args='{"x": 1}'))]
    stream += [chunk(finish="tool_calls"), error] if late else [error]
    result, chunks = replay_chat(stream, FlushPolicy.INCREMENTAL)
    assert chunks[-1]["error"]["message"] == next(d.message for d in result.diagnostics if d.code == "provider-error")
    assert "overloaded, try again" in chunks[-1]["error"]["message"]
    assert sdk_calls(chunks) == [("a", "f", '{"x": 1}')]  # the accumulator reads past the error object

    replay = Replay(b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n")
    client = openai.OpenAI(api_key="k", http_client=replay.client())
    seen: list[Any] = []
    with pytest.raises(openai.APIError, match="overloaded, try again"):
        for sdk_chunk in client.chat.completions.create(model="m", messages=[], stream=True):
            seen.append(sdk_chunk)
    assert seen and len(seen) == len(chunks) - 1  # every chunk before the error reached the caller

    again = Reassembler("openai-chat")  # read back, the re-emitted stream says the error too
    for data in chunks:
        again.feed(data)
    assert "provider-error" in again.close().codes()


def test_no_error_object_without_a_provider_error() -> None:
    stream = [chunk(tc(index=0, id="a", name="f", args="{}")), chunk(finish="length")]
    assert "error" not in replay_chat(stream, FlushPolicy.INCREMENTAL)[1][-1]
