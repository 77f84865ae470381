"""Known leftovers of the command line and the grading harness, each failing before its fix: the
time an adapter under grade may take per vector, and an integer id too long to write."""

from __future__ import annotations

import io
import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from fsm import Reassembler
from fsm.cli import main
from fsm.errors import RemoteProtocolError
from fsm.harness.vectors import VECTOR_DIR

DIGITS = "7" * 5000  # past Python's int-string conversion limit (4300 digits by default)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def one_vector(folder: Path) -> Path:
    folder.mkdir()
    shutil.copy(VECTOR_DIR / "openai-parallel-one-event.json", folder / "openai-parallel-one-event.json")
    return folder


# -- conform --against --timeout SECONDS ---------------------------------------------------------------------


def test_conform_timeout_bounds_each_run_of_an_adapter(tmp_path: Path) -> None:
    # The 30 seconds an adapter had per vector could not be changed: a slow adapter could not be
    # given more, nor a hung one less. Now --timeout sets it, and the failure says which bound.
    vectors = one_vector(tmp_path / "vectors")
    sleeper = f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(30)'"
    code, out, err = run("conform", "--vectors", str(vectors), "--against", sleeper, "--timeout", "0.5")
    assert code == 1, err
    assert "timed out after 0.5 seconds" in out and "0 passed, 1 failed" in out
    adapter = f"{shlex.quote(sys.executable)} {Path(__file__).parent.parent / 'tools' / 'adapters' / 'toolcall_fsm.py'}"
    code, out, err = run("conform", "--vectors", str(vectors), "--against", adapter, "--timeout", "60")
    assert (code, err) == (0, "") and "1 passed, 0 failed" in out


@pytest.mark.parametrize("value", ["0", "-1", "-0.5", "nan", "inf", "-inf", "1e400", "abc", "", "0x10"])
def test_conform_timeout_that_is_no_positive_number_is_bad_usage(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run("conform", "--against", "true", f"--timeout={value}")  # "-inf" alone reads as an option
    assert (code, out) == (2, "")
    err = capsys.readouterr().err  # argparse writes its usage errors to sys.stderr
    assert "--timeout" in err and "positive, finite number of seconds" in err and repr(value) in err
    assert "Traceback" not in err


def test_conform_timeout_without_against_is_bad_usage() -> None:
    # Only another reassembler's runs are bounded: said, as --fuzzed without --against is.
    code, out, err = run("conform", "--timeout", "5")
    assert (code, out) == (2, "") and "--timeout" in err and "--against" in err


def test_conform_help_and_readme_document_the_timeout() -> None:
    code, out, _ = run("conform", "--help")
    assert code == 0 and "--timeout SECONDS" in out and "default 30" in out
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    assert "[--timeout SECONDS]" in readme and "`--timeout SECONDS` sets another bound" in readme


# -- an integer id too long to write ------------------------------------------------------------------------


def chunk_with_id(call_id: Any) -> dict[str, Any]:
    call = {"index": 0, "id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}


FIRST = {"choices": [{"index": 0, "delta": {"content": "hi"}}]}


def sse_with_long_id() -> bytes:
    text = "data: " + json.dumps(FIRST) + "\n\ndata: " + json.dumps(chunk_with_id("LONG")) + "\n\n"
    return text.replace('"LONG"', DIGITS).encode()


def said_of_long_id(message: str) -> None:
    assert message.startswith("event 2: tool_calls[0].id is a number too long to write as text"), message
    assert "more than 4300 digits" in message and "Decimal" not in message and len(message) < 200


@pytest.mark.parametrize("strict", [False, True])
def test_an_id_of_5000_digits_is_named_as_a_number_too_long_to_write(strict: bool) -> None:
    # Read from the wire, the digits are kept (a Decimal, as argument text keeps them): the error
    # said "tool_calls[0].id is Decimal, not a string". Fed as a dict, the int's str() failed and
    # the error said only that the event held a long number, not where.
    fed = Reassembler("openai-chat", strict=strict)
    fed.feed(FIRST)
    with pytest.raises(RemoteProtocolError) as raised:
        fed.feed(chunk_with_id(int(DIGITS[:4000]) * 10**1000 + int(DIGITS[4000:])))
    said_of_long_id(str(raised.value))
    assert raised.value.event == 2
    read = Reassembler("auto", strict=strict)
    with pytest.raises(RemoteProtocolError) as raised:
        read.feed_bytes(sse_with_long_id())
    said_of_long_id(str(raised.value))
    assert raised.value.event == 2


@pytest.mark.parametrize(
    ("shape", "event"),
    [
        ("anthropic", {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "LONG"}}),
        ("gemini", {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "id": "LONG"}}]}}]}),
        ("ollama", {"message": {"tool_calls": [{"id": "LONG", "function": {"name": "f", "arguments": {}}}]}}),
    ],
)
def test_other_decoders_name_a_long_id_so_too(shape: str, event: dict[str, Any]) -> None:
    body = ("data: " + json.dumps(event) + "\n\n").replace('"LONG"', DIGITS).encode()
    with pytest.raises(RemoteProtocolError) as raised:
        Reassembler(shape).feed_bytes(body)
    message = str(raised.value)
    assert message.startswith("event 1: ") and "id is a number too long to write as text" in message, message
    assert "Decimal" not in message


def test_replay_names_the_long_id_and_its_event(tmp_path: Path) -> None:
    stream = tmp_path / "long-id.sse"
    stream.write_bytes(sse_with_long_id())
    code, out, err = run("replay", str(stream))
    assert code == 1
    assert err.startswith("toolcall-fsm: event 2: tool_calls[0].id is a number too long to write as text"), err
    assert "Decimal" not in err and "Traceback" not in err
    assert json.loads(out)["calls"] == []  # the result so far is still printed
