"""A snapshot (a whole argument text: Gemini's and Ollama's calls, a Responses item's final
arguments) that is one whole object is parsed once, when its scan is skipped (slot._whole_object),
and the call's end takes that parse while the call still holds that very text (issue 17: Gemini's
and Ollama's whole calls cost about 7% fewer instructions). The parse must be the end's own:
replayed with and without it, hostile snapshot texts give the same transitions in order, outputs,
calls, diagnostics and rule counts, from dicts and from wire bytes, lax and strict; and what no
call's end took is let go when the stream closes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fsm import Limits, Reassembler
from fsm.engine import slot as slot_module
from tests.helpers import replay_traced, sse

# Texts a provider's final arguments can hold: each decides something at the call's end.
TEXTS = {
    "flat": '{"city": "Oslo", "n": 2}',
    "nested": '{"a": {"b": [1, {"c": null}]}, "s": "x"}',
    "key twice": '{"k": 1, "k": 2}',
    "key twice, nested": '{"a": {"k": 1, "k": 2}, "b": [{"k": 3, "k": 4}]}',
    "NaN": '{"k": NaN}',
    "overflowing float": '{"k": 1e999}',
    "long integer": '{"k": ' + "9" * 5000 + "}",
    "lone surrogate": '{"s": "\\ud83d"}',
    "raw lone surrogate": '{"s": "a\ud83d"}',  # mended as it is held: the text the scan parsed is not the one kept
    "pair split in escapes": '{"s": "\\ud83d\\ude42"}',
    "too deep": '{"a": ' * 6 + "1" + "}" * 6,
    "two values": '{"a": 1} {"b": 2}',
    "space after": '{"a": 1}  ',
    "space before": ' {"a": 1}',
    "array": "[1, 2]",
    "not JSON": '{"a": ',
    "empty object": "{}",
    "colon in a string": '{"a": "x:y", "b": 1}',
    "long": json.dumps({"k": "x" * 70_000}),
}


def responses_events(first: str, then: str | None = None) -> list[dict[str, Any]]:
    """One function call whose arguments arrive only at its item's end (LM Studio), and, with
    ``then``, a second call at the next index whose added item already holds ``first`` and whose end
    replaces it with ``then`` (a snapshot replaced: the first parse must not be taken)."""

    def item(at: int, text: str, status: str) -> dict[str, Any]:
        call = {"type": "function_call", "id": f"fc_{at}", "call_id": f"call_{at}", "name": "f"}
        return {"output_index": at, "item": {**call, "arguments": text, "status": status}}

    events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": "r", "output": []}}]
    events += [{"type": "response.output_item.added", **item(0, "", "in_progress")}]
    events += [{"type": "response.output_item.done", **item(0, first, "completed")}]
    if then is not None:
        events += [{"type": "response.output_item.added", **item(1, first, "in_progress")}]
        events += [{"type": "response.output_item.done", **item(1, then, "completed")}]
    return [*events, {"type": "response.completed", "response": {"id": "r", "status": "completed"}}]


def gemini_events(values: list[Any], finish: str = "STOP") -> list[dict[str, Any]]:
    """Whole calls at part 0, one an event, then the finish."""
    events = [
        {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "f", "args": v}}]}}]}
        for v in values
    ]
    return [*events, {"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": finish}]}]


STREAMS: dict[str, tuple[str, list[dict[str, Any]]]] = {
    **{f"responses {name}": ("openai-responses", responses_events(text)) for name, text in TEXTS.items()},
    **{
        f"responses replaced by {name}": ("openai-responses", responses_events(TEXTS["nested"], text))
        for name, text in TEXTS.items()
    },
    "gemini nested, resent, repeated": (
        "gemini",
        gemini_events([{"a": {"b": [1]}}, {"a": {"b": [2]}}, {"a": {"b": [2]}}, {"a": {"b": [1]}}]),
    ),
    "gemini cut": ("gemini", gemini_events([{"a": {"b": 1}}, {"x": [1, 2]}], finish="MAX_TOKENS")),
    "gemini flat and nested": ("gemini", gemini_events([{"q": "A"}, {"q": {"r": "B"}}, {"q": "A"}])),
}
OPTIONS: list[dict[str, Any]] = [{}, {"strict": True}, {"limits": Limits(max_depth=3)}]


def _replay(provider: str, events: list[dict[str, Any]], wire: bool, **options: Any) -> object:
    r = Reassembler(provider, **options)
    if wire:
        data = sse(events, done=False)
        return replay_traced(r, lambda r: (r.feed_bytes(data[k : k + 97]) for k in range(0, len(data), 97)))
    return replay_traced(r, lambda r: (r.feed(event) for event in events))


@pytest.mark.parametrize("wire", [False, True], ids=["dicts", "wire bytes"])
def test_the_snapshot_parse_the_end_takes_is_its_own(monkeypatch: pytest.MonkeyPatch, wire: bool) -> None:
    taken = 0
    real = slot_module._whole_object

    def counted(text: str, max_depth: int) -> Any:
        nonlocal taken
        found = real(text, max_depth)
        taken += found is not None
        return found

    runs = [(name, options) for name in STREAMS for options in OPTIONS]
    monkeypatch.setattr(slot_module, "_whole_object", counted)
    once = [_replay(*STREAMS[name], wire, **options) for name, options in runs]
    assert taken > 50
    monkeypatch.setattr(slot_module, "_whole_object", lambda text, max_depth: None)
    twice = [_replay(*STREAMS[name], wire, **options) for name, options in runs]
    for (name, options), a, b in zip(runs, once, twice, strict=True):
        assert a == b, (name, options)


def test_a_repeated_key_in_a_snapshot_is_still_reported_at_its_end() -> None:
    r = Reassembler("openai-responses")
    for event in responses_events(TEXTS["key twice, nested"]):
        r.feed(event)
    result = r.close()
    assert result.calls[0].arguments == {"a": {"k": 2}, "b": [{"k": 4}]}
    assert [d.code for d in result.diagnostics if d.code == "duplicate-key"] == ["duplicate-key"]


def test_a_replaced_snapshot_is_parsed_again() -> None:
    r = Reassembler("openai-responses")
    for event in responses_events('{"a": 1}', '{"a": 2}'):
        r.feed(event)
    assert [c.arguments for c in r.close().calls] == [{"a": 1}, {"a": 2}]


def test_what_no_call_end_took_is_let_go_at_close() -> None:
    """A call cut after its snapshot closed its value never parses at its end: its parse is
    dropped when the stream closes, not held by the reassembler the caller keeps."""
    r = Reassembler("gemini")
    events = gemini_events([{"a": {"b": 1}}])[:1]
    for event in events:
        r.feed(event)
    assert r.ledger.parsed  # kept for the call's end
    result = r.close()  # no finish: the call, whose value closed, ends as a closed value does
    assert result.calls[0].arguments == {"a": {"b": 1}}
    assert not r.ledger.parsed


@pytest.mark.parametrize("wire", [False, True], ids=["dicts", "wire bytes"])
def test_each_nested_snapshot_is_parsed_once(monkeypatch: pytest.MonkeyPatch, wire: bool) -> None:
    """Ten nested whole calls, the last resent: ten parses, each at its snapshot, none at its end
    (twenty before); the calls come out as parsed."""
    parses: list[str] = []
    real = slot_module.parse_general

    def counted(text: str) -> Any:
        parses.append(text)
        return real(text)

    monkeypatch.setattr(slot_module, "parse_general", counted)
    values = [{"n": k, "tags": ["a", {"b": k}]} for k in range(10)]
    events = gemini_events([*values, values[-1]])
    r = Reassembler("gemini")
    if wire:
        r.feed_bytes(sse(events, done=False))
    else:
        for event in events:
            r.feed(event)
    assert [c.arguments for c in r.close().calls] == values
    assert len(parses) == 10 and len(set(parses)) == 10
