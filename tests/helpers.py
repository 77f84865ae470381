"""Builders for OpenAI-style chat chunks, so scenarios read like the wire they describe."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from fsm import Reassembler, Result, ToolCall
from fsm.reemit import DeltaEmitter, FlushPolicy

_MISSING: Any = object()


NO_FRAMING = "not SSE, NDJSON, a JSON array, a JSON document or an AWS event stream"
"""What the input is said not to be when no framing reads it (not-a-stream, FramingError)."""


def replay_traced(r: Reassembler, feed: Callable[[Reassembler], Iterable[list[Any]]]) -> object:
    """Everything a replay shows, to compare two ways of running it: the result, every output
    (``feed`` yields the outputs of each piece it feeds ``r``), every transition each call took in
    order, and the rule and transition counts; or the error raised, with what came before it."""
    from fsm.engine.slot import Slot

    taken: list[tuple[int, str]] = []
    real = Slot.covered

    def traced(slot: Slot, transition: str) -> None:
        taken.append((slot.ordinal, transition))
        real(slot, transition)

    waiting, whole, end, run = Slot.store_waiting, Slot.store_whole, Slot.end_closed, Slot.store_run
    first = Slot.store_first

    # The transitions taken without fire() are counted without covered().
    def traced_waiting(slot: Slot, text: str, label: str, closing: tuple[str, str], scan_now: bool = False) -> str:
        took = waiting(slot, text, label, closing, scan_now=scan_now)
        if took:
            taken.append((slot.ordinal, took))
        return took

    def traced_first(slot: Slot, text: str, opening: tuple[str, str], closing: tuple[str, str], closed: Any) -> str:
        took = first(slot, text, opening, closing, closed)
        if took:
            taken.append((slot.ordinal, took))
        return took

    def traced_whole(slot: Slot, text: str, label: str, dest: str, closed: Any) -> bool:
        took = whole(slot, text, label, dest, closed)
        if took:
            taken.append((slot.ordinal, label))
        return took

    def traced_run(slot: Slot, texts: list[str], data: bytes, chars: int, label: str) -> None:
        taken.extend([(slot.ordinal, label)] * len(texts))
        run(slot, texts, data, chars, label)

    def traced_end(slot: Slot, label: str, dest: str) -> bool:
        counts_left = end(slot, label, dest)  # the transition's count comes after its action, as fire() counts it
        taken.append((slot.ordinal, label))
        return counts_left  # (True: the caller counts it)

    Slot.covered = traced  # type: ignore[method-assign]
    Slot.store_waiting = traced_waiting  # type: ignore[method-assign]
    Slot.store_whole = traced_whole  # type: ignore[method-assign]
    Slot.store_first = traced_first  # type: ignore[method-assign]
    Slot.end_closed = traced_end  # type: ignore[method-assign]
    Slot.store_run = traced_run  # type: ignore[method-assign]
    try:
        outputs: list[Any] = []
        try:
            for piece in feed(r):
                outputs += piece
            result = r.close()
        except Exception as exc:  # the same error either way is the same behaviour
            return (type(exc).__name__, str(exc), outputs, taken, dict(r.ledger.rules))
        outputs += r.drain()
        return (result, outputs, taken, dict(r.ledger.rules), dict(r.ledger.transitions))
    finally:
        Slot.covered = real  # type: ignore[method-assign]
        Slot.store_waiting = waiting  # type: ignore[method-assign]
        Slot.store_whole = whole  # type: ignore[method-assign]
        Slot.store_first = first  # type: ignore[method-assign]
        Slot.end_closed = end  # type: ignore[method-assign]
        Slot.store_run = run  # type: ignore[method-assign]


def tc(index: Any = _MISSING, id: Any = _MISSING, name: Any = _MISSING, args: Any = _MISSING) -> dict[str, Any]:
    """One ``delta.tool_calls[]`` entry; fields left out are absent on the wire."""
    entry: dict[str, Any] = {}
    if index is not _MISSING:
        entry["index"] = index
    if id is not _MISSING:
        entry["id"] = id
        entry["type"] = "function"
    function: dict[str, Any] = {}
    if name is not _MISSING:
        function["name"] = name
    if args is not _MISSING:
        function["arguments"] = args
    if function:
        entry["function"] = function
    return entry


def chunk(*calls: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    delta: dict[str, Any] = {"tool_calls": list(calls)} if calls else {}
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def run(chunks: list[dict[str, Any]], **options: Any) -> Result:
    r = Reassembler("openai-chat", **options)
    for c in chunks:
        r.feed(c)
    return r.close()


def feed_vector(r: Reassembler, vector: Any) -> None:
    """Feed a conformance vector as the harness does: its body's bytes, then its events."""
    if vector.body is not None:
        r.feed_bytes(vector.body.encode("utf-8"))
    for event in vector.events:
        r.feed(event)


def calls(result: Result) -> list[tuple[str | None, Any]]:
    return [(c.name, c.arguments) for c in result.calls]


def went_out(result: Result) -> list[ToolCall]:
    """The calls a re-emitted stream carries, by index: the result's, and those a declined model made
    (policy fallback-declined-calls: they went out before the fallback block that set them apart came,
    and the last chunk's error lists them as not to run)."""
    return sorted((*result.calls, *result.declined_calls), key=lambda call: call.index)


def sse(chunks: list[dict[str, Any]], done: bool = True) -> bytes:
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks)
    return (body + ("data: [DONE]\n\n" if done else "")).encode()


def reemitted(chunks: list[dict[str, Any]], flush: FlushPolicy, **options: Any) -> dict[int, dict[str, str]]:
    """Feed ``chunks``, re-emit the delta stream, and concatenate it per index the naive way."""
    r = Reassembler("openai-chat", **options)
    emitter = DeltaEmitter(flush)
    out = []
    for c in chunks:
        out += emitter.chunks(r.feed(c))
    result = r.close()
    out += [*emitter.chunks(r.drain()), emitter.finish(result)]
    merged: dict[int, dict[str, str]] = defaultdict(lambda: {"id": "", "name": "", "arguments": ""})
    for c in out:
        for entry in c["choices"][0]["delta"].get("tool_calls", []):
            slot = merged[entry["index"]]
            slot["id"] += entry.get("id", "")
            slot["name"] += entry["function"].get("name", "")
            slot["arguments"] += entry["function"].get("arguments", "")
    return dict(merged)


def aws_message(payload: bytes, event_type: str = "contentBlockDelta", header: str = ":event-type") -> bytes:
    """One AWS event-stream message: prelude (lengths and CRC), an ``:event-type`` header (or
    ``header``, such as ``:exception-type``), payload, CRC."""
    import struct
    import zlib

    name, value = header.encode(), event_type.encode()
    headers = bytes([len(name)]) + name + b"\x07" + struct.pack(">H", len(value)) + value
    prelude = struct.pack(">II", 12 + len(headers) + len(payload) + 4, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


def shortcut_by_readers(decoder: Any, payload: dict[str, Any], registry: Any, content: Any) -> bool:
    """OpenAIChatDecoder.shortcut as its readers decide it, one after another (what the shortcut
    reads in line): the reference the shortcut is proven against, and what a test that turns one of
    the readers off replays with (see without_reader)."""
    from fsm.wire.decoders import chat_chunks, openai_chat

    delta = chat_chunks.plain_delta(payload)
    if delta is None:
        return False
    found = chat_chunks.one_entry(delta)
    if found is None:
        events = openai_chat.said_in(delta)
        if events is None:
            return False
        for event in events:
            content.apply(event)
        return True
    return bool(decoder.entry(found[0], found[1], registry))


def without_reader(monkeypatch: Any, name: str) -> None:
    """Turn off the OpenAI chat chunk reader ``name`` (a function of fsm.wire.decoders.chat_chunks
    of one or two arguments): it finds nothing, wherever it is read, the shortcut's own reading in
    line too (the shortcut is then read by its readers, shortcut_by_readers)."""
    import inspect

    from fsm.wire.decoders import chat_chunks, openai_chat

    arity = len(inspect.signature(getattr(chat_chunks, name)).parameters)
    nothing = (lambda a: None) if arity == 1 else (lambda a, b: None)
    monkeypatch.setattr(chat_chunks, name, nothing)
    if hasattr(openai_chat, name):
        monkeypatch.setattr(openai_chat, name, nothing)
    if name == "lean_fragment_in":  # the reads of many events: the reassembler's own name for it
        monkeypatch.setattr("fsm.reassembler.lean_fragment_in", nothing)
    monkeypatch.setattr(openai_chat.OpenAIChatDecoder, "shortcut", shortcut_by_readers)


def count_finished_reads(monkeypatch: Any) -> list[int]:
    """Count how often a call is asked whether it has finished (each ask is a call visited), in
    the one item of the list returned, until ``monkeypatch`` is undone."""
    from fsm.engine.slot import Slot

    reads = [0]
    held = Slot.__dict__["finished"]

    def read(slot: Slot) -> bool:
        reads[0] += 1
        return held.__get__(slot)  # type: ignore[no-any-return]

    monkeypatch.setattr(Slot, "finished", property(read))
    return reads


def provider_error(said: str, kind: str | None = None) -> str:
    """What ``provider-error`` says of an error whose kind (its raw finish reason, policy error-kind)
    is ``kind`` and whose message is ``said``: the kind first, then the message."""
    named = f' "{kind}"' if kind and kind != "error" else ""
    return f"the provider reported an error{named}: {said}"
