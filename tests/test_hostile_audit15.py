"""Hostile audit 15: input that got a bare Python error out of the public API, or work that grew
faster than the input.

Each test failed before its fix. LangChain chunks are the duck-typed object the adapter reads (a
``SimpleNamespace``), which can hold what langchain-core would refuse. Work is counted, not timed."""

from __future__ import annotations

import collections
import sys
import threading
from types import SimpleNamespace
from typing import Any

import attrs
import pytest

import fsm
from fsm import fieldcheck, messages
from fsm.errors import InvalidInput
from fsm.results import CallStatus, ToolCall
from fsm.serialize import result_to_json


def lc_chunk(content: Any = "", parts: Any = (), provider: str | None = None, **fields: Any) -> Any:
    metadata = {"model_provider": provider} if provider else {}
    chunk = {"type": "AIMessageChunk", "content": content, "tool_call_chunks": list(parts)}
    return SimpleNamespace(**(chunk | {"response_metadata": metadata} | fields))


# -- LangChain's Responses items (ChatOpenAI) --------------------------------------------------------


def test_an_item_count_too_long_for_int_places_the_item_after_the_others() -> None:
    # v1's `lc_ns_<count>` with more digits than int() converts raised ValueError out of feed()
    custom = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_c", "name": "patch", "input": "x"}
    block = {"type": "non_standard", "value": custom, "index": "lc_ns_" + "9" * 5000}
    result = fsm.reassemble([lc_chunk([block], provider="openai")])
    assert [(c.id, c.type, c.input) for c in result.calls] == [("call_c", "custom", "x")]


def test_a_reasoning_item_count_too_long_for_int_is_no_count() -> None:
    # v1's `lc_rs_<hex of "<count>_<part>">` with a count past int()'s digits: the stream failed
    # (LimitExceeded) where an item count of another block is just no count
    place = ("3" + "0" * 4999 + "_0").encode().hex()
    block = {"type": "reasoning", "reasoning": "Thinking.", "index": "lc_rs_" + place}
    result = fsm.reassemble([lc_chunk([block], provider="openai")])
    assert "stream-failed" not in result.codes()


# -- LangChain's Claude blocks: work linear in the blocks ------------------------------------------------

ADAPTER = tuple(
    f"fsm/wire/{name}" for name in ("sdk.py", "langchain_chunks.py", "langchain_places.py", "decoders/_wire.py")
)


def adapter_lines(chunks: list[Any]) -> int:
    """Lines of the LangChain adapter run while the chunks are fed: its work, counted."""
    count = 0

    def local(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        count += event == "line"
        return local

    def calls(frame: Any, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename.replace("\\", "/").endswith(ADAPTER) else None

    if sys.gettrace() is not None:  # a coverage or debugging run holds the trace hook
        pytest.skip("the work is counted with sys.settrace")
    r = fsm.Reassembler(limits=fsm.Limits(max_calls=10_000))
    sys.settrace(calls)
    try:
        for chunk in chunks:
            r.feed(chunk)
    finally:
        sys.settrace(None)
    r.close()
    return count


def falling_tool_blocks(n: int, provider: str | None) -> list[Any]:
    # tool_use blocks whose input no argument text follows, each at an index below the last: every
    # one stays held (no later index ends it), and each chunk looked at all of them
    return [
        lc_chunk(
            [{"type": "tool_use", "id": f"t{i}", "name": "f", "input": {}, "index": n - i}],
            [{"index": n - i, "id": f"t{i}", "name": "f", "args": ""}],
            provider,
        )
        for i in range(n)
    ]


def falling_server_blocks(n: int, one_chunk: bool) -> list[Any]:
    blocks = [
        {"type": "server_tool_use", "id": f"s{i}", "name": "web_search", "input": {}, "index": n - i} for i in range(n)
    ]
    if one_chunk:
        return [lc_chunk(blocks, provider="anthropic")]
    return [lc_chunk([block], provider="anthropic") for block in blocks]


@pytest.mark.parametrize(
    "make",
    [
        lambda n: falling_tool_blocks(n, None),
        lambda n: falling_tool_blocks(n, "anthropic"),
        lambda n: falling_server_blocks(n, one_chunk=False),
        lambda n: falling_server_blocks(n, one_chunk=True),
    ],
    ids=["tool-blocks", "tool-blocks-in-places", "server-blocks", "server-blocks-in-one-chunk"],
)
def test_claude_blocks_held_at_falling_indices_cost_the_same_per_block(make: Any) -> None:
    # Each held block was found to end by a pass over every block held, per chunk (tool_use inputs)
    # or per block (server blocks): quadratic where the indices fall.
    small, large = adapter_lines(make(100)), adapter_lines(make(400))
    assert large <= small * 4.5


# -- results built by hand -------------------------------------------------------------------------


def test_result_to_json_refuses_a_hand_made_result_whose_field_holds_itself() -> None:
    # asdict followed a list that holds itself, where a str belongs, to RecursionError; refused now
    # as fsm.messages refuses it, naming the field
    looped: list[Any] = []
    looped.append(looped)
    call = fsm.reassemble([sse_call()]).calls[0]
    result = fsm.Result("openai-chat", "tool_calls", (attrs.evolve(call, reply_id=looped),), (), text="hi")
    with pytest.raises(InvalidInput, match=r"result\.calls\[0\]\.reply_id must be a str or None, not list"):
        result_to_json(result)
    with pytest.raises(InvalidInput, match=r"result\.text must be a str, not list"):
        result_to_json(attrs.evolve(result, calls=(call,), text=looped))
    assert result_to_json(attrs.evolve(result, calls=(call,)))["calls"][0]["id"] == "call_1"


def sse_call() -> dict[str, Any]:
    entry = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"tool_calls": [entry]}, "finish_reason": "tool_calls"}],
    }


@pytest.mark.parametrize(
    ("block", "said"),
    [
        (
            {"type": "non_standard", "value": {"type": "frobnicate_call", "id": "fz_1", "call_id": "c1"}},
            "'frobnicate_call'",
        ),
        ({"type": "server_tool_call", "name": "frobnicate", "id": "fz_1", "args": {}}, "'frobnicate'"),
        ({"type": "server_tool_call", "name": ["web_search"], "id": "fz_1", "args": {}}, "['web_search']"),
    ],
)
def test_a_chatopenai_item_of_no_known_type_is_reported_as_on_the_wire(block: dict[str, Any], said: str) -> None:
    # an item langchain-core's v1 has no block for (kept in non_standard), or a hosted tool of no
    # known item, was dropped in silence where the bytes' item is unknown-item: it may be a call
    r = fsm.Reassembler()
    r.feed(lc_chunk([{"type": "text", "text": "hi"}, block], provider="openai"))
    result = r.close()
    [found] = [d for d in result.diagnostics if d.code == "unknown-item"]
    assert (found.event, said in found.message) == (1, True)
    assert (result.text, result.calls, result.server_tool_calls) == ("hi", (), ())


@pytest.mark.parametrize(
    "block",
    [
        {"type": "non_standard", "value": {"type": "compaction", "id": "cmp_1"}},  # calls nothing
        {"type": "server_tool_call", "name": "mcp_list_tools", "id": "mcpl_1", "args": {}},
        {"type": "non_standard", "value": {"type": "function_call", "call_id": "c1", "name": "f"}},  # the chunks' call
    ],
)
def test_a_chatopenai_item_that_calls_nothing_or_comes_as_chunks_is_not_reported(block: dict[str, Any]) -> None:
    result = fsm.reassemble(
        [lc_chunk([block], provider="openai", response_metadata={"model_provider": "openai", "status": "completed"})]
    )
    assert (result.codes(), result.calls, result.server_tool_calls) == ([], (), ())


# -- numbers no JSON text holds ---------------------------------------------------------------------

HUGE = 10**5000  # past the int-string conversion limit: json.loads refuses it, a caller's dict may hold it
TOO_LONG = "a number too long to write as text (more than 4300 digits)"


@pytest.mark.parametrize(
    "event",
    [
        {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": {}, "id": HUGE}}]}}]},
    ],
    ids=["gemini-id"],
)
def test_an_int_past_the_int_string_limit_in_a_fed_event_is_a_limit_not_a_value_error(event: Any) -> None:
    # each was a ValueError out of feed(): a decoder (or a diagnostic's message) wrote the int as text;
    # an id or an index is named (test_hostile_audit31), any other field is the event's; a choice's
    # index is choice-ignored now, as the same digits read from the wire are (test_hostile_audit31)
    r = fsm.Reassembler()
    said = "the event holds a number with more digits|(id|index) is a number too long to write as text"
    with pytest.raises(fsm.LimitExceeded, match=f"event 1: .*({said})"):
        r.feed(event)
    assert r.close().codes() == ["stream-failed"]


@pytest.mark.parametrize(
    ("event", "finish", "code"),
    [
        ({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": HUGE}]}, TOO_LONG,
         None),
        ({"type": "response.output_item.added", "output_index": HUGE, "item": {"type": "zz_call", "id": "x"}}, None,
         "unknown-item"),
        ({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": HUGE}}},
         "length", None),
        ({"candidates": [{"content": {"parts": []}, "finishReason": HUGE}]}, TOO_LONG, None),
        (lc_chunk(response_metadata={"status": "incomplete", "incomplete_details": {"reason": HUGE}}), "length", None),
        (lc_chunk([{"type": "zz_use", "index": HUGE}], provider="anthropic"), None, "unknown-event"),
    ],
    ids=["chat-finish", "responses-index", "responses-reason", "gemini-finish", "langchain-reason", "langchain-index"],
)  # fmt: skip
def test_an_int_past_the_int_string_limit_where_text_is_written_is_named_and_read_on(
    event: Any, finish: str | None, code: str | None
) -> None:
    # These failed the stream too (a LimitExceeded since audit 15, "the event holds a number with
    # more digits than Python writes as text"), where the same digits read from the wire were
    # written out and read on. Fed or read, the number is named now, and the stream reads on.
    result = fsm.reassemble([event])
    assert "stream-failed" not in result.codes() and result.finish_reason == finish
    said = [d.message for d in result.diagnostics if d.code == code] if code else [result.raw_finish_reason]
    assert any(TOO_LONG in (message or "") for message in said), said


# -- threads -------------------------------------------------------------------------------------------


def test_vouching_from_many_threads_at_once_raises_nothing() -> None:
    # Every Reassembler's close() vouches for its result; a prune of the record (a loop over the
    # dict) while another thread added to it raised RuntimeError (dictionary changed size during
    # iteration) out of close() or out of fsm.messages. A race: each round hit it about half the time.
    class Made:
        pass

    errors: list[BaseException] = []

    def vouch_many() -> None:
        alive: collections.deque[Made] = collections.deque(maxlen=3000)  # some live on, so the record grows
        try:
            for _ in range(20_000):
                made = Made()
                fieldcheck.vouch(made)
                alive.append(made)
        except Exception as exc:  # what the race raised is the finding
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        for _ in range(30):
            threads = [threading.Thread(target=vouch_many) for _ in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert errors == []
    finally:
        sys.setswitchinterval(interval)


@pytest.mark.parametrize("format", messages.FORMATS)
def test_tool_result_refuses_a_hand_made_call_whose_id_is_no_str(format: str) -> None:
    # the id went out as it was (an int in the tool message), where the assistant message's check
    # refused the same call
    call = ToolCall(0, 5, None, "f", {}, "{}", CallStatus.COMPLETE)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match=r"call\.id must be a str, not int"):
        messages.tool_result(call, "ok", format)  # type: ignore[arg-type]


def test_an_anthropic_delta_of_no_known_kind_is_reported_and_a_citation_is_not() -> None:
    # a delta in a text or thinking block of a kind no reading knows was dropped without a word
    events = [
        {"type": "message_start", "message": {"content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": {"url": "u"}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "future_delta", "x": 1}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
        {"type": "message_stop"},
    ]
    result = fsm.reassemble(events, "anthropic")
    assert result.text == "Hi"
    assert [(d.code, d.event, d.message) for d in result.diagnostics] == [
        ("unknown-event", 5, "a 'future_delta' delta in block 0, of no kind read")
    ]
