"""Reading the message formats (OpenAI chat, Anthropic, Gemini) as calls, results and turn ends."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs

from fsm.history.findings import Format


@attrs.frozen
class _Call:
    message: int
    key: str
    id: str | None
    name: str | None


@attrs.frozen
class _Result:
    message: int
    key: str


@attrs.frozen
class _TurnEnd:
    message: int


def detect_format(messages: Sequence[Mapping[str, Any]]) -> Format:
    for m in messages:
        if "parts" in m:
            return "gemini"
        if m.get("role") == "tool" or m.get("tool_calls"):
            return "openai"
        content = m.get("content")
        if isinstance(content, list) and any(
            isinstance(b, Mapping) and b.get("type") in ("tool_use", "tool_result") for b in content
        ):
            return "anthropic"
    return "openai"


def _blocks(message: Mapping[str, Any]) -> list[Any]:
    """An Anthropic message's content blocks (none when the content is a plain string)."""
    content = message.get("content")
    return content if isinstance(content, list) else []


def _calls_in(message: Mapping[str, Any], fmt: Format) -> list[tuple[str | None, str | None]]:
    if fmt == "openai":
        return [(c.get("id") or None, (c.get("function") or {}).get("name")) for c in message.get("tool_calls") or []]
    if fmt == "anthropic":
        return [(b.get("id") or None, b.get("name")) for b in _blocks(message) if b.get("type") == "tool_use"]
    calls = [p.get("functionCall") or p.get("function_call") for p in message.get("parts") or []]
    return [(c.get("id") or None, c.get("name")) for c in calls if c]


def _results_in(message: Mapping[str, Any], fmt: Format) -> list[tuple[str | None, str | None]] | None:
    """The (id, name) each result in ``message`` answers; None when it is no result message."""
    if fmt == "openai":
        return [(message.get("tool_call_id") or None, message.get("name"))] if message.get("role") == "tool" else None
    if fmt == "anthropic":
        answered: list[tuple[str | None, str | None]] = [
            (b.get("tool_use_id") or None, None) for b in _blocks(message) if b.get("type") == "tool_result"
        ]
        return answered or None
    responses = [p.get("functionResponse") or p.get("function_response") for p in message.get("parts") or []]
    found: list[tuple[str | None, str | None]] = [(r.get("id") or None, r.get("name")) for r in responses if r]
    return found or None


def _read(messages: Sequence[Mapping[str, Any]], fmt: Format) -> Iterator[_Call | _Result | _TurnEnd]:
    """Calls, results and turn ends in order. A call without an id is keyed by its name and its
    position among same-name calls of its turn, which is how Gemini pairs responses without ids."""
    turn_open = False
    nameless: dict[str, int] = {}
    answered_names: dict[str, int] = {}
    for i, message in enumerate(messages):
        results = _results_in(message, fmt)
        if results is not None:
            for rid, name in results:
                if rid is None:
                    k = answered_names.get(name or "", 0)
                    answered_names[name or ""] = k + 1
                    yield _Result(i, f"{name}#{k}")
                else:
                    yield _Result(i, rid)
            if fmt != "openai":  # Anthropic and Gemini answer a turn in one message
                yield _TurnEnd(i)
                turn_open = False
            continue
        if turn_open:
            yield _TurnEnd(i)
            turn_open = False
        calls = _calls_in(message, fmt)
        if calls:
            nameless, answered_names = {}, {}
            for cid, name in calls:
                if cid is None:
                    k = nameless.get(name or "", 0)
                    nameless[name or ""] = k + 1
                    yield _Call(i, f"{name}#{k}", None, name)
                else:
                    yield _Call(i, cid, cid, name)
            turn_open = True
    if turn_open:
        yield _TurnEnd(len(messages))
