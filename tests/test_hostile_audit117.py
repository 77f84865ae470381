"""Hostile audit 117 of merge eec8aa6 (task 113: Gemini chains' strays, policy
chain-response-in-the-model-content), by random Gemini histories with ``willContinue`` chains.

1. A user content holding a chain's going-on responses alone beside text was no finding to check
   (they are no results of their own), while repair split it (``placeholder-model-turn``): check
   accepted a history repair changes. It is ``results-beside-text`` now, as one holding a result is.
2. A stray went back past the model's calls it came after when the latest user content before it
   held responses only moved within it (a result after the user's text goes before it): those
   were read as not kept there, so the stray went right after its chain's response before it."""

from __future__ import annotations

from fsm import history
from tests.test_will_continue104 import ASK, model, repaired, resp, sent, user
from tests.test_will_continue104 import call as gemini_call


def test_going_on_responses_beside_text_are_results_beside_text_to_check_as_repair_splits_them() -> None:
    conversation = [ASK, model(gemini_call("a")), user(resp(1, True)), model({"text": "said"})]
    conversation += [user(resp(2), {"text": "more"}), model({"text": "ok"})]
    found = [(f.kind, f.message) for f in history.check(conversation, "gemini").findings]
    assert found == [(history.Kind.RESULTS_BESIDE_TEXT, 5)]
    fixed, changes = repaired(conversation)
    assert [(c.kind, c.message) for c in changes] == [("placeholder-model-turn", 5)]
    assert fixed[4:6] == [user(resp(2)), model({"text": history.RepairPolicy().between})]


def test_a_stray_goes_after_responses_moved_before_the_text_of_the_user_content_before_it() -> None:
    conversation = [ASK, model(gemini_call("a")), user(resp(1, True)), model(gemini_call("b"))]
    conversation += [user({"text": "u"}, resp(2, None, "b")), model(resp(3))]
    fixed, changes = repaired(conversation)
    assert sent(fixed) == [("a", 1, True), ("b", 2, False), ("a", 3, False)]  # a3 came after the call to b
    assert fixed[4] == user(resp(2, None, "b"), resp(3))
    assert ("moved-misplaced-result", 6, "a") in [(c.kind, c.message, c.id) for c in changes]
