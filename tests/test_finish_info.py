"""The result says how the turn ended in the provider's own words, even when the finish cut no call:
``Result.raw_finish_reason`` is the provider's word for the finish that stands (Gemini ``SAFETY``,
Anthropic ``refusal``, Responses ``incomplete: max_output_tokens``, Bedrock ``guardrail_intervened``,
Cohere ``MAX_TOKENS``, Ollama's ``done_reason``), ``Result.finish_message`` what it said beside it
(Gemini's ``finishMessage``, a Claude refusal's ``stop_details``, OpenRouter's
``native_finish_reason``, an error's message), bounded. Before, a finish after whole calls or after
text left both nowhere: only the normalised ``finish_reason`` reached the caller. Each stream is read
from its bytes, and through the provider's SDK where the test says so; both fields serialize, and
survive strict mode and a fault."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

import fsm
from fsm.cli import main
from fsm.engine.ledger import MESSAGE_CHARS
from fsm.serialize import converter, result_to_json
from tests.conftest import CAPTURES, require_captures
from tests.helpers import aws_message
from tests.test_clients import Replay, openai_client
from tests.test_finish_words import anthropic_events, ndjson, sse, vertex_events


def said(result: fsm.Result) -> tuple[str | None, str | None, str | None]:
    return result.finish_reason, result.raw_finish_reason, result.finish_message


# -- Gemini -------------------------------------------------------------------------------------------


def gemini(finish: str, message: str | None) -> bytes:
    call = {"functionCall": {"name": "f", "id": "c1", "args": {"a": 1}}}
    ended = {"finishReason": finish, **({"finishMessage": message} if message else {})}
    return sse(
        [
            {"candidates": [{"content": {"role": "model", "parts": [call]}, "index": 0}]},
            {"candidates": [{"content": {"role": "model", "parts": [{"text": "."}]}, "index": 0, **ended}]},
        ]
    )


def test_a_gemini_safety_finish_after_a_whole_call_says_its_word_and_finish_message() -> None:
    body = gemini("SAFETY", "The response was blocked for safety.")
    result = fsm.reassemble(body)
    assert said(result) == ("content_filter", "SAFETY", "The response was blocked for safety.")
    assert [c.status for c in result.calls] == [fsm.CallStatus.COMPLETE] and "truncated" not in result.codes()
    # through google-genai's Vertex client, which keeps Candidate.finish_message
    assert said(fsm.reassemble(vertex_events(body))) == said(result)
    assert said(fsm.reassemble(body, strict=True)) == said(result)
    assert said(fsm.reassemble(gemini("RECITATION", None))) == ("content_filter", "RECITATION", None)


def test_the_gemini_capture_says_stop_and_its_finish_message_beside_the_mapped_finish() -> None:
    require_captures()
    body = (CAPTURES / "gemini/adk-go-gemini-2.5-flash-parallel-sum.sse").read_bytes()
    assert said(fsm.reassemble(body)) == ("tool_calls", "STOP", "Model generated function call(s).")


@pytest.mark.parametrize(
    "capture",
    [
        "anthropic/anthropic-sdk-max-tokens-truncated-tool-json.sse",
        "anthropic/magentic-claude-3-opus-parallel-plus-minus.sse",
        "gemini/adk-go-gemini-3-flash-preview-parallel-sum.sse",
        "gemini_vertex_partial_args/vercel-vertex-3.1-pro-partial-args-parallel.jsonl",
    ],
)
def test_a_capture_s_finish_word_is_the_one_its_meta_records(capture: str) -> None:
    require_captures()
    meta = json.loads((CAPTURES / capture).with_suffix(".meta.json").read_text())["expected_extra"]
    word = meta.get("stop_reason") or meta.get("finish_reason")
    assert fsm.reassemble((CAPTURES / capture).read_bytes()).raw_finish_reason == word


# -- Anthropic ----------------------------------------------------------------------------------------


def anthropic_text_turn(stop: dict[str, Any], *after: dict[str, Any]) -> bytes:
    begun = {"id": "m", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 5}}
    events = [
        {"type": "message_start", "message": begun},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "I can't."}},
        {"type": "content_block_stop", "index": 0},
        stop,
        {"type": "message_stop"},
        *after,
    ]
    return b"".join(b"event: " + e["type"].encode() + b"\n" + sse([e]) for e in events)


REFUSAL = {
    "type": "message_delta",
    "delta": {
        "stop_reason": "refusal",
        "stop_details": {"type": "refusal", "category": "cyber", "explanation": "This could enable malware."},
    },
    "usage": {"output_tokens": 3},
}


def test_an_anthropic_refusal_after_text_says_its_stop_details_through_the_sdk_too() -> None:
    body = anthropic_text_turn(REFUSAL)
    result = fsm.reassemble(body)
    assert said(result) == ("content_filter", "refusal", "category cyber; This could enable malware.")
    assert result.text == "I can't." and result.calls == ()
    assert said(fsm.reassemble(anthropic_events(body))) == said(result)  # the anthropic SDK's stream helper


def test_the_first_finish_stands_a_later_error_is_reported_not_kept() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    result = fsm.reassemble(anthropic_text_turn(REFUSAL, error))
    assert said(result) == ("content_filter", "refusal", "category cyber; This could enable malware.")
    assert "provider-error" in result.codes()


def test_an_error_event_s_message_is_kept_bounded_and_close_after_the_strict_raise_says_it() -> None:
    turn = [
        {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant"}},
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded " + "x" * 5000}},
    ]
    result = fsm.reassemble(sse(turn))
    assert result.finish_reason == "error" and result.raw_finish_reason == "overloaded_error"  # its type
    assert result.finish_message == f"Overloaded {'x' * (MESSAGE_CHARS - 11)}... (5011 characters)"
    r = fsm.Reassembler("anthropic", strict=True)
    with pytest.raises(fsm.RemoteProtocolError, match="provider-error"):
        r.feed_bytes(sse(turn))
    assert said(r.close()) == said(result)


# -- OpenAI chat and OpenRouter -----------------------------------------------------------------------


def chat(finish: dict[str, Any]) -> bytes:
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    return sse(
        [
            {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [c]}
            for c in (
                {"index": 0, "delta": {"role": "assistant", "tool_calls": [call]}},
                {"index": 0, "delta": {}, **finish},
            )
        ]
    )


def test_a_chat_length_finish_after_a_complete_call_says_its_word_through_the_openai_client() -> None:
    body = chat({"finish_reason": "length"})
    result = fsm.reassemble(body)
    assert said(result) == ("length", "length", None) and result.calls[0].status is fsm.CallStatus.COMPLETE
    streamed = openai_client(Replay(body)).chat.completions.create(model="m", messages=[], stream=True)
    assert said(fsm.reassemble(streamed)) == said(result)


def test_openrouter_s_native_finish_reason_is_said_beside_the_chat_word() -> None:
    body = chat({"finish_reason": "content_filter", "native_finish_reason": "SAFETY"})
    assert said(fsm.reassemble(body)) == ("content_filter", "content_filter", 'native_finish_reason "SAFETY"')


# -- OpenAI Responses ---------------------------------------------------------------------------------


def responses(last: dict[str, Any]) -> bytes:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "f", "arguments": '{"a": 1}'}
    return sse(
        [
            {"type": "response.created", "response": {"id": "r", "status": "in_progress", "output": []}},
            {"type": "response.output_item.added", "output_index": 0, "item": {**item, "arguments": ""}},
            {"type": "response.output_item.done", "output_index": 0, "item": {**item, "status": "completed"}},
            last,
        ]
    )


def test_a_responses_incomplete_after_a_whole_call_says_its_reason_through_the_openai_client() -> None:
    details = {"id": "r", "status": "incomplete", "incomplete_details": {"reason": "content_filter"}}
    body = responses({"type": "response.incomplete", "response": details})
    result = fsm.reassemble(body)
    assert said(result) == ("content_filter", "incomplete: content_filter", None)
    assert [c.status for c in result.calls] == [fsm.CallStatus.COMPLETE]
    streamed = openai_client(Replay(body)).responses.create(model="m", input="go", stream=True)
    assert said(fsm.reassemble(streamed)) == said(result)


def test_a_failed_response_says_its_event_its_error_code_and_message() -> None:
    failed = {"status": "failed", "error": {"code": "server_error", "message": "The model broke down."}}
    result = fsm.reassemble(responses({"type": "response.failed", "response": failed}))
    assert said(result) == ("error", "response.failed: server_error", "The model broke down.")  # policy error-kind


# -- Bedrock, Cohere, Ollama --------------------------------------------------------------------------


def test_a_bedrock_guardrail_after_a_whole_call_says_its_stop_reason() -> None:
    pytest.importorskip("botocore")
    events = [
        ("messageStart", {"role": "assistant"}),
        ("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"a": 1}'}}}),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("messageStop", {"stopReason": "guardrail_intervened"}),
    ]
    body = b"".join(aws_message(json.dumps({**e, "p": "ab"}).encode(), kind) for kind, e in events)
    result = fsm.reassemble(body)
    assert said(result) == ("content_filter", "guardrail_intervened", None)
    assert [c.status for c in result.calls] == [fsm.CallStatus.COMPLETE]


def test_a_cohere_max_tokens_after_a_whole_call_says_its_word() -> None:
    start = {"tool_calls": {"id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}}}
    piece = {"tool_calls": {"function": {"arguments": '{"a": 1}'}}}
    body = sse(
        [
            {"type": "message-start", "delta": {"message": {"role": "assistant"}}},
            {"type": "tool-call-start", "index": 0, "delta": {"message": start}},
            {"type": "tool-call-delta", "index": 0, "delta": {"message": piece}},
            {"type": "tool-call-end", "index": 0},
            {"type": "message-end", "delta": {"finish_reason": "MAX_TOKENS"}},
        ]
    )
    assert said(fsm.reassemble(body)) == ("length", "MAX_TOKENS", None)


def test_ollama_s_done_reason_is_its_word_and_none_given_is_none() -> None:
    line = {"function": {"index": 0, "name": "f", "arguments": {"a": 1}}}
    first = {"message": {"role": "assistant", "content": "", "tool_calls": [line]}, "done": False}
    done = {"message": {"role": "assistant", "content": ""}, "done": True}
    assert said(fsm.reassemble(ndjson([first, {**done, "done_reason": "length"}]), "ollama")) == (
        "length",
        "length",
        None,
    )
    # done with no done_reason reads as stop, but Ollama said no word for it
    assert said(fsm.reassemble(ndjson([first, done]), "ollama")) == ("tool_calls", None, None)


# -- bounds, faults, serialization --------------------------------------------------------------------


def test_a_long_finish_word_and_message_are_shortened() -> None:
    result = fsm.reassemble(gemini("W" * 300, "m" * 5000))
    assert result.raw_finish_reason == f"{'W' * 100}... (300 characters)"
    assert result.finish_message == f"{'m' * MESSAGE_CHARS}... (5000 characters)"


def test_close_after_a_fault_keeps_the_finish_that_came_before_it_and_none_before_any() -> None:
    body = gemini("SAFETY", "Blocked.")
    r = fsm.Reassembler("gemini", strict=True)
    with pytest.raises(fsm.FramingError):
        r.feed_bytes(body + b"data: keep-alive\n\n")
    assert said(r.close()) == ("content_filter", "SAFETY", "Blocked.")
    r = fsm.Reassembler("gemini", strict=True)
    with pytest.raises(fsm.FramingError):
        r.feed_bytes(body.split(b"\n\n")[0] + b"\n\ndata: keep-alive\n\n")
    result = r.close()
    assert said(result) == (None, None, None) and "stream-failed" in result.codes()


def test_both_serialize_as_the_converter_does_and_replay_prints_them(tmp_path: Any) -> None:
    result = fsm.reassemble(gemini("SAFETY", "Blocked."))
    data = result_to_json(result)
    assert data == converter().unstructure(result)
    assert (data["raw_finish_reason"], data["finish_message"]) == ("SAFETY", "Blocked.")
    path = tmp_path / "safety.sse"
    path.write_bytes(gemini("SAFETY", "Blocked."))
    out = io.StringIO()
    assert main(["replay", str(path)], stdout=out, stderr=io.StringIO()) == 0
    printed = json.loads(out.getvalue())
    assert (printed["raw_finish_reason"], printed["finish_message"]) == ("SAFETY", "Blocked.")


def test_a_result_built_without_them_has_none() -> None:
    result = fsm.Result("gemini", "stop", (), ())
    assert (result.raw_finish_reason, result.finish_message) == (None, None)


def test_the_fuzzer_holds_the_bounds_and_both_to_agree_however_the_bytes_are_cut() -> None:
    from fsm.harness.fuzz import robust

    unbounded = fsm.Result("gemini", "stop", (), (), raw_finish_reason="W" * 300, finish_message="m" * 5000)
    assert robust._limits_hold(unbounded, fsm.Limits()) == ["the finish word or message kept past its bound"]
    bounded = fsm.reassemble(gemini("W" * 300, "m" * 5000))
    assert robust._limits_hold(bounded, fsm.Limits()) == []
    body = gemini("SAFETY", "Blocked.")
    answer, problems = robust._run(robust.Sample("gemini", body, ()), [body], as_bytes=True)
    assert problems == [] and answer[-1] == ("SAFETY", "Blocked.")


@pytest.mark.parametrize("output_version", [None, "v1"])
def test_a_gemini_safety_through_langchain_google_genai_says_what_the_bytes_say(output_version: str | None) -> None:
    # langchain-google-genai keeps a refusal's finish_reason and finish_message in response_metadata;
    # read as a chat chunk, SAFETY was the finish reason "safety", a value no wire normalises to,
    # and the message was lost
    langchain_google_genai = pytest.importorskip("langchain_google_genai")
    genai = pytest.importorskip("google.genai")
    body = gemini("SAFETY", "Blocked.")
    options = {"output_version": output_version} if output_version else {}
    model = langchain_google_genai.ChatGoogleGenerativeAI(model="gemini", api_key="test", **options)
    # the Vertex client, whose converter keeps Candidate.finish_message (the Gemini API one drops it)
    http = genai.types.HttpOptions(base_url="http://mock", httpx_client=Replay(body).client())
    model.client = genai.Client(vertexai=True, api_key="test", http_options=http)
    got = fsm.reassemble(list(model.bind_tools([TOOL]).stream("go")))
    assert said(got) == said(fsm.reassemble(body)) == ("content_filter", "SAFETY", "Blocked.")
    assert [(c.name, c.arguments) for c in got.calls] == [("f", {"a": 1})]


TOOL = {"name": "f", "description": "f", "parameters": {"type": "object", "properties": {}}}


@pytest.mark.parametrize("output_version", [None, "v1"])
def test_an_anthropic_refusal_through_chat_anthropic_says_what_the_bytes_say(output_version: str | None) -> None:
    # ChatAnthropic keeps stop_reason and a refusal's stop_details in response_metadata; read as a
    # chat chunk, refusal was the finish reason "refusal" (stop_sequence "stop_sequence"), a value
    # no wire normalises to, and the stop_details were lost
    from tests.test_langchain_places import chat_anthropic

    body = anthropic_text_turn(REFUSAL)
    _, model = chat_anthropic(body, output_version)
    got = fsm.reassemble(list(model.stream("go")))
    assert said(got) == said(fsm.reassemble(body)) == ("content_filter", "refusal", REFUSAL_SAID)
    stopped = anthropic_text_turn({"type": "message_delta", "delta": {"stop_reason": "stop_sequence"}, "usage": {}})
    assert said(fsm.reassemble(list(chat_anthropic(stopped, output_version)[1].stream("go")))) == (
        "stop",
        "stop_sequence",
        None,
    )


REFUSAL_SAID = "category cyber; This could enable malware."


@pytest.mark.parametrize("stop", [{}, {"stopReason": None}, {"stopReason": ""}], ids=["absent", "null", "empty"])
def test_a_bedrock_stop_that_names_no_reason_gives_none_not_the_word_none(stop: dict[str, Any]) -> None:
    """A messageStop without its stopReason gave finish reason and raw word "None" (str(None)), a
    word no provider sent; it is now no finish reason, which close() reports (no-finish-reason), as
    an Anthropic message_delta without stop_reason is read. A whole call stays complete."""
    events = [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"a": 1}'}}}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": stop},
    ]
    r = fsm.Reassembler("bedrock")
    for event in events:
        r.feed(event)
    result = r.close()
    assert (result.finish_reason, result.raw_finish_reason) == (None, None)
    assert "no-finish-reason" in result.codes()
    assert [(c.id, c.arguments, c.status) for c in result.calls] == [("t1", {"a": 1}, fsm.CallStatus.COMPLETE)]


def test_a_chat_chunk_s_own_finish_message_key_is_not_read_as_the_sdk_s() -> None:
    """What fsm.wire.sdk puts beside a LangChain chunk's finish goes under a key of this project's
    own: a server's chunk with a ``finish_message`` beside its choice was read as carrying one."""
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    chunks = [
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
        {
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "length", "finish_message": "a server's own key"}],
        },
    ]
    result = fsm.reassemble(chunks, provider="openai-chat")
    assert (result.finish_reason, result.raw_finish_reason, result.finish_message) == ("length", "length", None)


@pytest.mark.parametrize(
    ("provider", "event"),
    [
        ("openai-chat", lambda word: {"choices": [{"index": 0, "delta": {}, "finish_reason": word}]}),
        ("gemini", lambda word: {"candidates": [{"content": {"parts": [{"text": "a"}]}, "finishReason": word}]}),
        ("anthropic", lambda word: {"type": "message_delta", "delta": {"stop_reason": word}}),
    ],
)
def test_a_finish_word_no_provider_has_is_bounded_as_the_raw_word_is(provider: str, event: Any) -> None:
    # the normalised finish reason of an unknown word is the word itself: 500,000 characters of it
    # were kept whole, where the raw word is kept to 100
    word = "X" * 500_000
    result = fsm.reassemble([event(word)], provider)
    assert len(result.finish_reason or "") < 130 and len(result.raw_finish_reason or "") < 130
    assert result.finish_reason.endswith("(500000 characters)")
    assert fsm.reassemble([event("weird_word")], provider).finish_reason in ("weird_word", "weird_word".lower())
