"""Gemini's thought and text parts, each signature on the part it came on, in the wire's order among
the calls; and ``finishMessage`` read into an error finish. Gemini wants every ``thoughtSignature``
back exactly on its part (a thought, a text part or a call) and refuses a turn of calls without
theirs; a stream can sign several thought or text parts of one turn, calls and text between them.
No capture holds a ``thought: true`` part, so the streams are built from the wire's shape
(/work/shared/notes/wire-facts.md); the next turn goes through the real google-genai client."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

import fsm
from fsm import messages
from fsm.history import check
from tests.test_clients import Replay
from tests.test_messages import anthropic_thinking_turn, synthetic
from tests.test_sdk_loop import _signature, client_for, seen, send


def sig(name: str) -> str:
    """A signature whose standard base64 holds + and / (google-genai writes them url-safe)."""
    return base64.b64encode(name.encode() + b"\xfb\xff\xbe").decode()


def event(*parts: dict[str, Any], finish: str | None = None, message: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    if message:
        candidate["finishMessage"] = message
    return {"candidates": [candidate], "usageMetadata": {"promptTokenCount": 5, "totalTokenCount": 9}}


def thought(said: str, signature: str | None = None) -> dict[str, Any]:
    return {"text": said, "thought": True, **({"thoughtSignature": signature} if signature else {})}


def said(text: str, signature: str | None = None) -> dict[str, Any]:
    return {"text": text, **({"thoughtSignature": signature} if signature else {})}


def call(name: str, call_id: str, signature: str | None = None, **args: Any) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"name": name, "args": args, "id": call_id}}
    return {**part, "thoughtSignature": signature} if signature else part


# Gemini 3, one part an event: a signed thought (streamed in two pieces), text, a parallel batch
# (signed on its first call only), a second signed thought, a call, and the closing signature on
# an empty text part
TURN = [
    event(thought("Weigh the ")),
    event(thought("sums.", sig("T1"))),
    event(said("Adding both.")),
    event(call("sum", "c1", sig("C1"), a=2, b=3)),
    event(call("sum", "c2", a=4, b=5)),
    event(thought("Then the product.", sig("T2"))),
    event(call("mul", "c3", sig("C3"), a=2, b=3)),
    event(said("", sig("X")), finish="STOP"),
]
TURN_PARTS = [  # what must go back: the wire's parts, the pieces of the first thought joined
    thought("Weigh the sums.", sig("T1")),
    said("Adding both."),
    call("sum", "c1", sig("C1"), a=2, b=3),
    call("sum", "c2", a=4, b=5),
    thought("Then the product.", sig("T2")),
    call("mul", "c3", sig("C3"), a=2, b=3),
    said("", sig("X")),
]


def sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\r\n\r\n" for e in events)


def bytes_signed(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Parts with each signature as its bytes, so the wire's base64 and google-genai's compare."""
    return [{**p, "thoughtSignature": _signature(p.get("thoughtSignature"))} for p in parts]


def placed(result: fsm.Result) -> list[tuple[str, bytes | None, int | None]]:
    """The thoughts and text parts with their signatures' bytes and their places."""
    return [(p.text, _signature(p.signature), p.place) for p in (*result.reasoning, *result.text_parts)]


def test_each_thought_keeps_its_signature_and_its_place_among_the_calls_and_text() -> None:
    result = synthetic("gemini", TURN)
    assert [(r.text, r.signature) for r in result.reasoning] == [
        ("Weigh the sums.", sig("T1")),
        ("Then the product.", sig("T2")),
    ]
    assert [(p.text, p.signature) for p in result.text_parts] == [("Adding both.", None), ("", sig("X"))]
    assert (result.text, result.text_signature) == ("Adding both.", sig("X"))
    assert messages.assistant_message(result, "gemini")["parts"] == TURN_PARTS


def test_signed_text_parts_go_back_each_on_its_own_text() -> None:
    # A signature closes its part: text after it is a part of its own, and a call between two
    # signed text parts stays between them (before, the text was joined under the last signature)
    result = synthetic(
        "gemini",
        [
            event(said("Checking.", sig("X1"))),
            event(said(" More.")),
            event(call("f", "c1", sig("C1"))),
            event(said("Done.", sig("X2")), finish="STOP"),
        ],
    )
    assert result.text == "Checking. More.Done." and result.text_signature == sig("X2")
    assert messages.assistant_message(result, "gemini")["parts"] == [
        said("Checking.", sig("X1")),
        said(" More."),
        call("f", "c1", sig("C1")),
        said("Done.", sig("X2")),
    ]


def test_thoughts_and_text_that_alternate_stay_apart_in_order() -> None:
    wire = [thought("A", sig("T1")), said("hi"), thought("B", sig("T2")), said(" there", sig("X"))]
    result = synthetic("gemini", [event(wire[0], wire[1]), event(wire[2]), event(wire[3], finish="STOP")])
    assert messages.assistant_message(result, "gemini")["parts"] == wire
    # two signed thoughts in a row are two parts, never one under the second's signature
    both = synthetic("gemini", [event(thought("A", sig("T1")), thought("B", sig("T2")), finish="STOP")])
    assert [(r.text, r.signature) for r in both.reasoning] == [("A", sig("T1")), ("B", sig("T2"))]


def test_vertex_streamed_calls_keep_their_places_between_signed_thoughts() -> None:
    def opening(name: str, signature: str) -> dict[str, Any]:
        return {"functionCall": {"name": name, "willContinue": True}, "thoughtSignature": signature}

    def value(path: str, text: str) -> dict[str, Any]:
        return {"functionCall": {"partialArgs": [{"jsonPath": path, "stringValue": text}], "willContinue": True}}

    result = synthetic(
        "gemini",
        [
            event(thought("Boston first.", sig("T1"))),
            event(opening("weather", sig("C1"))),
            event(value("$.city", "Boston")),
            event({"functionCall": {}}),
            event(thought("Then SF.", sig("T2"))),
            event(opening("weather", sig("C2"))),
            event(value("$.city", "SF")),
            event({"functionCall": {}}, finish="STOP"),
        ],
    )
    sent = messages.assistant_message(result, "gemini")["parts"]
    assert sent == [
        thought("Boston first.", sig("T1")),
        {"functionCall": {"name": "weather", "args": {"city": "Boston"}}, "thoughtSignature": sig("C1")},
        thought("Then SF.", sig("T2")),
        {"functionCall": {"name": "weather", "args": {"city": "SF"}}, "thoughtSignature": sig("C2")},
    ]


def test_an_omitted_call_leaves_the_parts_after_it_in_order() -> None:
    # A call cut by the length limit is left out (incomplete="omit"); the thought after it still
    # follows the call before it
    stream = sse([event(call("f", "c1", sig("C1"), a=1)), event(thought("Next.", sig("T1")))])
    stream += b'data: {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": '
    stream += b'{"name": "g", "willContinue": true}}]}, "index": 0}]}\r\n\r\n'
    stream += sse([event({"functionCall": {"partialArgs": [{"jsonPath": "$.q", "stringValue": "cu"}]}})])
    stream += sse([event(said("Late.", sig("X")), finish="MAX_TOKENS")])
    result = fsm.reassemble(stream, "gemini")
    assert [c.status.value for c in result.calls] == ["complete", "truncated"]
    assert messages.assistant_message(result, "gemini")["parts"] == [
        call("f", "c1", sig("C1"), a=1),
        thought("Next.", sig("T1")),
        said("Late.", sig("X")),
    ]


def test_the_google_genai_client_sends_every_signature_back_on_its_part() -> None:
    body = sse(TURN)
    replay, client = client_for("gemini", body)
    ask = [{"role": "user", "parts": [{"text": "2+3, 4+5 and 2*3?"}]}]
    result = send("gemini", client, ask)  # google-genai's own response objects, read as they stream
    reference = fsm.reassemble(body, "gemini")
    assert seen(result, reasoning=False) == seen(reference, reasoning=False)
    assert placed(result) == placed(reference)

    answers = [messages.tool_result(c, sum(c.arguments.values()), "gemini") for c in result.complete_calls]
    history = [*ask, messages.assistant_message(result, "gemini"), *messages.tool_results(answers, "gemini")]
    following = send("gemini", client, history)  # the next turn, through the client

    sent = replay.sent[-1]["contents"]
    assert bytes_signed(sent[1]["parts"]) == bytes_signed(TURN_PARTS)
    assert [p["functionResponse"]["id"] for p in sent[2]["parts"]] == ["c1", "c2", "c3"]
    assert not check(sent).rejected
    assert [c.wire_id for c in following.calls] == ["c1", "c2", "c3"]


def test_a_malformed_function_call_says_gemini_s_finish_message() -> None:
    explained = "Malformed function call: print(default_api.sum(a=2,, b=3))"
    wire = [event(said("Let me add.")), event(finish="MALFORMED_FUNCTION_CALL", message=explained)]
    result = synthetic("gemini", wire)
    assert result.finish_reason == "error"
    errors = [d.message for d in result.diagnostics if d.code == "provider-error"]
    assert errors == [f'the provider reported an error "MALFORMED_FUNCTION_CALL": {explained}']
    with pytest.raises(fsm.RemoteProtocolError, match="print\\(default_api"):
        strict = fsm.Reassembler("gemini", strict=True)
        for payload in wire:
            strict.feed(payload)
    # Through google-genai: Vertex's responses keep Candidate.finish_message, read the same; the
    # Gemini API's converter drops it (google-genai 3.6), so only the finish's own word is left there
    genai = pytest.importorskip("google.genai")
    replay = Replay(sse(wire))
    for vertex in (True, False):
        options = genai.types.HttpOptions(base_url="http://mock", httpx_client=replay.client())
        client = genai.Client(vertexai=vertex, api_key="test", http_options=options)
        chunks = list(client.models.generate_content_stream(model="g", contents="go"))
        assert chunks[-1].candidates[0].finish_message == (explained if vertex else None)
        if vertex:
            assert fsm.reassemble(chunks).diagnostics == result.diagnostics
    # a normal finish's message ("Model generated function call(s).") is no error
    fine = synthetic("gemini", [event(call("f", "c1"), finish="STOP", message="Model generated function call(s).")])
    assert fine.codes() == ["finish-reason-mapped"]


def test_other_providers_give_no_places_or_text_parts() -> None:
    result = synthetic("anthropic", anthropic_thinking_turn())
    assert result.reasoning and all(r.place is None for r in result.reasoning)
    # Claude's text blocks are text parts, placed by their content block index, not by place
    assert [(p.text, p.place, p.output_index) for p in result.text_parts] == [("Checking.", None, 2)]
    chat = synthetic(
        "openai-chat",
        [
            {"choices": [{"index": 0, "delta": {"reasoning_content": "Hm."}}]},
            {"choices": [{"index": 0, "delta": {"content": "Hi."}, "finish_reason": "stop"}]},
        ],
    )
    assert [(r.text, r.place) for r in chat.reasoning] == [("Hm.", None)] and chat.text_parts == ()
