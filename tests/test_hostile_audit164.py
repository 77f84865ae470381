"""Hostile audit 164 of task 163 (policy stray-where-it-came), by random Gemini histories of
``willContinue`` chains, strays in model contents, the user's text, calls and placeholders.

1. ``U[c1+] U[t a2] M[c3.]``: the stray ``c3`` went to the end of the responses of ``U[t a2]``,
   which repair writes before ``t``: back past the user's text that came between ``c1`` and it,
   while the same history in one user content, ``U[c1+ t a2] M[c3.]``, kept it after ``t``. The
   text of that later content counted only from its last response, not from its first part.
2. ``U[a1+] M[call b] U[t] M[a2.]``: the stray went first into the answer to ``b`` (policy
   stray-after-the-calls-answer), written right after the calls, back past ``t``: the user's text
   between the calls and the stray was never looked at when the stray's place was the calls' answer.

Both now go in a user content of their own right after their model content, as the policy says.

3. ``M[call a] M[c9+ m] M[b2]`` (``c9`` an orphan, ``b2`` a stray) was written
   ``M[call a] U[b2, a's placeholder] M[m]``: the model content that held the dropped orphan is kept apart from
   the calls (without it, ``M[call a] M[m]`` is one content), so the stray went back past the model's text
   (fixed by task 166: ``tests/test_stray_apart166.py``).
4. A regression of task 163: ``U[c1+ u] M[c2. call a] M[m]``: kept apart (after ``u``), ``c2`` went in a user
   content of its own right after its model content, between the call to ``a`` and the model's ``m`` that
   joins it, so ``a``'s answer came after ``m``: repair's output was ``dangling`` + ``orphan``; and with a
   stray on both sides of the calls the two came out reversed (``duplicate-result``). A call joining its
   content after it takes it first into their answer now, still after the user's text.
5. ``M[call c, call c] U[c6.] U[c9+ u] M[c11]`` (as before task 163 too): the chain answering the second call,
   renamed ``c_d2``, had its stray ``c11`` written before ``u`` (fixed by task 166)."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import history
from tests.test_will_continue104 import ASK, model, repaired, resp, user
from tests.test_will_continue104 import call as gemini_call

BETWEEN = history.RepairPolicy().between
GONE = history.RepairPolicy().placeholder


def text(said: str) -> dict[str, Any]:
    return {"text": said}


def brief(fixed: list[dict[str, Any]]) -> list[tuple[str, list[Any]]]:
    """Each content's role and parts: a response as its tag (``GONE`` a placeholder), a call as its id."""

    def one(part: dict[str, Any]) -> Any:
        if "functionCall" in part:
            return f"call {part['functionCall']['id']}"
        said = part.get("functionResponse", {}).get("response")
        return part.get("text") if said is None else said.get("x", said.get("error"))

    return [(m["role"], [one(p) for p in m["parts"]]) for m in fixed]


def test_a_stray_after_a_later_user_contents_text_stays_after_it() -> None:
    head = [ASK, model(gemini_call("a"), gemini_call("c"))]
    two = [*head, user(resp(1, True, "c")), user(text("t"), resp(2, None, "a")), model(resp(3, False, "c"))]
    one = [*head, user(resp(1, True, "c"), text("t"), resp(2, None, "a")), model(resp(3, False, "c"))]
    fixed, changes = repaired(two)
    after = [("user", [1, 2]), ("model", [BETWEEN]), ("user", ["t"]), ("model", [BETWEEN]), ("user", [3])]
    assert brief(fixed)[2:] == after
    assert fixed == repaired(one)[0]  # one user content or two: one repair
    (moved,) = [c for c in changes if c.kind == "moved-misplaced-result"]
    assert moved.message == 5 and "of its own" in moved.detail


@pytest.mark.parametrize("begun", [model, user], ids=["begun-in-a-model-content", "begun-in-the-users-content"])
def test_a_stray_after_calls_and_the_users_text_stays_after_the_text(begun: Any) -> None:
    conversation = [ASK, model(gemini_call("a")), begun(resp(1, True)), model(gemini_call("b"))]
    conversation += [user(text("t")), model(resp(2, False))]
    fixed, _ = repaired(conversation)
    b_answered = [("user", [1]), ("model", ["call b"]), ("user", [GONE]), ("model", [BETWEEN]), ("user", ["t"])]
    assert brief(fixed)[2:] == [*b_answered, ("model", [BETWEEN]), ("user", [2])]  # not [2, GONE] before "t"


def test_a_stray_after_calls_with_only_the_models_content_between_still_goes_first_in_their_answer() -> None:
    conversation = [ASK, model(gemini_call("a")), user(resp(1, True)), model(gemini_call("b"))]
    conversation += [model(text("m")), model(resp(2, False))]  # (the model's contents in a row are one)
    fixed, _ = repaired(conversation)
    assert brief(fixed)[2:] == [("user", [1]), ("model", ["call b", "m"]), ("user", [2, GONE])]


def test_strays_in_a_row_after_calls_and_the_users_text_share_one_content() -> None:
    conversation = [ASK, model(gemini_call("a")), user(resp(1, True)), model(gemini_call("b"))]
    conversation += [user(text("t")), model(resp(2, True)), model(resp(3, False))]
    fixed, _ = repaired(conversation)
    assert brief(fixed)[-2:] == [("model", [BETWEEN]), ("user", [2, 3])]


# -- 4. a stray kept apart before the model's calls: its content of its own parted the calls from their answer --


@pytest.mark.parametrize("policy", ["placeholder", "drop-call"])
def test_a_stray_before_calls_in_its_content_goes_first_in_their_answer(policy: str) -> None:
    # (fuzz a164 seed 6333, reduced) written U[c2.] between M[call a] and M[m], a's answer came after m
    conversation = [ASK, model(gemini_call("c")), user(resp(1, True, "c"), text("u"))]
    conversation += [model(resp(2, False, "c"), gemini_call("a")), model(text("m"))]
    fixed, _ = history.repair(conversation, history.RepairPolicy(dangling=policy), format="gemini")
    assert not history.check(fixed, "gemini").findings
    assert history.repair(fixed, history.RepairPolicy(dangling=policy), format="gemini") == (fixed, [])
    assert _before(fixed, "u", 2)  # still after the user's text
    if policy == "placeholder":
        assert brief(fixed)[-2:] == [("model", ["call a", "m"]), ("user", [2, GONE])]


def test_strays_on_both_sides_of_calls_in_their_content_keep_their_order() -> None:
    conversation = [ASK, model(gemini_call("c")), user(resp(1, True, "c"), text("u"))]
    conversation += [model(text("m0"), resp(2, True, "c"), gemini_call("a"), resp(3, False, "c")), model(text("m"))]
    fixed, _ = repaired(conversation)  # were U[3, 2] after M[m0, call a]: a duplicate-result, a dangling
    assert brief(fixed)[-2:] == [("model", ["m0", "call a", "m"]), ("user", [2, 3, GONE])]


def _before(fixed: list[dict[str, Any]], first: Any, then: Any) -> bool:
    order = [part for _, parts in brief(fixed) for part in parts]
    return order.index(first) < order.index(then)


@pytest.mark.parametrize("held", ["in-the-models-content", "in-a-user-content-between"])
def test_a_stray_stays_after_the_models_text_of_a_content_that_held_an_orphan(held: str) -> None:
    # M[call a] M[c9+ m] is written M[call a] U[a's placeholder] M[m] (M[call a] M[m] is one content): the stray
    # after them went first into a's answer, back past the model's text "m" that came between (fuzz a164 seeds
    # 1578, 20370: the orphan alone in a user content between them parts them too)
    conversation = [ASK, model(gemini_call("b")), user(resp(1, True, "b")), model(gemini_call("a"))]
    if held == "in-the-models-content":
        conversation += [model(resp(9, True, "c"), text("m")), model(resp(2, None, "b"))]
    else:
        conversation += [user(resp(9, None, "c")), model(text("m")), model(resp(2, None, "b"))]
    fixed, _ = repaired(conversation)
    assert _before(fixed, "m", 2)


def test_a_stray_of_a_chain_answering_a_second_call_under_one_id_stays_after_the_users_text() -> None:
    # (fuzz a164 seed 6549, reduced) with the ids apart (d for the second call) d11 stays after "u"; renamed
    # c_d2, its content of its own was joined to the responses before the user's "u" (task 166: no longer)
    conversation = [ASK, model(gemini_call("c"), gemini_call("c")), user(resp(6, False, "c"))]
    conversation += [user(resp(9, True, "c"), text("u")), model(resp(11, None, "c"))]
    fixed, _ = repaired(conversation)
    assert _before(fixed, "u", 11)
