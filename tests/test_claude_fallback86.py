"""Task 86: Claude's server-side fallback, its ``fallback`` content blocks read, kept and sent back.

Sources (read, not copied):

- anthropic 2.17 ``types/beta/beta_fallback_block.py`` (``BetaFallbackBlock``: "Marks the point in
  ``content`` where one model's output gives way to the next", one a hop where a model ran and
  declined, streamed as a start and a stop with no delta; whether a fallback model served is told by
  a ``fallback_message`` entry in ``usage.iterations``, not by the block) and
  ``beta_fallback_block_param.py`` (keep it in its place; some blocks before the turn's final
  ``fallback`` block are left out, and no ``tool_result`` is sent for a ``tool_use`` left out).
- Anthropic's "Refusals and fallback" guide, its "Continuing the conversation" table: the block kept
  where it appeared, text kept, everything after the final block kept, ``thinking``,
  ``redacted_thinking`` and ``connector_text`` before it dropped, a client ``tool_use`` before it
  dropped, a ``server_tool_use`` before it kept with its result and dropped without one; its
  "Streaming" section (mid-output: the open block closes, the block marks the boundary, only the
  partial's text goes on to the fallback model; ``message_start`` names the requested model, so the
  serving one is the block's ``to.model`` and the ``fallback_message`` iteration); "What the response
  contains" (``usage.iterations``: a declined hop a ``message`` entry, the serving one
  ``fallback_message``); "Sticky routing" (a turn served so has no block, only the iteration); the
  note that server-side fallback is not available on Amazon Bedrock (the SDK middleware is, and
  splices the same block shape).
- anthropic ``lib/middleware/_fallbacks.py`` (the client-side splice: the same block at each model
  boundary) and ``lib/streaming/_beta_messages.py`` (the beta stream helper keeps the block and takes
  the snapshot's ``model`` from its ``to``).

Policy fallback-declined-calls: the client calls before the final block are the declined model's,
so they leave ``Result.calls`` for ``Result.declined_calls`` (``declined-call``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import TypeAdapter

import fsm
from fsm import messages
from fsm.history import check, repair
from tests.test_wire_gaps79 import _named, _read

anthropic = pytest.importorskip("anthropic")
from anthropic.types.beta import BetaMessageParam, BetaRawMessageStreamEvent  # noqa: E402

_OPUS, _SONNET = "claude-opus-4-7", "claude-sonnet-4-6"
FALLBACK = {"type": "fallback", "from": {"model": _OPUS}, "to": {"model": _SONNET}}
FALLBACK |= {"trigger": {"type": "refusal", "category": "cyber"}}
ITERATIONS = [
    {"type": "message", "model": _OPUS, "input_tokens": 10, "output_tokens": 12},
    {"type": "fallback_message", "model": _SONNET, "input_tokens": 12, "output_tokens": 18},
]
for _entry in ITERATIONS:
    _entry |= {"cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}


def _block(kind: str, *deltas: dict[str, Any], **fields: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    opening = {"type": kind, **fields}
    if kind == "thinking":
        opening |= {"thinking": "", "signature": ""}
    if kind == "text":
        opening["text"] = ""
    return opening, list(deltas)


def _said(text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return _block("text", {"type": "text_delta", "text": text})


def _thought(text: str, signature: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    thinking = {"type": "thinking_delta", "thinking": text}
    return _block("thinking", thinking, {"type": "signature_delta", "signature": signature})


def _hop(block: dict[str, Any] = FALLBACK) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return _block("fallback", **{key: value for key, value in block.items() if key != "type"})


def _use(kind: str, call_id: str, name: str, arguments: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return _block(kind, {"type": "input_json_delta", "partial_json": arguments}, id=call_id, name=name, input={})


def _stream(blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]], *, stop: str = "tool_use") -> list[Any]:
    """A beta Messages stream of ``blocks``, each event checked against the SDK's beta event type."""
    start = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant"}}
    start["message"] |= {"model": _OPUS, "content": [], "stop_reason": None, "stop_sequence": None}
    start["message"] |= {"usage": {"input_tokens": 10, "output_tokens": 1}}
    events: list[dict[str, Any]] = [start]
    for at, (opening, deltas) in enumerate(blocks):
        events.append({"type": "content_block_start", "index": at, "content_block": opening})
        events += [{"type": "content_block_delta", "index": at, "delta": delta} for delta in deltas]
        events.append({"type": "content_block_stop", "index": at})
    delta = {"stop_reason": stop, "stop_sequence": None, "stop_details": None}
    events.append({"type": "message_delta", "delta": delta, "usage": {"output_tokens": 30, "iterations": ITERATIONS}})
    events.append({"type": "message_stop"})
    adapter = TypeAdapter(BetaRawMessageStreamEvent)
    for event in events:
        adapter.validate_python(event)
    return events


def mid_output() -> list[Any]:
    """The declined model thought, said, searched (one search answered, one not) and called a client
    tool; the fallback model thinks, says and calls after the block."""
    return _stream(
        [
            _thought("hmm", "A"),
            _said("Let me look."),
            _use("server_tool_use", "srvtoolu_1", "web_search", '{"query": "x"}'),
            _block("web_search_tool_result", tool_use_id="srvtoolu_1", content=[]),
            _use("server_tool_use", "srvtoolu_2", "web_search", '{"query": "y"}'),
            _use("tool_use", "toolu_declined", "run", '{"cmd": "ls"}'),
            _hop(),
            _thought("ok", "B"),
            _said("Here."),
            _use("tool_use", "toolu_ok", "run", '{"cmd": "pwd"}'),
        ]
    )


SENT_BACK = [
    {"type": "text", "text": "Let me look."},
    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}},
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
    FALLBACK,
    {"type": "thinking", "thinking": "ok", "signature": "B"},
    {"type": "text", "text": "Here."},
    {"type": "tool_use", "id": "toolu_ok", "name": "run", "input": {"cmd": "pwd"}},
]
"""The guide's table applied to :func:`mid_output`: the thinking, the unanswered search and the client
call before the block left out, the answered search and the text kept, the block in its place."""


def _whole(events: list[Any]) -> fsm.Result:
    """The stream fed as events, and as its SSE bytes whole and one byte at a time: one result."""
    results = _read("anthropic", events, framed=_named(events))
    first = results[0]
    for other in results[1:]:
        assert (other.calls, other.declined_calls, other.codes()) == (first.calls, first.declined_calls, first.codes())
        assert other.server_tool_results == first.server_tool_results
        assert other.server_tool_calls == first.server_tool_calls
    return first


def test_the_block_is_kept_in_its_place_and_the_declined_call_is_set_apart() -> None:
    """Before: the block was an unknown-event (a violation) and dropped, the declined model's call was
    handed out to run, and the next turn went back without the block, with the thinking and the
    calls the guide says to leave out."""
    result = _whole(mid_output())
    assert "unknown-event" not in result.codes()
    assert result.codes() == ["model-fallback", "declined-call"]
    fallback, declined = result.diagnostics
    assert fallback.severity is fsm.Severity.INFO and fallback.event == 20  # the block's start
    assert fallback.message == f"{_OPUS} declined (refusal, category cyber); {_SONNET} goes on at content block 6"
    assert (
        declined.severity is fsm.Severity.WARNING and "'toolu_declined' ('run') at content block 5" in declined.message
    )
    assert [(c.id, c.arguments, c.output_index) for c in result.calls] == [("toolu_ok", {"cmd": "pwd"}, 9)]
    assert [(c.id, c.arguments, c.output_index) for c in result.declined_calls] == [
        ("toolu_declined", {"cmd": "ls"}, 5)
    ]
    assert result.finish_reason == "tool_calls" and result.raw_finish_reason == "tool_use"
    # the block where it came, beside the search result; the usage says who served (the API's own signal)
    assert [(r.block, r.output_index) for r in result.server_tool_results][-1] == (FALLBACK, 6)
    assert result.usage is not None and result.usage["iterations"] == ITERATIONS
    # nothing of it is a violation: strict mode reads it too
    assert fsm.reassemble(mid_output(), "anthropic", strict=True).codes() == result.codes()


def test_the_turn_goes_back_as_the_guide_says_and_as_the_beta_param_takes_it() -> None:
    result = _whole(mid_output())
    message = messages.assistant_message(result, "anthropic")
    assert message == {"role": "assistant", "content": SENT_BACK}
    TypeAdapter(BetaMessageParam).validate_python(message)
    # the declined call is answered by nothing and held by no next request
    assert "toolu_declined" not in messages.ids_sent(result)


def test_the_loop_checks_clean_and_repair_changes_nothing() -> None:
    result = _whole(mid_output())
    ask = [{"role": "user", "content": "List the files."}]
    answers = [messages.tool_result(call, "a.txt", "anthropic") for call in result.complete_calls]
    history = [*ask, messages.assistant_message(result, "anthropic"), *messages.tool_results(answers, "anthropic")]
    history.append({"role": "assistant", "content": [{"type": "text", "text": "One file."}]})
    assert check(history).findings == ()
    repaired, changes = repair(history)
    assert repaired == history and not changes
    # what the guide's rule spares: the declined call sent back goes unanswered
    sent_whole = json.loads(json.dumps(history))
    sent_whole[1]["content"].insert(3, {"type": "tool_use", "id": "toolu_declined", "name": "run", "input": {}})
    assert check(sent_whole).findings


def test_through_the_anthropic_beta_client_it_is_the_sdks_message_less_what_the_guide_leaves_out() -> None:
    """``client.beta.messages`` over a mock transport: the raw stream and the stream helper read as the
    events do, the message is the helper's accumulated ``to_param()`` less the left-out blocks, and the
    same client sends the loop back as fsm built it."""
    from tests.test_clients import Replay, anthropic_client, anthropic_http

    replay = Replay(_named(mid_output()), anthropic_http())
    client = anthropic_client(replay)
    ask = [{"role": "user", "content": "List the files."}]
    options: dict[str, Any] = {"model": _OPUS, "max_tokens": 64, "betas": ["server-side-fallback-2026-06-01"]}
    options["fallbacks"] = [{"model": _SONNET}]
    raw = fsm.reassemble(client.beta.messages.create(messages=ask, stream=True, **options))
    with client.beta.messages.stream(messages=ask, **options) as stream:
        result = fsm.reassemble(stream, strict=True)  # the helper's own events are not "unknown"
        final = stream.get_final_message()
    assert raw.calls == result.calls and raw.declined_calls == result.declined_calls
    assert raw.codes() == result.codes() == ["model-fallback", "declined-call"]
    assert final.model == _SONNET  # the helper takes the serving model from the block's `to`
    blocks = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in final.to_param()["content"]]
    left_out = {0, 4, 5}  # the declined model's thinking, unanswered search and client call
    expected = [
        {k: v for k, v in b.items() if k != "parsed_output"} for at, b in enumerate(blocks) if at not in left_out
    ]
    sent = messages.assistant_message(result, "anthropic")
    assert sent["content"] == expected == SENT_BACK
    answers = [messages.tool_result(call, "a.txt", "anthropic") for call in result.complete_calls]
    history = [*ask, sent, *messages.tool_results(answers, "anthropic")]
    client.beta.messages.create(messages=history, stream=True, **options).close()
    assert replay.sent[-1]["messages"] == history and replay.sent[-1]["fallbacks"] == [{"model": _SONNET}]
    assert not check(history).findings


def test_a_decline_before_any_output_puts_the_block_first_and_declines_no_call() -> None:
    """Before any output the block is the first content block and ``message_start`` names the
    fallback model already (the guide's "Streaming"): nothing stands before the block."""
    events = _stream([_hop(), _said("Hi.")], stop="end_turn")
    events[0]["message"]["model"] = _SONNET
    result = _whole(events)
    assert result.codes() == ["model-fallback"] and result.problems() == () and result.declined_calls == ()
    assert messages.assistant_message(result, "anthropic")["content"] == [FALLBACK, {"type": "text", "text": "Hi."}]


def test_a_sticky_turn_has_no_block_and_says_so_in_its_usage_alone() -> None:
    """A turn sticky routing sent straight to the fallback model: no model declined in it, so no block
    and no diagnostic; its usage holds the ``fallback_message`` iteration, the API's signal."""
    result = _whole(_stream([_said("Hi.")], stop="end_turn"))
    assert result.diagnostics == () and result.usage is not None and result.usage["iterations"] == ITERATIONS


def test_every_model_declining_ends_in_the_last_ones_refusal_and_the_call_before_is_set_apart() -> None:
    """If every model in the chain declines, the response is the last one's refusal: the block stays in
    place, and the declined call before it is set apart all the same."""
    blocks = [_said("Sure, "), _use("tool_use", "toolu_1", "run", '{"cmd": "ls"}'), _hop(), _said("I can't")]
    events = _stream(blocks, stop="refusal")
    events[-2]["delta"]["stop_details"] = {"type": "refusal", "category": "cyber", "explanation": "No."}
    result = _whole(events)
    assert result.finish_reason == "content_filter" and result.calls == ()
    assert [c.id for c in result.declined_calls] == ["toolu_1"]
    content = messages.assistant_message(result, "anthropic")["content"]
    assert content == [{"type": "text", "text": "Sure, "}, FALLBACK, {"type": "text", "text": "I can't"}]


def test_a_server_call_waiting_after_the_block_still_goes_back() -> None:
    """Only what stands before the final block is the declined model's: a server call the serving model
    left waiting (``pause_turn``) goes back for the server to run, as any turn's."""
    blocks = [_hop(), _use("server_tool_use", "srvtoolu_9", "web_search", '{"query": "z"}')]
    result = _whole(_stream(blocks, stop="pause_turn"))
    content = messages.assistant_message(result, "anthropic")["content"]
    assert content[-1] == {"type": "server_tool_use", "id": "srvtoolu_9", "name": "web_search", "input": {"query": "z"}}


def test_two_hops_keep_both_blocks_and_the_last_one_draws_the_line() -> None:
    hop = {
        "type": "fallback",
        "from": {"model": _SONNET},
        "to": {"model": "claude-haiku-4-5"},
        "trigger": {"type": "refusal"},
    }
    blocks = [_thought("a", "A"), _use("tool_use", "toolu_1", "run", "{}"), _hop(), _thought("b", "B")]
    blocks += [_use("tool_use", "toolu_2", "run", "{}"), _hop(hop), _said("Done.")]
    result = _whole(_stream(blocks, stop="end_turn"))
    assert result.codes() == ["model-fallback", "model-fallback", "declined-call", "declined-call"]
    assert result.diagnostics[1].message == f"{_SONNET} declined (refusal); claude-haiku-4-5 goes on at content block 5"
    assert result.finish_reason == "stop" and "finish-reason-mapped" not in result.codes()  # no call left to run
    content = messages.assistant_message(result, "anthropic")["content"]
    assert content == [FALLBACK, hop, {"type": "text", "text": "Done."}]


def test_a_block_of_odd_fields_is_kept_and_its_note_says_what_it_can() -> None:
    odd = {"type": "fallback", "from": "opus", "to": {"model": 5}, "trigger": "refusal"}
    events = [{"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}}]
    events += [
        {"type": "content_block_start", "index": 0, "content_block": odd},
        {"type": "content_block_stop", "index": 0},
    ]
    events += [{"type": "message_delta", "delta": {"stop_reason": "end_turn"}}]
    result = fsm.reassemble(events, "anthropic")
    assert [d.message for d in result.diagnostics] == [
        "a model not named declined; a model not named goes on at content block 0",
        # the API refuses it back (audit 88): said, and kept all the same
        "a fallback content block at index 0 whose from is str, not an object with a model: the API refuses it back",
    ]
    assert result.server_tool_results[0].block == odd


def test_the_re_emitted_stream_ends_listing_the_declined_call_not_to_run() -> None:
    """The declined call went out while the stream ran (its block came before the fallback): the last
    chunk's error lists it, and toolcall-fsm's chat decoder reads it back as a call no tool runs: set
    apart as its source set it (policy declines-read-back, task 96; before, it read back among the
    calls as invalid, an unusable-action and a provider-error, two violations its source never said)."""
    reader, emitter = fsm.Reassembler("anthropic"), fsm.DeltaEmitter()
    chunks = [emitter.start()]
    for event in mid_output():
        chunks += emitter.chunks(reader.feed(event))
    result = reader.close()
    chunks += emitter.chunks(reader.drain())
    chunks.append(emitter.finish(result))
    error = chunks[-1]["error"]
    assert error["type"] == "incomplete_tool_call" and "toolu_declined (run): declined" in error["message"]
    assert error["incomplete_tool_calls"] == [{"index": 0, "id": "toolu_declined", "status": "declined"}]
    back = fsm.reassemble(chunks, "openai-chat")
    assert [c.id for c in back.complete_calls] == ["toolu_ok"]
    assert list(messages.omitted(back)) == [] and [(c.id, c.status) for c in back.declined_calls] == [
        (c.id, c.status) for c in result.declined_calls
    ]
    assert back.codes() == [d.code for d in result.problems()] == ["declined-call"]


def test_bedrock_invoke_model_reads_claudes_block_as_the_anthropic_wire_does() -> None:
    """Server-side fallback is not on Bedrock (the guide); the SDK middleware splices the same block on
    any platform, and an InvokeModel stream's Claude events are read by the Anthropic decoder."""
    from tests.test_bedrock_invoke import invoke_stream

    result = fsm.reassemble(invoke_stream(mid_output()), "bedrock")
    assert result.codes() == ["model-fallback", "declined-call"] and [c.id for c in result.calls] == ["toolu_ok"]
    assert messages.assistant_message(result, "anthropic")["content"] == SENT_BACK


@pytest.mark.parametrize("output_version", [None, "v1"])
def test_chat_anthropic_drops_the_block_and_the_gap_it_leaves_is_reported(output_version: str | None) -> None:
    """langchain-anthropic yields nothing of a ``fallback`` block (it knows no such type), so fsm
    cannot keep it nor tell the declined call apart: it reports the index the block left empty."""
    from tests.test_langchain_places import chat_anthropic

    got = fsm.reassemble(list(chat_anthropic(_named(mid_output()), output_version)[1].stream("go")))
    (said,) = [d.message for d in got.diagnostics]
    assert said.startswith("no content block came at index 6, before index 7: ChatAnthropic yields nothing")
    assert "fallback" in said and got.declined_calls == () and got.server_tool_results[-1].block["type"] != "fallback"
