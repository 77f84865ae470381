"""Leftovers of audit 31 (numbers), each failing before its fix: a number too long to write fed
as a dict where the same number read from the wire was reported and read on (a finish reason, an
error, an event's type), and the OpenAI chat shortcuts taking such a number as a call's index."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import fsm
from fsm.errors import LimitExceeded, RemoteProtocolError, ToolcallFSMError
from fsm.harness.vectors import VECTOR_DIR
from tests.test_hostile_audit31 import swap  # "RAW" in the events replaced by a value

DIGITS = "9" * 5000  # past the int-string conversion limit (4300 digits by default)
HUGE = 10**5000 - 1  # the same number, made without the conversion the limit guards
TOO_LONG = "a number too long to write as text (more than 4300 digits)"
ROOT = Path(__file__).resolve().parent.parent


def sse(events: list[Any], raw: str = DIGITS) -> bytes:
    """The events as SSE, each string "RAW" written as the bare JSON number ``raw``."""
    return "".join("data: " + json.dumps(e) + "\n\n" for e in events).replace('"RAW"', raw).encode()


def outcome(shape: str, strict: bool, feed: Any) -> tuple[Any, ...]:
    """What a stream came to: its calls, its diagnostics' codes, and the error raised (its type,
    event and detail), or None."""
    r = fsm.Reassembler(shape, strict=strict)
    error = None
    try:
        feed(r)
        result = r.close()
    except ToolcallFSMError as exc:  # nothing but the library's own may escape
        assert isinstance(exc, RemoteProtocolError), exc
        error = (type(exc).__name__, exc.event, exc.detail)
        result = r.close()
    calls = [(c.name, c.id, c.status, c.arguments_json) for c in result.calls]
    return calls, sorted(result.codes()), error


def fed(events: list[Any]) -> Any:
    def feed(r: fsm.Reassembler) -> None:
        for event in events:
            r.feed(event)

    return feed


def read(events: list[Any]) -> Any:
    body = sse(events)
    return lambda r: r.feed_bytes(body)


# -- every leaf of every vector: a number too long to write, fed or read --------------------------------------


def _vectors() -> list[tuple[str, str, list[dict[str, Any]]]]:
    found = []
    for path in sorted(VECTOR_DIR.glob("*.json")):
        text = path.read_text()
        if DIGITS[:4400] in text:  # a vector that holds such a number already (json.loads would refuse it)
            continue
        vector = json.loads(text)
        if "events" in vector:  # not one whose body is its bytes
            found.append((vector["name"], vector["shape"], vector["events"]))
    return found


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in _leaves(item, (*path, key))]
    if isinstance(value, list):
        return [leaf for at, item in enumerate(value) for leaf in _leaves(item, (*path, at))]
    return [path] if path else []


def _put(events: list[dict[str, Any]], at: int, path: tuple[Any, ...]) -> list[dict[str, Any]]:
    events = copy.deepcopy(events)
    place: Any = events[at]
    for key in path[:-1]:
        place = place[key]
    place[path[-1]] = "RAW"
    return events


VECTORS = _vectors()


@pytest.mark.parametrize(("name", "shape", "events"), VECTORS, ids=[v[0] for v in VECTORS])
def test_every_leaf_as_a_number_too_long_to_write_reads_the_same_fed_or_read(
    name: str, shape: str, events: list[dict[str, Any]]
) -> None:
    # Fed as dicts, such a number as a finish reason, an error's message or an event's type failed
    # the whole stream ("the event holds a number with more digits than Python writes as text"),
    # and the OpenAI chat shortcuts took it as a call's index, where the same events read from the
    # wire were reported and read on, or refused naming the field. Now the two agree, lax and strict:
    # the same calls, diagnostics, and error (its type, event and words).
    if outcome(shape, False, fed(events)) != outcome(shape, False, read(events)):
        pytest.skip("as SSE this vector's events read otherwise (Bedrock's invoke chunks come framed by AWS)")
    differ = []
    for at, event in enumerate(events):
        for path in _leaves(event):
            changed = _put(events, at, path)
            for strict in (False, True):
                by_dicts = outcome(shape, strict, fed(swap(changed, HUGE)))
                if by_dicts != outcome(shape, strict, read(changed)):
                    differ.append((at, path, strict, by_dicts[1:]))
    assert not differ, differ[:3]


def test_the_fed_and_read_vectors_are_most_of_them() -> None:
    assert len(VECTORS) >= 130  # one with a 5000-digit number and those whose body is bytes aside


# -- what each such field says now ----------------------------------------------------------------------------

CHAT_FINISH = [{"choices": [{"index": 0, "delta": {}, "finish_reason": "RAW"}]}]
CHAT_ENTRY = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
CALL = {"choices": [{"index": 0, "delta": {"tool_calls": [CHAT_ENTRY]}}]}

FINISHES = [
    ("openai-chat", [CALL, *CHAT_FINISH]),
    ("gemini", [{"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": {}}}]},
                                 "finishReason": "RAW"}]}]),
    ("ollama", [{"message": {"tool_calls": [{"function": {"name": "f", "arguments": {}}}]}, "done": True,
                 "done_reason": "RAW"}]),
]  # fmt: skip


@pytest.mark.parametrize(("shape", "events"), FINISHES, ids=[f[0] for f in FINISHES])
def test_a_finish_reason_too_long_to_write_is_named_and_the_call_kept(shape: str, events: list[Any]) -> None:
    for feed in (fed(swap(events, HUGE)), read(events)):
        r = fsm.Reassembler(shape)
        feed(r)
        result = r.close()
        assert "stream-failed" not in result.codes() and [c.name for c in result.calls] == ["f"]
        assert result.raw_finish_reason == TOO_LONG  # read, it was the 5000 digits; fed, the stream failed


ERRORS = [
    ("openai-chat", [CALL, {"error": {"message": "RAW"}}]),
    ("openai-chat", [CALL, {"error": {"code": "RAW"}}]),  # no message: the object, its number named
    ("anthropic", [{"type": "message_start", "message": {}}, {"type": "error", "error": {"message": "RAW"}}]),
    ("openai-responses", [{"type": "error", "message": "RAW"}]),
]


@pytest.mark.parametrize(("shape", "events"), ERRORS, ids=["chat", "chat-object", "anthropic", "responses"])
def test_an_error_too_long_to_write_is_the_providers_error_named(shape: str, events: list[Any]) -> None:
    for feed in (fed(swap(events, HUGE)), read(events)):
        r = fsm.Reassembler(shape)
        feed(r)
        result = r.close()
        (error,) = [d for d in result.diagnostics if d.code == "provider-error"]
        assert TOO_LONG in error.message and "Decimal" not in error.message and len(error.message) < 200, error
        assert "stream-failed" not in result.codes()
        with pytest.raises(RemoteProtocolError, match=r"provider-error: .*a number too long to write as text"):
            fed(swap(events, HUGE))(fsm.Reassembler(shape, strict=True))


TYPES = [
    ("cohere", [{"type": "RAW"}], "Cohere event type"),
    ("openai-responses", [{"type": "RAW"}], "Responses event type"),
    ("openai-responses", [{"type": "response.output_item.added", "output_index": 0, "item": {"type": "RAW"}}],
     "Responses output item type"),
]  # fmt: skip


@pytest.mark.parametrize(("shape", "events", "said"), TYPES, ids=["cohere", "responses", "responses-item"])
def test_a_type_too_long_to_write_is_an_unknown_one_named(shape: str, events: list[Any], said: str) -> None:
    for feed in (fed(swap(events, HUGE)), read(events)):
        r = fsm.Reassembler(shape)
        feed(r)
        messages = [d.message for d in r.close().diagnostics if d.code in ("unknown-event", "unknown-item")]
        assert messages and messages[0].startswith(said) and TOO_LONG in messages[0], messages
        assert len(messages[0]) < 200


def test_a_gemini_string_value_too_long_to_write_is_refused_fed_or_read() -> None:
    # Read, its digits went into the call's arguments as a string; fed, the stream failed saying
    # only that the event held a long number. Text the arguments keep is refused, as an id is.
    part = {"functionCall": {"name": "w", "partialArgs": [{"jsonPath": "$.city", "stringValue": "RAW"}],
                             "willContinue": True}}  # fmt: skip
    events = [{"candidates": [{"content": {"parts": [part]}}]}]
    for feed in (fed(swap(events, HUGE)), read(events)):
        for strict in (False, True):
            r = fsm.Reassembler("gemini", strict=strict)
            with pytest.raises(LimitExceeded) as raised:
                feed(r)
            assert raised.value.detail == f"partialArgs stringValue is {TOO_LONG}" and raised.value.event == 1


@pytest.mark.parametrize("field", ["timeout_ms", "max_output_length"])
def test_a_built_in_actions_number_too_long_to_write_is_unusable_fed_or_read(field: str) -> None:
    item = {"type": "shell_call", "id": "sh", "call_id": "call_s", "action": {"commands": ["ls"], field: "RAW"}}
    events = [
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {"status": "completed"}},
    ]
    said = []
    for feed in (fed(swap(events, HUGE)), read(events)):
        r = fsm.Reassembler("openai-responses")
        feed(r)
        result = r.close()
        said += [d.message for d in result.diagnostics if d.code == "unusable-action"]  # fed, the call ran
        assert [c.status.value for c in result.calls] == ["invalid"]
    assert len(said) == 2 and said[0] == said[1] and f"has {field} 9999" in said[0] and len(said[0]) < 200, said


# -- the OpenAI chat shortcuts: an index too long to write ---------------------------------------------------


def entry(**fields: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"tool_calls": [fields]}}]}


OPENED = entry(index=0, id="c0", type="function", function={"name": "f", "arguments": ""})
SHORTCUT_CHUNKS = {
    "whole-call": [entry(index="RAW", id="c1", type="function", function={"name": "f", "arguments": "{}"})],
    "header": [entry(index="RAW", id="c1", type="function", function={"name": "f", "arguments": ""})],
    "bare-fragment": [OPENED, entry(index="RAW", function={"arguments": "{}"})],
    "bare-fragment-first": [entry(index="RAW", function={"arguments": "{}"})],
    "header-beside-an-open-call": [OPENED, entry(index="RAW", id="c1", type="function",
                                                 function={"name": "g", "arguments": "{}"})],
    "whitespace": [OPENED, entry(index="RAW", function={"arguments": " "})],
}  # fmt: skip


@pytest.mark.parametrize("number", [HUGE, -HUGE], ids=["positive", "negative"])
@pytest.mark.parametrize("chunks", SHORTCUT_CHUNKS.values(), ids=SHORTCUT_CHUNKS.keys())
def test_the_chat_shortcuts_refuse_an_index_too_long_to_write_as_the_decoder_does(
    chunks: list[dict[str, Any]], number: int
) -> None:
    # The shortcuts took the int as the call's index (the call read, at index 10**5000 - 1); read
    # from the wire, the decoder refuses it. Both refuse it now, naming the field and the event.
    body = sse(chunks, DIGITS if number > 0 else "-" + DIGITS)
    for strict in (False, True):
        for feed in (fed(swap(chunks, number)), lambda r: r.feed_bytes(body)):
            r = fsm.Reassembler("openai-chat", strict=strict)
            with pytest.raises(LimitExceeded) as raised:
                feed(r)
            assert raised.value.detail == f"tool_calls[0].index is {TOO_LONG}" and raised.value.event == len(chunks)


@pytest.mark.parametrize("number", [-1, -(2**70), 2**64, 10**4299], ids=["minus-one", "-2**70", "2**64", "4300-digits"])
@pytest.mark.parametrize("chunks", SHORTCUT_CHUNKS.values(), ids=SHORTCUT_CHUNKS.keys())
def test_an_index_past_63_bits_or_below_0_that_can_be_written_reads_as_before(
    chunks: list[dict[str, Any]], number: int
) -> None:
    # The shortcuts look at an index past 63 bits (or below 0) again, and only such a one: one
    # that can be written is the call's index, fed or read, as the decoder has it.
    events = swap(chunks, number)
    for strict in (False, True):
        assert outcome("openai-chat", strict, fed(events)) == outcome("openai-chat", strict, read(events))
