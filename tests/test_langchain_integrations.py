"""LangChain's other chat integrations end to end, as tests/test_sdk_loop.py drives ChatOpenAI:
langchain-mistralai's ``ChatMistralAI``, langchain-groq's ``ChatGroq`` and langchain-deepseek's
``ChatDeepSeek`` read every OpenAI-chat capture and its hostile variants (tests/capture_variants.py)
through their own HTTP stack (an httpx mock transport), and langchain-ollama's ``ChatOllama`` every
Ollama capture; ``fsm.reassemble`` takes the ``AIMessageChunk``s they yield and must give what the
bytes give. Where an integration itself loses something (usage in its own keys, reasoning it keeps
nowhere, ids it makes up where the wire had none), the test says so and pins it (README, "What the
SDKs themselves do")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import fsm
from tests import capture_variants as cv
from tests.conftest import CAPTURES, captures, require_captures
from tests.test_clients import Replay
from tests.test_sdk_loop import CASES, body_of, converse_client, placeless, seen

httpx = pytest.importorskip("httpx")

CHAT_CASES = [c for c in CASES if c.values[0] is None or c.values[1] == "openai-chat"]


def mistral(replay: Replay) -> Any:
    module = pytest.importorskip("langchain_mistralai")
    client = httpx.Client(base_url="http://mock/v1", transport=httpx.MockTransport(replay))
    return module.ChatMistralAI(model="m", api_key="test", client=client)


def groq(replay: Replay) -> Any:
    module = pytest.importorskip("langchain_groq")
    return module.ChatGroq(model="m", api_key="test", base_url="http://mock", http_client=replay.client())


def deepseek(replay: Replay) -> Any:
    module = pytest.importorskip("langchain_deepseek")
    return module.ChatDeepSeek(model="m", api_key="test", api_base="http://mock/v1", http_client=replay.client())


INTEGRATIONS = {"ChatMistralAI": mistral, "ChatGroq": groq, "ChatDeepSeek": deepseek}
KEEPS_REASONING = {"ChatDeepSeek"}  # the others keep no reasoning_content (DeepSeek's field) anywhere


def chunks(model: Any) -> list[Any]:
    return list(model.stream("go"))


@pytest.mark.parametrize("integration", sorted(INTEGRATIONS))
@pytest.mark.parametrize(("path", "provider", "variant", "payloads"), CHAT_CASES)
def test_openai_shaped_integrations_give_what_the_bytes_give(
    integration: str, path: Path, provider: str, variant: str, payloads: Any
) -> None:
    if path is None:
        require_captures()
    body = body_of(path, provider, variant, payloads)
    reference = fsm.reassemble(body, provider)
    got = fsm.reassemble(iter(chunks(INTEGRATIONS[integration](Replay(body)))))
    # usage comes in LangChain's own keys (usage_metadata), where the integration keeps it at all
    assert seen(got, usage=False, reasoning=integration in KEEPS_REASONING) == seen(
        reference, usage=False, reasoning=integration in KEEPS_REASONING
    )


def test_chat_mistralai_made_up_ids_are_not_the_wire_s() -> None:
    """ChatMistralAI gives every id-less entry at index 0 a uuid of its own, on each chunk: read as
    the wire's ids, each fragment of a streamed call would arrive under another id (id-changed, a
    violation, on every one; strict mode raised at the first)."""
    require_captures()
    body = cv.render(cv.events(CAPTURES / "deepseek" / "vercel-deepseek-reasoner-tool-call.jsonl"), "openai-chat")
    said = chunks(mistral(Replay(body)))
    wire_id = "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF"
    made_up = {part["id"] for chunk in said for part in chunk.tool_call_chunks} - {wire_id}
    assert len(made_up) > 5  # what ChatMistralAI does: a fresh id for each id-less fragment
    strict = fsm.reassemble(iter(said), strict=True)
    assert [(c.id, c.arguments) for c in strict.calls] == [(wire_id, {"location": "San Francisco"})]
    assert strict.codes() == []


def test_chat_mistralai_keeps_a_made_up_id_where_the_wire_gave_none_at_all() -> None:
    """A call whose every entry lacks an id: the bytes' reading synthesizes one, and so does the
    chunks' (LangChain's made-up ids are no id of the wire's)."""
    entries = [
        {"index": 0, "function": {"name": "f", "arguments": ""}},
        {"index": 0, "function": {"arguments": '{"a": '}},
        {"index": 0, "function": {"arguments": "1}"}},
    ]
    payloads: list[dict[str, Any]] = [
        {"object": "chat.completion.chunk", "model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [entry]}}]}
        for entry in entries
    ]
    # ChatMistralAI keeps a finish only from a chunk that names its model
    end = {"index": 0, "delta": {}, "finish_reason": "tool_calls"}
    payloads.append({"object": "chat.completion.chunk", "model": "m", "choices": [end]})
    body = cv.render(payloads, "openai-chat")
    reference = fsm.reassemble(body, "openai-chat")
    got = fsm.reassemble(iter(chunks(mistral(Replay(body)))))
    assert seen(got, usage=False) == seen(reference, usage=False)
    assert got.codes() == ["synthesized-id"] and got.calls[0].arguments == {"a": 1}


# -- langchain-ollama --------------------------------------------------------------------------------------


def ollama_chunks(body: bytes) -> list[Any]:
    module = pytest.importorskip("langchain_ollama")
    replay = Replay(body)
    model = module.ChatOllama(model="m", client_kwargs={"transport": httpx.MockTransport(replay)})
    return list(model.stream("go"))


OLLAMA_CASES = [pytest.param(path, id=path.stem) for path in captures("ollama_native")] or [
    pytest.param(None, id="no-captures")
]


@pytest.mark.parametrize("path", OLLAMA_CASES)
def test_chat_ollama_gives_what_the_bytes_give(path: Path | None) -> None:
    """ChatOllama's calls and finish are the bytes'. Its finish is Ollama's ``done_reason`` in the
    last chunk's metadata (it was read as no finish at all: ``no-finish-reason``). The ids are
    LangChain's (ollama's client keeps none of the wire's), and its arguments LangChain's JSON."""
    if path is None:
        require_captures()
    body = path.read_bytes()
    reference = fsm.reassemble(body, "ollama")
    got = fsm.reassemble(iter(ollama_chunks(body)))
    assert (got.finish_reason, got.raw_finish_reason, got.codes()) == (
        reference.finish_reason,
        reference.raw_finish_reason,
        reference.codes(),
    )
    assert [(c.name, c.arguments, c.status) for c in got.calls] == [
        (c.name, c.arguments, c.status) for c in reference.calls
    ]


def test_chat_ollama_length_cut_is_the_bytes_length() -> None:
    lines = [
        {"model": "m", "message": {"role": "assistant", "content": "It is"}, "done": False},
        {"model": "m", "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "length"},
    ]
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    got = fsm.reassemble(iter(ollama_chunks(body)))
    reference = fsm.reassemble(body, "ollama")
    assert (got.finish_reason, got.raw_finish_reason, got.text) == ("length", "length", "It is")
    assert (got.finish_reason, got.raw_finish_reason, got.text) == (
        reference.finish_reason,
        reference.raw_finish_reason,
        reference.text,
    )


# -- langchain-aws --------------------------------------------------------------------------------------------


def converse_model(body: bytes, output_version: str) -> Any:
    """ChatBedrockConverse over boto3's own client, its ConverseStream answered with ``body``."""
    module = pytest.importorskip("langchain_aws")
    client = converse_client(body)
    model = module.ChatBedrockConverse(model="anthropic.claude-sonnet-4-v1:0", client=client, region_name="us-east-1")
    model.output_version = output_version
    return model


def _converse_cases() -> list[Any]:
    from tests.test_litellm_bedrock import CONVERSE_CASES

    return CONVERSE_CASES


@pytest.mark.parametrize("output_version", ["v0", "v1"])
@pytest.mark.parametrize(("variant", "body"), _converse_cases())
def test_chat_bedrock_converse_gives_what_the_bytes_give(variant: str, body: bytes, output_version: str) -> None:
    """Its finish is Converse's ``stopReason`` (it was read as none: ``no-finish-reason``, and a tool
    without parameters came out truncated), and Claude's reasoning its ``reasoning_content`` blocks
    (v1: ``reasoning`` blocks, the signature and the redacted data each in ``extras``), which were
    read as nothing: the next turn went back without the signed thinking a tool-use turn needs."""
    if not body:
        require_captures()
    reference = fsm.reassemble(body, "bedrock")
    model = converse_model(body, output_version)
    if variant == "cut":  # no messageStop: LangChain raises it, and fsm never sees a chunk end the turn
        with pytest.raises(ConnectionError, match="missing messageStop"):
            fsm.reassemble(model.stream("go"))
        return
    got = fsm.reassemble(model.stream("go"))
    assert seen(got, usage=False) == seen(reference, usage=False)
    if variant == "thinking":
        assert [(r.text, r.signature, r.redacted) for r in got.reasoning] == [
            ("Think hard.", "U0lH", None),
            ("", None, "UkVE"),
        ]


def test_chat_bedrock_converse_guardrail_is_a_content_filter() -> None:
    pytest.importorskip("botocore")
    from tests.test_litellm_bedrock import converse_stream

    events = [
        ("messageStart", {"role": "assistant"}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "I can"}}),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("messageStop", {"stopReason": "guardrail_intervened"}),
    ]
    body = converse_stream(events)
    reference = fsm.reassemble(body, "bedrock")
    got = fsm.reassemble(converse_model(body, "v0").stream("go"))
    assert (got.finish_reason, got.raw_finish_reason) == ("content_filter", "guardrail_intervened")
    assert (got.finish_reason, got.raw_finish_reason) == (reference.finish_reason, reference.raw_finish_reason)


def _invoke_cases() -> list[Any]:
    from tests.test_litellm_bedrock import INVOKE_CASES

    return INVOKE_CASES


@pytest.mark.parametrize(("variant", "body"), _invoke_cases())
def test_chat_bedrock_on_claude_gives_what_the_bytes_give_but_places(variant: str, body: bytes) -> None:
    """langchain-aws's ``ChatBedrock`` (InvokeModel) on Claude: the bytes' calls, finish, text and
    signed thinking. What it loses: a ``redacted_thinking`` block (it yields no chunk for one), and
    the blocks' places (its metadata names the provider ``bedrock`` for every model InvokeModel
    serves, so no reading of Claude's block index is assumed: output_index None)."""
    if not body:
        require_captures()
    module = pytest.importorskip("langchain_aws")
    client = converse_client(body, "InvokeModelWithResponseStream")
    model = module.ChatBedrock(model_id="anthropic.claude-sonnet-4-v1:0", client=client, region_name="us-east-1")
    reference = fsm.reassemble(body, "bedrock")
    got = fsm.reassemble(model.stream("go"))
    kept = [block for block in reference.reasoning if block.redacted is None]
    assert seen(placeless(got), usage=False, reasoning=False) == seen(
        placeless(reference), usage=False, reasoning=False
    )
    assert [(b.text, b.signature) for b in got.reasoning] == [(b.text, b.signature) for b in kept]
    if variant == "thinking":
        assert len(kept) < len(reference.reasoning)  # the redacted block, which ChatBedrock drops


# -- Mistral's typed content ------------------------------------------------------------------------------------


def _mistral_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "x", "object": "chat.completion.chunk", "model": "magistral", "choices": [choice]}


def _thinking(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": [{"type": "text", "text": text}]}


MAGISTRAL = [
    _mistral_chunk({"role": "assistant", "content": [_thinking("Let me ")]}),
    _mistral_chunk({"content": [{**_thinking("think."), "closed": True}]}),
    _mistral_chunk({"content": [{"type": "text", "text": "Calling"}]}),
    _mistral_chunk({"content": [{"type": "reference", "reference_ids": [1]}, " it."]}),
    _mistral_chunk({"tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}, "index": 0}]}),
    _mistral_chunk({}, "tool_calls"),
]


def test_mistral_typed_content_is_text_and_reasoning() -> None:
    """Mistral's reasoning models send ``delta.content`` as a list of typed chunks: the thinking and
    the text of such a turn were both dropped without a word (only a str content was read)."""
    result = fsm.reassemble(cv.render(MAGISTRAL, "openai-chat"), "openai-chat")
    assert (result.text, [b.text for b in result.reasoning], result.codes()) == ("Calling it.", ["Let me think."], [])
    assert [(c.id, c.arguments) for c in result.complete_calls] == [("c1", {})]


def test_a_typed_chunk_of_another_kind_is_reported_where_it_came() -> None:
    image = _mistral_chunk({"content": [{"type": "text", "text": "See"}, {"type": "image_url", "image_url": "u"}, 7]})
    result = fsm.reassemble(cv.render([image, _mistral_chunk({}, "stop")], "openai-chat"), "openai-chat")
    assert result.text == "See"
    assert [(d.code, d.event, d.message) for d in result.diagnostics] == [
        ("part-not-reassembled", 1, "content[1], a chunk 'image_url', is not reassembled"),
        ("part-not-reassembled", 1, "content[2], a chunk of no type (int), is not reassembled"),
    ]


@pytest.mark.parametrize("output_version", ["v0", "v1"])
def test_chat_mistralai_thinking_is_the_bytes_reasoning(output_version: str) -> None:
    """ChatMistralAI keeps Mistral's thinking chunk as a ``thinking`` block holding the list of text
    chunks (v1: a ``reasoning`` block): it was read as an empty reasoning block."""
    body = cv.render(MAGISTRAL, "openai-chat")
    model = mistral(Replay(body))
    model.output_version = output_version
    got = fsm.reassemble(iter(chunks(model)))
    reference = fsm.reassemble(body, "openai-chat")
    assert seen(got, usage=False) == seen(reference, usage=False)
