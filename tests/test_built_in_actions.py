"""A Responses built-in client call whose action is an object its tool cannot run.

The action (``operation`` for apply_patch) is the call's arguments: one that lacks a field its tool
needs, or gives one of another type (a shell call's ``commands`` holding a non-string), is no call
to run, and the API refuses it back. Such a call is invalid with its raw text (``unusable-action``),
never among the complete calls, never in a next turn."""

from __future__ import annotations

import json
import re
from typing import Any

import pydantic
import pytest
from openai.types.responses import ResponseApplyPatchToolCall, ResponseComputerToolCall, ResponseFunctionShellToolCall
from openai.types.responses.response_output_item import LocalShellCall

import fsm
from fsm import CallStatus, Reassembler, RemoteProtocolError, messages

SDK_ITEM = {
    "shell_call": ResponseFunctionShellToolCall,
    "local_shell_call": LocalShellCall,
    "apply_patch_call": ResponseApplyPatchToolCall,
    "computer_call": ResponseComputerToolCall,
}
FIELD = {
    "shell_call": "action",
    "local_shell_call": "action",
    "apply_patch_call": "operation",
    "computer_call": "action",
}
EXEC = {"type": "exec", "command": ["ls"], "env": {}}
CLICK = {"type": "click", "button": "left", "x": 1, "y": 2}

UNUSABLE = [
    ("shell_call", {"commands": ["ls", False]}, 'has commands ["ls", false]'),
    ("shell_call", {"commands": "ls"}, 'has commands "ls"'),
    ("shell_call", {"timeout_ms": 5}, "has no commands"),
    ("shell_call", {"commands": ["ls"], "timeout_ms": "5"}, 'has timeout_ms "5"'),
    ("local_shell_call", {**EXEC, "command": [1]}, "has command [1]"),
    ("local_shell_call", {**EXEC, "env": {"A": 1}}, 'has env {"A": 1}'),
    ("local_shell_call", {**EXEC, "type": "run"}, "type is 'run', not 'exec'"),
    ("apply_patch_call", {"type": "update_file", "diff": "-a\n+b\n"}, "has no path"),
    ("apply_patch_call", {"type": "create_file", "path": "a.txt", "diff": None}, "has diff null"),
    ("apply_patch_call", {"type": "rename_file", "path": "a.txt"}, "type is 'rename_file'"),
    ("computer_call", {"type": "click", "x": 1, "y": 2}, "(click) has no button"),
    ("computer_call", {"type": "type", "text": 7}, "(type) has text 7"),
    ("computer_call", {"type": "drag", "path": [{"x": 1}]}, 'has path [{"x": 1}]'),
    ("computer_call", {"x": 1}, "type is NoneType, not a string"),
]
# Values the API's schema fixes (openai-python's item models): a click's button is one of five
# names; coordinates and scroll deltas are integers (JSON true is none, though pydantic's lax mode
# takes it); keys are a list of strings; a drag's path a list of {x, y} integers.
BUTTONS = [
    ("computer_call", {**CLICK, "button": "middle"}, 'has button "middle", not one of left, right, wheel'),
    ("computer_call", {**CLICK, "button": 1}, "has button 1"),
    ("computer_call", {**CLICK, "button": "LEFT"}, 'has button "LEFT"'),
    ("computer_call", {**CLICK, "button": ["left"]}, 'has button ["left"]'),
]
VALUES = [
    ("computer_call", {**CLICK, "x": True}, "(click) has x true"),
    ("computer_call", {"type": "move", "x": 1, "y": 2.5}, "(move) has y 2.5"),
    ("computer_call", {"type": "scroll", "x": 1, "y": 2, "scroll_x": 0, "scroll_y": False}, "has scroll_y false"),
    ("computer_call", {"type": "keypress", "keys": "ctrl"}, '(keypress) has keys "ctrl"'),
    ("computer_call", {"type": "keypress", "keys": [["ctrl"]]}, '(keypress) has keys [["ctrl"]]'),
    ("computer_call", {"type": "drag", "path": [{"x": 1, "y": True}]}, "(drag) has path"),
    ("computer_call", {"type": "drag", "path": {"x": 1, "y": 2}}, "(drag) has path"),
    ("computer_call", {**CLICK, "keys": ["a", None]}, '(click) has keys ["a", null]'),
]
USABLE = [
    *(("computer_call", {**CLICK, "button": button}) for button in ("right", "wheel", "back", "forward")),
    ("computer_call", {"type": "drag", "path": [{"x": 1, "y": 2}, {"x": 3, "y": 4}], "keys": ["shift"]}),
    ("shell_call", {"commands": ["ls", "make test"], "timeout_ms": None, "max_output_length": 4096}),
    ("local_shell_call", {**EXEC, "env": {"A": "1"}, "working_directory": "/tmp", "user": None}),
    ("apply_patch_call", {"type": "delete_file", "path": "a.txt"}),
    ("apply_patch_call", {"type": "update_file", "path": "a.txt", "diff": "-a\n+b\n"}),
    ("computer_call", CLICK),
    ("computer_call", {"type": "screenshot"}),
    ("computer_call", {"type": "zoom", "factor": 2}),  # a type this release does not know: the executor's to judge
]


def stream(call_type: str, value: dict[str, Any]) -> list[dict[str, Any]]:
    item = {"type": call_type, "id": "it_1", "call_id": "call_1", FIELD[call_type]: value}
    return [
        {"type": "response.created", "response": {"id": "resp_1", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "status": "in_progress"}},
        {"type": "response.output_item.done", "output_index": 0, "item": {**item, "status": "completed"}},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}},
    ]


def byte_by_byte(events: list[dict[str, Any]]) -> fsm.Result:
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    reader = Reassembler("openai-responses")
    for at in range(len(body)):
        reader.feed_bytes(body[at : at + 1])
    return reader.close()


@pytest.mark.parametrize(("call_type", "value", "said"), UNUSABLE + BUTTONS + VALUES)
def test_an_action_its_tool_cannot_take_makes_the_call_invalid_and_it_is_not_sent(
    call_type: str, value: dict[str, Any], said: str
) -> None:
    events = stream(call_type, value)
    result = fsm.reassemble(events, "openai-responses")
    (call,) = result.calls
    assert (call.status, call.arguments, json.loads(call.arguments_json or "")) == (CallStatus.INVALID, None, value)
    (why,) = [d for d in result.diagnostics if d.code == "unusable-action"]
    assert said in why.message and why.event == 3
    assert not result.complete_calls
    for incomplete in ("omit", "include"):
        assert messages.assistant_message(result, "openai-responses", incomplete=incomplete) == []
    assert byte_by_byte(events) == result
    strict = Reassembler("openai-responses", strict=True)
    with pytest.raises(RemoteProtocolError, match=re.escape(said)):
        for event in events:
            strict.feed(event)
    assert strict.close().calls[0].status is CallStatus.INVALID


@pytest.mark.parametrize(
    ("call_type", "value", "said"), UNUSABLE[:2] + UNUSABLE[4:6] + UNUSABLE[7:9] + UNUSABLE[10:] + BUTTONS
)
def test_the_openai_sdk_refuses_each_such_item_too(call_type: str, value: dict[str, Any], said: str) -> None:
    item = stream(call_type, value)[2]["item"]
    with pytest.raises(pydantic.ValidationError):
        SDK_ITEM[call_type].model_validate(item)


@pytest.mark.parametrize(("call_type", "value"), USABLE)
def test_an_action_its_tool_takes_is_complete_and_goes_back(call_type: str, value: dict[str, Any]) -> None:
    result = fsm.reassemble(stream(call_type, value), "openai-responses")
    (call,) = result.complete_calls
    assert call.arguments == value and "unusable-action" not in result.codes()
    (sent,) = messages.assistant_message(result, "openai-responses")
    assert sent[FIELD[call_type]] == value


def test_each_action_of_a_computer_batch_is_checked() -> None:
    events = stream("computer_call", {})
    for event in events[1:3]:
        item = event["item"]
        del item["action"]
        item["actions"] = [CLICK, {"type": "keypress", "keys": ["ctrl", 3]}]
    result = fsm.reassemble(events, "openai-responses")
    assert result.calls[0].status is CallStatus.INVALID
    assert "actions[1]: the computer action (keypress) has keys" in result.diagnostics[0].message
