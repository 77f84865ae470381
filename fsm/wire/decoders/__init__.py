"""Provider decoders: one wire payload (a parsed JSON object) in, typed events out.

A decoder knows one provider's wire format and nothing about identity: it passes on the evidence
the wire carries (index, id, name, position) and leaves every decision to the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from fsm.errors import UnsupportedProvider
from fsm.events import Event
from fsm.wire.decoders.anthropic import AnthropicDecoder
from fsm.wire.decoders.bedrock import BedrockDecoder
from fsm.wire.decoders.cohere import CohereDecoder
from fsm.wire.decoders.gemini import GeminiDecoder
from fsm.wire.decoders.ollama import OllamaDecoder
from fsm.wire.decoders.openai_chat import OpenAIChatDecoder
from fsm.wire.decoders.openai_responses import OpenAIResponsesDecoder

Diagnose = Callable[[str, str], None]


class Decoder(Protocol):
    name: str

    def decode(self, payload: Mapping[str, Any], diagnose: Diagnose) -> list[Event]: ...


PROVIDERS: tuple[str, ...] = (
    "openai-chat",
    "openai-responses",
    "anthropic",
    "gemini",
    "ollama",
    "bedrock",
    "cohere",
)
"""Every provider name the command line and ``Reassembler`` accept (plus ``auto``)."""

_DECODERS: dict[str, Callable[[], Decoder]] = {
    "openai-chat": OpenAIChatDecoder,
    "openai-responses": OpenAIResponsesDecoder,
    "anthropic": AnthropicDecoder,
    "gemini": GeminiDecoder,
    "ollama": OllamaDecoder,
    "bedrock": BedrockDecoder,
    "cohere": CohereDecoder,
}

_ANTHROPIC_TYPES = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
    }
)
_BEDROCK_KEYS = frozenset(
    {"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata"}
)


def detect_provider(payload: Mapping[str, Any]) -> str | None:
    """The provider whose wire shape ``payload`` has, or None when this payload cannot tell."""
    kind = payload.get("type")
    if "choices" in payload or str(payload.get("object", "")).startswith("chat.completion"):
        return "openai-chat"
    if isinstance(kind, str):
        if kind.startswith("response."):
            return "openai-responses"
        if kind in _ANTHROPIC_TYPES:
            return "anthropic"
        if kind.startswith(("message-", "tool-call-", "tool-plan-", "content-", "citation-")):
            return "cohere"
    if "candidates" in payload or "usageMetadata" in payload:
        return "gemini"
    if "message" in payload and "done" in payload:
        return "ollama"
    if _BEDROCK_KEYS & payload.keys():
        return "bedrock"
    return None


def make_decoder(provider: str) -> Decoder:
    factory = _DECODERS.get(provider)
    if factory is not None:
        return factory()
    if provider in PROVIDERS:
        raise UnsupportedProvider(f"provider {provider!r} is not supported yet (supported: {', '.join(_DECODERS)})")
    raise UnsupportedProvider(f"unknown provider {provider!r} (known: auto, {', '.join(PROVIDERS)})")
