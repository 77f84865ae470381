"""LiteLLM's ``delta.provider_specific_fields`` (policy litellm-fields-said). The Responses bridge's
``openai_responses_replay`` (the order of the turn's output items, with a checksum of the chat message
they make) and ``phase`` are kept as they last came (``Result.provider_fields``) and go back in the
openai-chat message's ``provider_specific_fields``, where LiteLLM replays the items exactly: the
checksum matches fsm's rebuilt message. Every other key fsm does not read is said, once a stream, at
the event that first carries it; a key that copies what the delta holds itself is not. All passed
without a word (audit 92's G7)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import fsm
from tests.test_sdk_gaps92 import _responses_body


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


CALL = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}
REPLAY = {"version": 1, "items": [{"type": "function_call", "index": 0}], "checksum": "f9c6"}


def read(stream: list[dict[str, Any]]) -> fsm.Result:
    result = fsm.reassemble(stream, "openai-chat")
    assert [(call.name, call.arguments) for call in result.calls] == [("lookup", {"q": "x"})]
    return result


def said(result: fsm.Result) -> list[tuple[int | None, str, str]]:
    return [(d.event, d.code, d.message) for d in result.diagnostics if d.code != "finish-reason-mapped"]


def test_the_bridges_replay_record_and_phase_are_kept_as_they_last_came_and_go_back() -> None:
    later = REPLAY | {"checksum": "77"}
    result = read(
        [
            chunk({"role": "assistant", "tool_calls": [CALL]}),
            chunk({"provider_specific_fields": {"phase": "commentary"}}),
            chunk({"provider_specific_fields": {"phase": None, "openai_responses_replay": REPLAY}}),
            chunk({"provider_specific_fields": {"openai_responses_replay": later}}, "tool_calls"),
        ]
    )
    assert said(result) == []
    assert result.provider_fields == {"phase": "commentary", "openai_responses_replay": later}
    message = fsm.messages.assistant_message(result, "openai-chat")
    assert message["provider_specific_fields"] == {"phase": "commentary", "openai_responses_replay": later}
    message["provider_specific_fields"]["openai_responses_replay"]["checksum"] = "edited"
    assert later["checksum"] == "77"  # the caller's to edit (policy message-is-the-callers)
    assert "provider_specific_fields" not in fsm.messages.assistant_message(
        read([chunk({"tool_calls": [CALL]})]), "openai-chat"
    )


def test_other_keys_are_said_once_where_they_first_came() -> None:
    cited = {"type": "char_location", "cited_text": "x"}
    result = read(
        [
            chunk({"tool_calls": [CALL]}),
            chunk({"content": "x", "provider_specific_fields": {"citation": cited}}),
            chunk({"content": "y", "provider_specific_fields": {"citation": cited, "tool_results": [{"id": "t"}]}}),
            chunk({}, "tool_calls"),
        ]
    )
    assert said(result) == [
        (
            2,
            "part-not-reassembled",
            "LiteLLM's provider_specific_fields.citation is not kept: no Result field holds it",
        ),
        (
            3,
            "part-not-reassembled",
            "LiteLLM's provider_specific_fields.tool_results is not kept: no Result field holds it",
        ),
    ]
    assert result.provider_fields is None


def test_copies_of_the_deltas_own_fields_read_fields_and_empty_values_are_not_said() -> None:
    block = {"type": "thinking", "thinking": "hm", "signature": "s"}
    stream = [
        chunk(
            {
                "reasoning_content": "hm",
                "thinking_blocks": [block],
                "provider_specific_fields": {"thinking_blocks": [block]},
            }
        ),
        chunk({"provider_specific_fields": {"reasoningContent": {"reasoningText": {"text": "hm"}}, "phase": None}}),
        chunk({"provider_specific_fields": {"citations": [], "tool_search_items": {}}}),
        chunk({"tool_calls": [CALL], "provider_specific_fields": {"server_tool_calls": [], "web_search_calls": {}}}),
        chunk({}, "tool_calls"),
    ]
    assert said(read(stream)) == []


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
def test_litellm_replays_the_turn_from_fsms_message(litellm: Any) -> None:
    """Through LiteLLM's own client over a mock transport: the record its bridge streams comes back on
    fsm's message, its checksum matches, and the next request's input is the replayed items."""
    from litellm.completion_extras.litellm_responses_transformation.history import replay_items
    from litellm.llms.custom_httpx.http_handler import HTTPHandler

    sent: list[dict[str, Any]] = []

    def answer(request: Any) -> Any:
        sent.append(json.loads(request.content))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=_responses_body())

    client = HTTPHandler(client=httpx.Client(transport=httpx.MockTransport(answer)))
    ask: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    model = "openai/responses/gpt-5"
    result = fsm.reassemble(
        list(litellm.completion(model=model, messages=ask, stream=True, client=client, api_key="t"))
    )
    assert result.codes() == [] and set(result.provider_fields or ()) == {"openai_responses_replay"}
    message = fsm.messages.assistant_message(result, "openai-chat")
    replayed = replay_items(message, replay_tool_search=False)
    assert replayed is not None  # the checksum matches fsm's rebuilt message
    answered = fsm.messages.tool_result(result.calls[0], "found", "openai-chat")
    list(litellm.completion(model=model, messages=[*ask, message, answered], stream=True, client=client, api_key="t"))
    given = [item for item in sent[1]["input"] if item.get("type") in ("reasoning", "function_call")]
    assert given == [dict(item) for item in replayed.items]
    assert [item["type"] for item in given] == ["reasoning", "function_call"]


@pytest.mark.parametrize("flush", ["incremental", "on-finish"])
def test_a_reemitted_stream_carries_the_fields_and_reads_back_the_same(flush: str) -> None:
    """A gateway re-emitting LiteLLM's stream passes its replay record on: the last chunk's delta
    carries it where LiteLLM's own does, and the result read back sends the same message."""
    stream = [
        chunk({"role": "assistant", "tool_calls": [CALL]}),
        chunk({"provider_specific_fields": {"phase": "commentary", "openai_responses_replay": REPLAY}}, "tool_calls"),
    ]
    reader, emitter = fsm.Reassembler("openai-chat"), fsm.DeltaEmitter(flush)  # type: ignore[arg-type]
    chunks = [emitter.start()]
    for each in stream:
        chunks += emitter.chunks(reader.feed(each))
    result = reader.close()
    chunks += [*emitter.chunks(reader.drain()), emitter.finish(result)]
    assert chunks[-1]["choices"][0]["delta"]["provider_specific_fields"] == result.provider_fields
    back = read(chunks)
    assert said(back) == [] and back.provider_fields == result.provider_fields
    assert fsm.messages.assistant_message(back, "openai-chat") == fsm.messages.assistant_message(result, "openai-chat")
