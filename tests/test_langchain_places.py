"""Each reasoning block and text part keeps its place in the turn through LangChain, as the raw
wire path keeps it (tests/test_anthropic_block_order.py, tests/test_gemini_parts.py): the same
stream read from the bytes and from what langchain-anthropic's ``ChatAnthropic`` or
langchain-google-genai's ``ChatGoogleGenerativeAI`` yield over a mock of their HTTP transport gives
the same reasoning (``output_index``, ``place``), text parts (each signature on its part), calls'
``output_index``, and the same next turn from fsm.messages.

What the chunks carry, found by driving the packages (langchain-anthropic 1.7, langchain-google-genai
4.4, langchain-core 1.8):

* ChatAnthropic, v0 and v1 alike: every content block (``thinking``/``reasoning``,
  ``redacted_thinking``/``non_standard``, ``text``, ``tool_use``/``tool_call_chunk``, the
  signature's own chunk) carries ``index``, Claude's content block index, and so do its
  ``tool_call_chunks``; a message summed from the chunks keeps one block an index (v1's summed
  ``tool_call`` block has none, its ``tool_call_chunks`` entry does). Every chunk's
  ``response_metadata`` says ``model_provider: anthropic``.
* ChatGoogleGenerativeAI: one chunk a Gemini event, in the wire's order, ``model_provider:
  google_genai``. Its blocks' ``index`` is its own count (``_StreamBlockIndexer``), shared with the
  calls' ``tool_call_chunks`` index: a new index where the block type changes, none where it stays,
  so a run of text parts keeps one index across signed parts; unsigned text in v0 is a plain str
  with no index, that takes none. Each signed part is a block of its own with its signature (text:
  ``extras.signature``), so every signature is there. Within a chunk the blocks are numbered before
  the calls: a call that came before a text part in one event is given after it (v1's content
  lists its ``tool_call`` block after the text too), so that order is lost. Summing the chunks
  merges the blocks under one index (v1: a later unsigned text joins the first signed block) and
  v0's str pieces (joined into one str), so a summed message keeps the parts apart only where
  LangChain's indices did.
"""

from __future__ import annotations

import asyncio
import functools
import json
import operator
from types import SimpleNamespace
from typing import Any

import pytest

import fsm
from fsm import messages
from fsm.errors import InvalidInput
from tests.test_anthropic_block_order import INTERLEAVED, WITH_TEXT, turn
from tests.test_anthropic_block_order import said as said_block
from tests.test_anthropic_block_order import sse as anthropic_sse
from tests.test_clients import Replay, anthropic_client, anthropic_http, genai_client
from tests.test_gemini_parts import call, said, sig, thought
from tests.test_langchain_reasoning import chat_google, event, sse
from tests.test_sdk_loop import client_for, send

pytest.importorskip("httpx")


def placed(result: fsm.Result) -> dict[str, Any]:
    """What the next turn is built from: every place, signature and call."""
    return {
        "text": (result.text, result.text_signature, result.text_output_index, result.text_parts),
        "reasoning": result.reasoning,
        "calls": [(c.id, c.name, c.arguments, c.status, c.thought_signature, c.output_index) for c in result.calls],
        "finish": result.finish_reason,
        "codes": result.codes(),
    }


def summed(chunks: list[Any]) -> list[Any]:
    return [functools.reduce(operator.add, chunks)]


# -- Gemini through ChatGoogleGenerativeAI ---------------------------------------------------------------


def gemini(*events: list[dict[str, Any]], model: str = "gemini-3-flash-preview") -> bytes:
    last = len(events) - 1
    return sse([event(model, parts, "STOP" if n == last else None) for n, parts in enumerate(events)])


GEMINI = {
    # thought, signed text, call; then another thought, signed text and call (the last two in one event)
    "interleaved": gemini(
        [thought("Oslo first.", sig("t1"))],
        [said("Looking up Oslo.", sig("s1"))],
        [call("weather", "c1", sig("c1"), city="Oslo")],
        [thought("Now Bergen.")],
        [said("And Bergen.", sig("s2")), call("weather", "c2", city="Bergen")],
    ),
    # two signed text parts in one event, then unsigned text: three parts, each with its own signature
    "signed-texts": gemini([said("One. ", sig("s1")), said("Two. ", sig("s2"))], [said("Three.")]),
    # Gemini 2.5: unsigned text, a call, unsigned text, which v0 gives as plain strs with no index
    "text-call-text": gemini(
        [thought("Checking.")],
        [said("Let me look. "), call("weather", "c1", city="Oslo")],
        [said("Done.")],
        model="gemini-2.5-flash",
    ),
}
SUMMED_MERGES = {
    ("signed-texts", None): [("One. Three.", sig("s1")), ("Two. ", sig("s2"))],
    ("signed-texts", "v1"): [("One. Three.", sig("s1")), ("Two. ", sig("s2"))],
    ("text-call-text", None): [("Let me look. Done.", None)],
}
"""What a message summed from the chunks holds where LangChain merged parts when summing (see the
docstring): a later block joins the first under its index, v0's strs join, so the text parts (and
for the signed texts the text's order) are LangChain's. Every other stream's summed message keeps
the parts apart."""


@pytest.mark.parametrize("output_version", [None, "v1"])
@pytest.mark.parametrize("name", list(GEMINI))
def test_chat_google_genai_parts_keep_their_places_and_signatures(name: str, output_version: str | None) -> None:
    # Every run of thought or text parts in its place among the calls, each signature on its part:
    # through LangChain they went back as all thoughts, one text (the last text signature), the calls
    body = GEMINI[name]
    reference = fsm.reassemble(body, "gemini")
    chunks = list(chat_google(body, output_version).stream("go"))
    assert [p.place for p in reference.text_parts] and all(p.place is not None for p in reference.text_parts)

    got = fsm.reassemble(chunks)
    assert placed(got) == placed(reference)
    assert messages.assistant_message(got, "gemini") == messages.assistant_message(reference, "gemini")

    whole = fsm.reassemble(summed(chunks))
    merged = SUMMED_MERGES.get((name, output_version))
    if merged is None:
        assert placed(whole) == placed(reference)
    else:
        assert [(p.text, p.signature) for p in whole.text_parts] == merged


@pytest.mark.parametrize("name", list(GEMINI))
def test_chat_google_genai_next_turn_is_the_bytes_next_turn(name: str) -> None:
    # Built with "gemini" from what ChatGoogleGenerativeAI yields and sent through google-genai: the
    # body holds the parts in the wire's order, each signature on its part, as the bytes' turn does
    body = GEMINI[name]
    bodies = []
    for result in (fsm.reassemble(chat_google(body, None).stream("go")), fsm.reassemble(body, "gemini")):
        replay, client = client_for("gemini", body)
        answers = [messages.tool_result(c, 5, "gemini") for c in result.complete_calls]
        turn = messages.assistant_message(result, "gemini", dummy_signature=False)  # the wire's signatures alone
        history = [{"role": "user", "parts": [{"text": "go"}]}, turn]
        send("gemini", client, [*history, *messages.tool_results(answers, "gemini")])
        bodies.append(replay.sent[-1]["contents"][1])
    assert bodies[0] == bodies[1]
    events = [json.loads(line[6:]) for line in body.split(b"\r\n\r\n") if line]
    wire = [p for e in events for p in e["candidates"][0]["content"]["parts"]]
    assert sum("thoughtSignature" in p for p in bodies[0]["parts"]) == sum("thoughtSignature" in p for p in wire)


@pytest.mark.parametrize("output_version", [None, "v1"])
def test_a_call_before_text_in_one_event_comes_after_it_through_langchain(output_version: str | None) -> None:
    # Pinned: langchain-google-genai numbers an event's text blocks before its calls, so a call that
    # came first (Gemini's part order) is given after the text. fsm reads the order LangChain gives.
    body = gemini([call("weather", "c1", sig("c1"), city="Oslo"), said("Asked.", sig("s1"))])
    reference = fsm.reassemble(body, "gemini")
    got = fsm.reassemble(chat_google(body, output_version).stream("go"))
    assert [p.place for p in reference.text_parts] == [1]
    assert [p.place for p in got.text_parts] == [0]
    assert [list(p) for p in messages.assistant_message(got, "gemini")["parts"]] == [
        ["text", "thoughtSignature"],
        ["functionCall", "thoughtSignature"],
    ]
    assert got.text_parts[0].signature == reference.text_parts[0].signature


# -- Claude through ChatAnthropic ----------------------------------------------------------------------------

CLAUDE = {"interleaved": anthropic_sse(INTERLEAVED), "with-text": anthropic_sse(WITH_TEXT)}


def chat_anthropic(body: bytes, output_version: str | None) -> tuple[Replay, Any]:
    langchain_anthropic = pytest.importorskip("langchain_anthropic")
    options = {"output_version": output_version} if output_version else {}
    model = langchain_anthropic.ChatAnthropic(model="claude", api_key="test", max_tokens=64, **options)
    replay = Replay(body, anthropic_http())
    vars(model)["_client"] = anthropic_client(replay)
    return replay, model.bind_tools([{"name": "weather", "description": "w", "input_schema": {"type": "object"}}])


@pytest.mark.parametrize("output_version", [None, "v1"])
@pytest.mark.parametrize("name", list(CLAUDE))
def test_chat_anthropic_blocks_keep_their_content_block_index(name: str, output_version: str | None) -> None:
    # Interleaved thinking (thinking, call, thinking, call; text between): each block at Claude's
    # index, as the bytes give it; through LangChain no block had a place, so the next turn went back
    # as every thinking block, the text as one block, the calls, which Anthropic refuses
    body = CLAUDE[name]
    reference = fsm.reassemble(body, "anthropic")
    replay, model = chat_anthropic(body, output_version)
    chunks = list(model.stream("go"))
    assert [c.output_index for c in reference.calls] and None not in [c.output_index for c in reference.calls]
    for stream in (chunks, summed(chunks)):
        got = fsm.reassemble(stream)
        assert placed(got) == placed(reference)

    said = messages.assistant_message(fsm.reassemble(chunks), "anthropic")
    assert said == messages.assistant_message(reference, "anthropic")
    answers = [messages.tool_result(c, "ok", "anthropic") for c in reference.complete_calls]
    list(model.stream([{"role": "user", "content": "go"}, said, *messages.tool_results(answers, "anthropic")]))
    assert replay.sent[-1]["messages"][1] == said


def test_astream_gives_the_places_stream_gives() -> None:
    # LangChain's astream, read with fsm.areassemble: the same places as the bytes
    anthropic = pytest.importorskip("anthropic")
    claude = CLAUDE["with-text"]
    replay, model = chat_anthropic(claude, "v1")
    vars(model.bound)["_async_client"] = anthropic.AsyncAnthropic(
        api_key="test", base_url="http://mock", http_client=replay.async_client()
    )
    got = asyncio.run(fsm.areassemble(model.astream("go")))
    assert placed(got) == placed(fsm.reassemble(claude, "anthropic"))

    body = GEMINI["interleaved"]
    model = chat_google(body, None)
    model.client = genai_client(Replay(body), aio=True)
    got = asyncio.run(fsm.areassemble(model.astream("go")))
    assert placed(got) == placed(fsm.reassemble(body, "gemini"))


def test_chat_anthropic_text_alone_comes_as_a_str_without_its_index() -> None:
    # Pinned: with no tools bound and no thinking asked for, ChatAnthropic yields the text as plain
    # strs, no block, no index: the text has no part and no place (the bytes give one text block at
    # index 0), and the next turn is the same one text block all the same
    body = anthropic_sse(turn(said_block(0, "Hello.")))
    langchain_anthropic = pytest.importorskip("langchain_anthropic")
    model = langchain_anthropic.ChatAnthropic(model="claude", api_key="test", max_tokens=64)
    vars(model)["_client"] = anthropic_client(Replay(body, anthropic_http()))
    chunks = list(model.stream("go"))
    assert any(chunk.content == "Hello." for chunk in chunks)
    got, reference = fsm.reassemble(chunks), fsm.reassemble(body, "anthropic")
    assert (reference.text_output_index, [p.output_index for p in reference.text_parts]) == (0, [0])
    assert (got.text, got.text_output_index, got.text_parts) == ("Hello.", None, ())
    assert messages.assistant_message(got, "anthropic") == messages.assistant_message(reference, "anthropic")


# -- an index that is no place ----------------------------------------------------------------------------


def claude_chunk(*blocks: dict[str, Any], calls: list[dict[str, Any]] | None = None, **metadata: Any) -> Any:
    core = pytest.importorskip("langchain_core.messages")
    meta = {"model_provider": "anthropic", **metadata}
    return core.AIMessageChunk(content=list(blocks), tool_call_chunks=calls or [], response_metadata=meta)


@pytest.mark.parametrize("bad", ["1", True, -1, 1.0, None, [1]])
def test_a_claude_block_whose_index_is_no_place_is_read_without_one(bad: Any) -> None:
    # An index that is not a non-negative int places nothing: the text is the turn's all the same,
    # and, belonging to no block, goes back whole at the first text block's place (as a text delta
    # without index does on the wire); a thinking piece joins the block before it. No error.
    chunks = [
        claude_chunk({"type": "thinking", "thinking": "Hm.", "index": 0}),
        claude_chunk({"type": "thinking", "thinking": " Yes.", "signature": "c2ln", "index": bad}),
        claude_chunk({"type": "text", "text": "A ", "index": 1}),
        claude_chunk({"type": "text", "text": "B", "index": bad}),
        claude_chunk(calls=[{"index": 2, "id": "t1", "name": "f", "args": "{}"}], stop_reason="tool_use"),
    ]
    result = fsm.reassemble(chunks, strict=True)
    assert [(r.text, r.signature, r.output_index) for r in result.reasoning] == [("Hm. Yes.", "c2ln", 0)]
    assert (result.text, result.text_output_index) == ("A B", 1)
    assert messages.assistant_message(result, "anthropic")["content"] == [
        {"type": "thinking", "thinking": "Hm. Yes.", "signature": "c2ln"},
        {"type": "text", "text": "A B"},
        {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
    ]


def test_a_huge_claude_index_is_a_place_after_the_others() -> None:
    huge = 10**30
    chunks = [
        claude_chunk({"type": "text", "text": "Last.", "index": huge}),
        claude_chunk({"type": "text", "text": "First.", "index": 0}),
        claude_chunk(calls=[{"index": 1, "id": "t1", "name": "f", "args": "{}"}], stop_reason="tool_use"),
    ]
    result = fsm.reassemble(chunks, strict=True)
    assert [(p.text, p.output_index) for p in result.text_parts] == [("Last.", huge), ("First.", 0)]
    assert [b.get("text", b["type"]) for b in messages.assistant_message(result, "anthropic")["content"]] == [
        "First.",
        "tool_use",
        "Last.",
    ]


@pytest.mark.parametrize("bad", [-3, None])
def test_a_gemini_call_index_that_is_no_place_leaves_it_after_the_chunks_blocks(bad: Any) -> None:
    # In a summed v0 message a call goes before a block whose index is greater than its own; a call
    # whose index is no place goes after all of its chunk's blocks, as a chunk gives it (a call index
    # that is no int is the OpenAI chat decoder's to refuse, as before)
    meta = {"model_provider": "google_genai", "finish_reason": "STOP"}
    text = [
        {"type": "text", "text": "a", "extras": {"signature": "czE="}, "index": 0},
        {"type": "text", "text": "b", "index": 2},
    ]
    for index, places in ((1, [0, 2]), (bad, [0, 1])):
        entry = {"index": index, "id": "c1", "name": "f", "args": "{}"}
        chunk = SimpleNamespace(type="AIMessageChunk", content=text, tool_call_chunks=[entry], response_metadata=meta)
        result = fsm.reassemble([chunk])
        assert [(p.text, p.place) for p in result.text_parts] == list(zip("ab", places, strict=True))
        assert [c.id for c in result.calls] == ["c1"]


@pytest.mark.parametrize("provider", ["anthropic", "google_genai"])
def test_blocks_of_no_shape_langchain_makes_say_nothing(provider: str) -> None:
    # Read in places, a block whose type is no str, an item that is no block, a text that is no
    # str: nothing, and no error
    content = [
        7,
        None,
        {"type": ["text"], "text": "x"},
        {"type": {"a": 1}, "index": 0},
        {"text": "no type", "index": 0},
        {"type": "text", "text": 5, "index": 0},
        {"type": "text", "text": "ok", "index": 1},
    ]
    meta = {"model_provider": provider, "finish_reason": "stop"}
    chunk = SimpleNamespace(type="AIMessageChunk", content=content, tool_call_chunks=[], response_metadata=meta)
    result = fsm.reassemble([chunk], strict=True)
    assert (result.text, [p.text for p in result.text_parts], result.reasoning) == ("ok", ["ok"], ())


# -- what is not read in places ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CLAUDE))
def test_chunks_that_name_no_integration_are_read_as_before(name: str) -> None:
    # Without model_provider (hand-built chunks, an older langchain-core) nothing says whose index a
    # block carries: the chunks are read as OpenAI chat, without places, as before
    _, model = chat_anthropic(CLAUDE[name], None)
    chunks = list(model.stream("go"))
    for chunk in chunks:
        chunk.response_metadata.pop("model_provider", None)
    got = fsm.reassemble(chunks)
    assert got.text_parts == () and got.text_output_index is None
    assert {r.output_index for r in got.reasoning} == {None} and {c.output_index for c in got.calls} == {None}


WRONG_FIELDS = {
    "usage": {"usage_metadata": 7},
    # a non-empty list here raised AttributeError from feed(): its .get was asked for the finish message
    "metadata-list": {"response_metadata": ["model_provider"]},
    "metadata-str": {"response_metadata": "google_genai"},
}


@pytest.mark.parametrize("fields", WRONG_FIELDS.values(), ids=WRONG_FIELDS.keys())
def test_a_refused_chunk_leaves_the_runs_as_they_were(fields: dict[str, Any]) -> None:
    # A chunk with a field LangChain never makes is refused (InvalidInput) before anything is taken
    # in: the next chunk's text part still joins the run before it
    chunks = list(chat_google(GEMINI["signed-texts"], None).stream("go"))
    reference = fsm.reassemble(chunks)
    made = {"usage_metadata": None, "response_metadata": {"model_provider": "google_genai"}} | fields
    wrong = SimpleNamespace(type="AIMessageChunk", content=[{"type": "text", "text": "x"}], tool_call_chunks=[], **made)
    r = fsm.Reassembler()
    r.feed(chunks[0])
    with pytest.raises(InvalidInput, match=f"{next(iter(fields))} must be a dict"):
        r.feed(wrong)
    for chunk in chunks[1:]:
        r.feed(chunk)
    assert placed(r.close()) == placed(reference)


@pytest.mark.parametrize("provider", ["anthropic", "google_genai", None])
@pytest.mark.parametrize("finish", [["end_turn"], {"reason": "stop"}, 5])
def test_a_finish_that_is_no_text_is_refused_before_anything_is_taken_in(provider: str | None, finish: Any) -> None:
    # an unhashable one raised TypeError from feed() (`finish in TURN_ENDED`)
    meta = {"model_provider": provider} if provider else {}
    r = fsm.Reassembler()
    with pytest.raises(InvalidInput, match="finish_reason, stop_reason or done_reason must be a str"):
        r.feed(_chunk(meta | {"stop_reason": finish}))
    r.feed(_chunk(meta | {"stop_reason": "end_turn"}))
    result = r.close()
    assert (result.text, result.raw_finish_reason) == ("ok", "end_turn")


def _chunk(metadata: dict[str, Any]) -> Any:
    core = pytest.importorskip("langchain_core.messages")
    return core.AIMessageChunk(content=[{"type": "text", "text": "ok", "index": 0}], response_metadata=metadata)
