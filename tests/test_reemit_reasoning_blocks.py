"""``DeltaEmitter(reasoning_blocks=...)``: the re-emitted reasoning block by block, with the signatures
and encrypted data a gateway's client must send back, in LiteLLM's or OpenRouter's chat dialect.

The shapes are the servers' own. LiteLLM's Anthropic stream handler
(BerriAI/litellm, ``litellm/llms/anthropic/chat/handler.py``, ``_content_block_delta_helper``) puts
each ``thinking_delta`` and ``signature_delta`` in a delta as ``thinking_blocks=[{"type":
"thinking", "thinking": <piece or "">, "signature": <signature or None>}]`` beside
``reasoning_content`` (the same text); its release notes for v1.63.0 name the field ``signature``.
OpenRouter's recorded chat streams (charmbracelet/fantasy's cassettes
``providertests/testdata/TestOpenRouterThinking/claude-sonnet-4-sig/thinking-streaming.yaml`` and
``.../gpt-5/thinking-streaming.yaml``) send ``reasoning_details=[{"type": "reasoning.text",
"text": <piece>, "format": "anthropic-claude-v1", "index": 0}]`` beside ``reasoning`` (the same
text), the signature in an entry of its own, and a GPT item's encrypted content as a
``reasoning.encrypted`` entry (``data``, ``id``, ``format: openai-responses-v1``). Every chunk is
checked with openai-python's ``ChatCompletionChunk``, whose delta takes extra fields."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from openai.types.chat import ChatCompletionChunk

import fsm
from fsm import ContentDelta, ReasoningData, Reassembler, Result, messages
from fsm.cli import main
from fsm.errors import InvalidOption
from fsm.reemit import DeltaEmitter
from tests.conftest import CAPTURES, captures
from tests.test_messages import anthropic_thinking_turn, gemini_thinking_turn
from tests.test_openrouter_reasoning import claude_turn, gpt_turn

DIALECTS = ("thinking_blocks", "reasoning_details")
FOUND = captures()
MISSING = f"recorded captures not found at {CAPTURES} (../shared is beside the project in CI)"


def sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def read(data: bytes, provider: str, piece: int | None, content_deltas: bool = False) -> tuple[list[Any], Result]:
    """``data`` fed whole (``piece`` None) or in pieces of that many bytes: the outputs and result."""
    r = Reassembler(provider, content_deltas=content_deltas)
    outputs: list[Any] = []
    for at in range(0, len(data), piece or len(data) or 1):
        outputs += r.feed_bytes(data[at : at + (piece or len(data))])
    result = r.close()
    return outputs + r.drain(), result


def reemit(
    data: bytes, provider: str, dialect: str, piece: int | None = None
) -> tuple[list[Any], Result, DeltaEmitter]:
    """The source read (whole or in pieces) and re-emitted: the chunks, the source's result, the emitter."""
    r = Reassembler(provider, content_deltas=True)
    emitter = DeltaEmitter(reasoning_blocks=dialect)  # type: ignore[arg-type]
    chunks = [emitter.start()]
    for at in range(0, len(data), piece or len(data) or 1):
        chunks += emitter.chunks(r.feed_bytes(data[at : at + (piece or len(data))]))
    result = r.close()
    chunks += [*emitter.chunks(r.drain()), emitter.finish(result)]
    for chunk in chunks:
        ChatCompletionChunk.model_validate(chunk)
    return chunks, result, emitter


def kept(result: Result) -> list[tuple[Any, ...]]:
    """What the round trip must keep of each block, in order."""
    return [(r.text, r.signature, r.redacted, r.encrypted_content, r.item_id) for r in result.reasoning]


def expected(source: Result, dialect: str) -> list[tuple[Any, ...]]:
    """``kept(source)`` as the dialect carries it: under thinking_blocks no item id or encrypted
    content (policy reasoning-block-unsent), under reasoning_details a summary as the block's text
    (policy reasoning-summary-as-text)."""
    if dialect == "thinking_blocks":  # a block left with nothing it can carry is not sent at all
        return [
            (r.text, r.signature, r.redacted, None, None)
            for r in source.reasoning
            if r.text or r.signature or r.redacted
        ]
    return [(r.text + "".join(r.summary), *k[1:]) for r, k in zip(source.reasoning, kept(source), strict=True)]


def blocks_back(back: Result, source: Result, dialect: str) -> list[tuple[Any, ...]]:
    """``kept(back)`` but the blocks that carry a Gemini call's signature, as OpenRouter sends one under
    ``reasoning_details`` (policy gemini-call-signature-as-openrouter: each signed call's, by its id,
    which policy gemini-signature-by-call-id puts back on the call's part), checked apart."""
    signed = {c.id: c.thought_signature for c in source.calls if c.thought_signature is not None}
    if dialect != "reasoning_details":
        return kept(back)
    apart = [k for k in kept(back) if k[0] == "" and k[4] in signed and signed[k[4]] == k[1]]
    assert sorted(apart) == sorted(("", sig, None, None, call_id) for call_id, sig in signed.items())
    return [k for k in kept(back) if k not in apart]


def assert_round_trip(data: bytes, provider: str) -> dict[str, tuple[Result, Result]]:
    """Each dialect, the source whole and a byte at a time, the re-emitted stream whole and a byte at
    a time: the same blocks read back. The source's result and one read back, by dialect."""
    found = {}
    for dialect in DIALECTS:
        chunks, source, _ = reemit(data, provider, dialect)
        body = sse(chunks) + b"data: [DONE]\n\n"
        for piece in (None, 1):
            again, source_cut, _ = reemit(data, provider, dialect, piece)
            assert again == chunks and source_cut == source
            _, back = read(body, "openai-chat", piece)
            assert blocks_back(back, source, dialect) == expected(source, dialect), dialect
            assert [(c.id, c.arguments) for c in back.calls] == [(c.id, c.arguments) for c in source.calls]
            assert back.text == source.text
        found[dialect] = (source, back)
    return found


def anthropic_interleaved() -> list[dict[str, Any]]:
    """Signed thinking, redacted thinking, text and a call, then thinking between the calls
    (interleaved thinking), signed, then a second call."""
    turn = anthropic_thinking_turn()
    end = turn[-2:]
    more = [
        {"type": "content_block_start", "index": 4, "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_delta", "index": 4, "delta": {"type": "thinking_delta", "thinking": "Now Bergen."}},
        {"type": "content_block_delta", "index": 4, "delta": {"type": "signature_delta", "signature": "SIG2"}},
        {"type": "content_block_stop", "index": 4},
        {
            "type": "content_block_start",
            "index": 5,
            "content_block": {"type": "tool_use", "id": "toolu_2", "name": "w"},
        },
        {"type": "content_block_delta", "index": 5, "delta": {"type": "input_json_delta", "partial_json": "{}"}},
        {"type": "content_block_stop", "index": 5},
    ]
    return turn[:-2] + more + end


def test_anthropic_signed_redacted_and_interleaved_thinking_read_back_and_go_back_to_claude() -> None:
    found = assert_round_trip(sse(anthropic_interleaved()), "anthropic")
    source = found["thinking_blocks"][0]
    assert kept(source) == [
        ("Need weather.", "EqQBCkYI", None, None, None),
        ("", None, "RED", None, None),
        ("Now Bergen.", "SIG2", None, None, None),
    ]
    thinking = [b for b in messages.assistant_message(source, "anthropic")["content"] if "thinking" in b["type"]]
    for _, back in found.values():  # the signed and redacted blocks go back to Claude, in order
        content = messages.assistant_message(back, "anthropic")["content"]
        assert [b for b in content if "thinking" in b["type"]] == thinking
        # and to a chat server as the dialect they came in (LiteLLM's, or OpenRouter's)
        chat = messages.assistant_message(back, "openai-chat")
        assert "thinking_blocks" in chat or "reasoning_details" in chat


def test_the_chunks_are_shaped_as_litellm_and_openrouter_stream_them() -> None:
    events = anthropic_thinking_turn()
    said = {}
    for dialect in DIALECTS:
        chunks, _, _ = reemit(sse(events), "anthropic", dialect)
        said[dialect] = [c["choices"][0]["delta"] for c in chunks[1:] if dialect in c["choices"][0]["delta"]]
    assert said["thinking_blocks"] == [
        {"reasoning_content": "Need ", "thinking_blocks": [{"type": "thinking", "thinking": "Need ", "index": 0}]},
        {
            "reasoning_content": "weather.",
            "thinking_blocks": [{"type": "thinking", "thinking": "weather.", "index": 0}],
        },
        {"thinking_blocks": [{"type": "thinking", "thinking": "", "signature": "EqQBCkYI", "index": 0}]},
        {"thinking_blocks": [{"type": "redacted_thinking", "data": "RED", "index": 1}]},
    ]
    assert said["reasoning_details"] == [
        {"reasoning": "Need ", "reasoning_details": [{"type": "reasoning.text", "text": "Need ", "index": 0}]},
        {"reasoning": "weather.", "reasoning_details": [{"type": "reasoning.text", "text": "weather.", "index": 0}]},
        {"reasoning_details": [{"type": "reasoning.text", "text": "", "signature": "EqQBCkYI", "index": 0}]},
        # Claude's redacted thinking, as OpenRouter gives it: encrypted, under Claude's format
        {
            "reasoning_details": [
                {"type": "reasoning.encrypted", "data": "RED", "format": "anthropic-claude-v1", "index": 1}
            ]
        },
    ]


def test_without_the_option_the_reasoning_goes_out_plain_as_before() -> None:
    plain = DeltaEmitter()
    r = Reassembler("anthropic", content_deltas=True)
    outputs = [o for e in anthropic_thinking_turn() for o in r.feed(e)]
    deltas = [c["choices"][0]["delta"] for c in plain.chunks(outputs)]
    assert [d for d in deltas if "reasoning_content" in d] == [
        {"reasoning_content": "Need "},
        {"reasoning_content": "weather."},
    ]
    assert not any("thinking_blocks" in d or "reasoning_details" in d for d in deltas)


def bedrock_turn() -> list[dict[str, Any]]:
    def delta(at: int, what: dict[str, Any]) -> dict[str, Any]:
        return {"contentBlockDelta": {"contentBlockIndex": at, "delta": what}}

    return [
        {"messageStart": {"role": "assistant"}},
        delta(0, {"reasoningContent": {"text": "Think."}}),
        delta(0, {"reasoningContent": {"signature": "BSIG"}}),
        {"contentBlockStop": {"contentBlockIndex": 0}},
        delta(1, {"reasoningContent": {"redactedContent": "UkVE"}}),
        {"contentBlockStop": {"contentBlockIndex": 1}},
        delta(2, {"text": "Done."}),
        {"contentBlockStop": {"contentBlockIndex": 2}},
        {"messageStop": {"stopReason": "end_turn"}},
    ]


def test_bedrock_converse_signed_and_redacted_reasoning_read_back() -> None:
    r = Reassembler("bedrock", content_deltas=True)
    emitters = {d: DeltaEmitter(reasoning_blocks=d) for d in DIALECTS}  # type: ignore[arg-type]
    chunks: dict[str, list[dict[str, Any]]] = {d: [] for d in DIALECTS}
    for event in bedrock_turn():
        outputs = r.feed(event)
        for d in DIALECTS:
            chunks[d] += emitters[d].chunks(outputs)
    source = r.close()
    assert kept(source) == [("Think.", "BSIG", None, None, None), ("", None, "UkVE", None, None)]
    for d in DIALECTS:
        back = fsm.reassemble([*chunks[d], emitters[d].finish(source)], "openai-chat")
        assert kept(back) == kept(source)


def test_gemini_signed_thoughts_read_back_with_their_signatures() -> None:
    """A thought part's ``thoughtSignature`` is the block's signature (Reasoning.signature), as a
    Claude block's is: it goes out as one. (The signatures Gemini puts on its calls and text parts are
    no reasoning's: they are not re-emitted by either dialect.)"""
    turn = gemini_thinking_turn()
    signed = {"candidates": [{"content": {"role": "model", "parts": [{"text": "More.", "thought": True}]}}]}
    signed["candidates"][0]["content"]["parts"][0]["thoughtSignature"] = "VEhPVQ=="
    events = [*turn[:2], signed, *turn[2:]]
    found = assert_round_trip(sse(events), "gemini")
    assert kept(found["thinking_blocks"][0]) == [("Plan: look it up.More.", "VEhPVQ==", None, None, None)]


def responses_turn() -> list[dict[str, Any]]:
    """A reasoning item whose text streams (gpt-oss) with a summary and encrypted content, then an
    item with encrypted content alone (o-series with ``include``), then a call."""

    def call(when: str, arguments: str) -> list[dict[str, Any]]:
        item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "w", "arguments": arguments}
        return [{"type": f"response.output_item.{when}", "output_index": 2, "item": item}]

    item = {"type": "reasoning", "id": "rs_1"}
    done = {**item, "summary": [{"type": "summary_text", "text": "Weather."}], "encrypted_content": "gAAAA1"}
    return [
        {"type": "response.created", "response": {"id": "r"}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.reasoning_text.delta", "output_index": 0, "delta": "Need "},
        {"type": "response.reasoning_text.delta", "output_index": 0, "delta": "weather."},
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.output_item.added", "output_index": 1, "item": {"type": "reasoning", "id": "rs_2"}},
        {
            "type": "response.output_item.done",
            "output_index": 1,
            "item": {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gAAAA2"},
        },
        *call("added", ""),
        {"type": "response.function_call_arguments.delta", "output_index": 2, "delta": "{}"},
        *call("done", "{}"),
        {"type": "response.completed", "response": {"id": "r"}},
    ]


def test_a_responses_item_goes_out_as_openrouter_sends_one() -> None:
    found = assert_round_trip(sse(responses_turn()), "openai-responses")
    source, back = found["reasoning_details"]
    assert kept(source) == [("Need weather.", None, None, "gAAAA1", "rs_1"), ("", None, None, "gAAAA2", "rs_2")]
    # the summary, read back as the block's text (policy reasoning-summary-as-text)
    assert kept(back) == [("Need weather.Weather.", None, None, "gAAAA1", "rs_1"), ("", None, None, "gAAAA2", "rs_2")]
    chunks, _, _ = reemit(sse(responses_turn()), "openai-responses", "reasoning_details")
    details = [e for c in chunks for e in c["choices"][0]["delta"].get("reasoning_details", ())]
    assert details[-3:] == [
        {"type": "reasoning.summary", "summary": "Weather.", "format": "openai-responses-v1", "index": 0},
        {"type": "reasoning.encrypted", "data": "gAAAA1", "id": "rs_1", "format": "openai-responses-v1", "index": 0},
        {"type": "reasoning.encrypted", "data": "gAAAA2", "id": "rs_2", "format": "openai-responses-v1", "index": 1},
    ]
    # the encrypted items go back to a chat server as OpenRouter takes them
    sent = messages.assistant_message(back, "openai-chat")["reasoning_details"]
    assert [(e["type"], e.get("data"), e.get("id")) for e in sent] == [
        ("reasoning.encrypted", "gAAAA1", "rs_1"),
        ("reasoning.encrypted", "gAAAA2", "rs_2"),
    ]


def test_what_thinking_blocks_cannot_carry_is_listed_not_sent() -> None:
    _, _, emitter = reemit(sse(responses_turn()), "openai-responses", "thinking_blocks")
    assert emitter.unsent_reasoning == (
        "reasoning block 0: its encrypted_content, item_id, summary (thinking_blocks has no field)",
        "reasoning block 1: its encrypted_content, item_id (thinking_blocks has no field)",
    )
    _, _, other = reemit(sse(responses_turn()), "openai-responses", "reasoning_details")
    assert other.unsent_reasoning == () == DeltaEmitter().unsent_reasoning


def test_openrouter_and_litellm_chat_sources_read_back_as_they_came() -> None:
    for events in (claude_turn(), gpt_turn()):
        found = assert_round_trip(sse(events), "openai-chat")
        source, back = found["reasoning_details"]
        assert [(r.detail, r.format) for r in back.reasoning] == [(r.detail, r.format) for r in source.reasoning]
        assert messages.assistant_message(back, "openai-chat") == messages.assistant_message(source, "openai-chat")
    litellm = [
        {"choices": [{"index": 0, "delta": {"reasoning_content": said, "thinking_blocks": [block]}}]}
        for said, block in (
            ("Think.", {"type": "thinking", "thinking": "Think.", "index": 0}),
            ("", {"type": "thinking", "thinking": "", "signature": "SIG", "index": 0}),
            ("", {"type": "redacted_thinking", "data": "UkVE", "index": 1}),
        )
    ]
    found = assert_round_trip(sse(litellm), "openai-chat")
    source, back = found["thinking_blocks"]
    assert kept(back) == [("Think.", "SIG", None, None, None), ("", None, "UkVE", None, None)]
    assert messages.assistant_message(back, "openai-chat") == messages.assistant_message(source, "openai-chat")


def test_openrouters_redacted_claude_block_is_redacted_data_and_goes_back_to_claude() -> None:
    entry = {"type": "reasoning.encrypted", "data": "UkVE", "format": "anthropic-claude-v1", "index": 1}
    events = [*claude_turn()[:4], {"choices": [{"index": 0, "delta": {"reasoning_details": [entry]}}]}]
    result = fsm.reassemble(events, "openai-chat")
    assert [(r.redacted, r.encrypted_content) for r in result.reasoning] == [(None, None), ("UkVE", None)]
    assert messages.assistant_message(result, "anthropic")["content"][1] == {
        "type": "redacted_thinking",
        "data": "UkVE",
    }
    assert messages.assistant_message(result, "openai-chat")["reasoning_details"][1] == entry


def test_the_reassembler_reports_each_blocks_data_before_its_text_and_names_its_block() -> None:
    r = Reassembler("openai-chat", content_deltas=True)
    outputs = [o for e in claude_turn()[:4] for o in r.feed(e)]
    assert outputs == [
        ReasoningData(0, detail="reasoning.text", format="anthropic-claude-v1"),
        ContentDelta("reasoning", "The user asks", 0),
        ContentDelta("reasoning", " for weather.", 0),
        ReasoningData(0, signature="EqQBCkgI", detail="reasoning.text", format="anthropic-claude-v1"),
    ]


@pytest.mark.parametrize("path", FOUND or [pytest.param(None, marks=pytest.mark.skip(reason=MISSING))])
def test_every_capture_reads_back_with_its_reasoning(path: Path) -> None:
    """The recorded streams with reasoning: Cohere's plan, DeepSeek's reasoning_content, an LM Studio
    Responses item with its id (none of them signed: no capture holds signed reasoning, so the signed
    sources above are inline streams shaped as the providers' docs and SDK fixtures give them)."""
    data = path.read_bytes()
    _, source = read(data, "auto", None)
    for dialect in DIALECTS:
        chunks, again, _ = reemit(data, "auto", dialect)
        assert again == source
        back = fsm.reassemble(chunks, "openai-chat")
        assert blocks_back(back, source, dialect) == expected(source, dialect)


def test_the_option_is_checked() -> None:
    with pytest.raises(InvalidOption, match="reasoning_blocks must be None or one of"):
        DeltaEmitter(reasoning_blocks="thinking")  # type: ignore[arg-type]


def test_replay_deltas_takes_the_dialect_and_says_what_it_could_not_send(tmp_path: Path) -> None:
    path = tmp_path / "r.sse"
    path.write_bytes(sse(responses_turn()))
    out, err = io.StringIO(), io.StringIO()
    argv = ["replay", "--output", "deltas", "--reasoning-blocks", "thinking_blocks", str(path)]
    assert main(argv, stdout=out, stderr=err) == 0
    back = fsm.reassemble([json.loads(line) for line in out.getvalue().splitlines()], "openai-chat")
    assert [r.text for r in back.reasoning] == ["Need weather.", ""][:1]
    assert "not re-emitted: reasoning block 1: its encrypted_content" in err.getvalue()
    path.write_bytes(sse(anthropic_thinking_turn()))
    out = io.StringIO()
    assert main(["replay", "--output", "deltas", "--reasoning-blocks", "reasoning_details", str(path)], stdout=out) == 0
    back = fsm.reassemble([json.loads(line) for line in out.getvalue().splitlines()], "openai-chat")
    assert kept(back) == [("Need weather.", "EqQBCkYI", None, None, None), ("", None, "RED", None, None)]


def details_of(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for c in chunks for e in c["choices"][0]["delta"].get("reasoning_details", ())]


@pytest.mark.parametrize(
    ("provider", "events", "model", "named"),
    [
        ("anthropic", anthropic_thinking_turn(), "claude-sonnet-4-5", "anthropic-claude-v1"),
        ("bedrock", bedrock_turn(), "us.anthropic.claude-sonnet-4-5-v1:0", "anthropic-claude-v1"),
        ("gemini", gemini_thinking_turn(), "gemini-3-pro", "google-gemini-v1"),
        ("openai-responses", responses_turn(), "gpt-5", "openai-responses-v1"),
    ],
    ids=lambda v: v if isinstance(v, str) and "-" not in v else None,
)
def test_each_blocks_entries_name_the_format_openrouter_names_for_its_source(
    provider: str, events: list[dict[str, Any]], model: str, named: str
) -> None:
    """Policy reasoning-format-by-source: OpenRouter's recorded streams (charmbracelet/fantasy's
    cassettes: Claude's ``reasoning.text`` pieces through Anthropic and through Amazon Bedrock,
    Gemini's) name the block's format on every entry; its docs list these formats."""
    r = Reassembler(provider, content_deltas=True)
    emitter = DeltaEmitter(reasoning_blocks="reasoning_details", source=provider, model=model)
    chunks = [c for e in events for c in emitter.chunks(r.feed(e))]
    source = r.close()
    chunks += [*emitter.chunks(r.drain()), emitter.finish(source)]
    for chunk in chunks:
        ChatCompletionChunk.model_validate(chunk)
    texts = [e for e in details_of(chunks) if e["type"] == "reasoning.text"]
    assert texts and all(e["format"] == named for e in details_of(chunks))
    for piece in (None, 1):  # read back: the same blocks, now of the format named
        _, back = read(sse(chunks), "openai-chat", piece)
        assert blocks_back(back, source, "reasoning_details") == expected(source, "reasoning_details")
        assert {r.format for r in back.reasoning} == {named}
    # without a source, a text entry names none (as before); thinking_blocks has no format field
    plain = DeltaEmitter(reasoning_blocks="reasoning_details")
    r = Reassembler(provider, content_deltas=True)
    said = [e for ev in events for c in plain.chunks(r.feed(ev)) for e in details_of([c])]
    assert all("format" not in e for e in said if e["type"] == "reasoning.text")


def test_a_bedrock_block_of_another_model_or_another_source_names_no_format() -> None:
    for provider, events, model in (("bedrock", bedrock_turn(), "deepseek.r1-v1:0"), ("cohere", [], "command-a")):
        emitter = DeltaEmitter(reasoning_blocks="reasoning_details", source=provider, model=model)
        r = Reassembler(provider, content_deltas=True)
        said = [e for ev in events for c in emitter.chunks(r.feed(ev)) for e in details_of([c])]
        assert all("format" not in e for e in said if e["type"] == "reasoning.text")
    # a chat source's block keeps the format it came with, whatever the source
    emitter = DeltaEmitter(reasoning_blocks="reasoning_details", source="openai-chat")
    r = Reassembler("openai-chat", content_deltas=True)
    said = [e for ev in gpt_turn() for c in emitter.chunks(r.feed(ev)) for e in details_of([c])]
    assert {e.get("format") for e in said} == {"openai-responses-v1"}
    with pytest.raises(InvalidOption, match="source must be None or one of"):
        DeltaEmitter(source="claude")


def test_replay_deltas_names_the_format_of_the_provider_given(tmp_path: Path) -> None:
    path = tmp_path / "a.sse"
    path.write_bytes(sse(anthropic_thinking_turn()))
    out = io.StringIO()
    argv = ["replay", "--provider", "anthropic", "--output", "deltas", "--reasoning-blocks", "reasoning_details"]
    assert main([*argv, str(path)], stdout=out) == 0
    chunks = [json.loads(line) for line in out.getvalue().splitlines()]
    assert {e.get("format") for e in details_of(chunks)} == {"anthropic-claude-v1"}
