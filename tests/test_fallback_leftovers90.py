"""Task 90: Claude's server-side fallback, the leftovers of tasks 86 and 88.

Sources (read, not copied): anthropic 2.17 ``types/beta/beta_fallback_block.py`` and
``beta_fallback_block_param.py`` (the block streams as a start and a stop; the turn goes back with
it in place, and some blocks before the final one are left out) and Anthropic's refusals-and-fallback
guide as tests/test_claude_fallback86.py cites it ("Streaming": a decline mid-output closes the open
block, and the ``fallback`` block marks the boundary).

1. A decline that cuts a ``tool_use`` mid-JSON: the block stops with its JSON open and the fallback
   block comes next. Lax mode read it as a declined call, but said ``unterminated-arguments``, a
   violation, and strict mode raised it at the stop, before the fallback block that tells it is the
   decline's cut arrived. Now the stop waits for the next block (policy decline-cut-waits): a
   fallback block makes it ``cut-by-decline`` (a warning, in both modes), anything else raises the
   ``unterminated-arguments`` it was, naming the stop's event.
2. A result built by hand (from a response's blocks, say) that keeps a call made before its last
   ``fallback`` block among its calls: fsm.messages sent that call back, and a loop would run and
   answer it, which the guide forbids (no ``tool_result`` for a ``tool_use`` left out). Decided:
   the builders refuse such a result (InvalidInput naming the call, policy fallback-declined-calls),
   as they refuse a result whose fields are of the wrong type: left out of the message alone, the
   call's answer would be refused by the API instead. A result read back through cattrs keeps its
   declined calls apart and goes back as the stream's did.
3. ``connector_text`` blocks were unread: each start and delta an ``unknown-event``, and the
   ``signature_delta`` read as a thinking block's, so the next turn went back with a thinking block
   of no text the stream never gave. The anthropic 2.17 beta types hold no such block yet (the
   SDK's event types refuse one); they name it only as a request block the API checks as it checks
   thinking (``input_transformations``: ``thinking_dropped``), and the guide leaves it out before
   the final fallback block as it does thinking. Its shape here is the one the block is streamed
   in (``connector_text`` text, a ``connector_text_delta`` adding to it, a ``signature_delta``):
   kept whole at its stop, in its place, and sent back there.
4. fsm.history knew nothing of the guide's rules: a declined call sent back unanswered was
   ``dangling`` and repair answered it with a placeholder (the guide: no ``tool_result`` for a
   ``tool_use`` left out), one answered and the declined model's thinking passed. Now ``check``
   reports each block to leave out (``declined-content``) and reads the history without it;
   ``repair`` drops each (``dropped-declined``), and a result sent for a declined call as an orphan.
"""

from __future__ import annotations

import re
from typing import Any

import attrs
import pytest

import fsm
from fsm import messages
from fsm.errors import InvalidInput
from tests.test_claude_fallback86 import FALLBACK, SENT_BACK, _hop, _said, _stream, _use, _whole, mid_output
from tests.test_wire_gaps79 import _named

anthropic = pytest.importorskip("anthropic")

_CUT = _use("tool_use", "toolu_cut", "run", '{"cmd": "l')
_STOP = 7  # the cut block's content_block_stop: message_start, text start/delta/stop, tool start/delta/stop


def _declined_mid_call() -> list[dict[str, Any]]:
    return _stream([_said("Sure"), _CUT, _hop(), _said("Here."), _use("tool_use", "toolu_ok", "run", '{"a": 1}')])


def _strict(events: list[dict[str, Any]], *, size: int | None = None) -> tuple[fsm.Result, Exception | None]:
    """Read ``events`` strictly, fed one by one (or as SSE bytes in reads of ``size``): the result
    and the error raised, if any, with the number of the event fed when it was."""
    reader = fsm.Reassembler("anthropic", strict=True)
    error: Exception | None = None
    try:
        if size is None:
            for event in events:
                reader.feed(event)
        else:
            wire = _named(events)
            for at in range(0, len(wire), size):
                reader.feed_bytes(wire[at : at + size])
        return reader.close(), None
    except fsm.RemoteProtocolError as exc:
        error = exc
    return reader.close(), error


@pytest.mark.parametrize("size", [None, 1, 1 << 20])
def test_a_decline_that_cuts_a_call_mid_json_raises_nothing_and_says_it_was_cut(size: int | None) -> None:
    """Before: strict mode raised unterminated-arguments at event 7; lax said it, a violation."""
    result, error = _strict(_declined_mid_call(), size=size)
    assert error is None
    lax = fsm.reassemble(_declined_mid_call(), "anthropic")
    for read in (result, lax):
        assert read.codes() == ["cut-by-decline", "model-fallback", "declined-call"]
        cut = read.diagnostics[0]
        assert cut.event == _STOP and cut.severity is fsm.Severity.WARNING and not cut.violation
        assert cut.message == (
            "call toolu_cut (run): the JSON never closed, cut when its model declined:"
            " the fallback block at content block 2 came next"
        )
        assert [(c.id, c.status, c.arguments_json) for c in read.declined_calls] == [
            ("toolu_cut", fsm.CallStatus.INVALID, '{"cmd": "l')
        ]
        assert [c.id for c in read.calls] == ["toolu_ok"]
        assert read.server_tool_results[-1].block == FALLBACK


def test_a_ping_between_the_stop_and_the_fallback_block_tells_nothing() -> None:
    events = _declined_mid_call()
    events.insert(_STOP, {"type": "ping"})
    result, error = _strict(events)
    assert error is None and result.codes()[0] == "cut-by-decline"


@pytest.mark.parametrize(
    ("after", "fed_when_raised"),
    [
        ([_said("oops")], _STOP + 1),  # another block starts: the model went on after its own broken call
        ([], _STOP + 1),  # the message ends (message_delta)
    ],
)
def test_a_cut_call_no_fallback_block_follows_raises_naming_the_stop(after: list[Any], fed_when_raised: int) -> None:
    events = _stream([_said("Sure"), _CUT, *after])
    reader = fsm.Reassembler("anthropic", strict=True)
    fed = 0
    with pytest.raises(fsm.RemoteProtocolError) as raised:
        for fed, event in enumerate(events, start=1):  # noqa: B007 (read after the loop)
            reader.feed(event)
    assert fed == fed_when_raised and raised.value.event == _STOP
    assert str(raised.value).startswith("event 7: unterminated-arguments: call toolu_cut (run)")
    assert reader.close().codes() == ["unterminated-arguments", "stream-failed"]
    # lax mode says the same, a violation
    lax = fsm.reassemble(events, "anthropic")
    assert lax.codes()[0] == "unterminated-arguments" and lax.diagnostics[0].violation


def test_a_stream_that_ends_at_the_cut_stop_raises_it_at_close() -> None:
    events = _stream([_said("Sure"), _CUT])[:_STOP]
    result, error = _strict(events)
    assert isinstance(error, fsm.RemoteProtocolError) and error.event == _STOP
    assert result.codes() == ["unterminated-arguments", "stream-failed"]


def test_an_error_later_in_the_stream_leaves_the_cut_the_first_one() -> None:
    """A delta tells nothing, so the cut still waits; the next violation (input for a block no longer
    open, unopened-call) does not go before it."""
    events = _stream([_said("Sure"), _CUT])[:_STOP]
    events.append(
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "x"}}
    )
    result, error = _strict(events)
    assert isinstance(error, fsm.RemoteProtocolError) and error.event == _STOP
    assert "unterminated-arguments" in str(error)
    assert result.codes() == ["unterminated-arguments", "unopened-call", "stream-failed"]


def test_two_blocks_cut_before_the_next_block_wait_together_the_first_error_standing() -> None:
    """Blocks open side by side (a proxy's interleaving), both stopped cut: a fallback block next
    makes both the decline's cuts; anything else raises the first (hostile audit 40's streams)."""
    second = _use("tool_use", "toolu_cut2", "run", '{"cmd": "p')
    events = _stream([_said("Sure"), _CUT, second, _hop()])
    # block 2 opens before block 1 stops: block 1's stop (event 7) goes after block 2's delta
    stop_1 = events.pop(_STOP - 1)
    events.insert(_STOP + 1, stop_1)
    assert [e["type"] for e in events[_STOP - 1 : _STOP + 4]] == [
        "content_block_start",
        "content_block_delta",
        "content_block_stop",  # block 1's, event 9
        "content_block_stop",  # block 2's, event 10
        "content_block_start",  # the fallback block
    ]
    result, error = _strict(events)
    assert error is None and result.codes()[:2] == ["cut-by-decline", "cut-by-decline"]
    events = events[: _STOP + 3]  # both stops, then the message ends: no fallback block
    result, error = _strict([*events, {"type": "message_delta", "delta": {"stop_reason": "tool_use"}}])
    assert isinstance(error, fsm.RemoteProtocolError) and error.event == _STOP + 2
    assert "toolu_cut (run)" in str(error)  # the stop read first


def test_a_fork_while_the_cut_waits_goes_on_alone() -> None:
    import copy

    reader = fsm.Reassembler("anthropic", strict=True)
    events = _declined_mid_call()
    for event in events[:_STOP]:
        reader.feed(event)
    fork = copy.deepcopy(reader)
    for event in events[_STOP:]:
        reader.feed(event)
    assert reader.close().codes()[0] == "cut-by-decline"
    with pytest.raises(fsm.RemoteProtocolError):
        fork.feed({"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}})


def test_bedrock_invoke_model_waits_as_the_anthropic_wire_does() -> None:
    from tests.test_bedrock_invoke import invoke_stream

    result = fsm.reassemble(invoke_stream(_declined_mid_call()), "bedrock", strict=True)
    assert result.codes() == ["cut-by-decline", "model-fallback", "declined-call"]


# -- 2. a result built by hand that keeps a declined call among its calls ---------------------------


def test_a_hand_built_result_keeping_a_declined_call_among_its_calls_is_refused_naming_it() -> None:
    """Before: the declined call went back as a tool_use (and ids_sent listed it)."""
    read = _whole(mid_output())
    hand = attrs.evolve(read, calls=(*read.declined_calls, *read.calls), declined_calls=())
    named = "call 'toolu_declined' ('run') at content block 5 stands before the fallback block at 6"
    for build in (
        lambda: messages.assistant_message(hand, "anthropic"),
        lambda: messages.assistant_message(hand, "anthropic", incomplete="include"),
        lambda: messages.ids_sent(hand),
        lambda: messages.omitted(hand),
    ):
        with pytest.raises(InvalidInput, match=re.escape(named)) as refused:
            build()
        assert "it belongs in declined_calls (policy fallback-declined-calls)" in str(refused.value)
    # as the stream gave it, with the call apart, the same result goes back as the guide says
    apart = attrs.evolve(hand, calls=read.calls, declined_calls=read.declined_calls)
    assert messages.assistant_message(apart, "anthropic")["content"] == SENT_BACK


def test_a_result_read_back_through_cattrs_goes_back_as_the_streams_did() -> None:
    from fsm.serialize import converter, result_to_json

    read = _whole(mid_output())
    back = converter().structure(result_to_json(read), fsm.Result)
    assert back.declined_calls == read.declined_calls
    assert messages.assistant_message(back, "anthropic")["content"] == SENT_BACK
    assert "toolu_declined" not in messages.ids_sent(back)


def test_calls_without_a_place_or_after_the_last_block_are_not_refused() -> None:
    """Only a call with a place before the last block is a declined model's: one without a place
    (a result built by hand from another provider's calls) stands nowhere."""
    read = _whole(mid_output())
    placeless = attrs.evolve(read.declined_calls[0], output_index=None)
    hand = attrs.evolve(read, calls=(placeless, *read.calls), declined_calls=())
    sent = messages.assistant_message(hand, "anthropic")["content"]
    assert [b["id"] for b in sent if b["type"] == "tool_use"] == ["toolu_declined", "toolu_ok"]


# -- 3. connector_text blocks ---------------------------------------------------------------------

_CONNECTOR = {"type": "connector_text", "connector_text": ""}


def _connector(*pieces: str, signature: str | None = "sig") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    deltas: list[dict[str, Any]] = [{"type": "connector_text_delta", "connector_text": piece} for piece in pieces]
    if signature is not None:
        deltas.append({"type": "signature_delta", "signature": signature})
    return dict(_CONNECTOR), deltas


def _unchecked(blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]], stop: str = "end_turn") -> list[Any]:
    """A Messages stream of ``blocks``, not checked against the SDK's event types: they hold no
    connector_text block."""
    start = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant"}}
    start["message"] |= {"model": "claude-opus-4-7", "content": [], "usage": {"input_tokens": 1, "output_tokens": 1}}
    events: list[dict[str, Any]] = [start]
    for at, (opening, deltas) in enumerate(blocks):
        events.append({"type": "content_block_start", "index": at, "content_block": opening})
        events += [{"type": "content_block_delta", "index": at, "delta": delta} for delta in deltas]
        events.append({"type": "content_block_stop", "index": at})
    events.append({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 9}})
    return [*events, {"type": "message_stop"}]


def test_a_connector_text_block_is_kept_whole_in_its_place_and_goes_back_there() -> None:
    """Before: three unknown-events, and the next turn held a thinking block of no text with the
    connector's signature, where the connector's text was."""
    from tests.test_wire_gaps79 import _read

    events = _unchecked([_connector("From the drive: ", "a.txt"), _said("Here.")])
    results = _read("anthropic", events)
    assert all(r.server_tool_results == results[0].server_tool_results for r in results)
    result = results[0]
    assert result.diagnostics == () and result.reasoning == ()
    kept = {"type": "connector_text", "connector_text": "From the drive: a.txt", "signature": "sig"}
    assert [(r.block, r.output_index) for r in result.server_tool_results] == [(kept, 0)]
    assert messages.assistant_message(result, "anthropic")["content"] == [kept, {"type": "text", "text": "Here."}]
    # strict mode reads it too
    assert fsm.reassemble(events, "anthropic", strict=True).server_tool_results == result.server_tool_results


def test_a_connector_text_block_before_the_last_fallback_block_does_not_go_back() -> None:
    """The guide's table: connector_text before the final fallback block is left out, as thinking is."""
    hop = ({"type": "fallback", **{k: v for k, v in FALLBACK.items() if k != "type"}}, [])
    events = _unchecked([_connector("declined "), hop, _connector("served"), _said("Done.")])
    result = fsm.reassemble(events, "anthropic")
    assert result.codes() == ["model-fallback"]
    content = messages.assistant_message(result, "anthropic")["content"]
    served = {"type": "connector_text", "connector_text": "served", "signature": "sig"}
    assert content == [FALLBACK, served, {"type": "text", "text": "Done."}]


def test_a_connector_text_block_without_a_signature_goes_back_without_one() -> None:
    result = fsm.reassemble(_unchecked([_connector("plain", signature=None)]), "anthropic")
    assert messages.assistant_message(result, "anthropic")["content"] == [
        {"type": "connector_text", "connector_text": "plain"}
    ]


def test_a_connector_text_block_that_never_stopped_is_said_and_not_kept() -> None:
    events = _unchecked([_connector("cut", signature=None)], stop="max_tokens")
    events = [e for e in events if e["type"] != "content_block_stop"]
    result = fsm.reassemble(events, "anthropic")
    assert result.codes() == ["part-not-reassembled"] and result.server_tool_results == ()
    assert result.diagnostics[0].message == "the connector_text block at index 0 never stopped; it is not kept"


def test_a_connector_texts_pieces_count_against_the_content_limit_as_they_come() -> None:
    events = _unchecked([_connector("x" * 600, "y" * 600)])
    with pytest.raises(fsm.LimitExceeded) as passed:
        fsm.reassemble(events, "anthropic", limits=fsm.Limits(max_content_chars=1000))
    assert passed.value.event == 4  # the second piece, before the block stops


def test_a_hand_made_connector_text_block_the_api_refuses_stays_out() -> None:
    read = fsm.reassemble(_unchecked([_connector("ok"), _said("Hi.")]), "anthropic")
    odd = attrs.evolve(read.server_tool_results[0], block={"type": "connector_text", "connector_text": 5})
    hand = attrs.evolve(read, server_tool_results=(odd,))
    assert messages.assistant_message(hand, "anthropic")["content"] == [{"type": "text", "text": "Hi."}]


# -- 4. fsm.history and the guide's rules ---------------------------------------------------------


def _sent_whole() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The loop of test_claude_fallback86 as fsm.messages builds it, and the same loop with the
    declined model's thinking and call sent back in their places, as a naive loop would."""
    import copy

    result = _whole(mid_output())
    ask = [{"role": "user", "content": "List the files."}]
    answers = [messages.tool_result(call, "a.txt", "anthropic") for call in result.complete_calls]
    history = [*ask, messages.assistant_message(result, "anthropic"), *messages.tool_results(answers, "anthropic")]
    history.append({"role": "assistant", "content": [{"type": "text", "text": "One file."}]})
    whole = copy.deepcopy(history)
    whole[1]["content"].insert(3, {"type": "tool_use", "id": "toolu_declined", "name": "run", "input": {"cmd": "ls"}})
    whole[1]["content"].insert(0, {"type": "thinking", "thinking": "hmm", "signature": "A"})
    return history, whole


def test_check_reports_what_the_guide_leaves_out_and_repair_drops_it() -> None:
    """Before: one finding, the declined call dangling, and repair answered it with a placeholder."""
    from fsm.history import Kind, check, repair

    history, whole = _sent_whole()
    found = check(whole).findings
    assert [(f.kind, f.id, f.message, f.name) for f in found] == [
        (Kind.DECLINED_CONTENT, "", 2, None),
        (Kind.DECLINED_CONTENT, "toolu_declined", 2, "run"),
    ]
    assert found[1].detail == (
        "a client call 'toolu_declined' before the message's last fallback block:"
        " a model that declined gave it, so it does not go back"
    )
    repaired, changes = repair(whole)
    assert repaired == history
    assert [(c.kind, c.message, c.id) for c in changes] == [
        ("dropped-declined", 2, None),
        ("dropped-declined", 2, "toolu_declined"),
    ]
    assert check(repaired).findings == () and repair(repaired) == (repaired, [])


def test_a_result_sent_for_a_declined_call_is_an_orphan_and_goes_with_it() -> None:
    from fsm.history import Kind, anything_dangling, check, repair

    history, whole = _sent_whole()
    whole[2]["content"].append({"type": "tool_result", "tool_use_id": "toolu_declined", "content": "a.txt"})
    kinds = [(f.kind, f.id) for f in check(whole).findings]
    assert kinds[-1] == (Kind.ORPHAN, "toolu_declined") and (Kind.DANGLING, "toolu_declined") not in kinds
    assert anything_dangling(whole)  # the orphan result
    repaired, changes = repair(whole)
    assert repaired == history
    assert [c.kind for c in changes] == ["dropped-declined", "dropped-declined", "dropped-orphan"]


def test_a_server_call_the_declined_model_left_unanswered_is_left_out_an_answered_one_kept() -> None:
    from fsm.history import Kind, check

    history, _ = _sent_whole()
    content = history[1]["content"]
    unanswered = {"type": "server_tool_use", "id": "srvtoolu_2", "name": "web_search", "input": {"query": "y"}}
    content.insert(3, unanswered)
    assert [(f.kind, f.id) for f in check(history).findings] == [(Kind.DECLINED_CONTENT, "srvtoolu_2")]
    assert not any(f.id == "srvtoolu_1" for f in check(history).findings)


def test_a_message_without_a_fallback_block_is_read_as_before() -> None:
    from fsm.history import check

    plain = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}]},
    ]
    assert check(plain).findings == ()
