"""Programmatic tool calling leftovers in ``fsm.history`` (task 98).

1. Under ``RepairPolicy(dangling="drop-call")``, a server call waiting past client calls all of
   which repair drops went with them (audit 94), even where it would end the history as a paused
   turn the check accepts: ``[user, assistant[tool_use t1], assistant[server_tool_use]]`` came out
   as ``[user]``. With those calls gone it is a paused turn's (paused-call-last-only): it stays where
   nothing of the user's is left after its message.
3. (F6) Claude's code execution result the user sent back beside the results of the calls the code
   made (``misplaced-result``) was moved right after its call, before those calls: it goes first in
   Claude's next message after the user's, or in one of Claude's own (code-result-after-its-calls).
4. A Responses call whose program item comes later in the same response read ``unknown-caller``: it
   names the program by ``call_id`` and the request holds it (program-in-its-response).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fsm import history
from fsm.history import REJECTED, RepairPolicy
from tests.test_hostile_audit80 import ASK, TEXT, a, ran, res, srv, u, use

DROP = RepairPolicy(dangling="drop-call")


def _repaired(conversation: list[dict[str, Any]], policy: RepairPolicy | None = None) -> tuple[list[Any], list[Any]]:
    """Repair's output and changes, once its promises are checked: input untouched, nothing rejected
    left, a second repair changing nothing."""
    given = copy.deepcopy(conversation)
    fixed, changes = history.repair(conversation, policy, format="anthropic")
    assert conversation == given
    assert [f for f in history.check(fixed, "anthropic").findings if f.kind in REJECTED] == []
    assert history.repair(fixed, policy, format="anthropic") == (fixed, [])
    return fixed, [(change.kind, change.message, change.id) for change in changes]


PAUSED = {
    "the-call-before-the-code": [ASK, a(use("t1", None)), a(srv())],
    "beside-the-code": [ASK, a(srv(), use("t1"))],
    "after-the-code": [ASK, a(srv()), a(use("t1"))],
    "then-the-models-text": [ASK, a(srv(), use("t1")), a(TEXT)],
}


@pytest.mark.parametrize("name", PAUSED)
def test_drop_call_leaves_the_paused_code_where_it_ends_the_history(name: str) -> None:
    """Before: the server call went with the client calls (``[ASK]`` was left)."""
    fixed, changes = _repaired(PAUSED[name], DROP)
    assert [block["type"] for m in fixed[1:] for block in m["content"]][:1] == ["server_tool_use"]
    assert ("dropped-call", 2, "s1") not in changes and ("dropped-call", 3, "s1") not in changes
    assert [kind for kind, _, _ in changes if kind == "dropped-call"] == ["dropped-call"]  # t1 alone


def test_drop_call_still_drops_the_code_when_the_users_message_follows_it() -> None:
    """Not last once t1 goes: the user's text after it ends the turn, and the call is dangling."""
    fixed, changes = _repaired([ASK, a(srv(), use("t1")), u(TEXT)], DROP)
    assert ("dropped-call", 2, "s1") in changes
    assert all(
        block["type"] == "text" for m in fixed for block in (m["content"] if isinstance(m["content"], list) else [])
    )


def test_the_default_policy_keeps_the_code_waiting_past_the_placeholder() -> None:
    """As before: a placeholder answers t1 and the code waits past it."""
    fixed, changes = _repaired([ASK, a(srv(), use("t1"))])
    assert changes == [("placeholder-result", 2, "t1")]
    assert [block["type"] for block in fixed[1]["content"]] == ["server_tool_use", "tool_use"]


CODE_RESULT_SENT = {
    "alone": [ASK, a(srv(), use("t1")), u(res("t1"), ran())],
    "then-claude-answers": [ASK, a(srv(), use("t1")), u(res("t1"), ran()), a(TEXT)],
    "before-the-results": [ASK, a(srv(), use("t1"), use("t2")), u(ran(), res("t1"), res("t2"))],
    "then-the-users-text": [ASK, a(srv(), use("t1")), u(res("t1"), ran()), u(TEXT), a(TEXT)],
}


@pytest.mark.parametrize("name", CODE_RESULT_SENT)
def test_the_codes_result_the_user_sent_goes_after_the_results_of_its_calls(name: str) -> None:
    """Before: repair moved it right after its call, before the calls the code made
    (``[server_tool_use, code_execution_tool_result, tool_use]``). The guide's step 5: once the code
    has run on past those results, Claude's response begins with it."""
    conversation = CODE_RESULT_SENT[name]
    fixed, changes = _repaired(conversation)
    assert [block["type"] for block in fixed[1]["content"]] == [b["type"] for b in conversation[1]["content"]]
    answer = next(at for at in range(2, len(fixed)) if fixed[at]["role"] == "assistant")
    assert fixed[answer]["content"][0] == ran()
    assert all(fixed[at]["role"] == "user" for at in range(2, answer))
    assert [(kind, at) for kind, at, key in changes if key == "s1"] == [("moved-misplaced-result", 3)]
    assert history.repair(conversation, DROP, format="anthropic")[0] == fixed


def test_a_search_result_the_user_sent_still_goes_right_after_its_call() -> None:
    """No client call names the search as its caller: it is no code waiting on them."""
    search = srv("w1", "web_search")
    found = {"type": "web_search_tool_result", "tool_use_id": "w1", "content": []}
    fixed, _ = _repaired([ASK, a(search, use("t1", None)), u(res("t1"), found)])
    assert [block["type"] for block in fixed[1]["content"]] == ["server_tool_use", "web_search_tool_result", "tool_use"]


def test_a_program_later_in_the_calls_response_is_known() -> None:
    """Before: ``unknown-caller`` (the program was not before the call). The call names it by
    ``call_id`` and the request holds it; in a later response, or none, it is unknown as before."""
    from tests.test_history_leftovers89 import PROGRAM, _call, _output

    ask = {"role": "user", "content": "Which region sold most?"}
    for known in ([ask, _call(1), PROGRAM, _output(1)], [ask, _call(1), _call(2), PROGRAM, _output(1), _output(2)]):
        assert history.check(known).findings == ()
        assert history.repair(known) == (known, [])
    for unknown in ([ask, _call(1), _output(1), PROGRAM], [ask, _call(1), {"role": "user", "content": "x"}, PROGRAM]):
        assert [
            (f.kind.value, f.message) for f in history.check(unknown).findings if f.kind.value == "unknown-caller"
        ] == [("unknown-caller", 2)]


def test_an_item_reference_later_in_the_calls_response_may_be_its_program() -> None:
    """An ``item_reference`` names an item by its ``id``, which says nothing of its ``call_id``: later
    in the call's response it may be the program, as one before the call may (audit 100's note);
    after the call's output it is no longer of its response."""
    from tests.test_history_leftovers89 import _call, _output

    ask = {"role": "user", "content": "Which region sold most?"}
    reference = {"type": "item_reference", "id": "prog_1"}
    assert history.check([ask, _call(1), reference, _output(1)]).findings == ()
    late = history.check([ask, _call(1), _output(1), reference]).findings
    assert [(f.kind.value, f.message) for f in late if f.kind.value == "unknown-caller"] == [("unknown-caller", 2)]
