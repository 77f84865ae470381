"""tools/bench_call_floor.py runs on a tiny size and refuses a reading that gets the calls wrong; its figures
are never asserted here."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "bench_call_floor.py"


def _tool() -> ModuleType:
    """The tool's module, loaded from its file (it puts tools/ on the path for its own imports)."""
    spec = importlib.util.spec_from_file_location("bench_call_floor", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_call_floor_runs_on_a_tiny_size(tmp_path: Path) -> None:
    out = tmp_path / "floor.json"
    command = [sys.executable, str(TOOL), "--calls", "5", "--rounds", "3", "--json", str(out)]
    proc = subprocess.run(command, capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["stream"] == "openai 5 tiny calls"
    assert {"read", "API floor", "toolcall-fsm"} <= set(report["us per call"])
    assert all(us > 0 for us in report["us per call"].values())
    assert "toolcall-fsm / API floor" in proc.stdout


def test_the_floor_builds_every_call_the_stream_holds() -> None:
    bench_call_floor = _tool()
    scn = bench_call_floor.small_calls("tiny", 4)
    outputs = bench_call_floor.api_floor(scn)()
    assert bench_call_floor.floor_calls(outputs) == scn.expected
    assert len(outputs) == 8  # an opened event and a finished one per call


def test_a_wrong_reading_stops_the_call_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    bench_call_floor = _tool()
    monkeypatch.setattr(bench_call_floor, "floor_calls", lambda outputs: [])
    with pytest.raises(SystemExit, match="API floor reads the stream wrong: 0 calls, expected 3"):
        bench_call_floor.measure(3, 1)
