"""Count the instructions each implementation executes on the benchmark's streams (a script, not a test).

    python tools/bench_instructions.py [--quick] [--json FILE]
    python tools/bench_instructions.py --markdown FILE     # docs/performance.md's table from a --json run

Why: tools/bench.py measures CPU time, which on a shared machine moves with everyone else's load (its
processes have differed by a median of 50% and more on a row). An instruction count does not: the
same code on the same input executes the same instructions whatever else the machine is doing. It
is not time (a cache miss costs more than an add), so this complements the CPU-time table rather
than replacing it; but between pure-Python loops over the same streams the two ratios agree
closely, and a change of a few percent can be measured here where a clock cannot see it.

How: one process under ``valgrind --tool=callgrind`` runs every implementation that tools/bench.py
verified correct on a stream (toolcall-fsm from parsed dicts and from wire bytes, both floors, and
pydantic-ai, the targets' peer; the slower peers would take too long under valgrind). Each cell is
warmed up (two runs, or more for a short stream, so that Python has specialized its code), then
measured three times between callgrind client requests (zero the counters, run, dump them),
made through a few lines of C compiled on the spot with the machine's ``gcc`` and valgrind's
``callgrind.h``. Hash randomization is off (``PYTHONHASHSEED=0``) so a run's dict and set layouts,
and with them its instructions, are the same on every invocation. A cell's figure is the median
of its three runs, and their spread, (max - min) / median, shows how repeatable it is.

Needs: valgrind (its headers included, as Debian's ``valgrind`` package has them) and gcc. About 10
minutes for the full set, 1 for ``--quick``.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench
from bench_streams import Scenario

COUNTED = [bench.FSM, bench.FSM_WIRE, bench.FSM_READS, bench.FLOOR, bench.FLOOR_WIRE, "pydantic-ai"]
MARKER_C = """
#include <valgrind/callgrind.h>
void counters_zero(void) { CALLGRIND_ZERO_STATS; }
void counters_dump(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
"""
LABEL_SEPARATOR = "\t"
WARM_UP_RUNS, WARM_UP_EVENTS, REPEATS = 2, 2000, 3


def why_not_available() -> str | None:
    """Why instructions cannot be counted on this machine (None when they can)."""
    for tool in ("valgrind", "gcc"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian: apt-get install valgrind gcc)"
    if not Path("/usr/include/valgrind/callgrind.h").is_file():
        return "valgrind's headers are missing (/usr/include/valgrind/callgrind.h)"
    return None


def build_marker(folder: Path) -> Path:
    """Compile the client requests into a small shared library that ctypes can load."""
    source, library = folder / "marker.c", folder / "marker.so"
    source.write_text(MARKER_C)
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(library), str(source)], check=True)
    return library


# -- inside valgrind ------------------------------------------------------------------------------------


def child(plan_path: str, library: str) -> int:
    """Run the plan's cells, each warmed up and then measured between client requests."""
    plan = json.loads(Path(plan_path).read_text())
    marker = ctypes.CDLL(library)
    # Bound and called once here: the first call through ctypes builds the function object, which
    # would otherwise be counted inside the first measured run.
    zero, dump = marker.counters_zero, marker.counters_dump
    zero()
    dump(b"warm-up")
    found = {s.label: s for s in bench.scenarios(plan["quick"])[0]}
    for label, names in plan["counted"].items():
        scn = found[label]
        for name in names:
            run = bench.runner(name, scn)[0]
            assert run is not None
            # Python specializes code it has run a number of times; a short stream's per-stream code
            # runs once a run, so it is run until every path has been taken often enough to settle.
            for _ in range(max(WARM_UP_RUNS, WARM_UP_EVENTS // scn.events)):
                run()
            # As tools/bench.py does: what exists before the runs is frozen, so a collection inside a
            # run walks only what that run made, and every run of a cell meets the same collections.
            gc.collect()
            gc.freeze()
            for repeat in range(1, REPEATS + 1):
                said = LABEL_SEPARATOR.join((label, name, str(repeat))).encode()
                zero()
                run()
                dump(said)
                gc.collect()
            gc.unfreeze()
    return 0


# -- outside --------------------------------------------------------------------------------------------


def read_dumps(folder: Path) -> dict[tuple[str, str, int], int]:
    """(scenario, implementation, repeat) -> instructions, from callgrind's dump files."""
    counts: dict[tuple[str, str, int], int] = {}
    for path in folder.glob("callgrind.out*"):
        trigger, total = None, None
        with path.open(errors="replace") as fh:
            for line in fh:
                if line.startswith("desc: Trigger: Client Request: "):
                    trigger = line.removeprefix("desc: Trigger: Client Request: ").rstrip("\n")
                elif line.startswith("summary: "):  # the dump's own count ("totals:" can hold more after a zero)
                    total = int(line.split()[1])
        if trigger is not None and total is not None and trigger.count(LABEL_SEPARATOR) == 2:
            label, name, repeat = trigger.split(LABEL_SEPARATOR)
            counts[(label, name, int(repeat))] = total
    return counts


def measure(quick: bool, only: str | None = None, names: list[str] = COUNTED) -> dict[str, Any]:
    """Count ``names`` on the streams (those whose label holds ``only``) where each is right."""
    found, absent = bench.scenarios(quick)
    found = [s for s in found if only is None or only in s.label]
    rows: list[dict[str, Any]] = []
    counted: dict[str, list[str]] = {}
    for scn in found:
        verdicts = {name: bench.verify(name, scn)[1] for name in names}
        counted[scn.label] = [name for name, verdict in verdicts.items() if verdict == "ok"]
        rows.append(_row(scn, verdicts))
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        plan = folder / "plan.json"
        plan.write_text(json.dumps({"counted": counted, "quick": quick}))
        library = build_marker(folder)
        env = dict(os.environ, PYTHONHASHSEED="0")
        cmd = ["valgrind", "--tool=callgrind", "--dump-instr=no", "--dump-line=no"]
        cmd += [f"--callgrind-out-file={folder / 'callgrind.out.%p'}"]
        cmd += [sys.executable, __file__, "--child", str(plan), str(library)]
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        counts = read_dumps(folder)
    for row in rows:
        row["instructions_per_event"], row["spread"] = {}, {}
        for name in counted[row["scenario"]]:
            runs = [counts[(row["scenario"], name, k)] for k in range(1, REPEATS + 1)]
            middle = statistics.median(runs)
            row["instructions_per_event"][name] = middle / row["events"]
            row["spread"][name] = (max(runs) - min(runs)) / middle
    report = {
        "settings": {"quick": quick, "counted": names, "python": sys.version.split()[0], "hash_seed": 0},
        "captures": absent or f"{sum(r['capture'] for r in rows)} capture streams",
        "rows": rows,
    }
    report["targets"] = targets(report)
    return report


def _row(scn: Scenario, verdicts: dict[str, str]) -> dict[str, Any]:
    return {
        "scenario": scn.label,
        "capture": scn.capture,
        "fragments": scn.fragments,
        "events": scn.events,
        "calls": len(scn.expected),
        "verdict": verdicts,
    }


def ratio(row: dict[str, Any], top: str, bottom: str) -> float | None:
    counts = row["instructions_per_event"]
    if top in counts and bottom in counts and counts[bottom] > 0:
        return float(counts[top] / counts[bottom])
    return None


def targets(report: dict[str, Any]) -> dict[str, tuple[bool, str]]:
    """Issue 17's speed targets, judged on instructions instead of CPU time."""
    rows, out = report["rows"], {}

    def listing(pairs: list[tuple[str, float]]) -> str:
        return ", ".join(f"{label}: {value:.2f}" for label, value in pairs)

    against = [
        (r["scenario"], v)
        for r in rows
        if (r["fragments"] or r["capture"]) and (v := ratio(r, "pydantic-ai", bench.FSM)) is not None
    ]
    if against:
        out["from parsed dicts: no slower than pydantic-ai on every fragment stream and capture"] = (
            min(v for _, v in against) >= 1,
            "pydantic-ai / toolcall-fsm; " + listing(against),
        )
    tiny = next((r for r in rows if r["scenario"] == "openai 1000 tiny calls"), None)
    if tiny is not None and (v := ratio(tiny, bench.FSM, "pydantic-ai")) is not None:
        out["per call within 2x of pydantic-ai"] = (v <= 2, f"{tiny['scenario']}: toolcall-fsm / pydantic-ai = {v:.2f}")
    wire = [(r["scenario"], v) for r in rows if r["fragments"] and (v := ratio(r, bench.FSM_WIRE, bench.FLOOR_WIRE))]
    if wire:
        out["from wire bytes: within 2x of the decode floor on fragment streams"] = (
            max(v for _, v in wire) <= 2,
            "toolcall-fsm / floor; " + listing(wire),
        )
    return out


def _cell(row: dict[str, Any], top: str, bottom: str) -> str:
    for name in (top, bottom):
        if row["verdict"].get(name, "").startswith("wrong"):
            return "floor wrong" if name in (bench.FLOOR, bench.FLOOR_WIRE) else "wrong"
    value = ratio(row, top, bottom)
    return "-" if value is None else f"{value:.2f}x"


def markdown(report: dict[str, Any]) -> str:
    head = ["Stream", "Events", "fsm instructions per event", "fsm ÷ floor, dicts", "fsm ÷ floor, wire"]
    head += ["fsm ÷ floor, wire, one event a read"]
    head += ["pydantic-ai ÷ fsm", "repeat spread"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in report["rows"]:
        per_event = row["instructions_per_event"].get(bench.FSM)
        spreads = row["spread"].values()
        cells = [
            row["scenario"].removeprefix("capture "),
            str(row["events"]),
            "-" if per_event is None else f"{per_event:,.0f}",
            _cell(row, bench.FSM, bench.FLOOR),
            _cell(row, bench.FSM_WIRE, bench.FLOOR_WIRE),
            _cell(row, bench.FSM_READS, bench.FLOOR_WIRE),
            _cell(row, "pydantic-ai", bench.FSM),
            f"{max(spreads):.2%}" if spreads else "-",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", *bench.target_lines(report["targets"], " (instructions)")]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    parser.add_argument("--only", metavar="TEXT", help="only the streams whose label holds TEXT (for an A/B)")
    parser.add_argument("--json", metavar="FILE", help="also write the counts as JSON")
    parser.add_argument(
        "--markdown", metavar="FILE", help="print a --json run as the table of docs/performance.md, and exit"
    )
    parser.add_argument("--child", nargs=2, metavar=("PLAN", "LIBRARY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(*args.child)
    if args.markdown:
        report = json.loads(Path(args.markdown).read_text())
        report["targets"] = targets(report)
        print(markdown(report))
        return 0
    missing = why_not_available()
    if missing is not None:
        print(f"cannot count instructions: {missing}", file=sys.stderr)
        return 2
    report = measure(args.quick, args.only)
    print(markdown(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
