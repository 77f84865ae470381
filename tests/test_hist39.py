"""Gemini results over user contents in a row, results around text in one answer, Converse
assistant messages in a row.

1. Gemini wants user and model to alternate: a user content right after another is refused
   ("Please ensure that multiturn requests alternate between user and model", HTTP 400, reported in
   NousResearch/hermes-agent#55623), and a turn's function responses go in one content
   (crewAIInc/crewAI#4693: one content per response was a 400 INVALID_ARGUMENT). A turn answered over
   two user contents had its second content's responses read as ``orphan``s, their calls ``dangling``,
   and repair dropped them for placeholders. Now both contents answer the turn; ``check`` reports the
   second (``user-after-user``) and repair merges them (``merged-messages``), as for Converse.
2. A result after text in the user's message answering its turn (``[result A, text, result B]``)
   passed Gemini and Converse unchanged. Anthropic's API takes a turn's results first in its user
   message and the check reports one after text (``result-after-text``), repair moving it before the
   text; Converse hands Claude's turns to that API, and Gemini splits turns at the function-response
   content (vellum-ai/vellum-assistant#39495 saw a 400 from text beside the responses). Both now
   follow Anthropic's rule.
3. Bedrock refuses an assistant message right after another ("A conversation must alternate between
   user and assistant roles", langchain-aws#130); it was not reported, and the first message's calls
   were read as a turn of their own: ``dangling``, their results after the second message ``orphan``s,
   lost by repair. Now the run is one turn (``assistant-after-assistant``) that repair merges.

Each test failed before its fix. Work is counted, never timed."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from typing import Any

import pytest

from fsm import history
from fsm.errors import LocalProtocolError
from tests.test_hist38 import BETWEEN, FIELD, POLICIES, _answer, _answered, _call, _findings, _kinds, _msg, _tag, _text
from tests.test_hostile_audit30 import _work

GO = {"gemini": _msg("gemini", "user", [_text("go")]), "bedrock": _msg("bedrock", "user", [_text("go")])}


def _clean(fixed: list[dict[str, Any]], policy: history.RepairPolicy | None = None) -> None:
    policy = policy or history.RepairPolicy()
    assert history.check(fixed).findings == () and history.repair(fixed, policy) == (fixed, [])


# -- 1. Gemini: a turn's responses over user contents in a row ------------------------------------------------


@pytest.mark.parametrize("key", ["b", None], ids=["ids", "id-less"])
def test_gemini_responses_over_two_user_contents_in_a_row_answer_the_turn_and_merge(key: str | None) -> None:
    a = "a" if key else None
    calls = _msg("gemini", "model", [_call("gemini", a, "A"), _call("gemini", key, "B")])
    first, then = _answer("gemini", a, "ra"), _answer("gemini", key, "rb")
    messages = [GO["gemini"], calls, _msg("gemini", "user", [first]), _msg("gemini", "user", [then])]
    report = history.check(messages)
    assert _findings(messages) == [("user-after-user", "", 4)] and report.rejected  # no orphan, no dangling
    assert "alternate" in report.findings[0].detail
    assert not history.anything_dangling(messages)
    for policy in POLICIES:
        fixed, changes = history.repair(messages, policy)
        assert fixed == [GO["gemini"], calls, _msg("gemini", "user", [first, then])]  # both kept, in order
        assert _kinds(changes) == [("merged-messages", 4)] and "Gemini" in changes[0].detail
        _clean(fixed, policy)


def test_gemini_three_contents_of_responses_in_a_row_make_one_answer() -> None:
    calls = _msg("gemini", "model", [_call("gemini", k, k) for k in "abc"])
    answers = [_msg("gemini", "user", [_answer("gemini", k, f"r{k}")]) for k in "abc"]
    messages = [GO["gemini"], calls, *answers, _msg("gemini", "model", [_text("ok")])]
    assert _findings(messages) == [("user-after-user", "", 4), ("user-after-user", "", 5)]
    fixed, changes = history.repair(messages)
    assert fixed[2] == _msg("gemini", "user", [_answer("gemini", k, f"r{k}") for k in "abc"])
    assert fixed[3:] == messages[5:] and _kinds(changes) == [("merged-messages", 4), ("merged-messages", 5)]
    _clean(fixed)


def test_gemini_user_text_after_the_responses_gets_a_placeholder_model_content_before_it() -> None:
    # The user's next words right after a turn's responses: two user contents Gemini refuses. Merged
    # (hist39), the text sat beside the responses, which Gemini 3 answers with an empty candidate
    # (results-beside-text): since hist39b a placeholder model content goes between them.
    calls = _msg("gemini", "model", [_call("gemini", "a", "A")])
    answer, said = _msg("gemini", "user", [_answer("gemini", "a", "ra")]), _msg("gemini", "user", [_text("and?")])
    messages = [GO["gemini"], calls, answer, said]
    assert _findings(messages) == [("user-after-user", "", 4)]
    fixed, changes = history.repair(messages)
    assert fixed == [GO["gemini"], calls, answer, _msg("gemini", "model", [_text(BETWEEN)]), said]
    assert _kinds(changes) == [("placeholder-model-turn", 4)]
    _clean(fixed)


def test_a_gemini_user_content_making_calls_is_no_user_content_in_a_row() -> None:
    # Its calls go to a model content repair makes after it: the user's responses after it alternate.
    messages = [
        {"role": "user", "parts": [_text("go"), _call("gemini", "a", "A")]},
        {"role": "user", "parts": [_answer("gemini", "a", "ra")]},
    ]
    assert [kind for kind, _, _ in _findings(messages)] == ["misplaced-call"]


# -- 2. results around text in one answer -----------------------------------------------------------------------


def _anthropic(role: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": role, "content": blocks}


@pytest.mark.parametrize("fmt", ["gemini", "bedrock", "anthropic"])
def test_a_result_after_text_in_the_answer_is_reported_and_moved_before_it_as_anthropic_does(fmt: str) -> None:
    if fmt == "anthropic":  # the rule the other two now follow
        calls = _anthropic("assistant", [{"type": "tool_use", "id": k, "name": "f", "input": {}} for k in "ab"])
        ra, rb = ({"type": "tool_result", "tool_use_id": k, "content": f"r{k}"} for k in "ab")
        also, go = {"type": "text", "text": "also"}, _anthropic("user", [{"type": "text", "text": "go"}])
        answer = _anthropic("user", [ra, also, rb])
    else:
        calls = _msg(fmt, "assistant", [_call(fmt, "a", "A"), _call(fmt, "b", "B")])
        ra, rb, also, go = _answer(fmt, "a", "ra"), _answer(fmt, "b", "rb"), _text("also"), GO[fmt]
        answer = _msg(fmt, "user", [ra, also, rb])
    messages = [go, calls, answer]
    report = history.check(messages)
    if fmt == "gemini":  # hist39b: no text beside the responses at all, reported once at the content
        assert _findings(messages) == [("results-beside-text", "", 3)] and report.rejected
        assert "placeholder model content" in report.findings[0].detail
    else:
        assert _findings(messages) == [("result-after-text", "b", 3)] and report.rejected
        assert "first" in report.findings[0].detail
    for policy in POLICIES:
        fixed, changes = history.repair(messages, policy)
        assert fixed[:2] == [go, calls] and fixed[2]["role"] == "user"
        if fmt == "gemini":  # the responses first, in the order sent, in a content of their own
            assert fixed[2:] == _answered(fmt, [ra, rb], [also])
            assert _kinds(changes) == [("moved-result", 3), ("placeholder-model-turn", 3)]
        else:
            assert fixed[2][FIELD.get(fmt, "content")] == [ra, rb, also]  # the results first, in the order sent
            assert _kinds(changes) == [("moved-result", 3)]
        _clean(fixed, policy)


def test_a_converse_cache_point_among_the_results_is_no_text() -> None:
    # A cachePoint block marks where a cached prefix ends: a result after it is not after text.
    calls = _msg("bedrock", "assistant", [_call("bedrock", "a", "A"), _call("bedrock", "b", "B")])
    blocks = [_answer("bedrock", "a", "ra"), {"cachePoint": {"type": "default"}}, _answer("bedrock", "b", "rb")]
    messages = [GO["bedrock"], calls, _msg("bedrock", "user", blocks)]
    assert history.check(messages).findings == () and history.repair(messages) == (messages, [])


@pytest.mark.parametrize("fmt", ["gemini", "bedrock"])
def test_text_before_every_result_goes_after_them_with_the_placeholders(fmt: str) -> None:
    calls = _msg(fmt, "assistant", [_call(fmt, k, k.upper()) for k in "abc"])
    answer = _msg(fmt, "user", [_text("here"), _answer(fmt, "c", "rc"), _text("and"), _answer(fmt, "a", "ra")])
    messages = [GO[fmt], calls, answer]
    late = [("result-after-text", "c", 3), ("result-after-text", "a", 3)]
    beside = [("results-beside-text", "", 3)]  # Gemini (hist39b): once, at the content
    assert _findings(messages) == [*(beside if fmt == "gemini" else late), ("dangling", "b", 2)]
    fixed, changes = history.repair(messages, POLICIES[0])
    got = [_tag(fmt, block) or block.get("text") for m in fixed[2:] for block in m[FIELD[fmt]]]
    ph = fixed[2][FIELD[fmt]][2]
    # results, the placeholder, then the text (Gemini: in a user content of its own after a model one)
    assert got[:2] == ["rc", "ra"] and got[3:] == ([BETWEEN] if fmt == "gemini" else []) + ["here", "and"]
    assert (ph.get("functionResponse") or ph.get("toolResult"))[("id" if fmt == "gemini" else "toolUseId")] == "b"
    apart = {"placeholder-model-turn": 1} if fmt == "gemini" else {}
    assert Counter(kind for kind, _ in _kinds(changes)) == {"moved-result": 2, "placeholder-result": 1, **apart}
    _clean(fixed, POLICIES[0])


@pytest.mark.parametrize("fmt", ["gemini", "bedrock"])
def test_a_result_after_text_in_the_second_message_in_a_row_keeps_the_order_sent(fmt: str) -> None:
    # user [ra]; user [rb]; user [text, rc, text, rd]; user [re]: one answer, the results in the order sent.
    calls = _msg(fmt, "assistant", [_call(fmt, k, k.upper()) for k in "abcde"])
    messages = [
        GO[fmt],
        calls,
        _msg(fmt, "user", [_answer(fmt, "a", "ra")]),
        _msg(fmt, "user", [_answer(fmt, "b", "rb")]),
        _msg(fmt, "user", [_text("t1"), _answer(fmt, "c", "rc"), _text("t2"), _answer(fmt, "d", "rd")]),
        _msg(fmt, "user", [_answer(fmt, "e", "re")]),
    ]
    found = _findings(messages)
    if fmt == "gemini":  # hist39b: rc and rd sit beside text in their content: that finding, once
        assert Counter(kind for kind, _, _ in found) == {
            "user-after-user": 3,
            "results-beside-text": 1,
            "result-after-text": 1,
        }
        assert [key for kind, key, _ in found if kind == "result-after-text"] == ["e"]
    else:
        assert Counter(kind for kind, _, _ in found) == {"user-after-user": 3, "result-after-text": 3}
        assert [key for kind, key, _ in found if kind == "result-after-text"] == ["c", "d", "e"]
    for policy in POLICIES:
        fixed, _ = history.repair(messages, policy)
        results = [_answer(fmt, k, f"r{k}") for k in "abcde"]
        assert fixed == [GO[fmt], calls, *_answered(fmt, results, [_text("t1"), _text("t2")])]
        _clean(fixed, policy)


@pytest.mark.parametrize("fmt", ["gemini", "bedrock"])
def test_results_in_every_user_message_up_to_the_models_next_answer_the_turn(fmt: str) -> None:
    # user [ra]; user [text]; user [rb]; user [rc]: rc was an orphan, c dangling (the turn ended at rb).
    calls = _msg(fmt, "assistant", [_call(fmt, k, k.upper()) for k in "abc"])
    messages = [GO[fmt], calls, *(_msg(fmt, "user", [b]) for b in (_answer(fmt, "a", "ra"), _text("hm")))]
    messages += [_msg(fmt, "user", [_answer(fmt, k, f"r{k}")]) for k in "bc"]
    assert _findings(messages) == [
        *(("user-after-user", "", n) for n in (4, 5, 6)),
        ("result-after-text", "b", 5),
        ("result-after-text", "c", 6),
    ]
    fixed, _ = history.repair(messages)
    assert fixed == [GO[fmt], calls, *_answered(fmt, [_answer(fmt, k, f"r{k}") for k in "abc"], [_text("hm")])]
    _clean(fixed)


@pytest.mark.parametrize("fmt", ["gemini", "bedrock"])
def test_a_late_result_that_goes_up_with_those_sent_as_the_model_is_moved_once(fmt: str) -> None:
    # The model's content after the calls holds a result and text: its result goes to a new user
    # message right after the calls, and the user's late result after the text goes with it. The
    # late rule moved it a second time, into its own message: a result sent twice (duplicate-result).
    messages = [
        GO[fmt],
        _msg(fmt, "assistant", [_call(fmt, "b", "B"), _call(fmt, "c", "C")]),
        _msg(fmt, "assistant", [_text("x"), _answer(fmt, "b", "rb"), _text("y")]),
        _msg(fmt, "user", [_text("z"), _answer(fmt, "c", "rc")]),
    ]
    repeated = [("assistant-after-assistant", "", 3)]  # Gemini's model role too since hist40
    if fmt == "bedrock":
        assert _findings(messages) == [*repeated, ("misplaced-result", "b", 3), ("result-after-text", "c", 4)]
    else:  # hist39b: read with the roles, as user-after-user is, before the turn's results are paired
        assert _findings(messages) == [*repeated, ("results-beside-text", "", 4), ("misplaced-result", "b", 3)]
    fixed, changes = history.repair(messages)
    got = [[_tag(fmt, b) or b.get("text") for b in m[FIELD[fmt]]] for m in fixed[2:]]
    assert got == [["rb", "rc"], ["x", "y"], ["z"]] and [m["role"] for m in fixed[2:]] == [
        "user",
        fixed[1]["role"],
        "user",
    ]
    assert _kinds(changes) == [("moved-misplaced-result", 3), ("moved-result", 4)]
    _clean(fixed)


# -- 3. Converse: assistant after assistant -------------------------------------------------------------------


def test_converse_assistant_messages_in_a_row_are_one_turn_merged_by_repair() -> None:
    text_first = _msg("bedrock", "assistant", [_text("let me look")])
    first = _msg("bedrock", "assistant", [_call("bedrock", "a", "A")])
    second = _msg("bedrock", "assistant", [_call("bedrock", "b", "B")])
    answer = _msg("bedrock", "user", [_answer("bedrock", "b", "rb"), _answer("bedrock", "a", "ra")])
    messages = [GO["bedrock"], text_first, first, second, answer]
    report = history.check(messages)
    assert _findings(messages) == [("assistant-after-assistant", "", 3), ("assistant-after-assistant", "", 4)]
    assert report.rejected and all("alternate" in f.detail for f in report.findings)
    assert not history.anything_dangling(messages)
    for policy in POLICIES:
        fixed, changes = history.repair(messages, policy)
        blocks = [_text("let me look"), _call("bedrock", "a", "A"), _call("bedrock", "b", "B")]
        assert fixed == [GO["bedrock"], _msg("bedrock", "assistant", blocks), answer]  # every result kept
        assert _kinds(changes) == [("merged-messages", 3), ("merged-messages", 4)]
        assert "alternate" in changes[0].detail
        _clean(fixed, policy)
    assert messages[1] == _msg("bedrock", "assistant", [_text("let me look")])  # the input is never mutated


def test_converse_an_id_used_in_both_messages_of_a_run_is_renamed_with_its_result() -> None:
    messages = [
        GO["bedrock"],
        _msg("bedrock", "assistant", [_call("bedrock", "a", "A")]),
        _msg("bedrock", "assistant", [_call("bedrock", "a", "B")]),
        _msg("bedrock", "user", [_answer("bedrock", "a", "r1"), _answer("bedrock", "a", "r2")]),
    ]
    kinds = [kind for kind, _, _ in _findings(messages)]
    assert kinds == ["assistant-after-assistant", "duplicate-call", "duplicate-result"]
    fixed, changes = history.repair(messages)
    blocks = [_call("bedrock", "a", "A"), _call("bedrock", "a_d2", "B")]
    assert fixed[1] == _msg("bedrock", "assistant", blocks)
    assert fixed[2] == _msg("bedrock", "user", [_answer("bedrock", "a", "r1"), _answer("bedrock", "a_d2", "r2")])
    assert _kinds(changes) == [("renamed-call", 3), ("merged-messages", 3), ("renamed-result", 4)]
    _clean(fixed)


def test_converse_a_call_of_the_run_no_result_answers_gets_a_placeholder_or_is_dropped() -> None:
    first = _msg("bedrock", "assistant", [_call("bedrock", "a", "A")])
    second = _msg("bedrock", "assistant", [_call("bedrock", "b", "B")])
    messages = [GO["bedrock"], first, second, _msg("bedrock", "user", [_answer("bedrock", "a", "ra")])]
    assert _findings(messages) == [("assistant-after-assistant", "", 3), ("dangling", "b", 3)]
    fixed, changes = history.repair(messages, POLICIES[0])
    assert _kinds(changes) == [("placeholder-result", 3), ("merged-messages", 3)]
    assert [_tag("bedrock", b) for b in fixed[2]["content"]] == ["ra", PH_TEXT]
    _clean(fixed, POLICIES[0])
    dropped, changes = history.repair(messages, POLICIES[1])
    assert dropped == [GO["bedrock"], first, messages[3]]
    assert _kinds(changes) == [("dropped-call", 3), ("dropped-empty-message", 3)]
    _clean(dropped, POLICIES[1])


PH_TEXT = POLICIES[0].placeholder


def test_converse_assistant_text_in_a_row_is_reported_and_merged() -> None:
    messages = [
        {"role": "user", "content": [{"text": "hi"}]},
        {"role": "assistant", "content": "one"},
        {"role": "assistant", "content": [{"text": "two"}]},
    ]
    assert _findings(messages, "bedrock") == [("assistant-after-assistant", "", 3)]
    fixed, changes = history.repair(messages, format="bedrock")
    assert fixed == [messages[0], {"role": "assistant", "content": [{"text": "one"}, {"text": "two"}]}]
    assert _kinds(changes) == [("merged-messages", 3)]
    assert history.check(fixed, "bedrock").findings == () and history.repair(fixed, format="bedrock") == (fixed, [])


# -- property: random runs, splits and text ---------------------------------------------------------------------


def _history(fmt: str, rng: random.Random) -> tuple[list[dict[str, Any]], list[list[str]]]:
    """Turns of 1 to 5 calls (Converse: over 1 to 3 assistant messages in a row, text now and then
    first) answered, some results missing, in call order or shuffled, over 1 to 3 user messages in a
    row with text at random places among the results (and now and then a message of text alone
    between them), then the model's reply. Each turn's results in the order sent."""
    serial = iter(range(1_000_000))
    messages = [_msg(fmt, "user", [_text("go")])]
    turns: list[list[str]] = []
    for turn in range(rng.randint(1, 4)):
        keys = [f"k{next(serial)}" for _ in range(rng.randint(1, 5))]
        blocks = [_call(fmt, k, f"t{turn}.{j}") for j, k in enumerate(keys)]
        cuts = (
            sorted(rng.sample(range(1, len(blocks)), min(len(blocks) - 1, rng.randint(0, 2))))
            if fmt == "bedrock"
            else []
        )
        if fmt == "bedrock" and rng.random() < 0.3:  # the model's text, then its calls in another message
            messages.append(_msg(fmt, "assistant", [_text("thinking")]))
        messages += [_msg(fmt, "assistant", blocks[a:b]) for a, b in itertools.pairwise([0, *cuts, len(blocks)])]
        sent = [(k, f"r{next(serial)}") for k in keys if rng.random() < 0.85]
        if rng.random() < 0.5:
            rng.shuffle(sent)
        turns.append([r for _, r in sent])
        items: list[dict[str, Any]] = [_answer(fmt, k, r) for k, r in sent]
        for _ in range(rng.randint(0, 3)):
            items.insert(rng.randint(0, len(items)), _text(f"w{next(serial)}"))
        if not items:
            items = [_text("nothing")]
        cuts = sorted(rng.sample(range(1, len(items)), min(len(items) - 1, rng.randint(0, 2))))
        parts = [items[a:b] for a, b in itertools.pairwise([0, *cuts, len(items)])]
        if len(parts) > 1 and rng.random() < 0.3:  # the user's text alone between two of them
            parts.insert(rng.randint(1, len(parts) - 1), [_text("hm")])
        messages += [_msg(fmt, "user", part) for part in parts]
        messages.append(_msg(fmt, "assistant", [_text("ok")]))
    return messages, turns


@pytest.mark.parametrize("fmt", ["gemini", "bedrock"])
def test_random_runs_and_text_never_lose_a_result_and_put_results_first(fmt: str) -> None:
    counted = Counter[str]()
    for seed in range(300):
        messages, turns = _history(fmt, random.Random(seed))
        for finding in history.check(messages).findings:
            counted[finding.kind.value] += 1
        for policy in POLICIES:
            fixed, changes = history.repair(messages, policy)
            _clean(fixed, policy)
            tags = [t for m in fixed for t in (_tag(fmt, b) for b in m[FIELD[fmt]]) if t and t != PH_TEXT]
            assert Counter(tags) == Counter(r for turn in turns for r in turn), seed  # each kept, once
            for a, b in itertools.pairwise(
                fixed
            ):  # the roles alternate (Gemini: model contents may follow one another)
                assert not (a["role"] == b["role"] and (fmt == "bedrock" or a["role"] == "user")), seed
            for at, m in enumerate(fixed):
                calls = [b for b in m[FIELD[fmt]] if "functionCall" in b or "toolUse" in b]
                if not calls:
                    continue
                turn = _turn(fmt, calls[0])
                blocks = fixed[at + 1][FIELD[fmt]]
                kinds = ["text" if "text" in b else "result" for b in blocks]
                assert kinds == sorted(kinds, key=lambda k: k == "text"), seed  # results first, then the text
                got = [_tag(fmt, b) for b in blocks]
                assert [t for t in got if t and t != PH_TEXT] == turns[turn], seed  # in the order sent
                assert sum("functionResponse" in b or "toolResult" in b for b in blocks) == len(calls), seed
            counted["moved"] += sum(c.kind == "moved-result" for c in changes)
    assert counted["result-after-text"] > 100 and counted["user-after-user"] > 100 and counted["moved"] > 200, counted
    if fmt == "bedrock":
        assert counted["assistant-after-assistant"] > 100, counted


def _turn(fmt: str, block: dict[str, Any]) -> int:
    call = block.get("functionCall") or block["toolUse"]
    return int(call.get("args", call.get("input"))["tag"][1:].split(".")[0])


def _any_history(fmt: str, rng: random.Random) -> list[dict[str, Any]]:
    """Up to 9 messages of random roles (Gemini: ``function`` too) holding 0 to 4 blocks: text, calls
    (mostly the model's) and results under three ids (Gemini: now and then none)."""
    messages = []
    for _ in range(rng.randint(1, 9)):
        role = rng.choice(
            ["user", "assistant", "user", "assistant", "user", *(["function"] if fmt == "gemini" else [])]
        )
        blocks = []
        for _ in range(rng.randint(0, 4)):
            draw, key = rng.random(), rng.choice("abc")
            key_or_none = key if fmt == "bedrock" or rng.random() < 0.8 else None
            if draw < 0.35:
                blocks.append(_text(rng.choice(["x", "y"])))
            elif draw < 0.65 and (role == "assistant" or rng.random() < 0.1):
                blocks.append(_call(fmt, key_or_none, key))
            else:
                blocks.append(_answer(fmt, key_or_none, key))
        messages.append(_msg(fmt, role, blocks))
    return messages


@pytest.mark.parametrize("fmt", ["gemini", "bedrock"])
def test_random_roles_and_blocks_repair_to_a_history_check_accepts(fmt: str) -> None:
    # Runs of every role, results in the model's role, calls in the user's, text anywhere: repair's
    # answer checks clean (but for roles only the caller can name) and is its own repair.
    seen = Counter[str]()
    for seed in range(1_500):
        messages = _any_history(fmt, random.Random(seed))
        try:
            seen.update(f.kind.value for f in history.check(messages, fmt).findings)
        except LocalProtocolError:
            continue  # a message both making calls and answering them
        for policy in POLICIES:
            fixed, _ = history.repair(messages, policy, fmt)
            left = {f.kind.value for f in history.check(fixed, fmt).findings} - {"reused", "unknown-role"}
            assert not left, (seed, left)
            again, more = history.repair(fixed, policy, fmt)
            assert again == fixed and {c.kind for c in more} <= {"kept-unknown-role"}, seed
    assert min(seen["user-after-user"], seen["result-after-text"], seen["misplaced-result"]) > 10, seen
    assert fmt == "gemini" or seen["assistant-after-assistant"] > 100, seen


# -- linear work ------------------------------------------------------------------------------------------------


def _many_turns(fmt: str, n: int) -> list[dict[str, Any]]:
    messages = [_msg(fmt, "user", [_text("go")])]
    for _ in range(n):  # ids used again by each turn, after their calls were answered
        if fmt == "bedrock":
            messages += [_msg(fmt, "assistant", [_call(fmt, "a", "A")]), _msg(fmt, "assistant", [_call(fmt, "b", "B")])]
        else:
            messages.append(_msg(fmt, "assistant", [_call(fmt, "a", "A"), _call(fmt, "b", "B")]))
        messages += [
            _msg(fmt, "user", [_answer(fmt, "a", "ra")]),
            _msg(fmt, "user", [_text("also"), _answer(fmt, "b", "rb")]),
            _msg(fmt, "assistant", [_text("so")]),
        ]
    return messages


def _one_turn(fmt: str, n: int) -> list[dict[str, Any]]:
    keys = [f"k{i}" for i in range(n)]
    if fmt == "bedrock":  # its calls over n assistant messages in a row
        calls = [_msg(fmt, "assistant", [_call(fmt, k, k)]) for k in keys]
    else:
        calls = [_msg(fmt, "assistant", [_call(fmt, k, k) for k in keys])]
    answers = [_msg(fmt, "user", [_text(f"w{k}"), _answer(fmt, k, f"r{k}")]) for k in keys[1:]]  # each after text
    return [_msg(fmt, "user", [_text("go")]), *calls, _msg(fmt, "user", [_answer(fmt, keys[0], "first")]), *answers]


@pytest.mark.parametrize("fmt", ["gemini", "bedrock"])
@pytest.mark.parametrize("build", [_many_turns, _one_turn], ids=["turns", "one-turn"])
def test_runs_and_late_results_cost_the_same_per_message(fmt: str, build: Any) -> None:
    # 1x and 8x the turns (or one turn's calls and results): the work grows by 8, give or take a quarter
    small, large = _work(build(fmt, 250)), _work(build(fmt, 2_000))
    assert small * 8 * 0.75 <= large <= small * 8 * 1.25, (small, large)
    fixed, _ = history.repair(build(fmt, 2_000))
    assert not history.check(fixed).rejected  # the ids each turn uses again are only reported (reused)
