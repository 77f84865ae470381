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
its ``id``, ``summary`` and ``encrypted_content``."""

from __future__ import annotations

from typing import Literal

from fsm.messages.claude_blocks import placed_thinking
from fsm.messages.shared import Message, reply_id
from fsm.messages.shared import kind as _kind
from fsm.results import Result, ToolCall

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
    thinking = [block for _, block in placed_thinking(result, details=False)]
    if thinking:
        message["thinking_blocks"] = thinking
    items = reasoning_items(result)
    if items:
        message["reasoning_items"] = items
    if calls:
        message["tool_calls"] = [_call(call) for call in calls]
    return message


def reasoning_details(result: Result) -> list[Message]:
    """The blocks read from OpenRouter's ``reasoning_details``, each as one entry in the order they
    came, numbered from 0 as OpenRouter numbers them."""
    details: list[Message] = []
    for reasoning in result.reasoning:
        if reasoning.detail is None:
            continue
        entry: Message = {"type": reasoning.detail}
        if reasoning.detail in _DETAIL_TEXT:
            entry[_DETAIL_TEXT[reasoning.detail]] = reasoning.text
        else:
            entry["data"] = reasoning.encrypted_content or reasoning.redacted or ""  # (Claude's redacted: redacted)
        for key, value in (("signature", reasoning.signature), ("id", reasoning.item_id), ("format", reasoning.format)):
            if value is not None:
                entry[key] = value
        entry["index"] = len(details)
        details.append(entry)
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


def _call(call: ToolCall) -> Message:
    if _kind(call, "openai-chat", ("function", "custom")) == "custom":
        return {"id": reply_id(call), "type": "custom", "custom": {"name": call.name or "", "input": call.input or ""}}
    entry: Message = {
        "id": reply_id(call),
        "type": "function",
        "function": {"name": call.name or "", "arguments": call.arguments_json or ""},
    }
    if call.thought_signature is not None:
        # Only Gemini signs calls; its OpenAI endpoint takes the signature back where it gave it,
        # and Gemini 3 refuses a call sent back without it.
        entry["extra_content"] = {"google": {"thought_signature": call.thought_signature}}
    return entry
