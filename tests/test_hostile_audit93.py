"""Task 93: a hostile audit of merge errs91, and the gap it left.

Fixed (each test below failed before):

- OpenRouter sends a Gemini 3 call's thought signature as a ``reasoning.encrypted`` entry naming the
  call's id; it is read as the signature of a reasoning block (``item_id`` the call's id), and
  ``fsm.messages`` for ``"gemini"`` put it on a thought part, where Gemini 3 wants it on the call's
  ``functionCall`` part (it refuses a call sent back without it). Policy gemini-signature-by-call-id:
  it goes on that call's part now, the thought unsigned (a block of no text, only the signature, is
  no part at all); where the id names no call sent, or several, or a call signed already, it stays
  on the thought as read.

Judged fine (tried, nothing to fix; the last two tests hold the first two):

- Detection under auto: every conformance vector (but those reading one choice of several) and
  every capture, whole (in the audit also 1 and 7 bytes at a time), lax and strict, gives under
  ``"auto"`` the result its provider gives and tells that provider; the bare-error rule fires on
  no other provider's first event (Anthropic's, chat's, Gemini's errors hold an ``error`` object,
  vLLM's names another ``type``). A stream that is only an error, or an error page,
  names none; InvokeModel chunks tell ``anthropic``, whose events they carry.
- ``detected_provider``: None before any event told it (also after an error that names none, an
  event half fed, an ``UnsupportedProvider``), the name after close and after a strict failure, the
  same on a ``copy``, ``deepcopy`` and ``pickle`` fork. For LangChain chunks it is ``openai-chat``,
  as ``Result.provider`` says (they are read as the chat chunks they mirror).
- Error texts on all seven wires: kinds of every JSON type (empty, ``"error"``, a newline, 5,000
  characters, a 5,000-digit number, a float, a bool, a list, an object, a lone surrogate) and
  messages likewise, fed, whole bytes and a byte at a time, auto and named, lax and strict: the
  same text each way, every diagnostic under 1,500 characters, no foreign exception; a Gemini
  error finish's ``finishMessage`` of every type likewise; ``details`` nested 100,000 deep, self
  referring, megabytes long, or a caller's object whose ``__eq__``, ``__bool__`` or ``__str__``
  raises: bounded, or ``InvalidInput`` (policy caller-object-raises).
- ``toolcall-fsm replay`` under auto with ``--output calls``, ``deltas`` (each ``--flush``, each
  ``--reasoning-blocks``) and ``--strict``, over every capture: the bytes ``--provider <its own>``
  prints, the same on a second run; an empty file, garbage, a directory, a missing file, a bare
  Responses error, an error before the provider is told: typed, bounded, exit codes as documented.

Left (reported, not fixed): two Gemini ``reasoning.encrypted`` entries under one
``reasoning_details`` index naming different call ids (seen on no wire: OpenRouter numbers each
call's apart, or shares the index with the text alone) make one block, the later signature kept
(a block's fields take the latest word); a caller-fed ``set`` inside an error object is written in
string-hash order.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from fsm.reemit import DeltaEmitter

GEMINI = "google-gemini-v1"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "gen-1", "object": "chat.completion.chunk", "created": 1, "model": "g", "choices": [choice]}


def _openrouter_turn(thought: str | None = "**Weather**", signed: str = "tool_1", calls: int = 1) -> list[Any]:
    """Gemini 3 through OpenRouter: the thought a ``reasoning.text`` entry, the first call's signature a
    ``reasoning.encrypted`` one of the same index naming ``signed`` (the call's id), then the calls."""
    details = [{"type": "reasoning.text", "text": thought, "format": GEMINI, "index": 0}] if thought else []
    sig = {"type": "reasoning.encrypted", "data": "CiQBjz1r", "format": GEMINI, "id": signed, "index": 0}
    opened = [
        {"index": n, "id": f"tool_{n + 1}", "type": "function", "function": {"name": "weather", "arguments": ""}}
        for n in range(calls)
    ]
    args = [{"index": n, "function": {"arguments": '{"location":"Florence"}'}} for n in range(calls)]
    return [
        *([_chunk({"role": "assistant", "content": "", "reasoning_details": details})] if details else []),
        _chunk({"role": "assistant", "content": "", "reasoning_details": [sig]}),
        _chunk({"tool_calls": opened}),
        _chunk({"tool_calls": args}),
        _chunk({"content": ""}, "tool_calls"),
    ]


def _sse(payloads: list[Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(p).encode() + b"\n\n" for p in payloads) + b"data: [DONE]\n\n"


def _read(wire: bytes, provider: str, piece: int | None = None) -> fsm.Result:
    reader = fsm.Reassembler(provider)
    step = piece or len(wire)
    for at in range(0, len(wire), step):
        reader.feed_bytes(wire[at : at + step])
    return reader.close()


def _parts(result: fsm.Result) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = fsm.messages.assistant_message(result, "gemini")["parts"]
    return parts


_CALL = {"functionCall": {"name": "weather", "args": {"location": "Florence"}, "id": "tool_1"}}


@pytest.mark.parametrize("piece", [None, 1])
def test_openrouter_s_call_signature_goes_back_to_gemini_on_the_call_s_part(piece: int | None) -> None:
    """Before: ``{"text": "**Weather**", "thought": true, "thoughtSignature": "CiQBjz1r"}`` and an
    unsigned call, which Gemini 3 refuses."""
    result = _read(_sse(_openrouter_turn()), "openai-chat", piece)
    assert _parts(result) == [{"text": "**Weather**", "thought": True}, {**_CALL, "thoughtSignature": "CiQBjz1r"}]
    # OpenRouter itself still gets it back as it came, once
    details = fsm.messages.assistant_message(result, "openai-chat")
    assert [e["type"] for e in details["reasoning_details"]] == ["reasoning.text", "reasoning.encrypted"]
    assert "extra_content" not in details["tool_calls"][0]


def test_a_signature_alone_makes_no_thought_part() -> None:
    """A turn that streamed no thought text: before, an empty thought part held the call's signature."""
    result = fsm.reassemble(_openrouter_turn(thought=None), "openai-chat")
    assert _parts(result) == [{**_CALL, "thoughtSignature": "CiQBjz1r"}]


def test_parallel_calls_only_the_named_one_is_signed() -> None:
    result = fsm.reassemble(_openrouter_turn(calls=2), "openai-chat")
    parts = _parts(result)
    assert [p.get("thoughtSignature") for p in parts] == [None, "CiQBjz1r", None]
    assert parts[1]["functionCall"]["id"] == "tool_1"


def test_an_id_naming_no_call_sent_leaves_the_signature_on_the_thought() -> None:
    """Nothing dropped: an id naming no call of the turn (or a call left out as incomplete). The call
    goes unsigned by it, so it takes Google's dummy (policy gemini-dummy-signature): Gemini 3 checks
    the step's first functionCall part, and a thought's signature does not stand in for it."""
    result = fsm.reassemble(_openrouter_turn(signed="tool_9"), "openai-chat")
    dummy = {**_CALL, "thoughtSignature": "skip_thought_signature_validator"}
    assert _parts(result) == [{"text": "**Weather**", "thought": True, "thoughtSignature": "CiQBjz1r"}, dummy]


def test_a_call_signed_already_keeps_its_own_and_the_block_keeps_its() -> None:
    turn = _openrouter_turn()
    turn[2]["choices"][0]["delta"]["tool_calls"][0]["extra_content"] = {"google": {"thought_signature": "T1dO"}}
    parts = _parts(fsm.reassemble(turn, "openai-chat"))
    assert [p.get("thoughtSignature") for p in parts] == ["CiQBjz1r", "T1dO"]


@pytest.mark.parametrize("piece", [None, 1])
def test_openrouter_re_emitted_by_a_gateway_then_read_back_signs_the_call_for_gemini(piece: int | None) -> None:
    """OpenRouter -> Result -> DeltaEmitter (as OpenRouter sends it) -> the chat decoder -> Gemini."""
    r = fsm.Reassembler("openai-chat", content_deltas=True)
    emitter = DeltaEmitter(reasoning_blocks="reasoning_details", source="openai-chat")
    chunks = emitter.chunks(r.feed_bytes(_sse(_openrouter_turn())))
    result = r.close()
    chunks += [*emitter.chunks(r.drain()), emitter.finish(result)]
    back = _read(_sse(chunks), "openai-chat", piece)
    signed = [{"text": "**Weather**", "thought": True}, {**_CALL, "thoughtSignature": "CiQBjz1r"}]
    assert _parts(back) == _parts(result) == signed


def _gemini_3_turn() -> list[dict[str, Any]]:
    def event(*parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
        return {"candidates": [candidate | ({"finishReason": finish} if finish else {})]}

    call = {"functionCall": {"name": "weather", "args": {"location": "Florence"}, "id": "tool_1"}}
    second = {"functionCall": {"name": "weather", "args": {"location": "Oslo"}, "id": "tool_2"}}
    return [
        event({"text": "**Weather**", "thought": True}),
        event({**call, "thoughtSignature": "CiQBjz1r"}),
        event(second),
        event({"text": ""}, finish="STOP"),
    ]


@pytest.mark.parametrize("blocks", [None, "thinking_blocks", "reasoning_details"])
@pytest.mark.parametrize("piece", [None, 1])
def test_native_gemini_re_emitted_and_read_back_signs_the_same_call(blocks: Any, piece: int | None) -> None:
    wire = _sse(_gemini_3_turn())
    r = fsm.Reassembler("gemini", content_deltas=True)
    emitter = DeltaEmitter(reasoning_blocks=blocks, source="gemini") if blocks else DeltaEmitter()
    chunks = emitter.chunks(r.feed_bytes(wire))
    source = r.close()
    chunks += [*emitter.chunks(r.drain()), emitter.finish(source)]
    back = _read(_sse(chunks), "openai-chat", piece)
    assert _parts(back) == _parts(source)
    assert [p.get("thoughtSignature") for p in _parts(back)] == [None, "CiQBjz1r", None]


# -- judged fine, held: detection under auto, detected_provider's lifecycle ------------------------------

_SHAPES = {"deepseek": "openai-chat", "gemini_openai_compat": "openai-chat", "gemini_vertex_partial_args": "gemini"}
_SHAPES |= {
    "groq": "openai-chat",
    "mistral": "openai-chat",
    "ollama_native": "ollama",
    "ollama_openai_compat": "openai-chat",
}
_SHAPES |= {"openai_chat": "openai-chat", "openai_responses": "openai-responses", "openrouter": "openai-chat"}
_TOLD_OTHERWISE = {"bedrock-invoke-claude-chunks": "anthropic"}
"""A vector whose events tell another provider than its shape: InvokeModel chunks carry Claude's own
events, read alike. (``openai-wrong-provider-stream`` is Claude's stream read as OpenAI's, on purpose:
left out.)"""


def _feed_each(reader: fsm.Reassembler, events: list[Any]) -> None:
    for event in events:
        reader.feed(event)


def _both(provider: str, feed: Any, strict: bool) -> tuple[Any, str | None]:
    from fsm.serialize import result_to_json

    reader = fsm.Reassembler(provider, strict=strict)
    try:
        feed(reader)
        said: Any = result_to_json(reader.close())
        said.pop("provider")
    except fsm.ToolcallFSMError as exc:
        said = (type(exc).__name__, str(exc))
    return said, reader.detected_provider


def test_every_vector_and_capture_reads_under_auto_as_under_its_provider() -> None:
    """The bare-error rule (and every other) under auto: each of the conformance vectors (but those
    that read one choice of several, which auto cannot name) and each capture gives the result its
    provider gives, and tells that provider (but a stream of nothing it read), lax and strict."""
    from fsm.harness.vectors import load_vectors
    from tests.conftest import captures

    cases: list[tuple[str, str, Any]] = []
    for vector in load_vectors():
        if vector.choice is None and vector.name != "openai-wrong-provider-stream":
            body = vector.body.encode() if vector.body is not None else None
            feed = (
                (lambda r, b=body: r.feed_bytes(b))
                if body is not None
                else (lambda r, v=vector: _feed_each(r, v.events))
            )
            cases.append((vector.name, vector.shape, feed))
    for path in captures():
        shape = _SHAPES.get(path.parent.name, path.parent.name)
        cases.append((path.name, shape, lambda r, p=path: r.feed_bytes(p.read_bytes())))
    assert len(cases) > 150
    for name, shape, feed in cases:
        for strict in (False, True):
            auto, told = _both("auto", feed, strict)
            named, _ = _both(shape, feed, strict)
            assert auto == named, (name, strict)
            # a stream that is only an error, or no stream at all (an error page), names none
            said = isinstance(auto, dict) and (auto["calls"] or auto["text"] or auto["reasoning"])
            assert told in (_TOLD_OTHERWISE.get(name, shape), *([] if said else [None])), (name, strict)


def test_detected_provider_before_after_failure_and_forked() -> None:
    import copy
    import pickle

    assert (fsm.Reassembler().detected_provider, fsm.Reassembler("gemini").detected_provider) == (None, "gemini")
    alone = fsm.Reassembler()
    alone.feed({"type": "error", "error": {"type": "overloaded_error", "message": "o"}})  # names no provider
    assert [alone.detected_provider, copy.copy(alone).detected_provider] == [None, None]
    assert (alone.close().provider, alone.detected_provider) == ("auto", None)
    told = fsm.Reassembler()
    told.feed({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant"}})
    forks = [copy.copy(told), copy.deepcopy(told), pickle.loads(pickle.dumps(told))]
    assert [f.detected_provider for f in forks] == ["anthropic"] * 3
    told.close()
    assert told.detected_provider == "anthropic"
    unknown = fsm.Reassembler()
    with pytest.raises(fsm.UnsupportedProvider):
        unknown.feed({"zzz": 1})
    assert unknown.detected_provider is None
    cut = fsm.Reassembler()
    cut.feed_bytes(b'data: {"choi')  # an event not yet ended tells nothing
    assert cut.detected_provider is None
    cut.feed_bytes(b'ces": []}\n\n')
    assert cut.detected_provider == "openai-chat"
