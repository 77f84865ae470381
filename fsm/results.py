"""What the engine gives back: output events while streaming, and the final result."""

from __future__ import annotations

import enum
from typing import Any

import attrs


class CallStatus(enum.Enum):
    COMPLETE = "complete"
    """The arguments closed and parsed strictly to a JSON object."""
    INVALID = "invalid"
    """The provider finished the call but its text is not a JSON object; the raw text is kept."""
    TRUNCATED = "truncated"
    """The stream stopped before the arguments completed; the raw text is kept."""


@attrs.frozen(slots=True)
class ToolCall:
    index: int
    """Position in the turn (0, 1, ...): unique, and the index used in re-emitted deltas."""
    id: str
    """Unique within the turn (and against ``taken`` ids): the wire id, renamed or synthesized."""
    wire_id: str | None
    """The id the wire gave for this call, if any."""
    name: str | None
    arguments: Any
    """The parsed arguments when status is complete, else None."""
    arguments_json: str
    """The raw argument text as assembled (``{}`` when policy empty_arguments supplied it)."""
    status: CallStatus
    thought_signature: str | None = None
    """The provider's signature for this call (Gemini), to send back with it when replaying."""


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
    suppressed_diagnostics: dict[str, int] = attrs.field(factory=dict, hash=False)
    """Per code, how many diagnostics were counted but not kept (past ``Limits.max_diagnostics_per_code``)."""

    def codes(self) -> list[str]:
        return [d.code for d in self.diagnostics]


@attrs.frozen(slots=True)
class CallOpened:
    """A new call was identified. Its id is final from here on."""

    index: int
    id: str
    wire_id: str | None
    name: str | None


@attrs.frozen(slots=True)
class ArgumentsDelta:
    """Append-safe argument text for call ``index``: it will never be retracted."""

    index: int
    text: str


@attrs.frozen(slots=True)
class CallFinished:
    """The call is final (complete, invalid or truncated)."""

    call: ToolCall


Output = CallOpened | ArgumentsDelta | CallFinished
