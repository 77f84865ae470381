"""Ollama's native ``/api/chat`` messages and Cohere's v2 chat messages: the assistant turn and the
answer to one call (:func:`fsm.messages.assistant_message` and :func:`fsm.messages.tool_result`
check the call's type first: both take function calls only).

**Ollama** takes ``{"role": "assistant", "content", "thinking", "tool_calls": [{"function":
{"name", "arguments"}}]}``, the arguments an object, and answers ``{"role": "tool", "content",
"tool_name"}``. No id goes back, and no ``function.index``: the ollama client's ``Message`` has no
field for either (nor for a ``tool_call_id``), and drops what it does not know before it sends. So
Ollama pairs a result with its call by order and tool name: each answer names its tool, and the
answers follow the calls in the order the calls came, one tool message per call. The reasoning
goes back as ``thinking``, its blocks' text joined.

**Cohere** takes ``tool_calls: [{"id", "type": "function", "function": {"name", "arguments"}}]``,
the arguments as JSON text, and answers ``{"role": "tool", "tool_call_id", "content"}`` with the
output as text. The plan the model streamed before its calls (``tool-plan-delta``, read as a
reasoning block with no ``output_index``) goes back as ``tool_plan``, and so does text said beside
calls, after the plan: Cohere refuses text ``content`` in a message that makes calls. A reasoning
model's thinking (a block with an ``output_index``: its content index) goes back apart from the
plan, as ``{"type": "thinking", "thinking"}`` items of ``content``, one per block in order (policy
cohere-thinking-apart): Cohere's own tool-use guide for Command A Reasoning appends the response's
message, its ``content`` a thinking item beside its ``tool_calls``, to the next request, and that
request is answered. A turn without calls sends its text as ``content``: a string, or after the
thinking items a ``{"type": "text"}`` item when there are some.

A plan with no calls to go beside (calls that did not complete, left out, or a stream cut after its
plan) goes back as text, before the turn's text and a blank line between, as text beside calls goes
in ``tool_plan`` after the plan (policy cohere-plan-without-calls): the API reads a plan as the
model's words before its calls, and with none the one place for its words is ``content``; it was
left out without a word. Only a Cohere result (``Result.provider``) holds a plan: another
provider's reasoning without a content index (a chat delta's ``reasoning_content``, Gemini's
thoughts, Ollama's thinking) goes back as thinking items, as another's with one (Claude's thinking,
a Responses reasoning item) does (policy cohere-foreign-reasoning); it went in ``tool_plan`` as if
Cohere had planned it.

Both take a reasoning block's text alone (policy reasoning-data-not-sent): the ollama client's
``Message`` holds ``thinking`` as one string, Cohere's thinking item a ``thinking`` string, and
neither has a field for what a block carries besides: Claude's ``signature`` and
``redacted_thinking`` data, a Responses item's id, ``summary`` and ``encrypted_content``, a Gemini
``thoughtSignature``, an OpenRouter entry's type and format. Those are opaque to all but the provider
that made them, which reads them back from its own format, so they are not sent; a block with no
text (a redacted one, a Responses item holding encrypted content or a summary alone, a signature
alone) sends nothing, and the message holds no trace of it. Nothing of fsm.messages lists it
(:func:`fsm.messages.omitted` lists calls): :attr:`Result.reasoning` holds every block, to compare.

Neither has a flag for a failed tool: there the output itself must say it.
"""

from __future__ import annotations

from typing import Any

from fsm.messages.shared import Message, arguments_object, as_text, reply_id
from fsm.results import Result, ToolCall


def ollama_message(result: Result, calls: tuple[ToolCall, ...]) -> Message:
    message: Message = {"role": "assistant", "content": result.text}
    # A block's signature, redacted or encrypted data and summary have no field here: its text alone goes
    # (policy reasoning-data-not-sent)
    thinking = "".join(reasoning.text for reasoning in result.reasoning)
    if thinking:
        message["thinking"] = thinking
    if calls:
        message["tool_calls"] = [
            {"function": {"name": call.name or "", "arguments": arguments_object(call)}} for call in calls
        ]
    return message


def ollama_result(call: ToolCall, output: Any) -> Message:
    return {"role": "tool", "content": as_text(output), "tool_name": call.name or ""}


def cohere_message(result: Result, calls: tuple[ToolCall, ...]) -> Message:
    message: Message = {"role": "assistant"}
    # Only Cohere's wire streams a plan: another's reasoning without a content index (a chat delta's
    # reasoning_content, Gemini's thoughts, Ollama's thinking) is no plan (policy cohere-foreign-reasoning)
    ours = result.provider == "cohere"
    thinking: list[dict[str, Any]] = [
        {"type": "thinking", "thinking": r.text}
        for r in result.reasoning
        if (r.output_index is not None or not ours) and r.text
    ]
    planned = "".join(r.text for r in result.reasoning if r.output_index is None and ours)
    said = "\n\n".join(part for part in (planned, result.text) if part)
    if not calls:  # no tool_plan without calls: the plan is text, the turn's after it (cohere-plan-without-calls)
        text = [{"type": "text", "text": said}] if said else []
        message["content"] = thinking + text if thinking else said
        return message
    if thinking:  # (policy cohere-thinking-apart)
        message["content"] = thinking
    if said:
        message["tool_plan"] = said
    message["tool_calls"] = [
        {
            "id": reply_id(call),
            "type": "function",
            "function": {"name": call.name or "", "arguments": call.arguments_json or ""},
        }
        for call in calls
    ]
    return message


def cohere_result(call: ToolCall, output: Any) -> Message:
    return {"role": "tool", "tool_call_id": reply_id(call), "content": as_text(output)}
