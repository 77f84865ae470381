"""Hostile audit 71: aliasing and lifecycle misuse through the public API.

Gateways and agent frameworks edit what they get (append to a messages list, edit a call's arguments,
pop a field before sending) and reuse objects across turns. What the audit found, each fixed here
with a test that failed before:

* ``fsm.messages.assistant_message`` put the result's own dicts and lists in the message: a call's
  ``arguments`` as Anthropic's ``input``, Gemini's ``args``, Ollama's and Converse's arguments, a
  server result's ``block`` contents, a Responses built-in call's ``action``/``operation``. A caller
  editing the message (redacting an argument before logging, say) changed ``call.arguments``, the
  calls it then ran and every later message built from the result.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import fsm
from fsm.errors import LocalProtocolError
from fsm.harness.vectors import Vector, load_vectors
from fsm.messages import FORMATS, assistant_message

# -- fsm.messages: the message is the caller's to edit ------------------------------------------------------


def _read(vector: Vector) -> fsm.Result:
    reassembler = fsm.Reassembler(vector.shape, choice=vector.choice, policies=fsm.Policies(**vector.policies))
    try:
        for event in copy.deepcopy(vector.events):
            reassembler.feed(event)
        return reassembler.close()
    except fsm.ToolcallFSMError:
        return reassembler.close()


def _containers(value: Any) -> list[Any]:
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            found.append(item)
            stack.extend(item)
    return found


def _vandalise(message: Any) -> None:
    """What a careless caller may do to a message it was given: every dict and list in it emptied."""
    for container in _containers(message):
        container.clear()


_VECTORS = [vector for vector in load_vectors() if vector.events]


@pytest.mark.parametrize("vector", _VECTORS, ids=[vector.name for vector in _VECTORS])
def test_editing_a_next_turn_message_changes_neither_the_result_nor_the_next_message(vector: Vector) -> None:
    result = _read(vector)
    before = repr(result)
    for format in FORMATS:
        for incomplete in ("omit", "include"):
            try:
                message = assistant_message(result, format, incomplete=incomplete)  # type: ignore[call-overload]
            except LocalProtocolError:  # a call the format cannot carry
                continue
            sent = json.dumps(message, sort_keys=True, default=repr)
            _vandalise(message)
            assert repr(result) == before, (format, incomplete)
            again = assistant_message(result, format, incomplete=incomplete)  # type: ignore[call-overload]
            assert json.dumps(again, sort_keys=True, default=repr) == sent, (format, incomplete)


def test_an_anthropic_input_edited_leaves_the_call_to_run_as_it_came() -> None:
    stream = [
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": [], "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t1", "name": "pay"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"to":'}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": ' "bob"}'}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]
    result = fsm.reassemble(stream)
    message = assistant_message(result, "anthropic")
    message["content"][0]["input"]["to"] = "[redacted]"  # a gateway's log redaction
    assert result.calls[0].arguments == {"to": "bob"}
    assert assistant_message(result, "anthropic")["content"][0]["input"] == {"to": "bob"}


def test_a_result_built_by_hand_nested_past_the_stack_or_holding_itself_is_copied_too() -> None:
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(5000):
        inner["a"] = inner = {}
    looped: dict[str, Any] = {"x": 1}
    looped["self"] = looped
    for arguments in (deep, looped):
        complete = fsm.CallStatus.COMPLETE
        call = fsm.ToolCall(0, "c", "c", "f", arguments=arguments, arguments_json="{}", status=complete)
        result = fsm.Result(provider="anthropic", finish_reason="tool_calls", calls=(call,), diagnostics=())
        sent = assistant_message(result, "anthropic")["content"][0]["input"]
        assert sent is not arguments
        assert type(sent) is dict
    assert sent["self"] is sent  # the loop copied as a loop of the copy
