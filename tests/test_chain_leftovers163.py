"""Task 163: leftovers of audit 147 in Gemini ``willContinue`` chains, and a Responses id reused across kinds.

1. A chain begun in a model content (its first response a ``misplaced-result``) going on in a later
   model content: check said nothing of that later response, which Gemini refuses as well.
2. A stray (a chain's response in a model content) was put right after its chain's response before it,
   or in the latest user content before it, back past the user's text or the model's content that came
   between. It goes in a user content of its own right after its model content (policy stray-where-it-came).
3. ``U[t1 a1+ a2.]`` and ``U[t1 a1+] U[a2.]`` were repaired apart: ``a2``, carried with ``a1`` in the
   first, stayed after the text in the second, though ``a1`` had already gone before that text.
4. Responses (result-answers-its-kind): ``computer_call x`` answered, then ``function_call x`` in a later
   turn was no ``reused``, while the same kind reused is one.

Each test fails before the fix, but the one that holds what stays as it was (marked so; a second pinned a stray
before a call of its own id going back with its chain, which task 170 writes right before its content)."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import history
from tests.test_chain_goes_on145 import brief
from tests.test_result_kind158 import computer, function, out
from tests.test_will_continue104 import ASK, model, repaired, resp, sent, user
from tests.test_will_continue104 import call as gemini_call

BETWEEN = history.RepairPolicy().between


def text(said: str) -> dict[str, Any]:
    return {"text": said}


def misplaced(conversation: list[dict[str, Any]]) -> list[tuple[int, str]]:
    return [(f.message, f.detail) for f in history.check(conversation, "gemini").of(history.Kind.MISPLACED_RESULT)]


# -- 1. a later response of a chain begun in a model content, in a model content ----------------------


def test_check_names_a_later_response_in_the_models_role_of_a_chain_begun_there() -> None:
    conversation = [ASK, model(gemini_call("a")), model(resp(1, True)), model(resp(2, False))]
    found = misplaced(conversation)
    assert [at for at, _ in found] == [3, 4]
    assert "willContinue" in found[1][1] and "(part 1 of message 4)" in found[1][1]
    fixed, changes = repaired(conversation)  # moved with its chain, as the first one is
    assert brief(fixed)[2:] == [("user", [1, 2])]
    assert [(c.kind, c.message) for c in changes if c.id] == [
        ("moved-misplaced-result", 3),
        ("moved-misplaced-result", 4),
    ]


def test_its_part_is_named_past_the_models_other_parts() -> None:
    conversation = [ASK, model(gemini_call("a")), model(resp(1, True)), model(text("m"), resp(2, False))]
    ((at, detail),) = misplaced(conversation)[1:]
    assert at == 4 and detail.endswith("(part 2 of message 4)")


# -- 2. a stray never goes back past the user's text or the model's content ---------------------------


@pytest.mark.parametrize("begun", [model, user], ids=["begun-in-a-model-content", "begun-in-the-users-content"])
def test_a_stray_stays_after_the_users_text(begun: Any) -> None:
    conversation = [ASK, model(gemini_call("a")), begun(resp(1, True)), user(text("t")), model(resp(2, False))]
    assert [at for at, _ in misplaced(conversation)] == ([3, 5] if begun is model else [5])
    fixed, changes = repaired(conversation)
    after_text = [("user", [1]), ("model", [BETWEEN]), ("user", ["t"]), ("model", [BETWEEN]), ("user", [2])]
    assert brief(fixed)[2:] == after_text  # as a response sent in the user's content after the text stays
    (moved,) = [c for c in changes if c.kind == "moved-misplaced-result" and c.message == 5]
    assert "of its own" in moved.detail


def test_a_stray_stays_after_the_models_text() -> None:
    conversation = [ASK, model(gemini_call("a")), model(resp(1, True)), model(text("m")), model(resp(2, False))]
    fixed, _ = repaired(conversation)
    assert brief(fixed)[2:] == [("user", [1]), ("model", ["m"]), ("user", [2])]


def test_strays_in_a_row_kept_apart_share_one_content_and_go_after_the_models_text_beside_them() -> None:
    conversation = [ASK, model(gemini_call("a")), user(resp(1, True)), user(text("t"))]
    conversation += [model(resp(2, True), text("m2")), model(resp(3))]
    fixed, _ = repaired(conversation)
    together = [("user", [1]), ("model", [BETWEEN]), ("user", ["t"]), ("model", ["m2"]), ("user", [2, 3])]
    assert brief(fixed)[2:] == together


def test_a_stray_with_only_responses_between_still_goes_with_its_chain() -> None:  # (as it was)
    conversation = [ASK, model(gemini_call("a")), model(resp(1, True)), user(resp(2, True)), model(resp(3))]
    fixed, _ = repaired(conversation)
    assert brief(fixed)[2:] == [("user", [1, 2, 3])]


# -- 3. one user content or two: one repair ------------------------------------------------------------


def test_a_chain_after_the_users_text_is_repaired_alike_in_one_content_or_two() -> None:
    one = [ASK, model(gemini_call("a")), user(text("t1"), resp(1, True), resp(2, False))]
    two = [ASK, model(gemini_call("a")), user(text("t1"), resp(1, True)), user(resp(2, False))]
    assert repaired(one)[0] == repaired(two)[0]
    assert brief(repaired(two)[0])[2:] == [("user", [1, 2]), ("model", [BETWEEN]), ("user", ["t1"])]


def test_a_chain_begun_in_a_model_content_is_repaired_alike_in_one_content_or_two() -> None:
    head = [ASK, model(gemini_call("a")), model(resp(0, True))]
    one = [*head, user(text("t1"), resp(1, True), resp(2, False))]
    two = [*head, user(text("t1"), resp(1, True)), user(resp(2, False))]
    assert repaired(one)[0] == repaired(two)[0]
    assert brief(repaired(two)[0])[2:] == [("user", [0, 1, 2]), ("model", [BETWEEN]), ("user", ["t1"])]


# -- 4. Responses: an id reused by a call of another kind ----------------------------------------------

ANSWER, AGAIN = {"role": "assistant", "content": "done"}, {"role": "user", "content": "again"}


def _found(items: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(f.kind.value, f.message) for f in history.check(items, "responses").findings]


def test_an_id_reused_by_a_call_of_another_kind_is_reported_as_one_of_its_own() -> None:
    same = [ASK, function(), out("function_call"), ANSWER, AGAIN, function(), out("function_call")]
    other = [ASK, computer(), out("computer_call"), ANSWER, AGAIN, function(), out("function_call")]
    assert _found(same) == _found(other) == [("reused", 6)]
    (found,) = history.check(other, "responses").findings
    assert "computer_call (message 2)" in found.detail
    assert history.repair(other, format="responses") == (other, [])  # information: nothing to repair


def test_an_id_reused_by_another_kind_after_its_call_went_unanswered() -> None:
    items = [ASK, function(), ANSWER, AGAIN, computer(), out("computer_call")]
    assert _found(items) == [("dangling", 2), ("reused-unanswered", 5)]
    fixed, _ = history.repair(items, format="responses")
    assert _found(fixed) == [("reused", 6)]  # the placeholder answers the function call: a reuse after it


def test_a_stray_before_a_call_of_its_own_id_in_its_content_goes_right_before_that_content() -> None:
    # (fuzz t163 seed 7, reduced) put after its content, b2 would answer the call to b after it; it went back
    # with b1, past the user's text "t": task 170 writes it right before its content (stray-before-its-ids-call)
    conversation = [ASK, model(gemini_call("b")), user(resp(1, True, "b"), text("t"))]
    conversation.append(model(resp(2, False, "b"), gemini_call("b")))
    fixed, _ = repaired(conversation)
    assert sent(fixed) == [("b", 1, True), ("b", 2, False)]  # never after the call to b
    assert fixed[2:6] == [user(resp(1, True, "b")), model(text(BETWEEN)), user(text("t")), model(text(BETWEEN))]
    assert fixed[6:8] == [user(resp(2, False, "b")), model(gemini_call("b"))]
