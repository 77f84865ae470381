"""Audit 79: what the wire reported but the result did not keep, or the next turn did not send back.

Each stream is built inline, shaped as the installed SDK's own type says (cited beside each) and
validated by that type, and read whole and from its bytes a byte at a time."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

import fsm
import fsm.messages
from fsm import CallStatus
from tests.helpers import sse
from tests.test_wire_currency76 import _RESPONSE

_RESPONSES = TypeAdapter(ResponseStreamEvent)


def _read(provider: str, events: list[dict[str, Any]], *, framed: bytes | None = None) -> list[fsm.Result]:
    """The stream read from its events, and from its bytes (SSE, or ``framed``) whole and a byte at a time."""
    fed = fsm.Reassembler(provider)
    for event in events:
        fed.feed(event)
    results = [fed.close()]
    wire = framed if framed is not None else sse(events, done=False)
    for size in (len(wire), 1):
        reader = fsm.Reassembler(provider)
        for at in range(0, len(wire), size):
            reader.feed_bytes(wire[at : at + size])
        results.append(reader.close())
    return results


def _same(results: list[fsm.Result]) -> fsm.Result:
    first = results[0]
    for other in results[1:]:
        assert other.calls == first.calls and other.codes() == first.codes()
        assert other.server_tool_calls == first.server_tool_calls
        assert other.server_tool_results == first.server_tool_results
    return first


# -- 1. OpenAI Responses: a shell call's commands, as they stream ------------------------------------
# openai types/responses/response_shell_call_command_{added,delta,done}_event.py: each names the item
# by output_index alone and the command by command_index; added carries the command so far, delta a
# piece of it, done the whole of it. ResponseFunctionShellToolCall: action {commands, timeout_ms,
# max_output_length}, status in_progress | completed | incomplete.

_SHELL = {"type": "shell_call", "id": "sh_1", "call_id": "call_sh", "action": {"commands": []}, "status": "in_progress"}
_ACTION = {"commands": ["ls -la", 'grep "é" a.txt'], "timeout_ms": 5000, "max_output_length": None}


def _command(n: int, kind: str, command_index: int, said: str) -> dict[str, Any]:
    field = "delta" if kind == "delta" else "command"
    event = {"type": f"response.shell_call_command.{kind}", "sequence_number": n, "output_index": 0}
    return event | {"command_index": command_index, field: said}


def _shell_streamed() -> list[dict[str, Any]]:
    return [
        {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": _SHELL},
        _command(2, "added", 0, ""),
        _command(3, "delta", 0, "ls "),
        _command(4, "delta", 0, "-la"),
        _command(5, "done", 0, "ls -la"),
        _command(6, "added", 1, ""),
        _command(7, "delta", 1, 'grep "'),
        _command(8, "delta", 1, 'é" a.t'),
    ]


def _shell_done(action: dict[str, Any] = _ACTION) -> list[dict[str, Any]]:
    item = {**_SHELL, "action": action, "status": "completed"}
    return [
        _command(9, "delta", 1, "xt"),
        _command(10, "done", 1, 'grep "é" a.txt'),
        {"type": "response.output_item.done", "sequence_number": 11, "output_index": 0, "item": item},
        {"type": "response.completed", "sequence_number": 12, "response": _RESPONSE},
    ]


def _validated(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for event in events:
        _RESPONSES.validate_python(event)  # the shape is the SDK's
    return events


def test_a_shell_call_cut_before_its_item_ends_carries_the_commands_that_streamed() -> None:
    """Before: the command events were read past, and the cut call came back truncated with no text
    (``cut after 0 characters``): the commands that streamed were lost."""
    cut = _validated([*_shell_streamed(), {"type": "response.incomplete", "sequence_number": 9, "response": _RESPONSE}])
    result = _same(_read("openai-responses", cut))
    (call,) = result.calls
    assert call.status is CallStatus.TRUNCATED and call.type == "shell_call" and call.id == "call_sh"
    assert call.arguments_json == '{"commands": ["ls -la", "grep \\"é\\" a.t'
    assert "truncated" in result.codes() and "arguments-replaced" not in result.codes()
    # not sent back (its action may be missing), and listed as left out
    assert fsm.messages.assistant_message(result, "openai-responses") == []
    assert fsm.messages.omitted(result) == (call,)


def test_a_cut_right_after_a_command_ends_is_still_no_whole_call() -> None:
    cut = _validated(_shell_streamed()[:5])
    (call,) = _same(_read("openai-responses", cut)).calls
    assert call.status is CallStatus.TRUNCATED and call.arguments_json == '{"commands": ["ls -la"'


def test_a_whole_shell_call_takes_its_item_action_quietly_when_the_commands_agree() -> None:
    events = _validated([*_shell_streamed(), *_shell_done()])
    result = _same(_read("openai-responses", events))
    (call,) = result.complete_calls
    assert call.arguments == _ACTION  # the item's word: its limits, which no command event carries
    assert json.loads(call.arguments_json) == _ACTION
    assert "arguments-replaced" not in result.codes() and result.problems() == ()
    (sent,) = fsm.messages.assistant_message(result, "openai-responses")
    assert sent["action"] == _ACTION and sent["call_id"] == "call_sh"


def test_an_item_whose_commands_differ_from_those_streamed_wins_and_says_so() -> None:
    other = {**_ACTION, "commands": ["ls -la", "rm -rf build"]}
    result = _same(_read("openai-responses", _validated([*_shell_streamed(), *_shell_done(other)])))
    assert result.complete_calls[0].arguments == other
    assert result.codes().count("arguments-replaced") == 1


def test_a_command_done_that_differs_from_its_pieces_is_the_commands_word() -> None:
    events = [*_shell_streamed()[:4], _command(5, "done", 0, "ls -l")]
    result = _same(_read("openai-responses", _validated(events)))
    (call,) = result.calls
    assert call.arguments_json == '{"commands": ["ls -l"' and "arguments-replaced" in result.codes()


def test_command_events_for_an_item_never_announced_open_the_call() -> None:
    events = _validated(_shell_streamed()[1:] + _shell_done())
    result = _same(_read("openai-responses", events))
    (call,) = result.calls
    assert call.status is CallStatus.COMPLETE and call.arguments == _ACTION
    assert call.wire_id == call.reply_id == "call_sh"  # the item's end brought it (late-id)
    assert {"unopened-call", "late-id"} <= set(result.codes()) and "arguments-replaced" not in result.codes()


def test_command_events_beside_a_whole_item_or_after_its_end_add_nothing() -> None:
    whole = {**_SHELL, "action": {"commands": ["ls"]}, "status": "completed"}
    events = [
        {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": whole},
        _command(2, "added", 0, "ls"),
        _command(3, "done", 0, "ls"),
        {"type": "response.output_item.done", "sequence_number": 4, "output_index": 0, "item": whole},
        _command(5, "done", 0, "rm"),
    ]
    result = _same(_read("openai-responses", _validated(events)))
    assert result.complete_calls[0].arguments == {"commands": ["ls"]} and result.codes() == ["no-finish-reason"]


def test_odd_command_events_are_said_not_read() -> None:
    function = {"type": "function_call", "id": "fc_1", "call_id": "call_f", "name": "f", "arguments": ""}
    events = [
        {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": _SHELL},
        _command(2, "added", 2, "ls"),  # past the next command: no place to put it
        {"type": "response.output_item.added", "sequence_number": 3, "output_index": 1, "item": function},
        {**_command(4, "delta", 0, "ls"), "output_index": 1},  # at a function call
    ]
    result = _same(_read("openai-responses", _validated(events)))
    said = [d.message for d in result.diagnostics if d.code == "part-not-reassembled"]
    assert said == [
        "response.shell_call_command.added for command_index 2, while 0 commands came: not read",
        "response.shell_call_command.delta for the function call at output_index 1",
    ]
    assert [c.arguments_json for c in result.calls] == ["", ""]


def test_the_shell_commands_through_the_openai_client() -> None:
    """The openai client's own stream of the same bytes (raw events, as ``responses.create`` yields
    them) reads as the events do, and the call goes back through the same client."""
    from tests.test_clients import Replay, openai_client

    events = _validated([*_shell_streamed(), *_shell_done()])
    replay = Replay(sse(events, done=False))
    client = openai_client(replay)
    result = fsm.reassemble(client.responses.create(model="gpt-x", input="List it.", stream=True))
    assert result.complete_calls[0].arguments == _ACTION and result.problems() == ()
    items = fsm.messages.assistant_message(result, "openai-responses")
    client.responses.create(model="gpt-x", input=items, stream=True).close()
    assert replay.sent[-1]["input"][0]["action"] == _ACTION


@pytest.mark.parametrize("cut_at", range(2, 9))
def test_every_cut_of_the_commands_is_truncated_with_a_prefix_of_the_whole(cut_at: int) -> None:
    events = _validated(_shell_streamed()[:cut_at])
    (call,) = _same(_read("openai-responses", events)).calls
    assert call.status is CallStatus.TRUNCATED
    assert '{"commands": ["ls -la", "grep \\"é\\" a.txt"]}'.startswith(call.arguments_json)
