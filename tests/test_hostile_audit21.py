"""Hostile audit 21: the last round's code (nameless calls invalid, the Responses built-in action
checks, Gemini's id-less resends) against megabyte, malformed and split input.

Each test failed before its fix, or holds a path the audit fed and found sound. Work is counted, not timed."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from typing import Any

import pytest

import fsm
from tests import test_hostile_audit15 as audit15


def gem(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


def fcall(name: str, **args: Any) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": args}}


# -- Gemini without ids: where a call resent at a new place goes ---------------------------------------------


def shifted_rolls(n: int) -> list[dict[str, Any]]:
    """n id-less dice rolled, then resent after n other calls: each resend sits where no roll was."""
    others = [fcall("look", i=i) for i in range(n)]
    return [gem([fcall("roll")] * n), gem([*others, *[fcall("roll")] * n], "STOP")]


def test_gemini_resends_at_new_places_cost_the_same_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    # each resend looked through every earlier place of its like from the first for one not taken in
    # this event: n^2 steps for n resends (8,000 dice: 2.9 s of CPU)
    limits = fsm.Limits(max_calls=10_000, max_diagnostics_per_code=10_000)
    result = fsm.reassemble(shifted_rolls(300), "gemini", limits=limits)
    assert (len(result.calls), result.codes().count("resend")) == (600, 300)
    monkeypatch.setattr(audit15, "ADAPTER", ("fsm/wire/decoders/gemini.py",))
    small, large = (audit15.adapter_lines(shifted_rolls(n)) for n in (100, 800))
    assert large <= small * 8 * 1.25


PROBE = """
import fsm
from tests.test_hostile_audit21 import fcall, gem
others = [fcall("look", i=i) for i in range(7)]
result = fsm.reassemble([gem([fcall("roll")] * 6), gem([*others, fcall("roll"), fcall("roll")], "STOP")], "gemini")
print([d.message for d in result.diagnostics if d.code == "resend"])
"""


def test_which_earlier_call_a_gemini_resend_repeats_does_not_hang_on_the_process_hash_seed() -> None:
    # the places a call held were kept in the order of a set of (hash of its name and text, place):
    # which earlier roll a resend repeated (and so the call its resend diagnostic names) changed with
    # PYTHONHASHSEED, from one run of the same stream to the next. The first places first now.
    said = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
        said.add(run.stdout)
    assert said == {
        str(["call call_0: the same arguments again; not added", "call call_1: the same arguments again; not added"])
        + "\n"
    }


# -- Responses built-in actions: what a fault shows ---------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ({"type": "click", "button": 10**5000, "x": 1, "y": 2}, "has button 1" + "0" * 56 + "..."),
        ({"type": "keypress", "keys": ["a", 10**5000]}, '(keypress) has keys ["a", 1' + "0" * 50 + "..."),
        ({"type": "type", "text": {"n": 10**5000}}, '(type) has text {"n": 1' + "0" * 50),
    ],
)
def test_an_unusable_action_holding_an_integer_python_writes_no_text_for_is_invalid_not_a_failed_stream(
    value: dict[str, Any], said: str
) -> None:
    # the fault was shown by writing the value, which raised ValueError past the int-string limit:
    # the whole stream failed (stream-failed) where a click of another button makes the call invalid
    from tests.test_built_in_actions import stream

    result = fsm.reassemble(stream("computer_call", value), "openai-responses")
    (call,) = result.calls
    assert call.status is fsm.CallStatus.INVALID and "stream-failed" not in result.codes()
    (why,) = [d.message for d in result.diagnostics if d.code == "unusable-action"]
    assert said in why


# -- Responses: a second output_item.done for an item already ended --------------------------------------------


def responses_done_twice(
    call_type: str, first: Any, second: Any, status: str = "completed", name: str | None = "f"
) -> list[dict[str, Any]]:
    if call_type == "function_call":
        item: dict[str, Any] = {"type": call_type, "id": "it_1", "call_id": "call_1", "name": "f"}
        field = "arguments"
    else:
        item = {"type": call_type, "id": "it_1", "call_id": "call_1", "pending_safety_checks": []}
        field = "action"
    done = {"type": "response.output_item.done", "output_index": 0}
    return [
        {"type": "response.created", "response": {"id": "resp_1", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "status": "in_progress"}},
        {**done, "item": {**item, field: first, "status": "completed"}},
        {**done, "item": {**item, field: second, "status": status, **({"name": name} if "name" in item else {})}},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}},
    ]


CLICK = {"type": "click", "button": "left", "x": 1, "y": 2}


@pytest.mark.parametrize(
    ("call_type", "first", "second", "status"),
    [
        ("function_call", '{"a": 1}', '{"a": 2}', "completed"),
        ("function_call", '{"a": 1}', '{"a": 1}', "incomplete"),
        ("computer_call", CLICK, {**CLICK, "button": "middle"}, "completed"),
        ("computer_call", CLICK, {**CLICK, "x": 9}, "completed"),
    ],
)
def test_a_second_item_done_that_says_otherwise_is_reported_and_the_first_stands(
    call_type: str, first: Any, second: Any, status: str
) -> None:
    # the call had ended (handed out to run) at the first output_item.done; a second one, with other
    # input or another status, was dropped without a word (input events after the end open a call of
    # their own, duplicate-id: not this one, which carries the whole item again)
    events = responses_done_twice(call_type, first, second, status)
    result = fsm.reassemble(events, "openai-responses")
    (call,) = result.calls
    assert call.status is fsm.CallStatus.COMPLETE
    assert call.arguments == (json.loads(first) if isinstance(first, str) else first)
    (note,) = [d for d in result.diagnostics if d.code == "item-done-again"]
    assert note.event == 4 and "call call_1" in note.message and "the first stands" in note.message
    strict = fsm.Reassembler("openai-responses", strict=True)
    with pytest.raises(fsm.RemoteProtocolError, match=r"output_item\.done again"):
        for event in events:
            strict.feed(event)


@pytest.mark.parametrize("call_type", ["function_call", "computer_call"])
def test_a_second_item_done_that_says_the_same_is_a_quiet_resend(call_type: str) -> None:
    first = '{"a": 1}' if call_type == "function_call" else CLICK
    result = fsm.reassemble(responses_done_twice(call_type, first, first), "openai-responses")
    assert [c.status for c in result.calls] == [fsm.CallStatus.COMPLETE]
    assert "item-done-again" not in result.codes()


# -- whole against split: the same result however the bytes arrive -------------------------------------------


def sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def fed(body: bytes, provider: str, sizes: list[int] | None) -> fsm.Result:
    reader = fsm.Reassembler(provider, limits=fsm.Limits(max_calls=10_000))
    at = 0
    for size in sizes or [len(body)]:
        reader.feed_bytes(body[at : at + size])
        at += size
    reader.feed_bytes(body[at:])
    return reader.close()


def random_sizes(body: bytes, seed: int) -> list[int]:
    rng, sizes, total = random.Random(seed), [], 0
    while total < len(body):
        sizes.append(rng.choice((1, 2, 7, 64, 4096, 65537)))
        total += sizes[-1]
    return sizes


MEGABYTE_TEXT = json.dumps({"body": 'x\\"y{}\u00e9\ud83d\ude00' * 100_000})


def chat_nameless() -> list[dict[str, Any]]:
    def chunk(call: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
        delta = {"tool_calls": [call]} if call else {}
        return {
            "id": "c",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    pieces = [MEGABYTE_TEXT[i : i + 997] for i in range(0, len(MEGABYTE_TEXT), 997)]
    events = [chunk({"index": 0, "id": "a", "type": "function", "function": {"arguments": ""}})]
    events += [chunk({"index": 0, "function": {"arguments": piece}}) for piece in pieces]
    events += [chunk({"index": 1, "id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}})]
    return [*events, chunk(None, "tool_calls")]


def responses_batch() -> list[dict[str, Any]]:
    from tests.test_built_in_actions import stream

    actions: list[dict[str, Any]] = [{"type": "drag", "path": [{"x": i, "y": -i}] * 3} for i in range(20_000)]
    return stream("computer_call", {"actions": [*actions, {**CLICK, "button": "middle"}]})


def gemini_rolls() -> list[dict[str, Any]]:
    rng = random.Random(21)
    events = []
    for _ in range(40):
        parts = [
            fcall(rng.choice(["roll", "look"]), **({"i": rng.randint(0, 1)} if rng.random() < 0.4 else {}))
            for _ in range(rng.randint(1, 6))
        ]
        events.append(gem(parts))
    events[-1]["candidates"][0]["finishReason"] = "STOP"
    return events


@pytest.mark.parametrize(
    ("provider", "make", "status"),
    [
        ("openai-chat", chat_nameless, [fsm.CallStatus.INVALID, fsm.CallStatus.COMPLETE]),
        ("openai-responses", responses_batch, [fsm.CallStatus.INVALID]),
        ("gemini", gemini_rolls, None),
    ],
)
def test_a_megabyte_of_hostile_input_reads_the_same_whole_and_in_random_pieces(
    provider: str, make: Any, status: list[fsm.CallStatus] | None
) -> None:
    # a nameless call of a megabyte of escapes and astral characters beside a named one, a computer
    # batch of 20,000 drags with one bad click last, and id-less Gemini calls resent at shifting places
    events = make()
    whole = fsm.reassemble(events, provider, limits=fsm.Limits(max_calls=10_000))
    if status is not None:
        assert [c.status for c in whole.calls] == status
    body = sse(events)
    assert fed(body, provider, None) == whole
    for seed in (1, 2):
        assert fed(body, provider, random_sizes(body, seed)) == whole


# -- a name that comes after its call finished without one ---------------------------------------------------


def claude_nameless_then_named() -> list[dict[str, Any]]:
    start = {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": []}}
    block = {"type": "tool_use", "id": "t1", "input": {}}
    return [
        start,
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"x": 1}'}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 0, "content_block": {**block, "name": "f"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]


def test_a_name_after_a_nameless_call_finished_does_not_rename_what_was_handed_out() -> None:
    # the block's start again, now with a name: the name was set on the finished call, so the result
    # said ("f", invalid) where its CallFinished had said (None, invalid), a named call never run
    events = claude_nameless_then_named()
    reader = fsm.Reassembler("anthropic")
    finished = [out.call for event in events for out in reader.feed(event) if isinstance(out, fsm.CallFinished)]
    result = reader.close()
    assert finished == list(result.calls)
    first = result.calls[0]
    assert (first.name, first.status, first.arguments_json) == (None, fsm.CallStatus.INVALID, '{"x": 1}')
    notes = [d.message for d in result.diagnostics if d.code == "missing-name"]
    assert notes[0] == "call t1: finished without a name, so invalid"
    assert notes[1] == "call t1: name 'f' arrived after it finished without one; not taken"
    assert fsm.reassemble(sse(events), "anthropic") == result


def test_a_second_item_done_that_names_a_call_ended_without_a_name_is_reported() -> None:
    # a nameless function call ended invalid (missing-name); the item again with a name was dropped unseen
    events = responses_done_twice("function_call", "{}", "{}", name="lookup")
    del events[1]["item"]["name"], events[2]["item"]["name"]
    result = fsm.reassemble(events, "openai-responses")
    assert [(c.name, c.status) for c in result.calls] == [(None, fsm.CallStatus.INVALID)]
    (note,) = [d.message for d in result.diagnostics if d.code == "item-done-again"]
    assert note == "call call_1: output_item.done again, with name 'lookup': not read, the first stands"
