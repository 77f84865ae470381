"""Audit 62: memory and work bounded and linear in the input, however it is chunked.

Each test counts what its path does (or measures the memory it holds), never the time it takes: an
SSE event of many data lines held a Python object a line, and history repair asked list and tuple
membership questions once a turn or once an entry, quadratic in the messages."""

from __future__ import annotations

import importlib
import json
import tracemalloc
from typing import Any

import pytest

import fsm
from fsm import history

# -- SSE: an event of many data lines costs its bytes, not an object a line ---------------------------------


def _sse_peak(body: bytes, read: int = 1 << 16) -> tuple[int, fsm.Result]:
    finish = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    wire = b"data: " + json.dumps(finish).encode() + b"\n\n" + body
    tracemalloc.start()
    try:
        r = fsm.Reassembler("openai-chat")
        for at in range(0, len(wire), read):
            r.feed_bytes(wire[at : at + read])
        result = r.close()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, result


@pytest.mark.parametrize("line", [b"data:\n", b"data\n", b"data: x\n"])
def test_an_sse_event_of_many_data_lines_holds_its_bytes_not_an_object_a_line(line: bytes) -> None:
    # The event's data lines were kept in a list, a pointer each, then joined, which takes a buffer
    # view of 80 bytes a line: 1.2 MB of `data:` lines (200,000 of them, 200 KB of data, within
    # max_event_bytes) peaked at 19 MB, and the default 16 MiB limit allowed some 1.4 GB. The data
    # is now one growing buffer.
    lines = 200_000
    peak, result = _sse_peak(line * lines)
    assert peak < 4 * len(line) * lines, peak
    assert result.finish_reason == "stop"
    assert not result.calls
    # x, x, ... joined by LF is no JSON, and no blank line ends it: a cut event (blank data is none)
    assert [d.code for d in result.diagnostics] == (["cut-event"] if line.endswith(b"x\n") else [])


def test_an_event_whose_json_spans_many_data_lines_reads_as_one_event() -> None:
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    chunk = {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": "tool_calls"}]}
    pretty = json.dumps(chunk, indent=1).encode()
    wire = b"".join(b"data: " + line + b"\n" for line in pretty.split(b"\n")) + b"\n"
    for read in (1, 7, len(wire)):
        r = fsm.Reassembler("auto")
        for at in range(0, len(wire), read):
            r.feed_bytes(wire[at : at + read])
        result = r.close()
        assert [(c.id, c.name, c.arguments) for c in result.calls] == [("c1", "f", {"a": 1})]


# -- history repair: membership asked once a turn or an entry, answered in constant work ----------------------


class _Counted:
    """Elements a membership test examines: a list or tuple scans, a dict or set hashes once."""

    visited = 0


def _counting(container: Any) -> Any:
    base = type(container)

    class Counting(base):  # type: ignore[valid-type,misc]
        def __contains__(self, item: object) -> bool:
            if isinstance(self, list | tuple):
                _Counted.visited += len(self)
            else:
                _Counted.visited += 1
            return super().__contains__(item)

    return Counting(container)


def _empty_message(fmt: str) -> dict[str, Any]:
    return {"role": "user", "parts": []} if fmt == "gemini" else {"role": "user", "content": []}


def _calls(fmt: str, ids: list[str]) -> dict[str, Any]:
    if fmt == "gemini":
        return {"role": "model", "parts": [{"functionCall": {"id": i, "name": "f", "args": {}}} for i in ids]}
    if fmt == "bedrock":
        return {"role": "assistant", "content": [{"toolUse": {"toolUseId": i, "name": "f", "input": {}}} for i in ids]}
    return {"role": "assistant", "content": [{"type": "tool_use", "id": i, "name": "f", "input": {}} for i in ids]}


def _text(fmt: str) -> dict[str, Any]:
    if fmt == "gemini":
        return {"role": "user", "parts": [{"text": "go on"}]}
    return {"role": "user", "content": [{"text": "go on"}] if fmt == "bedrock" else "go on"}


@pytest.mark.parametrize("fmt", ["anthropic", "bedrock", "gemini"])
def test_many_empty_messages_before_many_turns_are_looked_up_in_constant_work(
    fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Roles.empty was a list, and repair asked whether a message was in it once a turn or more
    # (after_run._run_first_call, Writer._can_host, joined_runs): 10,000 empty messages before 5,000
    # unanswered turns took 1.4 s to repair (20,000 messages), 17 s at 80,000.
    from fsm.history import entries

    init = entries.Roles.__init__

    def counted_init(self: Any) -> None:
        init(self)
        self.empty = _counting(self.empty)

    monkeypatch.setattr(entries.Roles, "__init__", counted_init)
    for n in (1_000, 4_000):
        _Counted.visited = 0
        messages = [_text(fmt), *(_empty_message(fmt) for _ in range(n))]
        for k in range(n // 2):
            messages += [_calls(fmt, [f"c{k}"]), _text(fmt)]
        fixed, changes = history.repair(messages)
        assert sum(c.kind == "dropped-empty-message" for c in changes) == n
        assert sum(c.kind == "placeholder-result" for c in changes) == n // 2
        assert not history.check(fixed).rejected
        assert _Counted.visited <= 10 * n, (n, _Counted.visited)


def _counting_entries(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the comparisons of whole entries (a scan of a tuple of them makes one per element)."""
    formats = importlib.import_module("fsm.history.formats")
    compared = [0]

    class Entry(formats.Entry):  # type: ignore[name-defined,misc]
        __slots__ = ()

        def __eq__(self, other: object) -> bool:
            compared[0] += 1
            return tuple.__eq__(self, other)  # type: ignore[operator,no-any-return]

        def __ne__(self, other: object) -> bool:
            compared[0] += 1
            return tuple.__ne__(self, other)  # type: ignore[operator,no-any-return]

        __hash__ = tuple.__hash__

    monkeypatch.setattr(formats, "Entry", Entry)
    return compared


def test_claude_server_results_the_user_sent_back_are_paired_without_scanning_them_per_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # joined_runs.joined_server_ids asked `e not in segment.misplaced` (a tuple) for every call and
    # result of a turn of server calls: 10,000 server results sent in the user's message took 2.1 s.
    compared = _counting_entries(monkeypatch)
    n = 2_000
    ids = [f"srvtoolu_{k}" for k in range(n)]
    uses = [{"type": "server_tool_use", "id": i, "name": "web_search", "input": {"query": "q"}} for i in ids]
    answers = [{"type": "web_search_tool_result", "tool_use_id": i, "content": []} for i in ids]
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [*uses, {"type": "tool_use", "id": "c", "name": "f", "input": {}}]},
        {"role": "user", "content": [*answers, {"type": "tool_result", "tool_use_id": "c", "content": "r"}]},
    ]
    fixed, changes = history.repair(messages)
    assert sum(c.kind == "moved-misplaced-result" for c in changes) == n
    assert not history.check(fixed).rejected
    assert compared[0] <= 10 * n, compared[0]


@pytest.mark.parametrize("fmt", ["openai", "ollama"])
def test_results_sent_as_the_model_after_the_users_text_are_carried_without_a_scan_each(
    fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Repairer._carry asked `result not in segment.misplaced` for each result after the user's text:
    # 10,000 results sent in the assistant's role after the user's text took 0.6 s, 40,000 some 10 s.
    compared = _counting_entries(monkeypatch)
    n = 2_000
    ids = [f"c{k}" for k in range(n)]
    if fmt == "openai":
        calls = [{"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids]
        answers = [{"role": "assistant", "tool_call_id": i, "content": "r"} for i in ids]
    else:
        calls = [{"function": {"name": i, "arguments": {}}} for i in ids]
        answers = [{"role": "assistant", "tool_name": i, "content": "r"} for i in ids]
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": calls},
        {"role": "user", "content": "t"},
        *answers,
    ]
    fixed, changes = history.repair(messages)
    assert sum(c.kind == "moved-misplaced-result" for c in changes) == n
    assert [m["role"] for m in fixed[2 : 2 + n]] == ["tool"] * n
    assert not history.check(fixed).rejected
    assert compared[0] <= 10 * n, compared[0]
