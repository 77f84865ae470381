"""Time fsm.messages' next-turn builders, and what their check of the result costs (a script, not a test).

    python tools/bench_messages.py [CALLS ...] [--runs N]

For each format, ``assistant_message`` of a turn of CALLS calls (default 1,000 and 10,000), a
reasoning block and some text: with the check replaced by nothing (``unchecked``), and with it, on
the Result the Reassembler made (``engine``) and on an equal one made anew for each build (``by
hand``: ``attrs.evolve``, as a caller's or a reader's Result is, which the check reads whole); then
the check alone, on the same two. Each figure is the median of N runs (default 9) of a loop of
builds, in CPU ms per build (``time.process_time``, so other work on the machine counts less).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import attrs

import fsm.messages
from fsm import Limits, Reassembler
from fsm.events import ArgumentsFragment, CallEnd, CallRef, CallSeen, ReasoningDelta, StreamEnd, TextDelta
from fsm.results import Result


def turn(calls: int) -> Result:
    """A turn as the Reassembler closes it: CALLS complete calls, signed reasoning and text."""
    r = Reassembler("anthropic", limits=Limits(max_calls=max(calls, 1)))
    r.feed(ReasoningDelta(0, "thinking it over", signature="sig"))
    r.feed(TextDelta("Let me look."))
    for n in range(calls):
        r.feed(CallSeen(CallRef(n, f"call_{n}", "lookup")))
        r.feed(ArgumentsFragment(CallRef(n), f'{{"city": "Paris", "n": {n}}}'))
        r.feed(CallEnd(CallRef(n)))
    r.feed(StreamEnd("tool_calls"))
    return r.close()


def medians(builds: list[Callable[[], Any]], budget: float, runs: int) -> list[float]:
    """Per build, the median over ``runs`` rounds of the CPU time of one call in a loop of about
    ``budget`` seconds, in ms. The builds take turns within each round, so a burst of other work on
    the machine falls on all of them alike."""
    loops = []
    for build in builds:
        start = time.process_time()
        build()
        loops.append(max(1, int(budget / max(time.process_time() - start, 1e-6))))
    times: list[list[float]] = [[] for _ in builds]
    for _ in range(runs):
        for build, loop, taken in zip(builds, loops, times, strict=True):
            gc.collect()
            start = time.process_time()
            for _ in range(loop):
                build()
            taken.append((time.process_time() - start) / loop * 1000)
    return [statistics.median(taken) for taken in times]


def row(made: Result, fmt: str, runs: int) -> tuple[float, float, float, float, float]:
    """For one format: the build unchecked, checked (the engine's Result, one built by hand), and the
    check alone (the same two)."""
    checked, build = fsm.messages.check_result, fsm.messages.assistant_message

    def unchecked() -> None:
        fsm.messages.check_result = lambda result: None  # type: ignore[attr-defined]
        try:
            build(made, fmt)  # type: ignore[call-overload]
        finally:
            fsm.messages.check_result = checked  # type: ignore[attr-defined]

    bare, engine, hand, copy, alone, alone_copy = medians(
        [
            unchecked,
            lambda: build(made, fmt),  # type: ignore[call-overload]
            lambda: build(attrs.evolve(made), fmt),  # type: ignore[call-overload]
            lambda: attrs.evolve(made),  # what a new Result costs, taken off the two figures that make one
            lambda: checked(made),
            lambda: checked(attrs.evolve(made)),
        ],
        0.1,
        runs,
    )
    return bare, engine, hand - copy, alone, alone_copy - copy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("calls", nargs="*", type=int, default=[1000, 10_000])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    print(f"CPU ms per build, median of {args.runs} runs: unchecked, checked (+ what the check adds), the check alone")
    head = ("format", "calls", "unchecked", "engine", "by hand", "check: engine", "by hand")
    print("{:17} {:>6} {:>9} {:>15} {:>15} {:>14} {:>8}".format(*head))
    for size in args.calls:
        made = turn(size)
        for fmt in fsm.messages.FORMATS:
            bare, engine, hand, alone, alone_copy = row(made, fmt, args.runs)
            cells = " ".join(f"{figure:8.3f} ({(figure - bare) / bare:+4.0%})" for figure in (engine, hand))
            print(f"{fmt:17} {size:6} {bare:9.3f} {cells} {alone:14.4f} {alone_copy:8.3f}")


if __name__ == "__main__":
    main()
