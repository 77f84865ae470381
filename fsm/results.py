"""What the engine gives back: output events while streaming, and the final result."""

from __future__ import annotations

import enum
from typing import Any

import attrs


class CallStatus(enum.Enum):
    COMPLETE = "complete"
    """The arguments closed and parsed strictly to a JSON object (a freeform call: the provider
    said its input is whole)."""
    INVALID = "invalid"
    """The provider finished the call but its text is not a JSON object; the raw text is kept."""
    TRUNCATED = "truncated"
    """The stream stopped before the arguments or input completed; the raw text is kept."""


@attrs.frozen(slots=True)
class ToolCall:
    index: int
    """Position in the turn (0, 1, ...): unique, and the index used in re-emitted deltas."""
    id: str
    """Unique within the turn (and against ``taken`` ids): the wire id, renamed or synthesized."""
    wire_id: str | None
    """The id the wire gave for this call, if any (a Responses call's ``call_id``)."""
    name: str | None
    """The tool's name; for a built-in tool item, the tool (``apply_patch``, ``shell``, ...)."""
    arguments: Any
    """The parsed arguments when status is complete, else None; for a built-in tool item, its
    ``operation`` or ``action`` object. None for a freeform call."""
    arguments_json: str | None
    """The raw argument text as assembled (``{}`` when policy empty_arguments supplied it); None
    for a freeform call."""
    status: CallStatus
    thought_signature: str | None = None
    """The provider's signature for this call (Gemini), to send back with it when replaying."""
    type: str = "function"
    """What kind of call: ``function`` (JSON arguments), ``custom`` (freeform input), or the item
    type of a built-in tool (``apply_patch_call``, ``shell_call``, ``local_shell_call``,
    ``computer_call``; for server calls ``mcp_call``, ``web_search_call``, ...)."""
    input: str | None = None
    """A freeform call's input text, as assembled (raw when truncated); None for other calls."""


@attrs.frozen(slots=True)
class Diagnostic:
    event: int | None
    """1-based number of the wire event that caused it; None when it arose at the end."""
    code: str
    message: str


@attrs.frozen(slots=True)
class Result:
    provider: str
    finish_reason: str | None
    calls: tuple[ToolCall, ...]
    diagnostics: tuple[Diagnostic, ...]
    server_tool_calls: tuple[ToolCall, ...] = ()
    """Tools the provider ran itself (Anthropic ``server_tool_use``): not for the client to run."""

    def codes(self) -> list[str]:
        return [d.code for d in self.diagnostics]


@attrs.frozen(slots=True)
class CallOpened:
    """A new call was identified. Its id is final from here on."""

    index: int
    id: str
    wire_id: str | None
    name: str | None
    type: str = attrs.field(default="function", kw_only=True)
    """The call's type (see ToolCall.type): a freeform call's deltas are input text, not JSON."""


@attrs.frozen(slots=True)
class ArgumentsDelta:
    """Append-safe argument text (a freeform call's input text) for call ``index``: it will never
    be retracted."""

    index: int
    text: str


@attrs.frozen(slots=True)
class CallFinished:
    """The call is final (complete, invalid or truncated)."""

    call: ToolCall


Output = CallOpened | ArgumentsDelta | CallFinished
