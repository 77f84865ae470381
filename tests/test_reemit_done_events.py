"""Re-emitted chunks as openai-python's stream helper reads them (``client.chat.completions.stream``,
whose ``ChatCompletionStreamState`` hands a call's arguments on as done when a chunk of the next
index comes, parsing them for a strict tool). The emitter sent every call's header before any
call's text where the engine holds the text until the end (Gemini's and Ollama's parallel calls,
and every stream of several calls under ``on-finish``): each call came out done with arguments
``""``, and with strict tools declared the helper raised ``JSONDecodeError``. A call's chunks now
never give way to the next call's before it has sent its text (or finished)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

from fsm import Reassembler, RemoteProtocolError
from fsm.harness.vectors import Vector, load_vectors
from fsm.options import Policies
from fsm.reemit import DeltaEmitter, FlushPolicy
from fsm.results import Output
from tests.helpers import went_out

VECTORS = load_vectors()


def _strict(name: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {}, "additionalProperties": True}
    return {"type": "function", "function": {"name": name, "strict": True, "parameters": schema}}


def done_events(chunks: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> list[tuple[int, str]]:
    """(index, arguments) of each ``tool_calls.function.arguments.done`` the SDK's state fires."""
    state: ChatCompletionStreamState[Any] = (
        ChatCompletionStreamState(input_tools=tools) if tools else ChatCompletionStreamState()
    )
    done: list[tuple[int, str]] = []
    for data in chunks:
        for event in state.handle_chunk(ChatCompletionChunk.model_validate(data)):
            if event.type == "tool_calls.function.arguments.done":
                done.append((event.index, event.arguments))
    return done


def reemitted(vector: Vector, flush: FlushPolicy) -> tuple[Any, list[Output], list[dict[str, Any]]]:
    r = Reassembler(vector.shape, policies=Policies(**vector.policies))
    emitter = DeltaEmitter(flush)
    outputs: list[Output] = []
    try:
        if vector.body is not None:
            outputs += r.feed_bytes(vector.body.encode("utf-8"))
        for event in vector.events:
            outputs += r.feed(event)
    except RemoteProtocolError:
        pass
    result = r.close()
    outputs += r.drain()
    return result, outputs, [*emitter.chunks(outputs), emitter.finish(result)]


@pytest.mark.parametrize("flush", list(FlushPolicy), ids=lambda f: f.value)
@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v.name)
def test_each_call_is_done_with_its_final_text(vector: Vector, flush: FlushPolicy) -> None:
    # Every vector, a source that interleaves its calls' text too: its outputs go to chunks() in one
    # list, in which each call finishes, so the next call waits for its end (before audit 83, such a
    # source went out interleaved here, and each call's done came with its text so far: skipped).
    result, _, chunks = reemitted(vector, flush)
    final = {
        call.index: call.input if call.input is not None else call.arguments_json or "" for call in went_out(result)
    }
    for index, arguments in done_events(chunks):
        assert arguments == final[index], (index, arguments, final[index])


def _gemini_parallel(*args: dict[str, Any]) -> list[dict[str, Any]]:
    parts = [{"functionCall": {"name": "sum", "args": value}} for value in args]
    return [
        {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]},
        {"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}]},
    ]


def _chat_parallel() -> list[dict[str, Any]]:
    def entry(index: int, **fields: Any) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, **fields}]}, "finish_reason": None}]}

    return [
        entry(0, id="call_a", type="function", function={"name": "sum", "arguments": ""}),
        entry(0, function={"arguments": '{"a": 1'}),
        entry(0, function={"arguments": "}"}),
        entry(1, id="call_b", type="function", function={"name": "sum", "arguments": ""}),
        entry(1, function={"arguments": '{"a": 2}'}),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]


@pytest.mark.parametrize("flush", list(FlushPolicy), ids=lambda f: f.value)
@pytest.mark.parametrize("shape", ["gemini", "openai-chat"])
def test_strict_tools_read_parallel_calls_without_error(shape: str, flush: FlushPolicy) -> None:
    events = _gemini_parallel({"a": 1}, {"a": 2}, {"a": 3}) if shape == "gemini" else _chat_parallel()
    r = Reassembler(shape)
    emitter = DeltaEmitter(flush)
    chunks = [chunk for event in events for chunk in emitter.chunks(r.feed(event))]
    result = r.close()
    chunks += [*emitter.chunks(r.drain()), emitter.finish(result)]
    done = done_events(chunks, [_strict("sum")])  # raised JSONDecodeError on "" before
    assert done == [(call.index, call.arguments_json) for call in result.calls]
    # Each call's chunks together, the calls in order: the header, then its text
    order = [entry["index"] for chunk in chunks for entry in chunk["choices"][0]["delta"].get("tool_calls", [])]
    assert order == sorted(order)


def test_calls_that_come_one_after_another_go_out_as_they_came() -> None:
    # OpenAI's parallel calls: the second opens after the first sent its text, so it waits for nothing
    r = Reassembler("openai-chat")
    emitter = DeltaEmitter()
    sent = [emitter.chunks(r.feed(event)) for event in _chat_parallel()]
    assert [len(chunks) for chunks in sent] == [1, 1, 1, 1, 1, 0]


def _choice_chunk(choice: int, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": choice, "delta": delta, "finish_reason": finish}]}


def _call(index: int, call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "tool_calls": [
            {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        ]
    }


@pytest.mark.parametrize("first", [0, 1], ids=["choice 0 calls first", "choice 1 calls first"])
def test_two_choices_re_emitted_after_their_starts_read_apart(first: int) -> None:
    # Choice 0 says text alone in one case: its emitter has no chunk before finish(), and choice 1's
    # call went out first, which openai-python's stream state refuses (IndexError)
    calls = {0: _call(0, "call_a", "f", '{"a": 1}'), 1: _call(0, "call_b", "g", '{"b": 2}')}
    stream = [
        _choice_chunk(first, calls[first]),
        _choice_chunk(1 - first, {"content": "hi"} if first == 1 else calls[1 - first]),
        _choice_chunk(0, {}, "stop" if first == 1 else "tool_calls"),
        _choice_chunk(1, {}, "tool_calls"),
    ]
    readers = [Reassembler("openai-chat", choice=k) for k in (0, 1)]
    emitters = [DeltaEmitter(choice=k) for k in (0, 1)]
    chunks = [emitter.start() for emitter in emitters]
    for event in stream:
        for reader, emitter in zip(readers, emitters, strict=True):
            chunks += emitter.chunks(reader.feed(event))
    results = [reader.close() for reader in readers]
    chunks += [emitter.finish(result) for emitter, result in zip(emitters, results, strict=True)]
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for data in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate({"id": "c", "created": 0, "model": "m", **data}))
    completion = state.get_final_completion()
    for choice, result in zip(completion.choices, results, strict=True):
        got = [(call.id, call.function.arguments) for call in choice.message.tool_calls or []]  # type: ignore[union-attr]
        assert got == [(call.id, call.arguments_json) for call in result.calls]
    assert [chunk["choices"][0]["delta"] for chunk in chunks[:2]] == [{"role": "assistant"}] * 2


def test_a_call_that_did_not_complete_ends_the_stream_in_an_error() -> None:
    # Policy incomplete-calls-not-run: a chunk has no field for a call's status, and the cut call's
    # text went out as any call's; the last chunk's error tells a client not to run it (openai-python
    # raises APIError there, after the calls it accumulated). It ended on a bare null finish before.
    events = [_chat_parallel()[0], _chat_parallel()[1]]  # the call's text cut short: no finish
    r = Reassembler("openai-chat")
    emitter = DeltaEmitter()
    chunks = [chunk for event in events for chunk in emitter.chunks(r.feed(event))]
    result = r.close()
    last = emitter.finish(result)
    assert [call.status.value for call in result.calls] == ["truncated"]
    assert last["error"] == {
        "message": "calls that did not complete, not to be run: call_a (sum): truncated",
        "type": "incomplete_tool_call",
        "incomplete_tool_calls": [{"index": 0, "id": "call_a", "status": "truncated"}],
    }
    whole = Reassembler("openai-chat")
    complete = DeltaEmitter()
    for event in _chat_parallel():
        complete.chunks(whole.feed(event))
    assert "error" not in complete.finish(whole.close())  # every call complete: no error
    _openai_raises([*chunks, last], "not to be run")


def test_a_stream_the_callers_side_stopped_ends_in_an_error() -> None:
    # A gateway whose upstream dropped closes with interrupted=: its client must learn the turn did not
    # end, even where every call read so far is complete (a bare null finish reads as a turn's end).
    events = _chat_parallel()[:4]  # call_a whole; call_b cut before its text
    r = Reassembler("openai-chat")
    emitter = DeltaEmitter()
    chunks = [chunk for event in events for chunk in emitter.chunks(r.feed(event))]
    result = r.close(interrupted=ConnectionResetError("upstream reset"))
    last = emitter.finish(result)
    assert last["error"]["type"] == "incomplete_tool_call"
    assert "upstream reset" in last["error"]["message"] and "not to be run" in last["error"]["message"]
    whole = Reassembler("openai-chat")
    complete = DeltaEmitter()
    for event in _chat_parallel()[:3]:  # call_a whole, and no other
        complete.chunks(whole.feed(event))
    stopped = complete.finish(whole.close(interrupted=ConnectionResetError("upstream reset")))
    assert stopped["error"] == {
        "message": "the stream stopped before the finish, when the caller's stream raised ConnectionResetError: "
        "upstream reset",
        "type": "stream_interrupted",
    }
    _openai_raises([*chunks, last], "upstream reset")


def _openai_raises(chunks: list[dict[str, Any]], match: str) -> None:
    """openai-python, reading the chunks as a server's stream, raises their last chunk's error."""
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    reply = httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})
    client = openai.OpenAI(api_key="k", http_client=httpx.Client(transport=httpx.MockTransport(lambda _: reply)))
    with pytest.raises(openai.APIError, match=match):
        for _ in client.chat.completions.create(model="m", messages=[], stream=True):
            pass


def test_an_invalid_call_without_text_reads_back_invalid() -> None:
    # Under policy empty_arguments=invalid a call with no text is invalid with raw text "". Re-emitted,
    # its chunks hold no text, and a reader under the default policy would read {}: the error's
    # incomplete_tool_calls lists it invalid, and the reject trigger now ends an opened call so
    # (slot spec: reject from opened), where it used to fall back to end and read complete {}.
    events = [
        *_chat_parallel()[:3],
        _chat_parallel()[3],
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    r = Reassembler("openai-chat", policies=Policies(empty_arguments="invalid"))
    emitter = DeltaEmitter()
    chunks = [chunk for event in events for chunk in emitter.chunks(r.feed(event))]
    result = r.close()
    chunks += [*emitter.chunks(r.drain()), emitter.finish(result)]
    assert [(c.id, c.status.value, c.arguments_json) for c in result.calls] == [
        ("call_a", "complete", '{"a": 1}'),
        ("call_b", "invalid", ""),
    ]
    again = Reassembler("openai-chat")
    for chunk in chunks:
        again.feed(chunk)
    back = again.close()
    assert [(c.id, c.status.value, c.arguments_json) for c in back.calls] == [
        (c.id, c.status.value, c.arguments_json) for c in result.calls
    ]
    assert "unusable-action" in [d.code for d in back.diagnostics]


def test_a_call_listed_twice_ends_by_its_first_entry_and_the_second_is_reported() -> None:
    # Two entries for one call (a gateway's list built twice, or a conflicting status): the first
    # ends the call; the second ended nothing and used to pass without a word.
    listed = [
        {"index": 1, "id": "call_b", "status": "truncated"},
        {"index": 1, "id": "call_b", "status": "invalid"},
        {"index": 1, "id": "call_b", "status": "truncated"},
    ]
    r = Reassembler("openai-chat")
    for event in [*_chat_parallel()[:5], {"error": {"message": "stopped", "incomplete_tool_calls": listed}}]:
        r.feed(event)
    result = r.close()
    assert [(c.id, c.status.value) for c in result.calls] == [("call_a", "complete"), ("call_b", "truncated")]
    repeats = [d.message for d in result.diagnostics if d.code == "part-not-reassembled"]
    assert repeats == [
        "error.incomplete_tool_calls[1] lists call call_b at index 1 again (entry 0 stands)",
        "error.incomplete_tool_calls[2] lists call call_b at index 1 again (entry 0 stands)",
    ]
