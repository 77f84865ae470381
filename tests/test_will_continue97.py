"""Gemini Live's NON_BLOCKING functions stream their responses: several ``functionResponse`` parts
to one id, each but the last saying ``willContinue: true``. A response that follows one saying so
goes on with it (policy will-continue-responses): ``check`` finds no ``duplicate-result`` and
``repair`` keeps every response, in order. A response after one that did not say so is a second
result, as before (audit 92's G6)."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import history

CALL = {"role": "model", "parts": [{"functionCall": {"id": "a", "name": "f", "args": {}}}]}
ASK = {"role": "user", "parts": [{"text": "hi"}]}


def response(x: int, more: bool | None = None, field: str = "functionResponse") -> dict[str, Any]:
    said: dict[str, Any] = {"id": "a", "name": "f", "response": {"x": x}}
    if more is not None:
        said["willContinue" if field == "functionResponse" else "will_continue"] = more
    return {field: said}


def user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def responses(messages: list[dict[str, Any]]) -> list[Any]:
    return [
        next(iter(p.values()))["response"]["x"]
        for m in messages
        for p in m["parts"]
        if "functionCall" not in p and "text" not in p
    ]


@pytest.mark.parametrize(
    "conversation",
    [
        [ASK, CALL, user(response(1, True), response(2, True), response(3))],
        [ASK, CALL, user(response(1, True)), {"role": "model", "parts": [{"text": "on it"}]}, user(response(2, False))],
        [ASK, CALL, user(response(1, True, "function_response"), response(2, None, "function_response"))],
    ],
    ids=["one content", "after the model's next turn", "snake case"],
)
def test_responses_that_go_on_are_one_result_kept_in_order(conversation: list[dict[str, Any]]) -> None:
    assert history.check(conversation, "gemini").findings == ()
    fixed, changes = history.repair(conversation, format="gemini")
    assert changes == [] and fixed == conversation


def test_responses_that_go_on_in_contents_of_their_own_are_merged_in_order() -> None:
    conversation = [ASK, CALL, user(response(1, True)), user(response(2))]
    assert [f.kind.value for f in history.check(conversation, "gemini").findings] == ["user-after-user"]
    fixed, changes = history.repair(conversation, format="gemini")
    assert [c.kind for c in changes] == ["merged-messages"]
    assert responses(fixed) == [1, 2] and history.check(fixed, "gemini").findings == ()


@pytest.mark.parametrize(
    "conversation",
    [
        [ASK, CALL, user(response(1, True), response(2, False), response(3))],
        [ASK, CALL, user(response(1)), {"role": "model", "parts": [{"text": "ok"}]}, user(response(2))],
    ],
    ids=["after the last, in one content", "after an answer that did not go on"],
)
def test_a_response_after_the_last_is_still_a_second_result(conversation: list[dict[str, Any]]) -> None:
    found = history.check(conversation, "gemini").findings
    assert [(f.kind.value, f.id) for f in found] == [("duplicate-result", "a")]
    fixed, changes = history.repair(conversation, format="gemini")
    assert "dropped-duplicate-result" in [c.kind for c in changes]
    assert responses(fixed) == responses(conversation)[:-1]


def test_a_call_under_the_id_again_ends_the_chain() -> None:
    """A new call under the id: the response after it answers that call (not the chain's), as an id
    used again after its answer is (``reused``, information)."""
    conversation = [ASK, CALL, user(response(1, True)), CALL, user(response(2))]
    assert [(f.kind.value, f.id) for f in history.check(conversation, "gemini").findings] == [("reused", "a")]
