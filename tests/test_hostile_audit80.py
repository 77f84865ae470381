"""Hostile audit 80: Claude's programmatic tool calling across turns (messages and history).

Random agent loops of code execution calling the client's tools, as Anthropic streams (thinking
with its signature, text, searches and their results, bash runs, the code's server call left
waiting with the client calls naming it their ``caller``, the code's result in a later message,
``pause_turn``), each turn read from its events, its whole bytes and its bytes one at a time, the
next request built with ``fsm.messages``: every request the check accepts, with nothing to repair,
that the anthropic SDK's param types take, and whose blocks are those the SDK's beta stream helper
accumulates. Then the loop broken at random (blocks dropped, doubled or moved, messages swapped,
dropped or given the other role, the user's text put in, the history cut): repair gives a history
its own check accepts, a second repair leaves as it is, and every real result kept once or
dropped by a change that says so.

What was found: the client results of the code's calls sent in the model's role (an assistant
message, ``misplaced-result``) ended the code's wait: check read its server call ``dangling`` and
the code's result, in the model's message after, an ``orphan``, and repair dropped both, though
the history repair writes (the results moved to the user's message after the model's run) would
have kept them answered. Read now as repair writes it (``server-call-waits-across-results``).
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest

import fsm
from fsm import history, messages
from fsm.history import REJECTED, Kind, RepairPolicy
from tests.test_clients import Replay, anthropic_http
from tests.test_hostile_audit48 import _tags
from tests.test_server_tool_turns import block_events, sse

CALLER = "code_execution_20260120"
POLICIES = (RepairPolicy(), RepairPolicy(dangling="drop-call"))
KEPT_CALLS = ("kept-unknown-caller", "kept-call-after-code-result")


def srv(key: str = "s1", name: str = "code_execution") -> dict[str, Any]:
    return {"type": "server_tool_use", "id": key, "name": name, "input": {"code": "x"}}


def use(key: str, code: str | None = "s1") -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_use", "id": key, "name": "q", "input": {}}
    if code:
        block["caller"] = {"type": CALLER, "tool_id": code}
    return block


def res(key: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": key, "content": f"R{key}"}


def ran(key: str = "s1") -> dict[str, Any]:
    return {"type": "code_execution_tool_result", "tool_use_id": key, "content": f"R{key}"}


TEXT = {"type": "text", "text": "so"}


def said(role: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "content": list(blocks)}


def a(*blocks: dict[str, Any]) -> dict[str, Any]:
    return said("assistant", *blocks)


def u(*blocks: dict[str, Any]) -> dict[str, Any]:
    return said("user", *blocks)


ASK = {"role": "user", "content": "Which region sold most?"}


def _sound(conversation: list[dict[str, Any]], policy: RepairPolicy) -> tuple[list[Any], list[Any]]:
    """Repair's promises: a history its check accepts, which a second repair leaves as it is, every
    real result kept once or dropped by a change saying so; an accepted history left as it came."""
    report = history.check(conversation, "anthropic")
    fixed, changes = history.repair(conversation, policy, format="anthropic")
    # The user's content beside the results of code still waiting where the history ends has no place
    # (results-alone-while-code-waits): kept, and said so, each time.
    kept = {change.message for change in changes if change.kind == "kept-results-beside-text"}
    # and a client call naming code the history lacks before it, or code that had finished, kept and said
    calls = {(c.kind.removeprefix("kept-"), c.id) for c in changes if c.kind in KEPT_CALLS}
    left = [f for f in history.check(fixed, "anthropic").findings if f.kind in REJECTED]
    assert {(f.kind.value, f.id) for f in left if f.kind.value in ("unknown-caller", "call-after-code-result")} == calls
    left = [f for f in left if f.kind.value not in ("unknown-caller", "call-after-code-result")]
    assert [f for f in left if f.kind is not Kind.RESULTS_BESIDE_TEXT] == [] and bool(left) <= bool(kept)
    assert not history.anything_dangling(fixed)
    again, more = history.repair(fixed, policy, format="anthropic")
    said = ({"kept-results-beside-text"} if kept else set()) | ({c.kind for c in changes if c.kind in KEPT_CALLS})
    assert again == fixed and {change.kind for change in more} <= said
    sent, kept = _tags(conversation), _tags(fixed)
    assert not kept - sent
    dropped = [change for change in changes if change.kind in ("dropped-orphan", "dropped-duplicate-result")]
    assert sum((sent - kept).values()) == len(dropped), (sent - kept, changes)
    assert bool(changes) == report.rejected or (not report.rejected and not changes), (report, changes)
    return fixed, changes


# -- the results of the code's calls sent in the model's role -------------------------------------

MISPLACED = {
    "at-the-end": [ASK, a(srv(), use("t1")), a(res("t1"))],
    "then-the-code-ran": [ASK, a(TEXT, srv(), use("t1"), use("t2")), a(res("t1"), res("t2")), a(ran(), TEXT)],
    "with-text-then-the-code-ran": [ASK, a(srv(), use("t1")), a(res("t1"), TEXT), a(ran(), TEXT)],
    "beside-the-codes-result": [ASK, a(srv(), use("t1")), a(res("t1"), ran(), TEXT)],
    "in-the-second-round": [ASK, a(srv(), use("t1")), u(res("t1")), a(use("t3")), a(res("t3")), a(ran(), TEXT)],
    "then-more-calls": [ASK, a(srv(), use("t1")), a(res("t1")), a(use("t2")), u(res("t2")), a(ran(), TEXT)],
    "with-text-then-more-calls": [ASK, a(srv(), use("t1")), a(res("t1"), TEXT), a(use("t2")), u(res("t2")), a(ran())],
    "then-the-users-text": [ASK, a(srv(), use("t1")), a(res("t1")), u(TEXT), a(ran(), TEXT)],
}


MOVED = {"moved-misplaced-result", "dropped-empty-message", "merged-messages", "moved-user-content"}


@pytest.mark.parametrize("name", MISPLACED)
def test_results_sent_in_the_models_role_keep_the_code_waiting(name: str) -> None:
    """They are ``misplaced-result`` (repair moves them to the user's message after the model's run
    they are in): the code's call waits past them as it would past the user's, its result answers
    it, and repair keeps both (it dropped them, a dangling call and an orphan)."""
    conversation = MISPLACED[name]
    report = history.check(conversation, "anthropic")
    assert {f.kind.value for f in report.findings} == {"misplaced-result"}, report.findings
    for policy in POLICIES:
        fixed, changes = _sound(conversation, policy)
        assert {change.kind for change in changes} <= MOVED
        blocks = [b for m in fixed if isinstance(m["content"], list) for b in m["content"]]
        assert srv() in blocks
        assert (ran() in blocks) == (ran() in [b for m in conversation[1:] for b in m["content"]])


MORE = {"role": "user", "content": "more"}


@pytest.mark.parametrize(
    ("conversation", "findings"),
    [
        pytest.param(
            [ASK, a(srv(), use("t1")), MORE, a(res("t1"), ran(), TEXT)], {("misplaced-result", "t1")}, id="answered"
        ),
        pytest.param(
            [ASK, a(TEXT, srv(), use("t2"), use("t3")), MORE, a(res("t2"), TEXT), u(TEXT), u(res("t3"))],
            {("dangling", "s1"), ("misplaced-result", "t2"), ("result-after-text", "t3")},
            id="not-answered",
        ),
    ],
)
def test_results_sent_in_the_models_role_after_the_users_text(
    conversation: list[dict[str, Any]], findings: set[tuple[str, str]]
) -> None:
    """After the user's text they go first in its message (the turn waits on past such text): the
    rest of the model's message is the one after them, which answers the code or leaves it dangling
    (read as after the model's run, the code waited on in the check, and repair, writing the rest
    after the results, left it dangling there: its output refused by its own check)."""
    assert {(f.kind.value, f.id) for f in history.check(conversation, "anthropic").findings} == findings
    for policy in POLICIES:
        _sound(conversation, policy)


def test_a_turn_paused_as_the_code_runs_on() -> None:
    """The model's message after the client's results stops ``pause_turn`` before the code's result:
    sent back as it came, last, the server goes on with the turn, whose next message holds the
    result. The check read the code's call ``dangling`` there, and repair dropped it, so the next
    message's result was an orphan (the finished history, the two messages one run, was accepted)."""
    paused = [ASK, a(TEXT, srv(), use("t1")), u(res("t1")), a(TEXT)]
    for conversation in (paused, [*paused, a(ran(), TEXT)], [*paused, a(use("t2")), u(res("t2"))]):
        assert history.check(conversation, "anthropic").findings == ()
        for policy in POLICIES:
            assert history.repair(conversation, policy, format="anthropic") == (conversation, [])
    # Not last, it answers nothing: the code's call is dangling (the API refuses it so).
    report = history.check([*paused, ASK], "anthropic")
    assert [(f.kind.value, f.id) for f in report.findings] == [("dangling", "s1")]
    # One that calls a server tool of its own ends the wait, as before.
    searched = [*paused[:3], a(srv("w1", "web_search"))]
    assert [(f.kind.value, f.id) for f in history.check(searched, "anthropic").findings] == [("dangling", "s1")]


# -- the agent loop, as streams ------------------------------------------------------------------


class _Loop:
    """One random programmatic-tool-calling conversation: each turn an Anthropic stream."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.n = 0
        self.waiting: list[str] = []  # the code's server call waiting for the client's results

    def _id(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}_{self.n:03d}"

    def turn(self, kind: str) -> tuple[list[dict[str, Any]], str]:
        rng, at = self.rng, 0
        message = {"id": self._id("msg"), "type": "message", "role": "assistant", "model": "m", "content": []}
        events: list[dict[str, Any]] = [{"type": "message_start", "message": {**message, "usage": {}}}]

        def add(start: dict[str, Any], *deltas: dict[str, Any]) -> None:
            nonlocal at
            events.extend(block_events(at, start, *deltas))
            at += 1

        def json_of(value: dict[str, Any]) -> list[dict[str, Any]]:
            text = json.dumps(value)
            cut = rng.randint(1, len(text) - 1)
            return [{"type": "input_json_delta", "partial_json": part} for part in (text[:cut], text[cut:])]

        def server(name: str, result: dict[str, Any] | None) -> str:
            key = self._id("srvtoolu")
            add({"type": "server_tool_use", "id": key, "name": name, "input": {}}, *json_of({"q": name}))
            if result is not None:
                add({**result, "tool_use_id": key})
            return key

        def client(code: str | None) -> None:
            caller = {"type": CALLER, "tool_id": code} if code else {"type": "direct"}
            start = {"type": "tool_use", "id": self._id("toolu"), "name": "query", "input": {}, "caller": caller}
            add(start, *json_of({"region": self.n}))

        stop = "end_turn"
        if kind == "continue" and rng.random() < 0.45:  # the code calls the client's tools again
            for _ in range(rng.randint(1, 2)):
                client(self.waiting[-1])
            return [*events, *_ended("tool_use")], "tool_use"
        for key in self.waiting if kind == "continue" else ():
            add({**RAN, "tool_use_id": key})
        self.waiting = []
        if rng.random() < 0.5:
            add(
                {"type": "thinking", "thinking": "", "signature": ""},
                {"type": "thinking_delta", "thinking": "Let me think."},
                {"type": "signature_delta", "signature": f"EqQB{self.n}"},
            )
        if rng.random() < 0.6:
            add({"type": "text", "text": ""}, {"type": "text_delta", "text": "Let me look."})
        if rng.random() < 0.3:
            server("web_search", FOUND)
        if rng.random() < 0.2:
            server("bash_code_execution", BASH)
        if kind == "pause":
            server("web_search", None)
            return [*events, *_ended("pause_turn")], "pause_turn"
        roll = rng.random()
        if roll < 0.55:
            code = server("code_execution", None)
            for _ in range(rng.randint(1, 3)):
                client(code)
            if rng.random() < 0.15:
                client(None)  # a direct call beside them
            self.waiting, stop = [code], "tool_use"
        elif roll < 0.7:
            client(None)
            stop = "tool_use"
        else:
            add({"type": "text", "text": ""}, {"type": "text_delta", "text": "West sold most."})
        return [*events, *_ended(stop)], stop


RAN = {
    "type": "code_execution_tool_result",
    "content": {"type": "code_execution_result", "stdout": "West\n", "stderr": "", "return_code": 0, "content": []},
}
BASH = {
    "type": "bash_code_execution_tool_result",
    "content": {"type": "bash_code_execution_result", "stdout": "a\n", "stderr": "", "return_code": 0, "content": []},
}
FOUND = {
    "type": "web_search_tool_result",
    "content": [{"type": "web_search_result", "title": "Oslo", "url": "https://example.org", "encrypted_content": "E"}],
}
CONTAINER = {"id": "container_1", "expires_at": "2026-12-05T10:00:00Z"}


def _ended(stop: str) -> list[dict[str, Any]]:
    delta = {"stop_reason": stop, "container": CONTAINER}
    return [{"type": "message_delta", "delta": delta, "usage": {"output_tokens": 5}}, {"type": "message_stop"}]


def _read(events: list[dict[str, Any]]) -> fsm.Result:
    """The turn from its events, its whole bytes and its bytes one at a time: the same turn."""
    body = sse(events)
    whole = fsm.reassemble(body, "anthropic")
    pieces = fsm.Reassembler("anthropic")
    for at in range(len(body)):
        pieces.feed_bytes(body[at : at + 1])
    assert pieces.close() == whole and whole.problems() == ()
    said_so = messages.assistant_message(whole, "anthropic")
    assert messages.assistant_message(fsm.reassemble(events, "anthropic"), "anthropic") == said_so
    return whole


def _accumulated(anthropic: Any, events: list[dict[str, Any]], ask: list[dict[str, Any]]) -> list[dict[str, Any]]:
    replay = Replay(sse(events), anthropic_http())
    client = anthropic.Anthropic(api_key="test", base_url="http://mock", http_client=replay.client())
    with client.beta.messages.stream(model="m", max_tokens=64, messages=ask) as stream:
        final = stream.get_final_message()
    # (fsm leaves out a direct caller, the default, and the fields the stream never set)
    blocks = [block.model_dump(mode="json", exclude_none=True) for block in final.content]
    return [{k: v for k, v in block.items() if v not in ([], None, {"type": "direct"})} for block in blocks]


@pytest.mark.parametrize("seed", range(12))
def test_the_agent_loop_through_streams(seed: int) -> None:
    anthropic = pytest.importorskip("anthropic")
    pydantic = pytest.importorskip("pydantic")
    param = pydantic.TypeAdapter(anthropic.types.MessageParam)
    loop = _Loop(seed)
    conversation: list[dict[str, Any]] = [ASK]

    def accepted() -> None:
        assert history.check(conversation, "anthropic").findings == ()
        assert not history.anything_dangling(conversation)
        for policy in POLICIES:
            assert history.repair(conversation, policy, format="anthropic") == (conversation, [])
        for message in conversation:
            param.validate_python(message)

    kind = "fresh"
    for _ in range(loop.rng.randint(3, 7)):
        events, stop = loop.turn(kind)
        if stop == "pause_turn":  # the server goes on: its next message opens with the search's result
            key = [e for e in events if e["type"] == "content_block_start"][-1]["content_block"]["id"]
            rest, stop = loop.turn("fresh")
            again = [{**e, "index": e["index"] + 1} if "index" in e else e for e in rest[1:]]
            turns = [events, [rest[0], *block_events(0, {**FOUND, "tool_use_id": key}), *again]]
        else:
            turns = [events]
        for streamed in turns:
            result = _read(streamed)
            message = messages.assistant_message(result, "anthropic")
            assert message["content"] == _accumulated(anthropic, streamed, conversation)
            conversation.append(message)
        if stop == "tool_use":
            answers = [messages.tool_result(call, {"revenue": 1}, "anthropic") for call in result.calls]
            conversation += messages.tool_results(answers, "anthropic")
            kind = "continue" if loop.waiting else "fresh"
        else:
            conversation.append({"role": "user", "content": "And then?"})
            kind = "pause" if loop.rng.random() < 0.2 else "fresh"
        accepted()


# -- the loop broken at random -------------------------------------------------------------------


def _loop_blocks(rng: random.Random) -> list[dict[str, Any]]:
    """A correct loop, as blocks: the code's rounds of client calls, its result, searches, direct calls."""
    serial = iter(range(1, 1_000))
    conversation: list[dict[str, Any]] = [ASK]
    waiting: list[str] = []
    for _ in range(rng.randint(1, 5)):
        blocks: list[dict[str, Any]] = []
        if waiting and rng.random() < 0.5:
            blocks += [use(f"t{next(serial)}", waiting[-1]) for _ in range(rng.randint(1, 2))]
        else:
            blocks += [ran(key) for key in waiting]
            waiting = []
            if rng.random() < 0.5:
                blocks.append(TEXT)
            if rng.random() < 0.3:
                key = f"w{next(serial)}"
                blocks += [
                    srv(key, "web_search"),
                    {"type": "web_search_tool_result", "tool_use_id": key, "content": f"R{key}"},
                ]
            if rng.random() < 0.6:
                waiting = [f"s{next(serial)}"]
                blocks += [srv(waiting[0]), *[use(f"t{next(serial)}", waiting[0]) for _ in range(rng.randint(1, 2))]]
            elif rng.random() < 0.4:
                blocks.append(use(f"d{next(serial)}", None))
        conversation.append(a(*blocks) if blocks else a(TEXT))
        calls = [block["id"] for block in blocks if block["type"] == "tool_use"]
        conversation.append(u(*[res(key) for key in calls]) if calls else {"role": "user", "content": "more"})
    return conversation


def _broken(rng: random.Random, conversation: list[dict[str, Any]]) -> list[dict[str, Any]]:
    broken = copy.deepcopy(conversation)
    for _ in range(rng.randint(1, 3)):
        listed = [at for at, m in enumerate(broken) if isinstance(m["content"], list) and m["content"]]
        move = rng.randrange(9)
        if move == 0 and listed:  # a block dropped
            at = rng.choice(listed)
            broken[at]["content"].pop(rng.randrange(len(broken[at]["content"])))
        elif move == 1 and listed:  # one sent twice
            at = rng.choice(listed)
            broken[at]["content"].append(copy.deepcopy(rng.choice(broken[at]["content"])))
        elif move == 2 and len(listed) > 1:  # one moved to another message
            at, to = rng.sample(listed, 2)
            block = broken[at]["content"].pop(rng.randrange(len(broken[at]["content"])))
            broken[to]["content"].insert(rng.randint(0, len(broken[to]["content"])), block)
        elif move == 3 and len(broken) > 2:  # two messages swapped
            at, to = rng.sample(range(1, len(broken)), 2)
            broken[at], broken[to] = broken[to], broken[at]
        elif move == 4:  # the user's text put in
            broken.insert(rng.randint(1, len(broken)), {"role": "user", "content": "wait"})
        elif move == 5 and listed:  # text put among the blocks
            at = rng.choice(listed)
            broken[at]["content"].insert(rng.randint(0, len(broken[at]["content"])), TEXT)
        elif move == 6 and len(broken) > 2:  # a message dropped
            broken.pop(rng.randrange(1, len(broken)))
        elif move == 7 and len(broken) > 1:  # a message given the other role
            at = rng.randrange(1, len(broken))
            broken[at]["role"] = "user" if broken[at]["role"] == "assistant" else "assistant"
        elif move == 8 and len(broken) > 2:  # the history cut
            del broken[rng.randint(2, len(broken)) :]
    return broken


@pytest.mark.parametrize("seed", range(0, 1000, 125))
def test_broken_loops_repair_to_what_their_check_accepts(seed: int) -> None:
    for n in range(seed, seed + 125):
        rng = random.Random(n)
        conversation = _loop_blocks(rng)
        for policy in POLICIES:
            assert _sound(conversation, policy)[1] == []
        broken = _broken(rng, conversation)
        try:
            history.check(broken, "anthropic")
        except fsm.errors.LocalProtocolError as refused:  # a message both making calls and answering them
            assert "both make tool calls and answer them" in str(refused)
            continue
        for policy in POLICIES:
            _sound(broken, policy)
