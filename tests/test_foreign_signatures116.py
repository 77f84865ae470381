"""Policy signature-by-origin: a reasoning block's signature goes only to a target that can read it.

A signature is the maker's proof that it wrote the block: Claude's checks Claude's (on the Anthropic
API, Amazon Bedrock and Vertex AI alike: Anthropic's extended-thinking docs), Gemini's checks
Gemini's (Gemini 3 refuses a corrupt ``thoughtSignature`` with a 400). Before, every format put
every block's signature back whatever model made it: a Claude signature went to Gemini as a
``thoughtSignature``, a Gemini one to Claude as a thinking block's ``signature``. The block's maker
is told by the entry's ``format`` where OpenRouter named one, else by ``Result.provider``; a chat
result's own blocks (LiteLLM's ``thinking_blocks`` carry Claude's and Gemini's alike) name no maker,
and go as they did."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import Result, messages
from fsm.messages.gemini_code import DUMMY_SIGNATURE
from fsm.results import CallStatus, Reasoning, ToolCall


def _result(provider: str, *reasoning: Reasoning, calls: tuple[ToolCall, ...] = ()) -> Result:
    return Result(finish_reason="stop", calls=calls, diagnostics=(), provider=provider, text="Hi", reasoning=reasoning)


CLAUDE_SIGNED = Reasoning(text="t", signature="sig", output_index=0)
GEMINI_SIGNED = Reasoning(text="g", signature="gsig", place=0)
GEMINI_SIGNATURE_ONLY = Reasoning(signature="gsig", place=0)


def _parts(result: Result) -> list[dict[str, Any]]:
    return list(messages.assistant_message(result, "gemini")["parts"])


def test_a_claude_signature_does_not_go_to_gemini_its_text_goes_as_an_unsigned_thought() -> None:
    assert _parts(_result("anthropic", CLAUDE_SIGNED)) == [{"text": "t", "thought": True}, {"text": "Hi"}]


def test_a_bedrock_signature_does_not_go_to_gemini() -> None:
    assert _parts(_result("bedrock", Reasoning(text="t", signature="sig"))) == [
        {"text": "t", "thought": True},
        {"text": "Hi"},
    ]


def test_a_claude_redacted_block_goes_to_gemini_as_nothing() -> None:
    """Claude's redacted thinking has no text Gemini can read: no empty, unsigned thought part."""
    assert _parts(_result("anthropic", Reasoning(redacted="QUJD", output_index=0))) == [{"text": "Hi"}]


def test_a_responses_item_goes_to_gemini_as_nothing() -> None:
    block = Reasoning(item_id="rs_1", encrypted_content="ENC", summary=("s",), output_index=0)
    assert _parts(_result("openai-responses", block)) == [{"text": "Hi"}]


def test_an_empty_unsigned_thought_goes_to_gemini_as_nothing_and_keeps_its_place() -> None:
    call = ToolCall(0, "c1", None, "f", {}, "{}", CallStatus.COMPLETE)
    result = _result("gemini", Reasoning(place=1), Reasoning(text="x", place=2), calls=(call,))
    parts = _parts(result)
    dummy = {"thoughtSignature": DUMMY_SIGNATURE}  # no signature in the step: policy gemini-dummy-signature
    assert parts == [
        {"text": "Hi"},
        {"functionCall": {"name": "f", "args": {}}, **dummy},
        {"text": "x", "thought": True},
    ]


def test_gemini_keeps_its_own_signatures() -> None:
    assert {"text": "g", "thought": True, "thoughtSignature": "gsig"} in _parts(_result("gemini", GEMINI_SIGNED))
    signature_only = _parts(_result("gemini", GEMINI_SIGNATURE_ONLY))
    assert {"text": "", "thought": True, "thoughtSignature": "gsig"} in signature_only


@pytest.mark.parametrize("fmt", ["bedrock", "anthropic"])
def test_a_gemini_signature_does_not_go_to_claude(fmt: str) -> None:
    for block in (GEMINI_SIGNED, GEMINI_SIGNATURE_ONLY):
        message = messages.assistant_message(_result("gemini", block), fmt)  # type: ignore[call-overload]
        assert "gsig" not in repr(message), message
        assert message["content"] == ([{"text": "Hi"}] if fmt == "bedrock" else [{"type": "text", "text": "Hi"}])


def test_a_gemini_signature_does_not_go_to_litellm_thinking_blocks() -> None:
    """LiteLLM hands ``thinking_blocks`` back to Claude; its Gemini route reads a call's signature from
    the call's id, never from them."""
    message = messages.assistant_message(_result("gemini", GEMINI_SIGNED), "openai-chat")
    assert "thinking_blocks" not in message


def test_claude_keeps_its_own_signatures_on_every_claude_target() -> None:
    result = _result("anthropic", CLAUDE_SIGNED)
    block = {"type": "thinking", "thinking": "t", "signature": "sig"}
    assert messages.assistant_message(result, "anthropic")["content"][0] == block
    assert messages.assistant_message(result, "openai-chat")["thinking_blocks"] == [block]
    said = {"reasoningContent": {"reasoningText": {"text": "t", "signature": "sig"}}}
    assert messages.assistant_message(result, "bedrock")["content"][0] == said


def test_an_openrouter_entry_s_format_names_its_maker() -> None:
    """A chat result relays other models' blocks: OpenRouter's entry names its maker in ``format``."""
    claude = Reasoning(text="t", signature="sig", detail="reasoning.text", format="anthropic-claude-v1")
    gemini = Reasoning(text="g", signature="gsig", detail="reasoning.text", format="google-gemini-v1")
    result = _result("openai-chat", claude, gemini)
    parts = _parts(result)
    assert {"text": "t", "thought": True} in parts
    assert {"text": "g", "thought": True, "thoughtSignature": "gsig"} in parts
    content = messages.assistant_message(result, "anthropic")["content"]
    thinking = [block for block in content if block["type"] == "thinking"]
    assert thinking == [{"type": "thinking", "thinking": "t", "signature": "sig"}]
    # OpenRouter takes its own entries back as they came, whichever model made them
    details = messages.assistant_message(result, "openai-chat")["reasoning_details"]
    assert "sig" in [d.get("signature") for d in details] and "gsig" in [d.get("data") for d in details]


def test_a_chat_result_s_own_blocks_name_no_maker_and_go_as_before() -> None:
    """LiteLLM's ``thinking_blocks`` carry Claude's signatures and Gemini's alike (its Gemini route
    puts a thought part's ``thoughtSignature`` there): the maker is unknown, the signature goes."""
    result = _result("openai-chat", Reasoning(text="t", signature="sig"))
    assert _parts(result)[0] == {"text": "t", "thought": True, "thoughtSignature": "sig"}
    assert messages.assistant_message(result, "anthropic")["content"][0]["signature"] == "sig"
