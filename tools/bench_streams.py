"""The benchmark's streams: synthetic ones of every wire shape, each with the calls a correct
reassembler must produce, and the recorded captures in ../shared/captures with their metas' calls.

A stream is kept as parsed payloads (dicts) and as its wire bytes, so every implementation can be
timed from either; the expected calls are known from how the stream was made, never from any
implementation's output.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsm.harness.captures import PROVIDER_OF_SHAPE

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT.parent / "shared" / "captures"

Call = tuple[str | None, str | None, Any]
"""(id or None when any id will do, name, arguments as a JSON value)."""


@dataclass
class Scenario:
    label: str
    provider: str
    payloads: list[dict[str, Any]]
    wire: bytes
    expected: list[Call]
    fragments: bool = False
    """Arguments arrive as text fragments (not whole calls): the rows the speed targets name."""
    capture: bool = False
    events: int = field(init=False)
    argument_bytes: int = field(init=False)

    def __post_init__(self) -> None:
        self.events = len(self.payloads)
        self.argument_bytes = sum(len(json.dumps(args, ensure_ascii=False).encode()) for _, _, args in self.expected)


def sse(payloads: list[dict[str, Any]]) -> bytes:
    return "".join(f"data: {json.dumps(p, ensure_ascii=False)}\n\n" for p in payloads).encode()


def ndjson(payloads: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in payloads).encode()


# -- synthetic streams ------------------------------------------------------------------------------


def argument_value(size: int, rng: random.Random) -> dict[str, Any]:
    """A JSON object of about ``size`` bytes with strings, escapes, unicode, numbers and nesting."""
    words = ["state", "machine", "caf\u00e9", "\u6771\u4eac", 'say "hi"', "path\\to", "emoji \U0001f642", "x"]
    items: list[Any] = []
    value: dict[str, Any] = {"query": "tool calls", "limit": 20, "filters": {"lang": ["en", "fr"], "exact": True}}
    value["items"] = items
    length = len(json.dumps(value, ensure_ascii=False))
    while length < size:
        item = {"id": len(items), "text": " ".join(rng.choice(words) for _ in range(6)), "score": rng.random()}
        items.append(item)
        length += len(json.dumps(item, ensure_ascii=False)) + 2
    return value


def fragments(text: str, rng: random.Random) -> list[str]:
    out, i = [], 0
    while i < len(text):
        n = rng.randint(1, 32)
        out.append(text[i : i + n])
        i += n
    return out


def openai_chunk(entry: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
    delta = {"tool_calls": [entry]} if entry else {}
    return {
        "id": "chatcmpl-b",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def openai_stream(label: str, calls: int, size: int, seed: int) -> Scenario:
    """``calls`` parallel calls of ~``size`` bytes of arguments each, streamed one after another
    in fragments of 1 to 32 characters, as OpenAI sends them."""
    rng = random.Random(seed)
    payloads, expected = [], []
    for k in range(calls):
        value = argument_value(size, rng)
        head = {"index": k, "id": f"call_{k}", "type": "function", "function": {"name": f"tool_{k}", "arguments": ""}}
        payloads.append(openai_chunk(head))
        text = json.dumps(value, ensure_ascii=False)
        payloads += [openai_chunk({"index": k, "function": {"arguments": p}}) for p in fragments(text, rng)]
        expected.append((f"call_{k}", f"tool_{k}", value))
    payloads.append(openai_chunk(None, "tool_calls"))
    return Scenario(label, "openai-chat", payloads, sse(payloads), expected, fragments=True)


def file_write_stream(label: str, size: int, seed: int) -> Scenario:
    """One call whose arguments are mostly one long string (a file to write: lines, quotes,
    unicode), streamed in fragments of 1 to 32 characters: no bracket for most of the call."""
    rng = random.Random(seed)
    lines = ['print("caf\u00e9")', "    return x  # \u6771\u4eac", "", "def f(a, b):", "\ttab\tand \\ slash"]
    content: list[str] = []
    total = 0
    while total < size:
        content.append(rng.choice(lines))
        total += len(content[-1]) + 1
    value = {"path": "src/app.py", "content": "\n".join(content)}
    head = {"index": 0, "id": "call_w", "type": "function", "function": {"name": "write_file", "arguments": ""}}
    payloads = [openai_chunk(head)]
    text = json.dumps(value, ensure_ascii=False)
    payloads += [openai_chunk({"index": 0, "function": {"arguments": p}}) for p in fragments(text, rng)]
    payloads.append(openai_chunk(None, "tool_calls"))
    return Scenario(label, "openai-chat", payloads, sse(payloads), [("call_w", "write_file", value)], fragments=True)


def small_calls(label: str, calls: int) -> Scenario:
    """Tiny whole calls, one per chunk, each at its own index: the per-call cost."""
    payloads = [
        openai_chunk(
            {"index": k, "id": f"c{k}", "type": "function", "function": {"name": "get", "arguments": f'{{"i": {k}}}'}}
        )
        for k in range(calls)
    ]
    payloads.append(openai_chunk(None, "tool_calls"))
    expected: list[Call] = [(f"c{k}", "get", {"i": k}) for k in range(calls)]
    return Scenario(label, "openai-chat", payloads, sse(payloads), expected)


def anthropic_stream(label: str, calls: int, size: int, seed: int) -> Scenario:
    rng = random.Random(seed)
    payloads: list[dict[str, Any]] = [{"type": "message_start", "message": {"content": []}}]
    expected: list[Call] = []
    for k in range(calls):
        value = argument_value(size, rng)
        block = {"type": "tool_use", "id": f"toolu_{k}", "name": "t", "input": {}}
        payloads.append({"type": "content_block_start", "index": k, "content_block": block})
        payloads += [
            {"type": "content_block_delta", "index": k, "delta": {"type": "input_json_delta", "partial_json": p}}
            for p in fragments(json.dumps(value, ensure_ascii=False), rng)
        ]
        payloads.append({"type": "content_block_stop", "index": k})
        expected.append((f"toolu_{k}", "t", value))
    payloads.append({"type": "message_delta", "delta": {"stop_reason": "tool_use"}})
    return Scenario(label, "anthropic", payloads, sse(payloads), expected, fragments=True)


def gemini_whole_calls(label: str, calls: int, seed: int) -> Scenario:
    """Gemini 3 style: one whole call per event, every one at part 0, no ids, the last one resent."""
    rng = random.Random(seed)
    values = [argument_value(100, rng) | {"n": k} for k in range(calls)]
    payloads = [
        {
            "candidates": [
                {"content": {"role": "model", "parts": [{"functionCall": {"name": "sum", "args": v}}]}, "index": 0}
            ]
        }
        for v in values
    ]
    payloads.append(payloads[-1])
    end = {"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}
    payloads.append({"candidates": [end]})
    return Scenario(label, "gemini", payloads, sse(payloads), [(None, "sum", v) for v in values])


def vertex_stream(label: str, calls: int, size: int, seed: int) -> Scenario:
    """Vertex partialArgs: one long string argument streamed in pieces of 1 to 32 characters."""
    rng = random.Random(seed)

    def event(call: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"functionCall": call}]}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        return {"candidates": [candidate]}

    payloads, expected = [], []
    for _ in range(calls):
        body = json.dumps(argument_value(size, rng), ensure_ascii=False)
        payloads.append(event({"name": "write", "willContinue": True}))
        payloads += [
            event(
                {"partialArgs": [{"jsonPath": "$.body", "stringValue": p, "willContinue": True}], "willContinue": True}
            )
            for p in fragments(body, rng)
        ]
        payloads.append(event({"partialArgs": [{"jsonPath": "$.body", "stringValue": ""}], "willContinue": True}))
        payloads.append(event({}))
        expected.append((None, "write", {"body": body}))
    payloads.append(event({}, "STOP"))
    return Scenario(label, "gemini", payloads, sse(payloads), expected, fragments=True)


def responses_stream(label: str, calls: int, size: int, seed: int) -> Scenario:
    rng = random.Random(seed)
    payloads: list[dict[str, Any]] = [{"type": "response.created", "response": {}}]
    expected: list[Call] = []
    for k in range(calls):
        value = argument_value(size, rng)
        text, item = json.dumps(value, ensure_ascii=False), f"fc_{k}"
        added = {"type": "function_call", "id": item, "call_id": f"call_{k}", "name": "t", "arguments": ""}
        payloads.append({"type": "response.output_item.added", "output_index": k, "item": added})
        payloads += [
            {"type": "response.function_call_arguments.delta", "output_index": k, "item_id": item, "delta": p}
            for p in fragments(text, rng)
        ]
        done = {"type": "response.function_call_arguments.done", "output_index": k, "item_id": item, "arguments": text}
        payloads.append(done)
        payloads.append({"type": "response.output_item.done", "output_index": k, "item": dict(added, arguments=text)})
        expected.append((f"call_{k}", "t", value))
    payloads.append({"type": "response.completed", "response": {}})
    return Scenario(label, "openai-responses", payloads, sse(payloads), expected, fragments=True)


def bedrock_stream(label: str, calls: int, size: int, seed: int) -> Scenario:
    rng = random.Random(seed)
    payloads: list[dict[str, Any]] = [{"messageStart": {"role": "assistant", "p": "abc"}}]
    expected: list[Call] = []
    for k in range(calls):
        value = argument_value(size, rng)
        start = {"contentBlockIndex": k, "start": {"toolUse": {"toolUseId": f"tu_{k}", "name": "t"}}}
        payloads.append({"contentBlockStart": start})
        payloads += [
            {"contentBlockDelta": {"contentBlockIndex": k, "delta": {"toolUse": {"input": p}}, "p": "x"}}
            for p in fragments(json.dumps(value, ensure_ascii=False), rng)
        ]
        payloads.append({"contentBlockStop": {"contentBlockIndex": k}})
        expected.append((f"tu_{k}", "t", value))
    payloads.append({"messageStop": {"stopReason": "tool_use"}})
    return Scenario(label, "bedrock", payloads, sse(payloads), expected, fragments=True)


def cohere_stream(label: str, calls: int, size: int, seed: int) -> Scenario:
    rng = random.Random(seed)
    payloads: list[dict[str, Any]] = [{"type": "message-start", "delta": {"message": {"role": "assistant"}}}]
    expected: list[Call] = []
    for k in range(calls):
        value = argument_value(size, rng)
        start = {"id": f"c_{k}", "type": "function", "function": {"name": "t", "arguments": ""}}
        payloads.append({"type": "tool-call-start", "index": k, "delta": {"message": {"tool_calls": start}}})
        payloads += [
            {
                "type": "tool-call-delta",
                "index": k,
                "delta": {"message": {"tool_calls": {"function": {"arguments": p}}}},
            }
            for p in fragments(json.dumps(value, ensure_ascii=False), rng)
        ]
        payloads.append({"type": "tool-call-end", "index": k})
        expected.append((f"c_{k}", "t", value))
    payloads.append({"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}})
    return Scenario(label, "cohere", payloads, sse(payloads), expected, fragments=True)


def ollama_stream(label: str, calls: int, seed: int) -> Scenario:
    """Ollama's native API: whole calls, one per NDJSON line, all at function.index 0."""
    rng = random.Random(seed)
    values = [argument_value(100, rng) | {"n": k} for k in range(calls)]
    payloads: list[dict[str, Any]] = [
        {
            "message": {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"index": 0, "name": "t", "arguments": v}}],
            },
            "done": False,
        }
        for v in values
    ]
    payloads.append({"message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"})
    return Scenario(label, "ollama", payloads, ndjson(payloads), [(None, "t", v) for v in values])


def synthetic(quick: bool) -> list[Scenario]:
    kb = 1024
    out = [openai_stream(f"openai 3 calls x {s} B", 3, s, s) for s in ([100, kb] if quick else [100, kb, 16 * kb])]
    out.append(openai_stream("openai 1 call x 1 KB", 1, kb, 21))
    if not quick:
        out.append(openai_stream("openai 1 call x 256 KB", 1, 256 * kb, 22))
        out.append(file_write_stream("openai 1 call, 256 KB string", 256 * kb, 4))
    for n in (10, 100) if quick else (10, 1000, 10000):
        out.append(small_calls(f"openai {n} tiny calls", n))
    size, tag = (kb, "1 KB") if quick else (16 * kb, "16 KB")
    out.append(anthropic_stream(f"anthropic 2 calls x {tag}", 2, size, 7))
    out.append(gemini_whole_calls("gemini whole calls, part 0", 20 if quick else 200, 3))
    out.append(vertex_stream(f"vertex partialArgs 2 calls x {tag}", 2, size, 11))
    out.append(responses_stream(f"responses 2 calls x {tag}", 2, size, 5))
    out.append(bedrock_stream(f"bedrock 2 calls x {tag}", 2, size, 6))
    out.append(cohere_stream(f"cohere 2 calls x {tag}", 2, size, 8))
    out.append(ollama_stream("ollama whole calls, index 0", 20 if quick else 200, 9))
    return out


# -- captures ---------------------------------------------------------------------------------------


def capture_files() -> list[Path]:
    """Every stream a capture meta lists (a decoded copy beside a binary one counts as a stream)."""
    if not CAPTURES.is_dir():
        return []
    found = []
    for folder in sorted(p for p in CAPTURES.iterdir() if p.is_dir() and p.name in PROVIDER_OF_SHAPE):
        for meta in sorted(folder.glob("*.meta.json")):
            names = json.loads(meta.read_text())["capture_files"]
            found += [folder / name for name in names if not name.endswith(".decoded.jsonl") or len(names) > 1]
    return found


def _meta(stream: Path) -> dict[str, Any]:
    stems = [m.name.removesuffix(".meta.json") for m in stream.parent.glob("*.meta.json")]
    stem = max((s for s in stems if stream.name.startswith(s + ".")), key=len)
    data: dict[str, Any] = json.loads((stream.parent / f"{stem}.meta.json").read_text())
    return data


def payloads_of(wire: bytes) -> list[dict[str, Any]]:
    """A capture's event payloads, parsed with the project's own framing (outside any timing)."""
    from fsm.wire.framing import DONE, detect_framing, make_framer

    framing = detect_framing(wire)
    if framing is None:
        raise ValueError("framing not recognised")
    framer = make_framer(framing, 1 << 30)
    texts = [*framer.feed(wire), *framer.close()]
    return [json.loads(t) for t in texts if t.strip() != DONE]


def captures() -> tuple[list[Scenario], str | None]:
    """The captures as scenarios, or none and the reason."""
    files = capture_files()
    if not files:
        return [], f"no captures at {CAPTURES}"
    out = []
    for path in files:
        meta = _meta(path)
        wire = path.read_bytes()
        expected: list[Call] = [(c["id"], c["name"], c["arguments"]) for c in meta["expected_tool_calls"]]
        label = f"capture {path.parent.name}/{path.name}"
        out.append(
            Scenario(label, PROVIDER_OF_SHAPE[path.parent.name], payloads_of(wire), wire, expected, capture=True)
        )
    return out, None
