"""Task 158 (audit 154): a Responses output answers only a call of its kind under its id (policy
result-answers-its-kind).

Before: with ``computer_call x``, ``function_call x``, ``function_call_output x`` the k-th rule keyed
results by id alone, so the function's output was taken as the computer call's answer, the function
call was renamed ``x_d2`` and given a placeholder, and check never called the computer call dangling."""

from __future__ import annotations

from typing import Any

from fsm import history
from fsm.history import Kind, RepairPolicy

SHOT = {"type": "computer_screenshot", "image_url": "data:image/png;base64,AA=="}
ASK = {"role": "user", "content": "go"}


def computer(key: str = "x") -> dict[str, Any]:
    return {"type": "computer_call", "call_id": key, "action": {"type": "screenshot"}}


def function(key: str = "x") -> dict[str, Any]:
    return {"type": "function_call", "call_id": key, "name": "f", "arguments": "{}"}


def custom(key: str = "x") -> dict[str, Any]:
    return {"type": "custom_tool_call", "call_id": key, "name": "g", "input": "i"}


def out(kind: str, key: str = "x") -> dict[str, Any]:
    return {"type": f"{kind}_output", "call_id": key, "output": SHOT if kind == "computer_call" else kind}


def _found(items: list[dict[str, Any]]) -> list[tuple[str, int, str | None]]:
    return [(f.kind.value, f.message, f.name) for f in history.check(items, "responses").findings]


def _repaired(items: list[dict[str, Any]], policy: RepairPolicy | None = None) -> list[dict[str, Any]]:
    fixed, _ = history.repair(items, policy, format="responses")
    assert history.check(fixed, "responses").findings == ()  # repair leaves nothing check names
    assert history.repair(fixed, policy, format="responses") == (fixed, [])  # and a second repair no change
    return fixed


def _pairs(fixed: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(item["type"], item["call_id"]) for item in fixed if "call_id" in item]


def test_a_function_output_does_not_answer_the_computer_call_before_it() -> None:
    items = [ASK, computer(), function(), out("function_call")]
    assert _found(items) == [("duplicate-call", 3, "f"), ("dangling", 2, "computer")]
    fixed, changes = history.repair(items, format="responses")
    assert [(c.kind, c.message) for c in changes] == [("dropped-call", 2)]
    assert _pairs(fixed) == [("function_call", "x"), ("function_call_output", "x")]
    assert fixed[-1]["output"] == "function_call"  # the function's own output, not a placeholder
    assert _repaired(items) == fixed
    assert history.anything_dangling(items) and not history.anything_dangling(fixed)


def test_a_computer_output_does_not_answer_the_function_call_before_it() -> None:
    items = [ASK, function(), computer(), out("computer_call")]
    assert _found(items) == [("duplicate-call", 3, "computer"), ("dangling", 2, "f")]
    fixed = _repaired(items)
    assert _pairs(fixed) == [
        ("function_call", "x"),
        ("computer_call", "x_d2"),
        ("computer_call_output", "x_d2"),
        ("function_call_output", "x"),
    ]
    assert fixed[4]["output"] != "function_call"  # a placeholder for the function call
    assert fixed[3]["output"] == SHOT  # the screenshot stays with its computer call


def test_mixed_kinds_under_one_id_each_take_their_own_output_whatever_the_order() -> None:
    items = [ASK, computer(), function(), custom(), out("custom_tool_call"), out("function_call"), out("computer_call")]
    found = _found(items)
    assert [kind for kind, _, _ in found] == ["duplicate-call", "duplicate-call"]  # no result is a second one
    fixed = _repaired(items)
    by_id = {item["call_id"]: item["type"] for item in fixed[1:] if item["type"].endswith("_call")}
    assert by_id == {"x": "computer_call", "x_d2": "function_call", "x_d3": "custom_tool_call"}
    answers = {item["call_id"]: item for item in fixed[1:] if item["type"].endswith("_output")}
    assert answers["x"]["output"] == SHOT
    assert answers["x_d2"]["output"] == "function_call"
    assert answers["x_d3"]["output"] == "custom_tool_call"


def test_two_outputs_of_one_kind_for_one_call_of_it_are_a_duplicate_result_beside_another_kind() -> None:
    items = [ASK, function(), custom(), out("function_call"), out("function_call")]
    kinds = [kind for kind, _, _ in _found(items)]
    assert kinds.count(Kind.DUPLICATE_RESULT.value) == 1 and "dangling" in kinds  # the custom call went unanswered
    fixed = _repaired(items)
    assert sorted(_pairs(fixed)) == sorted(
        [
            ("function_call", "x"),
            ("custom_tool_call", "x_d2"),
            ("function_call_output", "x"),
            ("custom_tool_call_output", "x_d2"),
        ]
    )


def test_drop_call_keeps_the_function_call_and_its_output_under_its_id() -> None:
    items = [ASK, function(), computer(), out("function_call")]
    fixed = _repaired(items, RepairPolicy(dangling="drop-call"))
    assert _pairs(fixed) == [("function_call", "x"), ("function_call_output", "x")]
