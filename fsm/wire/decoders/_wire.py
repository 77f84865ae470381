"""Small helpers the decoders share for reading provider JSON strictly."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from fsm.errors import RemoteProtocolError, kind
from fsm.events import CallRef, ReasoningDelta, StreamEnd, TextDelta, build_call_ref, build_stream_end
from fsm.jsontext import dumps as exact_dumps
from fsm.jsontext import plain_dumps
from fsm.wire.decoders._fields import text, written
from fsm.wire.decoders.chat_reasoning import items_said, reasoning_details, thinking_blocks, unreadable


class TurnSaid(Protocol):
    """Where the decoders' shortcuts put text and reasoning: the turn's content
    (fsm.content.TurnContent, above this layer), each method doing what ``apply`` of an event does."""

    def apply(self, event: TextDelta | ReasoningDelta) -> None: ...

    def said(self, text: str, reasoning: str) -> None: ...

    def said_in_part(self, text: str, part: int, output_index: int | None) -> None: ...

    def reasoned(self, block: int | None, text: str, output_index: int | None) -> None: ...

    def usage_replaced(self, usage: dict[str, Any]) -> None: ...


def dumps(value: Any) -> str:
    """Argument objects as JSON text, keys in wire order (a replayed call keeps its bytes). A NaN or
    infinite float (Python's own parser takes them) is written as Python writes it, so the strict
    parse at the call's end refuses it; a number too long for Python's int-string conversion, or a
    ``Decimal`` (a caller's own ``parse_float=Decimal``), is written digit for digit. A value no JSON
    holds (bytes, a set: only a fed dict can carry one) is refused as a field of the wrong type is."""
    try:
        return plain_dumps(value)  # json.dumps(value, ensure_ascii=False) without its Python wrappers
    except (ValueError, TypeError):  # an integer beyond the int-string conversion limit, a Decimal
        try:
            return exact_dumps(value)
        except TypeError as exc:
            raise RemoteProtocolError(f"the arguments hold a value JSON cannot: {exc}") from None


class BareRefs:
    """Shared refs for bare continuations (an index and a position, no id or name): most events of
    a stream are such fragments, and an immutable ref can be reused instead of built again. Kept
    for the first 256 (index, position) pairs, so nothing can grow it without bound. The refs are
    immutable and depend on nothing but the pair, so every stream shares one cache
    (:data:`BARE_REFS`): a stream neither builds its own nor its first refs again. An index of the
    caller's own int class (a subclass, whose methods are its own) is neither kept nor looked up:
    kept, another stream's plain index found it equal and took it, so that stream, fed plain dicts,
    ran (and met the error of) the first stream's ``__eq__`` (audit 75)."""

    LIMIT = 256

    def __init__(self) -> None:
        self._refs: dict[tuple[int | None, int], CallRef] = {}

    def ref(self, index: int | None, position: int = 0) -> CallRef:
        if type(index) is not int and index is not None:
            return build_call_ref(index=index, position=position)
        ref = self._refs.get((index, position))
        if ref is None:
            ref = build_call_ref(index=index, position=position)
            if len(self._refs) < self.LIMIT:
                self._refs[index, position] = ref
        return ref


BARE_REFS = BareRefs()


RESPONSES_INCOMPLETE_FINISH = {"max_output_tokens": "length", "content_filter": "content_filter"}
"""A Responses turn's ``incomplete_details.reason`` as the chat finish reason that means the same."""


def responses_incomplete(reason: Any) -> tuple[str, str]:
    """An incomplete Responses turn's finish for its ``incomplete_details.reason``: the chat finish
    reason that means the same (a reason not known here: ``length``, the turn was cut) and the
    provider's word, ``incomplete: <reason>``, or ``incomplete`` alone where it gave no reason (not
    ``incomplete: None``, a word no server sent). Read by the Responses decoder, and for LangChain's
    Responses chunks by :mod:`fsm.wire.langchain_chunks`, so that both give one finish for one turn."""
    if reason is None or reason == "":
        return "length", "incomplete"
    said = written(reason)
    return RESPONSES_INCOMPLETE_FINISH.get(said, "length"), f"incomplete: {said}"


GEMINI_FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
    # google-genai FinishReason's later words, by their docstrings: the per-request token limit with
    # more to come (CONTINUATION), filters, and a response or request that was malformed
    "CONTINUATION": "length",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "MODEL_ARMOR": "content_filter",
    "MALFORMED_RESPONSE": "error",
    "MISSING_THOUGHT_SIGNATURE": "error",
    # 3.6's: the server-side tool loop stopped at its limit (its calls cut), filters, and an account the
    # Prohibited Use Policy disabled (nothing the turn can be read as, so the provider's error)
    "TOO_MANY_TOOL_CALLS": "length",
    "LANGUAGE": "content_filter",
    "ESCALATION": "content_filter",
    "PUP_LIMITED_DISABLED": "error",
}
"""Gemini's finish reasons, normalised: read by the Gemini decoder, and by :func:`chat_finish` for
a chat chunk that carries one as it is (a LangChain chunk of langchain-google-genai's)."""


CLAUDE_SERVER_CALLS = ("server_tool_use", "mcp_tool_use")
"""The Claude content blocks of a tool Anthropic runs itself (a tuple: a block's type of any value,
a list too, is looked up without hashing)."""


def server_result_block(kind: Any) -> bool:
    """Whether a Claude content block of this type is the result of a tool Anthropic ran itself
    (``web_search_tool_result``, ``code_execution_tool_result``, ``mcp_tool_result``, ...)."""
    return isinstance(kind, str) and kind.endswith("_tool_result")


CLAUDE_KEPT_BLOCKS = ("container_upload", "mcp_tool_listing", "fallback", "connector_text")
"""Claude content blocks of no call, which the turn goes back with as they came, in their place:
``container_upload`` (a file in the code execution container; ``ContainerUploadBlockParam``), the beta
``mcp_tool_listing`` (``BetaMCPToolListingBlock``: "Send the assistant message back unchanged, this
block included, so later requests use this listing instead of asking the MCP server again"), the
beta ``fallback`` (:mod:`fsm.wire.decoders._claude_fallback`) and ``connector_text`` (its deltas build it)."""


def claude_kept_block(kind: Any) -> bool:
    """Whether a Claude content block of this type is kept whole to go back with the turn: a server
    tool's result (:func:`server_result_block`) or one of :data:`CLAUDE_KEPT_BLOCKS`."""
    return server_result_block(kind) or (isinstance(kind, str) and kind in CLAUDE_KEPT_BLOCKS)


CLAUDE_FINISH = {
    "tool_use": "tool_calls",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}
"""Claude's stop reasons, normalised: read by the Anthropic decoder (and Bedrock InvokeModel's), and
by :func:`chat_finish` for a chat chunk that carries one as it is (a LangChain chunk of
ChatAnthropic's ``stop_reason``)."""


def stop_details_said(details: Any) -> str | None:
    """What ``stop_details`` says beside the stop reason (a ``refusal``'s policy category and its
    explanation), for a call the finish cuts; None when it says nothing. A note, never a reason to
    fail the stream: a field of another shape is passed over."""
    if not isinstance(details, Mapping):
        return None
    category, explanation = details.get("category"), details.get("explanation")
    said = [f"category {category}" if isinstance(category, str) and category else "", explanation]
    return "; ".join(part for part in said if isinstance(part, str) and part) or None


_CHAT_FINISH = {
    **CLAUDE_FINISH,  # the dialects that answer in Claude's words (end_turn, max_tokens), ChatAnthropic's
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "stop": "stop",
    "eos": "stop",
    "length": "length",
    "content_filter": "content_filter",
    "error": "error",
    # Bedrock Converse's own (ChatBedrockConverse's stopReason), read as the Bedrock decoder reads them
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
    "malformed_model_output": "error",
    "malformed_tool_use": "error",
}


SDK_FINISH_MESSAGE = "toolcall_fsm_finish_message"
"""The key beside a chat choice's finish reason under which :mod:`fsm.wire.langchain_chunks` puts what a LangChain
chunk said beside its finish (langchain-google-genai's ``finish_message``, ChatAnthropic's
``stop_details``): a name of this project's own, so that no server's chunk is read as carrying one."""
SDK_RAW_FINISH = "toolcall_fsm_raw_finish"
"""The key beside a chat choice's finish reason under which :mod:`fsm.wire.langchain_chunks` puts a LangChain
chunk's finish in the provider's words where the chunk holds no finish word of its own (the
Responses API's ``completed``, ``incomplete: max_output_tokens``, read from its ``status`` and
``incomplete_details``): the raw finish, as the Responses decoder gives it from the bytes."""


def chat_finish(choice: Mapping[str, Any], raw: str) -> StreamEnd:
    """A chat choice's finish reason ``raw``, normalised (the dialects' own words too: ``eos``,
    ``end_turn``, ``max_tokens``; Gemini's, as a LangChain chunk of langchain-google-genai gives
    them: ``SAFETY`` is a content filter), with what the choice says beside it: OpenRouter's
    ``native_finish_reason``, the word of the model's own provider (``MAX_TOKENS``, ``SAFETY``),
    for a call the finish cuts to say (not when it is ``raw`` again), or the message
    :mod:`fsm.wire.langchain_chunks` puts beside it under ``SDK_FINISH_MESSAGE`` (langchain-google-genai's,
    ChatAnthropic's ``stop_details``); the raw word is the one it puts under ``SDK_RAW_FINISH``
    where it put one (a LangChain Responses chunk's ``incomplete: <reason>``). Claude's words
    (ChatAnthropic's ``stop_reason``) are read as the Anthropic decoder reads them, in any case."""
    native, note = choice.get("native_finish_reason"), choice.get(SDK_FINISH_MESSAGE)
    said = f'native_finish_reason "{native}"' if type(native) is str and native and native != raw else None
    said = note if type(note) is str and note else said
    normal = _CHAT_FINISH.get(raw.lower()) or GEMINI_FINISH.get(raw) or raw.lower()
    word = choice.get(SDK_RAW_FINISH)
    return build_stream_end(normal, word if type(word) is str and word else raw, None, said)


COMPAT_SIGNATURE = "extra_content"
"""The tool-call entry key under which Gemini's OpenAI-compatible endpoint puts a call's thought
signature (``extra_content.google.thought_signature``): read by the OpenAI chat decoder, and where
:mod:`fsm.wire.langchain_chunks` writes the signature langchain-google-genai keeps beside a call."""


def compat_signature(entry: Mapping[str, Any], what: str) -> str | None:
    """The thought signature a chat tool-call entry carries in Gemini's OpenAI-compatible shape, or
    None. Another server's ``extra_content`` of another shape carries none."""
    extra = entry.get(COMPAT_SIGNATURE)
    google = extra.get("google") if isinstance(extra, Mapping) else None
    signature = google.get("thought_signature") if isinstance(google, Mapping) else None
    return text(signature, f"{what}.{COMPAT_SIGNATURE}.google.thought_signature")


def compat_signed(signature: str) -> dict[str, Any]:
    """What :func:`compat_signature` reads ``signature`` from, for a tool-call entry's extra key."""
    return {"google": {"thought_signature": signature}}


SAID_KEYS = (
    "content",
    "reasoning_content",
    "reasoning",
    "thinking_blocks",
    "reasoning_details",
    "reasoning_items",
    COMPAT_SIGNATURE,
    "provider_specific_fields",
    "refusal",
    "annotations",
    "audio",
)
"""The keys of a chat delta that carry turn content (text, reasoning, the text's signature) rather than
calls, or what the decoder alone reads (LiteLLM's provider fields, its server calls; annotations and
audio, which it reports)."""


def typed_content(content: list[Any], diagnose: Callable[[str, str], None]) -> list[TextDelta | ReasoningDelta]:
    """A chat delta's ``content`` sent as a list of typed chunks (Mistral's reasoning models): a
    ``text`` chunk (or a bare str) is text, a ``thinking`` chunk (its ``thinking`` a list of text
    chunks, or a str, as LangChain's reading takes it too) reasoning, one block a turn as
    ``reasoning_content`` is; a ``reference`` chunk names the sources the text cites and holds no
    text. Any other chunk is reported, not dropped unseen, and so is a text or thinking chunk whose
    text is of another type, or a thinking chunk holding a part of no text: reported and read past,
    as the delta's ``content`` or ``reasoning_content`` of a wrong type is (:func:`unsaid`), not
    failing the stream over its reasoning."""
    said: list[TextDelta | ReasoningDelta] = []
    for at, chunk in enumerate(content):
        kind = chunk.get("type") if isinstance(chunk, Mapping) else None
        field = "text" if kind == "text" else "thinking"
        value = chunk.get(field) if kind in ("text", "thinking") else None
        if value is not None and not isinstance(value, str) and (field == "text" or not isinstance(value, list)):
            shown = f"content[{at}], a {kind!r} chunk whose {field} is {type(value).__name__}"
            diagnose("part-not-reassembled", f"{shown}, not a {'string' if field == 'text' else 'list'}, is not read")
        elif type(chunk) is str or kind == "text":
            text = chunk if type(chunk) is str else value
            if text and type(text) is str:  # a text of another type was reported above
                said.append(TextDelta(text))
        elif kind == "thinking":
            parts: list[Any] = [] if value is None or isinstance(value, str) else value
            thought = value if isinstance(value, str) else "".join([chunk_text(part) for part in parts])
            if thought:
                said.append(ReasoningDelta(None, thought))
            if any(not _thought_part(part) for part in parts):
                diagnose("part-not-reassembled", f"content[{at}], a thinking chunk, holds a part of no text")
        elif kind != "reference":
            shown = repr(kind) if type(kind) is str else f"of no type ({type(chunk).__name__})"
            diagnose("part-not-reassembled", f"content[{at}], a chunk {shown}, is not reassembled")
    return said


def _thought_part(part: Any) -> bool:
    """Whether a part of a thinking chunk is one :func:`chunk_text` reads: a str, a text chunk with
    its text, or a reference chunk (which holds none)."""
    if type(part) is str:
        return True
    kind = part.get("type") if isinstance(part, Mapping) else None
    return kind == "reference" or (kind == "text" and type(part.get("text")) is str)


def chunk_text(part: Any) -> str:
    """The text of a chunk inside a ``thinking`` chunk: a text chunk's, or a str (a reference none)."""
    if type(part) is str:
        return part
    text = part.get("text") if isinstance(part, Mapping) and part.get("type") == "text" else None
    return text if type(text) is str else ""


def chat_said(delta: Mapping[str, Any], events: list[Any]) -> bool:
    """The text and reasoning in a delta. Reasoning comes as ``reasoning_content`` (DeepSeek, vLLM,
    LiteLLM) or ``reasoning`` (OpenRouter, Ollama and Groq's OpenAI endpoints), one block per turn,
    or as LiteLLM's ``thinking_blocks`` (its ``reasoning_items`` beside) or OpenRouter's ``reasoning_details``,
    block by block (:mod:`fsm.wire.decoders.chat_reasoning`); a Gemini text part's signature
    (fsm.wire.langchain_chunks); OpenAI's refusal, kept apart. False when the content is a list of
    typed chunks, or the content or reasoning of another type, or beside ``annotations`` or
    ``audio``: only the decoder reads those (it may need to report one)."""
    content, signed = delta.get("content"), compat_signature(delta, "delta") if COMPAT_SIGNATURE in delta else None
    if (content and type(content) is str) or signed is not None:
        events.append(TextDelta(content if type(content) is str else "", signed))
    blocks = thinking_blocks(delta["thinking_blocks"], delta) if "thinking_blocks" in delta else None
    details = delta.get("reasoning_details") if blocks is None else None
    if details is not None:  # OpenRouter's: the reasoning with its signatures (unread: the decoder reports it)
        blocks = reasoning_details(details)
    first, second = delta.get("reasoning_content"), delta.get("reasoning")
    reasoning = first if first and type(first) is str else second  # one of a wrong type hides none beside it
    odd = (content is not None and type(content) is not str) or (blocks is None and details not in (None, []))
    if blocks is not None:
        events += blocks
    else:
        if reasoning and type(reasoning) is str:
            events.append(ReasoningDelta(None, reasoning))
        # tested one by one, not by a loop: this runs for every text chunk
        odd = odd or (first is not None and type(first) is not str) or (second is not None and type(second) is not str)
    odd = ("reasoning_items" in delta and not items_said(delta, events, None)) or odd
    if "refusal" in delta and delta["refusal"] is not None:
        # refused as the Responses decoder refuses its refusal delta's: one of another type was
        # dropped without a word, and a turn that refused came out as an empty stop
        refusal = text(delta["refusal"], "delta.refusal")
        if refusal:
            events.append(TextDelta(refusal, refusal=True))
    # a search model's sources, a spoken answer (audio models): the decoder reports them
    return not odd and not delta.get("annotations") and delta.get("audio") is None


REASONING_KEYS = ("reasoning_content", "reasoning")


def unsaid(delta: Mapping[str, Any], diagnose: Callable[[str, str], None]) -> list[TextDelta | ReasoningDelta]:
    """What :func:`chat_said` left to the decoder: a ``content`` sent as typed chunks (read by
    :func:`typed_content`), and a ``content`` or reasoning of another type than text, reported
    (``part-not-reassembled``) and read past, so the calls beside it are kept. A value is judged by
    its type, empty or not (policy side-values-by-type): ``reasoning_details: ""`` is no list, said;
    the shortcut's said_beside leaves such a delta here, never passing it over."""
    content = delta.get("content")
    said = typed_content(content, diagnose) if type(content) is list else []
    if content is not None and type(content) not in (str, list):
        diagnose("part-not-reassembled", f"delta.content is {kind(content)}, not a string or list, is not read")
    read = "thinking_blocks" in delta and thinking_blocks(delta["thinking_blocks"]) is not None
    details = delta.get("reasoning_details")
    if details is not None and not read:
        why = f"delta.reasoning_details is {kind(details)}, not a list" if type(details) is not list else None
        why = why or unreadable(details)
        read = why is None and bool(details)
        if why is not None:
            diagnose("part-not-reassembled", f"{why}: the delta's reasoning is read without its details")
    items_said(delta, None, diagnose)
    for key in () if read else REASONING_KEYS:
        value = delta.get(key)
        if value is not None and type(value) is not str:
            diagnose("part-not-reassembled", f"delta.{key} is {kind(value)}, not a string, is not read")
    return said


class Held(dict[Any, Any]):
    """Blocks still open by index (LangChain's Claude blocks: no end comes, a block ends once one at
    a later index does), the int indices in a heap too: those below an index are popped from it, not
    found by a pass over all held per block (blocks at falling indices, which a hand-made chunk may
    send, stay held). A key that is no int (a block without an index) ends only with all of them."""

    __slots__ = ("heap",)

    def __init__(self) -> None:
        super().__init__()
        self.heap: list[int] = []

    def hold(self, at: Any, value: Any) -> Any:
        if type(at) is int and at not in self:  # one held is in the heap already
            heapq.heappush(self.heap, at)
        self[at] = value
        return value

    def ended(self, before: int | None) -> list[tuple[Any, Any]]:
        """Take the blocks at an index below ``before``, lowest first (None: all, as held)."""
        if before is None:
            taken, self.heap = list(self.items()), []
            self.clear()
            return taken
        taken = []
        while self.heap and self.heap[0] < before:
            if (at := heapq.heappop(self.heap)) in self:  # else let go of since
                taken.append((at, self.pop(at)))
        return taken
