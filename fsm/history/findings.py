"""What a history check reports: the kinds of finding, one finding, the report."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Literal, Protocol

import attrs

Format = Literal["openai", "anthropic", "gemini", "responses", "ollama", "bedrock"]


class Kind(enum.Enum):
    """What is wrong with an id at some point of the conversation."""

    DANGLING = "dangling"
    """A call no result answered before its turn closed."""
    ORPHAN = "orphan"
    """A result that answers no outstanding call."""
    DUPLICATE_RESULT = "duplicate-result"
    """A second result for a call already answered."""
    DUPLICATE_CALL = "duplicate-call"
    """Two calls under one id while the first is unanswered (within a turn, usually)."""
    REUSED_UNANSWERED = "reused-unanswered"
    """An id used again although its earlier call was never answered."""
    UNUSABLE_ID = "unusable-id"
    """A Converse call or result whose ``toolUseId`` Bedrock refuses: over 64 characters, or a
    character outside ``[a-zA-Z0-9_.:-]`` (another provider's id). Repair maps it as the next turn does."""
    DECLINED_CONTENT = "declined-content"
    """An Anthropic assistant message sends back, before its last ``fallback`` block (Claude's
    server-side fallback), what a model that declined gave and Anthropic's refusals-and-fallback
    guide leaves out: a client ``tool_use`` (not to run, and no result may answer it), a
    ``thinking``, ``redacted_thinking`` or ``connector_text`` block, a server call no result in
    the message answered (policy fallback-declined-calls). The history is read without it, so a
    result sent for such a call is an ``orphan``. Repair drops it (``dropped-declined``)."""
    RESULT_AFTER_TEXT = "result-after-text"
    """A tool result after the user's text in its turn. An Anthropic tool result after text (or any
    block but a result) in its turn's user messages: the API takes a turn's results first in it; so
    too a Gemini function response after a part of another kind in the user content answering its
    turn, and a Converse tool result after a block of another kind in the user's message (or run of
    them) answering its turn (see the README for the sources). In
    any format, a result sent as results are (an OpenAI chat or Ollama ``tool`` message, a Responses
    output item, a Gemini user content, a Converse user message) after a user message of text alone
    that came between its call and it, before the model's next message: it answers the call, which
    the APIs take right after its turn's calls. Repair moves it before the text. (A Gemini response
    after text in the same user content is ``results-beside-text`` instead: Gemini wants no text
    beside them at all, and repair writes the responses in a content of their own.)"""
    MISPLACED_RESULT = "misplaced-result"
    """A tool result sent in the model's own role: an Anthropic or Converse ``assistant`` message
    holding ``tool_result``/``toolResult`` blocks, a Gemini ``model`` content holding a
    ``functionResponse``, an OpenAI chat message other than ``tool`` carrying a ``tool_call_id``, an
    Ollama one carrying a ``tool_name``. The
    APIs take results from the user (OpenAI: a ``tool`` message) alone. Repair moves it where they do.
    Also the other way round: a server tool's result block (Anthropic) in a user message, answering a
    server call of the assistant message before it, which the API takes from Claude's own message,
    after its call."""
    MISPLACED_CALL = "misplaced-call"
    """A tool call made in a message of another role than the model's: a ``user`` message carrying
    ``tool_calls``, ``tool_use``/``toolUse`` blocks or a ``functionCall`` part. Only the model's
    messages make calls. Repair moves the calls into a model message of their own right after it."""
    UNKNOWN_ROLE = "unknown-role"
    """A message whose ``role`` is not a string, or not one its format has (Anthropic and Converse:
    ``user``, ``assistant``; Gemini: ``user``, ``model``, or none). Repair cannot tell which was meant:
    it keeps the message as it is and says so; but a Gemini content of role ``function`` holding
    function responses and no call (older examples send responses so; the API refuses the role)
    becomes a ``user`` content (``function-role-to-user``)."""
    USER_AFTER_USER = "user-after-user"
    """A Converse user message, or a Gemini ``user`` content (or one without a role that makes no
    call: Gemini reads it as the user's, ``roleless-as-user``), right after another of the user's (the
    history's first two, say, the user's text after the message of results answering a turn, or a
    turn's results sent over two): Bedrock refuses the request (ValidationException: "A conversation
    must alternate between user and assistant roles"), and so does Gemini ("Please ensure that
    multiturn requests alternate between user and model", HTTP 400, NousResearch/hermes-agent#55623;
    a turn's function responses go in one content, crewAIInc/crewAI#4693). Repair merges the run into
    one user message, its blocks in order (``merged-messages``); but a Gemini turn's responses and
    the user's other parts stay apart, a placeholder model content between them (``results-beside-text``)."""
    ASSISTANT_AFTER_ASSISTANT = "assistant-after-assistant"
    """A Converse assistant message right after another assistant message: Bedrock refuses the
    request as it does user after user (langchain-aws#130); so too a Gemini ``model`` content (or one
    without a role making calls) right after another: Gemini wants user and model to alternate, and
    refuses calls right after a model content (HTTP 400 "function call turn comes immediately after a
    user turn or after a function response turn", continuedev/continue#11805). The run is read as one
    turn, its calls answered by the user's message after it; repair merges it into one message of the
    model's, its parts or blocks in order (``merged-messages``)."""
    RESULTS_BESIDE_TEXT = "results-beside-text"
    """A Gemini ``user`` content (or one of role ``function``, which repair makes one, or one without
    a role: ``roleless-as-user``) holding
    ``functionResponse`` parts and a part of any other kind: the user's text, inline data, a file.
    Gemini wants the content answering a turn to hold that turn's responses alone: with text beside
    them Gemini 3 answers HTTP 200 with an empty candidate or goes on with the text as if it were
    the response's (NousResearch/hermes-agent#68863, fixed in the merged #79791, a port of
    google-gemini/gemini-cli#28700), or refuses the request (HTTP 400 "Requests ending with a model
    turn are not supported" although it ends with the user: vellum-ai/vellum-assistant#39495; inline
    data beside the responses, vellum-ai/vellum-assistant#1901; envoyproxy/ai-gateway#2686). Reported
    once, at the content; a response after the text in it is this finding, not ``result-after-text``.
    Repair writes the responses in a user content of their own, then a model content of one text
    part (``RepairPolicy.between``, ``placeholder-model-turn``: two user contents in a row are
    refused, ``user-after-user``), then the user's other parts in a user content of their own.
    Also an Anthropic user message sending the results of client calls Claude's code execution made
    while that code waits (programmatic tool calling: each call names it its ``caller``) and holding
    anything else, or followed by more of the user's before Claude's next message (the API combines
    them): Anthropic takes only ``tool_result`` blocks there, no text even after them. Reported at
    the first such message; repair keeps it (``kept-results-beside-text``): while the code waits no
    place takes that content, which goes after Claude's next message."""
    EMPTY_MESSAGE = "empty-message"
    """A message that came with no content at all where its format refuses one (the policy
    no-content-is-empty, :mod:`fsm.history.empty`): an Anthropic message whose ``content`` is missing,
    ``""`` or ``[]`` (but the final assistant message, which the API takes empty), a Gemini content
    whose ``parts`` are missing or ``[]``, a Converse message whose ``content`` is, an OpenAI chat
    assistant message with neither ``content`` nor ``tool_calls``. Models return empty turns and agents
    store them; the APIs refuse them (HTTP 400, ValidationException). The rest of the history is read
    as if it were gone; repair drops it (``dropped-empty-message``) and merges the neighbours of one
    role that this brings together where the format wants that."""
    DUPLICATE_ITEM = "duplicate-item"
    """A Responses input item whose ``id`` an earlier item has: the API refuses the request (HTTP 400
    "Duplicate item found with id", continuedev/continue#10723), and an agent that appends a turn's
    output twice or replays a stored turn sends one (policy one-item-one-id, :mod:`fsm.history.item_ids`).
    Repair drops a later copy of a reasoning item, message or item reference equal to the earlier one,
    takes the id off any other item (the API takes those without one), and keeps a differing one for the
    caller (``kept-duplicate-item``)."""
    UNKNOWN_CALLER = "unknown-caller"
    """A Responses call item (``function_call``, a custom tool's, shell's or apply-patch call) whose
    ``caller`` names a program (``{"type": "program", "caller_id": X}``, programmatic tool calling)
    that no ``program`` item before it has as its ``call_id`` (none is reported after an
    ``item_reference``, which may stand for it): the API cannot tie the call to the code that made
    it (policy caller-program-first, :mod:`fsm.history.program_callers`); a ``program_output`` item
    whose ``call_id`` names no such program alike; and an Anthropic client ``tool_use`` whose ``caller``
    names a server call no ``server_tool_use`` before it made (policy code-call-first). Repair keeps the
    call (or output) and says so (``kept-unknown-caller``): only the caller holds that program."""
    CALL_AFTER_CODE_RESULT = "call-after-code-result"
    """An Anthropic client ``tool_use`` whose ``caller`` names (``tool_id``, programmatic tool calling)
    code execution whose result an assistant message gave before it: the code had finished, so it made
    no call after (policy no-call-after-code-result, :mod:`fsm.history.program_callers`). Repair keeps
    the call and says so (``kept-call-after-code-result``); it writes that order itself only where the
    code's result the user sent goes right after its call, no call of its message naming it."""
    MALFORMED_CALLER = "malformed-caller"
    """An Anthropic client ``tool_use`` whose ``caller`` is none the API types: not an object, a ``type``
    that is not a string or neither ``direct`` nor a code execution version, a code type without a
    ``tool_id`` string, or a ``direct`` one carrying a ``tool_id`` (policy malformed-caller-kept,
    :mod:`fsm.history.callers`); the detail names the block. It names no code: the call is read as
    Claude's own. Repair keeps it as it came and says so (``kept-malformed-caller``)."""
    REUSED = "reused"
    """An id used again by a later turn after its call was answered: allowed, reported for information."""


REJECTED = frozenset(Kind) - {Kind.REUSED}
"""Findings a strict provider refuses the request for."""


class _Walked(Protocol):
    state: str  # its state in the history machine
    call_message: int  # 1-based position of its latest call


def other_kinds_said(others: Iterable[tuple[_Walked, object]], first: bool) -> tuple[Kind, str] | None:
    """What a Responses call says under an id calls of other kinds used, each with its kind (as check
    walks them) (policy result-answers-its-kind): a ``duplicate-call`` while one waits;
    else, when it is the first call of its own kind (``first``), the use of the id again after the latest
    of them, answered (``reused``) or never (``reused-unanswered``), as after a call of its own kind: a
    ``computer_call x`` answered, then a ``function_call x``, said nothing (task 163)."""
    made = sorted((other.call_message, other.state, str(kind)) for other, kind in others if other.call_message > 0)
    if waiting := max((at for at, state, _ in made if state == "outstanding"), default=0):
        return Kind.DUPLICATE_CALL, f"a second call while the one in message {waiting} is unanswered"
    if not first or not made:
        return None
    at, state, kind = made[-1]
    if state == "dangling":
        return Kind.REUSED_UNANSWERED, f"reused, but the {kind} in message {at} was never answered"
    return Kind.REUSED, f"id reused after its {kind} (message {at}) was answered"


@attrs.frozen
class Finding:
    """One thing the history check found."""

    kind: Kind
    """What was found."""
    id: str
    """The id, or ``name#k`` for a Gemini call without one or an Ollama call (the k-th of that name in
    its turn, 1-based); ``""`` for a finding about a whole message (``unknown-role``)."""
    message: int
    """1-based position of the message where it was found (the call's message, for a dangling call)."""
    detail: str
    """What happened, in words (message positions 1-based)."""
    name: str | None = None
    """The tool name of the call under this id, when known."""


@attrs.frozen
class Report:
    """What :func:`~fsm.history.check` found in a conversation."""

    format: str | None
    """The message format read: ``openai`` (Cohere v2 messages too: theirs is that shape),
    ``anthropic``, ``gemini``, ``responses``, ``ollama`` or ``bedrock``; None for a history that tells no
    format with ``format="auto"``, which is not judged (policy auto-by-tool-content, policy
    unjudged-says-no-format: no rule of any format was applied, so none is named; ``detect_format``
    still says ``openai``, its fallback)."""
    findings: tuple[Finding, ...]
    """Every finding, in the order the messages were read."""

    @property
    def rejected(self) -> bool:
        """Would a strict provider refuse this history?"""
        return any(f.kind in REJECTED for f in self.findings)

    def of(self, kind: Kind) -> list[Finding]:
        """The findings of one kind."""
        return [f for f in self.findings if f.kind is kind]
