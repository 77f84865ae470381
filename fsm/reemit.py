"""Re-emit reassembled calls as a clean OpenAI-style chat-completions delta stream.

Downstream consumers that concatenate ``arguments`` per ``index`` get valid JSON from it: every call
has its own index (its position in the turn), its id and name are sent once, and nothing sent is
ever retracted. A freeform call (a custom tool) goes out as ``"type": "custom"`` with its text under
``custom.input``, as chat completions report custom calls; any other call keeps the ``function``
body, with its own type (``shell_call``, ...) when it is not a function. Two flush policies:

* ``incremental``: the header when a call opens, then argument text as soon as it is append-safe
  (fragments at once; snapshot text, which a later snapshot could replace, when the call finishes);
* ``on-finish``: the header with empty arguments when a call opens, the final arguments when it
  finishes.
"""

from __future__ import annotations

import enum
from typing import Any

from fsm.events import FREEFORM_TYPES
from fsm.results import ArgumentsDelta, CallFinished, CallOpened, Output, Result


class FlushPolicy(enum.Enum):
    """When :class:`DeltaEmitter` sends argument text (see the module docstring)."""

    INCREMENTAL = "incremental"
    """Text as soon as it is append-safe."""
    ON_FINISH = "on-finish"
    """A header with empty arguments when a call opens, the final arguments when it finishes."""


class DeltaEmitter:
    """Turns a :class:`~fsm.Reassembler`'s outputs into OpenAI-style ``chat.completion.chunk`` dicts.

    Feed it each list ``feed()``/``feed_bytes()`` returned, then ``drain()``'s after ``close()``, and
    end with :meth:`finish`. One emitter per stream."""

    def __init__(self, flush: FlushPolicy = FlushPolicy.INCREMENTAL) -> None:
        self.flush = flush
        """The flush policy chosen at construction."""
        self._named: set[int] = set()
        self._freeform: set[int] = set()

    def chunks(self, outputs: list[Output]) -> list[dict[str, Any]]:
        """One chunk per output that has something to send (an output may send nothing, e.g. a
        delta under ``on-finish``)."""
        out = []
        for item in outputs:
            entry = self._entry(item)
            if entry is not None:
                out.append(_chunk([entry], None))
        return out

    def finish(self, result: Result) -> dict[str, Any]:
        """The last chunk: no tool calls, the result's finish reason."""
        return _chunk(None, result.finish_reason)

    def _entry(self, item: Output) -> dict[str, Any] | None:
        if isinstance(item, CallOpened):
            body_key, text_key = "function", "arguments"
            if item.type in FREEFORM_TYPES:
                self._freeform.add(item.index)
                body_key, text_key = "custom", "input"
            body: dict[str, Any] = {text_key: ""}
            if item.name is not None:
                body["name"] = item.name
                self._named.add(item.index)
            return {"index": item.index, "id": item.id, "type": item.type, body_key: body}
        if isinstance(item, ArgumentsDelta):
            if self.flush is FlushPolicy.ON_FINISH:
                return None
            if item.index in self._freeform:
                return {"index": item.index, "custom": {"input": item.text}}
            return {"index": item.index, "function": {"arguments": item.text}}
        if isinstance(item, CallFinished):
            call = item.call
            freeform = call.index in self._freeform
            body = {}
            if call.name is not None and call.index not in self._named:
                body["name"] = call.name  # the name arrived after the header went out
            if self.flush is FlushPolicy.ON_FINISH:
                body["input" if freeform else "arguments"] = call.input if freeform else call.arguments_json
            return {"index": call.index, "custom" if freeform else "function": body} if body else None
        return None


def _chunk(tool_calls: list[dict[str, Any]] | None, finish_reason: str | None) -> dict[str, Any]:
    delta: dict[str, Any] = {"tool_calls": tool_calls} if tool_calls else {}
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
