"""Which format a history is read in with ``format="auto"``: the policy auto-by-tool-content.

A message tells its format by what only that format's messages hold: a Responses call or output item
(its ``type``), a Gemini content (``parts``), an Ollama call whose arguments are an object or ``tool``
message answering by its ``tool_name``, OpenAI chat ``tool_calls`` or a ``tool_call_id`` (a ``tool``
message's, null too, or a result's sent in another role), Anthropic's tool blocks (Claude's server
blocks too), Converse ``toolUse``/``toolResult`` blocks. A ``tool`` message holding neither a
``tool_call_id`` nor a ``tool_name`` tells nothing: that role is one only OpenAI chat and Ollama have,
and every other format keeps such a message for the caller to name (``unknown-role``), which it is there.

The history is read in the format its first telling message tells; when it does not read in that
one (a message that format refuses: another format's block where it reads its own, a call without
the id it pairs by), in the next format a later message tells that it reads in; when it reads in
none, the first one's error is raised (``LocalProtocolError``). Where no message tells a format by
its calls, a Responses item that holds none tells Responses: a reasoning item, an item reference or
a message item of Responses content parts (``output_text``...), which carry item ids the API refuses
twice (policy one-item-one-id: a turn without calls appended twice is judged as naming
``responses`` judges it); beside another format's calls they tell nothing (a history mixing both is
read in the other's). Any other history whose messages tell no format holds no call or result of
any: there is nothing to pair, and whose rules on roles, empty messages and alternation to judge it
by cannot be told, so ``check`` finds nothing, ``repair`` changes nothing and ``anything_dangling``
is False (``detect_format`` says ``openai``, its fallback).
Name the format to have those rules judged.

That is what keeps ``check(repair(h))`` and ``repair(repair(h))`` reading ``repair``'s output as its
input was read: a repair that removes every call and result (each dangling under ``drop-call``, or an
orphan) leaves a history that tells no format, and one that keeps some keeps the format's own. Such an
output was read as OpenAI chat's, where a ``tool`` message kept for the caller to name raised ("a tool
message has no id") and Claude's empty final assistant message (a prefill) was ``empty-message``,
which a second repair dropped; and a history holding blocks of two formats was read in the format its
first telling message tells even where that format refuses it, which raised once repair had removed
the messages telling the other first. Left so: another format's malformed block (an id-less Anthropic
block in a Converse history) beside the history's own tool content, once repair removes all of that,
tells the other format alone, which refuses it (audit 60: 4 of 87,574 histories). Name the format.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from fsm.errors import LocalProtocolError
from fsm.foreign import answers_callers
from fsm.history.findings import Format
from fsm.history.formats import ANTHROPIC_CALLS, FORMATS, RESPONSES_OUTPUT_OF, RESPONSES_OUTPUTS, is_ollama
from fsm.history.objects import conversation
from fsm.history.server_blocks import converse_payload, is_server_result
from fsm.history.turns import segments

Named = Format | Literal["auto"] | None
"""What ``check`` and ``repair`` take as ``format``: a format, ``"auto"``, or None (``"auto"`` too)."""

FALLBACK: Format = "openai"
"""What :func:`detect_format` says of a history whose messages tell no format."""


@answers_callers
def detect_format(messages: Sequence[Mapping[str, Any]]) -> Format:
    """The format ``format="auto"`` reads the history in (policy auto-by-tool-content): the one the
    first message that tells a format tells (a Responses call or output item, Gemini ``parts``, an
    Ollama ``tool`` message with a ``tool_name`` and no ``tool_call_id`` or a call whose arguments are
    an object, not text, OpenAI chat ``tool_calls`` or a ``tool_call_id``, Anthropic ``tool_use``/
    ``tool_result`` blocks or server tool blocks, Bedrock Converse ``toolUse``/``toolResult`` blocks),
    or when the history does not read in it, the next a later message tells that it reads in;
    Responses where none does but a Responses item without calls is there (reasoning, an item
    reference, a message of Responses content parts); OpenAI when none is there either (then
    ``check`` finds nothing and ``repair`` changes nothing)."""
    return resolve_format(messages, "auto")[1] or FALLBACK


def resolve_format(messages: Any, format: str | None) -> tuple[Sequence[Mapping[str, Any]], Format | None]:
    """The validated conversation and its format: ``format``, or when it is ``"auto"`` the one the
    history is read in (None: its messages tell none, and there is nothing to judge). A ``format``
    of None is ``"auto"``: what ``Report.format`` says of a history it did not judge reads it again so."""
    messages = conversation(messages)
    if format is not None and format != "auto":
        for known in FORMATS:
            if format == known:
                return messages, known
        raise LocalProtocolError(f"unknown history format {format!r} (one of: auto, {', '.join(FORMATS)})")
    told = told_formats(messages) or (["responses"] if any(_said_in_responses(m) for m in messages) else [])
    if len(told) < 2:
        return messages, (told[0] if told else None)
    for fmt in told:  # a history telling two formats: the first it reads in
        if _reads(messages, fmt):
            return messages, fmt
    return messages, told[0]  # it reads in none: reading it raises the first one's error


def told_formats(messages: Sequence[Mapping[str, Any]]) -> list[Format]:
    """The formats the messages tell, each once, in the order first told."""
    told: list[Format] = []
    for message in messages:
        fmt = _tells(message)
        if fmt is not None and fmt not in told:
            told.append(fmt)
    return told


RESPONSES_SAID = frozenset({"reasoning", "item_reference"})
RESPONSES_PARTS = frozenset({"input_text", "output_text", "refusal", "input_image", "input_file", "input_audio"})


def _tells(message: Mapping[str, Any]) -> Format | None:
    """The format a message tells, if any (see the module's docstring)."""
    kind = message.get("type")
    if isinstance(kind, str) and (kind in RESPONSES_OUTPUT_OF or kind in RESPONSES_OUTPUTS):
        return "responses"
    if "parts" in message:
        return "gemini"
    if is_ollama(message):
        return "ollama"
    if message.get("tool_calls") or message.get("tool_call_id"):
        return "openai"
    if message.get("role") == "tool" and "tool_call_id" in message:  # one of null: malformed, refused there
        return "openai"
    content = message.get("content")
    if not isinstance(content, list):
        return None
    if any(
        isinstance(b, Mapping) and (b.get("type") in ANTHROPIC_CALLS or is_server_result(b.get("type")))
        for b in content
    ):
        return "anthropic"
    if any(converse_payload(b) is not None for b in content):
        return "bedrock"
    return None


def _said_in_responses(message: Mapping[str, Any]) -> bool:
    """A reasoning item, an item reference, or a message item holding a Responses content part (a
    Claude message dumped whole is of type ``message`` too, its parts ``text``): Responses items
    with no call or result, which tell the format only where no message tells one by its calls."""
    kind, content = message.get("type"), message.get("content")
    if type(kind) is str and kind in RESPONSES_SAID:  # (a type of no str may be unhashable)
        return True
    return (
        kind == "message"
        and isinstance(content, list)
        and any(isinstance(part, Mapping) and part.get("type") in RESPONSES_PARTS for part in content)
    )


def _reads(messages: Sequence[Mapping[str, Any]], fmt: Format) -> bool:
    """Does the history read in ``fmt`` (no message it refuses)?"""
    try:
        for _ in segments(messages, fmt):
            pass
    except LocalProtocolError:
        return False
    return True
