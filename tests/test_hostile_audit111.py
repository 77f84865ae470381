"""Hostile audit 111 of helper 107's work: Cohere's thinking beside text, its plan without calls and
another provider's reasoning (policies cohere-thinking-beside-text, cohere-plan-without-calls,
cohere-foreign-reasoning), and Gemini chains' responses in a model content (policies
chain-response-in-the-model-content, id-less-responses-unchained). The audit found no bug; these
hold what it checked, more widely than the tests beside the work: Cohere streams mutated around the
capture read alike as dicts and as bytes in any pieces, with or without the decoder's shortcut, lax
and strict; the Cohere message made from every capture's result is one Cohere's SDK takes, keeping
every word once; and repair of Gemini histories with chains, under every RepairPolicy, leaves one
check accepts, names every response it drops and changes nothing check found nothing wrong with."""

from __future__ import annotations

import copy
import json
import random
from collections import Counter
from typing import Any

import cohere
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fsm import Reassembler, history, messages
from fsm.errors import ToolcallFSMError
from fsm.harness.captures import PROVIDER_OF_SHAPE
from fsm.wire.decoders.cohere import CohereDecoder
from tests.conftest import CAPTURES, captures, require_captures

# -- 1. Cohere: a piece holding thinking and text, read every way ------------------------------------------------

_WORDS = ["a", " think", "é🙂", '"q\\', "x" * 30]


def _piece(rng: random.Random) -> dict[str, Any]:
    """A content delta or start holding thinking, text, both (in either order) or neither, at an
    index Cohere gives, one below 0, one past 63 bits, or none."""
    keys = ["thinking", "text"]
    rng.shuffle(keys)
    content = {key: rng.choice([*_WORDS, "", None]) for key in keys if rng.random() < 0.85}
    event: dict[str, Any] = {"type": rng.choice(["content-delta"] * 4 + ["content-start"])}
    event["delta"] = {"message": {"content": content}}
    at = rng.choice([0, 0, 1, -1, -5, None, "none", 1 << 63])
    if at != "none":
        event["index"] = at
    return event


def _mutated(rng: random.Random, base: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The capture with such pieces (some thrice, so a form is learnt from the bytes), plain text
    and plans between its plan and call deltas, and at times cut short."""
    plain = {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "t"}}}}
    plan = {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "p"}}}
    out: list[dict[str, Any]] = []
    for event in base:
        out.append(event)
        for _ in range(rng.randint(1, 4) if rng.random() < 0.25 else 0):
            out += rng.choice([[_piece(rng)] * rng.choice([1, 3]), [plain] * 3, [plan]])
    return out[: rng.randrange(len(out) + 1)] if rng.random() < 0.3 else out


def _read(events: list[dict[str, Any]], size: int | None, strict: bool) -> tuple[Any, ...]:
    r = Reassembler("cohere", strict=strict)
    outputs: list[Any] = []
    try:
        if size is None:
            for event in events:
                outputs += r.feed(event)
        else:
            wire = b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events)
            step = size or len(wire) or 1
            for at in range(0, len(wire), step):
                outputs += r.feed_bytes(wire[at : at + step])
        return r.close(), r.diagnostics, outputs
    except ToolcallFSMError as error:  # any other error fails the test
        return type(error), str(error)


@pytest.mark.parametrize("seed", range(12))
def test_cohere_pieces_holding_thinking_and_text_read_alike_every_way(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    require_captures()
    base = [json.loads(line) for line in (CAPTURES / "cohere" / "vercel-cohere-tool-call.jsonl").open()]
    events = _mutated(random.Random(seed), base)
    for strict in (False, True):
        fed = _read(events, None, strict)
        for size in (0, 7, 1):  # (0: the whole stream at once)
            assert _read(events, size, strict) == fed, (seed, strict, size)
        with monkeypatch.context() as patched:
            patched.setattr(CohereDecoder, "commonest_said", lambda self, payload, content: False)
            assert _read(events, None, strict) == fed
            assert _read(events, 7, strict) == fed


def test_a_megabyte_of_thinking_beside_text_is_kept_whole_read_a_byte_at_a_time() -> None:
    thought = {"thinking": "M" * (1 << 20), "text": "after"}
    events: list[dict[str, Any]] = [
        {"type": "message-start", "delta": {"message": {"role": "assistant"}}},
        {"type": "content-delta", "index": 1, "delta": {"message": {"content": thought}}},
        {"type": "message-end", "delta": {"finish_reason": "COMPLETE"}},
    ]
    result, said, _ = _read(events, 1, strict=True)
    assert (result.text, [(r.text, r.output_index) for r in result.reasoning], said) == (
        "after",
        [("M" * (1 << 20), 1)],
        [],
    )


# -- 2. Cohere's next turn from every capture's result -----------------------------------------------------------


def _cohere_messages() -> list[tuple[str, Any, dict[str, Any]]]:
    made = []
    for path in captures():
        data = path.read_bytes()
        rng = random.Random(path.name)
        for cut in [len(data), *(rng.randrange(len(data)) for _ in range(8))]:
            r = Reassembler(PROVIDER_OF_SHAPE[path.parent.name])
            try:
                r.feed_bytes(data[:cut])
                result = r.close()
            except ToolcallFSMError:
                continue
            for incomplete in ("omit", "include"):
                made.append(
                    (
                        f"{path.name}[:{cut}]",
                        result,
                        messages.assistant_message(result, "cohere", incomplete=incomplete),
                    )
                )
    return made


def test_the_cohere_message_of_every_captures_result_is_the_sdks_keeping_every_word_once() -> None:
    require_captures()
    made = _cohere_messages()
    assert len({result.provider for _, result, _ in made}) >= 6
    for where, result, message in made:
        cohere.AssistantChatMessageV2.model_validate({k: v for k, v in message.items() if k != "role"})
        items = message["content"] if isinstance(message.get("content"), list) else []
        thinking = [item["thinking"] for item in items if item["type"] == "thinking"]
        ours = result.provider == "cohere"
        assert thinking == [r.text for r in result.reasoning if r.text and (r.output_index is not None or not ours)]
        plan = "".join(r.text for r in result.reasoning if r.output_index is None and ours)
        said = message.get("tool_plan") if message.get("tool_calls") else message.get("content")
        if isinstance(said, list):
            said = "".join(item.get("text", "") for item in said)
        assert (said or "") == "\n\n".join(part for part in (plan, result.text) if part), where


# -- 3. Gemini chains under every RepairPolicy --------------------------------------------------------------------

ASK = {"role": "user", "parts": [{"text": "hi"}]}
POLICIES = [history.RepairPolicy(), history.RepairPolicy(dangling="drop-call")]


def _history(rng: random.Random) -> list[dict[str, Any]]:
    """Calls (some id-less, some under an id used twice), responses going on or not (some id-less,
    some to no call, in snake_case) in user, model and function contents, and text."""
    conversation, tag, snake = [copy.deepcopy(ASK)], 0, rng.random() < 0.2
    for _ in range(rng.randint(1, 10)):
        role = rng.choice(["model", "user", "model", "user", "function" if rng.random() < 0.2 else "user"])
        calling = role == "model" and rng.random() < 0.6
        parts: list[dict[str, Any]] = []
        for _ in range(rng.randint(1, 4)):
            if role != "function" and rng.random() < 0.2:
                parts.append({"text": "t"})
            elif calling:
                said: dict[str, Any] = {"name": rng.choice("fg"), "args": {}}
                if rng.random() < 0.9:
                    said["id"] = rng.choice("abc")
                parts.append({"function_call" if snake else "functionCall": said})
            else:
                tag += 1
                said = {"name": rng.choice("ffg"), "response": {"x": tag}}
                if rng.random() < 0.93:
                    said["id"] = rng.choice("aaabx")
                more = rng.choice([True, True, True, None, False])
                if more is not None:
                    said["will_continue" if snake else "willContinue"] = more
                parts.append({"function_response" if snake else "functionResponse": said})
        conversation.append({"role": role, "parts": parts})
    return conversation


def _responses(conversation: list[dict[str, Any]], role: str | None = None) -> list[int]:
    return [
        said["response"]["x"]
        for message in conversation
        if role is None or message.get("role") == role
        for part in message["parts"]
        if (said := part.get("functionResponse", part.get("function_response"))) is not None and "x" in said["response"]
    ]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 1 << 32))
def test_repair_of_gemini_chains_holds_under_every_policy(seed: int) -> None:
    conversation = _history(random.Random(seed))
    before = copy.deepcopy(conversation)
    found = [f for f in history.check(conversation, "gemini").findings if f.kind in history.REJECTED]
    for policy in POLICIES:
        try:
            fixed, changes = history.repair(conversation, format="gemini", policy=policy)
        except ToolcallFSMError:
            continue  # (a content both making calls and answering them is refused)
        assert conversation == before
        assert not [f for f in history.check(fixed, "gemini").findings if f.kind in history.REJECTED]
        assert history.repair(fixed, format="gemini", policy=policy) == (fixed, [])
        assert not history.anything_dangling(fixed)
        assert _responses(fixed, "model") == []
        lost = Counter(_responses(conversation)) - Counter(_responses(fixed))
        assert sum(lost.values()) == sum(c.kind in ("dropped-orphan", "dropped-duplicate-result") for c in changes)
        assert bool(found) == bool(changes)  # check and repair agree
        strays = Counter(
            f.message for f in found if f.kind == history.Kind.MISPLACED_RESULT and "willContinue" in f.detail
        )
        moved = Counter(c.message for c in changes if c.kind.startswith(("moved-", "dropped-orphan", "dropped-dup")))
        assert not strays - moved  # each stray found is moved or dropped
