"""A Responses input item whose id an earlier item has (policy one-item-one-id): the API refuses
the request ("Duplicate item found with id"), so ``check`` names it and ``repair`` settles it,
while the pairing by ``call_id`` is left as it was (audit 72 found the gap)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fsm import history, messages, reassemble
from fsm.history import Kind
from tests.conftest import CAPTURES, captures

ASK = {"role": "user", "content": "go"}
NEXT = {"role": "user", "content": "and then?"}
THOUGHT = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "E1"}
SAID = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Looking.", "annotations": []}],
}
CALL = {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "f", "arguments": "{}"}
OUTPUT = {"type": "function_call_output", "call_id": "call_a", "output": "ok"}


def kinds(report: history.Report) -> list[tuple[str, int, str]]:
    return [(f.kind.value, f.message, f.id) for f in report.findings]


def settled(h: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[tuple[str, int, str | None]]]:
    fixed, changes = history.repair(h, format="responses")
    return fixed, [(c.kind, c.message, c.id) for c in changes]


def test_a_turn_appended_twice_is_named_item_by_item_and_repaired_without_its_copies() -> None:
    h = [ASK, THOUGHT, SAID, CALL, OUTPUT, THOUGHT, SAID, CALL, OUTPUT, NEXT]
    before = copy.deepcopy(h)
    assert kinds(history.check(h, format="responses")) == [
        ("duplicate-item", 6, "rs_1"),
        ("duplicate-item", 7, "msg_1"),
        ("reused", 8, "call_a"),  # allowed: a later turn may use an answered call's id again
        ("duplicate-item", 8, "fc_1"),
    ]
    assert history.check(h, format="responses").rejected
    fixed, changes = settled(h)
    assert changes == [
        ("dropped-duplicate-item", 6, "rs_1"),
        ("dropped-duplicate-item", 7, "msg_1"),
        ("removed-item-id", 8, "fc_1"),
    ]
    assert fixed == [ASK, THOUGHT, SAID, CALL, OUTPUT, {k: v for k, v in CALL.items() if k != "id"}, OUTPUT, NEXT]
    assert h == before  # the input is never changed
    assert not history.check(fixed, format="responses").rejected
    assert history.repair(fixed, format="responses") == (fixed, [])


def test_repairs_after_a_dropped_copy_name_the_message_where_it_stood_in_the_input() -> None:
    lone = {"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "g", "arguments": "{}"}
    h = [ASK, THOUGHT, THOUGHT, CALL, lone, OUTPUT, NEXT]
    fixed, changes = settled(h)
    assert changes == [("dropped-duplicate-item", 3, "rs_1"), ("placeholder-result", 5, "call_b")]
    assert [item.get("type", item.get("role")) for item in fixed] == [
        "user",
        "reasoning",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
        "user",
    ]
    assert history.check(fixed, format="responses").findings == ()


@pytest.mark.parametrize(
    "item",
    [
        {**CALL, "call_id": "call_b"},
        {"type": "custom_tool_call", "id": "fc_1", "call_id": "call_b", "name": "patch", "input": "x"},
        {"type": "function_call_output", "id": "fc_1", "call_id": "call_a", "output": "again"},
    ],
    ids=["function_call", "custom_tool_call", "function_call_output"],
)
def test_an_item_the_api_takes_without_an_id_loses_the_repeated_one(item: dict[str, Any]) -> None:
    h = [ASK, CALL, item, OUTPUT]
    assert ("duplicate-item", 3, "fc_1") in kinds(history.check(h, format="responses"))
    fixed, changes = settled(h)
    assert ("removed-item-id", 3, "fc_1") in changes
    assert not any(f.kind is Kind.DUPLICATE_ITEM for f in history.check(fixed, format="responses").findings)


@pytest.mark.parametrize(
    "other", [{**THOUGHT, "encrypted_content": "E2"}, {**SAID, "id": "rs_1"}], ids=["reasoning", "message"]
)
def test_a_differing_item_that_needs_its_id_is_kept_for_the_caller_each_time(other: dict[str, Any]) -> None:
    h = [ASK, THOUGHT, CALL, OUTPUT, other, NEXT]
    fixed, changes = settled(h)
    assert fixed == h and changes == [("kept-duplicate-item", 5, "rs_1")]
    assert kinds(history.check(fixed, format="responses")) == [("duplicate-item", 5, "rs_1")]
    assert settled(fixed) == (fixed, changes)


def test_a_reference_sent_twice_goes_once_and_a_local_shell_output_pairs_by_its_id() -> None:
    reference = {"type": "item_reference", "id": "msg_0"}
    shell = {
        "type": "local_shell_call",
        "id": "lsh_1",
        "call_id": "sh_1",
        "action": {"type": "exec", "command": ["ls"]},
    }
    answer = {"type": "local_shell_call_output", "id": "sh_1", "output": "a.txt"}
    h = [ASK, reference, reference, shell, answer, NEXT]
    fixed, changes = settled(h)
    assert changes == [("dropped-duplicate-item", 3, "msg_0")]
    assert fixed == [ASK, reference, shell, answer, NEXT]
    assert history.check(fixed, format="responses").findings == ()


def test_other_formats_and_a_history_of_unique_ids_are_left_as_they_were() -> None:
    h = [ASK, THOUGHT, SAID, CALL, OUTPUT, NEXT]
    assert history.check(h, format="responses").findings == ()
    assert history.repair(h, format="responses") == (h, [])
    chat = [
        {"role": "user", "content": "go", "id": "x"},
        {"role": "assistant", "content": "hi", "id": "x"},  # an id no chat API reads
    ]
    assert history.check(chat, format="openai").findings == ()


RESPONSES = [path for path in captures() if path.parent.name == "openai_responses"]


@pytest.mark.skipif(
    not RESPONSES, reason=f"recorded captures not found at {CAPTURES} (../shared is beside the project in CI)"
)
@pytest.mark.parametrize("path", RESPONSES, ids=lambda p: p.name)
def test_a_recorded_turn_sent_back_twice_is_repaired_to_one_the_api_takes(path: Any) -> None:
    result = reassemble(path.read_bytes())
    said = messages.assistant_message(result, "openai-responses", incomplete="include")
    answers = [messages.tool_result(call, "done", "openai-responses") for call in result.complete_calls]
    answers += messages.incomplete_answers(result, "openai-responses")
    turn = [*said, *messages.tool_results(answers, "openai-responses")]
    h = [ASK, *turn, *copy.deepcopy(turn), NEXT]
    fixed, _ = history.repair(h, format="responses")
    assert not history.check(fixed, format="responses").rejected
    assert history.repair(fixed, format="responses") == (fixed, [])
    ids = [item["id"] for item in fixed if isinstance(item.get("id"), str)]
    assert len(ids) == len(set(ids))


def test_an_item_kept_as_differing_is_not_said_kept_once_the_pairing_drops_the_earlier_one() -> None:
    """A reasoning item of an id an earlier one has, differing from it, is kept and said kept
    (``kept-duplicate-item``); but when the pairing drops the earlier one (its call went), the history
    repair writes holds the id once: ``check`` names no duplicate, and repair said one (a draw of
    test_history_property's property: the first item's ``summary`` made a string)."""
    odd = {"type": "reasoning", "id": "rs_1", "summary": "abc"}  # before a call item the pairing drops
    wait = {"type": "computer_call", "id": "i0", "call_id": "e", "status": "completed", "action": {"type": "wait"}}
    call = {"type": "function_call", "id": "i1", "call_id": "a", "name": "f", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "a", "output": "r"}
    again = {"type": "reasoning", "id": "rs_1", "summary": []}
    later = {"type": "function_call", "id": "i2", "call_id": "b", "name": "f", "arguments": "{}"}
    h = [ASK, odd, wait, call, {**call, "id": "i3"}, output, again, later, {**output, "call_id": "b"}, NEXT]
    assert [f.kind for f in history.check(h, format="responses").findings].count(Kind.DUPLICATE_ITEM) == 1
    fixed, changes = history.repair(h, format="responses")
    assert "dropped-reasoning" in [c.kind for c in changes]
    left = history.check(fixed, format="responses")
    said = [c.kind for c in changes].count("kept-duplicate-item")
    assert said == len(left.of(Kind.DUPLICATE_ITEM)) == 0, (changes, left.findings)
    assert history.repair(fixed, format="responses") == (fixed, [])
