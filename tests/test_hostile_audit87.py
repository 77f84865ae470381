"""Hostile audit 87: today's history changes under random Anthropic histories (policy
results-alone-while-code-waits, :mod:`fsm.history.code_waits`).

Random programmatic tool calling loops (code execution's ``server_tool_use`` waiting on client
``tool_use`` blocks naming it their ``caller``), broken at random: the user's text, images,
documents and plain strings at every place, results misplaced, doubled or in the model's role,
empty messages, ``system`` messages, ``fallback`` blocks, paused turns, ids used twice. For every
history: check raises nothing but fsm's errors; repair leaves its input as it was, a second repair
gives the first's output, no block is lost but by a change saying so, its output has no rejected
finding but the ``results-beside-text`` it kept and said so, and each ``moved-user-content`` names
the input message the content came from.

What was found (each test below failed before its fix):

1. A message of a role the format lacks (``system``) between Claude's waiting code and the user's
   results was read as the user's: its content moved into a user message (its role lost, though
   repair said ``kept-unknown-role`` of it) and named ``moved-user-content``. Read as absent now
   (unknown-role-between), kept where it was.
2. Claude's next turn in two messages, its results in two user messages: the moved content went
   into the first, before the second's results (``result-after-text`` in repair's output). It goes
   after the results of the last of the user's messages in a row that holds results.
3. So too past a ``system`` message between Claude's message and the user's results: the moved
   content went in a message of its own before them.
4. An empty assistant message left last (Claude's answer to come) was taken as the message ending
   the wait: the content went after it, and it was no longer last (``empty-message``). It ends no
   wait: the content is kept (``kept-results-beside-text``).
5. A paused turn (Claude's message after the results, the code's server call still waiting, last)
   was taken as ending the wait: the content went after it, and the code's call was ``dangling``.
   A message a server call waits past ends no wait.
6. Messages merged (an empty one between them dropped): ``moved-user-content`` named the first
   merged message, not the one the content came from. Repair's ``origins`` now say where each input
   message's blocks start in a merged message (and what is left of user messages moved after
   their run is its own message's, not the run end's).

Judged fine: results sent in the model's role then moved; placeholders, drops and renames are
told by their changes; linear time in the number of messages (two sizes, below). Left (found on
main, not from today's changes): a user message making a call (``misplaced-call``) after a
``system`` message following a server call gets its text before the placeholder result
(``result-after-text``); a user message making a call after a paused turn's text leaves the paused
server call ``dangling`` (see the report of task 87). Both fixed since: tests/test_history_leftovers89.py.
"""

from __future__ import annotations

import copy
import functools
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from fsm import history
from fsm.history import REJECTED, Kind
from tests.test_hostile_audit80 import ASK, TEXT, a, ran, res, srv, u, use

SYSTEM = {"role": "system", "content": "be brief"}
SAID = {"type": "text", "text": "later"}


def _repaired(conversation: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[tuple[str, int]]]:
    given = copy.deepcopy(conversation)
    fixed, changes = history.repair(conversation, format="anthropic")
    assert conversation == given
    again, more = history.repair(fixed, format="anthropic")
    assert again == fixed and {c.kind for c in more} <= {"kept-results-beside-text", "kept-unknown-role"}
    return fixed, [(c.kind, c.message) for c in changes]


def _rejected(fixed: list[dict[str, Any]]) -> list[tuple[str, int]]:
    found = history.check(fixed, "anthropic").findings
    return [(f.kind.value, f.message) for f in found if f.kind in REJECTED and f.kind is not Kind.UNKNOWN_ROLE]


def test_a_message_of_a_role_anthropic_lacks_stays_as_it_came() -> None:
    conversation = [ASK, a(srv(), use("t1")), SYSTEM, u(res("t1")), a(ran(), TEXT)]
    assert history.check(conversation, "anthropic").findings[0].kind is Kind.UNKNOWN_ROLE
    fixed, changes = _repaired(conversation)
    assert fixed == conversation and changes == [("kept-unknown-role", 3)]
    # beside the user's own text, which goes; the system message stays
    fixed, changes = _repaired([ASK, a(srv(), use("t1")), SYSTEM, u(res("t1"), TEXT), a(ran(), TEXT)])
    assert fixed == [ASK, a(srv(), use("t1")), SYSTEM, u(res("t1")), a(ran(), TEXT), u(TEXT)]
    assert ("moved-user-content", 4) in changes and ("moved-user-content", 3) not in changes


def test_the_moved_content_goes_after_the_last_results_of_claudes_next_turn() -> None:
    nxt = [a(ran(), use("t2", None)), a(use("t3", None)), u(res("t2")), u(res("t3")), u(SAID)]
    fixed, changes = _repaired([ASK, a(srv(), use("t1")), u(res("t1"), TEXT), *nxt])
    assert fixed[-3:] == [u(res("t2")), u(res("t3"), TEXT), u(SAID)]
    assert _rejected(fixed) == [] and changes == [("moved-user-content", 3)]


def test_the_moved_content_goes_after_results_past_a_system_message() -> None:
    fixed, _ = _repaired(
        [ASK, a(srv(), use("t1")), u(res("t1"), TEXT), a(ran(), use("t2", None)), SYSTEM, u(res("t2"))]
    )
    assert fixed[-2:] == [SYSTEM, u(res("t2"), TEXT)] and _rejected(fixed) == []


def test_an_empty_last_message_of_claudes_ends_no_wait() -> None:
    conversation = [ASK, a(srv(), use("t1")), u(res("t1"), TEXT), a()]
    fixed, changes = _repaired(conversation)
    assert fixed == conversation and changes == [("kept-results-beside-text", 3)]
    assert _rejected(fixed) == [("results-beside-text", 3)]


def test_a_paused_turn_ends_no_wait() -> None:
    conversation = [ASK, a(srv(), use("t1")), u(res("t1"), TEXT), a(TEXT)]
    fixed, changes = _repaired(conversation)
    assert fixed == conversation and changes == [("kept-results-beside-text", 3)]
    assert _rejected(fixed) == [("results-beside-text", 3)]


def test_moved_content_is_named_by_the_message_it_came_from() -> None:
    conversation = [ASK, a(srv(), use("t1")), u(res("t1")), u(), u(TEXT), a(ran(), TEXT)]
    fixed, changes = _repaired(conversation)
    assert fixed == [ASK, a(srv(), use("t1")), u(res("t1")), a(ran(), TEXT), u(TEXT)]
    assert ("moved-user-content", 5) in changes and ("moved-user-content", 3) not in changes
    # two merged messages' content, each named
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "x"}}
    _, changes = _repaired([ASK, a(srv(), use("t1")), u(res("t1"), image), u(), u(TEXT), a(ran(), TEXT)])
    assert [m for kind, m in changes if kind == "moved-user-content"] == [3, 5]
    # kept: named by the first message holding the content
    _, changes = _repaired([ASK, a(srv(), use("t1")), u(res("t1")), u(), u(TEXT)])
    assert ("kept-results-beside-text", 5) in changes


def _rounds(n: int) -> list[dict[str, Any]]:
    conversation = [ASK]
    for k in range(n):
        s, t = f"s{k}", f"t{k}"
        conversation += [a(srv(s), use(t, s)), u(res(t), {"type": "text", "text": f"x{k}"}), a(ran(s), TEXT), u(SAID)]
    return conversation


def _steps_taken(work: Callable[[], object]) -> int:
    """How many lines of Python ``work`` runs (with the calls and returns among them): a count, which
    the machine's load cannot move as it moves a timing (a wall-clock timing of this test failed on a
    busy machine), and which a loop with no call in it adds to as a loop's calls do."""
    taken = [0]

    def step(frame: FrameType, event: str, arg: object) -> Any:
        taken[0] += 1
        return step

    if sys.gettrace() is not None:  # a coverage or debugging run holds the trace hook
        pytest.skip("the work is counted with sys.settrace")
    sys.settrace(step)
    try:
        work()
    finally:
        sys.settrace(None)
    return taken[0]


def _repaired_and_checked(conversation: list[dict[str, Any]]) -> None:
    history.check(history.repair(conversation, format="anthropic")[0], "anthropic")


def test_linear_in_the_rounds() -> None:
    steps = []
    for n in (200, 800):
        conversation = _rounds(n)
        fixed, changes = history.repair(conversation, format="anthropic")
        assert len([c for c in changes if c.kind == "moved-user-content"]) == n
        assert all(m["content"][0]["text"] == f"x{k}" for k, m in enumerate(fixed[4::4]))
        steps.append(_steps_taken(functools.partial(_repaired_and_checked, conversation)))
    assert steps[1] < 4 * steps[0] * 1.25, steps  # 4x the rounds: well under quadratic (16x)
