"""A tool's output holding a lone UTF-16 surrogate (policy output-lone-surrogate).

Text decoded with ``surrogateescape`` (a shell's output, a file name of bytes that are not UTF-8)
holds code points U+DC80 to U+DCFF that UTF-8 cannot encode. Passed into the next request, it made
the SDK fail as it sent (openai-python: ``UnicodeEncodeError`` inside httpx), far from the call it
answered. ``fsm.messages.tool_result`` refuses it at once, in every format, naming the call.
"""

from __future__ import annotations

from typing import Any

import pytest

import fsm
from fsm import messages
from fsm.errors import InvalidInput

FORMATS = ["openai-chat", "openai-responses", "anthropic", "gemini", "ollama", "cohere", "bedrock"]


def _call(kind: str = "function") -> fsm.ToolCall:
    item = {"type": "shell_call", "id": "sh_1"} if kind == "shell_call" else None
    arguments: Any = {"commands": ["ls"]} if kind == "shell_call" else {"path": "."}
    return fsm.ToolCall(0, "c1", "c1", "ls", arguments, '{"path": "."}', fsm.CallStatus.COMPLETE, type=kind, item=item)


@pytest.mark.parametrize("format", FORMATS)
@pytest.mark.parametrize(
    "output",
    [
        "b'\\xff' decoded: \udcff",
        {"files": ["a.txt", "caf\udce9.txt"]},
        {"caf\udce9": 1},
        [[[["deep \ud83d"]]]],
        ("a tuple", "\udc80"),
    ],
    ids=["text", "in-a-list", "a-key", "nested", "tuple"],
)
def test_every_format_refuses_a_lone_surrogate_naming_the_call(format: str, output: Any) -> None:
    with pytest.raises(
        InvalidInput, match=r"call c1: the tool's output holds a lone surrogate \(U\+D[89A-F][0-9A-F]{2}"
    ):
        messages.tool_result(_call(), output, format)  # type: ignore[arg-type]


@pytest.mark.parametrize("format", FORMATS)
def test_characters_past_the_bmp_are_no_lone_surrogates(format: str) -> None:
    for output in ("\U0001f600 done", {"face": "\U0001f600"}, "caf\u00e9"):
        messages.tool_result(_call(), output, format)  # type: ignore[arg-type]


def test_a_shell_calls_output_chunks() -> None:
    call = _call("shell_call")
    chunk = {"stdout": "ok", "stderr": "bad \udcfe", "outcome": {"type": "exit", "exit_code": 1}}
    with pytest.raises(InvalidInput, match="U\\+DCFE at character 4 of a string in it"):
        messages.tool_result(call, [chunk], "openai-responses")
    chunk["stderr"] = "fine"
    assert messages.tool_result(call, [chunk], "openai-responses")["output"] == [chunk]


def test_outputs_that_nest_past_the_stack_or_hold_themselves_still_get_the_json_answer() -> None:
    deep: Any = "x"
    for _ in range(200_000):
        deep = [deep]
    looped: list[Any] = []
    looped.append(looped)
    for output in (deep, looped):
        with pytest.raises(InvalidInput, match="must be text or what JSON can write"):
            messages.tool_result(_call(), output, "openai-chat")


def test_a_callers_string_whose_method_raises() -> None:
    class Odd(str):
        def isascii(self) -> bool:
            raise RuntimeError("no")

    with pytest.raises(InvalidInput, match="caller-object-raises"):
        messages.tool_result(_call(), {"k": [Odd("x")]}, "anthropic")


def test_the_sdk_failed_where_the_refusal_now_stands() -> None:
    httpx = pytest.importorskip("httpx")
    openai = pytest.importorskip("openai")
    sent: list[bytes] = []

    def server(request: Any) -> Any:
        sent.append(request.content)
        choice = {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        return httpx.Response(
            200, json={"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [choice]}
        )

    client = openai.OpenAI(
        api_key="t",
        base_url="http://mock/v1",
        http_client=httpx.Client(transport=httpx.MockTransport(server)),
        max_retries=0,
    )
    call = _call()
    history = [
        {"role": "user", "content": "ls"},
        messages.assistant_message(fsm.Result("openai-chat", "tool_calls", (call,), ()), "openai-chat"),
    ]
    with pytest.raises(UnicodeEncodeError):  # what a hand-built answer holding one does
        client.chat.completions.create(
            model="m", messages=[*history, {"role": "tool", "tool_call_id": "c1", "content": "\udcff"}]
        )
    with pytest.raises(InvalidInput):
        messages.tool_result(call, "\udcff", "openai-chat")
    answer = messages.tool_result(call, "\ufffd".join(["a", "b"]), "openai-chat")  # decoded with errors="replace"
    client.chat.completions.create(model="m", messages=[*history, answer])
    assert sent and "a\ufffdb" in sent[-1].decode("utf-8")
