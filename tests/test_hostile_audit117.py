"""Hostile audit 117 of merge eec8aa6 (task 113: Gemini chains' strays, policy
chain-response-in-the-model-content), by random Gemini histories with ``willContinue`` chains.

1. A user content holding a chain's going-on responses alone beside text was no finding to check
   (they are no results of their own), while repair split it (``placeholder-model-turn``): check
   accepted a history repair changes. It is ``results-beside-text`` now, as one holding a result is.
2. A stray went back past the model's calls it came after when the latest user content before it
   held responses only moved within it (a result after the user's text goes before it): those
   were read as not kept there, so the stray went right after its chain's response before it.
3. Each stray read the end of every user content before it: quadratic in a history's strays."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from fsm import history
from fsm.history import chains
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
    assert fixed[4] == user(resp(2, None, "b"))  # audit 164: not with b2, back past "u" (stray-where-it-came)
    assert fixed[6:] == [user({"text": "u"}), model({"text": history.RepairPolicy().between}), user(resp(3))]
    assert ("moved-misplaced-result", 6, "a") in [(c.kind, c.message, c.id) for c in changes]


class _Counted(list[tuple[int, int]]):
    """The user contents' ends, counting each read of one."""

    reads = 0

    def __getitem__(self, at: Any) -> Any:
        _Counted.reads += 1
        return super().__getitem__(at)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        for each in super().__iter__():
            _Counted.reads += 1
            yield each


def test_strays_are_homed_without_reading_every_user_content_for_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """3. Each stray read every user content's end before it: 1,250 strays over 2,500 user contents
    read ~1.5 million ends (the repair of 5,000 messages took 6 to 9 times that of 1,250)."""
    kept_ends = chains._kept_ends
    monkeypatch.setattr(chains, "_kept_ends", lambda plan: _Counted(kept_ends(plan)))
    conversation = [ASK, model(gemini_call("a")), user(resp(0, True))]
    for k in range(1250):
        conversation += [model(gemini_call(f"z{k}")), user(resp(k, None, f"z{k}")), model(resp(k, True), {"text": "t"})]
        conversation += [user({"text": "go"})]
    _Counted.reads = 0
    fixed, changes = history.repair(conversation, format="gemini")
    assert _Counted.reads <= 1250 * 20  # a binary search a stray
    assert sum(change.kind == "moved-misplaced-result" for change in changes) == 1250
    assert fixed[4] == user(resp(0, None, "z0"), resp(0, True))  # after the call it came after
