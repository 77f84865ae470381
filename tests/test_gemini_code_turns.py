"""Gemini's code execution goes back with the turn: each ``executableCode`` part (a server call) and
the ``codeExecutionResult`` part that gave its outcome, in their places among the thoughts, text and
calls, each signature on its part. Before, the result part was reported and dropped and neither went
back, so the next turn lost what the model's code had computed (and any signature on those parts)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from fsm import messages

LANGUAGE = {"language": "PYTHON"}


def gem(*parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


def code(source: str, **extra: Any) -> dict[str, Any]:
    return {"executableCode": {**LANGUAGE, "code": source, **extra.pop("fields", {})}, **extra}


def ran(output: str, **extra: Any) -> dict[str, Any]:
    return {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": output, **extra.pop("fields", {})}, **extra}


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": args}}


def as_sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\r\n\r\n" for e in events)


def next_parts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # the parts as the wire gave them, without the dummy on an unsigned step (policy gemini-dummy-signature)
    whole = messages.assistant_message(fsm.reassemble(events, "gemini"), "gemini", dummy_signature=False)
    reader = fsm.Reassembler(provider="gemini")
    for at in range(0, len(body := as_sse(events)), 7):  # the same turn from bytes, in 7-byte reads
        reader.feed_bytes(body[at : at + 7])
    assert messages.assistant_message(reader.close(), "gemini", dummy_signature=False) == whole
    parts: list[dict[str, Any]] = whole["parts"]
    return parts


def test_the_code_and_its_result_go_back_in_their_place() -> None:
    signed = code("print(2 + 3)", thoughtSignature="sig-code")
    events = [
        gem({"text": "Let me compute. "}),
        gem(signed),
        gem(ran("5\n", thoughtSignature="sig-ran")),
        gem({"text": "It is 5. "}, call("report", value=5), finish="STOP"),
    ]
    result = fsm.reassemble(events, "gemini")
    assert [r.block for r in result.server_tool_results] == [ran("5\n", thoughtSignature="sig-ran")]
    assert "part-not-reassembled" not in result.codes()
    assert next_parts(events) == [
        {"text": "Let me compute. "},
        signed,
        ran("5\n", thoughtSignature="sig-ran"),
        {"text": "It is 5. "},
        call("report", value=5),
    ]


def test_a_call_before_the_code_keeps_its_place() -> None:
    events = [gem(call("look", q="x")), gem(code("a = 1")), gem(ran("")), gem(call("f"), finish="STOP")]
    assert next_parts(events) == [call("look", q="x"), code("a = 1"), ran(""), call("f")]


def test_two_runs_in_one_event_pair_in_order() -> None:
    events = [gem(code("a = 1"), ran("set\n"), code("print(a)"), ran("1\n"), {"text": "a is 1"}, finish="STOP")]
    assert next_parts(events) == [code("a = 1"), ran("set\n"), code("print(a)"), ran("1\n"), {"text": "a is 1"}]


def test_a_result_names_its_code_by_id() -> None:
    first, second = code("x = 1", fields={"id": "c1"}), code("y = 2", fields={"id": "c2"})
    events = [
        gem(first, second),
        gem(ran("two", fields={"id": "c2"}), ran("one", fields={"id": "c1"})),
        gem(finish="STOP"),
    ]
    assert next_parts(events) == [second, ran("two", fields={"id": "c2"}), first, ran("one", fields={"id": "c1"})]


def test_a_resent_result_is_one_result() -> None:
    events = [gem(code("print(1)")), gem(ran("1\n")), gem(ran("1\n")), gem({"text": "One."}, finish="STOP")]
    result = fsm.reassemble(events, "gemini")
    assert len(result.server_tool_results) == 1
    (resent,) = [d for d in result.diagnostics if d.code == "resend"]
    assert (resent.event, resent.message) == (3, "parts[0], a codeExecutionResult kept before, came again: not added")
    assert next_parts(events) == [code("print(1)"), ran("1\n"), {"text": "One."}]
    # the same output from new code is that code's result
    again = [gem(code("print(1)")), gem(ran("1\n")), gem(code("print(0 + 1)")), gem(ran("1\n")), gem(finish="STOP")]
    assert next_parts(again) == [code("print(1)"), ran("1\n"), code("print(0 + 1)"), ran("1\n")]


@pytest.mark.parametrize(
    "events",
    [
        [gem({"text": "Computing"}), gem(code("while True: pass"))],  # cut before the code's result
        [gem({"text": "Computing"}), gem(ran("7\n"), finish="STOP")],  # a result of no code
    ],
)
def test_half_a_run_does_not_go_back(events: list[dict[str, Any]]) -> None:
    assert next_parts(events) == [{"text": "Computing"}]


def test_google_genai_reads_the_turn_back() -> None:
    types = pytest.importorskip("google.genai.types")
    events = [
        gem(code("print(2 + 3)", thoughtSignature="c2lnLWNvZGU=")),
        gem(ran("5\n")),
        gem(call("f"), finish="STOP"),
    ]
    content = types.Content.model_validate(messages.assistant_message(fsm.reassemble(events, "gemini"), "gemini"))
    assert [(p.executable_code is not None, p.code_execution_result is not None) for p in content.parts or []] == [
        (True, False),
        (False, True),
        (False, False),
    ]
    first = (content.parts or [])[0]
    assert (
        first.thought_signature == b"sig-code"
        and first.executable_code
        and first.executable_code.code == "print(2 + 3)"
    )
    ran_part = (content.parts or [])[1].code_execution_result
    assert ran_part is not None and ran_part.output == "5\n" and ran_part.outcome == types.Outcome.OUTCOME_OK


@pytest.mark.parametrize("language", [False, 1, ["PYTHON"], {"name": "PYTHON"}])
def test_code_whose_language_is_no_string_is_reported_and_does_not_go_back(language: Any) -> None:
    # it was kept whole and went back as it came: google-genai refuses the part (the language is an enum's name)
    events = [gem(code("print(1)", fields={"language": language})), gem(ran("1\n")), gem(call("report"), finish="STOP")]
    for strict in (False, True):
        result = fsm.reassemble(events, "gemini", strict=strict)
        assert not result.server_tool_calls
        kind = type(language).__name__
        assert [(d.event, d.message) for d in result.diagnostics if d.code == "part-not-reassembled"] == [
            (1, f"parts[0].executableCode.language is {kind}, not a string: the part is not read")
        ]
    assert next_parts(events) == [call("report")]  # its result, without its code, does not go back either
    assert next_parts([gem(code("print(1)")), gem(ran("1\n")), gem(call("report"), finish="STOP")])[0] == code(
        "print(1)"
    )


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"outcome": 1}, "outcome is int, not a string"),
        ({"outcome": ["OUTCOME_OK"]}, "outcome is list, not a string"),
        ({"outcome": {"ok": True}}, "outcome is dict, not a string"),
        ({"output": 5}, "output is int, not a string"),
        ({"id": 3}, "id is int, not a string"),
    ],
)
def test_a_code_result_with_a_field_of_a_wrong_type_is_reported_and_does_not_go_back(
    fields: dict[str, Any], said: str
) -> None:
    # it was kept whole and went back as it came: a part Gemini refuses (outcome is an enum's name)
    events = [gem(code("print(1)")), gem(ran("1\n", fields=fields)), gem(call("report"), finish="STOP")]
    for strict in (False, True):
        result = fsm.reassemble(events, "gemini", strict=strict)
        assert not result.server_tool_results
        assert [(d.event, d.message) for d in result.diagnostics if d.code == "part-not-reassembled"] == [
            (2, f"parts[0].codeExecutionResult.{said}: the part is not read")
        ]
    assert next_parts(events) == [call("report")]  # half a run (code without its result) does not go back
    # nor does such a result in a result made by hand
    made = fsm.Result(
        "gemini",
        "stop",
        (),
        (),
        server_tool_calls=fsm.reassemble(events, "gemini").server_tool_calls,
        server_tool_results=(fsm.results.ServerToolResult(ran("1\n", fields=fields), 1),),
    )
    assert messages.assistant_message(made, "gemini")["parts"] == []
