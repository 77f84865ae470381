"""More clients end to end, as tests/test_sdk_loop.py does for the official SDKs: langchain-anthropic's
``ChatAnthropic`` (tools bound; its ``AIMessageChunk``s), ollama's ``Client`` and cohere's
``ClientV2`` read every capture of their wire, and hostile variants of it, through their own HTTP
stack (an httpx mock transport); ``fsm.reassemble`` takes what they yield and must give what the
bytes give. Then ``fsm.messages`` builds the next turn (formats ``ollama`` and ``cohere``), the same
client sends it, and the body it wrote must carry every call and pair every result, which
``fsm.history`` confirms. Where a client itself drops something, the test pins what it does (README,
"What the SDKs themselves do"), as it does for langchain-google-genai's ``ChatGoogleGenerativeAI``,
which gives Gemini's calls in a shape of its own."""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import operator
import uuid
from pathlib import Path
from typing import Any

import pytest

import fsm
from fsm import history, messages
from tests import capture_variants as cv
from tests.conftest import CAPTURES, captures, require_captures
from tests.test_clients import Replay, anthropic_client, anthropic_http, genai_client
from tests.test_sdk_loop import (
    CASES,
    _signature,
    answer,
    body_of,
    client_for,
    next_request,
    numbered,
    repaired_keeps_every_answer,
    seen,
    send,
    sent_answers,
    sent_calls,
)

httpx = pytest.importorskip("httpx")


def _cases(shape: str, provider: str) -> list[Any]:
    found = [
        pytest.param(path, provider, variant, payloads, id=f"{shape}/{path.stem}-{variant}")
        for path in captures(shape)
        for variant, payloads in cv.variants(provider, cv.events(path))
        if payloads is not None
    ]
    return found or [pytest.param(None, provider, "", [], id=f"{shape}-no-captures")]


# -- langchain-anthropic -------------------------------------------------------------------------------

ANTHROPIC_CASES = [c for c in CASES if c.values[0] is None or c.values[1] == "anthropic"]


def chat_anthropic(replay: Replay, reference: fsm.Result) -> Any:
    """ChatAnthropic over the replay, with the reference's tools bound."""
    langchain_anthropic = pytest.importorskip("langchain_anthropic")
    model = langchain_anthropic.ChatAnthropic(model="claude", api_key="test", max_tokens=64)
    # ChatAnthropic builds its anthropic client itself and takes no http_client: the client it
    # would build (a cached property) is set in its place.
    vars(model)["_client"] = anthropic_client(replay)
    names = dict.fromkeys(c.name for c in reference.calls if c.name)
    tools = [{"name": n, "description": n, "input_schema": {"type": "object"}} for n in names]
    return model.bind_tools(tools)


@pytest.mark.parametrize(("path", "provider", "variant", "payloads"), ANTHROPIC_CASES)
def test_chat_anthropic_chunks_give_what_the_bytes_give(path: Path, provider: str, variant: str, payloads: Any) -> None:
    if path is None:
        require_captures()
    body = body_of(path, provider, variant, payloads)
    reference = fsm.reassemble(body, provider)
    chunks = list(chat_anthropic(Replay(body, anthropic_http()), reference).stream("go"))
    got = fsm.reassemble(chunks)

    # A tool block that streams no argument text has its `input: {}` for arguments on the wire: no
    # `empty-arguments` there, so none here, and such a call is no `invalid` under that policy
    assert seen(got, usage=False) == seen(reference, usage=False)
    # every block at its content block index, as the bytes place it (the next turn's order)
    assert (got.text_parts, got.text_output_index) == (reference.text_parts, reference.text_output_index)
    assert [c.output_index for c in got.calls] == [c.output_index for c in reference.calls]
    strictly = fsm.Policies(empty_arguments="invalid")
    assert [c.status for c in fsm.reassemble(chunks, policies=strictly).calls] == [
        c.status for c in fsm.reassemble(body, provider, policies=strictly).calls
    ]
    # LangChain reports usage from message_delta alone: none on a stream cut before it, and where it
    # has no input_tokens (older recordings put them in message_start only) its usage_metadata says 0
    ended = [p["usage"] for p in payloads if p.get("type") == "message_delta"]
    if not ended:
        assert got.usage is None
    else:
        assert got.usage is not None and reference.usage is not None
        assert got.usage["output_tokens"] == reference.usage["output_tokens"]
        assert got.usage["input_tokens"] == ended[-1].get("input_tokens", 0)


@pytest.mark.parametrize(
    ("path", "provider", "variant", "payloads"),
    [c for c in ANTHROPIC_CASES if c.values[0] is None or c.values[2] in ("as-is", "cut")],
)
@pytest.mark.parametrize("incomplete", ["omit", "include"])
def test_chat_anthropic_sends_the_next_turn_paired(
    path: Path, provider: str, variant: str, payloads: Any, incomplete: str
) -> None:
    if path is None:
        require_captures()
    body = body_of(path, provider, variant, payloads)
    replay = Replay(body, anthropic_http())
    model = chat_anthropic(replay, fsm.reassemble(body, provider))
    result = fsm.reassemble(model.stream("go"))

    conversation = next_request(provider, result, incomplete)
    list(model.stream(conversation))  # LangChain takes Anthropic-shaped dicts as its messages
    sent = replay.sent[-1]["messages"]

    assert sent_calls(provider, sent) == sent_calls(provider, conversation)
    assert sent_answers(provider, sent) == sent_answers(provider, conversation)
    assert not history.check(sent).rejected
    assert history.repair(sent) == (sent, [])
    if not result.text and not sent_calls(provider, conversation):
        # fsm writes an assistant turn with nothing in it as `content: []`; LangChain sends `""`
        assert sent[1] == {"role": "assistant", "content": ""}
    else:
        assert sent == conversation


def test_chat_anthropic_astream() -> None:
    anthropic = pytest.importorskip("anthropic")
    replay = Replay(EMPTY_ARGUMENTS, anthropic_http())
    reference = fsm.reassemble(replay.body, "anthropic")
    model = chat_anthropic(replay, reference)
    vars(model.bound)["_async_client"] = anthropic.AsyncAnthropic(
        api_key="test", base_url="http://mock", http_client=replay.async_client()
    )

    got = asyncio.run(fsm.areassemble(model.astream("go")))

    assert seen(got, usage=False) == seen(reference, usage=False)


EMPTY_ARGUMENTS = "anthropic/simonw-llm-haiku-4.5-two-empty-arg-calls.sse"


def _tool_block(at: int, name: str) -> Any:
    """ChatAnthropic's chunk for a content_block_start of a tool_use block."""
    messages = pytest.importorskip("langchain_core.messages")
    block = {"type": "tool_use", "id": f"t{at}", "name": name, "input": {}, "index": at}
    return messages.AIMessageChunk(
        content=[block], tool_call_chunks=[{"name": name, "args": "", "id": f"t{at}", "index": at}]
    )


@pytest.mark.parametrize(("stop", "last"), [("tool_use", "complete"), ("max_tokens", "truncated"), (None, "truncated")])
def test_an_anthropic_tool_block_without_argument_text_has_its_input_once_ended(stop: str | None, last: str) -> None:
    # A tool without parameters streams no argument text: the block's `input: {}` is its arguments.
    # LangChain yields no block ends, but a later block opening ends it; at max_tokens (or a cut) the
    # last block has not ended, so it stays without arguments, as it does on the Anthropic wire.
    messages = pytest.importorskip("langchain_core.messages")
    chunks = [_tool_block(0, "now"), _tool_block(1, "later")]
    if stop:
        chunks.append(messages.AIMessageChunk(content=[], response_metadata={"stop_reason": stop}))

    # the chunks one by one, or added up into one as LangChain users do (`sum` of the stream)
    for stream in (chunks, [functools.reduce(operator.add, chunks)]):
        for policies in (None, fsm.Policies(empty_arguments="invalid")):
            result = fsm.reassemble(stream, policies=policies)
            assert [c.status.value for c in result.calls] == ["complete", last]
            assert result.calls[0].arguments == {} and "empty-arguments" not in result.codes()
            if stop == "tool_use":
                assert result.calls[1].arguments == {}


# -- langchain-google-genai -----------------------------------------------------------------------------


def _shape(result: fsm.Result) -> list[tuple[Any, ...]]:
    return [(c.index, c.name, c.arguments, c.status) for c in result.calls]


@pytest.mark.parametrize(
    ("path", "provider", "variant", "payloads"), [c for c in CASES if c.values[0] is None or c.values[1] == "gemini"]
)
def test_chat_google_genai_chunks_against_the_bytes(path: Path, provider: str, variant: str, payloads: Any) -> None:
    if path is None:
        require_captures()
    langchain_google_genai = pytest.importorskip("langchain_google_genai")
    body = body_of(path, provider, variant, payloads)
    reference = fsm.reassemble(body, provider)
    model = langchain_google_genai.ChatGoogleGenerativeAI(model="gemini", api_key="test")
    model.client = genai_client(Replay(body))  # it builds its own client, on no transport it is given
    names = dict.fromkeys(c.name for c in reference.calls if c.name)
    tools = [{"name": n, "description": n, "parameters": {"type": "object", "properties": {}}} for n in names]
    chunks = list(model.bind_tools(tools).stream("go"))
    got = fsm.reassemble(chunks)

    assert got.finish_reason == reference.finish_reason and got.text == reference.text
    if path.parent.name == "gemini_vertex_partial_args":
        # it reads no partialArgs: each streamed piece is a call of its own, {} and mostly nameless
        assert {c.arguments_json for c in got.calls} == {"{}"} and "missing-name" in got.codes()
        assert len(got.calls) > len(reference.calls)
        return
    # "one-id": a later functionCall part under the id of an earlier one is that call's new arguments,
    # as the bytes read it (it was a call of its own, `duplicate-id`, at LangChain's next index)
    assert _shape(got) == _shape(reference)
    # an id-less call (Gemini 2.5) gets a UUID of LangChain's, which fsm takes as the wire's
    for mine, wire in zip(got.calls, reference.calls, strict=True):
        assert mine.id == mine.wire_id == (wire.wire_id or str(uuid.UUID(mine.id)))
    assert got.codes() == [c for c in reference.codes() if c != "synthesized-id"]
    # it keeps each call's thought signature in additional_kwargs, by call id, in the wire's own
    # base64: each call is signed as the bytes sign it, the same text
    assert any(SIGNATURES in c.additional_kwargs for c in chunks) == any(c.thought_signature for c in reference.calls)
    assert [c.thought_signature for c in got.calls] == [c.thought_signature for c in reference.calls]


SIGNATURES = "__gemini_function_call_thought_signatures__"


@pytest.mark.parametrize(
    ("path", "provider", "variant", "payloads"),
    [c for c in CASES if c.values[0] is None or (c.values[1] == "gemini" and c.values[0].parent.name == "gemini")],
)
def test_chat_google_genai_calls_go_back_signed(path: Path, provider: str, variant: str, payloads: Any) -> None:
    # Gemini 3 refuses a turn whose calls come back without their signatures: read through
    # ChatGoogleGenerativeAI, the next turn fsm.messages builds carries each one on its call, as
    # google-genai sends it (the same bytes: it writes them in url-safe base64)
    if path is None:
        require_captures()
    langchain_google_genai = pytest.importorskip("langchain_google_genai")
    body = body_of(path, provider, variant, payloads)
    model = langchain_google_genai.ChatGoogleGenerativeAI(model="gemini", api_key="test")
    model.client = genai_client(Replay(body))
    result = fsm.reassemble(model.stream("go"))
    reference = fsm.reassemble(body, provider)
    signed = [c.thought_signature for c in reference.complete_calls if c.thought_signature]
    if variant == "as-is":
        assert signed, "the capture's calls are signed"

    replay, client = client_for(provider, body)
    conversation = next_request(provider, result, "omit")
    send(provider, client, conversation)
    sent = replay.sent[-1]["contents"]
    parts = [p for m in sent for p in m["parts"] if "functionCall" in p]
    assert [_signature(p.get("thoughtSignature")) for p in parts] == [
        _signature(c.thought_signature) for c in result.complete_calls
    ]
    assert sorted(s for s in (_signature(p.get("thoughtSignature")) for p in parts) if s) == sorted(
        _signature(s) for s in signed
    )


# -- ollama --------------------------------------------------------------------------------------------

OLLAMA_CASES = _cases("ollama_native", "ollama")


def ndjson(payloads: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(p, ensure_ascii=False).encode() + b"\n" for p in payloads)


@pytest.mark.parametrize(("path", "provider", "variant", "payloads"), OLLAMA_CASES)
@pytest.mark.parametrize("ended", [True, False], ids=["done", "no-done-line"])
def test_ollama_client_gives_what_the_bytes_give(
    path: Path, provider: str, variant: str, payloads: Any, ended: bool
) -> None:
    if path is None:
        require_captures()
    ollama = pytest.importorskip("ollama")
    body = ndjson(payloads if ended else [p for p in payloads if not p.get("done")])
    reference = fsm.reassemble(body, provider)
    client = ollama.Client(host="http://mock", transport=httpx.MockTransport(Replay(body)))

    got = fsm.reassemble(client.chat(model="m", messages=[{"role": "user", "content": "go"}], stream=True))

    # ollama's ToolCall keeps neither the call's id nor its function.index: fsm numbers the calls in
    # order and gives each an id of its own (`synthesized-id`, on the event that opened it)
    expected = seen(reference)
    expected["calls"] = [(c[0], f"call_{c[0]}", None, *c[3:]) for c in expected["calls"]]
    # (and two calls under one id on the wire are no longer seen as such: no `duplicate-id`)
    expected["codes"] = sorted(
        [c for c in expected["codes"] if c != "duplicate-id"] + ["synthesized-id"] * len(reference.calls)
    )
    assert {**seen(got), "codes": sorted(got.codes())} == expected
    assert [d for d in numbered(got) if d[0] != "synthesized-id"] == [
        d for d in numbered(reference) if d[0] != "duplicate-id"
    ]


# -- cohere --------------------------------------------------------------------------------------------

COHERE_CASES = _cases("cohere", "cohere")


@pytest.mark.parametrize(("path", "provider", "variant", "payloads"), COHERE_CASES)
def test_cohere_client_v2_chat_stream_gives_what_the_bytes_give(
    path: Path, provider: str, variant: str, payloads: Any
) -> None:
    if path is None:
        require_captures()
    cohere = pytest.importorskip("cohere")
    body = cv.render(payloads, provider)
    reference = fsm.reassemble(body, provider)
    replay = Replay(body)
    client = cohere.ClientV2(api_key="test", base_url="http://mock", httpx_client=replay.client())

    got = fsm.reassemble(client.chat_stream(model="m", messages=[{"role": "user", "content": "go"}]))

    # cohere's Usage holds its token counts as floats: equal in value to the wire's integers
    assert seen(got) == seen(reference) and numbered(got) == numbered(reference)


# -- the next turn, through ollama's and cohere's clients ----------------------------------------------

ASK = [{"role": "user", "content": "go"}]


def one_tool(provider: str, payloads: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Every call named as the first: two calls to one tool, which Ollama can tell apart by order
    alone. None when the capture has fewer than two calls."""
    payloads = copy.deepcopy(payloads)
    functions = []
    for p in payloads:
        if provider == "ollama":
            functions += [call["function"] for call in (p.get("message") or {}).get("tool_calls") or []]
        elif p.get("type") == "tool-call-start":
            functions.append(p["delta"]["message"]["tool_calls"]["function"])
    if len(functions) < 2:
        return None
    for function in functions:
        function["name"] = functions[0]["name"]
    return payloads


def _turn_cases(shape: str, provider: str) -> list[Any]:
    found = []
    for path in captures(shape):
        events = cv.events(path)
        for variant, payloads in [*cv.variants(provider, events), ("one-tool", one_tool(provider, events))]:
            for incomplete in ("omit", "include") if variant in ("as-is", "cut") else ("omit",):
                if payloads is not None:
                    name = f"{shape}/{path.stem}-{variant}-{incomplete}"
                    found.append(pytest.param(path, variant, payloads, incomplete, id=name))
    return found or [pytest.param(None, "", [], "omit", id=f"{shape}-no-captures")]


def next_turn(fmt: str, result: fsm.Result, incomplete: str) -> list[dict[str, Any]]:
    """The ask, the assistant turn and the answers, as an agent sends them next."""
    said = messages.assistant_message(result, fmt, incomplete=incomplete)  # type: ignore[call-overload]
    answers = [messages.tool_result(c, answer(c), fmt) for c in result.complete_calls]  # type: ignore[arg-type]
    if incomplete == "include":
        answers += messages.incomplete_answers(result, fmt)  # type: ignore[arg-type]
    return [*ASK, said, *messages.tool_results(answers, fmt)]  # type: ignore[arg-type]


def ran(call: fsm.ToolCall) -> str:
    """The answer's text as it is sent: the tool's value as JSON text."""
    return json.dumps(answer(call), ensure_ascii=False)


def ollama_client(body: bytes) -> tuple[Replay, Any]:
    ollama = pytest.importorskip("ollama")
    replay = Replay(body)
    return replay, ollama.Client(host="http://mock", transport=httpx.MockTransport(replay))


def ollama_expected(result: fsm.Result, incomplete: str) -> list[dict[str, Any]]:
    """The body ollama's client writes for the next turn: no id and no index anywhere (its Message
    has no field for them), an empty ``content`` left out (it drops falsy fields), each answer named
    by its tool, in the order of the calls, the cut ones (with ``include``) last and said not run."""
    went = [c for c in result.calls if c.status is fsm.CallStatus.COMPLETE or incomplete == "include"]
    said: dict[str, Any] = {"role": "assistant"}
    if result.text:
        said["content"] = result.text
    if result.reasoning:
        said["thinking"] = "".join(r.text for r in result.reasoning)
    if went:
        said["tool_calls"] = [{"function": {"name": c.name, "arguments": c.arguments}} for c in went]
        for call, sent in zip(went, said["tool_calls"], strict=True):
            if call.status is not fsm.CallStatus.COMPLETE:
                sent["function"]["arguments"] = {}
    answers = [{"role": "tool", "content": ran(c), "tool_name": c.name} for c in result.complete_calls]
    if incomplete == "include":
        answers += [{"role": "tool", "content": "Not run", "tool_name": c.name} for c in messages.omitted(result)]
    return [*ASK, said, *answers]


def _not_run_said_so(sent: list[dict[str, Any]], expected: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The body with each "Not run: <why>" answer cut to "Not run", to compare with ``expected``."""
    return [
        {**m, "content": "Not run"} if m["role"] == "tool" and m["content"].startswith("Not run: ") else m for m in sent
    ]


OLLAMA_TURNS = _turn_cases("ollama_native", "ollama")


@pytest.mark.parametrize(("path", "variant", "payloads", "incomplete"), OLLAMA_TURNS)
def test_ollama_client_sends_the_next_turn_paired(path: Path, variant: str, payloads: Any, incomplete: str) -> None:
    if path is None:
        require_captures()
    replay, client = ollama_client(ndjson(payloads))
    result = fsm.reassemble(client.chat(model="m", messages=ASK, stream=True))

    conversation = next_turn("ollama", result, incomplete)
    list(client.chat(model="m", messages=conversation, stream=True))
    sent = replay.sent[-1]["messages"]

    assert sent == ollama_expected(result, incomplete)
    if variant == "one-tool":  # two calls to one tool: told apart by order alone
        assert len({m["tool_name"] for m in sent[2:]}) == 1 < len(sent[2:])
    report = history.check(sent)
    assert report.format == "ollama" and report.findings == (), report
    assert history.check(conversation).findings == ()
    objects = [pytest.importorskip("ollama").Message.model_validate(m) for m in conversation]  # the client's own
    assert history.check(objects).findings == () and history.check(objects).format == "ollama"
    assert history.repair(sent) == (sent, [])
    # the last answer lost: a placeholder answers the last call, named by its tool; the others stay
    names = [c["function"]["name"] for c in sent[1].get("tool_calls", [])]
    if names:
        fixed, changes = history.repair(sent[:-1])
        assert [(c.kind, c.id) for c in changes] == [("placeholder-result", f"{names[-1]}#{names.count(names[-1])}")]
        assert fixed[:-1] == sent[:-1] and fixed[-1]["tool_name"] == sent[-1]["tool_name"]
        assert not history.check(fixed).rejected


@pytest.mark.parametrize("incomplete", ["omit", "include"])
def test_an_ollama_call_cut_on_the_wire_goes_through_the_client_left_out_or_not_run(incomplete: str) -> None:
    # A call is whole on its line, and ollama's client refuses text arguments; read from the bytes,
    # a line whose arguments are text cut mid-value (the stream then ends) gives a truncated call.
    require_captures()
    first = cv.events(CAPTURES / "ollama_native/ai4j-qwen2.5-parallel-unicode.jsonl")[0]
    cut = copy.deepcopy(first)
    (call,) = cut["message"]["tool_calls"]
    call["function"] |= {"index": 1, "name": "get_history_weather", "arguments": '{"location": "洛'}
    result = fsm.reassemble(ndjson([first, cut]), "ollama")
    assert [c.status.value for c in result.calls] == ["complete", "truncated"]
    replay, client = ollama_client(ndjson([first]))

    conversation = next_turn("ollama", result, incomplete)
    list(client.chat(model="m", messages=conversation, stream=True))
    sent = replay.sent[-1]["messages"]

    assert _not_run_said_so(sent, conversation) == ollama_expected(result, incomplete)
    assert len(sent) == (3 if incomplete == "omit" else 4)
    assert history.check(sent).findings == ()


COHERE_TURNS = _turn_cases("cohere", "cohere")


@pytest.mark.parametrize(("path", "variant", "payloads", "incomplete"), COHERE_TURNS)
def test_cohere_client_v2_sends_the_next_turn_paired(path: Path, variant: str, payloads: Any, incomplete: str) -> None:
    if path is None:
        require_captures()
    cohere = pytest.importorskip("cohere")
    replay = Replay(cv.render(payloads, "cohere"))
    client = cohere.ClientV2(api_key="test", base_url="http://mock", httpx_client=replay.client())
    result = fsm.reassemble(client.chat_stream(model="m", messages=ASK))

    conversation = next_turn("cohere", result, incomplete)
    list(client.chat_stream(model="m", messages=conversation))
    sent = replay.sent[-1]["messages"]

    # ids as the wire gave them (renamed where it repeated one), arguments as their text, a cut
    # call's raw text only with `include`; the answers by tool_call_id, the cut ones said not run
    went = [c for c in result.calls if c.status is fsm.CallStatus.COMPLETE or incomplete == "include"]
    said: dict[str, Any] = {"role": "assistant"}
    # the plan the model streamed before its calls goes back with them, as it came
    plan = "".join(p["delta"]["message"]["tool_plan"] for p in payloads if p.get("type") == "tool-plan-delta")
    if went:
        said["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json}} for c in went
        ]
        if plan:
            said["tool_plan"] = plan
    else:  # no call to go beside: the plan is text, before the turn's (policy cohere-plan-without-calls)
        said["content"] = "\n\n".join(part for part in (plan, result.text) if part)
    answers = [{"role": "tool", "tool_call_id": c.id, "content": ran(c)} for c in result.complete_calls]
    if incomplete == "include":
        answers += [{"role": "tool", "tool_call_id": c.id, "content": "Not run"} for c in messages.omitted(result)]
    assert _not_run_said_so(sent, conversation) == [*ASK, said, *answers]
    assert len({c[0] for c in sent_calls("openai-chat", sent)}) == len(went)  # one id per call
    if incomplete == "omit":
        assert all(c.id not in json.dumps(sent) for c in messages.omitted(result))
    report = history.check(sent)
    # Cohere's is OpenAI chat's shape; with no call sent, it tells no format (unjudged-says-no-format)
    assert report.format == ("openai" if went else None) and report.findings == (), report
    assert history.repair(sent) == (sent, [])
    repaired_keeps_every_answer("openai-chat", sent)
