"""A stream the caller's side stops part-way: a connection dropped mid-body, a timeout's cancellation.

The error goes up unchanged (it is caught where it always was), and the result so far rides on it:
``fsm.result_so_far(error)`` gives the calls read before it, the cut one truncated with its raw text
(never ``{}``), and ``stream-interrupted`` names the error and the last event read.
``Reassembler.close(interrupted=error)`` gives the same result to a caller driving a Reassembler.

The real SDK clients read each capture through their own HTTP stack (an httpx mock transport whose
body breaks after some events, as a dropped connection does): what ``result_so_far`` gives must be
what the bytes of those events give, closed as interrupted.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

import fsm
from fsm import CallStatus
from fsm.errors import InvalidInput, RemoteProtocolError, ToolcallFSMError
from fsm.harness.captures import PROVIDER_OF_SHAPE
from fsm.serialize import result_to_json
from tests import capture_variants as cv
from tests.conftest import captures
from tests.helpers import chunk, sse, tc
from tests.test_clients import Replay

httpx = pytest.importorskip("httpx")


class Dropped(Exception):
    """What a network library raises when the peer closes the connection mid-body."""


def _two_calls() -> list[dict[str, Any]]:
    return [
        chunk(tc(0, "call_a", "lookup", "")),
        chunk(tc(0, args='{"q": "A"}')),
        chunk(tc(1, "call_b", "lookup", '{"q": "B')),
    ]


def _dropping(items: list[Any], error: BaseException) -> Iterator[Any]:
    yield from items
    raise error


# -- the one-shot API ------------------------------------------------------------------------------


def test_a_dropped_connection_goes_up_unchanged_with_the_result_so_far() -> None:
    error = Dropped("peer closed connection without sending complete message body")
    with pytest.raises(Dropped) as caught:
        fsm.reassemble(_dropping(_two_calls(), error), "openai-chat")
    assert caught.value is error
    result = fsm.result_so_far(caught.value)
    assert result is not None
    first, cut = result.calls
    assert (first.id, first.status, first.arguments) == ("call_a", CallStatus.COMPLETE, {"q": "A"})
    assert (cut.id, cut.status, cut.arguments, cut.arguments_json) == ("call_b", CallStatus.TRUNCATED, None, '{"q": "B')
    codes = [d.code for d in result.diagnostics]
    assert "stream-interrupted" in codes and "no-finish-reason" not in codes
    said = next(d for d in result.diagnostics if d.code == "stream-interrupted")
    assert said.event == 3  # the last event read
    assert "Dropped: peer closed connection" in said.message and "before the finish" in said.message
    truncated = next(d for d in result.diagnostics if d.code == "truncated")
    assert "call_b" in truncated.message and "Dropped" in truncated.message
    assert any("fsm.result_so_far" in note for note in caught.value.__notes__)


def test_the_same_bytes_read_whole_and_through_close_interrupted_agree() -> None:
    body = sse(_two_calls(), done=False)
    error = Dropped("reset")
    with pytest.raises(Dropped):
        fsm.reassemble(_dropping([body[:7], body[7:]], error))
    r = fsm.Reassembler("auto")
    r.feed_bytes(body)
    assert fsm.result_so_far(error) == r.close(interrupted=error)


def test_a_drop_after_the_finish_leaves_the_calls_whole() -> None:
    chunks = [*_two_calls()[:2], chunk(finish="tool_calls")]
    with pytest.raises(Dropped) as caught:
        fsm.reassemble(_dropping(chunks, Dropped("gone before [DONE]")), "openai-chat")
    result = fsm.result_so_far(caught.value)
    assert result is not None and result.finish_reason == "tool_calls"
    assert [c.status for c in result.calls] == [CallStatus.COMPLETE]
    said = [d for d in result.diagnostics if d.code == "stream-interrupted"]
    assert len(said) == 1 and "after the finish" in said[0].message and said[0].event == 3


def test_strict_mode_lets_the_callers_error_go_up_not_a_violation_found_after_it() -> None:
    with pytest.raises(Dropped) as caught:
        fsm.reassemble(_dropping(_two_calls(), Dropped("x")), "openai-chat", strict=True)
    result = fsm.result_so_far(caught.value)
    assert result is not None and result.calls[1].status is CallStatus.TRUNCATED


def test_an_error_of_the_packages_own_keeps_the_result_too_as_stream_failed() -> None:
    with pytest.raises(RemoteProtocolError) as caught:
        fsm.reassemble([*_two_calls(), {"choices": 5}], "openai-chat", strict=True)
    result = fsm.result_so_far(caught.value)
    assert result is not None
    codes = [d.code for d in result.diagnostics]
    assert "stream-failed" in codes and "stream-interrupted" not in codes
    assert [c.status for c in result.calls] == [CallStatus.COMPLETE, CallStatus.TRUNCATED]  # cut at the error


def test_a_strict_violation_found_at_close_keeps_the_whole_result() -> None:
    with pytest.raises(RemoteProtocolError) as caught:  # call_b's text never closed: unterminated-arguments
        fsm.reassemble([*_two_calls(), chunk(finish="tool_calls")], "openai-chat", strict=True)
    result = fsm.result_so_far(caught.value)
    assert result is not None and result.calls[0].arguments == {"q": "A"}
    assert "stream-interrupted" not in [d.code for d in result.diagnostics]


def test_a_keyboard_interrupt_keeps_the_result_and_goes_up() -> None:
    with pytest.raises(KeyboardInterrupt) as caught:
        fsm.reassemble(_dropping(_two_calls(), KeyboardInterrupt()), "openai-chat")
    result = fsm.result_so_far(caught.value)
    assert result is not None and [c.id for c in result.calls] == ["call_a", "call_b"]


def test_a_stream_manager_that_raises_as_it_closes() -> None:
    class Manager:
        def __enter__(self) -> list[dict[str, Any]]:
            return _two_calls()

        def __exit__(self, *exc: Any) -> None:
            raise Dropped("closing the response failed")

    with pytest.raises(Dropped) as caught:
        fsm.reassemble(Manager(), "openai-chat")
    result = fsm.result_so_far(caught.value)
    assert result is not None and len(result.calls) == 2


def test_the_callers_odd_errors() -> None:
    @attrs.frozen
    class Frozen(Exception):
        why: str

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    class NoNotes(Exception):
        __notes__ = "not a list"

    for error in (Frozen("why"), Unprintable(), NoNotes("n"), Dropped("\ud83d" * 1000)):
        with pytest.raises(type(error)) as caught:
            fsm.reassemble(_dropping(_two_calls(), error), "openai-chat")
        assert caught.value is error
        result = fsm.result_so_far(error)
        assert result is not None, type(error)
        said = next(d.message for d in result.diagnostics if d.code == "stream-interrupted")
        assert type(error).__qualname__ in said and len(said) < 600
        json.dumps(result_to_json(result)).encode()  # written as JSON, lone surrogates and all


def test_result_so_far_asks_the_chain_and_nothing_else() -> None:
    assert fsm.result_so_far(ValueError("never through reassemble")) is None
    with pytest.raises(InvalidInput):
        fsm.result_so_far("an error's text")  # type: ignore[arg-type]
    with pytest.raises(Dropped) as caught:
        fsm.reassemble(_dropping(_two_calls(), Dropped("inner")), "openai-chat")
    outer = RuntimeError("the SDK's wrapper")
    outer.__cause__ = caught.value
    assert fsm.result_so_far(outer) is fsm.result_so_far(caught.value)
    looped_a, looped_b = ValueError("a"), ValueError("b")
    looped_a.__context__, looped_b.__context__ = looped_b, looped_a
    assert fsm.result_so_far(looped_a) is None  # a caller's loop of contexts ends


def test_close_interrupted_on_a_reassembler() -> None:
    r = fsm.Reassembler("openai-chat", strict=True)
    for item in _two_calls():
        r.feed(item)
    with pytest.raises(InvalidInput):
        r.close(interrupted="dropped")  # type: ignore[arg-type]
    result = r.close(interrupted=TimeoutError("read timed out"))
    assert [c.status for c in result.calls] == [CallStatus.COMPLETE, CallStatus.TRUNCATED]
    assert any("TimeoutError: read timed out" in d.message for d in result.diagnostics)
    assert r.close() is result and r.close(interrupted=Dropped()) is result  # closed once


def test_the_packages_own_fault_given_as_interrupted_changes_nothing() -> None:
    r = fsm.Reassembler("openai-chat", strict=True)
    r.feed(_two_calls()[0])
    with pytest.raises(RemoteProtocolError) as caught:
        r.feed({"choices": 5})
    result = r.close(interrupted=caught.value)
    assert "stream-interrupted" not in [d.code for d in result.diagnostics]


# -- async: a cancellation ---------------------------------------------------------------------------


async def _hangs_after(items: list[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item
    await asyncio.Event().wait()  # the server sends nothing more
    yield None  # pragma: no cover


def test_a_timeout_keeps_the_calls_read_before_it() -> None:
    async def run() -> BaseException:
        try:
            await asyncio.wait_for(fsm.areassemble(_hangs_after(_two_calls()), "openai-chat"), 0.05)
        except TimeoutError as exc:  # raised over the cancellation of areassemble
            return exc
        raise AssertionError("no timeout")

    error = asyncio.run(run())
    result = fsm.result_so_far(error)
    assert result is not None and result.calls[1].arguments_json == '{"q": "B'
    assert any("CancelledError" in d.message for d in result.diagnostics if d.code == "stream-interrupted")


# -- the real SDK clients, their connection dropped ------------------------------------------------


class DroppedReplay(Replay):
    """A mock server whose connection drops once ``self.body`` (some of a capture's events) is sent,
    the way httpx reports a peer that closed mid-body."""

    def __call__(self, request: Any) -> Any:
        self.sent.append(request.content)
        http, body = self.http, self.body

        class Broken(http.SyncByteStream, http.AsyncByteStream):  # type: ignore[misc,name-defined]
            def __iter__(self) -> Iterator[bytes]:
                yield body
                raise http.RemoteProtocolError("peer closed connection without sending complete message body")

            async def __aiter__(self) -> AsyncIterator[bytes]:
                yield body
                raise http.RemoteProtocolError("peer closed connection without sending complete message body")

        return http.Response(200, headers={"content-type": "text/event-stream"}, stream=Broken())


SDK_PROVIDERS = ("openai-chat", "openai-responses", "anthropic", "gemini")


def _drop_cases() -> list[Any]:
    cases = []
    for path in captures(*[s for s, p in PROVIDER_OF_SHAPE.items() if p in SDK_PROVIDERS]):
        provider = PROVIDER_OF_SHAPE[path.parent.name]
        n = len(cv.events(path))
        for k in sorted({1, n // 3, n // 2, (2 * n) // 3, n - 1} - {0}):
            cases.append(pytest.param(path, provider, k, id=f"{path.parent.name}/{path.stem}@{k}"))
    return cases or [pytest.param(None, "", 0, id="no-captures")]


def _prefix(payloads: list[dict[str, Any]], provider: str, k: int) -> bytes:
    return cv.render(payloads[:k], provider).removesuffix(b"data: [DONE]\n\n")


def _sdk_stream(provider: str, replay: DroppedReplay) -> Any:
    from tests.test_sdk_loop import anthropic_http

    if provider == "anthropic":
        anthropic = pytest.importorskip("anthropic")
        replay.http = anthropic_http()
        client = anthropic.Anthropic(api_key="t", base_url="http://mock", http_client=replay.client(), max_retries=0)
        return client.messages.create(
            model="m", max_tokens=64, messages=[{"role": "user", "content": "go"}], stream=True
        )
    if provider == "gemini":
        genai = pytest.importorskip("google.genai")
        options = genai.types.HttpOptions(base_url="http://mock", httpx_client=replay.client())
        return genai.Client(api_key="t", http_options=options).models.generate_content_stream(model="g", contents="go")
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(api_key="t", base_url="http://mock/v1", http_client=replay.client(), max_retries=0)
    if provider == "openai-responses":
        return client.responses.create(model="m", input="go", stream=True)
    return client.chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}], stream=True)


def _seen(result: fsm.Result) -> tuple[Any, ...]:
    return tuple(
        (c.id, c.name, c.status, c.arguments_json, c.input) for c in (*result.calls, *result.server_tool_calls)
    )


@pytest.mark.parametrize(("path", "provider", "k"), _drop_cases())
def test_a_real_sdk_whose_connection_drops(path: Path | None, provider: str, k: int) -> None:
    if path is None:
        pytest.skip("recorded captures not found (../shared is beside the project in CI)")
    payloads = cv.events(path)
    body = _prefix(payloads, provider, k)
    replay = DroppedReplay(body)
    with pytest.raises(Exception) as caught:  # the SDK's own error, whatever it is
        fsm.reassemble(_sdk_stream(provider, replay))
    assert not isinstance(caught.value, ToolcallFSMError), caught.value
    result = fsm.result_so_far(caught.value)
    assert result is not None, f"no result kept on {caught.value!r}"
    r = fsm.Reassembler(provider)
    r.feed_bytes(body)
    expected = r.close(interrupted=caught.value)
    assert _seen(result) == _seen(expected)
    assert "stream-interrupted" in [d.code for d in result.diagnostics]
    assert all(c.arguments_json != "{}" or c.status is CallStatus.COMPLETE for c in result.calls)


def test_an_async_sdk_whose_connection_drops() -> None:
    openai = pytest.importorskip("openai")
    paths = captures("openai_chat")
    if not paths:
        pytest.skip("recorded captures not found (../shared is beside the project in CI)")
    payloads = cv.events(paths[0])
    body = _prefix(payloads, "openai-chat", len(payloads) // 2)
    replay = DroppedReplay(body)

    async def run() -> BaseException:
        client = openai.AsyncOpenAI(
            api_key="t", base_url="http://mock/v1", http_client=replay.async_client(), max_retries=0
        )
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "go"}], stream=True
        )
        try:
            await fsm.areassemble(stream)
        except Exception as exc:
            return exc
        raise AssertionError("the dropped connection went unseen")

    error = asyncio.run(run())
    assert not isinstance(error, ToolcallFSMError), error  # the SDK's own (httpx's, or its wrapper)
    r = fsm.Reassembler("openai-chat")
    r.feed_bytes(body)
    result = fsm.result_so_far(error)
    assert result is not None and _seen(result) == _seen(r.close(interrupted=error))


def _chat_drop(k_of: int = 2) -> tuple[bytes, DroppedReplay]:
    paths = captures("openai_chat")
    if not paths:
        pytest.skip("recorded captures not found (../shared is beside the project in CI)")
    payloads = cv.events(paths[0])  # two parallel calls
    body = _prefix(payloads, "openai-chat", len(payloads) // k_of)
    return body, DroppedReplay(body)


def _calls(result: fsm.Result) -> list[tuple[Any, ...]]:
    return [(c.id, c.name, c.status, c.arguments_json) for c in result.calls]


def _held_to_the_bytes(error: BaseException, body: bytes) -> None:
    """The result kept on the error an SDK raised is what the bytes it read give, a call cut."""
    assert not isinstance(error, ToolcallFSMError), error
    result = fsm.result_so_far(error)
    r = fsm.Reassembler("openai-chat")
    r.feed_bytes(body)
    assert result is not None and _calls(result) == _calls(r.close(interrupted=error))
    assert any(c.status is CallStatus.TRUNCATED for c in result.calls)


def test_langchain_whose_connection_drops() -> None:
    langchain_openai = pytest.importorskip("langchain_openai")
    body, replay = _chat_drop()
    model = langchain_openai.ChatOpenAI(model="m", api_key="t", base_url="http://mock/v1", http_client=replay.client())
    with pytest.raises(Exception) as caught:
        fsm.reassemble(model.stream("go"))
    _held_to_the_bytes(caught.value, body)


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
def test_litellm_whose_connection_drops(offline_litellm: Any) -> None:
    openai = pytest.importorskip("openai")
    body, replay = _chat_drop()
    client = openai.OpenAI(api_key="t", base_url="http://mock/v1", http_client=replay.client(), max_retries=0)
    stream = offline_litellm.completion(
        model="openai/m", messages=[{"role": "user", "content": "go"}], stream=True, client=client, max_retries=0
    )
    with pytest.raises(Exception) as caught:
        fsm.reassemble(stream)
    _held_to_the_bytes(caught.value, body)


# -- audit 49: what is kept, and on which error -------------------------------------------------------


def test_an_interrupt_landing_while_the_engine_reads_an_event_keeps_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine may be part-way through a change (a slot's state set, its action not run): a result
    closed from there was wrong (a whole call `invalid` with '') or failed inside."""
    fed = fsm.Reassembler.feed

    def feed(self: fsm.Reassembler, item: Any) -> Any:
        if self.registry.slots and len(self.registry.slots) == 2:
            raise KeyboardInterrupt  # as if it landed inside the engine, mid-change
        return fed(self, item)

    monkeypatch.setattr(fsm.Reassembler, "feed", feed)
    with pytest.raises(KeyboardInterrupt) as caught:
        fsm.reassemble([*_two_calls(), chunk(tc(1, args='"}'))], "openai-chat")
    assert fsm.result_so_far(caught.value) is None


def test_an_interrupt_inside_the_last_close_does_not_close_again(monkeypatch: pytest.MonkeyPatch) -> None:
    closes: list[Any] = []
    closed = fsm.Reassembler.close

    def close(self: fsm.Reassembler, **options: Any) -> Any:
        closes.append(options)
        if len(closes) == 1:
            raise KeyboardInterrupt
        return closed(self, **options)

    monkeypatch.setattr(fsm.Reassembler, "close", close)
    with pytest.raises(KeyboardInterrupt) as caught:
        fsm.reassemble(_two_calls(), "openai-chat")
    assert fsm.result_so_far(caught.value) is None and len(closes) == 1


def test_an_earlier_streams_error_in_the_context_is_not_this_ones() -> None:
    """A fallback request made in the first one's ``except`` that fails before any stream: its error's
    ``__context__`` is the first stream's, whose complete calls must not be run as the fallback's."""

    def fallback() -> None:
        raise ConnectionRefusedError("the fallback server is down")

    with pytest.raises(ConnectionRefusedError) as caught:
        try:
            fsm.reassemble(_dropping(_two_calls(), Dropped("first")), "openai-chat")
        except Dropped:
            fallback()
    first = caught.value.__context__
    assert isinstance(first, Dropped) and fsm.result_so_far(first) is not None
    assert fsm.result_so_far(caught.value) is None


def test_an_exception_group_answers_with_its_one_result() -> None:
    async def run(streams: int) -> BaseException:
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(streams):
                    group.create_task(fsm.areassemble(_hangs_then_drops(_two_calls()), "openai-chat"))
                group.create_task(_fails_later())
        except BaseExceptionGroup as caught:
            return caught
        raise AssertionError("no group")

    one = asyncio.run(run(1))
    assert fsm.result_so_far(one) is not None and len(fsm.result_so_far(one).calls) == 2  # type: ignore[union-attr]
    two = asyncio.run(run(2))
    assert fsm.result_so_far(two) is None  # which stream's? ask each member
    assert all(fsm.result_so_far(e) is not None for e in two.exceptions if isinstance(e, Dropped))  # type: ignore[attr-defined]


async def _hangs_then_drops(items: list[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item
    await asyncio.sleep(0)
    raise Dropped("reset")


async def _fails_later() -> None:
    await asyncio.sleep(0.01)
    raise ValueError("another task's own failure")


def test_an_error_whose_class_guards_its_attributes_or_text() -> None:
    class Guarded(Exception):
        def __getattribute__(self, name: str) -> Any:
            if name == "__dict__":
                raise RuntimeError("no dict for you")
            return super().__getattribute__(name)

    class Text(str):
        def __len__(self) -> int:
            raise ValueError("no length")

        def __format__(self, spec: str) -> str:
            raise ValueError("no format")

    class OddText(Exception):
        def __str__(self) -> str:
            return Text("the message")

    for error in (Guarded("g"), OddText()):
        with pytest.raises(type(error)):
            fsm.reassemble(_dropping(_two_calls(), error), "openai-chat")
        result = fsm.result_so_far(error)
        assert result is not None and len(result.calls) == 2, type(error)
    said = [d.message for d in result.diagnostics if d.code == "stream-interrupted"]
    assert len(said) == 1 and "OddText: the message" in said[0]  # quoted as a plain str


def test_an_error_raised_by_two_streams_keeps_the_later_result_and_one_note() -> None:
    error = Dropped("shared")
    for chunks in (_two_calls(), _two_calls()[:1]):
        with pytest.raises(Dropped):
            fsm.reassemble(_dropping(chunks, error), "openai-chat")
    assert len(fsm.result_so_far(error).calls) == 1  # type: ignore[union-attr]
    assert [note for note in error.__notes__ if "toolcall-fsm" in note] == [
        "toolcall-fsm kept the result so far (1 call, 1 cut): fsm.result_so_far(error)"
    ]


def test_a_cut_inside_the_last_event_reads_alike_in_strict_and_lax() -> None:
    body = sse(_two_calls(), done=False)
    cut = body[: len(body) - 10]  # inside call_b's event
    got = []
    for strict in (False, True):
        error = Dropped("mid-event")
        with pytest.raises(Dropped):
            fsm.reassemble(_dropping([cut], error), "openai-chat", strict=strict)
        result = fsm.result_so_far(error)
        assert result is not None
        got.append(([d.code for d in result.diagnostics], [(c.id, c.status) for c in result.calls]))
    assert got[0] == got[1] and "stream-failed" not in got[1][0] and "stream-interrupted" in got[1][0]
