"""Hostile audit 41: today's fsm.history changes (empty-message, roleless-as-user, Gemini model
contents in a row, the OpenAI chat next turn of a turn that said nothing), through the public API.

What it found, fixed here: an OpenAI chat assistant message carrying a ``tool_call_id`` and no
content (a result sent in the assistant's role) was read as an empty message, so repair dropped the
result that answered the call and put a placeholder in its place; ``tool_calls`` of another type
than a list (``0``, ``{}``, ``""``) on an assistant message without content were dropped as empty
instead of refused as malformed; and (older) an Anthropic turn whose result came in the model's role
had it moved into its second user message, after the text of the first. What it left (older bugs),
fixed since by fsm.history.after_run: an Anthropic user message making calls right after the model's
calls had its text written between the two runs of calls, and a server call of the history's last
message stayed once repair wrote a message after it. The property now draws such user messages.
Its draw of roles left two gaps, fixed since (tests/test_history_roles42.py): an Anthropic message of a
role it lacks between the model's calls and results sent as the model (policy unknown-role-between), and
two Converse ones a removal brought together (unknown-role-kept-apart).

Then a seeded property test of every format: hostile histories mixing empty messages of every
spelling (and malformed ones), odd and missing roles, calls and results with and without ids,
duplicate ids, results in the model's role, Claude's server blocks, google-genai objects; the
invariants: only fsm's errors escape (check and repair raise alike), the input is never mutated,
same input same output, repair's output passes check (but ``reused``, ``unknown-role``) and repair
leaves it as it is, no result is lost but one a ``dropped-orphan`` or ``dropped-duplicate-result``
names, Converse and Gemini roles alternate; and the work grows linearly (counted, not timed).
"""

from __future__ import annotations

import copy
import itertools
import json
import random
import re
from collections import Counter
from typing import Any

import pytest

from fsm import history
from fsm.errors import LocalProtocolError, ToolcallFSMError
from fsm.history import Kind, RepairPolicy

ALLOWED = {Kind.REUSED, Kind.UNKNOWN_ROLE}


def _kinds(messages: list[Any], fmt: Any) -> list[tuple[str, int]]:
    return [(f.kind.value, f.message) for f in history.check(messages, fmt).findings]


def _clean(fixed: list[dict[str, Any]], fmt: Any) -> None:
    assert [f for f in history.check(fixed, fmt).findings if f.kind not in ALLOWED] == []
    assert history.repair(fixed, None, fmt)[0] == fixed


def _o_call(key: str) -> dict[str, Any]:
    return {"id": key, "type": "function", "function": {"name": "f", "arguments": "{}"}}


# -- found and fixed -----------------------------------------------------------------------------


@pytest.mark.parametrize("content", [{"content": None}, {}])
def test_an_openai_result_sent_as_the_assistant_without_content_is_a_result_not_an_empty_message(
    content: dict[str, Any],
) -> None:
    """An assistant message with a tool_call_id answers the call (misplaced-result): the empty-message
    policy took it for an empty turn, dropped it and gave the call a placeholder instead."""
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [_o_call("call_1")]},
        {"role": "assistant", "tool_call_id": "call_1", "name": "f", **content},
    ]
    assert _kinds(messages, "openai") == [("misplaced-result", 3)]
    fixed, changes = history.repair(messages, None, "openai")
    assert [(c.kind, c.message) for c in changes] == [("moved-misplaced-result", 3)]
    assert fixed[2] == {**messages[2], "role": "tool"}
    _clean(fixed, "openai")


@pytest.mark.parametrize("calls", [0, {}, "", False, {"id": "x"}])
def test_openai_tool_calls_that_are_no_list_stay_malformed_beside_no_content(calls: Any) -> None:
    """Malformed input raises LocalProtocolError; with no content beside them they were dropped as empty."""
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": calls}]
    with pytest.raises(LocalProtocolError, match="message 2: tool_calls must be a list"):
        history.check(messages, "openai")
    with pytest.raises(LocalProtocolError, match="message 2: tool_calls must be a list"):
        history.repair(messages, None, "openai")


def test_openai_assistant_with_tool_calls_an_empty_list_and_no_content_is_still_empty() -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": []}]
    assert _kinds(messages, "openai") == [("empty-message", 2)]
    assert history.repair(messages, None, "openai")[0] == messages[:1]


def _a_call(*keys: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": k, "name": "f", "input": {}} for k in keys]}


def _a_result(key: str, tag: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": key, "content": tag}


def test_anthropic_result_sent_as_the_model_goes_first_in_the_runs_first_user_message() -> None:
    """The user's run after it (text, then text and another result) is one turn: the result the model's
    message sent went to the run's second message, after the first's text (result-after-text)."""
    text = {"type": "text", "text": "t"}
    messages = [
        {"role": "user", "content": "hi"},
        _a_call("a", "b"),
        {"role": "assistant", "content": [_a_result("a", "ra")]},
        {"role": "user", "content": [text]},
        {"role": "user", "content": [text, _a_result("b", "rb")]},
    ]
    fixed, _ = history.repair(messages, None, "anthropic")
    assert fixed[2] == {"role": "user", "content": [_a_result("a", "ra"), _a_result("b", "rb"), text]}
    _clean(fixed, "anthropic")


# -- found and left (older than today's changes), fixed since (fsm.history.after_run) ---------------

_PLACEHOLDER = "The tool call was not completed; no result is available."


def _a_placeholder(key: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": key, "content": _PLACEHOLDER, "is_error": True}


def test_anthropic_user_message_making_calls_after_the_models_calls_leaves_its_text_after_the_run() -> None:
    """The user message is read as the model's, one run with the calls before it; repair wrote its
    text between them, and the earlier call's placeholder after both (dangling, orphan). Now the text
    goes after the run, the turn's placeholders first (user-content-after-the-run)."""
    messages = [
        {"role": "user", "content": "hi"},
        _a_call("a"),
        {"role": "user", "content": [{"type": "text", "text": "t"}, *_a_call("b")["content"]]},
    ]
    fixed, changes = history.repair(messages, None, "anthropic")
    assert fixed == [
        messages[0],
        messages[1],
        _a_call("b"),
        {"role": "user", "content": [_a_placeholder("a"), _a_placeholder("b"), {"type": "text", "text": "t"}]},
    ]
    assert [(c.kind, c.message, c.id) for c in changes] == [
        ("placeholder-result", 2, "a"),
        ("moved-user-content", 3, None),
        ("moved-misplaced-call", 3, "b"),
        ("placeholder-result", 3, "b"),
    ]
    _clean(fixed, "anthropic")


def test_anthropic_server_call_of_the_last_message_goes_once_repair_writes_after_it() -> None:
    """A paused turn's server call may wait in the last message alone: the placeholder of the call
    before it now follows that message, so the call goes (paused-call-last-only), and the message
    with it, the result there answering nothing."""
    messages = [
        {"role": "user", "content": "hi"},
        _a_call("a"),
        {
            "role": "assistant",
            "content": [
                {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}},
                _a_result("x", "rx"),  # answers nothing: dropped
            ],
        },
    ]
    fixed, changes = history.repair(messages, None, "anthropic")
    assert fixed == [messages[0], messages[1], {"role": "user", "content": [_a_placeholder("a")]}]
    assert [(c.kind, c.message, c.id) for c in changes] == [
        ("placeholder-result", 2, "a"),
        ("dropped-orphan", 3, "x"),
        ("dropped-call", 3, "s"),
        ("dropped-empty-message", 3, None),
    ]
    _clean(fixed, "anthropic")


# -- the property ----------------------------------------------------------------------------------

FORMATS = ["openai", "anthropic", "gemini", "bedrock", "ollama", "responses"]
EMPTY = ["missing", None, "", [], "missing", None, "", [], {}, 0, [None]]
ROLES: dict[str, list[Any]] = {
    "openai": ["user", "assistant", "tool", "system", "weird", None],
    "ollama": ["user", "assistant", "tool", "system", 3],
    "anthropic": ["user", "assistant", "user", "assistant", "system", "weird", None],
    "bedrock": ["user", "assistant", "assistant", "user", "system", "weird", None],
    "gemini": ["user", "model", "model", None, "missing", "function", "assistant"],
    "responses": ["user", "assistant", "system", "weird"],
}
IDS = ["a", "b", "a_d2"]


class _Draw:
    def __init__(self, fmt: str, rng: random.Random) -> None:
        self.fmt, self.rng, self.tags = fmt, rng, 0

    def tag(self) -> str:
        self.tags += 1
        return f"r{self.tags}"

    def key(self) -> str | None:
        return self.rng.choice([*IDS, None] if self.fmt == "gemini" else IDS)

    def call(self) -> dict[str, Any]:
        name, key, fmt = self.rng.choice("fg"), self.key(), self.fmt
        if fmt == "ollama":
            return {"function": {"name": name, "arguments": {}}}
        if fmt == "openai":
            return {"id": key, "type": "function", "function": {"name": name, "arguments": "{}"}}
        if fmt == "anthropic":
            return {"type": "tool_use", "id": key, "name": name, "input": {}}
        if fmt == "bedrock":
            return {"toolUse": {"toolUseId": key, "name": name, "input": {}}}
        return {"functionCall": {"name": name, "args": {}, **({"id": key} if key else {})}}

    def result(self) -> dict[str, Any]:
        key, tag = self.key(), self.tag()
        if self.fmt == "anthropic":
            return {"type": "tool_result", "tool_use_id": key, "content": tag}
        if self.fmt == "bedrock":
            return {"toolResult": {"toolUseId": key, "content": [{"text": tag}]}}
        response = {"name": self.rng.choice("fg"), "response": {"tag": tag}}
        return {"functionResponse": {**response, **({"id": key} if key else {})}}

    def empty(self, role: Any) -> dict[str, Any]:
        message: dict[str, Any] = {} if role == "missing" else {"role": role}
        spelling = self.rng.choice(EMPTY)
        if spelling != "missing":
            message["parts" if self.fmt == "gemini" else "content"] = copy.deepcopy(spelling)
        if self.fmt == "openai" and self.rng.random() < 0.3:
            message["tool_calls"] = self.rng.choice([None, [], 0])
        return message

    def flat(self, role: Any) -> dict[str, Any]:
        """OpenAI, Ollama, Responses: a message (an item) holds one call list, one result or text."""
        rng, fmt, pick = self.rng, self.fmt, self.rng.random()
        if fmt == "responses":
            key = rng.choice(IDS)
            if pick < 0.4:
                return {"type": "function_call", "call_id": key, "name": "f", "arguments": "{}"}
            if pick < 0.7:
                return {"type": "function_call_output", "call_id": key, "output": self.tag()}
            if pick < 0.8:
                return {"type": "reasoning", "id": "rs", "summary": []}
            return {"type": "message", "role": role, "content": rng.choice(["hi", "", [], None])}
        if pick < 0.4:
            calls = [self.call() for _ in range(rng.randint(1, 3))]
            content = rng.choice([None, "", "x"])
            return {"role": rng.choice(["assistant"] * 4 + [role]), "content": content, "tool_calls": calls}
        if pick < 0.75:
            tag = self.tag()  # an OpenAI result may come without content: its name carries the tag then
            answer = {"tool_call_id": rng.choice(IDS), "name": tag} if fmt == "openai" else {"tool_name": "f"}
            return {"role": rng.choice(["tool"] * 4 + [role]), "content": rng.choice([tag, None]), **answer}
        return {"role": role, "content": rng.choice(["hi", "", None])}

    def blocks(self, role: Any) -> dict[str, Any]:
        """Anthropic, Converse, Gemini: blocks of calls or results, text, Claude's server blocks."""
        rng, fmt = self.rng, self.fmt
        calls = rng.random() < 0.5
        model = "model" if fmt == "gemini" else "assistant"
        if calls and fmt == "gemini" and role == "user":
            role = rng.choice([model, None])
        blocks: list[dict[str, Any]] = []
        for _ in range(rng.randint(1, 3)):
            pick = rng.random()
            if pick < 0.5:
                blocks.append(self.call() if calls else self.result())
            elif pick < 0.65 and fmt == "anthropic" and role == "assistant":  # Claude's own, in its message
                server = rng.choice(["s1", "s2", "a"])
                blocks.append({"type": "server_tool_use", "id": server, "name": "web_search", "input": {}})
                blocks.append({"type": "web_search_tool_result", "tool_use_id": server, "content": []})
            else:
                text = rng.choice(["t", ""])
                blocks.append({"type": "text", "text": text} if fmt == "anthropic" else {"text": text})
        message: dict[str, Any] = {"parts" if fmt == "gemini" else "content": blocks}
        if role != "missing":
            message["role"] = role
        return message

    def history(self) -> list[Any]:
        out: list[Any] = []
        for _ in range(self.rng.randint(1, 10)):
            role = self.rng.choice(ROLES[self.fmt])
            if self.rng.random() < 0.25:
                out.append(self.empty(role))
            elif self.fmt in ("openai", "ollama", "responses"):
                out.append(self.flat(role))
            else:
                out.append(self.blocks(role))
        return out


def _sdk(messages: list[Any], rng: random.Random) -> list[Any]:
    """Some well-formed Gemini contents as google-genai ``types.Content`` objects."""
    types = pytest.importorskip("google.genai.types")
    out: list[Any] = []
    for m in messages:
        role, parts = m.get("role"), m.get("parts")
        fits = isinstance(parts, list) and all(type(p) is dict for p in parts)
        fits = fits and (role is None or isinstance(role, str))
        out.append(types.Content(role=role, parts=parts) if fits and rng.random() < 0.5 else m)
    return out


def _snapshot(messages: list[Any]) -> str:
    return json.dumps([m if isinstance(m, dict) else m.model_dump() for m in messages], sort_keys=True, default=repr)


def _tags(value: Any) -> set[str]:
    return set(re.findall(r'"(r\d+)"', json.dumps(value, default=repr)))


def _holds(messages: list[Any], fixed: list[dict[str, Any]], changes: list[history.Change], fmt: str) -> None:
    """The invariants of one repaired history (``fixed``, ``changes``) of ``messages`` (check did not raise)."""
    assert [f for f in history.check(fixed, fmt).findings if f.kind not in ALLOWED] == [], (messages, fixed)
    assert history.repair(fixed, POLICY[fmt], fmt)[0] == fixed
    named = {c.message for c in changes if c.kind in ("dropped-orphan", "dropped-duplicate-result")}
    kept = _tags(fixed)
    plain = [m if isinstance(m, dict) else m.model_dump() for m in messages]
    for at, message in enumerate(plain, 1):  # a result gone is one a change names as answering nothing
        assert _tags(message) <= kept or at in named, (at, messages, fixed, changes)
    if fmt in ("gemini", "bedrock"):  # Converse and Gemini want the two roles to alternate
        known = [(m.get("role"), any("functionCall" in p for p in m.get("parts") or ())) for m in fixed]
        if fmt == "gemini":  # a content without a role is the user's, or the model's making calls
            known = [(role if role is not None else "model" if calls else "user", calls) for role, calls in known]
        roles = [role if role in ("user", "model" if fmt == "gemini" else "assistant") else None for role, _ in known]
        assert not any(x == y and x is not None for x, y in itertools.pairwise(roles)), fixed


POLICY: dict[str, RepairPolicy | None] = dict.fromkeys(FORMATS)


@pytest.mark.parametrize("fmt", FORMATS)
def test_property_hostile_histories_keep_the_invariants(fmt: str) -> None:
    seen: Counter[str] = Counter()
    for seed in range(400):
        rng = random.Random(f"{fmt}-{seed}")
        messages = _Draw(fmt, rng).history()
        if fmt == "gemini" and seed % 3 == 0:
            messages = _sdk(messages, rng)
        POLICY[fmt] = RepairPolicy(dangling="drop-call") if seed % 2 else None
        before = _snapshot(messages)
        try:
            report = history.check(messages, fmt)
        except LocalProtocolError:
            seen["malformed"] += 1
            with pytest.raises(LocalProtocolError):
                history.repair(messages, POLICY[fmt], fmt)
            assert _snapshot(messages) == before
            continue
        except ToolcallFSMError as exc:  # any other of fsm's own is a surprise here
            pytest.fail(f"{type(exc).__name__}: {exc}")
        seen["empty" if report.of(Kind.EMPTY_MESSAGE) else "read"] += 1
        fixed, changes = history.repair(messages, POLICY[fmt], fmt)
        assert _snapshot(messages) == before  # never mutated
        assert history.check(messages, fmt) == report  # same input, same output
        assert history.repair(messages, POLICY[fmt], fmt) == (fixed, changes)
        _holds(messages, fixed, changes, fmt)
    assert seen["read"] + seen["empty"] > 100 and (fmt in ("ollama", "responses") or seen["empty"] > 20), seen


def _counted(monkeypatch: pytest.MonkeyPatch, n: int) -> int:
    """How often a Gemini part is looked into while a history of ``n`` contents is checked and repaired:
    roleless ones, model runs, empty ones, calls and responses between."""
    from fsm.history import formats, rewrite, turns

    count = [0]
    real = formats.gemini_payload

    def counted(part: Any, kind: Any) -> Any:
        count[0] += 1
        return real(part, kind)

    for module in (formats, rewrite, turns):
        monkeypatch.setattr(module, "gemini_payload", counted)
    call = {"functionCall": {"name": "f", "args": {}}}
    answer = {"functionResponse": {"name": "f", "response": {}}}
    unit = [{"parts": [call]}, {"role": "model"}, {"role": "model", "parts": [call]}]
    unit += [{"parts": [answer, {"text": "x"}]}]
    unit += [{"parts": [{"text": "y"}]}, {"role": "user", "parts": []}, {"role": "model", "parts": [{"text": "z"}]}]
    messages = [unit[k % len(unit)] for k in range(n)]
    history.check(messages, "gemini")
    history.repair(messages, None, "gemini")
    return count[0]


def test_the_work_is_linear_in_the_messages_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    small, large = _counted(monkeypatch, 1_400), _counted(monkeypatch, 14_000)
    assert small > 1_400 and large <= 11 * small, (small, large)
