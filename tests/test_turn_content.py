"""What the turn said besides its calls: ``Result.text``, ``reasoning`` and ``usage``, checked against
the recorded captures read independently of the decoders, and on synthetic streams for what the
captures lack (thinking, reasoning signatures)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import fsm
from tests.conftest import CAPTURES, captures, require_captures

CHAT_SHAPES = ("openai_chat", "deepseek", "groq", "mistral", "openrouter", "gemini_openai_compat")


def payloads(path: Path) -> list[dict[str, Any]]:
    """Every JSON event of an SSE or JSONL capture, read line by line."""
    found = []
    for line in path.read_text().splitlines():
        line = line.strip().removeprefix("data:").strip()
        if line.startswith("{"):
            found.append(json.loads(line))
    return found


def replay(path: Path) -> fsm.Result:
    r = fsm.Reassembler()
    r.feed_bytes(path.read_bytes())
    return r.close()


@pytest.mark.parametrize("path", captures(*CHAT_SHAPES), ids=lambda p: p.name)
def test_chat_text_reasoning_and_usage_match_the_wire(path: Path) -> None:
    events = payloads(path)
    deltas = [c.get("delta") or {} for e in events for c in e.get("choices") or [] if not c.get("index")]
    text = "".join(d.get("content") or "" for d in deltas)
    reasoning = "".join(d.get("reasoning_content") or d.get("reasoning") or "" for d in deltas)
    usages = [e["usage"] for e in events if e.get("usage")]
    result = replay(path)
    assert result.text == text
    assert "".join(r.text for r in result.reasoning) == reasoning
    assert len(result.reasoning) == (1 if reasoning else 0)
    assert result.usage == (usages[-1] if usages else None)


@pytest.mark.parametrize("path", captures("anthropic"), ids=lambda p: p.name)
def test_anthropic_text_and_usage_match_the_wire(path: Path) -> None:
    events = payloads(path)
    text = "".join(e["delta"].get("text", "") for e in events if e.get("type") == "content_block_delta")
    usage: dict[str, Any] = {}
    for e in events:
        usage.update((e.get("message") or {}).get("usage") or {} if e["type"] == "message_start" else {})
        usage.update(e.get("usage") or {} if e["type"] == "message_delta" else {})
    result = replay(path)
    assert (result.text, result.usage) == (text, usage)


@pytest.mark.parametrize("path", captures("gemini", "gemini_vertex_partial_args"), ids=lambda p: p.name)
def test_gemini_usage_is_the_last_report(path: Path) -> None:
    events = payloads(path) if path.suffix != ".json" else json.loads(path.read_text())
    usages = [e["usageMetadata"] for e in events if e.get("usageMetadata")]
    assert replay(path).usage == usages[-1]


def test_bedrock_ollama_and_cohere_text_and_usage() -> None:
    require_captures()
    bedrock = replay(CAPTURES / "bedrock" / "pydantic-ai-nova-micro-text-then-tool.eventstream")
    assert bedrock.text.startswith("<thinking> To find the temperature")
    assert bedrock.usage == {"inputTokens": 471, "outputTokens": 91, "totalTokens": 562}
    ollama = replay(CAPTURES / "ollama_native" / "ai4j-qwen2.5-parallel-unicode.jsonl")
    assert ollama.usage is not None and ollama.usage["eval_count"] == 56
    cohere = replay(CAPTURES / "cohere" / "vercel-cohere-tool-call.jsonl")
    assert cohere.usage is not None and cohere.usage["billed_units"] == {"input_tokens": 119, "output_tokens": 44}


def test_bedrock_reasoning_keeps_its_signature_and_redacted_content() -> None:
    def delta(at: int, body: dict[str, Any]) -> dict[str, Any]:
        return {"contentBlockDelta": {"contentBlockIndex": at, "delta": body}}

    result = fsm.reassemble(
        [
            {"messageStart": {"role": "assistant"}},
            delta(0, {"reasoningContent": {"text": "Think "}}),
            delta(0, {"reasoningContent": {"text": "hard."}}),
            delta(0, {"reasoningContent": {"signature": "SIG"}}),
            delta(1, {"reasoningContent": {"redactedContent": "UkVE"}}),
            delta(2, {"text": "Done."}),
            {"messageStop": {"stopReason": "end_turn"}},
        ],
        strict=True,
    )
    assert [(r.text, r.signature, r.redacted) for r in result.reasoning] == [
        ("Think hard.", "SIG", None),
        ("", None, "UkVE"),
    ]
    assert result.text == "Done."


def test_litellms_thinking_blocks_keep_each_block_its_signature_and_redacted_data() -> None:
    """LiteLLM's chunks (and its proxy's stream) carry Claude's reasoning twice: joined in
    ``reasoning_content``, which has no signatures, and block by block in ``thinking_blocks``, which
    has them. Read from ``reasoning_content`` alone, two thinking blocks were one, unsigned, and the
    redacted one was lost."""

    def delta(**fields: Any) -> dict[str, Any]:
        return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "", **fields}}]}

    def thinking(at: int, said: str, **more: Any) -> dict[str, Any]:
        return delta(
            reasoning_content=said, thinking_blocks=[{"type": "thinking", "thinking": said, "index": at, **more}]
        )

    call = {"index": 0, "id": "t1", "type": "function", "function": {"name": "f", "arguments": ""}}
    stream = [
        thinking(0, "Think "),
        thinking(0, "hard."),
        thinking(0, "", signature="SIG"),
        delta(thinking_blocks=[{"type": "redacted_thinking", "data": "UkVE", "index": 1}]),
        delta(tool_calls=[call]),
        thinking(2, "Again."),
        # beside a call, so no shortcut for a lone call entry may pass over it
        delta(
            tool_calls=[{"index": 0, "function": {"arguments": "{}"}}],
            thinking_blocks=[{"type": "thinking", "thinking": "", "signature": "SIG2", "index": 2}],
        ),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in stream).encode()
    for source in (stream, body):
        result = fsm.reassemble(source, "openai-chat", strict=True)
        assert [(r.text, r.signature, r.redacted) for r in result.reasoning] == [
            ("Think hard.", "SIG", None),
            ("", None, "UkVE"),
            ("Again.", "SIG2", None),
        ]
        assert [(c.id, c.arguments) for c in result.calls] == [("t1", {})]
    # an entry that is no reasoning block: reasoning_content is read, as before
    odd = fsm.reassemble([delta(reasoning_content="hm", thinking_blocks=[{"type": "text"}])], "openai-chat")
    assert [(r.text, r.signature) for r in odd.reasoning] == [("hm", None)]


def test_ollama_thinking_is_reasoning() -> None:
    lines = [
        {"message": {"role": "assistant", "content": "", "thinking": "Which "}, "done": False},
        {"message": {"role": "assistant", "content": "", "thinking": "city?"}, "done": False},
        {"message": {"role": "assistant", "content": "Oslo."}, "done": True, "done_reason": "stop", "eval_count": 3},
    ]
    result = fsm.reassemble(lines)
    assert ([r.text for r in result.reasoning], result.text, result.usage) == (
        ["Which city?"],
        "Oslo.",
        {"eval_count": 3},
    )


def test_usage_after_the_finish_is_no_event_after_finish() -> None:
    chunks = [
        {
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": "stop"}],
        },
        {"object": "chat.completion.chunk", "choices": [], "usage": {"total_tokens": 5}},
    ]
    result = fsm.reassemble(chunks, strict=True)
    assert (result.text, result.usage, result.diagnostics) == ("Hi", {"total_tokens": 5}, ())
