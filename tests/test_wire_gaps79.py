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


# -- 2. Gemini: the calls of its built-in tools (toolCall) and what they gave (toolResponse) ----------
# google-genai types.Part.tool_call ("Server-side tool call ... The client is expected to echo this
# message back to the API") and tool_response; types.ToolCall {id, tool_type, args} and
# types.ToolResponse {id, tool_type, response}. js-genai ToolCall: "the client should pass this
# ToolCall back to the API in a subsequent turn within a Content message, along with the
# corresponding ToolResponse". REST names are camelCase (toolCall, toolType).

_TOOL_CALL = {"id": "tc_1", "toolType": "GOOGLE_SEARCH_WEB", "args": {"queries": ["northernmost US city"]}}
_TOOL_RESPONSE = {"id": "tc_1", "toolType": "GOOGLE_SEARCH_WEB", "response": {"search_suggestions": "Utqiagvik"}}
_ASKED = {"toolCall": _TOOL_CALL, "thoughtSignature": "c2lnLXRvb2w="}
_ANSWERED = {"toolResponse": _TOOL_RESPONSE, "thoughtSignature": "c2lnLXJlc3A="}
_WEATHER = {"functionCall": {"id": "fc_1", "name": "getWeather", "args": {"city": "Utqiagvik"}}}


def _gemini(*parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    from google.genai.types import GenerateContentResponse

    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}}
    if finish:
        candidate["finishReason"] = finish
    event = {"candidates": [candidate]}
    GenerateContentResponse.model_validate(event)  # the shape is the SDK's
    return event


def _combined() -> list[dict[str, Any]]:
    return [
        _gemini({"text": "Let me look.", "thought": True}),
        _gemini(_ASKED),
        _gemini(_ANSWERED),
        _gemini(_WEATHER, finish="STOP"),
    ]


def test_a_gemini_tool_call_and_its_response_are_kept_and_go_back_in_place() -> None:
    """Before: both parts were reported (part-not-reassembled) and dropped, and the tool call's
    signature went back on an empty text part of its own."""
    result = _same(_read("gemini", _combined()))
    (served,) = result.server_tool_calls
    assert (served.id, served.name, served.type, served.status) == (
        "tc_1",
        "GOOGLE_SEARCH_WEB",
        "tool_call",
        CallStatus.COMPLETE,
    )
    assert served.arguments == _TOOL_CALL["args"] and served.item == _TOOL_CALL
    assert served.thought_signature == "c2lnLXRvb2w="
    assert [r.block for r in result.server_tool_results] == [_ANSWERED]
    assert "part-not-reassembled" not in result.codes()
    (call,) = result.complete_calls
    assert call.name == "getWeather"
    sent = fsm.messages.assistant_message(result, "gemini", dummy_signature=False)  # the wire's signatures alone
    assert sent == {
        "role": "model",
        "parts": [{"text": "Let me look.", "thought": True}, _ASKED, _ANSWERED, _WEATHER],
    }


def test_the_turn_goes_back_as_google_genai_reads_it() -> None:
    from google.genai import types

    content = types.Content.model_validate(
        fsm.messages.assistant_message(fsm.reassemble(_combined(), "gemini"), "gemini")
    )
    parts = content.parts or []
    assert parts[1].tool_call == types.ToolCall(id="tc_1", tool_type="GOOGLE_SEARCH_WEB", args=_TOOL_CALL["args"])
    assert parts[1].thought_signature == b"sig-tool"
    assert parts[2].tool_response is not None and parts[2].tool_response.response == _TOOL_RESPONSE["response"]


def test_half_a_tool_run_does_not_go_back() -> None:
    cut = fsm.reassemble([_gemini({"text": "Looking."}), _gemini(_ASKED)], "gemini")
    assert cut.server_tool_calls[0].status is CallStatus.COMPLETE  # whole, as its part is
    assert fsm.messages.assistant_message(cut, "gemini")["parts"] == [{"text": "Looking."}]
    stray = fsm.reassemble([_gemini({"text": "Found."}), _gemini(_ANSWERED, finish="STOP")], "gemini")
    assert fsm.messages.assistant_message(stray, "gemini")["parts"] == [{"text": "Found."}]


def test_tool_responses_answer_by_id_and_a_resent_one_is_one() -> None:
    other_call = {**_TOOL_CALL, "id": "tc_2", "args": {"queries": ["weather"]}}
    other_response = {**_TOOL_RESPONSE, "id": "tc_2", "response": {"search_suggestions": "cold"}}
    events = [
        _gemini(_ASKED, {"toolCall": other_call}),
        _gemini({"toolResponse": other_response}, _ANSWERED),
        _gemini(_ANSWERED),  # resent
        _gemini({"text": "Cold."}, finish="STOP"),
    ]
    result = _same(_read("gemini", events))
    assert len(result.server_tool_results) == 2 and result.codes().count("resend") == 1
    parts = fsm.messages.assistant_message(result, "gemini")["parts"]
    assert parts == [{"toolCall": other_call}, {"toolResponse": other_response}, _ASKED, _ANSWERED, {"text": "Cold."}]


@pytest.mark.parametrize(
    ("part", "said"),
    [
        ({"toolCall": {**_TOOL_CALL, "args": ["q"]}}, "parts[0].toolCall.args is list, not an object:"),
        ({"toolCall": {**_TOOL_CALL, "toolType": 3}}, "parts[0].toolCall.toolType is int, not a string:"),
        ({"toolCall": "search"}, "parts[0].toolCall is str, not an object,"),
        (
            {"toolResponse": {**_TOOL_RESPONSE, "response": "x"}},
            "parts[0].toolResponse.response is str, not an object:",
        ),
    ],
)
def test_a_tool_part_gemini_would_refuse_back_is_reported_and_not_kept(part: dict[str, Any], said: str) -> None:
    events = [{"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}]}]
    for strict in (False, True):  # reported as any part not read is, strict or not
        result = fsm.reassemble(events, "gemini", strict=strict)
        (found,) = [d.message for d in result.diagnostics if d.code == "part-not-reassembled"]
        assert found == f"{said} the part is not read"
        assert not result.server_tool_calls and not result.server_tool_results


def test_the_tool_parts_through_the_google_genai_client() -> None:
    """google-genai's own stream of the same bytes (its GenerateContentResponse objects) reads as
    the events do; the turn goes back through the same client, and the history check finds nothing
    to refuse in what it sent."""
    from fsm.history import check
    from tests.test_clients import Replay, genai_client

    replay = Replay(sse(_combined(), done=False))
    client = genai_client(replay)
    ask = [{"role": "user", "parts": [{"text": "Northernmost US city, and its weather?"}]}]
    result = fsm.reassemble(client.models.generate_content_stream(model="gemini-3-flash-preview", contents=ask))
    assert result.server_tool_calls[0].item == _TOOL_CALL and [r.block for r in result.server_tool_results] == [
        _ANSWERED
    ]
    (call,) = result.complete_calls
    answer = fsm.messages.tool_result(call, {"temp": -20}, "gemini")
    turn = fsm.messages.assistant_message(result, "gemini")
    history = [*ask, turn, *fsm.messages.tool_results([answer], "gemini")]
    list(client.models.generate_content_stream(model="gemini-3-flash-preview", contents=history))
    sent = replay.sent[-1]["contents"]
    # the SDK writes the request's ToolCall in its own field names (tool_type), which the API reads as it
    # reads toolType (proto JSON takes either)
    asked, answered = sent[1]["parts"][1:3]
    assert asked["toolCall"]["id"] == answered["toolResponse"]["id"] == "tc_1"
    assert (asked["thoughtSignature"], answered["thoughtSignature"]) == ("c2lnLXRvb2w=", "c2lnLXJlc3A=")
    assert not check(sent).rejected


def test_history_reads_a_roleless_content_with_a_tool_call_as_the_models() -> None:
    """Before: a content without a role holding a toolCall was read as the user's, so check called
    it user-after-user and repair merged the model's tool call and response into the user's text."""
    from fsm.history import check, repair

    history = [{"role": "user", "parts": [{"text": "hi"}]}, {"parts": [_ASKED, _ANSWERED, {"text": "It is cold."}]}]
    assert check(history, format="gemini").findings == ()
    assert repair(history, format="gemini") == (history, [])
    # in the model's content, beside its function calls, they are neither calls nor results to pair
    turn = [
        history[0],
        {"role": "model", "parts": [_ASKED, _ANSWERED, _WEATHER]},
        {"role": "user", "parts": [{"functionResponse": {"id": "fc_1", "name": "getWeather", "response": {}}}]},
    ]
    assert check(turn, format="gemini").findings == ()


# -- 3. Anthropic: blocks of no call that Claude's turn goes back with ---------------------------------
# anthropic types/container_upload_block.py ContainerUploadBlock {file_id, type} (a content block of
# RawContentBlockStartEvent; ContainerUploadBlockParam, a ContentBlockParam, takes it back) and
# types/beta/beta_mcp_tool_listing_block.py BetaMCPToolListingBlock {mcp_server_name, tools, type}:
# "Send the assistant message back unchanged, this block included, so later requests use this
# listing instead of asking the MCP server again". Message.to_param() passes every block back.

_LISTING = {"type": "mcp_tool_listing", "mcp_server_name": "crm", "tools": [{"name": "lookup", "input_schema": {}}]}
_UPLOAD = {"type": "container_upload", "file_id": "file_1"}
_LOOKUP = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}


def _claude_turn() -> list[dict[str, Any]]:
    from anthropic.types.beta import BetaRawMessageStreamEvent

    start = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant"}}
    start["message"] |= {"model": "claude-x", "content": [], "stop_reason": None, "stop_sequence": None}
    start["message"] |= {"usage": {"input_tokens": 1, "output_tokens": 1}}
    events = [start]
    for at, block in enumerate([_LISTING, _UPLOAD, {"type": "text", "text": ""}, _LOOKUP]):
        events.append({"type": "content_block_start", "index": at, "content_block": block})
        if block["type"] == "text":
            events.append(
                {"type": "content_block_delta", "index": at, "delta": {"type": "text_delta", "text": "On it."}}
            )
        if block["type"] == "tool_use":
            delta = {"type": "input_json_delta", "partial_json": '{"q": "acme"}'}
            events.append({"type": "content_block_delta", "index": at, "delta": delta})
        events.append({"type": "content_block_stop", "index": at})
    events.append({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None}})
    events[-1]["usage"] = {"output_tokens": 9}
    events.append({"type": "message_stop"})
    adapter = TypeAdapter(BetaRawMessageStreamEvent)
    for event in events:
        adapter.validate_python(event)  # the shape is the SDK's (the listing is a beta block)
    return events


def _named(events: list[dict[str, Any]]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def test_claude_container_upload_and_tool_listing_blocks_go_back_in_place() -> None:
    """Before: each was reported (unknown-event) and dropped, so the next turn lost them (the listing
    asked of the MCP server again)."""
    events = _claude_turn()
    result = _same(_read("anthropic", events, framed=_named(events)))
    assert [(r.block, r.output_index) for r in result.server_tool_results] == [(_LISTING, 0), (_UPLOAD, 1)]
    assert result.problems() == () and "unknown-event" not in result.codes()
    content = fsm.messages.assistant_message(result, "anthropic")["content"]
    assert content == [_LISTING, _UPLOAD, {"type": "text", "text": "On it."}, {**_LOOKUP, "input": {"q": "acme"}}]
    # the SDK's own params take them back
    from anthropic.types import ContainerUploadBlockParam
    from anthropic.types.beta import BetaMCPToolListingBlockParam

    assert set(_UPLOAD) <= ContainerUploadBlockParam.__annotations__.keys()
    assert set(_LISTING) <= BetaMCPToolListingBlockParam.__annotations__.keys()
    # no other format takes them, and the history reads them as neither calls nor results
    assert fsm.messages.assistant_message(result, "openai-responses")[0]["type"] == "message"
    from fsm.history import check

    answer = fsm.messages.tool_result(result.complete_calls[0], "found", "anthropic")
    history = [{"role": "user", "content": "Look acme up."}, {"role": "assistant", "content": content}]
    assert not check([*history, *fsm.messages.tool_results([answer], "anthropic")]).findings


def test_claude_blocks_through_the_anthropic_client() -> None:
    """The anthropic client's raw stream of the same bytes reads as the events do; the turn goes
    back through the same client with the blocks in their places."""
    from tests.test_clients import Replay, anthropic_client, anthropic_http

    events = _claude_turn()
    replay = Replay(_named(events), anthropic_http())
    client = anthropic_client(replay)
    ask = [{"role": "user", "content": "Look acme up."}]
    result = fsm.reassemble(client.messages.create(model="claude-x", max_tokens=64, messages=ask, stream=True))
    assert [r.block for r in result.server_tool_results] == [_LISTING, _UPLOAD] and result.problems() == ()
    answer = fsm.messages.tool_result(result.complete_calls[0], "found", "anthropic")
    history = [
        *ask,
        fsm.messages.assistant_message(result, "anthropic"),
        *fsm.messages.tool_results([answer], "anthropic"),
    ]
    client.messages.create(model="claude-x", max_tokens=64, messages=history, stream=True).close()
    assert replay.sent[-1]["messages"][1]["content"][:2] == [_LISTING, _UPLOAD]
