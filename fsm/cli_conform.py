"""``toolcall-fsm conform``: the bundled vectors run on this engine, or on another reassembler
(``--against``), each of its runs bounded by ``--timeout``."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import TextIO

from fsm.cli_io import Progress
from fsm.errors import ToolcallFSMError, shown
from fsm.harness import ADAPTER_TIMEOUT as DEFAULT_TIMEOUT
from fsm.harness.fuzz import SHAPES

__all__ = ["DEFAULT_TIMEOUT", "conform", "seconds"]


def seconds(text: str) -> float:
    """``--timeout``'s value: a positive, finite number of seconds (``nan``, ``inf``, 0 are refused)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive, finite number of seconds, not {shown(text)}")
    return value


def _conform_usage(args: argparse.Namespace) -> str | None:
    """What is wrong with ``conform``'s options, if anything."""
    from fsm.harness.conformance import split_command

    if args.against is None:  # fuzzed streams and the time bound are for another reassembler only
        if args.fuzzed:
            return "--fuzzed grades another reassembler: give --against"
        if args.timeout is not None:
            return "--timeout bounds another reassembler's runs: give --against"
        return None
    try:
        split_command(args.against)  # `--against "$UNSET"` would grade this engine
    except ToolcallFSMError as exc:
        return str(exc)
    return None


def conform(args: argparse.Namespace, stdout: TextIO, stderr: TextIO | None = None) -> int:
    from pathlib import Path

    import attrs

    from fsm.harness import conformance
    from fsm.harness.vectors import VECTOR_DIR

    stderr = stderr or sys.stderr
    if (wrong := _conform_usage(args)) is not None:
        stderr.write(f"toolcall-fsm: conform: {wrong}\n")
        return 2
    vectors, refused = conformance.load_apart(Path(args.vectors) if args.vectors else VECTOR_DIR)
    for outcome in refused:  # a malformed vector fails, said here and in the report; the rest run
        stderr.write(f"toolcall-fsm: {outcome.problems[0]}\n")
    if args.against is not None:
        if args.fuzzed:
            from fsm.harness.fuzz import run as fuzz

            vectors += [v for shape in SHAPES for v in fuzz.sample_vectors(shape, args.fuzzed)]
        progress = Progress(stderr)
        timeout = DEFAULT_TIMEOUT if args.timeout is None else args.timeout
        outcomes = []
        for number, vector in enumerate(vectors, 1):
            progress.update(f"conform: vector {number} of {len(vectors)}: {vector.name}")
            outcomes.append(conformance.run_external(args.against, vector, timeout))
        progress.done()
        missing: dict[str, list[str]] = {}
    else:
        outcomes, coverage = conformance.run_vectors(vectors)
        missing = coverage.missing()
    outcomes = [*refused, *outcomes]
    if args.json:
        report = {"outcomes": [attrs.asdict(o) for o in outcomes], "not_exercised": missing}
        stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        stdout.write(conformance.table(outcomes) + "\n")
        for kind, names in missing.items():
            stdout.write(
                f"coverage: {kind}: {'all exercised' if not names else 'NOT exercised: ' + ', '.join(names)}\n"
            )
    failed = any(o.applicable and not o.passed for o in outcomes) or any(missing.values())
    return 1 if failed else 0
