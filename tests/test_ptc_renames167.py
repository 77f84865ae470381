"""Task 167: the last renames task 162's PTC fuzzer called needless (seeds 2865, 13960, 15218, 17700, 20575,
27324, 28290 of 30,000, placeholder policy), shrunk. Each time a client call and a server call share an id in
one assistant run, the server call the later, and another call under that id, in another turn, was walked
between the two (a code waiting walks its client calls first; a turn's server calls are paired apart). Repair
renamed the server call (policy client-and-server-call-one-id) and was right to: check read it as ``reused``
alone, as if the client call beside it were not there, so undoing the rename showed no new finding. Check now
reports the ``duplicate-call`` there, at the server call."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import history
from fsm.history import REJECTED, RepairPolicy
from tests.test_hostile_audit80 import ASK, a, ran, res, srv, u, use

# Each history as repair writes it but for the server call's rename (undone), with that call's message and id.
UNDONE: dict[str, tuple[list[dict[str, Any]], int, str]] = {
    "seed-2865": ([ASK, a(srv("t1"), srv("t2")), a(use("s1", "t2"), ran("t1")), u(res("s1")),
                   a(use("t1", "t2"), srv("t1")), u(res("t1"))], 5, "t1"),
    "seed-13960": ([ASK, a(use("x_d2", None)), a(srv("x_d2")), a(srv("x"), ran("x_d2")), u(res("x_d2")),
                    a(use("x_d2", None)), u(res("x_d2"))], 3, "x_d2"),
    "seed-15218": ([ASK, a(srv("s1")), a(ran("s1"), use("t1", "s1"), srv("s1_d2")), u(res("t1")),
                    a(use("s1", "s1_d2"), srv("s1")), u(res("s1"))], 5, "s1"),
    "seed-17700": ([ASK, a(srv("t1"), use("s1", None), srv("s1")), u(res("s1")), a(ran("s1"), use("s1", None)),
                    u(res("s1"))], 2, "s1"),
    "seed-20575": ([ASK, a(use("s1_d2", None), srv("t1"), srv("s1_d2")), a(use("s1", "t1"), ran("s1_d2")),
                    u(res("s1"), res("s1_d2")), a(use("s1_d2", "t1")), u(res("s1_d2"))], 2, "s1_d2"),
    "seed-27324": ([ASK, a(srv("x_d2"), ran("x_d2")), a(use("s1", "x_d2"), srv("x")), u(res("s1")),
                    a(use("x_d2", None), srv("x_d2")), u(res("x_d2"))], 5, "x_d2"),
    "seed-28290": ([ASK, a(srv("t1"), srv("s1"), use("s1_d2", "t1")), u(res("s1_d2")),
                    a(ran("t1"), use("t1", None), srv("t1")), u(res("t1"))], 4, "t1"),
}  # fmt: skip


@pytest.mark.parametrize("name", UNDONE)
def test_check_reports_the_duplicate_a_server_call_beside_its_client_twin_is(name: str) -> None:
    conversation, message, key = UNDONE[name]
    found = [(f.kind.value, f.message, f.id) for f in history.check(conversation, "anthropic").findings]
    assert ("duplicate-call", message, key) in found
    assert ("reused", message, key) not in found


@pytest.mark.parametrize("name", UNDONE)
def test_repair_renames_that_server_call_and_its_output_checks_clean(name: str) -> None:
    conversation, message, key = UNDONE[name]
    fixed, changes = history.repair(conversation, RepairPolicy(), format="anthropic")
    renamed = [(c.message, c.id) for c in changes if c.kind == "renamed-call"]
    assert (message, key) in renamed
    server = [b for b in fixed[message - 1]["content"] if b["type"] == "server_tool_use"]
    assert key not in [b["id"] for b in server]
    kept = {c.kind.removeprefix("kept-") for c in changes if c.kind.startswith("kept-")}
    left = [f for f in history.check(fixed, "anthropic").findings if f.kind in REJECTED and f.kind.value not in kept]
    assert [(f.kind.value, f.id) for f in left if f.kind.value != "reused"] == []


def named(key: str, name: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": key, "name": name, "input": {}}


# A client tool named as Claude's server tool is, beside a server call under its id: check knew a call it walked by
# its message, id and name, so a call took itself (or another of that name) for its twin walked, and the ``reused``
# the first call under the id is (its id answered in message 2) was read as a second ``duplicate-call``. Keyed by
# slot, check reports what repair does: the first of the message's calls under ``k`` reused, each later one renamed.
SAME_NAME = {
    "server-first": [ASK, a(use("k", None)), u(res("k")), a(srv("k"), ran("k"), named("k", "code_execution")),
                     u(res("k"))],
    "client-first": [ASK, a(use("k", None)), u(res("k")), a(named("k", "code_execution"), srv("k"), ran("k")),
                     u(res("k"))],
    "two-servers": [ASK, a(use("k", None)), u(res("k")),
                    a(srv("k"), ran("k"), srv("k"), ran("k"), named("k", "code_execution")), u(res("k"))],
}  # fmt: skip


@pytest.mark.parametrize("name", SAME_NAME)
def test_a_call_named_as_its_twin_is_not_taken_for_it(name: str) -> None:
    conversation = SAME_NAME[name]
    found = [(f.kind.value, f.message) for f in history.check(conversation, "anthropic").findings]
    fixed, changes = history.repair(conversation, RepairPolicy(), format="anthropic")
    renamed = [c.message for c in changes if c.kind == "renamed-call"]
    assert found.count(("reused", 4)) == 1
    assert (
        found.count(("duplicate-call", 4)) == len(renamed) == sum(b.get("id", "k") != "k" for b in fixed[3]["content"])
    )
    assert [f.kind.value for f in history.check(fixed, "anthropic").findings] == ["reused"]
