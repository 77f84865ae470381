"""Hostile audit 118 of helper 116's policy signature-by-origin (merge 8756299).

No recorded capture nor conformance vector holds a signed reasoning block (their signatures are
Gemini's, on calls), so the same-provider round trip is held here on wire streams of each kind that
carries one: every signature a stream gave goes back in its own provider's format, and to every
format that reads its maker's. The hostile part: a result's ``provider`` and a block's ``format`` of
any type or word give a typed answer only. The gap found (a turn read through LangChain names
``openai-chat`` as its provider, so its signatures went everywhere, as a chat result's do) was held
by strict xfails until helper 119 gave the result its maker (``Result.source_provider``)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest

import fsm
from fsm import messages
from fsm.errors import ToolcallFSMError
from fsm.results import Reasoning, Result
from tests.test_messages import anthropic_thinking_turn


def _sse(events: list[dict[str, Any]], named: bool = False) -> bytes:
    said = [(f"event: {e['type']}\n" if named else "") + f"data: {json.dumps(e)}\n\n" for e in events]
    return "".join(said).encode()


def _anthropic() -> bytes:
    events = anthropic_thinking_turn()
    for event in events:  # Bedrock takes redacted data as base64 bytes: the test's "RED" is none
        if event.get("content_block", {}).get("type") == "redacted_thinking":
            event["content_block"] = {"type": "redacted_thinking", "data": "UkVE"}
    return _sse(events, named=True)


def _gemini() -> bytes:
    parts = [
        {"text": "Plan.", "thought": True, "thoughtSignature": "R1NJRw=="},
        {"text": "", "thought": True, "thoughtSignature": "R1NJRzI="},
        {"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "Q1NJRw=="},
    ]
    return _sse([{"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]}])


def _bedrock() -> bytes:
    events = [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Plan."}}}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "BSIG"}}}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"contentBlockStart": {"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}}},
        {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{}"}}}},
        {"contentBlockStop": {"contentBlockIndex": 1}},
        {"messageStop": {"stopReason": "tool_use"}},
    ]
    return "".join(json.dumps(e) + "\n" for e in events).encode()


def _chat(delta: dict[str, Any]) -> bytes:
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    chunks = [
        {"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]},
        {"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
        {
            "id": "x",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
        },
    ]
    return _sse(chunks) + b"data: [DONE]\n\n"


LITELLM = {"thinking_blocks": [{"type": "thinking", "thinking": "Plan.", "signature": "LSIG"}]}
OPENROUTER = {
    "reasoning_details": [
        {"type": "reasoning.text", "text": "Plan.", "signature": "OCSIG", "format": "anthropic-claude-v1", "index": 0},
        {"type": "reasoning.encrypted", "data": "OGSIG", "format": "google-gemini-v1", "index": 1},
    ]
}
STREAMS = {
    "anthropic": (_anthropic(), "anthropic"),
    "gemini": (_gemini(), "gemini"),
    "bedrock": (_bedrock(), "bedrock"),
    "litellm-thinking-blocks": (_chat(LITELLM), "openai-chat"),
    "openrouter-details": (_chat(OPENROUTER), "openai-chat"),
}
READERS = {
    "anthropic": ("anthropic", "bedrock", "openai-chat"),
    "bedrock": ("anthropic", "bedrock", "openai-chat"),
    "gemini": ("gemini",),
    "openai-chat": ("openai-chat",),
}
"""The formats each provider's own signatures go to (the chat ones: at least its own)."""


def _signatures(result: Result) -> list[str]:
    signs = [block.signature for block in result.reasoning if block.signature]
    signs += [block.encrypted_content for block in result.reasoning if block.encrypted_content]
    signs += [call.thought_signature for call in result.calls if call.thought_signature]
    return [s for s in signs if s is not None]


@pytest.mark.parametrize("name", list(STREAMS))
def test_every_signature_of_a_stream_goes_back_to_its_own_provider_and_every_reader(name: str) -> None:
    wire, provider = STREAMS[name]
    for named in (provider, "auto"):
        result = fsm.reassemble(wire, named)
        assert result.provider == provider
        signs = _signatures(result)
        assert signs, result
        for format in READERS[provider]:
            sent = repr(messages.assistant_message(result, format))  # type: ignore[call-overload]
            missing = [s for s in signs if repr(s) not in sent]
            assert not missing, (format, sent)
        if provider == "anthropic":
            said = json.dumps(messages.assistant_message(result, "anthropic"))
            assert '"UkVE"' in said  # the redacted block is no signature's, and goes back as it came


class _Raising(str):
    """A str whose hash or comparison raises: a caller's own object where the maker is looked up."""

    def __hash__(self) -> int:
        raise RuntimeError("no hash")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no eq")


ODD = [None, 3, ["x"], {"a": 1}, "", "zzz", "anthropic-claude-v1", "google-gemini-v1", _Raising("google-gemini-v1")]


@pytest.mark.parametrize("provider", [*ODD, "anthropic", "gemini", "bedrock", _Raising("anthropic")])
def test_any_provider_and_format_give_a_message_or_a_typed_error(provider: Any) -> None:
    for fmt in ODD:
        for signature in ("SIG", None, 5, _Raising("SIG")):
            block = Reasoning(text="t", signature=signature, format=fmt)
            result = Result(provider, "stop", (), (), reasoning=(block,))
            for format in messages.FORMATS:
                with contextlib.suppress(ToolcallFSMError):  # anything else fails the test
                    messages.assistant_message(result, format)  # type: ignore[call-overload]


def _langchain_gemini() -> tuple[Result, Result]:
    from tests.test_langchain_places import GEMINI, chat_google

    body = GEMINI["interleaved"]
    return fsm.reassemble(list(chat_google(body, None).stream("go"))), fsm.reassemble(body, "gemini")


@pytest.mark.parametrize("format", ["anthropic", "bedrock", "openai-chat"])
def test_a_gemini_turn_read_through_langchain_sends_claude_no_gemini_signature(format: str) -> None:
    pytest.importorskip("langchain_google_genai")
    through_langchain, from_bytes = _langchain_gemini()
    signs = [b.signature for b in from_bytes.reasoning if b.signature]
    assert signs
    sent = repr(messages.assistant_message(through_langchain, format))  # type: ignore[call-overload]
    assert not [s for s in signs if repr(s) in sent], sent


def _langchain_claude(output_version: str | None) -> tuple[Result, Result]:
    from tests.test_langchain_places import CLAUDE, chat_anthropic

    body = CLAUDE["interleaved"]
    return fsm.reassemble(list(chat_anthropic(body, output_version)[1].stream("go"))), fsm.reassemble(body, "anthropic")


@pytest.mark.parametrize("output_version", [None, "v1"])
def test_a_claude_turn_read_through_langchain_keeps_its_signatures_for_every_claude_target(
    output_version: str | None,
) -> None:
    """The turn's provider is openai-chat (the chunks' wire), its source_provider anthropic: Claude's signatures
    are not foreign to Claude, and the next turn to Claude holds each, as the bytes' turn does."""
    through_langchain, from_bytes = _langchain_claude(output_version)
    signs = [b.signature for b in from_bytes.reasoning if b.signature]
    assert signs and through_langchain.provider == "openai-chat"
    for format in ("anthropic", "bedrock", "openai-chat"):
        sent = repr(messages.assistant_message(through_langchain, format))  # type: ignore[call-overload]
        assert all(repr(s) in sent for s in signs), (format, sent)


@pytest.mark.parametrize("output_version", [None, "v1"])
def test_a_claude_turn_read_through_langchain_sends_gemini_no_claude_signature(output_version: str | None) -> None:
    through_langchain, from_bytes = _langchain_claude(output_version)
    signs = [b.signature for b in from_bytes.reasoning if b.signature]
    assert signs
    sent = repr(messages.assistant_message(through_langchain, "gemini"))
    assert not [s for s in signs if repr(s) in sent], sent
