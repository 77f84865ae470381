"""Gemini: contents without a role, model contents in a row, and responses answering nothing beside text.

1. ``roleless-as-user``: the API takes a content without a ``role`` as the user's
   (microsoft/semantic-kernel#13262, fixed in #13288 by dropping the role of a model message so
   Gemini reads it as user input; google-gemini/deprecated-generative-ai-android#67 makes ``user``
   the SDK's default, the API's own). So check and repair read one as a user content
   (``results-beside-text``, ``user-after-user``, merging), but one making function calls as the
   model's (only the model makes calls), and keep it without a role; one whose calls all go is
   written with the role ``model`` it was read in (``named-model-role``).
2. Two ``model`` contents in a row are ``assistant-after-assistant``: Gemini wants user and model to
   alternate (NousResearch/hermes-agent#55623 merges model contents in a row too), and a model
   content making calls right after another is a 400 ("function call turn comes immediately after a
   user turn or after a function response turn", continuedev/continue#11805, which merges them).
   Repair merges the run into one model content, parts in order, its calls one turn, as Converse's.
3. Responses beside the user's text that answer no call are dropped, each named by a
   ``dropped-orphan`` change, as an orphan is anywhere else; none is left to keep apart from the
   text, so no placeholder model content is written.

Each test of 1 and 2 fails before hist40; those of 3 pin the behaviour hist40 found consistent.
Random histories are seeded; work is counted, never timed."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from typing import Any

import pytest

from fsm import history
from fsm.errors import LocalProtocolError
from tests.test_hist38 import BETWEEN, POLICIES, _answer, _call, _findings, _kinds, _text
from tests.test_hostile_audit30 import _work

PICTURE = {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}


def _user(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "user", "parts": parts}


def _model(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "model", "parts": parts}


def _bare(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """A content without a role."""
    return {"parts": parts}


GO = _user([_text("go")])
PLACEHOLDER_MODEL = _model([_text(BETWEEN)])


def _clean(fixed: list[dict[str, Any]], policy: history.RepairPolicy | None = None) -> None:
    assert history.check(fixed, "gemini").findings == ()
    assert history.repair(fixed, policy, "gemini") == (fixed, [])


# -- 1. a content without a role is the user's --------------------------------------------------------------------


@pytest.mark.parametrize("other", [_text("and the weather?"), PICTURE], ids=["text", "inline-data"])
def test_a_roleless_content_of_responses_and_other_parts_is_results_beside_text(other: dict[str, Any]) -> None:
    calls = _model([_call("gemini", "a", "A"), _call("gemini", "b", "B")])
    ra, rb = _answer("gemini", "a", "ra"), _answer("gemini", "b", "rb")
    messages = [GO, calls, _bare([ra, other, rb])]
    assert _findings(messages) == [("results-beside-text", "", 3)]  # before: no finding at all
    for policy in POLICIES:
        fixed, changes = history.repair(messages, policy)
        assert fixed == [GO, calls, _bare([ra, rb]), PLACEHOLDER_MODEL, _bare([other])]  # no role invented
        assert Counter(kind for kind, _ in _kinds(changes)) == {"moved-result": 1, "placeholder-model-turn": 1}
        _clean(fixed, policy)


def test_roleless_and_user_contents_in_a_row_are_user_after_user_and_merge() -> None:
    calls = _model([_call("gemini", "a", "A")])
    ra = _answer("gemini", "a", "ra")
    messages = [_bare([_text("hi")]), _user([_text("go")]), calls, _bare([ra]), _user([_answer("gemini", "b", "x")])]
    found = _findings(messages)
    assert found[:2] == [("user-after-user", "", 2), ("user-after-user", "", 5)], found
    fixed, changes = history.repair(messages)
    assert fixed == [_bare([_text("hi"), _text("go")]), calls, _bare([ra])]  # the first keeps its own shape
    assert ("dropped-orphan", 5) in _kinds(changes) and ("merged-messages", 2) in _kinds(changes)
    _clean(fixed)


def test_a_roleless_content_making_calls_is_the_models() -> None:
    call = _call("gemini", "a", "A")
    ra = _answer("gemini", "a", "ra")
    assert _findings([GO, _bare([call]), _user([ra])]) == []  # read as before: the model's calls, answered
    messages = [GO, _model([_text("let me see")]), _bare([call]), _user([ra])]
    assert _findings(messages) == [("assistant-after-assistant", "", 3)]
    fixed, changes = history.repair(messages)
    assert fixed == [GO, _model([_text("let me see"), call]), _user([ra])]
    assert _kinds(changes) == [("merged-messages", 3)]
    _clean(fixed)


def test_a_roleless_content_left_without_its_calls_is_written_as_the_models() -> None:
    # drop-call takes its only call: text alone and no role would read as the user's
    messages = [GO, _bare([_text("checking"), _call("gemini", "a", "A")]), _user([_text("never mind")])]
    fixed, changes = history.repair(messages, POLICIES[1])
    assert fixed == [GO, _model([_text("checking")]), _user([_text("never mind")])]
    assert _kinds(changes) == [("dropped-call", 2), ("named-model-role", 2)]
    assert "read as the model's" in changes[1].detail
    _clean(fixed, POLICIES[1])


def test_one_roleless_content_alone_is_still_fine() -> None:
    assert _findings([_bare([_text("hi")])]) == []


# -- 2. model contents in a row -----------------------------------------------------------------------------------


def test_the_models_text_then_its_calls_in_another_content_are_reported_and_merged() -> None:
    calls = _model([_call("gemini", "a", "A"), _call("gemini", "b", "B")])
    answers = _user([_answer("gemini", "a", "ra"), _answer("gemini", "b", "rb")])
    messages = [GO, _model([_text("thinking")]), calls, answers]
    report = history.check(messages)
    assert _findings(messages) == [("assistant-after-assistant", "", 3)] and report.rejected
    assert "model content" in report.findings[0].detail and "alternate" in report.findings[0].detail
    fixed, changes = history.repair(messages)
    assert fixed == [GO, _model([_text("thinking"), *calls["parts"]]), answers]
    assert _kinds(changes) == [("merged-messages", 3)] and "model" in changes[0].detail
    _clean(fixed)


def test_calls_then_the_models_text_are_one_turn_and_no_result_is_lost() -> None:
    # Before: the text content closed the turn, the call dangled and got a placeholder, and its real
    # response, read as answering nothing, was dropped.
    call, ra = _call("gemini", "a", "A"), _answer("gemini", "a", "ra")
    messages = [GO, _model([call]), _model([_text("waiting")]), _user([ra])]
    assert _findings(messages) == [("assistant-after-assistant", "", 3)]
    for policy in POLICIES:
        fixed, changes = history.repair(messages, policy)
        assert fixed == [GO, _model([call, _text("waiting")]), _user([ra])]
        assert _kinds(changes) == [("merged-messages", 3)]
        _clean(fixed, policy)


def test_calls_over_two_model_contents_are_one_turn_their_signatures_on_their_parts() -> None:
    a = {**_call("gemini", "a", "A"), "thoughtSignature": "S1"}
    b = {**_call("gemini", "b", "B"), "thoughtSignature": "S2"}
    messages = [GO, _model([a]), _model([b]), _user([_answer("gemini", "b", "rb")])]
    assert _findings(messages) == [("assistant-after-assistant", "", 3), ("dangling", "a", 2)]
    fixed, changes = history.repair(messages, POLICIES[1])  # a signed call keeps its placeholder
    placeholder = {"functionResponse": {"id": "a", "name": "f", "response": {"error": POLICIES[1].placeholder}}}
    assert fixed == [GO, _model([a, b]), _user([_answer("gemini", "b", "rb"), placeholder])]
    assert Counter(kind for kind, _ in _kinds(changes)) == {"merged-messages": 1, "placeholder-result": 1}
    _clean(fixed, POLICIES[1])


def test_a_run_of_model_text_merges_into_one() -> None:
    messages = [GO, _model([_text("a")]), _model([_text("b")]), _model([_text("c")]), _user([_text("ok")])]
    assert [kind for kind, _, _ in _findings(messages)] == ["assistant-after-assistant"] * 2
    fixed, _ = history.repair(messages)
    assert fixed == [GO, _model([_text("a"), _text("b"), _text("c")]), _user([_text("ok")])]
    _clean(fixed)


def test_a_response_the_model_sent_after_its_calls_still_goes_to_the_user() -> None:
    call, ra = _call("gemini", "a", "A"), _answer("gemini", "a", "ra")
    messages = [GO, _model([call]), _model([ra, _text("so")])]
    assert _findings(messages) == [("assistant-after-assistant", "", 3), ("misplaced-result", "a", 3)]
    fixed, _ = history.repair(messages)
    assert fixed == [GO, _model([call]), _user([ra]), _model([_text("so")])]
    _clean(fixed)


def test_converse_assistant_after_assistant_is_unchanged() -> None:
    go = {"role": "user", "content": [_text("go")]}
    messages = [go, {"role": "assistant", "content": [_text("x")]}, {"role": "assistant", "content": [_text("y")]}]
    (finding,) = history.check(messages, "bedrock").findings
    assert (finding.kind, finding.message) == (history.Kind.ASSISTANT_AFTER_ASSISTANT, 3)
    assert "Converse" in finding.detail and "model" not in finding.detail


# -- 3. responses answering nothing beside the user's text -------------------------------------------------------


@pytest.mark.parametrize("key", ["z", None], ids=["id", "no-id"])
def test_responses_answering_nothing_beside_text_are_each_named_as_dropped(key: str | None) -> None:
    stray = [_answer("gemini", key, "r1"), _answer("gemini", key, "r2")]
    for content in (_user, _bare):
        messages = [GO, _model([_text("hm")]), content([stray[0], _text("and?"), stray[1]])]
        assert [kind for kind, _, _ in _findings(messages)] == ["results-beside-text", "orphan", "orphan"]
        fixed, changes = history.repair(messages)
        assert fixed == [GO, _model([_text("hm")]), content([_text("and?")])]  # no placeholder model content
        named = "z" if key else None
        assert [(c.kind, c.message) for c in changes] == [("dropped-orphan", 3)] * 2
        assert all(c.id == (named or f"f#{n}") for n, c in enumerate(changes, 1))
        _clean(fixed)


def test_answers_kept_apart_from_the_text_and_strays_beside_them_named_as_dropped() -> None:
    calls = _model([_call("gemini", "a", "A")])
    ra, stray = _answer("gemini", "a", "ra"), _answer("gemini", "q", "rq")
    messages = [GO, calls, _user([stray, _text("look"), ra, PICTURE])]
    fixed, changes = history.repair(messages)
    assert fixed == [GO, calls, _user([ra]), PLACEHOLDER_MODEL, _user([_text("look"), PICTURE])]
    assert ("dropped-orphan", 3) in _kinds(changes) and [c.id for c in changes if c.kind == "dropped-orphan"] == ["q"]
    _clean(fixed)


# -- property: random Gemini histories ----------------------------------------------------------------------------


def _role(content: dict[str, Any]) -> Any:
    """The role a content is read in (roleless-as-user)."""
    role = content.get("role")
    if role is None:
        return "model" if any("functionCall" in part for part in content.get("parts") or ()) else "user"
    return role


def _tags(content: dict[str, Any]) -> list[Any]:
    return [p["functionResponse"]["response"].get("tag") for p in content.get("parts") or () if "functionResponse" in p]


def _any_gemini(rng: random.Random) -> list[dict[str, Any]]:
    """Up to 9 contents of the user's, the model's or none, of text, inline data, calls (not the
    user's) and responses under three ids or none, each response tagged."""
    serial = itertools.count()
    messages = []
    for _ in range(rng.randint(1, 9)):
        role = rng.choice(["user", "model", None, "user", "model"])
        calling = role != "user" and rng.random() < 0.5
        parts: list[dict[str, Any]] = []
        for _ in range(rng.randint(0 if rng.random() < 0.05 else 1, 4)):
            draw, key = rng.random(), (rng.choice("abc") if rng.random() < 0.8 else None)
            if draw < 0.3:
                parts.append(_text(rng.choice("xy")))
            elif draw < 0.38:
                parts.append(PICTURE)
            elif calling:
                parts.append(_call("gemini", key, "t"))
            else:
                parts.append(_answer("gemini", key, f"r{next(serial)}"))
        messages.append({"parts": parts} if role is None else {"role": role, "parts": parts})
    return messages


def _turns(rng: random.Random) -> tuple[list[dict[str, Any]], set[str]]:
    """Turns of 1 to 4 calls made over 1 to 3 model contents (or one without a role), text among
    them, answered over 1 to 3 contents of the user's or none, text and strays (ids no call has)
    among the responses, some responses missing; the tags of the responses that answer a call."""
    serial = itertools.count()
    messages: list[dict[str, Any]] = [GO]
    answering: set[str] = set()
    for _ in range(rng.randint(1, 4)):
        keys = [f"k{next(serial)}" for _ in range(rng.randint(1, 4))]
        blocks: list[dict[str, Any]] = [_call("gemini", k, "t") for k in keys]
        for _ in range(rng.randint(0, 2)):
            blocks.insert(rng.randint(0, len(blocks)), _text("hm"))
        cuts = sorted(rng.sample(range(1, len(blocks)), min(len(blocks) - 1, rng.randint(0, 2)))) if blocks else []
        for a, b in itertools.pairwise([0, *cuts, len(blocks)]):
            role_less = rng.random() < 0.15 and any("functionCall" in p for p in blocks[a:b])
            messages.append(_bare(blocks[a:b]) if role_less else _model(blocks[a:b]))
        sent = []
        for k in keys:
            if rng.random() < 0.85:
                tag = f"r{next(serial)}"
                answering.add(tag)
                sent.append(_answer("gemini", k, tag))
        sent += [_answer("gemini", f"s{next(serial)}", f"r{next(serial)}") for _ in range(rng.randint(0, 1))]
        rng.shuffle(sent)
        for _ in range(rng.randint(0, 2)):
            sent.insert(rng.randint(0, len(sent)), rng.choice([_text("w"), PICTURE]))
        sent = sent or [_text("nothing")]
        cuts = sorted(rng.sample(range(1, len(sent)), min(len(sent) - 1, rng.randint(0, 2))))
        for a, b in itertools.pairwise([0, *cuts, len(sent)]):
            messages.append(_bare(sent[a:b]) if rng.random() < 0.3 else _user(sent[a:b]))
        messages.append(_model([_text("done")]))
        if rng.random() < 0.5:
            messages.append(_user([_text("more")]))
    return messages, answering


@pytest.mark.parametrize("build", ["turns", "any"])
def test_random_gemini_histories_repair_to_alternating_checked_histories_keeping_each_result(build: str) -> None:
    # Repair's answer checks clean, its roles alternate (a content without one read as check reads
    # it), every response is kept once or named by a drop at its message (and one answering a call
    # is kept), and repair is its own repair.
    seen = Counter[str]()
    for seed in range(400 if build == "turns" else 800):
        rng = random.Random(seed)
        messages, answering = _turns(rng) if build == "turns" else (_any_gemini(rng), set())
        try:
            seen.update(f.kind.value for f in history.check(messages, "gemini").findings)
        except LocalProtocolError:
            continue
        for policy in POLICIES:
            fixed, changes = history.repair(messages, policy, "gemini")
            seen.update(c.kind for c in changes)
            left = [f.kind.value for f in history.check(fixed, "gemini").findings if f.kind.value != "reused"]
            assert not left, (seed, left)
            assert all(_role(a) != _role(b) for a, b in itertools.pairwise(fixed)), seed
            kept = Counter(tag for content in fixed for tag in _tags(content) if tag)
            assert set(kept.values()) <= {1}, seed  # none twice
            assert answering <= set(kept), (seed, answering - set(kept))  # none answering a call lost
            drops = Counter(c.message for c in changes if c.kind in ("dropped-orphan", "dropped-duplicate-result"))
            assert all(c.id for c in changes if c.kind in ("dropped-orphan", "dropped-duplicate-result")), seed
            for at, content in enumerate(messages, 1):
                sent = _tags(content)
                assert sum(kept[tag] for tag in sent) + drops[at] == len(sent), (seed, at)  # kept, or named
            assert history.repair(fixed, policy, "gemini") == (fixed, []), seed
    wanted = ["assistant-after-assistant", "user-after-user", "results-beside-text", "merged-messages"]
    wanted += ["placeholder-model-turn", "dropped-orphan"]
    assert min(seen[kind] for kind in wanted) > 30, seen
    if build == "any":
        assert seen["named-model-role"] > 10, seen


# -- linear work --------------------------------------------------------------------------------------------------


def _model_runs(n: int) -> list[dict[str, Any]]:
    """n turns, each the model's text, its call in a content of its own, the response without a role."""
    messages = [GO]
    for i in range(n):
        messages += [_model([_text("so")]), _model([_call("gemini", f"k{i}", "t")])]
        messages += [_bare([_answer("gemini", f"k{i}", "r"), _text("and")])]
    return messages


def _one_run(n: int) -> list[dict[str, Any]]:
    """n contents without a role of the user's text in a row, then n model contents in a row."""
    return [*(_bare([_text("w")]) for _ in range(n)), *(_model([_text("m")]) for _ in range(n))]


@pytest.mark.parametrize("build", [_model_runs, _one_run], ids=["turns", "one-run"])
def test_reading_and_merging_cost_the_same_per_content(build: Any) -> None:
    small, large = _work(build(250)), _work(build(2_000))
    assert small * 8 * 0.75 <= large <= small * 8 * 1.25, (small, large)
    fixed, _ = history.repair(build(2_000))
    assert not history.check(fixed).rejected
