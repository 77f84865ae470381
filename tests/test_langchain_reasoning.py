"""Reasoning through LangChain's chat models, over a mock of their HTTP transport, as
tests/test_more_clients.py drives them for calls: Gemini's thought parts and signed text through
langchain-google-genai's ``ChatGoogleGenerativeAI``, Claude's thinking through langchain-anthropic's
``ChatAnthropic``. No capture holds a ``thought: true`` part, a signed text part or a thinking
block, so the streams are built from the wires' shapes (/work/shared/notes/wire-facts.md; a Gemini
text turn ends on an empty text part that carries the signature): what the client yields must give
the reasoning, the text and its signature the bytes give, and the next turn fsm.messages builds
must send each signature back on its part or block, each part and block in its place
(tests/test_langchain_places.py holds what the chunks carry, and the streams that interleave)."""

from __future__ import annotations

import base64
import functools
import json
import operator
from typing import Any

import pytest

import fsm
from fsm import messages
from tests.test_clients import Replay, anthropic_http, genai_client
from tests.test_more_clients import chat_anthropic
from tests.test_sdk_loop import _signature, client_for, seen, send

pytest.importorskip("httpx")

# Bytes a standard base64 writes with + and /, which google-genai writes url-safe (- and _)
THOUGHT_SIGNATURE = base64.b64encode(b"thought\xfb\xff\xbe-one").decode()
TEXT_SIGNATURE = base64.b64encode(b"text\xfb\xff\xbe-two").decode()
CALL_SIGNATURE = base64.b64encode(b"call\xfb\xff\xbe-three").decode()


def event(model: str, parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    usage = {"promptTokenCount": 9, "candidatesTokenCount": 4, "thoughtsTokenCount": 12, "totalTokenCount": 25}
    return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": model}


def sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\r\n\r\n" for e in events)


def thought(said: str, signature: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"text": said, "thought": True}
    if signature:
        part["thoughtSignature"] = signature
    return part


STREAMS = {
    # Gemini 2.5, include_thoughts: a summary streamed in thought parts, then the answer, whose
    # signature comes last on an empty text part
    "text-turn": sse(
        [
            event("gemini-2.5-flash", [thought("**Adding up**\n\nTwo and three ")]),
            event("gemini-2.5-flash", [thought("make five.")]),
            event("gemini-2.5-flash", [{"text": "2 + 3 "}]),
            event("gemini-2.5-flash", [{"text": "= 5."}]),
            event("gemini-2.5-flash", [{"text": "", "thoughtSignature": TEXT_SIGNATURE}], "STOP"),
        ]
    ),
    # Gemini 3 (content blocks always): a signed thought, text beside a signed call, all in order
    "call-turn": sse(
        [
            event("gemini-3-flash-preview", [thought("I should call sum.", THOUGHT_SIGNATURE)]),
            event("gemini-3-flash-preview", [{"text": "Let me add.", "thoughtSignature": TEXT_SIGNATURE}]),
            event(
                "gemini-3-flash-preview",
                [
                    {
                        "functionCall": {"name": "sum", "args": {"a": 2, "b": 3}, "id": "c1"},
                        "thoughtSignature": CALL_SIGNATURE,
                    }
                ],
                "STOP",
            ),
        ]
    ),
}


def chat_google(body: bytes, output_version: str | None) -> Any:
    langchain_google_genai = pytest.importorskip("langchain_google_genai")
    options = {"output_version": output_version} if output_version else {}
    model = langchain_google_genai.ChatGoogleGenerativeAI(
        model="gemini", api_key="test", include_thoughts=True, **options
    )
    model.client = genai_client(Replay(body))  # it builds its own client, on no transport it is given
    return model


@pytest.mark.parametrize("output_version", [None, "v1"])
@pytest.mark.parametrize("name", list(STREAMS))
def test_chat_google_genai_thoughts_and_text_signature_give_what_the_bytes_give(
    name: str, output_version: str | None
) -> None:
    # Thought parts are its `thinking` blocks (`reasoning` with output_version="v1"), signature and
    # all; a signed text part is a text block with `extras.signature`. Both were read as nothing.
    body = STREAMS[name]
    reference = fsm.reassemble(body, "gemini")
    chunks = list(chat_google(body, output_version).stream("go"))
    assert reference.reasoning and reference.text_signature  # what the stream is built to hold

    # the chunks one by one, or added up into one message as LangChain users do
    for stream in (chunks, [functools.reduce(operator.add, chunks)]):
        got = fsm.reassemble(stream)
        # each thought and text part in its place among the calls (Reasoning.place, TextPart.place)
        assert seen(got, usage=False) == seen(reference, usage=False)
        assert got.text_parts == reference.text_parts
        assert got.text_signature == reference.text_signature  # the wire's own base64, the same text
        assert [(r.text, r.signature) for r in got.reasoning] == [(r.text, r.signature) for r in reference.reasoning]


@pytest.mark.parametrize("name", list(STREAMS))
def test_chat_google_genai_thoughts_and_text_go_back_signed(name: str) -> None:
    # The next turn, built with "gemini" from what ChatGoogleGenerativeAI yields and sent through
    # google-genai: the thought parts with their signatures, then the text part with its own, then
    # the call with its own: the same bytes the wire signed each with
    body = STREAMS[name]
    result = fsm.reassemble(chat_google(body, None).stream("go"))
    replay, client = client_for("gemini", body)
    said = messages.assistant_message(result, "gemini")
    answers = [messages.tool_result(call, 5, "gemini") for call in result.complete_calls]
    send(
        "gemini", client, [{"role": "user", "parts": [{"text": "go"}]}, said, *messages.tool_results(answers, "gemini")]
    )

    parts = replay.sent[-1]["contents"][1]["parts"]
    reference = fsm.reassemble(body, "gemini")
    wire = [p for e in (json.loads(line[6:]) for line in body.split(b"\r\n\r\n") if line) for p in _parts(e)]
    assert [(p.get("thought", False), _signature(p.get("thoughtSignature"))) for p in parts] == [
        *((True, _signature(r.signature)) for r in reference.reasoning),
        (False, _signature(reference.text_signature)),
        *((False, _signature(c.thought_signature)) for c in reference.complete_calls),
    ]
    assert sorted(_signature(p["thoughtSignature"]) or b"" for p in parts if "thoughtSignature" in p) == sorted(
        _signature(p["thoughtSignature"]) or b"" for p in wire if "thoughtSignature" in p
    )
    assert [p.get("text") for p in parts if "text" in p] == [r.text for r in reference.reasoning] + [reference.text]


def _parts(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for c in payload.get("candidates") or [] for p in (c.get("content") or {}).get("parts") or []]


# -- langchain-anthropic ---------------------------------------------------------------------------


def anthropic_event(kind: str, **fields: Any) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n"


def block(at: int, content: dict[str, Any], *deltas: dict[str, Any]) -> list[str]:
    return [
        anthropic_event("content_block_start", index=at, content_block=content),
        *(anthropic_event("content_block_delta", index=at, delta=d) for d in deltas),
        anthropic_event("content_block_stop", index=at),
    ]


# Claude with extended thinking: a signed thinking block, a redacted one, text, a call
CLAUDE = "".join(
    [
        anthropic_event(
            "message_start",
            message={"id": "m", "type": "message", "role": "assistant", "model": "claude", "content": []},
        ),
        *block(
            0,
            {"type": "thinking", "thinking": "", "signature": ""},
            {"type": "thinking_delta", "thinking": "Two and three "},
            {"type": "thinking_delta", "thinking": "make five."},
            {"type": "signature_delta", "signature": THOUGHT_SIGNATURE},
        ),
        *block(1, {"type": "redacted_thinking", "data": TEXT_SIGNATURE}),
        *block(2, {"type": "text", "text": ""}, {"type": "text_delta", "text": "Adding."}),
        *block(
            3,
            {"type": "tool_use", "id": "toolu_1", "name": "sum", "input": {}},
            {"type": "input_json_delta", "partial_json": '{"a": 2, "b": 3}'},
        ),
        anthropic_event("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 9}),
        anthropic_event("message_stop"),
    ]
).encode()


def test_chat_anthropic_thinking_gives_what_the_bytes_give_and_goes_back_signed() -> None:
    # ChatAnthropic's thinking and redacted_thinking blocks (the signature in a chunk of its own,
    # under the block's index) are read block by block, as the Anthropic decoder reads the bytes
    reference = fsm.reassemble(CLAUDE, "anthropic")  # each block at Claude's content block index
    replay = Replay(CLAUDE, anthropic_http())
    model = chat_anthropic(replay, reference)
    chunks = list(model.stream("go"))
    assert [r.signature or r.redacted for r in reference.reasoning] == [THOUGHT_SIGNATURE, TEXT_SIGNATURE]

    for stream in (chunks, [functools.reduce(operator.add, chunks)]):
        got = fsm.reassemble(stream)
        assert seen(got, usage=False) == seen(reference, usage=False)
        assert (got.text_parts, got.text_output_index) == (reference.text_parts, reference.text_output_index)
        assert [c.output_index for c in got.calls] == [c.output_index for c in reference.calls] == [3]

    # the next turn, built with "anthropic" and sent through ChatAnthropic: the blocks go first, as sent
    result = fsm.reassemble(chunks)
    said = messages.assistant_message(result, "anthropic")
    answers = messages.tool_results(
        [messages.tool_result(c, 5, "anthropic") for c in result.complete_calls], "anthropic"
    )
    list(model.stream([{"role": "user", "content": "go"}, said, *answers]))
    assert replay.sent[-1]["messages"][1] == said
    assert [b["type"] for b in said["content"]] == ["thinking", "redacted_thinking", "text", "tool_use"]


def test_a_responses_reasoning_block_is_not_read_as_thinking() -> None:
    # langchain-openai's default blocks hold a Responses reasoning item (id, summary parts, encrypted
    # content) as a `reasoning` block with no `reasoning` text: no Claude-shaped block carries that,
    # so it is not made an empty unsigned block but read as the Responses item it is
    # (tests/test_langchain_responses_reasoning.py); v1's `reasoning` text is read
    core = pytest.importorskip("langchain_core.messages")
    summary = [{"index": 0, "type": "summary_text", "text": "Adding."}]
    item = {"type": "reasoning", "id": "rs_1", "summary": summary, "encrypted_content": "e", "index": 0}
    (read,) = fsm.reassemble([core.AIMessageChunk(content=[item])]).reasoning
    assert (read.text, read.signature, read.item_id, read.summary, read.encrypted_content) == (
        "",
        None,
        "rs_1",
        ("Adding.",),
        "e",
    )
    v1 = {"type": "reasoning", "reasoning": "Adding.", "id": "rs_1", "index": 0}
    assert [r.text for r in fsm.reassemble([core.AIMessageChunk(content=[v1])]).reasoning] == ["Adding."]
