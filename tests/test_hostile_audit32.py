"""Hostile audit 32: roles in Gemini ``contents``, OpenAI chat and Ollama ``messages``. Results sent
in the model's role (or the user's, for OpenAI and Ollama: any role but ``tool``), calls made in a
user message and roles no format has, mixed with normal turns.

The seeded property tests take the API's own reading of a history as the oracle: what it refuses
(``check`` must report exactly that), and which result answers which call (``repair`` must keep every
one with its call, leave a history ``check`` accepts but for the kept ``unknown-role`` messages, and
change nothing when run again). The same histories go whole through ``toolcall-fsm history check``
(exit codes as documented, one line on stderr, never a traceback); megabyte ones cost work in
proportion to their size. Each regression test failed before its fix. Work is counted, not timed."""

from __future__ import annotations

import io
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from fsm import history
from fsm.cli import main
from fsm.errors import LocalProtocolError
from tests.test_hostile_audit29 import _answer, _said, _use
from tests.test_hostile_audit30 import READINGS, _c_answer, _c_use, _work, found_and_repaired

PH = "PLACEHOLDER"
POLICIES = [history.RepairPolicy(placeholder=PH), history.RepairPolicy("drop-call", PH)]
CHAT_ROLES = {"openai": {"system", "developer", "user", "assistant", "tool", "function"}}
CHAT_ROLES["ollama"] = {"system", "user", "assistant", "tool"}
JUNK = {"openai": [5, "robot", ["user"], None], "gemini": [5, "robot", "assistant", "tool"]}
JUNK["ollama"] = [*JUNK["openai"], "developer"]


def _findings(messages: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(f.kind.value, f.id, f.message) for f in history.check(messages).findings]


def _kinds(changes: list[history.Change]) -> list[tuple[str, int]]:
    return [(c.kind, c.message) for c in changes]


# -- OpenAI chat and Ollama: a tool message answers; any other role is refused with a result --------------


def _chat_call(fmt: str, key: str, tag: str) -> dict[str, Any]:
    if fmt == "openai":
        return {"id": key, "type": "function", "function": {"name": "f", "arguments": f'{{"tag": "{tag}"}}'}}
    return {"function": {"name": key, "arguments": {"tag": tag}}}


def _chat_answer(fmt: str, key: str, tag: str, role: Any = "tool") -> dict[str, Any]:
    field = "tool_call_id" if fmt == "openai" else "tool_name"
    return {"role": role, field: key, "content": tag}


def _chat_key(fmt: str, call: dict[str, Any]) -> str:
    return str(call["id"] if fmt == "openai" else call["function"]["name"])


def _chat_tag(fmt: str, call: dict[str, Any]) -> str:
    arguments = call["function"]["arguments"]
    return str((eval(arguments) if fmt == "openai" else arguments)["tag"])


def _answer_key(message: dict[str, Any]) -> Any:
    return message.get("tool_call_id", message.get("tool_name"))


def _random_chat(fmt: str, rng: random.Random) -> list[dict[str, Any]]:
    """Turns whose results are sent now as ``tool`` messages, now in the assistant's or the user's
    role; now and then a user message makes the calls, a message of a junk role comes between turns
    or between a turn's calls and its results, a result answers nothing."""
    serial = iter(range(1_000_000))
    sent: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
    for _ in range(rng.randint(1, 5)):
        if rng.random() < 0.15:
            sent.append({"role": rng.choice(JUNK[fmt]), "content": f"j{next(serial)}"})
        keys = [f"c{next(serial)}" if fmt == "openai" else rng.choice("fgh") for _ in range(rng.randint(1, 3))]
        calls = [_chat_call(fmt, key, f"t{next(serial)}") for key in keys]
        role = "user" if rng.random() < 0.15 else "assistant"
        text = "look" if role == "user" or rng.random() < 0.3 else (None if fmt == "openai" else "")
        sent.append({"role": role, "content": text, "tool_calls": calls})
        if rng.random() < 0.1:
            break  # the history ends on the calls
        if rng.random() < 0.1:
            sent.append({"role": rng.choice(JUNK[fmt]), "content": f"j{next(serial)}"})
        roles = ["tool"] * 4 + ["assistant", "user", "system"]
        answers = [_chat_answer(fmt, _chat_key(fmt, c), f"r{next(serial)}", rng.choice(roles)) for c in calls]
        answers = [answer for answer in answers if rng.random() < 0.85]
        if rng.random() < 0.15:
            answers.append(_chat_answer(fmt, "ghost", f"r{next(serial)}", rng.choice(roles)))
        if rng.random() < 0.3:
            rng.shuffle(answers)  # OpenAI pairs by id; Ollama by name, in the order sent
        sent += answers
        if rng.random() < 0.5:
            sent.append({"role": "assistant", "content": "so"})
        sent.append({"role": "user", "content": "next"})
    return sent


def _chat_refused(fmt: str, messages: list[dict[str, Any]]) -> list[str]:
    """What the API refuses: a role it lacks, calls in a message not the assistant's, a result in a
    message not a tool message, calls the tool messages right after them do not all answer, a tool
    message answering nothing waiting (OpenAI by id; Ollama by tool name, the k-th answer of a name
    the k-th call of it)."""
    why: list[str] = []
    waiting: Counter[str] | None = None  # what the calls of the last assistant message still wait for
    for t, message in enumerate(messages):
        role = message.get("role")
        if not isinstance(role, str) or role not in CHAT_ROLES[fmt]:
            why.append(f"message {t}: a role the API lacks")
        if message.get("tool_calls") and role != "assistant":
            why.append(f"message {t}: calls in a {role!r} message")
        if _answer_key(message) is not None and role != "tool":
            why.append(f"message {t}: a result in a {role!r} message")
        if role == "tool":
            key = _answer_key(message)
            if waiting is None or waiting[key] <= 0:
                why.append(f"message {t}: a tool message answering nothing waiting")
            else:
                waiting[key] -= 1
            continue
        if waiting is not None and +waiting:
            why.append(f"message {t}: calls before it unanswered")
        waiting = None
        if role == "assistant" and message.get("tool_calls"):
            keys = Counter(_chat_key(fmt, call) for call in message["tool_calls"])
            if fmt == "openai" and any(n > 1 for n in keys.values()):
                why.append(f"message {t}: two calls under one id")
            waiting = keys
    if waiting is not None and +waiting:
        why.append("the last calls unanswered")
    return why


def _chat_units(fmt: str, message: dict[str, Any]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """A message's calls and the results it sends, each as its key and tag."""
    calls = [(_chat_key(fmt, call), _chat_tag(fmt, call)) for call in message.get("tool_calls") or ()]
    key = _answer_key(message)
    return calls, [] if key is None else [(key, message["content"])]


def _chat_meant(fmt: str, messages: list[dict[str, Any]]) -> dict[str, str]:
    return _sent_for([_chat_units(fmt, message) for message in messages])


def _chat_answers(fmt: str, messages: list[dict[str, Any]]) -> dict[str, str]:
    """What the API reads: the tool messages right after an assistant message's calls answer them."""
    pairs: dict[str, str] = {}
    for t, message in enumerate(messages):
        if message.get("role") != "assistant" or not message.get("tool_calls"):
            continue
        given: list[tuple[str, str]] = []
        for after in messages[t + 1 :]:
            if after.get("role") != "tool":
                break
            given += _chat_units(fmt, after)[1]
        pairs |= _kth(_chat_units(fmt, message)[0], given)
    return pairs


def _kth(calls: list[tuple[str, str]], answers: list[tuple[str, str]]) -> dict[str, str]:
    """Each call's tag and the tag of the result answering it: the k-th answer under a key answers
    the k-th call under it."""
    given: dict[str, list[str]] = {}
    for key, tag in answers:
        given.setdefault(key, []).append(tag)
    pairs: dict[str, str] = {}
    k: Counter[str] = Counter()
    for key, tag in calls:
        if k[key] < len(given.get(key, [])):
            pairs[tag] = given[key][k[key]]
        k[key] += 1
    return pairs


def _sent_for(units: list[tuple[list[tuple[str, str]], list[tuple[str, str]]]]) -> dict[str, str]:
    """Each call's tag and the tag of the result sent for it: the k-th result under its key after
    its message, before the next calls (whatever role either was sent in). ``units``: each
    message's calls and results."""
    pairs: dict[str, str] = {}
    calls: list[tuple[str, str]] = []
    answers: list[tuple[str, str]] = []
    for made, sent in units:
        if made:
            pairs |= _kth(calls, answers)
            calls, answers = made, []
        answers += sent
    return pairs | _kth(calls, answers)


# -- Gemini: a model content's calls are answered by the user content right after it -----------------------


def _g_call(name: str, tag: str, key: str | None) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": {"tag": tag}, **({"id": key} if key else {})}}


def _g_answer(name: str, tag: str, key: str | None) -> dict[str, Any]:
    return {"functionResponse": {"name": name, "response": {"r": tag}, **({"id": key} if key else {})}}


def _random_gemini(rng: random.Random) -> list[dict[str, Any]]:
    """Calls with ids or without (pairing by name then), made now and then in a user content,
    answered now in the user content after them, now (a first few, or all) in a model content with
    the model's text around, the rest in the user content after it; junk roles between turns or
    between a turn's calls and its responses; a response answering nothing."""
    serial = iter(range(1_000_000))
    ids = rng.random() < 0.5
    sent: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "hi"}]}]
    for _ in range(rng.randint(1, 5)):
        if rng.random() < 0.15:
            sent.append({"role": rng.choice(JUNK["gemini"]), "parts": [{"text": f"j{next(serial)}"}]})
        calls = [
            _g_call(rng.choice("fg"), f"t{next(serial)}", f"i{next(serial)}" if ids else None)
            for _ in range(rng.randint(1, 3))
        ]
        if rng.random() < 0.15:
            sent.append({"role": "user", "parts": [{"text": "look"}, *calls]})
        else:
            sent.append({"role": "model", "parts": [{"text": "let me"}, *calls] if rng.random() < 0.3 else calls})
        if rng.random() < 0.1:
            break
        if rng.random() < 0.1:
            sent.append({"role": rng.choice(JUNK["gemini"]), "parts": [{"text": f"j{next(serial)}"}]})
        answers = [
            _g_answer(c["functionCall"]["name"], f"r{next(serial)}", c["functionCall"].get("id"))
            for c in calls
            if rng.random() < 0.85
        ]
        if rng.random() < 0.1:
            answers.append(_g_answer("ghost", f"r{next(serial)}", "ghost" if ids else None))
        around = [{"text": f"s{next(serial)}"}] if rng.random() < 0.4 else []
        if answers and rng.random() < 0.5:
            k = rng.randint(1, len(answers))
            sent.append({"role": "model", "parts": [*around, *answers[:k], *around[::-1]]})
            if rng.random() < 0.2 and k == len(answers):
                break
            sent.append({"role": "user", "parts": [*answers[k:], {"text": "next"}]})
        elif answers and rng.random() < 0.2:  # the user's first, the rest in the model's content after
            k = rng.randint(1, len(answers))
            sent.append({"role": "user", "parts": answers[:k]})
            sent.append({"role": "model", "parts": [*answers[k:], *around]})
            sent.append({"role": "user", "parts": [{"text": "next"}]})
        else:
            sent.append({"role": "user", "parts": [*answers, *around] or [{"text": "next"}]})
    return sent


def _g_parts(message: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [part[kind] for part in message["parts"] if kind in part]


def _g_key(payload: dict[str, Any]) -> str:
    return str(payload.get("id") or payload["name"])


def _gemini_refused(messages: list[dict[str, Any]]) -> list[str]:
    """What Gemini refuses: a role but user or model, a content of no parts, a functionCall in a user content, a
    functionResponse in a model content, calls the content right after them does not answer one
    for one (by id, or by name without), responses answering no call of the content before them,
    responses beside parts of another kind in a user content (an empty candidate or a 400:
    NousResearch/hermes-agent#68863, vellum-ai/vellum-assistant#39495)."""
    why: list[str] = []
    for t, message in enumerate(messages):
        role = message.get("role")
        calls, answers = _g_parts(message, "functionCall"), _g_parts(message, "functionResponse")
        if role not in ("user", "model"):
            why.append(f"content {t}: the role {role!r}")
        if not message["parts"]:  # empty-message: "contents.parts must not be empty" (gemini-cli#317)
            why.append(f"content {t}: no parts")
        if calls and role != "model":
            why.append(f"content {t}: a functionCall in a {role!r} content")
        if answers and role != "user":
            why.append(f"content {t}: a functionResponse in a {role!r} content")
        if calls and role == "model":
            after = messages[t + 1] if t + 1 < len(messages) else {"parts": []}
            given = Counter(_g_key(a) for a in _g_parts(after, "functionResponse"))
            if after.get("role") != "user" or given != Counter(_g_key(c) for c in calls):
                why.append(f"content {t}: its calls are not answered one for one by the next content")
        if answers and role == "user" and len(answers) < len(message["parts"]):  # hist39b: hermes-agent#68863
            why.append(f"content {t}: function responses beside parts of another kind")
        before = messages[t - 1] if t else {"role": None, "parts": []}
        if answers and role == "user" and (before.get("role") != "model" or not _g_parts(before, "functionCall")):
            why.append(f"content {t}: responses answering no call")
    return why


def _g_units(message: dict[str, Any]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    calls = [(_g_key(call), call["args"]["tag"]) for call in _g_parts(message, "functionCall")]
    return calls, [(_g_key(answer), answer["response"].get("r")) for answer in _g_parts(message, "functionResponse")]


def _gemini_meant(messages: list[dict[str, Any]]) -> dict[str, str]:
    return _sent_for([_g_units(message) for message in messages])


def _gemini_answers(messages: list[dict[str, Any]]) -> dict[str, str]:
    """What Gemini reads: a model content's calls answered by the user content right after it."""
    pairs: dict[str, str] = {}
    for t, message in enumerate(messages[:-1]):
        if message.get("role") == "model" and messages[t + 1].get("role") == "user":
            pairs |= _kth(_g_units(message)[0], _g_units(messages[t + 1])[1])
    return pairs


# -- the property test ----------------------------------------------------------------------------------------


def _readings(fmt: str) -> tuple[Any, Any, Any, Any]:
    if fmt == "gemini":
        return _random_gemini, _gemini_refused, _gemini_meant, _gemini_answers
    return (
        lambda rng: _random_chat(fmt, rng),
        lambda m: _chat_refused(fmt, m),
        lambda m: _chat_meant(fmt, m),
        lambda m: _chat_answers(fmt, m),
    )


def _known(message: dict[str, Any], fmt: str) -> bool:
    role = message.get("role")
    return isinstance(role, str) and role in CHAT_ROLES.get(fmt, {"user", "model"})


def _odd(messages: list[dict[str, Any]], fmt: str) -> list[int]:
    """The 1-based places of the messages of a role the format lacks."""
    return [t + 1 for t, m in enumerate(messages) if not _known(m, fmt)]


def _units(messages: list[dict[str, Any]], fmt: str) -> list[tuple[list[tuple[str, str]], list[tuple[str, str]]]]:
    return [_g_units(m) if fmt == "gemini" else _chat_units(fmt, m) for m in messages]


def _out_of_role(messages: list[dict[str, Any]], fmt: str) -> tuple[list[int], list[int]]:
    """Where the calls made in the user's role are (each message once), and where the results sent in
    a role but the user's (Gemini) or a tool message's are that answer a call waiting (one place a
    result): the turn of a message's calls goes on through the results right after it, past a
    message of a junk role holding none; a Gemini user content of results ends it, but for a model
    content of results right after it."""
    made, sent = [], []
    waiting: Counter[str] = Counter()
    closing = False  # Gemini: the user's results came; a model content of results right after goes on the turn
    for t, (message, (calls, results)) in enumerate(zip(messages, _units(messages, fmt), strict=True), 1):
        if not _known(message, fmt):
            if not (calls or results):
                continue
        elif calls and message["role"] == "user":
            made.append(t)
        was_closing, closing = closing, False
        if was_closing and not (results and message.get("role") == "model"):
            waiting = Counter()
        if calls:
            waiting = Counter(key for key, _ in calls)
        elif results:
            for key, _ in results:
                if waiting[key] > 0 and _known(message, fmt) and message["role"] != _PROPER[fmt]:
                    sent.append(t)
                waiting[key] -= waiting[key] > 0
            if fmt == "gemini" and was_closing:
                waiting = Counter()
            elif fmt == "gemini" and message.get("role") != "model":
                closing = True
        else:
            waiting = Counter()
    return made, sent


_PROPER = {"gemini": "user", "openai": "tool", "ollama": "tool"}
"""The role a result is sent in."""


def _named(messages: list[dict[str, Any]], fmt: str) -> list[dict[str, Any]]:
    """The messages of a role the format has: repair keeps the others for the caller to name."""
    return [m for m in messages if _known(m, fmt)]


@pytest.mark.parametrize("fmt", ["gemini", "openai", "ollama"])
def test_random_role_mixups_are_found_as_the_api_refuses_them_and_repaired_keeping_each_answer(fmt: str) -> None:
    make, refused, meant_of, answers = _readings(fmt)
    counted = Counter[str]()
    for seed in range(1_200):
        messages = make(random.Random(seed))
        report = history.check(messages, fmt)  # type: ignore[arg-type]
        said = refused(messages)
        assert report.rejected == bool(said), (seed, said, report.findings)
        odd = _odd(messages, fmt)
        assert [f.message for f in report.of(history.Kind.UNKNOWN_ROLE)] == odd, seed
        made, sent = _out_of_role(messages, fmt)
        assert sorted({f.message for f in report.of(history.Kind.MISPLACED_CALL)}) == made, seed
        assert sorted(f.message for f in report.of(history.Kind.MISPLACED_RESULT)) == sent, seed
        meant = meant_of(messages)
        for policy in POLICIES:
            fixed, changes = history.repair(messages, policy, fmt)  # type: ignore[arg-type]
            left = [f for f in history.check(fixed, fmt).findings if f.kind != history.Kind.UNKNOWN_ROLE]  # type: ignore[arg-type]
            assert left == [], (seed, policy.dangling, left)
            named = _named(fixed, fmt)  # the kept messages of a junk role aside, the API takes it
            assert refused(named) == [], (seed, policy.dangling, refused(named))
            again, more = history.repair(fixed, policy, fmt)  # type: ignore[arg-type]
            assert again == fixed and all(c.kind == "kept-unknown-role" for c in more), (seed, more)
            kept = answers(named)
            assert all(kept.get(call) == result for call, result in meant.items()), (seed, meant, kept)
            counted["moved"] += sum(c.kind == "moved-misplaced-result" for c in changes)
            counted["calls moved"] += sum(c.kind == "moved-misplaced-call" for c in changes)
        counted["meant"] += len(meant)
        counted["odd"] += len(odd)
    assert counted["moved"] > 500 and counted["calls moved"] > 200 and counted["meant"] > 2_000, counted
    assert counted["odd"] > 200, counted


# -- regressions ------------------------------------------------------------------------------------------------


def _between(fmt: str) -> list[dict[str, Any]]:
    """Calls, a message of a junk role (text alone), then the calls' results."""
    if fmt == "gemini":
        return [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [_g_call("f", "t1", "a")]},
            {"role": "assistant", "parts": [{"text": "junk"}]},
            {"role": "user", "parts": [_g_answer("f", "sunny", "a")]},
        ]
    if fmt == "anthropic":
        return [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
            {"role": "robot", "content": "junk"},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "sunny"}]},
        ]
    if fmt == "bedrock":
        return [
            {"role": "user", "content": [{"text": "go"}]},
            {"role": "assistant", "content": [{"toolUse": {"toolUseId": "a", "name": "f", "input": {}}}]},
            {"role": 5, "content": [{"text": "junk"}]},
            {"role": "user", "content": [{"toolResult": {"toolUseId": "a", "content": [{"text": "sunny"}]}}]},
        ]
    if fmt == "responses":
        return [
            {"role": "user", "content": "go"},
            {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
            {"type": "message", "role": "robot", "content": "junk"},
            {"type": "function_call_output", "call_id": "a", "output": "sunny"},
        ]
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None if fmt == "openai" else "", "tool_calls": [_chat_call(fmt, "a", "t1")]},
        {"role": "robot", "content": "junk"},
        _chat_answer(fmt, "a", "sunny"),
    ]


@pytest.mark.parametrize("fmt", ["gemini", "openai", "ollama", "anthropic", "bedrock", "responses"])
def test_a_message_of_a_junk_role_between_calls_and_their_results_ends_no_turn(fmt: str) -> None:
    # The junk message closed the turn: the call was dangling, its real result an orphan, and repair
    # dropped that result for a placeholder. Kept for the caller to name, it stands between nothing.
    messages = _between(fmt)
    assert [(f.kind.value, f.message) for f in history.check(messages, fmt).findings] == [("unknown-role", 3)]  # type: ignore[arg-type]
    fixed, changes = history.repair(messages, format=fmt)  # type: ignore[arg-type]
    assert fixed == messages and _kinds(changes) == [("kept-unknown-role", 3)]
    assert not history.anything_dangling(messages)


def test_an_ollama_result_sent_as_the_assistant_is_reported_and_becomes_a_tool_message() -> None:
    # /api/chat reads a tool_name in a tool message alone: sent as the assistant, the result is the
    # model's own text. It passed as a reply closing the turn; the call dangled, and repair put a
    # placeholder before the real result, which stayed as an assistant message.
    call = _chat_call("ollama", "weather", "t1")
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [call, _chat_call("ollama", "time", "t2")]},
        {"role": "tool", "tool_name": "time", "content": "noon"},
        {"role": "assistant", "tool_name": "weather", "content": "sunny"},
        {"role": "user", "tool_name": "weather", "content": "a second answer"},
    ]
    assert _findings(messages) == [("misplaced-result", "weather#1", 4), ("orphan", "weather#2", 5)]
    fixed, changes = history.repair(messages)
    assert fixed[3] == {"role": "tool", "tool_name": "weather", "content": "sunny"} and len(fixed) == 4
    assert _kinds(changes) == [("moved-misplaced-result", 4), ("dropped-orphan", 5)]
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


# -- linear work, megabyte input ----------------------------------------------------------------------------------


def _ollama_turn_answered_as_the_assistant(n: int) -> list[dict[str, Any]]:
    calls = [_chat_call("ollama", "f", f"t{i}") for i in range(n)]
    said = [_chat_answer("ollama", "f", f"r{i}" + "x" * 64, "assistant") for i in range(n)]
    return [{"role": "user", "content": "go"}, {"role": "assistant", "content": "", "tool_calls": calls}, *said]


def _openai_results_sent_by_the_user(n: int) -> list[dict[str, Any]]:
    calls = [_chat_call("openai", f"a{i}", f"t{i}") for i in range(n)]
    said = [_chat_answer("openai", f"a{i}", "x" * 64, "user") for i in range(n)]
    return [{"role": "user", "content": "go"}, {"role": "assistant", "content": None, "tool_calls": calls}, *said]


def _junk_between_calls_and_results(n: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(n):
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [_chat_call("openai", f"a{i}", "t")]},
            {"role": i, "content": "x" * 64},
            _chat_answer("openai", f"a{i}", "y" * 64),
        ]
    return messages


def _gemini_junk_run_inside_a_turn(n: int) -> list[dict[str, Any]]:
    junk = [{"role": "tool", "parts": [{"text": "x" * 64}]} for _ in range(n)]
    answer = {"role": "user", "parts": [_g_answer("f", "sunny", None)]}
    return [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [_g_call("f", "t", None)]},
        *junk,
        answer,
    ]


def _gemini_turn_answered_as_the_model(n: int) -> list[dict[str, Any]]:
    calls = [_g_call("f", f"t{i}", None) for i in range(n)]
    said = [_g_answer("f", f"r{i}" + "x" * 64, None) for i in range(n)]
    return [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": calls},
        {"role": "model", "parts": said},
    ]


def _gemini_answered_by_the_user_then_the_model(n: int) -> list[dict[str, Any]]:
    calls = [_g_call("f", f"t{i}", None) for i in range(n)]
    said = [_g_answer("f", f"r{i}" + "x" * 64, None) for i in range(n)]
    return [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": calls},
        {"role": "user", "parts": said[: n // 2]},
        {"role": "model", "parts": [*said[n // 2 :], {"text": "so"}]},
    ]


def _users_calls_answered_in_the_wrong_role(n: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for i in range(n):
        messages += [
            {"role": "user", "content": "look", "tool_calls": [_chat_call("ollama", "f", f"t{i}")]},
            _chat_answer("ollama", "f", "x" * 64, "assistant"),
        ]
    return messages


@pytest.mark.parametrize(
    "build",
    [
        _ollama_turn_answered_as_the_assistant,
        _openai_results_sent_by_the_user,
        _junk_between_calls_and_results,
        _gemini_junk_run_inside_a_turn,
        _gemini_turn_answered_as_the_model,
        _users_calls_answered_in_the_wrong_role,
        _gemini_answered_by_the_user_then_the_model,
    ],
)
def test_the_role_paths_of_gemini_openai_and_ollama_cost_the_same_per_message(build: Any) -> None:
    small, large = _work(build(250)), _work(build(2_000))
    assert large <= small * 8 * 1.25, (small, large)


def test_a_megabyte_ollama_turn_answered_as_the_assistant_keeps_every_result_in_order() -> None:
    messages = _ollama_turn_answered_as_the_assistant(15_000)
    assert len(json.dumps(messages)) > 1_000_000
    assert len(history.check(messages).of(history.Kind.MISPLACED_RESULT)) == 15_000
    fixed, changes = history.repair(messages)
    assert [m["content"] for m in fixed[2:]] == [f"r{i}" + "x" * 64 for i in range(15_000)]
    assert {m["role"] for m in fixed[2:]} == {"tool"} and len(changes) == 15_000
    assert history.check(fixed).findings == ()


def test_a_megabyte_gemini_turn_answered_by_the_user_then_the_model_keeps_the_order_sent() -> None:
    messages = _gemini_answered_by_the_user_then_the_model(15_000)
    assert len(json.dumps(messages)) > 1_000_000
    assert len(history.check(messages).of(history.Kind.MISPLACED_RESULT)) == 7_500
    fixed, changes = history.repair(messages)
    assert [p["functionResponse"]["response"]["r"] for p in fixed[2]["parts"]] == [
        f"r{i}" + "x" * 64 for i in range(15_000)
    ]
    assert fixed[3:] == [{"role": "model", "parts": [{"text": "so"}]}] and len(changes) == 7_500
    assert history.check(fixed).findings == ()


def test_a_megabyte_run_of_junk_contents_inside_a_gemini_turn_keeps_its_response() -> None:
    messages = _gemini_junk_run_inside_a_turn(15_000)
    assert len(json.dumps(messages)) > 1_000_000
    assert {f.kind for f in history.check(messages).findings} == {history.Kind.UNKNOWN_ROLE}
    fixed, changes = history.repair(messages)
    assert fixed == messages and {c.kind for c in changes} == {"kept-unknown-role"}


# -- whole histories through the command line --------------------------------------------------------------------


def _cli(path: Path, *options: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["history", *options, str(path)], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("fmt", ["gemini", "openai", "ollama"])
def test_history_check_reads_whole_random_histories_and_exits_as_documented(fmt: str, tmp_path: Path) -> None:
    # A request body as sent (Gemini's `contents`, the others' `messages`), its format detected;
    # exit 1 when the API refuses the history, 0 once repaired (unless a junk role is kept).
    make, refused, _, _ = _readings(fmt)
    field = "contents" if fmt == "gemini" else "messages"
    path = tmp_path / "request.json"
    exits = Counter[int]()
    for seed in range(150):
        messages = make(random.Random(seed))
        for body in (messages, history.repair(messages, format=fmt)[0]):  # type: ignore[arg-type]
            path.write_text(json.dumps({field: body}))
            code, out, err = _cli(path, "check")
            assert (code, err) == (1 if refused(body) else 0, ""), (seed, out, err)
            many = f"{len(body)} message{'s' * (len(body) != 1)}"
            assert out.endswith(f"{fmt} history of {many} {'would be rejected' if code else 'pairs up'}\n")
            report = json.loads(_cli(path, "check", "--json")[1])
            assert report["format"] == fmt and report["rejected"] == bool(code)
            exits[code] += 1
    assert exits[0] > 50 and exits[1] > 150, exits


def test_history_check_of_a_megabyte_history_names_each_finding(tmp_path: Path) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps({"messages": _ollama_turn_answered_as_the_assistant(15_000)}))
    assert path.stat().st_size > 1_000_000
    code, out, err = _cli(path, "check")
    assert (code, err) == (1, "") and out.count(": misplaced-result f#") == 15_000


HOSTILE = [
    (
        "ollama",
        [{"role": "assistant", "tool_name": 5}],
        2,
        "message 1: the assistant message's tool_name must be a string",
    ),
    ("ollama", [{"role": "user", "tool_name": ["f"]}], 2, "message 1: the user message's tool_name must be a string"),
    ("ollama", [{"role": "user", "content": "", "tool_calls": [{"function": {"name": ["f"]}}]}], 2, "function name"),
    ("gemini", [{"role": "model", "parts": [{"functionResponse": "sunny"}]}], 2, "functionResponse must be an object"),
    ("openai", [{"role": ["tool"], "tool_call_id": {"id": 1}, "content": "x"}], 1, ""),
    ("openai", [{"role": "assistant", "tool_call_id": 7, "content": "x"}], 2, "tool_call_id's id must be a string"),
]


@pytest.mark.parametrize(("fmt", "body", "code", "said"), HOSTILE, ids=[str(n) for n in range(len(HOSTILE))])
def test_history_check_of_hostile_roles_is_one_line_never_a_traceback(
    fmt: str, body: Any, code: int, said: str, tmp_path: Path
) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps({"contents" if fmt == "gemini" else "messages": body}))
    got, out, err = _cli(path, "check", "--format", fmt)
    assert got == code and err.count("\n") == (code == 2) and said in err, (got, out, err)
    assert "Traceback" not in out + err and (code == 2 or "unknown-role" in out)


def test_history_repair_is_no_command_bad_usage_exit_2(tmp_path: Path, capsys: Any) -> None:
    # repair is a library call (fsm.history.repair); the command line checks only
    path = tmp_path / "request.json"
    path.write_text("[]")
    code, out, err = _cli(path, "repair")
    said = capsys.readouterr().err  # argparse writes its usage error to the process's stderr
    assert code == 2 and "invalid choice: 'repair'" in said and "Traceback" not in said + out + err


def _answered_then_sent_as_the_model(fmt: str) -> list[dict[str, Any]]:
    """Two calls; the user's content answers the first, the model's right after it the second."""
    if fmt == "gemini":  # no ids: the k-th response of a name answers the k-th call of it
        return [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [_g_call("f", "t1", None), _g_call("f", "t2", None)]},
            {"role": "user", "parts": [_g_answer("f", "first", None)]},
            {"role": "model", "parts": [_g_answer("f", "second", None), {"text": "so"}]},
            {"role": "user", "parts": [{"text": "next"}]},
        ]
    if fmt == "bedrock":
        use = [{"toolUse": {"toolUseId": key, "name": "f", "input": {}}} for key in "ab"]
        said = [
            {"toolResult": {"toolUseId": key, "content": [{"text": tag}]}}
            for key, tag in zip("ab", ["first", "second"], strict=True)
        ]
        return [
            {"role": "user", "content": [{"text": "go"}]},
            {"role": "assistant", "content": use},
            {"role": "user", "content": [said[0]]},
            {"role": "assistant", "content": [said[1], {"text": "so"}]},
            {"role": "user", "content": [{"text": "next"}]},
        ]
    use = [{"type": "tool_use", "id": key, "name": "f", "input": {}} for key in "ab"]
    said = [
        {"type": "tool_result", "tool_use_id": key, "content": tag}
        for key, tag in zip("ab", ["first", "second"], strict=True)
    ]
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": use},
        {"role": "user", "content": [said[0]]},
        {"role": "assistant", "content": [said[1], {"type": "text", "text": "so"}]},
        {"role": "user", "content": "next"},
    ]


@pytest.mark.parametrize("fmt", ["gemini", "bedrock", "anthropic"])
def test_a_result_the_model_sends_right_after_the_users_joins_them_in_order(fmt: str) -> None:
    # The user's results closed the turn: the second call was dangling, the model's result for it
    # an orphan, and repair dropped it for a placeholder. It goes after the user's result now, in
    # the order sent (a Gemini response without an id answers the k-th call of its name).
    messages = _answered_then_sent_as_the_model(fmt)
    field = "parts" if fmt == "gemini" else "content"
    assert [(f.kind.value, f.message) for f in history.check(messages).findings] == [("misplaced-result", 4)]
    fixed, changes = history.repair(messages)
    assert _kinds(changes) == [("moved-misplaced-result", 4)]
    assert fixed[2] == {"role": "user", field: [*messages[2][field], messages[3][field][0]]}
    assert fixed[3] == {"role": messages[3]["role"], field: messages[3][field][1:]} and fixed[4] == messages[4]
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


def _with_the_rest_sent_by_the_model(fmt: str, rng: random.Random) -> list[dict[str, Any]]:
    """Audit 30's random history, then turns the user answers in part and the model's message right
    after it in full (ids used twice, as the turns before used them), its text after."""
    make = READINGS[fmt][0]
    sent: list[dict[str, Any]] = make(rng)
    serial = iter(range(1_000_000))
    if sent[-1]["role"] == "assistant":
        sent.append({"role": "user", "content": [{"text": "go on"}] if fmt == "bedrock" else "go on"})
    for _ in range(rng.randint(1, 3)):
        keys = [rng.choice(["x", "y", f"z{next(serial)}"]) for _ in range(rng.randint(1, 3))]
        if fmt == "bedrock":
            uses = [_c_use(key, f"q{next(serial)}") for key in keys]
            answers = [_c_answer(key, f"w{next(serial)}") for key in keys]
            text: dict[str, Any] = {"text": "so"}
        else:
            uses = [_use(key, f"q{next(serial)}") for key in keys]
            answers = [_answer(key, f"w{next(serial)}") for key in keys]
            text = _said("so")
        k = rng.randint(1, len(answers))  # a user message of no results ends the turn: the calls dangle
        sent += [
            {"role": "assistant", "content": uses},
            {"role": "user", "content": answers[:k]},
            {"role": "assistant", "content": [*answers[k:], text]},
            {"role": "user", "content": [text]},
        ]
    return sent


@pytest.mark.parametrize("fmt", sorted(READINGS))
def test_random_turns_the_model_answers_after_the_user_keep_each_answer(fmt: str) -> None:
    counted = found_and_repaired(fmt, lambda rng: _with_the_rest_sent_by_the_model(fmt, rng), 600)
    assert counted["moved"] > 1_000, counted


ANY_ROLE = {
    "gemini": ["user", "model", "assistant", None, 5, "tool", "function"],
    "openai": ["user", "assistant", "tool", "system", None, 5, "robot", "function", "developer"],
    "ollama": ["user", "assistant", "tool", "system", None, 5, "developer"],
    "anthropic": ["user", "assistant", None, 5, "system", "tool"],
    "bedrock": ["user", "assistant", None, 5, "system", "tool"],
}


@pytest.mark.parametrize("fmt", sorted(ANY_ROLE))
def test_any_role_at_any_place_is_found_and_repaired_once_for_all(fmt: str) -> None:
    # A random history (audit 30's for Anthropic and Converse) with a role swapped for any other at
    # up to three places: a finding or a
    # refusal naming the message (LocalProtocolError), never a bare error; repair leaves only the
    # junk roles it keeps, and repairing again changes nothing.
    make = READINGS[fmt][0] if fmt in READINGS else _readings(fmt)[0]
    refused_input = 0
    for seed in range(1_000):
        rng = random.Random(seed)
        messages = make(rng)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(messages))
            messages[at] = {**messages[at], "role": rng.choice(ANY_ROLE[fmt])}
        try:
            history.check(messages, fmt)  # type: ignore[arg-type]
        except LocalProtocolError:
            refused_input += 1  # a tool message making calls, say: no conversation
            continue
        for policy in POLICIES:
            fixed, changes = history.repair(messages, policy, fmt)  # type: ignore[arg-type]
            dropped = sum(c.kind in ("dropped-orphan", "dropped-duplicate-result") for c in changes)
            assert _sent(fixed) == _sent(messages) - dropped, seed  # each result kept, or said dropped
            left = {f.kind for f in history.check(fixed, fmt).findings} - {
                history.Kind.UNKNOWN_ROLE,
                history.Kind.REUSED,
            }  # type: ignore[arg-type]
            again, more = history.repair(fixed, policy, fmt)  # type: ignore[arg-type]
            assert not left and again == fixed and {c.kind for c in more} <= {"kept-unknown-role"}, (seed, left, more)
    assert refused_input < 300, refused_input


def _sent(messages: list[dict[str, Any]]) -> int:
    """How many results the messages send, placeholders aside (any format of this module's)."""
    held = []
    for message in messages:
        if _answer_key(message) is not None:
            held.append(message["content"])
        blocks = message.get("parts", message.get("content"))
        for block in blocks if isinstance(blocks, list) else ():
            if "functionResponse" in block:
                held.append(block["functionResponse"]["response"].get("r", PH))  # a placeholder: {"error": PH}
            elif "toolResult" in block:
                held.append(block["toolResult"]["content"][0]["text"])
            elif block.get("type") == "tool_result":
                held.append(block["content"])
    return sum(tag != PH for tag in held)


def test_an_anthropic_message_of_a_junk_role_making_calls_is_read_as_the_models() -> None:
    # Its calls ended the assistant run after it: repair moved the result the run held into a user
    # message after it, and the history it gave had the call dangling and the result an orphan
    # (so repair of repair changed it again). Only the model makes calls: the run goes on from it.
    messages = [
        {"role": "user", "content": "go"},
        {"role": "robot", "content": [_use("a", "c1")]},
        {"role": "assistant", "content": [_said("so"), _answer("a", "sunny")]},
    ]
    assert _findings(messages) == [("unknown-role", "", 2), ("misplaced-result", "a", 3)]
    fixed, changes = history.repair(messages)
    assert fixed == [
        *messages[:2],
        {"role": "assistant", "content": [_said("so")]},
        {"role": "user", "content": [_answer("a", "sunny")]},
    ]
    assert _kinds(changes) == [("kept-unknown-role", 2), ("moved-misplaced-result", 3)]
    assert _findings(fixed) == [("unknown-role", "", 2)]
    assert history.repair(fixed)[0] == fixed
