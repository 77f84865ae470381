"""The command-line contract: output shape, exit codes, and errors without tracebacks."""

from __future__ import annotations

import importlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fsm.cli import main
from tests.helpers import NO_FRAMING, chunk, sse, tc

STREAMS = Path(__file__).resolve().parent / "streams"


def run_cli(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_calls_output_has_the_documented_shape(tmp_path: Path) -> None:
    path = tmp_path / "s.sse"
    path.write_bytes(sse([chunk(tc(index=0, id="a", name="f", args='{"x": 1}')), chunk(finish="tool_calls")]))
    code, out, _ = run_cli("replay", str(path))
    assert code == 0
    data = json.loads(out)
    # The documented keys, in order; later additions only ever come after them.
    assert list(data) == [
        "provider",
        "finish_reason",
        "calls",
        "diagnostics",
        "server_tool_calls",
        "text",
        "text_signature",
        "reasoning",
        "usage",
        "suppressed_diagnostics",
        "text_output_index",
        "text_parts",
        "raw_finish_reason",
        "finish_message",
        "refusal",
        "server_tool_results",
        "container",
        "compactions",
        "declined_calls",
        "provider_fields",
        "source_provider",
    ]
    assert (data["raw_finish_reason"], data["finish_message"], data["refusal"]) == ("tool_calls", None, None)
    assert list(data["calls"][0]) == [
        "index",
        "id",
        "wire_id",
        "name",
        "arguments",
        "arguments_json",
        "status",
        "thought_signature",
        "type",
        "input",
        "item",
        "output_index",
        "reply_id",
    ]
    assert data["calls"][0] == {
        "index": 0,
        "id": "a",
        "wire_id": "a",
        "name": "f",
        "arguments": {"x": 1},
        "arguments_json": '{"x": 1}',
        "status": "complete",
        "thought_signature": None,
        "type": "function",
        "input": None,
        "item": None,
        "output_index": None,
        "reply_id": None,
    }


def test_diagnostics_have_event_code_message_severity(tmp_path: Path) -> None:
    path = tmp_path / "s.sse"
    path.write_bytes(sse([chunk(tc(name="f", args="{}"))]))
    data = json.loads(run_cli("replay", str(path))[1])
    assert data["diagnostics"][0] == {
        "event": 1,
        "code": "synthesized-id",
        "message": data["diagnostics"][0]["message"],
        "severity": "info",
    }


@pytest.mark.parametrize("example", sorted(p.name for p in STREAMS.iterdir()))
def test_bundled_examples_replay_cleanly(example: str) -> None:
    code, out, err = run_cli("replay", str(STREAMS / example))
    assert code == 0, err
    assert json.loads(out)["calls"]


def test_bundled_collision_example_gives_two_calls() -> None:
    data = json.loads(run_cli("replay", str(STREAMS / "gemini-compat-collision.sse"))[1])
    assert [c["arguments"] for c in data["calls"]] == [{"city": "Paris"}, {"city": "Oslo"}]


def test_strict_violation_exits_1_naming_event_and_rule(tmp_path: Path) -> None:
    path = tmp_path / "dup.sse"
    path.write_bytes(
        sse([chunk(tc(index=0, id="X", name="f", args="{}")), chunk(tc(index=1, id="X", name="f", args="{}"))])
    )
    assert run_cli("replay", str(path))[0] == 0
    code, out, err = run_cli("replay", "--strict", str(path))
    # The result so far still goes to stdout: the call completed before the fault, the rest cut.
    assert code == 1 and [c["status"] for c in json.loads(out)["calls"]] == ["complete"]
    assert err.startswith("toolcall-fsm: event 2: duplicate-id") and "rule duplicate-id-renamed" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"hello world", NO_FRAMING), (b"data: {broken\n\n", "event 1: not valid JSON")],
)
def test_unreadable_input_exits_1_with_one_line(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad"
    path.write_bytes(content)
    code, _, err = run_cli("replay", "--strict", str(path))
    assert code == 1 and message in err and err.count("\n") == 1


def test_missing_file_exits_1() -> None:
    code, _, err = run_cli("replay", "/nonexistent/stream.sse")
    assert code == 1 and "cannot read" in err


def test_auto_detection_says_clearly_when_it_cannot_tell(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"hello": "world"}\n')
    code, _, err = run_cli("replay", str(path))
    assert code == 1 and "cannot tell the provider" in err and "--provider" in err


def test_unknown_provider_name_is_bad_usage(tmp_path: Path) -> None:
    assert run_cli("replay", "--provider", "nonesuch", str(tmp_path / "x"))[0] == 2


def test_wrong_provider_named_gives_no_calls_and_diagnostics(tmp_path: Path) -> None:
    path = tmp_path / "s.sse"
    path.write_bytes(sse([chunk(tc(index=0, id="a", name="f", args="{}"))]))
    code, out, _ = run_cli("replay", "--provider", "anthropic", str(path))
    data = json.loads(out)
    assert code == 0 and data["calls"] == [] and "unknown-event" in [d["code"] for d in data["diagnostics"]]


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["replay"],
        ["replay", "--flush", "sometimes", "x"],
        ["frobnicate"],
        ["conform", "--against", ""],  # graded the bundled engine and said 0: `--against "$UNSET"` passed
        ["conform", "--against", "  "],  # an IndexError (exit 3) from the empty command line
    ],
)
def test_bad_usage_exits_2(args: list[str]) -> None:
    assert run_cli(*args)[0] == 2


def test_deltas_output_with_on_finish_policy(tmp_path: Path) -> None:
    path = tmp_path / "s.sse"
    path.write_bytes(
        sse(
            [
                chunk(tc(index=0, id="a", name="f", args='{"x"')),
                chunk(tc(index=0, args=": 1}")),
                chunk(finish="tool_calls"),
            ]
        )
    )
    code, out, _ = run_cli("replay", "--output", "deltas", "--flush", "on-finish", str(path))
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert lines[0]["choices"][0]["delta"]["tool_calls"][0]["function"] == {"arguments": "", "name": "f"}
    assert lines[1]["choices"][0]["delta"]["tool_calls"][0]["function"] == {"arguments": '{"x": 1}'}
    assert lines[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_stdin_and_module_entry_point() -> None:
    data = sse([chunk(tc(index=0, id="a", name="f", args="{}"), finish="tool_calls")])
    proc = subprocess.run([sys.executable, "-m", "fsm", "replay", "-"], input=data, capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["calls"][0]["name"] == "f"


def test_fuzz_refuses_an_unknown_shape_as_bad_usage_without_hypothesis(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bad usage is 2, told at once, whether hypothesis is installed or not (where it was missing,
    a misspelt shape said 1, "fuzzing needs hypothesis")."""
    monkeypatch.setitem(sys.modules, "hypothesis", None)  # as where it is not installed
    monkeypatch.delitem(sys.modules, "fsm.harness.fuzz.run", raising=False)
    monkeypatch.delattr(importlib.import_module("fsm.harness.fuzz"), "run", raising=False)
    code, _, err = run_cli("fuzz", "--shape", "no-such-shape")
    assert code == 2 and "unknown shape 'no-such-shape'" in err
    assert run_cli("fuzz")[0] == 1  # a run still says what it needs


def test_history_checks_format_choices_are_the_history_formats() -> None:
    """The CLI lists them itself (it must not load fsm.history to start): they must not drift apart."""
    from fsm.cli import build_parser
    from fsm.history.formats import FORMATS

    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    history = next(a for a in commands["history"]._actions if a.dest == "history_command").choices
    choices = next(a for a in history["check"]._actions if a.dest == "format").choices
    assert tuple(choices) == ("auto", *FORMATS)
