"""Task 136: Gemini history repair leftovers.

1. A content without a role that makes calls is the model's (policy roleless-as-user), so a
   ``willContinue`` chain's response in it is a stray (policy chain-response-in-the-model-content),
   as in a content of role ``model``. Check and repair read it as the user's for the stray (only
   role ``model`` counted): no ``misplaced-result``, the response left beside the calls, and the
   content not merged with the model content after it (``assistant-after-assistant`` after repair,
   fuzz129 seed 17679).
2. A stray whose chain repair moves with its first response (before the user's text, or up into its
   turn's answer) went with it, back past the model's calls made after that response and the user
   content answering them (a124's open seed 848; policy stray-after-the-calls-answer). It goes where a
   stray goes (the end of the responses of the latest user content before it, or first in the calls'
   answer); the chain is cut there, its responses after the stray staying where they came."""

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


# -- 2. a stray whose chain moves with its first response ---------------------------------------------

TEXT = {"text": "u"}


def test_a_stray_of_a_chain_moved_before_the_text_stays_past_later_calls() -> None:
    conversation = [ASK, model(gemini_call("a")), user(TEXT, resp(1, True)), model(gemini_call("b"))]
    conversation += [user(resp(5, None, "b")), model(resp(2))]
    fixed, changes = repaired(conversation)
    # its chain's first response goes before the text; the stray stays past b's call, after b's answer
    assert fixed[2] == user(resp(1, True))
    assert fixed[-2:] == [model(gemini_call("b")), user(resp(5, None, "b"), resp(2))]
    said = [(c.kind, c.message, c.id) for c in changes]
    assert said.count(("moved-misplaced-result", 6, "a")) == 1  # said once, where it goes
    assert not [c for c in changes if c.message == 6 and c.detail.endswith("(going on with it)")]


def test_a_stray_of_a_moved_chain_after_the_last_calls_goes_first_into_their_answer() -> None:
    conversation = [ASK, model(gemini_call("a")), user(TEXT, resp(1, True)), model(gemini_call("b")), model(resp(2))]
    fixed, _ = repaired(conversation)
    assert fixed[-2:] == [model(gemini_call("b")), user(resp(2), placeholder("b"))]  # stray-after-the-calls-answer


def test_a_stray_with_no_later_home_still_goes_with_its_moved_chain() -> None:
    conversation = [ASK, model(gemini_call("a")), user(TEXT, resp(1, True)), model(resp(2, True))]
    conversation += [model(gemini_call("b")), user(resp(5, None, "b")), model(resp(3))]
    fixed, changes = repaired(conversation)
    assert fixed[2] == user(resp(1, True), resp(2, True))  # no calls between: with its chain, as before
    assert fixed[-2:] == [model(gemini_call("b")), user(resp(5, None, "b"), resp(3))]
    assert ("moved-misplaced-result", 4, "a") in [(c.kind, c.message, c.id) for c in changes]


def test_the_chains_responses_after_a_cut_stay_where_they_came() -> None:
    conversation = [ASK, model(gemini_call("a")), user(TEXT, resp(1, True)), model(gemini_call("b"))]
    conversation += [user(resp(5, None, "b")), model(resp(2, True), {"text": "m"}), user(resp(3))]
    fixed, changes = repaired(conversation)
    assert fixed[2] == user(resp(1, True))
    assert fixed[-3:] == [user(resp(5, None, "b"), resp(2, True)), model({"text": "m"}), user(resp(3))]
    assert not [c for c in changes if c.message == 7]  # the last response is not moved: nothing said of it


def test_a_stray_of_a_chain_moved_into_its_turns_answer_stays_past_later_calls() -> None:
    conversation = [ASK, model(gemini_call("a"), gemini_call("b")), user(resp(6, None, "b")), user(TEXT)]
    conversation += [user(resp(1, True)), model(gemini_call("c")), user(resp(7, None, "c")), model(resp(2))]
    fixed, _ = repaired(conversation)
    # the chain goes up into its turn's answer, written at pairing; the stray is taken out of it
    assert fixed[2] == user(resp(6, None, "b"), resp(1, True))
    assert fixed[-2:] == [model(gemini_call("c")), user(resp(7, None, "c"), resp(2))]
