"""What every format's builder shares: the check of the result it is given, the id a call is answered
by, the check that a format can carry a call's type, its arguments as an object, and a tool's output
as text."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from fsm.errors import InvalidInput, LocalProtocolError
from fsm.results import CallStatus, Reasoning, Result, TextPart, ToolCall

Message = dict[str, Any]


def need(value: Any, kind: Any, what: str) -> None:
    """A caller's argument of the wrong type: InvalidInput, not an AttributeError deep inside."""
    if not isinstance(value, kind):
        raise InvalidInput(f"{what}, not {type(value).__name__}")


Kind = Literal["str", "opaque", "place"]
Fields = tuple[tuple[str, Kind], ...]


def _wrong(value: Any, kind: Kind) -> bool:
    # opaque: a signature, id or redacted data, sent back verbatim (one of another type would go out
    # as it is); place: orders the parts ("3", 2.5 or True cannot be sorted among ints, or would be
    # sorted where no part of the wire was).
    if kind == "str":
        return not isinstance(value, str)
    if value is None:
        return False
    return not isinstance(value, str) if kind == "opaque" else type(value) is not int


_SAID = {"str": "a str", "opaque": "a str or None", "place": "an int or None"}


def _fields(part: Any, where: tuple[str, int], fields: Fields) -> None:
    for name, kind in fields:
        value = getattr(part, name)
        if _wrong(value, kind):
            raise InvalidInput(
                f"result.{where[0]}[{where[1]}].{name} must be {_SAID[kind]}, not {type(value).__name__}"
            )


_CALL: Fields = (("id", "opaque"), ("reply_id", "opaque"), ("thought_signature", "opaque"), ("output_index", "place"))
_REASONING: Fields = (
    ("text", "str"),
    ("signature", "opaque"),
    ("redacted", "opaque"),
    ("item_id", "opaque"),
    ("encrypted_content", "opaque"),
    ("output_index", "place"),
    ("place", "place"),
)
_TEXT_PART: Fields = (("text", "str"), ("signature", "opaque"), ("output_index", "place"), ("place", "place"))


def check_result(result: Any) -> None:
    """Refuse, naming the field, a result whose parts a builder cannot read or would send malformed:
    a dict where a call, reasoning block or text part belongs (JSON read back by hand, not through
    fsm.serialize's converter), a status or text of another type, a signature, id or redacted data
    that is no str, a place or output index that is no int. A status read back as text would drop
    its call in silence. A message is made only for what is refused: a long turn costs a few
    attribute reads a part."""
    need(result, Result, "result must be a Result")
    need(result.text, str, "result.text must be a str")
    said: Fields = (("text_signature", "opaque"), ("text_output_index", "place"))
    for name, kind in said:
        if _wrong(getattr(result, name), kind):
            raise InvalidInput(f"result.{name} must be {_SAID[kind]}, not {type(getattr(result, name)).__name__}")
    for name in ("calls", "reasoning", "text_parts"):  # each walked below
        need(getattr(result, name), tuple | list, f"result.{name} must be a tuple")
    for n, call in enumerate(result.calls):
        if not isinstance(call, ToolCall):
            raise InvalidInput(f"result.calls[{n}] must be a ToolCall, not {type(call).__name__}")
        if not isinstance(call.status, CallStatus):
            need(call.status, CallStatus, f'call {call.index}\'s status must be a CallStatus (CallStatus("complete"))')
        _fields(call, ("calls", n), _CALL)
        if call.item is not None:  # the provider's item, read by key (a Responses call's id, a built-in's fields)
            need(call.item, Mapping, f"result.calls[{n}].item must be a dict or None")
    for n, block in enumerate(result.reasoning):
        if not isinstance(block, Reasoning):
            raise InvalidInput(f"result.reasoning[{n}] must be a Reasoning, not {type(block).__name__}")
        _fields(block, ("reasoning", n), _REASONING)
        summary = block.summary
        if not isinstance(summary, tuple | list) or not all(isinstance(said, str) for said in summary):
            raise InvalidInput(f"result.reasoning[{n}].summary must hold str only, in a tuple")
    for n, part in enumerate(result.text_parts):
        if not isinstance(part, TextPart):
            raise InvalidInput(f"result.text_parts[{n}] must be a TextPart, not {type(part).__name__}")
        _fields(part, ("text_parts", n), _TEXT_PART)


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
