"""Gemini calls through langchain-google-genai's ``ChatGoogleGenerativeAI`` (over a mock of its HTTP
transport, on Gemini SSE streams built here from the wire's shape) against the same bytes read by
the Gemini decoder: each call's thought signature, and a call under Gemini's id resent without one.

LangChain keeps a chunk's call signatures in one map by call id
(``additional_kwargs["__gemini_function_call_thought_signatures__"]``): two parts of one event under
one id leave one signature, the last signed part's, and which part it came on is lost. It went on
the first call under that id, which may be another tool's call than the one the bytes sign. And
LangChain gives a call Gemini sent without an id a uuid of its own: one that repeats a call made
under Gemini's id at its own place in the event (the bytes: the same call, by position) was a
second call.
"""

from __future__ import annotations

import base64
import random
import re
from typing import Any

import pytest

import fsm
from tests.test_langchain_reasoning import chat_google, event
from tests.test_langchain_reasoning import sse as gemini_sse

pytest.importorskip("httpx")

MODEL = "gemini-3-flash"
S1 = base64.b64encode(b"first\xfb\xff-sig").decode()
S2 = base64.b64encode(b"second\xfe\xbf-sig").decode()
MADE_UP = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")  # LangChain's uuid4


def part(name: str, call_id: str | None = None, signature: str | None = None, **args: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": args}
    if call_id is not None:
        call["id"] = call_id
    return {"functionCall": call, **({"thoughtSignature": signature} if signature else {})}


def calls_of(result: fsm.Result) -> list[Any]:
    """Each call as both readings must give it; the id where the wire gave one (LangChain gives an
    id-less call a uuid of its own where the bytes give ``call_<n>``)."""
    kept = [c.wire_id is not None and not MADE_UP.fullmatch(c.wire_id) for c in result.calls]
    return [
        (c.id if wire else None, c.name, c.arguments_json, c.status) for c, wire in zip(result.calls, kept, strict=True)
    ]


def read_both(events: list[dict[str, Any]], version: str | None) -> tuple[fsm.Result, fsm.Result]:
    body = gemini_sse(events)
    return fsm.reassemble(body, "gemini"), fsm.reassemble(list(chat_google(body, version).stream("go")))


def unplaced(result: fsm.Result) -> list[str]:
    return [d.message for d in result.diagnostics if d.code == "part-not-reassembled"]


# One event, two tools' calls under one id: LangChain keeps one signature for the id
SHARED_ID = {
    "both-signed": [event(MODEL, [part("look", "c1", S1, city="Oslo"), part("find", "c1", S2, q="x")], "STOP")],
    "second-signed": [event(MODEL, [part("look", "c1", None, city="Oslo"), part("find", "c1", S2, q="x")], "STOP")],
    "first-signed": [event(MODEL, [part("look", "c1", S1, city="Oslo"), part("find", "c1", None, q="x")], "STOP")],
    "after-a-resend": [
        event(MODEL, [part("look", "c1", None, city="Oslo")]),
        event(MODEL, [part("look", "c1", None, city="Oslo"), part("find", "c1", S2, q="x")], "STOP"),
    ],
}


@pytest.mark.parametrize(("name", "version"), [(name, v) for name in SHARED_ID for v in (None, "v1")])
def test_a_signature_langchain_keeps_for_two_calls_under_one_id_goes_on_neither_and_is_reported(
    name: str, version: str | None
) -> None:
    reference, got = read_both(SHARED_ID[name], version)
    assert calls_of(got) == calls_of(reference) and len(got.calls) == 2
    # it went on the first call under the id, another tool's than the bytes sign ("second-signed")
    assert [c.thought_signature for c in got.calls] == [None, None]
    (said,) = unplaced(got)
    assert "call id 'c1', which 2 calls carry" in said and "it goes on none" in said
    assert "part-not-reassembled" not in reference.codes()


# A signature is placed wherever the chunk still says whose it is
OWN_SIGNATURE = {
    "one-id-each": [event(MODEL, [part("look", "c1", S1, city="Oslo"), part("find", "c2", S2, q="x")], "STOP")],
    "two-tools-one-id-two-events": [
        event(MODEL, [part("look", "c1", None, city="Oslo")]),
        event(MODEL, [part("find", "c1", S2, q="x")], "STOP"),
    ],
}


@pytest.mark.parametrize(("name", "version"), [(name, v) for name in OWN_SIGNATURE for v in (None, "v1")])
def test_a_signature_langchain_keeps_for_one_call_is_the_bytes_signature(name: str, version: str | None) -> None:
    reference, got = read_both(OWN_SIGNATURE[name], version)
    assert calls_of(got) == calls_of(reference)
    assert [c.thought_signature for c in got.calls] == [c.thought_signature for c in reference.calls]
    assert any(c.thought_signature for c in got.calls) and not unplaced(got)


# One call sent twice in one event under its id: the signature LangChain keeps is that call's
ONE_CALL_TWICE = {
    "second-signed": ([part("look", "c1", None, city="Oslo"), part("look", "c1", S2, city="Oslo")], S2),
    # the bytes keep the first signature a call gets; LangChain kept the last
    "both-signed": ([part("look", "c1", S1, city="Oslo"), part("look", "c1", S2, city="Oslo")], S2),
}


@pytest.mark.parametrize(("name", "version"), [(name, v) for name in ONE_CALL_TWICE for v in (None, "v1")])
def test_a_signature_langchain_keeps_for_two_parts_of_one_call_stays_on_it_and_is_reported(
    name: str, version: str | None
) -> None:
    parts, kept = ONE_CALL_TWICE[name]
    reference, got = read_both([event(MODEL, parts, "STOP")], version)
    assert calls_of(got) == calls_of(reference) and len(got.calls) == 1
    assert got.calls[0].thought_signature == kept and reference.calls[0].thought_signature in (kept, S1)
    (said,) = unplaced(got)
    assert "call id 'c1', which 2 parts of one call carry" in said


# A call under Gemini's id, then a part without an id: the bytes place it by its position in the event
RESENT_WITHOUT_ID = {
    "resent": [
        event(MODEL, [part("look", "c1", S1, city="Oslo")]),
        event(MODEL, [part("look", None, None, city="Oslo")], "STOP"),
    ],
    "resent-signed": [
        event(MODEL, [part("look", "c1", None, city="Oslo")]),
        event(MODEL, [part("look", None, S2, city="Oslo")], "STOP"),
    ],
    "resent-twice": [
        event(MODEL, [part("look", "c1", None, city="Oslo")]),
        event(MODEL, [part("look", None, None, city="Oslo")]),
        event(MODEL, [part("roll"), part("look", None, None, city="Oslo")], "STOP"),
    ],
    "batch-resent": [
        event(MODEL, [part("look", "c1", None, city="Oslo"), part("look", "c2", None, city="Rome")]),
        event(MODEL, [part("look", None, None, city="Oslo"), part("look", None, None, city="Rome")], "STOP"),
    ],
    "another-tools-call-under-the-id": [
        event(MODEL, [part("look", "c1", None, city="Oslo")]),
        event(MODEL, [part("find", "c1", None, city="Oslo")]),
        event(MODEL, [part("find", None, None, city="Oslo")], "STOP"),
    ],
    "resent-after-its-arguments-changed": [
        event(MODEL, [part("look", "c1", None, city="Oslo")]),
        event(MODEL, [part("look", "c1", None, city="Rome")]),
        event(MODEL, [part("look", None, None, city="Rome")], "STOP"),
    ],
    # the first like it resends the call without an id seen at its place, the second is at the id's
    "beside-one-like-it": [
        event(MODEL, [part("look", None, None, city="Oslo"), part("look", "c1", None, city="Oslo")]),
        event(MODEL, [part("look", None, None, city="Oslo"), part("look", None, None, city="Oslo")], "STOP"),
    ],
    # what the bytes read as calls of their own
    "changed": [
        event(MODEL, [part("look", "c1", None, city="Oslo")]),
        event(MODEL, [part("look", None, None, city="Rome")], "STOP"),
    ],
    "as-it-was-before-a-change": [
        event(MODEL, [part("look", "c1", None, city="Oslo")]),
        event(MODEL, [part("look", "c1", None, city="Rome")]),
        event(MODEL, [part("look", None, None, city="Oslo")], "STOP"),
    ],
    "another-tool": [
        event(MODEL, [part("look", "c1", None, city="Oslo")]),
        event(MODEL, [part("find", None, None, city="Oslo")], "STOP"),
    ],
    "at-another-place": [
        event(MODEL, [part("roll"), part("look", "c1", None, city="Oslo")]),
        event(MODEL, [part("look", None, None, city="Oslo")], "STOP"),
    ],
    "twice-in-the-next-event": [
        event(MODEL, [part("look", "c1", None, city="Oslo")]),
        event(MODEL, [part("look", None, None, city="Oslo"), part("look", None, None, city="Oslo")], "STOP"),
    ],
}


@pytest.mark.parametrize(("name", "version"), [(name, v) for name in RESENT_WITHOUT_ID for v in (None, "v1")])
def test_a_gemini_call_resent_without_its_id_through_langchain_is_the_bytes_call(
    name: str, version: str | None
) -> None:
    reference, got = read_both(RESENT_WITHOUT_ID[name], version)
    assert calls_of(got) == calls_of(reference)
    assert [c.thought_signature for c in got.calls] == [c.thought_signature for c in reference.calls]
    assert got.codes().count("resend") == reference.codes().count("resend")
    assert [c for c in got.codes() if c != "synthesized-id"] == [c for c in reference.codes() if c != "synthesized-id"]


def _random_stream(rng: random.Random) -> list[dict[str, Any]]:
    events = []
    for n in range(rng.randint(1, 4)):
        parts = [
            part(
                rng.choice(("look", "find")),
                rng.choice(("c1", "c2", None)),
                rng.choice((None, None, S1, S2)),
                **({"city": rng.choice(("Oslo", "Rome"))} if rng.random() < 0.8 else {}),
            )
            for _ in range(rng.randint(1, 3))
        ]
        events.append(event(MODEL, parts, "STOP" if n == 3 else None))
    events[-1]["candidates"][0]["finishReason"] = "STOP"
    return events


def differential(seeds: range) -> tuple[list[int], int]:
    """The seeds of random streams whose LangChain reading is not the bytes' (another call, id, name,
    argument text or status, or a signature other than the bytes' on a call without a report of
    it), and how many streams differ only in a signature LangChain's map lost, reported."""
    differ, reported = [], 0
    for seed in seeds:
        reference, got = read_both(_random_stream(random.Random(seed)), None)
        if calls_of(got) != calls_of(reference):
            differ.append(seed)
            continue
        lost = {
            r.wire_id
            for g, r in zip(got.calls, reference.calls, strict=True)
            if g.thought_signature != r.thought_signature
        }
        said = " ".join(unplaced(got))
        if any(f"call id {wire_id!r}" not in said for wire_id in lost):
            differ.append(seed)
        reported += bool(lost)
    return differ, reported


def test_random_gemini_streams_through_langchain_give_the_bytes_calls_and_signatures() -> None:
    differ, reported = differential(range(150))
    assert differ == [] and reported < 50
