"""Task 152: a call repair drops holds no id, so the next call under it keeps it (policy
dropped-call-frees-id); a call after one that stays is renamed as before.

Before: under ``RepairPolicy(dangling="drop-call")`` a Gemini call left unanswered went while a signed
one under its id after it (it keeps a placeholder: Gemini wants its signature back) was renamed
``<id>_d2``, in one content or the next; and a Responses ``computer_call`` dropped (its only output is a
screenshot) had the call after it renamed, whatever the policy. Ids feed prompt caches: a rename no
rule needs is a change the user did not ask for."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import history
from fsm.history import REJECTED, RepairPolicy

DROP = RepairPolicy(dangling="drop-call")
ASK = {"role": "user", "parts": [{"text": "q"}]}
MORE = {"role": "user", "parts": [{"text": "more"}]}


def call(key: str, signed: bool = False) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"id": key, "name": "f", "args": {}}}
    return {**part, "thoughtSignature": "c2ln"} if signed else part


def _calls(fixed: list[dict[str, Any]]) -> list[str]:
    return [p["functionCall"]["id"] for m in fixed for p in m.get("parts", []) if "functionCall" in p]


def _sound(conversation: list[Any], fmt: str, policy: RepairPolicy) -> tuple[list[Any], list[Any]]:
    fixed, changes = history.repair(conversation, policy, format=fmt)
    assert [f for f in history.check(fixed, fmt).findings if f.kind in REJECTED] == []
    assert history.repair(fixed, policy, format=fmt) == (fixed, [])
    return fixed, [(c.kind, c.message, c.id) for c in changes]


GEMINI = {
    "in-one-content": [ASK, {"role": "model", "parts": [call("x"), call("x", True)]}, MORE],
    "in-two-contents": [
        ASK,
        {"role": "model", "parts": [call("x")]},
        {"role": "model", "parts": [call("x", True)]},
        MORE,
    ],
}


@pytest.mark.parametrize("name", GEMINI)
def test_a_signed_gemini_call_after_a_dropped_one_keeps_its_id(name: str) -> None:
    fixed, changes = _sound(GEMINI[name], "gemini", DROP)
    assert _calls(fixed) == ["x"] and ("dropped-call", 2, "x") in changes
    assert not [c for c in changes if c[0] == "renamed-call"], changes


@pytest.mark.parametrize("name", GEMINI)
def test_a_call_after_one_that_stays_is_still_renamed(name: str) -> None:
    fixed, _ = _sound(GEMINI[name], "gemini", RepairPolicy())  # the first gets a placeholder: it stays
    assert _calls(fixed) == ["x", "x_d2"]
    signed = [call("x", True), call("x", True)]  # under drop-call too, when the first is signed
    fixed, _ = _sound([ASK, {"role": "model", "parts": signed}, MORE], "gemini", DROP)
    assert _calls(fixed) == ["x", "x_d2"]


@pytest.mark.parametrize("policy", [RepairPolicy(), DROP], ids=lambda p: p.dangling)
def test_a_call_after_a_dropped_computer_call_keeps_its_id(policy: RepairPolicy) -> None:
    screen = {"type": "computer_call", "id": "i1", "call_id": "x", "status": "completed"}
    screen |= {"action": {"type": "wait"}, "pending_safety_checks": []}
    function = {"type": "function_call", "id": "i2", "call_id": "x", "name": "f", "arguments": "{}"}
    conversation = [{"role": "user", "content": "q"}, screen, function, {"role": "user", "content": "more"}]
    fixed, changes = _sound(conversation, "responses", policy)
    assert ("dropped-call", 2, "x") in changes and not [c for c in changes if c[0] == "renamed-call"]
    assert [m["call_id"] for m in fixed if "call_id" in m] == (["x", "x"] if policy is not DROP else [])
