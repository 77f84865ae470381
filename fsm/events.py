"""Provider-neutral input events: what a decoder makes of the wire, and all the engine ever sees.

Every event about a call carries a :class:`CallRef`, the identity evidence that came with it. The
registry (fsm/engine/registry.py) alone decides which call that evidence points to.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

from fsm.fieldcheck import fault
from fsm.positional import positional


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
    item: dict[str, Any] | None = None
    """A built-in client item as the wire has it now (Responses ``shell_call``, ...): kept whole on
    the call it lands on, the latest one winning, so the call can be sent back as the item it was
    (of a Responses function or custom call, only its ``type``, item ``id``, ``namespace``,
    ``caller`` and ``async``; of a Claude client call, its ``caller`` and ``toolset_name``)."""
    announces: bool = False
    """The provider's own announcement of a call its input already opened (a Responses item that
    comes after its input events): it belongs to the newest call at its index, even one whose value
    has closed, where a header would otherwise start the next call."""


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
    incomplete: bool = False
    """The provider ended the call but called it unfinished (a Responses item's ``status:
    "incomplete"``, or ``"in_progress"`` at its end): the call is truncated, whatever text it holds."""
    said: str = ""
    """How the provider called it unfinished, where its word is not plain "incomplete" (``with
    status in_progress``): the truncated diagnostic says so in its stead."""
    unusable: str = ""
    """Why the call, ended whole, is no call its tool can run (a built-in client tool's action
    lacking a field the tool needs, or giving one of another type); empty when it can be."""
    unmatched: str = ""
    """What to report (``part-not-reassembled``) if no call the stream opened has this id at this
    index: said by a decoder that cannot tell itself (an error's list of the calls it left
    unfinished); empty: an end that finds no call is not the decoder's to report."""
    declined: Literal["", "declined", "cut-by-decline"] = ""
    """A re-emitted stream's error listed the call as a declined model's (policy declines-read-back):
    ``declined``, or ``cut-by-decline`` where the decline cut its JSON (said so, no violation: policy
    decline-cut-waits); it is set apart in ``Result.declined_calls`` as its source set it. Empty: no such call."""


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
    message: str | None = None
    """What the provider said beside its finish, in its own words, where the wire has a place for
    it (Gemini's ``finishMessage``, on any finish): a call the finish cuts is reported with it."""


build_stream_end = positional(StreamEnd)
"""``StreamEnd(finish_reason, raw_finish_reason, error, message)``, every field by position, built
as the results are (fsm.positional): a decoder builds one for nearly every stream's finish."""


@attrs.frozen(slots=True)
class TextDelta:
    """A piece of the assistant's visible text, to be appended to what the turn said so far."""

    text: str
    signature: str | None = None
    """A signature the provider attached to a text part (Gemini ``thoughtSignature`` on a turn with
    no call): it must go back on that text."""
    output_index: int | None = None
    """The output position of the item the text belongs to (a Responses message's ``output_index``,
    an Anthropic text block's index), which orders it among the turn's reasoning and calls when it
    goes back; None where the wire has none."""
    part: int | None = None
    """Which text part the piece belongs to, where the wire's text comes in parts that go back apart
    (Gemini: a run of text parts, ended by a signed one or by any other part; Anthropic: a text
    block's index; Responses: a message item's output index); the key is shared with the
    :attr:`ReasoningDelta.block` keys of the same wire. None: the turn's one text."""
    item_id: str | None = None
    """The Responses message item's id (``msg_...``), from its ``output_item`` events: a piece with no
    text carries it (and ``status``) to its part, to go back with the message."""
    status: str | None = None
    """The Responses message item's ``status`` as its latest ``output_item`` event gave it."""
    phase: str | None = None
    """The Responses message item's ``phase`` (``commentary``, ``final_answer``) where it gave one."""
    refusal: bool = False
    """The piece is of the model's refusal (OpenAI's ``refusal``), not of its text: it is kept apart,
    as :attr:`fsm.results.Result.refusal`, and goes back as the refusal."""
    citation: dict[str, Any] | None = None
    """A citation of the text part ``part``, whole as the wire gave it (an Anthropic text block's
    ``citations_delta``, a Responses ``output_text`` annotation): it goes back on that part."""


@attrs.frozen(slots=True)
class ReasoningDelta:
    """A piece of the model's reasoning, or what must be sent back with it.

    Pieces with the same ``block`` build one reasoning block: text is appended, the other fields are
    set by whichever piece carries them. The fields are what the providers require back verbatim."""

    block: int | None
    """Which block the piece belongs to (an Anthropic content index, a Responses output index, a
    Gemini run of thought parts); None: the latest block, or a new one when there is none."""
    text: str = ""
    signature: str | None = None
    """Anthropic ``signature`` of a thinking block; Gemini ``thoughtSignature`` of a thought part."""
    redacted: str | None = None
    """Anthropic ``redacted_thinking`` data (opaque, encrypted)."""
    item_id: str | None = None
    """The Responses reasoning item id."""
    summary: tuple[str, ...] = ()
    """The Responses reasoning summary texts, as the item carried them."""
    encrypted_content: str | None = None
    """The Responses ``encrypted_content`` of a reasoning item."""
    output_index: int | None = None
    """The reasoning item's place in the turn's output (a Responses ``output_index``, an Anthropic
    content block index); see :attr:`TextDelta.output_index`."""
    detail: str | None = None
    """The ``type`` of the OpenRouter ``reasoning_details`` entry the piece came in."""
    format: str | None = None
    """That entry's ``format`` (``anthropic-claude-v1``, ``openai-responses-v1``, ...); a LiteLLM block's its
    Gemini route told (policy litellm-gemini-signature)."""


@attrs.frozen(slots=True)
class UsageReport:
    """Token usage, as the provider sent it."""

    usage: dict[str, Any]
    cumulative: bool = False
    """True when the report adds to earlier ones (Anthropic's ``message_delta`` after
    ``message_start``): its keys update what was reported; otherwise it replaces it."""


# What the decoders build for nearly every call (and usage report), built as the results are
# (fsm.positional): the same objects, by position or by name, at a third of the cost.
build_call_ref = positional(CallRef, {"id": "id or None", "name": "name or None"})  # _blank_to_none, in line
build_call_seen = positional(CallSeen)
build_arguments_fragment = positional(ArgumentsFragment)
build_arguments_snapshot = positional(ArgumentsSnapshot)
build_usage_report = positional(UsageReport)


@attrs.frozen(slots=True)
class ServerResultBlock:
    """The result block of a tool the provider ran itself (Anthropic ``web_search_tool_result``,
    ``code_execution_tool_result``, ``mcp_tool_result``, ...), whole as it came: the turn goes back
    with it, after the server call it answers (its ``tool_use_id``)."""

    block: dict[str, Any]
    output_index: int | None = None
    """Its place in the turn (the content block index)."""


@attrs.frozen(slots=True)
class HeldPiece:
    """The characters of a piece of a part that a reader holds until the part ends and comes whole
    (a Bedrock Converse server tool's result, by its ``toolResult`` deltas, then a ServerResultBlock
    at ``place``; a Responses reasoning item's summary parts through LangChain, then a
    ReasoningDelta of block ``place``). They count against ``Limits.max_content_chars`` as they
    come, so a part streamed without end stops at the limit, at the piece that passes it; the whole
    part then counts only what its pieces did not."""

    chars: int
    place: int
    reasoning: bool = False
    """The part is a reasoning item's (else a server tool's result)."""


def chars_held(value: Any) -> int:
    """What :meth:`fsm.content.TurnContent.take` counts of a JSON-like value: its strings' characters (keys too),
    and one for every other value. A list or mapping met twice (a caller's dicts may share one) is
    held once, so counted once: the walk is linear in what is held, however it is shared."""
    count, todo, seen = 0, [value], set()
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            count += str.__len__(item)  # a caller's str subclass holds its characters all the same
        elif isinstance(item, Mapping | list | tuple):
            if id(item) in seen:
                continue
            seen.add(id(item))
            count += 1
            if isinstance(item, Mapping):
                todo.extend(item.keys())
                todo.extend(item.values())
            else:
                todo.extend(item)
        else:
            count += 1
    return count


@attrs.frozen(slots=True)
class CompactionBlock:
    """A ``compaction`` block (Anthropic's context management) as it stands after its start or a
    ``compaction_delta``: the latest one at its place replaces the one before."""

    block: dict[str, Any]
    output_index: int | None = None
    """Its place in the turn (the content block index)."""


@attrs.frozen(slots=True)
class ContainerReport:
    """The container the provider ran code in, as it described it (Anthropic's code execution:
    ``id``, ``expires_at``): the next request names it to keep working in it (its files)."""

    container: dict[str, Any]


@attrs.frozen(slots=True)
class ProviderFields:
    """Fields a provider wants back as it gave them on the next request's assistant message:
    LiteLLM's ``provider_specific_fields`` keys its Responses bridge reads back
    (``openai_responses_replay``, ``phase``), its Gemini route's (``thought_signatures``, of the text's
    signature). A later piece's keys replace the earlier's."""

    fields: dict[str, Any]


TurnEvent = (
    TextDelta
    | ReasoningDelta
    | UsageReport
    | ServerResultBlock
    | HeldPiece
    | ContainerReport
    | CompactionBlock
    | ProviderFields
)
"""An event about what the turn said besides its calls (one of TURN_CONTENT_TYPES)."""
Event = CallSeen | ArgumentsFragment | ArgumentsSnapshot | CallEnd | StreamEnd | TurnEvent
TURN_CONTENT_TYPES: tuple[type, ...] = (
    TextDelta,
    ReasoningDelta,
    UsageReport,
    ServerResultBlock,
    HeldPiece,
    ContainerReport,
    CompactionBlock,
    ProviderFields,
)
"""Events about what the turn said besides its calls: accumulated by the facade, never by the engine."""
EVENT_TYPES: tuple[type, ...] = (
    CallSeen,
    ArgumentsFragment,
    ArgumentsSnapshot,
    CallEnd,
    StreamEnd,
    *TURN_CONTENT_TYPES,
)

FREEFORM_TYPES = frozenset({"custom", "code_interpreter_call", "executable_code", "program"})
"""Call types whose input is freeform text, not JSON arguments: a custom tool's input, the code a
hosted code interpreter runs (OpenAI's ``code_interpreter_call``, Gemini's ``executableCode``), the
JavaScript of an OpenAI programmatic tool calling ``program``."""

NORMAL_FINISHES = frozenset({"tool_calls", "stop"})
"""Finish reasons that end calls normally; any other (or none) cuts the unfinished ones."""


def event_fault(event: Any) -> str | None:
    """Why an event the caller built cannot be taken in (a field of the wrong type, named), or
    None. Decoders make events of the declared types; a caller's event is checked against the
    same annotations (by :mod:`fsm.fieldcheck`), so a wrong value is refused before it can reach a
    lane table or a join."""
    wrong = fault(event, type(event))
    if wrong is None:
        return None
    cls, name = type(wrong.owner), wrong.field  # the event's, or its CallRef's: the field as a whole
    value, declared = getattr(wrong.owner, name), attrs.fields_dict(cls)[name].type
    expected = declared.__name__ if isinstance(declared, type) else str(declared).replace("typing.", "")
    return f"{cls.__name__}.{name} is {type(value).__name__} ({value!r:.40}), not {expected}"
