"""Task 141: a Gemini content of role ``function`` that makes calls.

The API takes ``user`` and ``model`` alone; a content of role ``function`` holding responses is the
user content repair makes of it (``function-role-to-user``), but one making calls is kept as it came
(``kept-unknown-role``), and no model content after it joins it (``unknown-role-kept-apart``). When
the model's content right after it sent a response in its role beside other parts (``misplaced-result``),
and the user's text came after the turn's answer with more of its responses after it (``Segment.held``),
repair left the model's text between the calls and their answer: ``check(repair(h))`` found the calls
``dangling`` and their responses ``orphan``s, and a second repair swapped the real responses for
placeholders. The turn's answer now goes right after the calls, as it does when a content of an unknown
role stands between the calls and the model's content (``kept_apart``). Each test fails before the fix
(audit 137's reproducer ``function_role_calls_11716``, a124's fuzzer with roleless contents, seed 15700).
"""

from __future__ import annotations

from typing import Any

from fsm import history


def _call(key: str, name: str) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": {}, "id": key}}


def _response(key: str, name: str, value: int, going_on: bool | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {"name": name, "response": {"v": value}, "id": key}
    if going_on is not None:
        response["willContinue"] = going_on
    return {"functionResponse": response}


def _content(role: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "parts": list(parts)}


def _findings(messages: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(f.kind.value, f.id, f.message) for f in history.check(messages, format="gemini").findings]


def _sound(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Repair's promises: its output checks clean but for the role it keeps for the caller to name,
    and a second repair changes nothing."""
    fixed, _ = history.repair(messages, format="gemini")
    assert [found for found in _findings(fixed) if found[0] not in ("unknown-role", "reused")] == []
    again, changes = history.repair(fixed, format="gemini")
    assert again == fixed
    assert [change.kind for change in changes if change.kind != "kept-unknown-role"] == []
    return fixed


def test_the_answer_goes_right_after_calls_made_in_the_function_role() -> None:
    messages = [
        _content("user", {"text": "hi"}),
        _content("function", _call("c", "f"), _call("d", "g")),
        _content("model", _response("x", "h", 1), {"text": "t"}),
        _content("user", _response("c", "f", 2)),
        _content("user", {"text": "more"}),
        _content("user", _response("d", "g", 3)),
    ]
    found = _findings(messages)
    assert not [f for f in found if f[0] in ("dangling", "orphan") and f[1] in ("c", "d")]
    fixed = _sound(messages)
    assert fixed == [
        messages[0],
        messages[1],
        _content("user", _response("c", "f", 2), _response("d", "g", 3)),
        _content("model", {"text": "t"}),
        _content("user", {"text": "more"}),
    ]


def test_a_response_the_model_sent_goes_with_them() -> None:
    messages = [
        _content("user", {"text": "hi"}),
        _content("function", _call("c", "f"), _call("d", "g"), _call("e", "g")),
        _content("model", _response("d", "g", 1), {"text": "t"}),
        _content("user", _response("c", "f", 2)),
        _content("user", {"text": "more"}),
        _content("user", _response("e", "g", 3)),
    ]
    assert ("misplaced-result", "d", 3) in _findings(messages)
    fixed = _sound(messages)
    assert fixed[2] == _content("user", _response("d", "g", 1), _response("c", "f", 2), _response("e", "g", 3))
    assert fixed[3:] == [_content("model", {"text": "t"}), _content("user", {"text": "more"})]


def test_a_chain_going_on_past_an_orphan_leaves_the_answer_after_the_calls() -> None:
    """Reduced from audit 137's ``function_role_calls_11716``: the user's content after the answer goes
    on with an orphan's chain (``willContinue``), so it reads as the user's text, not as results."""
    messages = [
        _content("function", _call("c", "g")),
        _content("model", _response("a", "f", 1, going_on=True), {"text": "t6"}),
        _content("function", _response("c", "f", 2)),
        _content("user", _response("a", "f", 3)),
        _content("user", _response("a", "f", 4)),
    ]
    fixed = _sound(messages)
    assert fixed == [messages[0], _content("user", _response("c", "f", 2)), _content("model", {"text": "t6"})]


def test_audit_137s_history_repairs_to_one_that_checks_clean() -> None:
    """``/work/scratch/s43/a137/function_role_calls_11716.json``, written out."""

    def call(key: str | None, name: str, t: int) -> dict[str, Any]:
        body: dict[str, Any] = {"name": name, "args": {"t": t}}
        return {"functionCall": body if key is None else {**body, "id": key}}

    def resp(key: str, x: int, going_on: bool = False) -> dict[str, Any]:
        body: dict[str, Any] = {"name": "f", "response": {"x": x}, "id": key}
        return {"functionResponse": {**body, "willContinue": True} if going_on else body}

    messages = [
        _content("user", {"text": "hi"}),
        _content("function", call("b", "f", 1), call("b", "g", 2), call("c", "g", 3)),
        _content("model", resp("a", 4), resp("a", 5, going_on=True), {"text": "t6"}),
        _content("function", resp("b", 7, going_on=True), resp("c", 8)),
        _content("user", resp("a", 9, going_on=True)),
        _content("user", resp("a", 10), resp("a", 11, going_on=True)),
        _content("model", call(None, "f", 12), call("b", "g", 13), {"text": "t14"}),
    ]
    fixed = _sound(messages)
    kept = [part["functionResponse"]["response"] for part in fixed[2]["parts"]]
    assert fixed[2]["role"] == "user" and kept[:2] == [{"x": 7}, {"x": 8}]
