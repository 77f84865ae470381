"""The agent loop of tests/test_sdk_loop.py through the SDKs' async clients (``openai.AsyncOpenAI``,
``anthropic.AsyncAnthropic``, google-genai's ``client.aio``, LangChain's ``astream``, LiteLLM's
``acompletion``), read by ``fsm.areassemble``: over the same captures and hostile variants, each
must give what the sync client gives (itself held to the bytes there): the same calls, diagnostics
and their event numbers, finish reason and text; the next turn built by ``fsm.messages`` goes
through the same async client, and the body it writes must be the sync client's, byte for byte."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import fsm
from fsm.errors import InvalidInput
from tests import capture_variants as cv
from tests.conftest import require_captures
from tests.test_clients import Replay
from tests.test_sdk_loop import (
    ASK,
    BODY_FIELD,
    CASES,
    LANGCHAIN_CASES,
    LITELLM_CASES,
    TURNS,
    body_of,
    client_for,
    helper_stream,
    langchain_model,
    next_request,
    numbered,
    replay_for,
    seen,
    send,
)

httpx = pytest.importorskip("httpx")


def aclient_for(provider: str, body: bytes, replay_type: type[Replay] = Replay) -> tuple[Replay, Any]:
    """``client_for``'s async twin: the same SDK, its async client, over an async mock transport."""
    replay = replay_for(provider, body, replay_type)
    if provider == "anthropic":
        anthropic = pytest.importorskip("anthropic")
        return replay, anthropic.AsyncAnthropic(
            api_key="test", base_url="http://mock", http_client=replay.async_client()
        )
    if provider == "gemini":
        genai = pytest.importorskip("google.genai")
        options = genai.types.HttpOptions(base_url="http://mock", httpx_async_client=replay.async_client())
        return replay, genai.Client(api_key="test", http_options=options).aio
    openai = pytest.importorskip("openai")
    return replay, openai.AsyncOpenAI(api_key="test", base_url="http://mock/v1", http_client=replay.async_client())


def acall(provider: str, client: Any, conversation: list[Any]) -> Any:
    """``send``'s SDK call through the async client, not yet awaited: a coroutine."""
    if provider == "openai-chat":
        return client.chat.completions.create(model="m", messages=conversation, stream=True)
    if provider == "openai-responses":
        return client.responses.create(model="m", input=conversation, stream=True)
    if provider == "anthropic":
        return client.messages.create(model="m", max_tokens=64, messages=conversation, stream=True)
    return client.models.generate_content_stream(model="g", contents=conversation)


async def asend(provider: str, client: Any, conversation: list[Any], **options: Any) -> fsm.Result:
    """``send`` through the async client: its raw stream, read by ``areassemble``."""
    return await fsm.areassemble(await acall(provider, client, conversation), **options)


def outcome(read: Any) -> tuple[str, Any]:
    """What reading a stream came to: ("result", what a caller acts on) or ("raised", the type and
    message), for an SDK's own refusal must be the same sync and async too."""
    try:
        result = read()
    except Exception as error:  # the SDK's own (fsm's never escape in lax mode)
        return "raised", (type(error).__name__, str(error))
    return "result", (seen(result), numbered(result))


def both_clients(path: Path | None, provider: str, variant: str, payloads: Any) -> tuple[bytes, Any, Any]:
    """The case's body, and (replay, client) for it twice: sync, then async."""
    if path is None:
        require_captures()
    assert path is not None
    body = body_of(path, provider, variant, payloads)
    return body, client_for(provider, body), aclient_for(provider, body)


async def aoutcome(read: Any) -> tuple[str, Any]:
    try:
        result = await read()
    except Exception as error:
        return "raised", (type(error).__name__, str(error))
    return "result", (seen(result), numbered(result))


@pytest.mark.parametrize(("path", "provider", "variant", "payloads"), CASES)
def test_the_async_sdk_stream_gives_what_the_sync_one_gives(
    path: Path, provider: str, variant: str, payloads: Any
) -> None:
    body, (_, client), (_, aclient) = both_clients(path, provider, variant, payloads)

    sync_raw = send(provider, client, ASK[provider])
    async_raw = asyncio.run(asend(provider, aclient, ASK[provider]))
    assert (seen(async_raw), numbered(async_raw)) == (seen(sync_raw), numbered(sync_raw))
    assert seen(async_raw) == seen(fsm.reassemble(body, provider))
    # strict: the same error, with the same message, raised at the same event
    strict = outcome(partial(send, provider, client, ASK[provider], strict=True))
    assert asyncio.run(aoutcome(partial(asend, provider, aclient, ASK[provider], strict=True))) == strict

    if helper_stream(provider, client) is None:
        return
    helped = outcome(lambda: fsm.reassemble(helper_stream(provider, client)))
    ahelped = asyncio.run(aoutcome(lambda: fsm.areassemble(helper_stream(provider, aclient))))
    assert ahelped == helped


@pytest.mark.parametrize(("path", "provider", "variant", "payloads", "incomplete"), TURNS)
def test_the_async_client_sends_the_next_turn_as_the_sync_one_does(
    path: Path, provider: str, variant: str, payloads: Any, incomplete: str
) -> None:
    _, (replay, client), (areplay, aclient) = both_clients(path, provider, variant, payloads)

    async def turn(conversation: list[Any]) -> fsm.Result:
        return await asend(provider, aclient, conversation)

    result = asyncio.run(turn(ASK[provider]))
    assert seen(result) == seen(send(provider, client, ASK[provider]))
    for genai_parts in (False, True) if provider == "gemini" else (False,):
        conversation = next_request(provider, result, incomplete, genai_parts=genai_parts)
        asyncio.run(turn(conversation))
        send(provider, client, conversation)
        assert areplay.sent[-1][BODY_FIELD[provider]] == replay.sent[-1][BODY_FIELD[provider]]


# -- LangChain and LiteLLM, async ---------------------------------------------------------------------


async def _drain(stream: Any) -> None:
    async for _ in stream:
        pass


@pytest.mark.parametrize(("path", "provider", "variant", "payloads"), LANGCHAIN_CASES)
def test_langchain_astream_gives_what_stream_gives(path: Path, provider: str, variant: str, payloads: Any) -> None:
    body, _, _ = both_clients(path, provider, variant, payloads)
    model = langchain_model(provider, Replay(body))

    helped = outcome(lambda: fsm.reassemble(model.stream("go")))
    assert asyncio.run(aoutcome(lambda: fsm.areassemble(model.astream("go")))) == helped


def _litellm(litellm: Any, client: Any) -> Any:
    return litellm.completion(model="openai/m", messages=ASK["openai-chat"], stream=True, client=client)


async def _alitellm(litellm: Any, client: Any) -> fsm.Result:
    stream = await litellm.acompletion(model="openai/m", messages=ASK["openai-chat"], stream=True, client=client)
    return await fsm.areassemble(stream)


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
def test_litellm_acompletion_gives_what_completion_gives(offline_litellm: Any) -> None:
    if not LITELLM_CASES:
        require_captures()
    for case in LITELLM_CASES:
        _, (_, client), (_, aclient) = both_clients(*case.values)
        done = outcome(partial(fsm.reassemble, _litellm(offline_litellm, client)))
        assert asyncio.run(aoutcome(partial(_alitellm, offline_litellm, aclient))) == done, case.id


# -- an await forgotten ----------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", list(ASK))
def test_an_sdk_call_not_awaited_is_told_to_await_it(provider: str) -> None:
    """The async SDKs' ``create`` and ``generate_content_stream`` return a coroutine: handed over
    without its ``await`` it was refused as "not coroutine" and left for Python to warn, once
    collected, that it was never awaited. fsm now says to await it, and closes it (nothing will run
    it now), so no such warning follows."""
    _, aclient = aclient_for(provider, b"")
    for read, told in ((fsm.areassemble, "$"), (fsm.reassemble, ", then use areassemble$")):
        coroutine = acall(provider, aclient, ASK[provider])
        with pytest.raises(InvalidInput, match=f"not a coroutine: await the SDK call first{told}"):
            asyncio.run(read(coroutine)) if read is fsm.areassemble else read(coroutine)
        assert coroutine.cr_frame is None  # closed: never to be run, never to be warned about


# -- the body in network-sized pieces ----------------------------------------------------------------------


class Pieces(Replay):
    """A replay whose body arrives in pieces of ``size`` bytes, as a network hands it over (the
    plain replay gives it in one): events, lines and UTF-8 characters are parted between reads,
    which the sync and async clients reassemble each with their own reader."""

    size = 3

    def __call__(self, request: Any) -> Any:
        whole = super().__call__(request)
        # one pass, as off a socket: what the SDK reads again after the end (openai drains it) is nothing
        pieces = (self.body[i : i + self.size] for i in range(0, len(self.body), self.size))

        class Stream(self.http.SyncByteStream, self.http.AsyncByteStream):  # type: ignore[name-defined,misc]
            def __iter__(self) -> Iterator[bytes]:
                yield from pieces

            async def __aiter__(self) -> AsyncIterator[bytes]:
                for piece in self:
                    yield piece

        return self.http.Response(200, headers=whole.headers, stream=Stream())


def _first_of_each_provider() -> list[Any]:
    firsts: dict[str, Any] = {}
    for case in CASES:
        if case.values[0] is not None and case.values[2] == "unicode":
            firsts.setdefault(case.values[1], case)
    return list(firsts.values()) or [CASES[0]]


@pytest.mark.parametrize(("path", "provider", "variant", "payloads"), _first_of_each_provider())
def test_a_body_read_in_pieces_gives_what_the_bytes_give(
    path: Path, provider: str, variant: str, payloads: Any
) -> None:
    if path is None:
        require_captures()
    # the emoji member as raw UTF-8, not \u escapes, for its bytes to be parted between reads
    body = cv.render(payloads, provider, ascii_only=False)
    expected = seen(fsm.reassemble(body, provider))
    _, client = client_for(provider, body, Pieces)
    _, aclient = aclient_for(provider, body, Pieces)

    assert seen(send(provider, client, ASK[provider])) == expected
    assert seen(asyncio.run(asend(provider, aclient, ASK[provider]))) == expected
