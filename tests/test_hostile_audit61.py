"""Audit 61: a re-emitted stream reads back as the result it came from, by every reader.

The differential: every recorded capture, every conformance vector and a few hundred fuzzed and
hostile streams (the fuzz harness's ``hostile_input``: mutated events, bytes cut anywhere, large and
decoding hazards) are reassembled, re-emitted under both flush policies, and the chunks read back by
openai-python's ``ChatCompletionStreamState`` and by toolcall-fsm itself as an OpenAI chat stream.
Both must give the result's calls: complete calls exactly (id, name, text, and complete for fsm);
a call that did not complete never reads back complete, and the stream ends in an error.

The reproducers the audit (45) left, each pinned below: an error beside the finish chunk read back
as the turn's end (the finish reason lost, a custom call cut); a call cut or found unusable whose
text is a whole value read back complete; an id holding a lone surrogate made a chunk no UTF-8 writer
could write.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("hypothesis", reason="the fuzzed streams need hypothesis (pip install 'toolcall-fsm[fuzz]')")
from hypothesis import HealthCheck, given, settings

from fsm import Reassembler, Result
from fsm.errors import InvalidInput, ToolcallFSMError
from fsm.events import NORMAL_FINISHES
from fsm.harness.fuzz.robust import Sample, hostile_input
from fsm.harness.fuzz.run import _without_local_constants, sample_vectors
from fsm.harness.fuzz.shapes import CASES
from fsm.harness.vectors import Vector, load_vectors
from fsm.jsontext import escape_lone_surrogates
from fsm.options import Policies
from fsm.reemit import DeltaEmitter, FlushPolicy
from tests.conftest import CAPTURES, captures
from tests.helpers import went_out

VECTORS = load_vectors()
FOUND = captures()
MISSING = f"recorded captures not found at {CAPTURES} (../shared is beside the project in CI)"
STREAMS = FOUND or [pytest.param(None, marks=pytest.mark.skip(reason=MISSING))]
IDS = [f"{p.parent.name}/{p.name}" for p in FOUND] or ["no-captures"]
FUZZED_PER_SHAPE = 12  # x 8 shapes x 2 policies, beside the hostile streams below
HOSTILE = 200

Call = tuple[str | None, str | None, str, str]


def _sent(text: str | None) -> str | None:
    """An id or name as a chunk carries it (policy emitted-lone-surrogate)."""
    return None if text is None else escape_lone_surrogates(text)


def _calls(result: Result) -> list[Call]:
    """What went out (a declined model's calls too), each as the chat wire tells it: a declined one
    listed in the last chunk's error is read back as a call no tool runs (invalid)."""
    declined = {call.index for call in result.declined_calls}
    return [
        (
            _sent(c.id),
            _sent(c.name),
            c.input if c.input is not None else c.arguments_json or "",
            "invalid" if c.index in declined else c.status.value,
        )
        for c in went_out(result)
    ]


def _sdk_calls(chunks: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    from tests.test_reemit import sdk_calls  # (imports openai: only where the SDK reads)

    return list(sdk_calls(chunks))


def _read_back(chunks: list[dict[str, Any]], policies: dict[str, str]) -> Result:
    reader = Reassembler("openai-chat", policies=Policies(**policies))
    for data in chunks:
        reader.feed(data)
    return reader.close()


def disagreements(result: Result, chunks: list[dict[str, Any]], policies: dict[str, str] | None = None) -> list[str]:
    """What the readers make of ``chunks`` that ``result`` does not say (empty: the round trip held)."""
    found: list[str] = []
    for n, data in enumerate(chunks):
        try:
            json.dumps(data, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (ValueError, TypeError) as exc:
            found.append(f"chunk {n} cannot be written as UTF-8 JSON: {exc}")
    want = _calls(result)
    try:
        import openai  # noqa: F401
    except ImportError:
        pass  # the fsm readback alone (the SDK test below says why it skips)
    else:
        if (sdk := _sdk_calls(chunks)) != [call[:3] for call in want]:
            found.append(f"openai-python reads {sdk}, the result holds {want}")
    back = _read_back(chunks, policies or {})
    got = _calls(back)
    if result.finish_reason not in NORMAL_FINISHES:
        # Known limit: a freeform call the provider ended (its item's end) in a stream with no normal
        # finish has nothing on the chat wire to say it ended: read back, the cut ends it truncated,
        # which runs nothing. Compared as the reader must take it.
        ended = {_sent(c.id) for c in result.calls if c.input is not None and c.status.value == "complete"}
        want = [(c[0], c[1], c[2], "truncated") if c[0] in ended else c for c in want]
    if [c for c in got if c[3] == "complete"] != [c for c in want if c[3] == "complete"]:
        found.append(f"fsm reads back the complete calls {got}, the result holds {want}")
    unknown = [d.message for d in back.diagnostics if "incomplete_tool_calls" in d.message]
    if unknown:  # every call the error lists is one the stream it ends opened, by the id it went out with
        found.append(f"fsm reads back the error's list of unfinished calls as naming others: {unknown}")
    cut = {c[0] for c in _calls(result) if c[3] != "complete"}
    # A declined model's call reads back set apart and said (declined-call), and fsm's error listing only
    # such calls says no provider-error of itself (policy declines-read-back, task 96)
    cut -= {_sent(c.id) for c in back.declined_calls}
    if cut and "provider-error" not in back.codes():
        found.append(f"calls {sorted(map(str, cut))} did not complete, and the stream read back ends in no error")
    if "split-fragment" not in back.codes() and got != want:  # else its text is no JSON value: see below
        found.append(f"fsm reads back {got}, the result holds {want}")
    ends = result.finish_reason or ("error" if "error" in chunks[-1] else None)  # no finish: the error ends it
    if back.finish_reason != ends:
        found.append(f"fsm reads back the finish {back.finish_reason}, the result has {result.finish_reason}")
    return found


def reemit(
    provider: str,
    data: list[Any] | bytes,
    flush: FlushPolicy,
    policies: dict[str, str] | None = None,
    strict: bool = False,
    limits: Any = None,
    choice: int | None = None,
    interrupted: str | None = None,
) -> tuple[Result, list[dict[str, Any]]]:
    """Reassemble a stream (events, or bytes whole); its result and its whole re-emitted chunk stream
    (under choice 0, as a gateway re-emitting the choice it reads alone sends it)."""
    options: dict[str, Any] = {"policies": Policies(**(policies or {})), "strict": strict, "choice": choice}
    if limits is not None:
        options["limits"] = limits
    r = Reassembler(provider, **options)
    emitter, chunks = DeltaEmitter(flush), []
    stopped = None if interrupted is None else ConnectionError(interrupted)
    try:
        if isinstance(data, bytes):
            chunks += emitter.chunks(r.feed_bytes(data))
        for event in data if isinstance(data, list) else []:
            try:
                chunks += emitter.chunks(r.feed(event))
            except InvalidInput:
                continue  # a mutation made the event itself junk: refused as the caller's mistake
        r.close(interrupted=stopped)
    except ToolcallFSMError:
        pass  # the stream failed part-way: its chunks must still mean the result so far
    try:
        result = r.close(interrupted=stopped)
    except ToolcallFSMError:  # strict: a violation found as the calls closed; the result is whole now
        result = r.close(interrupted=stopped)
    return result, [*chunks, *emitter.chunks(r.drain()), emitter.finish(result)]


def _vector(vector: Vector, flush: FlushPolicy) -> tuple[Result, list[dict[str, Any]]]:
    data: list[Any] | bytes = vector.body.encode("utf-8") if vector.body is not None else vector.events
    if vector.body is not None and vector.events:
        pytest.fail(f"vector {vector.name} has both a body and events")
    return reemit(vector.shape, data, flush, vector.policies, choice=vector.choice, interrupted=vector.interrupted)


@pytest.mark.parametrize("flush", list(FlushPolicy), ids=lambda f: f.value)
def test_every_vector_reads_back_as_its_result(flush: FlushPolicy) -> None:
    found = {v.name: disagreements(*_vector(v, flush), v.policies) for v in VECTORS}
    assert {name: said for name, said in found.items() if said} == {}


@pytest.mark.parametrize("flush", list(FlushPolicy), ids=lambda f: f.value)
@pytest.mark.parametrize("stream", STREAMS, ids=IDS)
def test_every_capture_reads_back_as_its_result(stream: Path, flush: FlushPolicy) -> None:
    assert disagreements(*reemit("auto", stream.read_bytes(), flush)) == []


@pytest.mark.parametrize("shape", sorted(CASES))
def test_fuzzed_streams_read_back_as_their_results(shape: str) -> None:
    found = {}
    for vector in sample_vectors(shape, FUZZED_PER_SHAPE):
        for flush in FlushPolicy:
            if said := disagreements(*_vector(vector, flush), vector.policies):
                found[f"{vector.name} {flush.value}"] = said
    assert found == {}


@pytest.mark.parametrize("shape", sorted(CASES))
def test_hostile_streams_read_back_as_their_results(shape: str) -> None:
    from fsm.harness.fuzz.robust import LIMITS

    found: dict[str, list[str]] = {}
    samples: list[Sample] = []

    @settings(
        max_examples=HOSTILE // len(CASES),
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(hostile_input(shape))
    def collect(sample: Sample) -> None:
        samples.append(sample)

    with _without_local_constants():  # the same sample whatever else the process imported
        collect()
    for n, sample in enumerate(samples):
        data = sample.data if isinstance(sample.data, bytes) else list(sample.data)
        for flush in FlushPolicy:
            result, chunks = reemit(sample.provider, data, flush, None, sample.strict, LIMITS[sample.limits])
            if said := disagreements(result, chunks):
                found[f"{shape} #{n} {flush.value}"] = said
    assert found == {}


# -- the reproducers, each pinned ------------------------------------------------------------------


def _chat(*calls: dict[str, Any], finish: str | None = None, **beside: Any) -> dict[str, Any]:
    delta = {"tool_calls": list(calls)} if calls else {}
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **beside}


FUNCTION = {"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}
CUSTOM = {"index": 0, "id": "a", "type": "custom", "custom": {"name": "f", "input": "x = 1"}}


@pytest.mark.parametrize("call", [FUNCTION, CUSTOM], ids=["function", "custom"])
@pytest.mark.parametrize("flush", list(FlushPolicy), ids=lambda f: f.value)
def test_an_error_after_the_finish_reads_back_after_it(call: dict[str, Any], flush: FlushPolicy) -> None:
    # Policy error-beside-finish: the emitter's last chunk says the finish and the error together;
    # read back, the error ended the turn, the finish was lost and the custom call cut.
    stream = [_chat(call), _chat(finish="tool_calls"), {"error": {"message": "boom", "type": "x"}}]
    result, chunks = reemit("openai-chat", stream, flush)
    assert (result.finish_reason, [c.status.value for c in result.calls]) == ("tool_calls", ["complete"])
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls" and chunks[-1]["error"]["type"] == "provider_error"
    back = _read_back(chunks, {})
    assert (back.finish_reason, [c.status.value for c in back.calls]) == ("tool_calls", ["complete"])
    assert "provider-error" in back.codes() and disagreements(result, chunks) == []


def test_an_error_beside_a_finish_of_error_still_ends_the_turn() -> None:
    # OpenRouter's mid-stream error (finish "error" beside it) is the turn's end, as before.
    stream = [
        _chat({**FUNCTION, "function": {"name": "f", "arguments": '{"x": '}}),
        _chat(finish="error", error={"message": "down"}),
    ]
    result = _read_back(stream, {})
    assert (result.finish_reason, [c.status.value for c in result.calls]) == ("error", ["truncated"])


def _responses_call(text: str, status: str = "completed") -> list[dict[str, Any]]:
    item = {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f", "arguments": ""}
    return [
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": text},
        {"type": "response.function_call_arguments.done", "output_index": 0, "arguments": text},
        {"type": "response.output_item.done", "output_index": 0, "item": {**item, "arguments": text, "status": status}},
        {"type": "response.incomplete" if status == "incomplete" else "response.completed", "response": {}},
    ]


@pytest.mark.parametrize("flush", list(FlushPolicy), ids=lambda f: f.value)
def test_a_call_cut_whole_reads_back_cut(flush: FlushPolicy) -> None:
    # An item OpenAI ended incomplete is truncated whatever its text; its text is a whole object, which
    # the chat wire alone reads as complete: the error's incomplete_tool_calls says it is not.
    result, chunks = reemit("openai-responses", _responses_call('{"a": 1}', "incomplete"), flush)
    assert [c.status.value for c in result.calls] == ["truncated"]
    assert chunks[-1]["error"]["incomplete_tool_calls"] == [{"index": 0, "id": "c1", "status": "truncated"}]
    assert [c.status.value for c in _read_back(chunks, {}).calls] == ["truncated"]
    assert disagreements(result, chunks) == []


@pytest.mark.parametrize("flush", list(FlushPolicy), ids=lambda f: f.value)
def test_an_invalid_text_split_on_reading_back_runs_nothing(flush: FlushPolicy) -> None:
    # '{"a": 1}}' is no JSON value. The chat reader splits it where its value closes (split-fragment):
    # the first part is a whole object, which read back as a complete call c1. The error's list now
    # ends c1 invalid; the rest is a call of no name, which nothing can run.
    result, chunks = reemit("openai-responses", _responses_call('{"a": 1}}'), flush)
    assert [(c.id, c.status.value) for c in result.calls if c.id == "c1"] == [("c1", "invalid")]
    back = _read_back(chunks, {})
    assert "split-fragment" in back.codes() and "provider-error" in back.codes()
    assert [c.status.value for c in back.calls if c.status.value == "complete"] == []
    assert disagreements(result, chunks) == []


def test_a_lone_surrogate_in_an_id_or_name_goes_out_escaped() -> None:
    # Policy emitted-lone-surrogate: a chunk holding one could not be written as UTF-8.
    call = {"index": 0, "id": "call_\ud800", "type": "function", "function": {"name": "get_\udc00w", "arguments": "{}"}}
    result, chunks = reemit("openai-chat", [_chat(call), _chat(finish="tool_calls")], FlushPolicy.INCREMENTAL)
    assert (result.calls[0].id, result.calls[0].name) == ("call_\ud800", "get_\udc00w")  # the result keeps the wire's
    header = chunks[0]["choices"][0]["delta"]["tool_calls"][0]
    assert (header["id"], header["function"]["name"]) == ("call_\\ud800", "get_\\udc00w")
    assert disagreements(result, chunks) == []
    cut = reemit("openai-chat", [_chat({**call, "function": {"name": "f", "arguments": "{"}})], FlushPolicy.ON_FINISH)
    assert disagreements(*cut) == [] and "\\ud800" in cut[1][-1]["error"]["message"]
    with pytest.raises(InvalidInput, match="lone surrogate"):
        DeltaEmitter(model="m\udfff")


def test_the_openai_readback_is_skipped_only_without_openai() -> None:
    pytest.importorskip("openai", reason="openai-python is not installed: the fsm readback alone is checked")
