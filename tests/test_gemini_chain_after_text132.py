"""Audit 132 of task 130: policy responses-before-the-users-parts took a response going on with a
chain begun before the user's text (``willContinue``, policy will-continue-responses) back before that
text, joined to the turn's responses, and said only ``merged-messages``. A NON_BLOCKING function
answers on while the user speaks: ``check`` finds such a response in place (no ``result-after-text``),
and repair kept it where it came before task 130, after the user's text, as it keeps a chain going on
past the model's text. A response of its own after the user's text still goes before it."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import history

ASK = {"role": "user", "parts": [{"text": "hi"}]}
SAID = {"role": "user", "parts": [{"text": "meanwhile"}]}


def call(key: str) -> dict[str, Any]:
    return {"functionCall": {"name": "f", "id": key, "args": {}}}


def resp(key: str, **more: Any) -> dict[str, Any]:
    return {"functionResponse": {"name": "f", "id": key, "response": {"n": len(more)}, **more}}


def content(role: str | None, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"parts": list(parts)} if role is None else {"role": role, "parts": list(parts)}


def repaired(conversation: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[tuple[str, int]]]:
    fixed, changes = history.repair(conversation, format="gemini")
    found = [f.kind.value for f in history.check(fixed, "gemini").findings if f.kind in history.REJECTED]
    assert found == []
    assert history.repair(fixed, format="gemini") == (fixed, [])
    return fixed, [(c.kind, c.message) for c in changes]


def where(fixed: list[dict[str, Any]], part: dict[str, Any]) -> int:
    return next(at for at, each in enumerate(fixed) if part in each["parts"])


@pytest.mark.parametrize("role", ["user", None, "function"])
def test_a_response_going_on_after_the_users_text_stays_after_it(role: str | None) -> None:
    last = resp("a", willContinue=False)
    conversation = [ASK, content("model", call("a")), content("user", resp("a", willContinue=True)), SAID]
    conversation.append(content(role, last))
    assert "result-after-text" not in [f.kind.value for f in history.check(conversation, "gemini").findings]
    fixed, changes = repaired(conversation)
    assert where(fixed, last) > where(fixed, SAID["parts"][0])  # after the user's text, as it came
    assert ("merged-messages", 5) not in changes


def test_a_response_going_on_past_a_later_turn_and_the_users_text_stays_after_them() -> None:
    last = resp("a", willContinue=False)
    conversation = [ASK, content("model", call("a")), content("user", resp("a", willContinue=True))]
    conversation += [content("model", call("b")), content("user", resp("b")), SAID, content(None, last)]
    fixed, _ = repaired(conversation)
    assert where(fixed, last) > where(fixed, SAID["parts"][0])
    assert where(fixed, resp("b")) < where(fixed, SAID["parts"][0])


def test_a_response_of_its_own_beside_one_going_on_still_goes_before_the_users_text() -> None:
    own = resp("b")
    conversation = [ASK, content("model", call("a"), call("b")), content("user", resp("a", willContinue=True)), SAID]
    conversation.append(content(None, resp("a", willContinue=False), own))
    fixed, _ = repaired(conversation)
    assert where(fixed, own) < where(fixed, SAID["parts"][0])  # responses-before-the-users-parts
