"""Task 99: the re-emitter's and the reasoning signatures' leftovers (each test below failed before,
but those of gap 4, which hold what was found right).

1. OpenRouter: two Gemini thought signatures under one ``reasoning_details`` index (two calls', or the
   thought's own and then a call's) made one block, the later signature kept, the other lost in
   silence. Policy signatures-kept-apart: a signature of another item (another id) under an index
   whose block holds one builds a block of its own there, so each keeps its id, and policy
   gemini-signature-by-call-id gives each call its own.
2. Under ``reasoning_blocks="reasoning_details"`` a native Gemini call's signature went out in
   ``extra_content``, not as OpenRouter sends a call's. Policy gemini-call-signature-as-openrouter:
   a ``reasoning.encrypted`` entry of Gemini's format naming the call's id, under an index of its
   own, in a chunk of its own before the call's; read back it signs the call's part for Gemini.
3. For LangChain chunks the re-emitter learnt no provider (``detected_provider`` is ``openai-chat``,
   the wire they are read as). Policy langchain-source-provider: ``Reassembler.source_provider``
   names the provider the integration reads (``response_metadata["model_provider"]``), where that
   tells it alone.
4. A late Gemini signature, after the next call went out: checked, it lands on its own call read
   back (toolcall-fsm's chat decoder, openai-python's accumulator), either dialect, either flush.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessageChunk
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

import fsm
from fsm.reemit import DeltaEmitter

GEMINI = "google-gemini-v1"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "gen-1", "object": "chat.completion.chunk", "created": 1, "model": "g", "choices": [choice]}


def _sse(payloads: list[Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(p).encode() + b"\n\n" for p in payloads) + b"data: [DONE]\n\n"


def _read(wire: bytes, provider: str = "openai-chat", piece: int | None = None) -> fsm.Result:
    reader = fsm.Reassembler(provider)
    step = piece or len(wire)
    for at in range(0, len(wire), step):
        reader.feed_bytes(wire[at : at + step])
    return reader.close()


def _reemit(events: list[Any], provider: str, flush: str = "incremental", **options: Any) -> tuple[list[Any], Any]:
    r = fsm.Reassembler(provider, content_deltas=True)
    emitter = DeltaEmitter(flush, **options)  # type: ignore[arg-type]
    chunks = [c for e in events for c in emitter.chunks(r.feed(e))]
    result = r.close()
    chunks += [*emitter.chunks(r.drain()), emitter.finish(result)]
    for chunk in chunks:
        ChatCompletionChunk.model_validate(chunk)
    return chunks, result


def _signed_parts(result: fsm.Result) -> list[tuple[Any, ...]]:
    parts = fsm.messages.assistant_message(result, "gemini")["parts"]
    return [(p["functionCall"]["id"] if "functionCall" in p else "thought", p.get("thoughtSignature")) for p in parts]


def _blocks(result: fsm.Result) -> list[tuple[Any, ...]]:
    return [(r.text, r.signature, r.item_id) for r in result.reasoning]


# -- 1. two signatures under one index --------------------------------------------------------------


def _entry(data: str, call_id: str | None = None, index: int = 0) -> dict[str, Any]:
    entry = {"type": "reasoning.encrypted", "data": data, "format": GEMINI, "index": index}
    return entry | ({"id": call_id} if call_id else {})


def _openrouter_two_signed(*signatures: dict[str, Any]) -> list[dict[str, Any]]:
    """Gemini 3 through OpenRouter: a thought, then the signatures given, all under index 0, then two calls."""
    text = {"type": "reasoning.text", "text": "**Weather**", "format": GEMINI, "index": 0}
    opened = [
        {"index": n, "id": f"tool_{n + 1}", "type": "function", "function": {"name": "w", "arguments": "{}"}}
        for n in range(2)
    ]
    return [
        _chunk({"role": "assistant", "content": "", "reasoning_details": [text]}),
        *[_chunk({"reasoning_details": [each]}) for each in signatures],
        _chunk({"tool_calls": opened}),
        _chunk({"content": ""}, "tool_calls"),
    ]


@pytest.mark.parametrize("piece", [None, 1])
@pytest.mark.parametrize("one_chunk", [False, True], ids=["apart", "in-one-delta"])
def test_two_calls_signatures_under_one_index_stay_two(piece: int | None, one_chunk: bool) -> None:
    """Before: ``[("**Weather**", "SIG2", "tool_2")]``, and call tool_1 went back to Gemini unsigned."""
    turn = _openrouter_two_signed(_entry("SIG1", "tool_1"), _entry("SIG2", "tool_2"))
    if one_chunk:
        both = turn[1]["choices"][0]["delta"]["reasoning_details"] + turn[2]["choices"][0]["delta"]["reasoning_details"]
        turn[1:3] = [_chunk({"reasoning_details": both})]
    result = _read(_sse(turn), piece=piece)
    assert _blocks(result) == [("**Weather**", "SIG1", "tool_1"), ("", "SIG2", "tool_2")]
    assert result.codes() == []
    assert _signed_parts(result) == [("thought", None), ("tool_1", "SIG1"), ("tool_2", "SIG2")]
    # OpenRouter gets both back, each with its id
    details = fsm.messages.assistant_message(result, "openai-chat")["reasoning_details"]
    assert [(e["type"], e.get("data"), e.get("id")) for e in details] == [
        ("reasoning.text", None, None),
        ("reasoning.encrypted", "SIG1", "tool_1"),
        ("reasoning.encrypted", "SIG2", "tool_2"),
    ]


def test_the_thoughts_own_signature_then_a_calls_under_one_index_stay_two() -> None:
    """Before: the thought's signature (no id) was replaced by the call's, and lost."""
    result = fsm.reassemble(_openrouter_two_signed(_entry("OWN"), _entry("SIG1", "tool_1")), "openai-chat")
    assert _blocks(result) == [("**Weather**", "OWN", None), ("", "SIG1", "tool_1")]
    assert _signed_parts(result) == [("thought", "OWN"), ("tool_1", "SIG1"), ("tool_2", None)]


def test_the_same_items_signature_again_is_its_latest_word() -> None:
    """The policy's other half: a signature of the same id replaces (a resend), as every block's field does."""
    result = fsm.reassemble(_openrouter_two_signed(_entry("OLD", "tool_1"), _entry("NEW", "tool_1")), "openai-chat")
    assert _blocks(result) == [("**Weather**", "NEW", "tool_1")]


def test_later_pieces_of_the_index_build_the_latest_block() -> None:
    turn = _openrouter_two_signed(_entry("SIG1", "tool_1"), _entry("SIG2", "tool_2"))
    more = {"type": "reasoning.text", "text": " more", "format": GEMINI, "index": 0}
    turn.insert(3, _chunk({"reasoning_details": [more]}))
    result = fsm.reassemble(turn, "openai-chat")
    assert _blocks(result) == [("**Weather**", "SIG1", "tool_1"), (" more", "SIG2", "tool_2")]


@pytest.mark.parametrize("blocks", ["reasoning_details", "thinking_blocks"])
def test_two_signatures_under_one_index_re_emitted_and_read_back_stay_two(blocks: str) -> None:
    turn = _openrouter_two_signed(_entry("SIG1", "tool_1"), _entry("SIG2", "tool_2"))
    chunks, source = _reemit(turn, "openai-chat", reasoning_blocks=blocks, source="openai-chat")
    back = _read(_sse(chunks))
    if blocks == "reasoning_details":
        assert _blocks(back) == _blocks(source)
        assert _signed_parts(back) == [("thought", None), ("tool_1", "SIG1"), ("tool_2", "SIG2")]
    else:  # Claude's dialect keeps no id: both signatures still come back, each a block's
        assert [b.signature for b in back.reasoning] == ["SIG1", "SIG2"]


# -- 2. a native Gemini call's signature under reasoning_details --------------------------------------


def _gemini_event(*parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    return {"candidates": [candidate | ({"finishReason": finish} if finish else {})]}


def _gemini_3_turn() -> list[dict[str, Any]]:
    """A thought, then two parallel calls each signed (as Gemini 3 signs each step's first; here both)."""
    first = {"functionCall": {"name": "w", "args": {"c": "Oslo"}, "id": "call_a"}, "thoughtSignature": "SIGA"}
    second = {"functionCall": {"name": "w", "args": {"c": "Rome"}, "id": "call_b"}, "thoughtSignature": "SIGB"}
    return [
        _gemini_event({"text": "**Weather**", "thought": True}),
        _gemini_event(first),
        _gemini_event(second),
        _gemini_event({"text": ""}, finish="STOP"),
    ]


@pytest.mark.parametrize("flush", ["incremental", "on-finish"])
@pytest.mark.parametrize("piece", [None, 1])
def test_a_native_gemini_calls_signature_goes_out_as_openrouter_sends_one(flush: str, piece: int | None) -> None:
    """Before: ``extra_content.google.thought_signature`` on the call, beside OpenRouter's dialect."""
    chunks, source = _reemit(_gemini_3_turn(), "gemini", flush, reasoning_blocks="reasoning_details", source="gemini")
    assert not any("extra_content" in e for c in chunks for e in c["choices"][0]["delta"].get("tool_calls", ()))
    details = [e for c in chunks for e in c["choices"][0]["delta"].get("reasoning_details", ())]
    assert [e for e in details if e["type"] == "reasoning.encrypted"] == [
        {"type": "reasoning.encrypted", "data": "SIGA", "id": "call_a", "format": GEMINI, "index": 1},
        {"type": "reasoning.encrypted", "data": "SIGB", "id": "call_b", "format": GEMINI, "index": 2},
    ]
    back = _read(_sse(chunks), piece=piece)
    # each call keeps its signature, by its id: the next Gemini request signs each call's functionCall part
    assert _signed_parts(back) == _signed_parts(source) == [("thought", None), ("call_a", "SIGA"), ("call_b", "SIGB")]
    assert _blocks(back) == [("**Weather**", None, None), ("", "SIGA", "call_a"), ("", "SIGB", "call_b")]
    assert back.codes() == []
    # and an OpenRouter-bound next request carries them as OpenRouter gave them, the calls bare
    message = fsm.messages.assistant_message(back, "openai-chat")
    assert [(e["type"], e.get("id")) for e in message["reasoning_details"]] == [
        ("reasoning.text", None),
        ("reasoning.encrypted", "call_a"),
        ("reasoning.encrypted", "call_b"),
    ]
    assert all("extra_content" not in call for call in message["tool_calls"])


def test_openai_python_reads_each_call_done_once_with_its_whole_text() -> None:
    """The signature's chunk holds no tool call: the stream helper reads no call's end from it."""
    chunks, _ = _reemit(_gemini_3_turn(), "gemini", reasoning_blocks="reasoning_details", source="gemini")
    state = ChatCompletionStreamState()
    done = [
        (event.index, event.arguments)
        for chunk in chunks
        for event in state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
        if event.type == "tool_calls.function.arguments.done"
    ]
    assert done == [(0, '{"c": "Oslo"}'), (1, '{"c": "Rome"}')]


def test_without_reasoning_details_the_call_keeps_gemini_s_own_way() -> None:
    """Policy gemini-signatures-reemitted, unchanged for the other dialects and none."""
    for blocks in (None, "thinking_blocks"):
        chunks, _ = _reemit(_gemini_3_turn(), "gemini", reasoning_blocks=blocks, source="gemini")
        signed = [
            e["extra_content"]["google"]["thought_signature"]
            for c in chunks
            for e in c["choices"][0]["delta"].get("tool_calls", ())
            if "extra_content" in e
        ]
        assert signed == ["SIGA", "SIGB"]
        assert [c.thought_signature for c in _read(_sse(chunks)).calls] == ["SIGA", "SIGB"]


def test_a_call_signature_entry_takes_an_index_no_block_takes() -> None:
    """A thought after the signed call: its block's entries go under the next index, not the call's."""
    turn = _gemini_3_turn()
    turn.insert(2, _gemini_event({"text": "Then Rome.", "thought": True}))
    chunks, source = _reemit(turn, "gemini", reasoning_blocks="reasoning_details", source="gemini")
    back = _read(_sse(chunks))
    assert [b.text for b in source.reasoning] == ["**Weather**", "Then Rome."]
    assert _blocks(back) == [
        ("**Weather**", None, None),
        ("", "SIGA", "call_a"),
        ("Then Rome.", None, None),
        ("", "SIGB", "call_b"),
    ]
    assert [(part, signed) for part, signed in _signed_parts(back) if part != "thought"] == [
        ("call_a", "SIGA"),
        ("call_b", "SIGB"),
    ]


# -- 3. LangChain chunks: the provider the integration reads ------------------------------------------


def _lc(content: Any, provider: str | None, **fields: Any) -> AIMessageChunk:
    metadata = {"model_provider": provider} if provider else {}
    return AIMessageChunk(content=content, response_metadata=metadata | fields.pop("metadata", {}), **fields)


def _claude_chunks(provider: str | None = "anthropic") -> list[AIMessageChunk]:
    return [
        _lc([{"type": "thinking", "thinking": "Hmm.", "index": 0}], provider),
        _lc([{"type": "thinking", "signature": "SIGC", "index": 0}], provider),
        _lc([{"type": "text", "text": "Hi", "index": 1}], provider, metadata={"stop_reason": "end_turn"}),
    ]


@pytest.mark.parametrize(
    ("provider", "source", "named"),
    [
        ("anthropic", "anthropic", "anthropic-claude-v1"),
        ("google_genai", "gemini", GEMINI),
        ("bedrock_converse", "bedrock", "anthropic-claude-v1"),
        ("groq", "openai-chat", None),
        (None, "openai-chat", None),  # langchain-core before 1.0 names none
    ],
)
def test_langchain_chunks_tell_the_provider_their_integration_reads(
    provider: str | None, source: str, named: str | None
) -> None:
    """Before: ``openai-chat`` for every one, so a Claude block through ChatAnthropic named no format."""
    for auto in ("auto", "openai-chat"):
        r = fsm.Reassembler(auto, content_deltas=True)
        outputs = [o for c in _claude_chunks(provider) for o in r.feed(c)]
        assert r.detected_provider == "openai-chat"  # the wire they are read as, as Result.provider says
        assert r.source_provider == source
        result = r.close()
        emitter = DeltaEmitter(reasoning_blocks="reasoning_details", source=r.source_provider, model="claude-x")
        chunks = [*emitter.chunks(outputs), emitter.finish(result)]
        details = [e for c in chunks for e in c["choices"][0]["delta"].get("reasoning_details", ())]
        assert details and all(e.get("format") == named for e in details if e["type"] == "reasoning.text")


def test_chat_openai_s_responses_items_tell_the_responses_api() -> None:
    """ChatOpenAI reads the chat API or the Responses API: its name alone tells neither."""
    item = {"type": "reasoning", "id": "rs_1", "summary": [], "index": 0}
    r = fsm.Reassembler("openai-chat")
    r.feed(_lc("Hi", "openai"))
    assert r.source_provider == "openai-chat"
    r.feed(_lc([item], "openai"))
    assert r.source_provider == "openai-responses"


def test_dicts_and_bytes_tell_what_they_always_told() -> None:
    r = fsm.Reassembler("auto")
    assert r.source_provider is None
    r.feed_bytes(_sse(_gemini_3_turn()))
    assert r.source_provider == r.detected_provider == "gemini"


# -- 4. a late Gemini signature, after the next call went out ------------------------------------------


def _opened(index: int, call_id: str, arguments: str) -> dict[str, Any]:
    function = {"name": "w", "arguments": arguments}
    return _chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": function}]})


def _late_signature_turns() -> dict[str, tuple[str, list[dict[str, Any]]]]:
    a = {"functionCall": {"name": "w", "args": {"c": "Oslo"}, "id": "a"}}
    b = {"functionCall": {"name": "w", "args": {"c": "Rome"}, "id": "b"}}
    signed = {"google": {"thought_signature": "SIGA"}}
    resent = _gemini_event({**a, "thoughtSignature": "SIGA"})
    return {
        # Gemini resends call a, signed, after call b
        "gemini-resend": ("gemini", [_gemini_event(a), _gemini_event(b), resent, _gemini_event(finish="STOP")]),
        # a chat proxy sends a's signature after b went out whole
        "chat-after": (
            "openai-chat",
            [
                _opened(0, "a", '{"c":"Oslo"}'),
                _opened(1, "b", '{"c":"Rome"}'),
                _chunk({"tool_calls": [{"index": 0, "function": {"arguments": ""}, "extra_content": signed}]}),
                _chunk({}, "tool_calls"),
            ],
        ),
        # ... or beside a's last text, interleaved with b's
        "chat-interleaved": (
            "openai-chat",
            [
                _opened(0, "a", '{"c":'),
                _opened(1, "b", '{"c":"Rome"}'),
                _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Oslo"}'}, "extra_content": signed}]}),
                _chunk({}, "tool_calls"),
            ],
        ),
    }


@pytest.mark.parametrize("case", sorted(_late_signature_turns()))
@pytest.mark.parametrize("flush", ["incremental", "on-finish"])
@pytest.mark.parametrize("blocks", [None, "reasoning_details"])
def test_a_late_signature_lands_on_its_own_call_read_back(case: str, flush: str, blocks: str | None) -> None:
    provider, turn = _late_signature_turns()[case]
    chunks, source = _reemit(turn, provider, flush, reasoning_blocks=blocks)
    assert [(c.id, c.thought_signature) for c in source.calls] == [("a", "SIGA"), ("b", None)]
    back = _read(_sse(chunks))
    assert back.codes() == []
    assert [(c.id, c.arguments) for c in back.calls] == [("a", {"c": "Oslo"}), ("b", {"c": "Rome"})]
    assert _signed_parts(back) == [("a", "SIGA"), ("b", None)]
    # openai-python's accumulator: on call a, in Gemini's own way (the OpenRouter way names a by its id)
    state = ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
    calls = state.get_final_completion().choices[0].message.tool_calls or []
    extra = [(call.id, (call.model_extra or {}).get("extra_content")) for call in calls]
    if blocks is None:
        assert extra == [("a", {"google": {"thought_signature": "SIGA"}}), ("b", None)]
    else:
        assert extra == [("a", None), ("b", None)]
        assert [(b.signature, b.item_id) for b in back.reasoning] == [("SIGA", "a")]
