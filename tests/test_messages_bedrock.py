"""The ``"bedrock"`` next turn (Bedrock Converse messages): built from a reassembled Converse stream,
sent by boto3's own client, whose request must carry every call, its signed and redacted reasoning
as the stream gave them, and pair every answer."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

import fsm
from fsm import messages
from fsm.errors import InvalidInput
from fsm.results import Reasoning, Result
from tests.test_sdk_loop import converse_client

pytest.importorskip("botocore")

ASK = [{"role": "user", "content": [{"text": "What is the temperature in Paris?"}]}]


def _thinking_stream() -> bytes:
    from tests.test_litellm_bedrock import CONVERSE_THINKING, converse_stream

    tool = {"toolUseId": "tooluse_1", "name": "get_temperature"}
    return converse_stream(
        [
            ("messageStart", {"role": "assistant"}),
            *CONVERSE_THINKING,
            ("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"text": "Checking."}}),
            ("contentBlockStop", {"contentBlockIndex": 2}),
            ("contentBlockStart", {"contentBlockIndex": 3, "start": {"toolUse": tool}}),
            ("contentBlockDelta", {"contentBlockIndex": 3, "delta": {"toolUse": {"input": '{"city": "Paris"}'}}}),
            ("contentBlockStop", {"contentBlockIndex": 3}),
            ("messageStop", {"stopReason": "tool_use"}),
        ]
    )


def test_the_assistant_turn_is_converse_s_blocks() -> None:
    result = fsm.reassemble(_thinking_stream(), "bedrock")
    assert messages.assistant_message(result, "bedrock") == {
        "role": "assistant",
        "content": [
            {"reasoningContent": {"reasoningText": {"text": "Think hard.", "signature": "U0lH"}}},
            {"reasoningContent": {"redactedContent": b"RED"}},  # the wire's base64 UkVE, as boto3 takes it
            {"text": "Checking."},
            {"toolUse": {"toolUseId": "tooluse_1", "name": "get_temperature", "input": {"city": "Paris"}}},
        ],
    }


def test_boto3_sends_the_turn_and_its_answers_paired() -> None:
    body = _thinking_stream()
    client = converse_client(body)
    sent: list[dict[str, Any]] = []
    client.meta.events.register(
        "request-created.bedrock-runtime.ConverseStream", lambda request, **_: sent.append(json.loads(request.body))
    )
    result = fsm.reassemble(client.converse_stream(modelId="m", messages=ASK)["stream"])
    # boto3's events hold the redacted block's blob decoded (bytes): it was read as no data at all
    assert result.reasoning == fsm.reassemble(body, "bedrock").reasoning
    assert [(c.id, c.arguments) for c in result.complete_calls] == [("tooluse_1", {"city": "Paris"})]
    answers = [messages.tool_result(call, {"celsius": 21}, "bedrock") for call in result.complete_calls]
    conversation = [*ASK, messages.assistant_message(result, "bedrock"), *messages.tool_results(answers, "bedrock")]
    client.converse_stream(modelId="m", messages=conversation)

    said, answered = sent[-1]["messages"][1], sent[-1]["messages"][2]
    assert said["content"][:2] == [
        {"reasoningContent": {"reasoningText": {"text": "Think hard.", "signature": "U0lH"}}},
        {"reasoningContent": {"redactedContent": "UkVE"}},  # base64 again on the wire, as it came
    ]
    uses = [block["toolUse"]["toolUseId"] for block in said["content"] if "toolUse" in block]
    results = [block["toolResult"]["toolUseId"] for block in answered["content"]]
    assert uses == results == ["tooluse_1"] and answered["role"] == "user"
    assert answered["content"][0]["toolResult"]["content"] == [{"json": {"celsius": 21}}]


def test_answers_take_text_json_and_an_error_status() -> None:
    result = fsm.reassemble(_thinking_stream(), "bedrock")
    call = result.calls[0]
    assert messages.tool_result(call, "21 C", "bedrock") == {
        "toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "21 C"}]}
    }
    failed = messages.tool_result(call, "no such city", "bedrock", is_error=True)
    assert failed["toolResult"]["status"] == "error"
    assert messages.tool_result(call, [1, 2], "bedrock")["toolResult"]["content"] == [{"text": "[1, 2]"}]
    with pytest.raises(InvalidInput, match="must be text or what JSON can write"):
        messages.tool_result(call, {"x": object()}, "bedrock")


def test_a_cut_call_goes_back_only_when_asked_and_then_as_an_empty_input() -> None:
    from tests.test_litellm_bedrock import converse_stream

    start = {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}}
    cut = converse_stream(
        [
            ("messageStart", {"role": "assistant"}),
            ("contentBlockStart", start),
            ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"a": '}}}),
            ("messageStop", {"stopReason": "max_tokens"}),
        ]
    )
    result = fsm.reassemble(cut, "bedrock")
    assert messages.assistant_message(result, "bedrock") == {"role": "assistant", "content": []}
    kept = messages.assistant_message(result, "bedrock", incomplete="include")
    assert kept["content"] == [{"toolUse": {"toolUseId": "t1", "name": "f", "input": {}}}]
    [answer] = messages.incomplete_answers(result, "bedrock")
    assert answer["toolResult"]["status"] == "error" and answer["toolResult"]["toolUseId"] == "t1"


def test_what_converse_cannot_carry_is_refused() -> None:
    custom = fsm.reassemble(
        [
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {"type": "custom_tool_call", "id": "c", "call_id": "call_c", "name": "patch", "input": ""},
            },
            {"type": "response.custom_tool_call_input.delta", "output_index": 0, "item_id": "c", "delta": "x"},
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "item": {
                    "type": "custom_tool_call",
                    "id": "c",
                    "call_id": "call_c",
                    "name": "patch",
                    "input": "x",
                    "status": "completed",
                },
            },
            {"type": "response.completed", "response": {}},
        ],
        "openai-responses",
    )
    with pytest.raises(fsm.LocalProtocolError, match="bedrock"):
        messages.assistant_message(custom, "bedrock")
    broken = fsm.reassemble(_thinking_stream(), "bedrock")
    odd = Result("bedrock", "stop", (), (), reasoning=(Reasoning(redacted="not base64!"),))
    with pytest.raises(InvalidInput, match="not base64"):
        messages.assistant_message(odd, "bedrock")
    assert base64.b64decode("UkVE") == b"RED" and broken.reasoning[1].redacted == "UkVE"


def _tool_use_id_shape() -> tuple[int, Any]:
    import re

    from botocore.session import get_session

    shape = get_session().get_service_model("bedrock-runtime").shape_for("ToolUseId").metadata
    return shape["max"], re.compile(shape["pattern"])


def test_an_id_converse_refuses_goes_mapped_in_the_call_and_its_answer() -> None:
    # A 64-character toolUseId given twice: the engine renames the second <id>_d2, 67 characters,
    # which Bedrock refuses (ToolUseId: 1 to 64 of [a-zA-Z0-9_.:-]). Another provider's ids (a
    # chat stream's, read into a Converse turn) may be longer still, or hold other characters.
    from tests.test_litellm_bedrock import converse_stream

    limit, pattern = _tool_use_id_shape()
    long = "tooluse_" + "x" * 56
    events: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
    for n, city in enumerate(("Paris", "Lyon")):
        start = {"contentBlockIndex": n, "start": {"toolUse": {"toolUseId": long, "name": "get_temperature"}}}
        delta = {"contentBlockIndex": n, "delta": {"toolUse": {"input": json.dumps({"city": city})}}}
        events += [
            ("contentBlockStart", start),
            ("contentBlockDelta", delta),
            ("contentBlockStop", {"contentBlockIndex": n}),
        ]
    body = converse_stream([*events, ("messageStop", {"stopReason": "tool_use"})])
    result = fsm.reassemble(body, "bedrock")
    assert [call.id for call in result.calls] == [long, long + "_d2"]  # the engine's ids stay as they are

    client = converse_client(body)
    sent: list[dict[str, Any]] = []
    client.meta.events.register(
        "request-created.bedrock-runtime.ConverseStream", lambda request, **_: sent.append(json.loads(request.body))
    )
    answers = [messages.tool_result(call, call.arguments["city"], "bedrock") for call in result.calls]
    conversation = [*ASK, messages.assistant_message(result, "bedrock"), *messages.tool_results(answers, "bedrock")]
    client.converse_stream(modelId="m", messages=conversation)
    said, answered = sent[-1]["messages"][1:]
    uses = [block["toolUse"]["toolUseId"] for block in said["content"]]
    assert [block["toolResult"]["toolUseId"] for block in answered["content"]] == uses
    assert uses[0] == long and uses[1] != uses[0]  # an id that fits goes as it is
    assert all(len(i) <= limit and pattern.fullmatch(i) for i in uses)
    assert [block["toolResult"]["content"] for block in answered["content"]] == [
        [{"text": "Paris"}],
        [{"text": "Lyon"}],
    ]
    assert messages.assistant_message(result, "bedrock") == conversation[1]  # the same every time
    # every other format sends the engine's ids, unchanged
    assert [c["id"] for c in messages.assistant_message(result, "anthropic")["content"]] == [long, long + "_d2"]

    # a long id, or one with characters Converse refuses, from another provider's stream
    odd = ["call_" + "a" * 200, "call_" + "a" * 199 + "b", "call/ü 1", ""]
    calls = tuple(fsm.ToolCall(n, i, i, "f", {}, "{}", fsm.CallStatus.COMPLETE) for n, i in enumerate(odd))
    mapped = [
        b["toolUse"]["toolUseId"]
        for b in messages.assistant_message(Result("openai", "tool_calls", calls, ()), "bedrock")["content"]
    ]
    assert len(set(mapped)) == len(odd) and all(len(i) <= limit and pattern.fullmatch(i) for i in mapped)
    assert [messages.tool_result(c, "ok", "bedrock")["toolResult"]["toolUseId"] for c in calls] == mapped


def test_an_id_made_to_meet_another_s_mapping_is_refused() -> None:
    from fsm.messages.bedrock import converse_id

    long = "t" * 80
    calls = tuple(
        fsm.ToolCall(n, i, i, "f", {}, "{}", fsm.CallStatus.COMPLETE) for n, i in enumerate((long, converse_id(long)))
    )
    with pytest.raises(fsm.LocalProtocolError, match="would both go to Converse"):
        messages.assistant_message(Result("openai", "tool_calls", calls, ()), "bedrock")
