"""Audit 129 of task 124 (policy stray-after-the-calls-answer): hostile inputs for the strays moved
into the answer of the model's calls they came after."""

from __future__ import annotations

from typing import Any

from fsm import history
from tests.test_will_continue104 import call as gemini_call
from tests.test_will_continue104 import model, resp, user

GONE = history.RepairPolicy().placeholder


def placeholder(cid: str, name: str = "f") -> dict[str, Any]:
    return {"functionResponse": {"id": cid, "name": name, "response": {"error": GONE}}}


def test_a_stray_goes_into_the_calls_answer_past_a_content_of_a_role_gemini_lacks() -> None:
    """The calls' placeholders written after a ``tool`` content kept between (unknown-role-between):
    the stray went nowhere, an ``AssertionError`` escaped repair (fuzz129 seed 592)."""
    g = {"functionCall": {"name": "g", "args": {}}}
    conversation = [
        model(gemini_call("a")),
        {"role": "function", "parts": [resp(1, True)]},
        user(g),  # a call in the user's content: moved into a model content of its own
        {"role": "tool", "parts": []},
        model(resp(2), resp(3, True)),  # 2 goes on with 1 (a stray); 3 is a second result to a
    ]
    fixed, changes = history.repair(conversation, format="gemini")
    found = {f.kind.value for f in history.check(fixed, "gemini").findings if f.kind in history.REJECTED}
    assert found == {"unknown-role"}  # the tool content, kept as it came
    assert fixed == [
        model(gemini_call("a")),
        user(resp(1, True)),
        model(g),
        {"role": "tool", "parts": []},
        user(resp(2), {"functionResponse": {"name": "g", "response": {"error": GONE}}}),
    ]
    assert ("moved-misplaced-result", 5, "a") in [(c.kind, c.message, c.id) for c in changes]
