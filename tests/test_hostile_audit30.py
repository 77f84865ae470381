"""Hostile audit 30: roles in fsm.history. A tool result sent in the model's own role, a role that
is no string or none the format has, and a Claude server id used twice in one assistant run.

Each test failed before its fix; the seeded property tests take the API's own reading of a history
as the oracle (a results message is the user's; Anthropic combines messages of one role in a row,
Converse wants them to alternate). Work is counted, never timed."""

from __future__ import annotations

import io
import itertools
import json
import random
import sys
from collections import Counter
from typing import Any

import pytest

from fsm import history
from fsm.cli import main
from fsm.errors import LocalProtocolError
from tests.test_hostile_audit29 import _answer, _refused, _said, _search, _turns, _use

PH = "PLACEHOLDER"
POLICIES = [history.RepairPolicy(placeholder=PH), history.RepairPolicy("drop-call", PH)]


def _c_use(call_id: str, tag: str = "") -> dict[str, Any]:
    return {"toolUse": {"toolUseId": call_id, "name": "f", "input": {"tag": tag}}}


def _c_answer(call_id: str, tag: str = "r") -> dict[str, Any]:
    return {"toolResult": {"toolUseId": call_id, "content": [{"text": tag}]}}


def _tc(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}


def _findings(messages: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(f.kind.value, f.id, f.message) for f in history.check(messages).findings]


def _kinds(changes: list[history.Change]) -> list[tuple[str, int]]:
    return [(c.kind, c.message) for c in changes]


# -- a result sent in the model's role ------------------------------------------------------------------

ASK_A: dict[str, Any] = {"role": "user", "content": "Weather?"}


def test_an_anthropic_result_in_an_assistant_message_is_reported_and_moved_into_the_next_user_turn() -> None:
    # The Messages API combines the two assistant messages into one turn holding a tool_result, which
    # it refuses; the check read the result as answering the call before it and found nothing.
    messages = [
        ASK_A,
        {"role": "assistant", "content": [_use("a", "c1")]},
        {"role": "assistant", "content": [_answer("a", "sunny"), _said("so")]},
        {"role": "user", "content": "thanks"},
    ]
    assert _findings(messages) == [("misplaced-result", "a", 3)]
    fixed, changes = history.repair(messages)
    assert _kinds(changes) == [("moved-misplaced-result", 3)]
    assert fixed == [
        ASK_A,
        messages[1],
        {"role": "assistant", "content": [_said("so")]},
        {"role": "user", "content": [_answer("a", "sunny"), _said("thanks")]},
    ]
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


def test_an_anthropic_result_sent_as_the_assistant_last_gets_a_new_user_message() -> None:
    messages = [ASK_A, {"role": "assistant", "content": [_use("a")]}, {"role": "assistant", "content": [_answer("a")]}]
    fixed, changes = history.repair(messages)
    assert fixed == [ASK_A, messages[1], {"role": "user", "content": [_answer("a")]}]
    assert _kinds(changes) == [("moved-misplaced-result", 3), ("dropped-empty-message", 3)]
    assert history.check(fixed).findings == ()


@pytest.mark.parametrize("policy", POLICIES, ids=["placeholder", "drop-call"])
def test_an_anthropic_turn_answered_partly_as_the_assistant_keeps_the_users_results(
    policy: history.RepairPolicy,
) -> None:
    # The results split between an assistant message and the user message after it: the turn closed
    # at the first, so the user's result was an orphan, dropped, and its call got a placeholder.
    messages = [
        ASK_A,
        {"role": "assistant", "content": [_use("a"), _use("a"), _use("b")]},
        {"role": "assistant", "content": [_answer("a", "first")]},
        {"role": "user", "content": [_answer("a", "second"), _answer("b", "third"), _said("go on")]},
    ]
    assert _findings(messages) == [
        ("duplicate-call", "a", 2),
        ("misplaced-result", "a", 3),
        ("duplicate-result", "a", 4),
    ]
    fixed, changes = history.repair(messages, policy)
    assert fixed[1:] == [
        {"role": "assistant", "content": [_use("a"), _use("a_d2"), _use("b")]},
        {
            "role": "user",
            "content": [_answer("a", "first"), _answer("a_d2", "second"), _answer("b", "third"), _said("go on")],
        },
    ]
    assert ("moved-misplaced-result", 3) in _kinds(changes) and "placeholder-result" not in str(changes)
    assert history.check(fixed).findings == () and history.repair(fixed, policy) == (fixed, [])


def test_a_converse_result_as_the_assistant_goes_to_a_user_message_right_after_the_calls() -> None:
    # Converse answers a turn in the one message after it and wants roles to alternate: the result
    # goes into a user message between the call and the model's text, not after that text.
    messages = [
        {"role": "user", "content": [{"text": "Weather?"}]},
        {"role": "assistant", "content": [_c_use("a")]},
        {"role": "assistant", "content": [_c_answer("a", "sunny"), {"text": "so"}]},
        {"role": "user", "content": [{"text": "thanks"}]},
    ]
    # assistant after assistant, reported since hist39; the result moved between them, they alternate
    assert _findings(messages) == [("assistant-after-assistant", "", 3), ("misplaced-result", "a", 3)]
    fixed, changes = history.repair(messages)
    assert fixed == [
        messages[0],
        messages[1],
        {"role": "user", "content": [_c_answer("a", "sunny")]},
        {"role": "assistant", "content": [{"text": "so"}]},
        messages[3],
    ]
    assert _kinds(changes) == [("moved-misplaced-result", 3)]
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


@pytest.mark.parametrize("said", [[], [{"text": "so"}]], ids=["results-alone", "with-text"])
def test_a_converse_turn_answered_partly_as_the_assistant_keeps_the_users_results(said: list[Any]) -> None:
    # The rest of the turn's results in the user message after: read as orphans (Converse answers a
    # turn in one message), dropped, placeholders in their place. They join the moved ones: into that
    # user message when nothing else is left of the model's, else up, right after the calls.
    messages = [
        {"role": "user", "content": [{"text": "Weather?"}]},
        {"role": "assistant", "content": [_c_use("a"), _c_use("b")]},
        {"role": "assistant", "content": [_c_answer("a", "first"), *said]},
        {"role": "user", "content": [_c_answer("b", "second"), {"text": "thanks"}]},
    ]
    assert _findings(messages) == [("assistant-after-assistant", "", 3), ("misplaced-result", "a", 3)]
    fixed, changes = history.repair(messages)
    answers = [_c_answer("a", "first"), _c_answer("b", "second")]
    if said:
        assert fixed[2:] == [
            {"role": "user", "content": answers},
            {"role": "assistant", "content": said},
            {"role": "user", "content": [{"text": "thanks"}]},
        ]
        assert _kinds(changes) == [("moved-misplaced-result", 3), ("moved-result", 4)]
    else:
        assert fixed[2:] == [{"role": "user", "content": [*answers, {"text": "thanks"}]}]
    assert not _converse_refused(fixed) and history.check(fixed).findings == ()


def test_a_gemini_response_in_a_model_content_goes_to_a_user_content() -> None:
    call = {"functionCall": {"name": "f", "args": {}}}
    response = {"functionResponse": {"name": "f", "response": {"ok": 1}}}
    messages = [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [call]},
        {"role": "model", "parts": [response]},
    ]
    # two model contents in a row, as Converse's two assistant messages are (hist40)
    assert _findings(messages) == [("assistant-after-assistant", "", 3), ("misplaced-result", "f#1", 3)]
    fixed, _ = history.repair(messages)
    assert fixed == [*messages[:2], {"role": "user", "parts": [response]}]
    assert history.check(fixed).findings == ()


def test_an_openai_assistant_message_carrying_a_tool_call_id_is_the_result_it_names() -> None:
    # Read as an assistant reply, it closed the turn: the call was dangling and got a placeholder
    # before the real result, which stayed as an assistant message the API refuses to pair.
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [_tc("a")]},
        {"role": "assistant", "tool_call_id": "a", "content": "sunny"},
    ]
    assert _findings(messages) == [("misplaced-result", "a", 3)]
    fixed, changes = history.repair(messages)
    assert fixed[2] == {"role": "tool", "tool_call_id": "a", "content": "sunny"} and len(fixed) == 3
    assert _kinds(changes) == [("moved-misplaced-result", 3)]
    assert history.check(fixed).findings == ()


# -- a call made in the user's role -------------------------------------------------------------------------


def test_an_anthropic_user_message_making_a_call_gives_it_to_an_assistant_message_after_it() -> None:
    # Only the assistant makes tool_use blocks; the check read the user's as a turn and found nothing.
    messages = [
        {"role": "user", "content": [_said("look"), _use("a", "c1")]},
        {"role": "user", "content": [_answer("a", "sunny")]},
    ]
    assert _findings(messages) == [("misplaced-call", "a", 1)]
    fixed, changes = history.repair(messages)
    assert fixed == [
        {"role": "user", "content": [_said("look")]},
        {"role": "assistant", "content": [_use("a", "c1")]},
        messages[1],
    ]
    assert _kinds(changes) == [("moved-misplaced-call", 1)]
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


def test_a_users_call_answered_after_the_assistant_run_that_follows_keeps_its_result() -> None:
    # Moved into an assistant message, the call is one turn with the assistant run after it (the API
    # combines them): its result in the user message after that run answers it. It was dropped as
    # an orphan, a placeholder in its place.
    messages = [
        {"role": "user", "content": [_use("a", "c1")]},
        {"role": "assistant", "content": [_said("so"), _use("b", "c2")]},
        {"role": "user", "content": [_answer("a", "first"), _answer("b", "second")]},
    ]
    assert _findings(messages) == [("misplaced-call", "a", 1)]
    fixed, changes = history.repair(messages)
    assert fixed == [{"role": "assistant", "content": [_use("a", "c1")]}, *messages[1:]]
    assert _kinds(changes) == [("moved-misplaced-call", 1)]
    assert _anthropic_answers(fixed) == {"c1": "first", "c2": "second"}
    assert not _anthropic_refused(fixed) and history.check(fixed).findings == ()


@pytest.mark.parametrize("fmt", ["openai", "ollama", "gemini", "bedrock"])
def test_a_user_message_making_calls_gives_them_to_a_model_message_after_it(fmt: str) -> None:
    if fmt in ("openai", "ollama"):
        call = _tc("a") if fmt == "openai" else {"function": {"name": "f", "arguments": {}}}
        answer = {
            "role": "tool",
            "content": "sunny",
            **({"tool_call_id": "a"} if fmt == "openai" else {"tool_name": "f"}),
        }
        messages = [{"role": "user", "content": "look", "tool_calls": [call]}, answer]
        split = [
            {"role": "user", "content": "look"},
            {"role": "assistant", "content": None if fmt == "openai" else "", "tool_calls": [call]},
        ]
    elif fmt == "gemini":
        call = {"functionCall": {"name": "f", "args": {}, "id": "a"}}
        answer = {"role": "user", "parts": [{"functionResponse": {"name": "f", "id": "a", "response": {}}}]}
        messages = [{"role": "user", "parts": [{"text": "look"}, call]}, answer]
        split = [{"role": "user", "parts": [{"text": "look"}]}, {"role": "model", "parts": [call]}]
    else:
        answer = {"role": "user", "content": [_c_answer("a")]}
        messages = [{"role": "user", "content": [{"text": "look"}, _c_use("a")]}, answer]
        split = [{"role": "user", "content": [{"text": "look"}]}, {"role": "assistant", "content": [_c_use("a")]}]
    assert [(f.kind.value, f.message) for f in history.check(messages).findings] == [("misplaced-call", 1)]
    fixed, changes = history.repair(messages)
    assert fixed == [*split, answer] and _kinds(changes) == [("moved-misplaced-call", 1)]
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


# -- a role no format has ---------------------------------------------------------------------------------


def _with_role(fmt: str, role: Any) -> list[dict[str, Any]]:
    if fmt == "anthropic":
        return [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [_use("a")]},
            {"role": role, "content": [_answer("a", "kept")]},
        ]
    if fmt == "bedrock":
        return [
            {"role": "user", "content": [{"text": "go"}]},
            {"role": "assistant", "content": [_c_use("a")]},
            {"role": role, "content": [_c_answer("a", "kept")]},
        ]
    if fmt == "gemini":
        return [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}, "id": "a"}}]},
            {"role": role, "parts": [{"functionResponse": {"name": "f", "id": "a", "response": {"r": "kept"}}}]},
        ]
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [_tc("a")]},
        {"role": "tool", "tool_call_id": "a", "content": "kept"},
        {"role": role, "content": "kept too"},
    ]


@pytest.mark.parametrize("fmt", ["anthropic", "bedrock", "gemini", "openai"])
@pytest.mark.parametrize("role", [5, ["user"], {"x": 1}, "robot", 1.5, True], ids=repr)
def test_a_role_no_format_has_is_reported_and_repair_keeps_the_message(fmt: str, role: Any) -> None:
    messages = _with_role(fmt, role)
    at = len(messages)
    report = history.check(messages)
    assert [(f.kind.value, f.message) for f in report.findings] == [("unknown-role", at)] and report.rejected
    assert report.findings[0].id == "" and ("robot" in report.findings[0].detail) == (role == "robot")
    fixed, changes = history.repair(messages)
    assert fixed == messages and fixed[-1] is messages[-1]  # its content is all there, where it was
    assert _kinds(changes) == [("kept-unknown-role", at)]


def test_a_missing_role_is_unknown_but_for_gemini_which_may_go_without() -> None:
    assert _findings([{"content": "hi"}]) == []  # it tells no format: none is judged (auto-by-tool-content)
    assert [(f.kind.value, f.message) for f in history.check([{"content": "hi"}], "openai").findings] == [
        ("unknown-role", 1)
    ]
    assert _findings([{"parts": [{"text": "hi"}]}]) == []
    assert _findings([{"type": "message", "content": "hi"}, {"type": "function_call_output", "call_id": "x"}]) == [
        ("unknown-role", "", 1),
        ("orphan", "x", 2),
    ]


def test_history_check_names_a_message_of_an_unknown_role_and_exits_1(tmp_path: Any) -> None:
    # It said the history paired up (exit 0): the role went unread.
    path = tmp_path / "h.json"
    path.write_text(json.dumps(_with_role("anthropic", 5)))
    out = io.StringIO()
    assert main(["history", "check", str(path)], stdout=out, stderr=io.StringIO()) == 1
    assert "message 3: unknown-role: a role of type int is not one anthropic messages have" in out.getvalue()


# -- a server id twice in one assistant run ----------------------------------------------------------------


def _found(at: str, tag: str = "") -> dict[str, Any]:
    return {"type": "web_search_tool_result", "tool_use_id": at, "content": [{"tag": tag}]}


def test_a_server_id_twice_in_one_assistant_run_is_a_duplicate_call_and_renamed() -> None:
    # The Messages API reads the run as one turn and refuses a tool_use id twice in it ("`tool_use`
    # ids must be unique"); it was reported as `reused`, allowed, and repair left it as it was.
    messages = [
        ASK_A,
        {"role": "assistant", "content": [_search("s"), _found("s", "1")]},
        {"role": "assistant", "content": [_search("s"), _found("s", "2")]},
        {"role": "user", "content": "ok"},
    ]
    assert _findings(messages) == [("duplicate-call", "s", 3), ("duplicate-result", "s", 3)]
    fixed, changes = history.repair(messages)
    assert fixed[2]["content"] == [_search("s_d2"), _found("s_d2", "2")] and fixed[1] is messages[1]
    assert _kinds(changes) == [("renamed-call", 3), ("renamed-result", 3)]
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


def test_a_server_id_in_assistant_messages_a_removed_message_joins_is_renamed() -> None:
    # The user messages between them hold results answering nothing: dropped, the assistant messages
    # meet, one turn to the API, an id three times in it. Repair kept them apart, `reused`, and the
    # API refused the history; a second repair (once the check read them as one run) renamed.
    orphan = {"role": "user", "content": [_answer("gone", "x")]}
    messages = [
        ASK_A,
        {"role": "assistant", "content": [_search("s"), _found("s", "1")]},
        orphan,
        {"role": "assistant", "content": [_search("s"), _found("s", "2")]},
        orphan,
        {"role": "assistant", "content": [_said("so")]},
        orphan,
        {"role": "assistant", "content": [_search("s"), _found("s", "3")]},
    ]
    fixed, changes = history.repair(messages)
    searched = [_search("s"), _found("s", "1"), _search("s_d2"), _found("s_d2", "2"), _said("so")]
    assert fixed == [ASK_A, {"role": "assistant", "content": [*searched, _search("s_d3"), _found("s_d3", "3")]}]
    assert [c.detail.endswith("'s_d2'") for c in changes if c.kind == "renamed-call"] == [True, False]
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


# -- the property tests -------------------------------------------------------------------------------------


def _pairs(
    turns: list[tuple[str, list[dict[str, Any]]]], call: str, result: str, keys: tuple[str, str]
) -> dict[str, str]:
    """Each call's tag and the tag of the result answering it: the k-th result with an id in the turn
    right after the call's answers the k-th call with that id (``call``/``result``: the blocks'
    types; ``keys``: where each holds the id)."""
    key, result_key = keys
    answers: dict[str, str] = {}
    for (role, blocks), (_, after) in itertools.pairwise(turns):
        if role != "assistant":
            continue
        given: dict[str, list[str]] = {}
        for block in after:
            if result in block:
                given.setdefault(block[result][result_key], []).append(_tag(block[result]))
        k: Counter[str] = Counter()
        for block in blocks:
            if call in block:
                of = given.get(block[call][key], [])
                if k[block[call][key]] < len(of):
                    answers[block[call]["input"]["tag"]] = of[k[block[call][key]]]
                k[block[call][key]] += 1
    return answers


def _tag(result: dict[str, Any]) -> str:
    content = result["content"]
    return content if isinstance(content, str) else content[0]["text"]


def _by_type(block: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic block keyed by its type, as a Converse block is (so one reading serves both)."""
    return {block["type"]: block} if block["type"] in ("tool_use", "tool_result") else {}


def _anthropic_answers(messages: list[dict[str, Any]]) -> dict[str, str]:
    turns = [(role, [_by_type(b) for b in blocks]) for role, blocks in _turns(messages)]
    return _pairs(turns, "tool_use", "tool_result", ("id", "tool_use_id"))


def _anthropic_refused(messages: list[dict[str, Any]]) -> list[str]:
    """What the Messages API refuses (audit 29's reading), a tool_result in the assistant's turn and a
    tool_use in the user's."""
    turns = _turns(messages)
    held = [t for t, (role, blocks) in enumerate(turns) if role == "assistant" and _results_in(blocks)]
    made = [
        t for t, (role, blocks) in enumerate(turns) if role == "user" and any(b["type"] == "tool_use" for b in blocks)
    ]
    return [
        *_refused(messages),
        *(f"turn {t}: a tool_result in the assistant's turn" for t in held),
        *(f"turn {t}: a tool_use in the user's turn" for t in made),
    ]


def _results_in(blocks: list[dict[str, Any]]) -> bool:
    return any(block["type"] == "tool_result" for block in blocks)


def _random_anthropic(rng: random.Random) -> list[dict[str, Any]]:
    """A history whose results are sent now by the user, now (a first few of a turn's, with text
    around them) in an assistant message after the calls, ids used twice, results answering nothing;
    now and then a user message makes the calls."""
    serial = iter(range(1_000_000))
    sent: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
    for _ in range(rng.randint(1, 5)):
        uses = [_use(rng.choice(["a", "b", "a_d2"]), f"c{next(serial)}") for _ in range(rng.randint(1, 3))]
        role = "user" if rng.random() < 0.15 else "assistant"  # now and then the user's role makes the calls
        calls = [{"role": role, "content": [_said("let me"), *uses] if rng.random() < 0.3 else uses}]
        results = [_answer(u["id"], f"r{next(serial)}") for u in uses if rng.random() < 0.85]
        if rng.random() < 0.15:
            results.append(_answer("ghost", f"r{next(serial)}"))
        sent += calls
        if rng.random() < 0.1:
            break  # the history ends on the calls
        k = rng.randint(0, len(results))
        if k:
            around = [_said(f"t{next(serial)}")] if rng.random() < 0.4 else []
            sent.append({"role": "assistant", "content": [*around, *results[:k], *around[::-1]]})
        rest = [*results[k:], *([_said("go on")] if rng.random() < 0.5 else [])]
        if k and rng.random() < 0.2:
            break  # the history ends on the results sent as the assistant
        sent.append({"role": "user", "content": rest or "next"})
    return sent


def _meant(messages: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Each call and the result sent for it: the k-th result with its id among the results after
    its assistant message up to the next call (wherever they were sent)."""
    pairs, waiting, seen = [], [], Counter[str]()
    given: dict[str, list[dict[str, Any]]] = {}
    for message in [*messages, {"role": "assistant", "content": [_use("end")]}]:
        blocks = message["content"] if isinstance(message["content"], list) else []
        if any(b["type"] == "tool_use" for b in blocks):
            for use in waiting:
                of = given.get(use["id"], [])
                if seen[use["id"]] < len(of):
                    pairs.append((use, of[seen[use["id"]]]))
                seen[use["id"]] += 1
            waiting, seen, given = [b for b in blocks if b["type"] == "tool_use"], Counter(), {}
        for block in blocks:
            if block["type"] == "tool_result":
                given.setdefault(block["tool_use_id"], []).append(block)
    return pairs


def _converse_refused(messages: list[dict[str, Any]]) -> list[str]:
    """What Converse refuses: two messages of one role in a row, a toolResult in the assistant's
    message or a toolUse in the user's, a message's calls not answered by the next one, results
    answering no call before."""
    why = []
    for t, message in enumerate(messages):
        uses = Counter(b["toolUse"]["toolUseId"] for b in message["content"] if "toolUse" in b)
        results = Counter(b["toolResult"]["toolUseId"] for b in message["content"] if "toolResult" in b)
        if t and messages[t - 1]["role"] == message["role"]:
            why.append(f"message {t}: the role of the one before")
        if message["role"] == "assistant":
            after = messages[t + 1]["content"] if t + 1 < len(messages) else []
            if results:
                why.append(f"message {t}: a toolResult in the assistant's message")
            if any(n > 1 for n in uses.values()):
                why.append(f"message {t}: two calls under one id")
            if uses and Counter(b["toolResult"]["toolUseId"] for b in after if "toolResult" in b) != uses:
                why.append(f"message {t}: its calls are not answered in the next message")
        elif results and (t == 0 or not any("toolUse" in b for b in messages[t - 1]["content"])):
            why.append(f"message {t}: results answering no call")
        if uses and message["role"] != "assistant":
            why.append(f"message {t}: a toolUse in the user's message")
    return why


def _random_converse(rng: random.Random) -> list[dict[str, Any]]:
    """Calls (now and then made in the user's role) answered now in the user message after them, now
    (a first few, or all) in an assistant message with the model's text around, the rest in the user
    message after it."""
    serial = iter(range(1_000_000))
    sent: list[dict[str, Any]] = [{"role": "user", "content": [{"text": "hi"}]}]
    for _ in range(rng.randint(1, 5)):
        uses = [_c_use(rng.choice(["a", "b"]), f"c{next(serial)}") for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.15 and not any("toolResult" in b for b in sent[-1]["content"]):
            sent[-1] = {**sent[-1], "content": [*sent[-1]["content"], *uses]}  # the user's message makes the calls
        else:
            sent.append({"role": "assistant", "content": [{"text": "let me"}, *uses] if rng.random() < 0.3 else uses})
        results = [_c_answer(u["toolUse"]["toolUseId"], f"r{next(serial)}") for u in uses if rng.random() < 0.85]
        if rng.random() < 0.1:
            break
        around = [{"text": f"t{next(serial)}"}] if rng.random() < 0.4 else []
        if results and rng.random() < 0.5:
            k = rng.randint(1, len(results))  # the first k sent as the model, the rest by the user after
            sent.append({"role": "assistant", "content": [*around, *results[:k], *around[::-1]]})
            if rng.random() < 0.2 and k == len(results):
                break
            sent.append({"role": "user", "content": [*results[k:], {"text": "next"}]})
        else:
            sent.append({"role": "user", "content": [*results, *around] or [{"text": "next"}]})
    return sent


def _converse_meant(messages: list[dict[str, Any]]) -> dict[str, str]:
    """Each call's answer: the k-th result with its id after the call's message, before the next call,
    wherever it was sent (read as Anthropic blocks, the same pairing)."""
    blocks = [{"role": m["role"], "content": [_as_anthropic(b) for b in m["content"]]} for m in messages]
    return _anthropic_meant(blocks)


def _as_anthropic(block: dict[str, Any]) -> dict[str, Any]:
    if "toolUse" in block:
        return _use(block["toolUse"]["toolUseId"], block["toolUse"]["input"]["tag"])
    if "toolResult" in block:
        return _answer(block["toolResult"]["toolUseId"], _tag(block["toolResult"]))
    return _said(block["text"])


def _converse_answers(messages: list[dict[str, Any]]) -> dict[str, str]:
    return _pairs([(m["role"], m["content"]) for m in messages], *_CONVERSE)


def _anthropic_meant(messages: list[dict[str, Any]]) -> dict[str, str]:
    return {use["input"]["tag"]: result["content"] for use, result in _meant(messages)}


READINGS: dict[str, tuple[Any, Any, Any, Any]] = {
    "anthropic": (_random_anthropic, _anthropic_refused, _anthropic_meant, _anthropic_answers),
    "bedrock": (_random_converse, _converse_refused, _converse_meant, _converse_answers),
}
"""Per format: a random history, what its API refuses, the answers sent, the answers it reads."""


@pytest.mark.parametrize("fmt", sorted(READINGS))
def test_random_results_sent_as_the_assistant_repair_to_what_the_api_takes_keeping_each_answer(fmt: str) -> None:
    counted = found_and_repaired(fmt, READINGS[fmt][0], 1_500)
    assert counted["moved"] > 1_000 and counted["meant"] > 3_000


def found_and_repaired(fmt: str, make: Any, seeds: int) -> Counter[str]:
    """Check and repair ``seeds`` random histories ``make`` gives, against the API's reading of
    ``fmt``; how many results repair moved out of the model's role, how many answers were sent."""
    _, refused, meant_of, answers = READINGS[fmt]
    counted = Counter[str]()
    for seed in range(seeds):
        messages = make(random.Random(seed))
        report = history.check(messages)
        assert report.rejected == bool(refused(messages)), (seed, refused(messages))
        meant = meant_of(messages)  # every answer sent, wherever, stays with its call
        for policy in POLICIES:
            fixed, changes = history.repair(messages, policy)
            assert refused(fixed) == [], (seed, policy.dangling, refused(fixed))
            assert not history.check(fixed).rejected and history.repair(fixed, policy) == (fixed, []), seed
            kept = answers(fixed)
            assert all(kept.get(call) == result for call, result in meant.items()), (seed, meant, kept)
            counted["moved"] += sum(c.kind == "moved-misplaced-result" for c in changes)
        counted["meant"] += len(meant)
    return counted


_CONVERSE = ("toolUse", "toolResult", ("toolUseId", "toolUseId"))


# -- linear work -------------------------------------------------------------------------------------------


def _many_turns_answered_as_the_assistant(n: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [ASK_A]
    for i in range(n):
        messages += [
            {"role": "assistant", "content": [_use(f"a{i}")]},
            {"role": "assistant", "content": [_said("so"), _answer(f"a{i}", "x" * 64)]},
            {"role": "user", "content": "and?"},
        ]
    return messages


def _one_turn_answered_as_the_assistant(n: int) -> list[dict[str, Any]]:
    return [
        ASK_A,
        {"role": "assistant", "content": [_use(f"a{i}") for i in range(n)]},
        {"role": "assistant", "content": [_answer(f"a{i}", f"r{i}" + "x" * 64) for i in range(n)]},
    ]


def _openai_results_as_the_assistant(n: int) -> list[dict[str, Any]]:
    asked = {"role": "assistant", "content": None, "tool_calls": [_tc(f"a{i}") for i in range(n)]}
    return [ASK_A, asked, *({"role": "assistant", "tool_call_id": f"a{i}", "content": "x" * 64} for i in range(n))]


def _one_server_id_through_a_run(n: int) -> list[dict[str, Any]]:
    run = [{"role": "assistant", "content": [_search("s"), _found("s", str(i))]} for i in range(n)]
    return [ASK_A, *run, {"role": "user", "content": "ok"}]


def _calls_made_by_the_user(n: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for i in range(n):
        messages += [
            {"role": "user", "content": [_said("look"), _use(f"a{i}")]},
            {"role": "assistant", "content": [_said("so")]},
            {"role": "user", "content": [_answer(f"a{i}", "x" * 64)]},
        ]
    return messages


def _converse_turns_answered_partly_as_the_assistant(n: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": "go"}]}]
    for i in range(n):
        messages += [
            {"role": "assistant", "content": [_c_use(f"a{i}"), _c_use(f"b{i}")]},
            {"role": "assistant", "content": [_c_answer(f"a{i}", "x" * 64), {"text": "so"}]},
            {"role": "user", "content": [_c_answer(f"b{i}", "y" * 64), {"text": "and?"}]},
        ]
    return messages


def _roles_no_format_has(n: int) -> list[dict[str, Any]]:
    return [{"role": i, "content": "x" * 64} for i in range(n)]


def _work(messages: list[dict[str, Any]]) -> int:
    """The Python calls a check and a repair of ``messages`` make: work counted, not timed."""
    made = 0

    def count(frame: Any, event: str, arg: Any) -> None:
        nonlocal made
        made += event == "call"

    sys.setprofile(count)
    try:
        history.check(messages)
        history.repair(messages)
    finally:
        sys.setprofile(None)
    return made


@pytest.mark.parametrize(
    "build",
    [
        _many_turns_answered_as_the_assistant,
        _one_turn_answered_as_the_assistant,
        _openai_results_as_the_assistant,
        _one_server_id_through_a_run,
        _roles_no_format_has,
        _calls_made_by_the_user,
        _converse_turns_answered_partly_as_the_assistant,
    ],
)
def test_the_role_paths_cost_the_same_per_message(build: Any) -> None:
    small, large = _work(build(250)), _work(build(2_000))
    assert large <= small * 8 * 1.25, (small, large)


def test_a_megabyte_turn_answered_as_the_assistant_keeps_every_result() -> None:
    messages = _one_turn_answered_as_the_assistant(15_000)
    assert len(repr(messages)) > 1_000_000
    report = history.check(messages)
    assert len(report.of(history.Kind.MISPLACED_RESULT)) == 15_000
    fixed, changes = history.repair(messages)
    assert [m["role"] for m in fixed] == ["user", "assistant", "user"]
    assert [b["content"] for b in fixed[2]["content"]] == [f"r{i}" + "x" * 64 for i in range(15_000)]
    assert sum(c.kind == "moved-misplaced-result" for c in changes) == 15_000
    assert not history.check(fixed).rejected


def test_hostile_roles_never_raise_a_bare_error() -> None:
    # any role at any place of a random Anthropic history: a finding, never a crash; repair keeps
    # every block the message held
    for seed in range(300):
        rng = random.Random(seed)
        messages = _random_anthropic(rng)
        at = rng.randrange(len(messages))
        messages[at] = {**messages[at], "role": rng.choice([None, 0, "", "tool", "system", ["user"], {"r": 1}])}
        try:
            report = history.check(messages)
        except LocalProtocolError:
            continue
        assert (history.Kind.UNKNOWN_ROLE, at + 1) in [(f.kind, f.message) for f in report.findings], seed
        fixed, changes = history.repair(messages)
        assert ("kept-unknown-role", at + 1) in _kinds(changes)
        out = {_said_or_sent(b) for m in fixed for b in _held(m)}  # a rename changes a result's id, not its content
        dropped = {c.kind for c in changes if c.message == at + 1} & {"dropped-orphan", "dropped-duplicate-result"}
        assert dropped or all(_said_or_sent(b) in out for b in _held(messages[at])), seed


def _held(message: dict[str, Any]) -> list[Any]:
    return message["content"] if isinstance(message["content"], list) else [message["content"]]


def _said_or_sent(block: Any) -> Any:
    return block.get("content", block.get("text")) if isinstance(block, dict) else block
