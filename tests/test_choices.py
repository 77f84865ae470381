"""A stream of several choices (OpenAI chat ``n`` > 1, Gemini ``candidateCount`` > 1), read one choice
a reassembler: ``Reassembler(provider, choice=k)``.

The proof is differential: two bundled vectors' streams merged into one of two choices (interleaved
at random, some payloads carrying both), each choice read from the merged stream must give what
its own stream gives alone, fed as dicts, as SSE bytes whole and cut, and (OpenAI chat) as the
openai SDK's chunk objects."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from fsm import Reassembler, reassemble
from fsm.cli import main
from fsm.errors import InvalidInput, InvalidOption, ToolcallFSMError
from fsm.harness.vectors import Vector, load_vector
from fsm.options import Policies
from fsm.results import Result

VECTORS = Path(__file__).resolve().parent.parent / "specs" / "vectors"
KEY = {"openai-chat": "choices", "gemini": "candidates"}


def _vectors(shape: str) -> list[Vector]:
    """The shape's vectors made of events, every event holding a list of choices that all read as
    choice 0 (and no error: an error ends every choice's turn, not one)."""
    found = []
    for path in sorted(VECTORS.glob("*.json")):
        vector = load_vector(path)
        if vector.shape != shape or not vector.events:
            continue
        lists = [event.get(KEY[shape]) for event in vector.events]
        if all(
            type(entries) is list
            and entries
            and all(type(e) is dict and e.get("index", 0) == 0 for e in entries)
            and "error" not in event
            for event, entries in zip(vector.events, lists, strict=True)
        ):
            found.append(vector)
    return found


def _as_choice(event: dict[str, Any], key: str, index: int) -> dict[str, Any]:
    return {**event, key: [{**entry, "index": index} for entry in event[key]]}


def _merged(first: Vector, second: Vector, rng: random.Random) -> list[dict[str, Any]]:
    """The two streams as one of two choices, each in its order; now and then a payload of each
    travels in one (both entries in its list)."""
    key = KEY[first.shape]
    left = [_as_choice(e, key, 0) for e in first.events]
    right = [_as_choice(e, key, 1) for e in second.events]
    out: list[dict[str, Any]] = []
    while left or right:
        if left and right and rng.random() < 0.25:
            a, b = left.pop(0), right.pop(0)
            out.append({**a, key: a[key] + b[key]})
        elif left and (not right or rng.random() < 0.5):
            out.append(left.pop(0))
        else:
            out.append(right.pop(0))
    return out


def _policies(vector: Vector) -> Policies:
    return Policies(**vector.policies)


def _read(result: Result) -> dict[str, Any]:
    """What a choice's turn is: its calls, text, reasoning, finish and its diagnostics' codes but
    those of the other choice's chunks."""
    return {
        "calls": [(c.id, c.name, c.arguments, c.arguments_json, c.status) for c in result.calls],
        "text": result.text,
        "reasoning": result.reasoning,
        "finish": (result.finish_reason, result.raw_finish_reason),
        "codes": [d.code for d in result.diagnostics if d.code != "choice-skipped"],
    }


def _alone(vector: Vector) -> Result:
    return reassemble(vector.events, vector.shape, policies=_policies(vector))


def _outcome(stream: Any, shape: str, **options: Any) -> Any:
    """_read of the stream's result, or the error it raised (its type and words, not its event's
    number: the other choice's chunks are counted among the events)."""
    try:
        return _read(reassemble(stream, shape, **options))
    except ToolcallFSMError as exc:
        return type(exc).__name__, exc.detail


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def _pairs(shape: str) -> list[tuple[Vector, Vector]]:
    vectors = [v for v in _vectors(shape) if not v.policies]  # both choices read under one set of policies
    return list(zip(vectors, vectors[1:] + vectors[:1], strict=True))


@pytest.mark.parametrize("shape", ["openai-chat", "gemini"])
def test_each_choice_of_a_merged_stream_reads_as_its_own_stream(shape: str) -> None:
    pairs = _pairs(shape)
    assert len(pairs) >= (30 if shape == "openai-chat" else 8), len(pairs)  # the vectors still qualify
    for n, (first, second) in enumerate(pairs):
        merged = _merged(first, second, random.Random(f"{shape}-{n}"))
        wire = _sse(merged)
        cut = sorted(random.Random(n).sample(range(1, len(wire)), min(12, len(wire) - 1)))
        pieces = [wire[a:b] for a, b in zip([0, *cut], [*cut, len(wire)], strict=True)]
        for choice, vector in ((0, first), (1, second)):
            expected = _outcome(vector.events, shape)
            assert _outcome(merged, shape, choice=choice) == expected, (first.name, second.name, choice)
            assert _outcome([wire], shape, choice=choice) == expected
            assert _outcome(pieces, shape, choice=choice) == expected
            if isinstance(expected, dict):
                got = reassemble(merged, shape, choice=choice)
                skipped = [d for d in got.diagnostics if d.code == "choice-skipped"]
                assert len(skipped) == 1 and str(1 - choice) in skipped[0].message, skipped  # once, at its first chunk
                assert skipped[0].severity.value == "info"


def test_openai_sdk_chunks_of_two_choices_read_one_choice_each() -> None:
    from openai.types.chat import ChatCompletionChunk

    first, second = _pairs("openai-chat")[0]
    merged = _merged(first, second, random.Random(7))
    envelope = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    chunks = [ChatCompletionChunk.model_validate({**envelope, **event}) for event in merged]
    for choice, vector in ((0, first), (1, second)):
        assert _read(reassemble(chunks, "openai-chat", choice=choice)) == _read(_alone(vector))


def test_without_a_named_choice_the_others_are_still_violations() -> None:
    first, second = _pairs("openai-chat")[0]
    merged = _merged(first, second, random.Random(1))
    result = reassemble(merged, "openai-chat")
    assert _read(result)["calls"] == _read(_alone(first))["calls"]
    ignored = [d for d in result.diagnostics if d.code == "choice-ignored"]
    assert ignored and all(d.severity.value == "violation" for d in ignored)
    assert not [d for d in result.diagnostics if d.code == "choice-skipped"]


def test_a_choice_no_chunk_carries_gives_no_call_and_says_why() -> None:
    first, second = _pairs("gemini")[0]
    result = reassemble(_merged(first, second, random.Random(2)), "gemini", choice=2)
    assert result.calls == () and result.finish_reason is None
    skipped = sorted(d.message for d in result.diagnostics if d.code == "choice-skipped")
    assert skipped == [
        "candidate 0 is skipped: this reassembler reads candidate 2",
        "candidate 1 is skipped: this reassembler reads candidate 2",
    ]


def test_a_gemini_candidate_without_an_index_is_the_first() -> None:
    call = {"content": {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"a": 1}}}]}}
    other = {"index": 1, "content": {"role": "model", "parts": [{"functionCall": {"name": "g", "args": {}}}]}}
    event = {"candidates": [call, other]}
    assert [c.name for c in reassemble([event], "gemini", choice=0).calls] == ["f"]
    assert [c.name for c in reassemble([event], "gemini", choice=1).calls] == ["g"]


@pytest.mark.parametrize("index", [True, "1", 1.0, None, [1], {"i": 1}, -1])
def test_only_an_int_index_equal_to_the_choice_is_the_choice(index: Any) -> None:
    # True == 1 in Python, and a choice numbered by a bool, a string or a float is no choice 1.
    entry = {"index": index, "delta": {"content": "x"}, "finish_reason": None}
    result = reassemble([{"choices": [entry]}], "openai-chat", choice=1)
    assert result.text == ""
    assert [d.code for d in result.diagnostics].count("choice-skipped") == 1


def test_each_other_choice_is_reported_once_and_the_record_stays_bounded() -> None:
    events = [{"choices": [{"index": k, "delta": {"content": "x"}, "finish_reason": None}]} for k in range(1, 200)]
    events += events  # each choice twice
    r = Reassembler("openai-chat", choice=0)
    for event in events:
        r.feed(event)
    result = r.close()
    skipped = sum(1 for d in result.diagnostics if d.code == "choice-skipped")
    skipped += result.suppressed_diagnostics.get("choice-skipped", 0)
    # 64 choices are remembered, each told once; every chunk of the 135 others is told each time.
    assert skipped == 64 + 2 * 135
    assert len(r._picker.skipped) == 64  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("provider", "choice"),
    [("openai-chat", True), ("openai-chat", -1), ("gemini", "1"), ("gemini", 1.0), ("auto", 1), ("anthropic", 0)],
)
def test_a_choice_that_is_no_index_or_for_a_wire_of_one_choice_is_refused(provider: str, choice: Any) -> None:
    with pytest.raises(InvalidOption):
        Reassembler(provider, choice=choice)


def test_langchain_chunks_hold_no_other_choice() -> None:
    from langchain_core.messages import AIMessageChunk

    chunk = AIMessageChunk(content="", tool_call_chunks=[{"index": 0, "id": "a", "name": "f", "args": "{}"}])
    r = Reassembler("openai-chat", choice=1)
    with pytest.raises(InvalidInput, match="first choice alone"):
        r.feed(chunk)
    assert [c.name for c in reassemble([chunk], "openai-chat", choice=0).calls] == ["f"]


def test_replay_reads_the_choice_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = _pairs("openai-chat")[0]
    stream = tmp_path / "two.sse"
    stream.write_bytes(_sse(_merged(first, second, random.Random(3))))
    for choice, vector in ((0, first), (1, second)):
        assert main(["replay", "--provider", "openai-chat", "--choice", str(choice), str(stream)]) == 0
        printed = json.loads(capsys.readouterr().out)
        assert [c["id"] for c in printed["calls"]] == [c.id for c in _alone(vector).calls]
        # Re-emitted, its chunks carry the choice read (as a gateway's emitter per choice does).
        assert (
            main(["replay", "--provider", "openai-chat", "--choice", str(choice), "--output", "deltas", str(stream)])
            == 0
        )
        chunks = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert chunks and {c["choices"][0]["index"] for c in chunks} == {choice}
    assert main(["replay", "--choice", "1", str(stream)]) == 2
    said = "toolcall-fsm replay: --choice: choice is for a provider that streams several choices, named: openai-chat or"
    assert said in capsys.readouterr().err
    assert main(["replay", "--provider", "openai-chat", "--choice", "-1", str(stream)]) == 2
    assert "must be a choice's index" in capsys.readouterr().err


def test_a_gateway_re_emits_each_choice_under_its_own_index() -> None:
    # One reassembler and one emitter per choice, their chunks sent side by side: openai-python's
    # stream state, which keeps every choice of a chunk stream apart, sees both choices' calls.
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    from fsm import DeltaEmitter

    def calls(vector: Vector) -> Any:
        outcome = _outcome(vector.events, vector.shape)
        return isinstance(outcome, dict) and outcome["calls"]

    pairs = [(a, b) for a, b in _pairs("openai-chat") if calls(a) and calls(b)]
    first, second = pairs[0]
    # openai-python's stream state takes a chunk stream's first chunk to be choice 0's, as OpenAI sends it.
    merged = next(
        m for seed in range(50) if (m := _merged(first, second, random.Random(seed)))[0]["choices"][0]["index"] == 0
    )
    readers = [Reassembler("openai-chat", choice=k) for k in (0, 1)]
    emitters = [DeltaEmitter(choice=k) for k in (0, 1)]
    sent: list[dict[str, Any]] = []
    for event in merged:
        for reader, emitter in zip(readers, emitters, strict=True):
            sent += emitter.chunks(reader.feed(event))
    for reader, emitter in zip(readers, emitters, strict=True):
        result = reader.close()
        sent += emitter.chunks(reader.drain())
        sent.append(emitter.finish(result))
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for chunk in sent:
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
    completion = state.current_completion_snapshot
    for choice, vector in ((0, first), (1, second)):
        got = [
            (c.id, c.function.name, json.loads(c.function.arguments))
            for c in completion.choices[choice].message.tool_calls or []
        ]
        assert got == [(c.id, c.name, c.arguments) for c in _alone(vector).complete_calls], choice


@pytest.mark.parametrize("choice", [True, -1, "0", None, -(10**5000)], ids=["true", "-1", "text", "none", "huge"])
def test_an_emitters_choice_is_an_index(choice: Any) -> None:
    # (a negative int past the int-string limit is named without str(), which would raise ValueError)
    from fsm import DeltaEmitter

    with pytest.raises(InvalidOption):
        DeltaEmitter(choice=choice)
