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
    shapes = {row["scenario"].split()[0] for row in report["rows"]}
    assert shapes == {"openai", "anthropic", "gemini", "vertex", "responses", "bedrock", "cohere", "ollama"}
    assert all(row["toolcall-fsm"] > 0 and row["floor"] > 0 for row in report["rows"])
    assert "within 3x of the floor" in report["targets"]
    table = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "bench.py"), "--markdown", str(out)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert table.count("\n| ") == len(report["rows"])  # a line per stream, after the header and rule
    assert "within 3x of the floor" in table


def test_profiler_lists_the_benchmark_streams() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "profile.py")], capture_output=True, text=True, check=True, timeout=120
    )
    assert "openai 200 small calls" in proc.stdout
