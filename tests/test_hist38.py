"""Gemini and Converse results split by the user's text, and Converse user messages in a row.

A model turn makes two or more calls; the user answers some of them, says something, then sends
the rest (in separate messages, or the answer message holding text of its own). Gemini and Converse
read the one message after the calls as the turn's answer, so the results after the text were
``orphan``s, their calls ``dangling``, and repair dropped the real results for placeholders. They
answer the calls still waiting (``result-after-text``); repair moves them into the answering message,
after its results, in the order sent. A result after the model's next message still answers nothing.

Bedrock Converse refuses a user message right after another ("A conversation must alternate between
user and assistant roles", a ValidationException): ``check`` says so (``user-after-user``) and repair
merges the run, its blocks in order (``merged-messages``), whether the input had them or a repair made
them. Each test failed before its fix. Work is counted, never timed."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from typing import Any

import pytest

from fsm import history
from tests.test_hostile_audit30 import _work

PH = "none"
POLICIES = [history.RepairPolicy(placeholder=PH), history.RepairPolicy("drop-call", PH)]


def _findings(messages: list[dict[str, Any]], fmt: Any = "auto") -> list[tuple[str, str, int]]:
    return [(f.kind.value, f.id, f.message) for f in history.check(messages, fmt).findings]


def _kinds(changes: list[history.Change]) -> list[tuple[str, int]]:
    return [(c.kind, c.message) for c in changes]


def _call(fmt: str, key: str | None, tag: str) -> dict[str, Any]:
    if fmt == "gemini":
        return {"functionCall": {"name": "f", "args": {"tag": tag}, **({"id": key} if key else {})}}
    return {"toolUse": {"toolUseId": key, "name": "f", "input": {"tag": tag}}}


def _answer(fmt: str, key: str | None, tag: str) -> dict[str, Any]:
    if fmt == "gemini":
        return {"functionResponse": {"name": "f", "response": {"tag": tag}, **({"id": key} if key else {})}}
    return {"toolResult": {"toolUseId": key, "content": [{"text": tag}]}}


def _msg(fmt: str, role: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    if fmt == "gemini":
        return {"role": "model" if role == "assistant" else role, "parts": blocks}
    return {"role": role, "content": blocks}


def _text(words: str) -> dict[str, Any]:
    return {"text": words}


FIELD = {"gemini": "parts", "bedrock": "content"}
BETWEEN = history.RepairPolicy().between


def _answered(fmt: str, results: list[dict[str, Any]], others: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The user's answer to a turn as repair writes it: Converse one message, its results first; Gemini
    (since hist39b) the responses in a content of their own, a placeholder model content, then the
    user's other parts in a content of their own (``results-beside-text``)."""
    if fmt == "bedrock" or not (results and others):
        return [_msg(fmt, "user", [*results, *others])]
    return [_msg(fmt, "user", results), _msg(fmt, "model", [_text(BETWEEN)]), _msg(fmt, "user", others)]


# -- the reported shapes ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "key"), [("gemini", "b"), ("gemini", None), ("bedrock", "b")])
def test_a_result_after_the_users_text_following_the_answer_goes_into_the_answer(fmt: str, key: str | None) -> None:
    # model: A, B; user: result A; user: text; user: result B. Result B was an orphan and B dangled:
    # repair dropped "rb" and answered B with a placeholder. (A Gemini call may go without an id.)
    a = "a" if key else None
    calls = _msg(fmt, "assistant", [_call(fmt, a, "A"), _call(fmt, key, "B")])
    first, said, then = _answer(fmt, a, "ra"), _msg(fmt, "user", [_text("also")]), _answer(fmt, key, "rb")
    messages = [_msg(fmt, "user", [_text("go")]), calls, _msg(fmt, "user", [first]), said, _msg(fmt, "user", [then])]
    repeated = [("user-after-user", "", 4), ("user-after-user", "", 5)]  # Gemini too since hist39
    assert _findings(messages) == [*repeated, ("result-after-text", key or "f#2", 5)]
    assert not history.anything_dangling(messages)
    for policy in POLICIES:
        fixed, changes = history.repair(messages, policy)
        # Converse: the text joins the answer, after its results; Gemini: it keeps a user content of its
        # own, a placeholder model content before it (hist39 merged it into the answer, hist39b not)
        assert fixed == [*messages[:2], *_answered(fmt, [first, then], [_text("also")])]
        joined = ("merged-messages", 4) if fmt == "bedrock" else ("placeholder-model-turn", 4)
        assert _kinds(changes) == [joined, ("moved-result", 5), ("dropped-empty-message", 5)]
        assert history.check(fixed).findings == () and history.repair(fixed, policy) == (fixed, [])


@pytest.mark.parametrize("fmt", ["gemini", "bedrock"])
def test_a_result_after_an_answer_holding_text_of_its_own_goes_after_its_results(fmt: str) -> None:
    # user: [result A, text]; user: [result B]
    calls = _msg(fmt, "assistant", [_call(fmt, "a", "A"), _call(fmt, "b", "B"), _call(fmt, "c", "C")])
    answer = _msg(fmt, "user", [_answer(fmt, "a", "ra"), _text("wait"), _answer(fmt, "c", "rc")])
    messages = [_msg(fmt, "user", [_text("go")]), calls, answer, _msg(fmt, "user", [_answer(fmt, "b", "rb")])]
    # since hist39 the answer's own result after its text is late too, and the results go before the text;
    # since hist39b Gemini's answer holding text is results-beside-text, once, not a late result too
    if fmt == "bedrock":
        first = [("user-after-user", "", 4), ("result-after-text", "c", 3)]
    else:
        first = [("results-beside-text", "", 3), ("user-after-user", "", 4)]
    assert _findings(messages) == [*first, ("result-after-text", "b", 4)]
    fixed, changes = history.repair(messages)
    results = [_answer(fmt, "a", "ra"), _answer(fmt, "c", "rc"), _answer(fmt, "b", "rb")]
    assert fixed == [*messages[:2], *_answered(fmt, results, [_text("wait")])]  # in the order sent, then the text
    apart = [("placeholder-model-turn", 3)] if fmt == "gemini" else []
    assert _kinds(changes) == [("moved-result", 3), *apart, ("moved-result", 4), ("dropped-empty-message", 4)]
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


@pytest.mark.parametrize("fmt", ["gemini", "bedrock"])
def test_results_inside_the_answer_around_its_text_are_one_answer(fmt: str) -> None:
    # One message after the calls holds every result, text between them: the turn's one answer. Left
    # as it was here; since hist39 the result after the text is reported and moved before it
    # (tests/test_hist39.py).
    calls = _msg(fmt, "assistant", [_call(fmt, "a", "A"), _call(fmt, "b", "B")])
    answer = _msg(fmt, "user", [_answer(fmt, "a", "ra"), _text("also"), _answer(fmt, "b", "rb")])
    messages = [_msg(fmt, "user", [_text("go")]), calls, answer]
    # Gemini (hist39b): the text beside the responses is the finding, once, at the content
    assert _findings(messages) == [
        ("result-after-text", "b", 3) if fmt == "bedrock" else ("results-beside-text", "", 3)
    ]


def test_converse_results_in_user_messages_in_a_row_answer_the_turn_in_one_message() -> None:
    # Converse wants one user message of results after the calls; two in a row were refused, and the
    # second one's result dropped for a placeholder by repair.
    calls = _msg("bedrock", "assistant", [_call("bedrock", "a", "A"), _call("bedrock", "b", "B")])
    first, then = _answer("bedrock", "a", "ra"), _answer("bedrock", "b", "rb")
    messages = [_msg("bedrock", "user", [_text("go")]), calls, _msg("bedrock", "user", [first])]
    messages.append(_msg("bedrock", "user", [then]))
    assert _findings(messages) == [("user-after-user", "", 4)]
    fixed, changes = history.repair(messages)
    assert fixed == [*messages[:2], _msg("bedrock", "user", [first, then])]
    assert _kinds(changes) == [("merged-messages", 4)]
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


@pytest.mark.parametrize("fmt", ["gemini", "bedrock"])
def test_a_result_after_the_models_next_message_still_answers_nothing(fmt: str) -> None:
    calls = _msg(fmt, "assistant", [_call(fmt, "a", "A"), _call(fmt, "b", "B")])
    messages = [
        _msg(fmt, "user", [_text("go")]),
        calls,
        _msg(fmt, "user", [_answer(fmt, "a", "ra")]),
        _msg(fmt, "user", [_text("also")]),
        _msg(fmt, "assistant", [_text("ok")]),
        _msg(fmt, "user", [_answer(fmt, "b", "rb")]),
    ]
    found = Counter(kind for kind, _, _ in _findings(messages))
    assert found == {"dangling": 1, "orphan": 1, "user-after-user": 1}
    fixed, changes = history.repair(messages, POLICIES[0])
    kinds = Counter(kind for kind, _ in _kinds(changes))
    assert kinds["placeholder-result"] == 1 and kinds["dropped-orphan"] == 1 and "moved-result" not in kinds
    assert _answer(fmt, "b", "rb") not in fixed[-1][FIELD[fmt]]  # the orphan went
    assert history.check(fixed).findings == ()


# -- Converse: user after user --------------------------------------------------------------------------------


def test_converse_user_messages_in_a_row_are_reported_and_merged_in_order() -> None:
    messages = [
        {"role": "user", "content": [{"text": "hi"}]},
        {"role": "user", "content": "there"},
        {"role": "assistant", "content": [{"text": "yes?"}]},
        {"role": "user", "content": [{"text": "one"}]},
        {"role": "user", "content": [{"text": "two"}]},
        {"role": "user", "content": [{"text": "three"}]},
    ]
    report = history.check(messages, "bedrock")
    assert _findings(messages, "bedrock") == [("user-after-user", "", n) for n in (2, 5, 6)] and report.rejected
    assert "alternate" in report.findings[0].detail
    fixed, changes = history.repair(messages, format="bedrock")
    assert fixed == [
        {"role": "user", "content": [{"text": "hi"}, {"text": "there"}]},
        messages[2],
        {"role": "user", "content": [{"text": "one"}, {"text": "two"}, {"text": "three"}]},
    ]
    assert _kinds(changes) == [("merged-messages", n) for n in (2, 5, 6)]
    assert all("alternate" in c.detail for c in changes)
    assert history.check(fixed, "bedrock").findings == () and history.repair(fixed, format="bedrock") == (fixed, [])
    assert messages[0] == {"role": "user", "content": [{"text": "hi"}]}  # the input is never mutated


def test_a_user_message_making_calls_is_no_user_message_in_a_row() -> None:
    # Its calls go to a model message repair makes after it: the user's result after it alternates.
    messages = [
        {"role": "user", "content": [{"text": "go"}, _call("bedrock", "a", "A")]},
        {"role": "user", "content": [_answer("bedrock", "a", "ra")]},
    ]
    assert [kind for kind, _, _ in _findings(messages)] == ["misplaced-call"]


# -- property: random split positions -------------------------------------------------------------------------


def _split_history(fmt: str, rng: random.Random) -> tuple[list[dict[str, Any]], list[list[str]], set[str]]:
    """Turns of 2 to 5 calls whose results (some missing, in call order or shuffled) are split at a
    random place by the user's text: those before it in the message after the calls (now and then
    with the text in it, or for Converse over two messages in a row), the rest after one or two
    messages of text, in one message; now and then a result after the model's next message. Each
    turn's real results in the order sent (a turn's calls tagged ``t<turn>.<n>``), and the tags of
    the results after the model's next message."""
    serial = iter(range(1_000_000))
    messages = [_msg(fmt, "user", [_text("go")])]
    turns: list[list[str]] = []
    orphans: set[str] = set()
    for turn in range(rng.randint(1, 4)):
        n = rng.randint(2, 5)
        keys = [f"k{next(serial)}" for _ in range(n)]
        messages.append(_msg(fmt, "assistant", [_call(fmt, k, f"t{turn}.{j}") for j, k in enumerate(keys)]))
        sent = [(k, f"r{next(serial)}") for k in keys if rng.random() < 0.85]
        if rng.random() < 0.5:
            rng.shuffle(sent)
        turns.append([r for _, r in sent])
        k = rng.randint(0, len(sent))
        before = [_answer(fmt, key, r) for key, r in sent[:k]]
        after = [_answer(fmt, key, r) for key, r in sent[k:]]
        inline = bool(before) and rng.random() < 0.3
        if before and fmt == "bedrock" and rng.random() < 0.3:  # over two user messages in a row
            j = rng.randint(1, len(before))
            messages += [_msg(fmt, "user", before[:j]), _msg(fmt, "user", before[j:] + [_text("so")] * inline)]
        elif before:
            messages.append(_msg(fmt, "user", before + [_text("so")] * inline))
        if not inline or rng.random() < 0.5:
            messages += [_msg(fmt, "user", [_text("hm")]) for _ in range(rng.randint(1, 2))]
        if after:
            messages.append(_msg(fmt, "user", after))
        messages.append(_msg(fmt, "assistant", [_text("ok")]))
        if rng.random() < 0.3:  # after the model's next message: answers nothing
            orphans.add(ghost := f"r{next(serial)}")
            messages += [
                _msg(fmt, "user", [_answer(fmt, rng.choice(keys), ghost)]),
                _msg(fmt, "assistant", [_text("so")]),
            ]
    return messages, turns, orphans


def _tag(fmt: str, block: dict[str, Any]) -> str | None:
    if fmt == "gemini":
        found = block.get("functionResponse")
        return None if found is None else found["response"].get("tag")
    found = block.get("toolResult")
    return None if found is None else found["content"][0]["text"]


def _turn_of(fmt: str, message: dict[str, Any]) -> int:
    """The turn a message of calls makes (-1: none)."""
    for block in message[FIELD[fmt]]:
        call = block.get("functionCall") or block.get("toolUse")
        if call is not None:
            return int(call.get("args", call.get("input"))["tag"][1:].split(".")[0])
    return -1


@pytest.mark.parametrize("fmt", ["gemini", "bedrock"])
def test_random_split_positions_never_lose_a_real_result(fmt: str) -> None:
    counted = Counter[str]()
    for seed in range(300):
        messages, turns, orphans = _split_history(fmt, random.Random(seed))
        counted["after text"] += len(history.check(messages).of(history.Kind.RESULT_AFTER_TEXT))
        for policy in POLICIES:
            fixed, changes = history.repair(messages, policy)
            assert history.check(fixed).findings == (), seed  # checks clean
            assert history.repair(fixed, policy) == (fixed, []), seed
            for at, m in enumerate(fixed):
                turn = _turn_of(fmt, m)
                if turn >= 0:  # the one user message after the calls holds every real result, in the order sent
                    got = [_tag(fmt, b) for b in fixed[at + 1][FIELD[fmt]]]
                    assert fixed[at + 1]["role"] == "user" and [t for t in got if t and t != PH] == turns[turn], seed
            kept = [_tag(fmt, b) for m in fixed for b in m[FIELD[fmt]]]
            assert Counter(t for t in kept if t and t != PH) == Counter(t for turn in turns for t in turn), (
                seed
            )  # none lost, once each
            assert not orphans & set(kept), seed  # after the model's next message: dropped
            if fmt == "bedrock":
                assert all(not (a["role"] == b["role"] == "user") for a, b in itertools.pairwise(fixed))
            counted["moved"] += sum(c.kind == "moved-result" for c in changes)
    assert counted["after text"] > 300 and counted["moved"] > 600, counted


# -- linear work ------------------------------------------------------------------------------------------------


def _many_split_turns(fmt: str, n: int) -> list[dict[str, Any]]:
    messages = [_msg(fmt, "user", [_text("go")])]
    for _ in range(n):  # ids used again by each turn, after their calls were answered
        messages += [
            _msg(fmt, "assistant", [_call(fmt, "a", "A"), _call(fmt, "b", "B")]),
            _msg(fmt, "user", [_answer(fmt, "a", "ra")]),
            _msg(fmt, "user", [_text("also")]),
            _msg(fmt, "user", [_answer(fmt, "b", "rb")]),
            _msg(fmt, "assistant", [_text("so")]),
        ]
    return messages


def _one_split_turn(fmt: str, n: int) -> list[dict[str, Any]]:
    keys = [f"k{i}" for i in range(n)]
    return [
        _msg(fmt, "user", [_text("go")]),
        _msg(fmt, "assistant", [_call(fmt, k, k) for k in keys]),
        _msg(fmt, "user", [_answer(fmt, k, f"r{k}") for k in keys[: n // 2]]),
        _msg(fmt, "user", [_text("also")]),
        _msg(fmt, "user", [_answer(fmt, k, f"r{k}") for k in keys[n // 2 :]]),
    ]


@pytest.mark.parametrize("fmt", ["gemini", "bedrock"])
@pytest.mark.parametrize("build", [_many_split_turns, _one_split_turn], ids=["turns", "results-of-one-turn"])
def test_split_results_cost_the_same_per_message(fmt: str, build: Any) -> None:
    # 1x and 8x the turns (or one turn's results): the work grows by 8, give or take a quarter
    small, large = _work(build(fmt, 250)), _work(build(fmt, 2_000))
    assert small * 8 * 0.75 <= large <= small * 8 * 1.25, (small, large)
    fixed, _ = history.repair(build(fmt, 2_000))
    assert not history.check(fixed).rejected  # the ids each turn uses again are only reported (reused)
