"""Hostile audit 105 of code-result-after-its-calls (``code_waits.after_its_calls``) after audit 100.

Random Anthropic histories of programmatic tool calling (several codes each with several rounds, code
results in both roles, messages split, searches, images, errors, empty messages) found two ways the
code's result the user sent went before a later round of the calls it made, though the policy puts it
in Claude's message after the results of its last round:

1. Claude's messages in a row are one turn: a round of calls in the second of them was not read, and
   the first (text, say) was taken for the message that answers the wait; so with a message that came
   empty (which repair drops) between them.
2. Two codes waiting at once: a round naming only the other code was taken for the end of the wait,
   though a later round names this one again.
"""

from __future__ import annotations

from typing import Any

import pytest

from fsm.history import RepairPolicy
from tests.test_hostile_audit80 import ASK, TEXT, a, ran, res, srv, u, use
from tests.test_hostile_audit100 import _sound

POLICIES = (RepairPolicy(), RepairPolicy(dangling="drop-call"))


def _blocks(fixed: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Every block in order, as (type, id or tool_use_id)."""
    return [
        (block["type"], block.get("id") or block.get("tool_use_id"))
        for message in fixed
        if isinstance(message["content"], list)
        for block in message["content"]
    ]


CASES = {
    # 1: the round t2 is in the second of Claude's messages in a row; the first ended the wait
    "a-round-in-claudes-second-message": (
        [ASK, a(srv(), use("t1")), u(res("t1")), a(TEXT), a(use("t2")), u(res("t2"), ran()), a(TEXT)],
        "s1",
        "t2",
    ),
    # 1 too: a user message that came empty (it goes) between Claude's two
    "a-round-past-an-empty-message": (
        [ASK, a(srv(), use("t1")), u(res("t1")), a(TEXT), u(), a(use("t2")), u(res("t2"), ran()), a(TEXT)],
        "s1",
        "t2",
    ),
    # 2: t3 is a round of s2's alone; s1's round t4 after it still waits on s1
    "another-codes-round-between": (
        [
            ASK,
            a(srv("s1"), use("t1", "s1"), srv("s2"), use("t2", "s2")),
            u(res("t1"), res("t2")),
            a(use("t3", "s2")),
            u(res("t3")),
            a(use("t4", "s1")),
            u(res("t4"), ran("s1")),
            a(ran("s2"), TEXT),
        ],
        "s1",
        "t4",
    ),
}


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("name", CASES)
def test_the_codes_result_goes_after_its_last_round(name: str, policy: RepairPolicy) -> None:
    conversation, code, last_call = CASES[name]
    fixed = _sound(conversation, policy)
    order = _blocks(fixed)
    result = order.index(("code_execution_tool_result", code))
    assert order.index(("tool_result", last_call)) < result
    # first in Claude's message after those results
    answer = next(m for m in fixed[::-1] if m["role"] == "assistant")
    assert answer["content"][0] == ran(code)


def test_two_codes_rounds_in_turn_each_result_after_its_own_last_round() -> None:
    """Rounds alternating between two codes, both results sent by the user at the end."""
    conversation = [ASK, a(srv("s1"), use("a1", "s1"), srv("s2"), use("a2", "s2")), u(res("a1"), res("a2"))]
    for n in range(6):
        code = f"s{n % 2 + 1}"
        conversation += [a(use(f"t{n}", code)), u(res(f"t{n}"))]
    conversation[-1]["content"] += [ran("s1"), ran("s2")]
    conversation.append(a(TEXT))
    for policy in POLICIES:
        fixed = _sound(conversation, policy)
        # each first in Claude's message after the results of its own last round (t4: s1's, t5: s2's)
        assert fixed[13]["content"][0] == ran("s1") and fixed[15]["content"][0] == ran("s2")
        assert _blocks(fixed[13:]) == [
            ("code_execution_tool_result", "s1"),
            ("tool_use", "t5"),
            ("tool_result", "t5"),
            ("code_execution_tool_result", "s2"),
            ("text", None),
        ]
