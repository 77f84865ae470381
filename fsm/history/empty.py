"""Messages that come empty (``empty-message``): the policy no-content-is-empty.

Agents store what the model said, and a model sometimes says nothing: Claude ends a turn with no
content block (corespeed-io/zypher-agent#122), Gemini answers a function response with a content of
no parts (google-gemini/gemini-cli#317 and #554, agno-agi/agno#3317), a middleware leaves an
assistant message with nothing in it (langchain-ai/langchainjs#11113). Sent back, the next request
is refused: Anthropic "all messages must have non-empty content except for the optional final
assistant message" (anthropics/claude-code#6774), Gemini "contents.parts must not be empty",
Converse "The content field in the Message object at messages.N is empty" (theopenco/llmgateway#3127,
Portkey-AI/gateway#995), OpenAI chat "Invalid value for 'content': expected a string, got null" for
an assistant message without ``tool_calls`` (vercel/ai#14950, which also found ``""`` accepted).

The policy no-content-is-empty: a message is empty when the field its format holds content in is
missing, null or empty: Anthropic ``content`` (``""`` or ``[]``), Converse ``content``, Gemini
``parts``, and an OpenAI chat ``assistant`` message's ``content`` (null or missing only) with no
``tool_calls`` (none or ``[]``: any other value is malformed), ``function_call``, ``audio`` or
``refusal``, nor a ``tool_call_id`` (a result sent in the assistant's role: ``misplaced-result``). A
message holding any block or part is not empty, even an empty text one (Anthropic refuses that as
another error; Vertex takes a part of ``""``, langchain-ai/langchainjs#9987): nothing else is
judged. Only a message of a role its format has is empty (any other is ``unknown-role``, kept for
the caller), and never Anthropic's final assistant message, which the API takes empty (a prefill).
Ollama and Responses are not judged.

The history is read as if an empty message were gone (as repair leaves it): the neighbours its
removal brings together are one run (Anthropic), or ``user-after-user`` and
``assistant-after-assistant`` (Converse, Gemini), and repair merges them. It holds no call or
result, so none is lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fsm.history.findings import Format
from fsm.history.formats import known_role

FIELD: dict[Format, str] = {"anthropic": "content", "bedrock": "content", "gemini": "parts", "openai": "content"}
"""Where each format judged holds a message's content."""

WHY: dict[Format, str] = {
    "anthropic": (
        "a message with no content: the API takes one only as the final assistant message (400 'all"
        " messages must have non-empty content'); repair drops it"
    ),
    "bedrock": "a message with no content block: Converse refuses it (ValidationException); repair drops it",
    "gemini": "a content with no parts: Gemini refuses it (400 'contents.parts must not be empty'); repair drops it",
    "openai": (
        "an assistant message with neither content nor tool_calls: the API refuses its null content"
        " (400); repair drops it"
    ),
}
"""What an ``empty-message`` finding says, per format."""

DROPPED = "it came empty, which the API refuses"
"""What the ``dropped-empty-message`` change says of a message empty as given."""

NO_LONGER_LAST = "it came empty as the final assistant message (a prefill), and repair writes a message after it"
"""What that change says of Anthropic's empty final assistant message once repair writes a message after it."""


def blank(fmt: Format, message: Mapping[str, Any]) -> bool:
    """Is ``message`` empty as given, by the policy no-content-is-empty (wherever it sits)?"""
    field = FIELD.get(fmt)
    role = message.get("role")
    # A role the format lacks is unknown-role, kept for the caller; OpenAI wants content but beside calls
    if field is None or not (role == "assistant" if fmt == "openai" else known_role(fmt, role)):
        return False
    content = message.get(field)
    if fmt == "openai":
        # A tool_call_id makes it a result (misplaced-result, which repair moves), not an empty turn;
        # tool_calls of another type than a list are malformed, which the reader refuses.
        return (
            content is None
            and message.get("tool_calls") in (None, [])
            and not any(message.get(key) for key in ("function_call", "refusal", "tool_call_id"))
            and (message.get("audio") is None)
        )
    # Gemini parts of "" are no list: malformed (LocalProtocolError), not empty
    return content is None or content == [] or (content == "" and fmt != "gemini")


def refused(fmt: Format, message: Mapping[str, Any], at: int, total: int) -> bool:
    """Is ``message`` (0-based ``at`` of ``total``) empty as given where its format refuses it
    (``empty-message``)? Anthropic takes the final assistant message empty."""
    if fmt == "anthropic" and at == total - 1 and message.get("role") == "assistant":
        return False
    return blank(fmt, message)
