"""The robustness fuzzer: hostile input must get only the project's typed errors, ``close()`` must
always reach the result, the limits must hold, and the same bytes fed whole and in random pieces
must give the same answer.

Four kinds of input:

* ``bytes``: arbitrary short bytes behind a framing-like prefix, under tight limits;
* ``mutated``: a fuzzed shape's events with values replaced, dropped or retyped, under tight limits;
* ``mutated-bytes``: those events as SSE, cut anywhere, with junk after;
* ``large``: a fuzzed shape's events framed as SSE, NDJSON or a JSON array, with hazards put among
  them, up to megabytes, under the default limits: nesting hundreds to thousands deep, lines of up
  to a few MB, invalid UTF-8, BOMs, a proxy's keep-alives, empty ``data:`` events, comments, runs of
  whitespace, CR-only line ends, events that are JSON but not objects;
* ``decoding``: a fuzzed shape's events with argument hazards put in the call's own text (or its
  argument object): a UTF-16 surrogate pair split across two fragments (the wire escapes
  ``\\ud83d`` ending one event, ``\\ude00`` starting the next), ``NaN``/``Infinity``, a key given
  twice, an integer of 5000 digits. Every output must then write as strict UTF-8 JSON: the result as
  ``replay`` prints it and the re-emitted delta chunks.

Whatever the input, the re-emitted delta chunks (``DeltaEmitter``, either flush policy) must add up to the
result's calls: the same ids and names, the argument text exactly. Every byte input is also fed in random
pieces (a whole-vs-chunked differential run): both runs must give the same calls, the same diagnostics
(event number and code) and the same error (type and event number), in lax or strict mode."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from typing import Any

import attrs
from hypothesis import strategies as st

from fsm.engine.ledger import MESSAGE_CHARS, WORD_CHARS
from fsm.errors import InvalidInput, RemoteProtocolError, ToolcallFSMError
from fsm.fieldcheck import fault, said, where
from fsm.harness.fuzz.decoding import with_argument_hazard
from fsm.harness.fuzz.shapes import CASES
from fsm.jsontext import dumps
from fsm.options import Limits
from fsm.reassembler import Reassembler
from fsm.reemit import DeltaEmitter, FlushPolicy
from fsm.results import Result, ToolCall
from fsm.serialize import result_to_json

TIGHT = Limits(max_calls=4, max_argument_chars=200, max_depth=6, max_event_bytes=2000, max_content_chars=300)
LIMITS = {
    "tight": TIGHT,
    "default": Limits(),
    "1k-events": Limits(max_event_bytes=1_000),
    "100k-events": Limits(max_event_bytes=100_000),
}


@attrs.frozen
class Sample:
    provider: str
    data: list[Any] | bytes
    """Events to feed, or bytes to feed whole and then in the pieces ``cuts`` makes."""
    cuts: tuple[int, ...] = ()
    strict: bool = False
    limits: str = "tight"
    clean: bytes | None = None
    """The same stream without its hazards, when they were all ones lax mode must skip with a
    word (``unusable`` of them) or in silence: the calls must then be the clean stream's calls."""
    unusable: int = 0
    outputs: bool = False
    """Check that every output (the result, the re-emitted chunks) writes as strict UTF-8 JSON."""
    flush: str = "incremental"
    """The re-emitted chunks' flush policy: whatever the input, they must add up to the result's calls."""


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


def _cuts(draw: st.DrawFn, size: int, most: int = 24) -> tuple[int, ...]:
    if size < 2:
        return ()
    return tuple(sorted(draw(st.sets(st.integers(1, size - 1), max_size=most))))


# -- large inputs with hazards ------------------------------------------------------------------------------------

_HAZARDS = (
    "deep",
    "long-line",
    "bad-utf8",
    "keep-alive",
    "not-object",
    "empty-data",
    "comment",
    "whitespace",
    "bom",
    "cr-only",
)


_SKIPPED = {"bad-utf8", "keep-alive", "not-object"}  # reported (bad-event) and skipped in lax mode
_SILENT = {"empty-data", "comment", "whitespace", "bom", "cr-only"}  # not events at all


def _hazard_event(draw: st.DrawFn, hazard: str) -> bytes | None:
    """An event's text carrying ``hazard``, or None for hazards that are not events."""
    if hazard == "deep":
        depth = draw(st.sampled_from([300, 600, 1000, 1000, 5000]))
        inner = draw(st.sampled_from([b"[" * depth + b"]" * depth, b'{"a":' * depth + b"1" + b"}" * depth]))
        return draw(st.sampled_from([inner, b'{"choices": ' + inner + b"}", b'{"s": "' + inner + b'"}']))
    if hazard == "long-line":
        size = draw(st.sampled_from([980, 1_000, 70_000, 99_990, 120_000, 1_000_000, 2_500_000]))
        return b'{"pad": "' + b"x" * size + b'"}'
    if hazard == "bad-utf8":
        return b'{"a": "' + draw(st.sampled_from([b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90"])) + b'"}'
    if hazard == "keep-alive":
        return draw(st.sampled_from([b"keep-alive", b"ping", b"{", b"{}}"]))
    if hazard == "not-object":
        return draw(st.sampled_from([b"[1, 2]", b"42", b'"text"', b"null"]))
    return None


def _frame(events: list[bytes | str], framing: str, newline: bytes) -> bytes:
    if framing == "sse":
        parts = []
        for e in events:
            if e == "empty-data":
                parts.append(b"data:" + newline * 2)
            elif e == "comment":
                parts.append(b": ping" + newline)
            else:
                assert isinstance(e, bytes)
                parts.append(b"data: " + e + newline * 2)
        return b"".join(parts)
    if framing == "ndjson":
        return b"".join((e if isinstance(e, bytes) else b"") + newline for e in events)
    return b"[" + b",".join(e for e in events if isinstance(e, bytes)) + b"]"


@st.composite
def large_input(draw: st.DrawFn, shape: str) -> Sample:
    case = draw(CASES[shape]())
    # lone surrogate halves (a UTF-16 cut) go out escaped, as the server that cut them sends them
    clean: list[bytes | str] = [dumps(e).encode() for e in case.events]
    events = list(clean)
    hazards = draw(st.lists(st.sampled_from(_HAZARDS), min_size=1, max_size=3))
    framing = draw(st.sampled_from(["sse", "sse", "ndjson", "json-array"]))
    unusable, framing_lost = 0, False
    for hazard in hazards:
        text = _hazard_event(draw, hazard)
        if hazard in ("empty-data", "comment"):
            events.insert(draw(st.integers(0, len(events))), hazard)  # rendered by the framing
        elif text is not None:
            events.insert(draw(st.integers(0, len(events))), text)
            unusable += hazard in _SKIPPED
            # In a JSON array a scalar or bare junk is one element, skipped with a word; an unclosed
            # "{" swallows the rest, and "{}}" is an empty object (an event of its own) then junk.
            framing_lost |= framing == "json-array" and hazard == "keep-alive" and text[:1] == b"{"
    newline = b"\r" if "cr-only" in hazards else draw(st.sampled_from([b"\n", b"\r\n"]))
    body = _frame(events, framing, newline)
    prefix = b""
    if "whitespace" in hazards:
        prefix = draw(st.sampled_from([b" ", b"\n", b"\r\n", b" \t"])) * draw(st.sampled_from([10, 100_000]))
    if "bom" in hazards:
        prefix = b"\xef\xbb\xbf" + prefix
    body = prefix + body
    first = next((e for e in events if isinstance(e, bytes)), b"{")
    oracle = (
        set(hazards) <= _SKIPPED | _SILENT
        and not framing_lost
        # NDJSON is known by its first line that begins "{"; a first line "[" makes it a JSON array
        and not (framing == "ndjson" and (first[:1] == b"[" or not clean))
    )
    return Sample(
        provider=draw(st.sampled_from([case.provider, case.provider, "auto"])),
        data=body,
        cuts=_cuts(draw, len(body)),
        strict=draw(st.booleans()),
        # Long lines meet an event limit they cross, or nearly cross, as often as the default one.
        limits=draw(
            st.sampled_from(["default", "1k-events", "100k-events"] if "long-line" in hazards else ["default"])
        ),
        clean=_frame(clean, framing, b"\n") if oracle else None,
        unusable=unusable,
    )


# -- decoding hazards in the arguments ---------------------------------------------------------------------------


@st.composite
def decoding_input(draw: st.DrawFn, shape: str) -> Sample:
    case = draw(CASES[shape]())
    texts = with_argument_hazard(draw, list(case.events))
    body = _frame(list(texts), draw(st.sampled_from(["sse", "ndjson", "json-array"])), b"\n")
    return Sample(
        provider=draw(st.sampled_from([case.provider, "auto"])),
        data=body,
        cuts=_cuts(draw, len(body)),
        strict=draw(st.booleans()),
        limits="default",
        outputs=True,
    )


@st.composite
def hostile_input(draw: st.DrawFn, shape: str) -> Sample:
    sample = draw(_hostile_input(shape))
    return attrs.evolve(sample, flush=draw(st.sampled_from([policy.value for policy in FlushPolicy])))


@st.composite
def _hostile_input(draw: st.DrawFn, shape: str) -> Sample:
    mode = draw(st.sampled_from(["bytes", "mutated", "mutated-bytes", "large", "large", "decoding"]))
    if mode == "large":
        return draw(large_input(shape))
    if mode == "decoding":
        return draw(decoding_input(shape))
    strict = draw(st.booleans())
    if mode == "bytes":
        prefix = draw(st.sampled_from([b"", b"data: ", b"[", b"{", b"\x00\x00\x00", b"\xef\xbb\xbf"]))
        data = prefix + draw(st.binary(max_size=300))
        return Sample("auto", data, _cuts(draw, len(data)), strict)
    case = draw(CASES[shape]())
    events = list(case.events) or [{"choices": []}]
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(events) - 1))
        events[i] = _mutate(draw, events[i])
    if mode == "mutated":
        return Sample(case.provider, events, (), strict)
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()
    cut = draw(st.integers(0, len(body)))
    data = body[:cut] + draw(st.binary(max_size=20))
    return Sample(case.provider, data, _cuts(draw, len(data)), strict)


# -- running and checking ---------------------------------------------------------------------------------------------

Answer = tuple[Any, ...]


def _run(sample: Sample, pieces: list[Any], as_bytes: bool) -> tuple[Answer, list[str]]:
    """Feed ``pieces`` as ``sample`` says; return the answer (error type and event, calls, diagnostics)
    and any problems."""
    problems: list[str] = []
    limits, outputs = LIMITS[sample.limits], sample.outputs
    r = Reassembler(sample.provider, strict=sample.strict, limits=limits, content_deltas=True)
    emitter, chunks = DeltaEmitter(FlushPolicy(sample.flush)), []
    error: Any = None
    try:
        for piece in pieces:
            if as_bytes:
                chunks += emitter.chunks(r.feed_bytes(piece))
            elif isinstance(piece, dict):
                chunks += emitter.chunks(r.feed(piece))
            else:  # a mutation made the event itself junk: a caller's mistake, refused as one
                try:
                    chunks += emitter.chunks(r.feed(piece))
                except InvalidInput:
                    continue
        r.close()
    except InvalidInput as exc:  # the fuzzer feeds nothing of the wrong type: this is a bug
        return (), [f"raised InvalidInput on well-typed input: {exc}"]
    except ToolcallFSMError as exc:
        error = (type(exc).__name__, exc.event if isinstance(exc, RemoteProtocolError) else None)
    except Exception as exc:  # exactly what this fuzzer looks for
        return (), [f"raised {type(exc).__name__}: {exc}"]
    try:
        result = r.close()  # after any error, raised or not, the result so far
    except Exception as exc:
        return (), [f"close() after {error} raised {type(exc).__name__}: {exc}"]
    problems += _limits_hold(result, limits)
    if (wrong := fault(result, Result)) is not None:  # fsm.messages takes a Reassembler's result unread (vouch)
        problems.append(f"result{where(wrong.path)} is {type(wrong.value).__name__}, not {said(wrong.declared)}")
    chunks += [*emitter.chunks(r.drain()), emitter.finish(result)]
    problems += _deltas_add_up(result, chunks)
    if outputs:
        problems += _strict_json([dumps(result_to_json(result), indent=2), *map(dumps, chunks)])
    calls = tuple((c.index, c.id, c.name, c.status.value, _text(c)) for c in result.calls)
    diagnostics = tuple((d.event, d.code) for d in result.diagnostics)
    suppressed = tuple(sorted(result.suppressed_diagnostics.items()))
    return (error, calls, diagnostics, suppressed, (result.raw_finish_reason, result.finish_message)), problems


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _strict_json(texts: list[str]) -> list[str]:
    """What ``replay`` would print: each text must encode as UTF-8 and parse as strict JSON."""
    for text in texts:
        try:
            json.loads(text.encode("utf-8"), parse_constant=_refuse, parse_int=str)  # exact digits: any length
        except ValueError as exc:  # UnicodeEncodeError is one too
            return [f"an output is not strict UTF-8 JSON ({type(exc).__name__}: {exc}): {text[:200]!r}"]
    return []


def _deltas_add_up(result: Result, chunks: list[dict[str, Any]]) -> list[str]:
    """The re-emitted chunks, accumulated per index, are the result's calls: the id once, the name at
    most once and before any text (when the call has one), the text concatenated exactly."""
    sent: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for part in chunk["choices"][0]["delta"].get("tool_calls", ()):
            row = sent.setdefault(part["index"], {"id": [], "name": [], "text": "", "early": False})
            body = part.get("function") or part.get("custom") or {}
            row["id"] += [part["id"]] if "id" in part else []
            row["name"] += [body["name"]] if "name" in body else []
            text = body.get("arguments", body.get("input", ""))
            row["early"] |= bool(text) and not row["name"]
            row["text"] += text
    if sorted(sent) != [call.index for call in result.calls]:
        return [f"deltas for calls {sorted(sent)}, but the result has {[c.index for c in result.calls]}"]
    for call in result.calls:
        got = sent[call.index]
        if got["id"] != [call.id] or got["name"] != ([call.name] if call.name is not None else []):
            return [f"call {call.index}: ids {got['id']} and names {got['name']} sent for {call.id}, {call.name}"]
        if got["text"] != _text(call) or (got["early"] and call.name is not None):
            return [f"call {call.index}: deltas add up to {got['text'][:80]!r}, not {_text(call)[:80]!r}"[:300]]
    return []


def _text(call: ToolCall) -> str:
    """What a call holds: its argument text, or a custom tool's raw input."""
    return call.arguments_json or call.input or ""


def _limits_hold(result: Result, limits: Limits) -> list[str]:
    problems = []
    if len(result.calls) + len(result.server_tool_calls) > limits.max_calls:
        problems.append(f"{len(result.calls)} calls held past the limit of {limits.max_calls}")
    if any(len(_text(c)) > limits.max_argument_chars for c in result.calls):
        problems.append("arguments held past the size limit")
    held = sum(len(_text(c).encode("utf-8", "surrogatepass")) for c in result.calls)
    if held > limits.max_stream_argument_bytes:
        problems.append(f"{held} bytes of arguments held past the stream limit")
    text = len(result.text) + len(result.refusal or "") + sum(len(block.text) for block in result.reasoning)
    if text > limits.max_content_chars:
        problems.append(f"{text} characters of text, reasoning and refusal held past the limit")
    kept = Counter(result.codes())
    if kept and max(kept.values()) > limits.max_diagnostics_per_code:
        problems.append(f"diagnostics kept past the per-code limit: {kept.most_common(1)}")
    said = len(result.raw_finish_reason or "") - WORD_CHARS, len(result.finish_message or "") - MESSAGE_CHARS
    if max(said) > 30:  # what shortened() adds: "... (N characters)"
        problems.append("the finish word or message kept past its bound")
    return problems


def survive(sample: Sample) -> list[str]:
    """Feed hostile input (bytes: whole, then in pieces); the only acceptable exceptions are the
    project's typed errors, close() must then return, the limits must hold, both runs must agree,
    and skipped hazards must cost no call and be reported one by one."""
    data = sample.data
    if not isinstance(data, bytes):
        return _run(sample, data, as_bytes=False)[1]
    whole, problems = _run(sample, [data], as_bytes=True)
    if problems:
        return problems
    if sample.cuts:
        ends = [0, *sample.cuts, len(data)]
        pieces = [data[a:b] for a, b in itertools.pairwise(ends)]
        chunked, problems = _run(sample, pieces, as_bytes=True)
        if not problems and chunked != whole:
            differ = [
                f"{p}: whole {w!r} vs chunked {c!r}" for p, w, c in zip(_PARTS, whole, chunked, strict=True) if w != c
            ]
            problems.append("whole and chunked differ: " + "; ".join(differ)[:600])
    if not problems and sample.clean is not None and not sample.strict:
        clean, problems = _run(attrs.evolve(sample, strict=False, outputs=False), [sample.clean], as_bytes=True)
        reported = sum(code == "bad-event" for _, code in whole[2]) + dict(whole[3]).get("bad-event", 0)
        if clean[0] is None and whole[0] is not None:
            problems.append(f"lax mode raised {whole[0]} on hazards it must skip")
        elif clean[0] is None and whole[1] != clean[1]:
            problems.append(f"skipped hazards changed the calls: {whole[1]!r} vs clean {clean[1]!r}"[:600])
        if clean[0] is None and reported != sample.unusable:
            problems.append(f"{sample.unusable} unusable events, but {reported} reported as bad-event")
    return problems


_PARTS = ("error", "calls", "diagnostics", "suppressed")
