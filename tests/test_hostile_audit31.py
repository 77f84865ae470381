"""Hostile audit 31: numbers where the decoders and the command line expect text or an index.

Every leaf of every vector's events was replaced, in turn, by an integer past Python's int-string
conversion limit, NaN, an infinity, ``1e400``, ``-0`` and a number whose exponent no decimal holds,
fed as dicts and as SSE bytes, in lax and strict mode (about 120,000 streams): no exception but the
library's own escaped. What was wrong was what the errors and diagnostics said, and how a number
too long to write was told apart, fed or read, from one that is not. Each test below failed before
its fix, but test_a_megabyte_number_costs_in_proportion_to_its_digits, which holds the work linear
for megabyte numbers (it was, and stays so)."""

from __future__ import annotations

import copy
import io
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import fsm
from fsm.cli import main
from fsm.errors import LimitExceeded, RemoteProtocolError
from fsm.harness.vectors import VECTOR_DIR

DIGITS = "9" * 5000  # past the int-string conversion limit (4300 digits by default)
HUGE = 10**5000 - 1  # the same number, made without the conversion the limit guards
TOO_LONG = "is a number too long to write as text (more than 4300 digits)"


def sse(events: list[dict[str, Any]], raw: str = DIGITS) -> bytes:
    """The events as SSE, each string "RAW" written as the bare JSON text ``raw`` (a number)."""
    return "".join("data: " + json.dumps(e) + "\n\n" for e in events).replace('"RAW"', raw).encode()


def vector_events(name: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = json.loads((VECTOR_DIR / f"{name}.json").read_text())["events"]
    return events


def put(events: list[dict[str, Any]], at: int, path: tuple[str, ...], value: Any) -> list[dict[str, Any]]:
    events = copy.deepcopy(events)
    place = events[at]
    for key in path[:-1]:
        place = place[key]
    place[path[-1]] = value
    return events


def swap(value: Any, by: Any) -> Any:
    """``value`` with each string "RAW" in it replaced by ``by``: the dicts a caller would feed."""
    if value == "RAW":
        return by
    if isinstance(value, dict):
        return {key: swap(item, by) for key, item in value.items()}
    return [swap(item, by) for item in value] if isinstance(value, list) else value


def raised_by(feed: Any, shape: str, strict: bool = False) -> RemoteProtocolError:
    r = fsm.Reassembler(shape, strict=strict)
    with pytest.raises(RemoteProtocolError) as raised:
        feed(r)
    return raised.value


def fed(events: list[dict[str, Any]]) -> Any:
    def feed(r: fsm.Reassembler) -> None:
        for event in events:
            r.feed(event)

    return feed


def read(body: bytes) -> Any:
    return lambda r: r.feed_bytes(body)


def chat(entry: dict[str, Any]) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"tool_calls": [entry]}}]}


CHAT_CALL = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


# -- an index too long to write -------------------------------------------------------------------------------

INDEXES = [
    ("openai-chat", [chat(dict(CHAT_CALL, index="RAW"))], 1, "tool_calls[0].index"),
    ("anthropic", put(vector_events("anthropic-max-tokens-cut"), 1, ("index",), "RAW"), 2, "index"),
    ("bedrock", put(vector_events("bedrock-converse-stream"), 4, ("contentBlockDelta", "contentBlockIndex"), "RAW"), 5,
     "contentBlockIndex"),
    ("openai-responses", put(vector_events("responses-item-done-again"), 1, ("output_index",), "RAW"), 2,
     "output_index"),
]  # fmt: skip


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize(("shape", "events", "event", "field"), INDEXES, ids=[i[0] for i in INDEXES])
def test_an_index_too_long_to_write_is_named_as_such_read_or_fed(
    shape: str, events: list[dict[str, Any]], event: int, field: str, strict: bool
) -> None:
    # Read from the wire it was "index is Decimal('999... (5011 characters), not an integer": an
    # integer named as what it is not, by the type its digits were kept in. Fed as a dict, the
    # error said only that the event held a long number. Both now say the same, naming the field.
    # Fed to the OpenAI chat shortcuts, the int was the call's index and the call read (numbers34).
    for error in (raised_by(read(sse(events)), shape, strict), raised_by(fed(swap(events, HUGE)), shape, strict)):
        assert isinstance(error, LimitExceeded) and error.event == event
        assert error.detail == f"{field} {TOO_LONG}", error.detail
        assert "Decimal" not in str(error) and "not an integer" not in str(error)


# -- NaN and the infinities where an id belongs ---------------------------------------------------------------

IDS = [
    ("openai-chat", [chat(dict(CHAT_CALL, id="RAW"))], 1, "tool_calls[0].id"),
    ("anthropic", put(vector_events("anthropic-max-tokens-cut"), 1, ("content_block", "id"), "RAW"), 2, "id"),
    ("gemini", [{"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "id": "RAW"}}]}}]}], 1,
     "functionCall.id"),
    ("bedrock", put(vector_events("bedrock-converse-stream"), 3,
                    ("contentBlockStart", "start", "toolUse", "toolUseId"), "RAW"), 4, "toolUseId"),
    ("openai-responses", put(vector_events("responses-item-done-again"), 1, ("item", "call_id"), "RAW"), 2,
     "call_id"),
]  # fmt: skip
NOT_FINITE = [("NaN", float("nan"), "NaN"), ("Infinity", float("inf"), "Infinity"), ("-Infinity", -float("inf"), "Inf")]


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize(("raw", "value", "said"), NOT_FINITE, ids=[n[0] for n in NOT_FINITE])
@pytest.mark.parametrize(("shape", "events", "event", "field"), IDS, ids=[i[0] for i in IDS])
def test_a_nan_or_infinite_id_is_refused_not_made_the_word_nan(
    shape: str, events: list[dict[str, Any]], event: int, field: str, raw: str, value: float, said: str, strict: bool
) -> None:
    # Python's parser reads NaN, Infinity (and 1e400, below) as floats, and a numeric id is written
    # as its text: the call's id was "nan" or "inf", in lax and strict mode alike, without a word.
    for error in (raised_by(read(sse(events, raw)), shape, strict), raised_by(fed(swap(events, value)), shape, strict)):
        assert error.event == event and error.detail.startswith(f"{field} is "), error.detail
        assert said in error.detail and error.detail.endswith("which no text stands for")


def test_an_id_past_a_floats_range_is_refused_not_read_as_inf() -> None:
    # 1e400 is a JSON number; Python's parser reads it as inf: the id was "inf", its digits gone.
    error = raised_by(read(sse([chat(dict(CHAT_CALL, id="RAW"))], "1e400")), "openai-chat")
    assert error.detail == "tool_calls[0].id is Infinity or a number past a float's range, which no text stands for"
    (call,) = fsm.reassemble(sse([chat(dict(CHAT_CALL, id="RAW"))], "1e300")).calls  # a finite float: its text
    assert call.id == "1e+300"


# -- diagnostics that named the Decimal, or failed the stream when fed ---------------------------------------


@pytest.mark.parametrize(
    ("path", "said"),
    [
        (("item", "operation", "path"), "the operation (update_file) has path 99999"),
        (("item", "operation", "type"), "the operation's type is 99999"),
    ],
)
def test_a_long_number_in_a_built_in_action_is_shown_as_its_digits_read_or_fed(
    path: tuple[str, ...], said: str
) -> None:
    # Read from the wire the diagnostic showed "Decimal('999..."; fed as a dict, a long number as
    # the operation's type failed the whole stream (its repr() met the int-string limit), where
    # the bytes got a diagnostic and read on.
    events = put(vector_events("responses-builtin-client-calls"), 2, path, "RAW")
    from_wire = fsm.reassemble(sse(events), "openai-responses")
    from_dicts = fsm.reassemble(swap(events, HUGE), "openai-responses")
    for result in (from_wire, from_dicts):
        assert "stream-failed" not in result.codes()
        (why,) = [d for d in result.diagnostics if d.code == "unusable-action"]
        assert said in why.message and "Decimal" not in why.message and why.event == 3, why.message
        assert len(why.message) < 200


GEMINI_LANGUAGE = ("candidates", 0, "content", "parts", 1, "executableCode", "language")


@pytest.mark.parametrize(
    ("shape", "events", "said"),
    [
        ("openai-chat", [{"choices": [{"index": 0, "delta": {"content": "RAW"}}]}], "delta.content " + TOO_LONG),
        (
            "gemini",
            put(vector_events("gemini-code-execution-is-a-server-call"), 0, GEMINI_LANGUAGE, "RAW"),
            "executableCode.language " + TOO_LONG,
        ),
    ],
)
def test_a_text_part_holding_a_long_number_is_named_as_one(shape: str, events: list[dict[str, Any]], said: str) -> None:
    # part-not-reassembled said "delta.content is Decimal, not a string or list".
    result = fsm.reassemble(sse(events), shape)
    (why,) = [d for d in result.diagnostics if d.code == "part-not-reassembled" and d.event == 1]
    assert said in why.message and "Decimal" not in why.message and why.event == 1, why.message


def test_an_item_done_again_with_a_long_name_is_reported_read_or_fed() -> None:
    # Fed as a dict, the diagnostic's repr() of the name failed the stream (stream-failed, the
    # calls after it lost); read from the wire, it showed "name Decimal('999...".
    events = put(vector_events("responses-item-done-again"), 4, ("item", "name"), "RAW")
    from_wire = fsm.reassemble(sse(events), "openai-responses")
    from_dicts = fsm.reassemble(swap(events, HUGE), "openai-responses")
    for result in (from_wire, from_dicts):
        assert "stream-failed" not in result.codes()
        (again,) = [d for d in result.diagnostics if d.code == "item-done-again" and d.event == 5]
        assert f"again, with name {TOO_LONG.removeprefix('is ')}: not read" in again.message, again.message
        assert again.event == 5


def test_history_check_names_a_long_id_as_a_number_too_long(tmp_path: Path) -> None:
    # It said "a tool call's id must be a string, not Decimal".
    history = [
        {"role": "assistant", "tool_calls": [{"id": "RAW", "type": "function", "function": {"name": "f"}}]},
        {"role": "tool", "tool_call_id": "RAW", "content": "x"},
    ]
    path = tmp_path / "history.json"
    path.write_text(json.dumps(history).replace('"RAW"', DIGITS))
    out, err = io.StringIO(), io.StringIO()
    assert main(["history", "check", str(path)], out, err) == 2
    assert err.getvalue().endswith(f"message 1: a tool call's id must be a string, not a number {TOO_LONG[12:]}\n")
    assert "Decimal" not in err.getvalue()


# -- work: linear in the number's length ------------------------------------------------------------------


def _cpu(body: bytes, times: int = 3) -> float:
    best = float("inf")
    for _ in range(times):
        start = time.process_time()
        for strict in (False, True):
            r = fsm.Reassembler("openai-chat", strict=strict)
            try:
                r.feed_bytes(body)
                r.close()
            except RemoteProtocolError:
                pass
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize("field", ["id", "index", "usage"])
def test_a_megabyte_number_costs_in_proportion_to_its_digits(field: str) -> None:
    def body(digits: int) -> bytes:
        entry = dict(CHAT_CALL, **{field: "RAW"}) if field != "usage" else CHAT_CALL
        event = chat(entry) if field != "usage" else dict(chat(entry), usage={"prompt_tokens": "RAW"})
        return sse([event, {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}], "7" * digits)

    small, large = _cpu(body(1 << 17)), _cpu(body(1 << 20))
    assert large <= max(small, 0.002) * 8 * 4  # 8 times the digits: well under 32 times the work


# -- the command line's numbers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["fuzz", "--examples", DIGITS],
        ["fuzz", "--seed", DIGITS],
        ["conform", "--against", "true", "--fuzzed", DIGITS],
        ["fuzz", "--examples", "x" * 5000],
        ["conform", "--against", "true", "--timeout", DIGITS],  # a float: inf, no finite number of seconds
    ],
    ids=["examples", "seed", "fuzzed", "examples-junk", "timeout"],
)
def test_a_5000_digit_option_is_bad_usage_said_in_one_short_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # argparse wrote "invalid _positive value: '999...'": this module's function named, and all
    # 5000 characters written back (for --seed, "invalid int value").
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, out, err) == 2
    said = capsys.readouterr().err.splitlines()[-1]
    assert said.startswith(f"toolcall-fsm {argv[0]}: error: argument {argv[-2]}: ") and len(said) < 250, said
    assert "_positive" not in said and "_not_negative" not in said and "invalid int" not in said


# -- the grading harness: what another implementation printed ------------------------------------------------


def _graded(printed: str, tmp_path: Path) -> tuple[str, ...]:
    from fsm.harness import conformance
    from fsm.harness.vectors import load_vectors

    vector = next(v for v in load_vectors() if v.name == "openai-parallel-one-event")  # calls add, then sub
    output = tmp_path / "output.json"
    output.write_text(printed)
    script = f"import sys; sys.stdin.read(); sys.stdout.write(open({str(output)!r}).read())"
    outcome = conformance.run_external(f"{sys.executable} -c {shlex.quote(script)}", vector)
    assert not outcome.passed
    return outcome.problems


def test_a_graded_adapters_long_names_are_shown_cut(tmp_path: Path) -> None:
    # The problems wrote what the adapter printed whole: a name of 5000 digits as Decimal('999...')
    # and a megabyte name in full, each in one line of the report.
    calls = [
        {"id": "a", "name": "RAW", "arguments": {"x": 1}},
        {"id": "b", "name": "y" * (1 << 20), "arguments": {"x": 2}},
    ]
    first, second = _graded(json.dumps(calls).replace('"RAW"', DIGITS), tmp_path)
    assert first == f"calls 1.name: a number {TOO_LONG.removeprefix('is a number ')}, expected 'add'"
    assert second.startswith("calls 2.name: 'yyy") and second.endswith("... (1048578 characters), expected 'sub'")
    (count,) = _graded(json.dumps([*calls, calls[1]]).replace('"RAW"', DIGITS), tmp_path)
    assert count.startswith("3 calls, expected 2: [Decimal('999") and len(count) < 300, count[:400]


@pytest.mark.parametrize(
    ("shape", "event", "said"),
    [
        ("openai-chat", {"choices": [{"index": "RAW", "delta": {"content": "hi"}}]}, "choice"),
        ("gemini", {"candidates": [{"index": "RAW", "content": {"parts": [{"text": "hi"}]}}]}, "candidate"),
    ],
)
def test_a_choice_at_a_long_index_is_ignored_and_said_so_read_or_fed(
    shape: str, event: dict[str, Any], said: str
) -> None:
    # Fed as a dict, the choice-ignored message's f-string met the int-string limit and failed the
    # stream; read from the wire, the message wrote all 5000 digits.
    for result in (fsm.reassemble(sse([event]), shape), fsm.reassemble(swap([event], HUGE), shape)):
        assert "stream-failed" not in result.codes()
        (ignored,) = [d for d in result.diagnostics if d.code == "choice-ignored"]
        assert ignored.message == f"{said} a number {TOO_LONG.removeprefix('is a number ')} is not reassembled"
        assert ignored.event == 1
