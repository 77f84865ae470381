"""Truncation, dialect quirks, policies, strict mode and limits."""

from __future__ import annotations

import json
import re
from typing import Any

import attrs
import pytest

from fsm import CallStatus, LimitExceeded, Limits, LocalProtocolError, Policies, Reassembler, RemoteProtocolError
from fsm.events import ArgumentsFragment, ArgumentsSnapshot, CallEnd, CallRef, CallSeen, StreamEnd
from fsm.results import ArgumentsDelta, CallFinished, CallOpened
from tests.helpers import calls, chunk, run, tc

# -- truncation and invalid text ----------------------------------------------------------------


def test_finish_length_mid_call_reports_truncated_with_raw_text() -> None:
    result = run(
        [
            chunk(tc(index=0, id="a", name="f", args='{"n": 1}')),
            chunk(tc(index=1, id="b", name="write", args='{"body": "Once upon a ti')),
            chunk(finish="length"),
        ]
    )
    first, cut = result.calls
    assert first.status is CallStatus.COMPLETE and first.arguments == {"n": 1}
    assert cut.status is CallStatus.TRUNCATED
    assert cut.arguments is None
    assert cut.arguments_json == '{"body": "Once upon a ti'
    assert result.finish_reason == "length"
    assert "truncated" in result.codes()


def test_stream_cut_without_finish_truncates_unfinished_calls_only() -> None:
    result = run([chunk(tc(index=0, id="a", name="f", args="{}")), chunk(tc(index=1, id="b", name="g", args='{"x'))])
    assert [c.status for c in result.calls] == [CallStatus.COMPLETE, CallStatus.TRUNCATED]
    assert result.finish_reason is None
    assert "no-finish-reason" in result.codes()


def test_a_call_cut_before_any_text_is_truncated_not_empty_object() -> None:
    result = run([chunk(tc(index=0, id="a", name="f", args=""))])
    assert result.calls[0].status is CallStatus.TRUNCATED
    assert result.calls[0].arguments_json == ""


def test_normal_finish_with_unclosed_json_is_invalid_with_raw_text() -> None:
    result = run([chunk(tc(index=0, id="a", name="f", args='{"x": [1, 2')), chunk(finish="tool_calls")])
    assert result.calls[0].status is CallStatus.INVALID
    assert result.calls[0].arguments_json == '{"x": [1, 2'
    assert "unterminated-arguments" in result.codes()


def test_closed_but_unparseable_json_is_invalid() -> None:
    result = run([chunk(tc(index=0, id="a", name="f", args="{'x': 1}")), chunk(finish="tool_calls")])
    assert result.calls[0].status is CallStatus.INVALID
    assert "invalid-arguments" in result.codes()


def test_arguments_that_are_not_an_object_are_invalid() -> None:
    result = run([chunk(tc(index=0, id="a", name="f", args="[1, 2]")), chunk(finish="tool_calls")])
    assert result.calls[0].status is CallStatus.INVALID
    assert "arguments-not-object" in result.codes()


def test_call_with_no_argument_text_gets_empty_object_on_normal_finish() -> None:
    result = run([chunk(tc(index=0, id="a", name="now", args="")), chunk(finish="tool_calls")])
    assert result.calls[0].arguments == {} and result.calls[0].arguments_json == "{}"
    assert "empty-arguments" in result.codes()


def test_empty_arguments_policy_invalid() -> None:
    events = [chunk(tc(index=0, id="a", name="now", args="")), chunk(finish="tool_calls")]
    result = run(events, policies=Policies(empty_arguments="invalid"))
    assert result.calls[0].status is CallStatus.INVALID


# -- metadata ---------------------------------------------------------------------------------------


def test_repeated_name_and_id_on_continuations_are_not_concatenated() -> None:
    # Kimi via OpenRouter, MiniMax: the full id and name on every chunk.
    result = run(
        [
            chunk(tc(index=0, id="0", name="llm_version", args="")),
            chunk(tc(index=0, id="0", name="llm_version", args='{"a"')),
            chunk(tc(index=0, id="0", name="llm_version", args=": 1}")),
        ]
    )
    assert [(c.id, c.name, c.arguments) for c in result.calls] == [("0", "llm_version", {"a": 1})]


def test_empty_name_and_id_on_continuations_change_nothing() -> None:
    result = run(
        [
            chunk(tc(index=0, id="t1", name="search", args="")),
            chunk(tc(index=0, id="", name="", args='{"q": "x"}')),
            chunk(finish="tool_calls"),
        ]
    )
    assert [(c.id, c.name, c.arguments) for c in result.calls] == [("t1", "search", {"q": "x"})]
    assert result.diagnostics == ()


def test_conflicting_name_keeps_the_first_and_says_so() -> None:
    result = run([chunk(tc(index=0, id="t1", name="a", args='{"x"')), chunk(tc(index=0, name="b", args=": 1}"))])
    assert result.calls[0].name == "a"
    assert "name-conflict" in result.codes()


def test_fresh_id_on_every_fragment_is_one_call() -> None:
    result = run(
        [
            chunk(tc(index=0, id="r1", name="f", args='{"text": ')),
            chunk(tc(index=0, id="r2", args='"abc"')),
            chunk(tc(index=0, id="r3", args="}")),
            chunk(finish="tool_calls"),
        ]
    )
    assert [(c.id, c.arguments) for c in result.calls] == [("r1", {"text": "abc"})]
    assert result.codes().count("id-changed") == 2


def test_id_rotation_policy_new_call() -> None:
    events = [chunk(tc(index=0, id="r1", name="f", args='{"a": ')), chunk(tc(index=0, id="r2", args='{"b": 1}'))]
    result = run(events, policies=Policies(id_rotation="new-call"))
    assert [c.id for c in result.calls] == ["r1", "r2"]
    assert result.calls[0].status is CallStatus.TRUNCATED


def test_late_id_is_kept_as_wire_id() -> None:
    result = run([chunk(tc(index=0, name="f", args='{"a"')), chunk(tc(index=0, id="late", args=": 1}"))])
    call = result.calls[0]
    assert (call.id, call.wire_id, call.arguments) == ("call_0", "late", {"a": 1})
    assert "late-id" in result.codes()


def test_repeated_header_after_complete_value_names_the_next_call() -> None:
    # Index reused without ids: a header (name, no text) then the next call's text.
    result = run(
        [
            chunk(tc(index=0, name="ls", args="")),
            chunk(tc(index=0, args='{"p": 1}')),
            chunk(tc(index=0, name="ls", args="")),
            chunk(tc(index=0, args='{"p": 2}')),
        ]
    )
    assert calls(result) == [("ls", {"p": 1}), ("ls", {"p": 2})]


def test_repeated_header_with_its_id_after_complete_value_names_the_next_call() -> None:
    # DeepSeek and GLM give two calls one id; with index 0 reused, the second call's header (that
    # id, a name, no text) after the first's complete value names the next call: its text opens a
    # call with that name and the id renamed, not a nameless call without an id.
    def header(name: str) -> dict[str, Any]:
        return chunk(tc(index=0, id="dup", name=name, args=""))

    same = run([header("ls"), chunk(tc(index=0, args='{"p": 1}')), header("ls"), chunk(tc(index=0, args='{"p": 2}'))])
    assert [(c.id, c.wire_id, c.name, c.arguments) for c in same.calls] == [
        ("dup", "dup", "ls", {"p": 1}),
        ("dup_d2", "dup", "ls", {"p": 2}),
    ]
    assert "missing-name" not in same.codes() and "duplicate-id" in same.codes()
    other = run([header("ls"), chunk(tc(index=0, args='{"p": 1}')), header("cat"), chunk(tc(index=0, args='{"f": 2}'))])
    assert [(c.id, c.name, c.arguments) for c in other.calls] == [("dup", "ls", {"p": 1}), ("dup_d2", "cat", {"f": 2})]
    assert "name-conflict" not in other.codes()
    # The header repeated with the same text again (Kimi repeats id and name on every chunk) is a
    # resend of the call it names, and a header with nothing after it changes nothing.
    again = run([header("ls"), chunk(tc(index=0, args='{"p": 1}')), header("ls"), chunk(tc(index=0, args='{"p": 1}'))])
    assert [(c.id, c.arguments) for c in again.calls] == [("dup", {"p": 1})] and "resend" in again.codes()
    trailing = run([header("ls"), chunk(tc(index=0, args='{"p": 1}')), header("ls"), chunk(finish="tool_calls")])
    assert [(c.id, c.arguments) for c in trailing.calls] == [("dup", {"p": 1})] and not trailing.problems()


def test_a_name_after_the_complete_value_of_a_nameless_call_names_it() -> None:
    # The name comes last, in a chunk of its own without the id: it is the nameless call's late
    # name, not a second call with no arguments.
    result = run(
        [chunk(tc(index=0, id="a", args='{"q": 1}')), chunk(tc(index=0, name="f")), chunk(finish="tool_calls")]
    )
    assert [(c.id, c.name, c.arguments) for c in result.calls] == [("a", "f", {"q": 1})]
    assert not result.problems()


def test_a_different_name_after_a_complete_value_is_a_new_call() -> None:
    result = run([chunk(tc(index=0, name="a", args="{}")), chunk(tc(index=0, name="b", args=""))])
    assert [c.name for c in result.calls] == ["a", "b"]


def test_same_arguments_under_different_names_are_two_calls() -> None:
    result = run([chunk(tc(index=0, name="get_country", args="{}")), chunk(tc(index=0, name="get_city", args="{}"))])
    assert calls(result) == [("get_country", {}), ("get_city", {})]


# -- resent and cumulative text ---------------------------------------------------------------------


def test_cumulative_argument_text_appends_only_the_new_tail() -> None:
    result = run(
        [
            chunk(tc(index=0, id="c", name="f", args='{"a"')),
            chunk(tc(index=0, args='{"a": 1, "b"')),
            chunk(tc(index=0, args='{"a": 1, "b": 2}')),
            chunk(finish="tool_calls"),
        ]
    )
    assert calls(result) == [("f", {"a": 1, "b": 2})]
    assert "cumulative-arguments" in result.codes()


def test_cumulative_detection_off_appends_verbatim() -> None:
    events = [chunk(tc(index=0, id="c", name="f", args='{"a"')), chunk(tc(index=0, args='{"a": 1}'))]
    result = run(events, policies=Policies(cumulative_arguments="off"))
    assert result.calls[0].arguments_json == '{"a"{"a": 1}'


def test_full_replay_of_arguments_after_fragments_is_a_resend() -> None:
    result = run(
        [
            chunk(tc(index=0, id="c", name="f", args='{"a": ')),
            chunk(tc(index=0, args="1}")),
            chunk(tc(index=0, args='{"a": 1}')),
            chunk(finish="tool_calls"),
        ]
    )
    assert calls(result) == [("f", {"a": 1})]
    assert "resend" in result.codes()


def test_replay_formatted_anew_after_fragments_is_a_resend() -> None:
    # A gateway that parses the arguments and replays them re-serialized (spaces after colons,
    # non-ASCII escaped, or as an object): the same value again, a resend, not a second call.
    streamed = [chunk(tc(index=0, id="c", name="f", args='{"a":')), chunk(tc(index=0, args='1,"b":"é"}'))]
    for replay in (
        tc(index=0, args='{"a": 1, "b": "\\u00e9"}'),
        tc(index=0, id="c", name="f", args='{"a": 1,\n "b": "é"}'),
        tc(index=0, args={"a": 1, "b": "é"}),
    ):
        result = run([*streamed, chunk(replay), chunk(finish="tool_calls")])
        assert [(c.id, c.name, c.arguments_json) for c in result.calls] == [("c", "f", '{"a":1,"b":"é"}')]
        assert "resend" in result.codes()
    # A value that differs (a float for an int, another key order, true for 1) is not the same.
    for other in ('{"a": 1.0, "b": "é"}', '{"b": "é", "a": 1}', '{"a": true, "b": "é"}'):
        result = run([*streamed, chunk(tc(index=0, args=other)), chunk(finish="tool_calls")])
        assert len(result.calls) == 2
    # identical_text=new-call: the same value again without an id is a second call, as the same text is.
    again = run(
        [*streamed, chunk(tc(index=0, args='{"a": 1, "b": "é"}'))], policies=Policies(identical_text="new-call")
    )
    assert len(again.calls) == 2


def test_one_fragment_holding_two_values_is_split() -> None:
    result = run([chunk(tc(index=0, name="f", args='{"q": "A"}{"q": "B"}')), chunk(finish="tool_calls")])
    assert calls(result) == [("f", {"q": "A"}), ("f", {"q": "B"})]
    assert "split-fragment" in result.codes()


def test_trailing_whitespace_after_complete_value_stays_with_it() -> None:
    result = run([chunk(tc(index=0, id="a", name="f", args="{}")), chunk(tc(index=0, args="\n"))])
    assert len(result.calls) == 1 and result.calls[0].arguments_json == "{}\n"


def test_no_index_no_id_two_complete_objects_are_two_calls() -> None:
    result = run([chunk(tc(name="f", args='{"a": 1}')), chunk(tc(name="f", args='{"a": 2}'))])
    assert calls(result) == [("f", {"a": 1}), ("f", {"a": 2})]


def test_arguments_sent_as_an_object_are_a_snapshot() -> None:
    result = run([chunk(tc(index=0, id="o", name="f", args={"a": 1})), chunk(tc(index=0, id="o", args={"a": 1}))])
    assert calls(result) == [("f", {"a": 1})]


# -- stream-level -----------------------------------------------------------------------------------


def test_stop_with_tool_calls_is_reported_as_tool_calls() -> None:
    result = run([chunk(tc(name="f", args="{}"), finish="stop")])
    assert result.finish_reason == "tool_calls"
    assert "finish-reason-mapped" in result.codes()


def test_stop_without_tool_calls_stays_stop() -> None:
    assert run([chunk(finish="stop")]).finish_reason == "stop"


def test_provider_error_event_cuts_open_calls() -> None:
    r = Reassembler("openai-chat")
    r.feed(chunk(tc(index=0, id="a", name="f", args='{"x')))
    r.feed({"error": {"message": "overloaded"}})
    result = r.close()
    assert result.finish_reason == "error"
    assert result.calls[0].status is CallStatus.TRUNCATED
    assert "provider-error" in result.codes()


def test_other_choices_are_reported_not_merged() -> None:
    r = Reassembler("openai-chat")
    r.feed({"choices": [{"index": 1, "delta": {"tool_calls": [tc(index=0, id="z", name="f", args="{}")]}}]})
    result = r.close()
    assert result.calls == ()
    assert "choice-ignored" in result.codes()


def test_message_duplicating_delta_is_read_once() -> None:
    entry = tc(index=0, id="w", name="f", args='{"a": 1}')
    payload = {
        "choices": [
            {"index": 0, "delta": {"tool_calls": [entry]}, "message": {"tool_calls": [entry]}, "finish_reason": None}
        ]
    }
    r = Reassembler("openai-chat")
    r.feed(payload)
    result = r.close()
    assert calls(result) == [("f", {"a": 1})]
    assert "resend" not in result.codes()


def test_legacy_function_call_delta() -> None:
    r = Reassembler("openai-chat")
    r.feed({"choices": [{"index": 0, "delta": {"function_call": {"name": "f", "arguments": '{"a"'}}}]})
    r.feed(
        {"choices": [{"index": 0, "delta": {"function_call": {"arguments": ": 1}"}}, "finish_reason": "function_call"}]}
    )
    result = r.close()
    assert calls(result) == [("f", {"a": 1})] and result.finish_reason == "tool_calls"


def test_data_after_the_finish_reason_is_reported_and_still_routed() -> None:
    result = run(
        [
            chunk(tc(index=0, id="a", name="f", args="{}"), finish="tool_calls"),
            chunk(tc(index=1, id="b", name="g", args="{}")),
        ]
    )
    assert [c.id for c in result.calls] == ["a", "b"]
    assert "event-after-finish" in result.codes()


# -- output events ------------------------------------------------------------------------------


def test_outputs_are_yielded_as_they_happen() -> None:
    r = Reassembler("openai-chat")
    assert r.feed(chunk(tc(index=0, id="a", name="f", args=""))) == [CallOpened(0, "a", "a", "f")]
    assert r.feed(chunk(tc(index=0, args='{"x": 1}'))) == [ArgumentsDelta(0, '{"x": 1}')]
    finished = r.feed(chunk(finish="tool_calls"))
    assert len(finished) == 1 and isinstance(finished[0], CallFinished)
    assert finished[0].call.arguments == {"x": 1}


def test_decoded_events_can_be_fed_directly() -> None:
    r = Reassembler()
    ref = CallRef(index=0, id="e1", name="f")
    for event in [
        CallSeen(ref),
        ArgumentsFragment(ref, '{"a": '),
        ArgumentsFragment(CallRef(index=0), "1}"),
        CallEnd(ref),
    ]:
        r.feed(event)
    r.feed(StreamEnd("tool_calls"))
    assert calls(r.close()) == [("f", {"a": 1})]


def test_snapshot_with_changed_arguments_under_one_id_replaces() -> None:
    r = Reassembler()
    ref = CallRef(index=0, id="g1", name="f")
    r.feed(ArgumentsSnapshot(ref, '{"a": 1}'))
    r.feed(ArgumentsSnapshot(ref, '{"a": 2}'))
    result = r.close()
    assert calls(result) == [("f", {"a": 2})]
    assert "arguments-replaced" in result.codes()


def test_sdk_objects_with_model_dump_are_accepted() -> None:
    class FakeChunk:
        def model_dump(self) -> dict[str, object]:
            return chunk(tc(index=0, id="s", name="f", args="{}"), finish="tool_calls")

    r = Reassembler()
    r.feed(FakeChunk())
    assert calls(r.close()) == [("f", {})]


def test_feeding_something_unknown_is_a_local_error() -> None:
    with pytest.raises(LocalProtocolError):
        Reassembler().feed(42)


def test_feeding_after_close_is_a_local_error() -> None:
    r = Reassembler()
    r.close()
    with pytest.raises(LocalProtocolError):
        r.feed(chunk())


# -- strict mode and limits ---------------------------------------------------------------------------


def test_strict_mode_raises_on_a_violation_naming_event_and_rule() -> None:
    r = Reassembler("openai-chat", strict=True)
    r.feed(chunk(tc(index=0, id="X", name="f", args="{}")))
    with pytest.raises(RemoteProtocolError) as err:
        r.feed(chunk(tc(index=1, id="X", name="f", args="{}")))
    assert err.value.event == 2
    assert err.value.rule == "duplicate-id-renamed"
    assert "event 2" in str(err.value)


def test_strict_mode_accepts_a_clean_stream() -> None:
    result = run([chunk(tc(index=0, id="a", name="f", args="{}")), chunk(finish="tool_calls")], strict=True)
    assert calls(result) == [("f", {})]


def test_strict_mode_rejects_a_malformed_tool_call() -> None:
    with pytest.raises(RemoteProtocolError, match=r"event 1: tool_calls\[0\]\.index"):
        Reassembler("openai-chat").feed(chunk(tc(index="0", name="f", args="{}")))


def test_limit_on_calls() -> None:
    r = Reassembler("openai-chat", limits=Limits(max_calls=2))
    r.feed(chunk(tc(index=0, name="f", args="{}")))
    r.feed(chunk(tc(index=1, name="f", args="{}")))
    with pytest.raises(LimitExceeded) as err:
        r.feed(chunk(tc(index=2, name="f", args="{}")))
    assert err.value.event == 3


def test_limit_on_argument_size() -> None:
    r = Reassembler("openai-chat", limits=Limits(max_argument_chars=10))
    r.feed(chunk(tc(index=0, name="f", args='{"a": "')))
    with pytest.raises(LimitExceeded, match="event 2"):
        r.feed(chunk(tc(index=0, args="0123456789")))


def test_limit_on_nesting_depth() -> None:
    with pytest.raises(LimitExceeded, match=r"nest deeper than 3"):
        run([chunk(tc(index=0, name="f", args='{"a": [[[1]]]}'))], limits=Limits(max_depth=3))


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("how", ["dicts", "bytes", "1-byte chunks", "events"])
def test_the_nesting_limit_names_the_event_that_passed_it(how: str, strict: bool) -> None:
    """The depth limit is found by the scanner, below the ledger that knows the event: its
    LimitExceeded named no event, and neither did the stream-failed diagnostic close() gives."""
    chunks = [chunk(tc(index=0, id="c", name="f", args='{"a": [')), chunk(tc(index=0, args="[[1]]]}"))]
    r = Reassembler("openai-chat", strict=strict, limits=Limits(max_depth=3))
    with pytest.raises(LimitExceeded) as raised:
        if how == "dicts":
            for each in chunks:
                r.feed(each)
        elif how == "events":
            ref = CallRef(0, "c", "f")
            r.feed(ArgumentsFragment(ref, '{"a": ['))
            r.feed(ArgumentsFragment(ref, "[[1]]]}"))
        else:
            data = "".join(f"data: {json.dumps(each)}\n\n" for each in chunks).encode()
            step = 1 if how == "1-byte chunks" else len(data)
            for at in range(0, len(data), step):
                r.feed_bytes(data[at : at + step])
    assert (raised.value.event, str(raised.value)) == (2, "event 2: arguments nest deeper than 3 levels (rule limits)")
    assert [(d.event, d.message) for d in r.close().diagnostics if d.code == "stream-failed"] == [
        (2, f"stopped at an error, so unfinished calls are cut: {raised.value}")
    ]


def test_bad_policy_choice_is_refused() -> None:
    with pytest.raises(ValueError, match="identical_text"):
        Policies(identical_text="maybe")


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda: Limits(max_call=5), "Limits takes no option 'max_call'; its options, by name: max_calls, "),
        (lambda: Policies(identical="resend"), "Policies takes no option 'identical'; its options, by name: "),
        (lambda: Policies("resend"), "Policies takes no options by position"),
        (lambda: Limits(256), "Limits takes no options by position"),
    ],
)
def test_an_option_the_class_has_not_is_invalid_input_naming_the_options(make: Any, said: str) -> None:
    """A misspelt limit or policy is the caller's mistake (InvalidInput, also a TypeError), named with
    the options there are, not Python's bare signature error; known options work as before."""
    from fsm.errors import InvalidInput

    with pytest.raises(InvalidInput, match=re.escape(said)):
        make()
    assert Limits(max_calls=5).max_calls == 5 and Policies(identical_text="new-call").identical_text == "new-call"
    assert attrs.evolve(Limits(), max_depth=8).max_depth == 8  # evolve goes through the same check


@pytest.mark.parametrize(
    "stream",
    [
        [chunk(tc(index=0, id="a", args='{"x": 1}')), chunk(finish="tool_calls")],  # missing-name as it ends
        [chunk(tc(index=0, id="a", name="f", args='{"a": "x')), chunk(finish="tool_calls")],  # unterminated
        [
            chunk(tc(index=0, id="a", name="f", args="{}")),
            chunk(tc(index=1, id="b", args='{"y": 2}')),
            chunk(finish="tool_calls"),
        ],
    ],
    ids=["nameless", "unterminated", "second-nameless"],
)
def test_a_call_ended_by_the_event_a_strict_violation_names_is_reported_finished(stream: list[Any]) -> None:
    """A violation found as a call ends (its name never came, its JSON never closed) is raised in
    strict mode after the call has its status, so the result holds it finished: its CallFinished
    (and any held text) must reach drain(), else a consumer (DeltaEmitter) never sees it end."""
    r = Reassembler("openai-chat", strict=True)
    outputs: list[Any] = []
    with pytest.raises(RemoteProtocolError):
        for event in stream:
            outputs += r.feed(event)
    result = r.close()
    outputs += r.drain()
    finished = [o.call for o in outputs if isinstance(o, CallFinished)]
    assert finished == list(result.calls)
    for call in result.calls:
        sent = "".join(o.text for o in outputs if isinstance(o, ArgumentsDelta) and o.index == call.index)
        assert sent == call.arguments_json


def test_a_stream_whose_provider_cannot_be_told_names_the_event_in_error_and_diagnostic() -> None:
    from fsm import UnsupportedProvider

    r = Reassembler()
    r.feed_bytes(b": ping\n\n")
    with pytest.raises(UnsupportedProvider) as error:
        r.feed_bytes(b'data: {"neither": "provider"}\n\n')
    assert error.value.event == 1 and str(error.value).startswith("event 1: cannot tell the provider")
    failed = [d for d in r.close().diagnostics if d.code == "stream-failed"]
    assert [d.event for d in failed] == [1]  # named no event before


@pytest.mark.parametrize("strict", [False, True])
def test_what_the_finish_reason_says_of_the_calls_names_its_event(strict: bool) -> None:
    """finish-without-calls and finish-reason-mapped are found at close(), but they are about the
    event that carried the finish reason: they name it (in strict mode, the error does too)."""
    text = {"choices": [{"index": 0, "delta": {"content": "hi"}}]}
    promised = Reassembler("openai-chat", strict=strict)
    for event in (text, text, {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}):
        promised.feed(event)
    if strict:
        with pytest.raises(RemoteProtocolError) as raised:
            promised.close()
        assert raised.value.event == 3
    assert [(d.code, d.event) for d in promised.close().diagnostics if d.code.startswith("finish")] == [
        ("finish-without-calls", 3)
    ]
    called = Reassembler("openai-chat", strict=strict)
    called.feed({"choices": [{"index": 0, "delta": {"tool_calls": [tc(0, "a", "f", "{}")]}}]})
    called.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    assert [(d.code, d.event) for d in called.close().diagnostics] == [("finish-reason-mapped", 2)]
