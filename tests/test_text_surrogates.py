"""The turn's text, reasoning and refusal are Unicode a request can carry (rule text-is-unicode), as
a call's text is: a UTF-16 server that slices strings by code unit sends an emoji's two halves in two
deltas, each a lone surrogate once its JSON is read; joined as they came, the text held two code
points no UTF-8 can carry, and the next request that sent it back (``fsm.messages``) failed inside the
SDK's HTTP client (``UnicodeEncodeError``). The halves are joined now, and a surrogate with no
partner becomes U+FFFD, reported."""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

import pytest

from fsm import ContentDelta, Reassembler, RemoteProtocolError, Result, messages
from fsm.results import Output

EMOJI = "\U0001f600"  # two UTF-16 code units: \ud83d \ude00
HIGH, LOW = "\ud83d", "\ude00"


def chat(**delta: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta}]}


CHAT_END = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}


def text_events(provider: str, pieces: list[str]) -> list[dict[str, Any]]:
    """A turn of text alone, one delta a piece, on each wire's own shape."""
    if provider == "openai-chat":
        return [chat(content=piece) for piece in pieces] + [CHAT_END]
    if provider == "anthropic":
        start = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
        deltas = [
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}
            for piece in pieces
        ]
        ends = [
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
            {"type": "message_stop"},
        ]
        return [{"type": "message_start", "message": {"id": "m", "content": []}}, start, *deltas, *ends]
    if provider == "gemini":
        parts = [{"candidates": [{"content": {"role": "model", "parts": [{"text": piece}]}}]} for piece in pieces]
        return [*parts, {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "STOP"}]}]
    assert provider == "openai-responses"
    added = {"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "msg"}}
    deltas = [
        {"type": "response.output_text.delta", "item_id": "msg", "output_index": 0, "content_index": 0, "delta": piece}
        for piece in pieces
    ]
    done = {"type": "response.completed", "response": {"status": "completed", "output": []}}
    return [added, *deltas, done]


def read(provider: str, events: list[dict[str, Any]], *, strict: bool = False) -> tuple[list[Output], Result]:
    r = Reassembler(provider, strict=strict, content_deltas=True)
    outputs = [output for event in events for output in r.feed(event)]
    result = r.close()
    return outputs + r.drain(), result


def said(outputs: list[Output], kind: str = "text") -> str:
    return "".join(o.text for o in outputs if isinstance(o, ContentDelta) and o.kind == kind)


PROVIDERS = ["openai-chat", "anthropic", "gemini", "openai-responses"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_pair_split_across_two_deltas_is_one_character(provider: str) -> None:
    outputs, result = read(provider, text_events(provider, [f"a{HIGH}", f"{LOW}b"]))
    assert result.text == f"a{EMOJI}b" == said(outputs)
    assert "surrogate-pair-joined" in result.codes() and "lone-surrogate" not in result.codes()
    result.text.encode("utf-8")
    for part in result.text_parts:
        part.text.encode("utf-8")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_lone_surrogate_becomes_u_fffd_and_is_a_violation(provider: str) -> None:
    events = text_events(provider, ["a", f"{LOW}b"])
    outputs, result = read(provider, events)
    assert result.text == "a\ufffdb" == said(outputs)
    (found,) = [d for d in result.diagnostics if d.code == "lone-surrogate"]
    at = next(i for i, event in enumerate(events, 1) if LOW in json.dumps(event, ensure_ascii=False))
    assert "the turn's text" in found.message and found.event == at
    with pytest.raises(RemoteProtocolError) as raised:
        read(provider, events, strict=True)
    assert raised.value.event == found.event


@pytest.mark.parametrize("provider", PROVIDERS)
def test_text_that_ends_in_half_a_pair_ends_in_u_fffd_said_at_the_close(provider: str) -> None:
    events = text_events(provider, ["a", f"b{HIGH}"])
    outputs, result = read(provider, events)
    assert result.text == "ab\ufffd" == said(outputs)
    assert outputs[-1] == ContentDelta("text", "\ufffd")  # from drain(), after close()
    assert "lone-surrogate" in result.codes()


def test_reasoning_and_refusal_are_mended_each_on_its_own() -> None:
    events = [
        chat(reasoning_content=f"think {HIGH}"),
        chat(content=f"say {HIGH}"),
        chat(reasoning_content=f"{LOW} more"),
        chat(content=f"{LOW}!"),
        chat(refusal=f"no {LOW}"),
        CHAT_END,
    ]
    outputs, result = read("openai-chat", events)
    assert result.text == f"say {EMOJI}!" == said(outputs)
    assert [block.text for block in result.reasoning] == [f"think {EMOJI} more"] == [said(outputs, "reasoning")]
    assert result.refusal == "no \ufffd" == said(outputs, "refusal")


def test_without_a_surrogate_nothing_is_reported() -> None:
    _, result = read("openai-chat", text_events("openai-chat", ["caf\u00e9 ", EMOJI, " \u4e2d"]))
    assert result.text == f"caf\u00e9 {EMOJI} \u4e2d" and result.diagnostics == ()


@pytest.mark.parametrize("seed", range(60))
def test_text_cut_at_any_code_unit_reads_back_whole(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = ["a", " ", "\u00e9", "\u4e2d", EMOJI, "\U0001f680", "\U00010348"]
    text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
    units = text.encode("utf-16-le")
    cuts = sorted(rng.sample(range(2, len(units), 2), min(rng.randint(0, 8), len(units) // 2 - 1)))
    bounds = [0, *cuts, len(units)]
    pieces = [units[a:b].decode("utf-16-le", "surrogatepass") for a, b in itertools.pairwise(bounds)]
    provider = PROVIDERS[seed % len(PROVIDERS)]
    events = text_events(provider, [piece for piece in pieces if piece])
    for form in ("dicts", "bytes"):
        if form == "dicts":
            outputs, result = read(provider, events)
        else:  # the wire's JSON escapes each half: json.dumps writes \\ud83d
            r = Reassembler(provider, content_deltas=True)
            body = "".join(f"data: {json.dumps(event)}\n\n" for event in events).encode()
            outputs = [o for at in range(0, len(body), 5) for o in r.feed_bytes(body[at : at + 5])]
            result = r.close()
            outputs += r.drain()
        assert result.text == text == said(outputs)
        assert "lone-surrogate" not in result.codes()


def test_the_next_request_encodes_and_the_openai_client_sends_it() -> None:
    openai = pytest.importorskip("openai")
    httpx = pytest.importorskip("httpx")
    events = [
        chat(content=f"Here {HIGH}"),
        chat(content=f"{LOW}", tool_calls=[{"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}]),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    _, result = read("openai-chat", events)
    sent: list[Any] = []

    def answer(request: Any) -> Any:
        sent.append(json.loads(request.content))
        message = {"role": "assistant", "content": "ok"}
        body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m"}
        return httpx.Response(
            200, json={**body, "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
        )

    client = openai.OpenAI(
        api_key="t", base_url="http://m/v1", http_client=httpx.Client(transport=httpx.MockTransport(answer))
    )
    history = [
        {"role": "user", "content": "go"},
        messages.assistant_message(result, "openai-chat"),
        messages.tool_result(result.calls[0], "done", "openai-chat"),
    ]
    client.chat.completions.create(model="m", messages=history)
    assert sent[0]["messages"][1]["content"] == f"Here {EMOJI}"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_half_a_pair_at_the_end_is_reported_at_its_own_event_however_delivered(provider: str) -> None:
    # Read at close, it was reported at the last event counted, which bytes count one more of
    # ([DONE]) than dicts do: the event that sent the half is the same however the stream came.
    events = text_events(provider, ["a", f"b{HIGH}"])
    at = next(i for i, event in enumerate(events, 1) if HIGH in json.dumps(event, ensure_ascii=False))
    _, from_dicts = read(provider, events)
    r = Reassembler(provider)
    r.feed_bytes("".join(f"data: {json.dumps(event)}\n\n" for event in events).encode() + b"data: [DONE]\n\n")
    from_bytes = r.close()
    for result in (from_dicts, from_bytes):
        (found,) = [d for d in result.diagnostics if d.code == "lone-surrogate"]
        assert found.event == at
    with pytest.raises(RemoteProtocolError) as raised:
        read(provider, events, strict=True)
    assert raised.value.event == at
