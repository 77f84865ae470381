"""A hostile audit of three changes: LangChain reasoning blocks written as OpenAI chat deltas
(fsm.wire.sdk), a provider's error after the turn finished (Reassembler._finished), and the two
transitions the engine takes without the machine's dispatch (Slot.store_waiting, Slot.store_whole).
What it found is pinned here; what held is tested at the sizes and edges the changes were not."""

from __future__ import annotations

import contextlib
import functools
import json
import operator
from typing import Any

import pytest

import fsm
from fsm import Limits, Reassembler, messages
from fsm.errors import RemoteProtocolError, ToolcallFSMError

core = pytest.importorskip("langchain_core.messages")


# -- LangChain content blocks ----------------------------------------------------------------------


def _reasoning(result: fsm.Result) -> list[tuple[str, str | None, str | None]]:
    return [(r.text, r.signature, r.redacted) for r in result.reasoning]


def test_a_v1_redacted_thinking_block_is_read() -> None:
    # ChatAnthropic with output_version="v1" has no standard type for Claude's redacted_thinking:
    # it keeps the block as Anthropic wrote it, under `non_standard`. It was dropped, so the next
    # turn lacked a block Anthropic requires back unchanged.
    redacted = {"type": "non_standard", "value": {"type": "redacted_thinking", "data": "opaque"}, "index": 1}
    thinking = {"type": "reasoning", "reasoning": "Adding.", "extras": {"signature": "c2ln"}, "index": 0}
    result = fsm.reassemble([core.AIMessageChunk(content=[thinking]), core.AIMessageChunk(content=[redacted])])
    assert _reasoning(result) == [("Adding.", "c2ln", None), ("", None, "opaque")]
    # another provider's non-standard block is not reasoning
    other = {"type": "non_standard", "value": {"type": "citation", "data": "x"}, "index": 2}
    assert fsm.reassemble([core.AIMessageChunk(content=[other])]).reasoning == ()


def test_chat_anthropic_v1_thinking_gives_what_the_bytes_give() -> None:
    # The stream of tests/test_langchain_reasoning.py through ChatAnthropic(output_version="v1"):
    # chunk by chunk or added up, the reasoning the bytes give, redacted block included, and the
    # next turn carries both blocks
    from tests.test_clients import Replay, anthropic_client, anthropic_http
    from tests.test_langchain_reasoning import CLAUDE
    from tests.test_sdk_loop import seen

    langchain_anthropic = pytest.importorskip("langchain_anthropic")
    reference = fsm.reassemble(CLAUDE, "anthropic")  # its blocks carry Claude's content block index
    model = langchain_anthropic.ChatAnthropic(model="claude", api_key="test", max_tokens=64, output_version="v1")
    vars(model)["_client"] = anthropic_client(Replay(CLAUDE, anthropic_http()))
    tools = [{"name": "sum", "description": "sum", "input_schema": {"type": "object"}}]
    chunks = list(model.bind_tools(tools).stream("go"))
    for stream in (chunks, [functools.reduce(operator.add, chunks)]):
        got = fsm.reassemble(stream)
        assert seen(got, usage=False) == seen(reference, usage=False)
        assert _reasoning(got) == _reasoning(reference)
    said = messages.assistant_message(fsm.reassemble(chunks), "anthropic")
    assert [b["type"] for b in said["content"]] == ["thinking", "redacted_thinking", "text", "tool_use"]


class _Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("not text")


@pytest.mark.parametrize("value", [5, {"a": 1}, b"xx", [1, 2], _Unprintable()])
def test_a_text_block_whose_text_is_not_a_str_says_nothing(value: Any) -> None:
    # Its str() was taken as text: 5 said "5", bytes said "b'xx'", a dict its repr, and an object
    # whose str() raises let that error out of feed(). A text that is no str is not read, as the
    # OpenAI chat decoder reads no content that is not a str and as a thinking block's is not.
    block = {"type": "text", "text": value, "index": 0}
    chunk = core.AIMessageChunk(content=[])
    chunk.content = [block, {"type": "text", "text": "ok", "index": 1}]  # past LangChain's own check
    for strict in (False, True):
        result = fsm.reassemble([chunk], strict=strict)
        assert result.text == "ok"


# Hostile blocks, past LangChain's validation (assigned after the chunk is made): only fsm.errors
# types may leave, and none of these is the stream's fault
HOSTILE_BLOCKS: list[Any] = [
    None,
    5,
    [{"type": "thinking", "thinking": "nested"}],
    b"bytes",
    {"type": ["thinking"], "thinking": "x"},
    {"type": None},
    {"type": "thinking", "thinking": 5, "signature": 7, "index": "lc_1"},
    {"type": "thinking", "thinking": "t", "signature": {"a": 1}, "extras": [1], "index": True},
    {"type": "thinking", "thinking": "t", "signature": b"\xff\x00\xfe", "index": -1},
    {"type": "thinking", "thinking": "t", "signature": bytearray(b"\xff"), "index": 10**40},
    {"type": "redacted_thinking", "data": 5},
    {"type": "reasoning", "reasoning": None, "extras": {"signature": 5}},
    {"type": "text", "text": "\ud800", "extras": {"signature": b"\x00\xff"}},
    {"type": "non_standard", "value": None},
    {"type": "non_standard", "value": {"type": "redacted_thinking", "data": None}, "index": "x"},
]


def test_hostile_blocks_leave_only_fsm_errors_and_close() -> None:
    for strict in (False, True):
        for block in HOSTILE_BLOCKS:
            chunk = core.AIMessageChunk(content=[])
            chunk.content = [block, "tail"]
            r = Reassembler(strict=strict)
            with contextlib.suppress(ToolcallFSMError):
                r.feed(chunk)
            result = r.close()
            if strict and block == HOSTILE_BLOCKS[12]:  # a lone surrogate in text is a violation: strict stops there
                assert result.text == "" and result.codes()[0] == "lone-surrogate"
                continue
            assert result.text.endswith("tail"), block


def test_megabytes_and_thousands_of_blocks() -> None:
    big = "t" * (2 << 20)
    blocks = [{"type": "thinking", "thinking": f"{n}", "index": n} for n in range(3000)]
    chunks = [
        core.AIMessageChunk(content=[{"type": "thinking", "thinking": big, "signature": "s" * (1 << 20), "index": 0}]),
        core.AIMessageChunk(content=blocks),
        core.AIMessageChunk(content=[{"type": "text", "text": big, "extras": {"signature": "g" * (1 << 20)}}]),
    ]
    result = fsm.reassemble(chunks)
    assert len(result.reasoning) == 3000  # block 0 of the second chunk is the first one's
    assert result.reasoning[0].text == big + "0" and result.reasoning[0].signature == "s" * (1 << 20)
    assert result.text == big and result.text_signature == "g" * (1 << 20)


def _claude_like(seed: int) -> list[Any]:
    """Chunks as ChatAnthropic and ChatGoogleGenerativeAI yield them: blocks one after another,
    each under its index (a few with none), text as str content too, signatures last."""
    import random

    rng = random.Random(seed)
    chunks = []
    for at in range(rng.randint(1, 5)):
        kind = rng.choice(["thinking", "reasoning", "redacted_thinking", "text", "str"])
        index = {} if rng.random() < 0.15 else {"index": at}
        for piece in range(rng.randint(1, 3)):
            said = "".join(rng.choice("ab\u00e9\U0001f600") for _ in range(rng.randint(1, 4)))
            if kind == "str":
                chunks.append(core.AIMessageChunk(content=said))
            elif kind == "redacted_thinking":
                if not piece:
                    chunks.append(core.AIMessageChunk(content=[{"type": kind, "data": f"D{at}", **index}]))
            else:
                key = "text" if kind == "text" else kind
                chunks.append(core.AIMessageChunk(content=[{"type": kind, key: said, **index}]))
        if kind in ("thinking", "reasoning", "text") and rng.random() < 0.7:
            key = "text" if kind == "text" else kind
            signed = {"signature": f"S{at}"} if kind == "thinking" else {"extras": {"signature": f"S{at}"}}
            chunks.append(core.AIMessageChunk(content=[{"type": kind, key: "", **signed, **index}]))
    chunks.append(core.AIMessageChunk(content="", response_metadata={"finish_reason": "stop"}))
    return chunks


def test_chunks_one_by_one_added_up_or_in_runs_read_alike() -> None:
    import random

    for seed in range(150):
        chunks = _claude_like(seed)
        rng = random.Random(seed)
        runs, at = [], 0
        while at < len(chunks):
            end = rng.randint(at + 1, len(chunks))
            runs.append(functools.reduce(operator.add, chunks[at:end]))
            at = end
        results = [fsm.reassemble(s) for s in (chunks, [functools.reduce(operator.add, chunks)], runs)]
        # (a diagnostic's event names the chunk as fed: summed, the chunks are fewer events)
        said = [[(d.code, d.message, d.severity) for d in r.diagnostics] for r in results]
        seen = [(r.text, r.text_signature, _reasoning(r), s) for r, s in zip(results, said, strict=True)]
        assert seen[0] == seen[1] == seen[2], seed


# -- a provider's error after the turn finished ----------------------------------------------------


def _chat(delta: dict[str, Any], finish: str | None = None, **beside: Any) -> dict[str, Any]:
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **beside,
    }


def _entry(index: int, text: str, head: bool = False) -> dict[str, Any]:
    entry: dict[str, Any] = {"index": index, "function": {"arguments": text}}
    if head:
        entry.update(id=f"call_{index}", type="function")
        entry["function"]["name"] = f"f{index}"
    return {"tool_calls": [entry]}


CALL = [_chat(_entry(0, "", head=True)), _chat(_entry(0, '{"a":')), _chat(_entry(0, " 1}"))]
FINISH = _chat({}, "tool_calls")
MORE = [_chat(_entry(1, "", head=True)), _chat(_entry(1, '{"b": 2'))]


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "code": 500}}


def _sse(payloads: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(p).encode() + b"\n\n" for p in payloads) + b"data: [DONE]\n\n"


def _read(wire: bytes, step: int, strict: bool) -> tuple[Any, ...]:
    r = Reassembler(strict=strict)
    raised = None
    try:
        for at in range(0, len(wire), step):
            r.feed_bytes(wire[at : at + step])
    except ToolcallFSMError as exc:
        raised = (type(exc).__name__, exc.event, str(exc))
    result = r.close()
    calls = [(c.index, c.arguments, c.status) for c in result.calls]
    return raised, calls, result.finish_reason, result.diagnostics, result.suppressed_diagnostics


LATE = {
    # many errors after the finish: kept up to max_diagnostics_per_code, the rest counted
    "many": [*CALL, FINISH, *(_error(f"e{n}") for n in range(150))],
    # an error, then another call's fragments, then an error beside choices
    "then-fragments": [*CALL, FINISH, _error("boom"), *MORE, _chat({}, None, error={"message": "again"})],
    # an error finish, a normal finish, the same error, another
    "error-stop-error": [*CALL, _error("first"), FINISH, _error("first"), _error("second")],
}


@pytest.mark.parametrize("name", list(LATE))
def test_late_errors_read_alike_however_the_bytes_come(name: str) -> None:
    wire = _sse(LATE[name])
    for strict in (False, True):
        whole = _read(wire, len(wire), strict)
        assert _read(wire, 1, strict) == whole == _read(wire, 7, strict)
        raised, calls, finish, diagnostics, suppressed = whole
        assert calls[0] == (0, {"a": 1}, fsm.CallStatus.COMPLETE)  # the finish and its call stand
        assert finish == ("error" if name == "error-stop-error" else "tool_calls")
        if strict:  # raised at the first error, naming its event; close() gave the call all the same
            first = 4 if name == "error-stop-error" else 5
            assert raised is not None and raised[0] == "RemoteProtocolError" and raised[1] == first
            assert [d.code for d in diagnostics] == ["provider-error", "stream-failed"] and len(calls) == 1
            continue
        assert raised is None
        late = [d for d in diagnostics if d.code == "provider-error"]
        if name == "many":
            assert len(late) == 100 and suppressed == {"provider-error": 50}
        elif name == "then-fragments":
            assert [(d.event, d.message.split(" (")[0]) for d in late] == [
                (5, 'the provider reported an error "500": boom'),
                (8, "the provider reported an error: again"),  # (an error that names no kind)
            ]
            assert [d.code for d in diagnostics].count("event-after-finish") == 2
        else:  # the same error again is not reported; the other is
            assert [(d.event, d.message.split(" (")[0]) for d in late] == [
                (4, 'the provider reported an error "500": first'),
                (7, 'the provider reported an error "500": second'),
            ]


def test_a_huge_late_error_still_says_the_turn_had_finished() -> None:
    # The provider's message came before what the diagnostic says of the turn, and the ledger cuts a
    # message at 1000 characters: a long one lost that the finish reason and calls stand, and where
    # the turn finished. The provider's part is cut to leave room for it.
    message = "M" * 5_000_000
    result = fsm.reassemble(_sse([*CALL, FINISH, _error(message)]))
    [said] = [d.message for d in result.diagnostics]
    assert said.startswith('the provider reported an error "500": MMM') and "(5000000 characters)" in said
    assert said.endswith("(after the turn finished at event 4: its finish reason and calls stand)")
    assert len(said) < 1000
    with pytest.raises(RemoteProtocolError, match="after the turn finished at event 4"):
        fsm.reassemble(_sse([*CALL, FINISH, _error(message)]), strict=True)


@pytest.mark.parametrize("strict", [False, True])
def test_replay_of_late_errors_exits_cleanly(strict: bool, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from fsm.cli import main

    path = tmp_path / "late.sse"
    path.write_bytes(_sse(LATE["then-fragments"]))
    code = main(["replay", *(["--strict"] if strict else []), str(path)])
    out, err = capsys.readouterr()
    printed = json.loads(out)  # the result so far, printed either way
    assert printed["calls"][0]["arguments"] == {"a": 1}
    if strict:
        assert code == 1 and "Traceback" not in err
        assert err.strip() == (
            'toolcall-fsm: event 5: provider-error: the provider reported an error "500": boom (after the turn'
            " finished at event 4: its finish reason and calls stand) (rule finish-ends-calls)"
        )
    else:
        assert code == 0 and err == ""


# -- transitions taken without the machine's dispatch ----------------------------------------------


def _fragment(text: str, index: int = 0, head: bool = False) -> dict[str, Any]:
    return _chat(_entry(index, text, head))


def _direct_cases() -> list[tuple[str, list[dict[str, Any]], Limits]]:
    mb = 1 << 20
    opening, closing = '{"q": "', '"}'
    body = "é" * (mb // 4)  # two bytes a character: the character and byte limits part
    grin = "\U0001f600" * 300  # four bytes a character: the scan's estimate is exact
    held = len((opening + body).encode())
    cases = [
        ("1 MB in one fragment", [_fragment(opening, head=True), _fragment("x" * mb), _fragment(closing)], Limits()),
        (
            "many small fragments",
            [_fragment(opening, head=True), *(_fragment("y" * 16) for _ in range(8192)), _fragment(closing)],
            Limits(),
        ),
        (
            "surrogate halves in megabytes",
            [
                _fragment(opening, head=True),
                _fragment("z" * (mb // 2) + "\ud83d"),
                _fragment("\ude42" + "z" * (mb // 2)),
                _fragment("\ud83d"),
                _fragment("\ude42"),
                _fragment("\ude42" + closing),
            ],
            Limits(),
        ),
    ]
    for more in (-1, 0, 1):  # the fragment that reaches a limit exactly, or passes it by one (the
        # value left open: a closing fragment would pass the limit in every case)
        events = [_fragment(opening, head=True), _fragment(body)]
        cases.append((f"chars {more}", events, Limits(max_argument_chars=len(opening) + len(body) + more)))
        cases.append((f"bytes {more}", events, Limits(max_stream_argument_bytes=held + more)))
        twice = [_fragment(opening, head=True), _fragment(grin), _fragment(grin)]
        limit = len((opening + grin + grin).encode()) + more
        cases.append((f"4-byte characters {more}", twice, Limits(max_stream_argument_bytes=limit)))
        # The same text as a call's first (Slot.store_first: the header came alone)
        first = [_fragment("", head=True), _fragment(opening + body)]
        cases.append((f"first text, chars {more}", first, Limits(max_argument_chars=len(opening) + len(body) + more)))
        cases.append((f"first text, bytes {more}", first, Limits(max_stream_argument_bytes=held + more)))
    for depth in (255, 256, 257):  # at the depth limit (256), one by one and all at once
        one_by_one = [_fragment('{"q": ', head=True), *(_fragment("[") for _ in range(depth - 1))]
        one_by_one += [*(_fragment("]") for _ in range(depth - 1)), _fragment("}")]
        cases.append((f"depth {depth} one by one", one_by_one, Limits()))
        at_once = [_fragment('{"q": ' + "[" * (depth - 1), head=True), _fragment("]" * (depth - 1) + "}")]
        cases.append((f"depth {depth} at once", at_once, Limits()))
        first = [_fragment("", head=True), _fragment('{"q": ' + "[" * (depth - 1)), _fragment("]" * (depth - 1) + "}")]
        cases.append((f"depth {depth}, first text", first, Limits()))
    for after in ("", " \n", ' {"r": 2}', "x"):  # a first text that closes the value, and what follows it
        closed = [_fragment("", head=True), _fragment('{"q": [1]}' + after)]
        cases.append((f"closed first text, {after!r}", closed, Limits()))
    # Whole flat objects (what store_whole takes: up to 4096 characters), several calls sharing the
    # byte limit, the last reaching it exactly or passing it by one
    whole = '{"q": "' + "é" * 2000 + '"}'
    size = len(whole.encode())
    for more in (-1, 0, 1):
        calls = [_fragment(whole, index=k, head=True) for k in range(3)]
        cases.append((f"whole calls, bytes {more}", calls, Limits(max_stream_argument_bytes=3 * size + more)))
        cases.append((f"whole call, chars {more}", calls[:1], Limits(max_argument_chars=len(whole) + more)))
    return cases


def test_the_direct_transitions_decide_as_firing_append_at_megabytes(monkeypatch: pytest.MonkeyPatch) -> None:
    # As tests/test_conformance.py::test_transitions_taken_directly_decide_as_firing_append, at the
    # sizes and edges it does not reach: each stream read as dicts and as bytes, with the direct
    # transitions and without them, must show the same transitions in order, outputs, calls,
    # diagnostics, rule counts and what each call holds inside
    from fsm.engine.slot import Slot
    from tests.helpers import replay_traced
    from tests.test_conformance import _slot_state

    def replay(events: list[dict[str, Any]], limits: Limits, wire: bool) -> object:
        r = Reassembler("openai-chat", limits=limits)

        def feed(r: Reassembler) -> Any:
            if wire:
                yield r.feed_bytes(_sse([*events, FINISH]))
                return
            for event in [*events, FINISH]:
                yield r.feed(event)

        return replay_traced(r, feed), [_slot_state(slot) for slot in r.registry.slots]

    cases = _direct_cases()
    took: dict[str, int] = {"store_waiting": 0, "store_whole": 0, "store_first": 0, "closing": 0}
    for method in ("store_waiting", "store_whole", "store_first"):
        real = getattr(Slot, method)

        def counted(slot: Slot, *args: Any, real: Any = real, method: str = method, **how: Any) -> Any:
            taken = real(slot, *args, **how)
            took[method] += bool(taken)
            if method != "store_whole" and str(taken).endswith("->value_closed"):
                took["closing"] += 1  # the value closed: the other transition
            return taken

        monkeypatch.setattr(Slot, method, counted)
    direct = [replay(events, limits, wire) for _, events, limits in cases for wire in (False, True)]
    assert took["store_waiting"] > 8192 and took["store_whole"] > 6 and took["closing"] > 6, took
    assert took["store_first"] > 6, took
    monkeypatch.setattr(Slot, "store_waiting", lambda slot, text, label, closing, scan_now=False: "")
    monkeypatch.setattr(Slot, "store_whole", lambda slot, text, label, dest, closed: False)
    monkeypatch.setattr(Slot, "store_first", lambda slot, text, opening, closing, closed: "")
    general = [replay(events, limits, wire) for _, events, limits in cases for wire in (False, True)]
    names = [f"{name} ({'bytes' if wire else 'dicts'})" for name, _, _ in cases for wire in (False, True)]
    for name, a, b in zip(names, direct, general, strict=True):
        assert a == b, name
    # the edges are reached: each limit is met exactly and refused one past it
    refused = {name for name, outcome in zip(names, direct, strict=True) if outcome[0][0] == "LimitExceeded"}
    edges = ("chars", "bytes", "4-byte characters", "whole calls, bytes", "whole call, chars", "first text, chars")
    for edge in (*edges, "first text, bytes"):
        assert f"{edge} 0 (dicts)" not in refused and f"{edge} -1 (dicts)" in refused, edge
    assert "depth 257 at once (dicts)" in refused and "depth 256 at once (dicts)" not in refused
    assert "depth 257, first text (dicts)" in refused and "depth 256, first text (dicts)" not in refused


EDGE_PIECES = ["", " ", "\n", "{", "}", "[", "]", '"', "a", ":", ",", "1", "é", "\ud83d", "\ude42", "\\", '{"q": "']
EDGE_PIECES += ['"}', "[[", "]]", '{"a": 1}', "x" * 50, "\U0001f600", "\t\t", "null", '{"k": [', "}]"]


def _anthropic(spec: list[tuple[bool, int, str]]) -> list[dict[str, Any]]:
    message = {"id": "m", "type": "message", "role": "assistant", "content": [], "model": "claude"}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
    for head, at, text in spec:
        if head:
            block = {"type": "tool_use", "id": f"toolu_{at}", "name": "f", "input": {}}
            events.append({"type": "content_block_start", "index": at, "content_block": block})
        delta = {"type": "input_json_delta", "partial_json": text}
        events.append({"type": "content_block_delta", "index": at, "delta": delta})
    return [*events, {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 1}}]


def test_the_direct_transitions_decide_as_firing_append_over_edge_fragments(monkeypatch: pytest.MonkeyPatch) -> None:
    # Random streams of edge pieces (surrogate halves, whitespace, brackets, whole objects, empty
    # text, values closed with more after them), one to four calls, under no limit or small limits
    # of each kind: through the OpenAI chat shortcuts and through the general routing (Anthropic),
    # read as events, 7 bytes at a time and all at once (a read of many events: Registry.gather)
    import random

    from fsm.engine.slot import Slot
    from tests.helpers import replay_traced
    from tests.test_conformance import _slot_state

    pieces = [*EDGE_PIECES, '{"a": [', ", 1", "]}", "]} ", ']} {"b": 1}', "}}", "[[[", "]]]", '"q": {"r": [1]}, ']
    streams = []
    for seed in range(240):
        rng = random.Random(seed)
        spec, calls = [], rng.randint(1, 4)
        for at in range(calls):
            spec.append((True, at, rng.choice(["", "", rng.choice(pieces)])))
            for _ in range(rng.randint(0, 16)):
                spec.append((False, rng.choice([at, rng.randrange(calls)]), rng.choice(pieces)))
        limits = rng.choice(
            [
                Limits(),
                Limits(max_argument_chars=rng.randint(1, 60)),
                Limits(max_stream_argument_bytes=rng.randint(1, 120)),
                Limits(max_depth=rng.randint(1, 4)),
            ]
        )
        chat = [_fragment(text, at, head) for head, at, text in spec] + [FINISH]
        streams += [("openai-chat", chat, limits), ("anthropic", _anthropic(spec), limits)]

    def replays() -> list[object]:
        out = []
        for provider, events, limits in streams:
            for cut in (0, 7, -1):  # dicts, 7 bytes a read, all at once
                r = Reassembler(provider, limits=limits)

                def feed(r: Reassembler, events: list[dict[str, Any]] = events, cut: int = cut) -> Any:
                    if not cut:
                        yield from (r.feed(event) for event in events)
                        return
                    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
                    step = cut if cut > 0 else len(body)
                    yield from (r.feed_bytes(body[at : at + step]) for at in range(0, len(body), step))

                out.append((replay_traced(r, feed), [_slot_state(slot) for slot in r.registry.slots]))
        return out

    took: dict[str, int] = {}
    for method in ("store_waiting", "store_first"):
        real = getattr(Slot, method)

        def counted(slot: Slot, *args: Any, real: Any = real, **how: Any) -> Any:
            taken = real(slot, *args, **how)
            took[taken] = took.get(taken, 0) + 1
            return taken

        monkeypatch.setattr(Slot, method, counted)
    direct = replays()
    # each direct transition taken often (a value closed by a scan that ran at once among them)
    for source in ("opened", "accumulating"):
        for label in (f"{source}--append->accumulating", f"{source}--append[value_complete]->value_closed"):
            assert took.get(label, 0) > 20, (label, took)
    monkeypatch.setattr(Slot, "store_waiting", lambda slot, text, label, closing, scan_now=False: "")
    monkeypatch.setattr(Slot, "store_whole", lambda slot, text, label, dest, closed: False)
    monkeypatch.setattr(Slot, "store_first", lambda slot, text, opening, closing, closed: "")
    for at, (a, b) in enumerate(zip(direct, replays(), strict=True)):
        assert a == b, streams[at // 3]
