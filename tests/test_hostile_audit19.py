"""Hostile audit 19: the next turn built from Results of hostile streams, fsm.history over random
histories at scale, whole against chunked reading, and the command line's hostile files. Each test
failed before its fix."""

from __future__ import annotations

from typing import Any

import pytest

import fsm
from fsm import history, messages
from fsm.harness.vectors import load_vectors
from tests.test_server_tool_turns import web_search_turn


def _vector(name: str) -> list[dict[str, Any]]:
    return next(v.events for v in load_vectors() if v.name == name)


def test_a_server_call_without_its_result_goes_back_beside_client_calls_and_waits_past_them() -> None:
    """The bundled vector streams tool_use, server_tool_use (no result), tool_use. Audit 19 left the
    waiting server call out of the next turn; since server-call-waits-across-results (audit 76) it goes
    back, as code execution paused for client calls must, and fsm.history reads it waiting past the
    client calls' results, which the next request sends."""
    result = fsm.reassemble(_vector("anthropic-blocks-without-any-index"), "anthropic")
    said = messages.assistant_message(result, "anthropic")
    answers = [messages.tool_result(call, "ok", "anthropic") for call in result.complete_calls]
    conversation = [{"role": "user", "content": "go"}, said, *messages.tool_results(answers, "anthropic")]
    assert [block["type"] for block in said["content"]] == ["tool_use", "server_tool_use", "tool_use"]
    assert history.check(conversation).findings == ()


@pytest.mark.parametrize("client_call", [True, False])
def test_a_search_without_its_result_goes_back_with_or_without_client_calls(client_call: bool) -> None:
    """Without client calls the message is the last one (pause_turn), where Anthropic runs it; with
    them, it waits past their results (server-call-waits-across-results)."""
    events = [e for e in web_search_turn("pause_turn", client_call=client_call) if e.get("index") != 2]
    said = messages.assistant_message(fsm.reassemble(events, "anthropic"), "anthropic")
    searches = [block["id"] for block in said["content"] if block["type"] == "server_tool_use"]
    assert searches == ["srvtoolu_1"]


@pytest.mark.parametrize("kind", ["apply_patch_call", "shell_call", "local_shell_call", "computer_call"])
@pytest.mark.parametrize("held", [1.5, True, [], ["ls"], '{"type": "delete_file", "path": "a"}'])
def test_a_built_in_call_whose_action_is_no_object_is_invalid_not_run_and_not_sent(kind: str, held: Any) -> None:
    """It was complete, its arguments the value wrapped under the field's name ({"operation": 1.5}),
    and went back holding it, which the Responses API and its SDK's input item refuse."""
    field = "operation" if kind == "apply_patch_call" else "action"
    item = {"type": kind, "id": "it_1", "call_id": "call_1", "status": "completed", field: held}
    events = [
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {"status": "completed"}},
    ]
    result = fsm.reassemble(events, "openai-responses")
    assert [c.status for c in result.calls] == [fsm.CallStatus.INVALID]
    assert result.complete_calls == () and messages.assistant_message(result, "openai-responses") == []


@pytest.mark.parametrize("kind", ["apply_patch_call", "shell_call", "local_shell_call", "computer_call"])
@pytest.mark.parametrize("held", [{}, {"action": None, "operation": None}])
def test_a_built_in_call_with_no_action_is_invalid_not_run_and_not_sent(kind: str, held: dict[str, Any]) -> None:
    # it was complete with {} for its arguments and went back without the operation the API requires
    item = {"type": kind, "id": "it_1", "call_id": "call_1", "status": "completed", **held}
    events = [
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {"status": "completed"}},
    ]
    result = fsm.reassemble(events, "openai-responses")
    assert [c.status for c in result.calls] == [fsm.CallStatus.INVALID]
    assert "arguments-not-object" in result.codes()
    assert result.complete_calls == () and messages.assistant_message(result, "openai-responses") == []


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ("1.5", "arguments-not-object"),
        ('"x"', "arguments-not-object"),
        (" true ", "arguments-not-object"),
        ("null", "arguments-not-object"),
        ("[1]", "arguments-not-object"),
        ('{"a": 1', "unterminated-arguments"),
        ('"ab', "unterminated-arguments"),
        ("tru", "unterminated-arguments"),
    ],
)
def test_whole_text_that_is_no_object_is_said_so_not_called_unterminated(args: str, code: str) -> None:
    # a number, string or literal never closes an object: such a call ended by the provider was
    # reported unterminated-arguments ("the JSON never closed") though its JSON was whole
    events = [
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function"}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"name": "f"}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": args}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    result = fsm.reassemble(events, "openai-chat")
    assert [(c.status, c.arguments_json) for c in result.calls] == [(fsm.CallStatus.INVALID, args)]
    assert result.codes() == [code]
    with pytest.raises(fsm.RemoteProtocolError, match=code):
        fsm.reassemble(events, "openai-chat", strict=True)
