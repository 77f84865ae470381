"""Task 124: Gemini strays (a ``willContinue`` chain's response sent in a model content, policy
chain-response-in-the-model-content) where no user content keeps a response after the model's calls
they came after.

1. Such a stray went back past those calls (right after its chain's response before it) when their
   answer was only placeholders, or their responses moved, or the calls were the last model content:
   it goes first in the user content repair writes right after them now (policy
   stray-after-the-calls-answer), unless a call of its own id joins them (then it stays back).
2. Check named a stray ``misplaced-result`` while repair dropped its chain as a second result
   (``dropped-duplicate-result``), or named it by its chain's first response (``result-after-text``)
   while repair said ``moved-result``: check's kind is the one repair acts on now.
3. A seeded run of the fuzzer (/work/scratch/s42/a124/fuzz.py): typed errors only, input kept,
   ``check(repair(h))`` clean, repair idempotent, no response lost unnamed, order kept per id."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from fsm import history
from fsm.errors import ToolcallFSMError
from fsm.history import chains
from tests.test_will_continue104 import ASK, model, repaired, resp, sent, user
from tests.test_will_continue104 import call as gemini_call

GONE = history.RepairPolicy().placeholder


BETWEEN = history.RepairPolicy().between


def placeholder(cid: str) -> dict[str, Any]:
    return {"functionResponse": {"id": cid, "name": "f", "response": {"error": GONE}}}


# -- 1. after the model's calls it came after -------------------------------------------------------


def test_a_stray_after_the_last_calls_goes_first_into_their_answer() -> None:
    conversation = [ASK, model(gemini_call("a")), user(resp(1, True)), model(gemini_call("b")), model(resp(2))]
    fixed, changes = repaired(conversation)
    assert fixed == [*conversation[:4], user(resp(2), placeholder("b"))]  # not back in message 3, past b's call
    assert ("moved-misplaced-result", 5, "a") in [(c.kind, c.message, c.id) for c in changes]


def test_a_stray_after_calls_answered_in_the_users_text_content_stays_after_that_text() -> None:
    conversation = [ASK, model(gemini_call("a")), user(resp(1, True)), model(gemini_call("b"))]
    conversation += [user({"text": "u"}), model(resp(2))]
    fixed, _ = repaired(conversation)
    # audit 164: first in b's answer, it went back past the user's text "u" (policy stray-where-it-came)
    assert fixed[2:5] == [user(resp(1, True)), model(gemini_call("b")), user(placeholder("b"))]
    assert fixed[6:] == [user({"text": "u"}), model({"text": BETWEEN}), user(resp(2))]


def test_a_stray_beside_the_calls_in_their_content_goes_after_them() -> None:
    fixed, _ = repaired([ASK, model(gemini_call("a")), user(resp(1, True)), model(gemini_call("b"), resp(2))])
    assert fixed[3:] == [model(gemini_call("b")), user(resp(2), placeholder("b"))]


def test_a_stray_after_calls_whose_responses_the_model_sent_goes_with_them() -> None:
    conversation = [ASK, model(gemini_call("a")), user(resp(1, True)), model(gemini_call("b"))]
    conversation += [model(resp(3, None, "b")), model(resp(2))]
    fixed, _ = repaired(conversation)
    assert fixed[2:] == [user(resp(1, True)), model(gemini_call("b")), user(resp(2), resp(3, None, "b"))]


def test_a_stray_stays_back_when_a_call_of_its_id_joins_the_calls_it_came_after() -> None:
    """The model's contents in a row are one: put in their answer, ``a2`` would answer the second
    call to ``a`` rather than go on with ``a1``."""
    conversation = [ASK, model(gemini_call("a")), user(resp(1, True)), model(gemini_call("c")), model(resp(2))]
    conversation += [model(gemini_call("a"))]
    fixed, _ = repaired(conversation)
    assert fixed[2] == user(resp(1, True), resp(2))
    assert sent(fixed[4:]) == []  # the placeholders alone answer c and the second a


# -- 2. check names a stray by what repair does -----------------------------------------------------


@pytest.mark.parametrize(
    ("conversation", "kind", "change"),
    [
        (
            [ASK, model(gemini_call("a")), user(resp(1), resp(2, True)), model(resp(3))],
            "duplicate-result",
            "dropped-duplicate-result",
        ),
        (
            [ASK, model(gemini_call("a"), gemini_call("a")), user(resp(1), resp(2, True)), model(resp(3))],
            "misplaced-result",
            "moved-misplaced-result",
        ),
        (
            [ASK, model(gemini_call("a")), user({"text": "u"}, resp(1, True)), model(resp(2))],
            "misplaced-result",
            "moved-misplaced-result",
        ),
        (
            [ASK, model(gemini_call("a")), user({"text": "u"}), user(resp(1, True)), model(resp(2))],
            "misplaced-result",
            "moved-misplaced-result",
        ),
        ([ASK, model({"text": "hm"}), user(resp(1, True)), model(resp(2))], "orphan", "dropped-orphan"),
    ],
)
def test_check_names_a_stray_by_what_repair_does_with_it(conversation: list[Any], kind: str, change: str) -> None:
    stray = len(conversation)
    found = [f.kind.value for f in history.check(conversation, "gemini").findings if f.message == stray and f.id]
    _, changes = repaired(conversation)
    assert found == [kind] and change in [c.kind for c in changes if c.message == stray and c.id]


# -- 3. a seeded fuzz run, and the work done once -----------------------------------------------------


def _history(rng: random.Random) -> list[dict[str, Any]]:
    """Random Gemini contents: calls (ids a, b, c or none), responses going on or not, text, in either role."""
    conversation, tag = [ASK], 0
    for _ in range(rng.randint(1, 9)):
        role = rng.choice(["model", "model", "user", "user", "user"])
        calls = rng.random() < (0.67 if role == "model" else 0.33)
        parts: list[dict[str, Any]] = []
        for _ in range(rng.randint(1, 3)):
            tag += 1
            cid = rng.choice("abcN" if calls else "abcaaN")
            said: dict[str, Any] = {"name": "f", "args": {"t": tag}} if calls else {"name": "f", "response": {"x": tag}}
            said |= {} if cid == "N" else {"id": cid}
            said |= {} if calls or (more := rng.choice([True, True, None, False])) is None else {"willContinue": more}
            parts.append(
                {"text": "t"} if rng.random() < 0.15 else {"functionCall" if calls else "functionResponse": said}
            )
        conversation.append({"role": role, "parts": parts})
    return conversation


def test_seeded_random_histories_with_strays_repair_to_what_check_accepts() -> None:
    for seed in range(300):
        conversation = _history(random.Random(seed))
        before = copy.deepcopy(conversation)
        try:
            fixed, changes = history.repair(conversation, format="gemini")
        except ToolcallFSMError:
            continue
        assert conversation == before
        assert not [f for f in history.check(fixed, "gemini").findings if f.kind in history.REJECTED], seed
        assert history.repair(fixed, format="gemini") == (fixed, []), seed
        kept = {
            r["response"]["x"]
            for m in fixed
            for p in m["parts"]
            if (r := p.get("functionResponse")) and "x" in r["response"]
        }
        lost = [
            p
            for m in conversation
            for p in m["parts"]
            if "functionResponse" in p and p["functionResponse"]["response"]["x"] not in kept
        ]
        assert len(lost) == sum(c.kind in ("dropped-orphan", "dropped-duplicate-result") for c in changes), seed


def test_the_calls_are_read_once_for_all_strays(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = []
    kept_calls = chains._kept_calls
    monkeypatch.setattr(chains, "_kept_calls", lambda plan: reads.append(1) or kept_calls(plan))
    conversation = [ASK, model(gemini_call("a")), user(resp(0, True))]
    for k in range(300):
        conversation += [model(gemini_call(f"z{k}")), model(resp(k + 1, True)), user({"text": "go"})]
    fixed, changes = history.repair(conversation, format="gemini")
    assert len(reads) == 1 and sum(c.kind == "moved-misplaced-result" for c in changes) == 300
    assert fixed[4] == user(resp(1, True), placeholder("z0"))  # each after the calls it came after
