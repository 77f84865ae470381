"""Hostile audit 36: a tool result sent as results are, after the user's text.

A model turn makes calls, the user says something, and the results come in the role they belong in
(an OpenAI chat or Ollama ``tool`` message, a Responses output item, a Gemini user content of
``functionResponse``s, a Converse user message of ``toolResult``s). The user's text ended the turn:
the calls were ``dangling``, the results ``orphan``s, and repair put placeholders in for them and
dropped the real results. They answer the calls still waiting (``result-after-text``); repair moves
them before the text, right after their turn's calls, and keeps the text. A result after the model's
next message still answers nothing: that turn is over. The seeded property tests take each API's own
reading as the oracle (audits 30 and 32) and the pairing rule of tests/test_history_property.py.
Each regression test failed before its fix. Work is counted, not timed."""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import pytest

from fsm import history
from tests.test_history_property import (
    IDS,
    calls_messages,
    pair,
    repaired_keeping_each_answer,
    responses_call,
    responses_output,
    results_messages,
    text,
)
from tests.test_hostile_audit29 import _answer, _said, _use
from tests.test_hostile_audit30 import READINGS, _c_answer, _c_use, _work, found_and_repaired
from tests.test_hostile_audit32 import POLICIES, _chat_answer, _chat_call, _g_answer, _g_call, _readings
from tests.test_hostile_audit33 import _apart, _kept_once_for_all, chat_found_and_repaired

ALSO = "also"
ALSO_AND = [{"text": ALSO}, {"text": "and"}]
SIX = ["openai", "ollama", "responses", "gemini", "bedrock", "anthropic"]


def _findings(messages: list[dict[str, Any]], fmt: str = "auto") -> list[tuple[str, str, int]]:
    return [(f.kind.value, f.id, f.message) for f in history.check(messages, fmt).findings]  # type: ignore[arg-type]


def _kinds(changes: list[history.Change]) -> list[tuple[str, int]]:
    return [(c.kind, c.message) for c in changes]


def _user(fmt: str, words: str) -> dict[str, Any]:
    if fmt == "gemini":
        return {"role": "user", "parts": [{"text": words}]}
    if fmt == "bedrock":
        return {"role": "user", "content": [{"text": words}]}
    return {"role": "user", "content": words}


def _model(fmt: str, words: str) -> dict[str, Any]:
    if fmt == "gemini":
        return {"role": "model", "parts": [{"text": words}]}
    if fmt == "bedrock":
        return {"role": "assistant", "content": [{"text": words}]}
    if fmt == "responses":
        return {"type": "message", "role": "assistant", "content": words}
    return {"role": "assistant", "content": words}


def _turn(fmt: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Two calls (a user message before them), and the results answering them, as the format sends results."""
    if fmt == "gemini":
        calls = [{"role": "model", "parts": [_g_call("f", "t1", "i1"), _g_call("g", "t2", None)]}]
        return calls, [{"role": "user", "parts": [_g_answer("f", "sunny", "i1"), _g_answer("g", "noon", None)]}]
    if fmt == "bedrock":
        calls = [{"role": "assistant", "content": [_c_use("a", "t1"), _c_use("b", "t2")]}]
        return calls, [{"role": "user", "content": [_c_answer("a", "sunny"), _c_answer("b", "noon")]}]
    if fmt == "anthropic":
        calls = [{"role": "assistant", "content": [_use("a", "t1"), _use("b", "t2")]}]
        return calls, [{"role": "user", "content": [_answer("a", "sunny"), _answer("b", "noon")]}]
    if fmt == "responses":
        calls = [responses_call("a", "f", "t1"), responses_call("b", "g", "t2")]
        return calls, [responses_output("a", "sunny"), responses_output("b", "noon")]
    keys = ["a", "b"] if fmt == "openai" else ["f", "g"]
    empty = None if fmt == "openai" else ""
    calls = [{"role": "assistant", "content": empty, "tool_calls": [_chat_call(fmt, k, "t") for k in keys]}]
    return calls, [_chat_answer(fmt, keys[0], "sunny"), _chat_answer(fmt, keys[1], "noon")]


def _ids(fmt: str) -> list[str]:
    return {"gemini": ["i1", "g#1"], "ollama": ["f#1", "g#1"]}.get(fmt, ["a", "b"])


def test_the_reported_openai_history_keeps_its_result() -> None:
    # The brief's case: checked as dangling c1 (2) and orphan c1 (4); repair put a placeholder in
    # after the assistant message and dropped the real result "ok".
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "user", "content": "also"},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    report = history.check(messages)
    assert _findings(messages) == [("result-after-text", "c1", 4)] and report.rejected
    assert "user's text" in report.findings[0].detail
    fixed, changes = history.repair(messages)
    assert fixed == [messages[0], messages[1], messages[3], messages[2]]
    assert _kinds(changes) == [("moved-result", 4)]
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


@pytest.mark.parametrize("fmt", SIX)
def test_results_sent_after_the_users_text_answer_the_calls_and_go_before_it(fmt: str) -> None:
    calls, results = _turn(fmt)
    messages = [_user(fmt, "go"), *calls, _user(fmt, ALSO), *results]
    first = len(calls) + 3  # 1-based: the first results message
    at = [first, first + 1] if fmt in ("openai", "ollama", "responses") else [first, first]
    found = [("result-after-text", key, n) for key, n in zip(_ids(fmt), at, strict=True)]
    repeated = (
        [("user-after-user", "", first)] if fmt in ("bedrock", "gemini") else []
    )  # user after user (hist39: Gemini)
    assert _findings(messages) == repeated + found
    assert not history.anything_dangling(messages)
    for policy in POLICIES:
        fixed, changes = history.repair(messages, policy)
        if fmt in ("openai", "ollama", "responses"):  # right after the calls, each its own message
            assert fixed == [messages[0], *calls, *results, messages[first - 2]]
            assert _kinds(changes) == [("moved-result", first), ("moved-result", first + 1)]
        elif fmt == "gemini":  # hist39b: first in a user content of their own, a placeholder model before the text
            assert fixed == [messages[0], *calls, *_apart(results[0]["parts"], [{"text": ALSO}])]
            moved = [("moved-result", 4), ("moved-result", 4), ("dropped-empty-message", 4)]
            assert _kinds(changes) == [("placeholder-model-turn", 3), *moved]
        else:  # first in the user's message, before the text
            field = "content"
            said = _said(ALSO) if fmt == "anthropic" else {"text": ALSO}
            assert fixed == [messages[0], *calls, {"role": "user", field: [*results[0][field], said]}]
            assert _kinds(changes) == [("moved-result", 4), ("moved-result", 4), ("dropped-empty-message", 4)]
        assert history.check(fixed).findings == () and history.repair(fixed, policy) == (fixed, [])


@pytest.mark.parametrize("fmt", SIX)
def test_results_after_the_models_next_message_still_answer_nothing(fmt: str) -> None:
    # The model spoke after the user's text: the calls' turn is over, so the results are orphans and
    # the calls dangle, as before.
    calls, results = _turn(fmt)
    messages = [_user(fmt, "go"), *calls, _user(fmt, ALSO), _model(fmt, "ok"), *results]
    assert sorted(kind for kind, _, _ in _findings(messages)) == ["dangling"] * 2 + ["orphan"] * 2
    fixed, changes = history.repair(messages, POLICIES[0])
    # the placeholders go in the user's text content after the calls: Gemini (hist39b) in a content of their own
    apart = {"placeholder-model-turn": 1} if fmt == "gemini" else {}
    assert Counter(kind for kind, _ in _kinds(changes) if kind != "dropped-empty-message") == {
        "placeholder-result": 2,
        "dropped-orphan": 2,
        **apart,
    }
    assert history.check(fixed).findings == ()


@pytest.mark.parametrize("fmt", ["openai", "ollama", "responses"])
def test_a_turn_answered_before_and_after_the_users_text_keeps_both_in_order(fmt: str) -> None:
    calls, results = _turn(fmt)
    messages = [_user(fmt, "go"), *calls, results[0], _user(fmt, ALSO), results[1]]
    assert _findings(messages) == [("result-after-text", _ids(fmt)[1], len(messages))]
    fixed, changes = history.repair(messages)
    assert fixed == [messages[0], *calls, *results, messages[-2]]
    assert _kinds(changes) == [("moved-result", len(messages))]
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


@pytest.mark.parametrize("fmt", SIX)
def test_results_after_two_user_messages_of_text_go_before_the_first(fmt: str) -> None:
    calls, results = _turn(fmt)
    messages = [_user(fmt, "go"), *calls, _user(fmt, ALSO), _user(fmt, "and"), *results]
    repeated = {"user-after-user"} if fmt in ("bedrock", "gemini") else set()  # the roles alternate (hist39: Gemini)
    assert {kind for kind, _, _ in _findings(messages)} == {"result-after-text"} | repeated
    fixed, _ = history.repair(messages)
    if fmt in ("openai", "ollama", "responses"):
        assert fixed == [messages[0], *calls, *results, *messages[len(calls) + 1 : len(calls) + 3]]
    elif fmt == "gemini":  # the user's contents of text merged, after a placeholder model content (hist39b)
        assert fixed == [messages[0], *calls, *_apart(results[0]["parts"], ALSO_AND)]
    elif fmt == "bedrock":  # and the user's messages in a row merged
        assert fixed == [messages[0], *calls, {"role": "user", "content": [*results[0]["content"], *ALSO_AND]}]
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


@pytest.mark.parametrize("fmt", ["openai", "responses", "gemini", "bedrock"])
def test_a_call_left_without_its_result_past_the_text_gets_its_placeholder_before_the_text(fmt: str) -> None:
    calls, results = _turn(fmt)
    if fmt in ("gemini", "bedrock"):
        field = "parts" if fmt == "gemini" else "content"
        results = [{"role": "user", field: results[0][field][:1]}]
    else:
        results = results[:1]
    messages = [_user(fmt, "go"), *calls, _user(fmt, ALSO), *results]
    repeated = ["user-after-user"] if fmt in ("bedrock", "gemini") else []  # the roles alternate (hist39: Gemini)
    assert [kind for kind, _, _ in _findings(messages)] == [*repeated, "result-after-text", "dangling"]
    fixed, changes = history.repair(messages, POLICIES[0])
    assert fixed[: len(calls) + 1] == messages[: len(calls) + 1]
    if fmt == "bedrock":  # the result, the placeholder, then the text, in the user's message
        held = fixed[-1]["content"]
        assert len(fixed) == len(calls) + 2 and held[0] == results[0][field][0] and held[2] == {"text": ALSO}
    elif fmt == "gemini":  # the response and the placeholder; a placeholder model content; the text (hist39b)
        held = fixed[-3]["parts"]
        assert fixed[-2:] == _apart([], [{"text": ALSO}])[1:] and len(fixed) == len(calls) + 4
        assert len(held) == 2 and held[0] == results[0][field][0]
    else:  # the result and a placeholder right after the calls, then the text
        assert fixed[len(calls) + 1] == results[0] and fixed[len(calls) + 3 :] == [messages[-2]]
    apart = [("placeholder-model-turn", 3)] if fmt == "gemini" else []
    assert _kinds(changes) == [("placeholder-result", len(calls) + 1), *apart, ("moved-result", len(calls) + 3)] + (
        [("dropped-empty-message", 4)] if fmt in ("gemini", "bedrock") else []
    )
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


def test_an_anthropic_result_after_text_past_the_users_text_is_moved_once() -> None:
    # A result the model sent after the user's text, then the user's after text of their own: the
    # second was moved twice (before the first text and into its own message), a duplicate result.
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [_use("a", "t1"), _use("b", "t2")]},
        {"role": "user", "content": "hurry"},
        {"role": "assistant", "content": [_answer("a", "A")]},
        {"role": "user", "content": [_said("x"), _answer("b", "B")]},
    ]
    assert _findings(messages) == [("misplaced-result", "a", 4), ("result-after-text", "b", 5)]
    fixed, changes = history.repair(messages)
    assert fixed == [
        *messages[:2],
        {"role": "user", "content": [_answer("a", "A"), _answer("b", "B"), _said("hurry"), _said("x")]},
    ]
    assert ("moved-result", 5) in _kinds(changes) and history.check(fixed).findings == ()


# -- the property tests ---------------------------------------------------------------------------------------


def _past_text(fmt: str, rng: random.Random) -> tuple[list[dict[str, Any]], list[int]]:
    """A random history of the format's audit (30 or 32), then turns whose results come after the
    user's text, sent as results are (some calls left without, now and then a result answering
    nothing; for OpenAI and Ollama now and then tool messages before the text), the model's text
    after them; and the 1-based places of those turns' calls whose every call got its result."""
    make = READINGS[fmt][0] if fmt in READINGS else _readings(fmt)[0]
    sent: list[dict[str, Any]] = make(rng)
    serial = iter(range(1_000_000))
    if sent[-1].get("role") != "user":
        sent.append(_user(fmt, "go on"))
    whole: list[int] = []
    for _ in range(rng.randint(1, 3)):
        n = rng.randint(1, 3)
        keys = [f"k{next(serial)}" for _ in range(n)]
        if fmt == "gemini":
            names = [rng.choice("fg") for _ in range(n)]
            ids = keys if rng.random() < 0.5 else [None] * n
            tags = [f"q{next(serial)}" for _ in range(n)]
            made = [_g_call(f, t, i) for f, t, i in zip(names, tags, ids, strict=True)]
            calls: dict[str, Any] = {"role": "model", "parts": made}
            answers = [_g_answer(f, f"w{next(serial)}", i) for f, i in zip(names, ids, strict=True)]
        elif fmt == "bedrock":
            calls = {"role": "assistant", "content": [_c_use(k, f"q{next(serial)}") for k in keys]}
            answers = [_c_answer(k, f"w{next(serial)}") for k in keys]
        else:
            keys = keys if fmt == "openai" else [rng.choice("fgh") for _ in range(n)]
            empty = None if fmt == "openai" else ""
            made = [_chat_call(fmt, k, f"q{next(serial)}") for k in keys]
            calls = {"role": "assistant", "content": empty, "tool_calls": made}
            answers = [_chat_answer(fmt, k, f"w{next(serial)}") for k in keys]
        kept = [a for a in answers if rng.random() < 0.85] or answers[-1:]
        if len(kept) == len(answers):
            whole.append(len(sent) + 1)
        if rng.random() < 0.15 and fmt != "gemini":
            kept.append(_c_answer("ghost", "g") if fmt == "bedrock" else _chat_answer(fmt, "ghost", f"g{next(serial)}"))
        sent.append(calls)
        before = rng.randint(0, len(kept) - 1) if fmt in ("openai", "ollama") and rng.random() < 0.3 else 0
        sent += kept[:before]
        sent.append(_user(fmt, "are you there?"))
        if fmt in ("gemini", "bedrock"):
            field = "parts" if fmt == "gemini" else "content"
            sent.append({"role": "user", field: kept})
        else:
            sent += kept[before:]
        if rng.random() < 0.2:
            break  # the history ends on the results
        sent += [_model(fmt, "ok"), _user(fmt, "next")]
    return sent, whole


@pytest.mark.parametrize("fmt", ["gemini", "openai", "ollama", "bedrock"])
def test_random_results_past_the_users_text_repair_to_what_the_api_takes(fmt: str) -> None:
    repaired = found_and_repaired if fmt == "bedrock" else chat_found_and_repaired
    counted = repaired(fmt, lambda rng: _past_text(fmt, rng)[0], 600)
    assert counted["meant"] > 1_500, counted
    moved = 0
    for seed in range(600):
        messages, whole = _past_text(fmt, random.Random(seed))
        _kept_once_for_all(fmt, messages, whole, seed)
        moved += len(history.check(messages, fmt).of(history.Kind.RESULT_AFTER_TEXT))  # type: ignore[arg-type]
    assert moved > 800, moved


def _pairing(fmt: str, rng: random.Random) -> tuple[list[dict[str, Any]], dict[str, str | None], set[str]]:
    """Turns of tests/test_history_property.py's shapes (ids colliding, results missing, twice, or
    answering nothing), one or two user messages of text between the calls and their results (some
    before the text, where a turn takes more than one results message), the model's text after now
    and then (results after it answer nothing); the truth (the k-th rule over the results the calls'
    turn takes), and every result's tag."""
    serial = iter(range(10_000))
    messages, truth, tags = [text(fmt, "user", "go")], dict[str, Any](), set[str]()
    for _ in range(rng.randint(1, 4)):
        calls = [(rng.choice(IDS), rng.choice("fg"), f"c{next(serial)}") for _ in range(rng.randint(1, 3))]
        results = [(cid, name, f"r{next(serial)}") for cid, name, _ in calls for _ in range(rng.choice([0, 1, 1, 2]))]
        results += [(rng.choice([*IDS, "ghost"]), "f", f"r{next(serial)}") for _ in range(rng.randint(0, 1))]
        if fmt in ("gemini", "ollama"):  # by name, without ids
            results = [(None if fmt == "ollama" else rid, name, tag) for rid, name, tag in results]
            calls = [(None if fmt == "ollama" else cid, name, tag) for cid, name, tag in calls]
        rng.shuffle(results)
        k = rng.randint(0, len(results)) if fmt in ("openai", "ollama", "responses") else 0
        messages += calls_messages(fmt, calls, rng.random() < 0.3)
        messages += results_messages(fmt, results[:k])
        messages += [text(fmt, "user", "hm") for _ in range(rng.randint(1, 2))]
        spoke = rng.random() < 0.2
        if spoke:
            messages.append(text(fmt, "assistant", "ok"))
        messages += results_messages(fmt, results[k:])
        truth.update(pair(calls, results[: k if spoke else len(results)]))
        tags |= {tag for *_, tag in results}
        messages.append(text(fmt, "assistant", "so"))
    return messages, truth, tags


@pytest.mark.parametrize("fmt", SIX)
def test_random_results_past_the_users_text_keep_each_answer_with_its_call(fmt: str) -> None:
    counted = Counter[str]()
    for seed in range(400):
        messages, truth, tags = _pairing(fmt, random.Random(seed))
        for drop_calls in (False, True):
            repaired_keeping_each_answer(fmt, messages, truth, tags, set(), drop_calls)
        counted["answered"] += sum(answer is not None for answer in truth.values())
        counted["after text"] += len(history.check(messages).of(history.Kind.RESULT_AFTER_TEXT))
    assert counted["answered"] > 600 and counted["after text"] > 300, counted


# -- linear work ------------------------------------------------------------------------------------------------


def _many_turns_past_text(fmt: str, n: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [_user(fmt, "go")]
    for _ in range(n):  # ids used again by each turn, after their calls were answered
        calls, results = _turn(fmt)
        messages += [*calls, _user(fmt, ALSO), *results, _model(fmt, "so")]
    return messages


def _one_turn_past_text(n: int) -> list[dict[str, Any]]:
    made = [{"id": f"a{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in range(n)]
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": made},
        {"role": "user", "content": ALSO},
        *({"role": "tool", "tool_call_id": f"a{i}", "content": f"r{i}" + "x" * 64} for i in range(n)),
    ]


@pytest.mark.parametrize("shape", ["openai", "ollama", "responses", "gemini", "bedrock", "one-turn"])
def test_results_past_the_users_text_cost_the_same_per_message(shape: str) -> None:
    # 1x and 8x the turns (or the results of one turn): the work grows by 8, give or take a quarter
    def build(n: int) -> list[dict[str, Any]]:
        return _one_turn_past_text(n) if shape == "one-turn" else _many_turns_past_text(shape, n)

    small, large = _work(build(250)), _work(build(2_000))
    assert small * 8 * 0.75 <= large <= small * 8 * 1.25, (small, large)


def test_a_megabyte_turn_answered_past_the_users_text_keeps_every_result_in_order() -> None:
    messages = _one_turn_past_text(12_000)
    assert len(json.dumps(messages)) > 1_000_000
    assert len(history.check(messages).of(history.Kind.RESULT_AFTER_TEXT)) == 12_000
    fixed, changes = history.repair(messages)
    assert fixed == [*messages[:2], *messages[3:], messages[2]] and len(changes) == 12_000
    assert history.check(fixed).findings == ()
