"""Responses built-in client calls (``apply_patch_call``, ``shell_call``, ``local_shell_call``,
``computer_call``): each as the input item that sends it back, and the output item that answers it
(how :func:`fsm.messages.tool_result` maps a tool's output to each is documented there)."""

from __future__ import annotations

from typing import Any

from fsm.errors import LocalProtocolError
from fsm.messages.shared import Message, as_text, reply_id
from fsm.results import ToolCall

BUILT_IN_OUTPUTS = {
    "apply_patch_call": "apply_patch_call_output",
    "shell_call": "shell_call_output",
    "local_shell_call": "local_shell_call_output",
    "computer_call": "computer_call_output",
}
"""Responses built-in client call types and the output item type that answers each."""
_BUILT_IN_FIELDS = {
    "apply_patch_call": ("id", "call_id", "operation", "status", "caller"),
    "shell_call": ("id", "call_id", "action", "status", "environment", "caller"),
    "local_shell_call": ("id", "call_id", "action", "status"),
    "computer_call": ("id", "call_id", "action", "actions", "pending_safety_checks", "status"),
}
"""The fields each built-in call's input item takes (openai-python's ``ResponseInputItemParam``)."""
_ID_REQUIRED = frozenset({"local_shell_call", "computer_call"})


def built_in_item(call: ToolCall) -> Message:
    """A complete built-in client call as its Responses input item: the provider's item with the
    fields the input item takes; without one (a call built by hand), from the call's own fields."""
    source: dict[str, Any] = dict(call.item) if call.item is not None else {}
    if call.item is None:
        arguments = call.arguments if isinstance(call.arguments, dict) else {}
        if call.type == "apply_patch_call":
            source["operation"] = arguments
        elif call.type == "computer_call" and set(arguments) == {"actions"}:
            source["actions"] = arguments["actions"]
        else:
            source["action"] = arguments
    if call.type == "computer_call" and source.get("pending_safety_checks") is None:
        source["pending_safety_checks"] = []  # the input item requires it: none pending when the wire gave none
    item: Message = {"type": call.type}
    for field in _BUILT_IN_FIELDS[call.type]:
        if source.get(field) is not None:
            item[field] = source[field]
    item["call_id"] = reply_id(call)  # the id the answer pairs by (renamed where the wire repeated one)
    item["status"] = "completed"
    if call.type in _ID_REQUIRED and "id" not in item:
        raise LocalProtocolError(
            f"call {call.id}: its {call.type} input item needs the item id, which the wire never gave"
        )
    return item


def built_in_output(call: ToolCall, output: Any, is_error: bool) -> Message:
    """The output item answering a built-in client call; ``output`` maps to each type's shape as
    :func:`tool_result` documents."""
    answer_type = BUILT_IN_OUTPUTS[call.type]
    if call.type == "apply_patch_call":
        return {
            "type": answer_type,
            "call_id": reply_id(call),
            "status": "failed" if is_error else "completed",
            "output": as_text(output),
        }
    if call.type == "local_shell_call":
        # The SDK's input item pairs by ``id``, which holds the call's call_id.
        return {"type": answer_type, "id": reply_id(call), "output": as_text(output)}
    if call.type == "shell_call":
        answer: Message = {"type": answer_type, "call_id": reply_id(call), "output": _shell_output(output, is_error)}
        limit = call.arguments.get("max_output_length") if isinstance(call.arguments, dict) else None
        if limit is not None:
            answer["max_output_length"] = limit
        return answer
    return {"type": answer_type, "call_id": reply_id(call), "output": _screenshot(call, output)}


def _shell_output(output: Any, is_error: bool) -> list[Any]:
    if isinstance(output, str):
        exit_code = 1 if is_error else 0
        return [
            {
                "stdout": "" if is_error else output,
                "stderr": output if is_error else "",
                "outcome": {"type": "exit", "exit_code": exit_code},
            }
        ]
    chunks = [output] if isinstance(output, dict) else output if isinstance(output, list) else None
    # a chunk missing a field, or holding one of the wrong type, went out as it was: a request the API refuses
    if chunks is not None and all(_shell_chunk(chunk) for chunk in chunks):
        return chunks
    raise LocalProtocolError(
        "a shell_call output is text, or one {stdout, stderr, outcome} object (stdout and stderr text, the "
        "outcome an exit with its exit_code or a timeout) or a list of them, not "
        + (type(output).__name__ if chunks is None else "a chunk lacking them")
    )


def _shell_chunk(chunk: Any) -> bool:
    return (
        isinstance(chunk, dict)
        and isinstance(chunk.get("stdout"), str)
        and isinstance(chunk.get("stderr"), str)
        and _outcome(chunk.get("outcome"))
    )


def _outcome(outcome: Any) -> bool:
    """An outcome the API takes: ``{"type": "timeout"}`` or ``{"type": "exit", "exit_code": <int>}``."""
    if not isinstance(outcome, dict):
        return False
    code = outcome.get("exit_code")
    return outcome.get("type") == "timeout" or (outcome.get("type") == "exit" and type(code) is int)


def _screenshot(call: ToolCall, output: Any) -> dict[str, Any]:
    if isinstance(output, str):
        return {"type": "computer_screenshot", "image_url": output}
    # an image_url or file_id of no text, or another type, went out as it was: a request the API refuses
    if (
        isinstance(output, dict)
        and ("image_url" in output or "file_id" in output)
        and all(isinstance(output[key], str) for key in ("image_url", "file_id") if key in output)
        and output.get("type", "computer_screenshot") == "computer_screenshot"
    ):
        return {"type": "computer_screenshot", **output}
    raise LocalProtocolError(
        f"call {call.id}: a computer_call is answered with a screenshot: an image URL "
        "(https or a data: URL) or an object with image_url or file_id text (of no other type)"
    )
