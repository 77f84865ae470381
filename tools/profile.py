"""Profile toolcall-fsm on one of the benchmark's streams (a script, not a test).

    python tools/profile.py                      # list the scenarios
    python tools/profile.py "openai 1000 tiny calls"
    python tools/profile.py "openai 3 calls x 16384 B" --lines

Without ``--lines`` it samples with pyinstrument and prints the call tree; with ``--lines`` it
times every line of the engine's hot functions with line_profiler. Both tools slow the code they
watch, so read the shares, not the absolute times; tools/bench.py measures the times. Needs: pip
install pyinstrument line_profiler (and the bench's peers are not needed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench

from fsm import Limits, Reassembler, reassembler
from fsm.engine import machine, registry, scanner, slot

HOT = [
    reassembler.Reassembler._apply,
    registry.Registry.arguments,
    registry.Registry._continuation,
    registry.Registry._route_text,
    registry.Registry._extend,
    registry.Registry._open,
    registry.Registry._finish,
    machine.SpecMachine.fire,
    slot.Slot.store_fragment,
    scanner.Scanner.feed,
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario", nargs="?", help="a scenario label from tools/bench.py")
    parser.add_argument("--lines", action="store_true", help="line_profiler over the hot functions")
    parser.add_argument("--repeat", type=int, default=20, help="times to replay the stream")
    args = parser.parse_args()
    found = {s.label: s for s in bench.scenarios(quick=False)[0]}
    if args.scenario not in found:
        print("scenarios:", *(f"  {label}" for label in found), sep="\n")
        return 0 if args.scenario is None else 2
    provider, payloads = found[args.scenario].provider, found[args.scenario].payloads

    def replay() -> Any:
        for _ in range(args.repeat):
            r = Reassembler(provider, limits=Limits(max_calls=1 << 20))
            for payload in payloads:
                r.feed(payload)
            r.close()

    replay()  # warm the caches (compiled specs, machines) before measuring
    if args.lines:
        from line_profiler import LineProfiler

        profiler = LineProfiler(*HOT)
        profiler.runcall(replay)
        profiler.print_stats(output_unit=1e-6, stripzeros=True)
    else:
        from pyinstrument import Profiler

        sampler = Profiler(interval=0.0002)
        sampler.start()
        replay()
        sampler.stop()
        print(sampler.output_text(unicode=True, color=False, show_all=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
