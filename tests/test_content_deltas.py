"""The turn's text, reasoning and refusal as outputs (``Reassembler(content_deltas=True)``), and a
gateway's re-emitted stream that carries them: joined, each kind's pieces give the result's field
however the stream is delivered; the calls' outputs are the ones a reassembler without them gives;
and the re-emitted chunks give openai-python's accumulator and toolcall-fsm's own chat decoder the
text and reasoning the source said, beside the same calls."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from fsm import ContentDelta, ReasoningData, Reassembler, Result
from fsm.cli import main
from fsm.errors import InvalidInput, ToolcallFSMError
from fsm.harness.vectors import load_vectors
from fsm.reemit import DeltaEmitter, FlushPolicy
from fsm.results import Output
from fsm.serialize import converter
from tests.conftest import CAPTURES, captures, require_captures
from tests.test_clients import Replay, anthropic_client, anthropic_http
from tests.test_reemit import sdk_message

FOUND = captures()
MISSING = f"recorded captures not found at {CAPTURES} (../shared is beside the project in CI)"
STREAMS = FOUND or [pytest.param(None, marks=pytest.mark.skip(reason=MISSING))]
IDS = [f"{p.parent.name}/{p.name}" for p in FOUND] or ["no-captures"]
VECTORS = load_vectors()


def read(data: bytes, piece: int | None, content_deltas: bool) -> tuple[list[Output], Result | None]:
    """Feed ``data`` whole (``piece`` None) or in pieces of that many bytes; the outputs and result."""
    r = Reassembler(content_deltas=content_deltas)
    outputs: list[Output] = []
    cuts = [data] if piece is None else [data[at : at + piece] for at in range(0, len(data), piece)]
    try:
        for cut in cuts:
            outputs += r.feed_bytes(cut)
        result = r.close()
    except ToolcallFSMError:
        return outputs + r.drain(), None
    return outputs + r.drain(), result


def joined(outputs: list[Output], kind: str) -> str:
    return "".join(o.text for o in outputs if isinstance(o, ContentDelta) and o.kind == kind)


def reasoning_text(result: Result) -> str:
    return "".join(block.text for block in result.reasoning)


def assert_pieces_give_the_result(outputs: list[Output], result: Result) -> None:
    assert joined(outputs, "text") == result.text
    assert joined(outputs, "reasoning") == reasoning_text(result)
    assert joined(outputs, "refusal") == (result.refusal or "")
    assert all(o.text for o in outputs if isinstance(o, ContentDelta))  # never an empty piece


@pytest.mark.parametrize("stream", STREAMS, ids=IDS)
def test_every_capture_whole_and_cut_gives_its_content_in_pieces(stream: Path) -> None:
    data = stream.read_bytes()
    plain, plain_result = read(data, None, False)
    assert plain_result is not None
    for piece in (None, 1, 7):
        outputs, result = read(data, piece, True)
        assert result == plain_result  # the option changes the outputs only
        assert [o for o in outputs if not isinstance(o, ContentDelta | ReasoningData)] == plain
        assert_pieces_give_the_result(outputs, result)


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v.name)
def test_every_vector_gives_its_content_in_pieces(vector: Any) -> None:
    plain, said = Reassembler(vector.shape), Reassembler(vector.shape, content_deltas=True)
    outputs: list[Output] = []
    plain_outputs: list[Output] = []
    for event in vector.events:
        try:
            plain_outputs += plain.feed(event)
        except ToolcallFSMError:
            plain_outputs += plain.drain()
        try:
            outputs += said.feed(event)
        except ToolcallFSMError:
            outputs += said.drain()
    plain_result, result = plain.close(), said.close()
    outputs += said.drain()
    plain_outputs += plain.drain()
    assert result == plain_result
    assert [o for o in outputs if not isinstance(o, ContentDelta | ReasoningData)] == plain_outputs
    assert_pieces_give_the_result(outputs, result)


def reemit(data: bytes, flush: FlushPolicy) -> tuple[Result, list[dict[str, Any]]]:
    r, emitter = Reassembler(content_deltas=True), DeltaEmitter(flush)
    chunks = [emitter.start()]
    chunks += emitter.chunks(r.feed_bytes(data))
    result = r.close()
    chunks += [*emitter.chunks(r.drain()), emitter.finish(result)]
    return result, chunks


@pytest.mark.parametrize("flush", list(FlushPolicy), ids=lambda f: f.value)
@pytest.mark.parametrize("stream", STREAMS, ids=IDS)
def test_a_capture_re_emitted_gives_the_sdk_and_fsm_its_text_and_reasoning(stream: Path, flush: FlushPolicy) -> None:
    result, chunks = reemit(stream.read_bytes(), flush)
    if any("error" in chunk for chunk in chunks):
        pytest.skip("the re-emitted stream ends in an error, which the SDK raises (tests/test_reemit.py)")
    message = sdk_message(chunks)
    assert (message.content or "") == result.text
    assert (getattr(message, "reasoning_content", None) or "") == reasoning_text(result)
    assert (message.refusal or "") == (result.refusal or "")
    calls = [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]  # type: ignore[union-attr]
    assert calls == [(c.id, c.name, c.arguments_json) for c in result.calls if c.input is None]
    again = Reassembler("openai-chat")
    for chunk in chunks:
        again.feed(chunk)
    read_back = again.close()
    assert read_back.text == result.text
    assert reasoning_text(read_back) == reasoning_text(result)
    assert [(c.id, c.name, c.arguments) for c in read_back.calls] == [(c.id, c.name, c.arguments) for c in result.calls]


def test_text_between_calls_goes_out_at_once_while_a_call_waits() -> None:
    # Gemini holds a call's text to its end: the second call waits for the first; text does not.
    events = [
        {"candidates": [{"content": {"parts": [{"functionCall": {"name": "a", "args": {"q": 1}}}]}}]},
        {"candidates": [{"content": {"parts": [{"text": "and "}]}}]},
        {"candidates": [{"content": {"parts": [{"functionCall": {"name": "b", "args": {"q": 2}}}]}}]},
        {"candidates": [{"content": {"parts": [{"text": "done"}]}, "finishReason": "STOP"}]},
    ]
    r, emitter = Reassembler("gemini", content_deltas=True), DeltaEmitter()
    per_event = [emitter.chunks(r.feed(event)) for event in events]
    said = [[c["choices"][0]["delta"].get("content") for c in chunks] for chunks in per_event]
    assert said[1] == ["and "] and "done" in said[3]
    result = r.close()
    chunks = [chunk for each in per_event for chunk in each] + emitter.chunks(r.drain()) + [emitter.finish(result)]
    message = sdk_message(chunks)
    assert message.content == "and done" == result.text
    assert [c.function.name for c in message.tool_calls] == ["a", "b"]  # type: ignore[union-attr]


def test_the_option_must_be_a_bool_and_the_pieces_structure_as_outputs() -> None:
    with pytest.raises(InvalidInput, match="content_deltas must be a bool, not str"):
        Reassembler(content_deltas="yes")  # type: ignore[arg-type]
    piece = ContentDelta("reasoning", "so", 0)
    made = converter().unstructure(piece, unstructure_as=Output)
    assert made == {"kind": "reasoning", "text": "so", "block": 0, "output": "ContentDelta"}
    assert converter().structure(made, Output) == piece  # type: ignore[arg-type]


def test_replay_deltas_carries_the_text(tmp_path: Path) -> None:
    lines = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Let me look."}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [tc(0, "c1", "f", '{"a": 1}')]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    path = tmp_path / "s.sse"
    path.write_text("".join(f"data: {json.dumps(line)}\n\n" for line in lines) + "data: [DONE]\n\n")
    out, err = io.StringIO(), io.StringIO()
    assert main(["replay", "--output", "deltas", str(path)], stdout=out, stderr=err) == 0
    chunks = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [c["choices"][0]["delta"].get("content") for c in chunks if "content" in c["choices"][0]["delta"]] == [
        "Let me look."
    ]
    message = sdk_message(chunks)
    assert message.content == "Let me look."
    assert message.tool_calls[0].function.arguments == '{"a": 1}'  # type: ignore[index]


def tc(index: int, call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_a_refusal_goes_out_as_one_and_the_sdk_reads_it() -> None:
    events = [
        {"choices": [{"index": 0, "delta": {"refusal": "I can"}}]},
        {"choices": [{"index": 0, "delta": {"refusal": "not."}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    r, emitter = Reassembler("openai-chat", content_deltas=True), DeltaEmitter()
    outputs = [output for event in events for output in r.feed(event)]
    assert outputs == [ContentDelta("refusal", "I can"), ContentDelta("refusal", "not.")]
    result = r.close()
    chunks = [emitter.start(), *emitter.chunks(outputs), emitter.finish(result)]
    assert sdk_message(chunks).refusal == "I cannot." == result.refusal


def test_without_the_option_no_piece_is_an_output() -> None:
    events = [{"choices": [{"index": 0, "delta": {"content": "hi", "reasoning_content": "hm"}}]}]
    assert Reassembler("openai-chat").feed(events[0]) == []
    said = Reassembler("openai-chat", content_deltas=True).feed(events[0])
    assert said == [ContentDelta("text", "hi"), ContentDelta("reasoning", "hm", 0)]  # block 0 of the result's


# -- A gateway end to end: one provider's client upstream, openai-python's chat client downstream --------------------


def gateway(upstream: Any) -> bytes:
    """What a gateway serves: the upstream SDK's events re-emitted as chat chunks, SSE-framed."""
    r, emitter = Reassembler(content_deltas=True), DeltaEmitter()
    chunks = [emitter.start()]
    for event in upstream:
        chunks += emitter.chunks(r.feed(event))
    result = r.close()
    chunks += [*emitter.chunks(r.drain()), emitter.finish(result)]
    return "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks).encode() + b"data: [DONE]\n\n"


def downstream(served: bytes) -> tuple[str, str, list[tuple[str, str, str]], Exception | None]:
    """openai-python's chat client reading the gateway's bytes: the text, the reasoning, the calls
    its stream helper accumulated, and what it raised."""
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(api_key="test", base_url="http://mock/v1", http_client=Replay(served).client())
    ask: list[Any] = [{"role": "user", "content": "go"}]
    raised: Exception | None = None
    with client.chat.completions.stream(model="m", messages=ask) as stream:
        try:
            for _ in stream:
                pass
        except openai.APIError as exc:
            raised = exc
        snapshot = stream.current_completion_snapshot.choices[0].message
    calls = [(c.id, c.function.name, c.function.arguments) for c in snapshot.tool_calls or []]
    return snapshot.content or "", getattr(snapshot, "reasoning_content", None) or "", calls, raised


def test_a_responses_stream_with_text_and_reasoning_reaches_a_chat_client_whole() -> None:
    capture = "openai_responses/vercel-lmstudio-glm-done-without-deltas.jsonl"
    openai = pytest.importorskip("openai")
    require_captures()
    lines = (CAPTURES / capture).read_text().splitlines()  # JSON lines: served as the SSE the SDK reads
    replay = Replay("".join(f"data: {line}\n\n" for line in lines if line.strip()).encode())
    upstream = openai.OpenAI(api_key="test", base_url="http://mock/v1", http_client=replay.client())
    served = gateway(upstream.responses.create(model="m", input="go", stream=True))
    expected = fsm_reassemble_bytes(replay.body)

    text, reasoning, calls, raised = downstream(served)
    assert raised is None
    assert text == expected.text and len(text) > 0
    assert reasoning == reasoning_text(expected) and len(reasoning) > 0
    assert calls == [(c.id, c.name, c.arguments_json) for c in expected.calls]


def test_a_claude_stream_cut_by_max_tokens_gives_the_chat_client_its_text_and_an_error() -> None:
    capture = "anthropic/anthropic-sdk-max-tokens-truncated-tool-json.sse"
    replay = Replay(capture, anthropic_http())
    upstream = anthropic_client(replay)
    ask = [{"role": "user", "content": "Write the guide to a file."}]
    served = gateway(upstream.messages.create(model="claude", max_tokens=64, messages=ask, stream=True))
    expected = fsm_reassemble_bytes(replay.body)

    text, _, calls, raised = downstream(served)
    assert text == expected.text and len(text) > 0
    assert raised is not None and "not to be run" in str(raised)  # policy incomplete-calls-not-run
    assert [call[0] for call in calls] == [c.id for c in expected.calls]


def fsm_reassemble_bytes(body: bytes) -> Result:
    r = Reassembler()
    r.feed_bytes(body)
    return r.close()
