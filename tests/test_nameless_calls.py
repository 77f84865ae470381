"""A call that ends without a name: kept and reported, never run, never sent back.

Nothing can dispatch a call with no tool name, and no provider takes one back (Bedrock refuses
``name: ""``, and fsm.history.check refuses such an Ollama message), so such a call is ``invalid``
with its raw text, as the ``missing-name`` diagnostic says."""

from __future__ import annotations

import pytest

from fsm import CallStatus, Reassembler, RemoteProtocolError
from fsm.messages import FORMATS, assistant_message, incomplete_answers, omitted
from tests.helpers import chunk, run, tc

NAMELESS_BESIDE_NAMED = [
    chunk(tc(index=0, id="a", name="ls", args='{"p": 1}')),
    chunk(tc(index=1, id="b", args='{"x": 1}')),
    chunk(finish="tool_calls"),
]


def test_a_nameless_call_is_invalid_with_its_text_and_not_among_the_complete_calls() -> None:
    result = run(NAMELESS_BESIDE_NAMED)
    named, nameless = result.calls
    assert (named.status, named.arguments) == (CallStatus.COMPLETE, {"p": 1})
    assert (nameless.name, nameless.status, nameless.arguments, nameless.arguments_json) == (
        None,
        CallStatus.INVALID,
        None,
        '{"x": 1}',
    )
    assert result.complete_calls == (named,)
    assert result.codes().count("missing-name") == 1


def test_a_late_name_before_the_end_keeps_the_call_complete() -> None:
    named_late = chunk(tc(index=0, name="f"))
    result = run([chunk(tc(index=0, id="a", args='{"x": 1}')), named_late, chunk(finish="tool_calls")])
    (call,) = result.calls
    assert (call.name, call.status, call.arguments) == ("f", CallStatus.COMPLETE, {"x": 1})
    assert "missing-name" not in result.codes()


def test_strict_mode_raises_and_close_still_reports_the_call_invalid() -> None:
    reassembler = Reassembler("openai-chat", strict=True)
    with pytest.raises(RemoteProtocolError, match="without a name"):
        for event in NAMELESS_BESIDE_NAMED:
            reassembler.feed(event)
    result = reassembler.close()
    assert [(c.id, c.status) for c in result.calls] == [("a", CallStatus.COMPLETE), ("b", CallStatus.INVALID)]


def test_the_finished_output_says_invalid_as_the_result_does() -> None:
    reassembler = Reassembler("openai-chat")
    finished = [out.call for event in NAMELESS_BESIDE_NAMED for out in reassembler.feed(event) if hasattr(out, "call")]
    assert finished == list(reassembler.close().calls)


@pytest.mark.parametrize("format", FORMATS)
def test_no_next_turn_sends_a_nameless_call_even_when_incomplete_calls_are_included(format: str) -> None:
    result = run(NAMELESS_BESIDE_NAMED)
    assert [call.id for call in omitted(result)] == ["b"]
    for incomplete in ("omit", "include"):
        sent = repr(assistant_message(result, format, incomplete=incomplete))  # type: ignore[arg-type]
        assert "ls" in sent and '"x"' not in sent and "'x'" not in sent
    assert incomplete_answers(result, format) == []  # type: ignore[arg-type]
