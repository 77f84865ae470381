"""Task 170: a Gemini stray (a ``willContinue`` chain's response sent in a model content) that a call of its own
id follows, in its content or in a model content joining it, before any user content.

Put after its content (stray-where-it-came) it would answer that call, so it went back with its chain's
response before it: past the user's text (audit 164's fuzzer, seed 543: ``U[a12+ u3] M[a14+ call a]``, ``a14``
written before ``u3``) or past the model's parts, its chain moved with its first response (seed 1833:
``M[a19+ out] M[a25+] M[call a]``, ``a25`` carried before ``out``). It goes in a user content of its own right
before the model content it came in now (policy stray-before-a-call-of-its-id): after all that came before it,
before the call it would answer. Left as it was: a stray between calls of another id and the call of its own
in one run of model contents, which Gemini reads as one content (no place between them)."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import history
from tests.test_hostile_audit164 import BETWEEN, GONE, text
from tests.test_will_continue104 import ASK, model, repaired, resp, sent, user
from tests.test_will_continue104 import call as gemini_call

OUT = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "16"}}


def brief(fixed: list[dict[str, Any]]) -> list[tuple[str, list[Any]]]:
    """Each content's role and parts: a response as its tag (``GONE`` a placeholder), a call as its id."""

    def one(part: dict[str, Any]) -> Any:
        if "functionCall" in part:
            return f"call {part['functionCall']['id']}"
        if "codeExecutionResult" in part:
            return "out"
        said = part.get("functionResponse", {}).get("response")
        return part.get("text") if said is None else said.get("x", said.get("error"))

    return [(m["role"], [one(p) for p in m["parts"]]) for m in fixed]


def test_a_stray_before_a_call_of_its_id_in_its_content_goes_right_before_that_content() -> None:
    # audit 164's fuzzer, seed 543 reduced: a14 went back with a12, before the user's text u3
    conversation = [ASK, model(gemini_call("a")), user(resp(12, True), text("u3"))]
    conversation.append(model(resp(14, True), gemini_call("a")))
    fixed, changes = repaired(conversation)
    assert brief(fixed)[2:] == [
        ("user", [12]),
        ("model", [BETWEEN]),
        ("user", ["u3"]),
        ("model", [BETWEEN]),  # (Gemini wants a response alone in its content, user and model alternating)
        ("user", [14]),
        ("model", ["call a"]),
        ("user", [GONE]),  # the second call to a answered by the placeholder, not by a14
    ]
    (moved,) = [c for c in changes if c.kind == "moved-misplaced-result"]
    assert (moved.message, moved.id) == (4, "a")
    assert "right before the model content it came in" in moved.detail


def test_a_stray_carried_with_its_chain_no_longer_goes_back_past_the_models_parts() -> None:
    # audit 164's fuzzer, seed 1833 reduced: a19 (its chain's first response, sent as the model) goes into the
    # answer to the call; a25 went with it, back past the code's result the model sent after a19
    conversation = [ASK, model(gemini_call("a")), model(resp(19, True), OUT), model(resp(25, True))]
    conversation.append(model(gemini_call("a")))
    fixed, _ = repaired(conversation)
    assert brief(fixed)[1:] == [
        ("model", ["call a"]),
        ("user", [19]),
        ("model", ["out"]),
        ("user", [25]),
        ("model", ["call a"]),
        ("user", [GONE]),
    ]


def test_a_stray_a_later_model_content_calling_its_id_joins_stays_after_the_users_text() -> None:
    # (seed 606 reduced) the call is in the model content after the stray's, which Gemini reads as one with it
    conversation = [ASK, model(gemini_call("c")), user(resp(6, True, "c"), text("u5"))]
    conversation += [model(resp(10, True, "c")), model(gemini_call("c"))]
    fixed, _ = repaired(conversation)
    assert brief(fixed)[3:] == [
        ("model", [BETWEEN]),
        ("user", ["u5"]),
        ("model", [BETWEEN]),
        ("user", [10]),
        ("model", ["call c"]),
        ("user", [GONE]),
    ]


@pytest.mark.parametrize("others", [["b"], ["b", "c"]])
def test_calls_of_other_ids_in_its_content_go_after_it_with_the_call_of_its_own(others: list[str]) -> None:
    # (seeds 543 whole, 117678 reduced) its content's calls before it go after it, as a first response's parts do
    conversation = [ASK, model(gemini_call("a")), user(resp(12, True), text("u3"))]
    calls = [gemini_call(cid) for cid in others]
    conversation.append(model(calls[0], resp(14, True), *calls[1:], gemini_call("a")))
    fixed, _ = repaired(conversation)
    assert brief(fixed)[6:] == [
        ("user", [14]),
        ("model", [*(f"call {cid}" for cid in others), "call a"]),
        ("user", [GONE] * (len(others) + 1)),
    ]


def test_a_stray_between_calls_of_another_id_and_a_call_of_its_own_in_one_run_goes_back() -> None:  # (as it was)
    # (seeds 24306, 104829 reduced) the one exception left: no place between two model contents in a row
    conversation = [ASK, model(gemini_call("b")), user(resp(21, True, "b")), model(gemini_call("a"))]
    conversation.append(model(resp(23, True, "b"), gemini_call("b")))
    fixed, _ = repaired(conversation)
    assert brief(fixed)[2:] == [("user", [21, 23]), ("model", ["call a", "call b"]), ("user", [GONE, GONE])]


def test_check_still_names_the_stray_misplaced_and_nothing_is_lost() -> None:  # (as it was)
    conversation = [ASK, model(gemini_call("a")), user(resp(12, True), text("u3"))]
    conversation.append(model(resp(14, True), gemini_call("a")))
    misplaced = history.check(conversation, "gemini").of(history.Kind.MISPLACED_RESULT)
    assert [(f.message, f.id) for f in misplaced] == [(4, "a")]
    fixed, _ = repaired(conversation)
    assert sent(fixed) == [("a", 12, True), ("a", 14, True)]  # (the placeholder has no tag)
    assert repaired(fixed) == (fixed, [])


def test_under_drop_call_a_dropped_call_of_its_id_leaves_it_where_stray_where_it_came_puts_it() -> None:
    conversation = [ASK, model(gemini_call("a")), user(resp(12, True), text("u3"))]
    conversation.append(model(resp(14, True), gemini_call("a")))
    policy = history.RepairPolicy(dangling="drop-call")
    fixed, changes = history.repair(conversation, policy, format="gemini")
    assert brief(fixed)[4:] == [("user", ["u3"]), ("model", [BETWEEN]), ("user", [14])]  # the call to a is gone
    assert ("dropped-call", 4, "a") in [(c.kind, c.message, c.id) for c in changes]
    assert not history.check(fixed, "gemini").findings
