"""Hostile audit 14: input that got a bare Python error, or a made-up word, out of the public API.

Each test failed before its fix. LangChain chunks are made with langchain-core where it can hold
the odd value, else as the duck-typed object the adapter reads (a ``SimpleNamespace``)."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace
from typing import Any

import pytest

import fsm
from fsm import history
from tests.helpers import sse
from tests.test_reliability_framing import CALL_A, FINISH, outcome, pieces, summary


def lc_chunk(**fields: Any) -> Any:
    chunk = {"type": "AIMessageChunk", "content": "", "tool_call_chunks": [], "response_metadata": {}, **fields}
    return SimpleNamespace(**chunk)


# -- LangChain chunks ---------------------------------------------------------------------------------


def test_a_gemini_thought_signature_that_is_none_signs_nothing() -> None:
    # langchain-google-genai's map of call id to signature holding None for a call: no signature
    # (base64 of None was a TypeError out of feed()).
    core = pytest.importorskip("langchain_core.messages")
    signatures = {"__gemini_function_call_thought_signatures__": {"c1": None}}
    entry = {"index": 0, "id": "c1", "name": "f", "args": '{"a": 1}'}
    chunk = core.AIMessageChunk(content="", tool_call_chunks=[entry], additional_kwargs=signatures)
    result = fsm.reassemble([chunk], strict=True)
    assert [(c.id, c.arguments, c.thought_signature) for c in result.calls] == [("c1", {"a": 1}, None)]


@pytest.mark.parametrize("index", [[0], {"at": 0}])
def test_a_claude_call_chunk_whose_index_is_unhashable_is_refused_as_a_dict_chunk_is(index: Any) -> None:
    # Through ChatAnthropic an entry with argument text lets go of the held tool block at its index:
    # an index of no hashable kind raised TypeError there. Now the chat decoder refuses it as it does
    # the same entry in a dict (RemoteProtocolError naming the field), and close() gives the result.
    block = {"type": "tool_use", "index": 0, "id": "t1", "name": "f", "input": {}}
    entry = {"index": index, "id": "t1", "name": "f", "args": '{"a": 1}'}
    chunk = lc_chunk(content=[block], tool_call_chunks=[entry], response_metadata={"model_provider": "anthropic"})
    r = fsm.Reassembler()
    r.feed(lc_chunk(content=[block], response_metadata={"model_provider": "anthropic"}))
    with pytest.raises(fsm.RemoteProtocolError, match=r"tool_calls\[0\]\.index"):
        r.feed(chunk)
    assert "stream-failed" in r.close().codes()


# -- SSE: a line of no field SSE defines ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("junk", "first"),
    [
        (b"\xff\xfe" + sse([CALL_A], done=False), True),  # junk glued before a call's data: line
        (json.dumps(CALL_A).encode() + b"\n\n", False),  # an event that lost its data: (first, it is NDJSON)
        (b"Data: " + json.dumps(CALL_A).encode() + b"\n\n", True),
        (b"keep-alive\n\n", True),  # before the stream's first line that tells SSE, and after it
    ],
)
def test_an_sse_line_of_no_field_is_a_bad_event_in_its_place_not_dropped_unseen(junk: bytes, first: bool) -> None:
    # The SSE spec ignores a field it does not know, so such a line, a call's event among them, was
    # dropped with no word (the call lost, only finish-without-calls said anything). It is a bad-event
    # at its own event number, however the bytes are cut; strict mode refuses it.
    streams = [(sse([CALL_A], done=False) + junk + sse([FINISH]), 2)]
    for body, at in [(junk + sse([CALL_A, FINISH]), 1)] * first + streams:
        for size in (len(body), 7, 1):
            error, result = outcome(pieces(body, size))
            assert error is None and summary(result)[1][:1] == [(at, "bad-event")], (body, size)
            assert "not an SSE field" in result.diagnostics[0].message
        error, _ = outcome([body], strict=True)
        assert error is not None and error.startswith(f"FramingError: event {at}:")


# -- history repair: drop-call over one Gemini message of many calls ----------------------------------------


def test_drop_call_over_one_gemini_message_of_many_calls_checks_each_part_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Whether a dangling call is signed was read by checking every part of its message again, per
    # call: quadratic in a message's calls (8,000 calls took seconds). Each part is now checked a
    # bounded number of times, however many calls the message holds.
    from fsm.history import formats

    checked = 0

    def counted(value: Any) -> bool:
        nonlocal checked
        checked += 1
        return real(value)

    real = formats._is_object
    monkeypatch.setattr(formats, "_is_object", counted)
    for n in (100, 1000):
        checked = 0
        parts = [{"functionCall": {"name": "f", "args": {}}} for _ in range(n)]
        answers = [{"functionResponse": {"name": "f", "response": {}}} for _ in range(n // 2)]
        conversation = [{"role": "model", "parts": parts}, {"role": "user", "parts": answers}]
        fixed, changes = history.repair(conversation, history.RepairPolicy(dangling="drop-call"), format="gemini")
        assert [c.kind for c in changes] == ["dropped-call"] * (n - n // 2)
        assert len(fixed[0]["parts"]) == n // 2
        assert checked <= 10 * n, (n, checked)


# -- conform --against: a vector whose body no framing reads ----------------------------------------------


def test_conform_against_grades_a_body_no_framing_reads_instead_of_stopping_at_it() -> None:
    # The not-a-stream vector (a proxy's HTML error page) made the events handed to the external
    # reassembler raise FramingError: `toolcall-fsm conform --against CMD` stopped there, exit 1,
    # "event 1: input is not SSE, ...", for every command. A reader sees no event in it: the command
    # gets the header alone, and a reassembler that assembles no call passes.
    from fsm.harness import conformance
    from fsm.harness.vectors import VECTOR_DIR, load_vectors

    (vector,) = [v for v in load_vectors(VECTOR_DIR) if v.name == "not-a-stream-error-page"]
    assert conformance.wire_events(vector) == []
    outcome = conformance.run_external(f"{sys.executable} -c 'print(\"[]\")'", vector)
    assert outcome.passed, outcome.problems


# -- found after merging main: odd values where a set lookup needs a hashable one ---------------------------


def test_langchain_responses_blocks_whose_type_or_id_is_unhashable_raise_nothing() -> None:
    # ChatOpenAI's content blocks are looked up among the Responses item types, and its call
    # entries' ids among the custom tool calls' ids: a block type that is a dict, or an entry id
    # that is a list, raised TypeError (unhashable) out of feed(). Neither is anything LangChain
    # makes: the block is read as no item, and the entry reaches the chat decoder, which refuses
    # an id of no str kind as it does in a dict chunk.
    metadata = {"model_provider": "openai"}
    odd_block = lc_chunk(content=[{"type": {"a": 1}}, {"type": "text", "text": "hi"}], response_metadata=metadata)
    assert fsm.reassemble([odd_block]).text == "hi"
    custom = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_c", "name": "patch", "input": "x"}
    entry = {"index": 0, "id": ["call_c"], "name": "patch", "args": '{"__arg1": "x"}'}
    r = fsm.Reassembler()
    with pytest.raises(fsm.RemoteProtocolError):
        r.feed(lc_chunk(content=[custom], tool_call_chunks=[entry], response_metadata=metadata))
    assert "stream-failed" in r.close().codes()
