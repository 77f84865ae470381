"""Task 130: Gemini histories the fuzzers (/work/scratch/s42/a129/fuzz129.py, a124/fuzz.py with
roleless contents) left with findings after repair.

1. A content of role ``function`` whose calls drop-call dropped, left holding responses beside the
   user's text, stayed ``function`` (read as the user's: ``user-after-user``, ``results-beside-text``):
   it is written as the user content it stands for now (``function-role-to-user``), as one that made no call is.
2. A turn's responses written after the user's other parts of that turn (a placeholder hosted by, or a
   response sent in, a later content of the turn than the user's text) went after a placeholder model
   content, answering nothing (``dangling`` + ``orphan``): they go before the user's parts now, as one
   content's do (policy responses-before-the-users-parts, :mod:`fsm.history.responses_apart`).
3. A seeded run of both fuzzers: ``check(repair(h))`` clean and repair idempotent."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from fsm import history
from fsm.errors import ToolcallFSMError
from tests.test_will_continue104 import ASK, model, resp
from tests.test_will_continue104 import call as gemini_call

GONE = history.RepairPolicy().placeholder
BETWEEN = history.RepairPolicy().between
DROP = history.RepairPolicy(dangling="drop-call")
TEXT = {"text": "t"}


def clean(conversation: list[dict[str, Any]], policy: history.RepairPolicy | None = None) -> list[dict[str, Any]]:
    """Repair; assert the check finds nothing rejected and a second repair changes nothing."""
    policy = policy or history.RepairPolicy()
    fixed, _ = history.repair(conversation, format="gemini", policy=policy)
    found = [(f.kind.value, f.id) for f in history.check(fixed, "gemini").findings if f.kind in history.REJECTED]
    found = [kind for kind in found if kind[0] != "unknown-role"]  # a role Gemini lacks is kept for the caller
    assert found == []
    assert history.repair(fixed, format="gemini", policy=policy)[0] == fixed
    return fixed


def placeholder(cid: str) -> dict[str, Any]:
    return {"functionResponse": {"id": cid, "name": "f", "response": {"error": GONE}}}


def gemini(role: str | None, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "parts": list(parts)} if role else {"parts": list(parts)}


# -- 1. a function content left without its calls --------------------------------------------------------


def test_a_function_content_whose_call_drop_call_dropped_is_the_users() -> None:
    conversation = [
        ASK,
        model(gemini_call("a")),
        gemini("user", resp(1, True)),
        gemini("function", resp(2), gemini_call("c"), TEXT),
    ]
    fixed = clean(conversation, DROP)
    assert fixed == [
        ASK,
        model(gemini_call("a")),
        gemini("user", resp(1, True), resp(2)),
        model({"text": BETWEEN}),
        gemini("user", TEXT),
    ]
    changes = history.repair(conversation, format="gemini", policy=DROP)[1]
    assert ("function-role-to-user", 4) in [(c.kind, c.message) for c in changes]


def test_a_function_content_left_with_a_response_alone_is_the_users() -> None:
    conversation = [
        ASK,
        model(gemini_call("a")),
        gemini("user", resp(1, True)),
        gemini("function", resp(2, True), gemini_call("d")),
    ]
    assert clean(conversation, DROP) == [ASK, model(gemini_call("a")), gemini("user", resp(1, True), resp(2, True))]


def test_a_roleless_content_whose_calls_drop_call_dropped_stays_the_users_with_its_responses() -> None:
    # read as the model's for its call; left with a chain's last response alone, it is not named the model's
    conversation = [
        model(gemini_call("c")),
        gemini(None, resp(4, True, "c")),
        gemini(None, resp(10, cid="c"), gemini_call("b")),
    ]
    assert clean(conversation, DROP) == [model(gemini_call("c")), gemini(None, resp(4, True, "c"), resp(10, cid="c"))]


# -- 2. the turn's responses before the user's parts -----------------------------------------------------


def test_a_placeholder_hosted_after_the_users_text_goes_before_it() -> None:
    # the orphan responses go; the placeholder goes where the last of them was, after the user's text
    conversation = [
        model(gemini_call("c")),
        model(resp(6, True)),
        gemini("function", TEXT, resp(9, False)),
        gemini(None, resp(11, True)),
    ]
    assert clean(conversation) == [
        model(gemini_call("c")),
        gemini(None, placeholder("c")),
        model({"text": BETWEEN}),
        gemini("user", TEXT),
    ]


def test_a_response_in_a_roleless_content_after_the_users_text_goes_before_it() -> None:
    idless = {"functionResponse": {"name": "f", "response": {"x": 22}}}
    call = {"functionCall": {"name": "f", "args": {}}}
    conversation = [model(resp(8, True)), model(call), gemini("function", resp(15, False), TEXT), gemini(None, idless)]
    assert clean(conversation) == [model(call), gemini(None, idless), model({"text": BETWEEN}), gemini("user", TEXT)]


def test_responses_go_before_the_users_text_after_calls_kept_in_a_role_gemini_lacks() -> None:
    conversation = [
        gemini("user", resp(5, True)),
        gemini("function", gemini_call("c")),
        gemini("function", TEXT, resp(10, True)),
        gemini("user", resp(11, True, "b")),
    ]
    assert clean(conversation) == [
        gemini("function", gemini_call("c")),
        gemini("user", placeholder("c")),
        model({"text": BETWEEN}),
        gemini("user", TEXT),
    ]


def test_a_later_placeholder_joins_the_turns_responses_before_the_users_text() -> None:
    # a stray (chain c's response, going on) comes first in the answer to b's call, the text after it
    conversation = [
        model(gemini_call("c")),
        gemini("user", resp(7, True, "c")),
        model(gemini_call("b")),
        gemini("function", resp(12, True, "c"), TEXT),
        gemini("user", resp(15, True)),
    ]
    assert clean(conversation)[2:] == [
        model(gemini_call("b")),
        gemini("user", resp(12, True, "c"), placeholder("b")),
        model({"text": BETWEEN}),
        gemini("user", TEXT),
    ]


# -- 3. the fuzzers, seeded ------------------------------------------------------------------------------

ROLES = ["model", "model", "user", "user", "function", None]


def drawn(rng: random.Random) -> list[dict[str, Any]]:
    """A history of calls, responses (chains going on among them) and text in any role, some without one."""
    conversation: list[dict[str, Any]] = []
    for tag in range(rng.randint(1, 8)):
        parts: list[dict[str, Any]] = []
        for slot in range(rng.randint(1, 3)):
            kind = rng.random()
            if kind < 0.15:
                parts.append({"text": f"t{tag}.{slot}"})
            elif kind < 0.45:
                parts.append(gemini_call(rng.choice("abc")))
            else:
                parts.append(resp(10 * tag + slot, rng.choice([True, False, None]), rng.choice("abca")))
        conversation.append(gemini(rng.choice(ROLES), *parts))
    return conversation


@pytest.mark.parametrize("policy", [history.RepairPolicy(), DROP], ids=["placeholder", "drop-call"])
def test_seeded_histories_repair_clean_and_settled(policy: history.RepairPolicy) -> None:
    for seed in range(1500):  # seed 1355 was left dangling + orphan before task 130
        conversation = drawn(random.Random(seed))
        before = copy.deepcopy(conversation)
        try:
            clean(conversation, policy)
        except ToolcallFSMError:
            continue  # a typed answer to what repair cannot read
        assert conversation == before
