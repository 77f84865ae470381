"""The fuzzers in CI, on a fixed, derandomized budget (a longer run: see the README), and proof that
they can fail: with an identity rule broken on purpose, the property fuzzer finds it."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fsm.cli import main
from fsm.engine.registry import Registry
from fsm.harness.fuzz import SHAPES
from fsm.harness.fuzz import run as fuzz
from fsm.harness.vectors import load_vector

BUDGET = 120


@pytest.mark.parametrize("shape", SHAPES)
def test_property_fuzzer_finds_nothing(shape: str) -> None:
    report = fuzz.fuzz(shape, "property", BUDGET, None)
    assert report.problems == [], report.failure
    assert report.streams >= BUDGET


@pytest.mark.parametrize("shape", SHAPES)
def test_robustness_fuzzer_finds_nothing(shape: str) -> None:
    report = fuzz.fuzz(shape, "robust", BUDGET, None)
    assert report.problems == [], report.failure


def test_a_broken_rule_is_caught_and_written_as_a_vector(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Break complete-value-starts-new-call: text for a finished value is appended to it instead.
    monkeypatch.setattr(Registry, "_reads_as_cumulative", lambda self, slot, text: False)
    original = Registry._route_text

    def always_append(self: Registry, ref: object, text: str, kind: str) -> object:
        _, chain = self._chain(ref, kind)  # type: ignore[arg-type]
        if chain and kind == "fragment" and chain[-1].state == "value_closed":
            self.machine.fire(chain[-1], "append", " ")
            chain[-1]._buf += text.encode()  # appended behind the machine's back: the bug
            chain[-1]._text = None
            return chain[-1], ""
        return original(self, ref, text, kind)  # type: ignore[arg-type]

    monkeypatch.setattr(Registry, "_route_text", always_append)
    out = io.StringIO()
    code = main(
        ["fuzz", "--shape", "openai-chat", "--mode", "property", "--examples", "200", "--out", str(tmp_path)],
        stdout=out,
        stderr=sys.stderr,
    )
    assert code == 1 and "FAIL" in out.getvalue()
    written = list(tmp_path.glob("fuzz-openai-chat-*.json"))
    assert len(written) == 1
    vector = load_vector(written[0])  # a valid vector, ready to commit
    assert vector.expect.calls


def test_fuzz_command_reports_streams() -> None:
    out = io.StringIO()
    assert main(["fuzz", "--shape", "ollama", "--examples", "10"], stdout=out, stderr=sys.stderr) == 0
    assert "ollama" in out.getvalue() and "0 failing" in out.getvalue()


def test_the_robustness_fuzzer_renders_streams_cut_inside_surrogate_pairs() -> None:
    # Seed 1130 draws an openai-chat case whose fragments hold lone UTF-16 halves; rendering it to
    # bytes once raised UnicodeEncodeError inside the fuzzer itself (exit 3 from `toolcall-fsm fuzz`).
    report = fuzz.fuzz("openai-chat", "robust", BUDGET, 1130)
    assert report.problems == [], report.failure


def _digest(shape: str, count: int) -> str:
    vectors = fuzz.sample_vectors(shape, count)
    return hashlib.sha256(json.dumps([v.to_json() for v in vectors], sort_keys=True).encode()).hexdigest()


_SAMPLE = (("openai-chat", 30), ("gemini", 30))
_IN_A_FRESH_PROCESS = f"""
import hashlib, json
from fsm.harness.fuzz.run import sample_vectors
for shape, count in {_SAMPLE!r}:
    vectors = sample_vectors(shape, count)
    print(hashlib.sha256(json.dumps([v.to_json() for v in vectors], sort_keys=True).encode()).hexdigest())
"""


def test_the_fuzzed_sample_is_the_same_in_any_process_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Hypothesis scrapes literals from every project module imported so far and sometimes draws
    # them: a module imported between two calls (here one with fresh literals, as another test's
    # imports would be) and other hypothesis runs must not change the sample, nor may a process
    # that imported nothing else.
    first = [_digest(shape, count) for shape, count in _SAMPLE]
    literals = tmp_path / "more_literals.py"
    literals.write_text("WORDS = " + repr([f"word{n}" for n in range(50)]) + "\nNUMBERS = " + repr(list(range(7, 90))))
    spec = importlib.util.spec_from_file_location("more_literals", literals)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, "more_literals", module)
    fuzz.fuzz("anthropic", "property", 20, None)
    assert [_digest(shape, count) for shape, count in _SAMPLE] == first
    fresh = subprocess.run(
        [sys.executable, "-c", _IN_A_FRESH_PROCESS], capture_output=True, text=True, check=True, timeout=120
    )
    assert fresh.stdout.split() == first


_SEEDED_STREAMS = """
import hashlib
from fsm.harness.fuzz import run
seen = []
checking = run.check
run.check = lambda case: seen.append(repr(case)) or checking(case)
report = run.fuzz("anthropic", "property", 15, 7)
print(report.streams, hashlib.sha256("".join(seen).encode()).hexdigest())
"""


def test_a_seeded_fuzz_run_gives_the_same_streams_in_any_process_state(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A seed printed in a failing run's report must reproduce it elsewhere: in a process that
    # imported nothing but the fuzzer, and in one that imported a module of fresh literals (which
    # hypothesis would otherwise scrape and draw from).
    literals = tmp_path / "more_literals.py"
    literals.write_text("WORDS = " + repr([f"word{n}" for n in range(50)]) + "\nNUMBERS = " + repr(list(range(7, 90))))
    seen: list[str] = []
    checking = fuzz.check
    monkeypatch.setattr(fuzz, "check", lambda case: seen.append(repr(case)) or checking(case))
    spec = importlib.util.spec_from_file_location("more_literals", literals)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, "more_literals", module)
    report = fuzz.fuzz("anthropic", "property", 15, 7)
    here = f"{report.streams} {hashlib.sha256(''.join(seen).encode()).hexdigest()}"
    fresh = subprocess.run(
        [sys.executable, "-c", _SEEDED_STREAMS], capture_output=True, text=True, check=True, timeout=120
    )
    assert report.streams == 15
    assert fresh.stdout.strip() == here


def test_property_tests_run_without_a_deadline() -> None:
    # tests/conftest.py's profile: a busy machine must not fail a property test for its time.
    from hypothesis import settings

    assert settings().deadline is None
