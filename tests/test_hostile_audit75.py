"""Hostile audit 75: a gateway's concurrency. Thousands of streams in one process, in threads, in
asyncio tasks or interleaved in one thread, must each give what they give alone; what the process
shares (the compiled specs, the machines, the caches of refs, classes and checks) must be safe to
share.

What was found: the shared cache of bare refs kept a ref under an index of a caller's own int
class, and a later stream of plain dicts found it equal to its own index and took it, so that
stream ran the first caller's ``__eq__`` (and was stopped by what it raised, blamed on an object it
never fed); and one Reassembler fed from two threads at once read their bytes into one another and
lost argument text without a word. An index of the caller's own class is kept out of the cache now,
and a second call while one is at work (another thread's, or a call back) is refused with
LocalProtocolError, nothing taken in (policy one-call-at-a-time).

The differential run of this audit (every capture, vector and a few hundred fuzzed streams, lax,
strict and under tight limits, in 8 to 32 threads from a cold start, 200 streams interleaved in one
thread, asyncio tasks through the SDKs' async clients, forks mid-stream) gave byte-identical
outputs; the checks below are its fast, deterministic part.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import pickle
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import fsm
from fsm.errors import LocalProtocolError
from fsm.harness.captures import PROVIDER_OF_SHAPE
from tests.concurrent_streams import read, steps
from tests.conftest import captures, require_captures

ROOT = Path(__file__).resolve().parent.parent
TIGHT = [{}, {"max_argument_chars": 7}, {"max_calls": 1}, {"max_diagnostics_per_code": 1}, {"max_event_bytes": 64}]


def _streams() -> list[tuple[str, str, bytes, bool, dict[str, int]]]:
    """A capture of each wire (the first of each provider's folders), lax, strict and under each
    tight limit in turn: what one gateway process reads side by side."""
    chosen: dict[str, Path] = {}
    for path in captures():
        provider = PROVIDER_OF_SHAPE[path.parent.name]
        if provider not in chosen and not path.name.endswith(".decoded.jsonl"):
            chosen[provider] = path
    streams = []
    for n, (provider, path) in enumerate(sorted(chosen.items())):
        body = path.read_bytes()
        for k, limits in enumerate(TIGHT):
            name = f"{path.name}#{k}"
            streams.append((name, provider, body, (n + k) % 2 == 1, limits))
    return streams


def _alone() -> dict[str, str]:
    return {stream[0]: read(*stream) for stream in _streams()}


_THREADED = """
import json, sys, threading
sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
from tests.concurrent_streams import read
streams = [(name, provider, bytes.fromhex(body), *rest) for name, provider, body, *rest in json.load(sys.stdin)]
threads = 8
start = threading.Barrier(threads)
got = {}
def work(k):
    start.wait()  # every thread imports fsm and meets its lazy initialisations at once
    for stream in streams[k::threads]:
        got[stream[0]] = read(*stream)
workers = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
for worker in workers:
    worker.start()
for worker in workers:
    worker.join()
assert "fsm" not in sys.modules or len(got) == len(streams), sorted(got)
json.dump(got, sys.stdout)
"""


def test_streams_in_threads_from_a_cold_start_give_what_each_gives_alone() -> None:
    require_captures()
    streams = _streams()
    given = json.dumps([(name, p, body.hex(), strict, limits) for name, p, body, strict, limits in streams])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _THREADED], input=given, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == _alone()


def test_streams_interleaved_in_one_thread_give_what_each_gives_alone() -> None:
    require_captures()
    running = {stream[0]: steps(*stream) for stream in _streams()}
    got: dict[str, str] = {}
    while running:  # one piece of each stream in turn
        for name, stream in list(running.items()):
            said = next(stream)
            if said is not None:
                got[name] = said
                del running[name]
    assert got == _alone()


def test_streams_in_asyncio_tasks_give_what_each_gives_alone() -> None:
    require_captures()

    async def task(stream: tuple[str, str, bytes, bool, dict[str, int]]) -> tuple[str, str]:
        for said in steps(*stream):
            if said is not None:
                return stream[0], said
            await asyncio.sleep(0)  # the other tasks read a piece of theirs
        raise AssertionError("no answer")

    async def every() -> list[tuple[str, str]]:
        return await asyncio.gather(*(task(stream) for stream in _streams()))

    assert dict(asyncio.run(every())) == _alone()


def test_the_sdks_async_clients_read_alike_side_by_side() -> None:
    # openai's AsyncOpenAI over a mock transport that streams a capture a few bytes at a time,
    # awaiting between them: twelve streams at once read what one reads alone
    httpx = pytest.importorskip("httpx")
    openai = pytest.importorskip("openai")
    require_captures()
    bodies = [path.read_bytes() for path in captures("openai_chat", "openai_responses")]

    def client(body: bytes) -> Any:
        async def pieces() -> Any:
            for at in range(0, len(body), 5):
                yield body[at : at + 5]
                await asyncio.sleep(0)

        def answer(request: Any) -> Any:
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=pieces())

        http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
        return openai.AsyncOpenAI(api_key="test", base_url="http://mock/v1", http_client=http)

    async def one(body: bytes, strict: bool) -> Any:
        responses = b"response." in body
        sdk = client(body)
        if responses:
            stream = await sdk.responses.create(model="m", input="go", stream=True)
        else:
            stream = await sdk.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "go"}], stream=True
            )
        result = await fsm.areassemble(stream, strict=strict)
        return fsm.messages.assistant_message(result, "openai-responses" if responses else "openai-chat"), result

    cases = [(body, k % 2 == 1) for k in range(2) for body in bodies]

    async def alone() -> list[Any]:
        return [await one(body, strict) for body, strict in cases]

    async def together() -> list[Any]:
        return await asyncio.gather(*(one(body, strict) for body, strict in cases))

    assert asyncio.run(together()) == asyncio.run(alone())


# -- the shared cache of bare refs ----------------------------------------------------------------------


class _Tagged(int):
    """An index of the caller's own class, whose comparison starts raising once its caller is done."""

    done = False

    def __eq__(self, other: object) -> bool:
        if _Tagged.done:
            raise RuntimeError("the tags are gone")
        return int(self) == other

    __hash__ = int.__hash__


def _two_entries(provider: str, index: Any) -> dict[str, Any]:
    if provider == "cohere":
        function = {"name": None, "arguments": "{}"}
        delta = {"message": {"tool_calls": {"id": None, "function": function}}}
        return {"type": "tool-call-delta", "index": index, "delta": delta}
    entries = [{"index": index, "function": {"arguments": "{}"}}, {"index": 9, "function": {"arguments": "{}"}}]
    return {"choices": [{"index": 0, "delta": {"tool_calls": entries}}]}


@pytest.mark.parametrize("provider", ["openai-chat", "cohere"])
def test_an_index_of_one_callers_own_class_reaches_no_other_stream(provider: str) -> None:
    # the ref kept under _Tagged(3) was found equal to a later stream's plain 3 and taken: that
    # stream, fed plain dicts, ran _Tagged.__eq__ and was stopped by an InvalidInput naming _Tagged
    _Tagged.done = False
    first = fsm.Reassembler(provider)
    first.feed(_two_entries(provider, _Tagged(3)))
    first.close()
    _Tagged.done = True
    try:
        later = fsm.Reassembler(provider)
        later.feed(_two_entries(provider, 3))
        result = later.close()
    finally:
        _Tagged.done = False
    assert result.calls and all(call.arguments_json == "{}" for call in result.calls)
    assert "stream-failed" not in [d.code for d in result.diagnostics]
    alone = fsm.Reassembler(provider)
    alone.feed(_two_entries(provider, 3))
    assert alone.close() == result


def test_an_index_of_the_callers_own_class_still_reads_as_its_value() -> None:
    r = fsm.Reassembler("openai-chat")
    r.feed(_two_entries("openai-chat", _Tagged(3)))
    result = r.close()
    plain = fsm.Reassembler("openai-chat")
    plain.feed(_two_entries("openai-chat", 3))
    assert result == plain.close()


# -- one Reassembler, two callers at once (policy one-call-at-a-time) --------------------------------


class _Held:
    """An SDK object whose dump waits until it is let go: the event it stands for is being read
    while another thread calls the same reassembler."""

    def __init__(self, payload: dict[str, Any]) -> None:
        self.payload = payload
        self.reading = threading.Event()
        self.go = threading.Event()

    def model_dump(self, **_: Any) -> dict[str, Any]:
        self.reading.set()
        assert self.go.wait(30)
        return self.payload


_HEADER = {
    "choices": [
        {"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c0", "function": {"name": "f", "arguments": ""}}]}}
    ]
}


def _fragment(index: int, text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, "function": {"arguments": text}}]}}]}


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda r: r.feed(_fragment(0, '"b": 2}')), id="feed"),
        pytest.param(lambda r: r.feed_bytes(b"data: {}\n\n"), id="feed_bytes"),
        pytest.param(lambda r: r.close(), id="close"),
        pytest.param(copy.deepcopy, id="deepcopy"),
        pytest.param(lambda r: pickle.dumps(r), id="pickle"),
    ],
)
def test_a_call_from_another_thread_while_one_reads_is_refused_and_takes_nothing_in(call: Any) -> None:
    r = fsm.Reassembler("openai-chat")
    r.feed(_HEADER)
    held = _Held(_fragment(0, '{"a": 1, '))
    reader = threading.Thread(target=r.feed, args=(held,))
    reader.start()
    try:
        assert held.reading.wait(30)
        with pytest.raises(LocalProtocolError, match=r"this reassembler is reading an event \(another thread's call"):
            call(r)
    finally:
        held.go.set()
        reader.join()
    r.feed(_fragment(0, '"b": 2}'))  # the stream goes on as if the refused call had not been made
    r.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    result = r.close()
    assert [(c.id, c.arguments, c.status.value) for c in result.calls] == [("c0", {"a": 1, "b": 2}, "complete")]
    assert result.diagnostics == ()


@pytest.mark.parametrize("as_bytes", [False, True], ids=["dicts", "bytes"])
def test_two_threads_that_feed_one_reassembler_and_retry_when_refused_get_the_serial_result(as_bytes: bool) -> None:
    # each thread the fragments of its own call, so any serial order gives one result; fed at once
    # as bytes, the framer's buffer took both threads' bytes into one another, and the calls came
    # out truncated or invalid with text lost, nothing raised
    sys_interval = sys.getswitchinterval()
    wanted = {k: json.dumps({"v": [f"{k}-{i}" for i in range(300)]}) for k in (0, 1)}
    r = fsm.Reassembler("openai-chat")
    for k in (0, 1):
        header = {"index": k, "id": f"c{k}", "function": {"name": "f", "arguments": ""}}
        r.feed({"choices": [{"index": 0, "delta": {"tool_calls": [header]}}]})
    refused: list[str] = []

    def feed(k: int) -> None:
        text = wanted[k]
        for at in range(0, len(text), 3):
            event = _fragment(k, text[at : at + 3])
            while True:
                try:
                    if as_bytes:
                        r.feed_bytes(b"data: " + json.dumps(event).encode() + b"\n\n")
                    else:
                        r.feed(event)
                    break
                except LocalProtocolError as exc:
                    refused.append(str(exc))

    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=feed, args=(k,)) for k in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(sys_interval)
    result = r.close()
    assert [(c.id, c.arguments_json, c.status.value) for c in result.calls] == [
        ("c0", wanted[0], "complete"),
        ("c1", wanted[1], "complete"),
    ]
    assert {refusal.split(":")[0] for refusal in refused} <= {
        "this reassembler is reading an event (another thread's call, or an object of the caller's own fed to it"
        " calling it back)"
    }


def test_an_object_in_a_fed_dict_that_feeds_the_stream_back_is_refused_too() -> None:
    # before, only an SDK object's methods were watched: an int subclass's __eq__ in a fed dict (an
    # index, compared with the lane of that index) fed the stream, whose inner event was read
    # inside the outer one
    r = fsm.Reassembler("openai-chat")
    r.feed(_HEADER)
    refused: list[str] = []

    class CallsBack(int):
        def __eq__(self, other: object) -> bool:
            try:
                r.feed(_fragment(0, "7}"))
            except LocalProtocolError as exc:
                refused.append(str(exc))
            return int(self) == other

        __hash__ = int.__hash__

    entries = [{"index": CallsBack(0), "function": {"arguments": '{"a": 1}'}}, {"index": 5, "function": {"name": "g"}}]
    r.feed({"choices": [{"index": 0, "delta": {"tool_calls": entries}}]})
    result = r.close()
    assert refused and all(said.startswith("this reassembler is reading an event") for said in refused)
    assert result.calls[0].arguments == {"a": 1}
