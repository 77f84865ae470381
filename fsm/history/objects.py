"""A conversation as mappings: the SDKs' own objects read as the wire dicts they stand for.

A history is often built from them: google-genai ``Content`` and ``Part`` (a
``Part.from_function_response``), openai's response messages and Responses output items, Anthropic
content blocks in a message dict (``{"role": "assistant", "content": message.content}``), ollama's
``Message``. Those are read as the wire dicts they stand for (:func:`fsm.wire.sdk.as_mapping`), as a
message or as one entry of its ``tool_calls``, ``content`` or ``parts``; LangChain messages are
refused with the converter to use, since their fields are not any provider's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import islice
from typing import Any

from fsm.errors import InvalidInput, LocalProtocolError
from fsm.wire.sdk import as_mapping


def fail(message: int, what: str) -> LocalProtocolError:
    """The error for malformed input, naming the message (``message`` 0-based, shown 1-based)."""
    return LocalProtocolError(f"message {message + 1}: {what}")


def is_object(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)  # the exact test first: Mapping's is slow


_ENTRY_FIELDS = ("tool_calls", "content", "parts")
"""Where a message holds the entries calls and results are read from (OpenAI, Anthropic, Gemini)."""


def conversation(messages: Any) -> Sequence[Mapping[str, Any]]:
    """``messages`` as a list of message objects, SDK objects read as their wire dicts (a message
    holding none comes back as itself); LocalProtocolError when it is no conversation."""
    if isinstance(messages, (str, bytes, bytearray)) or not isinstance(messages, Sequence):
        raise LocalProtocolError(f"messages must be a list of message objects, not {type(messages).__name__}")
    plain: list[Mapping[str, Any]] | None = None
    for i, m in enumerate(messages):
        read = _message(m, i)
        if read is not m and plain is None:
            plain = list(islice(messages, i))  # copied only once some message needs reading (a deque has no slice)
        if plain is not None:
            plain.append(read)
    return messages if plain is None else plain


def _message(message: Any, at: int) -> Mapping[str, Any]:
    """A message as a mapping whose entries are mappings: itself when it is one already."""
    message = _object(message, at, "a message")
    entries: dict[str, list[Any]] = {}
    for field in _ENTRY_FIELDS:
        value = message.get(field)
        if type(value) is list and not all(is_object(entry) or isinstance(entry, str) for entry in value):
            entries[field] = [
                entry if isinstance(entry, str) else _object(entry, at, f"{field}[{j}]")
                for j, entry in enumerate(value)
            ]
    return {**message, **entries} if entries else message


def _object(value: Any, at: int, what: str) -> Mapping[str, Any]:
    if type(value) is dict or isinstance(value, Mapping):
        return value
    if hasattr(value, "additional_kwargs") and hasattr(value, "response_metadata"):
        raise fail(
            at,
            f"{what} is a LangChain {type(value).__name__}, whose fields are no provider's: convert the "
            "history with langchain_core.messages.convert_to_openai_messages first",
        )
    try:
        read: Mapping[str, Any] = as_mapping(value)
    except InvalidInput:
        raise fail(at, f"{what} must be an object, not {type(value).__name__}") from None
    except (ValueError, RecursionError) as exc:  # the SDK object refused to be written (too deep, say)
        raise fail(at, f"{what}, a {type(value).__name__}, cannot be read as its wire dict: {exc}") from None
    return read
