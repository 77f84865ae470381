"""Provider-neutral input events: what a decoder makes of the wire, and all the engine ever sees.

Every event about a call carries a :class:`CallRef`, the identity evidence that came with it. The
registry (fsm/engine/registry.py) alone decides which call that evidence points to.
"""

from __future__ import annotations

import attrs


def _blank_to_none(value: str | None) -> str | None:
    # An empty id or name ("" from Qwen, Mistral, Gemini's OpenAI endpoint) is no evidence at all.
    return value or None


@attrs.frozen(slots=True)
class CallRef:
    """Identity evidence for one call, as the wire gave it."""

    index: int | None = None
    """The wire's index for the call (a label, not a list position), if it gave one."""
    id: str | None = attrs.field(default=None, converter=_blank_to_none)
    """The wire's id for the call, if any (an empty string counts as none)."""
    name: str | None = attrs.field(default=None, converter=_blank_to_none)
    """The tool's name, if this event carries it (an empty string counts as none)."""
    position: int = 0
    """The call's position within its wire event; used only when index and id are both absent."""
    server: bool = False
    """A tool the provider runs itself (Anthropic ``server_tool_use``): reassembled like any call,
    reported apart from the client's calls and never re-emitted as a client delta."""
    type: str = "function"
    """The call's type, as the result reports it (``function``, ``custom``, ``shell_call``, ...).
    Read once, when the call opens: a type in FREEFORM_TYPES makes a call of the slot machine's
    ``text`` input kind."""


@attrs.frozen(slots=True)
class CallSeen:
    """A call's metadata (id, name, index) with no argument text."""

    ref: CallRef
    """Which call, as far as the wire says."""
    signature: str | None = None
    """An opaque signature the provider wants replayed with the call (Gemini ``thoughtSignature``).
    Not identity: it is kept on whichever call the event lands on."""


@attrs.frozen(slots=True)
class ArgumentsFragment:
    """A piece of argument text to be appended after what the call holds."""

    ref: CallRef
    """Which call, as far as the wire says."""
    text: str
    """The fragment, as the wire sent it."""
    signature: str | None = None
    """As in :attr:`CallSeen.signature`."""


@attrs.frozen(slots=True)
class ArgumentsSnapshot:
    """The whole argument text as the provider has it now (providers that resend whole objects)."""

    ref: CallRef
    """Which call, as far as the wire says."""
    text: str
    """The whole argument text so far."""
    signature: str | None = None
    """As in :attr:`CallSeen.signature`."""
    confirms: bool = False
    """The provider's final word on arguments it streamed (OpenAI Responses ``.done``): equal text is
    expected and silent; different text replaces what was streamed, with a diagnostic."""


@attrs.frozen(slots=True)
class CallEnd:
    """The provider says this call's arguments are finished."""

    ref: CallRef
    """Which call, as far as the wire says."""


@attrs.frozen(slots=True)
class StreamEnd:
    """The provider's finish reason, normalised by the decoder: ``tool_calls``, ``stop``,
    ``length``, ``content_filter``, ``error``, or None when the stream gave none."""

    finish_reason: str | None
    """The normalised finish reason (see the class docstring)."""
    raw_finish_reason: str | None = None
    """The provider's own word for it (``STOP``, ``end_turn``, ``max_tokens``, ...)."""
    error: str | None = None
    """The provider's error message, when it ended the stream with an error event."""


Event = CallSeen | ArgumentsFragment | ArgumentsSnapshot | CallEnd | StreamEnd
EVENT_TYPES: tuple[type, ...] = (CallSeen, ArgumentsFragment, ArgumentsSnapshot, CallEnd, StreamEnd)

FREEFORM_TYPES = frozenset({"custom", "code_interpreter_call"})
"""Call types whose input is freeform text, not JSON arguments: a custom tool's input, the code a
hosted code interpreter runs."""

NORMAL_FINISHES = frozenset({"tool_calls", "stop"})
"""Finish reasons that end calls normally; any other (or none) cuts the unfinished ones."""
