"""Reliability of framing, limits and errors (issue 12, items 1 and 3 to 6): one test per fault class.

Every input gets a typed answer naming its event, nothing is lost, ``close()`` always reaches the
result, limits bound memory exactly however the bytes were chunked, and the framers' work stays
linear (counted by ``Reassembler.framing_work``, never timed: tools/bench_framing.py has the clock).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import fsm
from fsm import (
    ArgumentsFragment,
    CallRef,
    FramingError,
    LimitExceeded,
    Limits,
    LocalProtocolError,
    Policies,
    Reassembler,
    RemoteProtocolError,
    Result,
    ToolcallFSMError,
)
from fsm.cli import main
from fsm.wire.framing import Framing, detect_framing
from tests.helpers import NO_FRAMING, aws_message, chunk, sse, tc

ROOT = Path(__file__).resolve().parent.parent

CALL_A = chunk(tc(index=0, id="a", name="f", args='{"x": 1}'))
CALL_B_OPEN = chunk(tc(index=1, id="b", name="g", args='{"y": "ab'))
FINISH = chunk(finish="tool_calls")


def outcome(pieces: list[bytes], **options: Any) -> tuple[str | None, Result]:
    """Feed ``pieces``; return the error raised (type and message) if any, and the result."""
    r = Reassembler(**options)
    error = None
    try:
        for piece in pieces:
            r.feed_bytes(piece)
        result = r.close()
    except ToolcallFSMError as exc:
        error = f"{type(exc).__name__}: {exc}"
        result = r.close()
    return error, result


def summary(result: Result) -> tuple[list[tuple[Any, ...]], list[tuple[int | None, str]]]:
    calls = [(c.name, c.status.value, c.arguments_json) for c in result.calls]
    return calls, [(d.event, d.code) for d in result.diagnostics]


def pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


# -- 1. only documented exceptions escape ---------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"data: " + b"[" * 1000 + b"]" * 1000 + b"\n\n",
        b"[" * 1000 + b"]" * 1000 + b"\n",  # a JSON array of arrays
        b'{"a":' * 1000 + b"1" + b"}" * 1000 + b"\n",  # NDJSON
        b'data: {"s": "' + b"[" * 5000 + b'"}\n\n',  # brackets inside a string are not nesting
    ],
)
@pytest.mark.parametrize("limits", [Limits(), Limits(max_depth=512)])
def test_deep_nesting_is_a_limit_never_a_recursion_error(body: bytes, limits: Limits) -> None:
    error, result = outcome([body], provider="openai-chat", limits=limits)
    if b'"s"' in body:
        assert error is None  # a string full of brackets is fine
    else:
        assert error is not None and error.startswith("LimitExceeded: event 1:")
        assert summary(result)[1] == [(1, "stream-failed")]


def test_raised_max_depth_still_bounds_the_final_argument_parse() -> None:
    args: dict[str, Any] = {"leaf": 1}
    for _ in range(505):
        args = {"a": args}
    event = {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": args}}]}}]}
    error, result = outcome([b"data: " + json.dumps(event).encode() + b"\n\n"], limits=Limits(max_depth=512))
    assert error is None and result.calls[0].status.value == "complete"
    with pytest.raises(LocalProtocolError, match="at most 512"):
        Limits(max_depth=5000)  # deeper would exhaust Python's recursion limit in json.loads


def test_partial_args_path_with_a_huge_index_is_a_protocol_error() -> None:
    entry = {"jsonPath": "$.a[" + "9" * 5000 + "]", "numberValue": 1}
    event = {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "partialArgs": [entry]}}]}}]}
    r = Reassembler("gemini")
    with pytest.raises(RemoteProtocolError, match=r"event 1: .*5000 digits"):
        r.feed(event)
    assert "stream-failed" in r.close().codes()


def test_caller_mistakes_are_local_errors_that_read_naturally() -> None:
    with pytest.raises(LocalProtocolError) as wrong_type:
        Reassembler().feed_bytes("data: {}\n\n")  # type: ignore[arg-type]
    assert isinstance(wrong_type.value, TypeError)
    for bad in [{"max_calls": 0}, {"max_depth": -1}, {"max_event_bytes": "10"}, {"max_diagnostics_per_code": 1.5}]:
        with pytest.raises(LocalProtocolError) as bad_limit:
            Limits(**bad)
        assert isinstance(bad_limit.value, ValueError)
    for choice in ["maybe", 3]:
        with pytest.raises(LocalProtocolError) as bad_policy:
            Policies(identical_text=choice)  # type: ignore[arg-type]
        assert isinstance(bad_policy.value, ValueError)
    r = Reassembler("openai-chat")
    with pytest.raises(LocalProtocolError) as bad_text:
        r.feed(ArgumentsFragment(CallRef(index=0, name="f"), 42))  # type: ignore[arg-type]
    assert isinstance(bad_text.value, TypeError)
    r.feed(ArgumentsFragment(CallRef(index=0, name="f"), "{}"))  # a caller mistake does not end the stream
    assert r.close().calls[0].arguments == {}


def cli(*args: str, stdout: Any = subprocess.PIPE, shell: str | None = None) -> subprocess.CompletedProcess[bytes]:
    command = shell or " ".join([sys.executable, "-m", "fsm", *args])
    return subprocess.run(
        command, shell=True, executable="/bin/bash", stdout=stdout, stderr=subprocess.PIPE, check=False, cwd=ROOT
    )


def test_cli_never_prints_a_traceback(tmp_path: Path) -> None:
    stream = tmp_path / "s.sse"
    big = chunk(tc(index=0, id="a", name="f", args=json.dumps({"s": "x" * 1_000_000})))
    stream.write_bytes(sse([big, FINISH]))  # more output than a pipe holds
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "x.json").write_text('{"not": "a vector"}')
    history = tmp_path / "h.json"
    history.write_text("{broken")
    py = f"{sys.executable} -m fsm"
    cases = {
        "closed stdout": (cli(shell=f"{py} replay {stream} >&-"), 1, "cannot write"),
        # A reader that goes away early, as `| head` does once it has its lines.
        "broken pipe": (cli(shell=f"{py} replay {stream} | true; exit ${{PIPESTATUS[0]}}"), 1, "cannot write"),
        "full disk": (cli(shell=f"{py} replay {stream} >/dev/full"), 1, "cannot write"),
        "missing command": (cli("conform", "--against", "/missing"), 1, "/missing"),
        "foreign vectors": (cli("conform", "--vectors", str(foreign)), 1, "x.json"),
        "zero examples": (cli("fuzz", "--examples", "0"), 2, "from 1 to 100000"),
        "malformed history": (cli("history", "check", str(history)), 1, "cannot read"),
        "closed stdin": (cli(shell=f"{py} replay - <&-"), 1, "cannot read standard input: it is closed"),
        "closed stdin, history": (cli(shell=f"{py} history check - <&-"), 1, "cannot read standard input"),
    }
    if not os.path.exists("/dev/full"):
        del cases["full disk"]
    for name, (proc, code, message) in cases.items():
        err = proc.stderr.decode()
        assert "Traceback" not in err and "Exception ignored" not in err, (name, err)
        assert proc.returncode == code and message in err, (name, proc.returncode, err)
    assert "cannot read" not in cases["full disk"][0].stderr.decode()


# -- 3. framing follows the SSE spec and recovers -----------------------------------------------------------


def test_an_event_with_empty_data_is_not_dispatched() -> None:
    body = b"data:\n\ndata: \n\n" + sse([CALL_A]) + b"data:\r\n\r\n" + sse([FINISH])
    error, result = outcome([body], strict=True)
    assert error is None and summary(result) == ([("f", "complete", '{"x": 1}')], [])


@pytest.mark.parametrize(
    ("bad", "why"),
    [(b"data: keep-alive\n\n", "not valid JSON"), (b"data: {\xff}\n\n", "not UTF-8"), (b"data: [1]\n\n", "not list")],
)
def test_lax_skips_an_unusable_event_naming_it_and_strict_raises(bad: bytes, why: str) -> None:
    body = sse([CALL_A], done=False) + bad + sse([FINISH], done=False)
    for size in [len(body), 7, 1]:  # the earlier event in the same chunk is processed too
        error, result = outcome(pieces(body, size))
        assert error is None
        assert summary(result) == ([("f", "complete", '{"x": 1}')], [(2, "bad-event")])
        assert why.split()[-1] in result.diagnostics[0].message
    error, result = outcome([body], strict=True)
    assert error is not None and error.startswith("FramingError: event 2:")
    assert summary(result)[0] == [("f", "complete", '{"x": 1}')]  # event 1, same chunk, was processed


def test_ndjson_and_json_array_recover_from_an_unusable_element_too() -> None:
    good, finish = json.dumps(CALL_A).encode(), json.dumps(FINISH).encode()
    ndjson = good + b"\nkeep-alive\n" + good.replace(b'"f"', b'"\xff"') + b"\n" + finish + b"\n"
    array = b"[" + good + b", " + good.replace(b'"f"', b'"\xff"') + b", [1], " + finish + b"]"
    for body, bad_events in [(ndjson, [2, 3]), (array, [2, 3])]:
        for size in [len(body), 3]:
            error, result = outcome(pieces(body, size))
            assert error is None
            assert summary(result) == ([("f", "complete", '{"x": 1}')], [(n, "bad-event") for n in bad_events])


def test_json_array_skips_scalars_keep_alives_and_junk_between_commas_by_element_number() -> None:
    good, finish = json.dumps(CALL_A).encode(), json.dumps(FINISH).encode()
    # a number, a string holding a comma, a bracket and an escaped quote, a bare keep-alive, junk after a
    # whole element, and an empty element: each is one element, reported under its number and skipped
    body = b"[" + good + b', 5, "a,]\\"x", keep-alive, {"b": [1, 2]}} junk, , ' + finish + b"]"
    expected = [(n, "bad-event") for n in (2, 3, 4)] + [(5, "unknown-event"), (6, "bad-event"), (7, "bad-event")]
    for size in [len(body), 5, 1]:
        error, result = outcome(pieces(body, size))
        assert error is None
        assert summary(result) == ([("f", "complete", '{"x": 1}')], expected)
    assert "not int" in result.diagnostics[0].message and "not str" in result.diagnostics[1].message
    error, result = outcome([body], strict=True)
    assert error is not None and error.startswith("FramingError: event 2:")
    assert summary(result)[0] == [("f", "complete", '{"x": 1}')]


def test_json_array_junk_that_opens_a_bracket_it_never_closes_runs_to_the_end() -> None:
    # Documented limit of recovery: no comma after "{" can be known to end it, so the rest is one cut element: the
    # finish in it is lost, though the call before it is whole.
    good, finish = json.dumps(CALL_A).encode(), json.dumps(FINISH).encode()
    error, result = outcome([b"[" + good + b", x{, " + finish + b"]"])
    assert error is None and summary(result) == (
        [("f", "complete", '{"x": 1}')],
        [(2, "cut-event"), (None, "no-finish-reason")],
    )


def bedrock_stream() -> bytes:
    events = [
        {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t", "name": "f"}}}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"x": 1}'}}}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "tool_use"}},
    ]
    return b"".join(aws_message(json.dumps(next(iter(e.values()))).encode(), next(iter(e))) for e in events)


def test_an_event_holding_an_integer_past_the_int_string_limit_is_read_as_its_dict_is() -> None:
    # Valid JSON that json.loads refuses (Python's int-string conversion limit): the event was
    # skipped (bad-event), so the call it carried was lost, where the same event fed as a dict (an
    # int held as a number) was read. Now its digits are kept (a Decimal), as argument text keeps them.
    digits = "9" * 5000
    huge = 10**5000 - 1  # the same number, made without the text conversion the limit guards
    call = chunk(tc(0, id="c1", name="f", args='{"n": 1}'))
    fed = [{**call, "x": huge}, chunk(finish="tool_calls")]
    wire = sse([{**call, "x": "HUGE"}, chunk(finish="tool_calls")]).replace(b'"HUGE"', digits.encode())
    from_dicts, from_bytes = fsm.reassemble(fed), fsm.reassemble(wire)
    assert summary(from_bytes) == summary(from_dicts) == ([("f", "complete", '{"n": 1}')], [])
    # Whole Gemini arguments hold the number: the call's are the dict's, its digits exact.
    part = {"functionCall": {"name": "f", "args": {"n": "HUGE"}}}
    gemini = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}]}
    wire = sse([gemini]).replace(b'"HUGE"', digits.encode())
    fed_part = {"functionCall": {"name": "f", "args": {"n": huge}}}
    fed_gemini = {"candidates": [{**gemini["candidates"][0], "content": {"role": "model", "parts": [fed_part]}}]}
    (read,), (given,) = fsm.reassemble(wire, "gemini").calls, fsm.reassemble([fed_gemini], "gemini").calls
    assert read.arguments == given.arguments == {"n": Decimal(digits)}
    assert read.arguments_json == given.arguments_json == '{"n": ' + digits + "}"
    # Bedrock's binary event stream reads its payloads so too.
    frames = bedrock_stream().split(b"contentBlockStop", 1)
    usage = aws_message(b'{"usage": {"inputTokens": ' + digits.encode() + b"}}", "metadata")
    result = fsm.reassemble(frames[0] + b"contentBlockStop" + frames[1] + usage, "bedrock")
    assert summary(result) == ([("f", "complete", '{"x": 1}')], []) and result.usage == {"inputTokens": Decimal(digits)}
    # An index too long to write is named as such, briefly (it said "is Decimal('999...'... (5011
    # characters), not an integer": it is an integer, kept as a Decimal).
    index = sse([chunk(tc(0, id="c1", name="f", args="{}")), chunk(finish="tool_calls")])
    r = fsm.Reassembler("openai-chat")
    with pytest.raises(RemoteProtocolError) as raised:
        r.feed_bytes(index.replace(b'"index": 0, "id"', b'"index": ' + digits.encode() + b', "id"'))
    said = str(raised.value)
    assert "index is a number too long to write as text" in said and "Decimal" not in said and len(said) < 300


def test_a_bom_is_accepted_for_every_framing() -> None:
    line, finish = json.dumps(CALL_A).encode(), json.dumps(FINISH).encode()
    bodies = {
        "sse": sse([CALL_A, FINISH]),
        "ndjson": line + b"\n" + finish + b"\n",
        "json-array": b"[" + line + b"," + finish + b"]",
        "aws-eventstream": bedrock_stream(),
    }
    for name, body in bodies.items():
        for data in [b"\xef\xbb\xbf" + body, b"\xef\xbb\xbf \r\n" + body]:
            for size in [len(data), 1, 2]:
                error, result = outcome(pieces(data, size))
                assert error is None, (name, error)
                assert [(c.name, c.arguments) for c in result.calls] == [("f", {"x": 1})], name


@pytest.mark.parametrize("head", [b"dx", b"dat", b"datax", b"e", b"ex", b"{", b"[", b":", b"x", b"retry", b"data"])
def test_detection_never_commits_on_a_prefix(head: bytes) -> None:
    for rest in [b"", b"\n", b": 1\n\n"]:
        data = head + rest
        whole = outcome([data])
        for cut in range(1, len(data)):
            split = outcome([data[:cut], data[cut:]])
            assert (split[0], summary(split[1])) == (whole[0], summary(whole[1])), (data, cut)


@pytest.mark.parametrize(
    ("junk", "bad"),
    [
        (b"keep-alive\n", 1),
        (b": ping\n", 1),
        (b"null\r\n\r\n", 1),
        (b"\xc2\xa0\n", 1),  # a no-break space is no JSON whitespace
        (b"\x0b\x0c \n", 0),  # a line of other ASCII whitespace is a blank NDJSON line
        (b"ping\n: ping\n\n", 2),
    ],
)
def test_ndjson_is_detected_past_a_first_line_that_tells_nothing(junk: bytes, bad: int) -> None:
    body = junk + json.dumps(CALL_A).encode() + b"\n" + json.dumps(FINISH).encode() + b"\n"
    expected = [(n, "bad-event") for n in range(1, bad + 1)]
    for size in [len(body), 3, 1]:
        error, result = outcome(pieces(body, size))
        assert error is None and summary(result) == ([("f", "complete", '{"x": 1}')], expected), size
    error, result = outcome([body], strict=True)
    assert (error is None) == (bad == 0)
    if bad:
        assert error is not None and error.startswith("FramingError: event 1:")


def test_a_comment_first_is_still_sse_when_sse_lines_follow_and_when_nothing_does() -> None:
    body = b": OPENROUTER PROCESSING\n\n: again\n\n" + sse([CALL_A, FINISH])
    for size in [len(body), 2, 1]:
        error, result = outcome(pieces(body, size))
        assert error is None and summary(result) == ([("f", "complete", '{"x": 1}')], [])
    assert detect_framing(b": ping\n\n", final=True) is Framing.SSE


def test_detection_holds_at_most_max_event_bytes() -> None:
    limits = Limits(max_event_bytes=1000)
    line = json.dumps(CALL_A).encode() + b"\n"
    for junk, told in [(b"k" * 998 + b"\n", True), (b"k" * 999 + b"\n", False)]:
        body = junk + line
        for size in [len(body), 64, 1]:
            got, result = outcome(pieces(body, size), limits=limits)
            assert got is None and (result.codes()[0] == "not-a-stream") is not told, (len(junk), size)
            assert len(result.calls) == told
            got, _ = outcome(pieces(body, size), limits=limits, strict=True)
            assert got is not None and got.startswith("FramingError: event 1")  # no framing, or the junk line
            assert (NO_FRAMING in got) is not told, (len(junk), size, got)
    for strict in (False, True):
        r = Reassembler(limits=limits, strict=strict)
        with pytest.raises(FramingError) if strict else contextlib.nullcontext():
            for _ in range(2000):  # a junk line with no end is refused once it passes the limit
                r.feed_bytes(b"k")
        assert r._detector.held == b""  # reported (lax) or raised: nothing is read after the window, nor kept
        assert r.close().codes()[0] == ("stream-failed" if strict else "not-a-stream")


def test_a_line_begun_in_the_window_tells_even_when_its_field_name_runs_past_it() -> None:
    limits = Limits(max_event_bytes=1000)
    stream = sse([CALL_A, FINISH])  # each event well inside the limit
    for junk in (990, 994, 995, 997, 998):  # "data:" of the line after the junk ends past byte 1000
        body = b"k" * junk + b"\n" + stream
        for size in [len(body), 64, 7, 1]:
            got, result = outcome(pieces(body, size), limits=limits)
            assert got is None and "not-a-stream" not in result.codes(), (junk, size, result.codes())
            assert len(result.calls) == 1, (junk, size)
    body = b"k" * 999 + b"\n" + stream  # the line begins at byte 1000: past the window
    for size in [len(body), 7, 1]:
        got, result = outcome(pieces(body, size), limits=limits)
        assert got is None and result.codes() == ["not-a-stream", "no-finish-reason"]


def test_detection_never_copies_a_long_line_it_reads_in_small_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    import fsm.wire.detect as detect

    copied = [0]

    def counting_bytes(*args: Any) -> bytes:
        made = bytes(*args)
        copied[0] += len(made)
        return made

    monkeypatch.setattr(detect, "bytes", counting_bytes, raising=False)
    r = Reassembler(limits=Limits(max_event_bytes=1 << 20))
    junk = b"k" * 20_000 + b"\n"
    for i in range(len(junk)):
        r.feed_bytes(junk[i : i + 1])
    assert r.close().codes()[0] == "not-a-stream"
    assert copied[0] < 8 * len(junk)  # each read copies at most a line's first 7 bytes, not the line so far


def test_detection_work_is_linear_in_a_junk_line_fed_byte_by_byte() -> None:
    r = Reassembler(limits=Limits(max_event_bytes=1 << 20))
    junk = b"k" * 200_000 + b"\n"
    for i in range(len(junk)):
        r.feed_bytes(junk[i : i + 1])
    assert r.framing_work < 3 * len(junk)


# -- 4. close() always returns ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "options"),
    [
        (b"data: {\xff}\n\n", {"strict": True}),  # not UTF-8, strict
        (b"data: " + b"[" * 400 + b"\n\n", {}),  # too deep, in lax mode too
        (b"data: " + b"x" * 400 + b"\n\n", {"limits": Limits(max_event_bytes=300)}),
        (b'data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": "1"}]}}]}\n\n', {}),
    ],
)
def test_close_after_any_error_gives_the_result_so_far(bad: bytes, options: dict[str, Any]) -> None:
    body = sse([CALL_A, CALL_B_OPEN], done=False) + bad + sse([FINISH])
    r = Reassembler(**options)
    with pytest.raises(RemoteProtocolError) as err:
        r.feed_bytes(body)
    assert err.value.event == 3
    with pytest.raises(LocalProtocolError, match="already failed"):
        r.feed_bytes(b"data: {}\n\n")
    result = r.close()
    assert summary(result)[0] == [("f", "complete", '{"x": 1}'), ("g", "truncated", '{"y": "ab')]
    assert (3, "stream-failed") in summary(result)[1]
    assert r.close() is result  # and again, forever


def test_strict_violation_found_by_close_raises_once_then_close_returns() -> None:
    r = Reassembler(strict=True)
    r.feed_bytes(sse([CALL_A, chunk(tc(index=1, id="b", name="g", args='{"y": '))], done=False))
    r.feed_bytes(sse([FINISH])[:-20])  # the finish event is cut short
    with pytest.raises(RemoteProtocolError, match="cut-event"):
        r.close()
    result = r.close()
    assert summary(result)[0] == [("f", "complete", '{"x": 1}'), ("g", "truncated", '{"y": ')]


def test_cli_prints_the_result_so_far_and_exits_1(tmp_path: Path) -> None:
    import io

    path = tmp_path / "s.sse"
    path.write_bytes(sse([CALL_A], done=False) + b"data: {\xff}\n\n" + sse([FINISH]))
    out, err = io.StringIO(), io.StringIO()
    assert main(["replay", str(path)], stdout=out, stderr=err) == 0  # lax: reported, skipped
    assert [d["code"] for d in json.loads(out.getvalue())["diagnostics"]] == ["bad-event"]
    out, err = io.StringIO(), io.StringIO()
    assert main(["replay", "--strict", str(path)], stdout=out, stderr=err) == 1
    assert [c["name"] for c in json.loads(out.getvalue())["calls"]] == ["f"]
    assert err.getvalue().startswith("toolcall-fsm: event 2: not UTF-8") and err.getvalue().count("\n") == 1


# -- 5. limits bound memory and are exact ------------------------------------------------------------------------


def ndjson_line(payload_bytes: int) -> bytes:
    """An NDJSON event of exactly ``payload_bytes`` bytes (two-byte characters in it), LF excluded."""
    head, tail = b'{"choices": [], "pad": "', b'"}'
    room = payload_bytes - len(head) - len(tail)
    return head + "é".encode() * (room // 2) + b"x" * (room % 2) + tail


@pytest.mark.parametrize("framing", ["ndjson", "sse", "json-array"])
def test_event_byte_limit_is_exact_however_chunked(framing: str) -> None:
    limit = 1000
    for size, refused in [(limit, False), (limit + 1, True)]:
        line = ndjson_line(size)
        body = {"ndjson": line + b"\n", "sse": b"data: " + line + b"\n\n", "json-array": b"[" + line + b"]"}[framing]
        limits = Limits(max_event_bytes=limit)
        answers = {outcome(pieces(body, n), provider="openai-chat", limits=limits)[0] for n in [len(body), 64, 1]}
        assert len(answers) == 1, answers  # the same answer however chunked
        (answer,) = answers
        assert (answer is not None and answer.startswith("LimitExceeded: event 1:")) == refused, answer


def test_argument_bytes_held_by_all_calls_are_bounded() -> None:
    limits = Limits(max_stream_argument_bytes=3000, max_argument_chars=2000)
    r = Reassembler("openai-chat", limits=limits)
    big = json.dumps({"s": "é" * 700}, ensure_ascii=False)  # 1410 bytes, 710 characters
    r.feed(chunk(tc(index=0, id="a", name="f", args=big)))
    r.feed(chunk(tc(index=1, id="b", name="f", args=big)))
    with pytest.raises(LimitExceeded, match="event 3: the calls of this stream hold more than 3000 bytes"):
        r.feed(chunk(tc(index=2, id="c", name="f", args=big)))
    # The refused text left the third call as it was: opened, nothing held, so truncated.
    assert [(c.status.value, len(c.arguments_json)) for c in r.close().calls] == [
        ("complete", len(big)),
        ("complete", len(big)),
        ("truncated", 0),
    ]


def test_diagnostics_are_bounded_per_code_and_the_rest_counted() -> None:
    body = b"".join(b"data: keep-alive %d\n\n" % i for i in range(5000)) + sse([CALL_A, FINISH])
    error, result = outcome([body], limits=Limits(max_diagnostics_per_code=10))
    assert error is None and result.calls[0].arguments == {"x": 1}
    assert result.codes() == ["bad-event"] * 10
    assert result.suppressed_diagnostics == {"bad-event": 4990}


def test_leading_whitespace_is_not_held() -> None:
    r = Reassembler()
    for _ in range(64):
        r.feed_bytes(b" \r\n\t" * 4096)
    assert r._detector.held == b"" and r._framer is None  # nothing of 1 MiB is kept
    r.feed_bytes(sse([CALL_A, FINISH]))
    assert r.close().calls[0].arguments == {"x": 1}


# -- 6. linear work in every framer ----------------------------------------------------------------------------------


def framing_work(data: bytes, size: int, provider: str = "openai-chat") -> int:
    r = Reassembler(provider, limits=Limits(max_event_bytes=1 << 26, max_argument_chars=1 << 26))
    for piece in pieces(data, size):
        r.feed_bytes(piece)
    r.close()
    return r.framing_work


TWO_EVENTS = {  # (the first event, the second), where whitespace may go before and between them
    "sse": (sse([CALL_A], done=False), sse([FINISH])),
    "ndjson": (json.dumps(CALL_A).encode() + b"\n", json.dumps(FINISH).encode() + b"\n"),
    "json-array": (b"[" + json.dumps(CALL_A).encode() + b",", json.dumps(FINISH).encode() + b"]"),
}


@pytest.mark.parametrize("framing", sorted(TWO_EVENTS))
def test_whitespace_trickled_before_and_between_events_costs_the_same_per_byte(framing: str) -> None:
    def per_byte(n: int) -> float:
        first, second = TWO_EVENTS[framing]
        data = b"\n" * n + first + b" \n" * (n // 2) + second
        return framing_work(data, 1) / len(data)

    small, large = per_byte(2_000), per_byte(16_000)
    assert large <= small * 1.25 and large < 8


def long_event_body(framing: str, size: int) -> tuple[bytes, str]:
    args = json.dumps({"blob": "x" * size})
    event = chunk(tc(index=0, id="a", name="f", args=args), finish="tool_calls")
    text = json.dumps(event).encode()
    if framing == "aws-eventstream":
        body = b"".join(
            aws_message(json.dumps(e).encode(), kind)
            for kind, e in [
                ("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t", "name": "f"}}}),
                ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": args}}}),
                ("messageStop", {"stopReason": "tool_use"}),
            ]
        )
        return body, "bedrock"
    return {"sse": b"data: " + text + b"\n\n", "ndjson": text + b"\n", "json-array": b"[" + text + b"]"}[
        framing
    ], "openai-chat"


@pytest.mark.parametrize("framing", ["sse", "ndjson", "json-array", "aws-eventstream"])
def test_one_long_event_in_small_pieces_is_read_once(framing: str) -> None:
    pytest.importorskip("botocore") if framing == "aws-eventstream" else None
    for size in [20_000, 200_000]:
        body, provider = long_event_body(framing, size)
        for chunk_size in [64, 7]:
            assert framing_work(body, chunk_size, provider) <= 3 * len(body)


def test_many_cr_only_lines_in_one_chunk_are_linear() -> None:
    # Without LFs, looking for the next LF from each line start would scan to the end every time.
    def per_byte(n: int) -> float:
        data = b"".join(b"data: " + json.dumps(CALL_A).encode() + b"\r\r" for _ in range(n)) + sse([FINISH])
        return framing_work(data, len(data)) / len(data)

    assert per_byte(4_000) <= per_byte(500) * 1.25


def test_chunk_sizes_do_not_change_calls_or_diagnostics() -> None:
    body = (
        b"\xef\xbb\xbf\n\n: hi\n\n"
        + sse([CALL_A], done=False)
        + b"data: keep-alive\r\n\r\ndata:\n\n"
        + sse([CALL_B_OPEN], done=False)
        + b"data: {\xff}\n\n"
        + sse([FINISH])
    )
    whole = outcome([body])
    for size in [1, 2, 3, 5, 64]:
        split = outcome(pieces(body, size))
        assert (split[0], summary(split[1])) == (whole[0], summary(whole[1]))
    assert summary(whole[1])[1][:2] == [(2, "bad-event"), (4, "bad-event")]


def test_unusable_events_keep_their_numbers_for_later_diagnostics() -> None:
    body = b"data: keep-alive\n\n" + sse([CALL_A, chunk(tc(index=0, id="a", name="other"))], done=False)
    _, result = outcome([body])
    # Event 3, a header under a's id with another name after a's complete value, opens the next call.
    assert [(d.event, d.code) for d in result.diagnostics][:2] == [(1, "bad-event"), (3, "duplicate-id")]
    with pytest.raises(FramingError, match="event 1"):
        Reassembler(strict=True).feed_bytes(body)


def test_an_event_ended_by_a_cr_at_the_very_end_is_whole_not_cut() -> None:
    # The last CR could have been half of a CRLF until close(): the event still ended properly, so
    # bad text in it is a bad event, while an event with no blank line after it is a cut.
    _, result = outcome([sse([CALL_A, FINISH], done=False) + b"data: keep-alive\r\r"])
    assert summary(result)[1] == [(3, "bad-event")]
    _, result = outcome([sse([CALL_A, FINISH], done=False) + b"data: keep-alive\r"])
    assert summary(result)[1] == [(3, "cut-event")]


def aws_frame(headers: bytes, payload: bytes, headers_length: int | None = None) -> bytes:
    """An AWS event-stream message with the given raw header bytes and correct CRCs (so botocore's
    checksums pass and its header parser is reached)."""
    import struct
    import zlib

    told = len(headers) if headers_length is None else headers_length
    prelude = struct.pack(">II", 16 + len(headers) + len(payload), told)
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


def aws_header(name: bytes, kind: int, value: bytes) -> bytes:
    return bytes([len(name)]) + name + bytes([kind]) + value


@pytest.mark.parametrize(
    ("headers", "headers_length"),
    [
        (aws_header(b":event-type", 12, b""), None),  # a header type botocore does not know: KeyError
        (aws_header(b"\xff\xfe", 7, b"\x00\x01x"), None),  # a header name that is not UTF-8
        (b"\x05ab", None),  # a header cut short: struct.error
        (aws_header(b":event-type", 7, b"\x00\x0cmessageStart"), 40),  # a headers length past the headers
    ],
    ids=["unknown-header-type", "name-not-utf8", "header-cut", "headers-length-too-long"],
)
def test_aws_headers_that_do_not_parse_under_valid_checksums_are_a_framing_error(
    headers: bytes, headers_length: int | None
) -> None:
    pytest.importorskip("botocore")
    body = aws_frame(headers, b"{}", headers_length)
    for size in [len(body), 3]:
        error, result = outcome(pieces(body, size))
        assert error is not None and error.startswith("FramingError: event 1: not a valid AWS event stream message")
        assert "stream-failed" in [d.code for d in result.diagnostics]


@pytest.mark.parametrize(
    "typed", [(6, b"\x00\x0cmessageStart"), (9, b"0" * 16), (4, b"\x00\x00\x00\x05")], ids=["bytes", "uuid", "int"]
)
def test_an_aws_event_type_header_that_is_not_a_string_is_a_bad_event(typed: tuple[int, bytes]) -> None:
    pytest.importorskip("botocore")
    odd = aws_frame(aws_header(b":event-type", *typed), b'{"role": "assistant"}')
    error, result = outcome([odd + bedrock_stream()], provider="bedrock")
    assert error is None
    assert [(d.event, d.code) for d in result.problems()] == [(1, "bad-event")]
    assert [(c.name, c.arguments) for c in result.calls] == [("f", {"x": 1})]
    error, _ = outcome([odd + bedrock_stream()], provider="bedrock", strict=True)
    assert error is not None and error.startswith("FramingError: event 1: the event type header is")


def test_a_diagnostic_quotes_at_most_a_bounded_part_of_the_wire() -> None:
    from fsm.engine.ledger import MESSAGE_CHARS

    junk = b"x" * 300_000  # no framing: held whole, then reported as no stream
    error, result = outcome([junk])
    assert error is None and result.diagnostics[0].code == "not-a-stream"
    assert "300000 bytes" in result.diagnostics[0].message and len(result.diagnostics[0].message) < 200
    unknown = {"type": "response." + "z" * 200_000, "sequence_number": 1}
    r = Reassembler("openai-responses")
    r.feed(unknown)
    said = r.close().diagnostics[0]
    assert said.code == "unknown-event" and said.message.startswith("Responses event type 'response.zzz")
    assert said.message.endswith(" characters)")
    assert len(said.message) < MESSAGE_CHARS + 40


# -- a strict violation in the last event, ended or not ---------------------------------------------


@pytest.mark.parametrize("pieces", [0, 1, 7])
@pytest.mark.parametrize("framing", ["sse", "ndjson"])
def test_a_strict_violation_in_the_last_event_stops_the_stream_alike_ended_or_not(framing: str, pieces: int) -> None:
    """The last event's violation (a second call reusing the first one's id) stops a strict stream
    where it is, whether that event was ended (read by feed_bytes) or not (read by close): the same
    error, and close() then gives the same result. An unended last event used to be read whole, its
    violation held back to the end: the renamed call was opened and cut, and no stream-failed said
    where the stream had stopped."""
    events = [CALL_A, chunk(tc(index=1, id="a", name="g", args=""))]
    if framing == "sse":
        ended = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
        unended = ended[:-2]
    else:
        ended = b"".join(json.dumps(e).encode() + b"\n" for e in events)
        unended = ended[:-1]

    def replay(body: bytes) -> tuple[str, list[str], list[str | None]]:
        r = Reassembler("openai-chat", strict=True)
        with pytest.raises(RemoteProtocolError) as raised:
            for at in range(0, len(body), pieces or len(body)):
                r.feed_bytes(body[at : at + (pieces or len(body))])
            r.close()
        result = r.close()
        return str(raised.value), [d.code for d in result.diagnostics], [c.name for c in result.calls]

    assert replay(unended) == replay(ended)
    assert replay(ended)[1:] == (["duplicate-id", "stream-failed"], ["f"])
