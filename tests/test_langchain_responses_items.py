"""Responses API items that are no function calls, through LangChain's ``ChatOpenAI(use_responses_api=True)``:
the calls the bytes give, read from the whole items langchain-openai yields as content blocks
(fsm/wire/langchain_items.py).

They were read as nothing, or as the wrong call: a ``computer_call`` or ``apply_patch_call`` (a
built-in tool the client must run) and every hosted tool (``web_search_call``, ``mcp_call``, ...)
vanished from the result in silence, and a custom tool's freeform input came out as a JSON function
call with ``{"__arg1": input}`` arguments, LangChain's own wrapping. What LangChain itself never
yields (``shell_call``, ``local_shell_call``) is pinned here as lost.
"""

from __future__ import annotations

import contextlib
import functools
import json
import operator
import random
from typing import Any

import pytest

import fsm
from fsm import CallStatus
from tests.test_clients import Replay
from tests.test_sdk_loop import langchain_model

pytest.importorskip("httpx")


def stream(*items: dict[str, Any], status: str = "completed") -> bytes:
    """A Responses stream that announces and ends each item, as OpenAI sends it."""
    response = {"id": "resp_1", "object": "response", "model": "example-model", "status": "in_progress", "output": []}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": response}]
    for at, item in enumerate(items):
        added = {**item, "status": "in_progress"}
        if item["type"] == "custom_tool_call":
            added["input"] = ""
        events.append({"type": "response.output_item.added", "output_index": at, "item": added})
        if item["type"] == "custom_tool_call":
            delta = {"type": "response.custom_tool_call_input.delta", "output_index": at, "item_id": item["id"]}
            events.append({**delta, "delta": item["input"]})
        events.append({"type": "response.output_item.done", "output_index": at, "item": item})
    ended = {**response, "status": status, "output": list(items)}
    if status == "incomplete":
        ended["incomplete_details"] = {"reason": "max_output_tokens"}
    events.append({"type": f"response.{status}", "response": ended})
    for n, event in enumerate(events):
        event["sequence_number"] = n
    return b"".join(b"event: " + e["type"].encode() + b"\ndata: " + json.dumps(e).encode() + b"\n\n" for e in events)


WEATHER = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_w",
    "name": "weather",
    "arguments": '{"city":"Oslo"}',
}
PATCH = {
    "type": "custom_tool_call",
    "id": "ctc_1",
    "call_id": "call_p",
    "name": "apply_diff",
    "input": "*** Begin\n+a\n",
}
CLICK = {
    "type": "computer_call",
    "id": "cu_1",
    "call_id": "call_c",
    "status": "completed",
    "action": {"type": "click", "button": "left", "x": 120, "y": 240},
    "pending_safety_checks": [],
}
EDIT = {
    "type": "apply_patch_call",
    "id": "apc_1",
    "call_id": "call_a",
    "status": "completed",
    "operation": {"type": "update_file", "path": "app.py", "diff": "@@\n-a\n+b\n"},
}
SEARCH = {
    "type": "web_search_call",
    "id": "ws_1",
    "status": "completed",
    "action": {"type": "search", "query": "oslo weather"},
}
MCP = {
    "type": "mcp_call",
    "id": "mcp_1",
    "name": "search_docs",
    "server_label": "docs",
    "arguments": '{"q": "fsm"}',
    "status": "completed",
}
CODE = {
    "type": "code_interpreter_call",
    "id": "ci_1",
    "container_id": "cntr_1",
    "code": "print(2 + 3)",
    "status": "completed",
    "outputs": None,
}

STREAMS = {
    "custom-tool": stream(WEATHER, PATCH),
    "computer-and-apply-patch": stream(CLICK, WEATHER, EDIT),
    "hosted-tools": stream(SEARCH, MCP, CODE, WEATHER),
    "computer-call-cut": stream({**CLICK, "status": "incomplete"}, status="incomplete"),
    "image-and-file-search": stream(
        {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": "AAAA"},
        {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": ["fsm"], "results": None},
        WEATHER,
    ),
}


def kept(result: fsm.Result) -> dict[str, Any]:
    def call(c: fsm.ToolCall) -> tuple[Any, ...]:
        # a function call's item id too (fsm/wire/langchain_reasoning.py), and each call's place
        return (c.id, c.name, c.type, c.arguments, c.input, c.status, c.item, c.output_index)

    return {"calls": [call(c) for c in result.calls], "server": [call(c) for c in result.server_tool_calls]}


@pytest.mark.parametrize("output_version", [None, "v1", "v0"])
@pytest.mark.parametrize("name", list(STREAMS))
def test_responses_items_through_chat_openai_are_the_bytes_calls(name: str, output_version: str | None) -> None:
    # v0 keeps the built-in and hosted items in additional_kwargs["tool_outputs"], where they went
    # unread: every hosted call, a computer_call and an apply_patch_call vanished without a word
    body = STREAMS[name]
    reference = fsm.reassemble(body, "openai-responses")
    model = langchain_model("openai-responses", Replay(body))
    if output_version:
        model.output_version = output_version
    chunks = list(model.stream("go"))
    got = fsm.reassemble(chunks)
    if output_version == "v1" and name == "hosted-tools":
        # v1 turns a hosted item into a `server_tool_call` naming its tool: the item itself is gone
        def lossy(result: fsm.Result) -> list[Any]:
            return [(c.id, c.name, c.type, c.arguments, c.input, c.status) for c in result.server_tool_calls]

        assert lossy(got) == lossy(reference)
        assert kept(got)["calls"] == kept(reference)["calls"]
    else:
        assert kept(got) == kept(reference)
    assert got.codes() == reference.codes()
    assert got.finish_reason == reference.finish_reason
    summed = fsm.reassemble([functools.reduce(operator.add, chunks)])
    assert kept(summed)["calls"] == kept(got)["calls"]
    if output_version == "v0":  # the summed tool_outputs hold every item, each under its count
        assert kept(summed)["server"] == kept(got)["server"]


def test_a_custom_tool_call_is_freeform_input_not_langchains_arg1_wrapping() -> None:
    got = fsm.reassemble(langchain_model("openai-responses", Replay(STREAMS["custom-tool"])).stream("go"))
    (custom,) = [c for c in got.calls if c.type == "custom"]
    assert (custom.id, custom.input, custom.arguments) == ("call_p", "*** Begin\n+a\n", None)
    assert len(got.calls) == 2  # the item is the call: LangChain's function-call copy of it is not another


def test_a_computer_call_ended_incomplete_is_truncated_not_run() -> None:
    got = fsm.reassemble(langchain_model("openai-responses", Replay(STREAMS["computer-call-cut"])).stream("go"))
    assert [(c.name, c.status) for c in got.calls] == [("computer", CallStatus.TRUNCATED)]


def test_shell_calls_are_items_langchain_never_yields() -> None:
    shell = {
        "type": "shell_call",
        "id": "sh_1",
        "call_id": "call_s",
        "status": "completed",
        "action": {"commands": ["ls"]},
    }
    body = stream(WEATHER, shell)
    assert [c.type for c in fsm.reassemble(body, "openai-responses").calls] == ["function", "shell_call"]
    got = fsm.reassemble(langchain_model("openai-responses", Replay(body)).stream("go"))
    assert [c.type for c in got.calls] == ["function"]  # langchain-openai drops the item: nothing to read


@pytest.mark.parametrize(
    "outputs",
    [7, "x", None, [7], [None, "x"], [{"type": 3}], [{"type": "web_search_call", "id": 5, "index": "x"}], {"a": 1}],
)
def test_v0_tool_outputs_of_no_item_raise_nothing_but_fsm_errors(outputs: Any) -> None:
    core = pytest.importorskip("langchain_core.messages")
    r = fsm.Reassembler()
    chunk = core.AIMessageChunk(content=[], response_metadata={"model_provider": "openai"})
    chunk.additional_kwargs["tool_outputs"] = outputs
    with contextlib.suppress(fsm.ToolcallFSMError):
        r.feed(chunk)
    assert not r.close().calls


def test_items_in_hand_made_chunks_give_a_call_or_fail_the_stream() -> None:
    core = pytest.importorskip("langchain_core.messages")
    odd: list[Any] = [
        {"type": "computer_call", "call_id": 5, "index": 0},
        {"type": "computer_call", "call_id": "c", "action": {1, 2}, "index": "lc_ns_x"},
        {"type": "non_standard", "value": {"type": "apply_patch_call", "call_id": "a", "operation": "x"}, "index": [1]},
        {"type": "server_tool_call", "name": "remote_mcp", "args": {"q": {3}}, "id": "m", "extras": 4},
        {"type": "server_tool_call", "name": "web_search", "args": "x", "id": None},
        {"type": "custom_tool_call", "call_id": "c2", "input": 7, "index": 3},
    ]
    for block in odd:
        r = fsm.Reassembler()
        with contextlib.suppress(fsm.ToolcallFSMError):  # a value no JSON holds fails the stream there
            r.feed(core.AIMessageChunk(content=[block], response_metadata={"model_provider": "openai"}))
        result = r.close()
        assert result.calls or result.server_tool_calls or "stream-failed" in result.codes(), block


def test_langchain_takes_no_custom_tool_call_back_in_chat_dicts() -> None:
    # What LangChain itself does with the next turn: its dict conversion knows function calls only,
    # so a custom tool's call written as OpenAI chat writes it (`type: custom`) makes it raise.
    # (Before, fsm gave LangChain's own wrapping back: a function call with `{"__arg1": input}`.)
    replay = Replay(STREAMS["custom-tool"])
    model = langchain_model("openai-responses", replay)
    got = fsm.reassemble(model.stream("go"))
    said = fsm.messages.assistant_message(got, "openai-chat")
    assert [c["type"] for c in said["tool_calls"]] == ["function", "custom"]
    answers = [fsm.messages.tool_result(c, "ok", "openai-chat") for c in got.complete_calls]
    with pytest.raises(TypeError, match="custom"):
        list(model.stream([{"role": "user", "content": "go"}, said, *answers]))


def _index_reads(n: int, provider: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """How often a block's or call's index is read for one summed chunk of n calls and n blocks."""
    core = pytest.importorskip("langchain_core.messages")
    from fsm.wire import langchain_places

    reads = 0
    place_of = langchain_places.place_of

    def counted(value: Any) -> int | None:
        nonlocal reads
        reads += 1
        return place_of(value)

    if provider == "openai":
        action = {"type": "click", "x": 1, "y": 2}
        content = [
            {"type": "computer_call", "call_id": f"c{i}", "action": action, "status": "completed", "index": 2 * i + 1}
            for i in range(n)
        ]
    else:
        content = [{"type": "text", "text": f"t{i}", "index": 2 * i + 1} for i in range(n)]
    calls = [{"name": "f", "args": "{}", "id": f"f{i}", "index": 2 * i, "type": "tool_call_chunk"} for i in range(n)]
    chunk = core.AIMessageChunk(content=content, tool_call_chunks=calls, response_metadata={"model_provider": provider})
    monkeypatch.setattr(langchain_places, "place_of", counted)
    result = fsm.reassemble([chunk], limits=fsm.Limits(max_calls=10 * n))
    monkeypatch.setattr(langchain_places, "place_of", place_of)
    assert len(result.calls) == (2 * n if provider == "openai" else n)
    return reads


@pytest.mark.parametrize("provider", ["openai", "google_genai"])
def test_a_summed_chunk_of_many_calls_and_blocks_is_read_in_linear_work(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each block after some of the chunk's calls counted them again from the first: n*n reads of
    # their index (8000 items and 8000 calls: 24 s); now once per call and once per block
    small, large = _index_reads(100, provider, monkeypatch), _index_reads(1000, provider, monkeypatch)
    assert large <= 11 * small, (small, large)


KINDS = [
    "server_tool_use",
    "mcp_tool_use",
    "server_tool_call",
    "server_tool_call_chunk",
    "input_json_delta",
    "executable_code",
    "code_execution_result",
    "non_standard",
    "computer_call",
    "custom_tool_call",
    "apply_patch_call",
    "web_search_call",
    "zz_use",
    "text",
    "tool_use",
]
ODD: list[Any] = [None, 5, "x", [1], {"a": 1}, b"x", 1.5, True, ["server_tool_use"], {"type": 1}, "lc_ns_3", 0]
FIELDS = ["id", "name", "input", "partial_json", "args", "index", "extras", "value", "executable_code", "language"]
FIELDS += ["call_id", "action", "status", "operation"]


@pytest.mark.parametrize("provider", [None, "anthropic", "google_genai", "openai"])
def test_random_blocks_of_the_kinds_read_here_raise_nothing_but_fsm_errors(provider: str | None) -> None:
    # unhashable types and statuses among them: `status in UNFINISHED` raised TypeError from feed()
    core = pytest.importorskip("langchain_core.messages")
    rng = random.Random(14)
    meta = {"model_provider": provider} if provider else {}
    for _ in range(300):
        chunks = []
        for _ in range(3):
            block: dict[str, Any] = {"type": rng.choice([*KINDS, *ODD])}
            for key in rng.sample(FIELDS, rng.randint(0, 6)):
                block[key] = rng.choice([*ODD, {"type": rng.choice(KINDS)}])
            chunk = core.AIMessageChunk(content=[], response_metadata=meta)
            chunk.content = [block, "tail"]
            chunks.append(chunk)
        fed_till_failed(fsm.Reassembler(strict=rng.random() < 0.5), chunks)


def fed_till_failed(r: fsm.Reassembler, chunks: list[Any]) -> None:
    """Feed the chunks until one fails the stream with an fsm error (what any other would raise
    fails the test), then close."""
    for chunk in chunks:
        try:
            r.feed(chunk)
        except fsm.ToolcallFSMError:
            break
    with contextlib.suppress(fsm.ToolcallFSMError):
        r.close()
