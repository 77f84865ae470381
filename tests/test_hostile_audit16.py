"""Hostile audit 16: the newest surfaces (a refusal, Mistral's typed content, Bedrock Converse's
redacted reasoning, LangChain's chunks of ChatMistralAI, ChatOllama and ChatBedrockConverse) fed
input that got a bare Python error out of the public API, or work that grew faster than the input.

Each test failed before its fix. LangChain chunks are the duck-typed object the adapter reads (a
``SimpleNamespace``), which can hold what langchain-core would refuse. Work is counted, not timed."""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from fsm import messages
from fsm.errors import InvalidInput, RemoteProtocolError
from tests import test_hostile_audit15 as audit15
from tests.test_hostile_audit15 import lc_chunk


class Copied(str):
    """A piece of text that counts the characters copied by adding text before it."""

    copied = 0

    def __radd__(self, other: str) -> str:
        Copied.copied += len(other) + len(self)
        return str.__add__(other, self)


def test_a_chunk_s_refusal_blocks_are_joined_once() -> None:
    # ChatOpenAI's refusal blocks (Responses API) were added to the refusal so far one by one: a
    # chunk of n blocks copied the text n times over (quadratic in the chunk)
    Copied.copied = 0
    blocks = [{"type": "refusal", "refusal": Copied("x" * 100)} for _ in range(2_000)]
    result = fsm.reassemble([lc_chunk(blocks)])
    assert result.refusal == "x" * 200_000
    assert Copied.copied <= 2 * len(result.refusal)


# -- LangChain's Responses reasoning items (ChatOpenAI): work linear in the pieces -----------------------


def late_summary_parts(n: int) -> list[Any]:
    # an item ended by its encrypted content, then n hand-made summary parts of it, one a chunk
    first = {"type": "reasoning", "id": "rs_1", "summary": [], "index": 0, "encrypted_content": "enc"}
    late = [
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "s", "index": k}], "index": 0}
        for k in range(n)
    ]
    ended = lc_chunk([], provider="openai", response_metadata={"model_provider": "openai", "status": "completed"})
    return [lc_chunk([first], provider="openai"), *(lc_chunk([piece], provider="openai") for piece in late), ended]


def test_late_pieces_of_a_reasoning_item_cost_the_same_per_piece(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each late piece gave the item again whole (every summary part sorted and joined): quadratic
    monkeypatch.setattr(audit15, "ADAPTER", ("fsm/wire/langchain_reasoning.py",))  # its work, counted
    small, large = audit15.adapter_lines(late_summary_parts(100)), audit15.adapter_lines(late_summary_parts(400))
    assert large <= small * 4.5
    (item,) = fsm.reassemble(late_summary_parts(5)).reasoning
    assert (item.item_id, item.summary, item.encrypted_content) == ("rs_1", ("s",) * 5, "enc")


# -- SDK chunks -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("held", [b"\xff", object()], ids=["bytes-not-utf8", "object"])
def test_an_sdk_chunk_its_sdk_cannot_write_is_refused_and_the_stream_goes_on(held: Any) -> None:
    # A model built past its validation (model_construct) holding what no JSON holds: pydantic's
    # UnicodeDecodeError or PydanticSerializationError came out of feed() as it was
    chunk_types = pytest.importorskip("openai.types.chat.chat_completion_chunk")

    def chunk(refusal: Any, finish: str | None = None) -> Any:
        delta = chunk_types.ChoiceDelta.model_construct(refusal=refusal)
        choice = chunk_types.Choice.model_construct(index=0, delta=delta, finish_reason=finish)
        return chunk_types.ChatCompletionChunk.model_construct(
            id="x", object="chat.completion.chunk", model="m", created=0, choices=[choice]
        )

    r = fsm.Reassembler()
    with pytest.raises(InvalidInput, match="cannot write it as JSON"):
        r.feed(chunk(held))
    r.feed(chunk("No.", "stop"))
    result = r.close()
    assert (result.refusal, result.finish_reason, result.codes()) == ("No.", "stop", [])


# -- OpenAI chat: a refusal of the wrong type -------------------------------------------------------------


def _chat(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


@pytest.mark.parametrize("refusal", [["No."], {"text": "No."}, True], ids=["list", "object", "bool"])
def test_a_chat_refusal_of_the_wrong_type_fails_the_stream_at_its_event(refusal: Any) -> None:
    # It was dropped without a word: the turn that refused came out an empty `stop`, nothing said
    chunks = [_chat({"role": "assistant", "content": ""}), _chat({"refusal": refusal}), _chat({}, "stop")]
    body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks).encode()
    for pieces in ([body], [body[i : i + 3] for i in range(0, len(body), 3)], chunks):  # whole, read small, fed
        r = fsm.Reassembler("openai-chat")
        with pytest.raises(RemoteProtocolError, match=r"event 2: delta\.refusal is"):
            for piece in pieces:
                r.feed_bytes(piece) if isinstance(piece, bytes) else r.feed(piece)
        result = r.close()
        assert (result.refusal, result.codes()) == (None, ["stream-failed"])
    with pytest.raises(RemoteProtocolError, match=r"event 2: delta\.refusal is"):
        fsm.Reassembler("openai-chat", strict=True).feed_bytes(body)


# -- fsm.messages "bedrock" -----------------------------------------------------------------------------


def _strict_loads(body: bytes) -> Any:
    def refuse(word: str) -> Any:
        raise ValueError(f"{word} is no JSON")

    return json.loads(body, parse_constant=refuse)


@pytest.mark.parametrize("number", [float("nan"), float("inf")], ids=["nan", "inf"])
def test_a_bedrock_answer_holding_nan_goes_as_text_boto3_writes_as_json(number: float) -> None:
    # As a `json` block boto3 wrote it as Python does (`NaN`): a request body that is no JSON
    pytest.importorskip("botocore")
    from tests.test_messages_bedrock import _thinking_stream
    from tests.test_sdk_loop import converse_client

    result = fsm.reassemble(_thinking_stream(), "bedrock")
    (call,) = result.calls
    answer = messages.tool_result(call, {"celsius": number}, "bedrock")
    assert answer["toolResult"]["content"] == [{"text": json.dumps({"celsius": number})}]
    client, sent = converse_client(_thinking_stream()), []
    client.meta.events.register("before-send.bedrock-runtime.ConverseStream", lambda request, **_: sent.append(request))
    conversation = [
        {"role": "user", "content": [{"text": "go"}]},
        messages.assistant_message(result, "bedrock"),
        *messages.tool_results([answer], "bedrock"),
    ]
    client.converse_stream(modelId="m", messages=conversation)
    assert _strict_loads(sent[-1].body)["messages"][-1]["content"] == [answer]


# -- Mistral's typed content -------------------------------------------------------------------------


def test_typed_chunks_of_no_text_are_reported_at_their_event_however_read() -> None:
    # A text chunk whose text was no str, a thinking chunk holding parts of no text: dropped unseen
    typed = [
        {"type": "text", "text": "Hi"},
        {"type": "text", "text": ["not", "text"]},
        {"type": "thinking", "thinking": [{"type": "text", "text": "Hm."}, ["nested"], 5]},
        {"type": "text", "text": 7},
    ]
    chunks = [_chat({"content": ""}), _chat({"content": typed}), _chat({}, "stop")]
    body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks).encode()
    seen = []
    for pieces in ([body], [body[i : i + 2] for i in range(0, len(body), 2)]):
        result = fsm.reassemble(pieces, "openai-chat")
        seen.append([(d.code, d.event, d.message) for d in result.diagnostics])
        assert (result.text, [r.text for r in result.reasoning]) == ("Hi", ["Hm."])
    assert (
        seen[0]
        == seen[1]
        == [
            ("part-not-reassembled", 2, "content[1], a 'text' chunk whose text is list, not a string, is not read"),
            ("part-not-reassembled", 2, "content[2], a thinking chunk, holds a part of no text"),
            ("part-not-reassembled", 2, "content[3], a 'text' chunk whose text is int, not a string, is not read"),
        ]
    )
    assert fsm.reassemble(body, "openai-chat", strict=True).text == "Hi"  # a warning: strict reads on
