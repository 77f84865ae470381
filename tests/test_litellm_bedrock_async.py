"""LiteLLM's Bedrock routes, awaited: ``await litellm.acompletion(model="bedrock/converse/...",
stream=True)`` and ``model="bedrock/invoke/anthropic.claude-..."`` read the same AWS event streams as
tests/test_litellm_bedrock.py, through LiteLLM's async HTTP client (its ``AsyncHTTPHandler`` over an
httpx mock transport; SigV4-signed with dummy keys, no network). What the async stream yields, fed to
a Reassembler with ``async for`` or read by ``fsm.areassemble``, must give exactly what the sync
route gives (diagnostics with their event numbers too), and so what fsm reads from the bytes but
what LiteLLM itself changes. The next turn goes back through ``acompletion`` and the body LiteLLM
wrote must carry every call, pair every result and keep every signature, as on the sync route."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import fsm
from tests import capture_variants as cv
from tests.conftest import CAPTURES, require_captures
from tests.helpers import aws_message
from tests.test_litellm_bedrock import (
    ASK,
    AWS,
    CONVERSE,
    CONVERSE_MODEL,
    INVOKE_MODEL,
    ROUTES,
    TURNS,
    Server,
    complete,
    converse_events,
    converse_stream,
    invoke_stream,
    next_turn,
    read,
)
from tests.test_sdk_loop import numbered, seen

httpx = pytest.importorskip("httpx")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


class AsyncServer(Server):
    """The mock Bedrock endpoint, reached through LiteLLM's async HTTP client."""

    def aclient(self) -> Any:
        from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

        return AsyncHTTPHandler(transport=httpx.MockTransport(self))


def serving(body: bytes) -> AsyncServer:
    """The mock answering with ``body``; a case without one stands for the captures, which are absent."""
    if not body:
        require_captures()
    return AsyncServer(body)


async def acomplete(litellm: Any, model: str, server: AsyncServer, conversation: list[Any], **options: Any) -> Any:
    return await litellm.acompletion(
        model=model, messages=conversation, stream=True, client=server.aclient(), **AWS, **options
    )


async def aread(litellm: Any, model: str, server: AsyncServer) -> tuple[fsm.Result, Exception | None]:
    """What the async stream yields, fed chunk by chunk, and the error LiteLLM raised mid-stream."""
    reassembler = fsm.Reassembler()
    try:
        async for chunk in await acomplete(litellm, model, server, ASK):
            reassembler.feed(chunk)
    except Exception as exc:  # LiteLLM's own, which fsm.areassemble lets through
        return reassembler.close(), exc
    return reassembler.close(), None


async def aoutcome(litellm: Any, model: str, server: AsyncServer, strict: bool = False) -> fsm.Result | Exception:
    try:
        return await fsm.areassemble(await acomplete(litellm, model, server, ASK), strict=strict)
    except Exception as exc:
        return exc


def raised(error: Exception) -> tuple[str, str, int | None]:
    return type(error).__name__, str(error), getattr(error, "event", None)


def said(result: fsm.Result) -> tuple[Any, ...]:
    return seen(result), numbered(result)


@pytest.mark.parametrize(("model", "variant", "body"), ROUTES)
def test_litellms_async_bedrock_stream_gives_what_its_sync_stream_gives(
    litellm: Any, model: str, variant: str, body: bytes
) -> None:
    server = serving(body)
    synced, sync_error = read(litellm, model, Server(body))
    got, error = asyncio.run(aread(litellm, model, server))
    assert said(got) == said(synced)
    assert got.calls, "every case carries a call"
    whole = asyncio.run(aoutcome(litellm, model, AsyncServer(body)))
    # strict: the same result or the same error, raised at the same event, as the sync route
    strict = asyncio.run(aoutcome(litellm, model, AsyncServer(body), strict=True))
    try:
        strict_sync: Any = fsm.reassemble(complete(litellm, model, Server(body), ASK), strict=True)
    except Exception as exc:
        strict_sync = exc
    if isinstance(strict_sync, Exception):
        assert isinstance(strict, Exception) and raised(strict) == raised(strict_sync)
    else:
        assert isinstance(strict, fsm.Result) and said(strict) == said(strict_sync)
    if variant == "cut":  # LiteLLM raises at a stream without a finish reason, on either route
        assert error is not None and sync_error is not None and type(error) is type(sync_error)
        assert isinstance(whole, type(error)) and "finish_reason" in str(whole)
        assert got.codes() == ["no-finish-reason", "truncated"]
        return
    assert error is None and sync_error is None
    assert isinstance(whole, fsm.Result) and said(whole) == said(got)


@pytest.mark.parametrize(("model", "variant", "body", "incomplete"), TURNS)
def test_the_next_turn_goes_through_litellms_async_bedrock_route_with_every_call_paired(
    litellm: Any, model: str, variant: str, body: bytes, incomplete: Any
) -> None:
    server = serving(body)
    result, _ = asyncio.run(aread(litellm, model, server))

    async def drain(conversation: list[Any], **options: Any) -> None:
        async for _ in await acomplete(litellm, model, server, conversation, **options):
            pass

    def send(conversation: list[Any], **options: Any) -> None:
        asyncio.run(drain(conversation, **options))

    next_turn(litellm, model, server, result, incomplete, send)


def _excepted(model: str, late: bool) -> bytes:
    """A stream of ``model``'s route with a Bedrock exception frame after its last event (``late``)
    or in place of its last three."""
    if model == CONVERSE_MODEL:
        events: list[Any] = converse_events(CONVERSE.read_bytes())
        head = converse_stream(events if late else events[:-3])
    else:
        payloads = cv.events(CAPTURES / "anthropic/magentic-claude-3-opus-parallel-plus-minus.sse")
        head = invoke_stream(payloads if late else payloads[:-3])
    return head + aws_message(b'{"message": "Rate exceeded"}', "throttlingException", ":exception-type")


@pytest.mark.parametrize("model", [CONVERSE_MODEL, INVOKE_MODEL], ids=["converse", "invoke"])
@pytest.mark.parametrize("late", [True, False], ids=["after-the-stop", "mid-stream"])
def test_litellm_drops_bedrocks_exception_frames_on_either_route(litellm: Any, model: str, late: bool) -> None:
    """What LiteLLM itself does with an exception frame (README, "What the SDKs themselves do"): it
    yields nothing of it, sync or async, so Bedrock's message never reaches fsm. After the message
    stop the stream just ends well; mid-stream LiteLLM raises that no finish reason came. fsm reads
    the message from the bytes either way."""
    require_captures()
    body = _excepted(model, late)
    from_bytes = fsm.reassemble(body, "bedrock")
    errors = [d.message for d in from_bytes.diagnostics if d.code == "provider-error"]
    assert len(errors) == 1 and "Rate exceeded" in errors[0]
    synced, sync_error = read(litellm, model, Server(body))
    got, error = asyncio.run(aread(litellm, model, AsyncServer(body)))
    assert said(got) == said(synced) and "provider-error" not in got.codes()
    if late:
        assert error is None and sync_error is None
        assert got.finish_reason == from_bytes.finish_reason == "tool_calls"
        assert seen(got, usage=False)["calls"] == seen(from_bytes, usage=False)["calls"]
    else:
        assert error is not None and sync_error is not None and type(error) is type(sync_error)
        assert "finish_reason" in str(error) and "Rate exceeded" not in str(error)
        assert got.finish_reason is None and from_bytes.finish_reason == "error"
