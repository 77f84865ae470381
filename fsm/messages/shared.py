"""What every format's builder shares: the check of the result it is given, the id a call is answered
by, the check that a format can carry a call's type, its arguments as an object, and a tool's output
as text."""

from __future__ import annotations

import json
from typing import Any

from fsm.errors import InvalidInput, LocalProtocolError
from fsm.results import CallStatus, Reasoning, Result, TextPart, ToolCall

Message = dict[str, Any]


def need(value: Any, kind: Any, what: str) -> None:
    """A caller's argument of the wrong type: InvalidInput, not an AttributeError deep inside."""
    if not isinstance(value, kind):
        raise InvalidInput(f"{what}, not {type(value).__name__}")


def _place(value: Any, what: str) -> None:
    # A place orders the parts against each other: "3", 2.5 or True cannot be sorted among ints, or
    # would be sorted where no part of the wire was.
    if value is not None and type(value) is not int:
        raise InvalidInput(f"{what} must be an int or None, not {type(value).__name__}")


def _opaque(value: Any, what: str) -> None:
    # Signatures, redacted data, ids: sent back verbatim, so one of another type would go out as it is.
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"{what} must be a str or None, not {type(value).__name__}")


def check_result(result: Any) -> None:
    """Refuse, naming the field, a result whose parts a builder cannot read or would send malformed:
    a dict where a call, reasoning block or text part belongs (JSON read back by hand, not through
    fsm.serialize's converter), a status or text of another type, a signature, id or redacted data
    that is no str, a place or output index that is no int. A status read back as text would drop
    its call in silence."""
    need(result, Result, "result must be a Result")
    need(result.text, str, "result.text must be a str")
    _opaque(result.text_signature, "result.text_signature")
    _place(result.text_output_index, "result.text_output_index")
    for n, call in enumerate(result.calls):
        need(call, ToolCall, f"result.calls[{n}] must be a ToolCall")
        need(call.status, CallStatus, f'call {call.index}\'s status must be a CallStatus (CallStatus("complete"))')
        for field in ("id", "reply_id", "thought_signature"):
            _opaque(getattr(call, field), f"result.calls[{n}].{field}")
        _place(call.output_index, f"result.calls[{n}].output_index")
    for n, block in enumerate(result.reasoning):
        need(block, Reasoning, f"result.reasoning[{n}] must be a Reasoning")
        need(block.text, str, f"result.reasoning[{n}].text must be a str")
        for field in ("signature", "redacted", "item_id", "encrypted_content"):
            _opaque(getattr(block, field), f"result.reasoning[{n}].{field}")
        if not all(isinstance(said, str) for said in block.summary):
            raise InvalidInput(f"result.reasoning[{n}].summary must hold str only")
        _place(block.output_index, f"result.reasoning[{n}].output_index")
        _place(block.place, f"result.reasoning[{n}].place")
    for n, part in enumerate(result.text_parts):
        need(part, TextPart, f"result.text_parts[{n}] must be a TextPart")
        need(part.text, str, f"result.text_parts[{n}].text must be a str")
        _opaque(part.signature, f"result.text_parts[{n}].signature")
        _place(part.output_index, f"result.text_parts[{n}].output_index")
        _place(part.place, f"result.text_parts[{n}].place")


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
