"""A hostile audit of three changes (OpenAI chat text of a wrong type, Claude's server blocks in
fsm.history, Gemini's code results going back): each case failed before its fix."""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from fsm import history, messages
from tests.test_gemini_code_turns import gem, ran

CALL = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
OPENING = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}


def chat(*deltas: dict[str, Any]) -> list[dict[str, Any]]:
    chunks = [OPENING, *({"choices": [{"index": 0, "delta": delta}]} for delta in deltas)]
    return [*chunks, {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]


def as_sse(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks) + b"data: [DONE]\n\n"


def chat_read(chunks: list[dict[str, Any]]) -> list[fsm.Result]:
    """The stream as a list of chunks and as bytes, whole and in 3-byte reads."""
    read = [fsm.reassemble(chunks, "openai-chat")]
    for step in (len(as_sse(chunks)), 3):
        reader, body = fsm.Reassembler(provider="openai-chat"), as_sse(chunks)
        for at in range(0, len(body), step):
            reader.feed_bytes(body[at : at + step])
        read.append(reader.close())
    return read


# -- 1. A chat delta's text or reasoning of a wrong type -------------------------------------------------


@pytest.mark.parametrize(
    ("beside", "said"),
    [
        ({"content": 0}, "delta.content is int, not a string or list, is not read"),
        ({"content": {}}, "delta.content is dict, not a string or list, is not read"),
        ({"content": False}, "delta.content is bool, not a string or list, is not read"),
        ({"reasoning_content": 0}, "delta.reasoning_content is int, not a string, is not read"),
        ({"reasoning": []}, "delta.reasoning is list, not a string, is not read"),
    ],
)
def test_a_falsy_text_of_a_wrong_type_beside_one_call_is_reported_after_the_first_chunk(
    beside: dict[str, Any], said: str
) -> None:
    # The one-call shortcut took any falsy value beside the call for no text, so after the first
    # chunk (which the decoder reads) the same delta was read past without a word.
    for result in chat_read(chat({**beside, "tool_calls": [CALL]})):
        assert [(c.id, c.arguments) for c in result.calls] == [("c1", {"a": 1})]
        assert [(d.code, d.event, d.message) for d in result.diagnostics] == [("part-not-reassembled", 2, said)]


def test_a_refusal_beside_one_call_is_kept_after_the_first_chunk() -> None:
    # The one-call shortcut did not look at refusal: it was lost past the first chunk.
    for result in chat_read(chat({"refusal": "I can't.", "tool_calls": [CALL]})):
        assert (result.refusal, [c.id for c in result.calls]) == ("I can't.", ["c1"])


def test_reasoning_of_a_wrong_type_beside_thinking_blocks_read_past_is_reported() -> None:
    # thinking_blocks of no block are read past and reasoning_content read instead: one of a
    # wrong type was dropped without a word, as if the blocks had been read.
    for result in chat_read(
        chat({"thinking_blocks": [{"type": "other"}], "reasoning_content": {"x": 1}}, {"tool_calls": [CALL]})
    ):
        assert [(d.code, d.event, d.message) for d in result.diagnostics] == [
            ("part-not-reassembled", 2, "delta.reasoning_content is dict, not a string, is not read")
        ]


def test_reasoning_beside_a_reasoning_content_of_a_wrong_type_is_read() -> None:
    # reasoning_content of a wrong type hid the reasoning string beside it, which was lost.
    for result in chat_read(chat({"reasoning_content": 5, "reasoning": "Hm."}, {"tool_calls": [CALL]})):
        assert [r.text for r in result.reasoning] == ["Hm."]
        assert [(d.code, d.event, d.message) for d in result.diagnostics] == [
            ("part-not-reassembled", 2, "delta.reasoning_content is int, not a string, is not read")
        ]


# -- 2. Claude's server tool blocks in fsm.history ------------------------------------------------------


def search(at: str) -> dict[str, Any]:
    return {"type": "server_tool_use", "id": at, "name": "web_search", "input": {"query": "q"}}


def found(at: str) -> dict[str, Any]:
    return {"type": "web_search_tool_result", "tool_use_id": at, "content": []}


def use(at: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": at, "name": "f", "input": {}}


def findings(report: history.Report) -> list[tuple[str, str | None, int]]:
    return [(f.kind.value, f.id, f.message) for f in report.findings]


def repaired_for_good(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    fixed, _ = history.repair(turns)
    assert not history.check(fixed).rejected and not history.anything_dangling(fixed)
    assert history.repair(fixed) == (fixed, [])
    return fixed


def test_a_last_message_that_makes_client_calls_keeps_its_server_call_waiting_past_their_results() -> None:
    # The client call's result goes in a message after it: the server call waits past it
    # (server-call-waits-across-results, audit 76), repair's placeholder too. Before that policy,
    # repair's placeholder made a history its own check refused (dangling s1), and it dropped s1.
    turns = [{"role": "user", "content": "Look it up"}, {"role": "assistant", "content": [search("s1"), use("c1")]}]
    assert findings(history.check(turns)) == [("dangling", "c1", 2)]
    fixed = repaired_for_good(turns)
    assert [m["content"] for m in fixed[1:]] == [
        [search("s1"), use("c1")],
        [
            {
                "type": "tool_result",
                "tool_use_id": "c1",
                "content": history.RepairPolicy().placeholder,
                "is_error": True,
            }
        ],
    ]


@pytest.mark.parametrize("kind", [["tool_use"], {"x": 1}])
def test_a_block_whose_type_is_unhashable_is_read_past(kind: Any) -> None:
    # TypeError (unhashable type) from looking the type up among the server blocks' set
    turns = [{"role": "user", "content": [{"type": kind}]}, {"role": "assistant", "content": [search("s"), found("s")]}]
    assert history.check(turns).findings == ()
    assert history.repair(turns) == (turns, [])


def test_two_messages_with_one_server_call_id_are_not_joined() -> None:
    # Joined (the user message between them emptied), the second call was a duplicate in its
    # message: a second repair renamed it. Kept apart, the API still reads the two assistant messages
    # as one turn, an id twice in it (audit 30): the second call is renamed, and the two then join.
    turns = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": [search("s1"), found("s1")]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "gone", "content": "x"}]},
        {"role": "assistant", "content": [search("s1"), found("s1")]},
    ]
    assert repaired_for_good(turns) == [
        turns[0],
        {"role": "assistant", "content": [search("s1"), found("s1"), search("s1_d2"), found("s1_d2")]},
    ]


# -- 3. Gemini's code results going back ------------------------------------------------------------------


LOOK = {"functionCall": {"name": "look", "args": {}}}


@pytest.mark.parametrize(
    "first",
    [
        [gem(ran("7\n"))],  # a result of no code
        [
            gem({"executableCode": {"code": "x = 7"}}),
            gem(ran("7\n", fields={"id": "other"})),
        ],  # one naming no code sent
    ],
)
def test_a_result_that_does_not_go_back_keeps_its_place(first: list[dict[str, Any]]) -> None:
    # Its place was left empty, and the call after the text took it: the call went back before
    # the text it came after.
    events = [*first, gem({"text": "A"}), gem(LOOK), gem({"text": "B"}, finish="STOP")]
    reader, body = (
        fsm.Reassembler(provider="gemini"),
        b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events),
    )
    for at in range(0, len(body), 5):
        reader.feed_bytes(body[at : at + 5])
    for result in (fsm.reassemble(events, "gemini"), reader.close()):
        assert messages.assistant_message(result, "gemini", dummy_signature=False)["parts"] == [
            {"text": "A"},
            LOOK,
            {"text": "B"},
        ]


@pytest.mark.parametrize("strict", [False, True])
def test_a_code_result_of_a_wrong_type_is_reported_not_failing_the_stream(strict: bool) -> None:
    # It failed the stream (RemoteProtocolError), calls and all, in lax mode too; before its part
    # was read, it was reported and read past, as a chat delta's text of a wrong type is.
    events = [gem({"executableCode": {"code": "x = 1"}}), gem({"codeExecutionResult": [1]}), gem(LOOK, finish="STOP")]
    result = fsm.reassemble(events, "gemini", strict=strict)
    assert [c.name for c in result.calls] == ["look"] and not result.server_tool_results
    assert [(d.event, d.message) for d in result.diagnostics if d.code == "part-not-reassembled"] == [
        (2, "parts[0].codeExecutionResult is list, not an object, is not read")
    ]
    assert messages.assistant_message(result, "gemini", dummy_signature=False)["parts"] == [LOOK]
