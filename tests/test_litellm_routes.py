"""LiteLLM's own routes for the OpenAI-chat dialects (``mistral/``, ``groq/``, ``deepseek/``) and for
Gemini, each over a mock of LiteLLM's HTTP handler answering with every capture of its wire
and the capture's hostile variants (tests/capture_variants.py): ``fsm.reassemble`` of the chunks
LiteLLM yields gives the bytes' calls. Where LiteLLM itself changes what the wire said, the test pins
what it does (README, "What the SDKs themselves do")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import fsm
from tests import capture_variants as cv
from tests.conftest import captures, require_captures
from tests.test_sdk_loop import CASES, body_of, seen

httpx = pytest.importorskip("httpx")

DIALECTS = ["mistral/mistral-large-latest", "groq/llama-3.3-70b-versatile", "deepseek/deepseek-chat"]
CHAT_CASES = [c for c in CASES if c.values[0] is None or c.values[1] == "openai-chat"]


def litellm_chunks(litellm: Any, model: str, body: bytes) -> list[Any]:
    from litellm.llms.custom_httpx.http_handler import HTTPHandler

    def answer(request: Any) -> Any:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    client = HTTPHandler(client=httpx.Client(transport=httpx.MockTransport(answer)))
    ask = [{"role": "user", "content": "go"}]
    return list(litellm.completion(model=model, messages=ask, stream=True, client=client, api_key="test"))


def _calls(result: fsm.Result) -> list[Any]:
    return [(c.id, c.name, c.arguments, c.status) for c in result.calls]


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
@pytest.mark.parametrize("model", DIALECTS)
@pytest.mark.parametrize(("path", "provider", "variant", "payloads"), CHAT_CASES)
def test_litellm_dialect_routes_give_the_bytes_calls(
    litellm: Any, model: str, path: Path, provider: str, variant: str, payloads: Any
) -> None:
    if path is None:
        require_captures()
    body = body_of(path, provider, variant, payloads)
    reference = fsm.reassemble(body, provider)
    got = fsm.reassemble(litellm_chunks(litellm, model, body))
    if reference.finish_reason is not None:
        # LiteLLM reports a stop that came with calls as tool_calls itself (no finish-reason-mapped)
        expected = [code for code in reference.codes() if code != "finish-reason-mapped"]
        assert seen(got, usage=False, reasoning=False) == {
            **seen(reference, usage=False, reasoning=False),
            "codes": expected,
        }
        return
    # A stream that ends without a finish: these routes make one up (tool_calls where calls came),
    # so a call the stream cut inside its JSON is invalid, not truncated, and nothing says it was cut
    assert got.finish_reason == "tool_calls" and "no-finish-reason" not in got.codes()
    # (and a call cut before any argument text is {}, complete)
    assert [(c.id, c.name) for c in got.calls] == [(c.id, c.name) for c in reference.calls]
    for mine, theirs in zip(got.calls, reference.calls, strict=True):
        if theirs.status is not fsm.CallStatus.TRUNCATED:
            assert (mine.arguments_json, mine.status) == (theirs.arguments_json, theirs.status)
        elif theirs.arguments_json:
            assert (mine.arguments_json, mine.status) == (theirs.arguments_json, fsm.CallStatus.INVALID)
        else:
            assert (mine.arguments, mine.status) == ({}, fsm.CallStatus.COMPLETE)


def _gemini_cases() -> list[Any]:
    found = [
        pytest.param(path, variant, payloads, id=f"{path.stem}-{variant}")
        for path in captures("gemini")
        for variant, payloads in cv.variants("gemini", cv.events(path))
        if payloads is not None
    ]
    return found or [pytest.param(None, "", [], id="no-captures")]


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
@pytest.mark.parametrize(("path", "variant", "payloads"), _gemini_cases())
def test_litellm_gemini_route_gives_the_bytes_calls(litellm: Any, path: Path, variant: str, payloads: Any) -> None:
    """Its Gemini route numbers the calls and gives each a made-up id where the wire had none; a
    call's thought signature goes into that id (``<id>__thought__<signature>``), from which LiteLLM
    reads it back when the next turn goes through it: fsm keeps the id as LiteLLM gave it."""
    if path is None:
        require_captures()
    body = path.read_bytes() if variant == "as-is" else cv.render(payloads, "gemini")
    reference = fsm.reassemble(body, "gemini")
    got = fsm.reassemble(litellm_chunks(litellm, "gemini/gemini-2.5-flash", body))
    if variant == "one-id":
        # It numbers each functionCall part, so parts under one id are separate calls (duplicate-id),
        # where the bytes read a later part as new arguments for that call (arguments-replaced)
        assert len(got.calls) > len(reference.calls) and "duplicate-id" in got.codes()
        assert "arguments-replaced" in reference.codes()
        return
    assert [(c.name, c.arguments, c.status) for c in got.calls] == [
        (c.name, c.arguments, c.status) for c in reference.calls
    ]
    assert got.finish_reason == reference.finish_reason
    for mine, theirs in zip(got.calls, reference.calls, strict=True):
        if theirs.thought_signature is not None:
            assert mine.id.endswith("__thought__" + theirs.thought_signature)
