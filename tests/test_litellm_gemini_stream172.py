"""Task 172: a Gemini turn LiteLLM streams, its signatures kept where each part goes back (policy
litellm-thought-signatures).

LiteLLM's Gemini route (``VertexGeminiConfig._process_candidates``) writes on each chunk it streams
``provider_specific_fields.thought_signatures``: the ``thoughtSignature`` of every part of that Gemini event, in
the parts' order. A call's is on its entry too (``provider_specific_fields.thought_signature``, and in the id after
``__thought__``); a thought's and a text's are there alone. On the next request it reads a call's back from the
entry's fields or its id (``get_thought_signature_from_tool``), and the text part's from the message's
``provider_specific_fields.thought_signatures[0]`` unless a call carries it (``gemini_convert_messages_with_history``);
a thought goes back unsigned. These tests drive LiteLLM's own client over a mocked transport both ways."""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from fsm import messages
from fsm.wire.decoders.chat_reasoning import GEMINI_FORMAT

httpx = pytest.importorskip("httpx")

THOUGHT, CALL, TEXT = "R0VNVEhPVUdIVA==", "R0VNQ0FMTA==", "R0VNVEVYVA=="


def _event(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": "gemini-3-pro-preview"}


EVENTS = [
    _event([{"text": "Let me think.", "thought": True, "thoughtSignature": THOUGHT}]),
    _event([{"text": "Calling."}]),
    _event(
        [  # two parallel calls in one event: Gemini signs the first alone
            {"functionCall": {"name": "get", "args": {"q": 1}}, "thoughtSignature": CALL},
            {"functionCall": {"name": "get", "args": {"q": 2}}},
        ]
    ),
    _event([{"text": "", "thoughtSignature": TEXT}], "STOP"),  # the empty text part a turn ends with
]


class _Gemini:
    """A mocked Gemini endpoint behind LiteLLM's own client: answers ``EVENTS``, keeps each request's body."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def client(self) -> Any:
        from litellm.llms.custom_httpx.http_handler import HTTPHandler

        def answer(request: Any) -> Any:
            self.sent.append(json.loads(request.content or b"{}"))
            body = b"".join(b"data: " + json.dumps(event).encode() + b"\r\n\r\n" for event in EVENTS)
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

        return HTTPHandler(client=httpx.Client(transport=httpx.MockTransport(answer)))

    def stream(self, litellm: Any, history: list[Any]) -> list[Any]:
        model = "gemini/gemini-3-pro-preview"
        return list(litellm.completion(model=model, messages=history, stream=True, client=self.client(), api_key="t"))


ASK = [{"role": "user", "content": "go"}]


def _said(result: fsm.Result) -> tuple[Any, ...]:
    return (
        [(r.text, r.signature, r.format) for r in result.reasoning],
        [(c.id, c.name, c.arguments, c.thought_signature) for c in result.calls],
        (result.text, result.text_signature, result.provider_fields),
        [(d.code, d.message) for d in result.diagnostics],
    )


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
def test_a_streamed_gemini_turn_through_litellm_keeps_each_signature_on_its_part(litellm: Any) -> None:
    gemini = _Gemini()
    chunks = gemini.stream(litellm, ASK)
    result = fsm.reassemble(chunks)
    assert [(r.text, r.signature, r.format) for r in result.reasoning] == [("Let me think.", THOUGHT, GEMINI_FORMAT)]
    assert [c.thought_signature for c in result.calls] == [CALL, None]
    assert (result.text, result.text_signature) == ("Calling.", TEXT)
    assert result.diagnostics == ()
    body = b"".join(b"data: " + json.dumps(event).encode() + b"\r\n\r\n" for event in EVENTS)
    native = fsm.reassemble(body, "gemini")  # the same events read straight from Gemini: the same signatures
    assert [(r.text, r.signature) for r in native.reasoning] == [(r.text, r.signature) for r in result.reasoning]
    assert [c.thought_signature for c in native.calls] == [c.thought_signature for c in result.calls]
    assert (native.text, native.text_signature) == (result.text, result.text_signature)
    # gemini, straight: each signature on the part it came on, once
    parts = messages.assistant_message(result, "gemini")["parts"]
    assert parts[0] == {"text": "Let me think.", "thought": True, "thoughtSignature": THOUGHT}
    assert parts[1] == {"text": "Calling.", "thoughtSignature": TEXT}
    assert [p.get("thoughtSignature") for p in parts[2:]] == [CALL, None]
    sent = json.dumps(parts)
    assert [sent.count(f'"thoughtSignature": "{s}"') for s in (THOUGHT, CALL, TEXT)] == [1, 1, 1]
    # openai-chat: the call's in the id LiteLLM minted (no extra_content beside), the text's where LiteLLM reads it,
    # the thought's nowhere (Gemini's, which LiteLLM sends back unsigned: signature-by-origin)
    chat = messages.assistant_message(result, "openai-chat")
    assert chat["provider_specific_fields"] == {"thought_signatures": [TEXT]}
    assert [("extra_content" in c, c["id"].endswith("__thought__" + CALL)) for c in chat["tool_calls"]] == [
        (False, True),
        (False, False),
    ]
    assert THOUGHT not in json.dumps(chat)


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
def test_the_rebuilt_turn_reaches_gemini_through_litellm_as_litellm_s_own_message_does(litellm: Any) -> None:
    """What LiteLLM sends Gemini for fsm's openai-chat message: the first call signed, the text signed, each once;
    the same parts as for the message LiteLLM builds itself (``stream_chunk_builder``), but the thought, which
    fsm sends only in the field the caller names (policy reasoning-field-named)."""
    gemini = _Gemini()
    chunks = gemini.stream(litellm, ASK)
    result = fsm.reassemble(chunks)
    tools = [{"role": "tool", "tool_call_id": call.id, "content": "ok"} for call in result.calls]
    gemini.stream(litellm, [*ASK, messages.assistant_message(result, "openai-chat"), *tools])
    ours = gemini.sent[-1]["contents"][1]
    own = litellm.stream_chunk_builder(chunks).choices[0].message.model_dump()
    gemini.stream(litellm, [*ASK, own, *tools])
    theirs = gemini.sent[-1]["contents"][1]
    assert ours["parts"] == [part for part in theirs["parts"] if not part.get("thought")]
    assert [part.get("thoughtSignature") for part in ours["parts"]] == [TEXT, CALL, None]
    assert [json.dumps(ours).count(s) for s in (CALL, TEXT)] == [1, 1]


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
def test_litellm_s_chunks_read_alike_as_objects_dicts_and_wire_bytes_whole_or_in_pieces(litellm: Any) -> None:
    chunks = _Gemini().stream(litellm, ASK)
    dumped = [chunk.model_dump(exclude_none=True) for chunk in chunks]
    body = b"".join(b"data: " + json.dumps(d).encode() + b"\n\n" for d in dumped) + b"data: [DONE]\n\n"
    expected = _said(fsm.reassemble(chunks))
    assert _said(fsm.reassemble(dumped, "openai-chat")) == expected
    for size in (len(body), 7, 1):
        reader = fsm.Reassembler("openai-chat")
        for at in range(0, len(body), size):
            reader.feed_bytes(body[at : at + size])
        assert _said(reader.close()) == expected


# -- hostile shapes, by hand ----------------------------------------------------------------------------------------


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _read(*deltas: dict[str, Any]) -> fsm.Result:
    """The deltas as one stream, read as dicts and as wire bytes whole and a byte at a time: all alike."""
    stream = [*map(_chunk, deltas), _chunk({}, "stop")]
    result = fsm.reassemble(stream, "openai-chat")
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in stream)
    for size in (len(body), 1):
        reader = fsm.Reassembler("openai-chat")
        for at in range(0, len(body), size):
            reader.feed_bytes(body[at : at + size])
        assert _said(reader.close()) == _said(result)
    return result


def _unkept(result: fsm.Result) -> list[str]:
    return [d.message for d in result.diagnostics if d.code == "part-not-reassembled"]


def _listed(value: Any) -> dict[str, Any]:
    return {"provider_specific_fields": {"thought_signatures": value}}


def test_entries_that_are_no_signature_are_each_said_and_sign_nothing() -> None:
    result = _read({"reasoning_content": "Hm.", **_listed([7, None, {"a": 1}, ""])})
    assert [(r.text, r.signature) for r in result.reasoning] == [("Hm.", None)]
    said = _unkept(result)
    assert [m.split(" is ")[0].rsplit("[", 1)[1] for m in said] == ["0]", "1]", "2]", "3]"]
    assert all("not a signature" in m for m in said)


@pytest.mark.parametrize("listed", ["R0VN", {"R0VN": 1}, 3])
def test_a_list_that_is_no_list_is_said(listed: Any) -> None:
    result = _read({"content": "Hi.", **_listed(listed)})
    assert result.text_signature is None
    assert len(_unkept(result)) == 1 and "not a list" in _unkept(result)[0]


def test_more_entries_than_unsigned_parts_place_none_and_each_is_said() -> None:
    result = _read({"reasoning_content": "Hm.", **_listed(["QQ==", "Qg=="])})
    assert [r.signature for r in result.reasoning] == [None]
    assert len(_unkept(result)) == 2
    both = _read({"reasoning_content": "Hm.", "content": "Hi.", **_listed(["QQ=="])})  # thought or text: untold
    assert ([r.signature for r in both.reasoning], both.text_signature) == ([None], None)
    assert len(_unkept(both)) == 1
    beside_a_call = _read(
        {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}], **_listed(["QQ=="])}
    )  # an unsigned call's, or an empty text part's: the list does not say
    assert (beside_a_call.calls[0].thought_signature, beside_a_call.text_signature) == (None, None)
    assert len(_unkept(beside_a_call)) == 1


def test_an_entry_listed_twice_is_one_signature() -> None:
    result = _read({"reasoning_content": "Hm.", **_listed(["QQ==", "QQ=="])})
    assert [(r.signature, r.format) for r in result.reasoning] == [("QQ==", GEMINI_FORMAT)]
    assert result.diagnostics == ()


def test_a_megabyte_signature_is_kept_whole_and_said_in_a_line() -> None:
    huge = "S" * 1_000_000
    kept = _read({"content": "Hi.", **_listed([huge])})
    assert (kept.text_signature, kept.diagnostics) == (huge, ())
    left = _read({"content": "Hi.", **_listed([huge, "QQ=="])})
    assert left.text_signature is None
    assert all(len(m) < 300 for m in _unkept(left)) and len(_unkept(left)) == 2


def test_a_call_s_entry_carries_its_own_and_the_one_left_is_the_text_s() -> None:
    entry = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    signed = {**entry, "provider_specific_fields": {"thought_signature": "Q0FMTA=="}}
    result = _read({"content": "Hi.", "tool_calls": [signed], **_listed(["Q0FMTA==", "VEVYVA=="])})
    assert ([c.thought_signature for c in result.calls], result.text_signature) == (["Q0FMTA=="], "VEVYVA==")
    assert _unkept(result) == []
    # The entry's fields are read where the delta carries LiteLLM's fields too, as LiteLLM always writes them (one
    # part's signature, twice); alone, neither the chunk shortcut (one call: it looks at no entry's fields, a cost
    # on every call) nor the decoder (two calls) reads them, so both read alike.
    for calls in ([signed], [signed, {**entry, "index": 1, "id": "c2"}]):
        assert [c.thought_signature for c in _read({"tool_calls": calls}).calls] == [None] * len(calls)
    beside = _read({"tool_calls": [signed], "provider_specific_fields": {"phase": "x"}})
    assert [c.thought_signature for c in beside.calls] == ["Q0FMTA=="]


def test_a_second_text_signature_replacing_the_first_is_said() -> None:
    result = _read({"content": "A", **_listed(["QQ=="])}, {"content": "B", **_listed(["Qg=="])})
    assert result.text_signature == "Qg=="
    assert any("replaced" in m for m in _unkept(result))


def test_fsm_s_own_re_emission_reads_back_with_the_text_s_and_the_call_s_signatures() -> None:
    """DeltaEmitter writes the text's signature in ``extra_content`` and the kept list beside it on the last chunk:
    read back, both tell the one text signature, kept once and said nowhere (the thought's goes only where the
    caller asks for reasoning blocks)."""
    from fsm.reemit import DeltaEmitter

    entry = {"index": 0, "id": "call_a__thought__Q0FMTA==", "type": "function"}
    signed = {
        **entry,
        "function": {"name": "f", "arguments": "{}"},
        "provider_specific_fields": {"thought_signature": "Q0FMTA=="},
    }
    stream = [
        _chunk({"content": "Hi.", "tool_calls": [signed], **_listed(["Q0FMTA=="])}),
        _chunk(_listed(["VEVYVA=="])),
        _chunk({}, "tool_calls"),
    ]
    reader, emitter = fsm.Reassembler("openai-chat", content_deltas=True), DeltaEmitter()
    chunks = [emitter.start()]
    for chunk in stream:
        chunks += emitter.chunks(reader.feed(chunk))
    source = reader.close()
    chunks += [*emitter.chunks(reader.drain()), emitter.finish(source)]
    back = fsm.reassemble(chunks, "openai-chat")
    assert [(c.id, c.thought_signature) for c in back.calls] == [("call_a__thought__Q0FMTA==", "Q0FMTA==")]
    assert (back.text_signature, back.provider_fields) == ("VEVYVA==", {"thought_signatures": ["VEVYVA=="]})
    assert _unkept(back) == [] and _said(back)[:3] == _said(source)[:3]


def test_a_signature_only_an_id_holds_is_said_not_taken_as_carried() -> None:
    """With no entry field beside it, the id's ``__thought__`` tail gives the call no signature (the id goes back to
    LiteLLM as it came, which reads it there; a ``gemini`` request would not): the list's entry is said."""
    entry = {
        "index": 0,
        "id": "c1__thought__Q0FMTA==",
        "type": "function",
        "function": {"name": "f", "arguments": "{}"},
    }
    result = _read({"tool_calls": [entry], **_listed(["Q0FMTA=="])})
    assert [(c.id, c.thought_signature) for c in result.calls] == [("c1__thought__Q0FMTA==", None)]
    assert len(_unkept(result)) == 1


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
def test_litellm_s_proxy_stream_read_by_openai_python_keeps_the_same_signatures(litellm: Any) -> None:
    """Its proxy's SSE chunks, read by the openai client (the fields it does not model kept as extras)."""
    chunk_type = pytest.importorskip("openai.types.chat").ChatCompletionChunk
    chunks = _Gemini().stream(litellm, ASK)
    dumped = [chunk.model_dump(exclude_none=True) for chunk in chunks]
    objects = [chunk_type.model_validate({"id": "x", "created": 0, "model": "m", **d}) for d in dumped]
    assert _said(fsm.reassemble(objects))[:3] == _said(fsm.reassemble(chunks))[:3]
