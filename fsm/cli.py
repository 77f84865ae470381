"""The ``toolcall-fsm`` command line: ``replay``, ``conform``, ``fuzz``, ``history check``, ``diagram``.

``toolcall-fsm --help`` and ``toolcall-fsm COMMAND --help`` give each command's examples and exit status. In short:
0 on success; 1 when the input cannot be read, the output cannot be written, a check fails, a limit is exceeded or,
with ``--strict``, the stream breaks the protocol (one line on stderr naming the event and the rule, never a
traceback); 2 on bad usage; 3 on an internal error (a bug: please report it). When a stream fails part-way,
``replay`` still prints the result so far on stdout (calls completed before the fault, open ones truncated) before
exiting 1. Progress (long runs only) goes to stderr, and only when it is a terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from fsm import __version__
from fsm.cli_conform import DEFAULT_TIMEOUT, conform, seconds
from fsm.cli_io import Progress, open_input, read_block, run_guarded, unwritable_folder
from fsm.errors import InvalidOption, ToolcallFSMError, shown
from fsm.harness.fuzz import SHAPES  # the fuzz package's own module holds the names and imports nothing
from fsm.reemit import FlushPolicy
from fsm.reemit_reasoning import REASONING_BLOCKS
from fsm.wire.decoders import PROVIDERS

if TYPE_CHECKING:
    from collections.abc import Sequence


# Each command imports what it needs when it runs, so `toolcall-fsm replay` loads no history,
# harness, message builders or cattrs, and no command pays for another's imports.

_HELP = {
    "toolcall-fsm": """examples:
  toolcall-fsm replay chat.sse                  the tool calls of a recorded stream, as JSON
  curl -sN ... | toolcall-fsm replay -          the same, from standard input
  toolcall-fsm conform                          run the bundled conformance vectors
  toolcall-fsm history check messages.json      would a strict provider accept this history?

exit status: 0 success; 1 unreadable input, unwritable output, a failed check, an exceeded limit, or
a protocol violation under --strict; 2 bad usage; 3 an internal error (a bug: please report it). Each
command's --help has its own examples.""",
    "replay": """examples:
  toolcall-fsm replay chat.sse                  the calls, the finish reason and diagnostics as JSON
  toolcall-fsm replay --provider gemini out.json
  toolcall-fsm replay --output deltas --flush on-finish chat.sse   a clean OpenAI-style delta stream
  toolcall-fsm replay --output deltas --reasoning-blocks thinking_blocks claude.sse   with signed thinking
  toolcall-fsm replay --strict chat.sse         refuse the first protocol violation

exit status: 0 the stream was reassembled (read the diagnostics: their severity says which matter;
in lax mode an unusable event is a bad-event diagnostic, not a failure); 1 unreadable input,
unwritable output ("cannot write"), an unrecognisable stream, an exceeded limit, or a violation under
--strict (one line on stderr naming the event number and the rule; the result so far is still
printed on stdout); 2 bad usage.""",
    "conform": """examples:
  toolcall-fsm conform                          every bundled vector, a pass/fail table and coverage
  toolcall-fsm conform --json > report.json
  toolcall-fsm conform --against "python my_adapter.py" --fuzzed 50   grade another reassembler
  toolcall-fsm conform --against "python slow_adapter.py" --timeout 120   allow each run 120 seconds

With --against, each vector's run may take --timeout seconds (default 30; a positive number, which
may have a fraction): past it, the adapter is stopped and the vector fails ("timed out").

exit status: 0 every applicable vector passed (and, without --against, every part of the specs was
exercised); 1 a vector failed (a vector file it cannot read fails) or something declared in specs/
went unexercised; 2 bad usage (such as a --timeout that is no positive number, or a --fuzzed past
10000). With --against, progress goes to stderr when it is a terminal.""",
    "fuzz": """examples:
  toolcall-fsm fuzz --shape openai-chat --examples 500
  toolcall-fsm fuzz --seed 7 --out fuzz-findings  failing cases (and hypothesis's data) go there

Failing cases are written under --out, or else under a new temporary folder that is named when
something is written; nothing is written into the current folder. Progress goes to stderr when it
is a terminal.

exit status: 0 no failure; 1 a failure (the shrunk case is written as a vector), an --out it cannot
write into, or hypothesis is missing; 2 bad usage (an unknown shape, --examples past 100000).""",
    "history": """examples:
  toolcall-fsm history check messages.json
  toolcall-fsm history check --json --format anthropic request.json

exit status: that of the subcommand (toolcall-fsm history check --help); 2 bad usage.""",
    "check": """examples:
  toolcall-fsm history check messages.json      one line per finding, then the verdict
  toolcall-fsm history check --json request.json

exit status: 0 the calls and results pair up; 1 a strict provider would reject the history (HTTP
400), or the file is unreadable or not JSON; 2 bad usage, or the JSON holds no conversation (no
list of messages, or a malformed message: one line on stderr naming it).""",
    "diagram": """examples:
  toolcall-fsm diagram                          in the project's root (it holds specs/): refresh docs/
  toolcall-fsm diagram --check                  exit 1 if docs/ or the README's diagram is stale
  toolcall-fsm diagram --out /tmp/diagrams      write the pages and diagrams there instead

Without --out, the root (--root, default the current folder) must hold specs/: nothing is written
elsewhere.

exit status: 0 written, or current under --check; 1 stale under --check, a file it cannot read or
write (one line naming it), or Graphviz's dot is missing; 2 bad usage (a root without specs/ and no
--out).""",
}


def _command(commands: Any, name: str, summary: str) -> argparse.ArgumentParser:
    described = summary[0].upper() + summary[1:] + "."
    formatter = argparse.RawDescriptionHelpFormatter
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=summary, description=described, epilog=_HELP[name], formatter_class=formatter
    )
    return parser


MAX_EXAMPLES = 100_000
"""The most ``fuzz --examples`` takes: streams per shape and mode (each costs hypothesis's work)."""
MAX_FUZZED = 10_000
"""The most ``conform --fuzzed`` takes: streams per shape, each held as a vector and run once by the adapter
(``tools/grade_peers.py --fuzzed`` too: those streams are run once by each peer)."""


def bounded_count(least: int, most: int) -> Callable[[str], int]:
    """A whole-number option from ``least`` to ``most``: beyond, no run could end (or fit in memory).
    Past the bound, argparse's usage error (exit 2) names the option and the bound in one line."""

    def count(text: str) -> int:
        digits = text.isascii() and text.isdigit() and len(text.lstrip("0")) <= len(str(most))  # else never int()
        value = int(text) if digits else -1
        if not least <= value <= most:
            raise argparse.ArgumentTypeError(f"must be a whole number from {least} to {most}, not {shown(text)}")
        return value

    return count


def _count_option(parser: argparse.ArgumentParser, flag: str, least: int, most: int, default: int, said: str) -> None:
    parser.add_argument(
        flag, type=bounded_count(least, most), default=default, metavar="N", help=f"{said} (at most {most})"
    )


def _seed(text: str) -> int:
    if not text.removeprefix("-").isdigit():
        raise argparse.ArgumentTypeError(f"must be a whole number, not {shown(text)}")
    return _whole(text)


def _choice(text: str) -> int:
    if not text.isdigit() or not text.isascii():
        raise argparse.ArgumentTypeError(f"must be a choice's index (0, 1, ...), not {shown(text)}")
    return _whole(text)


def _whole(digits: str) -> int:
    """``int(digits)``; past the int-string conversion limit, a usage error that says so (not a trace)."""
    try:
        return int(digits)
    except ValueError:
        raise argparse.ArgumentTypeError(f"is a number of {len(digits)} digits, too long to read") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolcall-fsm",
        description="Reassemble streamed LLM tool calls with an explicit state machine.",
        epilog=_HELP["toolcall-fsm"],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"toolcall-fsm {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    replay = _command(commands, "replay", "reassemble a recorded stream and print its tool calls")
    replay.add_argument("--provider", default="auto", choices=("auto", *PROVIDERS), help="wire shape (default: auto)")
    replay.add_argument(
        "--flush", default="incremental", choices=[p.value for p in FlushPolicy], help="re-emitted delta policy"
    )
    replay.add_argument(
        "--reasoning-blocks", choices=REASONING_BLOCKS, help="deltas: signed reasoning, in this dialect"
    )
    replay.add_argument("--strict", action="store_true", help="exit 1 on the first protocol violation")
    replay.add_argument("--output", default="calls", choices=("calls", "deltas"), help="what to print")
    replay.add_argument("--choice", type=_choice, metavar="K", help="of a stream of several choices, the one to read")
    replay.add_argument("file", help="the stream (SSE, NDJSON, JSON array or document, AWS event stream), - for stdin")
    conform = _command(commands, "conform", "run the conformance vectors and report coverage")
    conform.add_argument("--vectors", default=None, help="folder of vector files (default: the bundled specs/vectors)")
    conform.add_argument("--against", metavar="CMD", help="grade an external reassembler (see the README)")
    conform.add_argument("--json", action="store_true", help="print the outcomes and coverage as JSON")
    _count_option(conform, "--fuzzed", 0, MAX_FUZZED, 0, "with --against: also N fuzzed streams per shape")
    conform.add_argument(
        "--timeout",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help=f"with --against: the time one vector's run may take (default {DEFAULT_TIMEOUT:g})",
    )
    fuzzing = _command(commands, "fuzz", "fuzz the engine; a failing case is written out as a vector")
    fuzzing.add_argument("--shape", default="all", help="one of: all, " + ", ".join(SHAPES))
    _count_option(fuzzing, "--examples", 1, MAX_EXAMPLES, 200, "streams per shape and mode, default 200")
    fuzzing.add_argument("--seed", type=_seed, default=None, help="random seed (default: a fixed, derandomized run)")
    fuzzing.add_argument("--mode", default="all", choices=("all", "property", "robust"))
    fuzzing.add_argument("--out", metavar="DIR", help="where failing cases go (default: a new temporary folder)")
    hist = _command(commands, "history", "check a conversation's tool calls and results pair up")
    hist_commands = hist.add_subparsers(dest="history_command", required=True)
    hist_check = _command(hist_commands, "check", "report dangling calls, orphan and duplicate results, reused ids")
    hist_check.add_argument("--json", action="store_true", help="print the report as JSON")
    formats = ("auto", "openai", "anthropic", "gemini", "responses", "ollama", "bedrock")  # Cohere: openai
    hist_check.add_argument("--format", default="auto", choices=formats)
    hist_check.add_argument(
        "file", help="a JSON list of messages, or a request body with 'messages', 'contents' or 'input'"
    )
    diagram = _command(commands, "diagram", "regenerate docs/ diagrams from specs/ (or --check them)")
    diagram.add_argument("--root", default=".", help="the project's root: it holds specs/, docs/ and README.md")
    diagram.add_argument("--out", metavar="DIR", help="write the pages and diagrams into DIR instead of a root")
    diagram.add_argument("--check", action="store_true", help="only check; exit 1 if anything is stale")
    return parser


def history_check(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """Exit 0: the history pairs up; 1: a strict provider would reject it, or it is unreadable; 2: no conversation."""
    import attrs

    from fsm import history
    from fsm.jsontext import exact_int

    try:
        with open_input(args.file) as stream:
            data = json.loads(stream.read(), parse_int=exact_int)  # a huge integer kept, as the engine keeps it
    except (OSError, ValueError, RecursionError) as exc:
        stderr.write(f"toolcall-fsm: cannot read {args.file}: {exc}\n")
        return 1
    messages = data.get("messages", data.get("contents", data.get("input"))) if isinstance(data, dict) else data
    if isinstance(messages, str) and isinstance(data, dict) and "messages" not in data and "contents" not in data:
        messages = [{"role": "user", "content": messages}]  # a Responses body's input may be the user's text alone
    if not isinstance(messages, list):
        stderr.write(
            f"toolcall-fsm: {args.file}: no conversation found"
            " (a JSON list of messages, or an object with 'messages', 'contents' or 'input')\n"
        )
        return 2
    try:
        report = history.check(messages, args.format)
    except ToolcallFSMError as exc:
        stderr.write(f"toolcall-fsm: {args.file}: {exc}\n")
        return 2
    if args.json:
        findings = [dict(attrs.asdict(f), kind=f.kind.value) for f in report.findings]
        said = {"format": report.format, "rejected": report.rejected, "findings": findings}  # format None: unjudged
        stdout.write(json.dumps(said, indent=2) + "\n")
    else:
        for f in report.findings:
            stdout.write(f"message {f.message}: {' '.join(filter(None, (f.kind.value, f.id)))}: {f.detail}\n")
        verdict = "would be rejected" if report.rejected else "pairs up"
        verdict = verdict if report.format else "tells no format: not judged (name one with --format)"
        many = f"{len(messages)} message{'' if len(messages) == 1 else 's'}"
        stdout.write(f"{report.format or ''} history of {many} {verdict}\n".lstrip())
    return 1 if report.rejected else 0


def run_fuzz(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    shapes = SHAPES if args.shape == "all" else (args.shape,)
    if any(s not in SHAPES for s in shapes):  # bad usage, told before (and without) hypothesis
        stderr.write(f"toolcall-fsm: unknown shape {args.shape!r} (one of: all, {', '.join(SHAPES)})\n")
        return 2
    try:
        from fsm.harness.fuzz import run as fuzz
    except ImportError:
        stderr.write("toolcall-fsm: fuzzing needs hypothesis: pip install 'toolcall-fsm[fuzz]'\n")
        return 1
    import hashlib
    import shutil
    import tempfile
    from pathlib import Path

    import attrs

    from fsm.harness.vectors import write_vector

    modes = ("property", "robust") if args.mode == "all" else (args.mode,)
    out = Path(args.out) if args.out else None
    if out is not None and (why := unwritable_folder(out)):  # told now, not once a case it cannot keep is found
        stderr.write(f"toolcall-fsm: cannot write into --out {out}: {why}\n")
        return 1
    workdir = out or Path(tempfile.mkdtemp(prefix="toolcall-fsm-fuzz-"))
    progress = Progress(stderr)
    total, failed, runs = 0, 0, len(shapes) * len(modes)
    for number, (shape, mode) in enumerate(((s, m) for s in shapes for m in modes), 1):
        progress.update(f"fuzz: {number} of {runs}: {shape} {mode}, {args.examples} streams")
        report = fuzz.fuzz(shape, mode, args.examples, args.seed, workdir / ".hypothesis")
        progress.done()
        total += report.streams
        line = f"{shape:<18} {mode:<9} {report.streams:>7} streams  "
        if not report.problems:
            stdout.write(line + "ok\n")
            continue
        failed += 1
        stdout.write(line + "FAIL: " + "; ".join(report.problems) + "\n")
        digest = hashlib.sha256(repr(report.failure).encode()).hexdigest()[:10]
        if mode == "property":
            path = write_vector(fuzz.to_vector(report.failure, f"fuzz-{shape}-{digest}"), workdir)
        else:
            path = workdir / f"robust-{shape}-{digest}.json"
            workdir.mkdir(parents=True, exist_ok=True)
            failure = report.failure
            sample = {"problems": report.problems, **attrs.asdict(failure, filter=lambda a, _: a.name != "data")}
            if isinstance(failure.clean, bytes):
                sample["clean"] = failure.clean.hex()
            data = failure.data
            sample |= {"body_hex": data.hex()} if isinstance(data, bytes) else {"events": data}
            path.write_text(json.dumps(sample, indent=2, default=repr) + "\n")
        stdout.write(f"  shrunk case written to {path}\n")
    stdout.write(f"{total} streams, {failed} failing shape/mode pairs\n")
    if out is None and not failed:
        shutil.rmtree(workdir, ignore_errors=True)  # nothing worth keeping in the temporary folder
    return 1 if failed else 0


def diagram(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from pathlib import Path

    from fsm.harness.diagrams import REGENERATE, generate

    root = Path(args.out or args.root)
    if args.out is None and not (root / "specs").is_dir():
        stderr.write(
            f"toolcall-fsm: {root} holds no specs/, so it is not the project's root: run this there,"
            " name it with --root, or write elsewhere with --out DIR\n"
        )
        return 2
    try:
        stale = generate(root, check=args.check, readme=args.out is None)
    except RuntimeError as exc:
        stderr.write(f"toolcall-fsm: {exc}\n")
        return 1
    if args.check and stale:
        stderr.write(f"toolcall-fsm: generated files are stale: {', '.join(stale)}; run `{REGENERATE}` and commit\n")
        return 1
    verb = "stale" if args.check else "wrote"
    stdout.write(f"{verb}: {', '.join(stale)}\n" if stale else "diagrams are current\n")
    return 0


def replay(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """Print the calls (or deltas); on a stream error, the result so far, then the error."""
    from fsm.jsontext import dumps
    from fsm.reassembler import Reassembler
    from fsm.reemit import DeltaEmitter
    from fsm.serialize import result_to_json

    deltas = args.output == "deltas"  # (the turn's text goes out with the calls)
    try:
        reassembler = Reassembler(args.provider, strict=args.strict, choice=args.choice, content_deltas=deltas)
    except InvalidOption as exc:  # --choice without a --provider whose streams have several: bad usage
        stderr.write(f"toolcall-fsm replay: --choice: {exc}\n")
        return 2
    made: list[DeltaEmitter] = []  # built once an event told the provider (auto), whose format its reasoning names

    def emitter() -> DeltaEmitter:  # its chunks under the choice read; the reasoning in the dialect named
        if not made:
            named = {"reasoning_blocks": args.reasoning_blocks, "source": reassembler.source_provider}
            made.append(DeltaEmitter(FlushPolicy(args.flush), choice=args.choice or 0, **named))
        return made[0]

    error: ToolcallFSMError | None = None
    try:
        with open_input(args.file) as stream:
            while block := read_block(stream):
                outputs = reassembler.feed_bytes(block)
                if deltas and outputs:  # (none before an event told the provider)
                    stdout.writelines(dumps(chunk) + "\n" for chunk in emitter().chunks(outputs))
        result = reassembler.close()
    except ToolcallFSMError as exc:  # the stream's fault (with the event and rule) or the caller's
        error = exc
        try:
            result = reassembler.close()
        except ToolcallFSMError:  # strict: a violation found while closing; the result is complete now
            result = reassembler.close()
    outputs = reassembler.drain()
    if deltas:
        stdout.writelines(dumps(chunk) + "\n" for chunk in [*emitter().chunks(outputs), emitter().finish(result)])
        unsent = emitter().unsent_reasoning + emitter().unsent_signatures + emitter().unsent_blocks  # (said)
        stderr.writelines(f"toolcall-fsm: not re-emitted: {note}\n" for note in unsent)
    else:
        stdout.write(dumps(result_to_json(result), indent=2) + "\n")
    if error is not None:
        stderr.write(f"toolcall-fsm: {error}\n")
        return 1
    return 0


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    return run_guarded(lambda out, err: _dispatch(argv, out, err), stdout, stderr)


def _dispatch(argv: Sequence[str] | None, stdout: TextIO, stderr: TextIO) -> int:
    try:
        with contextlib.redirect_stdout(stdout):  # argparse swallows a failed write of --help: ours says it
            args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse already printed the usage error
        return int(exc.code or 0)
    commands = {"diagram": diagram, "history": history_check, "fuzz": run_fuzz, "conform": conform, "replay": replay}
    return commands[args.command](args, stdout, stderr)
