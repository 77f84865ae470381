"""Task 84: through LangChain's ``ChatOpenAI(use_responses_api=True)``, a Responses reasoning item's
pieces come out as the bytes' do, in the same order, for every output version.

The task was asked on the word that the Responses decoder streams each summary part's text as it
comes while the LangChain path holds the item to its end. It does not: the decoder makes no event of
``response.reasoning_summary_text.delta`` (fsm/wire/decoders/_responses_talk.py) and gives the item
whole, id, summary and encrypted content, at its ``output_item.done``; fsm/wire/langchain_reasoning.py
gives it whole once it has ended, which is where the bytes give it. These tests hold the two paths
to each other, so a change to when one gives a summary must change the other: what a
``Reassembler(content_deltas=True)`` hands out of the turn's content (``ContentDelta``,
``ReasoningData``), in order, and the final ``Result.reasoning``.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

import fsm
from fsm.results import ContentDelta, ReasoningData
from tests.conftest import CAPTURES, require_captures
from tests.test_langchain_responses_reasoning import call, chunks, message, reasoning, stream

pytest.importorskip("langchain_openai")

Said = list[ContentDelta | ReasoningData]

STREAMS = {
    "two-parts-two-items": stream(
        reasoning(0, "**Weather**\n\nPart one.", "Part two."), call(1, "Oslo"), reasoning(2, "B one.", "B two.")
    ),
    "text-between-items": stream(reasoning(0, "A1.", "A2."), message(1, "Hi."), reasoning(2, "B1."), call(3, "Bergen")),
    # store=true: no encrypted content, so no LangChain piece marks an item's end
    "no-encrypted-content": stream(
        reasoning(0, "A1.", "A2.", encrypted=False), call(1, "Oslo"), reasoning(2, "B1.", "B2.", encrypted=False)
    ),
    "cut-after-the-items": stream(reasoning(0, "A1.", "A2."), call(1, "Oslo"), reasoning(2, "B1."), ended=False),
}
VERSIONS = [None, "responses/v1", "v1", "v0"]


def said(items: list[Any], provider: str = "auto") -> tuple[Said, fsm.Result]:
    """What the turn's content came out as while the stream ran, in order, and the result."""
    r = fsm.Reassembler(provider, content_deltas=True)
    out: Said = []
    for item in items:
        out += [o for o in r.feed(item) if isinstance(o, ContentDelta | ReasoningData)]
    return out, r.close()


def wire(body: bytes) -> tuple[Said, fsm.Result]:
    events = [json.loads(line[6:]) for line in body.decode().split("\n") if line.startswith("data: ")]
    return said(events, "openai-responses")


def v0_loss(out: Said, result: fsm.Result) -> tuple[Said, tuple[fsm.Reasoning, ...]]:
    """What v0 keeps: the id of the turn's first reasoning item only (test_v0_keeps_one_reasoning_item)."""
    first = result.reasoning[0].item_id if result.reasoning else None
    out = [o if type(o) is not ReasoningData or o.item_id == first else _no_id(o) for o in out]
    kept = tuple(r if r.item_id == first else _no_id(r) for r in result.reasoning)
    return out, kept


def _no_id(piece: Any) -> Any:
    return attrs.evolve(piece, item_id=None)


@pytest.mark.parametrize("output_version", VERSIONS)
@pytest.mark.parametrize("name", list(STREAMS))
def test_the_reasoning_comes_out_as_the_bytes_do_in_order(name: str, output_version: str | None) -> None:
    body = STREAMS[name]
    expected, reference = wire(body)
    assert any(type(o) is ReasoningData and len(o.summary) >= 1 for o in expected)  # what is tested is there
    got, result = said(chunks(body, output_version))
    kept = reference.reasoning
    if output_version == "v0":
        expected, kept = v0_loss(expected, reference)
    assert got == expected
    assert result.reasoning == kept


def test_a_summary_delta_makes_no_output_on_the_wire_path_either() -> None:
    """The bytes give a summary whole at its item's end: each summary part's text is in the one
    ReasoningData the item's ``output_item.done`` gives, and no summary delta gives anything."""
    body = STREAMS["two-parts-two-items"]
    events = [json.loads(line[6:]) for line in body.decode().split("\n") if line.startswith("data: ")]
    r = fsm.Reassembler("openai-responses", content_deltas=True)
    given = {}
    for event in events:
        out = [o for o in r.feed(event) if isinstance(o, ContentDelta | ReasoningData)]
        if event["type"].startswith("response.reasoning_summary"):
            assert out == []
        elif out:
            given[(event["type"], event.get("output_index"))] = [o.summary for o in out]
    assert given == {
        ("response.output_item.done", 0): [("**Weather**\n\nPart one.", "Part two.")],
        ("response.output_item.done", 2): [("B one.", "B two.")],
    }


@pytest.mark.parametrize("output_version", VERSIONS)
def test_the_lm_studio_capture_gives_the_item_and_text_as_the_bytes_do(output_version: str | None) -> None:
    """The one Responses capture with reasoning (LM Studio, raw ``reasoning_text``): langchain-openai
    has no branch for ``response.reasoning_text.delta`` and drops that text, so the LangChain path
    gives the item (its id) without it; the text and the item's place are the bytes'."""
    require_captures()
    capture = CAPTURES / "openai_responses/vercel-lmstudio-glm-done-without-deltas.jsonl"
    events = [json.loads(line) for line in capture.read_text().splitlines() if line.strip()]
    body = b"".join(b"event: " + e["type"].encode() + b"\ndata: " + json.dumps(e).encode() + b"\n\n" for e in events)
    expected, reference = said(events, "openai-responses")
    got, result = said(chunks(body, output_version))
    assert reference.reasoning[0].text and not result.reasoning[0].text  # what LangChain drops
    unreasoned = [o for o in expected if not (type(o) is ContentDelta and o.kind == "reasoning")]
    assert got == unreasoned  # the item, then the text: the bytes' order
    assert [(r.item_id, r.summary, r.encrypted_content, r.output_index) for r in result.reasoning] == [
        (r.item_id, r.summary, r.encrypted_content, r.output_index) for r in reference.reasoning
    ]
    assert result.text == reference.text
