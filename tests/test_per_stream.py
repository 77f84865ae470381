"""What a stream costs before and after its events (issue 17) changes nothing it does.

Streams share what cannot change (the default Limits and Policies, each decoder's class, the cache
of bare refs, the rule table a ledger copies, the table of diagnostic codes) and make the rest only
when it is first needed (the framing detector, turn content, previews). Two streams never see each
other's state: a stream replays alike run alone and run beside others that are limited, strict,
given taken ids, fed bytes, previewed or left failed. The last chunk of an OpenAI stream goes
straight to the finish, and a chunk of usage alone to the turn's content: both decide as the
decoder does.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fsm import LimitExceeded, Limits, Policies, Reassembler, reassemble
from fsm.content import TurnContent
from fsm.engine.ledger import _no_rules
from fsm.errors import InvalidInput, ToolcallFSMError
from fsm.harness.captures import PROVIDER_OF_SHAPE
from fsm.harness.fuzz.run import sample_vectors
from fsm.wire.decoders._wire import BARE_REFS
from tests.conftest import captures, require_captures
from tests.helpers import chunk, replay_traced, tc, without_reader
from tests.test_conformance import VECTORS, _replay_with_trace
from tests.test_per_call_paths import OPTIONS


def _plain_stream() -> list[dict[str, Any]]:
    """Text, reasoning, a streamed call, a whole call, usage and a finish: every per-stream part."""
    return [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi", "reasoning_content": "hm"}}]},
        chunk(tc(0, "a", "f", "")),
        chunk(tc(0, args='{"x": ')),
        chunk(tc(0, args="1}")),
        chunk(tc(1, "b", "g", '{"y": 2}')),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}], "usage": {"total_tokens": 9}},
    ]


def _fingerprint(r: Reassembler, outputs: list[Any]) -> object:
    result = r.close()
    return (result, outputs + r.drain(), dict(r.ledger.rules), dict(r.ledger.transitions), r.framing_work)


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def _steps(r: Reassembler, script: list[dict[str, Any]], *, as_bytes: bool) -> Iterator[None]:
    """Feed ``script`` one event a step (as SSE bytes or parsed), asking a preview after each; an
    error is kept in the outputs. At the end, the stream's fingerprint is ``r.seen``."""
    outputs: list[Any] = []
    for event in script:
        try:
            outputs += r.feed_bytes(_sse([event])) if as_bytes else r.feed(event)
        except ToolcallFSMError as exc:
            outputs.append((type(exc).__name__, str(exc)))
        r.partial(0)
        yield
    r.seen = _fingerprint(r, outputs)  # type: ignore[attr-defined]


def test_a_stream_replays_alike_beside_limited_strict_taken_failed_and_byte_fed_streams() -> None:
    """Streams fed in turns, one event each, every one changing what a shared default could carry
    (a call limit reached, strict mode raising, ids taken, other policies, bytes fed to the framing
    detector, previews asked, diagnostics past their limit, bare refs at other indexes): each ends
    exactly as it does run alone."""
    streams: list[tuple[dict[str, Any], list[dict[str, Any]], bool]] = [
        ({}, _plain_stream(), False),
        ({}, _plain_stream(), True),
        (
            {"limits": Limits(max_calls=1, max_diagnostics_per_code=1)},
            [chunk(tc(k, f"c{k}", "f", "{}")) for k in range(3)],
            False,
        ),
        ({"strict": True}, [chunk(tc(0, "a", "f", "{")), chunk(finish="tool_calls")], False),
        (
            {"taken": ["a", "b", "call_0"]},
            [chunk(tc(0, "a", "f", "")), chunk(tc(7, args="{}")), chunk(tc(0, args="{}"))],
            False,
        ),
        (
            {"policies": Policies(empty_arguments="invalid", identical_text="new-call")},
            [chunk(tc(0, "a", "f", "")), chunk(tc(0, "a", "f", "")), chunk(finish="stop")],
            False,
        ),
        ({}, [{"choices": [{"index": 3, "delta": {}}]}] * 3, True),
    ]

    def run_alone(options: dict[str, Any], script: list[dict[str, Any]], as_bytes: bool) -> object:
        r = Reassembler("auto" if as_bytes else "openai-chat", **options)
        for _ in _steps(r, script, as_bytes=as_bytes):
            pass
        return r.seen  # type: ignore[attr-defined]

    alone = [run_alone(*stream) for stream in streams]
    together = [Reassembler("auto" if b else "openai-chat", **o) for o, _, b in streams]
    turns = [_steps(r, script, as_bytes=b) for r, (_, script, b) in zip(together, streams, strict=True)]
    while turns:
        turns = [turn for turn in turns if next(turn, StopIteration) is not StopIteration]
    assert [r.seen for r in together] == alone  # type: ignore[attr-defined]
    assert [run_alone(*stream) for stream in streams] == alone  # and alone again after them
    raised = [{o[0] for o in seen[1] if type(o) is tuple} for seen in alone]  # type: ignore[index]
    assert "LimitExceeded" in raised[2] and "RemoteProtocolError" in raised[3]  # the others did fail
    assert alone[4][0].calls[0].id == "a_d2"  # type: ignore[index]


def test_limits_taken_ids_and_policies_of_one_stream_reach_no_other() -> None:
    limited = Reassembler("openai-chat", limits=Limits(max_calls=1), taken=["call_0"])
    limited.feed(chunk(tc(0, args="{}")))
    with pytest.raises(LimitExceeded):
        limited.feed(chunk(tc(1, args="{}")))
    free = Reassembler("openai-chat")
    assert free.limits == Limits() and free.ledger.policies == Policies()
    for k in range(3):
        free.feed(chunk(tc(k, args="{}")))
    result = free.close()
    assert [c.id for c in result.calls] == ["call_0", "call_1", "call_2"]  # call_0 was taken elsewhere only
    assert [c.id for c in limited.close().calls] == ["call_0_d2"]


def test_rule_and_transition_counts_start_at_zero_in_every_stream() -> None:
    first = Reassembler("openai-chat")
    for event in _plain_stream():
        first.feed(event)
    first.close()
    assert sum(first.ledger.rules.values()) > 0 and first.ledger.transitions
    fresh = Reassembler("openai-chat")
    assert set(fresh.ledger.rules.values()) == {0} and fresh.ledger.rules == _no_rules()
    assert set(_no_rules().values()) == {0}  # the table every ledger copies is never counted in
    assert fresh.ledger.transitions == Counter() and isinstance(fresh.ledger.transitions, Counter)
    # Its item assignment is dict's own (C), not Counter's Python-level slot (ledger._Counts).
    assert type(fresh.ledger.transitions).__setitem__ is dict.__setitem__
    fresh.ledger.transitions["x"] += 1  # a Counter made without its __init__ still counts from zero
    assert fresh.ledger.transitions == Counter(x=1) and not first.ledger.transitions["x"]


def test_turn_content_of_one_stream_is_not_another_streams() -> None:
    talkative = Reassembler("openai-chat")
    talkative.feed({"choices": [{"index": 0, "delta": {"content": "Hi", "reasoning_content": "hm"}}]})
    talkative.feed({"choices": [], "usage": {"total_tokens": 3}})
    said = talkative.close()
    quiet = Reassembler("openai-chat")
    quiet.feed(chunk(tc(0, "a", "f", "{}"), finish="tool_calls"))
    result = quiet.close()
    assert (said.text, [x.text for x in said.reasoning], said.usage) == ("Hi", ["hm"], {"total_tokens": 3})
    assert (result.text, result.text_signature, result.reasoning, result.usage) == ("", None, (), None)
    fresh = TurnContent()
    assert (fresh.text, fresh.text_signature, fresh.reasoning, fresh.usage) == ("", None, (), None)


def test_what_a_stream_writes_over_a_class_default_is_its_own() -> None:
    """A stream's suppressed counts, an id claimed twice and previews start as class defaults that
    most streams never write; the stream that writes one gets its own, and the next stream starts
    from the empty default again."""
    noisy = Reassembler("openai-chat", limits=Limits(max_diagnostics_per_code=1), taken=["a"])
    for _ in range(3):
        noisy.feed({"choices": [{"index": 1, "delta": {"content": "x"}}]})  # choice-ignored, past the limit
    noisy.feed(chunk(tc(0, "a", "f", "{}")))  # its id is taken: claimed again under a resume point
    noisy.feed(chunk(tc(1, "a", "g", "{}")))
    assert noisy.partial(0) == {}
    result = noisy.close()
    assert result.suppressed_diagnostics["choice-ignored"] == 2
    assert [c.id for c in result.calls] == ["a_d2", "a_d3"]
    quiet = Reassembler("openai-chat", taken=["a"])
    quiet.feed(chunk(tc(0, "a", "f", "{}"), finish="tool_calls"))
    again = quiet.close()
    assert again.suppressed_diagnostics == {} and type(again.suppressed_diagnostics) is dict
    assert again.suppressed_diagnostics is not result.suppressed_diagnostics
    assert [c.id for c in again.calls] == ["a_d2"]
    assert not Reassembler.__dict__["_previews"] and not type(quiet.ledger).suppressed


def test_the_turn_content_read_in_one_call_is_what_its_properties_give() -> None:
    """close() reads the turn's content by TurnContent.frozen(), one call for what the properties
    give one by one: over every capture, the same values."""
    require_captures()
    for path in captures():
        r = Reassembler(PROVIDER_OF_SHAPE.get(path.parent.name, "auto"))
        try:
            r.feed_bytes(path.read_bytes())
        except ToolcallFSMError:
            continue
        content = r._content
        each = (
            content.text,
            content.reasoning,
            content.text_parts,
            content.refusal,
            content.server_results,
            content.compactions,
        )
        assert content.frozen() == each, path.name
        result = r.close()
        assert (result.text, result.reasoning, result.text_parts, result.refusal) == each[:4], path.name


def test_a_stream_fed_bytes_after_parsed_events_reads_as_one_fed_either_alone() -> None:
    events = _plain_stream()
    as_dicts = Reassembler("openai-chat")
    for event in events:
        as_dicts.feed(event)
    assert as_dicts.framing_work == 0
    mixed = Reassembler("openai-chat")
    for event in events[:3]:
        mixed.feed(event)
    mixed.feed_bytes(_sse(events[3:]))
    as_bytes = Reassembler("openai-chat")
    as_bytes.feed_bytes(_sse(events))
    results = [as_dicts.close(), mixed.close(), as_bytes.close()]
    assert results[0] == results[1] == results[2]
    assert 0 < mixed.framing_work < as_bytes.framing_work


@pytest.mark.parametrize(
    ("data", "codes", "work"),
    [
        (b"", ["no-finish-reason"], 0),  # nothing read: nothing to tell
        (b"  ", ["no-finish-reason"], 2),  # blanks before the first event are dropped
        (b"xy", ["not-a-stream", "no-finish-reason"], 4),
        (b"\xef\xbb", ["cut-event", "no-finish-reason"], 4),  # a BOM cut short
    ],
)
def test_bytes_that_tell_no_framing_read_the_same_after_parsed_events(data: bytes, codes: list[str], work: int) -> None:
    """The framing detector, made by the first bytes, tells the same of them whether or not parsed
    events came first (what it told when every stream made one at once)."""
    for first in ([], [chunk(tc(0, "a", "f", "{}"))]):
        r = Reassembler("openai-chat")
        for event in first:
            r.feed(event)
        r.feed_bytes(data)
        result = r.close()
        assert (result.codes(), r.framing_work) == (codes, work)
        assert [c.arguments for c in result.calls] == [{}] * len(first)


def test_streams_share_the_bare_refs_they_cannot_change() -> None:
    a, b = Reassembler("openai-chat"), Reassembler("openai-chat")
    for r in (a, b):
        r.feed(chunk(tc(0, "a", "f", "")))
        r.feed(chunk(tc(0, args="{}")))
    assert a.close() == b.close()
    assert a._decoder is not b._decoder and a._chat._bare is b._chat._bare is BARE_REFS  # type: ignore[union-attr]
    assert len(BARE_REFS._refs) <= BARE_REFS.LIMIT


def test_bad_arguments_are_refused_as_before() -> None:
    with pytest.raises(InvalidInput, match="limits must be a Limits, not dict"):
        Reassembler("openai-chat", limits={"max_calls": 1}, policies="x")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="policies must be a Policies, not str"):
        Reassembler("openai-chat", policies="x")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="provider must be a str, not int"):
        Reassembler(7)  # type: ignore[arg-type]
    assert Reassembler(limits=None).limits == Limits()


@pytest.mark.parametrize("strict", ["no", "false", 1, None])
def test_a_strict_that_is_no_bool_is_invalid_input_not_taken_as_true(strict: Any) -> None:
    with pytest.raises(InvalidInput, match="strict must be a bool"):
        Reassembler("openai-chat", strict=strict)
    with pytest.raises(InvalidInput, match="strict must be a bool"):
        reassemble([chunk(tc(0, "a", "f", "[1]"), finish="tool_calls")], strict=strict)


@pytest.mark.parametrize("taken", [None, 5, "call_1", b"call_1", [1], [["call_1"]], ["a", None]])
def test_taken_ids_that_are_not_an_iterable_of_str_are_invalid_input(taken: Any) -> None:
    with pytest.raises(InvalidInput, match="taken must"):
        Reassembler("openai-chat", taken=taken)
    r = Reassembler("openai-chat", taken=(t for t in ["call_1"]))  # any iterable of str, read once
    r.feed(chunk(tc(0, "call_1", "f", "{}")))
    assert [c.id for c in r.close().calls] == ["call_1_d2"]


# Last chunks, and chunks that look like one, where the finish has something to decide.
LAST: dict[str, list[dict[str, Any]]] = {
    "plain": [chunk(tc(0, "a", "f", "{}")), chunk(finish="tool_calls")],
    "usage beside": [chunk(tc(0, "a", "f", "{}")), {**chunk(finish="tool_calls"), "usage": {"total_tokens": 3}}],
    "empty usage": [chunk(tc(0, "a", "f", "{}")), {**chunk(finish="tool_calls"), "usage": {}}],
    "usage not an object": [chunk(tc(0, "a", "f", "{}")), {**chunk(finish="tool_calls"), "usage": [1]}],
    "usage after usage": [{"choices": [], "usage": {"a": 1}}, {**chunk(finish="stop"), "usage": {"b": 2}}],
    "text and reasoning beside": [
        chunk(tc(0, "a", "f", "{}")),
        {"choices": [{"index": 0, "delta": {"content": "x", "reasoning": "y"}, "finish_reason": "stop"}]},
    ],
    "stop with calls": [chunk(tc(0, "a", "f", "{}")), chunk(finish="stop")],
    "tool_calls without calls": [chunk(finish="tool_calls")],
    "length, a call cut": [chunk(tc(0, "a", "f", '{"a": ')), chunk(finish="length")],
    "invalid arguments": [chunk(tc(0, "a", "f", '{"a": ]')), chunk(finish="tool_calls")],
    "error": [chunk(tc(0, "a", "f", "{}")), chunk(finish="error")],
    "upper case": [chunk(tc(0, "a", "f", "{}")), chunk(finish="TOOL_CALLS")],
    "unknown reason": [chunk(finish="weird")],
    "empty reason": [chunk(tc(0, "a", "f", "{}")), chunk(finish="")],
    "reason not text": [chunk(tc(0, "a", "f", "{}")), {"choices": [{"index": 0, "delta": {}, "finish_reason": 1}]}],
    "second finish": [chunk(finish="tool_calls"), chunk(finish="stop"), chunk(finish="tool_calls")],
    "calls beside": [chunk(tc(0, "a", "f", "{}"), finish="tool_calls")],
    "empty calls beside": [{"choices": [{"index": 0, "delta": {"tool_calls": []}, "finish_reason": "stop"}]}],
    "no delta": [chunk(tc(0, "a", "f", "{}")), {"choices": [{"index": 0, "finish_reason": "tool_calls"}]}],
    "message, no delta": [
        {"choices": [{"index": 0, "message": {"tool_calls": [tc(0, "a", "f", "{}")]}, "finish_reason": "stop"}]}
    ],
    "delta not an object": [{"choices": [{"index": 0, "delta": [], "finish_reason": "stop"}]}],
    "another choice": [chunk(tc(0, "a", "f", "{}")), {"choices": [{"index": 1, "delta": {}, "finish_reason": "stop"}]}],
    "two choices": [{"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}] * 2}],
    "error beside": [{**chunk(finish="stop"), "error": {"message": "boom"}}],
    "after a failed event": [chunk(tc(0, "a", "f", "{}")), {"choices": 3}, chunk(finish="tool_calls")],
    "many calls": [chunk(tc(k, f"c{k}", "f", "{}")) for k in range(20)] + [chunk(finish="tool_calls")],
}


# Chunks with no choices (usage alone, as OpenAI sends after the last chunk) and ones like them.
USAGE: dict[str, list[dict[str, Any]]] = {
    "after the finish": [chunk(tc(0, "a", "f", "{}")), chunk(finish="tool_calls"), {"choices": [], "usage": {"t": 1}}],
    "before the finish": [{"choices": [], "usage": {"t": 1}}, chunk(tc(0, "a", "f", "{}")), chunk(finish="stop")],
    "replaced by the last chunk": [{"choices": [], "usage": {"t": 1}}, {**chunk(finish="stop"), "usage": {"u": 2}}],
    "twice": [chunk(finish="stop"), {"choices": [], "usage": {"t": 1}}, {"choices": [], "usage": {"u": 2}}],
    "no finish": [chunk(tc(0, "a", "f", '{"a"')), {"choices": [], "usage": {"t": 1}}],
    "null usage": [chunk(finish="stop"), {"choices": [], "usage": None}],
    "empty usage": [{"choices": [], "usage": {"t": 1}}, {"choices": [], "usage": {}}, chunk(finish="stop")],
    "usage not an object": [chunk(finish="stop"), {"choices": [], "usage": [1]}, {"choices": [], "usage": "x"}],
    "no choices key": [chunk(finish="stop"), {"object": "chat.completion.chunk", "usage": {"t": 1}}],
    "no choices, no usage": [{"choices": []}, chunk(finish="stop")],
    "error beside": [{"choices": [], "error": {"message": "boom"}, "usage": {"t": 1}}],
    "choices not a list": [chunk(finish="stop"), {"choices": {}, "usage": {"t": 1}}],
}


def _trace(events: list[dict[str, Any]], **options: Any) -> object:
    return replay_traced(Reassembler("openai-chat", **options), lambda r: (r.feed(event) for event in events))


def _capture_trace(path: Path) -> object:
    return replay_traced(Reassembler(), lambda r: [r.feed_bytes(path.read_bytes())])


def _chat_captures() -> list[Path]:
    return [p for p in captures() if PROVIDER_OF_SHAPE[p.parent.name] == "openai-chat"]


def _decides_alike(monkeypatch: pytest.MonkeyPatch, shortcut: str, edges: dict[str, list[dict[str, Any]]]) -> None:
    """Every vector, 300 fuzzed OpenAI streams, the OpenAI-shaped captures (as bytes) and ``edges``
    in every option set replay alike with and without ``shortcut`` (a function of
    fsm.wire.decoders.chat_chunks): transitions in order, outputs, result, rule counts."""

    vectors = [*VECTORS, *sample_vectors("openai-chat", 300)]
    paths = _chat_captures()
    streams = [(events, options) for events in edges.values() for options in OPTIONS]

    def replay_all() -> list[object]:
        return (
            [_replay_with_trace(v) for v in vectors]
            + [_capture_trace(p) for p in paths]
            + [_trace(e, **o) for e, o in streams]
        )

    fast = replay_all()
    without_reader(monkeypatch, shortcut)
    general = replay_all()
    names = [v.name for v in vectors] + [p.name for p in paths] + [f"{n} {o}" for n in edges for o in OPTIONS]
    for name, a, b in zip(names, fast, general, strict=True):
        assert a == b, name


def test_the_last_chunk_shortcut_decides_as_the_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The last chunk of a stream (a finish reason, maybe text and usage beside it, no call) goes
    straight to the finish; without the shortcut it goes through the decoder and its events. Same
    transitions in order, outputs, calls, content, diagnostics and rule counts either way, over
    every vector, fuzzed streams, the captures and the chunks above (lax, strict, at the call
    limit, ids taken)."""
    from fsm.wire.decoders import chat_chunks

    vectors = [*VECTORS, *sample_vectors("openai-chat", 300)]
    taken = sum(chat_chunks.finish_in(e) is not None for v in vectors for e in v.events if type(e) is dict)
    assert taken > 100  # ~130
    assert sum(chat_chunks.finish_in(e) is not None for events in LAST.values() for e in events) > 15
    _decides_alike(monkeypatch, "finish_in", LAST)


def test_the_usage_chunk_shortcut_decides_as_the_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk of usage alone goes straight to the turn's content, before the finish or after it;
    without the shortcut it goes through the decoder. Same everything either way, over the same
    streams and the chunks above."""
    from fsm.wire.decoders import chat_chunks

    assert sum(chat_chunks.usage_in(e) is not None for events in USAGE.values() for e in events) >= 10
    require_captures()
    assert (
        sum(
            chat_chunks.usage_in(json.loads(line[6:])) is not None
            for p in _chat_captures()
            for line in p.read_text().splitlines()
            if line.startswith("data: {")
        )
        >= 3
    )
    _decides_alike(monkeypatch, "usage_in", USAGE)


def test_the_resend_tables_are_a_streams_own_from_their_first_write() -> None:
    """The registry's resend tables are written only once a lane holds a second call: until then
    a stream reads the shared empty ones; the stream that writes one gets its own (a resend is
    still found through it), and the next stream starts from the empty ones again."""
    tables = ("_holding", "_indexed", "_values", "_slot_lanes")
    plain = Reassembler("openai-chat")
    plain.feed(chunk(tc(0, "a", "f", '{"x": 1}')))
    plain.feed(chunk(tc(1, "b", "f", '{"x": 1}'), finish="tool_calls"))
    plain.close()
    assert not any(table in vars(plain.registry) for table in tables)
    resent = Reassembler("openai-chat")
    resent.feed(chunk(tc(0, "a", "f", '{"x": 1}')))
    resent.feed(chunk(tc(0, args='{"y": 2}')))  # a second call at index 0: the lane's first is indexed
    resent.feed(chunk(tc(0, args='{"x": 1}'), finish="tool_calls"))  # found through the index
    result = resent.close()
    assert [c.arguments_json for c in result.calls] == ['{"x": 1}', '{"y": 2}']  # the second nameless: invalid
    assert "resend" in result.codes()
    own = vars(resent.registry)
    assert own["_holding"] and own["_indexed"] and type(own["_holding"]) is dict
    again = Reassembler("openai-chat")
    again.feed(chunk(tc(0, "a", "f", "{}")))
    assert not again.registry._holding and not again.registry._indexed
    assert again.registry._holding is not own["_holding"]
