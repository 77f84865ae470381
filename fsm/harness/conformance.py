"""Run conformance vectors against this engine or an external reassembler, and report coverage.

Coverage is measured, not declared: the slot-machine transitions and identity rules the engine
actually took (counted by its ledger), the diagnostics it raised, the policy choices and wire shapes
the vectors use, and the scanner transitions taken over the final argument texts (by stepping the
scanner's spec table itself).
"""

from __future__ import annotations

import json
import shlex
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from fsm.engine.scan_reference import spec_steps
from fsm.errors import FramingError, LocalProtocolError, RemoteProtocolError, SpecError, ToolcallFSMError, shown
from fsm.harness import ADAPTER_TIMEOUT
from fsm.harness.external import OUTPUT_LIMIT, run_bounded
from fsm.harness.vectors import ExpectedCall, Vector, load_vector
from fsm.jsontext import dumps, nesting_exceeds, parse_strict
from fsm.options import Policies
from fsm.reassembler import Reassembler
from fsm.results import Result, ToolCall
from fsm.spec import identity_spec, scanner_spec, slot_spec
from fsm.wire.decoders import PROVIDERS
from fsm.wire.faults import Fault
from fsm.wire.framing import BOM, detect_framing, make_framer


@attrs.frozen
class Outcome:
    vector: str
    shape: str
    passed: bool
    problems: tuple[str, ...] = ()
    applicable: bool = True
    """False when an external reassembler answered that it does not speak this wire shape."""


@attrs.define
class Coverage:
    transitions: Counter[str] = attrs.field(factory=Counter)
    rules: Counter[str] = attrs.field(factory=Counter)
    diagnostics: Counter[str] = attrs.field(factory=Counter)
    policies: set[tuple[str, str]] = attrs.field(factory=set)
    shapes: set[str] = attrs.field(factory=set)
    scanner: Counter[str] = attrs.field(factory=Counter)

    def missing(self) -> dict[str, list[str]]:
        """What the spec declares that no vector exercised, by kind."""
        ident = identity_spec()
        declared = {
            "slot transitions": {t.label(s) for s, t in slot_spec().edges()},
            "scanner transitions": set(scanner_edge_labels()),
            "identity rules": set(ident.rule_names),
            "diagnostics": set(ident.diagnostic_by_code),
            "policy choices": {f"{p.name}={c}" for p in ident.policies for c in p.choices},
            "wire shapes": set(PROVIDERS),
        }
        seen = {
            "slot transitions": set(self.transitions),
            "scanner transitions": set(self.scanner),
            "identity rules": set(self.rules),
            "diagnostics": set(self.diagnostics),
            "policy choices": {f"{n}={c}" for n, c in self.policies},
            "wire shapes": self.shapes,
        }
        return {kind: sorted(declared[kind] - seen[kind]) for kind in declared}


def load_apart(folder: Path) -> tuple[list[Vector], list[Outcome]]:
    """The vectors of ``folder`` that load, and a failed outcome for each file refused, saying why
    (malformed, or a name an earlier file took): ``conform`` reports it and runs the rest. A folder
    without a vector is a SpecError."""
    paths = sorted(folder.glob("*.json"))
    if not paths:
        raise SpecError(f"no vectors in {folder}")
    vectors: list[Vector] = []
    refused: list[Outcome] = []
    names: set[str] = set()
    for path in paths:
        try:
            vector = load_vector(path)
            if vector.name in names:
                raise SpecError(f"{path.name}: the vector name {vector.name!r} is used twice")
        except SpecError as exc:
            refused.append(Outcome(path.name, "-", False, (str(exc),)))
            continue
        names.add(vector.name)
        vectors.append(vector)
    return vectors, refused


# -- running vectors on this engine ---------------------------------------------------------------


def _policies(vector: Vector) -> Policies:
    # The vector's choices were checked against the spec's when it was loaded.
    return Policies(**vector.policies)  # type: ignore[arg-type]


def replay(vector: Vector, *, strict: bool = False) -> tuple[Result, Reassembler]:
    """The vector's stream fed whole; its result. A stream that fails part-way gives the result
    so far (stream-failed), as the vector expects; in strict mode a violation found while closing
    is raised after the result is made, and close() then returns it."""
    r = Reassembler(vector.shape, strict=strict, policies=_policies(vector), choice=vector.choice)
    try:
        if vector.body is not None:
            r.feed_bytes(vector.body.encode("utf-8"))
        for event in vector.events:
            r.feed(event)
    except RemoteProtocolError:
        pass
    stopped = ConnectionError(vector.interrupted) if vector.interrupted is not None else None
    try:
        return r.close(interrupted=stopped), r
    except RemoteProtocolError:
        return r.close(), r


def check(vector: Vector, result: Result) -> list[str]:
    expect = vector.expect
    problems = []
    if result.finish_reason != expect.finish_reason:
        problems.append(f"finish_reason {result.finish_reason!r}, expected {expect.finish_reason!r}")
    for said in ("raw_finish_reason", "finish_message"):  # compared when the vector gives them
        if (want := getattr(expect, said)) is not None and getattr(result, said) != want:
            problems.append(f"{said} {getattr(result, said)!r}, expected {want!r}")
    problems += compare_calls("calls", result.calls, expect.calls)
    problems += compare_calls("server_tool_calls", result.server_tool_calls, expect.server_tool_calls)
    codes = set(result.codes())
    if codes != set(expect.diagnostics):
        problems.append(f"diagnostics {sorted(codes)}, expected {sorted(expect.diagnostics)}")
    return problems


def compare_calls(
    what: str,
    got: Iterable[ToolCall | dict[str, Any]],
    want: list[ExpectedCall],
    optional: tuple[str, ...] = (
        "id",
        "type",
        "input",
        "arguments_json",
        "thought_signature",
        "wire_id",
        "reply_id",
        "output_index",
        "item",
    ),
) -> list[str]:
    rows = [c if isinstance(c, dict) else _call_json(c) for c in got]
    if len(rows) != len(want):
        return [f"{len(rows)} {what}, expected {len(want)}: {shown([c.get('name') for c in rows], 200)}"]
    problems = []
    for n, (have, exp) in enumerate(zip(rows, want, strict=True)):
        checks: list[tuple[str, Any, Any]] = [
            ("name", have.get("name"), exp.name),
            ("status", have.get("status", "complete"), exp.status),
        ]
        if exp.status == "complete":
            checks.append(("arguments", have.get("arguments"), exp.arguments))
        for field in optional:
            if getattr(exp, field) is not None:
                checks.append((field, have.get(field), getattr(exp, field)))
        # Numbered from 1, like events: "calls 1.name" is the first call's name.
        # What another implementation printed is shown cut (a megabyte name, a number of 5000 digits).
        problems += [f"{what} {n + 1}.{f}: {shown(h)}, expected {w!r}" for f, h, w in checks if not json_equal(h, w)]
    return problems


def json_equal(have: Any, want: Any) -> bool:
    """Equal as JSON values: key order and 7 vs 7.0 do not matter, but true is not 1."""
    if isinstance(want, bool) or isinstance(have, bool):
        return type(have) is type(want) and have == want
    if isinstance(want, dict) and isinstance(have, dict):
        return have.keys() == want.keys() and all(json_equal(have[k], want[k]) for k in want)
    if isinstance(want, list) and isinstance(have, list):
        return len(have) == len(want) and all(json_equal(h, w) for h, w in zip(have, want, strict=True))
    return bool(have == want)


def _call_json(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": call.type,
        "name": call.name,
        "arguments": call.arguments,
        "arguments_json": call.arguments_json,
        "status": call.status.value,
        "input": call.input,
        "thought_signature": call.thought_signature,
        "wire_id": call.wire_id,
        "reply_id": call.reply_id,
        "output_index": call.output_index,
        "item": call.item,
    }


def run_vectors(vectors: list[Vector]) -> tuple[list[Outcome], Coverage]:
    coverage = Coverage()
    outcomes = []
    for vector in vectors:
        try:
            result, r = replay(vector)
        except ToolcallFSMError as exc:
            outcomes.append(Outcome(vector.name, vector.shape, False, (f"raised {type(exc).__name__}: {exc}",)))
            continue
        problems = check(vector, result)
        outcomes.append(Outcome(vector.name, vector.shape, not problems, tuple(problems)))
        coverage.transitions.update(r.ledger.transitions)
        coverage.rules.update({rule: n for rule, n in r.ledger.rules.items() if n})
        coverage.diagnostics.update(result.codes())
        coverage.shapes.add(vector.shape)
        coverage.policies |= set(attrs.asdict(_policies(vector)).items())
        for call in (*result.calls, *result.server_tool_calls):
            if call.arguments_json is not None:  # freeform input is never scanned
                coverage.scanner.update(scanner_edges(call.arguments_json))
    return outcomes, coverage


# -- the scanner's spec table, stepped directly --------------------------------------------------------


def scanner_edge_labels() -> list[str]:
    return [t.label(s) for s, t in scanner_spec().edges()]


def scanner_edges(text: str) -> Counter[str]:
    """The scanner transitions ``text`` takes, read off the spec table one character at a time."""
    return Counter(label for _, label, _ in spec_steps(text))


# -- grading an external reassembler --------------------------------------------------------------------


OUTPUT_DEPTH = 512
"""Nesting past which an external reassembler's output is graded "output nests too deeply to read":
twice the engine's default depth limit, so no vector's arguments come near it, on any Python."""


def run_external(command: str, vector: Vector, timeout: float = ADAPTER_TIMEOUT, limit: int = OUTPUT_LIMIT) -> Outcome:
    """Drive ``command`` by the documented protocol: a header line ``{"shape", "policies"}`` (and
    ``"choice"``, for a vector that reads one choice of several; ``"interrupted"``, the network
    error's message, for a stream the caller's side stopped after its events), then the
    vector's events, one JSON object a line, on stdin; it prints the calls it assembled as one JSON
    list of ``{"id", "name", "arguments"}`` (or ``{"calls": [...]}``) on stdout, or
    ``{"unsupported": true}`` for a wire shape it does not speak."""
    header: dict[str, Any] = {"shape": vector.shape, "policies": vector.policies}
    if vector.choice is not None:
        header["choice"] = vector.choice
    if vector.interrupted is not None:
        header["interrupted"] = vector.interrupted
    lines = [json.dumps(header)]
    lines += [dumps(e) for e in wire_events(vector)]
    argv = split_command(command)
    try:
        ran = run_bounded(argv, ("\n".join(lines) + "\n").encode("utf-8"), timeout, limit)
    except OSError as exc:  # not found, not executable: no vector can be graded
        raise LocalProtocolError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    if ran.timed_out:
        return Outcome(vector.name, vector.shape, False, (f"timed out after {timeout:g} seconds",))
    if ran.overflowed:
        return Outcome(vector.name, vector.shape, False, (f"printed more than {limit} bytes",))
    # Output that is not UTF-8 is graded (not JSON), not a crash here.
    stdout, stderr = (ran.stdout.decode("utf-8", "replace"), ran.stderr.decode("utf-8", "replace"))
    if ran.returncode != 0:
        last = (stderr.strip().splitlines() or ["(no message)"])[-1]
        return Outcome(vector.name, vector.shape, False, (f"exit {ran.returncode}: {last[:200]}",))
    # Bounded before the parse, not by it: how deep json.loads goes before RecursionError depends on
    # the Python (3.13's C parser reads some thousand levels that 3.11's refuses), and a grade must not.
    if nesting_exceeds(stdout, OUTPUT_DEPTH):
        return Outcome(vector.name, vector.shape, False, ("output nests too deeply to read",))
    try:
        data, _ = parse_strict(stdout)
    except ValueError:
        return Outcome(vector.name, vector.shape, False, ("output is not JSON",))
    except RecursionError:  # nesting past the parser's stack: graded, as any other output it cannot use
        return Outcome(vector.name, vector.shape, False, ("output nests too deeply to read",))
    if isinstance(data, dict) and data.get("unsupported") is True:  # the protocol's word, not any truthy value
        return Outcome(vector.name, vector.shape, False, ("does not speak this shape",), applicable=False)
    calls = data.get("calls") if isinstance(data, dict) else data  # an object without "calls" holds none
    if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
        return Outcome(vector.name, vector.shape, False, ("output is not a list of call objects",))
    # An external reassembler reports only finished calls; compare it on those.
    wanted = [c for c in vector.expect.calls if c.status == "complete"]
    problems = compare_calls("calls", [dict(c, status="complete") for c in calls], wanted, optional=("id",))
    return Outcome(vector.name, vector.shape, not problems, tuple(problems))


def split_command(command: str) -> list[str]:
    """``command`` split as a shell would; LocalProtocolError when it cannot be, or names nothing to run."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:  # an unclosed quote: there is no command to run
        raise LocalProtocolError(f"--against {command!r}: {exc}") from None
    if not any(argv):
        raise LocalProtocolError("--against needs a command to run")
    return argv


def wire_events(vector: Vector) -> list[dict[str, Any]]:
    """The vector's events; for a raw ``body``, the events its framing carries (a last event cut
    short is left out, as a reader of the stream would never see it whole)."""
    if vector.body is None:
        return vector.events
    data = vector.body.encode("utf-8").removeprefix(BOM)
    try:
        framing = detect_framing(data, final=True)
    except FramingError:  # no framing reads it (a proxy's error page): a reader sees no event
        return []
    if framing is None:
        return []
    framer = make_framer(framing, len(data) + 1)
    events = []
    for payload in [*framer.feed(data), *framer.close()]:
        if isinstance(payload, Fault):
            continue
        try:
            value = json.loads(payload)
        except ValueError:
            continue
        if isinstance(value, dict):
            events.append(value)
    return events


def table(outcomes: list[Outcome]) -> str:
    width = max((len(o.vector) for o in outcomes), default=10)
    lines = [f"{'vector':<{width}}  {'shape':<16}  result", f"{'-' * width}  {'-' * 16}  ------"]
    for o in outcomes:
        verdict = "pass" if o.passed else ("n/a" if not o.applicable else "FAIL")
        detail = "" if o.passed or not o.applicable else "  " + "; ".join(o.problems)[:160]
        lines.append(f"{o.vector:<{width}}  {o.shape:<16}  {verdict}{detail}")
    lines.append(summary(outcomes))
    return "\n".join(lines)


def summary(outcomes: list[Outcome]) -> str:
    passed = sum(o.passed for o in outcomes)
    applicable = sum(o.applicable for o in outcomes)
    line = f"{passed} passed, {applicable - passed} failed"
    return line + (f", {len(outcomes) - applicable} not applicable" if applicable < len(outcomes) else "")
