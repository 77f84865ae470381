"""The robustness fuzzer: arbitrary bytes and mutated events must get only the project's typed errors."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from fsm.errors import ToolcallFSMError
from fsm.harness.fuzz.shapes import CASES
from fsm.options import Limits
from fsm.reassembler import Reassembler

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
    if any(len(c.arguments_json or c.input or "") > TIGHT.max_argument_chars for c in result.calls):
        problems.append("arguments held past the size limit")
    return problems
