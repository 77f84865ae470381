"""Task 144: a ``caller`` on Claude's server call (policy server-call-caller-followed).

The API sends a server call its code execution ran (a search or fetch made from the code, "dynamic
filtering") with ``"caller": {"type": "code_execution_20260120", "tool_id": <the code's id>}``, as it does
a client call the code made (Anthropic's SDKs type ``ServerToolUseBlock.caller`` as the same union of a
direct caller and a server tool caller). ``repair`` renamed a code's server call (a second call under its
id in one turn) and its client calls' ``caller`` with it, but left the server calls it made naming the
old id: the call that kept it, a client call here. They follow the code now. ``check`` judges no server
call's caller: the server ran the call and the code both, and no rule of the API's says what a request
holding one whose code it lacks means; it is sent back as it came.
"""

from __future__ import annotations

from typing import Any

from fsm import history
from fsm.history import RepairPolicy
from tests.test_hostile_audit80 import ASK, a, ran, res, srv, u, use


def fetch(key: str, code: str) -> dict[str, Any]:
    caller = {"type": "code_execution_20260120", "tool_id": code}
    return {"type": "server_tool_use", "id": key, "name": "web_fetch", "input": {"url": "u"}, "caller": caller}


def fetched(key: str) -> dict[str, Any]:
    return {"type": "web_fetch_tool_result", "tool_use_id": key, "content": {}}


def _found(conversation: list[dict[str, Any]]) -> list[tuple[str, int, str]]:
    return [(f.kind.value, f.message, f.id) for f in history.check(conversation, "anthropic").findings]


def test_a_server_call_a_renamed_code_made_names_the_codes_new_id() -> None:
    conversation = [
        ASK,
        a(use("s1", None), srv("s1"), fetch("w1", "s1"), fetched("w1"), use("t1", "s1")),
        u(res("s1"), res("t1")),
        a(ran("s1")),
    ]
    assert _found(conversation) == [("duplicate-call", 2, "s1")]
    for policy in (RepairPolicy(), RepairPolicy(dangling="drop-call")):
        fixed, changes = history.repair(conversation, policy, format="anthropic")
        blocks = fixed[1]["content"]
        assert [b["id"] for b in blocks[:3]] == ["s1", "s1_d2", "w1"]
        assert blocks[2]["caller"] == {"type": "code_execution_20260120", "tool_id": "s1_d2"}
        assert blocks[4]["caller"]["tool_id"] == "s1_d2"
        assert [(c.kind, c.message, c.id) for c in changes if c.kind == "renamed-caller"] == [
            ("renamed-caller", 2, "w1"),
            ("renamed-caller", 2, "t1"),
        ]
        assert conversation[1]["content"][2]["caller"]["tool_id"] == "s1"  # the input stays as it came
        assert _found(fixed) == []
        assert history.repair(fixed, policy, format="anthropic") == (fixed, [])


def test_a_server_calls_caller_naming_code_the_history_lacks_is_not_judged_and_goes_back_as_it_came() -> None:
    conversation = [ASK, a(fetch("w1", "gone"), fetched("w1"), {"type": "text", "text": "so"})]
    assert _found(conversation) == []
    assert history.repair(conversation, format="anthropic") == (conversation, [])
