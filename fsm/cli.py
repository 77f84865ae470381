"""The ``toolcall-fsm`` command line.

``toolcall-fsm replay [--provider NAME] [--flush incremental|on-finish] [--strict]
[--output calls|deltas] FILE|-``

Exit status: 0 on success; 1 when the input cannot be read, the output cannot be written, a limit is
exceeded or, with ``--strict``, the stream breaks the protocol; 2 on bad usage; 3 on an internal
error (a bug: please report it). Errors are one line on stderr naming the event and the rule, never
a traceback. When the stream fails part-way, ``replay`` still prints the result so far on stdout
(calls completed before the fault, open ones truncated) before exiting 1.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO, TextIO

import attrs

from fsm.errors import ToolcallFSMError
from fsm.harness.fuzz import SHAPES
from fsm.reassembler import Reassembler
from fsm.reemit import DeltaEmitter, FlushPolicy
from fsm.results import Result
from fsm.serialize import result_to_json
from fsm.wire.decoders import PROVIDERS

READ_SIZE = 64 * 1024


def _positive(text: str) -> int:
    value = int(text) if text.isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text!r}")
    return value


def _not_negative(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolcall-fsm",
        description="Reassemble streamed LLM tool calls with an explicit state machine.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    replay = commands.add_parser("replay", help="reassemble a recorded stream and print its tool calls")
    replay.add_argument("--provider", default="auto", choices=("auto", *PROVIDERS), help="wire shape (default: auto)")
    replay.add_argument(
        "--flush", default="incremental", choices=[p.value for p in FlushPolicy], help="re-emitted delta policy"
    )
    replay.add_argument("--strict", action="store_true", help="exit 1 on the first protocol violation")
    replay.add_argument("--output", default="calls", choices=("calls", "deltas"), help="what to print")
    replay.add_argument("file", help="the stream (SSE, NDJSON or a JSON array), or - for standard input")
    conform = commands.add_parser("conform", help="run the conformance vectors and report coverage")
    conform.add_argument("--vectors", default=None, help="folder of vector files (default: the bundled specs/vectors)")
    conform.add_argument("--against", metavar="CMD", help="grade an external reassembler (see the README)")
    conform.add_argument("--json", action="store_true", help="print the outcomes and coverage as JSON")
    conform.add_argument(
        "--fuzzed", type=_not_negative, default=0, metavar="N", help="with --against: also N fuzzed streams per shape"
    )
    fuzzing = commands.add_parser("fuzz", help="fuzz the engine; a failing case is written out as a vector")
    fuzzing.add_argument("--shape", default="all", help="one of: all, " + ", ".join(SHAPES))
    fuzzing.add_argument("--examples", type=_positive, default=200, help="streams per shape and mode (default 200)")
    fuzzing.add_argument("--seed", type=int, default=None, help="random seed (default: a fixed, derandomized run)")
    fuzzing.add_argument("--mode", default="all", choices=("all", "property", "robust"))
    fuzzing.add_argument("--out", default="specs/vectors", help="where failing cases are written")
    hist = commands.add_parser("history", help="check a conversation's tool calls and results pair up")
    hist_commands = hist.add_subparsers(dest="history_command", required=True)
    hist_check = hist_commands.add_parser(
        "check", help="report dangling calls, orphan and duplicate results, reused ids"
    )
    hist_check.add_argument("--json", action="store_true", help="print the report as JSON")
    hist_check.add_argument("--format", default="auto", choices=("auto", "openai", "anthropic", "gemini"))
    hist_check.add_argument("file", help="a JSON list of messages, or a request body with 'messages' or 'contents'")
    diagram = commands.add_parser("diagram", help="regenerate docs/ diagrams from specs/ (or --check them)")
    diagram.add_argument("--root", default=".", help="the project's root, holding docs/ and README.md")
    diagram.add_argument("--check", action="store_true", help="only check; exit 1 if anything is stale")
    return parser


def conform(args: argparse.Namespace, stdout: TextIO) -> int:
    from fsm.harness import conformance
    from fsm.harness.vectors import VECTOR_DIR, load_vectors

    vectors = load_vectors(Path(args.vectors) if args.vectors else VECTOR_DIR)
    if args.against:
        if args.fuzzed:
            from fsm.harness.fuzz import run as fuzz

            vectors += [v for shape in SHAPES for v in fuzz.sample_vectors(shape, args.fuzzed)]
        outcomes = [conformance.run_external(args.against, v) for v in vectors]
        missing: dict[str, list[str]] = {}
    else:
        outcomes, coverage = conformance.run_vectors(vectors)
        missing = coverage.missing()
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


def history_check(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """Exit 1 when a strict provider would reject the history."""
    from fsm import history

    try:
        with _open(args.file) as stream:
            data = json.loads(stream.read())
    except (OSError, ValueError) as exc:
        stderr.write(f"toolcall-fsm: cannot read {args.file}: {exc}\n")
        return 1
    messages = data.get("messages", data.get("contents")) if isinstance(data, dict) else data
    try:
        report = history.check(messages or [], args.format)
    except ToolcallFSMError as exc:
        stderr.write(f"toolcall-fsm: {exc}\n")
        return 1
    if args.json:
        findings = [dict(attrs.asdict(f), kind=f.kind.value) for f in report.findings]
        stdout.write(
            json.dumps({"format": report.format, "rejected": report.rejected, "findings": findings}, indent=2) + "\n"
        )
    else:
        for f in report.findings:
            stdout.write(f"message {f.message}: {f.kind.value} {f.id}: {f.detail}\n")
        verdict = "would be rejected" if report.rejected else "pairs up"
        stdout.write(f"{report.format} history of {len(messages or [])} messages {verdict}\n")
    return 1 if report.rejected else 0


def run_fuzz(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    try:
        from fsm.harness.fuzz import run as fuzz
    except ImportError:
        stderr.write("toolcall-fsm: fuzzing needs hypothesis: pip install 'toolcall-fsm[fuzz]'\n")
        return 1
    from fsm.harness.vectors import write_vector

    shapes = SHAPES if args.shape == "all" else (args.shape,)
    if any(s not in SHAPES for s in shapes):
        stderr.write(f"toolcall-fsm: unknown shape {args.shape!r} (one of: all, {', '.join(SHAPES)})\n")
        return 2
    modes = ("property", "robust") if args.mode == "all" else (args.mode,)
    total, failed = 0, 0
    for shape in shapes:
        for mode in modes:
            report = fuzz.fuzz(shape, mode, args.examples, args.seed)
            total += report.streams
            line = f"{shape:<18} {mode:<9} {report.streams:>7} streams  "
            if not report.problems:
                stdout.write(line + "ok\n")
                continue
            failed += 1
            stdout.write(line + "FAIL: " + "; ".join(report.problems) + "\n")
            digest = hashlib.sha256(repr(report.failure).encode()).hexdigest()[:10]
            out = Path(args.out)
            if mode == "property":
                path = write_vector(fuzz.to_vector(report.failure, f"fuzz-{shape}-{digest}"), out)
            else:
                path = out / f"robust-{shape}-{digest}.json"
                out.mkdir(parents=True, exist_ok=True)
                failure = report.failure
                sample = {"problems": report.problems, **attrs.asdict(failure, filter=lambda a, _: a.name != "data")}
                if isinstance(failure.clean, bytes):
                    sample["clean"] = failure.clean.hex()
                data = failure.data
                sample |= {"body_hex": data.hex()} if isinstance(data, bytes) else {"events": data}
                path.write_text(json.dumps(sample, indent=2, default=repr) + "\n")
            stdout.write(f"  shrunk case written to {path}\n")
    stdout.write(f"{total} streams, {failed} failing shape/mode pairs\n")
    return 1 if failed else 0


def diagram(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from fsm.harness.diagrams import REGENERATE, generate

    try:
        stale = generate(Path(args.root), check=args.check)
    except RuntimeError as exc:
        stderr.write(f"toolcall-fsm: {exc}\n")
        return 1
    if args.check and stale:
        stderr.write(f"toolcall-fsm: generated files are stale: {', '.join(stale)}; run `{REGENERATE}` and commit\n")
        return 1
    verb = "stale" if args.check else "wrote"
    stdout.write(f"{verb}: {', '.join(stale)}\n" if stale else "diagrams are current\n")
    return 0


class _ReadFailed(Exception):
    pass


class _WriteFailed(Exception):
    pass


def replay(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """Print the calls (or deltas); on a stream error, the result so far, then the error."""
    reassembler = Reassembler(args.provider, strict=args.strict)
    emitter = DeltaEmitter(FlushPolicy(args.flush))
    deltas = args.output == "deltas"

    def show(chunks: list[dict[str, Any]]) -> None:
        for chunk in chunks:
            stdout.write(json.dumps(chunk, ensure_ascii=False) + "\n")

    error: ToolcallFSMError | None = None
    try:
        with _open(args.file) as stream:
            while block := _read(stream):
                outputs = reassembler.feed_bytes(block)
                if deltas:
                    show(emitter.chunks(outputs))
        result = reassembler.close()
    except ToolcallFSMError as exc:  # the stream's fault (with the event and rule) or the caller's
        error = exc
        result = _result_so_far(reassembler)
    outputs = reassembler.drain()
    if deltas:
        show([*emitter.chunks(outputs), emitter.finish(result)])
    else:
        stdout.write(json.dumps(result_to_json(result), ensure_ascii=False, indent=2) + "\n")
    if error is not None:
        stderr.write(f"toolcall-fsm: {error}\n")
        return 1
    return 0


def _result_so_far(reassembler: Reassembler) -> Result:
    try:
        return reassembler.close()
    except ToolcallFSMError:  # strict: a violation found while closing; the result is complete now
        return reassembler.close()


def _open(path: str) -> BinaryIO:
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except OSError as exc:
        raise _ReadFailed(f"cannot read {path}: {exc.strerror or exc}") from None


def _read(stream: BinaryIO) -> bytes:
    try:
        return stream.read(READ_SIZE)
    except OSError as exc:
        raise _ReadFailed(f"cannot read {stream.name}: {exc.strerror or exc}") from None


class _Output(io.TextIOBase):
    """Standard output whose failures (closed pipe, full disk) say "cannot write", whichever
    command was writing, so they are never mistaken for a read error."""

    def __init__(self, target: TextIO) -> None:
        self._target = target

    def write(self, text: str) -> int:
        try:
            return self._target.write(text)
        except OSError as exc:
            raise _WriteFailed(f"cannot write the output: {exc.strerror or exc}") from None

    def flush(self) -> None:
        try:
            self._target.flush()
        except OSError as exc:
            raise _WriteFailed(f"cannot write the output: {exc.strerror or exc}") from None


def _silence_stdout() -> None:
    """After a failed write to the real stdout, point it at /dev/null, so the interpreter's own
    flush at exit neither fails again nor prints a traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    stderr = stderr or sys.stderr or open(os.devnull, "w")  # noqa: SIM115  # stderr closed: say nothing
    stdout = stdout or sys.stdout
    if stdout is None:  # started with standard output closed (`>&-`)
        stderr.write("toolcall-fsm: cannot write the output: standard output is closed\n")
        return 1
    output = _Output(stdout)
    try:
        code = _dispatch(argv, output, stderr)  # type: ignore[arg-type]  # a TextIOBase is a text stream
        output.flush()  # a full disk shows only when the buffer is written
        return code
    except _WriteFailed as exc:
        if stdout is sys.stdout:
            _silence_stdout()
        stderr.write(f"toolcall-fsm: {exc}\n")
        return 1
    except _ReadFailed as exc:
        stderr.write(f"toolcall-fsm: {exc}\n")
        return 1
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        stderr.write(f"toolcall-fsm: cannot use{where}: {exc.strerror or exc}\n")
        return 1
    except ToolcallFSMError as exc:
        stderr.write(f"toolcall-fsm: {exc}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the promise is no traceback, ever; say it is a bug
        stderr.write(f"toolcall-fsm: internal error (please report it): {type(exc).__name__}: {exc}\n")
        return 3


def _dispatch(argv: Sequence[str] | None, stdout: TextIO, stderr: TextIO) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse already printed the usage error
        return int(exc.code or 0)
    if args.command == "diagram":
        return diagram(args, stdout, stderr)
    if args.command == "history":
        return history_check(args, stdout, stderr)
    if args.command == "fuzz":
        return run_fuzz(args, stdout, stderr)
    if args.command == "conform":
        return conform(args, stdout)
    return replay(args, stdout, stderr)
