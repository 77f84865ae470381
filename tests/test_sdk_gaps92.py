"""Audit 92: what the installed SDKs' types (google-genai, cohere, ollama, botocore's Bedrock
Converse, LiteLLM, LangChain) carry that the decoders, the next request and the history check lost,
refused or sent back wrong. Each case is built through the SDK's own type where it has one."""

from __future__ import annotations

import json
from typing import Any

import ollama
import pytest

import fsm
import fsm.history
import fsm.messages

httpx = pytest.importorskip("httpx")

# -- 1. Ollama: the ollama client keeps neither a call's id nor its function.index ------------------
# ollama 0.6.3 _types.Message.ToolCall holds `function` alone, and ToolCall.Function `name` and
# `arguments`; the server sends one call a line, each with its id and function.index
# (captures/ollama_native/ai4j-qwen2.5-parallel-unicode.jsonl).


def _ollama_line(index: int, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    call = {"id": call_id, "function": {"index": index, "name": "roll", "arguments": arguments}}
    return {"model": "qwen3", "created_at": "t", "message": {"role": "assistant", "content": "", "tool_calls": [call]}}


_OLLAMA_END = {"model": "qwen3", "created_at": "t", "message": {"role": "assistant", "content": ""}, "done": True}


def _read(provider: str, events: list[Any]) -> fsm.Result:
    r = fsm.Reassembler(provider)
    for event in events:
        r.feed(event)
    return r.close()


def test_two_equal_ollama_calls_on_separate_lines_stay_two_through_the_ollama_client() -> None:
    lines = [_ollama_line(0, {"sides": 6}, "call_a"), _ollama_line(1, {"sides": 6}, "call_b"), _OLLAMA_END]
    objects = [ollama.ChatResponse.model_validate({"done": False, **line}) for line in lines]
    assert "index" not in objects[0].model_dump()["message"]["tool_calls"][0]["function"]  # the client drops it
    for result in (_read("ollama", objects), _read("auto", objects)):
        assert [(call.name, call.arguments) for call in result.calls] == [("roll", {"sides": 6})] * 2
        assert [call.status for call in result.calls] == [fsm.CallStatus.COMPLETE] * 2
        assert "resend" not in result.codes()
    assert _read("ollama", lines).calls[1].id == "call_b"  # the wire's own, as before
    message = fsm.messages.assistant_message(result, "ollama")
    assert len(ollama.Message.model_validate(message).tool_calls or ()) == 2  # policy ollama-calls-in-order


def test_ollama_calls_without_index_keep_their_place_after_calls_with_one() -> None:
    # a call without index after labelled ones takes the next free index, never a labelled one's
    entry = {"function": {"name": "roll", "arguments": {}}}
    bare = {"model": "q", "message": {"role": "assistant", "tool_calls": [entry]}}
    result = _read("ollama", [_ollama_line(0, {}, ""), _ollama_line(1, {}, ""), bare, bare, _OLLAMA_END])
    assert [call.index for call in result.calls] == [0, 1, 2, 3]
    assert "resend" not in result.codes()


def test_ollama_text_arguments_without_index_still_join_across_lines() -> None:
    # a dialect that streams the arguments as text: each line's piece goes on the call it continues
    def piece(text: str) -> dict[str, Any]:
        entry = {"function": {"name": "roll", "arguments": text}}
        return {"model": "q", "message": {"role": "assistant", "tool_calls": [entry]}}

    result = _read("ollama", [piece('{"sides"'), piece(": 6}"), _OLLAMA_END])
    assert [(call.name, call.arguments) for call in result.calls] == [("roll", {"sides": 6})]


# -- 2. Bedrock Converse: a system message in the conversation ---------------------------------------
# botocore 1.44.8 bedrock-runtime service-2: ConversationRole is user | assistant | system; a system
# message carries ToolAdditionBlock / ToolRemovalBlock ({tool: ToolReference {type, name, serverName}}),
# "to make a tool available without re-sending the full tool configuration".

_ADD_TOOL = {"role": "system", "content": [{"toolAddition": {"tool": {"name": "lookup"}}}]}
_CALL = {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "f", "input": {}}}]}
_RESULT = {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "ok"}]}}]}


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": text}]}


def test_a_converse_system_message_adding_a_tool_is_no_unknown_role() -> None:
    for history in (
        [_user("a"), _CALL, _RESULT, _ADD_TOOL, _user("b")],
        [_ADD_TOOL, _user("a"), _CALL, _RESULT],
        [_user("a"), _CALL, _ADD_TOOL, _RESULT],  # between a call and its result: the result still answers it
    ):
        assert fsm.history.check(history, "bedrock").findings == ()
        assert fsm.history.check(history).findings == ()
        assert not fsm.history.anything_dangling(history)
        assert fsm.history.repair(history, format="bedrock") == (history, [])  # policy converse-system-aside


def test_a_converse_system_message_that_calls_or_answers_is_still_reported() -> None:
    answering = {"role": "system", "content": [_RESULT["content"][0]]}
    kinds = {finding.kind.value for finding in fsm.history.check([_user("a"), _CALL, answering], "bedrock").findings}
    assert "unknown-role" in kinds
    empty = {"role": "system", "content": []}
    assert "unknown-role" in {
        f.kind.value for f in fsm.history.check([_user("a"), empty, _user("b")], "bedrock").findings
    }


# -- 3. LiteLLM: the Responses reasoning items its chat stream carries ----------------------------
# litellm 1.110.2 types/utils.py Delta.reasoning_items: list[ChatCompletionReasoningItem] ({type:
# "reasoning", id, encrypted_content, summary}); completion_extras/litellm_responses_transformation
# puts them on the chunk of response.completed, after the summary's text as reasoning_content and a
# thinking block signed with the encrypted content at the item's output_item.done.

_ITEM = {
    "type": "reasoning",
    "id": "rs_1",
    "encrypted_content": "gAAAAB-enc",
    "summary": [{"type": "summary_text", "text": "Look it up."}],
}


def _litellm_stream(items: list[Any]) -> list[Any]:
    from litellm.types.utils import Delta, ModelResponseStream, StreamingChoices

    def chunk(delta: Any, finish: str | None = None) -> Any:
        choice = StreamingChoices(index=0, delta=delta, finish_reason=finish)
        return ModelResponseStream(id="chatcmpl-1", model="gpt-5", choices=[choice])

    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}
    signed = {"type": "thinking", "thinking": "", "signature": "litellm_encrypted_reasoning:gAAAAB-enc", "index": 0}
    return [
        chunk(Delta(role="assistant", reasoning_content="Look it up.")),
        chunk(Delta(thinking_blocks=[signed])),
        chunk(Delta(tool_calls=[call])),
        chunk(Delta(content="", reasoning_items=items), "tool_calls"),
    ]


def _responses_body() -> bytes:
    """A Responses stream: a reasoning item with its summary and encrypted content, then a call."""
    response = {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress", "model": "gpt-5"}
    reasoning = _ITEM | {"summary": []}
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup", "arguments": ""}
    done = call | {"arguments": '{"q": "x"}', "status": "completed"}
    said = {"item_id": "rs_1", "output_index": 0, "summary_index": 0}
    events = [
        {"type": "response.created", "response": response | {"output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": reasoning},
        {"type": "response.reasoning_summary_part.added", **said, "part": {"type": "summary_text", "text": ""}},
        {"type": "response.reasoning_summary_text.delta", **said, "delta": "Look it up."},
        {"type": "response.reasoning_summary_text.done", **said, "text": "Look it up."},
        {"type": "response.output_item.done", "output_index": 0, "item": _ITEM},
        {"type": "response.output_item.added", "output_index": 1, "item": call | {"status": "in_progress"}},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": '{"q": "x"}'},
        {"type": "response.output_item.done", "output_index": 1, "item": done},
        {"type": "response.completed", "response": response | {"status": "completed", "output": [_ITEM, done]}},
    ]
    return b"".join(
        f"event: {e['type']}\ndata: {json.dumps(e | {'sequence_number': n})}\n\n".encode() for n, e in enumerate(events)
    )


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
def test_litellms_reasoning_items_are_kept_and_go_back_as_it_takes_them(litellm: Any) -> None:
    from litellm.completion_extras.litellm_responses_transformation.transformation import _reasoning_input_items
    from litellm.llms.custom_httpx.http_handler import HTTPHandler

    def answer(request: Any) -> Any:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=_responses_body())

    client = HTTPHandler(client=httpx.Client(transport=httpx.MockTransport(answer)))
    ask = [{"role": "user", "content": "go"}]
    chunks = list(
        litellm.completion(model="openai/responses/gpt-5", messages=ask, stream=True, client=client, api_key="t")
    )
    assert any("reasoning_items" in chunk.model_dump()["choices"][0]["delta"] for chunk in chunks if chunk.choices)
    for result in (fsm.reassemble(chunks), _read("auto", [*_litellm_stream([_ITEM])])):
        assert [(call.name, call.arguments) for call in result.calls] == [("lookup", {"q": "x"})]
        assert result.codes() == []
        kept = [block for block in result.reasoning if block.item_id is not None]
        assert [(b.item_id, b.summary, b.encrypted_content, b.text) for b in kept] == [
            ("rs_1", ("Look it up.",), "gAAAAB-enc", "")
        ]
        assert "".join(block.text for block in result.reasoning) == "Look it up."  # the summary's text once
        message = fsm.messages.assistant_message(result, "openai-chat")
        assert message["reasoning_items"] == [_ITEM]
        assert _reasoning_input_items(message) == [_ITEM]  # what LiteLLM replays to the Responses API


def test_reasoning_items_litellm_could_not_take_back_are_reported_not_dropped(offline_litellm: Any) -> None:
    for items in ([{"type": "reasoning", "id": 7}], [{"type": "message"}], "rs_1", [_ITEM | {"summary": ["x"]}]):
        result = _read("openai-chat", _litellm_stream(items))  # type: ignore[arg-type]
        assert "part-not-reassembled" in result.codes()
        assert all(block.item_id is None for block in result.reasoning)
        assert [call.name for call in result.calls] == ["lookup"]
