"""Gemini: a turn's function responses never share a user content with anything else.

hist39 repaired Gemini user contents in a row by merging them, and put a turn's responses first in
its answering content with the user's text after them, in that same content. Published reports say
Gemini takes that shape badly: folded into the content of ``functionResponse`` parts, the user's
next message made Gemini 3 answer HTTP 200 with an empty candidate, or go on with the user's text as
if finishing it (NousResearch/hermes-agent#68863; the merged fix, #79791, ports
google-gemini/gemini-cli#28700 and keeps the two contents apart with a placeholder model turn
between them, since two user contents in a row are a 400, hermes-agent#55125/#55623);
vellum-ai/vellum-assistant#39495 saw a 400 for text beside the responses, and #1901 there one for
inline data beside them.

Now ``check`` reports such a content (``results-beside-text``, once, at the content), and ``repair``
writes the responses in a user content of their own, a placeholder ``model`` content of one text
part (``RepairPolicy.between``, ``placeholder-model-turn``), then the user's other parts in a user
content of their own. Converse and Anthropic keep results first and text after them in one message,
which their APIs take. Each test here fails on hist39. Work is counted, never timed."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from typing import Any

import pytest

from fsm import history
from fsm.errors import InvalidInput, LocalProtocolError
from tests.test_hist38 import BETWEEN, POLICIES, _answer, _call, _findings, _kinds, _msg, _tag, _text
from tests.test_hist39 import _any_history, _history
from tests.test_hostile_audit30 import _work

GO = _msg("gemini", "user", [_text("go")])
PICTURE = {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}


def _model(words: str = BETWEEN) -> dict[str, Any]:
    return _msg("gemini", "model", [_text(words)])


def _user(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return _msg("gemini", "user", parts)


def _mixes(content: dict[str, Any]) -> bool:
    """Does a content of the user's hold function responses beside a part of another kind?"""
    parts = content.get("parts") or []
    responses = sum("functionResponse" in part for part in parts)
    return content.get("role") in ("user", "function") and 0 < responses < len(parts)


def _clean(fixed: list[dict[str, Any]], policy: history.RepairPolicy | None = None) -> None:
    assert history.check(fixed).findings == () and history.repair(fixed, policy) == (fixed, [])


# -- the shapes --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("other", [_text("and the weather?"), PICTURE], ids=["text", "inline-data"])
def test_a_user_content_of_responses_and_another_part_is_reported_once_and_split(other: dict[str, Any]) -> None:
    calls = _msg("gemini", "model", [_call("gemini", "a", "A"), _call("gemini", "b", "B")])
    ra, rb = _answer("gemini", "a", "ra"), _answer("gemini", "b", "rb")
    messages = [GO, calls, _user([ra, rb, other])]
    report = history.check(messages)
    assert _findings(messages) == [("results-beside-text", "", 3)] and report.rejected
    assert history.Kind.RESULTS_BESIDE_TEXT in history.REJECTED
    for policy in POLICIES:
        fixed, changes = history.repair(messages, policy)
        assert fixed == [GO, calls, _user([ra, rb]), _model(), _user([other])]
        assert _kinds(changes) == [("placeholder-model-turn", 3)] and "alone" in changes[0].detail
        _clean(fixed, policy)


def test_a_response_after_the_text_in_its_content_is_one_finding_not_two() -> None:
    calls = _msg("gemini", "model", [_call("gemini", "a", "A"), _call("gemini", "b", "B")])
    ra, rb = _answer("gemini", "a", "ra"), _answer("gemini", "b", "rb")
    messages = [GO, calls, _user([_text("first"), ra, _text("then"), rb])]
    assert _findings(messages) == [("results-beside-text", "", 3)]  # hist39: result-after-text, twice
    fixed, changes = history.repair(messages)
    assert fixed == [GO, calls, _user([ra, rb]), _model(), _user([_text("first"), _text("then")])]
    assert Counter(kind for kind, _ in _kinds(changes)) == {"moved-result": 2, "placeholder-model-turn": 1}
    _clean(fixed)


def test_the_placeholder_model_text_is_the_policys() -> None:
    calls = _msg("gemini", "model", [_call("gemini", "a", "A")])
    messages = [GO, calls, _user([_answer("gemini", "a", "ra"), _text("so?")])]
    policy = history.RepairPolicy(between="[interrupted]")
    fixed, _ = history.repair(messages, policy)
    assert fixed[3] == _model("[interrupted]")
    _clean(fixed, policy)
    with pytest.raises(InvalidInput, match="between text must be a str"):
        history.repair(messages, history.RepairPolicy(between=None))  # type: ignore[arg-type]


def test_the_shape_hist39_wrote_is_reported_and_repaired() -> None:
    # hist39's repair of responses, then the user's text: one content of both, which check passed.
    calls = _msg("gemini", "model", [_call("gemini", "a", "A")])
    written = [GO, calls, _user([_answer("gemini", "a", "ra"), _text("and?")])]
    assert _findings(written) == [("results-beside-text", "", 3)]
    fixed, _ = history.repair(written)
    assert fixed == [GO, calls, _user([_answer("gemini", "a", "ra")]), _model(), _user([_text("and?")])]


def test_a_function_role_content_of_responses_and_text_becomes_two_user_contents() -> None:
    calls = _msg("gemini", "model", [_call("gemini", "a", "A")])
    ra = _answer("gemini", "a", "ra")
    messages = [GO, calls, {"role": "function", "parts": [ra, _text("note")]}]
    assert [kind for kind, _, _ in _findings(messages)] == ["results-beside-text", "unknown-role"]
    fixed, changes = history.repair(messages)
    assert fixed == [GO, calls, _user([ra]), _model(), _user([_text("note")])]
    assert Counter(kind for kind, _ in _kinds(changes)) == {"function-role-to-user": 1, "placeholder-model-turn": 1}
    _clean(fixed)


def test_a_dangling_call_then_the_users_text_gets_its_placeholder_in_a_content_of_its_own() -> None:
    # hist39 put the placeholder response into the user's text content after the calls.
    calls = _msg("gemini", "model", [_call("gemini", "a", "A")])
    messages = [GO, calls, _user([_text("never mind")]), _model("ok")]
    fixed, changes = history.repair(messages, POLICIES[0])
    placeholder = {"functionResponse": {"id": "a", "name": "f", "response": {"error": POLICIES[0].placeholder}}}
    assert fixed == [GO, calls, _user([placeholder]), _model(), *messages[2:]]
    assert _kinds(changes) == [("placeholder-result", 2), ("placeholder-model-turn", 3)]
    _clean(fixed, POLICIES[0])
    fixed, changes = history.repair(messages, POLICIES[1])  # the call dropped: no response to keep apart
    assert fixed == [_user([_text("go"), _text("never mind")]), _model("ok")]
    assert _kinds(changes) == [("dropped-call", 2), ("dropped-empty-message", 2), ("merged-messages", 3)]
    _clean(fixed, POLICIES[1])


def test_contents_of_one_kind_in_a_row_still_merge() -> None:
    calls = _msg("gemini", "model", [_call("gemini", k, k) for k in "ab"])
    ra, rb = _answer("gemini", "a", "ra"), _answer("gemini", "b", "rb")
    messages = [GO, calls, _user([ra]), _user([rb]), _user([_text("x")]), _user([_text("y")])]
    assert [kind for kind, _, _ in _findings(messages)] == ["user-after-user"] * 3
    fixed, changes = history.repair(messages)
    assert fixed == [GO, calls, _user([ra, rb]), _model(), _user([_text("x"), _text("y")])]
    assert _kinds(changes) == [("merged-messages", 4), ("placeholder-model-turn", 5), ("merged-messages", 6)]
    _clean(fixed)


@pytest.mark.parametrize("fmt", ["bedrock", "anthropic"])
def test_converse_and_anthropic_keep_results_then_text_in_one_message(fmt: str) -> None:
    if fmt == "anthropic":
        calls = {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]}
        answer = {"type": "tool_result", "tool_use_id": "a", "content": "ra"}
        go, also = {"role": "user", "content": "go"}, {"type": "text", "text": "also"}
    else:
        calls, answer = _msg(fmt, "assistant", [_call(fmt, "a", "A")]), _answer(fmt, "a", "ra")
        go, also = _msg(fmt, "user", [_text("go")]), _text("also")
    messages = [go, calls, {"role": "user", "content": [answer, also]}]
    assert history.check(messages).findings == () and history.repair(messages) == (messages, [])


# -- property: random Gemini histories ----------------------------------------------------------------------------


def _kept(fixed: list[dict[str, Any]]) -> Counter[str]:
    return Counter(t for m in fixed for t in (_tag("gemini", p) for p in m.get("parts") or []) if t and t != "none")


@pytest.mark.parametrize("build", ["turns", "any"])
def test_random_gemini_histories_never_mix_responses_and_alternate(build: str) -> None:
    # Turns answered over user contents in a row with text among the responses (each result known),
    # and random roles and parts (Gemini's function role too): no repaired content mixes responses
    # with other parts, no user content follows another, every result is kept once, repair is its own
    # repair and leaves nothing check reports but what only the caller can name.
    seen = Counter[str]()
    for seed in range(600 if build == "turns" else 1_500):
        rng = random.Random(seed)
        if build == "turns":
            messages, turns = _history("gemini", rng)
            sent = Counter(r for turn in turns for r in turn)
        else:
            messages, sent = _any_history("gemini", rng), None
        try:
            seen.update(f.kind.value for f in history.check(messages, "gemini").findings)
        except LocalProtocolError:
            continue  # a content both making calls and answering them
        for policy in POLICIES:
            fixed, changes = history.repair(messages, policy, "gemini")
            seen.update(c.kind for c in changes)
            assert not any(_mixes(m) for m in fixed), seed
            assert not any(a["role"] == b["role"] == "user" for a, b in itertools.pairwise(fixed)), seed
            if sent is not None:
                assert _kept(fixed) == sent, seed  # each result kept, once
            left = {f.kind.value for f in history.check(fixed, "gemini").findings} - {"reused", "unknown-role"}
            assert not left, (seed, left)
            again, more = history.repair(fixed, policy, "gemini")
            assert again == fixed and {c.kind for c in more} <= {"kept-unknown-role"}, seed
    assert min(seen["results-beside-text"], seen["placeholder-model-turn"], seen["user-after-user"]) > 50, seen


# -- linear work --------------------------------------------------------------------------------------------------


def _mixed_turns(n: int) -> list[dict[str, Any]]:
    """n turns, each answered by a content of text and responses, then the user's text in another."""
    messages = [GO]
    for _ in range(n):
        messages.append(_msg("gemini", "model", [_call("gemini", "a", "A"), _call("gemini", "b", "B")]))
        messages.append(_user([_text("also"), _answer("gemini", "a", "ra"), _answer("gemini", "b", "rb")]))
        messages += [_user([_text("and")]), _model("so")]
    return messages


def _one_content(n: int) -> list[dict[str, Any]]:
    """One turn of n calls, answered by one content where text comes before every response."""
    keys = [f"k{i}" for i in range(n)]
    parts = [p for k in keys for p in (_text(f"w{k}"), _answer("gemini", k, f"r{k}"))]
    return [GO, _msg("gemini", "model", [_call("gemini", k, k) for k in keys]), _user(parts)]


@pytest.mark.parametrize("build", [_mixed_turns, _one_content], ids=["turns", "one-content"])
def test_splitting_costs_the_same_per_message(build: Any) -> None:
    small, large = _work(build(250)), _work(build(2_000))
    assert small * 8 * 0.75 <= large <= small * 8 * 1.25, (small, large)
    fixed, _ = history.repair(build(2_000))
    assert not history.check(fixed).rejected and not any(_mixes(m) for m in fixed)
