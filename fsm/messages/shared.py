"""What every format's builder shares: the id a call is answered by, the check that a format can
carry a call's type, its arguments as an object, and a tool's output as text."""

from __future__ import annotations

import json
from typing import Any

from fsm.errors import InvalidInput, LocalProtocolError
from fsm.results import CallStatus, ToolCall

Message = dict[str, Any]


def reply_id(call: ToolCall) -> str:
    """The id the provider pairs the call's result by: the late wire id where the call has one
    (:attr:`~fsm.results.ToolCall.reply_id`), else its id."""
    return call.reply_id or call.id


def as_text(output: Any) -> str:
    """A tool's output as the text formats send: text as it is, anything else as JSON text."""
    if isinstance(output, str):
        return output
    try:
        return json.dumps(output, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:  # bytes, an object, a cycle, nesting past the stack
        raise InvalidInput(f"a tool's output must be text or what JSON can write: {exc}") from None


def kind(call: ToolCall, format: str, kinds: tuple[str, ...] = ("function",)) -> str:
    """The call's type, where ``format`` can carry it; LocalProtocolError, never a wrong shape, elsewhere."""
    if call.type not in kinds:
        raise LocalProtocolError(
            f"call {call.id} is of type {call.type}, which {format} messages cannot carry back "
            f"(supported: {', '.join(kinds)})"
        )
    return call.type


def arguments_object(call: ToolCall) -> dict[str, Any]:
    """Arguments as an object, for formats that take one: an incomplete call's text is no object."""
    return call.arguments if call.status is CallStatus.COMPLETE and isinstance(call.arguments, dict) else {}
