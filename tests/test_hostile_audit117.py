"""Hostile audit 117 of merge eec8aa6 (task 113: Gemini chains' strays, policy
chain-response-in-the-model-content), by random Gemini histories with ``willContinue`` chains.

1. A user content holding a chain's going-on responses alone beside text was no finding to check
   (they are no results of their own), while repair split it (``placeholder-model-turn``): check
   accepted a history repair changes. It is ``results-beside-text`` now, as one holding a result is."""

from __future__ import annotations

from fsm import history
from tests.test_will_continue104 import ASK, model, repaired, resp, user
from tests.test_will_continue104 import call as gemini_call


def test_going_on_responses_beside_text_are_results_beside_text_to_check_as_repair_splits_them() -> None:
    conversation = [ASK, model(gemini_call("a")), user(resp(1, True)), model({"text": "said"})]
    conversation += [user(resp(2), {"text": "more"}), model({"text": "ok"})]
    found = [(f.kind, f.message) for f in history.check(conversation, "gemini").findings]
    assert found == [(history.Kind.RESULTS_BESIDE_TEXT, 5)]
    fixed, changes = repaired(conversation)
    assert [(c.kind, c.message) for c in changes] == [("placeholder-model-turn", 5)]
    assert fixed[4:6] == [user(resp(2)), model({"text": history.RepairPolicy().between})]
