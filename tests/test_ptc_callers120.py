"""Task 120: an old leftover of drop-call: a server call a user message made, moved into a message of
Claude's, stayed where the user's text was moved after it when an empty message ended the history.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fsm import history
from fsm.history import RepairPolicy
from tests.test_hostile_audit80 import TEXT, a, srv, u, use

EMPTY = {"role": "user", "content": ""}


@pytest.mark.parametrize(
    "after",
    [
        [EMPTY],  # the brief's case
        [EMPTY, EMPTY],
        [{"role": "tool", "content": "x"}],  # a role the format lacks: read as absent, kept
    ],
)
def test_drop_call_drops_a_moved_server_call_the_users_text_goes_after(after: list[dict[str, Any]]) -> None:
    """Before: ``dangling w1`` after repair (a second repair dropped it). The user message's server call
    goes into a message of Claude's, its text after that: the call no longer ends the history, so its
    result no longer the server's to give; the empty message after it, which goes, hid that."""
    conversation = [a(use("t3", "s2")), u(TEXT, srv("w1", "web_search")), *after]
    fixed, changes = history.repair(copy.deepcopy(conversation), RepairPolicy(dangling="drop-call"), "anthropic")
    assert ("dropped-call", 2, "w1") in {(c.kind, c.message, c.id) for c in changes}
    assert fixed[0] == u(TEXT)
    left = [f for f in history.check(fixed, "anthropic").findings if f.kind is not history.Kind.UNKNOWN_ROLE]
    assert left == []
    assert history.repair(fixed, RepairPolicy(dangling="drop-call"), "anthropic")[0] == fixed
