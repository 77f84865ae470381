"""Bedrock ConverseStream server tools (Amazon Nova's ``nova_code_interpreter``, ``nova_grounding``):
the ``toolUse`` of ``type: server_tool_use`` is the provider's call, never the client's, and the
``toolResult`` block that follows it (``contentBlockStart.start.toolResult`` with its ``toolUseId``,
``type`` and ``status``, then ``contentBlockDelta.delta.toolResult`` items of ``json`` or ``text``)
is kept whole, then sent back in the next turn's assistant message right after its call, block for
block, as botocore's model has them.

STREAM is a ConverseStream of this project's making in the shape a recorded Nova 2 Lite stream has
(pydantic-ai's cassette test_bedrock_model_stream_with_code_execution_tool.yaml; its values are not
copied): the model runs ``6 * 7`` in its code interpreter, then calls the client's ``report``. The
next request Bedrock took after such a turn (the same project's multi-turn cassette) has the
blocks in the order ``SENT_BACK`` gives them."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

import fsm
from fsm import history, messages
from fsm.wire.decoders.bedrock import BedrockDecoder
from tests.helpers import aws_message

SERVER_ID = "tooluse_srvA1b2C3d4E5f6G7h8I9j0"
CLIENT_ID = "tooluse_cliZ9y8X7w6V5u4T3s2R1q0"
RAN = {"stdOut": "42", "stdErr": "", "exitCode": 0, "isError": False}
ANSWER = {
    "toolUseId": SERVER_ID,
    "type": "nova_code_interpreter_result",
    "status": "success",
    "content": [{"json": RAN}],
}
SENT_BACK = [
    {
        "toolUse": {
            "toolUseId": SERVER_ID,
            "name": "nova_code_interpreter",
            "input": {"snippet": "6 * 7"},
            "type": "server_tool_use",
        }
    },
    {"toolResult": ANSWER},
    {"toolUse": {"toolUseId": CLIENT_ID, "name": "report", "input": {"answer": 42}}},
]
ASK = [{"role": "user", "content": [{"text": "What is 6 * 7?"}]}]
EVENTS: list[dict[str, Any]] = [
    {"messageStart": {"p": "pad", "role": "assistant"}},
    {
        "contentBlockStart": {
            "contentBlockIndex": 0,
            "p": "padding",
            "start": {"toolUse": {"name": "nova_code_interpreter", "toolUseId": SERVER_ID, "type": "server_tool_use"}},
        }
    },
    {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"snippet":"6 * 7"}'}}, "p": "p"}},
    {"contentBlockStop": {"contentBlockIndex": 0, "p": "pa"}},
    {
        "contentBlockStart": {
            "contentBlockIndex": 1,
            "p": "pad",
            "start": {
                "toolResult": {"status": "success", "toolUseId": SERVER_ID, "type": "nova_code_interpreter_result"}
            },
        }
    },
    {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolResult": [{"json": RAN}]}, "p": "padd"}},
    {"contentBlockStop": {"contentBlockIndex": 1, "p": "pad"}},
    {
        "contentBlockStart": {
            "contentBlockIndex": 2,
            "p": "paddi",
            "start": {"toolUse": {"name": "report", "toolUseId": CLIENT_ID, "type": "tool_use"}},
        }
    },
    {"contentBlockDelta": {"contentBlockIndex": 2, "delta": {"toolUse": {"input": '{"answer":42}'}}, "p": "pa"}},
    {"contentBlockStop": {"contentBlockIndex": 2, "p": "p"}},
    {"messageStop": {"p": "padding", "stopReason": "tool_use"}},
    {
        "metadata": {
            "metrics": {"latencyMs": 900},
            "p": "pad",
            "usage": {"inputTokens": 10, "outputTokens": 5, "serverToolUsage": {}, "totalTokens": 15},
        }
    },
]
STREAM = b"".join(aws_message(json.dumps(body).encode(), name) for event in EVENTS for name, body in event.items())
"""EVENTS as the binary event stream Bedrock sends them in."""


def _recorded_events() -> list[dict[str, Any]]:
    """STREAM's events as botocore's decoder hands them on, each ``{eventType: body}``."""
    from botocore.eventstream import EventStreamBuffer

    buffer = EventStreamBuffer()
    buffer.add_data(STREAM)
    return [{m.headers[":event-type"]: json.loads(m.payload)} for m in buffer]


def _fed(events: list[dict[str, Any]], form: str) -> fsm.Result:
    """The events read as dicts, as NDJSON lines, as SSE data lines, or framed as the binary event stream."""
    if form == "binary":
        from tests.test_litellm_bedrock import converse_stream

        return fsm.reassemble(converse_stream([next(iter(e.items())) for e in events]), "bedrock")
    reassembler = fsm.Reassembler("bedrock")
    if form == "dicts":
        for event in events:
            reassembler.feed(event)
    elif form == "ndjson":
        reassembler.feed_bytes(b"".join(json.dumps(e).encode() + b"\n" for e in events))
    else:
        reassembler.feed_bytes(b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events))
    return reassembler.close()


FORMS = ["dicts", "ndjson", "sse", "binary"]


def test_the_stream_keeps_the_server_call_apart_and_its_result_whole() -> None:
    pytest.importorskip("botocore")
    result = fsm.reassemble(STREAM, "bedrock")
    assert result.codes() == [] and result.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in result.calls] == [(CLIENT_ID, "report", {"answer": 42})]
    [served] = result.server_tool_calls
    assert (served.id, served.name, served.arguments) == (
        SERVER_ID,
        "nova_code_interpreter",
        {"snippet": "6 * 7"},
    )
    assert [(r.block, r.output_index) for r in result.server_tool_results] == [(ANSWER, 1)]


def test_the_next_turn_sends_the_server_blocks_back_as_bedrock_took_them() -> None:
    pytest.importorskip("botocore")
    result = fsm.reassemble(STREAM, "bedrock")
    said = messages.assistant_message(result, "bedrock")
    assert said == {"role": "assistant", "content": SENT_BACK}
    # Only the client's call is answered by the client; history reads the turn as whole.
    answers = [messages.tool_result(call, "Final result processed.", "bedrock") for call in result.calls]
    conversation = [*ASK, said, *messages.tool_results(answers, "bedrock")]
    assert history.check(conversation).findings == ()
    assert history.repair(conversation) == (conversation, [])


@pytest.mark.parametrize("form", FORMS)
def test_every_form_of_the_stream_gives_the_same_turn(form: str) -> None:
    pytest.importorskip("botocore")
    events = _recorded_events()
    result = _fed(events, form)
    assert result.codes() == []
    assert [r.block for r in result.server_tool_results] == [ANSWER]
    assert messages.assistant_message(result, "bedrock")["content"] == SENT_BACK


def test_boto3_sends_the_server_blocks_in_the_assistant_message() -> None:
    from tests.test_sdk_loop import converse_client

    client = converse_client(STREAM)
    sent: list[dict[str, Any]] = []
    client.meta.events.register(
        "request-created.bedrock-runtime.ConverseStream", lambda request, **_: sent.append(json.loads(request.body))
    )
    result = fsm.reassemble(client.converse_stream(modelId="m", messages=ASK)["stream"])
    assert [r.block for r in result.server_tool_results] == [ANSWER]
    answers = [messages.tool_result(call, "done", "bedrock") for call in result.calls]
    turn = [*ASK, messages.assistant_message(result, "bedrock"), *messages.tool_results(answers, "bedrock")]
    client.converse_stream(modelId="m", messages=turn)  # botocore checks every block against its model
    assert sent[-1]["messages"][1]["content"] == SENT_BACK


# -- The result block's pieces ----------------------------------------------------------------------------------------


def _turn(*result_deltas: Any, start: Any = None, stop: bool = True) -> list[dict[str, Any]]:
    use = {"toolUseId": "s1", "name": "nova_grounding", "type": "server_tool_use"}
    opened = start if start is not None else {"toolUseId": "s1", "type": "nova_grounding_result", "status": "success"}
    return [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": use}}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"query": "oslo"}'}}}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"contentBlockStart": {"contentBlockIndex": 1, "start": {"toolResult": opened}}},
        *({"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolResult": d}}} for d in result_deltas),
        *([{"contentBlockStop": {"contentBlockIndex": 1}}] if stop else []),
        {"contentBlockDelta": {"contentBlockIndex": 2, "delta": {"text": "Sunny."}}},
        {"contentBlockStop": {"contentBlockIndex": 2}},
        {"messageStop": {"stopReason": "end_turn"}},
    ]


@pytest.mark.parametrize("form", FORMS)
def test_text_pieces_join_and_json_items_stay_apart(form: str) -> None:
    pytest.importorskip("botocore")
    deltas = [[{"text": "Oslo: "}], [{"text": "sunny"}, {"json": {"c": 3}}], [{"text": ", "}, {"text": "3 C"}]]
    result = _fed(_turn(*deltas), form)
    assert result.codes() == [] and result.calls == () and result.text == "Sunny."
    [kept] = result.server_tool_results
    assert kept.block["content"] == [{"text": "Oslo: sunny"}, {"json": {"c": 3}}, {"text": ", 3 C"}]
    said = messages.assistant_message(result, "bedrock")["content"]
    assert [next(iter(block)) for block in said] == ["text", "toolUse", "toolResult"]
    assert said[1]["toolUse"] == {
        "toolUseId": "s1",
        "name": "nova_grounding",
        "input": {"query": "oslo"},
        "type": "server_tool_use",
    }
    assert said[2]["toolResult"]["type"] == "nova_grounding_result"


@pytest.mark.parametrize("form", FORMS)
def test_an_item_of_another_kind_is_reported_and_the_rest_kept(form: str) -> None:
    pytest.importorskip("botocore")
    result = _fed(_turn([{"image": {"format": "png"}}, {"text": "seen"}]), form)
    assert result.codes() == ["part-not-reassembled"]
    assert "holds image" in result.diagnostics[0].message
    assert result.server_tool_results[0].block["content"] == [{"text": "seen"}]


@pytest.mark.parametrize(
    "start",
    [{"type": "nova_grounding_result"}, {"toolUseId": "", "status": "success"}, ["s1"]],
    ids=["no-id", "empty-id", "no-object"],
)
def test_a_result_start_that_names_no_call_stays_reported(start: Any) -> None:
    result = _fed(_turn([{"text": "x"}], start=start), "dicts")
    assert "part-not-reassembled" in result.codes() and result.server_tool_results == ()
    # Its call is sent back with no result: not at all (the client has nothing to stand for the run).
    assert [next(iter(b)) for b in messages.assistant_message(result, "bedrock")["content"]] == ["text"]


def test_a_result_delta_that_is_no_list_is_reported() -> None:
    result = _fed(_turn({"text": "x"}), "dicts")
    assert result.codes() == ["part-not-reassembled"]
    assert result.server_tool_results[0].block["content"] == []


def test_a_result_block_that_never_stopped_is_reported_not_kept() -> None:
    result = _fed(_turn([{"text": "half"}], stop=False), "dicts")
    assert result.codes() == ["part-not-reassembled"] and "never stopped" in result.diagnostics[0].message
    assert result.server_tool_results == ()


def test_a_result_without_an_index_stays_reported() -> None:
    events = _turn([{"text": "x"}])
    del events[4]["contentBlockStart"]["contentBlockIndex"]
    result = _fed(events, "dicts")
    assert "part-not-reassembled" in result.codes() and result.server_tool_results == ()


def test_the_commonest_fragment_shortcut_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    events = _turn([{"text": "a"}], [{"json": [1]}])
    fast = _fed(events, "dicts")
    monkeypatch.setattr(BedrockDecoder, "commonest_fragment", lambda self, payload: None)
    assert _fed(events, "dicts") == fast


# -- The next turn ----------------------------------------------------------------------------------------------------


def test_each_result_answers_the_server_call_of_its_id_in_turn() -> None:
    use = {"toolUseId": "s1", "name": "nova_grounding", "type": "server_tool_use"}

    def run(at: int, said: str) -> list[dict[str, Any]]:
        return [
            {"contentBlockStart": {"contentBlockIndex": at, "start": {"toolUse": use}}},
            {"contentBlockStop": {"contentBlockIndex": at}},
            {"contentBlockStart": {"contentBlockIndex": at + 1, "start": {"toolResult": {"toolUseId": "s1"}}}},
            {"contentBlockDelta": {"contentBlockIndex": at + 1, "delta": {"toolResult": [{"text": said}]}}},
            {"contentBlockStop": {"contentBlockIndex": at + 1}},
        ]

    events = [*run(0, "first"), *run(2, "second"), {"messageStop": {"stopReason": "end_turn"}}]
    result = _fed(events, "dicts")
    said = messages.assistant_message(result, "bedrock")["content"]
    ids = [b.get("toolUse", b.get("toolResult"))["toolUseId"] for b in said]
    assert [next(iter(b)) for b in said] == ["toolUse", "toolResult"] * 2
    assert [b["toolResult"]["content"] for b in said if "toolResult" in b] == [
        [{"text": "first"}],
        [{"text": "second"}],
    ]
    assert ids == ["s1", "s1", "s1_d2", "s1_d2"]  # the repeated id goes back renamed, with its own result
    assert history.check([*ASK, {"role": "assistant", "content": said}]).findings == ()


def test_a_server_call_without_its_result_is_not_sent_nor_run_by_the_client() -> None:
    events = [e for e in _turn([{"text": "x"}]) if "toolResult" not in json.dumps(e)]
    result = _fed(events, "dicts")
    assert result.calls == () and [c.name for c in result.server_tool_calls] == ["nova_grounding"]
    assert messages.assistant_message(result, "bedrock")["content"] == [{"text": "Sunny."}]
    assert messages.tool_results([], "bedrock") == []


def test_claude_server_blocks_do_not_go_to_converse() -> None:
    search = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    found = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": search},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": found},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}},
    ]
    result = fsm.Reassembler("anthropic")
    for event in events:
        result.feed(event)
    done = result.close()
    assert len(done.server_tool_calls) == len(done.server_tool_results) == 1
    assert messages.assistant_message(done, "bedrock")["content"] == []


# -- Size -------------------------------------------------------------------------------------------------------------


def _read_time(pieces: int) -> float:
    deltas = [[{"text": "abcdefgh"}] * pieces]
    started = time.process_time()  # this process's CPU alone: other work on the machine does not count
    result = _fed(_turn(*deltas), "dicts")
    took = time.process_time() - started
    assert len(result.server_tool_results[0].block["content"][0]["text"]) == 8 * pieces
    return took


def test_a_megabyte_result_in_tiny_pieces_is_joined_once() -> None:
    small = min(_read_time(16_384) for _ in range(3))
    large = min(_read_time(131_072) for _ in range(3))  # a megabyte of text, 8x the pieces
    assert large / max(small, 1e-4) < 32  # joined piece by piece it grows as the square (64x)


@pytest.mark.parametrize("form", ["anthropic", "gemini"])
def test_other_formats_do_not_take_converse_server_blocks(form: str) -> None:
    pytest.importorskip("botocore")
    said = json.dumps(messages.assistant_message(fsm.reassemble(STREAM, "bedrock"), form))
    assert SERVER_ID not in said and "nova_code_interpreter" not in said and CLIENT_ID in said
