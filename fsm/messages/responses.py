"""The ``"openai-responses"`` next turn: a reassembled turn as Responses input items (reasoning,
message and call items in their output order, and a refusal in the message that carried it), as
:mod:`fsm.messages` describes."""

from __future__ import annotations

from fsm.messages.built_in import BUILT_IN_OUTPUTS, built_in_item
from fsm.messages.shared import Message, in_output_order, kind, placed_text, reply_id
from fsm.results import Result, TextPart, ToolCall


def openai_responses(result: Result, calls: tuple[ToolCall, ...]) -> list[Message]:
    # Each item with where it sat in the output (None: the wire gave no place), in the order the
    # items go back when none has one: reasoning, the message, the calls.
    placed: list[tuple[int | None, Message]] = []
    for reasoning in result.reasoning:
        if reasoning.item_id is None:
            continue  # a reasoning item is referred to by its id: without one it cannot go back
        item: Message = {
            "type": "reasoning",
            "id": reasoning.item_id,
            "summary": [{"type": "summary_text", "text": text} for text in reasoning.summary],
        }
        if reasoning.text:
            item["content"] = [{"type": "reasoning_text", "text": reasoning.text}]
        if reasoning.encrypted_content is not None:
            item["encrypted_content"] = reasoning.encrypted_content
        placed.append((reasoning.output_index, item))
    paired = bool(placed)  # reasoning goes back: the API looks for the items that followed it by their ids
    placed += placed_text(result, lambda text, part: responses_message(text, part, paired))
    if result.refusal is not None:
        placed.append(refusal_message(result))
    for call in calls:
        wanted = kind(call, "openai-responses", ("function", "custom", *BUILT_IN_OUTPUTS))
        if wanted in ("function", "custom"):
            entry: Message = {"type": "custom_tool_call" if wanted == "custom" else "function_call"}
            if paired and call.item is not None and call.item.get("id"):
                entry["id"] = call.item["id"]
            entry |= {"call_id": reply_id(call), "name": call.name or ""}
            if wanted == "custom":
                entry["input"] = call.input or ""
            else:
                entry["arguments"] = call.arguments_json or ""
            placed.append((call.output_index, entry))
        else:
            placed.append((call.output_index, built_in_item(call)))
    return in_output_order(placed)


def responses_message(text: str, part: TextPart | None, paired: bool) -> Message:
    """A message item as the API takes it back. Beside reasoning (``paired``) the output message the
    stream gave, under its item id and status, the text as ``output_text``, where ``part`` holds both
    (the API finds the message that followed a reasoning item by that id); else a plain assistant
    message (the SDK's input type for an output message requires both). Either keeps the message's
    ``phase`` (``commentary``, ``final_answer``), which models that give one want back on it."""
    if not paired or part is None or part.item_id is None or part.status is None:
        message: Message = {"type": "message", "role": "assistant", "content": text}
    else:
        content = [{"type": "output_text", "text": text, "annotations": list(part.citations)}]
        message = {
            "type": "message",
            "role": "assistant",
            "id": part.item_id,
            "status": part.status,
            "content": content,
        }
    if part is not None and part.phase is not None:
        message["phase"] = part.phase
    return message


def refusal_message(result: Result) -> tuple[int | None, Message]:
    """The refusal, in the message item that carried it: the first message the stream gave an id
    and a status but no text (a refusal has no ``output_text``), as that output message with a
    ``refusal`` part, in its place. A refusal from no such item (a result built by hand) goes as a
    plain assistant message whose text it is: no input message but an output one takes a refusal part."""
    refusal = result.refusal or ""
    for part in result.text_parts:
        if not part.text and part.item_id is not None and part.status is not None:
            message: Message = {
                "type": "message",
                "role": "assistant",
                "id": part.item_id,
                "status": part.status,
                "content": [{"type": "refusal", "refusal": refusal}],
            }
            return part.output_index, message
    return result.text_output_index, {"type": "message", "role": "assistant", "content": refusal}
