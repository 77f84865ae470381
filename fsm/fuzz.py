"""Property-based fuzzing of the engine (needs hypothesis: ``pip install 'toolcall-fsm[fuzz]'``).

The property fuzzer starts from ground-truth calls (random names; nested arguments with unicode,
escapes, empty objects, large values), renders them into a wire shape's events under that shape's
legal variations (fragment boundaries anywhere, inside escapes and multi-byte characters; interleaved
parallel calls; whole calls per event; resends; omitted index; omitted or empty ids; repeated
metadata; the finish in its own event; raw SSE bytes cut anywhere), feeds them to the engine, and
checks the invariants. The robustness fuzzer feeds arbitrary bytes and mutated events and accepts
no exception but the project's typed errors, under tight limits.

A failing case is shrunk by hypothesis and can be written out as a conformance vector.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Callable
from typing import Any

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as with_seed
from hypothesis import strategies as st

from fsm.cli import FUZZ_SHAPES
from fsm.conformance import json_equal
from fsm.errors import ToolcallFSMError
from fsm.options import Limits
from fsm.reassembler import Reassembler
from fsm.reemit import DeltaEmitter, FlushPolicy
from fsm.spec import identity_spec
from fsm.vectors import Expectation, ExpectedCall, Vector

SHAPES = FUZZ_SHAPES


@attrs.frozen
class TrueCall:
    name: str
    arguments: dict[str, Any]
    id: str | None = None
    signature: str | None = None


@attrs.frozen
class Case:
    shape: str
    truth: tuple[TrueCall, ...]
    events: tuple[dict[str, Any], ...] = ()
    body: bytes | None = None
    cuts: tuple[int, ...] = ()

    @property
    def provider(self) -> str:
        return "gemini" if self.shape == "vertex" else self.shape


# -- ground truth --------------------------------------------------------------------------------------

_TRICKY = st.sampled_from(['"', "\\", '\\"', "}{", "][", "\n\t", "ñ🙂", "", "\u2028", '{"a": 1}'])
_TEXT = st.text(st.characters(codec="utf-8"), max_size=10) | _TRICKY
_LARGE = st.integers(200, 4000).map(lambda n: "long " * (n // 5))
_LEAF = (
    st.none()
    | st.booleans()
    | st.integers(-(10**15), 10**15)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT
    | _LARGE
)
_KEY = st.text(max_size=6) | _TRICKY
_IDENT = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True)


def _values(key: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    return st.recursive(
        _LEAF, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(key, kids, max_size=3), max_leaves=8
    )


def arguments(key: st.SearchStrategy[str] = _KEY) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(key, _values(key), max_size=4)


NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)


def _distinct(calls: list[tuple[str, dict[str, Any]]]) -> bool:
    # Without ids, two calls with the same name and text are one call resent (policy identical_text).
    texts = [(n, json.dumps(a, sort_keys=True)) for n, a in calls]
    return len(set(texts)) == len(texts)


def _truth(draw: st.DrawFn, *, key: st.SearchStrategy[str] = _KEY) -> list[tuple[str, dict[str, Any]]]:
    calls = draw(st.lists(st.tuples(NAMES, arguments(key)), min_size=1, max_size=5).filter(_distinct))
    return calls


def _split(draw: st.DrawFn, text: str) -> list[str]:
    """Cut ``text`` anywhere (inside escapes, between surrogate-free code points)."""
    if len(text) < 2 or draw(st.integers(0, 3)) == 0:
        return [text]
    cuts = sorted(draw(st.sets(st.integers(1, len(text) - 1), max_size=12)))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def _dumps(draw: st.DrawFn, value: Any) -> str:
    compact = draw(st.booleans())
    return json.dumps(value, ensure_ascii=draw(st.booleans()), separators=(",", ":") if compact else None)


def _interleave(draw: st.DrawFn, queues: list[list[Any]], allowed: bool) -> list[Any]:
    if not allowed:
        return [op for q in queues for op in q]
    owners = [k for k, q in enumerate(queues) for _ in q]
    order = draw(st.permutations(owners))
    positions = [0] * len(queues)
    out = []
    for k in order:
        out.append(queues[k][positions[k]])
        positions[k] += 1
    return out


# -- renderers, one per wire shape -------------------------------------------------------------------------


@st.composite
def openai_case(draw: st.DrawFn) -> Case:
    calls = _truth(draw)
    # Weighted toward the hard cases: ids that must bind, index 0 reused, calls interleaved.
    ids = draw(st.sampled_from(["present", "present", "empty", "absent"]))
    index_mode = draw(st.sampled_from(["distinct", "reuse0", "reuse0", "absent"]))
    interleave = draw(st.integers(0, 3)) > 0 and (index_mode == "distinct" or ids == "present")
    repeat = draw(st.booleans())
    header = draw(st.booleans())
    resend = draw(st.booleans())
    queues: list[list[dict[str, Any]]] = []
    for k, (name, args) in enumerate(calls):
        call_id = f"call_{k}x" if ids == "present" else ("" if ids == "empty" else None)
        text = _dumps(draw, args)
        pieces = _split(draw, text)

        def entry(
            first: bool, piece: str | None, *, k: int = k, name: str = name, call_id: str | None = call_id
        ) -> dict[str, Any]:
            e: dict[str, Any] = {}
            if index_mode == "distinct":
                e["index"] = k
            elif index_mode == "reuse0":
                e["index"] = 0
            carries_id = first or repeat or (interleave and index_mode != "distinct")
            if call_id is not None and carries_id:
                e["id"], e["type"] = call_id, "function"
            fn: dict[str, Any] = {}
            if first or repeat:
                fn["name"] = name
            if piece is not None:
                fn["arguments"] = piece
            e["function"] = fn
            return e

        ops = [entry(True, "")] if header else []
        ops += [entry(not header and i == 0, p) for i, p in enumerate(pieces)]
        if resend:
            ops.append(entry(True, text))
        queues.append(ops)
    entries = _interleave(draw, queues, interleave)
    events: list[dict[str, Any]] = [
        {
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"tool_calls": [e]}, "finish_reason": None}],
        }
        for e in entries
    ]
    if draw(st.booleans()):
        events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    else:
        events[-1]["choices"][0]["finish_reason"] = "tool_calls"
    order = _first_appearance(entries, queues)
    truth = tuple(TrueCall(calls[k][0], calls[k][1], f"call_{k}x" if ids == "present" else None) for k in order)
    return _maybe_bytes(draw, Case("openai-chat", truth, tuple(events)))


def _first_appearance(entries: list[Any], queues: list[list[Any]]) -> list[int]:
    owner = {id(op): k for k, q in enumerate(queues) for op in q}
    seen: list[int] = []
    for e in entries:
        if owner[id(e)] not in seen:
            seen.append(owner[id(e)])
    return seen


def _maybe_bytes(draw: st.DrawFn, case: Case) -> Case:
    """Sometimes deliver the events as raw SSE bytes, cut into chunks anywhere."""
    if not draw(st.booleans()):
        return case
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    body = "".join(f"data: {json.dumps(e, ensure_ascii=False)}{newline}{newline}" for e in case.events).encode()
    cuts = tuple(sorted(draw(st.sets(st.integers(1, max(1, len(body) - 1)), max_size=20))))
    return attrs.evolve(case, events=(), body=body, cuts=cuts)


@st.composite
def gemini_case(draw: st.DrawFn) -> Case:
    calls = _truth(draw)
    with_ids = draw(st.booleans())
    sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=len(calls)))
    groups: list[list[int]] = []
    start = 0
    while start < len(calls):
        size = sizes[len(groups) % len(sizes)]
        groups.append(list(range(start, min(len(calls), start + size))))
        start += size
    events: list[dict[str, Any]] = []
    signatures: dict[int, str] = {}
    for g, group in enumerate(groups):
        parts = []
        for j, k in enumerate(group):
            call: dict[str, Any] = {"name": calls[k][0], "args": calls[k][1]}
            if with_ids:
                call["id"] = f"g{k}"
            part: dict[str, Any] = {"functionCall": call}
            if j == 0 and draw(st.booleans()):
                part["thoughtSignature"] = signatures[k] = f"sig{g}"
            parts.append(part)
        event = {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]}
        events.append(event)
        if draw(st.booleans()):  # the same event again, maybe now carrying a late signature
            again = json.loads(json.dumps(event))
            first = again["candidates"][0]["content"]["parts"][0]
            if "thoughtSignature" not in first and draw(st.booleans()):
                first["thoughtSignature"] = signatures[group[0]] = f"late{g}"
            events.append(again)
    final = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}]
    }
    if draw(st.booleans()):
        events.append(final)
    else:
        events[-1]["candidates"][0]["finishReason"] = "STOP"
    truth = tuple(TrueCall(n, a, f"g{k}" if with_ids else None, signatures.get(k)) for k, (n, a) in enumerate(calls))
    return _maybe_bytes(draw, Case("gemini", truth, tuple(events)))


def _leaves(value: Any, path: str) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, f"{path}[{i}]")]
    return [(path, value)]


def _no_empty_containers(value: Any, top: bool = True) -> bool:
    if isinstance(value, dict):
        return (top or bool(value)) and all(_no_empty_containers(v, False) for v in value.values())
    if isinstance(value, list):
        return bool(value) and all(_no_empty_containers(v, False) for v in value)
    return True


@st.composite
def vertex_case(draw: st.DrawFn) -> Case:
    # Path-addressed values cannot express an empty container, and keys are plain names here.
    calls = draw(
        st.lists(st.tuples(NAMES, arguments(_IDENT).filter(_no_empty_containers)), min_size=1, max_size=3).filter(
            _distinct
        )
    )
    events: list[dict[str, Any]] = []

    def part(call: dict[str, Any]) -> dict[str, Any]:
        return {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": call}]}, "index": 0}]}

    for k, (name, args) in enumerate(calls):
        events.append(part({"name": name, "willContinue": True}))
        entries: list[dict[str, Any]] = []
        for path, value in _leaves(args, "$"):
            if isinstance(value, str):
                pieces = _split(draw, value) if value else [""]
                for i, piece in enumerate(pieces):
                    entry: dict[str, Any] = {"jsonPath": path, "stringValue": piece}
                    if i < len(pieces) - 1:
                        entry["willContinue"] = True
                    entries.append(entry)
            elif isinstance(value, bool):
                entries.append({"jsonPath": path, "boolValue": value})
            elif value is None:
                entries.append({"jsonPath": path, "nullValue": None})
            else:
                entries.append({"jsonPath": path, "numberValue": value})
        while entries:
            take = draw(st.integers(1, len(entries)))
            events.append(part({"partialArgs": entries[:take], "willContinue": True}))
            entries = entries[take:]
            if draw(st.booleans()):
                events.append(part({"willContinue": True}))  # keep-alive
        if k < len(calls) - 1 or draw(st.booleans()):
            events.append(part({}))
    events.append(
        {"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}]}
    )
    return Case("vertex", tuple(TrueCall(n, a) for n, a in calls), tuple(events))


@st.composite
def anthropic_case(draw: st.DrawFn) -> Case:
    calls = _truth(draw)
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {"content": []}}]
    index = 0
    for k, (name, args) in enumerate(calls):
        if draw(st.booleans()):
            events += [
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": "ok"}},
                {"type": "content_block_stop", "index": index},
            ]
            index += 1
        index += draw(st.integers(0, 2))  # proxies skip block indices
        events.append(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "tool_use", "id": f"toolu_{k}", "name": name, "input": {}},
            }
        )
        with_text = bool(args) or draw(st.booleans())
        text = _dumps(draw, args) if with_text else ""
        for piece in _split(draw, text) if text else [""]:
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                }
            )
            if draw(st.booleans()):
                events.append({"type": "ping"})
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    events += [{"type": "message_delta", "delta": {"stop_reason": "tool_use"}}, {"type": "message_stop"}]
    return _maybe_bytes(
        draw, Case("anthropic", tuple(TrueCall(n, a, f"toolu_{k}") for k, (n, a) in enumerate(calls)), tuple(events))
    )


@st.composite
def responses_case(draw: st.DrawFn) -> Case:
    calls = _truth(draw)
    offset = draw(st.integers(0, 1))
    queues: list[list[dict[str, Any]]] = []
    for k, (name, args) in enumerate(calls):
        at, item = k + offset, f"fc_{k}"
        text = _dumps(draw, args)
        ops: list[dict[str, Any]] = [
            {
                "type": "response.output_item.added",
                "output_index": at,
                "item": {"type": "function_call", "id": item, "call_id": f"call_{k}", "name": name, "arguments": ""},
            }
        ]
        if draw(st.booleans()):
            ops += [
                {"type": "response.function_call_arguments.delta", "output_index": at, "item_id": item, "delta": p}
                for p in _split(draw, text)
            ]
            if draw(st.booleans()):
                ops.append(
                    {
                        "type": "response.function_call_arguments.done",
                        "output_index": at,
                        "item_id": item,
                        "arguments": text,
                    }
                )
        ops.append(
            {
                "type": "response.output_item.done",
                "output_index": at,
                "item": {"type": "function_call", "id": item, "call_id": f"call_{k}", "name": name, "arguments": text},
            }
        )
        queues.append(ops)
    entries = _interleave(draw, queues, draw(st.booleans()))
    events = [{"type": "response.created", "response": {}}, *entries, {"type": "response.completed", "response": {}}]
    order = _first_appearance(entries, queues)
    truth = tuple(TrueCall(calls[k][0], calls[k][1], f"call_{k}") for k in order)
    return _maybe_bytes(draw, Case("openai-responses", truth, tuple(events)))


@st.composite
def ollama_case(draw: st.DrawFn) -> Case:
    calls = _truth(draw)
    with_ids, reuse = draw(st.booleans()), draw(st.booleans())
    events: list[dict[str, Any]] = []
    for k, (name, args) in enumerate(calls):
        call: dict[str, Any] = {"function": {"index": 0 if reuse else k, "name": name, "arguments": args}}
        if with_ids:
            call["id"] = f"call_{k}"
        events.append({"message": {"role": "assistant", "content": "", "tool_calls": [call]}, "done": False})
    events.append({"message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"})
    truth = tuple(TrueCall(n, a, f"call_{k}" if with_ids else None) for k, (n, a) in enumerate(calls))
    return Case("ollama", truth, tuple(events))


@st.composite
def bedrock_case(draw: st.DrawFn) -> Case:
    calls = _truth(draw)
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant", "p": "abc"}}]
    for k, (name, args) in enumerate(calls):
        events.append(
            {
                "contentBlockStart": {
                    "contentBlockIndex": k,
                    "start": {"toolUse": {"toolUseId": f"tu_{k}", "name": name}},
                    "p": "x" * k,
                }
            }
        )
        with_input = bool(args) or draw(st.booleans())
        if with_input:
            for piece in _split(draw, _dumps(draw, args)):
                events.append({"contentBlockDelta": {"contentBlockIndex": k, "delta": {"toolUse": {"input": piece}}}})
        events.append({"contentBlockStop": {"contentBlockIndex": k}})
    events += [{"messageStop": {"stopReason": "tool_use"}}, {"metadata": {"usage": {}}}]
    return Case("bedrock", tuple(TrueCall(n, a, f"tu_{k}") for k, (n, a) in enumerate(calls)), tuple(events))


@st.composite
def cohere_case(draw: st.DrawFn) -> Case:
    calls = _truth(draw)
    events: list[dict[str, Any]] = [{"type": "message-start", "delta": {"message": {"role": "assistant"}}}]
    for k, (name, args) in enumerate(calls):
        start = {"id": f"c_{k}", "type": "function", "function": {"name": name, "arguments": ""}}
        events.append({"type": "tool-call-start", "index": k, "delta": {"message": {"tool_calls": start}}})
        text = json.dumps(args, indent=draw(st.sampled_from([None, 2])), ensure_ascii=False)
        for piece in _split(draw, text):
            events.append(
                {
                    "type": "tool-call-delta",
                    "index": k,
                    "delta": {"message": {"tool_calls": {"function": {"arguments": piece}}}},
                }
            )
        events.append({"type": "tool-call-end", "index": k})
    events.append({"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}})
    return Case("cohere", tuple(TrueCall(n, a, f"c_{k}") for k, (n, a) in enumerate(calls)), tuple(events))


CASES: dict[str, Callable[[], st.SearchStrategy[Case]]] = {
    "openai-chat": openai_case,
    "openai-responses": responses_case,
    "anthropic": anthropic_case,
    "gemini": gemini_case,
    "vertex": vertex_case,
    "ollama": ollama_case,
    "bedrock": bedrock_case,
    "cohere": cohere_case,
}


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
    got = [(c.name, c.arguments) for c in result.calls]
    want = [(t.name, t.arguments) for t in case.truth]
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
    violations = {d.code for d in identity_spec().diagnostics if d.violation}
    raised = sorted(set(result.codes()) & violations)
    if raised:
        problems.append(f"violations reported on a legal stream: {raised}")
    merged: dict[int, str] = {}
    for chunk in chunks:
        for entry in chunk["choices"][0]["delta"].get("tool_calls", []):
            merged[entry["index"]] = merged.get(entry["index"], "") + entry["function"].get("arguments", "")
    for call in result.calls:
        try:
            if not json_equal(json.loads(merged.get(call.index, "")), call.arguments):
                problems.append(f"re-emitted deltas of call {call.index} do not concatenate to its arguments")
        except ValueError:
            problems.append(f"re-emitted deltas of call {call.index} are not JSON: {merged.get(call.index)!r}")
    size = len(case.body or b"") + sum(len(json.dumps(e)) for e in case.events)
    events = len(case.events) + (case.body or b"").count(b"data:")
    if r.ledger.work > 4 * size + 16 * events + 64:
        problems.append(f"work {r.ledger.work} is not linear in {size} bytes of input")
    return problems


# -- robustness --------------------------------------------------------------------------------------------------

TIGHT = Limits(max_calls=4, max_argument_chars=200, max_depth=6, max_event_bytes=2000)


def _mutate(draw: st.DrawFn, value: Any) -> Any:
    """Replace, drop or retype one value somewhere in ``value``."""
    junk: st.SearchStrategy[Any] = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.text(max_size=5)
        | st.just([])
        | st.just({})
        | st.just({"x": [1]})
    )
    if isinstance(value, dict) and value and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(value)))
        copy = dict(value)
        if draw(st.booleans()):
            del copy[key]
        else:
            copy[key] = _mutate(draw, copy[key])
        return copy
    if isinstance(value, list) and value and draw(st.booleans()):
        i = draw(st.integers(0, len(value) - 1))
        return [*value[:i], _mutate(draw, value[i]), *value[i + 1 :]]
    return draw(junk)


@st.composite
def hostile_input(draw: st.DrawFn, shape: str) -> tuple[str, list[Any] | bytes]:
    mode = draw(st.sampled_from(["bytes", "mutated", "mutated-bytes"]))
    if mode == "bytes":
        prefix = draw(st.sampled_from([b"", b"data: ", b"[", b"{", b"\x00\x00\x00"]))
        return "auto", prefix + draw(st.binary(max_size=300))
    case = draw(CASES[shape]())
    events = list(case.events) or [{"choices": []}]
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(events) - 1))
        events[i] = _mutate(draw, events[i])
    if mode == "mutated":
        return case.provider, events
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()
    cut = draw(st.integers(0, len(body)))
    return case.provider, body[:cut] + draw(st.binary(max_size=20))


def survive(provider: str, data: list[Any] | bytes) -> list[str]:
    """Feed hostile input; the only acceptable exceptions are the project's typed errors, and the
    limits must hold."""
    try:
        r = Reassembler(provider, limits=TIGHT)
        if isinstance(data, bytes):
            r.feed_bytes(data)
        else:
            for event in data:
                r.feed(event)
        result = r.close()
    except ToolcallFSMError:
        return []
    except Exception as exc:  # exactly what this fuzzer looks for
        return [f"raised {type(exc).__name__}: {exc}"]
    problems = []
    if len(result.calls) + len(result.server_tool_calls) > TIGHT.max_calls:
        problems.append(f"{len(result.calls)} calls held past the limit of {TIGHT.max_calls}")
    if any(len(c.arguments_json) > TIGHT.max_argument_chars for c in result.calls):
        problems.append("arguments held past the size limit")
    return problems


# -- running -----------------------------------------------------------------------------------------------------------


@attrs.define
class Report:
    shape: str
    mode: str
    streams: int = 0
    failure: Any = None
    problems: list[str] = attrs.field(factory=list)


def fuzz(shape: str, mode: str, examples: int, seed: int | None) -> Report:
    """Run ``examples`` generated streams; on failure, the shrunk case and its problems."""
    report = Report(shape, mode)
    strategy = CASES[shape]() if mode == "property" else hostile_input(shape)

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=seed is None,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(strategy)
    def property_holds(sample: Any) -> None:
        report.streams += 1
        problems = check(sample) if mode == "property" else survive(*sample)
        if problems:
            report.failure, report.problems = sample, problems
            raise AssertionError("; ".join(problems))

    runner = with_seed(seed)(property_holds) if seed is not None else property_holds
    with contextlib.suppress(AssertionError):  # hypothesis re-ran the shrunk case last: report holds it
        runner()
    return report


def sample_vectors(shape: str, count: int) -> list[Vector]:
    """``count`` generated streams of ``shape`` as vectors expecting their ground truth (a fixed,
    derandomized sample), for grading other implementations on fuzzed input."""
    cases: list[Case] = []

    @settings(
        max_examples=count, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(CASES[shape]())
    def collect(case: Case) -> None:
        cases.append(case)

    collect()
    return [to_vector(case, f"fuzzed-{shape}-{n}") for n, case in enumerate(cases[:count])]


def to_vector(case: Case, name: str) -> Vector:
    """A failing property case as a conformance vector, expecting its ground truth."""
    calls = [
        ExpectedCall(name=t.name, arguments=t.arguments, id=t.id, thought_signature=t.signature) for t in case.truth
    ]
    body = case.body.decode("utf-8") if case.body is not None else None
    return Vector(
        name=name,
        description=f"Found by toolcall-fsm fuzz ({case.shape}); expects the ground truth it was rendered from.",
        shape=case.provider,
        expect=Expectation(finish_reason="tool_calls", calls=calls, diagnostics=[]),
        events=[dict(e) for e in case.events],
        body=body,
    )
