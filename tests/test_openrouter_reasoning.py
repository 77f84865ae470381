"""OpenRouter's ``reasoning_details``: a chat turn's reasoning blocks with what the model's provider
wants back (a Claude block's signature, an OpenAI item's encrypted content), read in the stead of the
delta's plain ``reasoning`` and sent back by ``fsm.messages`` as they came.

The streams are shaped as OpenRouter's chat chunks are (public recordings of OpenRouter in front of
Claude and of GPT-5: ``reasoning_details`` pieces of one block under one ``index``, the text a piece
at a time, the signature in a piece of its own, each piece naming its ``type`` and ``format``, beside
``reasoning`` saying the same text). Before, ``reasoning_details`` was read past without a word: the
signature was lost, and a Claude turn of calls sent back without it is refused."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionChunk

import fsm
from fsm import Limits, Reassembler, messages
from fsm.errors import InvalidOption
from fsm.results import Reasoning
from fsm.serialize import result_to_json as unstructure

CLAUDE = "anthropic-claude-v1"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish, "native_finish_reason": finish}
    return {"id": "gen-1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice]}


def _piece(reasoning: str | None, **entry: Any) -> dict[str, Any]:
    return _chunk({"role": "assistant", "content": "", "reasoning": reasoning, "reasoning_details": [entry]})


def claude_turn() -> list[dict[str, Any]]:
    """Claude through OpenRouter: thinking in pieces, its signature last, then a call."""
    return [
        _chunk({"role": "assistant", "content": "", "reasoning": None, "reasoning_details": []}),
        _piece("The user asks", type="reasoning.text", text="The user asks", format=CLAUDE, index=0),
        _piece(" for weather.", type="reasoning.text", text=" for weather.", format=CLAUDE, index=0),
        _piece("", type="reasoning.text", text="", signature="EqQBCkgI", format=CLAUDE, index=0),
        _chunk({"tool_calls": [{"index": 0, "id": "toolu_1", "type": "function", "function": {"name": "weather"}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Florence"}'}}]}),
        _chunk({}, "tool_calls"),
    ]


def gpt_turn() -> list[dict[str, Any]]:
    """GPT-5 through OpenRouter: a summary in pieces, then the item's encrypted content, then a call."""
    responses = "openai-responses-v1"
    return [
        _piece("**Retr", type="reasoning.summary", summary="**Retr", format=responses, index=0),
        _piece("ieving**", type="reasoning.summary", summary="ieving**", format=responses, index=0),
        _piece(None, type="reasoning.encrypted", data="gAAAAB", id="rs_1", format=responses, index=1),
        _chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "weather"}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),
        _chunk({}, "tool_calls"),
    ]


def read(chunks: list[Any], **options: Any) -> fsm.Result:
    r = Reassembler("openai-chat", **options)
    for chunk in chunks:
        r.feed(chunk)
    return r.close()


def sse(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def test_claudes_thinking_keeps_its_signature_and_goes_back_as_it_came() -> None:
    result = read(claude_turn())
    assert result.reasoning == (
        Reasoning("The user asks for weather.", signature="EqQBCkgI", detail="reasoning.text", format=CLAUDE),
    )
    assert result.diagnostics == () and result.calls[0].arguments == {"city": "Florence"}
    message = messages.assistant_message(result, "openai-chat")
    assert message["reasoning_details"] == [
        {
            "type": "reasoning.text",
            "text": "The user asks for weather.",
            "signature": "EqQBCkgI",
            "format": CLAUDE,
            "index": 0,
        }
    ]
    assert "thinking_blocks" not in message  # LiteLLM's field: OpenRouter's blocks go back in its own
    # To Claude itself, the same block is a signed thinking block, before the call.
    blocks = messages.assistant_message(result, "anthropic")["content"]
    assert blocks[0] == {"type": "thinking", "thinking": "The user asks for weather.", "signature": "EqQBCkgI"}


def test_a_summary_and_encrypted_content_go_back_as_two_entries() -> None:
    result = read(gpt_turn())
    assert [(r.detail, r.text, r.encrypted_content, r.item_id) for r in result.reasoning] == [
        ("reasoning.summary", "**Retrieving**", None, None),
        ("reasoning.encrypted", "", "gAAAAB", "rs_1"),
    ]
    assert messages.assistant_message(result, "openai-chat")["reasoning_details"] == [
        {"type": "reasoning.summary", "summary": "**Retrieving**", "format": "openai-responses-v1", "index": 0},
        {"type": "reasoning.encrypted", "data": "gAAAAB", "id": "rs_1", "format": "openai-responses-v1", "index": 1},
    ]


@pytest.mark.parametrize("turn", [claude_turn, gpt_turn])
def test_every_delivery_reads_the_same(turn: Any) -> None:
    chunks = turn()
    expected = unstructure(read(chunks))
    body = sse(chunks)
    for size in (1, 7, len(body)):
        r = Reassembler("openai-chat")
        for at in range(0, len(body), size):
            r.feed_bytes(body[at : at + size])
        assert unstructure(r.close()) == expected, size
    # openai-python's own chunk objects (its delta keeps the keys it does not know), and its client
    # reading the bytes as a server's stream.
    assert unstructure(read([ChatCompletionChunk.model_validate(c) for c in chunks])) == expected
    reply = httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})
    client = openai.OpenAI(api_key="k", http_client=httpx.Client(transport=httpx.MockTransport(lambda _: reply)))
    streamed = client.chat.completions.create(model="m", messages=[], stream=True)
    assert unstructure(read(list(streamed))) == expected
    assert unstructure(read(chunks))["reasoning"][0]["format"]  # detail and format go out as JSON


def test_the_next_request_carries_the_details_through_the_sdk() -> None:
    result = read(claude_turn())
    sent: list[dict[str, Any]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(200, content=sse(claude_turn()), headers={"content-type": "text/event-stream"})

    client = openai.OpenAI(api_key="k", http_client=httpx.Client(transport=httpx.MockTransport(answer)))
    history: list[Any] = [{"role": "user", "content": "weather?"}, messages.assistant_message(result, "openai-chat")]
    history.append(messages.tool_result(result.calls[0], "sunny", "openai-chat"))
    list(client.chat.completions.create(model="m", messages=history, stream=True))
    assert sent[0]["messages"][1]["reasoning_details"][0]["signature"] == "EqQBCkgI"


@pytest.mark.parametrize(
    ("details", "said"),
    [
        ([{"type": "reasoning.unknown", "text": "x"}], "is of type 'reasoning.unknown', which is not read"),
        ([{"type": "reasoning.text", "text": 5}], "reasoning_details[0].text is int, not str"),
        ([{"type": "reasoning.text", "text": "x", "index": True}], "reasoning_details[0].index is bool, not int"),
        ([{"type": "reasoning.text", "text": "x", "index": -1}], "reasoning_details[0].index is -1, not an index"),
        ([{"type": "reasoning.text", "text": "x"}, "x"], "reasoning_details[1] is str, not an object"),
        ([{"type": ["reasoning.text"], "text": "x"}], "is of type no type (list), which is not read"),
        ({"type": "reasoning.text"}, "delta.reasoning_details is dict, not a list:"),
    ],
)
def test_details_it_cannot_read_are_reported_and_the_plain_reasoning_read(details: Any, said: str) -> None:
    chunks = [_chunk({"reasoning": "thinking", "reasoning_details": details}), _chunk({"content": "hi"}, "stop")]
    result = read(chunks)
    assert [r.text for r in result.reasoning] == ["thinking"] and result.text == "hi"
    (reported,) = [d for d in result.diagnostics if d.code == "part-not-reassembled"]
    assert said in reported.message and reported.event == 1
    # A warning, not a violation: strict mode reads the turn alike.
    assert unstructure(read(chunks, strict=True)) == unstructure(result)
    # Read from bytes (the chat shortcuts read the delta first: a list type raised TypeError there).
    r = Reassembler("openai-chat")
    r.feed_bytes(sse(chunks))
    assert unstructure(r.close()) == unstructure(result)


def test_the_format_counts_once_a_block_though_every_piece_repeats_it() -> None:
    pieces = [_piece("x", type="reasoning.text", text="x", format=CLAUDE, index=0) for _ in range(1000)]
    r = Reassembler("openai-chat")
    for chunk in pieces:
        r.feed(chunk)
    assert r._content.held < 1000 + len(CLAUDE) + 2 * 64
    # A format that changes is held anew: a hostile stream of new formats is bounded like text.
    limit = 50_000
    r = Reassembler("openai-chat", limits=Limits(max_content_chars=limit))
    with pytest.raises(fsm.LimitExceeded):
        for at in range(10_000):
            r.feed(_piece(None, type="reasoning.text", text="", format=f"f{at:0>20}", index=0))
    assert r._content.held <= limit


def test_plain_reasoning_goes_back_only_in_the_field_the_caller_names() -> None:
    # Policy reasoning-field-named: DeepSeek's thinking mode wants reasoning_content back on a turn
    # of calls, Groq refuses it; a result does not say which server streamed it.
    chunks = [
        _chunk({"role": "assistant", "reasoning_content": "Look it "}),
        _chunk({"reasoning_content": "up."}),
        _chunk({"tool_calls": [{"index": 0, "id": "call_0", "type": "function", "function": {"name": "f"}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}, "tool_calls"),
    ]
    result = read(chunks)
    plain = messages.assistant_message(result, "openai-chat")
    assert "reasoning_content" not in plain and "reasoning" not in plain
    for field in ("reasoning_content", "reasoning"):
        sent = messages.assistant_message(result, "openai-chat", reasoning_field=field)
        assert sent == {**plain, field: "Look it up."}
    # OpenRouter's details go back in their own field: the plain field takes no block of them twice.
    both = messages.assistant_message(read(claude_turn()), "openai-chat", reasoning_field="reasoning")
    assert "reasoning" not in both and both["reasoning_details"][0]["signature"] == "EqQBCkgI"
    for format, field in (("anthropic", "reasoning"), ("openai-chat", "thinking"), ("openai-chat", "")):
        with pytest.raises(InvalidOption, match="reasoning_field is one of reasoning_content, reasoning"):
            messages.assistant_message(result, format, reasoning_field=field)  # type: ignore[call-overload]
