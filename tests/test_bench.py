"""The benchmark runs (on a tiny size); its figures are never asserted here."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_benchmark_runs_on_a_tiny_size(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "bench.py"), "--quick", "--json", str(out)],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    shapes = {row["scenario"].split()[0] for row in report["rows"] if not row["capture"]}
    assert shapes == {"openai", "anthropic", "gemini", "vertex", "responses", "bedrock", "cohere", "ollama"}
    for row in report["rows"]:
        # toolcall-fsm's calls were checked against the expected ones before it was timed
        assert row["verdict"]["toolcall-fsm"] == "ok", row["scenario"]
        assert row["us_per_event"]["toolcall-fsm"] > 0 and row["peak_bytes"]["toolcall-fsm"] > 0
        if not row["capture"]:
            assert row["verdict"]["floor"] == "ok" and row["us_per_event"]["floor"] > 0
        for name, verdict in row["verdict"].items():
            # a wrong or skipped implementation is reported and never timed
            assert (name in row["us_per_event"]) == (verdict == "ok"), (row["scenario"], name, verdict)
    assert "import fsm under 50 ms" in report["targets"]
    # the names load lazily, so the first use is measured beside `import fsm`, never instead of it
    cpu = report["import"]["cpu_ms"]
    assert set(cpu) == {"import json", "import fsm", "from fsm import Reassembler", "replay"}
    assert all(value > 0 for value in cpu.values())
    assert "first use (from fsm import Reassembler)" in report["targets"]["import fsm under 50 ms"][1]
    assert "from fsm import Reassembler: best" in proc.stdout  # the printed summary has the row too
    growth = {(row["framing"], row["input"]) for row in report["framing"]}
    for framing in ["sse", "ndjson", "json-array"]:
        for label in ["whitespace first, 1-byte reads", "long event, 64-byte reads"]:
            assert (framing, label) in growth
    assert all(
        row["ratio"] > 0 and row["large_bytes"] == row["scale"] * row["small_bytes"] for row in report["framing"]
    )
    table = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "bench.py"), "--markdown", str(out)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    # a line per stream after the header and rule, then the growth table: its header, and a line per row
    assert table.count("\n| ") == len(report["rows"]) + 1 + len(report["framing"])
    assert "import fsm under 50 ms" in table
    assert "first use (`from fsm import Reassembler`)" in table


def test_the_talk_benchmark_runs_on_a_tiny_size(tmp_path: Path) -> None:
    out = tmp_path / "talk.json"
    tool = str(ROOT / "tools" / "bench_talk.py")
    proc = subprocess.run(
        [sys.executable, tool, "--quick", "--json", str(out)], capture_output=True, text=True, check=False, timeout=600
    )
    assert proc.returncode == 0, proc.stderr  # it exits with the reason when a read is not the text sent
    report = json.loads(out.read_text())
    labels = [row["label"] for row in report]
    assert labels == ["openai chat", "anthropic", "gemini", "openai responses", "bedrock converse", "cohere", "ollama"]
    assert all(us > 0 for row in report for us in row["us_per_event"].values())
    table = subprocess.run(
        [sys.executable, tool, "--markdown", str(out)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert table.count("\n| ") == len(report)  # a line per stream after the header and its rule


def test_a_wrong_reading_of_the_talk_stops_the_talk_benchmark(monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import bench_talk
    finally:
        sys.path.remove(str(ROOT / "tools"))
    row = bench_talk.rows(quick=True)[1]
    bench_talk._checked(row, lambda: (row["want"][0], row["want"][1]))  # read right: nothing said
    with pytest.raises(SystemExit, match="anthropic: the text or the reasoning read is not the one sent"):
        bench_talk._checked(row, lambda: (row["want"][0][1:], row["want"][1]))


def test_profiler_lists_the_benchmark_streams() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "profile.py")], capture_output=True, text=True, check=True, timeout=120
    )
    assert "openai 10 tiny calls" in proc.stdout


def _instructions() -> Any:
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import bench_instructions
    finally:
        sys.path.remove(str(ROOT / "tools"))
    return bench_instructions


def test_instruction_counts_are_read_from_each_dumps_summary(tmp_path: Path) -> None:
    """callgrind's "totals:" line can hold more than the dump's own count after a zero (what was on the
    stack then); "summary:" is the count between the zero and the dump. A dump with no label of a
    cell (the warm-up, the program's end) is not a cell's count."""
    counter = _instructions()
    dumps = {
        "callgrind.out.1.1": ("openai 3 calls\ttoolcall-fsm\t1", 2216050, 6229915),
        "callgrind.out.1.2": ("openai 3 calls\ttoolcall-fsm\t2", 2216141, 2216487),
        "callgrind.out.1.3": ("warm-up", 1964, 105884),
        "callgrind.out.1": (None, 6595096, 7434008),
    }
    for name, (label, summary, totals) in dumps.items():
        trigger = f"Client Request: {label}" if label else "Program termination"
        head = (
            f"# callgrind format\nversion: 1\ncmd: python\ndesc: Trigger: {trigger}\n\nevents: Ir\nsummary: {summary}\n"
        )
        (tmp_path / name).write_text(head + f"fn=(1) main\n0 {summary}\n\ntotals: {totals}\n")
    assert counter.read_dumps(tmp_path) == {
        ("openai 3 calls", "toolcall-fsm", 1): 2216050,
        ("openai 3 calls", "toolcall-fsm", 2): 2216141,
    }


def test_instruction_targets_and_table_come_from_the_counts() -> None:
    counter = _instructions()
    row = {
        "scenario": "openai 1000 tiny calls",
        "capture": False,
        "fragments": True,
        "events": 1001,
        "calls": 1000,
        "verdict": {"toolcall-fsm": "ok", "pydantic-ai": "ok", "floor": "wrong: 2 calls"},
        "instructions_per_event": {"toolcall-fsm": 300.0, "pydantic-ai": 100.0, "floor from wire bytes": 50.0},
        "spread": {"toolcall-fsm": 0.001, "pydantic-ai": 0.002},
    }
    row["instructions_per_event"]["toolcall-fsm from wire bytes"] = 90.0
    row["instructions_per_event"]["toolcall-fsm from wire bytes, one event a read"] = 110.0
    targets = counter.targets({"rows": [row]})
    assert targets["per call within 2x of pydantic-ai"] == (
        False,
        "openai 1000 tiny calls: toolcall-fsm / pydantic-ai = 3.00",
    )
    assert targets["from wire bytes: within 2x of the decode floor on fragment streams"][0] is True
    table = counter.markdown({"rows": [row], "targets": targets})
    assert "| openai 1000 tiny calls | 1001 | 300 | floor wrong | 1.80x | 2.20x | 0.33x | 0.20% |" in table


@pytest.mark.skipif(
    shutil.which("valgrind") is None or shutil.which("gcc") is None, reason="valgrind and gcc count instructions"
)
def test_instruction_counts_repeat_under_valgrind() -> None:
    """The counts of one small stream, under valgrind: the same within a fraction of a percent every run
    (what makes them worth having beside the CPU times)."""
    counter = _instructions()
    if counter.why_not_available() is not None:
        pytest.skip(counter.why_not_available())
    report = counter.measure(quick=True, only="openai 10 tiny calls", names=["toolcall-fsm", "floor"])
    [row] = report["rows"]
    assert set(row["instructions_per_event"]) == {"toolcall-fsm", "floor"}
    assert row["instructions_per_event"]["toolcall-fsm"] > row["instructions_per_event"]["floor"] > 0
    assert max(row["spread"].values()) < 0.01
