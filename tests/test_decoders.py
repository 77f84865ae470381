"""Hand-written streams for each wire shape, one test per behaviour the decoders promise."""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from fsm import CallStatus, Policies, Reassembler, RemoteProtocolError, Result
from fsm.wire.decoders.partial_args import PartialArgsWriter, parse_path


def run(provider: str, events: list[dict[str, Any]], **options: Any) -> Result:
    r = Reassembler(provider, **options)
    for event in events:
        r.feed(event)
    return r.close()


def summary(result: Result) -> list[tuple[str, str | None, Any]]:
    return [(c.id, c.name, c.arguments) for c in result.calls]


# -- Gemini ------------------------------------------------------------------------------------------


def gem(*parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


def fc(name: str, args: dict[str, Any] | None = None, id: str | None = None, sig: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": args if args is not None else {}}
    if id:
        call["id"] = id
    part: dict[str, Any] = {"functionCall": call}
    if sig:
        part["thoughtSignature"] = sig
    return part


def test_gemini_two_calls_to_one_tool_in_separate_events() -> None:
    result = run("gemini", [gem(fc("search", {"q": "A"})), gem(fc("search", {"q": "B"})), gem(finish="STOP")])
    assert [c.arguments for c in result.calls] == [{"q": "A"}, {"q": "B"}]
    assert result.finish_reason == "tool_calls"


def test_gemini_code_execution_is_a_server_call_and_other_parts_are_named_not_dropped() -> None:
    """Gemini's own code execution: an executableCode part is a server call (its code the input, the
    part its item, an id of its own kind so the client calls keep theirs); its codeExecutionResult is
    that call's result (tests/test_gemini_code_turns.py); inline data is a part this decoder does not
    reassemble, reported with its keys (a warning, so strict mode goes on). The calls and text around
    them come out as without them."""
    code = {"executableCode": {"language": "PYTHON", "code": "print(1 + 1)"}}
    outcome = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "2"}}
    events = [
        gem({"text": "Let me compute. "}, code),
        gem(outcome, {"inlineData": {"mimeType": "image/png", "data": "iVBO"}, "videoMetadata": None}),
        gem(fc("report", {"sum": 2}), {"text": "Done."}, finish="STOP"),
    ]
    for strict in (False, True):
        result = run("gemini", events, strict=strict)
        assert summary(result) == [("call_0", "report", {"sum": 2})] and result.text == "Let me compute. Done."
        (ran,) = result.server_tool_calls
        assert (ran.id, ran.name, ran.type, ran.input, ran.arguments, ran.status) == (
            "server_call_0",
            "code_execution",
            "executable_code",
            "print(1 + 1)",
            None,
            CallStatus.COMPLETE,
        )
        assert ran.item == {"language": "PYTHON", "code": "print(1 + 1)"}
        unread = [(d.event, d.message) for d in result.diagnostics if d.code == "part-not-reassembled"]
        assert unread == [(2, "parts[1] holds inlineData, which is not reassembled")]  # a None value is no content
        assert result.server_tool_results == (fsm.ServerToolResult(outcome, 1),)
        assert {d.severity.value for d in result.diagnostics if d.code == "part-not-reassembled"} == {"warning"}
    cut = run("gemini", [gem(code)])  # the part is whole: the code was not cut with the stream
    assert [c.status for c in cut.server_tool_calls] == [CallStatus.COMPLETE] and cut.calls == ()
    alone = run("gemini", [gem(code), gem({"text": "2"}, finish="STOP")])
    assert alone.finish_reason == "stop" and alone.calls == ()  # nothing for the client to run
    plain = run("gemini", [gem({"text": "hi", "thought": True, "thoughtSignature": "s"}), gem(fc("f"), finish="STOP")])
    assert "part-not-reassembled" not in plain.codes()


def test_gemini_code_parts_in_separate_events_are_separate_whole_calls() -> None:
    """Each executableCode part is whole, so its server call ends with the part. Left open, the
    code of a later event at the same position replaced it without a word (the first code that ran
    was lost), a MAX_TOKENS finish in the text after it called code that had run truncated, and the
    part's thoughtSignature was dropped. An identical part resent is still one call (a resend)."""
    first, second = ({"executableCode": {"language": "PYTHON", "code": code}} for code in ("print(1)", "print(2)"))
    outcome = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}}
    two = run("gemini", [gem(first), gem(outcome), gem(second), gem({"text": "done"}, finish="STOP")])
    ran = [(c.id, c.input, c.item, c.status) for c in two.server_tool_calls]
    assert ran == [
        ("server_call_0", "print(1)", first["executableCode"], CallStatus.COMPLETE),
        ("server_call_1", "print(2)", second["executableCode"], CallStatus.COMPLETE),
    ]
    long = run("gemini", [gem(first), gem(outcome), gem({"text": "the answer is"}, finish="MAX_TOKENS")])
    assert [c.status for c in long.server_tool_calls] == [CallStatus.COMPLETE] and "truncated" not in long.codes()
    signed = run("gemini", [gem({**first, "thoughtSignature": "sig"}), gem(finish="STOP")])
    assert [c.thought_signature for c in signed.server_tool_calls] == ["sig"]
    resent = run("gemini", [gem(first), gem(first), gem(finish="STOP")])
    assert [(c.input, c.item) for c in resent.server_tool_calls] == [("print(1)", first["executableCode"])]
    assert "resend" in resent.codes()
    same_id = [{"executableCode": {"id": "x", "code": code}} for code in ("a = 1", "a = 2")]
    renamed = run("gemini", [gem(same_id[0]), gem(same_id[1]), gem(finish="STOP")])
    assert [(c.id, c.input, c.item) for c in renamed.server_tool_calls] == [
        ("x", "a = 1", same_id[0]["executableCode"]),
        ("x_d2", "a = 2", same_id[1]["executableCode"]),  # each call keeps its own part
    ]


def test_gemini_code_part_resent_after_another_goes_on_its_own_call() -> None:
    # A code part resent after a different one: its text is a resend of the first call (policy
    # identical_text), and its sighting, which carries the part, went on a new call opened after
    # the ended ones: a third server call with input '' that no code ever had.
    first, second = ({"executableCode": {"language": "PYTHON", "code": code}} for code in ("print(1)", "print(2)"))
    events = [gem(first), gem(second), gem({**first, "thoughtSignature": "sig"}), gem(finish="STOP")]
    resent = run("gemini", events)
    assert [(c.id, c.input, c.item) for c in resent.server_tool_calls] == [
        ("server_call_0", "print(1)", first["executableCode"]),
        ("server_call_1", "print(2)", second["executableCode"]),
    ]
    assert resent.server_tool_calls[0].thought_signature == "sig"  # it rides on the call its part landed in
    assert "resend" in resent.codes()
    again = run("gemini", events, policies=Policies(identical_text="new-call"))
    assert [(c.input, c.item) for c in again.server_tool_calls] == [
        ("print(1)", first["executableCode"]),
        ("print(2)", second["executableCode"]),
        ("print(1)", first["executableCode"]),
    ]


def test_gemini_code_parts_resent_anywhere_are_their_own_calls_and_results() -> None:
    # Code parts streamed one per event (each at code position 0), then resent as one batch: the
    # second sat at position 1 there, where no code had been, and became a third server call. Its
    # result was then waited for again, and a result resent after other code was kept twice.
    a, b = ({"executableCode": {"language": "PYTHON", "code": code}} for code in ("print(1)", "print(2)"))
    ran_a, ran_b = ({"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": out}} for out in ("1", "2"))

    def seen(result: Result) -> tuple[list[tuple[str, str | None, bool]], list[str]]:
        calls = [(c.id, c.input, c.item is not None) for c in result.server_tool_calls]
        return calls, [r.block["codeExecutionResult"]["output"] for r in result.server_tool_results]

    two = ([("server_call_0", "print(1)", True), ("server_call_1", "print(2)", True)], ["1", "2"])
    batch = run("gemini", [gem(a), gem(b), gem(a, b), gem(ran_a), gem(ran_b), gem(finish="STOP")])
    assert seen(batch) == two and batch.codes().count("resend") == 2
    again = run("gemini", [gem(a), gem(ran_a), gem(b), gem(ran_b), gem(a), gem(ran_a), gem(finish="STOP")])
    assert seen(again) == two and again.codes().count("resend") == 2
    empty = {"executableCode": {"language": "PYTHON", "code": ""}}  # no text to compare: its part decides
    blank = run("gemini", [gem(a), gem(empty), gem(empty), gem(empty, a), gem(finish="STOP")])
    assert seen(blank) == ([("server_call_0", "print(1)", True), ("server_call_1", "", True)], [])
    # Two runs of the same code in one event stay two, with two results, and so when resent whole.
    dice = [gem(a, a), gem(ran_a, ran_a)]
    ids = ["server_call_0", "server_call_1"]
    assert seen(run("gemini", dice * 2)) == ([(i, "print(1)", True) for i in ids], ["1", "1"])
    # Under identical_text new-call the same code again is another run: it keeps its part (it went
    # back without one) and its result is waited for.
    new_call = Policies(identical_text="new-call")
    assert seen(run("gemini", [gem(a), gem(a)], policies=new_call)) == ([(i, "print(1)", True) for i in ids], [])
    rerun = run("gemini", [gem(a), gem(ran_a), gem(a), gem(ran_a)], policies=new_call)
    assert seen(rerun) == ([(i, "print(1)", True) for i in ids], ["1", "1"])


def test_gemini_a_b_b_gives_two_calls() -> None:
    result = run("gemini", [gem(fc("s", {"q": "A"})), gem(fc("s", {"q": "B"})), gem(fc("s", {"q": "B"}))])
    assert [c.arguments for c in result.calls] == [{"q": "A"}, {"q": "B"}]


def test_gemini_identical_resend_is_one_call_and_the_policy_can_say_two() -> None:
    events = [gem(fc("now")), gem(fc("now"))]
    assert len(run("gemini", events).calls) == 1
    assert len(run("gemini", events, policies=Policies(identical_text="new-call")).calls) == 2


def test_gemini_resend_at_another_position_is_the_same_call() -> None:
    # Calls streamed one per event (each at part 0), then resent as one batch, or a batch then one of
    # its calls alone: without ids the same name and arguments again is a resend (identical_text),
    # wherever in the event it sits; the resend's signature goes to that call.
    a, b = fc("s", {"q": "A"}), fc("s", {"q": "B"})
    batch_after = run("gemini", [gem(a), gem(b), gem(a, fc("s", {"q": "B"}, sig="SIG"), finish="STOP")])
    assert summary(batch_after) == [("call_0", "s", {"q": "A"}), ("call_1", "s", {"q": "B"})]
    assert batch_after.calls[1].thought_signature == "SIG"
    one_after = run("gemini", [gem(a, b), gem(b, finish="STOP")])
    assert summary(one_after) == [("call_0", "s", {"q": "A"}), ("call_1", "s", {"q": "B"})]
    swapped = run("gemini", [gem(a, b), gem(b, a, finish="STOP")])
    assert [c.arguments for c in swapped.calls] == [{"q": "A"}, {"q": "B"}]
    assert swapped.codes().count("resend") == 2
    # Two identical calls in one event are two calls (two dice), and so is a batch resent whole.
    dice = [gem(fc("roll"), fc("roll")), gem(fc("roll"), fc("roll"), finish="STOP")]
    assert len(run("gemini", dice).calls) == 2
    # One die, then two in one event: the first of them is the resend, the second a new call.
    assert len(run("gemini", [gem(fc("roll")), gem(fc("roll"), fc("roll"), finish="STOP")]).calls) == 2
    # So too when the earlier one sat elsewhere: the first of them moves to its place, a resend, and
    # the others are new (they were all one resend of it), each after the ones before it.
    look, roll = fc("look"), fc("roll")
    for rolled, calls in ((2, 3), (3, 4)):
        moved = run("gemini", [gem(look, roll), gem(*[roll] * rolled, finish="STOP")])
        assert [c.name for c in moved.calls] == ["look"] + ["roll"] * (calls - 1)
        assert moved.codes().count("resend") == 1
    resent = run("gemini", [gem(look, roll), gem(roll, roll), gem(roll, roll, finish="STOP")])
    assert len(resent.calls) == 3 and resent.codes().count("resend") == 3  # the second batch again: no new call
    # The policy still decides what the same text again means.
    again = run("gemini", [gem(a, b), gem(b, finish="STOP")], policies=Policies(identical_text="new-call"))
    assert len(again.calls) == 3


def test_gemini_ids_c1_c2_c1_give_two_calls() -> None:
    result = run("gemini", [gem(fc("f", {"n": 1}, "c1")), gem(fc("f", {"n": 2}, "c2")), gem(fc("f", {"n": 1}, "c1"))])
    assert summary(result) == [("c1", "f", {"n": 1}), ("c2", "f", {"n": 2})]


def test_gemini_late_signature_does_not_split_a_call() -> None:
    result = run("gemini", [gem(fc("f", {"n": 1}, "c1")), gem(fc("f", {"n": 1}, "c1", sig="SIG"))])
    assert len(result.calls) == 1 and result.calls[0].thought_signature == "SIG"


def test_gemini_late_signature_without_id_does_not_split_either() -> None:
    result = run("gemini", [gem(fc("f", {"n": 1})), gem(fc("f", {"n": 1}, sig="SIG"))])
    assert len(result.calls) == 1 and result.calls[0].thought_signature == "SIG"


def test_gemini_signature_only_on_the_first_call_stays_there() -> None:
    result = run("gemini", [gem(fc("f", {"n": 1}, sig="SIG"), fc("f", {"n": 2}))])
    assert [c.thought_signature for c in result.calls] == ["SIG", None]


def compat_call(name: str, id: str, arguments: str, sig: Any = None, index: int | None = None) -> dict[str, Any]:
    """A chunk of Gemini's OpenAI-compatible endpoint: a whole call, its signature in extra_content."""
    entry: dict[str, Any] = {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}
    if index is not None:
        entry["index"] = index
    if sig is not None:
        entry["extra_content"] = {"google": {"thought_signature": sig}}
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [entry]}}]}


@pytest.mark.parametrize("index", [None, 0], ids=["no-index", "indexed"])
def test_gemini_openai_endpoint_signature_stays_on_its_call_however_read(index: int | None) -> None:
    # A chunk of one whole indexed call is one the chat shortcuts take without the decoder: they
    # must leave a signed one to it, or the signature is lost where the decoder keeps it.
    chunks = [
        compat_call("f", "c1", '{"n": 1}', sig="SIG", index=index),
        compat_call("f", "c2", '{"n": 2}', index=None if index is None else 1),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    wire = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    for result in (run("openai-chat", chunks), run("auto", chunks), fsm.reassemble(wire)):
        assert [(c.id, c.arguments, c.thought_signature) for c in result.calls] == [
            ("c1", {"n": 1}, "SIG"),
            ("c2", {"n": 2}, None),
        ]
    # another server's extra_content of another shape signs nothing; a signature not text is refused
    other = compat_call("f", "c1", "{}", index=0)
    other["choices"][0]["delta"]["tool_calls"][0]["extra_content"] = {"vendor": {"thought_signature": "S"}}
    assert run("openai-chat", [other]).calls[0].thought_signature is None
    with pytest.raises(RemoteProtocolError, match="thought_signature"):
        run("openai-chat", [compat_call("f", "c1", "{}", sig=["S"], index=0)], strict=True)


def test_gemini_changed_args_under_one_id_replace_and_say_so() -> None:
    result = run("gemini", [gem(fc("f", {"n": 1}, "c1")), gem(fc("f", {"n": 2}, "c1"))])
    assert summary(result) == [("c1", "f", {"n": 2})]
    assert "arguments-replaced" in result.codes()


def test_gemini_parallel_calls_in_one_event() -> None:
    result = run("gemini", [gem({"text": "thinking"}, fc("a", {"x": 1}), fc("b", {"x": 2}))])
    assert [c.name for c in result.calls] == ["a", "b"]


def test_gemini_finish_in_its_own_event_and_max_tokens() -> None:
    result = run("gemini", [gem(fc("f", {"n": 1})), gem({"text": ""}, finish="MAX_TOKENS")])
    assert result.finish_reason == "length" and result.calls[0].status is CallStatus.COMPLETE


def test_gemini_json_array_framing_streamed() -> None:
    body = json.dumps([gem(fc("f", {"q": "A"})), gem(fc("f", {"q": "B"}), finish="STOP")]).encode()
    r = Reassembler()
    for i in range(0, len(body), 5):
        r.feed_bytes(body[i : i + 5])
    result = r.close()
    assert result.provider == "gemini" and [c.arguments for c in result.calls] == [{"q": "A"}, {"q": "B"}]


def test_gemini_sdk_style_snake_case_keys() -> None:
    event = {
        "candidates": [
            {"content": {"parts": [{"function_call": {"name": "f", "args": {"a": 1}}}]}, "finish_reason": "STOP"}
        ]
    }
    assert summary(run("gemini", [event])) == [("call_0", "f", {"a": 1})]


# -- Vertex partialArgs ------------------------------------------------------------------------------


def opening(name: str, sig: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"name": name, "willContinue": True}}
    if sig:
        part["thoughtSignature"] = sig
    return gem(part)


def partial(*entries: dict[str, Any]) -> dict[str, Any]:
    return gem({"functionCall": {"partialArgs": list(entries), "willContinue": True}})


CLOSE = gem({"functionCall": {}})


def test_vertex_builds_nested_arguments_from_paths() -> None:
    events = [
        opening("plan", sig="S"),
        partial({"jsonPath": "$.title", "stringValue": "Tr", "willContinue": True}),
        partial({"jsonPath": "$.title", "stringValue": 'ip "1"', "willContinue": True}),
        gem({"functionCall": {"willContinue": True}}),  # keep-alive
        partial({"jsonPath": "$.title", "stringValue": ""}),
        partial({"jsonPath": "$.days[0].n", "numberValue": 1}, {"jsonPath": "$.days[0].ok", "boolValue": True}),
        partial({"jsonPath": "$.days[1].n", "numberValue": 2.5}, {"jsonPath": "$.note", "nullValue": None}),
        partial({"jsonPath": "$['odd key']", "stringValue": "x"}),
        CLOSE,
        gem(finish="STOP"),
    ]
    result = run("gemini", events)
    assert result.calls[0].arguments == {
        "title": 'Trip "1"',
        "days": [{"n": 1, "ok": True}, {"n": 2.5}],
        "note": None,
        "odd key": "x",
    }
    assert result.calls[0].thought_signature == "S"


def test_vertex_empty_function_call_closes_and_the_next_opens_a_new_call() -> None:
    events = [
        opening("w"),
        partial({"jsonPath": "$.city", "stringValue": "Oslo"}),
        CLOSE,
        opening("w"),
        CLOSE,
        gem(finish="STOP"),
    ]
    result = run("gemini", events)
    assert [c.arguments for c in result.calls] == [{"city": "Oslo"}, {}]


def test_vertex_call_left_open_ends_when_another_call_begins() -> None:
    # No closing functionCall {} before the next call's part: the streamed call ends there (its
    # values all finished), and the next call is a call of its own, not text for the first.
    streamed = [opening("w"), partial({"jsonPath": "$.city", "stringValue": "Oslo"})]
    finish = gem({"text": ""}, finish="STOP")
    then_whole = run("gemini", [*streamed, gem(fc("t", {"r": 2})), finish])
    assert summary(then_whole) == [("call_0", "w", {"city": "Oslo"}), ("call_1", "t", {"r": 2})]
    assert not then_whole.problems()
    second = [opening("t"), partial({"jsonPath": "$.r", "numberValue": 2}), CLOSE]
    then_streamed = run("gemini", [*streamed, *second, finish])
    assert summary(then_streamed) == [("call_0", "w", {"city": "Oslo"}), ("call_1", "t", {"r": 2})]
    # The same call sent whole after its streamed arguments (an aggregate) is a resend of it.
    aggregate = run("gemini", [*streamed, gem(fc("w", {"city": "Oslo"})), finish])
    assert summary(aggregate) == [("call_0", "w", {"city": "Oslo"})] and not aggregate.problems()
    # Cut inside a string value: that call is truncated with its text, the next is its own.
    cut = [opening("w"), partial({"jsonPath": "$.city", "stringValue": "Os", "willContinue": True})]
    result = run("gemini", [*cut, *second, finish])
    first, second = result.calls
    assert (first.name, first.status, first.arguments_json) == ("w", CallStatus.TRUNCATED, '{"city": "Os')
    assert (second.name, second.status, second.arguments) == ("t", CallStatus.COMPLETE, {"r": 2})
    result = run("gemini", [*cut, gem(fc("t", {"r": 2})), finish])
    assert [(c.name, c.status) for c in result.calls] == [("w", CallStatus.TRUNCATED), ("t", CallStatus.COMPLETE)]
    assert result.calls[0].arguments_json == '{"city": "Os'


def test_vertex_stream_ending_without_the_closing_part() -> None:
    done = [opening("w"), partial({"jsonPath": "$.city", "stringValue": "Oslo"})]
    assert run("gemini", [*done, gem(finish="STOP")]).calls[0].arguments == {"city": "Oslo"}
    cut = run("gemini", [*done, partial({"jsonPath": "$.more", "stringValue": "tex", "willContinue": True})])
    assert cut.calls[0].status is CallStatus.TRUNCATED
    assert cut.calls[0].arguments_json == '{"city": "Oslo", "more": "tex'
    assert run("gemini", done).calls[0].status is CallStatus.TRUNCATED  # no finish at all


def test_vertex_max_tokens_mid_string_truncates() -> None:
    events = [
        opening("w"),
        partial({"jsonPath": "$.a", "stringValue": "x", "willContinue": True}),
        gem(finish="MAX_TOKENS"),
    ]
    result = run("gemini", events)
    assert result.calls[0].status is CallStatus.TRUNCATED and result.finish_reason == "length"


@pytest.mark.parametrize(
    ("path", "segments"),
    [("$.a", ("a",)), ("$.a.b[2]", ("a", "b", 2)), ("$['x.y'][0]", ("x.y", 0)), ('$["q"]', ("q",))],
)
def test_json_path_parsing(path: str, segments: tuple[object, ...]) -> None:
    assert parse_path(path) == segments


@pytest.mark.parametrize(
    "entries",
    [[{"jsonPath": "$.a[1]", "numberValue": 1}], [{"jsonPath": "a", "numberValue": 1}], [{"jsonPath": "$.a"}]],
)
def test_partial_args_out_of_order_or_malformed_is_a_protocol_error(entries: list[dict[str, Any]]) -> None:
    with pytest.raises(RemoteProtocolError):
        PartialArgsWriter().write(entries)


# -- Anthropic ----------------------------------------------------------------------------------------


def block_start(i: int, id: str, name: str, kind: str = "tool_use", input: Any = None) -> dict[str, Any]:
    return {
        "type": "content_block_start",
        "index": i,
        "content_block": {"type": kind, "id": id, "name": name, "input": input or {}},
    }


def block_delta(i: int, text: str) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": text}}


def block_stop(i: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": i}


def stop(reason: str) -> dict[str, Any]:
    return {"type": "message_delta", "delta": {"stop_reason": reason}}


START = {"type": "message_start", "message": {"content": []}}


def test_anthropic_fragments_and_skipped_block_indices() -> None:
    events = [
        START,
        {"type": "ping"},
        block_start(0, "t0", "a"),
        block_delta(0, '{"x": '),
        block_delta(0, "1}"),
        block_stop(0),
        block_start(3, "t3", "b"),  # a proxy skipped indices 1 and 2
        block_delta(3, '{"y": 2}'),
        block_stop(3),
        stop("tool_use"),
        {"type": "message_stop"},
    ]
    result = run("anthropic", events)
    assert summary(result) == [("t0", "a", {"x": 1}), ("t3", "b", {"y": 2})] and result.finish_reason == "tool_calls"


def test_anthropic_prefilled_input_without_deltas_and_empty_partial_json() -> None:
    events = [START, block_start(0, "t0", "a", input={"p": 1}), block_stop(0)]
    events += [block_start(1, "t1", "b"), block_delta(1, ""), block_stop(1), stop("tool_use")]
    assert summary(run("anthropic", events)) == [("t0", "a", {"p": 1}), ("t1", "b", {})]


def test_anthropic_whole_tool_use_inside_message_start() -> None:
    start = {
        "type": "message_start",
        "message": {"content": [{"type": "tool_use", "id": "t0", "name": "a", "input": {"z": 1}}]},
    }
    assert summary(run("anthropic", [start, stop("tool_use")])) == [("t0", "a", {"z": 1})]


def test_anthropic_server_tool_use_is_kept_apart() -> None:
    events = [
        START,
        block_start(0, "srvtoolu_1", "web_search", kind="server_tool_use"),
        block_delta(0, '{"query": "x"}'),
        block_stop(0),
        block_start(1, "toolu_1", "client_tool"),
        block_delta(1, "{}"),
        block_stop(1),
        stop("tool_use"),
    ]
    r = Reassembler("anthropic")
    outputs = [o for e in events for o in r.feed(e)]
    result = r.close()
    assert summary(result) == [("toolu_1", "client_tool", {})]
    assert [(c.id, c.arguments) for c in result.server_tool_calls] == [("srvtoolu_1", {"query": "x"})]
    assert all(getattr(o, "index", 0) == 0 for o in outputs)  # the client call is index 0 downstream


def test_anthropic_max_tokens_before_block_stop_truncates_with_raw_text() -> None:
    result = run("anthropic", [START, block_start(0, "t0", "a"), block_delta(0, '{"body": "Once'), stop("max_tokens")])
    call = result.calls[0]
    assert (call.status, call.arguments, call.arguments_json) == (CallStatus.TRUNCATED, None, '{"body": "Once')


def test_anthropic_start_repeated_for_an_open_block_keeps_its_streamed_input() -> None:
    # A proxy replaying content_block_start for the block it is streaming: the same call, whose
    # input is what streamed, not the {} placeholder of the repeated start.
    after = [START, block_start(0, "a", "f"), block_delta(0, '{"q": 1}'), block_start(0, "a", "f"), block_stop(0)]
    result = run("anthropic", [*after, stop("tool_use")])
    assert summary(result) == [("a", "f", {"q": 1})] and "arguments-replaced" not in result.codes()
    # Another id at that index is another call: the block it replaces was cut.
    other = [START, block_start(0, "a", "f"), block_delta(0, '{"q": 1}'), block_start(0, "b", "g"), block_stop(0)]
    assert summary(run("anthropic", [*other, stop("tool_use")])) == [("a", "f", {"q": 1}), ("b", "g", {})]


def test_anthropic_error_event_and_unknown_event() -> None:
    result = run("anthropic", [START, {"type": "mystery"}, {"type": "error", "error": {"message": "overloaded"}}])
    assert result.finish_reason == "error" and {"unknown-event", "provider-error"} <= set(result.codes())


# -- OpenAI Responses -----------------------------------------------------------------------------------


def added(i: int, call_id: str, name: str, item_id: str = "fc_1") -> dict[str, Any]:
    item = {"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": ""}
    return {"type": "response.output_item.added", "output_index": i, "item": item}


def args_delta(i: int, text: str, item_id: str = "fc_1") -> dict[str, Any]:
    return {"type": "response.function_call_arguments.delta", "output_index": i, "item_id": item_id, "delta": text}


def args_done(i: int, text: str) -> dict[str, Any]:
    return {"type": "response.function_call_arguments.done", "output_index": i, "arguments": text}


def item_done(i: int, call_id: str, name: str, args: str, item_id: str = "fc_1") -> dict[str, Any]:
    item = {"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": args}
    return {"type": "response.output_item.done", "output_index": i, "item": item}


COMPLETED = {"type": "response.completed", "response": {}}


def test_responses_streamed_then_done_equal_is_silent() -> None:
    events = [added(0, "call_a", "f"), args_delta(0, '{"a": '), args_delta(0, "1}"), args_done(0, '{"a": 1}')]
    events += [item_done(0, "call_a", "f", '{"a": 1}'), COMPLETED]
    result = run("openai-responses", events)
    assert summary(result) == [("call_a", "f", {"a": 1})] and result.finish_reason == "tool_calls"
    assert "resend" not in result.codes() and "arguments-replaced" not in result.codes()


def test_responses_done_that_differs_wins_and_says_so() -> None:
    events = [added(0, "call_a", "f"), args_delta(0, '{"a": 1}'), args_done(0, '{"a": 2}'), COMPLETED]
    result = run("openai-responses", events)
    assert summary(result) == [("call_a", "f", {"a": 2})] and "arguments-replaced" in result.codes()


def test_responses_item_done_that_differs_from_arguments_done_wins_and_says_so() -> None:
    # Two final words: the item's end is the later one. Equal, it changes nothing and says nothing.
    start = [added(0, "call_a", "f"), args_delta(0, '{"a": 1}'), args_done(0, '{"a": 1}')]
    result = run("openai-responses", [*start, item_done(0, "call_a", "f", '{"a": 2}'), COMPLETED])
    assert summary(result) == [("call_a", "f", {"a": 2})] and "arguments-replaced" in result.codes()
    same = run("openai-responses", [*start, item_done(0, "call_a", "f", '{"a": 1}'), COMPLETED])
    assert summary(same) == [("call_a", "f", {"a": 1})] and not same.problems()


def test_responses_no_deltas_only_done() -> None:
    events = [added(0, "call_a", "f"), item_done(0, "call_a", "f", '{"city": "Oslo"}'), COMPLETED]
    assert summary(run("openai-responses", events)) == [("call_a", "f", {"city": "Oslo"})]


def test_responses_item_id_rotating_between_added_and_done() -> None:
    events = [added(0, "call_a", "f", item_id="fc_1"), args_delta(0, '{"a": 1}', item_id="fc_2")]
    events += [item_done(0, "call_a", "f", '{"a": 1}', item_id="fc_3"), COMPLETED]
    assert summary(run("openai-responses", events)) == [("call_a", "f", {"a": 1})]


def test_responses_parallel_calls_by_output_index() -> None:
    events = [
        added(1, "c1", "f", "i1"),
        added(2, "c2", "g", "i2"),
        args_delta(2, "{}", "i2"),
        args_delta(1, '{"x": 1}', "i1"),
        COMPLETED,
    ]
    assert summary(run("openai-responses", events)) == [("c1", "f", {"x": 1}), ("c2", "g", {})]


def test_responses_incomplete_truncates_open_calls() -> None:
    incomplete = {"type": "response.incomplete", "response": {"incomplete_details": {"reason": "max_output_tokens"}}}
    result = run("openai-responses", [added(0, "c", "f"), args_delta(0, '{"a": "lon'), incomplete])
    assert result.calls[0].status is CallStatus.TRUNCATED and result.finish_reason == "length"


def test_responses_event_line_after_data_line_in_sse() -> None:
    body = "".join(
        f"data: {json.dumps(e)}\nevent: {e['type']}\n\n" for e in [added(0, "c", "f"), args_delta(0, "{}"), COMPLETED]
    )
    r = Reassembler()
    r.feed_bytes(body.encode())
    assert summary(r.close()) == [("c", "f", {})]


# -- Ollama native ---------------------------------------------------------------------------------------


def ollama_line(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"message": {"role": "assistant", "content": "", "tool_calls": list(calls)}, "done": False}


def ollama_call(i: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"function": {"index": i, "name": name, "arguments": args}}


def test_ollama_whole_calls_with_function_index_and_done_reason() -> None:
    events = [
        ollama_line(ollama_call(0, "ls", {"p": "/"})),
        ollama_line(ollama_call(0, "ls", {"p": "/tmp"})),
        {"message": {}, "done": True, "done_reason": "stop"},
    ]
    result = run("ollama", events)
    assert [c.arguments for c in result.calls] == [{"p": "/"}, {"p": "/tmp"}] and result.finish_reason == "tool_calls"


# -- Bedrock ---------------------------------------------------------------------------------------------


def test_bedrock_decoded_events_with_padding_and_empty_input() -> None:
    events = [
        {"messageStart": {"role": "assistant", "p": "abc"}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "hi"}, "p": "x"}},
        {
            "contentBlockStart": {
                "contentBlockIndex": 1,
                "start": {"toolUse": {"toolUseId": "tu1", "name": "f"}},
                "p": "y",
            }
        },
        {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '{"a"'}}}},
        {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": {"input": ": 1}"}}}},
        {"contentBlockStop": {"contentBlockIndex": 1}},
        {"contentBlockStart": {"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "tu2", "name": "g"}}}},
        {"contentBlockStop": {"contentBlockIndex": 2}},
        {"messageStop": {"stopReason": "tool_use"}},
        {"metadata": {"usage": {}}},
    ]
    result = run("bedrock", events)
    assert summary(result) == [("tu1", "f", {"a": 1}), ("tu2", "g", {})] and result.finish_reason == "tool_calls"


def test_bedrock_start_repeated_for_an_open_block_keeps_its_streamed_input() -> None:
    start = {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "tu1", "name": "f"}}}}
    events = [
        start,
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"a": 1}'}}}},
        start,
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "tool_use"}},
    ]
    result = run("bedrock", events)
    assert summary(result) == [("tu1", "f", {"a": 1})] and "arguments-replaced" not in result.codes()


def test_bedrock_exception_event_truncates() -> None:
    events = [
        {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "tu1", "name": "f"}}}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"a'}}}},
        {"modelStreamErrorException": {"message": "boom"}},
    ]
    result = run("bedrock", events)
    assert result.finish_reason == "error" and result.calls[0].status is CallStatus.TRUNCATED


# -- Cohere ------------------------------------------------------------------------------------------------


def test_cohere_tool_calls_object_and_pretty_printed_fragments() -> None:
    def msg(kind: str, i: int, **call: Any) -> dict[str, Any]:
        return {"type": kind, "index": i, "delta": {"message": {"tool_calls": call}}}

    events = [
        {"type": "message-start", "delta": {"message": {"role": "assistant"}}},
        {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "I will"}}},
        msg("tool-call-start", 0, id="w_1", type="function", function={"name": "weather", "arguments": ""}),
        msg("tool-call-delta", 0, function={"arguments": "{\n  "}),
        msg("tool-call-delta", 0, function={"arguments": '"city": "Oslo"\n'}),
        msg("tool-call-delta", 0, function={"arguments": "}"}),
        {"type": "tool-call-end", "index": 0},
        {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}},
    ]
    result = run("cohere", events)
    assert summary(result) == [("w_1", "weather", {"city": "Oslo"})] and result.finish_reason == "tool_calls"


def test_cohere_delta_no_start_opened_opens_a_call_reported_once() -> None:
    """Before its start, and after its end, a delta still opens a call, as on Anthropic and
    Bedrock, and says so (unopened-call, once for each such call, naming its event)."""

    def delta(i: int, piece: str) -> dict[str, Any]:
        return {
            "type": "tool-call-delta",
            "index": i,
            "delta": {"message": {"tool_calls": {"function": {"arguments": piece}}}},
        }

    start = {
        "type": "tool-call-start",
        "index": 1,
        "delta": {"message": {"tool_calls": {"id": "w", "function": {"name": "f"}}}},
    }
    events = [
        delta(0, '{"a":'),
        delta(0, " 1}"),
        start,
        delta(1, "{}"),
        {"type": "tool-call-end", "index": 1},
        delta(1, '{"late": true}'),
        {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}},
    ]
    result = run("cohere", events)
    kept = [(c.name, c.arguments_json, c.status.value) for c in result.calls]
    # The nameless ones have nothing to run them with: kept, with their text, as invalid (missing-name).
    assert kept == [(None, '{"a": 1}', "invalid"), ("f", "{}", "complete"), (None, '{"late": true}', "invalid")]
    assert [d.event for d in result.diagnostics if d.code == "unopened-call"] == [1, 6]


# -- auto-detection ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "provider"),
    [
        ({"choices": []}, "openai-chat"),
        ({"type": "response.created", "response": {}}, "openai-responses"),
        ({"type": "message_start", "message": {"content": []}}, "anthropic"),
        ({"candidates": []}, "gemini"),
        ({"message": {}, "done": False}, "ollama"),
        ({"messageStart": {}}, "bedrock"),
        ({"type": "message-start"}, "cohere"),
    ],
)
def test_auto_detection_from_the_first_event(first: dict[str, Any], provider: str) -> None:
    r = Reassembler()
    r.feed(first)
    assert r.close().provider == provider


@pytest.mark.parametrize(
    "event",
    [
        {"type": ["message_start"]},
        {"type": "message_delta", "delta": {"stop_reason": ["tool_use"]}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": {"x": 1}}},
    ],
)
def test_anthropic_hostile_field_types_are_protocol_errors(event: dict[str, Any]) -> None:
    r = Reassembler("anthropic")
    with pytest.raises(RemoteProtocolError, match="event 1"):
        r.feed(event)


def test_cohere_hostile_finish_reason_is_a_protocol_error() -> None:
    with pytest.raises(RemoteProtocolError):
        Reassembler("cohere").feed({"type": "message-end", "delta": {"finish_reason": ["TOOL_CALL"]}})
