"""Task 166: the two Gemini repairs audit 164 left as strict xfails (``tests/test_hostile_audit164.py``).

D3. ``M[call a] M[c9+ m] M[b2]`` (``c9`` an orphan, ``b2`` a stray going on with ``b1``): the content that held
the dropped orphan is written apart from the calls (``M[call a] U[a's placeholder] M[m]``), yet the stray went
first into the calls' answer as if ``m`` joined them, back past it. A model content after the calls counts now
unless it joins them: the stray goes in a user content of its own after its model content (stray-where-it-came).

D5. A response going on with a chain whose first response repair renames (the second call under one id,
``c_d2``) lost its mark as going on once renamed, so the writer took it for a turn's response and put it back
before the user's text it came after (responses-before-the-users-parts, which spares chains). Renamed, it is
written where it would be under an id of its own."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import history
from tests.test_hostile_audit164 import BETWEEN, GONE, brief, text
from tests.test_will_continue104 import ASK, model, repaired, resp, user
from tests.test_will_continue104 import call as gemini_call


def _sound(fixed: list[dict[str, Any]], policy: history.RepairPolicy) -> None:
    assert not history.check(fixed, "gemini").findings
    assert history.repair(fixed, policy, format="gemini") == (fixed, [])


def _apart(said: str, then: int) -> list[tuple[str, list[Any]]]:
    """The user's text, then a response going on after it, each in a content of its own (placeholder models between)."""
    return [("model", [BETWEEN]), ("user", [said]), ("model", [BETWEEN]), ("user", [then])]


HEAD = [ASK, model(gemini_call("b")), user(resp(1, True, "b")), model(gemini_call("a"))]


@pytest.mark.parametrize("held", ["in-the-models-content", "in-a-user-content-between"])
def test_a_stray_after_a_model_content_kept_apart_from_the_calls_goes_after_it(held: str) -> None:
    between = [model(resp(9, True, "c"), text("m"))] if held == "in-the-models-content" else []
    between = between or [user(resp(9, None, "c")), model(text("m"))]
    fixed, changes = repaired([*HEAD, *between, model(resp(2, None, "b"))])
    assert brief(fixed)[3:] == [("model", ["call a"]), ("user", [GONE]), ("model", ["m"]), ("user", [2])]
    (moved,) = [c for c in changes if c.kind == "moved-misplaced-result"]
    assert "of its own" in moved.detail
    assert [c.kind for c in changes].count("dropped-orphan") == 1
    _sound(fixed, history.RepairPolicy())


def test_without_the_orphan_the_models_text_joins_the_calls_and_the_stray_goes_first_in_their_answer() -> None:
    fixed, _ = repaired([*HEAD, model(text("m")), model(resp(2, None, "b"))])
    assert brief(fixed)[3:] == [("model", ["call a", "m"]), ("user", [2, GONE])]


def test_the_placeholders_place_beside_a_dropped_orphan_is_as_before() -> None:
    # only the stray's place changed: with no stray the calls' answer still comes before the model's text
    fixed, _ = repaired([*HEAD, model(resp(9, True, "c"), text("m"))])
    assert brief(fixed)[3:] == [("model", ["call a"]), ("user", [GONE]), ("model", ["m"])]


def test_with_drop_call_the_stray_stays_after_the_models_text() -> None:
    policy = history.RepairPolicy(dangling="drop-call")
    conversation = [*HEAD, model(resp(9, True, "c"), text("m")), model(resp(2, None, "b"))]
    fixed, _ = history.repair(conversation, policy, format="gemini")
    assert brief(fixed)[1:] == [("model", ["call b"]), ("user", [1]), ("model", ["m"]), ("user", [2])]
    _sound(fixed, policy)


def test_a_renamed_chains_stray_is_written_as_under_an_id_of_its_own() -> None:
    def conversation(second: str) -> list[dict[str, Any]]:
        head = [ASK, model(gemini_call("c"), gemini_call(second)), user(resp(6, False, "c"))]
        return [*head, user(resp(9, True, second), text("u")), model(resp(11, None, second))]

    fixed, changes = repaired(conversation("c"))
    apart, _ = repaired(conversation("d"))
    assert brief(fixed)[2:] == brief(apart)[2:]
    assert brief(fixed)[2:] == [("user", [6, 9]), *_apart("u", 11)]
    assert fixed[-1]["parts"][0]["functionResponse"]["id"] == "c_d2"
    assert {c.kind for c in changes} >= {"renamed-call", "renamed-result", "moved-misplaced-result"}
    _sound(fixed, history.RepairPolicy())


def test_a_renamed_chains_response_after_the_users_text_stays_after_it() -> None:
    # (fuzz seed 3978 of audit 164's generator, reduced) the empty content first is dropped; a7 went before "u5"
    conversation = [user(), model(gemini_call("a"), gemini_call("a")), user(resp(2, None, "a"), resp(3, True, "a"))]
    conversation += [user(text("u5")), user(resp(7, True, "a"))]
    fixed, _ = repaired(conversation)
    assert brief(fixed) == [("model", ["call a", "call a_d2"]), ("user", [2, 3]), *_apart("u5", 7)]
    assert fixed[-1]["parts"][0]["functionResponse"]["id"] == "a_d2"
