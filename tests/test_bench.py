"""The benchmark runs (on a tiny size); its figures are never asserted here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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


def test_profiler_lists_the_benchmark_streams() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "profile.py")], capture_output=True, text=True, check=True, timeout=120
    )
    assert "openai 10 tiny calls" in proc.stdout
