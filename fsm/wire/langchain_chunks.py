"""LangChain's ``AIMessageChunk`` as the OpenAI chat chunk it mirrors, which :mod:`fsm.wire.sdk` hands
the reassembler in its place: its ``tool_call_chunks`` (index, id, name, argument fragment) are the
OpenAI chat shape under other names, whatever model is behind it (read it with provider ``auto`` or
``openai-chat``).

The finish reason is the metadata's ``finish_reason``, ``stop_reason``, ``done_reason``
(ChatOllama's) or ``stopReason`` (ChatBedrockConverse's), or for the Responses API, which gives
none, its ``status``: ``completed`` is ``stop``, ``incomplete`` at ``max_output_tokens`` is
``length``, each with the raw word the bytes give (``completed``, ``incomplete: max_output_tokens``).
ChatMistralAI makes up an id for an id-less entry at index 0, on every chunk: left out
(``_made_up_ids``), as the bytes have none. ChatGoogleGenerativeAI makes one up for an id-less
Gemini call, anew in each chunk: a call resent in a later chunk takes its first id and index
(:class:`fsm.wire.langchain_gemini_code.GeminiSeen`), a resend as the bytes read it; so does one
resent under Gemini's own id, and each Gemini call's arguments are read as a snapshot.
Through ChatAnthropic a call opens with Anthropic's ``tool_use`` block, whose ``input`` is the
call's arguments unless argument text follows (a tool without parameters streams none), and
LangChain yields no block ends: a tool block that no text followed gets that ``input`` once it
has ended (a later block opened, or the turn ended whole), as the Anthropic wire gives it; so does
ChatBedrockConverse's, whose value is then ``{}``. Its Claude reasoning comes as
``reasoning_content`` blocks (v1: ``reasoning`` blocks, the signature and the redacted data in
``extras``), read as the Bedrock decoder reads ``reasoningContent``.
Through ChatGoogleGenerativeAI a call's ``thoughtSignature`` is not on its chunk entry but in
``additional_kwargs["__gemini_function_call_thought_signatures__"]``, by call id, in standard
base64 as the wire has it: it goes on the entry as Gemini's own OpenAI-compatible endpoint puts
it (``extra_content.google.thought_signature``), on the chunk's first call under that id, so the
call is signed as the bytes sign it. The map holds one signature an id: under an id two calls of
the chunk carry, which one it signed is lost, so it goes on neither, reported
(:func:`fsm.wire.langchain_gemini_code.shared_signatures`). Its thought parts are
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
Claude's server tool blocks and their results in chunks that name none are told by their shapes
instead (:func:`_claude_servers`).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from fsm.errors import InvalidInput
from fsm.events import ContainerReport, Event, ReasoningDelta, ServerResultBlock
from fsm.wire.decoders._wire import (
    COMPAT_SIGNATURE,
    SDK_FINISH_MESSAGE,
    SDK_RAW_FINISH,
    Held,
    chunk_text,
    compat_signed,
    responses_incomplete,
    server_result_block,
    stop_details_said,
)
from fsm.wire.langchain_claude_v1 import client_call, skipped_blocks
from fsm.wire.langchain_gemini_code import block_signature, shared_signatures, whole_arguments
from fsm.wire.langchain_places import (
    CLAUDE_SERVER_STARTS,
    TURN_ENDED,
    LangChainStream,
    Said,
    claude_server,
    end_servers,
    place_of,
    read_in_places,
)
from fsm.wire.langchain_reasoning import is_responses_reasoning


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
        if held.wire == "anthropic":
            held.claude_top = skipped_blocks(content, parts, held.claude_top, held.notes)
    elif isinstance(content, str):
        if content:
            delta["content"] = content
    else:  # a list of blocks (Anthropic, Gemini through LangChain)
        _langchain_blocks(content or (), delta)
        if held is not None:  # ChatOpenAI's Responses items among them, Claude's server tool blocks
            parts = held.read_items(content or (), parts, metadata, extra, finish is not None)
            _claude_servers(content or (), held, finish)
    if held is not None and isinstance(container := metadata.get("container"), Mapping):  # ChatAnthropic's
        # without the nulls langchain-anthropic's dump of the SDK model writes where the wire has no field
        kept = ContainerReport({key: value for key, value in container.items() if value is not None})
        held.said = [*(held.said or ()), (0, kept)]
    # read as the decoder reads it: not beside reasoning blocks, which are read instead
    if (
        isinstance(extra, Mapping)
        and isinstance(extra.get("reasoning_content"), str)
        and not any(type(event) is ReasoningDelta for _, event in said or ())
    ):
        delta["reasoning_content"] = extra["reasoning_content"]
    # ChatOpenAI's output_version="v0" moves a Responses refusal block here (unread, the turn lost it)
    if isinstance(extra, Mapping) and isinstance(extra.get("refusal"), str) and "refusal" not in delta:
        delta["refusal"] = extra["refusal"]
    calls: list[dict[str, Any]] = []
    made_up = _made_up_ids(parts, extra, metadata)
    # a Gemini call resent under a new made-up id: under the one it came with first, as one call
    gemini = held is not None and held.wire == "gemini"
    resent = held.gemini.first_entries(parts) if held is not None and gemini else {}
    if held is not None and gemini and signatures:
        shared_signatures(parts, resent, signatures, held.notes)
    for at, part in enumerate(parts):
        arguments = whole_arguments(part.get("args")) if gemini else part.get("args")
        call = {
            "index": part.get("index"),
            "id": None if at in made_up else part.get("id"),
            "function": {"name": part.get("name"), "arguments": arguments},
        }
        signature = signatures.pop(call["id"], None) if isinstance(call["id"], str) else None
        if signature is not None:
            call[COMPAT_SIGNATURE] = compat_signed(signature)
        if at in resent:
            call["index"], call["id"] = resent[at].get("index"), resent[at].get("id")
        calls.append(call)
    if held is not None:
        converse = metadata.get("model_provider") == "bedrock_converse"
        calls += _anthropic_inputs(content, parts, held.inputs, finish, converse)
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
    refused: list[str] = []  # joined once: a chunk may hold any number of refusal blocks
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
        elif kind == "refusal" and isinstance(block.get("refusal"), str):  # ChatOpenAI's, on the Responses API
            refused.append(block["refusal"])
        elif kind == "reasoning_content" and isinstance(block.get("reasoning_content"), Mapping):
            thinking.append(_converse_reasoning(block["reasoning_content"], block.get("index")))
        elif (
            kind == "reasoning" and isinstance(extras := block.get("extras"), Mapping) and "redacted_content" in extras
        ):
            thinking.append(_converse_reasoning(extras, block.get("index")))  # ChatBedrockConverse's, v1
        elif kind in ("thinking", "redacted_thinking") or (
            # a Responses reasoning item's pieces are read as its item (fsm.wire.langchain_reasoning);
            # ChatBedrockConverse's v1 gives a signature in a block of its own
            kind == "reasoning"
            and ("reasoning" in block or block_signature(block) is not None)
            and not is_responses_reasoning(block)
        ):
            thinking.append(_thinking_block(block, kind))
    text = "".join(said)
    if text:
        delta["content"] = text
    if refused:
        delta["refusal"] = "".join(refused)
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
        if isinstance(said, list):  # ChatMistralAI's: Mistral's thinking chunk, a list of text chunks
            said = "".join(chunk_text(part) for part in said)
        entry["thinking"] = said if isinstance(said, str) else ""
        signature = block_signature(block)
        if signature is not None:
            entry["signature"] = signature
    if type(block.get("index")) is int:
        entry["index"] = block["index"]
    return entry


def _converse_reasoning(said: Mapping[str, Any], at: Any) -> dict[str, Any]:
    """A ``reasoning_content`` block of ChatBedrockConverse (Bedrock Converse's ``reasoningContent``
    delta as boto3 gives it: its ``text``, its ``signature``, or its ``redacted_content`` as the bytes
    boto3 decoded from the wire's base64) as the thinking block LiteLLM writes, the redacted data
    in base64 again, as the wire has it."""
    redacted = said.get("redacted_content")
    if redacted is not None:
        data = base64.b64encode(redacted).decode("ascii") if isinstance(redacted, bytes | bytearray) else redacted
        entry: dict[str, Any] = {"type": "redacted_thinking", "data": data}
    else:
        entry = {"type": "thinking", "thinking": said.get("text") if isinstance(said.get("text"), str) else ""}
        if said.get("signature") is not None:
            entry["signature"] = said["signature"]
    if type(at) is int:
        entry["index"] = at
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


def _anthropic_inputs(
    content: Any, parts: Any, held: Held, finish: str | None, converse: bool = False
) -> list[dict[str, Any]]:
    """Hold the tool blocks this chunk opens, let go of those argument text came for, and give the
    held blocks that have ended their ``input`` as OpenAI chat entries (a JSON object is a call's
    whole arguments there), after the chunk's own. Anthropic sends a message's blocks one after
    another, so a block has ended once a later one opens, or at a stop reason that ends the turn.
    Bedrock Converse does too (``converse``: ChatBedrockConverse's chunks), its tool block opening
    with no ``input``, as a ``tool_use`` block or, with ``output_version="v1"``, a named
    ``tool_call_chunk`` block: a tool without parameters streams no text, and its value is ``{}``."""
    blocks = (
        [b for b in content if isinstance(b, Mapping) and type(b.get("index")) is int]
        if isinstance(content, list | tuple)
        else []
    )
    for block in blocks:
        kind = block.get("type")
        if kind == "tool_use" or (converse and kind == "tool_call_chunk" and block.get("name")):
            value = block.get("input")
            held.hold(block["index"], value if isinstance(value, Mapping) else {})
    for part in parts:
        if part.get("args") and type(part.get("index")) is int:  # held by int index; any other is no block's
            held.pop(part["index"], None)
    latest = max((b["index"] for b in blocks), default=None)
    ended = held.ended(None) if finish in TURN_ENDED else held.ended(latest) if latest is not None else []
    return [{"index": at, "function": {"arguments": dict(value)}} for at, value in ended]


def _claude_servers(content: Any, held: LangChainStream, finish: str | None) -> None:
    """Claude's server tool blocks in a chunk that names no integration whose blocks are read in
    their places (langchain-anthropic before 1.0 names none), told by their shapes: a block that
    opens one (no other integration makes it) and the ``input_json_delta`` blocks at its index,
    read into ``held.said`` as the places reading reads them, each ended by a later block or a stop
    reason that ends the turn, and a result block, whole; and what a client call's ``tool_use``
    block says beside its input (its ``caller``). Every other block is read as it was, without
    places."""
    events: list[Event] = []
    servers = held.servers
    for block in content:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        kind = kind if isinstance(kind, str) else None  # a hand-made block's may be unhashable
        if server_result_block(kind) and kind != "server_tool_result":  # Claude's, whole (not v1's)
            events.append(ServerResultBlock({key: value for key, value in block.items() if key != "index"}))
            continue
        if not servers and kind not in CLAUDE_SERVER_STARTS and kind != "tool_use":  # most chunks': none is open
            continue
        at = place_of(block.get("index"))
        if at is not None and servers:
            events += end_servers(held, at)
        if kind == "tool_use":
            events += client_call(block, at, {})
        elif kind in CLAUDE_SERVER_STARTS or (kind == "input_json_delta" and at in servers):
            events += claude_server(block, kind, at, held)
    if finish in TURN_ENDED and servers:
        events += end_servers(held, None)
    if events:
        held.said = [*(held.said or ()), *((0, event) for event in events)]


def _made_up_ids(parts: Any, extra: Any, metadata: Mapping[str, Any]) -> set[int]:
    """The positions of ``parts`` whose id ChatMistralAI made up: it gives an entry at index 0 that
    came without an id a fresh ``uuid4`` of its own, on every chunk (each fragment of a streamed call
    under another id), and keeps the wire's entries, in order, in ``additional_kwargs["tool_calls"]``.
    Read as the bytes are, those fragments carry no id: the call they continue keeps its own."""
    if metadata.get("model_provider") != "mistralai" or not isinstance(extra, Mapping):
        return set()
    wire = extra.get("tool_calls")
    if not isinstance(wire, list | tuple) or len(wire) != len(parts):
        return set()
    return {at for at, entry in enumerate(wire) if isinstance(entry, Mapping) and not entry.get("id")}


def _langchain_finish(metadata: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The finish reason in a chunk's ``response_metadata`` and, where the chunk holds no finish word
    of its own, the provider's word for it: the chat ``finish_reason``, Anthropic's ``stop_reason``,
    Ollama's ``done_reason`` (ChatOllama's; each its own word), or for the Responses API (which has
    none of them) the response's ``status``: a ``completed`` turn stopped, an ``incomplete`` one as
    its ``incomplete_details.reason`` says, in the words the Responses decoder gives from the bytes
    (``incomplete: max_output_tokens``). A finish that is no str is refused here (InvalidInput), so
    every reader after it takes a word or None."""
    finish = (
        metadata.get("finish_reason")
        or metadata.get("stop_reason")
        or metadata.get("done_reason")
        or metadata.get("stopReason")
    )
    _check_langchain_field(finish, str, "response_metadata finish_reason, stop_reason or done_reason", "a str")
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
