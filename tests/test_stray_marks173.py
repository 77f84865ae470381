"""Task 173: where a Gemini stray goes (a ``willContinue`` chain's response sent in a model content) was decided on
marks read once, before any stray was placed: which user contents part it from the model's calls after it.

Two kinds of user content came after those marks and were missed. A chain moved with its first response and cut at
the stray puts its later responses back where they came (chain-response-in-the-model-content, task 136): the stray
went first in the answer to calls those responses part it from, after one of them (seed 27396 of task 170's fuzzer:
a ``duplicate-result`` check then refused). And a stray kept apart in a user content of its own (stray-where-it-came,
stray-before-a-call-of-its-id) parts an earlier stray of another chain from calls after both: that one went past it,
the two results in the reverse of the order the model got them."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import history
from tests.test_hostile_audit164 import BETWEEN, GONE, text
from tests.test_stray_own_call170 import brief
from tests.test_will_continue104 import ASK, model, resp, user
from tests.test_will_continue104 import call as gemini_call


def repaired(conversation: list[dict[str, Any]], policy: str) -> list[dict[str, Any]]:
    fixed, _ = history.repair(conversation, history.RepairPolicy(dangling=policy), format="gemini")
    assert not [f for f in history.check(fixed, "gemini").findings if f.kind in history.REJECTED]
    assert history.repair(fixed, history.RepairPolicy(dangling=policy), format="gemini") == (fixed, [])
    return fixed


def order(fixed: list[dict[str, Any]]) -> list[Any]:
    """The responses as the model gets them, each as its tag."""
    return [part for _, parts in brief(fixed) for part in parts if isinstance(part, int)]


def test_a_stray_that_cuts_its_chain_stays_before_the_response_the_cut_puts_back() -> None:
    # task 170's fuzzer, seed 27396 reduced: a8 goes before the user's text with its chain; a14 (sent as the model)
    # cuts the chain there, so a18 stays where it came, between a14 and the call to c: a14 went after it, first in
    # the answer to c, and check found a second result of a after the first without willContinue
    conversation = [ASK, model(gemini_call("a")), user(text("u10")), user(resp(8, True), text("u11"))]
    conversation += [model(resp(14, True)), user(resp(18)), model(gemini_call("c"))]
    fixed = repaired(conversation, "placeholder")
    assert brief(fixed)[1:] == [
        ("model", ["call a"]),
        ("user", [8]),
        ("model", [BETWEEN]),
        ("user", ["u10", "u11"]),
        ("model", [BETWEEN]),
        ("user", [14, 18]),  # a14 in a content of its own after its model content, joined to a18's as it came
        ("model", ["call c"]),
        ("user", [GONE]),
    ]


def test_a_stray_that_cuts_its_chain_keeps_its_order_when_the_call_is_dropped() -> None:
    conversation = [ASK, model(gemini_call("a")), user(text("u10")), user(resp(8, True), text("u11"))]
    conversation += [model(resp(14, True)), user(resp(18)), model(gemini_call("c"))]
    assert order(repaired(conversation, "drop-call")) == [8, 14, 18]


@pytest.mark.parametrize("policy", ["placeholder", "drop-call"])
@pytest.mark.parametrize("first", ["a", "b"])
def test_a_stray_kept_apart_parts_an_earlier_stray_of_another_chain_from_the_calls_after(
    policy: str, first: str
) -> None:
    # a2 came before b2 (b2 before the call of its own id: it goes in a content of its own before its model
    # content). a2 went first in the answer to that call, past b2's content: after b2, m3 and the call. Whichever
    # chain began first (read first), a2 now goes in a content of its own after its model content, before b2
    other = "b" if first == "a" else "a"
    opened = [ASK, model(gemini_call(first)), user(resp(1, True, first)), model(gemini_call(other))]
    conversation = [*opened, model(resp(11, True, other), text("m1"))]
    conversation += [model(resp(2, True, "a"), text("m2")), model(resp(12, True, "b"), text("m3"))]
    conversation.append(model(gemini_call("b")))
    fixed = repaired(conversation, policy)
    assert order(fixed)[-2:] == [2, 12]
    if policy == "placeholder":
        assert brief(fixed)[5:] == [
            ("model", ["m1", "m2"]),
            ("user", [2, 12]),
            ("model", ["m3", "call b"]),
            ("user", [GONE]),
        ]
    else:  # (the call dropped, b2 stays after m3 too)
        assert brief(fixed)[5:] == [("model", ["m1", "m2"]), ("user", [2]), ("model", ["m3"]), ("user", [12])]


def test_strays_contents_of_their_own_after_one_model_content_go_in_the_order_the_strays_came() -> None:
    # c's chain is read first (c3 goes on with c1 in one content): c2 goes before its content (a call of c follows),
    # then b2, read later, is parted by that content from the call and goes after its own: both between m2 and m3,
    # b2's content came after c2's though b2 came first
    conversation = [ASK, model(gemini_call("c")), user(resp(1, True, "c"), resp(3, True, "c"))]
    conversation += [model(gemini_call("b")), user(resp(1, True, "b"), text("t"))]
    conversation += [model(resp(2, True, "b"), text("m2")), model(resp(12, True, "c"), text("m3"))]
    conversation.append(model(gemini_call("c")))
    fixed = repaired(conversation, "placeholder")
    assert brief(fixed)[-4:] == [("model", ["m2"]), ("user", [2, 12]), ("model", ["m3", "call c"]), ("user", [GONE])]


@pytest.mark.parametrize("policy", ["placeholder", "drop-call"])
def test_a_stray_after_a_chain_cut_at_a_later_user_content_stays_before_the_chains_last_response(policy: str) -> None:
    # task 170's fuzzer, seed 41475 (variant, drop-call) reduced: b3 (sent as the model) goes into the call's answer;
    # the chain is cut at b16, after the user's text (chain-goes-on-where-it-came), so b25 stays where it came too:
    # b22 went first in the answer to the call to a, after b25 (a duplicate-result check refused)
    conversation = [ASK, model(gemini_call("b")), model(resp(3, True, "b")), user(text("u9"))]
    conversation += [
        user(resp(16, True, "b")),
        model(text("m16")),
        model(resp(22, True, "b")),
        user(resp(25, False, "b")),
    ]
    conversation += [model(gemini_call("a")), user(resp(30))]
    fixed = repaired(conversation, policy)
    assert brief(fixed)[-4:] == [("model", ["m16"]), ("user", [22, 25]), ("model", ["call a"]), ("user", [30])]
