"""Time fsm.history's check and repair on long conversations (a script, not a test).

    python tools/bench_history.py [MESSAGES]

CPU seconds (``time.process_time``, best of three, so other work on the machine counts less) for
conversations of MESSAGES messages (default 100,000) in each format: a clean one (every call
answered, ids unique) and one where every turn is broken (a duplicate call, a missing result, ids
reused across turns). Run it at two sizes to see that both grow linearly.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from fsm import history

T = TypeVar("T")


def conversation(fmt: str, size: int, broken: bool) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    turn = 0
    while len(messages) < size:
        ids = [f"c{turn % 50}", f"c{turn % 50}", f"d{turn % 7}"] if broken else [f"call_{turn}_0", f"call_{turn}_1"]
        answered = ids[:2] if broken and turn % 3 else ids
        if fmt == "openai":
            calls = [{"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids]
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            messages += [{"role": "tool", "tool_call_id": i, "content": "r"} for i in answered]
            messages.append({"role": "user", "content": "go on"})
        elif fmt == "anthropic":
            uses = [{"type": "tool_use", "id": i, "name": "f", "input": {}} for i in ids]
            results = [{"type": "tool_result", "tool_use_id": i, "content": "r"} for i in answered]
            messages.append({"role": "assistant", "content": uses})
            messages.append({"role": "user", "content": [*results, {"type": "text", "text": "go on"}]})
        else:
            messages.append(
                {"role": "model", "parts": [{"functionCall": {"id": i, "name": "f", "args": {}}} for i in ids]}
            )
            responses = [{"functionResponse": {"id": i, "name": "f", "response": {}}} for i in answered]
            # Gemini wants the roles to alternate and no text beside the responses: the user's next
            # words would be user-after-user (repair merges them), so the responses are the user's turn.
            messages.append({"role": "user", "parts": responses})
        turn += 1
    return messages[:size]


def best_of_three(run: Callable[[], T]) -> tuple[float, T]:
    times, out = [], None
    for _ in range(3):
        start = time.process_time()
        out = run()
        times.append(time.process_time() - start)
    assert out is not None
    return min(times), out


def main() -> None:
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    for broken in (False, True):
        for fmt in ("openai", "anthropic", "gemini"):
            messages = conversation(fmt, size, broken)
            checked, report = best_of_three(functools.partial(history.check, messages))
            repaired, (fixed, changes) = best_of_three(functools.partial(history.repair, messages))
            assert not history.check(fixed).rejected
            assert broken or not report.findings, (fmt, report.findings[:3])  # "clean" means no finding
            shape = "every turn broken" if broken else "clean"
            print(
                f"{fmt:9} {shape:17} {size} messages: check {checked:.2f} s ({len(report.findings)} findings),"
                f" repair {repaired:.2f} s ({len(changes)} changes)"
            )


if __name__ == "__main__":
    main()
