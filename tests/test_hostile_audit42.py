"""Hostile audit 42: ``Reassembler(provider, choice=k)`` (fsm.wire.choices, the reassembler's general
path for a named choice, ``replay --choice``, vectors' ``choice``), through the public API only.

Attacked: every bundled openai-chat and gemini vector read with ``choice=0`` against no choice
(dicts, SSE bytes whole and cut, lax and strict); indexes of every type (bool, float, text, empty
text, list, object, negative, past 2**63, past the int-string limit); ``choices`` that is no list or
holds entries that are no objects; an error and usage beside the choices; the other choice finishing
before and after the chosen one; megabyte lists of choices and thousands of distinct indexes (all
reported, work counted); google-genai responses of two candidates; LangChain chunks; Vertex
partialArgs streams of two candidates cut at every byte; the CLI's ``--choice`` on SSE, NDJSON and
JSON array files; vector files naming a choice.

Found and fixed:
- An index the decoders read as the first choice (``False``, ``0.0``, ``""``, ``[]``, ``{}``: their
  ``not index``) was skipped by ``choice=0``, so a one-choice stream numbered so lost its calls and text
  under ``choice=0`` (reported only as info, so strict mode let it pass) while it read them without a
  choice. The picker now reads the index as the decoders do (fsm/wire/choices.py).
- The text index ``"1"`` and the int ``1`` were one entry of the skipped record (both written ``1``):
  after one was reported the other never was, and a text index was written bare (``choice 0 is
  skipped: this reassembler reads choice 0``); so were two ints past the int-string limit (both
  written as such a number). They are told apart by type and an int by its value, a text one quoted.
- A vector's ``choice`` of ``"1"``, ``true`` or ``1.9`` loaded as choice 1 (cattrs converts it before
  ``validate`` saw its type), so a language-neutral vector read differently here than elsewhere; it is
  a SpecError now, checked on the file's own value (fsm/harness/vectors.py).

Left: ``replay --choice K --output deltas`` re-emits the choice as a one-choice stream (index 0), not
under its own index (DeltaEmitter(choice=k) came later); the skipped record keeps up to 64 indexes
as written, so 64 megabyte-long text indexes are held until the stream ends (linear in the input;
past 64, nothing more is held, tested); an index of a caller's own object whose ``__bool__`` raises
(a numpy array) raises that error unchanged, as the decoders did before a choice could be named.
"""

from __future__ import annotations

import asyncio
import io
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fsm import Reassembler, areassemble, reassemble
from fsm.cli import main
from fsm.errors import InvalidOption, SpecError, ToolcallFSMError
from fsm.harness.vectors import Vector, load_vector, load_vectors
from fsm.options import Policies
from fsm.results import Result

SHAPES = ("openai-chat", "gemini")
KEY = {"openai-chat": "choices", "gemini": "candidates"}


def _read(result: Result) -> dict[str, Any]:
    return {
        "calls": [(c.id, c.name, c.arguments_json, c.status, c.thought_signature) for c in result.calls],
        "text": result.text,
        "reasoning": result.reasoning,
        "finish": (result.finish_reason, result.raw_finish_reason),
        "usage": result.usage,
        "diagnostics": [(d.code, d.severity.value, d.message, d.event) for d in result.diagnostics],
        "suppressed": dict(result.suppressed_diagnostics),
    }


def _run(shape: str, feed: Callable[[Reassembler], None], *, strict: bool = False, **options: Any) -> Any:
    """The result read, and the error raised (its type and words), of a stream fed by ``feed``;
    close() must reach the result whatever was raised, and only fsm's errors may escape."""
    r = Reassembler(shape, strict=strict, **options)
    raised = None
    try:
        feed(r)
    except ToolcallFSMError as exc:
        raised = (type(exc).__name__, str(exc))
    try:
        result = r.close()
    except ToolcallFSMError as exc:
        raised = raised or (type(exc).__name__, str(exc))
        result = r.close()
    return _read(result), raised


def _dicts(events: list[Any]) -> Callable[[Reassembler], None]:
    def feed(r: Reassembler) -> None:
        for event in events:
            r.feed(event)

    return feed


def _bytes(data: bytes, size: int) -> Callable[[Reassembler], None]:
    def feed(r: Reassembler) -> None:
        for at in range(0, len(data), size):
            r.feed_bytes(data[at : at + size])

    return feed


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def _one_choice(vector: Vector) -> bool:
    """A vector whose every payload holds choice 0 alone, as the decoders read it."""
    key = KEY[vector.shape]
    return all(
        not (type(e.get(key)) is list and any(isinstance(c, dict) and c.get("index") for c in e[key]))
        for e in vector.events
    )


ONE_CHOICE = [v for v in load_vectors() if v.shape in SHAPES and v.choice is None and _one_choice(v)]


@pytest.mark.parametrize("strict", [False, True])
def test_choice_0_reads_every_one_choice_vector_as_no_choice_does(strict: bool) -> None:
    assert len(ONE_CHOICE) >= 80, len(ONE_CHOICE)
    for vector in ONE_CHOICE:
        options: dict[str, Any] = {"strict": strict, "policies": Policies(**vector.policies)}
        if vector.body is not None:
            data = vector.body.encode("utf-8")
            feeds = [_bytes(data, len(data) or 1), _bytes(data, 7)]
        else:
            feeds = [_dicts(vector.events), _bytes(_sse(vector.events), 5)]
        for feed in feeds:
            assert _run(vector.shape, feed, **options, choice=0) == _run(vector.shape, feed, **options), vector.name


FIRST = [False, 0.0, "", [], {}, None, 0]


@pytest.mark.parametrize("index", FIRST, ids=repr)
@pytest.mark.parametrize("shape", SHAPES)
def test_an_index_the_decoders_read_as_the_first_is_choice_0(shape: str, index: Any) -> None:
    # Found: False, 0.0, "", [] and {} were skipped under choice=0, the turn's calls lost.
    if shape == "openai-chat":
        entry = {"index": index, "delta": {"tool_calls": [_openai_call("a", "f")]}, "finish_reason": "tool_calls"}
    else:
        entry = {"index": index, "content": {"parts": [{"functionCall": {"name": "f", "args": {}}}]}}
        entry["finishReason"] = "STOP"
    events = [{KEY[shape]: [entry]}]
    plain = _run(shape, _dicts(events))
    assert [c[1] for c in plain[0]["calls"]] == ["f"]
    assert _run(shape, _dicts(events), choice=0) == plain
    assert _run(shape, _dicts(events), choice=0, strict=True) == _run(shape, _dicts(events), strict=True)
    skipped = _run(shape, _dicts(events), choice=1)[0]
    assert skipped["calls"] == [] and [d[0] for d in skipped["diagnostics"]].count("choice-skipped") == 1


def _openai_call(call_id: str, name: str, arguments: str = "{}") -> dict[str, Any]:
    return {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_a_text_index_and_the_int_are_each_reported() -> None:
    # Found: "1" and 1 were one entry of the record, so the second was never reported.
    events = [{"choices": [{"index": i, "delta": {"content": "x"}}]} for i in ("1", 1, "1", 1)]
    result = reassemble(events, "openai-chat", choice=0)
    said = [d.message for d in result.diagnostics if d.code == "choice-skipped"]
    assert said == [
        "choice '1' is skipped: this reassembler reads choice 0",
        "choice 1 is skipped: this reassembler reads choice 0",
    ]
    huge = [{"choices": [{"index": 10**5000 + k, "delta": {"content": "x"}}]} for k in (0, 1, 0)]
    told = [d for d in reassemble(huge, "openai-chat", choice=0).diagnostics if d.code == "choice-skipped"]
    assert len(told) == 2  # two numbers past the int-string limit, written alike, are two choices
    zero = reassemble([{"choices": [{"index": "0", "delta": {"content": "x"}}]}], "openai-chat", choice=0)
    assert [d.message for d in zero.diagnostics if d.code == "choice-skipped"] == [
        "choice '0' is skipped: this reassembler reads choice 0"
    ]


@pytest.mark.parametrize("value", ["1", True, 1.9, 1.0, -1, [1], {"k": 1}])
def test_a_vector_choice_that_is_no_index_is_refused(tmp_path: Path, value: Any) -> None:
    # Found: "1", true and 1.9 loaded as choice 1.
    source = Path(__file__).resolve().parent.parent / "specs" / "vectors" / "gemini-two-candidates-second.json"
    data = json.loads(source.read_text())
    assert load_vector(source).choice == data["choice"] == 1
    path = tmp_path / "v.json"
    path.write_text(json.dumps({**data, "choice": value}))
    with pytest.raises(SpecError, match="is an index"):
        load_vector(path)


HOSTILE_INDEXES: list[Any] = [True, False, 0.0, 1.0, "1", "", -1, 2**63, 2**64 + 1, 10**5000, [1], {"i": 1}, None]


def _hostile_stream(rng: random.Random, shape: str) -> list[Any]:
    """Payloads of two, three or more choices, with hostile lists and entries among real ones."""
    key = KEY[shape]
    events: list[Any] = []
    for _ in range(rng.randrange(3, 14)):
        entries: list[Any] = []
        for _ in range(rng.randrange(0, 4)):
            index = rng.choice([0, 1, 2, *HOSTILE_INDEXES])
            if shape == "openai-chat":
                delta = rng.choice([{"content": "t"}, {"tool_calls": [_openai_call(f"c{rng.randrange(3)}", "f")]}, {}])
                entry: Any = {"index": index, "delta": delta, "finish_reason": rng.choice([None, None, "stop"])}
            else:
                part = rng.choice([{"text": "t"}, {"functionCall": {"name": "g", "args": {"a": 1}}}])
                entry = {"index": index, "content": {"role": "model", "parts": [part]}}
                if rng.random() < 0.2:
                    entry["finishReason"] = "STOP"
            if rng.random() < 0.08:
                entry = rng.choice([None, [entry], "x", 3])
            entries.append(entry)
        event: dict[str, Any] = {key: entries}
        roll = rng.random()
        if roll < 0.05:
            event[key] = rng.choice(["x", {"index": 1}, 5, None])
        elif roll < 0.1:
            event["error"] = {"message": "boom", "code": 500}
        elif roll < 0.2:
            event["usage" if shape == "openai-chat" else "usageMetadata"] = {"total_tokens": 3}
        events.append(event)
    return events


@pytest.mark.parametrize("shape", SHAPES)
def test_hostile_streams_raise_only_fsm_errors_and_read_alike_however_fed(shape: str) -> None:
    for seed in range(120):
        rng = random.Random(f"{shape}-{seed}")
        events = _hostile_stream(rng, shape)
        choice = rng.choice([0, 1, 2, 2**64 + 1])
        for strict in (False, True):
            fed = _run(shape, _dicts(events), strict=strict, choice=choice)
            if not strict:  # choice-skipped is info: strict mode raises on violations only
                codes = [d[0] for d in fed[0]["diagnostics"]]
                assert "stream-failed" in codes or fed[1] is None, (seed, fed[1])
            try:
                wire = _sse(events)
            except ValueError:  # an index past the int-string limit: no JSON text writes it
                continue
            whole = _run(shape, _bytes(wire, len(wire)), strict=strict, choice=choice)
            cut = _run(shape, _bytes(wire, rng.randrange(1, 40)), strict=strict, choice=choice)
            assert whole == cut, (seed, strict)


def test_strict_mode_never_raises_on_a_skipped_choice_and_keeps_the_chosen_calls() -> None:
    events: list[dict[str, Any]] = []
    for k in range(300):  # 300 other choices, past the 64 the record remembers
        events.append({"choices": [{"index": k + 1, "delta": {"content": "other"}, "finish_reason": None}]})
        if k % 30 == 0:
            call = _openai_call(f"id{k}", "f", json.dumps({"k": k}))
            events.append({"choices": [{"index": 0, "delta": {"tool_calls": [{**call, "index": k // 30}]}}]})
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    r = Reassembler("openai-chat", strict=True, choice=0)
    for event in events:
        r.feed(event)
    result = r.close()
    assert [c.arguments for c in result.calls] == [{"k": k} for k in range(0, 300, 30)]
    assert result.text == "" and result.finish_reason == "tool_calls"
    told = [d for d in result.diagnostics if d.code == "choice-skipped"]
    assert all(d.severity.value == "info" for d in told)
    # Every skipped choice is told: 64 once each, every chunk of the other 236 each time.
    assert len(told) + result.suppressed_diagnostics.get("choice-skipped", 0) == 300


def _work(call: Callable[[], Any]) -> int:
    """The Python and C function calls made while ``call`` runs: work counted, not timed."""
    calls = 0

    def count(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    sys.setprofile(count)
    try:
        call()
    finally:
        sys.setprofile(None)
    return calls


@pytest.mark.parametrize("spread", [False, True], ids=["one-payload", "a-chunk-each"])
@pytest.mark.parametrize("distinct", [False, True], ids=["one-other", "all-others"])
def test_the_work_of_many_other_choices_is_linear(distinct: bool, spread: bool) -> None:
    def stream(n: int) -> bytes:
        entries = [{"index": (k + 1) if distinct else 1, "delta": {"content": "x"}} for k in range(n)]
        entries.append({"index": 0, "delta": {"tool_calls": [_openai_call("a", "f", '{"n": 1}')]}})
        payloads = [{"choices": [e]} for e in entries] if spread else [{"choices": entries}]
        return _sse([*payloads, {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}])

    def read(data: bytes, size: int) -> Result:
        r = Reassembler("openai-chat", choice=0)
        for at in range(0, len(data), size):
            r.feed_bytes(data[at : at + size])
        return r.close()

    small, large = stream(2_000), stream(20_000)
    results: list[Result] = []
    works = [_work(lambda d=d, s=s: results.append(read(d, s))) for d in (small, large) for s in (len(d), 97)]
    for result, n in zip(results, (2_000, 2_000, 20_000, 20_000), strict=True):
        assert [c.arguments for c in result.calls] == [{"n": 1}]
        told = sum(1 for d in result.diagnostics if d.code == "choice-skipped")
        told += result.suppressed_diagnostics.get("choice-skipped", 0)
        assert told == (n if distinct else 1)  # 64 remembered, told once; each chunk of the others told
    assert _read(results[0]) == _read(results[1]) and _read(results[2]) == _read(results[3])
    assert works[2] / works[0] < 13 and works[3] / works[1] < 13, works


def test_the_record_of_skipped_choices_holds_no_more_as_distinct_indexes_grow() -> None:
    import tracemalloc

    def held(n: int) -> int:
        events = [{"choices": [{"index": f"{k:06d}" + "x" * 1000, "delta": {"content": "x"}}]} for k in range(n)]
        wire = _sse(events)
        r = Reassembler("openai-chat", choice=0)
        tracemalloc.start()
        try:
            for at in range(0, len(wire), 4096):
                r.feed_bytes(wire[at : at + 4096])
            memory = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        result = r.close()
        assert len(result.diagnostics) + result.suppressed_diagnostics["choice-skipped"] == n + 1  # and no-finish
        return memory

    small, large = held(1_000), held(10_000)  # 1 MB and 10 MB of distinct indexes
    assert large < small * 1.5 + 100_000, (small, large)


def test_an_error_and_the_usage_beside_the_choices_reach_every_choice() -> None:
    usage = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    events = [
        {"choices": [{"index": 0, "delta": {"content": "a"}}, {"index": 1, "delta": {"content": "b"}}]},
        {"choices": [{"index": 1, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": usage},
        {"choices": [{"index": 0, "delta": {"content": "c"}}], "error": {"message": "overloaded"}},
    ]
    for choice in (0, 1):
        result = reassemble(events, "openai-chat", choice=choice)
        assert result.usage == usage
        provider_errors = [d.message for d in result.diagnostics if d.code == "provider-error"]
        assert provider_errors and "overloaded" in provider_errors[0]
    assert reassemble(events, "openai-chat", choice=0).finish_reason == "error"
    second = reassemble(events, "openai-chat", choice=1)
    assert second.text == "b" and second.finish_reason == "stop"  # its turn had finished before the error


def test_google_genai_responses_of_two_candidates() -> None:
    from google.genai import types as gt

    def candidate(index: int | None, name: str, args: dict[str, Any]) -> Any:
        part = gt.Part(function_call=gt.FunctionCall(name=name, args=args))
        return gt.Candidate(index=index, content=gt.Content(role="model", parts=[part]))

    first = gt.GenerateContentResponse(candidates=[candidate(None, "f", {"a": 1}), candidate(1, "g", {"b": 2})])
    last = gt.GenerateContentResponse(
        candidates=[gt.Candidate(index=1, finish_reason="STOP"), gt.Candidate(index=0, finish_reason="STOP")]
    )
    for choice, name, args in ((0, "f", {"a": 1}), (1, "g", {"b": 2})):
        result = reassemble([first, last], "gemini", choice=choice)
        assert [(c.name, c.arguments) for c in result.calls] == [(name, args)]
        assert result.finish_reason == "tool_calls"
        as_dicts = [r.model_dump(mode="json", exclude_none=True) for r in (first, last)]
        assert _read(reassemble(as_dicts, "gemini", choice=choice))["calls"] == _read(result)["calls"]
    assert _read(asyncio.run(areassemble([first, last], "gemini", choice=1))) == _read(
        reassemble([first, last], "gemini", choice=1)
    )


def test_langchain_chunks_read_alike_with_choice_0_and_none() -> None:
    from langchain_core.messages import AIMessageChunk

    chunks = [
        AIMessageChunk(content="hi", tool_call_chunks=[{"index": 0, "id": "a", "name": "f", "args": '{"x"'}]),
        AIMessageChunk(
            content="",
            tool_call_chunks=[{"index": 0, "id": None, "name": None, "args": ":1}"}],
            response_metadata={"finish_reason": "tool_calls"},
        ),
    ]
    plain = _read(reassemble(chunks, "openai-chat"))
    assert plain["calls"] and plain == _read(reassemble(chunks, "openai-chat", choice=0))


def _vertex_pair() -> tuple[Vector, Vector]:
    vectors = {v.name: v for v in load_vectors() if v.shape == "gemini"}
    return vectors["vertex-partial-args-two-calls"], vectors["vertex-next-call-opens-mid-string"]


def _two_candidates(first: Vector, second: Vector) -> list[dict[str, Any]]:
    """The second stream's candidates numbered 1, its payloads between the first's."""
    out: list[dict[str, Any]] = []
    right = [{**e, "candidates": [{**c, "index": 1} for c in e["candidates"]]} for e in second.events]
    for n, event in enumerate(first.events):
        out.append(event)
        if n < len(right):
            out.append(right[n])
    return out + right[len(first.events) :]


def test_vertex_partial_args_of_two_candidates_cut_at_every_byte() -> None:
    first, second = _vertex_pair()
    merged = _two_candidates(first, second)
    wire = _sse(merged)
    for choice, vector in ((0, first), (1, second)):
        alone = _read(reassemble(vector.events, "gemini", policies=Policies(**vector.policies)))
        alone["diagnostics"] = [d[:3] for d in alone["diagnostics"]]  # events are numbered in the merged stream
        whole = _read(reassemble([wire], "gemini", choice=choice))
        assert whole["calls"] and whole["calls"] == alone["calls"]
        assert [d[:3] for d in whole["diagnostics"] if d[0] != "choice-skipped"] == alone["diagnostics"]
        for at in range(1, len(wire)):
            assert _read(reassemble([wire[:at], wire[at:]], "gemini", choice=choice)) == whole, at


@pytest.mark.parametrize("framing", ["sse", "ndjson", "array"])
def test_replay_choice_reads_each_framing_as_the_library_does(tmp_path: Path, framing: str) -> None:
    first, second = _vertex_pair()
    merged = _two_candidates(first, second)
    data = {
        "sse": _sse(merged),
        "ndjson": b"".join(json.dumps(e).encode() + b"\n" for e in merged),
        "array": json.dumps(merged, indent=1).encode(),
    }[framing]
    path = tmp_path / "two"
    path.write_bytes(data)
    for choice in (0, 1):
        out, err = io.StringIO(), io.StringIO()
        assert main(["replay", "--provider", "gemini", "--choice", str(choice), str(path)], out, err) == 0, err
        printed = json.loads(out.getvalue())
        expected = reassemble([data[:5], data[5:]], "gemini", choice=choice)
        assert [c["name"] for c in printed["calls"]] == [c.name for c in expected.calls]
        assert [c["arguments"] for c in printed["calls"]] == [c.arguments for c in expected.calls]
    out, err = io.StringIO(), io.StringIO()
    assert main(["replay", "--provider", "gemini", "--choice", "1" + "0" * 5000, str(path)], out, err) == 2


@pytest.mark.parametrize("choice", [2**63, 2**64 + 7, 10**5000], ids=["2**63", "2**64+7", "10**5000"])
def test_a_choice_past_64_bits_or_the_int_string_limit_keeps_its_calls(choice: int) -> None:
    # Found: a choice past the int-string limit failed the stream at its first skipped choice (fed
    # dicts, LimitExceeded, the chosen calls lost; fed bytes, a bare ValueError).
    call = {"index": choice, "delta": {"tool_calls": [_openai_call("a", "f")]}}
    events = [
        {"choices": [{"index": 0, "delta": {"content": "no"}}, call]},
        {"choices": [{"index": choice, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    result = reassemble(events, "openai-chat", choice=choice, strict=True)
    assert [c.name for c in result.calls] == ["f"] and result.text == "" and result.finish_reason == "tool_calls"
    named = str(choice) if choice < 2**64 * 2 else "a number too long to write as text (more than 4300 digits)"
    assert [d.message for d in result.diagnostics] == [f"choice 0 is skipped: this reassembler reads choice {named}"]
    wire = _sse([{"choices": [{"index": 0, "delta": {"content": "no"}}]}])
    assert _run("openai-chat", _bytes(wire, 3), choice=choice)[1] is None  # no error, bare or fsm's


def test_a_choice_refused_is_named_even_past_the_int_string_limit() -> None:
    with pytest.raises(InvalidOption, match="a number too long to write"):
        Reassembler("gemini", choice=-(10**5000))


def test_replay_strict_exits_0_on_skipped_choices_and_1_without_a_choice(tmp_path: Path) -> None:
    call = _openai_call("a", "f", '{"x": 1}')
    events = [
        {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}, {"index": 1, "delta": {"content": "hi"}}]},
        {"choices": [{"index": 1, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    path = tmp_path / "two.sse"
    path.write_bytes(_sse(events) + b"data: [DONE]\n\n")
    for choice, calls, text in (("0", ["f"], ""), ("1", [], "hi")):
        out, err = io.StringIO(), io.StringIO()
        argv = ["replay", "--provider", "openai-chat", "--strict", "--choice", choice, str(path)]
        assert main(argv, out, err) == 0, err.getvalue()
        printed = json.loads(out.getvalue())
        assert [c["name"] for c in printed["calls"]] == calls and printed["text"] == text
        assert [d["severity"] for d in printed["diagnostics"]] == ["info"]
    out, err = io.StringIO(), io.StringIO()
    assert main(["replay", "--provider", "openai-chat", "--strict", str(path)], out, err) == 1
    assert "choice-ignored" in err.getvalue()


@pytest.mark.parametrize("shape", SHAPES)
def test_each_choice_of_a_merged_stream_reads_as_its_own_stream_in_strict_mode_too(shape: str) -> None:
    from tests.test_choices import _merged, _outcome, _pairs

    for n, (first, second) in enumerate(_pairs(shape)):
        merged = _merged(first, second, random.Random(f"strict-{shape}-{n}"))
        wire = _sse(merged)
        pieces = [wire[at : at + 11] for at in range(0, len(wire), 11)]
        for choice, vector in ((0, first), (1, second)):
            expected = _outcome(vector.events, shape, strict=True)  # a violation raised, or the turn
            assert _outcome(merged, shape, choice=choice, strict=True) == expected, (first.name, second.name)
            assert _outcome(pieces, shape, choice=choice, strict=True) == expected


def test_a_refused_langchain_chunk_takes_nothing_in_and_the_stream_goes_on() -> None:
    from langchain_core.messages import AIMessageChunk

    r = Reassembler("openai-chat", choice=1)
    with pytest.raises(ToolcallFSMError):
        r.feed(AIMessageChunk(content="", tool_call_chunks=[{"index": 0, "id": "a", "name": "f", "args": "{}"}]))
    r.feed(
        {"choices": [{"index": 1, "delta": {"tool_calls": [_openai_call("b", "g")]}, "finish_reason": "tool_calls"}]}
    )
    result = r.close()
    assert [(c.id, c.name) for c in result.calls] == [("b", "g")]
    assert [d.event for d in result.diagnostics] == []  # the refused chunk was never an event


@pytest.mark.parametrize("shape", SHAPES)
def test_the_general_path_of_a_named_choice_is_linear_in_the_chosen_calls_fragments(shape: str) -> None:
    # With a choice, no payload takes a fast path: a long call streamed beside another choice's text.
    def stream(n: int) -> bytes:
        if shape == "openai-chat":
            head: dict[str, Any] = {"index": 1, "delta": {"tool_calls": [_openai_call("a", "f", "")]}}
            piece = [{"index": 1, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "b"}}]}}]
            first = {"index": 1, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"s": "'}}]}}
            last = {"index": 1, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '"}'}}]}}
            end: dict[str, Any] = {"index": 1, "delta": {}, "finish_reason": "tool_calls"}
            other: dict[str, Any] = {"index": 0, "delta": {"content": "y"}}
        else:
            call = {"name": "f", "willContinue": True}
            head = {"index": 1, "content": {"role": "model", "parts": [{"functionCall": call}]}}
            partial = {"jsonPath": "$.s", "stringValue": "b", "willContinue": True}
            piece_call = {"partialArgs": [partial], "willContinue": True}
            piece = [{"index": 1, "content": {"role": "model", "parts": [{"functionCall": piece_call}]}}]
            first = {"index": 1, "content": {"role": "model", "parts": [{"functionCall": {"willContinue": True}}]}}
            done = {"partialArgs": [{"jsonPath": "$.s", "stringValue": ""}], "willContinue": True}
            last = {"index": 1, "content": {"role": "model", "parts": [{"functionCall": done}]}}
            closing = {"role": "model", "parts": [{"functionCall": {}}]}
            end = {"index": 1, "content": closing, "finishReason": "STOP"}
            other = {"index": 0, "content": {"parts": [{"text": "y"}]}}
        key = KEY[shape]
        body = [{key: [*piece, other]} for _ in range(n)]
        return _sse([{key: [head]}, {key: [first]}, *body, {key: [last]}, {key: [end]}])

    def read(data: bytes) -> Result:
        r = Reassembler(shape, choice=1)
        for at in range(0, len(data), 97):
            r.feed_bytes(data[at : at + 97])
        return r.close()

    results: list[Result] = []
    works = [_work(lambda n=n: results.append(read(stream(n)))) for n in (2_000, 20_000)]
    for result, n in zip(results, (2_000, 20_000), strict=True):
        assert [(c.name, c.arguments) for c in result.calls] == [("f", {"s": "b" * n})]
        assert result.text == "" and result.finish_reason == "tool_calls"
    assert works[1] / works[0] < 13, works
