"""``fsm.messages``: the assistant message and tool results each provider expects back, checked
against the SDKs' own request types (pydantic validates the ``*Param`` TypedDicts and google-genai's
models; a validated value equal to the input means no key was unknown or coerced) and against
``fsm.history.check``."""

from __future__ import annotations

import base64
import json
from typing import Any

import attrs
import pytest

from fsm import Reassembler, Result, messages
from fsm.errors import InvalidInput, LocalProtocolError
from fsm.history import check
from fsm.results import CallStatus
from tests.concurrent_streams import HISTORY_FORMAT
from tests.conftest import CAPTURES, require_captures

pydantic = pytest.importorskip("pydantic")


def materialized(value: Any) -> Any:
    """A validated value as plain data: pydantic validates ``Iterable`` fields lazily."""
    if isinstance(value, dict):
        return {k: materialized(v) for k, v in value.items()}
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return [materialized(v) for v in value]


def same_after_validation(type_: Any, value: Any) -> None:
    adapter = pydantic.TypeAdapter(type_)  # kept alive while its lazy iterators are read
    validated = materialized(adapter.validate_python(value))
    assert json.loads(json.dumps(validated)) == value


def validate(format: str, assistant: Any, answers: list[dict[str, Any]]) -> None:
    """The assistant message and the answers, each against the SDK's request type for ``format``."""
    if format == "openai-chat":
        chat = pytest.importorskip("openai.types.chat")
        same_after_validation(chat.ChatCompletionAssistantMessageParam, assistant)
        for answer in answers:
            same_after_validation(chat.ChatCompletionToolMessageParam, answer)
    elif format == "openai-responses":
        responses = pytest.importorskip("openai.types.responses")
        for item in [*assistant, *answers]:
            same_after_validation(responses.ResponseInputItemParam, item)
    elif format == "anthropic":
        types = pytest.importorskip("anthropic.types")
        for message in [assistant, *messages.tool_results(answers, "anthropic")]:
            same_after_validation(types.MessageParam, message)
    elif format == "ollama":
        # ollama's Message ignores keys it does not know: a dump equal to the input means none was lost
        message_type = pytest.importorskip("ollama").Message
        for message in [assistant, *answers]:
            assert message_type.model_validate(message).model_dump(exclude_none=True) == message
    elif format == "cohere":
        cohere = pytest.importorskip("cohere")
        for message in [assistant, *answers]:
            model = cohere.AssistantChatMessageV2 if message["role"] == "assistant" else cohere.ToolChatMessageV2
            assert model.model_validate(message).model_dump(exclude_none=True) == message
    else:
        genai = pytest.importorskip("google.genai.types")
        for content in [assistant, *messages.tool_results(answers, "gemini")]:
            # google-genai models forbid unknown keys; signatures are bytes there, written back as
            # url-safe base64, so they are compared decoded.
            model = genai.Content.model_validate(content)
            dumped = model.model_dump(mode="json", by_alias=True, exclude_none=True)
            assert signatures_decoded(dumped) == signatures_decoded(content)


def signatures_decoded(content: dict[str, Any]) -> dict[str, Any]:
    parts = [
        {**p, "thoughtSignature": base64.urlsafe_b64decode(p["thoughtSignature"].replace("+", "-").replace("/", "_"))}
        if "thoughtSignature" in p
        else p
        for p in content["parts"]
    ]
    return {**content, "parts": parts}


def history(format: str, result: Result, incomplete: Any = "omit") -> list[dict[str, Any]]:
    """A user turn, the assistant turn, and an answer to every call the assistant message holds."""
    assistant = messages.assistant_message(result, format, incomplete=incomplete)  # type: ignore[call-overload]
    answers = [messages.tool_result(call, {"ok": True}, format) for call in result.complete_calls]
    if incomplete == "include":
        answers += messages.incomplete_answers(result, format)  # type: ignore[arg-type]
    validate(format, assistant, answers)
    first = {"role": "user", "parts": [{"text": "go"}]} if format == "gemini" else {"role": "user", "content": "go"}
    turn = assistant if isinstance(assistant, list) else [assistant]
    return [first, *turn, *messages.tool_results(answers, format)]  # type: ignore[arg-type]


def replay(path: str, provider: str = "auto") -> Result:
    require_captures()
    r = Reassembler(provider)
    r.feed_bytes((CAPTURES / path).read_bytes())
    return r.close()


CASES = [
    ("openai_chat/openai-python-parallel-two-tools.sse", "openai-chat"),
    ("openai_chat/pydantic-ai-parallel-empty-args.sse", "openai-chat"),
    ("deepseek/vercel-deepseek-reasoner-tool-call.jsonl", "openai-chat"),
    ("openai_responses/pydantic-ai-responses-get-capital.sse", "openai-responses"),
    ("openai_responses/vercel-lmstudio-glm-done-without-deltas.jsonl", "openai-responses"),
    ("anthropic/magentic-claude-3-opus-parallel-plus-minus.sse", "anthropic"),
    ("anthropic/simonw-llm-haiku-4.5-two-empty-arg-calls.sse", "anthropic"),
    ("anthropic/anthropic-sdk-max-tokens-truncated-tool-json.sse", "anthropic"),
    ("gemini/adk-go-gemini-2.5-flash-parallel-sum.sse", "gemini"),
    ("gemini/adk-go-gemini-3-flash-preview-parallel-sum.sse", "gemini"),
    ("gemini_vertex_partial_args/vercel-vertex-3.1-pro-partial-args-parallel.jsonl", "gemini"),
    ("ollama_native/ai4j-qwen2.5-parallel-unicode.jsonl", "ollama"),
    ("cohere/vercel-cohere-tool-call.jsonl", "cohere"),
]


@pytest.mark.parametrize(("path", "format"), CASES)
@pytest.mark.parametrize("incomplete", ["omit", "include"])
def test_capture_turns_validate_and_pair(path: str, format: str, incomplete: str) -> None:
    result = replay(path)
    built = history(format, result, incomplete)
    report = check(built, HISTORY_FORMAT[format])
    assert not report.rejected, report.findings
    if result.complete_calls or incomplete == "include":  # the format shows only where calls are
        assert check(built).format == HISTORY_FORMAT[format]


def test_wire_ids_and_gemini_signatures_go_back_on_their_calls() -> None:
    result = replay("gemini/adk-go-gemini-3-flash-preview-parallel-sum.sse")
    content = messages.assistant_message(result, "gemini")
    calls = [p for p in content["parts"] if "functionCall" in p]
    assert [p["functionCall"]["id"] for p in calls] == [c.wire_id for c in result.calls]
    assert [p.get("thoughtSignature") for p in calls] == [c.thought_signature for c in result.calls]
    assert any(p.get("thoughtSignature") for p in calls)


def test_gemini_2_calls_without_wire_ids_get_no_id() -> None:
    result = replay("gemini/adk-go-gemini-2.5-flash-parallel-sum.sse")
    content = messages.assistant_message(result, "gemini")
    answer = messages.tool_result(result.calls[0], 3, "gemini")
    assert all("id" not in p["functionCall"] for p in content["parts"] if "functionCall" in p)
    assert answer == {"functionResponse": {"name": result.calls[0].name, "response": {"output": 3}}}


def test_truncated_call_is_left_out_by_default_and_listed() -> None:
    result = replay("anthropic/anthropic-sdk-max-tokens-truncated-tool-json.sse")
    assert [c.status for c in result.calls] == [CallStatus.TRUNCATED]
    assert result.complete_calls == ()
    message = messages.assistant_message(result, "anthropic")
    assert [b["type"] for b in message["content"]] == ["text"]
    assert message["content"][0]["text"] == result.text and result.text.startswith("I'll create")
    assert messages.omitted(result) == result.calls
    assert "truncated" in result.codes()


def test_truncated_call_included_is_answered_with_an_error() -> None:
    result = replay("anthropic/anthropic-sdk-max-tokens-truncated-tool-json.sse")
    message = messages.assistant_message(result, "anthropic", incomplete="include")
    (use,) = [b for b in message["content"] if b["type"] == "tool_use"]
    (answer,) = messages.incomplete_answers(result, "anthropic")
    assert use["input"] == {} and use["id"] == result.calls[0].id
    assert answer["tool_use_id"] == use["id"] and answer["is_error"] is True
    assert "cut off" in answer["content"]


def synthetic(provider: str, wire: list[dict[str, Any]]) -> Result:
    r = Reassembler(provider)
    for event in wire:
        r.feed(event)
    return r.close()


def anthropic_thinking_turn() -> list[dict[str, Any]]:
    return [
        {
            "type": "message_start",
            "message": {
                "id": "m",
                "role": "assistant",
                "content": [],
                "usage": {"input_tokens": 9, "output_tokens": 1},
            },
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Need "}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "weather."}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCkYI"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "RED"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "Checking."}},
        {"type": "content_block_stop", "index": 2},
        {
            "type": "content_block_start",
            "index": 3,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 3,
            "delta": {"type": "input_json_delta", "partial_json": '{"city": "Oslo"}'},
        },
        {"type": "content_block_stop", "index": 3},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 42}},
        {"type": "message_stop"},
    ]


def test_anthropic_thinking_blocks_come_first_with_their_signatures() -> None:
    result = synthetic("anthropic", anthropic_thinking_turn())
    assert result.text == "Checking."
    assert [(r.text, r.signature, r.redacted) for r in result.reasoning] == [
        ("Need weather.", "EqQBCkYI", None),
        ("", None, "RED"),
    ]
    assert result.usage == {"input_tokens": 9, "output_tokens": 42}
    assert result.diagnostics == ()
    message = messages.assistant_message(result, "anthropic")
    assert message["content"] == [
        {"type": "thinking", "thinking": "Need weather.", "signature": "EqQBCkYI"},
        {"type": "redacted_thinking", "data": "RED"},
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {"city": "Oslo"}},
    ]
    built = history("anthropic", result)
    assert not check(built, "anthropic").rejected


def test_anthropic_thinking_cut_before_its_signature_is_not_sent() -> None:
    wire = anthropic_thinking_turn()[:4]
    result = synthetic("anthropic", wire)
    assert result.reasoning[0].text == "Need weather." and result.reasoning[0].signature is None
    assert messages.assistant_message(result, "anthropic")["content"] == []


def gemini_thinking_turn() -> list[dict[str, Any]]:
    def event(*parts: dict[str, Any], finish: str | None = None, usage: int = 0) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        return {"candidates": [candidate], "usageMetadata": {"promptTokenCount": 5, "totalTokenCount": 5 + usage}}

    return [
        event({"text": "Plan: ", "thought": True}),
        event({"text": "look it up.", "thought": True}),
        event({"text": "Looking "}, usage=3),
        event({"text": "it up.", "thoughtSignature": "VEVYVA=="}, usage=4),
        event({"functionCall": {"name": "w", "args": {"city": "Oslo"}, "id": "g1"}, "thoughtSignature": "Q0FMTA=="}),
        event({"text": ""}, finish="STOP", usage=9),
    ]


def test_gemini_thoughts_text_signature_and_usage() -> None:
    result = synthetic("gemini", gemini_thinking_turn())
    assert [(r.text, r.signature) for r in result.reasoning] == [("Plan: look it up.", None)]
    assert (result.text, result.text_signature) == ("Looking it up.", "VEVYVA==")
    assert result.usage == {"promptTokenCount": 5, "totalTokenCount": 14}
    content = messages.assistant_message(result, "gemini")
    assert content["parts"] == [
        {"text": "Plan: look it up.", "thought": True},
        {"text": "Looking it up.", "thoughtSignature": "VEVYVA=="},
        {"functionCall": {"name": "w", "args": {"city": "Oslo"}, "id": "g1"}, "thoughtSignature": "Q0FMTA=="},
    ]
    built = history("gemini", result)
    assert not check(built, "gemini").rejected


def test_responses_reasoning_items_go_back_with_encrypted_content() -> None:
    wire = [
        {"type": "response.created", "response": {"id": "r"}},
        {"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1"}},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "Weather needed."}],
                "encrypted_content": "gAAAA",
            },
        },
        {"type": "response.output_text.delta", "output_index": 1, "delta": "On it."},
        {
            "type": "response.output_item.added",
            "output_index": 2,
            "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "w", "arguments": ""},
        },
        {"type": "response.function_call_arguments.delta", "output_index": 2, "delta": '{"city":"Oslo"}'},
        {
            "type": "response.output_item.done",
            "output_index": 2,
            "item": {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "w",
                "arguments": '{"city":"Oslo"}',
            },
        },
        {"type": "response.completed", "response": {"id": "r", "usage": {"input_tokens": 3, "output_tokens": 7}}},
    ]
    result = synthetic("openai-responses", wire)
    assert result.usage == {"input_tokens": 3, "output_tokens": 7}
    items = messages.assistant_message(result, "openai-responses")
    assert items == [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Weather needed."}],
            "encrypted_content": "gAAAA",
        },
        {"type": "message", "role": "assistant", "content": "On it."},
        # The call's item id goes back beside the reasoning: the API pairs the two by it.
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "w", "arguments": '{"city":"Oslo"}'},
    ]
    validate("openai-responses", items, [messages.tool_result(result.calls[0], "sunny", "openai-responses")])

    # Without its reasoning item, a call's item id would name reasoning the request lacks: it stays out.
    bare = [e for e in wire if "reasoning" not in str(e.get("item", {}).get("type"))]
    items = messages.assistant_message(synthetic("openai-responses", bare), "openai-responses")
    assert items[-1] == {"type": "function_call", "call_id": "call_1", "name": "w", "arguments": '{"city":"Oslo"}'}


def test_responses_custom_calls_keep_their_item_id_beside_reasoning() -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
    custom = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_c", "name": "sh", "input": "ls"}
    wire = [
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
        {"type": "response.output_item.added", "output_index": 1, "item": {**custom, "input": ""}},
        {"type": "response.custom_tool_call_input.delta", "output_index": 1, "delta": "ls"},
        {"type": "response.output_item.done", "output_index": 1, "item": custom},
        {"type": "response.completed", "response": {"id": "r"}},
    ]
    items = messages.assistant_message(synthetic("openai-responses", wire), "openai-responses")
    assert [(i["type"], i.get("id"), i.get("call_id")) for i in items] == [
        ("reasoning", "rs_1", None),
        ("custom_tool_call", "ctc_1", "call_c"),
    ]


def test_chat_text_reasoning_and_usage() -> None:
    result = replay("deepseek/vercel-deepseek-reasoner-tool-call.jsonl")
    assert result.reasoning and result.reasoning[0].text.startswith("The user is asking")
    assert result.usage is not None and "completion_tokens" in result.usage
    message = messages.assistant_message(result, "openai-chat")
    assert set(message) == {"role", "content", "tool_calls"}  # Chat Completions takes no reasoning back
    assert [c["id"] for c in message["tool_calls"]] == [c.id for c in result.calls]


def test_non_text_outputs_are_sent_as_json_text() -> None:
    result = replay("openai_chat/openai-python-single-pydantic-tool.sse")
    call = result.calls[0]
    assert messages.tool_result(call, {"t": 21.5}, "openai-chat")["content"] == '{"t": 21.5}'
    block = messages.tool_result(call, "boom", "anthropic", is_error=True)
    assert block == {"type": "tool_result", "tool_use_id": call.id, "content": "boom", "is_error": True}
    assert messages.tool_result(call, "boom", "gemini", is_error=True)["functionResponse"]["response"] == {
        "error": "boom"
    }


def test_unknown_format_and_choice_are_refused() -> None:
    result = synthetic("anthropic", anthropic_thinking_turn())
    with pytest.raises(LocalProtocolError, match="unknown message format"):
        messages.assistant_message(result, "mistral")  # type: ignore[call-overload]
    with pytest.raises(LocalProtocolError, match="incomplete must be"):
        messages.assistant_message(result, "anthropic", incomplete="run")  # type: ignore[arg-type]


@pytest.mark.parametrize("format", messages.FORMATS)
def test_arguments_of_the_wrong_type_are_invalid_input(format: Any) -> None:
    result = synthetic("anthropic", anthropic_thinking_turn())
    call = result.calls[0]
    cycle: list[Any] = []
    cycle.append(cycle)
    for output in [b"bytes", object(), {"when": {1, 2}}, cycle]:  # none of them JSON can write
        with pytest.raises(InvalidInput, match="output must be text or what JSON can write"):
            messages.tool_result(call, output, format)
    with pytest.raises(InvalidInput, match="call must be a ToolCall, not dict"):
        messages.tool_result({"id": call.id}, "x", format)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="result must be a Result, not NoneType"):
        messages.assistant_message(None, format)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="result must be a Result, not dict"):
        messages.incomplete_answers({}, format)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="answers must be an iterable"):
        messages.tool_results(None, format)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="each answer must be a dict"):  # not passed on to fail at the provider
        messages.tool_results([messages.tool_result(call, "ok", format), "ok"], format)  # type: ignore[list-item]


def responses_item_stream(item: dict[str, Any], deltas: list[str], delta_type: str) -> list[dict[str, Any]]:
    done = {**item, "status": "completed"}
    return [
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        *[{"type": delta_type, "output_index": 0, "delta": d} for d in deltas],
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.completed", "response": {"id": "r"}},
    ]


def test_custom_calls_go_back_as_custom_calls() -> None:
    item = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_c", "name": "apply_diff", "input": ""}
    wire = responses_item_stream(item, ["*** Begin", " Patch"], "response.custom_tool_call_input.delta")
    wire[-2]["item"]["input"] = "*** Begin Patch"
    result = synthetic("openai-responses", wire)
    assert [(c.type, c.input) for c in result.calls] == [("custom", "*** Begin Patch")]
    items = messages.assistant_message(result, "openai-responses")
    answer = messages.tool_result(result.calls[0], "applied", "openai-responses")
    assert items == [
        {"type": "custom_tool_call", "call_id": "call_c", "name": "apply_diff", "input": "*** Begin Patch"}
    ]
    assert answer == {"type": "custom_tool_call_output", "call_id": "call_c", "output": "applied"}
    validate("openai-responses", items, [answer])
    chat = messages.assistant_message(result, "openai-chat")
    assert chat["tool_calls"] == [
        {"id": "call_c", "type": "custom", "custom": {"name": "apply_diff", "input": "*** Begin Patch"}}
    ]
    validate("openai-chat", chat, [messages.tool_result(result.calls[0], "applied", "openai-chat")])
    for format in ("anthropic", "ollama", "cohere"):  # function calls only
        with pytest.raises(LocalProtocolError, match="of type custom"):
            messages.assistant_message(result, format)  # type: ignore[call-overload]
        with pytest.raises(LocalProtocolError, match="of type custom"):
            messages.tool_result(result.calls[0], "applied", format)  # type: ignore[arg-type]


def builtin_vector_result() -> Result:
    from fsm.harness.vectors import VECTOR_DIR

    vector = json.loads((VECTOR_DIR / "responses-builtin-client-calls.json").read_text())
    return synthetic("openai-responses", vector["events"])


BUILT_IN_ANSWERS: dict[str, Any] = {
    "apply_patch_call": "Updated src/app.py",
    "shell_call": [{"stdout": "a\nb\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}],
    "local_shell_call": "total 0",
    "computer_call": "data:image/png;base64,iVBORw0KGgo=",
}


def test_built_in_calls_go_back_as_their_items_with_their_outputs() -> None:
    result = builtin_vector_result()
    items = messages.assistant_message(result, "openai-responses")
    answers = [messages.tool_result(call, BUILT_IN_ANSWERS[call.type], "openai-responses") for call in result.calls]
    validate("openai-responses", items, answers)
    by_type = {item["type"]: item for item in items}
    for call in result.calls:
        item = by_type[call.type]
        assert item["call_id"] == call.id and item["status"] == "completed"
        assert item.get("operation", item.get("action")) == call.arguments
        assert call.item is not None and item.get("id") == call.item.get("id")
    assert "environment" in by_type["shell_call"]
    assert "pending_safety_checks" in by_type["computer_call"]
    assert [a["type"] for a in answers] == [
        "apply_patch_call_output",
        "shell_call_output",
        "local_shell_call_output",
        "computer_call_output",
    ]
    assert answers[3]["output"] == {"type": "computer_screenshot", "image_url": BUILT_IN_ANSWERS["computer_call"]}
    built = [{"role": "user", "content": "go"}, *items, *answers]
    report = check(built, "responses")
    assert not report.rejected and not report.findings, report.findings
    assert check(built).format == "responses"


def test_built_in_outputs_map_text_errors_and_limits() -> None:
    result = builtin_vector_result()
    patch, shell, local, computer = result.calls
    failed = messages.tool_result(patch, "hunk 1 did not apply", "openai-responses", is_error=True)
    assert failed == {
        "type": "apply_patch_call_output",
        "call_id": patch.id,
        "status": "failed",
        "output": "hunk 1 did not apply",
    }
    said = messages.tool_result(shell, "no such file", "openai-responses", is_error=True)
    assert said["output"] == [{"stdout": "", "stderr": "no such file", "outcome": {"type": "exit", "exit_code": 1}}]
    assert said["max_output_length"] == shell.arguments["max_output_length"]
    assert messages.tool_result(local, "ok", "openai-responses") == {
        "type": "local_shell_call_output",
        "id": local.id,
        "output": "ok",
    }
    assert messages.tool_result(computer, {"file_id": "file_1"}, "openai-responses")["output"] == {
        "type": "computer_screenshot",
        "file_id": "file_1",
    }
    validate("openai-responses", [], [failed, said])
    with pytest.raises(LocalProtocolError, match="screenshot"):
        messages.tool_result(computer, {"clicked": True}, "openai-responses")
    with pytest.raises(LocalProtocolError, match="shell_call output"):
        messages.tool_result(shell, 3, "openai-responses")
    with pytest.raises(LocalProtocolError, match="apply_patch_call"):
        messages.assistant_message(result, "anthropic")
    with pytest.raises(LocalProtocolError, match="shell_call"):
        messages.tool_result(shell, "ok", "openai-chat")


def test_output_fields_the_input_item_does_not_take_are_dropped() -> None:
    operation = {"type": "update_file", "path": "a.py", "diff": "@@"}
    item = {"type": "apply_patch_call", "id": "apc_1", "call_id": "call_p", "operation": operation, "created_by": "x"}
    result = synthetic("openai-responses", responses_item_stream(item, [], "response.noop.delta"))
    (sent,) = messages.assistant_message(result, "openai-responses")
    assert sent == {
        "type": "apply_patch_call",
        "id": "apc_1",
        "call_id": "call_p",
        "operation": operation,
        "status": "completed",
    }
    validate("openai-responses", [sent], [])


def test_an_incomplete_built_in_call_is_never_sent_back() -> None:
    action = {"type": "click", "button": "left", "x": 1, "y": 2}
    item = {"type": "computer_call", "id": "cu_1", "call_id": "call_k", "action": action, "pending_safety_checks": []}
    wire = responses_item_stream(item, [], "response.noop.delta")
    wire[-2]["item"]["status"] = "incomplete"
    result = synthetic("openai-responses", wire)
    assert result.calls[0].status is CallStatus.TRUNCATED and result.complete_calls == ()
    for incomplete in ("omit", "include"):
        assert messages.assistant_message(result, "openai-responses", incomplete=incomplete) == []  # type: ignore[arg-type]
    assert messages.incomplete_answers(result, "openai-responses") == []
    assert messages.omitted(result) == result.calls


def test_a_hand_built_call_without_its_item() -> None:
    from fsm.results import ToolCall

    action = {"commands": ["ls"]}
    shell = ToolCall(0, "call_s", "call_s", "shell", action, json.dumps(action), CallStatus.COMPLETE, type="shell_call")
    (item,) = messages.assistant_message(Result("openai-responses", "tool_calls", (shell,), ()), "openai-responses")
    assert item == {"type": "shell_call", "action": action, "call_id": "call_s", "status": "completed"}
    computer = attrs.evolve(shell, type="computer_call", name="computer", arguments={"type": "wait"})
    with pytest.raises(LocalProtocolError, match="item id"):
        messages.assistant_message(Result("openai-responses", "tool_calls", (computer,), ()), "openai-responses")


@pytest.mark.parametrize("format", messages.FORMATS)
def test_a_hand_built_call_whose_status_is_no_call_status_is_invalid_input(format: Any) -> None:
    """A result rebuilt from its JSON form with the status as text ("complete"): assistant_message
    dropped the call in silence (it is not CallStatus.COMPLETE) and incomplete_answers raised KeyError."""
    import attrs

    result = synthetic("anthropic", anthropic_thinking_turn())
    rebuilt = attrs.evolve(result, calls=tuple(attrs.evolve(c, status=c.status.value) for c in result.calls))
    for build in (
        lambda: messages.assistant_message(rebuilt, format),
        lambda: messages.assistant_message(rebuilt, format, incomplete="include"),
        lambda: messages.incomplete_answers(rebuilt, format),
        lambda: messages.omitted(rebuilt),
    ):
        with pytest.raises(InvalidInput, match="status must be a CallStatus"):
            build()


def test_a_number_no_float_holds_goes_back_in_the_object_as_a_decimal() -> None:
    # Documented: the object formats carry the parsed arguments, exact; the text formats the text.
    from decimal import Decimal

    from tests.helpers import chunk, tc

    r = Reassembler("openai-chat")
    r.feed(chunk(tc(index=0, id="a", name="f", args='{"x": 1e999}'), finish="tool_calls"))
    result = r.close()
    assert messages.assistant_message(result, "openai-chat")["tool_calls"][0]["function"]["arguments"] == '{"x": 1e999}'
    assert messages.assistant_message(result, "anthropic")["content"][0]["input"] == {"x": Decimal("1e999")}
    assert messages.assistant_message(result, "gemini")["parts"][0]["functionCall"]["args"] == {"x": Decimal("1e999")}


# -- Ollama and Cohere -------------------------------------------------------------------------------

OLLAMA_TURN = [
    {"message": {"role": "assistant", "content": "", "thinking": "Two cities, "}, "done": False},
    {"message": {"role": "assistant", "content": "", "thinking": "two calls."}, "done": False},
    {"message": {"role": "assistant", "content": "Checking."}, "done": False},
    {
        "message": {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "call_a", "function": {"index": 0, "name": "weather", "arguments": {"city": "Oslo"}}},
                {"id": "call_b", "function": {"index": 1, "name": "weather", "arguments": {}}},
            ],
        },
        "done": False,
    },
    {"message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"},
]


def test_ollama_sends_no_ids_and_its_thinking_joined() -> None:
    # The ollama client's Message has no field for an id, an index or a tool_call_id: none is written,
    # so each answer names its tool and the answers follow the calls in order.
    result = synthetic("ollama", OLLAMA_TURN)
    assistant = messages.assistant_message(result, "ollama")
    answers = [messages.tool_result(call, {"n": call.index}, "ollama") for call in result.complete_calls]
    assert assistant == {
        "role": "assistant",
        "content": "Checking.",
        "thinking": "Two cities, two calls.",
        "tool_calls": [
            {"function": {"name": "weather", "arguments": {"city": "Oslo"}}},
            {"function": {"name": "weather", "arguments": {}}},
        ],
    }
    assert answers == [
        {"role": "tool", "content": '{"n": 0}', "tool_name": "weather"},
        {"role": "tool", "content": '{"n": 1}', "tool_name": "weather"},
    ]
    assert messages.tool_results(answers, "ollama") == answers
    validate("ollama", assistant, answers)
    assert check([{"role": "user", "content": "go"}, assistant, *answers]).findings == ()


COHERE_TURN = [
    {"type": "message-start", "delta": {"message": {"role": "assistant"}}},
    {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "Looking it up."}}}},
    {
        "type": "tool-call-start",
        "index": 0,
        "delta": {"message": {"tool_calls": {"id": "w_1", "type": "function", "function": {"name": "weather"}}}},
    },
    {"type": "tool-call-delta", "index": 0, "delta": {"message": {"tool_calls": {"function": {"arguments": '{"ci'}}}}},
    {
        "type": "tool-call-delta",
        "index": 0,
        "delta": {"message": {"tool_calls": {"function": {"arguments": 'ty": "Os'}}}},
    },
]


def test_cohere_text_beside_calls_goes_as_the_tool_plan() -> None:
    # Cohere refuses text content in a message that makes calls: said beside them, it is the plan
    whole = [
        *COHERE_TURN,
        {
            "type": "tool-call-delta",
            "index": 0,
            "delta": {"message": {"tool_calls": {"function": {"arguments": 'lo"}'}}}},
        },
        {"type": "tool-call-end", "index": 0},
        {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}},
    ]
    result = synthetic("cohere", whole)
    assistant = messages.assistant_message(result, "cohere")
    answer = messages.tool_result(result.calls[0], "-3 C", "cohere", is_error=True)  # no flag: the text says it
    assert assistant == {
        "role": "assistant",
        "tool_plan": "Looking it up.",
        "tool_calls": [
            {"id": "w_1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}
        ],
    }
    assert answer == {"role": "tool", "tool_call_id": "w_1", "content": "-3 C"}
    validate("cohere", assistant, [answer])
    said = synthetic("cohere", [COHERE_TURN[1], {"type": "message-end", "delta": {"finish_reason": "COMPLETE"}}])
    assert messages.assistant_message(said, "cohere") == {"role": "assistant", "content": "Looking it up."}


def test_ollama_and_cohere_cut_calls_omitted_or_answered_as_not_run() -> None:
    cut = synthetic("cohere", COHERE_TURN)
    assert [c.status for c in cut.calls] == [CallStatus.TRUNCATED]
    assert "tool_calls" not in messages.assistant_message(cut, "cohere")
    kept = messages.assistant_message(cut, "cohere", incomplete="include")
    assert kept["tool_calls"][0]["function"]["arguments"] == '{"city": "Os'  # the raw text, as OpenAI's
    (answer,) = messages.incomplete_answers(cut, "cohere")
    assert answer["tool_call_id"] == "w_1" and answer["content"].startswith("Not run: the response was cut off")
    # an Ollama call is whole on its line, unless a server streams its arguments as text
    ollama = synthetic("ollama", [{"message": {"tool_calls": [{"function": {"name": "f", "arguments": '{"a": '}}]}}])
    assert [c.status for c in ollama.calls] == [CallStatus.TRUNCATED]
    assert "tool_calls" not in messages.assistant_message(ollama, "ollama")
    included = messages.assistant_message(ollama, "ollama", incomplete="include")
    assert included["tool_calls"] == [{"function": {"name": "f", "arguments": {}}}]
    (answer,) = messages.incomplete_answers(ollama, "ollama")
    assert answer["tool_name"] == "f" and answer["content"].startswith("Not run")
    validate("ollama", included, [answer])
