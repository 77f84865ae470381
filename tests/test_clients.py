"""End to end with the real clients: each SDK streams a recorded capture through an httpx mock
transport, ``fsm.reassemble`` takes what the SDK yields (raw chunks, stream-helper events, LangChain
chunks, LiteLLM chunks), ``fsm.messages`` builds the next request, and the same client sends it: the
request body the SDK wrote must pair every call with its result (``fsm.history.check``).

The README's integration snippets are the bodies of these tests."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest

import fsm
from fsm import messages
from fsm.history import check
from tests.conftest import CAPTURES, require_captures

httpx = pytest.importorskip("httpx")


class Replay:
    """A mock transport's handler: answers every request with the capture's bytes, keeps the
    request bodies the SDK wrote."""

    def __init__(self, capture: str | bytes, http: Any = httpx) -> None:
        if isinstance(capture, str):  # a capture's path under the captures folder, else its bytes
            require_captures()
            capture = (CAPTURES / capture).read_bytes()
        self.body = capture
        self.http = http
        self.sent: list[dict[str, Any]] = []

    def __call__(self, request: Any) -> Any:
        self.sent.append(json.loads(request.content))
        return self.http.Response(200, headers={"content-type": "text/event-stream"}, content=self.body)

    def client(self) -> Any:
        return self.http.Client(transport=self.http.MockTransport(self))

    def async_client(self) -> Any:
        return self.http.AsyncClient(transport=self.http.MockTransport(self))


def expected(capture: str) -> list[tuple[str | None, str, Any]]:
    meta = CAPTURES / capture.replace(capture.rsplit("/", 1)[1], "")
    stem = capture.rsplit("/", 1)[1].rsplit(".", 1)[0]
    calls = json.loads((meta / f"{stem}.meta.json").read_text())["expected_tool_calls"]
    return [(c["id"], c["name"], c["arguments"]) for c in calls]


def got(result: fsm.Result) -> list[tuple[str | None, str | None, Any]]:
    return [(c.id, c.name, c.arguments) for c in result.complete_calls]


def run_tool(call: fsm.ToolCall) -> dict[str, Any]:
    return {"tool": call.name, "echo": call.arguments}


OPENAI_CHAT = "openai_chat/openai-python-parallel-two-tools.sse"
RESPONSES = "openai_responses/pydantic-ai-responses-get-capital.sse"
ANTHROPIC = "anthropic/magentic-claude-3-opus-parallel-plus-minus.sse"
ANTHROPIC_CUT = "anthropic/anthropic-sdk-max-tokens-truncated-tool-json.sse"
GEMINI = "gemini/adk-go-gemini-3-flash-preview-parallel-sum.sse"
USER = [{"role": "user", "content": "What is the weather in Edinburgh, and AAPL's price?"}]


# -- OpenAI chat completions -----------------------------------------------------------------------


def openai_client(replay: Replay) -> Any:
    openai = pytest.importorskip("openai")
    return openai.OpenAI(api_key="test", base_url="http://mock/v1", http_client=replay.client())


def test_openai_chat_create_stream() -> None:
    replay = Replay(OPENAI_CHAT)
    client = openai_client(replay)

    result = fsm.reassemble(client.chat.completions.create(model="gpt-4o", messages=USER, stream=True))
    history = [*USER, messages.assistant_message(result, "openai-chat")]
    history += [messages.tool_result(call, run_tool(call), "openai-chat") for call in result.complete_calls]

    assert got(result) == expected(OPENAI_CHAT)
    client.chat.completions.create(model="gpt-4o", messages=history, stream=True).close()
    assert replay.sent[-1]["messages"] == history
    assert not check(replay.sent[-1]["messages"]).rejected


def test_openai_chat_stream_helper_events() -> None:
    replay = Replay(OPENAI_CHAT)
    client = openai_client(replay)

    with client.chat.completions.stream(model="gpt-4o", messages=USER) as stream:
        result = fsm.reassemble(stream)  # ChunkEvents are read; content.* / tool_calls.* events skipped

    assert got(result) == expected(OPENAI_CHAT) and result.diagnostics == ()
    assert result.usage is not None and result.usage["total_tokens"] > 0
    # A stream manager can be handed over unopened: reassemble enters and closes it.
    unopened = fsm.reassemble(client.chat.completions.stream(model="gpt-4o", messages=USER), strict=True)
    assert got(unopened) == expected(OPENAI_CHAT)


def test_openai_chat_async_create_and_stream_helper() -> None:
    openai = pytest.importorskip("openai")
    replay = Replay(OPENAI_CHAT)
    client = openai.AsyncOpenAI(api_key="test", base_url="http://mock/v1", http_client=replay.async_client())

    async def both() -> tuple[fsm.Result, fsm.Result]:
        created = await fsm.areassemble(await client.chat.completions.create(model="m", messages=USER, stream=True))
        async with client.chat.completions.stream(model="m", messages=USER) as stream:
            helped = await fsm.areassemble(stream)
        return created, helped

    created, helped = asyncio.run(both())
    assert got(created) == got(helped) == expected(OPENAI_CHAT)


# -- OpenAI Responses ------------------------------------------------------------------------------


def test_openai_responses_create_and_stream_helper() -> None:
    replay = Replay(RESPONSES)
    client = openai_client(replay)

    result = fsm.reassemble(client.responses.create(model="gpt-4o", input="Capital of France?", stream=True))
    with client.responses.stream(model="gpt-4o", input="Capital of France?") as stream:
        helped = fsm.reassemble(stream)
    items = messages.assistant_message(result, "openai-responses")
    items += [messages.tool_result(call, "Paris", "openai-responses") for call in result.complete_calls]

    assert got(result) == got(helped) == expected(RESPONSES)
    assert result.usage is not None and "output_tokens" in result.usage
    client.responses.create(model="gpt-4o", input=items, stream=True).close()
    sent = replay.sent[-1]["input"]
    assert sent == items
    assert [i["call_id"] for i in sent if i["type"] == "function_call"] == [
        i["call_id"] for i in sent if i["type"] == "function_call_output"
    ]


def test_openai_responses_async() -> None:
    openai = pytest.importorskip("openai")
    replay = Replay(RESPONSES)
    client = openai.AsyncOpenAI(api_key="test", base_url="http://mock/v1", http_client=replay.async_client())

    async def stream() -> fsm.Result:
        async with client.responses.stream(model="gpt-4o", input="Capital of France?") as events:
            return await fsm.areassemble(events)

    assert got(asyncio.run(stream())) == expected(RESPONSES)


# -- Anthropic ---------------------------------------------------------------------------------------


def anthropic_client(replay: Replay) -> Any:
    anthropic = pytest.importorskip("anthropic")
    return anthropic.Anthropic(api_key="test", base_url="http://mock", http_client=replay.client())


def anthropic_http() -> Any:
    """The transport module this anthropic SDK builds on (``httpx``, or its ``httpx2`` fork)."""
    anthropic = pytest.importorskip("anthropic")
    if "httpx2" in getattr(anthropic._base_client, "__dict__", {}):
        return pytest.importorskip("httpx2")
    return httpx


def test_anthropic_create_and_stream_helper() -> None:
    replay = Replay(ANTHROPIC, anthropic_http())
    client = anthropic_client(replay)
    ask = [{"role": "user", "content": "1 + 2 and 5 - 3?"}]

    raw = fsm.reassemble(client.messages.create(model="claude", max_tokens=1024, messages=ask, stream=True))
    with client.messages.stream(model="claude", max_tokens=1024, messages=ask) as stream:
        result = fsm.reassemble(stream, strict=True)  # its text/input_json events are not "unknown"
    answers = [messages.tool_result(call, run_tool(call), "anthropic") for call in result.complete_calls]
    history = [*ask, messages.assistant_message(result, "anthropic"), *messages.tool_results(answers, "anthropic")]

    assert got(raw) == got(result) == expected(ANTHROPIC) and result.diagnostics == ()
    client.messages.create(model="claude", max_tokens=1024, messages=history, stream=True).close()
    assert replay.sent[-1]["messages"] == history
    assert not check(history).rejected


def test_anthropic_truncated_call_is_not_sent_back() -> None:
    replay = Replay(ANTHROPIC_CUT, anthropic_http())
    client = anthropic_client(replay)
    ask = [{"role": "user", "content": "Write the guide to a file."}]

    with client.messages.stream(model="claude", max_tokens=64, messages=ask) as stream:
        result = fsm.reassemble(stream)
    history = [*ask, messages.assistant_message(result, "anthropic")]

    assert result.complete_calls == () and messages.omitted(result) == result.calls
    assert history[-1]["content"] == [{"type": "text", "text": result.text}]
    assert result.usage is not None and result.usage["output_tokens"] > 0
    assert not check(history).rejected


def test_anthropic_async() -> None:
    anthropic = pytest.importorskip("anthropic")
    replay = Replay(ANTHROPIC, anthropic_http())
    client = anthropic.AsyncAnthropic(api_key="test", base_url="http://mock", http_client=replay.async_client())
    ask = [{"role": "user", "content": "1 + 2 and 5 - 3?"}]

    async def both() -> tuple[fsm.Result, fsm.Result]:
        raw = await fsm.areassemble(
            await client.messages.create(model="claude", max_tokens=1024, messages=ask, stream=True)
        )
        helped = await fsm.areassemble(client.messages.stream(model="claude", max_tokens=1024, messages=ask))
        return raw, helped

    raw, helped = asyncio.run(both())
    assert got(raw) == got(helped) == expected(ANTHROPIC)


# -- Google GenAI ----------------------------------------------------------------------------------


def genai_client(replay: Replay, *, aio: bool = False) -> Any:
    genai = pytest.importorskip("google.genai")
    options = {"httpx_async_client": replay.async_client()} if aio else {"httpx_client": replay.client()}
    return genai.Client(api_key="test", http_options=genai.types.HttpOptions(base_url="http://mock", **options))


def test_google_genai_generate_content_stream() -> None:
    replay = Replay(GEMINI)
    client = genai_client(replay)
    ask = [{"role": "user", "parts": [{"text": "2+3, 4+5, 6+7?"}]}]

    result = fsm.reassemble(client.models.generate_content_stream(model="gemini-3-flash-preview", contents=ask))
    answers = [messages.tool_result(call, sum(call.arguments.values()), "gemini") for call in result.complete_calls]
    history = [*ask, messages.assistant_message(result, "gemini"), *messages.tool_results(answers, "gemini")]

    assert [(c.name, c.arguments) for c in result.calls] == [(n, a) for _, n, a in expected(GEMINI)]
    assert result.calls[0].thought_signature and result.usage and "totalTokenCount" in result.usage
    list(client.models.generate_content_stream(model="gemini-3-flash-preview", contents=history))
    sent = replay.sent[-1]["contents"]
    assert not check(sent).rejected
    signatures = [p.get("thoughtSignature") for p in sent[1]["parts"]]
    assert signatures[0] is not None and signatures[1:] == [None, None]


def test_google_genai_async() -> None:
    replay = Replay(GEMINI)
    client = genai_client(replay, aio=True)

    async def stream() -> fsm.Result:
        return await fsm.areassemble(await client.aio.models.generate_content_stream(model="g", contents="2+3?"))

    assert [(c.name, c.arguments) for c in asyncio.run(stream()).calls] == [(n, a) for _, n, a in expected(GEMINI)]


# -- LangChain and LiteLLM ---------------------------------------------------------------------------


def test_langchain_chat_openai_stream() -> None:
    langchain_openai = pytest.importorskip("langchain_openai")
    replay = Replay(OPENAI_CHAT)
    model = langchain_openai.ChatOpenAI(
        model="gpt-4o", api_key="test", base_url="http://mock/v1", http_client=replay.client()
    )

    result = fsm.reassemble(model.stream("Weather in Edinburgh, and AAPL?"))  # AIMessageChunk.tool_call_chunks

    assert got(result) == expected(OPENAI_CHAT)
    assert result.finish_reason == "tool_calls" and result.diagnostics == ()


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
def test_litellm_completion_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    # LiteLLM fetches a price list over the network unless told to use its bundled copy; any other
    # connection it tried would show here.
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    connections: list[Any] = []

    def refuse(sock: socket.socket, address: Any) -> None:
        connections.append(address)
        raise OSError("no network in tests")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    litellm = pytest.importorskip("litellm")
    replay = Replay(OPENAI_CHAT)
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(api_key="test", base_url="http://mock/v1", http_client=replay.client())

    # ModelResponseStream chunks, in the OpenAI chat shape
    result = fsm.reassemble(litellm.completion(model="openai/gpt-4o", messages=USER, stream=True, client=client))

    assert got(result) == expected(OPENAI_CHAT)
    history = [*USER, messages.assistant_message(result, "openai-chat")]
    history += [messages.tool_result(call, run_tool(call), "openai-chat") for call in result.complete_calls]
    assert not check(history).rejected
    assert connections == []


def test_gemini_openai_endpoint_signatures_go_back_on_their_calls_through_the_openai_client() -> None:
    """Gemini's OpenAI-compatible endpoint signs a call in ``extra_content``; Gemini 3 refuses the next
    turn if the call comes back without it. Read through the openai client (raw chunks and its stream
    helper), the signature stays on its call, and the next turn sends it back there, and only there."""

    def entry(index: int, call_id: str, arguments: str, sig: str | None) -> dict[str, Any]:
        call: dict[str, Any] = {"index": index, "id": call_id, "type": "function"}
        call["function"] = {"name": "get_weather", "arguments": arguments}
        if sig is not None:
            call["extra_content"] = {"google": {"thought_signature": sig}}
        return call

    chunks = [
        {
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "tool_calls": [entry(0, "c1", '{"city": "Oslo"}', "U0lH")]}}
            ]
        },
        {"choices": [{"index": 0, "delta": {"tool_calls": [entry(1, "c2", '{"city": "Bergen"}', None)]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    common = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "gemini-3-flash-preview"}
    wire = b"".join(b"data: " + json.dumps(common | c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    replay = Replay(wire)
    client = openai_client(replay)

    raw = fsm.reassemble(client.chat.completions.create(model="gemini-3-flash-preview", messages=USER, stream=True))
    with client.chat.completions.stream(model="gemini-3-flash-preview", messages=USER) as stream:
        helped = fsm.reassemble(stream)
    for result in (raw, helped, fsm.reassemble(wire)):
        assert [(c.id, c.thought_signature) for c in result.calls] == [("c1", "U0lH"), ("c2", None)]

    history = [*USER, messages.assistant_message(raw, "openai-chat")]
    history += [messages.tool_result(call, run_tool(call), "openai-chat") for call in raw.complete_calls]
    client.chat.completions.create(model="gemini-3-flash-preview", messages=history, stream=True).close()
    sent = replay.sent[-1]["messages"][1]["tool_calls"]
    assert sent[0]["extra_content"] == {"google": {"thought_signature": "U0lH"}}
    assert "extra_content" not in sent[1]
    assert not check(replay.sent[-1]["messages"]).rejected
