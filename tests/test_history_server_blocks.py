"""fsm.history on Claude's server tool blocks: a ``server_tool_use`` (or ``mcp_tool_use``) block and
the ``*_tool_result`` block answering it, both in the assistant message. Before, the history checks
read past them, so a search left without its result (a stream cut, a turn trimmed by hand) passed
``check`` and the next request got a 400 from Anthropic."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fsm
from fsm import history, messages
from tests.test_server_tool_turns import web_search_turn


def search(at: str) -> dict[str, Any]:
    return {"type": "server_tool_use", "id": at, "name": "web_search", "input": {"query": "q"}}


def found(at: str, kind: str = "web_search_tool_result") -> dict[str, Any]:
    return {"type": kind, "tool_use_id": at, "content": []}


def said(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def kinds(report: history.Report) -> list[tuple[str, str | None, int]]:
    return [(f.kind.value, f.id, f.message) for f in report.findings]


def test_a_server_call_without_its_result_before_a_later_message_is_refused_and_dropped() -> None:
    turn = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": [said("Searching."), search("s1"), found("s1"), search("s2"), said("Done.")]},
        {"role": "user", "content": "Thanks"},
    ]
    report = history.check(turn)
    assert (report.format, report.rejected, kinds(report)) == ("anthropic", True, [("dangling", "s2", 2)])
    assert history.anything_dangling(turn)
    fixed, changes = history.repair(turn)
    assert [(c.kind, c.message, c.id) for c in changes] == [("dropped-call", 2, "s2")]
    assert fixed[1]["content"] == [said("Searching."), search("s1"), found("s1"), said("Done.")]
    assert history.check(fixed).findings == () and history.repair(fixed)[1] == []
    # whatever the policy: no placeholder can stand in for a server's result
    assert history.repair(turn, history.RepairPolicy(dangling="drop-call"))[0] == fixed


def test_a_paused_turn_last_keeps_its_unanswered_server_call() -> None:
    # Anthropic runs it when the paused turn goes back as the request's last message
    # (anthropic-sdk-python issue 1339); with any message after it, the request is refused.
    events = web_search_turn("pause_turn", client_call=False)
    paused = fsm.reassemble([e for e in events if e.get("index") not in (2, 3, 4, 5)], "anthropic")
    turn = [{"role": "user", "content": "Weather?"}, messages.assistant_message(paused, "anthropic")]
    assert turn[1]["content"][-1]["type"] == "server_tool_use"
    assert history.check(turn).findings == () and not history.anything_dangling(turn)
    assert history.repair(turn) == (turn, [])
    later = [*turn, {"role": "user", "content": "Go on"}]
    assert kinds(history.check(later)) == [("dangling", "srvtoolu_1", 2)]


def test_the_next_turn_of_a_server_tool_stream_checks_clean() -> None:
    result = fsm.reassemble(web_search_turn(), "anthropic")
    turn = [
        {"role": "user", "content": "Weather?"},
        messages.assistant_message(result, "anthropic"),
        *messages.tool_results([messages.tool_result(c, "ok", "anthropic") for c in result.calls], "anthropic"),
    ]
    server = [b["type"] for b in turn[1]["content"] if b["type"] != "text"]
    assert "server_tool_use" in server and "web_search_tool_result" in server
    assert history.check(turn).findings == ()


def test_orphan_and_duplicate_server_blocks_are_paired_as_client_ones() -> None:
    turn = [
        {"role": "user", "content": "Go"},
        {
            "role": "assistant",
            "content": [
                search("s1"),
                found("s1"),
                found("s9"),
                {"type": "mcp_tool_use", "id": "s1", "name": "lookup", "server_name": "wiki", "input": {}},
                found("s1", "mcp_tool_result"),
                found("s1", "mcp_tool_result"),
            ],
        },
        {"role": "user", "content": "More"},
    ]
    # the check's id machine: a second call while the first waits; a second and third result for it
    assert kinds(history.check(turn)) == [
        ("duplicate-call", "s1", 2),
        ("orphan", "s9", 2),
        ("duplicate-result", "s1", 2),
        ("duplicate-result", "s1", 2),
    ]
    fixed, changes = history.repair(turn)
    assert [(c.kind, c.id) for c in changes] == [
        ("dropped-orphan", "s9"),
        ("dropped-duplicate-result", "s1"),
        ("renamed-call", "s1"),
        ("renamed-result", "s1"),
    ]
    assert [(b["type"], b.get("id") or b["tool_use_id"]) for b in fixed[1]["content"]] == [
        ("server_tool_use", "s1"),
        ("web_search_tool_result", "s1"),
        ("mcp_tool_use", "s1_d2"),
        ("mcp_tool_result", "s1_d2"),
    ]
    assert history.check(fixed).findings == ()


def test_a_server_result_placed_before_its_call_answers_nothing() -> None:
    # Anthropic refuses a result ahead of its call; the k-th rule alone paired them regardless of order
    turn = [
        {"role": "user", "content": "Go"},
        {"role": "assistant", "content": [found("s1"), search("s1"), said("Done.")]},
        {"role": "user", "content": "More"},
    ]
    assert kinds(history.check(turn)) == [("orphan", "s1", 2), ("dangling", "s1", 2)]
    assert history.anything_dangling(turn)
    fixed, changes = history.repair(turn)
    assert [(c.kind, c.id) for c in changes] == [("dropped-orphan", "s1"), ("dropped-call", "s1")]
    assert fixed[1]["content"] == [said("Done.")]
    # one result early, one after: the one after answers the call, the early one is a second result
    turn[1]["content"] = [found("s1"), search("s1"), found("s1")]
    assert kinds(history.check(turn)) == [("duplicate-result", "s1", 2)]
    fixed, changes = history.repair(turn)
    assert [(c.kind, c.id) for c in changes] == [("dropped-duplicate-result", "s1")]
    assert fixed[1]["content"] == [search("s1"), found("s1")]
    assert history.check(fixed).findings == ()


def test_a_history_of_server_blocks_alone_is_read_as_anthropic() -> None:
    turn = [{"role": "user", "content": "Go"}, {"role": "assistant", "content": [found("s1")]}]
    assert history.detect_format(turn) == "anthropic"
    assert kinds(history.check(turn)) == [("orphan", "s1", 2)]


@pytest.mark.parametrize(
    ("block", "says"), [(search(""), "has no id"), ({**found("s"), "tool_use_id": 5}, "must be a string")]
)
def test_a_server_block_without_a_usable_id_is_refused_naming_its_message(block: dict[str, Any], says: str) -> None:
    with pytest.raises(fsm.LocalProtocolError, match=f"message 2: .*{says}"):
        history.check([{"role": "user", "content": "Go"}, {"role": "assistant", "content": [block]}])


blocks = st.lists(
    st.tuples(st.sampled_from(["call", "result", "text"]), st.sampled_from(["s1", "s2", "s3"])), max_size=6
)


@settings(max_examples=300, deadline=None)
@given(st.lists(blocks, min_size=1, max_size=4), st.booleans())
def test_repair_keeps_every_server_result_its_message_pairs(
    turns: list[list[tuple[str, str]]], ends_paused: bool
) -> None:
    convo: list[dict[str, Any]] = []
    for made in turns:
        convo.append({"role": "user", "content": "Go"})
        content = [search(at) if kind == "call" else found(at) if kind == "result" else said(at) for kind, at in made]
        convo.append({"role": "assistant", "content": content or [said("-")]})
    if not ends_paused:
        convo.append({"role": "user", "content": "Thanks"})
    fixed, _ = history.repair(convo)
    assert not history.check(fixed).rejected and not history.anything_dangling(fixed)
    assert history.repair(fixed)[1] == []
    # a result answers the earliest call of its id before it that waits: as many kept as pair up so
    kept = [b for m in fixed if m["role"] == "assistant" for b in m["content"] if b["type"] == "web_search_tool_result"]
    expected = 0
    for made in turns:
        waiting = dict.fromkeys(("s1", "s2", "s3"), 0)
        for kind, at in made:
            if kind == "call":
                waiting[at] += 1
            elif kind == "result" and waiting[at]:
                waiting[at] -= 1
                expected += 1
    assert len(kept) == expected
    # and every result kept follows its call
    for m in fixed:
        if m["role"] == "assistant":
            for j, b in enumerate(m["content"]):
                if b["type"] == "web_search_tool_result":
                    assert b["tool_use_id"] in [x["id"] for x in m["content"][:j] if x["type"] == "server_tool_use"]


@pytest.mark.parametrize("kind", [["server_tool_use"], {"a": 1}])
def test_a_block_type_of_no_str_is_no_server_block(kind: Any) -> None:
    # an unhashable type raised TypeError out of the format detection and the reading
    turn = [{"role": "user", "content": "Go"}, {"role": "assistant", "content": [{"type": kind, "id": "s1"}]}]
    assert history.check(turn, "anthropic").findings == () and history.detect_format(turn) == "openai"


# -- Anthropic combines consecutive messages of one role into one turn ---------------------------------

_USER = {"role": "user", "content": "Weather in Oslo?"}


def _use(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "weather", "input": {}}


def _answer(call_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "-3 C"}


_SEARCH = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "Oslo"}}
_FOUND = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}

RUNS = {
    # pause_turn: the continuation kept as a second assistant message, the search's result in it
    "pause-turn-continued-in-a-second-message": [
        _USER,
        {"role": "assistant", "content": [_SEARCH]},
        {"role": "assistant", "content": [_FOUND, {"type": "text", "text": "-3 C."}]},
    ],
    "calls-in-two-assistant-messages": [
        _USER,
        {"role": "assistant", "content": [_use("a")]},
        {"role": "assistant", "content": [{"type": "text", "text": "and"}, _use("b")]},
        {"role": "user", "content": [_answer("a"), _answer("b")]},
    ],
    "results-in-two-user-messages": [
        _USER,
        {"role": "assistant", "content": [_use("a"), _use("b")]},
        {"role": "user", "content": [_answer("a")]},
        {"role": "user", "content": [_answer("b"), {"type": "text", "text": "thanks"}]},
    ],
}


@pytest.mark.parametrize("name", list(RUNS))
def test_anthropic_messages_of_one_role_in_a_row_are_one_turn(name: str) -> None:
    # The Messages API combines consecutive messages of one role into one turn. Read one message at
    # a time, each of these was a call left dangling and a result answering nothing: check said a
    # provider would refuse it, and repair dropped the server call with its result, or put a
    # placeholder in place of a result the history held.
    messages = RUNS[name]
    assert history.check(messages).findings == ()
    assert not history.anything_dangling(messages)
    assert history.repair(messages) == (messages, [])


@pytest.mark.parametrize("split", [True, False], ids=["text-in-a-message-before", "text-before-in-the-message"])
def test_an_anthropic_result_after_text_is_reported_and_moved_before_it(split: bool) -> None:
    # The API takes a turn's results first in its user messages. Split over two messages, the result
    # after the text was a dangling call and an orphan: repair dropped the real result and put a
    # placeholder in its place. In one message it was not reported at all.
    asked = {"type": "text", "text": "and?"}
    answers = [{"role": "user", "content": [asked]}, {"role": "user", "content": [_answer("a")]}]
    messages = [_USER, {"role": "assistant", "content": [_use("a")]}]
    messages += answers if split else [{"role": "user", "content": [asked, _answer("a")]}]
    report = history.check(messages)
    assert [(f.kind.value, f.id, f.message) for f in report.findings] == [("result-after-text", "a", 3 + split)]
    assert report.rejected and not history.anything_dangling(messages)
    fixed, changes = history.repair(messages)
    assert fixed[2:] == [{"role": "user", "content": [_answer("a"), asked]}]
    assert [(c.kind, c.message) for c in changes] == [("moved-result", 3 + split)] + (
        [("dropped-empty-message", 4)] if split else []
    )
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


@pytest.mark.parametrize("split", [True, False], ids=["a-message-each", "one-message"])
def test_results_after_text_are_moved_in_linear_time(split: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # blocks read per result, check and repair together, at 1x and 8x the results after text
    import sys

    formats_module, turns_module = sys.modules["fsm.history.formats"], sys.modules["fsm.history.turns"]
    runs_module = sys.modules["fsm.history.joined_runs"]  # where repair asks whether a message is left empty

    def blocks_read_per_result(n: int) -> float:
        read, items = [0], formats_module.items

        def counted(message: Any, fmt: Any, at: int) -> list[Any]:
            found = items(message, fmt, at)
            read[0] += len(found)
            return found

        for module in (formats_module, turns_module, runs_module):
            monkeypatch.setattr(module, "items", counted)
        asked = {"type": "text", "text": "and?"}
        messages = [_USER, {"role": "assistant", "content": [_use(f"t{i}") for i in range(n)]}]
        if split:
            messages += [{"role": "user", "content": [asked]}]
            messages += [{"role": "user", "content": [_answer(f"t{i}")]} for i in range(n)]
        else:
            messages += [{"role": "user", "content": [asked, *(_answer(f"t{i}") for i in range(n))]}]
        fixed, _ = history.repair(messages)
        assert len(history.check(messages).findings) == n and not history.check(fixed).rejected
        monkeypatch.undo()
        return read[0] / n

    assert blocks_read_per_result(8_000) < 1.5 * blocks_read_per_result(1_000)
