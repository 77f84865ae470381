"""The ``"openai-responses"`` next turn: a reassembled turn as Responses input items (reasoning,
message and call items in their output order, and a refusal in the message that carried it), as
:mod:`fsm.messages` describes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fsm.messages.built_in import BUILT_IN_OUTPUTS, built_in_item
from fsm.messages.shared import Message, in_output_order, kind, placed_text, reply_id
from fsm.results import CallStatus, Result, ServerToolResult, TextPart, ToolCall
from fsm.wire.decoders._responses_items import CALL_CONTEXT, program_output_fault


def openai_responses(result: Result, calls: tuple[ToolCall, ...]) -> list[Message]:
    # Each item with where it sat in the output (None: the wire gave no place), in the order the
    # items go back when none has one: reasoning, the message, the calls.
    placed: list[tuple[int | None, Message]] = []
    stranded = {id(call) for call in stranded_calls(result)}
    calls = tuple(call for call in calls if id(call) not in stranded)
    gone = _left_out(result, calls)
    for reasoning in result.reasoning:
        if reasoning.item_id is None or reasoning.output_index in gone:
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
    refused: list[TextPart] = []  # the message items whose refusal went back beside their text

    def message(text: str, part: TextPart | None) -> Message:
        if part is not None and carries_refusal(part):
            refused.append(part)
        return responses_message(text, part, paired)

    placed += placed_text(result, message)
    placed += [(compaction.output_index, dict(compaction.block)) for compaction in result.compactions]
    if result.refusal is not None:
        placed += refusal_messages(result, refused)
    for call in calls:
        wanted = kind(call, "openai-responses", ("function", "custom", *BUILT_IN_OUTPUTS))
        if wanted in ("function", "custom"):
            entry: Message = {"type": "custom_tool_call" if wanted == "custom" else "function_call"}
            if paired and call.item is not None and call.item.get("id"):
                entry["id"] = call.item["id"]
            entry |= {"call_id": reply_id(call), "name": call.name or ""}
            if call.item is not None and call.item.get("type") in _CALL_ITEMS:  # its namespace and caller
                entry |= {key: call.item[key] for key in CALL_CONTEXT if call.item.get(key) is not None}
            if wanted == "custom":
                entry["input"] = call.input or ""
            else:
                entry["arguments"] = call.arguments_json or ""
            placed.append((call.output_index, entry))
        else:
            placed.append((call.output_index, built_in_item(call)))
    placed += [(call.output_index, program) for call, program in _programs(result)]
    placed += [(done.output_index, dict(done.block)) for done in result.server_tool_results if _program_output(done)]
    return in_output_order(placed)


def _programs(result: Result) -> list[tuple[ToolCall, Message]]:
    """The programs of OpenAI's programmatic tool calling in the turn, each as the ``program`` input
    item it goes back as (policy program-goes-back): unlike the other hosted calls, the request that
    sends the results of the client calls a program made must hold the program, with its
    ``fingerprint``, when the API keeps no state (``store: false``), or it has nothing to resume. A
    program the stream cut, or one without its item id, call id, fingerprint or code, cannot go back."""
    found = []
    for call in result.server_tool_calls:
        item = call.item
        if call.type != "program" or call.status is not CallStatus.COMPLETE or item is None or not call.input:
            continue  # (no code: nothing to replay, said where it was read)
        if all(type(item.get(key)) is str and item[key] for key in ("id", "call_id", "fingerprint")):
            program: Message = {"type": "program", "id": item["id"], "call_id": item["call_id"], "code": call.input}
            program |= {key: item[key] for key in ("fingerprint", "agent") if item.get(key) is not None}
            found.append((call, program))
    return found


def stranded_calls(result: Result) -> tuple[ToolCall, ...]:
    """The client calls a program made that cannot go back with it (policy calls-stay-with-their-program),
    left out as a call that did not complete is, with the reasoning before them: each call whose
    ``caller`` names a program of the turn that does not go back (:func:`_programs`: cut, or without
    code, item id, call id or fingerprint in text), or names its program by no text. Sent, it names
    a program the request lacks: ``fsm.history`` reports it ``unknown-caller``, and without stored
    state the API has nothing to resume; its output would go back to no call. A call naming in text a
    program the turn does not hold goes back: an earlier turn's program may be it (the history check
    tells)."""
    back = [program["call_id"] for _, program in _programs(result)]
    lost = [_call_id(call) for call in result.server_tool_calls if call.type == "program"]
    lost = [call_id for call_id in lost if call_id not in back]
    stranded = []
    for call in result.calls:
        caller = call.item.get("caller") if call.item is not None else None
        if not isinstance(caller, Mapping) or caller.get("type") != "program":
            continue
        named = caller.get("caller_id")
        if type(named) is not str or named in lost:
            stranded.append(call)
    return tuple(stranded)


def _call_id(program: ToolCall) -> Any:
    """The ``call_id`` a program's calls name it by: its item's, else its id."""
    return program.item.get("call_id", program.id) if program.item is not None else program.id


def _program_output(result: ServerToolResult) -> bool:
    """A program's output item (what a program resumed by the client's results gave): it goes back in
    its place, as the input item of the same type, but one built by hand with fields the API refuses
    back (as the decoder keeps none). No other provider's result block is a Responses item."""
    return result.block.get("type") == "program_output" and program_output_fault(result.block) is None


_CALL_ITEMS = ("function_call", "custom_tool_call")
"""The Responses items whose CALL_CONTEXT a call's item holds (a Claude call's ``caller`` is no
Responses caller)."""


def _left_out(result: Result, calls: tuple[ToolCall, ...]) -> set[int]:
    """The output indexes of the reasoning items right before a call left out (not complete) or a
    hosted call (which never goes back), which go with it: the API pairs a reasoning item with the
    item that followed it and answers one sent without it with HTTP 400 ("provided without its
    required following item")."""
    sent = {id(call) for call in calls}
    left = [c for c in result.calls if id(c) not in sent]
    back = {id(call) for call, _ in _programs(result)}
    hosted = [c for c in result.server_tool_calls if id(c) not in back]
    gone = {c.output_index for c in (*left, *hosted) if isinstance(c.output_index, int)}
    dropped: set[int] = set()
    if gone:
        kept = {c.output_index for c in calls} | {p.output_index for p in result.text_parts}  # places shared by hand
        placed = {r.output_index for r in result.reasoning if isinstance(r.output_index, int)}
        for index in sorted(placed, reverse=True):  # a run of reasoning items before a call left out goes whole
            if (index + 1 in gone or index + 1 in dropped) and index + 1 not in kept:
                dropped.add(index)
    return dropped


def carries_refusal(part: TextPart) -> bool:
    """The part is a message item with a refusal part that goes back in it: an output message (its
    id and status), as no input message takes a refusal part."""
    return part.refusal is not None and part.item_id is not None and part.status is not None


def responses_message(text: str, part: TextPart | None, paired: bool) -> Message:
    """A message item as the API takes it back. Beside reasoning (``paired``), or with a refusal
    part beside its text, the output message the stream gave, under its item id and status, the
    text as ``output_text`` (and the refusal part, in the order the item held them), where ``part``
    holds both (the API finds the message that followed a reasoning item by that id); else a plain
    assistant message (the SDK's input type for an output message requires both). Either keeps the
    message's ``phase`` (``commentary``, ``final_answer``), which models that give one want back on it."""
    if part is None or part.item_id is None or part.status is None or not (paired or carries_refusal(part)):
        message: Message = {"type": "message", "role": "assistant", "content": text}
    else:
        content: list[Message] = [{"type": "output_text", "text": text, "annotations": list(part.citations)}]
        if part.refusal is not None:
            refusal: Message = {"type": "refusal", "refusal": part.refusal}
            content = [refusal, *content] if part.refused_first else [*content, refusal]
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


def refusal_messages(result: Result, sent: list[TextPart]) -> list[tuple[int | None, Message]]:
    """The refusal, in the message items that carried it, where the parts hold all of it: each in its
    message beside that message's text (``sent`` went so), or as that output message with only its
    ``refusal`` part, in its place (a plain assistant message of its text, for an item the stream
    gave no id or status). Else (a result built by hand, or read back from a version that kept no
    refusal on its parts) the first message the stream gave an id and a status but no text (a
    refusal has no ``output_text``) takes all of it, or, with no such item, a plain assistant
    message whose text it is: no input message but an output one takes a refusal part."""
    refusal = result.refusal or ""
    parts = [part for part in result.text_parts if part.refusal is not None]
    if parts and "".join(part.refusal or "" for part in parts) == refusal:
        went = {id(part) for part in sent}  # by identity, looked up once a part (not a scan of `sent`: audit 65)
        return [
            (part.output_index, refusal_message(part, part.refusal or "")) for part in parts if id(part) not in went
        ]
    for part in result.text_parts:
        if not part.text and part.item_id is not None and part.status is not None:
            return [(part.output_index, refusal_message(part, refusal))]
    return [(result.text_output_index, {"type": "message", "role": "assistant", "content": refusal})]


def refusal_message(part: TextPart, refusal: str) -> Message:
    """``refusal`` as the output message ``part`` was, with a ``refusal`` part only, or a plain
    assistant message of its text where the stream gave the item no id or status."""
    if part.item_id is None or part.status is None:
        return {"type": "message", "role": "assistant", "content": refusal}
    return {
        "type": "message",
        "role": "assistant",
        "id": part.item_id,
        "status": part.status,
        "content": [{"type": "refusal", "refusal": refusal}],
    }
