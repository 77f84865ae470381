"""Task 91: the leftovers of policy error-kind and of policy reasoning-format-by-source.

What was found, and fixed (each test below failed before):

- ``provider-error`` (and so strict mode's exception) said an error's message only, never its kind,
  which the result held as ``raw_finish_reason``: a log or a strict caller could not tell an overload
  from a bad request without matching on the message, and a second error after the finish had no
  place for its kind at all. It names the kind first now, the same on every wire, from events and
  from bytes alike.
- Before any event told the provider, a bare Responses ``error`` event gave its code alone (``c``)
  as the raw finish reason, where the Responses decoder gives ``error: c``.
- Anthropic's ``error.details`` (anthropic 2.17: ``{"error_code": "ramp_limit_exceeded", ...}``,
  the cause its SDK says to branch on) was dropped: it is said beside the message, bounded.
- ``toolcall-fsm replay --provider auto --output deltas`` named no reasoning format: its emitter
  was built before the stream told its provider.
- A Gemini block's signature was re-emitted as a ``reasoning.text`` entry with a ``signature``,
  where OpenRouter sends Gemini's as a ``reasoning.encrypted`` entry holding it in ``data``; the chat
  decoder read OpenRouter's as encrypted content, not as the signature it is.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

import fsm
from fsm.cli import main
from tests.helpers import aws_message, provider_error

# -- provider-error names the kind --------------------------------------------------------------------

_ANTHROPIC_START = {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant"}}
_COHERE_START = {"type": "message-start", "id": "m", "delta": {"message": {"role": "assistant"}}}

# (provider, the events, the kind, the message)
ERRORS: list[tuple[str, list[dict[str, Any]], str | None, str]] = [
    (
        "anthropic",
        [_ANTHROPIC_START, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}],
        "overloaded_error",
        "Overloaded",
    ),
    (
        "openai-chat",
        [{"error": {"message": "Slow down", "type": "requests", "code": "rate_limit_exceeded"}}],
        "rate_limit_exceeded",
        "Slow down",
    ),
    (
        "openai-responses",
        [{"type": "error", "sequence_number": 0, "code": "server_error", "message": "Broke", "param": None}],
        "error: server_error",
        "Broke",
    ),
    (
        "gemini",
        [{"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}}],
        "RESOURCE_EXHAUSTED",
        "Quota exceeded",
    ),
    ("bedrock", [{"messageStart": {"role": "assistant"}}, {"throttlingException": {"message": "Rate"}}],
     "throttlingException", "Rate"),
    (
        "cohere",
        [_COHERE_START, {"type": "message-end", "delta": {"error": {"code": "rate_limited", "message": "Slow"}}}],
        "rate_limited",
        "Slow",
    ),
    ("ollama", [{"error": "model not found"}], None, "model not found"),  # a string: no kind
]  # fmt: skip


def _wire(provider: str, events: list[dict[str, Any]]) -> bytes:
    """The events as the provider's own framing carries them."""
    if provider == "bedrock":
        pytest.importorskip("botocore")
        frames = []
        for event in events:
            ((kind, body),) = event.items()
            header = ":exception-type" if kind.endswith("Exception") else ":event-type"
            frames.append(aws_message(json.dumps(body).encode(), kind, header))
        return b"".join(frames)
    if provider == "ollama":
        return b"".join(json.dumps(e).encode() + b"\n" for e in events)
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def _errors(result: fsm.Result) -> list[str]:
    return [d.message for d in result.diagnostics if d.code == "provider-error"]


@pytest.mark.parametrize(("provider", "events", "kind", "said"), ERRORS, ids=[e[0] for e in ERRORS])
def test_provider_error_names_the_kind_first_on_every_wire_from_events_and_bytes(
    provider: str, events: list[dict[str, Any]], kind: str | None, said: str
) -> None:
    """Before: ``the provider reported an error: Overloaded``, the kind in ``raw_finish_reason`` only."""
    expected = provider_error(said, kind)
    fed = fsm.reassemble(events, provider=provider)
    assert (fed.raw_finish_reason, _errors(fed)) == (kind, [expected])
    wire = _wire(provider, events)
    for size in (len(wire), 1):
        reader = fsm.Reassembler(provider)
        for at in range(0, len(wire), size):
            reader.feed_bytes(wire[at : at + size])
        read = reader.close()
        assert (read.raw_finish_reason, _errors(read)) == (kind, [expected]), size
    with pytest.raises(fsm.RemoteProtocolError) as raised:
        fsm.reassemble(events, provider=provider, strict=True)
    assert f"provider-error: {expected}" in str(raised.value)


def test_a_second_error_after_the_finish_says_its_own_kind() -> None:
    """The result keeps the first finish's word; the late error's kind had no place at all."""
    late = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    events = [
        _ANTHROPIC_START,
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
        late,
    ]
    result = fsm.reassemble(events, provider="anthropic")
    assert result.raw_finish_reason == "end_turn"
    (said,) = _errors(result)
    assert said.startswith('the provider reported an error "overloaded_error": Overloaded (after the turn finished')


def test_a_huge_kind_and_message_stay_bounded_and_the_kind_leads() -> None:
    error = {"error": {"message": "M" * 1_000_000, "code": "K" * 1_000_000}}
    for strict in (False, True):
        try:
            result = fsm.reassemble([error], provider="openai-chat", strict=strict)
        except fsm.RemoteProtocolError as exc:
            assert strict and len(str(exc)) < 1300 and str(exc).startswith("event 1: provider-error: the provider")
            continue
        (said,) = _errors(result)
        assert said.startswith('the provider reported an error "KKK') and len(said) < 1100
        assert "(1000000 characters)" in said


def test_an_error_that_says_nothing_names_its_kind_without_repeating_it() -> None:
    """A Gemini error finish with no finishMessage, a Bedrock exception with no message (said by its name)."""
    gemini = {"candidates": [{"content": {"role": "model", "parts": [{"text": "x"}]}, "finishReason": "SAFETY_X"}]}
    malformed = {**gemini, "candidates": [{**gemini["candidates"][0], "finishReason": "MALFORMED_FUNCTION_CALL"}]}
    assert _errors(fsm.reassemble([malformed], "gemini")) == [provider_error("no message", "MALFORMED_FUNCTION_CALL")]
    bedrock = [{"messageStart": {"role": "assistant"}}, {"validationException": {}}]
    assert _errors(fsm.reassemble(bedrock, "bedrock")) == [provider_error("no message", "validationException")]


# -- a bare Responses error before the provider is told -----------------------------------------------


@pytest.mark.parametrize(
    ("event", "word"),
    [
        ({"type": "error", "sequence_number": 3, "code": "c", "message": "m", "param": None}, "error: c"),
        ({"type": "error", "code": "c", "message": "m"}, "error: c"),  # no sequence_number (older servers)
        ({"type": "error", "sequence_number": 3, "code": None, "message": "m"}, "error"),
    ],
    ids=["code", "no-sequence-number", "null-code"],
)
def test_a_bare_responses_error_says_what_the_responses_decoder_says(event: dict[str, Any], word: str) -> None:
    """Before: ``c`` (and None for a null code) read first, ``error: c`` (``error``) by the decoder."""
    alone = fsm.reassemble([event])
    named = fsm.reassemble([event], provider="openai-responses")
    assert (alone.raw_finish_reason, alone.finish_message, _errors(alone)) == (
        named.raw_finish_reason,
        named.finish_message,
        _errors(named),
    )
    assert alone.raw_finish_reason == word
    # from bytes too, whole and a byte at a time
    wire = b"event: error\ndata: " + json.dumps(event).encode() + b"\n\n"
    reader = fsm.Reassembler()
    for at in range(len(wire)):
        reader.feed_bytes(wire[at : at + 1])
    assert reader.close().raw_finish_reason == word


def test_an_anthropic_error_without_an_error_object_is_not_taken_for_a_responses_one() -> None:
    """Anthropic's, OpenAI chat's and Gemini's errors hold theirs in an ``error`` object: as before."""
    event = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert fsm.reassemble([event]).raw_finish_reason == "overloaded_error"
    assert fsm.reassemble([{"type": "error", "message": "m"}]).raw_finish_reason is None


# -- Anthropic's error.details ------------------------------------------------------------------------

_RAMP = {
    "type": "error",
    "error": {
        "type": "rate_limit_error",
        "message": "Ramp limit",
        "details": {"error_code": "ramp_limit_exceeded"},
    },
    "request_id": "req_1",
}


def test_anthropic_error_details_are_kept_beside_the_message() -> None:
    """anthropic 2.17's ``APIStatusError.error_code`` is ``error.details.error_code``: before, dropped."""
    said = "Ramp limit (details {'error_code': 'ramp_limit_exceeded'}) (request_id req_1)"
    for provider, events in (("anthropic", [_ANTHROPIC_START, _RAMP]), ("auto", [_RAMP])):
        result = fsm.reassemble(events, provider=provider)
        assert (result.raw_finish_reason, result.finish_message) == ("rate_limit_error", said)
        assert _errors(result) == [provider_error(said, "rate_limit_error")]
    wire = b"".join(b"event: x\ndata: " + json.dumps(e).encode() + b"\n\n" for e in [_ANTHROPIC_START, _RAMP])
    assert fsm.reassemble(wire).finish_message == said


def test_the_sdk_reads_the_same_details() -> None:
    """What anthropic 2.17 itself makes of the body: the details fsm keeps are those it types."""
    anthropic = pytest.importorskip("anthropic")
    from anthropic.types.shared.error_details import ErrorDetails  # noqa: F401  (2.17 has them)

    exc = anthropic.APIStatusError("x", response=_response(), body=_RAMP)
    assert exc.error_code == "ramp_limit_exceeded"  # type: ignore[attr-defined]


def _response() -> Any:
    import httpx

    return httpx.Response(429, request=httpx.Request("POST", "https://api.anthropic.com/v1/messages"))


@pytest.mark.parametrize(
    "details",
    [
        {"error_code": "image_dimensions_too_large", "paths": ["p" * 100] * 10_000, "max_side_length_pixels": 8000},
        "D" * 1_000_000,
        ["x"] * 100_000,
        10**5000,
        {"error_code": "\ud800"},
    ],
    ids=["huge-object", "megabyte-string", "long-list", "huge-number", "lone-surrogate"],
)
def test_error_details_of_any_size_or_type_stay_bounded(details: Any) -> None:
    event = {**_RAMP, "error": {**_RAMP["error"], "details": details}}
    result = fsm.reassemble([_ANTHROPIC_START, event], provider="anthropic")
    assert result.finish_message is not None and len(result.finish_message) < 500
    assert result.finish_message.startswith("Ramp limit (details ")
    assert result.finish_message.endswith("(request_id req_1)")  # the request id after them still said
    assert fsm.reassemble([event]).finish_message == result.finish_message


@pytest.mark.parametrize("details", [None, {}, [], ""], ids=["null", "empty-object", "empty-list", "empty"])
def test_empty_details_say_nothing(details: Any) -> None:
    event = {**_RAMP, "error": {**_RAMP["error"], "details": details}}
    assert fsm.reassemble([event]).finish_message == "Ramp limit (request_id req_1)"


# -- replay --provider auto names the reasoning's format ----------------------------------------------


def _replay_deltas(path: str, provider: str) -> list[dict[str, Any]]:
    out = io.StringIO()
    argv = ["replay", "--provider", provider, "--output", "deltas", "--reasoning-blocks", "reasoning_details", path]
    assert main(argv, stdout=out, stderr=io.StringIO()) == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _details(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for c in chunks for ch in c["choices"] for e in ch["delta"].get("reasoning_details", [])]


def test_replay_with_provider_auto_names_the_detected_provider_s_format(tmp_path: Any) -> None:
    """Before: the emitter was built before detection, with no source: no entry named a format."""
    from tests.test_reemit_reasoning_blocks import anthropic_thinking_turn, sse

    path = tmp_path / "a.sse"
    path.write_bytes(sse(anthropic_thinking_turn()))
    auto = _replay_deltas(str(path), "auto")
    assert {e.get("format") for e in _details(auto)} == {"anthropic-claude-v1"}
    assert auto == _replay_deltas(str(path), "anthropic")


# -- Gemini's signature goes out, and reads back, as OpenRouter sends it ------------------------------

GEMINI = "google-gemini-v1"


def _signed_gemini_turn() -> list[dict[str, Any]]:
    """A thought part signed (Gemini 2.5's thinking), then a call."""
    from tests.test_messages import gemini_thinking_turn

    turn = gemini_thinking_turn()
    signed = {"candidates": [{"content": {"role": "model", "parts": [{"text": "More.", "thought": True}]}}]}
    signed["candidates"][0]["content"]["parts"][0]["thoughtSignature"] = "VEhPVQ=="
    return [*turn[:2], signed, *turn[2:]]


def _reemitted(events: list[Any], provider: str, source: str | None, piece: int | None = None) -> tuple[Any, ...]:
    from openai.types.chat import ChatCompletionChunk

    from fsm.reemit import DeltaEmitter

    r = fsm.Reassembler(provider, content_deltas=True)
    emitter = DeltaEmitter(reasoning_blocks="reasoning_details", source=source)
    wire = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    chunks = []
    for at in range(0, len(wire), piece or len(wire)):
        chunks += emitter.chunks(r.feed_bytes(wire[at : at + (piece or len(wire))]))
    result = r.close()
    chunks += [*emitter.chunks(r.drain()), emitter.finish(result)]
    for chunk in chunks:
        ChatCompletionChunk.model_validate(chunk)
    return chunks, result


def _kept(result: fsm.Result) -> list[tuple[Any, ...]]:
    return [(r.text, r.signature, r.redacted, r.encrypted_content, r.item_id) for r in result.reasoning]


def _read_back(chunks: list[dict[str, Any]], piece: int | None = None) -> fsm.Result:
    wire = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    r = fsm.Reassembler("openai-chat")
    for at in range(0, len(wire), piece or len(wire)):
        r.feed_bytes(wire[at : at + (piece or len(wire))])
    return r.close()


def test_a_gemini_signed_thought_goes_out_as_openrouter_sends_it_and_reads_back_the_same() -> None:
    """Before: ``{"type": "reasoning.text", "text": "", "signature": ...}``; OpenRouter sends Gemini's
    as ``{"type": "reasoning.encrypted", "data": ..., "format": "google-gemini-v1", "index": 0}``."""
    for piece in (None, 1):
        chunks, source = _reemitted(_signed_gemini_turn(), "gemini", "gemini", piece)
        entries = _details(chunks)
        signed = [e for e in entries if e["type"] == "reasoning.encrypted"]
        assert signed == [
            {"type": "reasoning.encrypted", "data": "VEhPVQ==", "format": GEMINI, "index": 0},
            # the call's, by its id (policy gemini-call-signature-as-openrouter, task 99)
            {"type": "reasoning.encrypted", "data": "Q0FMTA==", "id": "g1", "format": GEMINI, "index": 1},
        ]
        assert not any("signature" in e for e in entries)
        assert {e["type"] for e in entries} == {"reasoning.text", "reasoning.encrypted"}
        for back_piece in (None, 1):
            back = _read_back(chunks, back_piece)
            assert _kept(source) == [("Plan: look it up.More.", "VEhPVQ==", None, None, None)]
            assert _kept(back) == [*_kept(source), ("", "Q0FMTA==", None, None, "g1")]
            assert back.codes() == []
            # and to Gemini itself the signature goes back on the thought part it signed
            parts = fsm.messages.assistant_message(back, "gemini")["parts"]
            assert [p.get("thoughtSignature") for p in parts if p.get("thought")] == ["VEhPVQ=="]


def _openrouter_gemini_turn() -> list[dict[str, Any]]:
    """Gemini 3 through OpenRouter, as its streams are recorded (charmbracelet/fantasy's cassettes):
    the thought a ``reasoning.text`` piece, the call's signature a ``reasoning.encrypted`` piece of
    the same index naming the call's id, then the call."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "native_finish_reason": finish and "STOP"}
        return {"id": "gen-1", "object": "chat.completion.chunk", "created": 1, "model": "g", "choices": [choice]}

    text = {"type": "reasoning.text", "text": "**Weather**", "format": GEMINI, "index": 0}
    sig = {"type": "reasoning.encrypted", "data": "CiQBjz1r", "format": GEMINI, "id": "tool_weather_1", "index": 0}
    call = {"index": 0, "id": "tool_weather_1", "type": "function", "function": {"name": "weather", "arguments": ""}}
    return [
        chunk({"role": "assistant", "content": "", "reasoning": "**Weather**", "reasoning_details": [text]}),
        chunk({"role": "assistant", "content": "", "reasoning": None, "reasoning_details": [sig]}),
        chunk({"tool_calls": [call]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"location":"Florence"}'}}]}),
        chunk({"content": ""}, "tool_calls"),
    ]


def test_openrouter_s_gemini_signature_is_read_as_the_signature_and_goes_back_as_it_came() -> None:
    """Before: read as encrypted content, and the block went back as the encrypted entry alone (its
    text dropped). The next request now carries both entries as OpenRouter gave them (fantasy's
    recorded request sends them so)."""
    result = fsm.reassemble(_openrouter_gemini_turn(), "openai-chat")
    assert _kept(result) == [("**Weather**", "CiQBjz1r", None, None, "tool_weather_1")]
    assert [(r.format, r.detail) for r in result.reasoning] == [(GEMINI, "reasoning.text")]
    assert fsm.messages.assistant_message(result, "openai-chat")["reasoning_details"] == [
        {"type": "reasoning.text", "text": "**Weather**", "format": GEMINI, "index": 0},
        {"type": "reasoning.encrypted", "data": "CiQBjz1r", "id": "tool_weather_1", "format": GEMINI, "index": 0},
    ]
    # re-emitted by a gateway (its source a chat server's: the block keeps its own format), read back alike
    for piece in (None, 1):
        chunks, source = _reemitted(_openrouter_gemini_turn(), "openai-chat", "openai-chat", piece)
        assert [e for e in _details(chunks) if e["type"] == "reasoning.encrypted"] == [
            {"type": "reasoning.encrypted", "data": "CiQBjz1r", "id": "tool_weather_1", "format": GEMINI, "index": 0}
        ]
        assert _kept(_read_back(chunks, piece)) == _kept(source) == _kept(result)


def test_other_formats_keep_their_signature_entries() -> None:
    """Claude's signature still goes out on an empty text entry, as OpenRouter sends Claude's."""
    from tests.test_reemit_reasoning_blocks import anthropic_thinking_turn

    chunks, _ = _reemitted(anthropic_thinking_turn(), "anthropic", "anthropic")
    signed = [e for e in _details(chunks) if "signature" in e]
    assert signed and all(e["type"] == "reasoning.text" and e["text"] == "" for e in signed)
    assert not any(e["type"] == "reasoning.encrypted" and e["format"] == GEMINI for e in _details(chunks))


@pytest.mark.parametrize(
    "data",
    ["S" * 1_000_000, "\ud800sig", "", None],
    ids=["megabyte", "lone-surrogate", "empty", "null"],
)
def test_odd_gemini_signature_entries_read_without_a_foreign_exception(data: Any) -> None:
    entry = {"type": "reasoning.encrypted", "data": data, "format": GEMINI, "index": 0}
    chunk = {"choices": [{"index": 0, "delta": {"reasoning_details": [entry]}, "finish_reason": "stop"}]}
    result = fsm.reassemble([chunk], "openai-chat")
    want = data or None
    assert [r.signature for r in result.reasoning] == [want]  # (an empty one: an empty block, as before)
    chunks, _ = _reemitted([chunk], "openai-chat", "gemini")
    for c in chunks:
        json.dumps(c, ensure_ascii=False).encode()  # writable as UTF-8: a lone surrogate goes out escaped
    if want:
        back = _read_back(chunks)
        assert back.reasoning[0].signature is not None and len(back.reasoning[0].signature) >= len(want) - 1


def test_encrypted_content_of_a_gemini_block_reads_back_as_encrypted_content() -> None:
    """Hostile pass: an encrypted entry naming no format beside Gemini's text is read as encrypted
    content of a Gemini block; it went out under Gemini's format and read back as the signature."""
    text = {"type": "reasoning.text", "text": "think", "format": GEMINI, "index": 0}
    data = {"type": "reasoning.encrypted", "data": "ENC", "id": "call_1", "index": 0}
    chunks = [
        {"choices": [{"index": 0, "delta": {"reasoning_details": [text]}}]},
        {"choices": [{"index": 0, "delta": {"reasoning_details": [data]}, "finish_reason": "stop"}]},
    ]
    for source in (None, "gemini", "openai-chat"):
        out, result = _reemitted(chunks, "openai-chat", source)
        assert _kept(result) == [("think", None, None, "ENC", "call_1")]
        assert _kept(_read_back(out)) == _kept(result), source
