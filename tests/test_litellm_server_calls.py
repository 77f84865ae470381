"""Claude's server tools through LiteLLM (``litellm.completion(model="anthropic/...", stream=True)``
over a mock of LiteLLM's own HTTP handler): the server calls the bytes give.

LiteLLM yields a server tool call (web search, code execution) in no ``tool_calls`` entry, only in
``delta.provider_specific_fields``: ``server_tool_calls`` (each call whole once its block ended, the
list growing through the stream) and ``web_search_calls`` (a web call by id from its block's start).
fsm read neither: the result held no server call, and a code-execution turn even reported
``finish-without-calls``. Its proxy's SSE chunks carry the same fields, read the same way."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

import fsm
from fsm import CallStatus
from tests.test_anthropic_block_order import said, turn
from tests.test_langchain_server_calls import CLAUDE, cut_at_max_tokens, server, sse

httpx = pytest.importorskip("httpx")


def chunks_of(litellm: Any, body: bytes) -> list[Any]:
    from litellm.llms.custom_httpx.http_handler import HTTPHandler

    def answer(request: Any) -> Any:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    client = HTTPHandler(client=httpx.Client(transport=httpx.MockTransport(answer)))
    conversation = [{"role": "user", "content": "go"}]
    return list(
        litellm.completion(
            model="anthropic/claude-sonnet-4-5", messages=conversation, stream=True, client=client, api_key="test"
        )
    )


def server_calls(result: fsm.Result) -> list[Any]:
    return [(c.id, c.name, c.arguments, c.status) for c in result.server_tool_calls]


WHOLE = [name for name in CLAUDE if name not in ("cut-in-the-server-call", "mcp-tool")]


@pytest.mark.parametrize("name", WHOLE)
def test_claude_server_tools_through_litellm_are_the_bytes_server_calls(litellm: Any, name: str) -> None:
    body = sse(CLAUDE[name])
    reference = fsm.reassemble(body, "anthropic")
    chunks = chunks_of(litellm, body)
    for stream in (chunks, [c.model_dump() for c in chunks]):  # its SDK's chunks, or its proxy's as dicts
        got = fsm.reassemble(stream)
        assert server_calls(got) == server_calls(reference)
        assert [(c.id, c.arguments, c.status) for c in got.calls] == [
            (c.id, c.arguments, c.status) for c in reference.calls
        ]
        assert "finish-without-calls" not in got.codes()


@pytest.mark.parametrize("tool", ["web_search", "web_fetch"])
def test_a_server_call_litellm_never_gave_whole_is_reported_cut_under_its_name(litellm: Any, tool: str) -> None:
    # cut inside its block at max_tokens: LiteLLM gave its id (web_search_calls, a Responses
    # web_search_call item whose action says the tool), never its input text. The name was lost
    # (the cut reported as "call srvtoolu_1 (None)", and missing-name)
    body = sse(cut_at_max_tokens(turn(said(0, "Hm. "), server(1, "srvtoolu_1", tool, ['{"qu']))))
    assert server_calls(fsm.reassemble(body, "anthropic")) == [("srvtoolu_1", tool, None, CallStatus.TRUNCATED)]
    chunks = chunks_of(litellm, body)
    for stream in (chunks, [c.model_dump() for c in chunks]):
        got = fsm.reassemble(stream)
        assert server_calls(got) == [("srvtoolu_1", tool, None, CallStatus.TRUNCATED)]
        assert got.server_tool_calls[0].arguments_json == ""  # the text LiteLLM yields of it: none
        assert got.codes() == ["truncated"]
        assert f"call srvtoolu_1 ({tool}): cut after 0 characters" in got.diagnostics[0].message


def chunk(fields: Any, finish: str | None = None) -> dict[str, Any]:
    delta = {"role": "assistant", "provider_specific_fields": fields}
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_a_server_call_in_every_later_list_is_read_once_and_another_under_its_id_is_a_second_call() -> None:
    # LiteLLM's list only grows: an entry read before is not read again. One under the same id with
    # other arguments is what the registry makes of any whole call under an id in use: another call,
    # renamed deterministically (duplicate-id), never a silent replacement
    first = {"id": "srv_1", "type": "function", "function": {"name": "web_search", "arguments": '{"q": 1}'}}
    second = {"id": "srv_2", "type": "function", "function": {"name": "code_execution", "arguments": {"code": "1"}}}
    changed = {**first, "function": {"name": "web_search", "arguments": '{"q": 2}'}}
    result = fsm.reassemble(
        [
            chunk({"server_tool_calls": [first]}),
            chunk({"server_tool_calls": [first, second]}),
            chunk({"server_tool_calls": [first, second]}, "stop"),
        ]
    )
    assert server_calls(result) == [
        ("srv_1", "web_search", {"q": 1}, CallStatus.COMPLETE),
        ("srv_2", "code_execution", {"code": "1"}, CallStatus.COMPLETE),
    ]
    assert result.codes() == []
    again = fsm.reassemble([chunk({"server_tool_calls": [first]}), chunk({"server_tool_calls": [changed]}, "stop")])
    assert [(c.id, c.arguments) for c in again.server_tool_calls] == [("srv_1", {"q": 1}), ("srv_1_d2", {"q": 2})]
    assert again.codes() == ["duplicate-id"]


def test_litellm_yields_nothing_of_an_mcp_call(litellm: Any) -> None:
    # its Anthropic handler reads tool_use and server_tool_use blocks only: an mcp_tool_use block is lost
    body = sse(CLAUDE["mcp-tool"])
    assert server_calls(fsm.reassemble(body, "anthropic"))
    assert fsm.reassemble(chunks_of(litellm, body)).server_tool_calls == ()


@pytest.mark.parametrize(
    "fields",
    [
        {"server_tool_calls": [7]},
        {"server_tool_calls": [{"function": {"name": "f"}}]},
        {"server_tool_calls": [{"id": "a", "function": "f"}]},
        {"server_tool_calls": [{"id": "a", "function": {"arguments": {1, 2}}}]},
    ],
)
def test_a_server_call_entry_that_is_no_call_fails_the_stream_there(fields: Any) -> None:
    r = fsm.Reassembler("openai-chat")
    with contextlib.suppress(fsm.RemoteProtocolError):
        r.feed(chunk({"web_search_calls": {"srv_0": {}}}))
        r.feed(chunk(fields))
    result = r.close()
    assert "stream-failed" in result.codes()
    assert [c.status for c in result.server_tool_calls] == [CallStatus.TRUNCATED]  # what came before it


@pytest.mark.parametrize(
    "item", [{}, None, {"action": "search"}, {"action": {"type": "find"}}, {"action": {"type": [1]}}]
)
def test_a_web_call_whose_item_names_no_tool_is_cut_without_a_name(item: Any) -> None:
    result = fsm.reassemble([chunk({"web_search_calls": {"srv_0": item}}), chunk(None, "length")], "openai-chat")
    assert [(c.id, c.name, c.status) for c in result.server_tool_calls] == [("srv_0", None, CallStatus.TRUNCATED)]
    assert result.codes() == ["truncated", "missing-name"]


@pytest.mark.parametrize("fields", [None, 3, "x", [], {"web_search_calls": [1]}, {"server_tool_calls": {}}])
def test_provider_fields_with_no_server_call_say_nothing(fields: Any) -> None:
    result = fsm.reassemble([chunk(fields, "stop")], "openai-chat")
    assert result.server_tool_calls == () and result.codes() == []


def test_litellm_yields_nothing_of_code_gemini_ran(litellm: Any) -> None:
    # Its Gemini route reads no executableCode or codeExecutionResult part: the events that hold only
    # them yield no chunk at all, so there is nothing to read (the bytes give the server call)
    from litellm.llms.custom_httpx.http_handler import HTTPHandler

    from tests.test_langchain_server_calls import GEMINI

    body = GEMINI["code-then-a-call"]
    assert [c.type for c in fsm.reassemble(body, "gemini").server_tool_calls] == ["executable_code"]

    def answer(request: Any) -> Any:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    client = HTTPHandler(client=httpx.Client(transport=httpx.MockTransport(answer)))
    conversation = [{"role": "user", "content": "go"}]
    chunks = litellm.completion(
        model="gemini/gemini-2.5-flash", messages=conversation, stream=True, client=client, api_key="test"
    )
    got = fsm.reassemble(chunks)
    assert got.server_tool_calls == () and [c.name for c in got.calls] == ["report"]


def test_a_server_call_with_empty_arguments_is_read() -> None:
    empty = {"id": "srv_1", "type": "function", "function": {"name": "web_fetch", "arguments": ""}}
    result = fsm.reassemble([chunk({"server_tool_calls": [empty]}, "stop")], "openai-chat")
    assert [(c.id, c.name) for c in result.server_tool_calls] == [("srv_1", "web_fetch")]
