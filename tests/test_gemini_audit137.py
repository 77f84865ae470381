"""Audit 137 of task 136 (a chain cut at a stray, ``fsm.history.chains._Cut``).

The cut found what repair wrote of a chain moved into its turn's answer by the identity of the
written parts. A history holding one part object at two places (a caller reusing a dict) made two
places one: the cut took the copy written for the response before the stray out with the one after
it (a response lost, its ``moved-result`` still said), or found no new place for the chain's first
response and left the stray going back past the model's calls (the bug task 136 fixed)."""

from __future__ import annotations

from fsm import history
from tests.test_will_continue104 import ASK, model, repaired, resp, user
from tests.test_will_continue104 import call as gemini_call

TEXT = {"text": "u"}


def _responses(messages: list[dict[str, object]]) -> list[object]:
    return [part for m in messages for part in m["parts"] if "functionResponse" in part]  # type: ignore[attr-defined]


def test_a_part_sent_twice_around_a_stray_is_written_twice() -> None:
    again = resp(2, True)  # the same object before the stray and after it
    conversation = [ASK, model(gemini_call("a"), gemini_call("b")), user(resp(6, None, "b")), user(TEXT)]
    conversation += [user(resp(1, True), again), model(gemini_call("c")), user(resp(7, None, "c"))]
    conversation += [model(resp(3, True)), user(again)]
    fixed, changes = repaired(conversation)
    assert len(_responses(fixed)) == len(_responses(conversation)) == 6  # nothing lost
    assert fixed[2] == user(resp(6, None, "b"), resp(1, True), resp(2, True))  # with its chain, as it came
    assert fixed[-1] == user(resp(7, None, "c"), resp(3, True), resp(2, True))  # the stray past c's answer
    assert not [c for c in changes if c.kind.startswith("dropped") and c.id is not None]


def test_a_chains_first_response_sent_again_after_a_stray_still_cuts_the_chain() -> None:
    first = resp(1, True)  # the chain's first response, the same object sent again after the stray
    conversation = [ASK, model(gemini_call("a"), gemini_call("b")), user(resp(6, None, "b")), user(TEXT)]
    conversation += [user(first), model(gemini_call("c")), user(resp(7, None, "c")), model(resp(2, True)), user(first)]
    fixed, _ = repaired(conversation)
    assert fixed[2] == user(resp(6, None, "b"), resp(1, True))
    assert fixed[-1] == user(resp(7, None, "c"), resp(2, True), resp(1, True))  # not back past c's call
    assert len(_responses(fixed)) == len(_responses(conversation))
    assert not [f for f in history.check(fixed, "gemini").findings if f.kind in history.REJECTED]
