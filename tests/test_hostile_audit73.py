"""Hostile audit 73: today's changes attacked differentially (the content limit, one-item-one-id,
audit 71's refusals, CallEnd.unmatched). Each test failed before its fix."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fsm import Limits, Reassembler
from fsm.content import BLOCK_CHARS
from fsm.errors import LimitExceeded
from tests.test_history_item_ids import ASK, NEXT, SAID, THOUGHT


def converse_result_stream(pieces: int, piece: Any) -> list[dict[str, Any]]:
    """A Converse turn whose server tool's result streams in ``pieces`` toolResult deltas."""
    start = {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolResult": {"toolUseId": "t1"}}}}
    delta = {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolResult": [piece]}}}
    return [
        {"messageStart": {"role": "assistant"}},
        start,
        *(json.loads(json.dumps(delta)) for _ in range(pieces)),
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "end_turn"}},
    ]


def fed(events: list[Any], limits: Limits, provider: str = "bedrock") -> tuple[Reassembler, LimitExceeded | None]:
    """A reassembler fed ``events`` (dicts or SDK chunks) until a limit stops it, and that limit."""
    r = Reassembler(provider, limits=limits)
    try:
        for event in events:
            r.feed(event)
    except LimitExceeded as raised:
        return r, raised
    return r, None


@pytest.mark.parametrize("piece", [{"text": "x" * 1000}, {"json": {"found": "x" * 1000}}], ids=["text", "json"])
def test_a_converse_tool_result_counts_as_its_deltas_come(piece: Any) -> None:
    """Bedrock Converse's toolResult deltas were held by the decoder and counted only when the
    block stopped: a result streamed without end grew past Limits.max_content_chars (2 MB held
    under a limit of 20,000), and the one that ended was refused at its stop, not at the delta
    that passed the limit."""
    r, raised = fed(converse_result_stream(2000, piece), Limits(max_content_chars=20_000))
    assert raised is not None and raised.event is not None and raised.event <= 23  # a delta's, not the stop's
    assert r._content.held <= 20_000
    assert r.close().server_tool_results == ()  # its block never came whole: not kept, and said so


def test_a_converse_tool_result_under_the_limit_counts_once() -> None:
    """Counted as its pieces came, the whole block counts only what they did not: one limit reads
    the stream alike, and one below it stops at the last delta's event."""
    events = converse_result_stream(5, {"text": "abc"})
    r, raised = fed(events, Limits())
    assert raised is None
    (result,) = r.close().server_tool_results
    assert result.block == {"toolUseId": "t1", "content": [{"text": "abc" * 5}]}
    total = r._content.held
    assert total == 40  # the block's strings and values, counted once (not again for its pieces)
    r, raised = fed(events, Limits(max_content_chars=total))
    assert raised is None and len(r.close().server_tool_results) == 1
    r, raised = fed(events, Limits(max_content_chars=total - 1))
    assert raised is not None and raised.event == 8  # the stop: its pieces held 15 of the 40


@pytest.mark.parametrize(
    "h",
    [
        [ASK, THOUGHT, SAID, NEXT, THOUGHT, SAID],  # a turn with no call, appended twice
        [ASK, SAID, NEXT, SAID],
        [ASK, {"type": "item_reference", "id": "msg_1"}, NEXT, {"type": "item_reference", "id": "msg_1"}],
    ],
    ids=["reasoning-and-message", "message", "item-reference"],
)
def test_auto_reads_a_responses_history_without_calls_as_responses(h: list[dict[str, Any]]) -> None:
    """Under format="auto" a Responses history holding no call or output item told no format, so
    check found nothing and repair changed nothing, where naming "responses" finds the repeated
    item ids the API refuses (a plain chat turn appended twice)."""
    from fsm import history

    named = history.check(h, format="responses")
    assert named.rejected and history.check(h).findings == named.findings
    assert history.repair(h) == history.repair(h, format="responses")
    assert history.detect_format(h) == "responses"


def test_anthropic_messages_as_the_sdk_dumps_them_still_read_as_anthropic() -> None:
    """A Claude message dumped whole (its type "message", its text blocks "text") tells no
    Responses message: only Responses content parts do."""
    from fsm import history

    claude = {"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "hi"}]}
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]}
    assert history.detect_format([ASK, claude, NEXT, claude]) == "openai"  # tells none: the fallback
    assert history.detect_format([ASK, claude, call]) == "anthropic"


def test_a_later_copy_equal_to_a_kept_differing_copy_is_dropped_so_repair_is_idempotent() -> None:
    """A reasoning item sent three times, the second and third alike but unlike the first: the
    third was compared with the first only and kept (kept-duplicate-item); once the pairing
    dropped the first (its call went), a second repair dropped the third: repair(repair(h))
    changed what repair(h) gave."""
    from fsm import history

    first = {**THOUGHT, "encrypted_content": "E0"}
    other = {**THOUGHT, "encrypted_content": "E9"}
    call = {"type": "computer_call", "id": "cu_1", "call_id": "call_1", "action": {"type": "screenshot"}}
    h = [ASK, first, call, other, NEXT, other]
    fixed, changes = history.repair(h, format="responses")
    again, more = history.repair(fixed, format="responses")
    assert again == fixed and [c.kind for c in more if not c.kind.startswith("kept-")] == []
    assert ("dropped-duplicate-item", 6) in [(c.kind, c.message) for c in changes]
    assert "the same item as message 4" in next(c.detail for c in changes if c.message == 6)


def langchain_summary_stream(pieces: int, text: str, ended: bool) -> list[Any]:
    """ChatOpenAI(use_responses_api=True)'s chunks (responses/v1) of one reasoning item whose
    summary streams in ``pieces`` parts; ``ended``: a last chunk ends the turn."""
    chunk = pytest.importorskip("langchain_core.messages").AIMessageChunk
    meta = {"model_provider": "openai"}
    start = [{"type": "reasoning", "index": 0, "id": "rs_1", "summary": []}]
    piece = [{"type": "reasoning", "index": 0, "summary": [{"index": 0, "type": "summary_text", "text": text}]}]
    chunks = [chunk(content=start, response_metadata=meta)]
    chunks += [chunk(content=json.loads(json.dumps(piece)), response_metadata=meta) for _ in range(pieces)]
    if ended:
        chunks.append(chunk(content=[], response_metadata={**meta, "finish_reason": "stop"}, chunk_position="last"))
    return chunks


def test_a_langchain_reasoning_summary_counts_as_its_parts_come() -> None:
    """LangChain's pieces of a Responses reasoning item were held until the item ended and counted
    only then: a summary streamed without end grew past Limits.max_content_chars (2 MB held under a
    limit of 20,000, counted 0), and one that ended was refused at its end."""
    r, raised = fed(langchain_summary_stream(2000, "x" * 1000, ended=False), Limits(max_content_chars=20_000), "auto")
    assert raised is not None and raised.event is not None and raised.event <= 22  # a piece's, not the end's
    assert r._content.held <= 20_000


def test_a_langchain_reasoning_summary_under_the_limit_counts_once() -> None:
    chunks = langchain_summary_stream(5, "abc", ended=True)
    r, raised = fed(chunks, Limits(), "auto")
    assert raised is None
    (block,) = r.close().reasoning
    assert block.summary == ("abc" * 5,) and block.item_id == "rs_1"
    total = r._content.held
    assert total < 2 * 15 + BLOCK_CHARS  # the summary once, not again for its pieces (and the block itself)
    r, raised = fed(chunks, Limits(max_content_chars=total), "auto")
    assert raised is None and len(r.close().reasoning) == 1


CALL_A = {"type": "function_call", "id": "fc_a", "call_id": "call_a", "name": "f", "arguments": "{}"}
CALL_B = {"type": "function_call", "id": "fc_b", "call_id": "call_b", "name": "g", "arguments": "{}"}
OUT_A = {"type": "function_call_output", "call_id": "call_a", "output": "A's result"}
OUT_B = {"type": "function_call_output", "call_id": "call_b", "output": "B's result"}
SEARCH = {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "q"}}
LISTED = {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "s", "tools": []}
ASKED = {"type": "mcp_approval_request", "id": "mcpr_1", "server_label": "s", "name": "m", "arguments": "{}"}
APPROVED = {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True}


@pytest.mark.parametrize(
    "h",
    [
        [ASK, THOUGHT, CALL_A, SEARCH, CALL_B, OUT_A, OUT_B],  # response.output appended as it came
        [ASK, CALL_A, LISTED, CALL_B, OUT_A, OUT_B],
        [ASK, CALL_A, ASKED, OUT_A, APPROVED],
    ],
    ids=["web-search-between-calls", "mcp-list-tools-between-calls", "approval-after-output"],
)
def test_a_hosted_tool_item_among_a_turns_calls_keeps_the_turn_open(h: list[dict[str, Any]]) -> None:
    """A Responses turn appended as the API gave it holds the provider's own tool items (a web
    search, an MCP listing or approval request) among the client's calls, and the user's approval
    may come before the outputs. Such an item ended the turn: the calls before it were dangling,
    their outputs orphans, and repair dropped the real results for placeholders."""
    from fsm import history

    assert not history.check(h, format="responses").findings
    assert history.repair(h, format="responses") == (h, [])


def test_an_approval_answered_before_a_calls_output_holds_the_turn_as_a_user_message_does() -> None:
    """The user's approval between a call and its output is the user's word, as a user message
    there is: the output still answers the call, and repair moves it right after the calls (it was
    an orphan, dropped for a placeholder)."""
    from fsm import history

    h = [ASK, CALL_A, ASKED, APPROVED, OUT_A]
    assert [f.kind.value for f in history.check(h, format="responses").findings] == ["result-after-text"]
    fixed, changes = history.repair(h, format="responses")
    assert fixed == [ASK, CALL_A, OUT_A, ASKED, APPROVED] and [c.kind for c in changes] == ["moved-result"]
    assert not history.check(fixed, format="responses").findings


def test_a_responses_item_without_calls_tells_nothing_beside_another_formats_calls() -> None:
    """The Responses items that hold no call tell Responses only where no message tells a format by
    its calls: beside OpenAI chat tool_calls (a mixed history) the history is read as chat's, so its
    dangling call is still found (read as Responses', the chat call was not seen)."""
    from fsm import history

    said = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    chat_call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    h = [said, THOUGHT, {"role": "assistant", "content": None, "tool_calls": [chat_call]}]
    assert history.detect_format(h) == "openai"
    assert "dangling" in [f.kind.value for f in history.check(h).findings]


@pytest.mark.parametrize("fmt", ["auto", "responses"])
def test_an_item_whose_type_is_no_string_is_read_as_before(fmt: str) -> None:
    """The new Responses tells and the hosted items among calls look an item's type up in a set: a
    list there (unhashable) raised TypeError out of check, where every other reading takes it as
    an item of no known type."""
    from fsm import history

    odd = {"type": ["web_search_call"], "id": "x"}
    for h in ([odd], [ASK, CALL_A, odd, OUT_A]):
        history.check(h, format=fmt)
        history.repair(h, format=fmt)
