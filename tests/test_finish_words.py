"""A finish that cuts a call says why, in the provider's own words, on every wire shape: the
``truncated`` diagnostic names the provider's finish word (``length``, ``max_tokens``,
``MAX_TOKENS``, ``incomplete: max_output_tokens``, ``guardrail_intervened``...), what it means where
that is known, and what the provider said beside it (Gemini's ``finishMessage`` on any finish, a
Claude refusal's ``stop_details``, OpenRouter's ``native_finish_reason``, an error's message). Before,
every such call said only ``cut after N characters``. A call the provider ended unfinished before an
abnormal finish (a Responses item done incomplete, a block stopped with its JSON open) has its
diagnostic completed by that finish. Each stream is read from its bytes; the Anthropic, Responses
and Vertex ones also through their SDKs."""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from fsm.engine.ledger import MESSAGE_CHARS
from tests.conftest import CAPTURES, require_captures
from tests.helpers import aws_message
from tests.test_clients import Replay, anthropic_client, anthropic_http, openai_client


def sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def ndjson(events: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


def anthropic_events(body: bytes) -> list[Any]:
    """What the anthropic SDK's stream helper yields for ``body``."""
    client = anthropic_client(Replay(body, anthropic_http()))
    with client.messages.stream(model="claude", max_tokens=64, messages=[{"role": "user", "content": "go"}]) as stream:
        return list(stream)


def vertex_events(body: bytes) -> list[Any]:
    """What google-genai's Vertex client yields for ``body`` (its converter keeps finish_message)."""
    genai = pytest.importorskip("google.genai")
    options = genai.types.HttpOptions(base_url="http://mock", httpx_client=Replay(body).client())
    client = genai.Client(vertexai=True, api_key="test", http_options=options)
    return list(client.models.generate_content_stream(model="g", contents="go"))


def cut(result: fsm.Result) -> list[str]:
    return [d.message for d in result.diagnostics if d.code == "truncated"]


def chat(finish: str) -> bytes:
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1'}}
    return sse(
        [
            {"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [call]}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        ]
    )


def test_an_openai_chat_call_cut_by_length_names_the_token_limit() -> None:
    result = fsm.reassemble(chat("length"))
    assert cut(result) == ['call c1 (f): cut after 7 characters by the finish "length" (the output token limit)']
    result = fsm.reassemble(chat("content_filter"))
    assert cut(result) == ['call c1 (f): cut after 7 characters by the finish "content_filter" (a content filter)']
    # strict mode runs the cut through the reference machine, which hands the action the same input
    assert cut(fsm.reassemble(chat("content_filter"), strict=True)) == cut(result)


def test_an_openrouter_call_cut_says_the_native_finish_reason_beside_the_normalised_one() -> None:
    # OpenRouter normalises the finish and keeps the model provider's own word beside it
    body = chat("length").replace(
        b'"finish_reason": "length"', b'"finish_reason": "length", "native_finish_reason": "MAX_TOKENS"'
    )
    said = 'by the finish "length" (the output token limit): native_finish_reason "MAX_TOKENS"'
    assert cut(fsm.reassemble(body)) == [f"call c1 (f): cut after 7 characters {said}"]
    same = chat("length").replace(
        b'"finish_reason": "length"', b'"finish_reason": "length", "native_finish_reason": "length"'
    )
    assert cut(fsm.reassemble(same)) == cut(fsm.reassemble(chat("length")))  # the same word is not said twice


def responses(*last: dict[str, Any]) -> bytes:
    return sse(
        [
            {"type": "response.created", "response": {"id": "r", "status": "in_progress", "output": []}},
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "f", "arguments": ""},
            },
            {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": '{"a'},
            *last,
        ]
    )


@pytest.mark.parametrize(
    ("reason", "means"), [("max_output_tokens", "the output token limit"), ("content_filter", "a content filter")]
)
def test_a_responses_call_cut_by_incomplete_names_its_incomplete_details_reason(reason: str, means: str) -> None:
    details = {"status": "incomplete", "incomplete_details": {"reason": reason}}
    result = fsm.reassemble(responses({"type": "response.incomplete", "response": details}))
    assert cut(result) == [f'call call_a (f): cut after 3 characters by the finish "incomplete: {reason}" ({means})']


def test_a_responses_item_done_incomplete_before_the_finish_is_told_why_by_it() -> None:
    # The item ends incomplete first (OpenAI's way at max_output_tokens); only response.incomplete
    # after it says why: the call's diagnostic, at the item's event, is completed by that finish.
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "f", "arguments": '{"a'}
    done = {"type": "response.output_item.done", "output_index": 0, "item": {**item, "status": "incomplete"}}
    details = {"id": "r", "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}
    body = responses(done, {"type": "response.incomplete", "response": details})
    said = (
        "call call_a (f): the provider ended it incomplete after 3 characters; the turn then ended by the finish "
        '"incomplete: max_output_tokens" (the output token limit)'
    )
    result = fsm.reassemble(body)
    assert cut(result) == [said] and [d.event for d in result.diagnostics] == [4]
    # through the openai SDK's Responses stream
    streamed = openai_client(Replay(body)).responses.create(model="m", input="go", stream=True)
    assert cut(fsm.reassemble(streamed)) == [said]
    # a normal finish after it says nothing more: the provider gave no reason
    completed = {"type": "response.completed", "response": {**details, "status": "completed"}}
    assert cut(fsm.reassemble(responses(done, completed))) == [said.split(";")[0]]


@pytest.mark.parametrize("arguments", ['{"a', '{"a": 1}'])
def test_a_responses_item_done_in_progress_is_given_up_and_told_why_by_the_finish(arguments: str) -> None:
    # An item closed as in_progress (what OpenAI sends for a call cut by max_output_tokens, per
    # vercel/ai#20405) did not finish: truncated with its raw text, as an item done incomplete is,
    # whether its JSON is open (it was read as invalid, unterminated-arguments) or closed (it was read
    # as complete, a call to run); the response.incomplete after it says why.
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "f", "arguments": arguments}
    more = {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0}
    rest = [{**more, "delta": arguments[3:]}] if arguments[3:] else []  # responses() streams '{"a' first
    done = {"type": "response.output_item.done", "output_index": 0, "item": {**item, "status": "in_progress"}}
    details = {"id": "r", "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}
    result = fsm.reassemble(responses(*rest, done, {"type": "response.incomplete", "response": details}))
    assert [(c.status.value, c.arguments_json) for c in result.calls] == [("truncated", arguments)]
    assert [(d.code, d.message) for d in result.diagnostics] == [
        (
            "truncated",
            f"call call_a (f): the provider ended it with status in_progress after {len(arguments)} characters; "
            'the turn then ended by the finish "incomplete: max_output_tokens" (the output token limit)',
        )
    ]


def langchain_responses_chunks(body: bytes) -> list[Any]:
    """What LangChain's ChatOpenAI(use_responses_api=True) yields for ``body``."""
    langchain_openai = pytest.importorskip("langchain_openai")
    replay = Replay(body)
    model = langchain_openai.ChatOpenAI(
        model="m", api_key="test", base_url="http://mock/v1", http_client=replay.client(), use_responses_api=True
    )
    return list(model.stream("go"))


@pytest.mark.parametrize(
    ("status", "details", "finish", "word"),
    [
        ("incomplete", {"reason": "max_output_tokens"}, "length", "incomplete: max_output_tokens"),
        ("incomplete", {"reason": "content_filter"}, "content_filter", "incomplete: content_filter"),
        ("incomplete", None, "length", "incomplete"),
        ("completed", None, "tool_calls", "completed"),
    ],
)
def test_a_responses_finish_through_langchain_keeps_the_providers_word(
    status: str, details: dict[str, Any] | None, finish: str, word: str
) -> None:
    # LangChain's Responses chunks hold no finish word, only the response's status and
    # incomplete_details: read from them as a bare normalised finish, the raw word was "length"
    # (or "stop"), so the call's diagnostic and Result.raw_finish_reason lost "incomplete:
    # max_output_tokens", which the bytes give. An incomplete response that names no reason was
    # "incomplete: None" from the bytes (a word no server sent) and no finish at all through LangChain.
    response = {"id": "r", "object": "response", "created_at": 1, "model": "m", "output": [], "status": status}
    response |= {"incomplete_details": details, "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}
    rest = [{"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": '": 1}'}]
    body = responses(*([] if status == "incomplete" else rest), {"type": f"response.{status}", "response": response})
    from_bytes = fsm.reassemble(body)
    through_langchain = fsm.reassemble(langchain_responses_chunks(body))
    for result in (from_bytes, through_langchain):
        assert (result.finish_reason, result.raw_finish_reason) == (finish, word)
    if status == "incomplete":
        said = f'call call_a (f): cut after 3 characters by the finish "{word}"'
        assert cut(through_langchain) == cut(from_bytes) and cut(from_bytes)[0].startswith(said)


def test_a_responses_call_cut_by_a_failed_response_says_its_error() -> None:
    failed = {"status": "failed", "error": {"code": "server_error", "message": "The model broke down."}}
    result = fsm.reassemble(responses({"type": "response.failed", "response": failed}))
    said = 'by the provider\'s error "response.failed: server_error": The model broke down.'
    assert cut(result) == [f"call call_a (f): cut after 3 characters {said}"]


def anthropic(stop: dict[str, Any]) -> bytes:
    return sse(anthropic_turn(stop))


def anthropic_turn(stop: dict[str, Any]) -> list[dict[str, Any]]:
    usage = {"input_tokens": 5, "output_tokens": 1}
    begun = {"id": "m", "type": "message", "role": "assistant", "content": [], "usage": usage}
    block = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
    piece = {"type": "input_json_delta", "partial_json": '{"a": '}
    return [
        {"type": "message_start", "message": begun},
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_delta", "index": 0, "delta": piece},
        stop,
        {"type": "message_stop"},
    ]


@pytest.mark.parametrize(
    ("reason", "means"),
    [
        ("max_tokens", "the output token limit"),
        ("model_context_window_exceeded", "the context window"),
        ("refusal", "the model refused"),
    ],
)
def test_an_anthropic_call_cut_names_the_stop_reason(reason: str, means: str) -> None:
    result = fsm.reassemble(anthropic({"type": "message_delta", "delta": {"stop_reason": reason}}))
    assert cut(result) == [f'call toolu_1 (f): cut after 6 characters by the finish "{reason}" ({means})']


def test_an_anthropic_block_stopped_with_its_json_open_is_told_why_by_the_max_tokens_after_it() -> None:
    # The block's stop ends the call (its JSON never closed: invalid); only the stop_reason after it says why
    turn = anthropic_turn(
        {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 9}}
    )
    turn.insert(3, {"type": "content_block_stop", "index": 0})
    said = (
        "call toolu_1 (f): the JSON never closed; the turn then ended by the finish "
        '"max_tokens" (the output token limit)'
    )
    result = fsm.reassemble(sse(turn))
    assert [(d.event, d.code, d.message) for d in result.diagnostics] == [(4, "unterminated-arguments", said)]
    # through the anthropic SDK's stream helper, which reads an event by its SSE event name
    named = b"".join(b"event: " + e["type"].encode() + b"\n" + sse([e]) for e in turn)
    assert [d.message for d in fsm.reassemble(anthropic_events(named)).diagnostics] == [said]
    turn[4]["delta"]["stop_reason"] = "tool_use"  # a normal finish gives no reason to add
    assert [d.message for d in fsm.reassemble(sse(turn)).diagnostics] == [said.split(";")[0]]


def test_an_anthropic_refusal_says_its_stop_details() -> None:
    details = {"type": "refusal", "category": "cyber", "explanation": "This could enable malware."}
    stop = {"type": "message_delta", "delta": {"stop_reason": "refusal", "stop_details": details}}
    said = 'by the finish "refusal" (the model refused): category cyber; This could enable malware.'
    assert cut(fsm.reassemble(anthropic(stop))) == [f"call toolu_1 (f): cut after 6 characters {said}"]
    stop["delta"]["stop_details"] = "not an object"  # a note of another shape is passed over
    assert cut(fsm.reassemble(anthropic(stop))) == [
        'call toolu_1 (f): cut after 6 characters by the finish "refusal" (the model refused)'
    ]


def test_an_anthropic_call_cut_by_an_error_event_says_its_message() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    result = fsm.reassemble(anthropic(error))
    assert cut(result) == [
        'call toolu_1 (f): cut after 6 characters by the provider\'s error "overloaded_error": Overloaded'
    ]


def test_the_anthropic_capture_cut_by_max_tokens_says_so_through_the_sdk_too() -> None:
    require_captures()
    body = (CAPTURES / "anthropic/anthropic-sdk-max-tokens-truncated-tool-json.sse").read_bytes()
    said = [
        'call toolu_01EKqbqmZrGRXy18eN7m9kvY (make_file): cut after 149 characters by the finish "max_tokens" '
        "(the output token limit)"
    ]
    assert cut(fsm.reassemble(body)) == said
    assert cut(fsm.reassemble(anthropic_events(body))) == said


def vertex(finish: str, message: str | None) -> list[dict[str, Any]]:
    def event(call: dict[str, Any] | None, **candidate: Any) -> dict[str, Any]:
        parts = [{"functionCall": call}] if call else []
        return {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0, **candidate}]}

    ended = {"finishReason": finish, **({"finishMessage": message} if message else {})}
    return [
        event({"name": "w", "id": "c1", "willContinue": True}),
        event(
            {"partialArgs": [{"jsonPath": "$.city", "stringValue": "Os", "willContinue": True}], "willContinue": True}
        ),
        event(None, **ended),
    ]


@pytest.mark.parametrize(
    ("finish", "means"),
    [("MAX_TOKENS", "the output token limit"), ("SAFETY", "a content filter"), ("RECITATION", "a content filter")],
)
def test_a_vertex_call_cut_says_the_finish_and_its_finish_message(finish: str, means: str) -> None:
    note = f"Stopped: {finish.lower()}."
    result = fsm.reassemble(sse(vertex(finish, note)))
    assert cut(result) == [f'call c1 (w): cut after 12 characters by the finish "{finish}" ({means}): {note}']
    assert [d.code for d in result.diagnostics] == ["truncated"]  # a finish message is no error
    # through google-genai's Vertex client, which keeps Candidate.finish_message
    assert cut(fsm.reassemble(vertex_events(sse(vertex(finish, note))))) == cut(result)


def test_an_unknown_finish_word_is_named_as_sent_and_a_long_message_is_shortened() -> None:
    result = fsm.reassemble(sse(vertex("OTHER", "x" * 5000)))
    (said,) = cut(result)
    assert said.startswith('call c1 (w): cut after 12 characters by the finish "OTHER": xxx')
    assert said.endswith("... (5000 characters)") and len(said) < MESSAGE_CHARS


def bedrock(reason: str) -> bytes:
    events = [
        ("messageStart", {"role": "assistant"}),
        ("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"a": ['}}}),
        ("messageStop", {"stopReason": reason}),
    ]
    return b"".join(aws_message(json.dumps({**body, "p": "ab"}).encode(), kind) for kind, body in events)


@pytest.mark.parametrize(
    ("reason", "means"),
    [
        ("max_tokens", "the output token limit"),
        ("guardrail_intervened", "a guardrail"),
        ("content_filtered", "a content filter"),
    ],
)
def test_a_bedrock_converse_call_cut_names_the_stop_reason(reason: str, means: str) -> None:
    pytest.importorskip("botocore")
    result = fsm.reassemble(bedrock(reason))
    assert cut(result) == [f'call t1 (f): cut after 7 characters by the finish "{reason}" ({means})']


def test_a_bedrock_exception_that_cuts_a_call_says_its_message() -> None:
    pytest.importorskip("botocore")
    stopped = bedrock("max_tokens")
    stopped = stopped[
        : stopped.rfind(aws_message(json.dumps({"stopReason": "max_tokens", "p": "ab"}).encode(), "messageStop"))
    ]
    thrown = aws_message(
        json.dumps({"message": "Too many requests."}).encode(), "throttlingException", ":exception-type"
    )
    result = fsm.reassemble(stopped + thrown)
    said = 'by the provider\'s error "throttlingException": Too many requests.'
    assert cut(result) == [f"call t1 (f): cut after 7 characters {said}"]


def test_a_cohere_call_cut_names_max_tokens() -> None:
    start = {"tool_calls": {"id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}}}
    piece = {"tool_calls": {"function": {"arguments": '{"a": 1'}}}
    result = fsm.reassemble(
        sse(
            [
                {"type": "message-start", "delta": {"message": {"role": "assistant"}}},
                {"type": "tool-call-start", "index": 0, "delta": {"message": start}},
                {"type": "tool-call-delta", "index": 0, "delta": {"message": piece}},
                {"type": "message-end", "delta": {"finish_reason": "MAX_TOKENS"}},
            ]
        )
    )
    assert cut(result) == ['call c1 (f): cut after 7 characters by the finish "MAX_TOKENS" (the output token limit)']


def test_an_ollama_call_cut_names_done_reason_length() -> None:
    line = {"function": {"index": 0, "name": "f", "arguments": '{"a": "x'}}
    result = fsm.reassemble(
        ndjson(
            [
                {"message": {"role": "assistant", "content": "", "tool_calls": [line]}, "done": False},
                {"message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "length"},
            ]
        ),
        "ollama",
    )
    assert cut(result) == ['call call_0 (f): cut after 8 characters by the finish "length" (the output token limit)']


def test_a_stream_with_no_finish_or_stopped_at_an_error_says_that_instead() -> None:
    unfinished = chat("length").rsplit(b"data: ", 1)[0]
    assert cut(fsm.reassemble(unfinished)) == [
        "call c1 (f): cut after 7 characters when the stream ended without a finish reason"
    ]
    r = fsm.Reassembler("openai-chat", strict=True)
    with pytest.raises(fsm.FramingError):
        r.feed_bytes(unfinished + b"data: keep-alive\n\n")
    assert cut(r.close()) == ["call c1 (f): cut after 7 characters when the stream stopped at an error"]


def test_calls_cut_after_a_limit_passed_as_a_normal_finish_ended_the_calls_say_so() -> None:
    # the first call's {} passes the byte limit as tool_calls ends it: the one after it is cut by that, not the finish
    first = {"index": 0, "id": "x", "type": "function", "function": {"name": "f", "arguments": ""}}
    second = {"index": 1, "id": "y", "type": "function", "function": {"name": "g", "arguments": '{"a"'}}
    chunks = [{"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]} for call in (first, second)]
    r = fsm.Reassembler("openai-chat", limits=fsm.Limits(max_stream_argument_bytes=4))
    with pytest.raises(fsm.LimitExceeded):
        r.feed_bytes(sse([*chunks, {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]))
    assert cut(r.close()) == ["call y (g): cut after 4 characters when a limit stopped the stream as the calls ended"]


def test_a_claude_call_cut_in_bedrock_invoke_model_chunks_names_the_stop_reason() -> None:
    pytest.importorskip("botocore")
    from tests.test_bedrock_invoke import chunk_message

    turn = anthropic_turn({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}})
    result = fsm.reassemble(b"".join(chunk_message(event) for event in turn))
    assert cut(result) == [
        'call toolu_1 (f): cut after 6 characters by the finish "max_tokens" (the output token limit)'
    ]
