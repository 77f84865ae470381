"""History leftovers (task 89): two repairs audit 87 found in older code.

1. A user message making a call (``misplaced-call``) after a ``system`` message (a role Anthropic
   lacks, read as absent: unknown-role-between) that follows Claude's server call: the check reads
   the server call, the ``system`` message and the user's call as one run, but repair's search for the
   run's first call stopped at the ``system`` message, so what the user's message left stayed before
   the placeholder result, which went in a message of its own after it (``result-after-text`` in
   repair's output, and a second repair changed it again).
2. A paused wait (Claude's code execution waiting past the client results of a call beside it),
   then Claude's message of text alone and a user message making a call: the check reads the two as
   one run making calls, which the code's wait goes on past. Repair left the user's text between
   them, which ended the wait there: the code's server call was ``dangling`` in repair's output.
   Such a run (``Segment.carries``) begins with its first message: the user's text goes after it,
   the placeholder result first (user-content-after-the-run).
3. ``Report.format`` said ``openai`` for a history ``format="auto"`` did not judge (empty, or telling
   no format: no call or result of any), as if OpenAI chat's rules had found nothing there, where
   naming ``"openai"`` finds what they refuse. It is None (policy unjudged-says-no-format); the
   command line says the history was not judged.
3b. Found by this task's sweep, in older code: a user message making a call right after Claude's
   code execution call (one run), the call's result sent back in Claude's role beside more of
   Claude's: the check read the result as going after that message of Claude's, so the code waited on
   to the history's end; repair put it first in what the user's message left, right after the run
   (user-content-after-the-run), and Claude's message after it ended the wait (``dangling`` in
   repair's output). The check reads the result where repair puts it now: the code's call is
   ``dangling`` (Claude's next message neither answers nor waits on it), and repair drops it.
4. A Responses call made by a program (OpenAI programmatic tool calling: ``caller`` names the
   program item's ``call_id``) with no such program before it passed: it is ``unknown-caller``
   (policy caller-program-first), which repair keeps and says so (``kept-unknown-caller``).
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

from fsm import history
from fsm.cli import main
from fsm.history import REJECTED, Kind, RepairPolicy
from tests.test_hostile_audit80 import a, res, srv, u, use

SYSTEM = {"role": "system", "content": "be brief"}
ASK = {"role": "user", "content": "Which region sold most?"}
SAID = {"type": "text", "text": "later"}
CLAUDE = {"type": "text", "text": "Checking."}
PLACEHOLDER = "The tool call was not completed; no result is available."


def _repaired(conversation: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[tuple[str, int]]]:
    """Repair's output and changes, once its promises are checked: input untouched, no rejected
    finding left but the unknown role it keeps, a second repair changing nothing."""
    given = copy.deepcopy(conversation)
    fixed, changes = history.repair(conversation, format="anthropic")
    assert conversation == given
    left = [f for f in history.check(fixed, "anthropic").findings if f.kind in REJECTED]
    assert [f.kind for f in left if f.kind is not Kind.UNKNOWN_ROLE] == []
    again, more = history.repair(fixed, format="anthropic")
    assert again == fixed and {c.kind for c in more} <= {"kept-unknown-role"}
    return fixed, [(c.kind, c.message) for c in changes]


def _placeholder(key: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": key, "content": PLACEHOLDER, "is_error": True}


def test_a_users_call_after_a_system_message_in_a_server_calls_run() -> None:
    conversation = [a(srv("s2")), SYSTEM, u(SAID, use("t6", None))]
    found = [(f.kind.value, f.message) for f in history.check(conversation, "anthropic").findings]
    assert found == [("unknown-role", 2), ("misplaced-call", 3), ("dangling", 3)]
    fixed, changes = _repaired(conversation)
    # the placeholder first in what the user's message left, after the run (it went after that text)
    assert fixed == [a(srv("s2")), SYSTEM, a(use("t6", None)), u(_placeholder("t6"), SAID)]
    assert ("moved-user-content", 3) in changes and ("kept-unknown-role", 2) in changes
    # so too with Claude's text after the user's call (one run) and more system messages in it
    conversation = [ASK, a(srv("s2")), SYSTEM, SYSTEM, u(SAID, use("t6", None)), SYSTEM, a(CLAUDE)]
    fixed, _ = _repaired(conversation)
    assert fixed[-2:] == [a(CLAUDE), u(_placeholder("t6"), SAID)]


def test_a_users_call_after_claudes_text_goes_on_with_the_codes_wait() -> None:
    # the code's server call waits past the result of the call beside it; Claude's text and the
    # user's call after that result are one run making calls: the wait goes on past them
    conversation = [ASK, a(srv("s2"), use("t8", None)), u(res("t8")), a(CLAUDE), u(SAID, use("t4", None))]
    found = [(f.kind.value, f.id) for f in history.check(conversation, "anthropic").findings]
    assert found == [("misplaced-call", "t4"), ("dangling", "t4")]  # the server call still waits
    fixed, changes = _repaired(conversation)
    assert fixed == [*conversation[:4], a(use("t4", None)), u(_placeholder("t4"), SAID)]
    assert ("moved-user-content", 5) in changes
    # so too in messages of their own (a turn continued), the code's client call naming it its caller
    conversation = [ASK, a(srv("s2")), a(use("t8", "s2")), u(res("t8")), a(CLAUDE), u(SAID, use("t4", None))]
    fixed, _ = _repaired(conversation)
    assert fixed[-3:] == [a(CLAUDE), a(use("t4", None)), u(_placeholder("t4"), SAID)]
    # where no server call waits, the user's text stays where it was, before the call (as before)
    conversation = [ASK, a(CLAUDE), u(SAID, use("t4", None))]
    fixed, _ = _repaired(conversation)
    assert fixed == [ASK, a(CLAUDE), u(SAID), a(use("t4", None)), u(_placeholder("t4"))]
    # nor the paused turn's server call, which stays last (a text moved after it would drop it)
    conversation = [ASK, a(CLAUDE), u(SAID, srv("s1"))]
    fixed, changes = _repaired(conversation)
    assert fixed == [ASK, a(CLAUDE), u(SAID), a(srv("s1"))] and changes == [("moved-misplaced-call", 3)]


def test_a_history_telling_no_format_is_reported_in_none(tmp_path: Path) -> None:
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}]
    for unjudged in ([], plain, [{"type": "message", "role": "user", "content": "hi"}]):
        assert history.check(unjudged) == history.Report(None, ())
        assert history.detect_format(unjudged) == "openai"  # its fallback, unchanged
    named = history.check(plain, "openai")
    assert named.format == "openai" and [f.kind for f in named.findings] == [Kind.EMPTY_MESSAGE]
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(plain))
    out = io.StringIO()
    assert main(["history", "check", str(path)], stdout=out, stderr=io.StringIO()) == 0
    assert out.getvalue() == "history of 2 messages tells no format: not judged (name one with --format)\n"
    out = io.StringIO()
    assert main(["history", "check", "--json", str(path)], stdout=out, stderr=io.StringIO()) == 0
    assert json.loads(out.getvalue()) == {"format": None, "rejected": False, "findings": []}
    out = io.StringIO()
    assert main(["history", "check", "--format", "openai", str(path)], stdout=out, stderr=io.StringIO()) == 1
    assert out.getvalue().endswith("openai history of 2 messages would be rejected\n")
    # passed back, a report's None reads the history as "auto" does (a repair took it for a format's name)
    assert history.repair(plain, format=None) == (plain, []) and history.check(plain, None) == history.Report(None, ())


def test_a_result_sent_as_claude_after_a_users_call_in_a_code_run() -> None:
    said_back = a(res("t11"), {"type": "thinking", "thinking": "H", "signature": "s"})
    conversation = [a(srv("s4")), u(SAID, use("t11", None)), said_back, {"role": "user", "content": "more"}]
    found = [(f.kind.value, f.id) for f in history.check(conversation, "anthropic").findings]
    assert found == [("dangling", "s4"), ("misplaced-call", "t11"), ("misplaced-result", "t11")]
    fixed, changes = _repaired(conversation)
    assert fixed == [a(use("t11", None)), u(res("t11"), SAID), a(said_back["content"][1]), conversation[-1]]
    assert ("dropped-call", 1) in changes and ("moved-misplaced-result", 3) in changes


PROGRAM = {"type": "program", "id": "prog_1", "call_id": "call_prog", "code": "text(1)", "fingerprint": "fp_1"}


def _call(n: int, caller: str | None = "call_prog", kind: str = "function_call") -> dict[str, Any]:
    call = {"type": kind, "call_id": f"call_{n}", "name": "sales", "arguments": "{}"}
    return call | ({"caller": {"type": "program", "caller_id": caller}} if caller else {})


def _output(n: int) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": f"call_{n}", "output": "r"}


def test_a_call_naming_a_program_the_history_lacks() -> None:
    ask = {"role": "user", "content": "Which region sold most?"}
    sound = [ask, PROGRAM, _call(1), _call(2), _output(1), _output(2)]
    assert history.check(sound).findings == () and history.repair(sound) == (sound, [])
    cases = {
        "no program": ([ask, _call(1), _output(1)], [2]),
        "the program after its output": (
            [ask, _call(1), _output(1), PROGRAM],
            [2],
        ),  # (task 98: in its response, known)
        "another program": ([ask, PROGRAM, _call(1, "call_other"), _call(2), _output(1), _output(2)], [3]),
        "a caller_id of no text": ([ask, PROGRAM, _call(1, 7), _output(1)], [3]),  # type: ignore[arg-type]
        "a custom tool's call": ([ask, _call(1, kind="custom_tool_call") | {"input": "x"}], [2]),
    }
    for name, (sent, at) in cases.items():
        found = [(f.kind, f.message) for f in history.check(sent).findings if f.kind is Kind.UNKNOWN_CALLER]
        assert found == [(Kind.UNKNOWN_CALLER, n) for n in at], name
        fixed, changes = history.repair(sent)
        assert [(c.kind, c.message) for c in changes if c.kind == "kept-unknown-caller"] == [
            ("kept-unknown-caller", n) for n in at
        ], name
        assert {f.kind for f in history.check(fixed).findings} == {Kind.UNKNOWN_CALLER}, name  # kept, said again
        assert history.repair(fixed)[0] == fixed, name
    # a direct call, or one after an item reference (which may be the program), tells nothing
    for sent in ([ask, _call(1, None), _output(1)], [ask, {"type": "item_reference", "id": "prog_1"}, _call(1)]):
        assert not [f for f in history.check(sent).findings if f.kind is Kind.UNKNOWN_CALLER]
    # a call repair drops (dangling, drop-call) is not said kept; one it answers with a placeholder is
    dangling = [ask, _call(1)]
    assert [c.kind for c in history.repair(dangling, RepairPolicy(dangling="drop-call"))[1]] == ["dropped-call"]
    assert [c.kind for c in history.repair(dangling)[1]] == ["placeholder-result", "kept-unknown-caller"]
