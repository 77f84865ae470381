"""A Gemini response going on with one before it that said ``willContinue: true`` is no result of its
own (policy will-continue-responses): repair drops, renames and moves it with the response its chain
began with, as one result (audit 103's regressions). Before, the reader gave it no entry at all, so
repair dropped an orphan chain's first response alone, and the rest read as an orphan again (R1);
renamed the first of a chain answering a second call under one id, and the rest read as a second
result to the first (R2)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fsm import history
from fsm.errors import LocalProtocolError

ASK = {"role": "user", "parts": [{"text": "hi"}]}


def call(cid: str) -> dict[str, Any]:
    return {"functionCall": {"id": cid, "name": "f", "args": {}}}


def resp(x: int, more: bool | None = None, cid: str = "a") -> dict[str, Any]:
    said: dict[str, Any] = {"id": cid, "name": "f", "response": {"x": x}}
    if more is not None:
        said["willContinue"] = more
    return {"functionResponse": said}


def model(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "model", "parts": list(parts)}


def user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def sent(messages: list[dict[str, Any]]) -> list[tuple[str, int, bool]]:
    """Each response, in order: its id, its tag, and whether it said it goes on."""
    return [
        (r["id"], r["response"]["x"], r.get("willContinue") is True)
        for m in messages
        for p in m["parts"]
        if (r := p.get("functionResponse")) is not None and "x" in r["response"]
    ]


def repaired(conversation: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[history.Change]]:
    fixed, changes = history.repair(conversation, format="gemini")
    assert not [f for f in history.check(fixed, "gemini").findings if f.kind in history.REJECTED]
    assert history.repair(fixed, format="gemini") == (fixed, [])
    return fixed, changes


def test_an_orphan_chain_is_dropped_whole() -> None:
    fixed, changes = repaired([ASK, model({"text": "hm"}), user(resp(1, True), resp(2))])
    assert sent(fixed) == []
    assert [(c.kind, c.message, c.id) for c in changes] == [
        ("dropped-orphan", 3, "a"),
        ("dropped-orphan", 3, "a"),
        ("dropped-empty-message", 3, None),
    ]


def test_an_orphan_chain_beside_an_answer_is_dropped_whole() -> None:
    conversation = [ASK, model(call("a")), user(resp(0), resp(1, True, "b"), resp(2, None, "b"))]
    fixed, changes = repaired(conversation)
    assert sent(fixed) == [("a", 0, False)]
    assert [(c.kind, c.id) for c in changes] == [("dropped-orphan", "b"), ("dropped-orphan", "b")]


def test_a_chain_answering_a_second_call_under_one_id_is_renamed_whole() -> None:
    conversation = [ASK, model(call("a"), call("a")), user(resp(1, True), resp(2), resp(3, True), resp(4))]
    fixed, changes = repaired(conversation)
    assert sent(fixed) == [("a", 1, True), ("a", 2, False), ("a_d2", 3, True), ("a_d2", 4, False)]
    assert [c.kind for c in changes] == ["renamed-call", "renamed-result", "renamed-result"]


def test_a_second_chain_to_an_answered_call_is_dropped_whole() -> None:
    fixed, changes = repaired([ASK, model(call("a")), user(resp(1), resp(2, True), resp(3))])
    assert sent(fixed) == [("a", 1, False)]
    assert [c.kind for c in changes] == ["dropped-duplicate-result", "dropped-duplicate-result"]


def test_a_chain_sent_as_the_model_moves_whole_in_order() -> None:
    conversation = [ASK, model(call("a"), call("b")), model(resp(1, True), resp(2)), user(resp(3, None, "b"))]
    fixed, _ = repaired(conversation)
    assert sent(fixed) == [("a", 1, True), ("a", 2, False), ("b", 3, False)]


def test_a_chain_after_the_users_text_moves_whole_before_it() -> None:
    conversation = [ASK, model(call("a")), user({"text": "and?"}, resp(1, True), resp(2, True), resp(3))]
    fixed, _ = repaired(conversation)
    assert sent(fixed) == [("a", 1, True), ("a", 2, True), ("a", 3, False)]


def chains(responses: list[tuple[str, int, bool]], calls_between: list[set[str]]) -> list[list[int]]:
    """The chains of tags, read by the rule (here, not by fsm): a response to an id whose latest
    response said it goes on joins that one's chain; a call to the id ends it."""
    found: list[list[int]] = []
    going_on: dict[str, list[int]] = {}
    for (cid, tag, more), called in zip(responses, calls_between, strict=True):
        for ended in called:
            going_on.pop(ended, None)
        chain = going_on.pop(cid, None)
        if chain is None:
            chain = []
            found.append(chain)
        chain.append(tag)
        if more:
            going_on[cid] = chain
    return found


TEXT = st.tuples(st.just("text"))
CALLS = st.lists(st.one_of(st.tuples(st.just("call"), st.sampled_from("abm")), TEXT), min_size=1, max_size=3)
RESPONSES = st.tuples(st.just("resp"), st.sampled_from("abc"), st.sampled_from([True, True, None]))
ANSWERS = st.lists(st.one_of(RESPONSES, RESPONSES, TEXT), min_size=1, max_size=5)
# Responses sent as the model (misplaced-result), to ids a chain may have: a chain's response sent so moves
# right after the one before it (chain-response-in-the-model-content; it was left there: tests/test_cohere_gemini107.py)
MISPLACED = st.lists(
    st.one_of(RESPONSES, st.tuples(st.just("resp"), st.just("m"), st.none()), TEXT), min_size=1, max_size=3
)
MESSAGE = st.one_of(
    st.tuples(st.just("model"), CALLS),
    st.tuples(st.just("user"), ANSWERS),
    st.tuples(st.just("user"), CALLS),
    st.tuples(st.just("model"), MISPLACED),
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(MESSAGE, min_size=1, max_size=8))
def test_random_histories_with_chains(drawn: list[tuple[str, list[tuple[Any, ...]]]]) -> None:
    holds_for(drawn)


def holds_for(drawn: list[tuple[str, list[tuple[Any, ...]]]]) -> None:
    """Repair keeps or drops each chain as one, under one id, in order, naming what it drops, and
    leaves a history check accepts (``drawn``: each message's role and its parts, as MESSAGE gives)."""
    conversation: list[dict[str, Any]] = [ASK]
    tag = 0
    calls_between: list[set[str]] = []
    called: set[str] = set()
    for role, parts in drawn:
        made: list[dict[str, Any]] = []
        for part in parts:
            if part[0] == "call":
                made.append(call(part[1]))
                called.add(part[1])
            elif part[0] == "resp":
                tag += 1
                made.append(resp(tag, part[2], part[1]))
                calls_between.append(called)
                called = set()
            else:
                made.append({"text": "t"})
        conversation.append({"role": role, "parts": made})
    before = copy.deepcopy(conversation)
    try:
        fixed, changes = repaired(conversation)
    except LocalProtocolError:
        return  # a content both making calls and answering them (a call and text beside responses): refused
    assert conversation == before
    kept = {t: cid for cid, t, _ in sent(fixed)}
    dropped = [c for c in changes if c.kind in ("dropped-orphan", "dropped-duplicate-result")]
    lost = [(cid, t) for cid, t, _ in sent(conversation) if t not in kept]
    assert sorted(cid for cid, _ in lost) == sorted(c.id for c in dropped)  # none lost unnamed
    order = [t for _, t, _ in sent(fixed)]
    assert sent([m for m in fixed if m["role"] == "model"]) == []  # every response in a user content
    for chain in chains(sent(conversation), calls_between):
        survived = [t for t in chain if t in kept]
        assert survived in ([], chain)  # kept or dropped as one
        assert len({kept[t] for t in survived}) <= 1  # under one id
        assert sorted(survived, key=order.index) == survived  # in order
