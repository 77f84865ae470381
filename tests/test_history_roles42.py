"""Messages of a role their format lacks (``unknown-role``), which repair keeps for the caller to name,
among Anthropic runs and Converse messages a removal brings together: the two gaps audit 41's
property left out of its draw of roles, and what fixing them showed.

Policies: ``unknown-role-between`` (such a message holding no call, result or server block is read as
if absent: it ends no turn and parts no Anthropic run) and ``unknown-role-kept-apart`` (repair merges
no two of them, even when a removal brings them together).
"""

from __future__ import annotations

from typing import Any

from fsm import history
from fsm.history import Kind


def _use(key: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": key, "name": "f", "input": {}}


def _result(key: str, tag: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": key, "content": tag}


def _server(key: str) -> list[dict[str, Any]]:
    return [
        {"type": "server_tool_use", "id": key, "name": "web_search", "input": {}},
        {"type": "web_search_tool_result", "tool_use_id": key, "content": []},
    ]


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _note_between(role: str) -> list[dict[str, Any]]:
    """A call, a note of ``role``, and the model's text with the call's result sent in the model's role."""
    return [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [_use("a")]},
        {"role": role, "content": "note"},
        {"role": "assistant", "content": [_text("t"), _result("a", "ra")]},
    ]


def _findings(messages: list[dict[str, Any]], fmt: str) -> list[tuple[str, int, str]]:
    return [(f.kind.value, f.message, f.id) for f in history.check(messages, fmt).findings]


def _changes(changes: list[history.Change]) -> list[tuple[str, int, str | None]]:
    return [(c.kind, c.message, c.id) for c in changes]


def _settled(fixed: list[dict[str, Any]], fmt: str) -> None:
    """What repair wrote passes the check but for the roles the caller must name, and stays as it is."""
    assert all(f.kind is Kind.UNKNOWN_ROLE for f in history.check(fixed, fmt).findings)
    assert history.repair(fixed, None, fmt)[0] == fixed


def test_anthropic_unknown_role_between_the_calls_and_their_result_sent_as_the_model() -> None:
    """The gap audit 41 left: the result answers the call across the system message (it ends no
    turn) and moves to a user message after the model's; the model's text there was read as a turn
    of its own once written, the call ``dangling`` and its result an ``orphan``. The message is read
    as if absent, so the model's messages either side of it are one run, as they are once written."""
    messages = _note_between("system")
    assert _findings(messages, "anthropic") == [("unknown-role", 3, ""), ("misplaced-result", 4, "a")]
    fixed, changes = history.repair(messages, None, "anthropic")
    assert fixed == [
        messages[0],
        messages[1],
        messages[2],
        {"role": "assistant", "content": [_text("t")]},
        {"role": "user", "content": [_result("a", "ra")]},
    ]
    assert _changes(changes) == [("kept-unknown-role", 3, None), ("moved-misplaced-result", 4, "a")]
    _settled(fixed, "anthropic")


def test_anthropic_runs_of_server_calls_under_one_id_are_one_turn_across_an_unknown_role_left_bare() -> None:
    """Repair drops the only result the unknown-role message held (an orphan): left with text alone
    it parts no run, so the two assistant messages are one turn and the later server call under the
    same id is renamed, as within one message."""
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": _server("s")},
        {"role": "weird", "content": [_text("t"), _result("x", "rx")]},
        {"role": "assistant", "content": _server("s")},
    ]
    fixed, changes = history.repair(messages, None, "anthropic")
    assert fixed == [
        messages[0],
        messages[1],
        {"role": "weird", "content": [_text("t")]},
        {"role": "assistant", "content": _server("s_d2")},
    ]
    assert _changes(changes) == [
        ("dropped-orphan", 3, "x"),
        ("kept-unknown-role", 3, None),
        ("renamed-call", 4, "s"),
        ("renamed-result", 4, "s"),
    ]
    _settled(fixed, "anthropic")


def test_anthropic_unknown_role_making_calls_joins_the_server_runs_either_side_once_a_message_goes() -> None:
    """A message of a role Anthropic lacks that makes calls is read as the model's: once the orphan's
    message before the runs goes, both server calls under ``s`` are in one run and the later is renamed."""
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [_result("x", "rx")]},
        {"role": "assistant", "content": _server("s")},
        {"role": "weird", "content": [_use("a")]},
        {"role": "assistant", "content": _server("s")},
        {"role": "user", "content": [_result("a", "ra")]},
    ]
    fixed, changes = history.repair(messages, None, "anthropic")
    assert fixed == [
        messages[0],
        messages[2],
        messages[3],
        {"role": "assistant", "content": _server("s_d2")},
        messages[5],
    ]
    assert _changes(changes) == [
        ("dropped-orphan", 2, "x"),
        ("dropped-empty-message", 2, None),
        ("kept-unknown-role", 4, None),
        ("renamed-call", 5, "s"),
        ("renamed-result", 5, "s"),
    ]
    _settled(fixed, "anthropic")


def test_converse_two_of_an_unknown_role_a_removal_brings_together_stay_apart() -> None:
    """The other gap audit 41 left: the empty assistant message goes, and the two ``weird`` messages
    either side were merged as neighbours of one role, the result after the note's text
    (``result-after-text``). Kept as they came, the result still answers the call across the note."""
    messages = [
        {"role": "user", "content": [{"text": "hi"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "a", "name": "f", "input": {}}}]},
        {"role": "weird", "content": [{"text": "note"}]},
        {"role": "assistant", "content": []},
        {"role": "weird", "content": [{"toolResult": {"toolUseId": "a", "content": [{"text": "ra"}]}}]},
    ]
    fixed, changes = history.repair(messages, None, "bedrock")
    assert fixed == [messages[0], messages[1], messages[2], messages[4]]
    assert _changes(changes) == [
        ("kept-unknown-role", 3, None),
        ("dropped-empty-message", 4, None),
        ("kept-unknown-role", 5, None),
    ]
    _settled(fixed, "bedrock")


def test_anthropic_two_of_an_unknown_role_a_removal_brings_together_stay_apart() -> None:
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "weird", "content": "one"},
        {"role": "user", "content": ""},
        {"role": None, "content": "two"},
        {"role": "user", "content": ""},
        {"role": None, "content": "three"},
    ]
    fixed, changes = history.repair(messages, None, "anthropic")
    assert fixed == [messages[0], messages[1], messages[3], messages[5]]
    assert _changes(changes) == [
        ("kept-unknown-role", 2, None),
        ("dropped-empty-message", 3, None),
        ("kept-unknown-role", 4, None),
        ("dropped-empty-message", 5, None),
        ("kept-unknown-role", 6, None),
    ]
    _settled(fixed, "anthropic")


def test_anthropic_the_caller_naming_the_role_assistant_keeps_the_repaired_history_as_it_is() -> None:
    """Only the caller knows the role meant (``unknown-role-between`` reads the message as absent):
    named ``assistant``, the repaired history of the first test is one the API takes, unchanged."""
    messages = _note_between("weird")
    fixed, _ = history.repair(messages, None, "anthropic")
    named = [{**m, "role": "assistant"} if m.get("role") == "weird" else m for m in fixed]
    assert history.check(named, "anthropic").findings == ()
    assert history.repair(named, None, "anthropic") == (named, [])


def test_anthropic_the_caller_naming_the_role_user_makes_another_history_repair_reads_as_such() -> None:
    """The ambiguity no repair settles: named ``user``, the note is the user speaking after the call
    and before the model's next message, which ends the turn; the result after that message answers
    nothing there (``dropped-orphan``) and the call gets a placeholder, first in the user's message."""
    messages = _note_between("weird")
    fixed, _ = history.repair(messages, None, "anthropic")
    named = [{**m, "role": "user"} if m.get("role") == "weird" else m for m in fixed]
    assert _findings(named, "anthropic") == [("dangling", 2, "a"), ("orphan", 5, "a")]
    again, changes = history.repair(named, None, "anthropic")
    placeholder = {
        "type": "tool_result",
        "tool_use_id": "a",
        "content": "The tool call was not completed; no result is available.",
        "is_error": True,
    }
    assert again == [
        named[0],
        named[1],
        {"role": "user", "content": [placeholder, _text("note")]},
        {"role": "assistant", "content": [_text("t")]},
    ]
    assert _changes(changes) == [
        ("placeholder-result", 2, "a"),
        ("dropped-orphan", 5, "a"),
        ("dropped-empty-message", 5, None),
    ]
