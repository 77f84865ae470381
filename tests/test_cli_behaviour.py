"""The command line behaves: it says its version, each command's help has examples and exit
status, long runs show progress on a terminal (and only there), and nothing is written where the
user did not say."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fsm
from fsm.cli import build_parser, main
from fsm.harness.vectors import VECTOR_DIR

ROOT = Path(__file__).resolve().parent.parent


class Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def run(*args: str, stderr: io.StringIO | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), stderr if stderr is not None else io.StringIO()
    code = main(list(args), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_version() -> None:
    assert run("--version")[:2] == (0, f"toolcall-fsm {fsm.__version__}\n")


@pytest.mark.parametrize(
    "command", [[], ["replay"], ["conform"], ["fuzz"], ["history"], ["history", "check"], ["diagram"]]
)
def test_every_help_has_examples_and_exit_status(command: list[str]) -> None:
    code, text, _ = run(*command, "--help")
    assert code == 0
    assert "examples:" in text and "toolcall-fsm " in text.split("examples:")[1]
    if command != ["history"]:  # a group: its one command, check, has the exit status
        assert "exit status: 0" in text


def test_every_subcommand_is_covered_by_the_help_test() -> None:
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert set(commands) == {"replay", "conform", "fuzz", "history", "diagram"}


def _two_vectors(folder: Path) -> Path:
    folder.mkdir()
    for name in ("openai-parallel-one-event", "openai-two-calls-one-tool-index-reuse"):
        shutil.copy(VECTOR_DIR / f"{name}.json", folder / f"{name}.json")
    return folder


def test_conform_against_shows_progress_only_on_a_terminal(tmp_path: Path) -> None:
    vectors = _two_vectors(tmp_path / "vectors")
    adapter = f"{sys.executable} {ROOT / 'tools' / 'adapters' / 'toolcall_fsm.py'}"
    args = ("conform", "--vectors", str(vectors), "--against", adapter)
    code, out, err = run(*args, stderr=Terminal())
    assert code == 0 and "2 passed, 0 failed" in out
    assert "vector 1 of 2" in err and "vector 2 of 2" in err  # numbered from 1
    assert err.endswith("\r\x1b[K")  # the status line is cleared before the table
    code, out, err = run(*args)
    assert code == 0 and err == ""  # a pipe or a log gets no progress


def test_fuzz_shows_progress_on_a_terminal_and_writes_nothing_in_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run("fuzz", "--shape", "ollama", "--examples", "5", "--seed", "3", stderr=Terminal())
    assert code == 0 and "0 failing" in out
    assert "fuzz: 1 of 2: ollama property" in err and "fuzz: 2 of 2: ollama robust" in err
    assert list(tmp_path.iterdir()) == []  # no .hypothesis, no vectors
    told = tmp_path / "findings"
    assert run("fuzz", "--shape", "ollama", "--examples", "5", "--seed", "3", "--out", str(told))[0] == 0
    assert {p.name for p in tmp_path.iterdir()} <= {"findings"}  # hypothesis keeps its data only there


def test_diagram_in_a_folder_without_specs_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run("diagram")
    assert code == 2 and "--out" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["--help"], ["--version"], ["replay", "--help"], ["history", "check", "--help"]])
def test_help_and_version_that_cannot_be_written_exit_1(args: list[str]) -> None:
    # argparse swallows a failed write of its help or version: the command said 0 for text that
    # never arrived (a full disk, a closed pipe), where every other output failure is exit 1.
    command = [sys.executable, "-m", "fsm", *args]
    with open("/dev/full", "w") as full:
        proc = subprocess.run(command, stdout=full, stderr=subprocess.PIPE, check=False, cwd=ROOT)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.decode().startswith("toolcall-fsm: cannot write the output")
    assert "Traceback" not in proc.stderr.decode()


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["replay", "--help"]])
def test_help_and_version_go_to_the_stdout_main_is_given(args: list[str]) -> None:
    code, out, err = run(*args)
    assert code == 0 and out.startswith(("usage: toolcall-fsm", "toolcall-fsm ")) and err == ""


def test_an_output_whose_stream_its_caller_closed_says_nothing_when_collected(tmp_path: Path) -> None:
    """An embedding caller's stream closed before the CLI's Output wrapping it is collected: io's
    finalizer closes (so flushes) the wrapper, which must not raise on the closed stream (Python
    prints that as an ignored exception with its traceback)."""
    import gc

    from fsm.cli_io import Output

    target = (tmp_path / "out.txt").open("w", encoding="utf-8")  # a file's flush raises once closed
    output = Output(target)
    output.write("calls\n")
    target.close()
    seen: list[object] = []
    hook, sys.unraisablehook = sys.unraisablehook, seen.append
    try:
        output.flush()
        del output
        gc.collect()
    finally:
        sys.unraisablehook = hook
    assert seen == []
