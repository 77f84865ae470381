"""What one whole call costs at the least, beside pydantic-ai and toolcall-fsm (issue 17's tiny-call rows).

    python tools/bench_call_floor.py [--calls N] [--rounds R] [--json FILE]

The stream is tools/bench.py's "openai N tiny calls" (one whole call per chunk, each at its own index),
read from parsed dicts. Four readings, each one's calls checked against the expected ones first (but ``read``'s, which
parses nothing):

- ``read``: each chunk's fields picked out with no check at all, and the call kept (no parse, no output);
- ``API floor``: that, plus what toolcall-fsm's API promises a caller for each call and nothing else: the
  arguments parsed (by the C scanner of the json module, at offset 0, as toolcall-fsm parses a flat
  object), an opened event, the final call and its finished event (plain slotted classes, each field
  set once: cheaper than the frozen attrs classes toolcall-fsm hands out);
- ``pydantic-ai``: its parts manager as tools/bench.py drives it (it keeps the argument text and parses
  nothing);
- ``toolcall-fsm``: a Reassembler fed each chunk, then closed.

CPU time per call, rounds interleaved in a shuffled order, the median. The gap between the API floor
and pydantic-ai is all the room a reader of this API has for everything else a chunk asks of it:
checking its fields, routing it to its slot, counting the rules, taking the machine's transitions,
keeping the limits.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench
from bench_streams import Call, Scenario, small_calls

_SCAN = json.JSONDecoder().scan_once


class _Opened:
    __slots__ = ("id", "index", "name", "thought_signature", "type", "wire_id")


class _Call:
    __slots__ = (
        "arguments",
        "arguments_json",
        "id",
        "index",
        "input",
        "item",
        "name",
        "output_index",
        "reply_id",
        "status",
        "thought_signature",
        "type",
        "wire_id",
    )


class _Finished:
    __slots__ = ("call",)


def _entries(payloads: list[dict[str, Any]]) -> list[tuple[int, str, str, str]]:
    """Each chunk's one entry as (index, id, name, text), read with no check at all."""
    kept = []
    for payload in payloads:
        entries = payload["choices"][0]["delta"].get("tool_calls")
        if entries:
            entry = entries[0]
            function = entry["function"]
            kept.append((entry["index"], entry["id"], function["name"], function["arguments"]))
    return kept


def read_only(scn: Scenario) -> Callable[[], list[Call]]:
    payloads = scn.payloads

    def run() -> list[Call]:
        return [(call_id, name, text) for _, call_id, name, text in _entries(payloads)]

    return run


def api_floor(scn: Scenario) -> Callable[[], list[Any]]:
    payloads = scn.payloads

    def run() -> list[Any]:
        outputs: list[Any] = []
        kept = _entries(payloads)
        for ordinal, (_, call_id, name, _) in enumerate(kept):
            opened = _Opened()
            opened.index, opened.id, opened.wire_id, opened.name = ordinal, call_id, call_id, name
            opened.type, opened.thought_signature = "function", None
            outputs.append(opened)
        for ordinal, (_, call_id, name, text) in enumerate(kept):
            call = _Call()
            call.index, call.id, call.wire_id, call.name = ordinal, call_id, call_id, name
            call.arguments, call.arguments_json = _SCAN(text, 0)[0], text
            call.status, call.type = "complete", "function"
            call.thought_signature = call.input = call.item = call.output_index = call.reply_id = None
            finished = _Finished()
            finished.call = call
            outputs.append(finished)
        return outputs

    return run


def floor_calls(outputs: list[Any]) -> list[Call]:
    return [(o.call.id, o.call.name, o.call.arguments) for o in outputs if isinstance(o, _Finished)]


def readings(scn: Scenario) -> dict[str, tuple[Callable[[], Any], Callable[[Any], list[Call]] | None]]:
    found: dict[str, tuple[Callable[[], Any], Callable[[Any], list[Call]] | None]] = {
        "read": (read_only(scn), None),
        "API floor": (api_floor(scn), floor_calls),
        "toolcall-fsm": (bench.fsm_from_dicts(scn), bench.fsm_calls),
    }
    if bench._installed("pydantic_ai"):
        found["pydantic-ai"] = (bench.pydantic_ai(scn), bench.pydantic_ai_calls)
    return found


def measure(calls: int, rounds: int, seed: int = 0) -> dict[str, Any]:
    scn = small_calls(f"openai {calls} tiny calls", calls)
    runs: dict[str, Callable[[], Any]] = {}
    for name, (run, read) in readings(scn).items():
        if read is not None:
            why = bench.mismatch(read(run()), scn.expected)
            if why is not None:
                raise SystemExit(f"{name} reads the stream wrong: {why}")
        runs[name] = run
    gc.collect()
    gc.freeze()
    rng = random.Random(seed)
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        order = list(runs)
        rng.shuffle(order)
        for name in order:
            gc.collect()
            start = time.process_time()
            runs[name]()
            runs[name]()
            samples[name].append((time.process_time() - start) / 2 / calls * 1e6)
    us = {name: statistics.median(values) for name, values in samples.items()}
    report: dict[str, Any] = {"stream": scn.label, "us per call": us}
    if "pydantic-ai" in us:
        report["pydantic-ai / API floor"] = us["pydantic-ai"] / us["API floor"]
    report["toolcall-fsm / API floor"] = us["toolcall-fsm"] / us["API floor"]
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    args = parser.parse_args()
    report = measure(args.calls, args.rounds)
    for name, value in report["us per call"].items():
        print(f"{name:>14}: {value:.2f} us per call")
    for key in ("pydantic-ai / API floor", "toolcall-fsm / API floor"):
        if key in report:
            print(f"{key}: {report[key]:.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
