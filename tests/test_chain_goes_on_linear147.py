"""Audit 147 of task 145: whether a ``willContinue`` response stays where it came (policy
chain-goes-on-where-it-came) was read by scanning the parts from where its chain's first response goes,
once a chain: thousands of chains begun in one model content, each going on in the user content after,
scanned that content again each (3,000 chains: 19 s of repair, 13.5 million parts looked at). The parts
that part a response from its first are listed once a history now. Work is counted, not timed."""

from __future__ import annotations

from typing import Any

from fsm import history
from tests.test_hostile_audit87 import _steps_taken
from tests.test_will_continue104 import ASK, model, resp, user
from tests.test_will_continue104 import call as gemini_call


def _chains(n: int) -> list[dict[str, Any]]:
    """n calls, each answered first in the model's content (a stray, moved into their answer), going on
    in the user content after it."""
    ids = [f"a{k}" for k in range(n)]
    firsts = model(*(resp(k, True, cid) for k, cid in enumerate(ids)))
    return [ASK, model(*map(gemini_call, ids)), firsts, user(*(resp(n + k, False, cid) for k, cid in enumerate(ids)))]


def test_many_chains_moved_from_a_model_content_are_repaired_in_linear_work() -> None:
    steps = []
    for n in (150, 600):
        conversation = _chains(n)
        fixed, changes = history.repair(conversation, format="gemini")
        # every chain moved whole into the calls' answer: only responses stand between
        assert len([c for c in changes if c.kind.startswith("moved")]) == 2 * n
        assert [m["role"] for m in fixed] == ["user", "model", "user"]
        assert len(fixed[2]["parts"]) == 2 * n
        assert not [f for f in history.check(fixed, "gemini").findings if f.kind in history.REJECTED]
        steps.append(_steps_taken(lambda conversation=conversation: history.repair(conversation, format="gemini")))
    assert steps[1] < 4 * steps[0] * 1.25, steps  # 4x the chains: well under quadratic (16x)
