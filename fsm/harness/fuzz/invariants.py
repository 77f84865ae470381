"""The property fuzzer's invariants: what must hold of the engine's result for a rendered case."""

from __future__ import annotations

import itertools
import json
from typing import Any

from fsm.fieldcheck import fault, said, where
from fsm.harness.conformance import json_equal
from fsm.harness.fuzz.truth import Case
from fsm.jsontext import dumps, parse_strict
from fsm.reassembler import Reassembler
from fsm.reemit import DeltaEmitter, FlushPolicy
from fsm.results import Result
from fsm.serialize import result_to_json
from fsm.spec import identity_spec

# -- invariants ----------------------------------------------------------------------------------------------------


def run_case(case: Case) -> tuple[Any, Reassembler, list[dict[str, Any]]]:
    r = Reassembler(case.provider)
    emitter = DeltaEmitter(FlushPolicy.INCREMENTAL)
    chunks: list[dict[str, Any]] = []
    if case.body is not None:
        edges = [0, *case.cuts, len(case.body)]
        for a, b in itertools.pairwise(edges):
            chunks += emitter.chunks(r.feed_bytes(case.body[a:b]))
    for event in case.events:
        chunks += emitter.chunks(r.feed(event))
    result = r.close()
    chunks += emitter.chunks(r.drain())
    return result, r, chunks


def check(case: Case) -> list[str]:
    """The invariants; an empty list when they all hold."""
    try:
        result, r, chunks = run_case(case)
    except Exception as exc:  # any exception on a legal stream is a finding
        return [f"raised {type(exc).__name__}: {exc}"]
    problems = []
    got = [(c.name, c.type, c.arguments, c.input) for c in result.calls]
    want = [(t.name, t.type, t.arguments, t.input) for t in case.truth]
    if got != want or any(
        not json_equal(c.arguments, t.arguments) for c, t in zip(result.calls, case.truth, strict=False)
    ):
        problems.append(f"calls {got} != ground truth {want}")
    bad = [c.status.value for c in result.calls if c.status.value != "complete"]
    if bad:
        problems.append(f"statuses {bad}")
    for call, truth in zip(result.calls, case.truth, strict=False):
        if truth.id is not None and call.id != truth.id:
            problems.append(f"id {call.id!r} != {truth.id!r}")
        if truth.signature is not None and call.thought_signature != truth.signature:
            problems.append(f"signature {call.thought_signature!r} != {truth.signature!r}")
    if len({c.id for c in result.calls}) != len(result.calls):
        problems.append("ids are not unique")
    if (wrong := fault(result, Result)) is not None:  # fsm.messages takes a Reassembler's result unread (vouch)
        problems.append(f"result{where(wrong.path)} is {type(wrong.value).__name__}, not {said(wrong.declared)}")
    violations = {d.code for d in identity_spec().diagnostics if d.violation}
    raised = sorted(set(result.codes()) & violations)
    if raised:
        problems.append(f"violations reported on a legal stream: {raised}")
    merged: dict[int, str] = {}
    for chunk in chunks:
        for entry in chunk["choices"][0]["delta"].get("tool_calls", []):
            body = entry["custom"].get("input", "") if "custom" in entry else entry["function"].get("arguments", "")
            merged[entry["index"]] = merged.get(entry["index"], "") + body
    for call in result.calls:
        if call.input is not None:
            if merged.get(call.index, "") != call.input:
                problems.append(f"re-emitted deltas of call {call.index} do not concatenate to its input")
            continue
        try:
            if not json_equal(json.loads(merged.get(call.index, "")), call.arguments):
                problems.append(f"re-emitted deltas of call {call.index} do not concatenate to its arguments")
        except ValueError:
            problems.append(f"re-emitted deltas of call {call.index} are not JSON: {merged.get(call.index)!r}")
    size = len(case.body or b"") + sum(len(json.dumps(e)) for e in case.events)
    events = len(case.events) + (case.body or b"").count(b"data:")
    if r.ledger.work > 4 * size + 16 * events + 64:
        problems.append(f"work {r.ledger.work} is not linear in {size} bytes of input")
    try:  # every output path writes strict JSON that encodes as UTF-8 (lone surrogates, big numbers)
        for data in [result_to_json(result), *chunks]:
            parse_strict(dumps(data).encode("utf-8").decode("utf-8"))
    except ValueError as exc:
        problems.append(f"an output does not write as strict UTF-8 JSON: {exc}")
    return problems
