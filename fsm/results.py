"""What the engine gives back: output events while streaming, and the final result."""

from __future__ import annotations

import enum
from typing import Any, Literal

import attrs

from fsm.positional import positional


class CallStatus(enum.Enum):
    """How a call ended, as reported in :attr:`ToolCall.status`."""

    COMPLETE = "complete"
    """The arguments closed and parsed strictly to a JSON object (a freeform call: the provider
    said its input is whole)."""
    INVALID = "invalid"
    """The provider finished the call but its text is not a JSON object; the raw text is kept."""
    TRUNCATED = "truncated"
    """The stream stopped before the arguments or input completed; the raw text is kept."""


class Severity(enum.Enum):
    """How much a diagnostic matters, as ``specs/identity.toml`` declares it for each code."""

    INFO = "info"
    """Normal for some providers (Gemini has no call ids, so each gets a synthesized one): nothing to act on."""
    WARNING = "warning"
    """The result is usable but not what the provider meant to send whole (a call cut short, no
    finish reason): worth logging."""
    VIOLATION = "violation"
    """The stream broke the provider's own protocol; ``strict=True`` raises on it."""


@attrs.frozen(slots=True)
class ToolCall:
    """One reassembled tool call, final: what the caller runs (or reports as broken)."""

    index: int
    """Position in the turn (0, 1, ...): unique, and the index used in re-emitted deltas."""
    id: str
    """Unique within the turn (and against ``taken`` ids): the wire id, renamed or synthesized."""
    wire_id: str | None
    """The id the wire gave for this call, if any (a Responses call's ``call_id``)."""
    name: str | None
    """The tool's name; for a built-in tool item, the tool (``apply_patch``, ``shell``, ...). None
    only if the wire never named the call (diagnostic ``missing-name``): then the call is not
    complete, since nothing can run it (``invalid`` where its arguments parsed)."""
    arguments: Any
    """The parsed arguments when status is complete, else None; for a built-in tool item, its
    ``operation`` or ``action`` object. None for a freeform call. The call's own object (a frozen
    class, but a dict is a dict): edit a copy, as :mod:`fsm.messages` sends one (text formats send
    ``arguments_json``, which an edit of this would not change)."""
    arguments_json: str | None
    """The raw argument text as assembled (``{}`` when policy empty_arguments supplied it); None for a freeform call."""
    status: CallStatus
    """complete (``arguments`` holds the parsed object), invalid or truncated (raw text only)."""
    thought_signature: str | None = None
    """The provider's signature for this call (Gemini), to send back with it when replaying."""
    type: str = "function"
    """What kind of call: ``function`` (JSON arguments), ``custom`` (freeform input), or the item type
    of a built-in tool (``apply_patch_call``, ``shell_call``, ...; server calls ``mcp_call``, ...)."""
    input: str | None = None
    """A freeform call's input text, as assembled (raw when truncated); None for other calls."""
    item: dict[str, Any] | None = None
    """A built-in client item (``apply_patch_call``, ``shell_call``, ``local_shell_call``, ``computer_call``) as the
    provider last sent it, every field kept (``id``, ``status``, ``pending_safety_checks``, ...): what
    :mod:`fsm.messages` sends back. For a Responses function or custom call, the item's ``type`` and ``id``
    (``fc_...``: it pairs the call with the reasoning item before it), and the ``namespace`` (telling the tool from
    another group's of its name), ``caller`` and ``async`` it gave. For a Claude client call, ``type`` ``tool_use`` and
    the ``caller`` and ``toolset_name`` its block gave (None: neither). For a Claude server call, its block but its
    input, which goes back with the parsed input. None for other calls."""
    output_index: int | None = None
    """Where the call sat in the turn's output, shared with the reasoning and the text: a Responses ``output_index``,
    or a Claude content block index (Anthropic's wire, Bedrock InvokeModel's): :mod:`fsm.messages` sends them back in
    that order. A Claude tool block that came without its index (a proxy's) has the index a later event of it named,
    else one past the blocks before it. None where the wire has no such position (its index is a label, or none)."""
    reply_id: str | None = None
    """The id the next request answers the call by, where it is not :attr:`id`: the wire id of a call that opened
    before its id arrived (diagnostic ``late-id``), renamed like any repeated id if another call holds it. :attr:`id`
    stays the id handed out when the call opened, which deltas already carried; :mod:`fsm.messages` sends
    ``reply_id`` in the call and its result, so the provider gets back the id it issued. None for every other call."""


@attrs.frozen(slots=True)
class Diagnostic:
    """Something the engine noticed about the stream, under a code declared in specs/identity.toml.

    Check :attr:`severity` before alarming anyone: ``info`` codes are how some providers always
    stream (Gemini's synthesized ids, a ``stop`` finish mapped to ``tool_calls``)."""

    event: int | None
    """1-based number of the wire event that caused it; None when it arose at the end."""
    code: str
    """The diagnostic's code (the README and docs/identity.md list every code with its severity)."""
    message: str
    """What happened, in words, for logs."""
    severity: Severity = Severity.WARNING
    """The spec's severity of ``code``; the engine always sets it."""

    @property
    def violation(self) -> bool:
        """True when the stream broke its provider's protocol (what ``strict=True`` refuses)."""
        return self.severity is Severity.VIOLATION


@attrs.frozen(slots=True)
class Reasoning:
    """One block of the model's reasoning, with what the provider requires back verbatim."""

    text: str = ""
    """The thinking text (Claude ``thinking``, Gemini thoughts, a chat ``reasoning_content``, Responses')."""
    signature: str | None = None
    """Anthropic thinking ``signature`` (OpenRouter's too); Gemini ``thoughtSignature`` of a thought part."""
    redacted: str | None = None
    """Anthropic ``redacted_thinking`` data: opaque, sent back as it came."""
    item_id: str | None = None
    """The Responses reasoning item id (an OpenRouter entry's ``id``)."""
    summary: tuple[str, ...] = ()
    """The Responses reasoning summary texts."""
    encrypted_content: str | None = None
    """The Responses reasoning ``encrypted_content`` (requested with ``include``; needed when not stored)."""
    output_index: int | None = None
    """Where the reasoning item sat in the turn's output (a Responses ``output_index``, a Claude
    content block index); None elsewhere. See :attr:`ToolCall.output_index`."""
    place: int | None = None
    """Where the block sat among the turn's parts (Gemini): see :attr:`TextPart.place`. None elsewhere."""
    detail: str | None = None
    """The OpenRouter ``reasoning_details`` type it came as (``reasoning.text``, ``.summary`` in ``text``,
    ``.encrypted`` in ``encrypted_content``): it goes back to a chat server so, in ``reasoning_details``."""
    format: str | None = None
    """That entry's ``format`` (``anthropic-claude-v1``, ...), sent back with it; policy litellm-gemini-signature."""


@attrs.frozen(slots=True)
class TextPart:
    """A part of the visible text that goes back as a part of its own (Gemini: a run of text parts
    up to the one that carried a signature, or up to another part (a thought, a call); Claude: a
    text block; Responses: a message item)."""

    text: str = ""
    """The part's text."""
    signature: str | None = None
    """The ``thoughtSignature`` the part carried: it goes back on this part, with this text."""
    place: int | None = None
    """Where the part sat in the turn: a position counted over the turn's thought and text parts
    and its calls (every call, in order of first appearance), so each call takes a place no thought
    or text part holds. :mod:`fsm.messages` sends the parts and calls back in that order. None
    elsewhere."""
    output_index: int | None = None
    """Where a Claude text block or a Responses message item sat in the turn's output (its content
    block index, its ``output_index``): see :attr:`ToolCall.output_index`. None elsewhere."""
    item_id: str | None = None
    """The Responses message item's id (``msg_...``), where the stream gave one. None elsewhere."""
    status: str | None = None
    """The Responses message item's ``status`` (``completed``, ``incomplete``; ``in_progress`` for
    one the stream never ended), as the stream last gave it. None elsewhere."""
    phase: str | None = None
    """The Responses message item's ``phase`` (``commentary`` for a message between calls,
    ``final_answer``), which the models that give one want back on the message. None elsewhere."""
    citations: tuple[dict[str, Any], ...] = ()
    """The part's citations, each whole as the wire gave it, in order: a Claude text block's
    (``citations_delta``: a web search result's location with its ``encrypted_index``, a document's
    character range, ...), a Responses message's ``output_text`` annotations (``url_citation``,
    ``file_citation``, ...). They go back on the part."""
    refusal: str | None = None
    """The refusal a Responses message item carried in a ``refusal`` content part, beside its text
    or alone (its share of :attr:`Result.refusal`): it goes back in that message. None elsewhere."""
    refused_first: bool = False
    """The item's ``refusal`` part came before its ``output_text`` part: it goes back first."""


@attrs.frozen(slots=True)
class ServerToolResult:
    """The result of a tool the provider ran itself, as its block came (Anthropic
    ``web_search_tool_result``, ``web_fetch_tool_result``, ``code_execution_tool_result``,
    ``mcp_tool_result``, ...: ``block["tool_use_id"]`` names the server call it answers). The
    ``"anthropic"`` next turn sends it back in its place, after that call."""

    block: dict[str, Any]
    """The block, whole (its ``type``, ``tool_use_id`` and ``content``: search results with their
    ``encrypted_content``, a program's output, ...)."""
    output_index: int | None = None
    """Where the block sat in the turn (its content block index). See :attr:`ToolCall.output_index`."""


@attrs.frozen(slots=True)
class Compaction:
    """A ``compaction`` block (Anthropic's context management): the summary of the context before
    it, with the opaque fields that go back verbatim (``encrypted_content``, ``signature``,
    ``tool_changes``)."""

    block: dict[str, Any]
    """The block as it last came (its start, with each ``compaction_delta``'s ``content`` and
    ``encrypted_content`` set on it, as the anthropic SDK accumulates it)."""
    output_index: int | None = None
    """Where the block sat in the turn (its content block index)."""


@attrs.frozen(slots=True)
class Result:
    """What :meth:`fsm.Reassembler.close` returns: the turn's calls, its finish reason (normalised,
    and in the provider's own words) and diagnostics."""

    provider: str
    """The provider whose wire was decoded (detected, or as named)."""
    finish_reason: str | None
    """``tool_calls``, ``stop``, ``length``, ``content_filter``, ``error``, or None when the stream gave
    none; ``stop`` with calls is reported as ``tool_calls`` (diagnostic ``finish-reason-mapped``); a
    word no table of fsm's knows is the provider's word, kept to 100 characters as the raw one is.
    The provider's own word is :attr:`raw_finish_reason`, what it said beside it :attr:`finish_message`."""
    calls: tuple[ToolCall, ...]
    """The calls for the client to run, in order of first appearance."""
    diagnostics: tuple[Diagnostic, ...]
    """Everything noticed on the way, in the order it arose."""
    server_tool_calls: tuple[ToolCall, ...] = ()
    """Tools the provider ran itself (Anthropic ``server_tool_use``): not for the client to run."""
    text: str = ""
    """The assistant's visible text, all of it, in order."""
    text_signature: str | None = None
    """A signature the provider put on the text (Gemini ``thoughtSignature`` on a text part; the
    latest, where several parts were signed: :attr:`text_parts` holds each on its part)."""
    reasoning: tuple[Reasoning, ...] = ()
    """The reasoning blocks, in order, with their signatures and encrypted content."""
    usage: dict[str, Any] | None = None
    """Token usage as the provider sent it (its own keys), or None when it sent none."""
    suppressed_diagnostics: dict[str, int] = attrs.field(factory=dict, hash=False)
    """Per code, how many diagnostics were counted but not kept (past ``Limits.max_diagnostics_per_code``)."""
    text_output_index: int | None = None
    """Where the first message item or text block that carried :attr:`text` sat in the turn's
    output (a Responses ``output_index``, a Claude content block index): all the text goes back
    there. None elsewhere. See :attr:`ToolCall.output_index`."""
    text_parts: tuple[TextPart, ...] = ()
    """:attr:`text` in the parts it goes back as, where the wire keeps them apart (Gemini: each
    signature on the text it came with, each run of text in its place among the thoughts and calls;
    Claude: each text block at its content block index; Responses: each message item at its
    output_index); empty where the text is one (every other provider)."""
    raw_finish_reason: str | None = None
    """The provider's own word for the finish that stands (the first), before it was normalised into
    :attr:`finish_reason`: Gemini's ``STOP``, ``MAX_TOKENS``, ``SAFETY``, ``RECITATION`` or ``MALFORMED_FUNCTION_CALL``,
    Anthropic's ``end_turn``, ``max_tokens``, ``refusal`` or ``model_context_window_exceeded``, Bedrock's
    ``guardrail_intervened`` or ``content_filtered``, Cohere's ``MAX_TOKENS``, Ollama's ``done_reason``, a chat chunk's
    ``finish_reason`` as sent, Responses' ``completed`` or ``incomplete: <incomplete_details.reason>`` (``incomplete``
    alone when it gives no reason), and for an error its kind (policy error-kind): a Bedrock exception's name, an
    Anthropic error's ``type`` (``overloaded_error``, ``invalid_request_error``), an OpenAI chat error's ``code``, else
    its ``type`` (else an integer ``code`` as written, OpenRouter's ``502``), a Gemini error's ``status``
    (``RESOURCE_EXHAUSTED``), a Responses error's event type and its ``code`` (``response.failed: server_error``; the
    event type alone without one). None when the stream gave no finish, or an error that named no kind (a string, an
    object with only a message). At most 100 characters, then how long it was."""
    finish_message: str | None = None
    """What the provider said beside that finish, in its own words: Gemini's ``finishMessage``, a
    Claude refusal's ``stop_details`` (its category and explanation), OpenRouter's
    ``native_finish_reason`` (as ``native_finish_reason "SAFETY"``), an error's message. None when
    it said nothing. At most 1,000 characters, then how long it was."""
    refusal: str | None = None
    """What the model said to refuse, where the wire keeps a refusal apart from the text (OpenAI's ``refusal``, in a
    chat delta or a Responses message's refusal part; the finish is then ``stop``): None when it refused nothing. It
    goes back as the refusal in the ``"openai-chat"`` and ``"openai-responses"`` next turns."""
    server_tool_results: tuple[ServerToolResult, ...] = ()
    """The results of :attr:`server_tool_calls` (Anthropic's result blocks, and its container_upload, mcp_tool_listing,
    fallback and connector_text blocks, of no call; Gemini's codeExecutionResult and toolResponse parts), in order."""
    container: dict[str, Any] | None = None
    """The container the provider ran code in, as it last described it (Anthropic's code execution: its ``id`` and
    ``expires_at``), or None. The next request names it (Anthropic's ``container`` parameter: the ``id``) to go on in
    the same container, with its files; a turn continued after ``pause_turn`` must."""
    compactions: tuple[Compaction, ...] = ()
    """The summaries of the context the provider compacted in this turn (Anthropic's ``compaction``
    blocks, context management), each as it last came: the ``"anthropic"`` next turn sends each
    back in its place, as Anthropic wants, so the context stays compacted."""
    declined_calls: tuple[ToolCall, ...] = ()
    """Client calls a model made before it declined and a fallback model went on (Claude's
    ``tool_use`` blocks before the turn's last ``fallback`` block: policy fallback-declined-calls):
    not in :attr:`calls`, never to run, and not sent back (Anthropic wants neither them nor a result)."""
    provider_fields: dict[str, Any] | None = None
    """What the provider wants back as it gave it on the next request's assistant message, or None:
    LiteLLM's ``provider_specific_fields`` keys ``openai_responses_replay`` (its Responses bridge's
    record of the turn's output items, with a checksum of the message) and ``phase``, each as it last
    came (policy litellm-fields-said), and ``thought_signatures`` (the text's signature alone: policy
    litellm-thought-signatures); the ``"openai-chat"`` next turn sends them back there, where LiteLLM reads them."""
    source_provider: str | None = None
    """The provider whose model made the turn, where it is not :attr:`provider` (the wire's): a turn read through
    LangChain (chunks read as ``openai-chat``) names the one its integration reads (``Reassembler.source_provider``,
    policy langchain-source-provider). :mod:`fsm.messages` sends its signatures by it (policy signature-by-origin)."""

    @property
    def complete_calls(self) -> tuple[ToolCall, ...]:
        """The calls whose arguments completed and parsed, each with its name: the only ones safe to execute."""
        return tuple(call for call in self.calls if call.status is CallStatus.COMPLETE)

    def codes(self) -> list[str]:
        """The diagnostics' codes, in order."""
        return [d.code for d in self.diagnostics]

    def problems(self) -> tuple[Diagnostic, ...]:
        """The diagnostics worth a look: every one above ``info`` severity."""
        return tuple(d for d in self.diagnostics if d.severity is not Severity.INFO)


@attrs.frozen(slots=True)
class CallOpened:
    """A new call was identified. Its id is final from here on."""

    index: int
    """The call's position in the turn (as in :attr:`ToolCall.index`)."""
    id: str
    """The call's final id (as in :attr:`ToolCall.id`)."""
    wire_id: str | None
    """The id the wire gave, if any."""
    name: str | None
    """The tool's name, if the wire gave it yet."""
    type: str = attrs.field(default="function", kw_only=True)
    """The call's type (see ToolCall.type): a freeform call's deltas are input text, not JSON."""
    thought_signature: str | None = attrs.field(default=None, kw_only=True)
    """The call's signature (Gemini's ``thoughtSignature``) where the wire event that opened the call
    carried it, as every Gemini wire sends it: a re-emitted stream sends it on the call's first chunk
    (:class:`fsm.DeltaEmitter`). None otherwise; one that came later is on the finished call
    (:attr:`ToolCall.thought_signature`)."""


@attrs.frozen(slots=True)
class CallNamed:
    """The name of call ``index`` arrived after the call opened without one."""

    index: int
    """The call's position in the turn (as in :attr:`ToolCall.index`)."""
    name: str
    """The tool's name, as it arrived."""


@attrs.frozen(slots=True)
class ArgumentsDelta:
    """Append-safe argument text (a freeform call's input text) for call ``index``: it will never
    be retracted."""

    index: int
    """The call's position in the turn."""
    text: str
    """Text to append to what earlier deltas for this index gave."""


@attrs.frozen(slots=True)
class CallFinished:
    """The call is final (complete, invalid or truncated)."""

    call: ToolCall
    """The call as it will appear in the result."""


@attrs.frozen(slots=True)
class ContentDelta:
    """A piece of what the turn said besides its calls, as it arrived: only from a reassembler asked for
    them (``Reassembler(content_deltas=True)``), so a gateway can re-emit the text with the calls."""

    kind: Literal["text", "reasoning", "refusal"]
    """Which of the result's fields it adds to: ``text``, ``reasoning`` (a block's text) or ``refusal``."""
    text: str
    """Text to append (never empty); joined in order, a kind's pieces give the result's field."""
    block: int | None = None
    """Of a piece of reasoning, the block it adds to: its position in :attr:`Result.reasoning`.
    None for text and refusal."""


@attrs.frozen(slots=True)
class ReasoningData:
    """What a reasoning block carries besides its text, as it arrives: only from a reassembler asked
    for the content's pieces (``Reassembler(content_deltas=True)``), so a gateway can re-emit the
    signatures and encrypted data a client must send back (``DeltaEmitter(reasoning_blocks=...)``).
    Given when a piece changes any of these fields (before the piece's text, if it has any), each
    field as the block holds it then: the latest word, as :class:`Reasoning` keeps it."""

    block: int
    """The block's position in :attr:`Result.reasoning` (as :attr:`ContentDelta.block`)."""
    signature: str | None = None
    """The block's signature (see :attr:`Reasoning.signature`)."""
    redacted: str | None = None
    """Its redacted data (:attr:`Reasoning.redacted`)."""
    item_id: str | None = None
    """Its Responses item id (:attr:`Reasoning.item_id`)."""
    summary: tuple[str, ...] = ()
    """Its summary texts (:attr:`Reasoning.summary`)."""
    encrypted_content: str | None = None
    """Its encrypted content (:attr:`Reasoning.encrypted_content`)."""
    detail: str | None = None
    """The OpenRouter entry type it came as (:attr:`Reasoning.detail`)."""
    format: str | None = None
    """That entry's format (:attr:`Reasoning.format`)."""


Output = CallOpened | CallNamed | ArgumentsDelta | CallFinished | ContentDelta | ReasoningData
"""What :meth:`fsm.Reassembler.feed` returns a list of while the stream runs."""


build_tool_call = positional(ToolCall)
build_call_opened = positional(CallOpened)
build_arguments_delta = positional(ArgumentsDelta)
build_call_finished = positional(CallFinished)
build_diagnostic = positional(Diagnostic)
build_result = positional(Result)  # once per stream, but its 21 fields are most of what close() costs
