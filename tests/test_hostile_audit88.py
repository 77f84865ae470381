"""Hostile audit 88: the day's wire additions attacked (policy error-kind's error words in every
decoder, Responses ``program``, ``program_output`` and ``multi_agent_call`` items and a call's
``agent``, Claude's ``fallback`` block and the declined calls it sets apart).

Each stream was read from its events, its whole bytes, its bytes one at a time and, where the SDK
takes the shape, its SDK objects (anthropic ``BetaRawMessageStreamEvent``, openai
``BetaResponseStreamEvent``), lax and strict, with lists, numbers, booleans, null, empty values,
nested objects, a megabyte string and a number of 5,000 digits in every new field, items ending
twice, outputs before their program, two fallback blocks, one first, one last, one alone, a stream
cut inside a block, under tight limits, and through ``toolcall-fsm replay``.

What was found and fixed (each test below failed before):

- An error's integer ``code`` too long to write was its kind fed as an object ("a number too long
  to write ...") but no kind read from bytes (the event parser keeps its digits in a ``Decimal``),
  so one stream said two things: both say it now.
- A ``program`` item whose ``id``, ``call_id`` or ``fingerprint`` is no text, or empty, was left out
  of the next request by :mod:`fsm.messages` without a word (its calls' results then resume
  nothing): said at its end (``part-not-reassembled``).
- A program item done again with another ``fingerprint`` (what it goes back with) was read past in
  silence, the first kept: said (``item-done-again``), the first stands, as for other input.
- An ``agent`` that is no object naming its ``agent_name`` in text, on a program or a function
  call, was kept and sent back, so the next request would fail: said and not kept.
- A ``program_output`` item whose ``id``, ``call_id`` or ``result`` is no text was kept and sent
  back: said and not kept, as audit 85 did with Claude's container_upload and mcp_tool_listing
  blocks; fsm.messages leaves such a block of a hand-made result out too.
- A ``fallback`` block whose ``from`` or ``to`` is no object naming its ``model`` in text, or whose
  ``trigger`` is neither an object nor null (the anthropic SDK's ``BetaFallbackBlockParam``), went
  back as it came without a word: said (``part-not-reassembled``). It is still kept: its place sets
  the declined model's calls apart, and a turn without it merges the thinking on either side.

Judged fine: an error object of any type says its message (a list or number written, a null or
empty one by its other fields) and a kind only when it is plain text (or an integer code); a
megabyte kind, message or request_id is cut to the result's room; a wrong-typed ``action`` of a
multi_agent_call ends the stream as a wrong-typed ``name`` does (a number is its text, policy of
``number_text``); a program's code that is a number is its text, null or absent its empty code; a
program_output before its program goes back where it came; a text or input delta at a fallback
block's index is read as at a result block's (audit 85); two fallback blocks set apart every call
before the last; the SDK objects read as the events; 16,000 fallback blocks stay linear; a
fallback block, a program_output and a program's code count against max_content_chars and
max_argument_chars; ``toolcall-fsm replay`` gave no traceback on any of them. Left as it was
(helper 86's leftover, told in the report; fixed by task 90, policy decline-cut-waits): a fallback
that cuts a client ``tool_use`` mid-JSON made strict mode raise ``unterminated-arguments`` at that
block's stop, before the fallback block that would set it apart arrives; lax mode read it as a
declined call left invalid.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

import fsm
from fsm import messages
from fsm.errors import ToolcallFSMError
from fsm.results import ServerToolResult
from tests.test_programmatic_responses import CALLER, OUTPUT, PROGRAM, _call, _events

_HUGE = "1" + "0" * 5000  # past Python's int-string limit


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e.get('type', 'x')}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def _read(provider: str, events: list[dict[str, Any]]) -> fsm.Result:
    """The stream fed as events, and as its bytes whole and one byte at a time: one result."""
    fed = fsm.reassemble(events, provider=provider)
    wire = _sse(events)
    for size in (len(wire), 1):
        reader = fsm.Reassembler(provider)
        for at in range(0, len(wire), size):
            reader.feed_bytes(wire[at : at + size])
        other = reader.close()
        assert (other.calls, other.server_tool_calls, other.codes()) == (fed.calls, fed.server_tool_calls, fed.codes())
        assert other.server_tool_results == fed.server_tool_results
    return fed


def _said(result: fsm.Result, code: str) -> list[str]:
    return [d.message for d in result.diagnostics if d.code == code]


# -- policy error-kind: a code too long to write -----------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "head", "tail", "fed"),
    [
        ("openai-responses", '{"type": "error", "code": ', ', "message": "m"}', {"type": "error", "message": "m"}),
        ("openai-chat", '{"error": {"code": ', ', "message": "m"}}', {"error": {"message": "m"}}),
    ],
    ids=["responses", "chat"],
)
def test_an_error_code_too_long_to_write_says_the_same_from_bytes_as_fed(
    provider: str, head: str, tail: str, fed: dict[str, Any]
) -> None:
    """Before: fed, the kind was "a number too long to write as text ..."; read from bytes, none."""
    reader = fsm.Reassembler(provider)
    reader.feed_bytes(f"data: {head}{_HUGE}{tail}\n\n".encode())
    from_bytes = reader.close()
    event = json.loads(json.dumps(fed))
    holder = event.get("error", event)
    holder["code"] = 10**5000
    as_fed = fsm.reassemble([event], provider=provider)
    assert from_bytes.raw_finish_reason == as_fed.raw_finish_reason
    assert from_bytes.raw_finish_reason is not None and "too long to write" in from_bytes.raw_finish_reason
    assert from_bytes.finish_message == as_fed.finish_message == "m"


# -- Responses programs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [("fingerprint", 5), ("fingerprint", ["fp"]), ("fingerprint", None), ("fingerprint", ""), ("id", None)],
)
def test_a_program_that_cannot_go_back_is_said(key: str, value: Any) -> None:
    """Before: fsm.messages left it out of the next request without a word."""
    result = _read("openai-responses", _events(1, [{**PROGRAM, key: value}, _call(0)]))
    assert [c.type for c in result.server_tool_calls] == ["program"]
    (said,) = _said(result, "part-not-reassembled")
    assert said.startswith(f"a program item at output_index 0 whose {key} is ") and "cannot go back" in said
    assert "program" not in [item["type"] for item in messages.assistant_message(result, "openai-responses")]
    # strict mode reads it too: a warning, not a violation
    assert fsm.reassemble(_events(1, [{**PROGRAM, key: value}]), "openai-responses", strict=True).calls == ()


def test_a_program_done_again_with_another_fingerprint_is_said_and_the_first_stands() -> None:
    events = _events(1, [PROGRAM, _call(0)])
    done = next(e for e in events if e["type"] == "response.output_item.done" and e["item"]["type"] == "program")
    at = events.index(done)
    events.insert(at + 1, {**done, "item": {**PROGRAM, "fingerprint": "fp_other"}})
    result = _read("openai-responses", events)
    assert _said(result, "item-done-again") == [
        "call call_prog: output_item.done again, with fingerprint 'fp_other': not read, the first stands"
    ]
    (program,) = [i for i in messages.assistant_message(result, "openai-responses") if i["type"] == "program"]
    assert program["fingerprint"] == PROGRAM["fingerprint"]
    with pytest.raises(fsm.RemoteProtocolError, match="event 4: item-done-again"):
        fsm.reassemble(events, "openai-responses", strict=True)


@pytest.mark.parametrize("agent", [["sub"], "sub", 5, True, {"name": "sub"}, {"agent_name": 5}])
def test_an_agent_the_api_refuses_back_is_said_and_not_kept(agent: Any) -> None:
    """Before: kept on the program and the call, and sent back so."""
    result = _read("openai-responses", _events(1, [{**PROGRAM, "agent": agent}, {**_call(0), "agent": agent}]))
    assert len(_said(result, "part-not-reassembled")) == 2
    items = messages.assistant_message(result, "openai-responses")
    assert [i["type"] for i in items] == ["program", "function_call"]
    assert all("agent" not in item for item in items)
    assert items[1]["caller"] == CALLER
    good = {"agent_name": "sub"}
    kept = _read("openai-responses", _events(1, [{**PROGRAM, "agent": good}, {**_call(0), "agent": good}]))
    assert kept.problems() == () and "part-not-reassembled" not in kept.codes()
    assert [i.get("agent") for i in messages.assistant_message(kept, "openai-responses")] == [good, good]


@pytest.mark.parametrize(("key", "value"), [("result", 5), ("result", None), ("call_id", ["c"]), ("id", {})])
def test_a_program_output_the_api_refuses_back_is_said_and_not_kept(key: str, value: Any) -> None:
    result = _read("openai-responses", _events(2, [{**OUTPUT, key: value}]))
    (said,) = _said(result, "part-not-reassembled")
    assert said.startswith(f"a program_output item at output_index 0 whose {key} is ") and said.endswith("not kept")
    assert result.server_tool_results == () and messages.assistant_message(result, "openai-responses") == []
    # one built by hand goes back as the decoder would have kept it: not at all
    made = fsm.reassemble(_events(2, [OUTPUT]), "openai-responses")
    bad = ServerToolResult({**OUTPUT, key: value}, output_index=0)
    assert messages.assistant_message(made, "openai-responses") == [OUTPUT]
    assert messages.assistant_message(attrs.evolve(made, server_tool_results=(bad,)), "openai-responses") == []


# -- Claude's fallback block --------------------------------------------------------------------------

_FALLBACK = {"type": "fallback", "from": {"model": "claude-opus-4-7"}, "to": {"model": "claude-sonnet-4-6"}}


def _claude(*blocks: dict[str, Any], pieces: dict[int, str] | None = None) -> list[dict[str, Any]]:
    start = {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": []}}
    events: list[dict[str, Any]] = [start]
    for at, block in enumerate(blocks):
        events.append({"type": "content_block_start", "index": at, "content_block": block})
        if (pieces or {}).get(at):
            delta = {"type": "input_json_delta", "partial_json": (pieces or {})[at]}
            events.append({"type": "content_block_delta", "index": at, "delta": delta})
        events.append({"type": "content_block_stop", "index": at})
    events.append({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}})
    return [*events, {"type": "message_stop"}]


@pytest.mark.parametrize(
    ("key", "value", "fault"),
    [
        ("from", ["claude-opus-4-7"], "from is list, not an object with a model"),
        ("from", None, "from is null or missing, not an object with a model"),
        ("to", "claude-sonnet-4-6", "to is str, not an object with a model"),
        ("to", {"model": 5}, "to names no model in text"),
        ("trigger", ["refusal"], "trigger is list, not an object or null"),
    ],
)
def test_a_fallback_block_the_api_refuses_back_is_said_and_still_sets_the_calls_apart(
    key: str, value: Any, fault: str
) -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "run", "input": {}}
    after = {"type": "tool_use", "id": "toolu_2", "name": "run", "input": {}}
    events = _claude(use, {**_FALLBACK, key: value}, after, pieces={0: '{"a": 1}', 2: '{"a": 2}'})
    result = _read("anthropic", events)
    assert _said(result, "part-not-reassembled") == [
        f"a fallback content block at index 1 whose {fault}: the API refuses it back"
    ]
    assert result.codes() == ["model-fallback", "part-not-reassembled", "declined-call"]
    assert [c.id for c in result.calls] == ["toolu_2"] and [c.id for c in result.declined_calls] == ["toolu_1"]
    assert [r.output_index for r in result.server_tool_results] == [1]  # kept in its place
    # a sound block says nothing of the kind; a null trigger is one the API takes
    sound = _read("anthropic", _claude(use, {**_FALLBACK, "trigger": None}, after, pieces={0: "{}", 2: "{}"}))
    assert "part-not-reassembled" not in sound.codes()


def test_the_hostile_shapes_raise_nothing_but_fsm_s_own_errors() -> None:
    """A sweep of the shapes above and more, lax and strict, from events and from bytes."""
    shapes: list[tuple[str, list[dict[str, Any]]]] = [
        ("anthropic", _claude({**_FALLBACK, "from": 10**5000, "to": {"model": "x" * 100_000}})),
        ("anthropic", [{"type": "error", "error": {"type": {"a": [1]}, "message": ["m"]}, "request_id": 1}]),
        ("openai-responses", _events(1, [{**PROGRAM, "code": 5, "fingerprint": {"a": 1}, "agent": ""}])),
        ("openai-responses", _events(2, [{**OUTPUT, "result": 10**5000}, PROGRAM])),
        ("openai-responses", [{"type": "response.failed", "response": {"error": {"code": True, "message": None}}}]),
        ("openai-chat", [{"error": {"code": 10**5000, "type": ["t"], "message": {"m": 1}}}]),
        ("gemini", [{"error": {"code": 1.5, "status": {"s": 1}, "message": 10**5000}}]),
    ]
    for provider, events in shapes:
        for strict in (False, True):
            try:
                fsm.reassemble(events, provider, strict=strict)
            except ToolcallFSMError:
                assert strict
            reader = fsm.Reassembler(provider)
            try:
                for event in events:
                    reader.feed(event)
            except ToolcallFSMError:
                pass
            assert isinstance(reader.close(), fsm.Result)
