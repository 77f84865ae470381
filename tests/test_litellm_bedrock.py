"""LiteLLM's Bedrock routes end to end: ``litellm.completion(model="bedrock/converse/...",
stream=True)`` and ``model="bedrock/invoke/anthropic.claude-..."`` read the server's AWS event stream
through LiteLLM's own HTTP client (its ``HTTPHandler`` over an httpx mock transport; SigV4-signed
with dummy keys, no network). The server answers with the Bedrock ConverseStream capture's bytes, or
with an InvokeModel stream built from each Anthropic capture (its events base64 in ``chunk``s), as
recorded and in hostile variants: a megabyte of arguments, a call cut mid-arguments, two calls to
one tool, no arguments, Claude's thinking blocks (signed, redacted). What LiteLLM yields, read by
``fsm.reassemble``, must give what fsm reads from the same bytes, but what LiteLLM itself changes,
which is pinned here (README, "What the SDKs themselves do"). The next turn, built with
``fsm.messages`` in ``openai-chat`` (LiteLLM takes OpenAI-shaped messages; the reasoning added as
LiteLLM's ``thinking_blocks``), goes back through the same route, and the Converse or InvokeModel
body LiteLLM wrote must carry every call, pair every result and keep every signature."""

from __future__ import annotations

import base64
import copy
import json
import struct
import zlib
from collections.abc import Iterator
from typing import Any

import pytest

import fsm
from fsm import history, messages
from tests import capture_variants as cv
from tests.conftest import CAPTURES, captures, require_captures
from tests.test_sdk_loop import _without, placeless, seen, sent_answers, sent_calls

httpx = pytest.importorskip("httpx")
pytest.importorskip("botocore", reason="LiteLLM decodes Bedrock's event stream with botocore")
pytest.importorskip("boto3", reason="LiteLLM signs Bedrock requests with botocore's SigV4 from boto3's stack")

CONVERSE = CAPTURES / "bedrock/pydantic-ai-nova-micro-text-then-tool.eventstream"
CONVERSE_MODEL = "bedrock/converse/us.amazon.nova-micro-v1:0"
CONVERSE_CLAUDE = "bedrock/converse/us.anthropic.claude-sonnet-4-20250514-v1:0"  # sends reasoning back
INVOKE_MODEL = "bedrock/invoke/anthropic.claude-3-5-sonnet-20240620-v1:0"
ASK = [{"role": "user", "content": "go"}]
AWS = {"aws_access_key_id": "test", "aws_secret_access_key": "test", "aws_region_name": "us-east-1"}


# -- the wire ------------------------------------------------------------------------------------------


def aws_event(payload: dict[str, Any], headers: dict[str, str]) -> bytes:
    """One AWS event-stream message with string headers (``:event-type``, ``:message-type``, ...)."""
    packed = b"".join(
        bytes([len(k)]) + k.encode() + b"\x07" + struct.pack(">H", len(v.encode())) + v.encode()
        for k, v in headers.items()
    )
    body = json.dumps(payload).encode()
    prelude = struct.pack(">II", 12 + len(packed) + len(body) + 4, len(packed))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + packed + body
    return message + struct.pack(">I", zlib.crc32(message))


def converse_events(data: bytes) -> list[tuple[str, dict[str, Any]]]:
    """(event type, payload) of each message of a ConverseStream body."""
    from botocore.eventstream import EventStreamBuffer

    buffer = EventStreamBuffer()
    buffer.add_data(data)
    return [(m.headers[":event-type"], json.loads(m.payload)) for m in buffer]


def converse_stream(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    headers = {":content-type": "application/json", ":message-type": "event"}
    return b"".join(aws_event(payload, {":event-type": kind, **headers}) for kind, payload in events)


def invoke_stream(events: list[dict[str, Any]]) -> bytes:
    """An InvokeModelWithResponseStream body: each event's JSON, base64, in a ``chunk``."""
    from tests.test_bedrock_invoke import invoke_stream as framed

    return framed(events)


# -- Converse variants -------------------------------------------------------------------------------------


def _tool_block(events: list[tuple[str, dict[str, Any]]]) -> int:
    return next(n for n, (kind, p) in enumerate(events) if kind == "contentBlockStart" and "toolUse" in p["start"])


def _input_deltas(block: int, tool: dict[str, Any], fragments: list[str]) -> list[tuple[str, dict[str, Any]]]:
    start = {"contentBlockIndex": block, "start": {"toolUse": tool}}
    deltas = [
        ("contentBlockDelta", {"contentBlockIndex": block, "delta": {"toolUse": {"input": f}}}) for f in fragments
    ]
    return [("contentBlockStart", start), *deltas, ("contentBlockStop", {"contentBlockIndex": block})]


def converse_variants() -> Iterator[tuple[str, bytes]]:
    """(name, body): the capture's own bytes, then each hostile variant rebuilt from its events."""
    data = CONVERSE.read_bytes()
    yield "as-is", data
    events = converse_events(data)
    at = _tool_block(events)
    head, tail = events[:at], events[at + 3 :]  # the tool block is start, one delta, stop
    block = events[at][1]["contentBlockIndex"]
    tool = events[at][1]["start"]["toolUse"]
    big = json.dumps({"city": "Paris", "pad": cv.MEGABYTE})
    megabyte = _input_deltas(block, tool, [big[i : i + 8192] for i in range(0, len(big), 8192)])
    yield "megabyte", converse_stream(head + megabyte + tail)
    yield "cut", converse_stream(head + _input_deltas(block, tool, ['{"city": "Pa'])[:2])
    second = {"name": tool["name"], "toolUseId": "tooluse_second"}
    twice = _input_deltas(block, tool, ['{"city": ', '"Paris"}'])
    twice += _input_deltas(block + 1, second, ['{"city": "Lyon"}'])
    yield "two-calls-one-tool", converse_stream(head + twice + tail)
    yield "empty", converse_stream(head + _input_deltas(block, tool, []) + tail)
    # Claude's reasoning on Converse, a signed block and a redacted one, where the text was
    thought = head[:1] + CONVERSE_THINKING + _input_deltas(2, tool, ['{"city":"Paris"}'])
    yield "thinking", converse_stream(thought + tail)


def _reasoned(at: int, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "contentBlockDelta", {"contentBlockIndex": at, "delta": {"reasoningContent": body}}


CONVERSE_THINKING = [
    _reasoned(0, {"text": "Think "}),
    _reasoned(0, {"text": "hard."}),
    _reasoned(0, {"signature": "U0lH"}),
    ("contentBlockStop", {"contentBlockIndex": 0}),
    _reasoned(1, {"redactedContent": "UkVE"}),
    ("contentBlockStop", {"contentBlockIndex": 1}),
]


# -- InvokeModel variants ----------------------------------------------------------------------------------


def _same_tool(payloads: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Every call named as the first one: two calls to one tool, with their own arguments."""
    payloads = copy.deepcopy(payloads)
    blocks = [p["content_block"] for p in payloads if p.get("type") == "content_block_start"]
    tools = [b for b in blocks if b.get("type") == "tool_use"]
    if len({b["name"] for b in tools}) < 2:
        return None
    for b in tools:
        b["name"] = tools[0]["name"]
    return payloads


def _thinking(at: int, said: str, signature: str) -> list[dict[str, Any]]:
    block = {"type": "content_block_start", "index": at, "content_block": {"type": "thinking", "thinking": ""}}
    deltas = [{"type": "thinking_delta", "thinking": said}, {"type": "signature_delta", "signature": signature}]
    return [
        block,
        *({"type": "content_block_delta", "index": at, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": at},
    ]


def with_thinking(payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Claude's interleaved thinking: a signed block and a redacted one before the calls, another
    signed block between them; each later block's index moved on."""
    redacted = {"type": "redacted_thinking", "data": "UkVE"}
    before = [
        *_thinking(0, "Think hard.", "U0lH"),
        {"type": "content_block_start", "index": 1, "content_block": redacted},
        {"type": "content_block_stop", "index": 1},
    ]
    out: list[dict[str, Any]] = []
    second = False
    for p in copy.deepcopy(payloads):
        if isinstance(p.get("index"), int):
            p["index"] += 3 if second else 2
            if p["type"] == "content_block_start" and p["index"] > 2 and not second:
                out += _thinking(p["index"], "Then more.", "U0lHMg==")
                second = True
                p["index"] += 1
        out.append(p)
        if p["type"] == "message_start":
            out += before
    return out


def invoke_cases() -> Iterator[Any]:
    grown = False  # one megabyte case: LiteLLM's own parsing of a megabyte is slow
    for path in captures("anthropic"):
        payloads = cv.events(path)
        found = [*cv.variants("anthropic", payloads), ("two-calls-one-tool", _same_tool(payloads))]
        found.append(("thinking", with_thinking(payloads)))
        for variant, changed in found:
            if changed is None or (variant == "megabyte" and grown):
                continue
            grown = grown or variant == "megabyte"
            yield pytest.param(variant, invoke_stream(changed), id=f"{path.stem}-{variant}")


def converse_cases() -> Iterator[Any]:
    if CONVERSE.is_file():
        yield from (pytest.param(name, body, id=name) for name, body in converse_variants())


CONVERSE_CASES = list(converse_cases()) or [pytest.param("", b"", id="no-captures")]
INVOKE_CASES = list(invoke_cases()) or [pytest.param("", b"", id="no-captures")]


# -- LiteLLM over the mock ---------------------------------------------------------------------------------


class Server:
    """The mock Bedrock endpoint: answers every request with ``body``, keeps (url, JSON body) sent."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, request: Any) -> Any:
        assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=test/")
        self.sent.append((str(request.url), json.loads(request.content)))
        return httpx.Response(200, headers={"content-type": "application/vnd.amazon.eventstream"}, content=self.body)

    def client(self) -> Any:
        from litellm.llms.custom_httpx.http_handler import HTTPHandler

        return HTTPHandler(client=httpx.Client(transport=httpx.MockTransport(self)))


def complete(litellm: Any, model: str, server: Server, conversation: list[Any], **options: Any) -> Any:
    return litellm.completion(model=model, messages=conversation, stream=True, client=server.client(), **AWS, **options)


def answer(call: fsm.ToolCall) -> dict[str, Any]:
    return {"tool": call.name, "ran": call.index}


def converse_calls(body: dict[str, Any]) -> list[tuple[str, str, Any]]:
    return [
        (b["toolUse"]["toolUseId"], b["toolUse"]["name"], b["toolUse"]["input"])
        for m in body["messages"]
        for b in m["content"]
        if "toolUse" in b
    ]


def converse_reasoning(body: dict[str, Any]) -> list[Any]:
    return [b["reasoningContent"] for m in body["messages"] for b in m["content"] if "reasoningContent" in b]


def thinking_blocks(result: fsm.Result) -> list[dict[str, Any]]:
    """The turn's signed reasoning as LiteLLM takes it back on an assistant message (its
    ``thinking_blocks``), built here from the result apart from ``fsm.messages``."""
    return [
        {"type": "thinking", "thinking": r.text, "signature": r.signature}
        if r.redacted is None
        else {"type": "redacted_thinking", "data": r.redacted}
        for r in result.reasoning
        if r.signature is not None or r.redacted is not None
    ]


def converse_answers(body: dict[str, Any]) -> list[tuple[str, Any]]:
    return [
        (b["toolResult"]["toolUseId"], b["toolResult"]["content"])
        for m in body["messages"]
        for b in m["content"]
        if "toolResult" in b
    ]


def tools_for(result: fsm.Result) -> list[dict[str, Any]]:
    """OpenAI tool definitions for the calls' names, as an agent passes them with every request."""
    names = dict.fromkeys(c.name for c in result.calls if c.name)
    return [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in names]


def converse(model: str) -> bool:
    return model.startswith("bedrock/converse/")


def read(litellm: Any, model: str, server: Server) -> tuple[fsm.Result, Exception | None]:
    """What LiteLLM yields, fed chunk by chunk, and the error it raised mid-stream, if any (an agent
    that keeps what came before the error, closing its Reassembler there)."""
    reassembler = fsm.Reassembler()
    try:
        for chunk in complete(litellm, model, server, ASK):
            reassembler.feed(chunk)
    except Exception as exc:  # LiteLLM's own, which fsm.reassemble lets through
        return reassembler.close(), exc
    return reassembler.close(), None


ROUTES = [
    pytest.param(CONVERSE_CLAUDE if c.values[0] == "thinking" else CONVERSE_MODEL, *c.values, id=f"converse-{c.id}")
    for c in CONVERSE_CASES
] + [pytest.param(INVOKE_MODEL, *c.values, id=f"invoke-{c.id}") for c in INVOKE_CASES]


# -- what LiteLLM yields against the bytes ---------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
@pytest.mark.parametrize(("model", "variant", "body"), ROUTES)
def test_litellms_bedrock_chunks_give_what_the_bytes_give(litellm: Any, model: str, variant: str, body: bytes) -> None:
    if not body:
        require_captures()
    reference = placeless(fsm.reassemble(body, "bedrock"))  # LiteLLM's chunks carry no block index
    got, error = read(litellm, model, Server(body))
    if variant == "cut":
        # LiteLLM raises when the stream ends without a finish reason, so fsm.reassemble on its stream
        # raises that; the chunks before it give the bytes' cut call and diagnostics all the same
        assert error is not None and "finish_reason" in str(error)
        with pytest.raises(type(error), match="finish_reason"):
            fsm.reassemble(complete(litellm, model, Server(body), ASK))
        assert got.codes() == reference.codes() == ["no-finish-reason", "truncated"]
    else:
        assert error is None
    assert got.calls, "every case carries a call"
    if converse(model) and variant == "empty":
        # A Converse tool block with no input is a tool without parameters ({}, as the bytes read it);
        # LiteLLM yields the call with no argument text at all, so fsm gives {} by its empty-arguments
        # policy and says so
        assert "empty-arguments" in got.codes() and "empty-arguments" not in reference.codes()
        assert _without(seen(got, usage=False), "empty-arguments") == seen(reference, usage=False)
        return
    assert seen(got, usage=False) == seen(reference, usage=False)


# -- the next turn, through the same route -------------------------------------------------------------------


def _answer_body(model: str) -> bytes:
    """A whole answer for the next request (the first answer may be cut, which LiteLLM raises on)."""
    if converse(model):
        return CONVERSE.read_bytes()
    return invoke_stream(cv.events(CAPTURES / "anthropic/magentic-claude-3-opus-parallel-plus-minus.sse"))


INVOKE_REPAIRS = {'{"a": 1': {"a": 1}}
"""What LiteLLM's InvokeModel route sends as the input of a cut call's text: closed, arguments the
model never finished (it logs that it repaired them); any other cut here is refused."""

TURNS = [pytest.param(*c.values, "omit", id=f"{c.id}-omit") for c in ROUTES] + [
    pytest.param(*c.values, "include", id=f"{c.id}-include") for c in ROUTES if c.values[1] == "cut"
]


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
@pytest.mark.parametrize(("model", "variant", "body", "incomplete"), TURNS)
def test_the_next_turn_goes_through_litellms_bedrock_route_with_every_call_paired(
    litellm: Any, model: str, variant: str, body: bytes, incomplete: Any
) -> None:
    if not body:
        require_captures()
    server = Server(body)
    result, _ = read(litellm, model, server)

    def send(conversation: list[Any], **options: Any) -> None:
        list(complete(litellm, model, server, conversation, **options))

    next_turn(litellm, model, server, result, incomplete, send)


def next_turn(litellm: Any, model: str, server: Server, result: fsm.Result, incomplete: Any, send: Any) -> None:
    """Send the turn after ``result`` with ``send(conversation, tools=...)``, which makes the request
    through LiteLLM's route and reads its stream to the end, and check the body LiteLLM wrote."""
    said = messages.assistant_message(result, "openai-chat", incomplete=incomplete)
    answers = [messages.tool_result(c, answer(c), "openai-chat") for c in result.complete_calls]
    if incomplete == "include":
        answers += messages.incomplete_answers(result, "openai-chat")
    # signed reasoning goes back as LiteLLM's thinking_blocks, each block as the stream gave it
    assert said.get("thinking_blocks", []) == thinking_blocks(result)
    conversation = [*ASK, said, *messages.tool_results(answers, "openai-chat")]
    server.body = _answer_body(model)
    cut = {c.id: c.arguments_json for c in messages.omitted(result)} if incomplete == "include" else {}
    if not converse(model) and any(text not in INVOKE_REPAIRS for text in cut.values()):
        # LiteLLM parses each call's arguments for InvokeModel, and refuses text cut inside a string
        # before it sends anything: keep the default, omit
        with pytest.raises(litellm.BadRequestError, match="Failed to parse tool call arguments"):
            send(conversation, tools=tools_for(result))
        assert len(server.sent) == 1
        return
    send(conversation, tools=tools_for(result))

    url, sent = server.sent[-1]
    went = [c for c in result.calls if c.status is fsm.CallStatus.COMPLETE or incomplete == "include"]
    # a cut call kept with include goes as the object LiteLLM makes of its text: {} on Converse (it
    # cannot parse it, warns and drops it), on InvokeModel the text closed (INVOKE_REPAIRS)
    repaired = {} if converse(model) else INVOKE_REPAIRS
    calls = [(c.id, c.name, c.arguments if c.id not in cut else repaired.get(cut[c.id], {})) for c in went]
    paired = [(a["tool_call_id"], a["content"]) for a in answers]
    assert len({c.id for c in went}) == len(went)
    for call in messages.omitted(result):  # a cut call never goes as one that ran
        assert (call.id in json.dumps(sent)) == (incomplete == "include")
    if converse(model):
        assert url.endswith("/converse-stream")
        assert converse_calls(sent) == calls
        assert converse_answers(sent) == [(key, [{"text": text}]) for key, text in paired]
        # a redacted block's data (the blob's base64, as the stream gave it) LiteLLM writes in
        # base64 once more: Bedrock would read other bytes than it sent
        assert converse_reasoning(sent) == [
            {"reasoningText": {"text": r.text, "signature": r.signature}}
            if r.redacted is None
            else {"redactedContent": base64.b64encode(r.redacted.encode()).decode()}
            for r in result.reasoning
        ]
        return
    assert url.endswith("/invoke-with-response-stream")
    assert sent_calls("anthropic", sent["messages"]) == calls
    assert sent_answers("anthropic", sent["messages"]) == paired
    assert [b for m in sent["messages"] for b in m["content"] if "thinking" in b["type"]] == said.get(
        "thinking_blocks", []
    )
    report = history.check(sent["messages"])
    assert report.format == ("anthropic" if went else None) and report.findings == (), report


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
def test_without_tools_litellm_writes_converse_calls_as_text_and_gives_invoke_a_dummy_tool(litellm: Any) -> None:
    """What LiteLLM does to a next turn sent without ``tools=``: on Converse, which wants a toolConfig
    beside tool blocks, it writes each call and result as text; on InvokeModel it keeps the blocks
    and adds a tool of its own (``dummy_tool``)."""
    require_captures()
    for model in (CONVERSE_MODEL, INVOKE_MODEL):
        server = Server(_answer_body(model))
        result, _ = read(litellm, model, server)
        answers = [messages.tool_result(c, answer(c), "openai-chat") for c in result.complete_calls]
        list(complete(litellm, model, server, [*ASK, messages.assistant_message(result, "openai-chat"), *answers]))
        sent = server.sent[-1][1]
        if converse(model):
            assert converse_calls(sent) == converse_answers(sent) == [] and "toolConfig" not in sent
            text = json.dumps(sent["messages"])
            for call in result.calls:
                assert f"tool call {call.id}: {call.name}" in text and f"tool result for {call.id}" in text
        else:
            assert [t["name"] for t in sent["tools"]] == ["dummy_tool"]
            assert [i for i, _, _ in sent_calls("anthropic", sent["messages"])] == [c.id for c in result.calls]
