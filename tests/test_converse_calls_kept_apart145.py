"""Task 145: ``kept_apart``'s Converse side (task 141 made it read the calls' own message when of a role
the format lacks, tested for Gemini alone). A Converse message of a role Converse lacks making calls is
kept as it came (``kept-unknown-role``), and the model's message after it that sent a response in its
role beside its text joins it no more than it joins one between: the turn's answer goes right after the
calls, before the model's text (policy function-role-calls-kept-apart). Before task 141 the answer went
after that text: ``check(repair(h))`` found the calls ``dangling`` and their results ``orphan``s, and a
second repair swapped the real results for placeholders."""

from __future__ import annotations

import pytest

from fsm import history
from tests.test_hostile_audit52 import PLACEHOLDER, _sound, result, said, use

ASK = said("user", {"text": "hi"})


@pytest.mark.parametrize("role", ["function", "tool"])
def test_converse_results_go_right_after_calls_made_in_a_role_it_lacks(role: str) -> None:
    messages = [
        ASK,
        said(role, use("c"), use("d")),
        said("assistant", result("x", "R1"), {"text": "t"}),
        said("user", result("c", "R2")),
        said("user", {"text": "more"}),
        said("user", result("d", "R3")),
    ]
    fixed = _sound(messages)
    assert fixed == [
        ASK,
        messages[1],  # kept as it came, for the caller to name
        said("user", result("c", "R2"), result("d", "R3")),
        said("assistant", {"text": "t"}),
        said("user", {"text": "more"}),
    ]
    changes = history.repair(messages, format="bedrock")[1]
    assert ("dropped-orphan", 3, "x") in [(c.kind, c.message, c.id) for c in changes]


@pytest.mark.parametrize("policy", [history.RepairPolicy(), history.RepairPolicy(dangling="drop-call")])
def test_a_result_the_converse_model_sent_goes_first_in_their_answer(policy: history.RepairPolicy) -> None:
    messages = [
        ASK,
        said("function", use("c"), use("d"), use("e")),
        said("assistant", result("d", "R1"), {"text": "t"}),
        said("user", result("c", "R2")),
        said("user", {"text": "more"}),
        said("user", result("e", "R3")),
    ]
    fixed = _sound(messages, policy)
    answer = fixed[2]
    assert answer["role"] == "user" and PLACEHOLDER not in str(answer)
    assert [b["toolResult"]["toolUseId"] for b in answer["content"]] == ["d", "c", "e"]
    assert [m["role"] for m in fixed] == ["user", "function", "user", "assistant", "user"]
