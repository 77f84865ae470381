"""Hostile audit of the command line and of the conformance harness as users run it: output that a
reader leaves part-way, usage that is bad, and what the harness takes from another implementation."""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fsm.cli import main
from fsm.errors import LocalProtocolError
from fsm.harness import conformance
from fsm.harness.vectors import load_vectors

ROOT = Path(__file__).resolve().parent.parent


def _big_stream(path: Path, size: int = 1 << 20) -> Path:
    """One call whose arguments are ``size`` characters: a result of about twice that printed."""
    call = {
        "index": 0,
        "id": "c1",
        "type": "function",
        "function": {"name": "f", "arguments": json.dumps({"a": "y" * size})},
    }
    event = {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": "tool_calls"}]}
    path.write_text(f"data: {json.dumps(event)}\n\n")
    return path


class _Leaving(io.RawIOBase):
    """A pipe whose reader takes ``each`` bytes a write, then leaves after ``total`` bytes."""

    def __init__(self, each: int, total: int) -> None:
        self.each, self.total, self.taken = each, total, bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        if len(self.taken) >= self.total:
            raise BrokenPipeError(32, "Broken pipe")
        part = bytes(data[: min(self.each, self.total - len(self.taken))])
        self.taken += part
        return len(part)


def test_unbuffered_output_cut_short_is_a_failed_write(tmp_path: Path) -> None:
    # Under PYTHONUNBUFFERED=1 (python -u) standard output writes straight to the raw file, and a
    # raw write may take only part of the bytes (the pipe's reader left mid-write, `| head -c 10`):
    # the text layer dropped the rest in silence, and replay exited 0 with its output cut short.
    stream = _big_stream(tmp_path / "big.sse", 200_000)
    raw = _Leaving(each=65_536, total=100_000)
    stdout = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)  # type: ignore[arg-type]
    stderr = io.StringIO()
    assert main(["replay", str(stream)], stdout, stderr) == 1
    assert stderr.getvalue() == "toolcall-fsm: cannot write the output: Broken pipe\n"
    # A reader that stays takes every byte, a part at a time.
    raw = _Leaving(each=1000, total=10**9)
    stdout = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)  # type: ignore[arg-type]
    assert main(["replay", str(stream)], stdout, io.StringIO()) == 0
    assert json.loads(raw.taken)["calls"][0]["arguments"] == {"a": "y" * 200_000}


def test_unbuffered_replay_into_a_pipe_left_early_exits_1(tmp_path: Path) -> None:
    stream = _big_stream(tmp_path / "big.sse")  # 2 MB printed: far past what a pipe holds
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "fsm", "replay", str(stream)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(10) == b'{\n  "provi'
    proc.stdout.close()  # the reader leaves, as `| head -c 10` does
    err = proc.stderr.read().decode()
    assert proc.wait() == 1, err
    assert err == "toolcall-fsm: cannot write the output: Broken pipe\n"


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out, err)
    return code, out.getvalue(), err.getvalue()


def test_history_check_refuses_a_bare_json_string(tmp_path: Path) -> None:
    # A Responses body's `input` may be the user's text alone; a file that is only a JSON string is
    # no conversation. It was read as one user message ("pairs up", exit 0), except when the text
    # held "messages" or "contents" (then: no conversation, exit 2): a substring test on the text.
    for text in ("hello", "my messages"):
        path = tmp_path / "history.json"
        path.write_text(json.dumps(text))
        code, out, err = _run(["history", "check", str(path)])
        assert (code, out) == (2, ""), (text, out)
        assert "no conversation found" in err
    path.write_text(json.dumps({"input": "hello"}))  # the Responses body still reads
    code, out, _ = _run(["history", "check", str(path)])
    assert (code, out.endswith("history of 1 message tells no format: not judged (name one with --format)\n")) == (
        0,
        True,
    ), out


def test_conform_bad_usage_is_exit_2(tmp_path: Path) -> None:
    # An unclosed quote in --against was an internal error (exit 3, "please report it").
    code, out, err = _run(["conform", "--against", "python 'adapter.py"])
    assert (code, out) == (2, "") and "No closing quotation" in err, err
    # --fuzzed grades another reassembler: without --against it was dropped in silence (exit 0).
    code, out, err = _run(["conform", "--fuzzed", "5"])
    assert (code, out) == (2, "") and "--fuzzed" in err and "--against" in err, err


def _vector() -> conformance.Vector:
    return next(v for v in load_vectors() if v.name == "openai-parallel-one-event")


def test_harness_reads_unsupported_only_as_the_protocol_says() -> None:
    # `{"unsupported": 1}` (or a list) is no answer the protocol knows: it was read as "not
    # applicable", so an adapter printing it for every vector passed `conform --against` (exit 0);
    # and an object without "calls" (`{"unsupported": "no"}`, `{}`) was read as no calls at all.
    for printed in ('{"unsupported": "no"}', '{"unsupported": 1}', '{"unsupported": [0]}', "{}"):
        script = f"import sys; sys.stdin.read(); print({printed!r})"
        outcome = conformance.run_external(f"{sys.executable} -c {shlex.quote(script)}", _vector())
        assert outcome.applicable and not outcome.passed, printed
        assert outcome.problems == ("output is not a list of call objects",)
    script = "import sys; sys.stdin.read(); print('{\"unsupported\": true}')"
    assert not conformance.run_external(f"{sys.executable} -c {shlex.quote(script)}", _vector()).applicable


def test_harness_bounds_what_an_adapter_prints() -> None:
    # An adapter that prints without end was read whole into memory until the timeout.
    script = "import sys\nwhile True: sys.stdout.write('x' * 65536)"
    outcome = conformance.run_external(f"{sys.executable} -c {shlex.quote(script)}", _vector(), limit=1_000_000)
    assert not outcome.passed and outcome.problems == ("printed more than 1000000 bytes",)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie is dead, waiting for its reaper


def test_harness_stops_what_an_adapter_left_running(tmp_path: Path) -> None:
    # Past the time allowed only the adapter was killed: a child it started ran on, an orphan.
    pidfile = tmp_path / "child"
    script = f"sleep 60 & echo $! > {shlex.quote(str(pidfile))}; wait"
    outcome = conformance.run_external(f"sh -c {shlex.quote(script)}", _vector(), timeout=1)
    assert outcome.problems == ("timed out after 1 seconds",)
    # SIGKILL is delivered, not waited for: on a busy machine the child can still show as running for
    # a moment after the kill returned (CI saw it once), so it is given a few seconds to be gone.
    child = int(pidfile.read_text())
    for _ in range(100):
        if not _alive(child):
            break
        time.sleep(0.05)
    assert not _alive(child)


def test_harness_refuses_a_command_it_cannot_split_or_run() -> None:
    # An unclosed quote raised ValueError, not the library's own error (and `conform` exited 3).
    with pytest.raises(LocalProtocolError, match="No closing quotation"):
        conformance.run_external("python 'adapter.py", _vector())
    with pytest.raises(LocalProtocolError, match="needs a command"):
        conformance.run_external("''", _vector())
    # A command not found raised FileNotFoundError out of the API.
    with pytest.raises(LocalProtocolError, match="cannot run no-such-adapter-audit28: No such file or directory"):
        conformance.run_external("no-such-adapter-audit28", _vector())


def test_a_vector_the_fuzzer_writes_expects_what_the_engine_rightly_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A case written out expected no diagnostic at all and no server call, where the property asks
    # only that none be a violation: streams this engine reads right failed `conform` as vectors
    # (184 of 320 sampled, 40 per shape: finish-reason-mapped, synthesized-id, resend,
    # empty-arguments; hosted Responses items), so a finding, once fixed, still failed as a vector.
    from fsm.harness.fuzz import run as fuzz
    from fsm.harness.fuzz.shapes import CASES
    from fsm.harness.vectors import write_vector

    folder = tmp_path / "sampled"
    for shape in CASES:
        for vector in fuzz.sample_vectors(shape, 16):
            write_vector(vector, folder)
    code, out, _ = _run(["conform", "--vectors", str(folder)])
    assert f"{16 * len(CASES)} passed, 0 failed" in out, [line for line in out.splitlines() if "FAIL" in line]
    # A failure `toolcall-fsm fuzz` writes out is a vector `conform` reads: here the property is made
    # to fail on every stream, and the engine, right, passes the shrunk case written.
    monkeypatch.setattr(fuzz, "check", lambda case: ["made to fail"])
    findings = tmp_path / "findings"
    argv = ["fuzz", "--shape", "openai-responses", "--mode", "property", "--examples", "5", "--out", str(findings)]
    code, out, _ = _run(argv)
    assert code == 1 and "shrunk case written to" in out, out
    code, out, _ = _run(["conform", "--vectors", str(findings)])
    assert "1 passed, 0 failed" in out, out


def test_fuzz_refuses_an_out_it_cannot_write_before_it_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `--out` naming a file was found unusable only when a failing case was to be written: after
    # the run (hours, with --examples 3000), the shrunk case lost, the shapes after it never run.
    from fsm.harness.fuzz import run as fuzz

    monkeypatch.setattr(fuzz, "check", lambda case: ["made to fail"])
    taken = tmp_path / "taken"
    taken.write_text("")
    for out in (taken, taken / "sub"):
        code, printed, err = _run(
            ["fuzz", "--shape", "cohere", "--mode", "property", "--examples", "2", "--out", str(out)]
        )
        assert (code, printed) == (1, ""), printed
        assert err.startswith(f"toolcall-fsm: cannot write into --out {out}: "), err


def test_conform_reports_a_malformed_vector_and_runs_the_rest(tmp_path: Path) -> None:
    # One malformed file among a user's vectors ended the run (exit 1, one line): no vector was run,
    # and --json printed nothing. Each is now a failed row (and a line on stderr); the rest run.
    good = (ROOT / "specs" / "vectors" / "openai-a-b-b.json").read_text()
    (tmp_path / "a-good.json").write_text(good)
    (tmp_path / "b-same-name.json").write_text(good)
    (tmp_path / "c-not-json.json").write_text("{bad")
    (tmp_path / "d-wrong-schema.json").write_text(json.dumps({**json.loads(good), "expect": 5}))
    wrong_calls = json.loads(good)
    wrong_calls["name"], wrong_calls["expect"]["calls"] = "wrong-calls", [{"name": "nope", "arguments": {}}]
    (tmp_path / "e-wrong-calls.json").write_text(json.dumps(wrong_calls))
    code, out, err = _run(["conform", "--json", "--vectors", str(tmp_path)])
    assert code == 1
    verdicts = {o["vector"]: o["passed"] for o in json.loads(out)["outcomes"]}
    assert verdicts == {
        "b-same-name.json": False,
        "c-not-json.json": False,
        "d-wrong-schema.json": False,
        "openai-a-b-b": True,
        "wrong-calls": False,
    }
    assert len(err.splitlines()) == 3 and "used twice" in err and "cannot read" in err, err
    code, out, _ = _run(["conform", "--vectors", str(tmp_path)])
    assert code == 1 and "1 passed, 4 failed" in out, out


def test_grade_peers_refuses_a_negative_count_as_usage() -> None:
    # `--fuzzed -1` reached hypothesis, whose InvalidArgument came out as a traceback.
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "grade_peers.py"), "--fuzzed", "-1"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "must be a whole number from 0 to 10000, not '-1'" in proc.stderr
