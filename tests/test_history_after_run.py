"""What repair writes after an Anthropic run of the model's messages (fsm.history.after_run): the
user's content of a message making calls after the run's first call goes after the run, the turn's
results first (user-content-after-the-run); a paused turn's server call goes once repair writes a
message after the history's last (paused-call-last-only). Converse and Gemini read a user message
making calls as a turn of its own, so neither policy touches them."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import history
from fsm.history import Kind, RepairPolicy

PLACEHOLDER = "The tool call was not completed; no result is available."
HI = {"role": "user", "content": "hi"}


def call(key: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": key, "name": "f", "input": {}}


def result(key: str, text: str | None = None) -> dict[str, Any]:
    if text is None:
        return {"type": "tool_result", "tool_use_id": key, "content": PLACEHOLDER, "is_error": True}
    return {"type": "tool_result", "tool_use_id": key, "content": text}


def text(words: str) -> dict[str, Any]:
    return {"type": "text", "text": words}


def server(key: str, answered: bool = True) -> list[dict[str, Any]]:
    use = {"type": "server_tool_use", "id": key, "name": "web_search", "input": {}}
    return [use, {"type": "web_search_tool_result", "tool_use_id": key, "content": []}] if answered else [use]


def said(role: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "content": list(blocks)}


def repaired(messages: list[dict[str, Any]], policy: RepairPolicy | None = None) -> tuple[list[Any], list[Any]]:
    """The repaired history, which check accepts and repair leaves as it is, and its changes as tuples."""
    fixed, changes = history.repair(messages, policy, "anthropic")
    assert history.check(fixed, "anthropic").findings == ()
    assert history.repair(fixed, policy, "anthropic") == (fixed, [])
    return fixed, [(c.kind, c.message, c.id) for c in changes]


USER_ANSWER = said("user", text("x"), result("a", "ra"), result("b", "rb"))
MODEL_ANSWER = said("assistant", result("a", "ra"), result("b", "rb"))


@pytest.mark.parametrize(
    ("answer", "left", "moves"),
    [  # the user's results after text of their own, and results sent in the model's role
        (USER_ANSWER, [said("user", text("x"))], [("moved-result", 4, "a"), ("moved-result", 4, "b")]),
        (MODEL_ANSWER, [], [("moved-misplaced-result", 4, "a"), ("moved-misplaced-result", 4, "b")]),
    ],
)
def test_the_results_after_the_run_go_first_in_the_user_text_moved_after_it(
    answer: dict[str, Any], left: list[Any], moves: list[Any]
) -> None:
    messages = [HI, said("assistant", call("a")), said("user", text("t"), call("b")), answer]
    fixed, changes = repaired(messages)
    moved = said("user", result("a", "ra"), result("b", "rb"), text("t"))
    assert fixed == [HI, messages[1], said("assistant", call("b")), moved, *left]
    emptied = [] if left else [("dropped-empty-message", 4, None)]
    assert changes == [("moved-user-content", 3, None), ("moved-misplaced-call", 3, "b"), *moves, *emptied]


def test_every_user_content_of_the_run_goes_after_it_in_order() -> None:
    """The run goes on past the user's message (an assistant message, another user message making
    calls): all its calls come first, then what the user said, each in its message, in order."""
    messages = [HI, said("assistant", call("a")), said("user", text("t1"), call("b")), said("assistant", call("c"))]
    messages += [said("user", call("d"), text("t2")), said("user", result("a", "ra"), result("c", "rc"))]
    fixed, changes = repaired(messages)
    assert fixed == [
        HI,
        messages[1],
        said("assistant", call("b")),
        messages[3],
        said("assistant", call("d")),
        said("user", result("a", "ra"), result("c", "rc"), result("b"), result("d"), text("t1")),
        said("user", text("t2")),
    ]
    assert changes == [
        ("moved-user-content", 3, None),
        ("moved-misplaced-call", 3, "b"),
        ("placeholder-result", 3, "b"),
        ("moved-user-content", 5, None),
        ("moved-misplaced-call", 5, "d"),
        ("placeholder-result", 5, "d"),
        ("moved-result", 6, "a"),
        ("moved-result", 6, "c"),
        ("dropped-empty-message", 6, None),
    ]


def test_user_content_before_the_runs_first_call_stays_where_it_is() -> None:
    first, second = said("user", text("t0"), call("a")), said("user", text("t1"), call("b"))
    fixed, changes = repaired([HI, first, second, said("user", result("b", "rb"))])
    assert fixed == [
        HI,
        said("user", text("t0")),
        said("assistant", call("a")),
        said("assistant", call("b")),
        said("user", result("b", "rb"), result("a"), text("t1")),
    ]
    assert ("moved-user-content", 2, None) not in changes and ("moved-user-content", 3, None) in changes


def test_a_user_message_of_calls_alone_still_joins_the_model_message_before_it() -> None:
    messages = [HI, said("assistant", call("a")), said("user", call("b")), said("user", result("a", "ra"))]
    fixed, changes = repaired(messages)
    assert fixed == [HI, said("assistant", call("a"), call("b")), said("user", result("a", "ra"), result("b"))]
    assert changes == [("moved-misplaced-call", 3, "b"), ("placeholder-result", 3, "b"), ("merged-messages", 3, None)]


def test_the_final_assistant_message_left_empty_goes_once_the_users_content_follows_it() -> None:
    """Anthropic takes the final assistant message empty (a prefill), of the run here: the user's
    content moved after the run comes after it, so it is the final one no longer (and goes)."""
    messages = [
        HI,
        said("assistant", call("a")),
        said("user", call("b"), text("t")),
        {"role": "assistant", "content": ""},
    ]
    fixed, changes = repaired(messages)
    assert fixed == [HI, messages[1], said("assistant", call("b")), said("user", result("a"), result("b"), text("t"))]
    assert ("dropped-empty-message", 4, None) in changes


def test_server_calls_of_one_id_the_moved_user_content_no_longer_parts_are_one_turn() -> None:
    """The user's text moved after the run leaves the assistant messages around it next to each other
    once the message of results answering nothing between goes: the API reads them as one turn, so
    the later server call under the same id is renamed."""
    messages = [HI, said("assistant", *server("s1")), said("user", result("x", "rx")), said("assistant", call("a"))]
    messages += [said("user", text("t"), call("b")), said("assistant", *server("s1"))]
    fixed, changes = repaired(messages)
    renamed = [{**server("s1")[0], "id": "s1_d2"}, {**server("s1")[1], "tool_use_id": "s1_d2"}]
    assert fixed == [
        HI,
        said("assistant", *server("s1"), call("a")),
        said("assistant", call("b")),
        said("assistant", *renamed),
        said("user", result("a"), result("b"), text("t")),
    ]
    assert ("renamed-call", 6, "s1") in changes and ("merged-messages", 4, None) in changes


def test_a_paused_server_call_goes_once_the_result_sent_beside_it_moves_after_it() -> None:
    messages = [HI, said("assistant", call("a")), said("assistant", *server("s", answered=False), result("a", "ra"))]
    fixed, changes = repaired(messages)
    assert fixed == [HI, messages[1], said("user", result("a", "ra"))]
    assert changes == [
        ("moved-misplaced-result", 3, "a"),
        ("dropped-call", 3, "s"),
        ("dropped-empty-message", 3, None),
    ]


def test_a_paused_server_call_stays_last_when_nothing_is_written_after_it() -> None:
    waiting = said("assistant", *server("s", answered=False))
    answered = [HI, said("assistant", call("a")), said("user", result("a", "ra")), waiting]
    assert repaired(answered) == (answered, [])
    # The message holding a result is no part of the run before it: without drop-call, the placeholder of
    # that run's call would follow it (test_hostile_audit41); with it, the call goes and nothing follows.
    paused = said("assistant", *server("s", answered=False), result("x", "rx"))
    fixed, changes = repaired([HI, said("assistant", call("a")), paused], RepairPolicy(dangling="drop-call"))
    assert fixed == [HI, said("assistant", *server("s", answered=False))]
    assert changes == [("dropped-call", 2, "a"), ("dropped-empty-message", 2, None), ("dropped-orphan", 3, "x")]


def test_converse_and_gemini_read_the_users_calls_as_a_turn_of_their_own() -> None:
    """Neither joins a user message making calls to the model's message before it: the first turn is
    answered before the user's text, which stays where it is."""
    use = {"toolUse": {"toolUseId": "b", "name": "f", "input": {}}}
    converse = [
        {"role": "user", "content": [{"text": "hi"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "a", "name": "f", "input": {}}}]},
        {"role": "user", "content": [{"text": "t"}, use]},
    ]
    gemini = [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}, "id": "a"}}]},
        {"role": "user", "parts": [{"text": "t"}, {"functionCall": {"name": "f", "args": {}, "id": "b"}}]},
    ]
    for fmt, messages in (("bedrock", converse), ("gemini", gemini)):
        fixed, changes = history.repair(messages, None, fmt)
        assert [f.kind for f in history.check(fixed, fmt).findings] == []
        assert "moved-user-content" not in [c.kind for c in changes]
        assert Kind.MISPLACED_CALL in [f.kind for f in history.check(messages, fmt).findings]
    assert history.repair(converse, None, "bedrock")[0][2]["content"][-1] == {"text": "t"}
