"""Hostile audit of Anthropic runs in fsm.history: messages of one role in a row are one turn (the
Messages API combines them), a turn's results go first in its user messages, and Claude's server
blocks pair within the assistant run. Two defects the audit found, and a seeded property test over
random runs that finds both (the API's own reading of a history is the oracle)."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from typing import Any

import pytest

from fsm import history

PH = "PLACEHOLDER"
POLICIES = [history.RepairPolicy(placeholder=PH), history.RepairPolicy("drop-call", PH)]


def _use(call_id: str, tag: str = "") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "f", "input": {"tag": tag}}


def _answer(call_id: str, tag: str = "r") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": tag}


def _search(at: str) -> dict[str, Any]:
    return {"type": "server_tool_use", "id": at, "name": "web_search", "input": {"query": "q"}}


def _found(at: str) -> dict[str, Any]:
    return {"type": "web_search_tool_result", "tool_use_id": at, "content": []}


def _said(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _findings(messages: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(f.kind.value, f.id, f.message) for f in history.check(messages).findings]


@pytest.mark.parametrize("policy", POLICIES, ids=["placeholder", "drop-call"])
def test_a_server_id_again_in_an_assistant_run_keeps_the_runs_calls_one_turn(policy: history.RepairPolicy) -> None:
    # The second message's server call under an id the first one's has ended the run: the client
    # call of the first message was a dangling call, its real result an orphan, and repair dropped
    # that result for a placeholder (or dropped the call). The API combines the run in one turn, so
    # the second server call under `s` is a duplicate call (audit 30): renamed, its result with it.
    messages = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": [_use("a"), _search("s"), _found("s")]},
        {"role": "assistant", "content": [_search("s"), _found("s"), _said("and")]},
        {"role": "user", "content": [_answer("a", "sunny")]},
    ]
    assert _findings(messages) == [("duplicate-call", "s", 3), ("duplicate-result", "s", 3)]
    assert not history.anything_dangling(messages)
    fixed, changes = history.repair(messages, policy)
    assert [(c.kind, c.message) for c in changes] == [("renamed-call", 3), ("renamed-result", 3)]
    assert fixed[2]["content"][:2] == [_search("s_d2"), _found("s_d2")]
    assert [fixed[1], fixed[3]] == [messages[1], messages[3]]


def test_a_server_result_before_its_call_in_a_run_hides_no_result_of_a_later_message() -> None:
    # In the run's first message, a result placed before its call answers nothing. The run's results
    # were told by their slot alone, so the later message's result at that slot vanished with it:
    # its call was a dangling call and dropped, the result left behind with nothing to answer.
    messages = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": [_search("t"), _found("s"), _search("s")]},
        {"role": "assistant", "content": [_said("so"), _found("t")]},
        {"role": "user", "content": "ok"},
    ]
    assert _findings(messages) == [("orphan", "s", 2), ("dangling", "s", 2)]
    fixed, changes = history.repair(messages)
    assert [(c.kind, c.message, c.id) for c in changes] == [("dropped-orphan", 2, "s"), ("dropped-call", 2, "s")]
    assert fixed[1:3] == [messages[1] | {"content": [_search("t")]}, messages[2]]
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


@pytest.mark.parametrize("then", [[], [{"role": "user", "content": "ok"}]], ids=["run-last", "user-after"])
def test_a_placeholder_goes_after_the_assistant_run_not_between_its_messages(then: list[dict[str, Any]]) -> None:
    # The turn's calls end in the run's first message, its server result in the second (a paused
    # turn continued): the placeholder's new user message went after the last call's message,
    # parting the server call from its result, which the API refuses (and repair's own check did).
    messages = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": [_use("b"), _search("s")]},
        {"role": "assistant", "content": [_said("so"), _found("s")]},
        *then,
    ]
    assert _findings(messages) == [("dangling", "b", 2)]
    fixed, changes = history.repair(messages, history.RepairPolicy(placeholder=PH))
    answer = {"type": "tool_result", "tool_use_id": "b", "content": PH, "is_error": True}
    assert fixed == [*messages[:3], {"role": "user", "content": [answer, *([_said("ok")] if then else [])]}]
    assert [(c.kind, c.message, c.id) for c in changes] == [("placeholder-result", 2, "b")]
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


# -- the property test --------------------------------------------------------------------------------


def _random_history(rng: random.Random) -> list[dict[str, Any]]:
    """Runs of assistant messages (text, calls, server calls, their results, server results before
    their call, second ones, ones answering nothing) and of user messages (str content, text,
    images, results before, after and between the text; ids reused, duplicated, answering
    nothing), ending on either role."""
    serial = iter(range(1_000_000))
    ids = ["a", "b", "a_d2"]

    def tag(prefix: str) -> str:
        return f"{prefix}{next(serial)}"

    messages: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
    made: list[str] = []
    servers = 0
    for _ in range(rng.randint(1, 5)):
        for _ in range(rng.choice([1, 2, 3])):
            blocks: list[dict[str, Any]] = []
            for _ in range(rng.randint(0, 4)):
                r = rng.random()
                if r < 0.4:
                    made.append(rng.choice(ids))
                    blocks.append(_use(made[-1], tag("c")))
                elif r < 0.6:  # Anthropic's server ids are its own, unique (one used again: see above)
                    servers += 1
                    blocks += [_search(f"s{servers}")] + ([_found(f"s{servers}")] if rng.random() < 0.6 else [])
                elif r < 0.7:  # a server result before its call, a second one, or one answering nothing
                    blocks.append(_found(f"s{servers + rng.choice([-1, 0, 1])}"))
                else:
                    blocks.append(_said(tag("t")))
            messages.append({"role": "assistant", "content": blocks if blocks or rng.random() < 0.5 else "said"})
        if rng.random() < 0.1:
            break  # a paused turn, last
        for _ in range(rng.choice([1, 2, 3])):
            if rng.random() < 0.15:
                messages.append({"role": "user", "content": rng.choice(["", tag("s")])})
                continue
            blocks = []
            for _ in range(rng.randint(0, 4)):
                if rng.random() < 0.55:
                    answered = rng.choice(made) if made and rng.random() < 0.8 else rng.choice(ids)
                    blocks.append(_answer(answered, tag("r")))
                elif rng.random() < 0.8:
                    blocks.append(_said(tag("t")))
                else:
                    blocks.append({"type": "image", "source": {"type": "base64", "data": "x"}})
            messages.append({"role": "user", "content": blocks})
        made = []
    return messages


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return ([_said(content)] if content else []) if isinstance(content, str) else list(content)


def _came_empty(messages: list[dict[str, Any]], at: int) -> bool:
    """A message with no content, which the API refuses but as the final assistant message (empty-message)."""
    return not messages[at]["content"] and not (at == len(messages) - 1 and messages[at]["role"] == "assistant")


def _turns(messages: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The turns the API reads: the messages of one role in a row, combined; those that came empty
    are refused and read as gone, as repair leaves them (empty-message, test_empty41)."""
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for at, message in enumerate(messages):
        if _came_empty(messages, at):
            continue
        if turns and turns[-1][0] == message["role"]:
            turns[-1][1].extend(_blocks(message))
        else:
            turns.append((message["role"], _blocks(message)))
    return turns


def _answers(messages: list[dict[str, Any]]) -> dict[str, str]:
    """Each call's tag and the tag of the result answering it: the k-th result with an id in the
    user turn right after the call's turn answers the k-th call with that id (before repair: where
    it sits in that turn)."""
    turns, answers = _turns(messages), {}
    for (role, blocks), (_, after) in itertools.pairwise(turns):
        if role != "assistant":
            continue
        results: dict[str, list[str]] = {}
        for block in after:
            if block["type"] == "tool_result":
                results.setdefault(block["tool_use_id"], []).append(block["content"])
        k: Counter[str] = Counter()
        for block in blocks:
            if block["type"] == "tool_use":
                of = results.get(block["id"], [])
                if k[block["id"]] < len(of):
                    answers[block["input"]["tag"]] = of[k[block["id"]]]
                k[block["id"]] += 1
    return answers


def _refused(messages: list[dict[str, Any]]) -> list[str]:
    """What the Messages API refuses: a call not answered in the next turn, a turn's results not
    first in it, a result answering no call, a server call without its result but in the last turn."""
    why, turns = [], _turns(messages)
    if history.detect_format(messages) == "anthropic":  # with no tool block it reads as OpenAI chat's
        why += [f"message {at}: no content" for at in range(len(messages)) if _came_empty(messages, at)]
    # A server call waiting in a turn of client calls waits past their results, for the model's next
    # turn, and past its client calls' results in turn (server-call-waits-across-results).
    carried: Counter[str] = Counter()
    pausing: set[str] = set()
    through = False  # the user's turn after the calls it waits past answered one of them
    for t, (role, blocks) in enumerate(turns):
        calls = Counter(b["id"] for b in blocks if b["type"] == "tool_use")
        if role == "assistant":
            own = Counter(b["id"] for b in blocks if b["type"] == "server_tool_use")
            answers = Counter(b["tool_use_id"] for b in blocks if b["type"] == "web_search_tool_result")
            again = set(calls) | {key for key in own if own[key] > answers[key]}
            if +carried and (not through or again & set(+carried)):
                why.append(f"turn {t}: a server call without its result")
                carried = Counter()
            waiting: Counter[str] = Counter()
            for block in blocks:
                if block["type"] == "server_tool_use":
                    waiting[block["id"]] += 1
                elif block["type"] == "web_search_tool_result":
                    if carried[block["tool_use_id"]]:
                        carried[block["tool_use_id"]] -= 1
                        continue
                    if not waiting[block["tool_use_id"]]:
                        why.append(f"turn {t}: a server result answering nothing")
                    waiting[block["tool_use_id"]] -= 1
            if calls and (+waiting or +carried):
                carried, pausing, through = +carried + +waiting, set(calls), False
            else:
                if +carried and (t < len(turns) - 1 or +own):  # the last turn may be paused as the code runs on
                    why.append(f"turn {t}: a server call without its result")
                carried = Counter()
                if +waiting and t < len(turns) - 1:
                    why.append(f"turn {t}: a server call without its result")
            if any(n > 1 for n in calls.values()):
                why.append(f"turn {t}: two calls under one id")
            after = turns[t + 1][1] if t + 1 < len(turns) else []
            if calls and Counter(b.get("tool_use_id") for b in after if b["type"] == "tool_result") != calls:
                why.append(f"turn {t}: its calls are not answered in the next turn")
        else:
            through = through or any(b["type"] == "tool_result" and b.get("tool_use_id") in pausing for b in blocks)
            kinds = [b["type"] for b in blocks]
            first_other = next((j for j, kind in enumerate(kinds) if kind != "tool_result"), len(kinds))
            if "tool_result" in kinds[first_other:]:
                why.append(f"turn {t}: a result after another block")
            if "tool_result" in kinds and (t == 0 or not any(b["type"] == "tool_use" for b in turns[t - 1][1])):
                why.append(f"turn {t}: results answering no call")
    return why


def test_random_anthropic_runs_repair_to_what_the_api_takes_keeping_every_answer() -> None:
    checked = Counter[str]()
    for seed in range(1_000):
        messages = _random_history(random.Random(seed))
        report = history.check(messages)
        assert report.rejected == bool(_refused(messages)), (seed, _refused(messages), report.findings)
        for policy in POLICIES:
            fixed, changes = history.repair(messages, policy)
            assert _refused(fixed) == [], (seed, policy.dangling)
            assert not history.check(fixed).rejected and not history.anything_dangling(fixed)
            assert history.repair(fixed, policy) == (fixed, [])
            kept = _answers(fixed)
            # every answer stays with its call (under the id a rename gave both); nothing is invented
            assert all(kept.get(call) == result for call, result in _answers(messages).items()), seed
            given = {b["content"] for m in messages for b in _blocks(m) if b["type"] == "tool_result"}
            assert all(b["content"] in given | {PH} for m in fixed for b in _blocks(m) if b["type"] == "tool_result")
            for change in changes:  # 1-based input positions, naming a block the message holds
                if change.id is not None:
                    held = {b.get("id") for b in _blocks(messages[change.message - 1])}
                    held |= {b.get("tool_use_id") for b in _blocks(messages[change.message - 1])}
                    assert change.id in held or change.kind == "placeholder-result", (seed, change)
            if not report.rejected:  # an accepted history comes back as it came, the same objects
                assert changes == [] and all(a is b for a, b in zip(fixed, messages, strict=True)), seed
            checked[f"{policy.dangling}-changed" if changes else "kept"] += 1
        checked["answers"] += len(_answers(messages))
    assert checked["answers"] > 1_500 and checked["kept"] > 20
