"""Task 171: reasoning signatures whose maker nothing told, through LangChain's legacy integrations and LiteLLM.

Policy signature-by-origin sends a signature only to a format that reads its maker's; these named none:

* langchain-aws's ``ChatBedrock`` (InvokeModel) names ``model_provider: "bedrock"`` on its chunks
  (langchain_aws/chat_models/bedrock.py, ``_stream``), and its signed blocks come from Claude's Messages body alone
  (langchain_aws/llms/bedrock.py: only the ``anthropic`` provider reads the Messages API, the others' bodies give
  text); langchain-google-vertexai's ``ChatVertexAI`` names ``google_vertexai`` on each chunk
  (``_gemini_chunk_to_generation_chunk``) and reads Vertex AI's generateContent, Gemini's. Both are now mapped
  (policy langchain-source-provider). Its ``ChatAnthropicVertex`` (Claude on Vertex AI) names no ``model_provider``
  at all (``_make_message_chunk_from_anthropic_event``): its signatures stay of no maker told.
* LiteLLM's ``thinking_blocks`` carry Claude's and Gemini's in one shape. Its Gemini route alone writes
  ``provider_specific_fields.thought_signatures`` (every ``thoughtSignature`` of the parts it read the blocks from),
  so a block whose signature that list holds is Gemini's (policy litellm-gemini-signature). Its Anthropic route
  writes nothing that names Claude: a Claude block through LiteLLM still goes everywhere, as before."""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from fsm import messages
from fsm.wire.decoders.chat_reasoning import GEMINI_FORMAT
from tests import capture_variants as cv
from tests.test_source_provider119 import CLAUDE_TARGETS, _chunks

httpx = pytest.importorskip("httpx")
lc_messages = pytest.importorskip("langchain_core.messages")

FORMATS = (*CLAUDE_TARGETS, "gemini")


def sent_to(result: fsm.Result, signature: str) -> set[str]:
    """The formats whose assistant message carries ``signature``."""
    return {f for f in FORMATS if signature in json.dumps(messages.assistant_message(result, f))}  # type: ignore[call-overload]


# -- LangChain ------------------------------------------------------------------------------------------------


def _claude_events() -> list[dict[str, Any]]:
    """A Claude turn of one signed thinking block and one call, as Anthropic's Messages stream gives it."""
    thinking = {"type": "thinking", "thinking": "", "signature": ""}
    use = {"type": "tool_use", "id": "toolu_1", "name": "get", "input": {}}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4"}
    return [
        {"type": "message_start", "message": {**message, "usage": {"input_tokens": 3, "output_tokens": 0}}},
        {"type": "content_block_start", "index": 0, "content_block": thinking},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Look it up."}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "Q0xBVURF"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": use},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"q": 1}'}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]


def test_chat_bedrock_names_bedrock_and_its_claude_signature_reaches_no_gemini_request() -> None:
    module = pytest.importorskip("langchain_aws")
    from tests.test_litellm_bedrock import invoke_stream
    from tests.test_sdk_loop import converse_client

    body = invoke_stream(_claude_events())
    client = converse_client(body, "InvokeModelWithResponseStream")
    model = module.ChatBedrock(model_id="anthropic.claude-sonnet-4-v1:0", client=client, region_name="us-east-1")
    chunks = list(model.stream("go"))
    assert {c.response_metadata.get("model_provider") for c in chunks} - {None} == {"bedrock"}
    result = fsm.reassemble(chunks)
    assert (result.provider, result.source_provider) == ("openai-chat", "bedrock")
    assert [(r.text, r.signature) for r in result.reasoning] == [("Look it up.", "Q0xBVURF")]
    assert sent_to(result, "Q0xBVURF") == set(CLAUDE_TARGETS)
    gemini = messages.assistant_message(result, "gemini")
    assert gemini["parts"][0] == {"text": "Look it up.", "thought": True}  # its text goes, unsigned
    assert result.source_provider == fsm.reassemble(body, "bedrock").provider  # the name its bytes are read by


LEGACY = [("bedrock", "bedrock", CLAUDE_TARGETS), ("google_vertexai", "gemini", ("gemini",))]
"""ChatBedrock's and ChatVertexAI's names, the provider each reads, and the formats its signatures go to."""


@pytest.mark.parametrize(("integration", "source", "readers"), LEGACY)
def test_the_legacy_integrations_name_their_maker(integration: str, source: str, readers: tuple[str, ...]) -> None:
    """A signed thinking block under each name goes to its maker's readers alone, as under the names mapped before."""
    result = fsm.reassemble(_chunks(integration))
    assert (result.provider, result.source_provider) == ("openai-chat", source)
    assert sent_to(result, "SIGC") == set(readers)


def _vertex_chunks() -> list[Any]:
    """What ChatVertexAI yields for a thought, a signed text part and a signed call (langchain-ai/langchain-google,
    libs/vertexai/langchain_google_vertexai/chat_models.py: ``_parse_response_candidate(streaming=True)``: a thought
    part as an unsigned ``thinking`` block, a signed text part's signature as its block's ``thought_signature``, a
    call's in ``additional_kwargs`` by the uuid it makes up for the call; ``model_provider`` on every chunk)."""
    told = {"model_provider": "google_vertexai"}
    signed = {"__gemini_function_call_thought_signatures__": {"uuid-1": "R0VNQ0FMTA=="}}
    part = {"name": "get", "args": '{"q": 1}', "id": "uuid-1", "index": None}
    return [
        lc_messages.AIMessageChunk(content=[{"type": "thinking", "thinking": "Hmm."}], response_metadata=dict(told)),
        lc_messages.AIMessageChunk(
            content=[{"type": "text", "text": "Calling.", "thought_signature": "R0VNVEVYVA=="}],
            response_metadata=dict(told),
        ),
        lc_messages.AIMessageChunk(
            content="", additional_kwargs=signed, tool_call_chunks=[part], response_metadata=told
        ),
        lc_messages.AIMessageChunk(content="", response_metadata={**told, "finish_reason": "STOP"}),
    ]


def test_chat_vertex_ai_is_gemini_s_and_its_signatures_go_to_gemini_alone() -> None:
    result = fsm.reassemble(_vertex_chunks())
    assert result.source_provider == "gemini"
    assert [(r.text, r.signature) for r in result.reasoning] == [("Hmm.", None)]  # it drops a thought's signature
    assert (result.text, result.text_signature) == ("Calling.", "R0VNVEVYVA==")
    assert [(c.id, c.thought_signature) for c in result.calls] == [("uuid-1", "R0VNQ0FMTA==")]
    for signature in ("R0VNVEVYVA==", "R0VNQ0FMTA=="):
        assert sent_to(result, signature) <= {"gemini", "openai-chat"}  # openai-chat: the call's, Google's way
        assert "gemini" in sent_to(result, signature)


def _anthropic_vertex_chunks() -> list[Any]:
    """ChatAnthropicVertex's chunks of the Claude turn (langchain-ai/langchain-google,
    libs/vertexai/langchain_google_vertexai/_anthropic_utils.py, ``_make_message_chunk_from_anthropic_event``):
    the model's name on the first, the stop reason on the last, no ``model_provider`` on any."""
    chunk = lc_messages.AIMessageChunk
    return [
        chunk(content=[], response_metadata={"model_name": "claude-sonnet-4@20250514"}),
        chunk(content=[{"type": "thinking", "thinking": "Look it up.", "index": 0}]),
        chunk(content=[{"type": "thinking", "signature": "Q0xBVURF", "index": 0}]),
        chunk(
            content=[{"type": "tool_use", "id": "toolu_1", "name": "get", "input": {}, "index": 1}],
            tool_call_chunks=[{"index": 1, "id": "toolu_1", "name": "get", "args": ""}],
        ),
        chunk(
            content=[{"type": "tool_use", "partial_json": '{"q": 1}', "index": 1}],
            tool_call_chunks=[{"index": 1, "id": None, "name": None, "args": '{"q": 1}'}],
        ),
        chunk(content="", response_metadata={"stop_reason": "tool_use", "stop_sequence": None}),
    ]


def test_chat_anthropic_vertex_names_no_maker_and_its_signature_goes_as_before() -> None:
    """Its model's name is not read as its maker (a name proxies set to anything): no maker told, so the signature
    goes wherever a chat result's does (README: what stays untold)."""
    result = fsm.reassemble(_anthropic_vertex_chunks())
    assert (result.provider, result.source_provider) == ("openai-chat", None)
    assert [(r.text, r.signature) for r in result.reasoning] == [("Look it up.", "Q0xBVURF")]
    assert sent_to(result, "Q0xBVURF") == set(FORMATS)


# -- LiteLLM --------------------------------------------------------------------------------------------------


def _gemini_body(parts: list[dict[str, Any]]) -> dict[str, Any]:
    usage = {"promptTokenCount": 3, "candidatesTokenCount": 5, "totalTokenCount": 8}
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
    return {"candidates": [candidate], "modelVersion": "gemini-3-pro-preview", "usageMetadata": usage}


GEMINI_PARTS = [
    {"text": "Let me think.", "thought": True, "thoughtSignature": "R0VNVEhPVUdIVA=="},
    {"functionCall": {"name": "get", "args": {"q": 1}}, "thoughtSignature": "R0VNQ0FMTA=="},
]


def _client(body: bytes, kind: str) -> Any:
    from litellm.llms.custom_httpx.http_handler import HTTPHandler

    def answer(request: Any) -> Any:
        return httpx.Response(200, headers={"content-type": kind}, content=body)

    return HTTPHandler(client=httpx.Client(transport=httpx.MockTransport(answer)))


def _whole_gemini_as_a_stream(litellm: Any) -> Any:
    """A Gemini response as LiteLLM streams a whole one (its web-search fallback's and mock's fake stream):
    ``convert_model_response_to_streaming`` of what its Gemini route made of the response."""
    from litellm.llms.base_llm.base_model_iterator import convert_model_response_to_streaming

    client = _client(json.dumps(_gemini_body(GEMINI_PARTS)).encode(), "application/json")
    ask = [{"role": "user", "content": "go"}]
    response = litellm.completion(model="gemini/gemini-3-pro-preview", messages=ask, client=client, api_key="test")
    return convert_model_response_to_streaming(response)


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
def test_a_gemini_block_through_litellm_reaches_no_claude_format(litellm: Any) -> None:
    chunk = _whole_gemini_as_a_stream(litellm)
    delta = chunk.model_dump(exclude_none=True)["choices"][0]["delta"]
    assert delta["thinking_blocks"][0]["signature"] == "R0VNVEhPVUdIVA=="  # Claude's shape, Gemini's signature
    assert "R0VNVEhPVUdIVA==" in delta["provider_specific_fields"]["thought_signatures"]
    proxied = chunk.model_dump(exclude_none=True)  # its proxy's SSE chunk, read as JSON
    for read in (fsm.reassemble([chunk]), fsm.reassemble([proxied], "openai-chat")):
        assert [(r.text, r.signature, r.format) for r in read.reasoning] == [
            ("Let me think.", "R0VNVEhPVUdIVA==", GEMINI_FORMAT)
        ]
        assert sent_to(read, "R0VNVEhPVUdIVA==") == {"gemini"}
        assert messages.assistant_message(read, "gemini")["parts"][0] == {
            "text": "Let me think.",
            "thought": True,
            "thoughtSignature": "R0VNVEhPVUdIVA==",
        }
        # a Claude format gets no thinking block it would refuse; openai-chat's thinking_blocks none either
        assert all(b["type"] != "thinking" for b in messages.assistant_message(read, "anthropic")["content"])
        assert "thinking_blocks" not in messages.assistant_message(read, "openai-chat")


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
def test_a_claude_block_through_litellm_names_no_maker_and_goes_as_before(litellm: Any) -> None:
    """LiteLLM's Anthropic route writes no field that names Claude (nor reads the model's name, which a proxy
    can set to anything): the block names no maker, and its signature goes everywhere, as before."""
    body = cv.render(_claude_events(), "anthropic")
    ask = [{"role": "user", "content": "go"}]
    client = _client(body, "text/event-stream")
    chunks = list(
        litellm.completion(model="anthropic/claude-sonnet-4-5", messages=ask, stream=True, client=client, api_key="t")
    )
    result = fsm.reassemble(chunks)
    assert [(r.text, r.signature, r.format) for r in result.reasoning] == [("Look it up.", "Q0xBVURF", None)]
    assert sent_to(result, "Q0xBVURF") == set(FORMATS)


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
def test_a_streamed_gemini_turn_through_litellm_signs_its_thought_in_gemini_s_format(litellm: Any) -> None:
    """Streaming, LiteLLM's Gemini route gives no ``thinking_blocks``: the thought comes as ``reasoning_content``
    and its signature in ``thought_signatures`` alone, now read onto its block in Gemini's format (task 172,
    policy litellm-thought-signatures), so it goes to ``gemini`` alone; nothing is left unsaid."""
    events = [_gemini_body([part]) for part in GEMINI_PARTS]
    body = b"".join(b"data: " + json.dumps(event).encode() + b"\r\n\r\n" for event in events)
    ask = [{"role": "user", "content": "go"}]
    client = _client(body, "text/event-stream")
    chunks = list(
        litellm.completion(model="gemini/gemini-3-pro-preview", messages=ask, stream=True, client=client, api_key="t")
    )
    result = fsm.reassemble(chunks)
    assert [(r.text, r.signature, r.format) for r in result.reasoning] == [
        ("Let me think.", "R0VNVEhPVUdIVA==", GEMINI_FORMAT)
    ]
    assert result.diagnostics == ()
    assert sent_to(result, "R0VNVEhPVUdIVA==") == {"gemini"}


def _delta(blocks: Any, fields: Any) -> dict[str, Any]:
    delta = {"role": "assistant", "thinking_blocks": blocks, "provider_specific_fields": fields}
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": "stop"}]}


def test_only_a_block_whose_signature_the_list_holds_is_gemini_s() -> None:
    blocks = [
        {"type": "thinking", "thinking": "Mine.", "signature": "R0VN", "index": 0},
        {"type": "thinking", "thinking": "Other.", "signature": "Q0xB", "index": 1},
    ]
    result = fsm.reassemble([_delta(blocks, {"thought_signatures": ["R0VN", 7, None]})], "openai-chat")
    assert [(r.signature, r.format) for r in result.reasoning] == [("R0VN", GEMINI_FORMAT), ("Q0xB", None)]
    assert (sent_to(result, "R0VN"), sent_to(result, "Q0xB")) == ({"gemini"}, set(FORMATS))


@pytest.mark.parametrize("fields", [None, 3, "R0VN", {"thought_signatures": "R0VN"}, {"thought_signatures": {}}])
def test_fields_that_list_no_signature_tell_no_maker(fields: Any) -> None:
    blocks = [{"type": "thinking", "thinking": "Mine.", "signature": "R0VN", "index": 0}]
    result = fsm.reassemble([_delta(blocks, fields)], "openai-chat")
    assert [(r.signature, r.format) for r in result.reasoning] == [("R0VN", None)]


def test_a_signature_of_no_text_beside_the_list_is_read_as_none() -> None:
    blocks = [{"type": "thinking", "thinking": "Mine.", "signature": {"R0VN": 1}, "index": 0}]
    result = fsm.reassemble([_delta(blocks, {"thought_signatures": ["R0VN"]})], "openai-chat")
    assert [(r.text, r.signature, r.format) for r in result.reasoning] == [("Mine.", None, None)]
