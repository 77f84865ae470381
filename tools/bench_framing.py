"""Framing cost grows linearly with the input, whatever the chunk sizes (a script, not a test).

    python tools/bench_framing.py [--scale N]

For each framing (SSE, NDJSON, JSON array, AWS event stream when botocore is installed) it times
``Reassembler.feed_bytes`` on two inputs at two sizes, the larger ``--scale`` times the smaller:

* whitespace before the first event, fed in 1-byte reads, against the same bytes fed whole;
* one long event (a single line, or one array element / one message) fed in 64-byte reads.

and prints the seconds and the growth ratio (large / small). Linear work gives a ratio near the
scale; a quadratic framer gives about the scale squared. The integrator's figures come from here;
unit tests (tests/test_linearity.py) check the framers' work counters instead of the clock.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from fsm import Limits, Reassembler

CHUNK = 64
LIMITS = Limits(max_event_bytes=1 << 30, max_argument_chars=1 << 30, max_stream_argument_bytes=1 << 30)


def _event(argument_bytes: int) -> dict[str, object]:
    args = json.dumps({"blob": "x" * argument_bytes})
    call = {"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": args}}
    return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": "tool_calls"}]}


def _aws_message(payload: bytes) -> bytes:
    """One AWS event-stream message (prelude, one ``:event-type`` header, payload, CRCs)."""
    import struct
    import zlib

    name, value = b":event-type", b"contentBlockDelta"
    headers = bytes([len(name)]) + name + b"\x07" + struct.pack(">H", len(value)) + value
    total = 12 + len(headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


def long_event(framing: str, size: int) -> bytes:
    if framing == "aws-eventstream":
        delta = {"contentBlockIndex": 0, "delta": {"toolUse": {"input": "x" * size}}}
        return _aws_message(json.dumps(delta).encode())
    text = json.dumps(_event(size)).encode()
    return {"sse": b"data: " + text + b"\n\n", "ndjson": text + b"\n", "json-array": b"[" + text + b"]"}[framing]


def whitespace_then_event(framing: str, size: int) -> tuple[bytes, bytes]:
    """(whitespace, the first event after it); AWS streams are binary, so they get no whitespace."""
    return b"\n" * size, long_event(framing, 10)


def seconds(feed: Callable[[Reassembler], None]) -> float:
    r = Reassembler("bedrock" if feed.__name__ == "aws" else "openai-chat", limits=LIMITS)
    start = time.perf_counter()
    feed(r)
    r.close()
    return time.perf_counter() - start


def in_pieces(data: bytes, size: int) -> Callable[[Reassembler], None]:
    def feed(r: Reassembler) -> None:
        for i in range(0, len(data), size):
            r.feed_bytes(data[i : i + size])

    return feed


def whole(data: bytes) -> Callable[[Reassembler], None]:
    def feed(r: Reassembler) -> None:
        r.feed_bytes(data)

    return feed


def framings() -> list[str]:
    """The framings to time: AWS event streams only where botocore is installed."""
    try:
        import botocore  # noqa: F401
    except ImportError:
        return ["sse", "ndjson", "json-array"]
    return ["sse", "ndjson", "json-array", "aws-eventstream"]


def growth_rows(scale: int = 4, whitespace: int = 25_000, line: int = 1_000_000) -> list[dict[str, Any]]:
    """One row per framing and input: the sizes, the seconds at each, and the growth ratio (large /
    small; linear work gives about ``scale``). The main benchmark (tools/bench.py) reports these too."""
    rows: list[dict[str, Any]] = []
    for framing in framings():
        inputs: list[tuple[str, Callable[[int], Callable[[Reassembler], None]], int]] = [
            ("long event, 64-byte reads", lambda n, f=framing: in_pieces(long_event(f, n), CHUNK), line),
        ]
        if framing != "aws-eventstream":
            inputs = [
                (
                    "whitespace first, 1-byte reads",
                    lambda n, f=framing: in_pieces(b"".join(whitespace_then_event(f, n)), 1),
                    whitespace,
                ),
                (
                    "whitespace first, whole",
                    lambda n, f=framing: whole(b"".join(whitespace_then_event(f, n))),
                    whitespace,
                ),
                *inputs,
            ]
        for label, make, small in inputs:
            feeds = [make(small), make(small * scale)]
            if framing == "aws-eventstream":
                for feed in feeds:
                    feed.__name__ = "aws"
            timings = [seconds(feed) for feed in feeds]
            rows.append(
                {
                    "framing": framing,
                    "input": label,
                    "small_bytes": small,
                    "large_bytes": small * scale,
                    "small_s": timings[0],
                    "large_s": timings[1],
                    "ratio": timings[1] / max(timings[0], 1e-9),  # never 0 s in practice; no inf in the JSON
                    "scale": scale,
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=int, default=4, help="large size / small size (default 4)")
    parser.add_argument("--whitespace", type=int, default=25_000, help="small whitespace size, bytes")
    parser.add_argument("--line", type=int, default=1_000_000, help="small long-event size, bytes")
    args = parser.parse_args()
    if "aws-eventstream" not in framings():
        print("(botocore not installed: AWS event stream skipped)")
    print(f"{'framing':<16} {'input':<34} {'small s':>9} {'large s':>9} {'ratio':>7}  (linear ~ {args.scale})")
    for row in growth_rows(args.scale, args.whitespace, args.line):
        times = f"{row['small_s']:>9.3f} {row['large_s']:>9.3f}"
        print(f"{row['framing']:<16} {row['input']:<34} {times} {row['ratio']:>7.1f}")


if __name__ == "__main__":
    main()
