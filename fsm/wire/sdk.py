"""SDK objects as wire payloads, without importing any SDK: what the official clients and the
frameworks above them yield, read by duck typing.

* raw SDK events (``ChatCompletionChunk``, Responses and Anthropic events, google-genai
  ``GenerateContentResponse``, LiteLLM's ``ModelResponseStream``): their ``model_dump()`` or
  ``to_dict()``, in wire names, without the stream helpers' ``snapshot`` (the whole text so far,
  whose dumping on every event would make a stream cost quadratic time). A model's dump holds the
  fields the SDK read from the wire (those set), an explicit null among them: the payload the wire
  sent, where null can be the value (Vertex streams a null argument as ``"nullValue": null``).
  google-genai holds a ``thoughtSignature`` as bytes and writes it in url-safe base64 (``-`` and
  ``_``), so a signature read from its objects differs in text from the wire's standard base64
  while its bytes are the same (Gemini reads either). A model nested past what pydantic writes as
  JSON (some 250 levels) is an event too deep to read: ``LimitExceeded``, as for a dict that deep;
* openai's ``chat.completions.stream()`` events: a ``chunk`` event stands for the chunk it carries;
  the ``content.*``, ``refusal.*``, ``tool_calls.*`` and ``logprobs.*`` events are derived from those
  chunks, so they are skipped (and not numbered as wire events);
* anthropic's ``messages.stream()`` adds ``text``, ``input_json``, ``citation``, ``thinking`` and
  ``signature`` events derived from the raw events it also yields: skipped, unnumbered;
* LangChain's ``AIMessageChunk``: its ``tool_call_chunks`` (index, id, name, argument fragment) are
  the OpenAI chat shape under other names, so the chunk is written as an OpenAI chat chunk, whatever
  model is behind it (read it with provider ``auto`` or ``openai-chat``). The finish reason is the
  metadata's ``finish_reason`` or ``stop_reason``, or for the Responses API, which gives neither, its
  ``status``: ``completed`` is ``stop``, ``incomplete`` at ``max_output_tokens`` is ``length``, each
  with the raw word the bytes give (``completed``, ``incomplete: max_output_tokens``).
  Through ChatAnthropic a call opens with Anthropic's ``tool_use`` block, whose ``input`` is the
  call's arguments unless argument text follows (a tool without parameters streams none), and
  LangChain yields no block ends: a tool block that no text followed gets that ``input`` once it
  has ended (a later block opened, or the turn ended whole), as the Anthropic wire gives it.
  Through ChatGoogleGenerativeAI a call's ``thoughtSignature`` is not on its chunk entry but in
  ``additional_kwargs["__gemini_function_call_thought_signatures__"]``, by call id, in standard
  base64 as the wire has it: it goes on the entry as Gemini's own OpenAI-compatible endpoint puts
  it (``extra_content.google.thought_signature``), on the chunk's first call under that id (the map
  holds one signature an id), so the call is signed as the bytes sign it. Its thought parts are
  ``thinking`` content blocks (``reasoning`` with ``output_version="v1"``) with their ``signature``
  (v1: ``extras.signature``), and a signed text part a text block with ``extras.signature``: the
  reasoning goes in LiteLLM's ``thinking_blocks`` (Claude's ``thinking`` and ``redacted_thinking``
  blocks through ChatAnthropic too; v1 holds the redacted one in a ``non_standard`` block), each
  under LangChain's block index, and the text's signature
  on the delta in the shape of a call's, which the OpenAI chat decoder reads as the text's. That
  delta keeps no block's place and one text signature a chunk: so it is written only for chunks that
  name no integration whose blocks say where they sat. ChatAnthropic's and ChatGoogleGenerativeAI's
  (``response_metadata["model_provider"]``) are read by :mod:`fsm.wire.langchain_places` instead:
  each block in its place in the turn and each signature on its part, as the bytes give them.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from fsm.errors import InvalidInput
from fsm.events import ReasoningDelta
from fsm.wire.decoders._wire import (
    COMPAT_SIGNATURE,
    SDK_FINISH_MESSAGE,
    SDK_RAW_FINISH,
    compat_signed,
    responses_incomplete,
    stop_details_said,
)
from fsm.wire.langchain_places import TURN_ENDED, LangChainStream, Said, block_signature, read_in_places
from fsm.wire.langchain_reasoning import is_responses_reasoning

DERIVED_EVENT_TYPES = frozenset(
    {
        # openai chat.completions.stream()
        "content.delta",
        "content.done",
        "refusal.delta",
        "refusal.done",
        "tool_calls.function.arguments.delta",
        "tool_calls.function.arguments.done",
        "logprobs.content.delta",
        "logprobs.content.done",
        "logprobs.refusal.delta",
        "logprobs.refusal.done",
        # anthropic messages.stream()
        "text",
        "input_json",
        "citation",
        "thinking",
        "signature",
    }
)
"""Stream-helper events that repeat what the raw events they come with already said."""


def sdk_payload(item: Any, held: LangChainStream | None = None) -> Mapping[str, Any] | None:
    """The wire payload an SDK object stands for, or None when it only repeats others. ``held`` is
    the stream's own record across its objects (see ``langchain_chunk``)."""
    if isinstance(item, Mapping):
        return item
    kind = getattr(item, "type", None)
    if isinstance(kind, str):
        if kind == "chunk" and hasattr(item, "chunk"):
            return as_mapping(item.chunk)
        if kind in DERIVED_EVENT_TYPES:
            return None
        if kind == "AIMessageChunk" and hasattr(item, "tool_call_chunks"):
            return langchain_chunk(item, held)
    return as_mapping(item)


def as_mapping(item: Any) -> Mapping[str, Any]:
    if isinstance(item, Mapping):
        return item
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        # pydantic SDK models: wire names (google-genai's camelCase aliases), JSON-safe values. The
        # fields set, not the non-None ones: dropping every None also dropped the nulls the wire sent.
        # No serializer warnings: an SDK's model holding a subclass its union does not name (openai's
        # ParsedResponseOutputMessage) is written whole all the same, and the caller can do nothing.
        try:
            value = dump(mode="json", by_alias=True, exclude_unset=True, exclude={"snapshot"}, warnings=False)
        except TypeError:
            value = dump()
        except ValueError:
            if _nests_past(dump, SERIALIZER_DEPTH):
                # pydantic's JSON serializer stops at a depth guard of its own, as a recursive walk
                # stops at the stack: the event nests too deeply to read, as a dict that deep does.
                raise RecursionError("the SDK object nests too deeply to write") from None
            raise  # any other refusal is the SDK's own, and goes up unchanged
        if isinstance(value, Mapping):
            return value
    to_dict = getattr(item, "to_dict", None)
    if callable(to_dict):
        value = to_dict()
        if isinstance(value, Mapping):
            return value
    raise InvalidInput(
        f"cannot feed a {type(item).__name__}: pass a dict, an SDK object with model_dump() or to_dict(), "
        "or an fsm event"
    )


SERIALIZER_DEPTH = 200
"""Nesting past which a model pydantic cannot write as JSON is taken to have met its serializer's
depth guard (some 250 levels of models, lists and dicts), not some other refusal."""


def _nests_past(dump: Any, limit: int) -> bool:
    """Does the model's plain dump (which has no depth guard) nest deeper than ``limit``? Walked
    without recursion; False when even that dump fails."""
    try:
        value = dump()
    except Exception:  # the original error is what the caller sees
        return False
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, Mapping):
            children: Any = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack += [(child, depth + 1) for child in children]
    return False


def langchain_chunk(chunk: Any, held: LangChainStream | None = None) -> dict[str, Any]:
    """A LangChain ``AIMessageChunk`` as the OpenAI chat chunk it mirrors. ``held`` is the stream's
    record: the ``input`` of the Anthropic tool blocks no argument text has followed yet, and for
    the integrations whose blocks keep their places (:mod:`fsm.wire.langchain_places`) the chunk's
    text and reasoning as events in ``held.said``, not in the delta. Every field is checked before
    anything is taken in: a refused chunk leaves the record as it was."""
    content = getattr(chunk, "content", None)
    if not isinstance(content, str):
        _check_langchain_field(content, list | tuple, "content", "a str or a list")
    parts = chunk.tool_call_chunks or ()
    _check_langchain_field(parts, list | tuple, "tool_call_chunks", "a list")
    for part in parts:
        _check_langchain_field(part, Mapping, "tool_call_chunks entry", "a dict")
    extra = getattr(chunk, "additional_kwargs", None) or {}
    signatures = _gemini_signatures(extra)
    usage = getattr(chunk, "usage_metadata", None)
    if usage:
        _check_langchain_field(usage, Mapping, "usage_metadata", "a dict")
    metadata = getattr(chunk, "response_metadata", None) or {}
    _check_langchain_field(metadata, Mapping, "response_metadata", "a dict")
    delta: dict[str, Any] = {}
    said: Said | None = None
    finish, word = _langchain_finish(metadata)
    if held is not None and held.reading(metadata) is not None:
        read_in_places(content, parts, held, finish)
        said = held.said
    elif isinstance(content, str):
        if content:
            delta["content"] = content
    else:  # a list of blocks (Anthropic, Gemini through LangChain)
        _langchain_blocks(content or (), delta)
        if held is not None:  # ChatOpenAI's Responses items among them
            parts = held.read_items(content or (), parts, metadata, extra, finish is not None)
    # read as the decoder reads it: not beside reasoning blocks, which are read instead
    if (
        isinstance(extra, Mapping)
        and isinstance(extra.get("reasoning_content"), str)
        and not any(type(event) is ReasoningDelta for _, event in said or ())
    ):
        delta["reasoning_content"] = extra["reasoning_content"]
    calls: list[dict[str, Any]] = []
    for part in parts:
        call = {
            "index": part.get("index"),
            "id": part.get("id"),
            "function": {"name": part.get("name"), "arguments": part.get("args")},
        }
        signature = signatures.pop(call["id"], None) if isinstance(call["id"], str) else None
        if signature is not None:
            call[COMPAT_SIGNATURE] = compat_signed(signature)
        calls.append(call)
    if held is not None:
        calls += _anthropic_inputs(content, parts, held.inputs, finish)
    if calls:
        delta["tool_calls"] = calls
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    if finish and word:
        choice[SDK_RAW_FINISH] = word
    # what it said beside a refusal: langchain-google-genai's finish_message, ChatAnthropic's stop_details
    note = metadata.get("finish_message")
    note = note if isinstance(note, str) else stop_details_said(metadata.get("stop_details"))
    if finish and note:
        choice[SDK_FINISH_MESSAGE] = note
    payload: dict[str, Any] = {"object": "chat.completion.chunk", "choices": [choice]}
    if usage:
        payload["usage"] = dict(usage)
    return payload


def _langchain_blocks(content: Any, delta: dict[str, Any]) -> None:
    """A chunk's content blocks into ``delta``: the text ones as its text, the last signature one
    carries (``extras.signature``: a Gemini text part's) in Gemini's OpenAI-compatible shape, and
    the reasoning ones (``thinking``, the ``reasoning`` of ``output_version="v1"``, Anthropic's
    ``redacted_thinking``, which v1 keeps as a ``non_standard`` block's ``value``) as LiteLLM's
    ``thinking_blocks``, each under LangChain's block index."""
    said: list[str] = []
    signed: str | None = None
    thinking: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, str):
            said.append(block)
            continue
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "non_standard":  # v1 keeps a block it has no type for as the provider wrote it
            value = block.get("value")
            if isinstance(value, Mapping) and value.get("type") == "redacted_thinking":  # ChatAnthropic's
                thinking.append(_thinking_block({**value, "index": block.get("index")}, "redacted_thinking"))
        elif kind == "text":
            # A text that is no str says nothing (its str() would be made-up text), as the decoder reads it
            if isinstance(text := block.get("text"), str):
                said.append(text)
            signed = block_signature(block) or signed
        elif kind in ("thinking", "redacted_thinking") or (
            kind == "reasoning" and "reasoning" in block and not is_responses_reasoning(block)
        ):
            # (a Responses reasoning item's pieces are read as its item: fsm.wire.langchain_reasoning)
            thinking.append(_thinking_block(block, kind))
    text = "".join(said)
    if text:
        delta["content"] = text
    if signed is not None:
        delta[COMPAT_SIGNATURE] = compat_signed(signed)
    if thinking:
        delta["thinking_blocks"] = thinking


def _thinking_block(block: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """A LangChain reasoning block as the thinking block LiteLLM writes (the OpenAI chat decoder
    reads those block by block, signatures kept)."""
    entry: dict[str, Any] = {"type": kind}
    if kind == "redacted_thinking":
        entry["data"] = block.get("data")
    else:
        entry["type"] = "thinking"
        said = block.get("thinking" if kind == "thinking" else "reasoning")
        entry["thinking"] = said if isinstance(said, str) else ""
        signature = block_signature(block)
        if signature is not None:
            entry["signature"] = signature
    if type(block.get("index")) is int:
        entry["index"] = block["index"]
    return entry


GEMINI_SIGNATURES = "__gemini_function_call_thought_signatures__"
"""The ``additional_kwargs`` key under which langchain-google-genai keeps its calls' thought
signatures, a dict from call id to the signature."""


def _gemini_signatures(extra: Any) -> dict[str, str]:
    """langchain-google-genai's thought signatures by call id, as base64 text (a signature held as
    bytes, as the SDK holds it, written so)."""
    signed = extra.get(GEMINI_SIGNATURES) if isinstance(extra, Mapping) else None
    _check_langchain_field(signed, Mapping, f"{GEMINI_SIGNATURES} entry of additional_kwargs", "a dict")
    found: dict[str, str] = {}
    for key, value in (signed or {}).items():
        _check_langchain_field(value, str | bytes, "thought signature", "a str or bytes")
        if value is not None:  # None signs nothing: that call goes unsigned
            found[key] = value if isinstance(value, str) else base64.b64encode(value).decode("ascii")
    return found


def _anthropic_inputs(content: Any, parts: Any, held: dict[int, Any], finish: str | None) -> list[dict[str, Any]]:
    """Hold the tool blocks this chunk opens, let go of those argument text came for, and give the
    held blocks that have ended their ``input`` as OpenAI chat entries (a JSON object is a call's
    whole arguments there), after the chunk's own. Anthropic sends a message's blocks one after
    another, so a block has ended once a later one opens, or at a stop reason that ends the turn."""
    blocks = (
        [b for b in content if isinstance(b, Mapping) and type(b.get("index")) is int]
        if isinstance(content, list | tuple)
        else []
    )
    for block in blocks:
        if block.get("type") == "tool_use":
            value = block.get("input")
            held[block["index"]] = value if isinstance(value, Mapping) else {}
    for part in parts:
        if part.get("args") and type(part.get("index")) is int:  # held by int index; any other is no block's
            held.pop(part["index"], None)
    latest = max((b["index"] for b in blocks), default=None)
    ended = list(held) if finish in TURN_ENDED else [at for at in held if latest is not None and at < latest]
    return [{"index": at, "function": {"arguments": dict(held.pop(at))}} for at in ended]


def _langchain_finish(metadata: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The finish reason in a chunk's ``response_metadata`` and, where the chunk holds no finish word
    of its own, the provider's word for it: the chat ``finish_reason``, Anthropic's ``stop_reason``
    (each its own word), or for the Responses API (which has neither) the response's ``status``: a
    ``completed`` turn stopped, an ``incomplete`` one as its ``incomplete_details.reason`` says,
    in the words the Responses decoder gives from the bytes (``incomplete: max_output_tokens``). A
    finish that is no str is refused here (InvalidInput), so every reader after it takes a word or None."""
    finish = metadata.get("finish_reason") or metadata.get("stop_reason")
    _check_langchain_field(finish, str, "response_metadata finish_reason or stop_reason", "a str")
    if finish or metadata.get("status") not in ("completed", "incomplete"):
        return finish, None
    if metadata["status"] == "completed":
        return "stop", "completed"
    details = metadata.get("incomplete_details")
    return responses_incomplete(details.get("reason") if isinstance(details, Mapping) else None)


def _check_langchain_field(value: Any, kind: Any, what: str, said: str) -> None:
    """Refuse a field not of ``kind`` (None passes): such a chunk is not what LangChain makes (the
    caller built or changed it), which is the caller's mistake: InvalidInput, nothing taken in."""
    if value is not None and not isinstance(value, kind):
        raise InvalidInput(f"an AIMessageChunk's {what} must be {said}, not {type(value).__name__}")
