"""OpenAI chat-completions streaming (and its many "OpenAI-compatible" dialects).

``choices[0].delta.tool_calls[]`` entries become :class:`CallSeen` (no argument text),
:class:`ArgumentsFragment` (text to append) or :class:`ArgumentsSnapshot` (a server that sends the
arguments as a JSON object instead of text). Dialect quirks handled here, not in the registry:

* ``index`` missing or null, ``id``/``name`` empty strings: passed on as absent evidence;
* ``choices[].message`` duplicating ``choices[].delta`` (Writer): ``delta`` is read, ``message``
  only when there is no ``delta``;
* the legacy ``delta.function_call`` (one call, no id);
* ``finish_reason`` normalised; an ``error`` object in the stream ends it with ``error``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from fsm.errors import RemoteProtocolError
from fsm.events import (
    ArgumentsFragment,
    ArgumentsSnapshot,
    CallRef,
    CallSeen,
    Event,
    ReasoningDelta,
    StreamEnd,
    TextDelta,
    UsageReport,
)
from fsm.wire.decoders._wire import BareRefs

_FINISH = {
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "tool_use": "tool_calls",
    "stop": "stop",
    "eos": "stop",
    "end_turn": "stop",
    "length": "length",
    "max_tokens": "length",
    "content_filter": "content_filter",
    "error": "error",
}


def normalize_finish(raw: str) -> str:
    return _FINISH.get(raw.lower(), raw.lower())


class OpenAIChatDecoder:
    name = "openai-chat"

    def __init__(self) -> None:
        self._bare = BareRefs()

    def decode(self, payload: Mapping[str, Any], diagnose: Callable[[str, str], None]) -> list[Event]:
        error = payload.get("error")
        if error and not payload.get("choices"):
            message = error.get("message", error) if isinstance(error, Mapping) else error
            return [StreamEnd("error", None, str(message))]
        choices = payload.get("choices") or []
        if type(choices) is not list:
            raise RemoteProtocolError("choices is not a list")
        events: list[Event] = []
        for choice in choices:
            if type(choice) is not dict and not isinstance(choice, Mapping):
                raise RemoteProtocolError("a choice is not an object")
            if choice.get("index"):
                diagnose("choice-ignored", f"choice {choice.get('index')} is not reassembled")
                continue
            delta = choice.get("delta")
            if delta is None:
                delta = choice.get("message")
            if type(delta) is dict or isinstance(delta, Mapping):
                _said(delta, events)
                self._calls(delta, events)
            elif delta is not None:
                raise RemoteProtocolError("delta is not an object")
            finish = choice.get("finish_reason")
            if finish:
                events.append(StreamEnd(normalize_finish(str(finish)), str(finish)))
        usage = payload.get("usage")
        if usage and isinstance(usage, Mapping):
            events.append(UsageReport(dict(usage)))
        return events

    def _calls(self, delta: Mapping[str, Any], events: list[Event]) -> None:
        entries = delta.get("tool_calls")
        if entries is None:
            legacy = delta.get("function_call")
            entries = [{"function": legacy}] if isinstance(legacy, Mapping) else []
        elif type(entries) is not list and isinstance(entries, Mapping):
            entries = [entries]
        elif type(entries) is not list:
            raise RemoteProtocolError("tool_calls is not a list")
        for position, entry in enumerate(entries):
            if type(entry) is not dict and not isinstance(entry, Mapping):
                raise RemoteProtocolError(f"tool_calls[{position}] is not an object")
            function = entry.get("function") or {}
            if type(function) is not dict and not isinstance(function, Mapping):
                raise RemoteProtocolError(f"tool_calls[{position}].function is not an object")
            index, call_id, name = entry.get("index"), entry.get("id"), function.get("name")
            if type(index) is not int:
                index = _index(index, position)
            if call_id is not None or name is not None:
                ref = CallRef(index, _text(call_id, "id", position), _text(name, "name", position), position)
            else:
                ref = self._bare.ref(index, position)
            arguments = function.get("arguments")
            if type(arguments) is str:
                events.append(ArgumentsFragment(ref, arguments) if arguments else CallSeen(ref))
            elif isinstance(arguments, Mapping):
                events.append(ArgumentsSnapshot(ref, json.dumps(arguments, ensure_ascii=False)))
            elif arguments:
                events.append(ArgumentsFragment(ref, _text(arguments, "arguments", position) or ""))
            else:
                events.append(CallSeen(ref))


def _said(delta: Mapping[str, Any], events: list[Event]) -> None:
    """The text and reasoning in a delta. Reasoning comes as ``reasoning_content`` (DeepSeek, vLLM,
    LiteLLM) or ``reasoning`` (OpenRouter, Ollama and Groq's OpenAI endpoints), one block per turn."""
    content = delta.get("content")
    if content and type(content) is str:
        events.append(TextDelta(content))
    reasoning = delta.get("reasoning_content") or delta.get("reasoning")
    if reasoning and type(reasoning) is str:
        events.append(ReasoningDelta(None, reasoning))


def _index(value: Any, position: int) -> int | None:
    if value is None or type(value) is int:
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise RemoteProtocolError(f"tool_calls[{position}].index is {value!r}, not an integer")
    return value


def _text(value: Any, field: str, position: int) -> str | None:
    if value is None or type(value) is str:
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)  # some servers send numeric ids
    raise RemoteProtocolError(f"tool_calls[{position}].{field} is {type(value).__name__}, not a string")
