"""What a turn's text and reasoning cost toolcall-fsm on every wire (a script, not a test).

    python tools/bench_talk.py [--quick] [--json FILE] [--rounds N]
    python tools/bench_talk.py --markdown FILE      # docs/performance.md's table from a --json run

Most events of a turn that talks are pieces of its text or its reasoning, and a gateway pays for
each one, so tools/bench.py's tool-call rows do not tell what a talking stream costs. Each row here
is one wire's stream of small text deltas (and, where the wire has them, reasoning deltas before
them), made the way the provider sends them (Gemini's and Ollama's every chunk carries its
metadata, Gemini's its usage). Measured as tools/bench.py measures: toolcall-fsm's text and
reasoning are checked against the expected ones before anything is timed; CPU time per event, the
median of interleaved rounds in a shuffled order, the same number of samples for each; from parsed
dicts and from wire bytes (read 16 KB at a time), each beside its floor, the simplest loop that
picks the pieces out of the events and joins them (from wire bytes it splits the lines and parses
each event too).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_streams import ndjson, sse

Pieces = tuple[list[str], list[str]]  # the text's pieces, the reasoning's pieces


def _words(rng: random.Random, n: int) -> list[str]:
    return [
        rng.choice(["Hello", " there", ", ", "state", " machine", "🙂", "\n", " café", " 東京", "."]) for _ in range(n)
    ]


def _openai(text: list[str], thought: list[str]) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": "chatcmpl-b", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice]}

    return (
        [chunk({"reasoning_content": t}) for t in thought] + [chunk({"content": t}) for t in text] + [chunk({}, "stop")]
    )


def _anthropic(text: list[str], thought: list[str]) -> list[dict[str, Any]]:
    def delta(at: int, kind: str, key: str, piece: str) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": at, "delta": {"type": kind, key: piece}}

    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude"}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {**message, "usage": {"input_tokens": 9}}}]
    events.append({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}})
    events += [delta(0, "thinking_delta", "thinking", t) for t in thought]
    events += [delta(0, "signature_delta", "signature", "c2ln"), {"type": "content_block_stop", "index": 0}]
    events.append({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}})
    events += [delta(1, "text_delta", "text", t) for t in text]
    events.append({"type": "content_block_stop", "index": 1})
    events.append({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}})
    return [*events, {"type": "message_stop"}]


def _gemini(text: list[str], thought: list[str]) -> list[dict[str, Any]]:
    def chunk(part: dict[str, Any], n: int) -> dict[str, Any]:
        usage = {"promptTokenCount": 9, "candidatesTokenCount": n, "totalTokenCount": 9 + n}
        candidate = {"content": {"role": "model", "parts": [part]}, "index": 0}
        return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "gemini-x", "responseId": "r1"}

    parts = [{"text": t, "thought": True} for t in thought] + [{"text": t} for t in text]
    events = [chunk(part, n) for n, part in enumerate(parts, 1)]
    end = {"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}
    return [*events, {"candidates": [end], "modelVersion": "gemini-x", "responseId": "r1"}]


def _responses(text: list[str], thought: list[str]) -> list[dict[str, Any]]:
    seq = iter(range(1, 1 << 30))
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
    message = {"type": "message", "id": "msg_1", "role": "assistant", "content": [], "status": "in_progress"}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": "resp_1", "output": []}}]
    events.append({"type": "response.output_item.added", "output_index": 0, "item": reasoning})
    events += [
        {"type": "response.reasoning_text.delta", "item_id": "rs_1", "output_index": 0, "content_index": 0, "delta": t}
        for t in thought
    ]
    events.append({"type": "response.output_item.added", "output_index": 1, "item": message})
    events += [
        {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": t}
        for t in text
    ]
    events.append({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "output": []}})
    return [{**e, "sequence_number": next(seq)} for e in events]


def _bedrock(text: list[str], thought: list[str]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
    events += [
        {"contentBlockDelta": {"delta": {"reasoningContent": {"text": t}}, "contentBlockIndex": 0}} for t in thought
    ]
    events.append({"contentBlockStop": {"contentBlockIndex": 0}})
    events += [{"contentBlockDelta": {"delta": {"text": t}, "contentBlockIndex": 1}} for t in text]
    return [*events, {"contentBlockStop": {"contentBlockIndex": 1}}, {"messageStop": {"stopReason": "end_turn"}}]


def _cohere(text: list[str], thought: list[str]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"type": "message-start", "id": "m1", "delta": {"message": {"role": "assistant"}}}]
    events.append(
        {"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}}
    )
    events += [{"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": t}}}} for t in text]
    events.append({"type": "content-end", "index": 0})
    return [*events, {"type": "message-end", "delta": {"finish_reason": "COMPLETE", "usage": {"tokens": {}}}}]


def _ollama(text: list[str], thought: list[str]) -> list[dict[str, Any]]:
    def line(n: int, key: str, piece: str) -> dict[str, Any]:
        message = {"role": "assistant", "content": "", key: piece}
        at = f"2026-12-04T08:{n // 60000:02d}:{n // 1000 % 60:02d}.{n % 1000:03d}4437Z"  # each line stamped anew
        return {"model": "qwen3", "created_at": at, "message": message, "done": False}

    end = {"model": "qwen3", "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"}
    said = [("thinking", t) for t in thought] + [("content", t) for t in text]
    return [line(n, key, piece) for n, (key, piece) in enumerate(said)] + [end]


WIRES: dict[str, tuple[str, Callable[[list[str], list[str]], list[dict[str, Any]]], bool]] = {
    "openai chat": ("openai-chat", _openai, True),
    "anthropic": ("anthropic", _anthropic, True),
    "gemini": ("gemini", _gemini, True),
    "openai responses": ("openai-responses", _responses, True),
    "bedrock converse": ("bedrock", _bedrock, True),
    "cohere": ("cohere", _cohere, False),
    "ollama": ("ollama", _ollama, True),
}
"""Each wire: its provider's name, how its stream is made, and whether it streams reasoning."""


def _floor_pieces(provider: str, payload: dict[str, Any], text: list[str], thought: list[str]) -> None:
    """The simplest reading of one event: its piece of text or reasoning, if it holds one."""
    if provider == "openai-chat":
        delta = payload["choices"][0]["delta"]
        if said := delta.get("content"):
            text.append(said)
        if said := delta.get("reasoning_content"):
            thought.append(said)
    elif provider == "anthropic":
        if payload["type"] == "content_block_delta":
            delta = payload["delta"]
            if delta["type"] == "text_delta":
                text.append(delta["text"])
            elif delta["type"] == "thinking_delta":
                thought.append(delta["thinking"])
    elif provider == "gemini":
        for part in payload["candidates"][0]["content"]["parts"]:
            if said := part.get("text"):
                (thought if part.get("thought") else text).append(said)
    elif provider == "openai-responses":
        if payload["type"] == "response.output_text.delta":
            text.append(payload["delta"])
        elif payload["type"] == "response.reasoning_text.delta":
            thought.append(payload["delta"])
    elif provider == "bedrock":
        if (block := payload.get("contentBlockDelta")) is not None:
            delta = block["delta"]
            if "text" in delta:
                text.append(delta["text"])
            elif "reasoningContent" in delta:
                thought.append(delta["reasoningContent"]["text"])
    elif provider == "cohere":
        if payload["type"] == "content-delta":
            text.append(payload["delta"]["message"]["content"]["text"])
    elif provider == "ollama":
        message = payload["message"]
        if said := message.get("thinking"):
            thought.append(said)
        if said := message.get("content"):
            text.append(said)


def _floor(provider: str, payloads: list[dict[str, Any]]) -> Pieces:
    text: list[str] = []
    thought: list[str] = []
    for payload in payloads:
        _floor_pieces(provider, payload, text, thought)
    return text, thought


def _floor_wire(provider: str, wire: bytes) -> Pieces:
    text: list[str] = []
    thought: list[str] = []
    for line in wire.decode("utf-8").splitlines():
        if line.startswith("data: ") or line.startswith("{"):
            _floor_pieces(provider, json.loads(line.removeprefix("data: ")), text, thought)
    return text, thought


def _fsm(provider: str, payloads: list[dict[str, Any]]) -> Pieces:
    from fsm import Reassembler

    r = Reassembler(provider)
    feed = r.feed
    for payload in payloads:
        feed(payload)
    return _said(r.close())


def _fsm_wire(provider: str, reads: list[bytes]) -> Pieces:
    from fsm import Reassembler

    r = Reassembler(provider)
    for read in reads:
        r.feed_bytes(read)
    return _said(r.close())


def _said(result: Any) -> Pieces:
    return [result.text], ["".join(block.text for block in result.reasoning)]


def rows(quick: bool) -> list[dict[str, Any]]:
    """Each wire's stream: its label, provider, payloads, wire bytes and the expected pieces."""
    made = []
    rng = random.Random(20261204)
    size = 100 if quick else 1000
    for label, (provider, make, reasons) in WIRES.items():
        text, thought = _words(rng, size), (_words(rng, size) if reasons else [])
        payloads = make(text, thought)
        wire = ndjson(payloads) if provider == "ollama" else sse(payloads)
        made.append({"label": label, "provider": provider, "payloads": payloads, "wire": wire, "want": (text, thought)})
    return made


def _runs(row: dict[str, Any]) -> dict[str, Callable[[], Pieces]]:
    provider, payloads, wire = row["provider"], row["payloads"], row["wire"]
    reads = [wire[i : i + 16384] for i in range(0, len(wire), 16384)]
    return {
        "fsm": lambda: _fsm(provider, payloads),
        "floor": lambda: _floor(provider, payloads),
        "fsm wire": lambda: _fsm_wire(provider, reads),
        "floor wire": lambda: _floor_wire(provider, wire),
    }


def _checked(row: dict[str, Any], run: Callable[[], Pieces]) -> None:
    text, thought = run()
    want_text, want_thought = row["want"]
    if "".join(text) != "".join(want_text) or "".join(thought) != "".join(want_thought):
        raise SystemExit(f"{row['label']}: the text or the reasoning read is not the one sent")


def measure(quick: bool, rounds: int) -> list[dict[str, Any]]:
    made = rows(quick)
    plan = [(row, name, run) for row in made for name, run in _runs(row).items()]
    for row, _, run in plan:
        _checked(row, run)
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(rounds):
        random.shuffle(plan)
        for row, name, run in plan:
            repeat = 3 if quick else 10
            start = time.process_time()
            for _ in range(repeat):
                run()
            per_event = (time.process_time() - start) / repeat / len(row["payloads"])
            times.setdefault((row["label"], name), []).append(per_event * 1e6)
    out = []
    for row in made:
        each = {name: statistics.median(times[(row["label"], name)]) for name in _runs(row)}
        out.append({"label": row["label"], "events": len(row["payloads"]), "us_per_event": each})
    return out


def markdown(report: list[dict[str, Any]]) -> str:
    lines = [
        "| Stream | Events | fsm, dicts (us/event) | fsm ÷ floor, dicts | fsm, wire (us/event) | fsm ÷ floor, wire |",
        "|---|---|---|---|---|---|",
    ]
    for row in report:
        us = row["us_per_event"]
        lines.append(
            f"| {row['label']} | {row['events']} | {us['fsm']:.2f} | {us['fsm'] / us['floor']:.2f}x"
            f" | {us['fsm wire']:.2f} | {us['fsm wire'] / us['floor wire']:.2f}x |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short streams, few rounds: a smoke test")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", metavar="FILE", help="write the measurements here")
    parser.add_argument("--markdown", metavar="FILE", help="print the table of a --json run, and measure nothing")
    args = parser.parse_args()
    if args.markdown:
        print(markdown(json.loads(Path(args.markdown).read_text(encoding="utf-8"))))
        return 0
    report = measure(args.quick, 2 if args.quick else args.rounds)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
