"""The ``"openai-chat"`` assistant message: the turn's text, refusal and calls, and its reasoning
where a Chat Completions server takes it back. The API has no field for reasoning; two servers in
front of other providers do: LiteLLM takes Claude's signed and redacted blocks as ``thinking_blocks``
and hands them on to Claude, who refuses a turn of calls without them, and OpenRouter takes its own
``reasoning_details`` back as it gave them (each block's ``type``, text, ``signature``, ``id`` and
``format``), to hand on to the model's provider likewise. A block read from ``reasoning_details``
goes back there only.

Plain reasoning (a delta's ``reasoning_content`` or ``reasoning``) goes back only in the field the
caller names (policy reasoning-field-named): servers disagree, and each refuses the other's way.
DeepSeek's thinking mode refuses a turn of calls sent back without its ``reasoning_content`` ("must
be passed back to the API"); Groq refuses an assistant message that holds ``reasoning_content``
("property 'reasoning_content' is unsupported"); OpenAI's API has neither field. A result does not
say which server streamed it, so ``reasoning_field="reasoning_content"`` (DeepSeek, vLLM) or
``"reasoning"`` (OpenRouter, Groq's reasoning models) sends the text of every plain reasoning block,
joined; by default none is sent.

A Responses reasoning item (LiteLLM's ``reasoning_items``, which its chat stream served from the
Responses API carries on the last chunk) goes back as LiteLLM takes it, in ``reasoning_items``:
its ``id``, ``summary`` and ``encrypted_content``. The record LiteLLM gave with them of the turn's
output items (``openai_responses_replay``, and ``phase``: :attr:`~fsm.results.Result.provider_fields`)
goes back in ``provider_specific_fields`` as it came, where LiteLLM replays the items exactly when
its checksum matches the message: the same text, calls and reasoning items (policy
litellm-fields-said); so does the text's signature LiteLLM's Gemini route gave (``thought_signatures``),
where it reads the text part's back. A call's Gemini signature goes back in ``extra_content``, where
Gemini's OpenAI endpoint gave it, but in an id LiteLLM minted, which holds it already (policy
litellm-thought-signatures)."""

from __future__ import annotations

from typing import Any, Literal

from fsm.messages.claude_blocks import placed_thinking
from fsm.messages.shared import Message, reply_id
from fsm.messages.shared import kind as _kind
from fsm.results import Reasoning, Result, ToolCall
from fsm.wire.decoders.chat_reasoning import GEMINI_FORMAT
from fsm.wire.decoders.litellm_calls import ID_SIGNATURE

_DETAIL_TEXT = {"reasoning.text": "text", "reasoning.summary": "summary"}
"""Where each type of reasoning_details entry holds the block's text (the encrypted one: ``data``)."""


ReasoningField = Literal["reasoning_content", "reasoning"]
REASONING_FIELDS: tuple[ReasoningField, ...] = ("reasoning_content", "reasoning")


def openai_chat_message(result: Result, calls: tuple[ToolCall, ...], reasoning_field: str | None = None) -> Message:
    # Null content only beside calls (or a refusal): OpenAI refuses an assistant message whose content
    # is null without tool_calls and takes "" (vercel/ai#14950), so a turn that left nothing sends "".
    empty = None if calls or result.refusal is not None else ""
    message: Message = {"role": "assistant", "content": result.text or empty}
    if result.refusal is not None:
        message["refusal"] = result.refusal
    plain = "".join([block.text for block in result.reasoning if block.detail is None]) if reasoning_field else ""
    if plain and reasoning_field:
        message[reasoning_field] = plain
    details = reasoning_details(result)
    if details:
        message["reasoning_details"] = details
    thinking = [block for _, block in placed_thinking(result, "openai-chat", details=False)]
    if thinking:
        message["thinking_blocks"] = thinking
    items = reasoning_items(result)
    if items:
        message["reasoning_items"] = items
    if calls:
        message["tool_calls"] = [_call(call) for call in calls]
    if result.provider_fields:
        message["provider_specific_fields"] = dict(result.provider_fields)
    return message


def reasoning_details(result: Result) -> list[Message]:
    """The blocks read from OpenRouter's ``reasoning_details``, each as one entry in the order they
    came, numbered from 0 as OpenRouter numbers them; a signed block of Gemini's as two of its number,
    its text then its signature, as OpenRouter gave them (policy gemini-signature-encrypted)."""
    details: list[Message] = []
    for block, (reasoning, detail) in enumerate([(r, d) for r in result.reasoning if (d := r.detail) is not None]):
        signature, item_id = reasoning.signature, reasoning.item_id
        if signature is not None and reasoning.format == GEMINI_FORMAT and detail == "reasoning.text":
            # policy gemini-signature-encrypted: its text, if any, then the signature as OpenRouter sent it
            if reasoning.text:
                details.append(_entry("reasoning.text", reasoning, block, text=reasoning.text))
            details.append(_entry("reasoning.encrypted", reasoning, block, data=signature, id=item_id))
            continue
        if detail in _DETAIL_TEXT:
            said = {_DETAIL_TEXT[detail]: reasoning.text}
        else:  # (Claude's redacted: redacted)
            said = {"data": reasoning.encrypted_content or reasoning.redacted or ""}
        details.append(_entry(detail, reasoning, block, **said, signature=signature, id=item_id))
    return details


def reasoning_items(result: Result) -> list[Message]:
    """The Responses reasoning items among the blocks (LiteLLM's ``reasoning_items``, or a Responses
    stream's), as LiteLLM takes them back: it replays them to the Responses API it serves the chat
    from, in the stead of the thinking blocks beside them (a Claude block, signed, or OpenRouter's
    entry, goes back in its own field)."""
    items: list[Message] = []
    for block in result.reasoning:
        if block.detail is not None or block.signature is not None or block.redacted is not None:
            continue
        if block.item_id is None and block.encrypted_content is None and not block.summary:
            continue  # plain reasoning text: policy reasoning-field-named
        item: Message = {"type": "reasoning"}
        if block.item_id is not None:
            item["id"] = block.item_id
        item["summary"] = [{"type": "summary_text", "text": said} for said in block.summary]
        if block.encrypted_content is not None:
            item["encrypted_content"] = block.encrypted_content
        items.append(item)
    return items


def _entry(kind: str, reasoning: Reasoning, block: int, **fields: Any) -> Message:
    """An entry of the block numbered ``block``: its fields but those that are None, its format, its index."""
    entry: Message = {"type": kind} | {key: value for key, value in fields.items() if value is not None}
    if reasoning.format is not None:
        entry["format"] = reasoning.format
    entry["index"] = block
    return entry


def _call(call: ToolCall) -> Message:
    if _kind(call, "openai-chat", ("function", "custom")) == "custom":
        return {"id": reply_id(call), "type": "custom", "custom": {"name": call.name or "", "input": call.input or ""}}
    entry: Message = {
        "id": reply_id(call),
        "type": "function",
        "function": {"name": call.name or "", "arguments": call.arguments_json or ""},
    }
    signature = call.thought_signature
    if signature is not None and not entry["id"].endswith(ID_SIGNATURE + signature):
        # Only Gemini signs calls; its OpenAI endpoint takes the signature back where it gave it,
        # and Gemini 3 refuses a call sent back without it. An id LiteLLM's Gemini route minted holds
        # it already, where LiteLLM reads it (policy litellm-thought-signatures): it goes there alone.
        entry["extra_content"] = {"google": {"thought_signature": signature}}
    return entry
