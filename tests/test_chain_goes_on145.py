"""Task 145: a Gemini ``willContinue`` chain whose first response repair moves back (before the user's
text, or out of a model content into the user content answering the calls) took along its responses
sent in later user contents, past the model's text and the user's that came between: the repaired
history said the model (or the user) saw them sooner than it did, and a response going on after the
user's text, which repair leaves after it when its chain's first response stays (policy
responses-before-the-users-parts, task 132), went before it. Such a response now stays where it came
(policy chain-goes-on-where-it-came); one with nothing the repair keeps between it and where its
first response goes still goes with it, said a ``moved-result`` (it was said a ``moved-misplaced-result``,
"in a message of the model's role", from a user content). Each test fails before the fix."""

from __future__ import annotations

from typing import Any

from fsm import history
from tests.test_will_continue104 import ASK, model, repaired, resp, sent, user
from tests.test_will_continue104 import call as gemini_call

BETWEEN = history.RepairPolicy().between


def brief(fixed: list[dict[str, Any]]) -> list[tuple[str, list[Any]]]:
    """Each content's role and parts, a response as its tag, text as itself."""
    return [
        (
            m["role"],
            [p["functionResponse"]["response"]["x"] if "functionResponse" in p else p.get("text") for p in m["parts"]],
        )
        for m in fixed
    ]


def test_a_response_going_on_past_the_models_text_stays_after_it() -> None:
    conversation = [ASK, model(gemini_call("a")), user({"text": "t1"}, resp(1, True))]
    conversation += [model({"text": "m"}), user({"text": "t2"}), user(resp(2, False))]
    fixed, changes = repaired(conversation)
    assert brief(fixed)[2:] == [
        ("user", [1]),
        ("model", [BETWEEN]),
        ("user", ["t1"]),
        ("model", ["m"]),
        ("user", ["t2"]),
        ("model", [BETWEEN]),
        ("user", [2]),
    ]
    assert [(c.kind, c.message) for c in changes if c.kind.startswith("moved")] == [("moved-result", 3)]


def test_a_response_going_on_after_more_of_the_users_text_stays_after_it() -> None:
    conversation = [ASK, model(gemini_call("a")), user({"text": "t1"}, resp(1, True)), user({"text": "t2"})]
    conversation.append(user(resp(2, False)))
    fixed, _ = repaired(conversation)
    assert brief(fixed)[2:] == [
        ("user", [1]),
        ("model", [BETWEEN]),
        ("user", ["t1", "t2"]),
        ("model", [BETWEEN]),
        ("user", [2]),
    ]


def test_a_chain_begun_in_a_model_content_goes_on_where_it_came_past_the_models_text() -> None:
    conversation = [ASK, model(gemini_call("a")), model(resp(1, True)), user({"text": "t1"})]
    conversation += [model({"text": "m"}), user(resp(2, False))]
    fixed, changes = repaired(conversation)
    assert brief(fixed)[2:] == [("user", [1]), ("model", [BETWEEN]), ("user", ["t1"]), ("model", ["m"]), ("user", [2])]
    assert [(c.kind, c.message) for c in changes if c.kind.startswith("moved")] == [("moved-misplaced-result", 3)]


def test_a_chain_begun_in_a_model_content_goes_on_where_it_came_after_the_users_text() -> None:
    conversation = [ASK, model(gemini_call("a")), model(resp(1, True)), user({"text": "t1"}), user(resp(2, False))]
    fixed, _ = repaired(conversation)
    assert brief(fixed)[2:] == [
        ("user", [1]),
        ("model", [BETWEEN]),
        ("user", ["t1"]),
        ("model", [BETWEEN]),
        ("user", [2]),
    ]


def test_a_response_going_on_with_nothing_between_still_goes_with_its_first() -> None:
    # (fuzz137 seed 808, reduced) the response going on in the very next content, with another call's
    # response beside it: cut there, the other went before it (a reordering, not a place kept)
    conversation = [ASK, model(gemini_call("a"), gemini_call("b")), model(resp(1, True))]
    conversation.append({"role": "function", "parts": [resp(2, False), resp(3, None, "b")]})
    fixed, changes = repaired(conversation)
    assert sent(fixed) == [("a", 1, True), ("a", 2, False), ("b", 3, False)]
    # moved with it, but never in the model's role: not a misplaced result (it was said so before)
    assert [(c.kind, c.message) for c in changes if c.kind.startswith("moved")] == [
        ("moved-misplaced-result", 3),
        ("moved-result", 4),
    ]
