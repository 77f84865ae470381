"""A refusal, where the wire keeps it apart from the text (OpenAI's ``refusal``: chat deltas, a
Responses message's refusal part): it was read past without a word, so a refused turn came out as
an empty ``stop`` with nothing to say why. It is ``Result.refusal`` now, and goes back as the
refusal in the ``"openai-chat"`` next turn."""

from __future__ import annotations

from typing import Any

import pytest

import fsm
from fsm import history, messages
from fsm.serialize import result_to_json
from tests import capture_variants as cv
from tests.test_clients import Replay

httpx = pytest.importorskip("httpx")


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "x", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}


CHAT = [
    _chunk({"role": "assistant", "content": None, "refusal": ""}),
    _chunk({"refusal": "I'm sorry, "}),
    _chunk({"refusal": "I can't help with that."}),
    _chunk({}, "stop"),
]
REFUSED = "I'm sorry, I can't help with that."


def _responses(refusal: list[str]) -> list[dict[str, Any]]:
    item = {"id": "msg_1", "type": "message", "status": "in_progress", "content": []}
    said = "".join(refusal)
    at = {"output_index": 0, "item_id": "msg_1", "content_index": 0}
    done = {**item, "status": "completed", "content": [{"type": "refusal", "refusal": said}]}
    return [
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        *({"type": "response.refusal.delta", **at, "delta": piece} for piece in refusal),
        {"type": "response.refusal.done", **at, "refusal": said},
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "output": [done]}},
    ]


def test_a_chat_refusal_is_the_result_s_refusal_and_goes_back_as_one() -> None:
    body = cv.render(CHAT, "openai-chat")
    for pieces in ([body], [body[i : i + 7] for i in range(0, len(body), 7)]):  # whole, and in small reads
        result = fsm.reassemble(pieces, "openai-chat")
        assert (result.refusal, result.text, result.finish_reason, result.codes()) == (REFUSED, "", "stop", [])
    said = messages.assistant_message(result, "openai-chat")
    assert said == {"role": "assistant", "content": None, "refusal": REFUSED}
    assert not history.check([{"role": "user", "content": "go"}, said]).rejected


def test_a_turn_that_refuses_nothing_has_no_refusal() -> None:
    result = fsm.reassemble(cv.render([_chunk({"content": "Hi", "refusal": None}), _chunk({}, "stop")], ""), "auto")
    assert (result.text, result.refusal) == ("Hi", None)
    assert "refusal" not in messages.assistant_message(result, "openai-chat")


def test_a_responses_refusal_is_the_result_s_refusal() -> None:
    result = fsm.reassemble(cv.render(_responses(["No, ", "sorry."]), ""), "openai-responses")
    assert (result.refusal, result.text, result.finish_reason, result.codes()) == ("No, sorry.", "", "stop", [])


def test_the_openai_client_s_chunks_give_the_refusal() -> None:
    openai = pytest.importorskip("openai")
    replay = Replay(cv.render(CHAT, "openai-chat"))
    client = openai.OpenAI(api_key="test", base_url="http://mock/v1", http_client=replay.client())
    stream = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}], stream=True)
    result = fsm.reassemble(stream)
    assert (result.refusal, result.finish_reason) == (REFUSED, "stop")
    # and the same client takes it back
    conversation = [{"role": "user", "content": "go"}, messages.assistant_message(result, "openai-chat")]
    client.chat.completions.create(model="m", messages=conversation, stream=True).close()
    assert replay.sent[-1]["messages"][-1] == {"role": "assistant", "content": None, "refusal": REFUSED}


def test_through_langchain_the_responses_refusal_is_kept_and_the_chat_one_lost() -> None:
    langchain_openai = pytest.importorskip("langchain_openai")
    for responses, body in (
        (True, cv.render(_responses(["No, ", "sorry."]), "")),
        (False, cv.render(CHAT, "openai-chat")),
    ):
        replay = Replay(body)
        model = langchain_openai.ChatOpenAI(
            model="m",
            api_key="test",
            base_url="http://mock/v1",
            http_client=replay.client(),
            use_responses_api=responses,
        )
        result = fsm.reassemble(model.stream("go"))
        # its Responses chunks carry the refusal as a block; its chat chunks keep none (only a whole
        # message's refusal, not a streamed one's)
        assert result.refusal == ("No, sorry." if responses else None)
        assert result_to_json(result)["refusal"] == result.refusal


def test_a_long_refusal_is_gathered_in_one_list() -> None:
    # each piece was once added by copying all the pieces before it: n pieces, n^2/2 copies. Work is
    # not timed here: the pieces must go into the one list the first piece made.
    reassembler = fsm.Reassembler("openai-chat")
    reassembler.feed(_chunk({"refusal": "no "}))
    gathered = reassembler._content._refusal
    for _ in range(999):
        reassembler.feed(_chunk({"refusal": "no "}))
    assert reassembler._content._refusal is gathered and len(gathered) == 1000
    assert reassembler.close().refusal == "no " * 1000


def test_a_responses_refusal_goes_back_in_its_message_item() -> None:
    pydantic = pytest.importorskip("pydantic")
    responses = pytest.importorskip("openai.types.responses")
    result = fsm.reassemble(cv.render(_responses(["No, ", "sorry."]), ""), "openai-responses")
    items = messages.assistant_message(result, "openai-responses")
    refused = {"type": "refusal", "refusal": "No, sorry."}
    assert items == [
        {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed", "content": [refused]}
    ]
    pydantic.TypeAdapter(responses.ResponseInputItemParam).validate_python(items[0])  # an output message
    # the same client takes it back as it is
    openai = pytest.importorskip("openai")
    replay = Replay(cv.render(_responses(["No."]), ""))
    client = openai.OpenAI(api_key="test", base_url="http://mock/v1", http_client=replay.client())
    client.responses.create(model="m", input=[{"role": "user", "content": "go"}, *items], stream=True).close()
    assert replay.sent[-1]["input"][1:] == items


def test_a_refusal_from_no_message_item_goes_back_as_its_text() -> None:
    made = fsm.Result("openai-responses", "stop", (), (), refusal="No.")  # built by hand: no item
    assert messages.assistant_message(made, "openai-responses") == [
        {"type": "message", "role": "assistant", "content": "No."}
    ]


def _text_and_refusal(refused_first: bool) -> list[dict[str, Any]]:
    """One message item with an ``output_text`` part and a ``refusal`` part, in either order, as the
    API streams them (each part added, its deltas, its done)."""
    said = {"type": "output_text", "text": "Here is what I can say. ", "annotations": []}
    refused = {"type": "refusal", "refusal": "The rest I cannot."}
    parts = [refused, said] if refused_first else [said, refused]
    item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    response = {"id": "resp_1", "object": "response", "created_at": 0, "model": "m", "status": "in_progress"}
    response |= {"output": [], "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}
    wire: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
    ]
    for at, part in enumerate(parts):
        where = {"output_index": 0, "item_id": "msg_1", "content_index": at}
        empty = {**part, "text": ""} if part["type"] == "output_text" else {**part, "refusal": ""}
        wire.append({"type": "response.content_part.added", **where, "part": empty})
        if part["type"] == "output_text":
            wire.append({"type": "response.output_text.delta", **where, "delta": part["text"], "logprobs": []})
            wire.append({"type": "response.output_text.done", **where, "text": part["text"], "logprobs": []})
        else:
            wire.append({"type": "response.refusal.delta", **where, "delta": part["refusal"]})
            wire.append({"type": "response.refusal.done", **where, "refusal": part["refusal"]})
        wire.append({"type": "response.content_part.done", **where, "part": part})
    done = {**item, "status": "completed", "content": parts}
    return [
        *wire,
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.completed", "response": {**response, "status": "completed", "output": [done]}},
    ]


@pytest.mark.parametrize("refused_first", [False, True])
def test_a_responses_message_with_text_and_a_refusal_goes_back_as_that_one_message(refused_first: bool) -> None:
    # it went back as two messages: the text (a plain message) and then the refusal as a message of
    # its own, as if the model had said two things
    openai = pytest.importorskip("openai")
    pydantic = pytest.importorskip("pydantic")
    wire = _text_and_refusal(refused_first)
    result = fsm.reassemble(cv.render(wire, ""), "openai-responses")
    assert (result.text, result.refusal, result.codes()) == ("Here is what I can say. ", "The rest I cannot.", [])
    items = messages.assistant_message(result, "openai-responses")
    # what the openai SDK's own final response holds of that item: one message, its parts in order
    replay = Replay(cv.render(wire, ""))
    client = openai.OpenAI(api_key="test", base_url="http://mock/v1", http_client=replay.client())
    with client.responses.stream(model="m", input="go") as stream:
        final = stream.get_final_response()
    sdk = final.output[0].model_dump(exclude_none=True)
    assert items == [{key: sdk[key] for key in ("type", "role", "id", "status", "content")}]
    assert [part["type"] for part in items[0]["content"]] == (
        ["refusal", "output_text"] if refused_first else ["output_text", "refusal"]
    )
    pydantic.TypeAdapter(openai.types.responses.ResponseInputItemParam).validate_python(items[0])
    client.responses.create(model="m", input=[{"role": "user", "content": "go"}, *items], stream=True).close()
    assert replay.sent[-1]["input"][1:] == items


@pytest.mark.parametrize("output_version", [None, "responses/v1", "v1", "v0"])
def test_through_langchain_every_output_version_sends_the_responses_refusal_back(output_version: str | None) -> None:
    # output_version="v0" moves the refusal block to additional_kwargs["refusal"], which was not read:
    # the refusal was lost and the next turn held nothing for it (after reasoning: the reasoning alone)
    import functools
    import operator

    from tests.test_langchain_responses_reasoning import chunks, reasoning
    from tests.test_langchain_responses_reasoning import stream as reasoning_stream

    thought = reasoning_stream(reasoning(0, "Think."))
    thinking = thought[: thought.index(b"event: response.completed")]
    refused = [{**event, "output_index": 1} if "output_index" in event else event for event in _responses(["No."])]
    body = thinking + cv.render(refused, "")
    reference = fsm.reassemble(body, "openai-responses")
    streamed = chunks(body, output_version)
    for got in (fsm.reassemble(streamed), fsm.reassemble([functools.reduce(operator.add, streamed)])):
        assert (got.refusal, got.finish_reason, got.codes()) == (reference.refusal, "stop", [])
        said = messages.assistant_message(got, "openai-responses")
        assert said[:-1] == messages.assistant_message(reference, "openai-responses")[:-1]  # the reasoning item
        # LangChain's chunks hold neither the message item's status nor (with no text in it) its id,
        # and no input message takes a refusal part: the refusal goes as a plain message of its text
        assert said[-1] == {"type": "message", "role": "assistant", "content": "No."}
