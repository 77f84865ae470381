"""Leftovers of the command line, each failing before its fix but where said: counts without a
bound (``fuzz --examples``, ``conform --fuzzed``), and files it may not read or write (root reads
anything, so a folder stands for the file, or open() is made to fail as it would)."""

from __future__ import annotations

import builtins
import io
import json
import runpy
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from fsm.cli import MAX_EXAMPLES, MAX_FUZZED, build_parser, main
from fsm.harness.vectors import VECTOR_DIR

ROOT = Path(__file__).resolve().parent.parent
CALL = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
CHUNKS = [
    {"choices": [{"index": 0, "delta": {"tool_calls": [CALL]}}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
]


# -- the command line: counts with a bound -------------------------------------------------------------------


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("argv", "bound"),
    [
        (["fuzz", "--examples", str(MAX_EXAMPLES + 1)], f"from 1 to {MAX_EXAMPLES}"),
        (["fuzz", "--examples", "9" * 40], f"from 1 to {MAX_EXAMPLES}"),
        (["fuzz", "--examples", "0"], f"from 1 to {MAX_EXAMPLES}"),
        (["conform", "--against", "true", "--fuzzed", str(MAX_FUZZED + 1)], f"from 0 to {MAX_FUZZED}"),
        (["conform", "--against", "true", "--fuzzed", "1" + "0" * 30], f"from 0 to {MAX_FUZZED}"),
        (["fuzz", "--examples", "\u00b2"], f"from 1 to {MAX_EXAMPLES}"),  # a digit int() cannot read
    ],
    ids=["examples", "examples-40-digits", "examples-0", "fuzzed", "fuzzed-31-digits", "superscript"],
)
def test_a_count_past_its_bound_is_bad_usage_in_one_line_naming_it(
    argv: list[str], bound: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Any number was taken: `fuzz --examples 10**30` ran (hypothesis's work without end), and
    # `conform --fuzzed 10**30` made vectors until memory ran out.
    code, out, _ = run(*argv)
    assert (code, out) == (2, "")
    err = capsys.readouterr().err  # argparse writes its usage errors to sys.stderr
    said = err.splitlines()[-1]
    assert said.startswith(f"toolcall-fsm {argv[0]}: error: argument {argv[-2]}: must be a whole number {bound}")
    assert len(said) < 200 and "Traceback" not in err


def test_a_count_at_its_bound_is_taken() -> None:
    parser = build_parser()
    assert parser.parse_args(["fuzz", "--examples", str(MAX_EXAMPLES)]).examples == MAX_EXAMPLES
    assert parser.parse_args(["fuzz", "--examples", "0001"]).examples == 1
    assert parser.parse_args(["conform", "--fuzzed", str(MAX_FUZZED)]).fuzzed == MAX_FUZZED
    assert parser.parse_args(["conform", "--fuzzed", "0"]).fuzzed == 0


GRADE_PEERS = ROOT / "tools" / "grade_peers.py"


@pytest.mark.parametrize("count", [str(MAX_FUZZED + 1), "1" + "0" * 30, "-1"], ids=["past", "31-digits", "negative"])
def test_grade_peers_takes_a_fuzzed_count_within_the_bound_conform_has(count: str) -> None:
    # `tools/grade_peers.py --fuzzed 10**30` made fuzzed streams until memory ran out: any whole
    # number was taken. It is bad usage now, as for `conform --fuzzed`, said in one line.
    proc = subprocess.run(
        [sys.executable, str(GRADE_PEERS), "--fuzzed", count],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=120,  # unbounded, the count ran until memory ran out: a failure, not a hang
    )
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
    said = proc.stderr.splitlines()[-1]
    assert (
        said
        == f"grade_peers.py: error: argument --fuzzed: must be a whole number from 0 to {MAX_FUZZED}, not {count!r}"
    )
    assert "Traceback" not in proc.stderr


def test_grade_peers_takes_a_fuzzed_count_up_to_the_bound_and_says_it() -> None:
    parser = runpy.run_path(str(GRADE_PEERS))["build_parser"]()
    assert parser.parse_args(["--fuzzed", str(MAX_FUZZED)]).fuzzed == MAX_FUZZED
    assert parser.parse_args(["--fuzzed", "0"]).fuzzed == 0 and parser.parse_args([]).fuzzed == 200
    assert f"at most {MAX_FUZZED}" in " ".join(parser.format_help().split())


def test_the_bounds_are_documented_in_help_and_readme() -> None:
    for command, said in (("fuzz", f"at most {MAX_EXAMPLES}"), ("conform", f"at most {MAX_FUZZED}")):
        code, out, _ = run(command, "--help")
        assert code == 0 and said in " ".join(out.split()), out
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"`--examples` takes 1 to {MAX_EXAMPLES:,}" in readme and f"`--fuzzed` takes 0 to {MAX_FUZZED:,}" in readme


# -- the command line: files it may not read or write --------------------------------------------------------


@pytest.fixture
def stream(tmp_path: Path) -> Path:
    path = tmp_path / "chat.sse"
    path.write_bytes("".join("data: " + json.dumps(chunk) + "\n\n" for chunk in CHUNKS).encode())
    return path


def deny(monkeypatch: pytest.MonkeyPatch, target: Path) -> None:
    """open() (and Path.open, read_text, write_text) of ``target`` or anything under it fails as it
    does for a file its user may not read or write (root may read anything, so chmod cannot show it)."""
    real_open = builtins.open

    def denied(file: Any, *args: Any, **kwargs: Any) -> Any:
        if str(file).startswith(str(target)):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", denied)
    monkeypatch.setattr(io, "open", denied)  # pathlib opens through io.open


def one_line(err: str) -> str:
    assert err.count("\n") == 1 and err.startswith("toolcall-fsm: "), err
    assert "Traceback" not in err and "Errno" not in err
    return err


@pytest.mark.parametrize("command", [["replay"], ["history", "check"]], ids=["replay", "history-check"])
def test_an_input_it_may_not_read_is_one_line_exit_1(
    command: list[str], stream: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run(*command, str(stream.parent))  # a folder: "Is a directory"
    assert code == 1 and one_line(err) == f"toolcall-fsm: cannot read {stream.parent}: Is a directory\n"
    deny(monkeypatch, stream)
    code, _, err = run(*command, str(stream))
    assert code == 1 and one_line(err) == f"toolcall-fsm: cannot read {stream}: Permission denied\n"


def test_a_vector_it_may_not_read_fails_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # It said "cannot read: [Errno 13] Permission denied: '/.../openai-parallel-one-event.json'".
    folder = tmp_path / "vectors"
    folder.mkdir()
    shutil.copy(VECTOR_DIR / "openai-parallel-one-event.json", folder)
    deny(monkeypatch, folder)
    code, out, err = run("conform", "--vectors", str(folder))
    assert code == 1 and "0 passed, 1 failed" in out
    assert one_line(err) == "toolcall-fsm: openai-parallel-one-event.json: cannot read: Permission denied\n"


def test_an_out_folder_it_may_not_write_into_is_one_line_exit_1(
    stream: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A file named as the folder said "File exists", which says nothing of what is wrong.
    code, _, err = run("fuzz", "--shape", "ollama", "--examples", "1", "--out", str(stream))
    assert (
        code == 1 and one_line(err) == f"toolcall-fsm: cannot write into --out {stream}: it is a file, not a folder\n"
    )

    def denied(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "TemporaryFile", denied)
    out = tmp_path / "findings"
    code, _, err = run("fuzz", "--shape", "ollama", "--examples", "1", "--out", str(out))
    assert code == 1 and one_line(err) == f"toolcall-fsm: cannot write into --out {out}: Permission denied\n"


def test_diagrams_it_may_not_write_are_one_line_exit_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "diagrams"
    deny(monkeypatch, out)
    code, _, err = run("diagram", "--out", str(out))
    assert code == 1 and one_line(err).startswith(f"toolcall-fsm: cannot use {out}/") and "Permission denied" in err
    code, help_text, _ = run("diagram", "--help")
    assert "a file it cannot read or write" in " ".join(help_text.split())


class Refusing(io.StringIO):
    def write(self, text: str) -> int:
        raise PermissionError(13, "Permission denied")


@pytest.mark.parametrize("argv", [["replay", "STREAM"], ["conform", "--json"]], ids=["replay", "conform"])
def test_an_output_it_may_not_write_is_one_line_exit_1(argv: list[str], stream: Path) -> None:
    err = io.StringIO()
    code = main([str(stream) if a == "STREAM" else a for a in argv], Refusing(), err)
    assert code == 1 and one_line(err.getvalue()) == "toolcall-fsm: cannot write the output: Permission denied\n"


def test_fuzz_help_documents_an_out_it_cannot_write_into() -> None:
    code, out, _ = run("fuzz", "--help")
    assert code == 0 and "an --out it cannot write into" in " ".join(out.split())
