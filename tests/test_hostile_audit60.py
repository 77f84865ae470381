"""Audit 60: repair's own output, read again. Audit 51's corpus (87,574 histories of every format)
rerun on main: no Converse (``"bedrock"``) repair with the format named raises on a second pass any
more (audit 52 fixed them); every case left raising was read with ``format="auto"``, where
``check(repair(h))`` or ``repair(repair(h))`` raised ``LocalProtocolError`` on repair's output, or
found what the first repair had kept. Four causes, each failing here before its fix:

* A repair that removes every call and result leaves a history telling no format, read as OpenAI
  chat's: Claude's empty final assistant message (a prefill, which Anthropic takes) was then
  ``empty-message`` and a second repair dropped it. Policy auto-by-tool-content: a history telling no
  format is not judged (``check`` finds nothing, ``repair`` changes nothing).
* A message of role ``tool`` kept for the caller to name (``unknown-role`` in Anthropic, Converse and
  Responses histories) told OpenAI chat, whose ``tool`` message has a ``tool_call_id``: once repair had
  dropped the results before it, the output was read as OpenAI's and raised ("a tool message has no
  id"). Such a message tells no format now.
* A history holding blocks of two formats was read in the one its first telling message tells: once
  repair had dropped the messages before it, another format's block told first (an id-less Anthropic
  block in a Converse history, an Ollama call whose arguments are text, an OpenAI call whose are an
  object), and that format refused the history. The history is now read in the first format it
  tells that reads it.
* An Anthropic assistant message holding a block whose ``type`` is an object, before a message making
  calls, made ``repair`` raise ``TypeError`` (unhashable) as it looked for the run's first call.

And the Converse fix ``kept_apart`` (audit 52) applies to Gemini: the model's content sending a turn's
results with text, past a content of an unknown role, and the user's results after it. Audit 60
fuzzed Gemini histories with and without ids (the audit's fuzzers, 15,000 histories; a Gemini port of
audit 52's generator, below, 20,000 more, each repaired under three policies, the format named and
``"auto"``): none broke repair's promises. With ``kept_apart`` off for Gemini, 38 of the generator's
first 3,000 did (a second repair dropped the turn's answer for placeholders); the tests below keep it.
"""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter
from typing import Any

import pytest

from fsm import history
from fsm.errors import LocalProtocolError
from fsm.history import REJECTED, Kind, RepairPolicy

DROP = RepairPolicy(dangling="drop-call")
PLACEHOLDER = "The tool call was not completed"


def _again(messages: list[dict[str, Any]], policy: RepairPolicy | None = None) -> list[dict[str, Any]]:
    """Repair with ``format="auto"``; its output, read again so, is accepted (but a role kept for the
    caller to name) and left as it is by a second repair."""
    fixed, _ = history.repair(messages, policy)
    found = history.check(fixed).findings
    assert [(f.kind.value, f.message) for f in found if f.kind in REJECTED - {Kind.UNKNOWN_ROLE}] == []
    again, changes = history.repair(fixed, policy)
    assert again == fixed and [c.kind for c in changes if c.kind != "kept-unknown-role"] == []
    return fixed


def _use(key: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": key, "name": "f", "input": {}}


def _c_use(key: str) -> dict[str, Any]:
    return {"toolUse": {"toolUseId": key, "name": "f", "input": {}}}


def _c_result(key: str, text: str) -> dict[str, Any]:
    return {"toolResult": {"toolUseId": key, "content": [{"text": text}]}}


# -- a history telling no format is not judged (auto-by-tool-content) -------------------------------


def test_claudes_empty_final_message_stays_once_every_call_goes() -> None:
    # The dangling call goes (drop-call): no tool block is left, and the prefill read as OpenAI
    # chat's assistant message of null content was empty-message, dropped by a second repair.
    messages = [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": [_use("toolu_1")]},
        {"role": "user", "content": "Never mind."},
        {"role": "assistant", "content": None},
    ]
    fixed = _again(messages, DROP)
    assert fixed[-1] == {"role": "assistant", "content": None}
    assert history.check(fixed, "anthropic").findings == ()  # named, Anthropic takes it: a prefill


def test_a_history_telling_no_format_is_not_judged_unless_named() -> None:
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}, {"content": "x"}]
    assert history.detect_format(plain) == "openai"
    assert history.check(plain) == history.Report(None, ())  # judged by no format's rules: it names none
    assert history.repair(plain) == (plain, []) and history.repair(plain)[0][0] is plain[0]
    assert history.anything_dangling(plain) is False
    named = [f.kind.value for f in history.check(plain, "openai").findings]
    assert named == ["empty-message", "unknown-role"]
    bare = [{"role": "user", "content": "hi"}, {"role": "tool", "content": "r"}]
    assert history.check(bare).findings == ()  # a tool message answering by nothing tells no format
    with pytest.raises(LocalProtocolError, match="a tool message has no id"):
        history.check(bare, "openai")
    told = [{"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f"}}]}, *bare]
    with pytest.raises(LocalProtocolError, match="a tool message has no id"):
        history.check(told)  # a call tells OpenAI chat: the tool message is malformed there


# -- a message of role tool kept for the caller to name tells no format -----------------------------


@pytest.mark.parametrize(
    "messages",
    [
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "text", "text": "t"}, _use("a")]},
            {"role": "tool", "content": "odd"},
        ],
        [  # audit 51's case 22244, reduced: the Converse blocks after it tell the format
            {"role": "user", "content": [{"text": "go"}]},
            {"role": "user", "content": [_c_result("x", "R1")]},
            {"role": "tool", "content": [{"text": "odd"}]},
            {"role": "assistant", "content": [_c_use("a")]},
            {"role": "user", "content": [_c_result("a", "R2")]},
        ],
        [
            {"type": "message", "role": "user", "content": "go"},
            {"type": "function_call_output", "call_id": "x", "output": "R1"},
            {"type": "message", "role": "tool", "content": "odd"},
        ],
    ],
    ids=["anthropic", "bedrock", "responses"],
)
def test_a_tool_message_kept_for_the_caller_reads_again(messages: list[dict[str, Any]]) -> None:
    fmt = history.detect_format(messages)
    fixed, changes = history.repair(messages, DROP)
    assert ("kept-unknown-role", 3) in [(c.kind, c.message) for c in changes]
    _again(messages, DROP)
    if fmt == "bedrock":  # its Converse blocks still tell it: the role is named again
        assert history.detect_format(fixed) == "bedrock"
        assert [f.kind.value for f in history.check(fixed).findings] == ["unknown-role"]


# -- a history holding blocks of two formats reads in the first it reads in -------------------------


@pytest.mark.parametrize(
    ("fmt", "messages"),
    [
        (  # audit 51's case 71704, reduced: the orphan goes, the user messages merge, the junk block first
            "bedrock",
            [
                {"role": "user", "content": [{"text": "go"}]},
                {"role": "user", "content": [_c_result("x", "R1")]},
                {"role": "user", "content": [{"type": "server_tool_use"}]},
                {"role": "assistant", "content": [_c_use("a")]},
                {"role": "user", "content": [_c_result("a", "R2")]},
            ],
        ),
        (  # case 68556, reduced: the orphan goes, the call of text arguments tells first
            "ollama",
            [
                {"role": "user", "content": "go"},
                {"role": "tool", "content": "R1", "tool_name": "g"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {"function": {"name": "g", "arguments": "{}"}},
                        {"function": {"name": "g", "arguments": {}}},
                    ],
                },
            ],
        ),
        (  # case 52947, reduced: the orphan goes, the call of object arguments tells first
            "openai",
            [
                {"role": "user", "content": "go"},
                {"role": "tool", "tool_call_id": "x", "content": "R1"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "a", "type": "function", "function": {"name": "g", "arguments": {"x": 1}}}],
                },
            ],
        ),
    ],
)
def test_repairs_output_reads_in_its_format_past_another_formats_block(
    fmt: str, messages: list[dict[str, Any]]
) -> None:
    assert history.detect_format(messages) == fmt
    fixed = _again(messages)
    assert history.detect_format(fixed) == fmt == history.check(fixed).format


def test_a_format_that_refuses_the_history_gives_way_to_one_that_reads_it() -> None:
    mixed = [
        {"role": "user", "content": [{"text": "go"}, {"type": "server_tool_use"}]},  # Anthropic's, id-less
        {"role": "assistant", "content": [_c_use("a")]},
        {"role": "user", "content": [_c_result("a", "R")]},
    ]
    assert history.detect_format(mixed) == "bedrock" and history.check(mixed).findings == ()
    with pytest.raises(LocalProtocolError, match="message 1: a server_tool_use block has no id"):
        history.check(mixed, "anthropic")
    neither = [mixed[0], {"role": "assistant", "content": [_c_use("a"), {"type": "tool_use", "id": "b"}]}]
    with pytest.raises(LocalProtocolError, match="message 1: a server_tool_use block has no id"):
        history.check(neither)  # read in none (Converse refuses a tool_use block): the first one's error


# -- a block type of no str before a message making calls ---------------------------------------------


@pytest.mark.parametrize("kind", [{"k": 1}, ["tool_use"]], ids=["object", "list"])
def test_a_block_type_of_no_str_before_the_calls_is_no_call(kind: Any) -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": kind}]},
        {"role": "assistant", "content": [_use("a")]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "R"}]},
    ]
    assert history.check(messages, "anthropic").findings == ()
    assert history.repair(messages, format="anthropic") == (messages, [])  # it raised TypeError


# -- Gemini: kept_apart ------------------------------------------------------------------------------


def _g_use(key: str | None, name: str, tag: str, signed: bool = False) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": {"tag": tag}}
    part: dict[str, Any] = {"functionCall": call if key is None else {"id": key, **call}}
    if signed:
        part["thoughtSignature"] = "sig"
    return part


def _g_result(key: str | None, name: str, tag: str) -> dict[str, Any]:
    response: dict[str, Any] = {"name": name, "response": {"tag": tag}}
    return {"functionResponse": response if key is None else {"id": key, **response}}


def _said(role: Any, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"parts": list(parts)} if role is None else {"role": role, "parts": list(parts)}


def _g_tags(messages: list[dict[str, Any]]) -> Counter[str]:
    """The real responses a Gemini history holds, by their content (placeholders aside)."""
    found: Counter[str] = Counter()
    for message in messages:
        for part in message.get("parts") or ():
            response = part.get("functionResponse") if isinstance(part, dict) else None
            if isinstance(response, dict):
                text = json.dumps(response.get("response"), sort_keys=True)
                found[text] += 0 if PLACEHOLDER in text else 1
    return +found


def _g_sound(messages: list[dict[str, Any]], policy: RepairPolicy | None = None) -> list[dict[str, Any]]:
    """Repair's promises, Gemini named and auto alike."""
    fixed, changes = history.repair(messages, policy, "gemini")
    found = history.check(fixed, "gemini").findings
    assert [(f.kind.value, f.id, f.message) for f in found if f.kind in REJECTED - {Kind.UNKNOWN_ROLE}] == []
    again, more = history.repair(fixed, policy, "gemini")
    assert again == fixed and [(c.kind, c.message) for c in more if c.kind != "kept-unknown-role"] == []
    assert history.repair(messages, policy)[0] == fixed and _again(messages, policy) == fixed
    sent, kept = _g_tags(messages), _g_tags(fixed)
    assert not kept - sent  # none made up or doubled
    dropped = [change for change in changes if change.kind in ("dropped-orphan", "dropped-duplicate-result")]
    assert sum((sent - kept).values()) == len(dropped), (sent - kept, changes)
    return fixed


@pytest.mark.parametrize("key", ["a", None], ids=["ids", "id-less"])
def test_gemini_results_the_model_sent_past_a_content_of_unknown_role_answer_right_after_the_calls(
    key: str | None,
) -> None:
    other = None if key is None else "b"
    messages = [
        _said("user", {"text": "go"}),
        _said("model", _g_use(key, "f", "C1"), _g_use(other, "g", "C2")),
        _said("tool", {"text": "odd"}),
        _said("model", _g_result(key, "f", "Ra"), {"text": "u"}),
        _said("user", _g_result(other, "g", "Rb"), {"text": "u"}),
        _said("user", _g_result(key, "f", "Ra2")),
    ]
    fixed = _g_sound(messages)
    assert [m["role"] for m in fixed] == ["user", "model", "tool", "user", "model", "user"]
    assert [p["functionResponse"]["response"] for p in fixed[3]["parts"]] == [{"tag": "Ra"}, {"tag": "Rb"}]


def _gemini_history(seed: int, idless: float) -> list[dict[str, Any]]:
    """Gemini turns with ids or none (``idless``: how often a call or response goes without), hostile
    as audit 52's Converse generator: contents of an unknown role (``function`` too, and empty), the
    model's contents sending results with text, the user's text, contents in a row or without a role."""
    rng, counter = random.Random(seed), itertools.count(1)

    def tag(prefix: str) -> str:
        return f"{prefix}{next(counter)}"

    def key() -> str | None:
        return None if rng.random() < idless else rng.choice(["a", "b", "a_d2"])

    def answer(call: tuple[str | None, str]) -> dict[str, Any]:
        wire, name = call
        return _g_result(None if wire is not None and rng.random() < 0.3 else wire, name, tag("R"))

    messages = [_said("user", {"text": "go"})]
    for _ in range(rng.randint(1, 6)):
        parts: list[dict[str, Any]] = [{"text": "looking"}] if rng.random() < 0.4 else []
        calls = [(key(), rng.choice(["f", "g"])) for _ in range(rng.choice([0, 1, 1, 2, 3]))]
        parts += [_g_use(k, n, tag("C"), signed=j == 0 and rng.random() < 0.2) for j, (k, n) in enumerate(calls)]
        messages.append(_said(rng.choice(["model", "model", None]) if calls else "model", *(parts or [{"text": "hi"}])))
        if rng.random() < 0.3:
            role = rng.choice(["function", "tool", "system", 5])
            messages.append(_said(role, *([] if rng.random() < 0.3 else [{"text": "odd"}])))
        roll = rng.random()
        if roll < 0.2 and calls:
            sent = [answer(rng.choice(calls)) for _ in range(rng.randint(1, 2))]
            messages.append(_said("model", *sent, *([{"text": "u"}] if rng.random() < 0.6 else [])))
        elif 0.2 <= roll < 0.28:
            messages.append(_said("user", {"text": "u"}))
        elif 0.28 <= roll < 0.32:
            messages.append(_said(rng.choice(["user", "model"])))
        elif 0.32 <= roll < 0.37 and calls:
            messages.append(_said("function", *[answer(c) for c in calls if rng.random() < 0.7]))
        if calls or rng.random() < 0.3:
            sent = [answer(c) for c in calls if rng.random() < 0.85]
            if rng.random() < 0.2:
                sent.append(_g_result(key(), rng.choice(["f", "g"]), tag("R")))
            if rng.random() < 0.4:
                sent.insert(rng.randint(0, len(sent)), {"text": "u"})
            if rng.random() < 0.2:
                rng.shuffle(sent)
            role = rng.choice(["user", "user", None, "function"])
            messages.append(_said(role, *(sent or [{"text": "next"}])))
            if rng.random() < 0.3:
                messages.append(_said("user", _g_result(key(), rng.choice(["f", "g"]), tag("R"))))
            if rng.random() < 0.1:
                messages.append(_said(rng.choice(["model", "tool"]), {"text": "after"}))
    return messages


@pytest.mark.parametrize("seed", range(300))
def test_gemini_repair_is_idempotent_and_says_what_it_drops(seed: int) -> None:
    messages = _gemini_history(seed, idless=(0.0, 0.5, 1.0)[seed % 3])
    for policy in (RepairPolicy(), DROP):
        _g_sound(messages, policy)
