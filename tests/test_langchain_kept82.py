"""Audit 82: what the wire paths keep since audits 79 and 80, through LangChain's chat models.

Each turn is the raw stream the wire tests build from the providers' documented shapes (validated
there by the SDKs' own types: tests/test_wire_gaps79.py, tests/test_programmatic_tool_calls.py),
replayed through the installed LangChain integration over its mock transport, read chunk by chunk
and summed, under the default output version and ``output_version="v1"``.

- Claude's programmatic tool calling: a client call's ``caller`` (v0: on its ``tool_use`` block, v1:
  in the ``extras`` of its ``tool_call_chunk``) was dropped in silence, so the next request's calls
  named no code execution as their caller; and the response's ``container`` (in the last chunk's
  ``response_metadata``) was not read, so ``result.container`` was None.
- Gemini's ``toolCall`` and ``toolResponse`` parts (``server_tool_call`` and ``server_tool_result``
  blocks, v1 inside ``non_standard`` ones) were reported (``part-not-reassembled``) and dropped.
- Claude's ``container_upload`` and ``mcp_tool_listing`` blocks: langchain-anthropic yields nothing
  of them when it streams, so they cannot be kept; they were lost in silence, and are now reported
  by the block indexes they leave empty.
"""

from __future__ import annotations

import functools
import json
import operator
from typing import Any

import pytest

import fsm
from fsm import history, messages
from tests import test_programmatic_tool_calls as programmatic
from tests import test_wire_gaps79 as gaps
from tests.test_langchain_places import chat_anthropic, claude_chunk
from tests.test_langchain_reasoning import chat_google
from tests.test_langchain_reasoning import sse as gemini_sse

pytest.importorskip("httpx")

VERSIONS = [None, "v1"]


def both(chunks: list[Any]) -> list[list[Any]]:
    """The chunks one by one, and added up into one message as LangChain users do."""
    return [chunks, [functools.reduce(operator.add, chunks)]]


def calls(result: fsm.Result) -> list[Any]:
    return [(c.id, c.name, c.arguments, c.status, c.item, c.output_index) for c in result.calls]


def server_calls(result: fsm.Result) -> list[Any]:
    return [
        (c.id, c.name, c.type, c.arguments, c.status, c.item, c.thought_signature) for c in result.server_tool_calls
    ]


# -- Claude's programmatic tool calling -------------------------------------------------------------

TURNS = {
    "code-and-its-first-call": programmatic.calling_turn(1, with_code=True),
    "the-codes-next-call": programmatic.calling_turn(2, with_code=False),
    "the-codes-result": programmatic.final_turn(3),
}


@pytest.mark.parametrize("output_version", VERSIONS)
@pytest.mark.parametrize("name", list(TURNS))
def test_a_programmatic_turn_through_chat_anthropic_is_the_wires(name: str, output_version: str | None) -> None:
    body = programmatic.sse(TURNS[name])
    wire = fsm.reassemble(body, "anthropic")
    sent = messages.assistant_message(wire, "anthropic")
    for stream in both(list(chat_anthropic(body, output_version)[1].stream("go"))):
        got = fsm.reassemble(stream)
        assert got.problems() == ()
        assert calls(got) == calls(wire)
        assert [(c.id, c.arguments, c.item) for c in got.server_tool_calls] == [
            (c.id, c.arguments, c.item) for c in wire.server_tool_calls
        ]
        assert got.container == wire.container == programmatic.CONTAINER
        assert messages.assistant_message(got, "anthropic") == sent


def test_the_caller_goes_back_where_it_was_dropped() -> None:
    body = programmatic.sse(programmatic.calling_turn(2, with_code=False))
    for output_version in VERSIONS:
        chunks = list(chat_anthropic(body, output_version)[1].stream("go"))
        (use,) = messages.assistant_message(fsm.reassemble(chunks), "anthropic")["content"]
        assert use["caller"] == programmatic.CALLER  # before: no caller, so the API read a direct call


def test_the_loop_through_chat_anthropic_keeps_the_code_until_its_result() -> None:
    """The three requests of tests/test_programmatic_tool_calls.py, each turn read from ChatAnthropic's
    chunks: every history the check accepts as it stands, and each later request, sent through
    ChatAnthropic, carries the waiting code and the caller of each call it made."""
    conversation: list[dict[str, Any]] = list(programmatic.ASK)
    container = None
    for n, name in enumerate(TURNS, 1):
        replay, model = chat_anthropic(programmatic.sse(TURNS[name]), None)
        extra = {"container": container} if container else {}
        result = fsm.reassemble(list(model.stream(conversation, **extra)))
        if n > 1:
            sent = replay.sent[-1]
            assert sent["container"] == "container_1"
            assert sent["messages"][1]["content"][1] == {
                **programmatic.CODE,
                "input": {"code": "for r in regions: query(r)"},
            }
            assert sent["messages"][1]["content"][2]["caller"] == programmatic.CALLER
        container = result.container["id"] if result.container else container
        conversation.append(messages.assistant_message(result, "anthropic"))
        answers = [messages.tool_result(call, {"revenue": n}, "anthropic") for call in result.calls]
        conversation += messages.tool_results(answers, "anthropic") if answers else []
        assert history.check(conversation, "anthropic").findings == ()
        assert history.repair(conversation, format="anthropic") == (json.loads(json.dumps(conversation)), [])
    assert conversation[-1]["content"] == [programmatic.RAN, {"type": "text", "text": "West sold most."}]


def test_chunks_naming_no_integration_keep_the_caller_too() -> None:
    # langchain-anthropic before 1.0 names no model_provider: its blocks are told by their shapes
    body = programmatic.sse(programmatic.calling_turn(1, with_code=True))
    chunks = list(chat_anthropic(body, None)[1].stream("go"))
    for chunk in chunks:
        chunk.response_metadata.pop("model_provider", None)
    (call,) = fsm.reassemble(chunks).calls
    assert call.item == {"type": "tool_use", "caller": programmatic.CALLER}


@pytest.mark.parametrize(
    ("extras", "item"),
    [
        ({"caller": {"type": "direct"}, "toolset_name": None}, None),  # the default says nothing, as on the wire
        ({"toolset_name": "crm"}, {"type": "tool_use", "toolset_name": "crm"}),
        ({}, None),
    ],
)
def test_what_a_v1_call_block_says_beside_its_input_is_the_wires(extras: dict[str, Any], item: Any) -> None:
    block = {"type": "tool_call_chunk", "id": "toolu_1", "name": "f", "args": "", "index": 0, "extras": extras}
    entry = {"index": 0, "id": "toolu_1", "name": "f", "args": "{}"}
    result = fsm.reassemble([claude_chunk(block, calls=[entry], stop_reason="tool_use")], strict=True)
    assert [c.item for c in result.calls] == [item]


# -- Gemini's server-side tool calls (toolCall, toolResponse) ---------------------------------------

GEMINI = {
    "search-then-a-call": gaps._combined(),
    "two-searches-answered-by-id-one-resent": [
        gaps._gemini(gaps._ASKED, {"toolCall": {**gaps._TOOL_CALL, "id": "tc_2", "args": {"queries": ["weather"]}}}),
        gaps._gemini(
            {"toolResponse": {**gaps._TOOL_RESPONSE, "id": "tc_2", "response": {"search_suggestions": "cold"}}},
            gaps._ANSWERED,
        ),
        gaps._gemini(gaps._ANSWERED),  # resent
        gaps._gemini({"text": "Cold."}, finish="STOP"),
    ],
}


@pytest.mark.parametrize("output_version", VERSIONS)
@pytest.mark.parametrize("name", list(GEMINI))
def test_gemini_tool_parts_through_chat_google_are_the_wires(name: str, output_version: str | None) -> None:
    body = gemini_sse(GEMINI[name])
    wire = fsm.reassemble(body, "gemini")
    assert wire.server_tool_calls and wire.server_tool_results  # what the stream is built to hold
    sent = messages.assistant_message(wire, "gemini")
    chunks = list(chat_google(body, output_version).stream("go"))
    for stream in both(chunks):
        got = fsm.reassemble(stream)
        assert server_calls(got) == server_calls(wire)
        assert got.server_tool_results == wire.server_tool_results
        assert got.codes().count("resend") == wire.codes().count("resend")
        if output_version == "v1" and len(stream) == 1 and "text" in sent["parts"][-1]:
            assert_text_merged_away(got, sent)
            continue
        assert "part-not-reassembled" not in got.codes()  # before: both blocks were reported and dropped
        assert messages.assistant_message(got, "gemini") == sent


def assert_text_merged_away(got: fsm.Result, sent: dict[str, Any]) -> None:
    """LangChain's v1 numbers the last event's text block as it numbered an earlier tool block, so
    its sum merges the text into that block (a ``text`` field beside its ``value``): where it sat is
    lost, and it is reported, not read."""
    (said,) = [d.message for d in got.diagnostics if d.code == "part-not-reassembled"]
    assert said.startswith("a 'non_standard' content block holds text (5 characters) LangChain's sum merged into it")
    assert got.text == "" and messages.assistant_message(got, "gemini") == {**sent, "parts": sent["parts"][:-1]}


def test_an_id_less_tool_call_keeps_its_part_on_the_wire_and_through_chat_google() -> None:
    """Before, on the wire too: a toolCall without an id was read as a call whose whole arguments
    came first, and its part, held as the header of a next call, was kept nowhere; so neither it nor
    its toolResponse went back. Through LangChain it comes under a uuid4 of LangChain's, read as none."""
    asked = {"toolCall": {"toolType": "URL_CONTEXT", "args": {"urls": ["https://x.example"]}}}
    answered = {"toolResponse": {"toolType": "URL_CONTEXT", "response": {"ok": True}}}
    events = [gaps._gemini(asked), gaps._gemini(answered), gaps._gemini({"text": "Read."}, finish="STOP")]
    wire = fsm.reassemble(events, "gemini")
    assert [c.item for c in wire.server_tool_calls] == [asked["toolCall"]]
    assert messages.assistant_message(wire, "gemini")["parts"] == [asked, answered, {"text": "Read."}]
    for output_version in VERSIONS:
        for stream in both(list(chat_google(gemini_sse(events), output_version).stream("go"))):
            got = fsm.reassemble(stream)
            assert server_calls(got) == server_calls(wire)
            if output_version == "v1" and len(stream) == 1:
                assert_text_merged_away(got, messages.assistant_message(wire, "gemini"))
            else:
                assert messages.assistant_message(got, "gemini") == messages.assistant_message(wire, "gemini")


def test_the_turn_read_from_chat_google_goes_back_through_it() -> None:
    """Sent back through ChatGoogleGenerativeAI the turn is LangChain's to write (it replays only code
    server calls): sent through the google-genai client, the model's content is the wire's."""
    from tests.test_clients import Replay, genai_client

    body = gemini_sse(gaps._combined())
    result = fsm.reassemble(list(chat_google(body, None).stream("go")))
    replay = Replay(body)
    client = genai_client(replay)
    ask = [{"role": "user", "parts": [{"text": "Northernmost US city, and its weather?"}]}]
    answer = messages.tool_result(result.complete_calls[0], {"temp": -20}, "gemini")
    turn = messages.assistant_message(result, "gemini")
    contents = [*ask, turn, *messages.tool_results([answer], "gemini")]
    list(client.models.generate_content_stream(model="gemini-3-flash-preview", contents=contents))
    asked, answered = replay.sent[-1]["contents"][1]["parts"][1:3]
    assert asked["toolCall"]["id"] == answered["toolResponse"]["id"] == "tc_1"
    assert (asked["thoughtSignature"], answered["thoughtSignature"]) == ("c2lnLXRvb2w=", "c2lnLXJlc3A=")
    assert history.check(replay.sent[-1]["contents"]).findings == ()


def gemini_chunk(*blocks: dict[str, Any], finish: str | None = None) -> Any:
    core = pytest.importorskip("langchain_core.messages")
    meta = {"model_provider": "google_genai", **({"finish_reason": finish} if finish else {})}
    return core.AIMessageChunk(content=list(blocks), response_metadata=meta)


def test_what_langchain_changed_of_a_tool_part_is_read_back_so() -> None:
    """Policy langchain-gemini-tool-parts: a call Gemini gave no id comes under a uuid4 of LangChain's
    and its result under "", read as none; an absent toolType comes as media_processing, read as
    MEDIA_PROCESSING; LangChain's lower-cased type is upper-cased."""
    langchain = pytest.importorskip("langchain_google_genai.chat_models")
    call = {"type": "server_tool_call", "name": "media_processing", "args": {}}
    call["id"] = "0b7e3f2a-8c41-4d55-9a6e-2f1c3b4d5e6f"  # LangChain's own
    assert langchain._server_tool_name(None) == "media_processing"
    result_block = {"type": "server_tool_result", "tool_call_id": "", "status": "success", "output": {"ok": 1}}
    result_block["extras"] = {"block_type": "media_processing", "signature": "c2ln"}
    other = {"type": "server_tool_call", "name": "url_context", "id": "tc_9", "args": {"urls": ["a"]}}
    got = fsm.reassemble([gemini_chunk(call), gemini_chunk(result_block), gemini_chunk(other, finish="STOP")])
    assert [c.item for c in got.server_tool_calls] == [
        {"toolType": "MEDIA_PROCESSING", "args": {}},
        {"id": "tc_9", "toolType": "URL_CONTEXT", "args": {"urls": ["a"]}},
    ]
    assert [c.wire_id for c in got.server_tool_calls] == [None, "tc_9"]
    assert [r.block for r in got.server_tool_results] == [
        {"toolResponse": {"toolType": "MEDIA_PROCESSING", "response": {"ok": 1}}, "thoughtSignature": "c2ln"}
    ]
    parts = messages.assistant_message(got, "gemini")["parts"]
    assert parts == [{"toolCall": {"toolType": "MEDIA_PROCESSING", "args": {}}}, got.server_tool_results[0].block]


@pytest.mark.parametrize(
    ("block", "said"),
    [
        (
            {"type": "server_tool_call", "name": "google_search_web", "id": "t1", "args": ["q"]},
            "a 'server_tool_call' content block whose args is list, not an object: it is not read",
        ),
        (
            {"type": "server_tool_result", "tool_call_id": 7, "output": {}, "extras": {"block_type": "url_context"}},
            "a 'server_tool_result' content block whose id is int, not a string: it is not read",
        ),
        (
            {
                "type": "non_standard",
                "value": {
                    "type": "server_tool_result",
                    "tool_call_id": "t1",
                    "output": "x",
                    "extras": {"block_type": "url_context"},
                },
            },
            "a 'non_standard' content block whose response is str, not an object: it is not read",
        ),
    ],
)
def test_a_tool_block_gemini_would_refuse_back_is_reported_as_the_wires_part_is(
    block: dict[str, Any], said: str
) -> None:
    got = fsm.reassemble([gemini_chunk(block, finish="STOP")])
    assert [d.message for d in got.diagnostics if d.code == "part-not-reassembled"] == [said]
    assert not got.server_tool_calls and not got.server_tool_results


# -- Claude's container_upload and mcp_tool_listing: lost in LangChain, reported --------------------


@pytest.mark.parametrize("output_version", VERSIONS)
def test_claude_blocks_chat_anthropic_drops_are_reported_by_the_indexes_they_leave(output_version: str | None) -> None:
    events = gaps._claude_turn()
    body = gaps._named(events)
    wire = fsm.reassemble(body, "anthropic")
    assert [r.block for r in wire.server_tool_results] == [gaps._LISTING, gaps._UPLOAD]
    for stream in both(list(chat_anthropic(body, output_version)[1].stream("go"))):
        got = fsm.reassemble(stream)
        # langchain-anthropic yields nothing of either block: before, nothing said they were gone
        assert got.server_tool_results == ()
        (said,) = [d.message for d in got.diagnostics]
        assert said.startswith("no content block came at indexes 0 to 1, before index 2: ChatAnthropic yields nothing")
        # the rest of the turn is the wire's
        content = messages.assistant_message(got, "anthropic")["content"]
        assert content == messages.assistant_message(wire, "anthropic")["content"][2:]


def test_one_skipped_index_is_named_alone_and_a_huge_one_is_written_as_a_number_too_long() -> None:
    chunks = [
        claude_chunk({"type": "text", "text": "A", "index": 0}),
        claude_chunk({"type": "text", "text": "B", "index": 2}),
        claude_chunk({"type": "text", "text": "C", "index": 10**5000}, stop_reason="end_turn"),
    ]
    said = [d.message for d in fsm.reassemble(chunks).diagnostics]
    assert said[0].startswith("no content block came at index 1, before index 2:")
    assert said[1].startswith("no content block came at indexes 3 to a number too long")
    assert fsm.reassemble(chunks).text == "ABC"


def test_blocks_in_order_leave_no_index_empty() -> None:
    from tests.test_anthropic_block_order import sse
    from tests.test_langchain_server_calls import NEXT_TURNS

    for turn in NEXT_TURNS.values():
        for output_version in VERSIONS:
            for stream in both(list(chat_anthropic(sse(turn), output_version)[1].stream("go"))):
                assert "part-not-reassembled" not in fsm.reassemble(stream).codes()
