"""Task 136: Gemini history repair leftovers.

1. A content without a role that makes calls is the model's (policy roleless-as-user), so a
   ``willContinue`` chain's response in it is a stray (policy chain-response-in-the-model-content),
   as in a content of role ``model``. Check and repair read it as the user's for the stray (only
   role ``model`` counted): no ``misplaced-result``, the response left beside the calls, and the
   content not merged with the model content after it (``assistant-after-assistant`` after repair,
   fuzz129 seed 17679)."""

from __future__ import annotations

from typing import Any

from fsm import history
from tests.test_will_continue104 import ASK, model, repaired, resp, user
from tests.test_will_continue104 import call as gemini_call

GONE = history.RepairPolicy().placeholder


def placeholder(cid: str) -> dict[str, Any]:
    return {"functionResponse": {"id": cid, "name": "f", "response": {"error": GONE}}}


def roleless(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"parts": list(parts)}


# -- 1. a stray in a content without a role that makes calls ------------------------------------------


def test_a_chains_response_beside_calls_in_a_roleless_content_is_a_stray() -> None:
    conversation = [ASK, model(gemini_call("a")), user(resp(1, True)), roleless(resp(2), gemini_call("b"))]
    conversation.append(model(gemini_call("c")))
    found = [(f.kind.value, f.message, f.id) for f in history.check(conversation, "gemini").findings]
    assert ("misplaced-result", 4, "a") in found
    fixed, changes = repaired(conversation)
    assert fixed == [
        *conversation[:2],
        user(resp(1, True), resp(2)),  # with its chain, before the calls it came beside
        roleless(gemini_call("b"), gemini_call("c")),  # the model's contents in a row join (kept without a role)
        user(placeholder("b"), placeholder("c")),
    ]
    assert ("moved-misplaced-result", 4, "a") in [(c.kind, c.message, c.id) for c in changes]


def test_a_roleless_stray_after_the_last_calls_goes_into_their_answer() -> None:
    conversation = [ASK, model(gemini_call("a")), user(resp(1, True)), model(gemini_call("b"))]
    conversation.append(roleless(resp(2), gemini_call("c")))
    fixed, changes = repaired(conversation)
    # as in a content of role model: first in the answer to b's call (stray-after-the-calls-answer)
    assert fixed == [
        *conversation[:3],
        model(gemini_call("b"), gemini_call("c")),
        user(resp(2), placeholder("b"), placeholder("c")),
    ]
    assert ("moved-misplaced-result", 5, "a") in [(c.kind, c.message, c.id) for c in changes]


def test_a_roleless_content_without_calls_keeps_a_chains_response_as_the_users() -> None:
    conversation = [ASK, model(gemini_call("a")), user(resp(1, True)), roleless(resp(2))]
    found = [f.kind.value for f in history.check(conversation, "gemini").findings]
    assert found == ["user-after-user"]  # no misplaced-result: the user's, as its chain began
    fixed, changes = repaired(conversation)
    assert fixed == [*conversation[:2], user(resp(1, True), resp(2))]
    assert [c.kind for c in changes] == ["merged-messages"]
