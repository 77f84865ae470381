"""Reasoning items and function call item ids through LangChain's ``ChatOpenAI(use_responses_api=True)``
(fsm/wire/langchain_reasoning.py): what a stateless (``store=false``) next turn with a reasoning model
must send back, the reasoning items with their ``encrypted_content`` and each call's ``fc_`` item id.

Both were lost on this path: no reasoning item was read (v1's summary parts came out as reasoning
text, without the item), and no call kept its item id, so the ``"openai-responses"`` next turn had
neither. No capture holds a reasoning item, so the streams are built from the wire's shape (the
events OpenAI sends for a reasoning model's summary); what LangChain yields for them is what its
code does with those events, over a mock of its HTTP transport. The reasoning, the calls' items and
places, and the next turn must be the bytes' (the Responses decoder's) for every output version that
keeps them; what a version loses is pinned.
"""

from __future__ import annotations

import functools
import json
import operator
import random
from typing import Any

import pytest

import fsm
from fsm import messages
from tests.test_clients import Replay
from tests.test_langchain_responses_items import fed_till_failed
from tests.test_sdk_loop import langchain_model

pytest.importorskip("httpx")


def _item_events(at: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    """The events OpenAI streams for one output item, announced, filled in, ended."""
    kind, item_id = item["type"], item["id"]
    place = {"output_index": at, "item_id": item_id}
    if kind == "reasoning":
        added = {k: v for k, v in item.items() if k != "content"} | {"summary": []}
        events: list[dict[str, Any]] = [{"type": "response.output_item.added", "output_index": at, "item": added}]
        for n, part in enumerate(item["summary"]):
            said, half = part["text"], len(part["text"]) // 2
            events += [
                {
                    "type": "response.reasoning_summary_part.added",
                    **place,
                    "summary_index": n,
                    "part": {**part, "text": ""},
                },
                {"type": "response.reasoning_summary_text.delta", **place, "summary_index": n, "delta": said[:half]},
                {"type": "response.reasoning_summary_text.delta", **place, "summary_index": n, "delta": said[half:]},
                {"type": "response.reasoning_summary_text.done", **place, "summary_index": n, "text": said},
                {"type": "response.reasoning_summary_part.done", **place, "summary_index": n, "part": part},
            ]
        for n, part in enumerate(item.get("content", ())):  # raw reasoning text (gpt-oss)
            events.append({"type": "response.reasoning_text.delta", **place, "content_index": n, "delta": part["text"]})
    elif kind == "function_call":
        added = {**item, "status": "in_progress", "arguments": ""}
        events = [
            {"type": "response.output_item.added", "output_index": at, "item": added},
            {"type": "response.function_call_arguments.delta", **place, "delta": item["arguments"][:5]},
            {"type": "response.function_call_arguments.delta", **place, "delta": item["arguments"][5:]},
            {"type": "response.function_call_arguments.done", **place, "arguments": item["arguments"]},
        ]
    else:  # a message
        added = {**item, "status": "in_progress", "content": []}
        part = {"type": "output_text", "text": "", "annotations": []}
        said = item["content"][0]["text"]
        events = [
            {"type": "response.output_item.added", "output_index": at, "item": added},
            {"type": "response.content_part.added", **place, "content_index": 0, "part": part},
            {"type": "response.output_text.delta", **place, "content_index": 0, "delta": said},
            {"type": "response.output_text.done", **place, "content_index": 0, "text": said},
        ]
    return [*events, {"type": "response.output_item.done", "output_index": at, "item": item}]


def stream(*items: dict[str, Any], ended: bool = True) -> bytes:
    """A Responses stream of the items, ended ``completed`` (``ended`` False: cut after the items)."""
    response = {"id": "resp_1", "object": "response", "model": "o4-mini", "status": "in_progress", "output": []}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": response}]
    for at, item in enumerate(items):
        events += _item_events(at, item)
    if ended:
        usage = {
            "input_tokens": 9,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 30,
            "output_tokens_details": {"reasoning_tokens": 20},
            "total_tokens": 39,
        }
        done = {**response, "status": "completed", "output": list(items), "usage": usage}
        events.append({"type": "response.completed", "response": done})
    for n, event in enumerate(events):
        event["sequence_number"] = n
    return b"".join(b"event: " + e["type"].encode() + b"\ndata: " + json.dumps(e).encode() + b"\n\n" for e in events)


def reasoning(at: int, *summary: str, encrypted: bool = True) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "reasoning", "id": f"rs_{at}", "summary": []}
    item["summary"] = [{"type": "summary_text", "text": said} for said in summary]
    if encrypted:
        item["encrypted_content"] = f"gAAAAB{at}opaque=="
    return item


def call(at: int, city: str) -> dict[str, Any]:
    arguments = json.dumps({"city": city})
    return {
        "type": "function_call",
        "id": f"fc_{at}",
        "call_id": f"call_{at}",
        "name": "weather",
        "arguments": arguments,
    }


def message(at: int, said: str) -> dict[str, Any]:
    content = [{"type": "output_text", "text": said, "annotations": []}]
    return {"type": "message", "id": f"msg_{at}", "role": "assistant", "status": "completed", "content": content}


STREAMS = {
    # o4-mini with a summary asked for and include=["reasoning.encrypted_content"]
    "reasoning-then-call": stream(
        reasoning(0, "**Weather**\n\nThe user wants Oslo.", "Call the tool."), call(1, "Oslo")
    ),
    # a reasoning item before each call (the API pairs each with the call after it), one without summary
    "interleaved": stream(reasoning(0, "First Oslo."), call(1, "Oslo"), reasoning(2), call(3, "Bergen")),
    # store=true: no encrypted content, so LangChain yields no piece at a reasoning item's end
    "no-encrypted-content": stream(
        reasoning(0, "Oslo first.", encrypted=False), call(1, "Oslo"), reasoning(2, "Done.", encrypted=False)
    ),
}
VERSIONS = [None, "responses/v1", "v1", "v0"]


def chunks(body: bytes, output_version: str | None) -> list[Any]:
    model = langchain_model("openai-responses", Replay(body))
    if output_version:
        model.output_version = output_version
    return list(model.stream("go"))


def sent_back(result: fsm.Result) -> dict[str, Any]:
    """What the next turn is made of: the reasoning items, the calls with their items and places."""
    calls = [(c.id, c.name, c.arguments, c.item, c.output_index, c.status) for c in result.calls]
    return {"reasoning": result.reasoning, "calls": calls, "finish": result.finish_reason}


@pytest.mark.parametrize("output_version", VERSIONS)
@pytest.mark.parametrize("name", list(STREAMS))
def test_reasoning_items_and_call_item_ids_are_the_bytes(name: str, output_version: str | None) -> None:
    body = STREAMS[name]
    if output_version == "v0" and name != "reasoning-then-call":
        pytest.skip("v0 keeps the id of a turn's first reasoning item only: test_v0_keeps_one_reasoning_item")
    reference = fsm.reassemble(body, "openai-responses")
    assert reference.reasoning and all(r.item_id for r in reference.reasoning)  # the stream holds what is tested
    got = fsm.reassemble(chunks(body, output_version))
    assert sent_back(got) == sent_back(reference)
    assert messages.assistant_message(got, "openai-responses") == messages.assistant_message(
        reference, "openai-responses"
    )
    assert got.codes() == reference.codes()


@pytest.mark.parametrize("output_version", [None, "responses/v1", "v1", "v0"])
def test_a_message_summed_from_the_chunks_gives_the_same_items(output_version: str | None) -> None:
    name = "reasoning-then-call" if output_version == "v0" else "interleaved"
    streamed = chunks(STREAMS[name], output_version)
    summed = fsm.reassemble([functools.reduce(operator.add, streamed)])
    assert sent_back(summed) == sent_back(fsm.reassemble(streamed))


def test_the_next_turn_sends_each_reasoning_item_before_its_call() -> None:
    got = fsm.reassemble(chunks(STREAMS["interleaved"], None))
    items = messages.assistant_message(got, "openai-responses")
    assert [(i["type"], i.get("id")) for i in items] == [
        ("reasoning", "rs_0"),
        ("function_call", "fc_1"),
        ("reasoning", "rs_2"),
        ("function_call", "fc_3"),
    ]
    assert items[0]["encrypted_content"] == "gAAAAB0opaque=="
    assert items[2] == {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gAAAAB2opaque=="}


@pytest.mark.parametrize("output_version", [None, "v1"])
def test_v1_summary_parts_are_the_items_summary_not_reasoning_text(output_version: str | None) -> None:
    # v1 gives each summary part as a `reasoning` block with its text: it was read as reasoning text
    # of a block with no item id (so nothing went back); the bytes give no text, the parts as summary
    got = fsm.reassemble(chunks(STREAMS["reasoning-then-call"], output_version))
    (block,) = got.reasoning
    assert (block.text, block.summary) == ("", ("**Weather**\n\nThe user wants Oslo.", "Call the tool."))


@pytest.mark.parametrize("output_version", [None, "v1"])
def test_a_reasoning_item_cut_before_its_end_is_not_given(output_version: str | None) -> None:
    # the bytes give a reasoning item at its end: cut after its summary but before that, none
    body = stream(reasoning(0, "Thinking."), ended=False)
    cut = body[: body.index(b"event: response.output_item.done")]
    assert fsm.reassemble(cut, "openai-responses").reasoning == ()
    assert fsm.reassemble(chunks(cut, output_version)).reasoning == ()


def test_v0_keeps_one_reasoning_item() -> None:
    # LangChain's v0 (its 0.3 format) holds one reasoning item a message: it drops the id of every
    # later one, so those are read without it and cannot go back; use the default output version
    body = STREAMS["interleaved"]
    got = fsm.reassemble(chunks(body, "v0"))
    assert [(r.item_id, r.summary, r.encrypted_content) for r in got.reasoning] == [
        ("rs_0", ("First Oslo.",), "gAAAAB0opaque=="),
        (None, (), "gAAAAB2opaque=="),
    ]
    assert [c.item for c in got.calls] == [c.item for c in fsm.reassemble(body, "openai-responses").calls]


def test_raw_reasoning_text_is_dropped_by_langchain() -> None:
    # gpt-oss (LM Studio) streams its reasoning as `reasoning_text`: langchain-openai yields nothing of it
    item = {**reasoning(0, encrypted=False), "content": [{"type": "reasoning_text", "text": "Let me think."}]}
    body = stream(item, call(1, "Oslo"))
    assert [r.text for r in fsm.reassemble(body, "openai-responses").reasoning] == ["Let me think."]
    (block,) = fsm.reassemble(chunks(body, None)).reasoning
    assert (block.item_id, block.text) == ("rs_0", "")


def test_a_text_turn_gives_its_reasoning_but_the_message_without_its_item() -> None:
    # LangChain yields the message's text without its status: it goes back as a plain assistant
    # message, where the bytes give the output message under its id (README, LangChain's ChatOpenAI)
    body = stream(reasoning(0, "Simple."), message(1, "Sunny."))
    reference = fsm.reassemble(body, "openai-responses")
    got = fsm.reassemble(chunks(body, None))
    assert got.reasoning == reference.reasoning and got.text == reference.text == "Sunny."
    turn = messages.assistant_message(got, "openai-responses")
    assert turn[1] == {"type": "message", "role": "assistant", "content": "Sunny."}
    assert messages.assistant_message(reference, "openai-responses")[1]["id"] == "msg_1"


ODD: list[Any] = [None, 5, -1, "x", [1], {"a": 1}, b"x", 1.5, True, "lc_rs_", "lc_rs_zz", "lc_rs_ff", "lc_rs_315f", 0]
PIECES: list[Any] = [[{"index": 1, "text": "a"}], [{"index": "x", "text": 5}], [None], {"index": 0}, [], "s"]


@pytest.mark.parametrize("strict", [False, True])
def test_hand_made_pieces_of_odd_kinds_raise_nothing_but_fsm_errors(strict: bool) -> None:
    core = pytest.importorskip("langchain_core.messages")
    rng = random.Random(17)
    kinds = ["reasoning", "function_call", "tool_call_chunk", "tool_call", "text", *ODD[:3]]
    fields = ["id", "call_id", "index", "summary", "reasoning", "encrypted_content", "extras", "name"]
    for _ in range(300):
        chunks = []
        for _ in range(3):
            block: dict[str, Any] = {"type": rng.choice(kinds)}
            for key in rng.sample(fields, rng.randint(0, 5)):
                block[key] = rng.choice([*ODD, *PIECES, {"encrypted_content": rng.choice(ODD), "item_id": "fc"}])
            extra = {rng.choice(["reasoning", "__openai_function_call_ids__"]): rng.choice([*ODD, *PIECES, block])}
            entry = {"name": "f", "args": "{}", "id": rng.choice([None, "c", 5]), "index": rng.choice(ODD)}
            chunk = core.AIMessageChunk(content=[], response_metadata={"model_provider": "openai"})
            chunk.content, chunk.additional_kwargs, chunk.tool_call_chunks = [block], extra, [entry]
            chunks.append(chunk)
        fed_till_failed(fsm.Reassembler(strict=strict), chunks)


@pytest.mark.parametrize("output_version", [None, "responses/v1", "v1", "v0"])
def test_the_text_goes_back_in_its_place_between_reasoning_items(output_version: str | None) -> None:
    # reasoning, message, reasoning, call: the text had no place, so it went back after the second
    # reasoning item (which the API pairs with the item after it); now at its message's place
    body = stream(reasoning(0, "Look first."), message(1, "Checking."), reasoning(2), call(3, "Oslo"))
    reference = fsm.reassemble(body, "openai-responses")
    got = fsm.reassemble(chunks(body, output_version))
    assert (got.text, got.text_output_index) == (reference.text, reference.text_output_index) == ("Checking.", 1)

    def shape(result: fsm.Result) -> list[tuple[str, Any]]:
        return [(i["type"], i.get("id")) for i in messages.assistant_message(result, "openai-responses")]

    expected = [("reasoning", "rs_0"), ("message", "msg_1"), ("reasoning", "rs_2"), ("function_call", "fc_3")]
    assert shape(reference) == expected
    if output_version == "v0":  # the second reasoning item's id is lost (test_v0_keeps_one_reasoning_item)
        expected.remove(("reasoning", "rs_2"))
    # the message without its id: LangChain yields no status (README, LangChain's ChatOpenAI)
    assert shape(got) == [(kind, None if kind == "message" else said) for kind, said in expected]
