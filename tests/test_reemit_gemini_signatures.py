"""``DeltaEmitter`` re-emits Gemini's thought signatures (policy gemini-signatures-reemitted,
``fsm/reemit_signatures.py``), so a client behind a gateway in front of Gemini 3 can send each call's
back: Gemini 3 refuses a function call sent back without it ("Function call is missing a
thought_signature in functionCall parts").

The shape is Gemini's own OpenAI-compatible endpoint's, as Google documents it
(https://ai.google.dev/gemini-api/docs/thought-signatures, "OpenAI compatibility": a call's
signature is ``extra_content: {"google": {"thought_signature": ...}}`` on its ``tool_calls`` entry,
and goes back there) and as recorded from it (discuss.ai.google.dev, "OpenAI API compatibility
broken due to thought_signature on gemini-3-pro-preview": a text's signature comes as
``extra_content`` on the ``delta`` beside ``content``). LiteLLM carries a call's instead in its own
``provider_specific_fields.thought_signature`` (and in the call id), which only its own client reads;
Gemini's endpoint's shape is the one openai-python keeps and toolcall-fsm's chat decoder reads
(``fsm/wire/decoders/openai_chat.py``), and the one ``fsm.messages`` sends a call's back in.

openai-python's accumulator (``openai.lib.streaming._deltas.accumulate_delta``) joins a string sent
twice under one key of one tool call, so each signature goes out once: a call's on its first chunk
when the call opened with it (``CallOpened.thought_signature``), as it does on every Gemini wire."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

import fsm
from fsm import CallOpened, Reassembler, Result, messages
from fsm.cli import main
from fsm.reemit import DeltaEmitter, FlushPolicy
from tests.conftest import CAPTURES, captures
from tests.test_clients import Replay, openai_client

FLUSHES = list(FlushPolicy)
GEMINI_CAPTURES = captures("gemini", "gemini_vertex_partial_args", "gemini_openai_compat")
MISSING = f"recorded captures not found at {CAPTURES} (../shared is beside the project in CI)"
USER = [{"role": "user", "content": "Add 2 and 3, 4 and 5."}]


def event(*parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


def call(name: str, args: dict[str, Any], call_id: str, sig: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"name": name, "args": args, "id": call_id}}
    if sig is not None:
        part["thoughtSignature"] = sig
    return part


def signed_turn() -> list[dict[str, Any]]:
    """A thought, signed text, then parallel calls of which only the first is signed (Gemini 3 signs
    the first call of a step), each in an event of its own, then the finish."""
    return [
        event({"text": "Adding.", "thought": True}),
        event({"text": "Let me add "}),
        event({"text": "them.", "thoughtSignature": "VEVYVA=="}),
        event(call("add", {"a": 2, "b": 3}, "g1", "Q0FMTDE=")),
        event(call("add", {"a": 4, "b": 5}, "g2")),
        event({"text": ""}, finish="STOP"),
    ]


def sse(payloads: list[dict[str, Any]], done: bool = False) -> bytes:
    body = b"".join(b"data: " + json.dumps(p).encode() + b"\n\n" for p in payloads)
    return body + (b"data: [DONE]\n\n" if done else b"")


def events_of(data: bytes) -> list[bytes]:
    """A capture's SSE events (or JSONL lines) each as SSE bytes of its own."""
    if data.lstrip().startswith(b"data:"):
        return [e + b"\n\n" for e in re.split(rb"\r?\n\r?\n", data) if e.strip()]
    return [b"data: " + line + b"\n\n" for line in data.splitlines() if line.strip()]


def reemit(pieces: list[bytes], provider: str, flush: FlushPolicy) -> tuple[list[dict[str, Any]], Result]:
    """The source fed piece by piece, re-emitted: every chunk validated as openai-python's."""
    r = Reassembler(provider, content_deltas=True)
    emitter = DeltaEmitter(flush)
    chunks = [emitter.start()]
    for piece in pieces:
        chunks += emitter.chunks(r.feed_bytes(piece))
    result = r.close()
    chunks += [*emitter.chunks(r.drain()), emitter.finish(result)]
    for chunk in chunks:
        ChatCompletionChunk.model_validate(chunk)
        json.dumps(chunk).encode("utf-8")  # writable as UTF-8
    return chunks, result


def read_back(chunks: list[dict[str, Any]]) -> Result:
    return fsm.reassemble(sse(chunks, done=True), provider="openai-chat")


def signatures(result: Result) -> tuple[list[tuple[str, str | None]], str | None]:
    return [(c.id, c.thought_signature) for c in result.calls], result.text_signature


def signed_entries(chunks: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """Each tool-call entry's signature, in the order they went out, by the call's index."""
    return [
        (entry["index"], entry["extra_content"]["google"]["thought_signature"])
        for chunk in chunks
        for entry in chunk["choices"][0]["delta"].get("tool_calls", [])
        if "extra_content" in entry
    ]


def sdk_message(chunks: list[dict[str, Any]]) -> Any:
    state = ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
    return state.get_final_completion().choices[0].message


def sdk_signatures(message: Any) -> tuple[list[tuple[str, str | None]], str | None]:
    """What openai-python's accumulated message keeps of each signature (extra fields it does not model)."""
    calls = [
        (c.id, (c.model_extra or {}).get("extra_content", {}).get("google", {}).get("thought_signature"))
        for c in message.tool_calls or []
    ]
    text = (message.model_extra or {}).get("extra_content", {}).get("google", {}).get("thought_signature")
    return calls, text


def gemini_parts(result: Result) -> list[tuple[str, str | None]]:
    """The next Gemini turn's parts, each as its kind and the signature it goes back with."""
    content = messages.assistant_message(result, "gemini", dummy_signature=False)  # the wire's signatures alone
    kinds = [("thought" if p.get("thought") else "text") if "text" in p else next(iter(p)) for p in content["parts"]]
    return [(kind, part.get("thoughtSignature")) for kind, part in zip(kinds, content["parts"], strict=True)]


@pytest.mark.parametrize("flush", FLUSHES, ids=lambda f: f.value)
@pytest.mark.parametrize("whole", [False, True], ids=["per-event", "whole"])
def test_a_signed_gemini_turn_reaches_the_client_and_goes_back_on_its_parts(flush: FlushPolicy, whole: bool) -> None:
    pieces = [sse(signed_turn())] if whole else [sse([e]) for e in signed_turn()]
    chunks, source = reemit(pieces, "gemini", flush)
    assert signatures(source) == ([("g1", "Q0FMTDE="), ("g2", None)], "VEVYVA==")
    # the call's on its header, once; the text's on the last chunk's delta, once
    assert signed_entries(chunks) == [(0, "Q0FMTDE=")]
    header = next(e for c in chunks for e in c["choices"][0]["delta"].get("tool_calls", []) if "extra_content" in e)
    assert header["id"] == "g1" and header["function"]["name"] == "add"
    said = [c["choices"][0]["delta"]["extra_content"] for c in chunks if "extra_content" in c["choices"][0]["delta"]]
    assert (
        said == [{"google": {"thought_signature": "VEVYVA=="}}] and "extra_content" in chunks[-1]["choices"][0]["delta"]
    )

    back = read_back(chunks)
    assert signatures(back) == signatures(source) and back.text == source.text
    assert [(c.name, c.arguments) for c in back.calls] == [(c.name, c.arguments) for c in source.calls]
    # the next Gemini turn: the text's signature on the text, the first call's on it, none on the second
    want = [("text", "VEVYVA=="), ("functionCall", "Q0FMTDE="), ("functionCall", None)]
    assert [p for p in gemini_parts(source) if p[0] != "thought"] == want
    assert [p for p in gemini_parts(back) if p[0] != "thought"] == want
    assert sdk_signatures(sdk_message(chunks)) == signatures(source)


@pytest.mark.skipif(not GEMINI_CAPTURES, reason=MISSING)
@pytest.mark.parametrize("flush", FLUSHES, ids=lambda f: f.value)
@pytest.mark.parametrize("stream", GEMINI_CAPTURES, ids=lambda p: p.name)
def test_every_gemini_capture_re_emitted_keeps_its_signatures(stream: Path, flush: FlushPolicy) -> None:
    provider = "openai-chat" if stream.parent.name == "gemini_openai_compat" else "gemini"
    data = stream.read_bytes()
    for pieces in (events_of(data), [data]):
        chunks, source = reemit(pieces, provider, flush)
        back = read_back(chunks)
        assert signatures(back) == signatures(source)
        assert [(c.id, c.name, c.arguments) for c in back.calls] == [(c.id, c.name, c.arguments) for c in source.calls]
        assert sdk_signatures(sdk_message(chunks)) == signatures(source)
        # each signature once, on the call's first chunk
        first = {}
        for chunk in chunks:
            for entry in chunk["choices"][0]["delta"].get("tool_calls", []):
                first.setdefault(entry["index"], entry)
        signed = [(c.index, c.thought_signature) for c in source.calls if c.thought_signature is not None]
        assert signed_entries(chunks) == signed
        assert all("extra_content" in first[index] for index, _ in signed)
        gemini = [(c.id, c.thought_signature) for c in source.calls]
        calls = [p for p in gemini_parts(back) if p[0] == "functionCall"]
        assert [sig for _, sig in calls] == [sig for _, sig in gemini]


def test_the_gemini_3_capture_signs_only_its_first_call() -> None:
    stream = CAPTURES / "gemini" / "adk-go-gemini-3-flash-preview-parallel-sum.sse"
    if not stream.is_file():
        pytest.skip(MISSING)
    outputs = Reassembler("gemini").feed_bytes(stream.read_bytes())
    opened = [(o.id, o.thought_signature is not None) for o in outputs if isinstance(o, CallOpened)]
    assert opened == [("3ae8iwca", True), ("up3kf30e", False), ("ycroch25", False)]


def test_the_openai_client_reads_the_signatures_and_sends_them_back() -> None:
    """A gateway's stream, served to openai-python over a mock transport: raw chunks and the stream
    helper both give each call its signature, the helper's done events come once per call with its
    whole arguments (the signature rides on the first chunk, so no chunk of a call follows a later
    call's), and the next turn goes back with the signature on its call."""
    chunks, source = reemit([sse(signed_turn())], "gemini", FlushPolicy.INCREMENTAL)
    replay = Replay(sse(chunks, done=True))
    client = openai_client(replay)

    raw = fsm.reassemble(client.chat.completions.create(model="gemini-3", messages=USER, stream=True))
    with client.chat.completions.stream(model="gemini-3", messages=USER) as stream:
        events = list(stream)
        final = stream.get_final_completion().choices[0].message
    done = [(e.index, e.arguments) for e in events if e.type == "tool_calls.function.arguments.done"]
    assert done == [(c.index, c.arguments_json) for c in source.calls]
    assert sdk_signatures(final) == signatures(source)
    assert [(c.id, c.thought_signature) for c in raw.calls] == signatures(source)[0]

    history = [*USER, messages.assistant_message(raw, "openai-chat")]
    history += [messages.tool_result(c, {"sum": 5}, "openai-chat") for c in raw.complete_calls]
    client.chat.completions.create(model="gemini-3", messages=history, stream=True).close()
    sent = replay.sent[-1]["messages"][1]["tool_calls"]
    assert [c.get("extra_content") for c in sent] == [{"google": {"thought_signature": "Q0FMTDE="}}, None]


def chat_entry(index: int, arguments: str, sig: str | None = None, call_id: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id is not None:
        entry |= {"id": call_id, "type": "function"}
        entry["function"]["name"] = "add"
    if sig is not None:
        entry["extra_content"] = {"google": {"thought_signature": sig}}
    return entry


def chat(*entries: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    delta = {"tool_calls": list(entries)} if entries else {}
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


@pytest.mark.parametrize("flush", FLUSHES, ids=lambda f: f.value)
def test_a_signature_that_comes_after_its_call_opened_goes_with_the_calls_end(flush: FlushPolicy) -> None:
    # No Gemini wire does this; a proxy might. The header went out unsigned: the signature goes once,
    # on the call's last chunk, and reads back on its call.
    wire = [
        chat(chat_entry(0, '{"a": ', call_id="c1")),
        chat(chat_entry(0, "2}", "TEFURQ==")),
        chat(chat_entry(0, "", "TEFURQ==")),  # the same again: still once
        chat(finish="tool_calls"),
    ]
    r = Reassembler("openai-chat")
    opened = [o for o in r.feed_bytes(sse(wire[:1])) if isinstance(o, CallOpened)]
    assert opened[0].thought_signature is None
    chunks, source = reemit([sse([w]) for w in wire], "openai-chat", flush)
    assert signed_entries(chunks) == [(0, "TEFURQ==")]
    assert signatures(read_back(chunks)) == signatures(source) == ([("c1", "TEFURQ==")], None)
    assert sdk_signatures(sdk_message(chunks)) == signatures(source)


def test_a_signature_on_a_bare_sighting_after_the_value_closed_stays_on_its_call() -> None:
    # The chunk a late signature goes out in, read as a source: a sighting of no id, name or text after
    # the call's value closed is that call's (rule metadata-once), and its signature was dropped unsaid.
    wire = [
        chat(chat_entry(0, '{"a": 2}', call_id="c1")),
        chat(chat_entry(0, "", "TEFURQ==")),
        chat(finish="tool_calls"),
    ]
    result = fsm.reassemble(sse(wire), provider="openai-chat")
    assert signatures(result) == ([("c1", "TEFURQ==")], None) and result.diagnostics == ()


@pytest.mark.parametrize("flush", FLUSHES, ids=lambda f: f.value)
def test_a_signature_repeated_on_every_chunk_of_its_call_goes_out_once(flush: FlushPolicy) -> None:
    wire = [
        chat(chat_entry(0, '{"a": ', "U0lH", call_id="c1")),
        chat(chat_entry(0, "2}", "U0lH")),
        chat(chat_entry(1, '{"a": 3}', None, call_id="c2")),
        chat(finish="tool_calls"),
    ]
    chunks, _ = reemit([sse([w]) for w in wire], "openai-chat", flush)
    assert signed_entries(chunks) == [(0, "U0lH")]
    # sent twice, openai-python would have joined them: "U0lHU0lH"
    assert sdk_signatures(sdk_message(chunks)) == ([("c1", "U0lH"), ("c2", None)], None)


def test_a_signature_holding_a_lone_surrogate_goes_out_escaped() -> None:
    # policy emitted-lone-surrogate: a chunk holding one cannot be written as UTF-8
    wire = [event(call("f", {}, "g1", "ab\ud800")), event({"text": "ok", "thoughtSignature": "x\udc00"}, finish="STOP")]
    chunks, source = reemit([sse([w]) for w in wire], "gemini", FlushPolicy.INCREMENTAL)
    assert source.calls[0].thought_signature == "ab\ud800"
    assert signed_entries(chunks) == [(0, "ab\\ud800")]
    assert chunks[-1]["choices"][0]["delta"]["extra_content"]["google"]["thought_signature"] == "x\\udc00"


def test_the_text_signed_in_several_parts_sends_the_latest_and_lists_the_others(tmp_path: Path) -> None:
    wire = [
        event({"text": "First.", "thoughtSignature": "T05F"}),
        event(call("f", {"q": 1}, "g1", "Q0FMTA==")),
        event({"text": "Second.", "thoughtSignature": "VFdP"}, finish="STOP"),
    ]
    r = Reassembler("gemini", content_deltas=True)
    emitter = DeltaEmitter()
    chunks = emitter.chunks(r.feed_bytes(sse(wire)))
    result = r.close()
    chunks += [emitter.finish(result)]
    assert [p.signature for p in result.text_parts] == ["T05F", "VFdP"] and result.text_signature == "VFdP"
    assert chunks[-1]["choices"][0]["delta"]["extra_content"] == {"google": {"thought_signature": "VFdP"}}
    assert emitter.unsent_signatures == (
        "text part 0: its signature (a chat stream carries one signature of the text, the latest)",
    )
    assert signatures(read_back(chunks)) == ([("g1", "Q0FMTA==")], "VFdP")

    path = tmp_path / "g.sse"
    path.write_bytes(sse(wire))
    out, err = io.StringIO(), io.StringIO()
    assert main(["replay", "--provider", "gemini", "--output", "deltas", str(path)], stdout=out, stderr=err) == 0
    assert "not re-emitted: text part 0: its signature" in err.getvalue()


@pytest.mark.parametrize("flush", ["incremental", "on-finish"])
def test_replay_deltas_carries_the_signatures(tmp_path: Path, flush: str) -> None:
    path = tmp_path / "g.sse"
    path.write_bytes(sse(signed_turn()))
    out, err = io.StringIO(), io.StringIO()
    argv = ["replay", "--provider", "gemini", "--output", "deltas", "--flush", flush, str(path)]
    assert main(argv, stdout=out, stderr=err) == 0 and err.getvalue() == ""
    chunks = [json.loads(line) for line in out.getvalue().splitlines()]
    for chunk in chunks:
        ChatCompletionChunk.model_validate(chunk)
    assert signed_entries(chunks) == [(0, "Q0FMTDE=")]
    back = read_back(chunks)
    assert signatures(back) == ([("g1", "Q0FMTDE="), ("g2", None)], "VEVYVA==")


def test_an_unsigned_stream_goes_out_as_before() -> None:
    wire = [chat(chat_entry(0, '{"a": 1}', call_id="c1")), chat(finish="tool_calls")]
    chunks, _ = reemit([sse(wire)], "openai-chat", FlushPolicy.INCREMENTAL)
    assert not any("extra_content" in json.dumps(chunk) for chunk in chunks)


def done_events(chunks: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """openai-python's stream helper's ``arguments.done`` events: each call's index and its text then."""
    state, done = ChatCompletionStreamState(), []
    for chunk in chunks:
        for e in state.handle_chunk(ChatCompletionChunk.model_validate(chunk)):
            if e.type == "tool_calls.function.arguments.done":
                done.append((e.index, e.arguments))
    return done


def resent_signed() -> list[dict[str, Any]]:
    """Two calls, the first unsigned, then the first again (a resend, by its id) with its signature:
    the signature comes after the second call opened. No Gemini wire does this (each signs a call's
    first part); a proxy that adds signatures late might."""
    return [
        event(call("add", {"a": 2}, "g1")),
        event(call("add", {"a": 4}, "g2")),
        event(call("add", {"a": 2}, "g1", "TEFURQ==")),
        event({"text": ""}, finish="STOP"),
    ]


@pytest.mark.parametrize("flush", FLUSHES, ids=lambda f: f.value)
def test_a_late_signature_of_a_held_call_goes_out_before_the_next_call(flush: FlushPolicy) -> None:
    # The call's text and its end come together (the engine holds a snapshot's text until it ends):
    # the next call waits for the signed end, not for the text (before: header 1, then call 0's
    # signed entry, so openai-python ended call 1 with no text: its done said '').
    chunks, source = reemit([sse([e]) for e in resent_signed()], "gemini", flush)
    assert signatures(source) == ([("g1", "TEFURQ=="), ("g2", None)], None)
    order = [(e["index"], "extra_content" in e) for c in chunks for e in c["choices"][0]["delta"].get("tool_calls", [])]
    signed_at = order.index((0, True))
    assert all(index == 0 for index, _ in order[:signed_at])  # every chunk of call 0 before call 1's
    assert done_events(chunks) == [(0, '{"a": 2}'), (1, '{"a": 4}')]
    assert signatures(read_back(chunks)) == signatures(source)
    assert sdk_signatures(sdk_message(chunks)) == signatures(source)


def test_a_signature_behind_a_later_calls_chunk_goes_on_the_last_chunk() -> None:
    # Policy late-signature-on-last-chunk: call 1's header went out (call 0 had sent text), its text
    # waits for its name, which never comes, so it goes at the end; call 0's signature, owed at its
    # end, would come between call 1's header and its text (openai-python: call 1 done with '').
    nameless = {"index": 1, "id": "c2", "type": "function", "function": {"arguments": '{"a": 4}'}}
    wire = [
        chat(chat_entry(0, '{"a": 2}', call_id="c1")),
        chat(nameless),
        chat(chat_entry(0, "", "TEFURQ==")),
        chat(finish="tool_calls"),
    ]
    chunks, source = reemit([sse([w]) for w in wire], "openai-chat", FlushPolicy.INCREMENTAL)
    assert signatures(source) == ([("c1", "TEFURQ=="), ("c2", None)], None)
    assert signed_entries(chunks) == [(0, "TEFURQ==")]
    last = chunks[-1]["choices"][0]
    assert last["finish_reason"] == "tool_calls" and "extra_content" in last["delta"]["tool_calls"][-1]
    assert done_events(chunks) == [(0, '{"a": 2}'), (1, '{"a": 4}')]
    assert signatures(read_back(chunks)) == signatures(source)
    assert sdk_signatures(sdk_message(chunks)) == signatures(source)


def test_the_openai_client_reads_a_late_signature_and_each_calls_done_once() -> None:
    chunks, source = reemit([sse([e]) for e in resent_signed()], "gemini", FlushPolicy.INCREMENTAL)
    replay = Replay(sse(chunks, done=True))
    client = openai_client(replay)
    with client.chat.completions.stream(model="gemini-3", messages=USER) as stream:
        done = [(e.index, e.arguments) for e in stream if e.type == "tool_calls.function.arguments.done"]
        final = stream.get_final_completion().choices[0].message
    assert done == [(c.index, c.arguments_json) for c in source.calls]
    assert sdk_signatures(final) == signatures(source)


@pytest.mark.parametrize("whole", [False, True], ids=["per-event", "whole"])
def test_an_interleaving_source_in_one_list_goes_out_call_by_call(whole: bool) -> None:
    # Each call finishes in the one list of outputs a stream read whole gives: the next call waits for
    # the end of the one before it, so each done carries its whole text; fed a piece at a time, the
    # calls go out interleaved as they came (the source's doing, under incremental).
    wire = [
        chat(chat_entry(0, '{"a": ', call_id="c1")),
        chat(chat_entry(1, '{"a": ', call_id="c2")),
        chat(chat_entry(0, "2}")),
        chat(chat_entry(1, "4}")),
        chat(finish="tool_calls"),
    ]
    pieces = [sse(wire)] if whole else [sse([w]) for w in wire]
    chunks, source = reemit(pieces, "openai-chat", FlushPolicy.INCREMENTAL)
    done = done_events(chunks)
    assert sorted(done) == ([(0, '{"a": 2}'), (1, '{"a": 4}')] if whole else [(0, '{"a": '), (1, '{"a": ')])
    back = read_back(chunks)
    assert [(c.id, c.arguments) for c in back.calls] == [(c.id, c.arguments) for c in source.calls]
