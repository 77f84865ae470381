"""Hostile audit 33: results the model sends after the user's text, a user message holding a server
tool's result beside the client's, and Gemini's ``function`` role.

A model turn makes calls, the user says something, and the results come in a message of the model's
role (``misplaced-result``). The user's text ended the turn: the calls were ``dangling``, the results
``orphan``s, and repair dropped them for placeholders. They answer the calls all the same; repair
moves them where the API takes them, before the user's text, which it keeps. The seeded property
tests take each API's reading as the oracle (audit 30's for Anthropic and Converse, audit 32's for
Gemini, OpenAI chat and Ollama): ``check`` reports what it refuses, ``repair`` keeps every result
with its call (none dropped but those it says), leaves a history the API takes and changes nothing
when run again. Each regression test failed before its fix. Work is counted, not timed."""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import pytest

from fsm import history
from tests.test_hostile_audit29 import _answer, _said, _use
from tests.test_hostile_audit30 import READINGS, _c_answer, _c_use, _work, found_and_repaired
from tests.test_hostile_audit32 import (
    POLICIES,
    _chat_answer,
    _chat_call,
    _g_answer,
    _g_call,
    _named,
    _readings,
    _sent,
)

HURRY = "are you there?"


def _findings(messages: list[dict[str, Any]], fmt: str = "auto") -> list[tuple[str, str, int]]:
    return [(f.kind.value, f.id, f.message) for f in history.check(messages, fmt).findings]  # type: ignore[arg-type]


def _kinds(changes: list[history.Change]) -> list[tuple[str, int]]:
    return [(c.kind, c.message) for c in changes]


# -- results the model sends after the user's text --------------------------------------------------------------


def _after_text(fmt: str) -> list[dict[str, Any]]:
    """Two calls, the user's text, then both results in a message of the model's role."""
    if fmt == "gemini":
        return [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [_g_call("f", "t1", None), _g_call("g", "t2", None)]},
            {"role": "user", "parts": [{"text": HURRY}]},
            {"role": "model", "parts": [_g_answer("f", "sunny", None), _g_answer("g", "noon", None)]},
        ]
    if fmt == "anthropic":
        return [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [_use("a", "t1"), _use("b", "t2")]},
            {"role": "user", "content": HURRY},
            {"role": "assistant", "content": [_answer("a", "sunny"), _answer("b", "noon")]},
        ]
    if fmt == "bedrock":
        return [
            {"role": "user", "content": [{"text": "go"}]},
            {"role": "assistant", "content": [_c_use("a", "t1"), _c_use("b", "t2")]},
            {"role": "user", "content": [{"text": HURRY}]},
            {"role": "assistant", "content": [_c_answer("a", "sunny"), _c_answer("b", "noon")]},
        ]
    keys = ["a", "b"] if fmt == "openai" else ["f", "g"]
    empty = None if fmt == "openai" else ""
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": empty, "tool_calls": [_chat_call(fmt, key, "t") for key in keys]},
        {"role": "user", "content": HURRY},
        _chat_answer(fmt, keys[0], "sunny", "assistant"),
        _chat_answer(fmt, keys[1], "noon", "assistant"),
    ]


def _repaired_after_text(fmt: str) -> list[dict[str, Any]]:
    """Where each API takes the results: right after the calls, before the user's text (in the
    user's message, first in it, where its format puts text and results together)."""
    sent = _after_text(fmt)
    if fmt == "gemini":  # hist39b: the responses alone in their content, a placeholder model content between
        return [*sent[:2], *_apart(sent[3]["parts"], [{"text": HURRY}])]
    if fmt == "anthropic":
        return [*sent[:2], {"role": "user", "content": [*sent[3]["content"], _said(HURRY)]}]
    if fmt == "bedrock":
        return [*sent[:2], {"role": "user", "content": [*sent[3]["content"], {"text": HURRY}]}]
    return [*sent[:2], {**sent[3], "role": "tool"}, {**sent[4], "role": "tool"}, sent[2]]


FIVE = ["anthropic", "bedrock", "gemini", "openai", "ollama"]


def _apart(responses: list[dict[str, Any]], others: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Gemini, as repair writes a turn's responses and the user's other parts (``results-beside-text``)."""
    between = {"role": "model", "parts": [{"text": history.RepairPolicy().between}]}
    return [{"role": "user", "parts": responses}, between, {"role": "user", "parts": others}]


@pytest.mark.parametrize("fmt", FIVE)
def test_results_the_model_sends_after_the_users_text_answer_the_calls_and_go_before_it(fmt: str) -> None:
    # The user's text ended the turn: both calls dangled, both results were orphans, and repair
    # dropped them for placeholders. They answer the calls; repair keeps the user's text after them.
    messages = _after_text(fmt)
    ids = {"gemini": ["f#1", "g#1"], "ollama": ["f#1", "g#1"]}.get(fmt, ["a", "b"])
    at = [4, 5] if fmt in ("openai", "ollama") else [4, 4]
    assert _findings(messages) == [("misplaced-result", key, n) for key, n in zip(ids, at, strict=True)]
    assert not history.anything_dangling(messages)
    for policy in POLICIES:
        fixed, changes = history.repair(messages, policy)
        assert fixed == _repaired_after_text(fmt)
        moved = [("moved-misplaced-result", n) for n in at]
        apart = [("placeholder-model-turn", 3)] if fmt == "gemini" else []
        assert _kinds(changes) == (
            moved if fmt in ("openai", "ollama") else [*apart, *moved, ("dropped-empty-message", 4)]
        )
        assert history.check(fixed).findings == () and history.repair(fixed, policy) == (fixed, [])


def test_a_dangling_call_beside_results_sent_after_the_users_text_gets_its_placeholder_before_the_text() -> None:
    messages = _after_text("anthropic")
    messages[3] = {"role": "assistant", "content": [_said("here"), _answer("a", "sunny")]}
    assert _findings(messages) == [("misplaced-result", "a", 4), ("dangling", "b", 2)]
    fixed, changes = history.repair(messages, POLICIES[0])
    placeholder = {"type": "tool_result", "tool_use_id": "b", "content": "PLACEHOLDER", "is_error": True}
    assert fixed[2:] == [
        {"role": "user", "content": [_answer("a", "sunny"), placeholder, _said(HURRY)]},
        {"role": "assistant", "content": [_said("here")]},
    ]
    assert _kinds(changes) == [("placeholder-result", 2), ("moved-misplaced-result", 4)]
    assert history.check(fixed).findings == ()


@pytest.mark.parametrize("fmt", ["openai", "ollama"])
def test_a_chat_turn_answered_before_and_after_the_users_text_keeps_both_in_order(fmt: str) -> None:
    # A tool message answers the first call, the user speaks, the assistant's message the second:
    # the second goes right after the first, before the text.
    messages = _after_text(fmt)
    messages[2:4] = [{**messages[3], "role": "tool"}, messages[2]]
    assert _findings(messages) == [("misplaced-result", "b" if fmt == "openai" else "g#1", 5)]
    fixed, changes = history.repair(messages)
    assert fixed == [*messages[:3], {**messages[4], "role": "tool"}, messages[3]]
    assert _kinds(changes) == [("moved-misplaced-result", 5)]
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


def test_the_users_results_after_those_the_model_sent_past_the_text_go_with_them() -> None:
    # Gemini: a response in the model's content after the user's text, the other in the user's content after it.
    messages = _after_text("gemini")
    answers = messages[3]["parts"]
    messages[3:] = [
        {"role": "model", "parts": [answers[0]]},
        {"role": "user", "parts": [answers[1], {"text": "so"}]},
    ]
    # hist39b: the last content holds a response beside text (reported there, read with its role);
    # its response is past the user's text all the same (result-after-text)
    assert _findings(messages) == [
        ("results-beside-text", "", 5),
        ("misplaced-result", "f#1", 4),
        ("result-after-text", "g#1", 5),
    ]
    fixed, changes = history.repair(messages)
    # the user's text after the moved responses joins the user's text, after a placeholder model
    # content (hist39 put it beside the responses: Gemini 3 answers that with an empty candidate)
    assert fixed[2:] == _apart(answers, [{"text": HURRY}, {"text": "so"}])
    moved = [("moved-misplaced-result", 4), ("dropped-empty-message", 4), ("moved-result", 5)]
    assert _kinds(changes) == [("placeholder-model-turn", 3), *moved, ("merged-messages", 5)]
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


def test_a_user_text_then_a_message_that_is_no_result_still_ends_the_turn() -> None:
    # Only results sent as the model go on the turn past the user's text: the call still dangles.
    messages = _after_text("openai")
    messages[3:] = [{"role": "assistant", "content": "still thinking"}]
    assert [(k, n) for k, _, n in _findings(messages)] == [("dangling", 2), ("dangling", 2)]


# -- the property tests ---------------------------------------------------------------------------------------


def _past_text(fmt: str, rng: random.Random) -> tuple[list[dict[str, Any]], list[int]]:
    """A random history of the format's audit (30 or 32), then turns whose results the model's role
    sends after the user's text (some calls left without, now and then a result answering nothing,
    the model's text around; for OpenAI and Ollama now and then a tool message before the text);
    and the 1-based places of those turns' calls whose every call got its result."""
    make = READINGS[fmt][0] if fmt in READINGS else _readings(fmt)[0]
    sent: list[dict[str, Any]] = make(rng)
    serial = iter(range(1_000_000))
    model = "model" if fmt == "gemini" else "assistant"
    field = {"gemini": "parts", "anthropic": "content", "bedrock": "content"}.get(fmt)
    text: Any = {"text": "so"} if fmt in ("gemini", "bedrock") else _said("so")

    def said(words: str) -> dict[str, Any]:
        if field is None or fmt == "anthropic":
            return {"role": "user", "content": words}
        return {"role": "user", field: [{"text": words}]}

    if sent[-1].get("role") != "user":
        sent.append(said("go on"))
    whole: list[int] = []
    for _ in range(rng.randint(1, 3)):
        n = rng.randint(1, 3)
        keys = [rng.choice(["x", "y", f"z{next(serial)}"]) for _ in range(n)]
        tags = [f"q{next(serial)}" for _ in range(n)]
        if fmt == "gemini":
            names = [rng.choice("fg") for _ in range(n)]
            ids = [f"i{next(serial)}" for _ in range(n)] if rng.random() < 0.5 else [None] * n
            calls: dict[str, Any] = {
                "role": model,
                "parts": [_g_call(f, t, i) for f, t, i in zip(names, tags, ids, strict=True)],
            }
            answers = [_g_answer(f, f"w{next(serial)}", i) for f, i in zip(names, ids, strict=True)]
        elif fmt == "anthropic":
            calls = {"role": model, "content": [_use(k, t) for k, t in zip(keys, tags, strict=True)]}
            answers = [_answer(k, f"w{next(serial)}") for k in keys]
        elif fmt == "bedrock":
            keys = [rng.choice("ab") for _ in range(n)]
            calls = {"role": model, "content": [_c_use(k, t) for k, t in zip(keys, tags, strict=True)]}
            answers = [_c_answer(k, f"w{next(serial)}") for k in keys]
        else:
            keys = [f"c{next(serial)}" if fmt == "openai" else rng.choice("fgh") for _ in range(n)]
            empty = None if fmt == "openai" else ""
            calls = {
                "role": model,
                "content": empty,
                "tool_calls": [_chat_call(fmt, k, t) for k, t in zip(keys, tags, strict=True)],
            }
            answers = [_chat_answer(fmt, k, f"w{next(serial)}", model) for k in keys]
        kept = [a for a in answers if rng.random() < 0.85]
        if len(kept) == len(answers):
            whole.append(len(sent) + 1)
        if rng.random() < 0.15:
            kept.append(answers[0] if fmt in ("gemini", "ollama") else _ghost(fmt, next(serial)))
        sent.append(calls)
        before = 0
        if fmt in ("openai", "ollama") and rng.random() < 0.3:
            before = rng.randint(0, len(kept) - 1) if kept else 0
            sent += [{**a, "role": "tool"} for a in kept[:before]]
        sent.append(said(HURRY))
        if not kept[before:]:
            kept.append(answers[-1])
        if field is None:
            sent += kept[before:]
        else:
            around = [text] if rng.random() < 0.4 else []
            sent.append({"role": model, field: [*around, *kept, *around]})
        if rng.random() < 0.2:
            break  # the history ends on the results sent as the model
        sent.append(said("next"))
    return sent, whole


def _ghost(fmt: str, n: int) -> dict[str, Any]:
    if fmt == "anthropic":
        return _answer("ghost", f"g{n}")
    if fmt == "bedrock":
        return _c_answer("ghost", f"g{n}")
    return _chat_answer(fmt, "ghost", f"g{n}", "assistant")


@pytest.mark.parametrize("fmt", ["anthropic", "bedrock"])
def test_random_results_past_the_users_text_repair_to_what_anthropic_and_converse_take(fmt: str) -> None:
    counted = found_and_repaired(fmt, lambda rng: _past_text(fmt, rng)[0], 600)
    assert counted["moved"] > 800 and counted["meant"] > 1_500, counted
    for seed in range(600):
        _kept_once_for_all(fmt, *_past_text(fmt, random.Random(seed)), seed)


@pytest.mark.parametrize("fmt", ["gemini", "openai", "ollama"])
def test_random_results_past_the_users_text_repair_to_what_gemini_and_chat_take(fmt: str) -> None:
    counted = chat_found_and_repaired(fmt, lambda rng: _past_text(fmt, rng)[0], 600)
    for seed in range(600):
        _kept_once_for_all(fmt, *_past_text(fmt, random.Random(seed)), seed)
    assert counted["moved"] > 800 and counted["meant"] > 1_500, counted


def chat_found_and_repaired(fmt: str, make: Any, seeds: int) -> Counter[str]:
    """Check and repair ``seeds`` random histories ``make`` gives, against the API's reading of ``fmt``
    (Gemini, OpenAI chat, Ollama: audit 32's); how many results repair moved out of the model's role,
    how many answers were sent."""
    _, refused, meant_of, answers = _readings(fmt)
    counted = Counter[str]()
    for seed in range(seeds):
        messages = make(random.Random(seed))
        assert history.check(messages, fmt).rejected == bool(refused(messages)), seed  # type: ignore[arg-type]
        meant = meant_of(messages)
        for policy in POLICIES:
            fixed, changes = history.repair(messages, policy, fmt)  # type: ignore[arg-type]
            named = _named(fixed, fmt)  # the kept messages of a junk role aside, the API takes it
            assert refused(named) == [], (seed, policy.dangling, refused(named))
            kept = answers(named)
            assert all(kept.get(call) == result for call, result in meant.items()), (seed, meant, kept)
            counted["moved"] += sum(c.kind == "moved-misplaced-result" for c in changes)
        counted["meant"] += len(meant)
    return counted


def _kept_once_for_all(fmt: str, messages: list[dict[str, Any]], whole: list[int], seed: int) -> None:
    """The calls of a turn whose every result came (past the user's text) do not dangle; repair drops
    no result but those it says, leaves nothing the API refuses but the junk roles it keeps, and
    changes nothing when run again."""
    report = history.check(messages, fmt)  # type: ignore[arg-type]
    dangling = {f.message for f in report.of(history.Kind.DANGLING)}
    assert not dangling & set(whole), (seed, dangling, whole)
    for policy in POLICIES:
        fixed, changes = history.repair(messages, policy, fmt)  # type: ignore[arg-type]
        dropped = sum(c.kind in ("dropped-orphan", "dropped-duplicate-result") for c in changes)
        assert _sent(fixed) == _sent(messages) - dropped, seed
        left = {f.kind for f in history.check(fixed, fmt).findings} - {history.Kind.UNKNOWN_ROLE, history.Kind.REUSED}  # type: ignore[arg-type]
        again, more = history.repair(fixed, policy, fmt)  # type: ignore[arg-type]
        assert not left and again == fixed and {c.kind for c in more} <= {"kept-unknown-role"}, (seed, left, more)


# -- linear work, megabyte input -------------------------------------------------------------------------------


def _many_turns_past_text(n: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(n):
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [_chat_call("openai", f"a{i}", "t")]},
            {"role": "user", "content": HURRY},
            _chat_answer("openai", f"a{i}", "x" * 64, "assistant"),
        ]
    return messages


def _one_turn_past_text(n: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [_use(f"a{i}") for i in range(n)]},
        {"role": "user", "content": HURRY},
        {"role": "assistant", "content": [_answer(f"a{i}", f"r{i}" + "x" * 64) for i in range(n)]},
    ]


@pytest.mark.parametrize("build", [_many_turns_past_text, _one_turn_past_text])
def test_results_past_the_users_text_cost_the_same_per_message(build: Any) -> None:
    small, large = _work(build(250)), _work(build(2_000))
    assert large <= small * 8 * 1.25, (small, large)


def test_a_megabyte_turn_answered_past_the_users_text_keeps_every_result_in_order() -> None:
    messages = _one_turn_past_text(15_000)
    assert len(json.dumps(messages)) > 1_000_000
    assert len(history.check(messages).of(history.Kind.MISPLACED_RESULT)) == 15_000
    fixed, changes = history.repair(messages)
    assert fixed[2]["content"][:-1] == messages[3]["content"] and fixed[2]["content"][-1] == _said(HURRY)
    assert len(fixed) == 3 and len(changes) == 15_001
    assert history.check(fixed).findings == ()


# -- Gemini's role "function" --------------------------------------------------------------------------------
# The API takes "user" or "model" alone (the Content reference: "Must be either 'user' or 'model'";
# today's endpoint answers 400 "Role 'function' is not supported"), though older Gemini and Vertex AI
# examples sent function responses in a content of role "function". It stays `unknown-role`; repair
# makes such a content the user's it stands for.


def _function_role(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [_g_call("f", "t1", "a"), _g_call("g", "t2", None)]},
        {"role": "function", "parts": parts},
    ]


def test_a_gemini_content_of_role_function_holding_responses_becomes_the_users() -> None:
    # It was kept as it was (`kept-unknown-role`): the request went back to a 400 each time.
    answers = [_g_answer("f", "sunny", "a"), _g_answer("g", "noon", None)]
    messages = _function_role(answers)
    report = history.check(messages)
    assert [(f.kind.value, f.message) for f in report.findings] == [("unknown-role", 3)] and report.rejected
    assert "user content" in report.findings[0].detail
    fixed, changes = history.repair(messages)
    assert fixed == [*messages[:2], {"role": "user", "parts": answers}]
    assert _kinds(changes) == [("function-role-to-user", 3)]
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


@pytest.mark.parametrize("parts", [[{"text": "just words"}], [_g_call("h", "t3", None)]], ids=["text alone", "a call"])
def test_a_gemini_function_content_holding_no_response_is_kept_as_it_is(parts: Any) -> None:
    # Only the caller knows what a content of text or calls in that role meant.
    messages = [*_function_role(parts), {"role": "user", "parts": [{"text": "next"}]}]
    fixed, changes = history.repair(messages)
    assert any(m is messages[2] for m in fixed) and ("kept-unknown-role", 3) in _kinds(changes)
    assert "function-role-to-user" not in {c.kind for c in changes}


def test_a_gemini_function_content_whose_responses_all_go_goes_with_them() -> None:
    messages = [{"role": "user", "parts": [{"text": "go"}]}, {"role": "function", "parts": [_g_answer("f", "x", "a")]}]
    fixed, changes = history.repair(messages)
    assert fixed == messages[:1] and _kinds(changes) == [("dropped-orphan", 2), ("dropped-empty-message", 2)]


def _as_function(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[int]]:
    """The user contents holding responses and no call sent in the role "function"; their places (1-based)."""
    swapped, places = [], []
    for t, message in enumerate(messages, 1):
        parts = message.get("parts", [])
        answers = any("functionResponse" in p for p in parts) and not any("functionCall" in p for p in parts)
        if message.get("role") == "user" and answers:
            message = {**message, "role": "function"}
            places.append(t)
        swapped.append(message)
    return swapped, places


def test_random_gemini_histories_with_responses_in_the_function_role_repair_as_the_users() -> None:
    make = _readings("gemini")[0]
    counted = Counter[str]()
    for seed in range(800):
        messages = make(random.Random(seed))
        swapped, places = _as_function(messages)
        unknown = [f.message for f in history.check(swapped).of(history.Kind.UNKNOWN_ROLE)]
        assert sorted(set(places) - set(unknown)) == [] and set(unknown) - set(places) == {
            f.message for f in history.check(messages).of(history.Kind.UNKNOWN_ROLE)
        }, seed
        for policy in POLICIES:
            fixed, changes = history.repair(messages, policy)
            fixed_swapped, changes_swapped = history.repair(swapped, policy)
            kept = [m for m in fixed_swapped if m.get("role") == "function"]
            assert not any("functionResponse" in p for m in kept for p in m["parts"]), seed
            assert [{**m, "role": "user"} if m in kept else m for m in fixed_swapped] == fixed, seed
            made = [c.message for c in changes_swapped if c.kind == "function-role-to-user"]
            gone = [c.message for c in changes if c.kind == "dropped-empty-message"]
            assert sorted(_kinds([c for c in changes_swapped if c.kind != "function-role-to-user"])) == sorted(
                _kinds(changes) + [("kept-unknown-role", t) for t in places if t not in made and t not in gone]
            ), seed
            again, more = history.repair(fixed_swapped, policy)
            assert again == fixed_swapped and {c.kind for c in more} <= {"kept-unknown-role"}, seed
            counted["made"] += len(made)
    assert counted["made"] > 1_000, counted


# -- an Anthropic user message holding a server tool's result beside the client's ---------------------------
# Claude writes a server tool's result (`web_search_tool_result`, `mcp_tool_result`, ...) in its own
# message, right after the call; the API answers one placed elsewhere with 400 ("Each
# `..._tool_result` block must have a corresponding `server_tool_use` block before it"). Sent back in
# the user's message beside the client's `tool_result`s, it was read as text before them (the client
# results `result-after-text`) and as an orphan, its call `dangling`: repair dropped both, a result lost.


def _server(kind: str, at: str) -> tuple[dict[str, Any], dict[str, Any]]:
    if kind == "mcp":
        call = {"type": "mcp_tool_use", "id": at, "name": "m", "server_name": "s", "input": {}}
        return call, {"type": "mcp_tool_result", "tool_use_id": at, "content": [{"type": "text", "text": "found"}]}
    call = {"type": "server_tool_use", "id": at, "name": "web_search", "input": {"query": "q"}}
    return call, {"type": "web_search_tool_result", "tool_use_id": at, "content": []}


@pytest.mark.parametrize("kind", ["web", "mcp"])
@pytest.mark.parametrize("first", [True, False], ids=["server-result-first", "client-result-first"])
def test_a_server_result_the_user_sent_beside_client_results_goes_back_after_its_call(kind: str, first: bool) -> None:
    call, found = _server(kind, "srvtoolu_1")
    answers = [found, _answer("a", "sunny"), _answer("b", "noon")]
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [_said("let me"), call, _use("a"), _use("b")]},
        {"role": "user", "content": answers if first else [*answers[1:], found]},
    ]
    assert _findings(messages) == [("misplaced-result", "srvtoolu_1", 3)]
    assert not history.anything_dangling(messages)
    for policy in POLICIES:
        fixed, changes = history.repair(messages, policy)
        assert fixed == [
            messages[0],
            {"role": "assistant", "content": [_said("let me"), call, found, _use("a"), _use("b")]},
            {"role": "user", "content": answers[1:]},
        ]
        assert _kinds(changes) == [("moved-misplaced-result", 3)]
        assert history.check(fixed).findings == () and history.repair(fixed, policy) == (fixed, [])


def test_a_server_result_the_user_sent_answering_no_call_is_still_an_orphan() -> None:
    found = _server("web", "srvtoolu_9")[1]
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [_use("a")]},
        {"role": "user", "content": [_answer("a", "sunny"), found]},
    ]
    assert _findings(messages) == [("orphan", "srvtoolu_9", 3)]
    fixed, changes = history.repair(messages)
    assert fixed[2] == {"role": "user", "content": [_answer("a", "sunny")]} and _kinds(changes) == [
        ("dropped-orphan", 3)
    ]


def _mixed(rng: random.Random) -> list[dict[str, Any]]:
    """Turns whose assistant message makes client and server calls (its own server results now and
    then in it), answered by a user message (now and then an assistant one) holding client results
    and server results, in any order, some missing, text now and then."""
    serial = iter(range(1_000_000))
    sent: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for _ in range(rng.randint(1, 4)):
        keys, at = rng.sample("abcd", rng.randint(1, 3)), rng.sample("abcdsx", rng.randint(0, 2))
        kind = rng.choice(["web", "mcp"])
        made = [_server(kind, k)[0] for k in at] + [_use(k, f"c{next(serial)}") for k in keys]
        rng.shuffle(made)
        if at and rng.random() < 0.3:  # Claude's own result for one of them, in its message
            made.insert(rng.randint(0, len(made)), {**_server(kind, rng.choice(at))[1], "id": next(serial)})
        sent.append({"role": "assistant", "content": made})
        back = [{**_server(kind, k)[1], "id": next(serial)} for k in at if rng.random() < 0.8]
        back += [_answer(k, f"r{next(serial)}") for k in keys if rng.random() < 0.8]
        back += [_said("t")] if rng.random() < 0.3 else []
        rng.shuffle(back)
        if back:
            sent.append({"role": rng.choice(["user", "user", "assistant"]), "content": back})
        if rng.random() < 0.5:
            sent.append({"role": "user", "content": "more"})
    return sent


def _results(messages: list[dict[str, Any]]) -> Counter[Any]:
    """The results the messages hold, client and server, placeholders aside, by what they say."""
    held = Counter[Any]()
    for message in messages:
        for block in message["content"] if isinstance(message["content"], list) else ():
            if block["type"] == "tool_result" and block["content"] != "PLACEHOLDER":
                held[block["content"]] += 1
            elif block["type"].endswith("_tool_result"):
                held[block["id"]] += 1
    return held


def _answering(messages: list[dict[str, Any]]) -> list[Any]:
    """The server results a user message sent that answer a server call of the assistant message
    right before it (one alone, no run of them) that Claude's own results there left waiting (each
    answers the earliest such call of its id)."""
    answering = []
    for t in range(1, len(messages) - 1):
        before, asked, sent = messages[t - 1 : t + 2]
        if (before["role"], asked["role"], sent["role"]) != ("user", "assistant", "user"):
            continue
        waiting = Counter[str]()
        for block in asked["content"]:
            if block["type"] in ("server_tool_use", "mcp_tool_use"):
                waiting[block["id"]] += 1
            elif block["type"].endswith("_tool_result") and waiting[block["tool_use_id"]] > 0:
                waiting[block["tool_use_id"]] -= 1
        for block in sent["content"] if isinstance(sent["content"], list) else ():
            server = block["type"].endswith("_tool_result") and block["type"] != "tool_result"
            if server and waiting[block["tool_use_id"]] > 0:
                waiting[block["tool_use_id"]] -= 1
                answering.append(block["id"])
    return answering


def test_random_mixes_of_server_and_client_results_repair_keeping_each_once_for_all() -> None:
    counted = Counter[str]()
    for seed in range(1_500):
        messages = _mixed(random.Random(seed))
        history.check(messages)  # no exception for a well-formed history
        answering = _answering(messages)
        for policy in POLICIES:
            fixed, changes = history.repair(messages, policy)
            dropped = sum(c.kind in ("dropped-orphan", "dropped-duplicate-result") for c in changes)
            assert sum(_results(fixed).values()) == sum(_results(messages).values()) - dropped, seed
            assert not _results(fixed) - _results(messages), seed  # nothing made up, nothing twice
            assert all(_results(fixed)[tag] for tag in answering), seed  # each answering its call kept
            counted["answering"] += len(answering)
            left = {f.kind for f in history.check(fixed).findings} - {history.Kind.REUSED}
            assert not left and history.repair(fixed, policy) == (fixed, []), (seed, left)
            counted["moved"] += sum(c.kind == "moved-misplaced-result" for c in changes)
            counted["dropped"] += dropped
    assert counted["moved"] > 1_000 and counted["answering"] > 1_000, counted


def _server_results_sent_by_the_user(n: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(n):
        call, found = _server("web", f"s{i}")
        messages += [
            {"role": "assistant", "content": [call, _use(f"a{i}")]},
            {"role": "user", "content": [{**found, "content": "x" * 64}, _answer(f"a{i}", "y" * 64)]},
        ]
    return messages


def test_server_results_sent_by_the_user_cost_the_same_per_message() -> None:
    small, large = _work(_server_results_sent_by_the_user(250)), _work(_server_results_sent_by_the_user(2_000))
    assert large <= small * 8 * 1.25, (small, large)


def test_a_megabyte_history_of_server_results_sent_by_the_user_keeps_each() -> None:
    messages = _server_results_sent_by_the_user(6_000)
    assert len(json.dumps(messages)) > 1_000_000
    assert len(history.check(messages).of(history.Kind.MISPLACED_RESULT)) == 6_000
    fixed, changes = history.repair(messages)
    assert [m["content"][1]["tool_use_id"] for m in fixed[1::2]] == [f"s{i}" for i in range(6_000)]
    assert len(changes) == 6_000 and history.check(fixed).findings == ()
