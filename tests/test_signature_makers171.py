"""Task 171: reasoning signatures whose maker nothing told, through LangChain's legacy integrations.

Policy signature-by-origin sends a signature only to a format that reads its maker's; these named none:

* langchain-aws's ``ChatBedrock`` (InvokeModel) names ``model_provider: "bedrock"`` on its chunks
  (langchain_aws/chat_models/bedrock.py, ``_stream``), and its signed blocks come from Claude's Messages body alone
  (langchain_aws/llms/bedrock.py: only the ``anthropic`` provider reads the Messages API, the others' bodies give
  text); langchain-google-vertexai's ``ChatVertexAI`` names ``google_vertexai`` on each chunk
  (``_gemini_chunk_to_generation_chunk``) and reads Vertex AI's generateContent, Gemini's. Both are now mapped
  (policy langchain-source-provider). Its ``ChatAnthropicVertex`` (Claude on Vertex AI) names no ``model_provider``
  at all (``_make_message_chunk_from_anthropic_event``): its signatures stay of no maker told."""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from fsm import messages
from tests.test_source_provider119 import CLAUDE_TARGETS, _chunks

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
