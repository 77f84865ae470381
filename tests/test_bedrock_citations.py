"""Bedrock ConverseStream citations: each ``contentBlockDelta.delta.citation`` (botocore's
``CitationsDelta``: ``title``, ``source``, ``sourceContent``, ``location``) is a citation of its text
block's part, whole and in order, and the ``"bedrock"`` next turn sends a cited block back as the
``citationsContent`` block (``content`` and ``citations``) botocore's ``bedrock-runtime`` model has
for a message's content. A citation no text block takes is reported at its event, not kept.

STREAM is of this project's making, in the shape of a grounded Nova answer (text blocks, the cited
ones followed by their citations), then a client call."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

import fsm
from fsm import history, messages
from fsm.results import TextPart
from tests.test_bedrock_invoke import from_bytes, pieces
from tests.test_bedrock_server_tools import FORMS, _fed
from tests.test_sdk_loop import converse_client

WEB = {
    "title": "Oslo weather",
    "source": "https://weather.example/oslo",
    "sourceContent": [{"text": "Oslo, 3 C, light snow."}],
    "location": {"web": {"url": "https://weather.example/oslo", "domain": "weather.example"}},
}
DOC = {"title": "almanac", "location": {"documentChar": {"documentIndex": 0, "start": 4, "end": 19}}}
CALL_ID = "tooluse_cite1"
ASK = [{"role": "user", "content": [{"text": "How cold is Oslo?"}]}]


def _delta(at: int | None, delta: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"delta": delta, "p": "pad"}
    if at is not None:
        body["contentBlockIndex"] = at
    return {"contentBlockDelta": body}


EVENTS: list[dict[str, Any]] = [
    {"messageStart": {"role": "assistant"}},
    _delta(0, {"text": "Today "}),
    {"contentBlockStop": {"contentBlockIndex": 0}},
    _delta(1, {"text": "Oslo is "}),
    _delta(1, {"text": "at 3 C"}),
    _delta(1, {"citation": WEB}),
    _delta(1, {"citation": DOC}),
    {"contentBlockStop": {"contentBlockIndex": 1}},
    _delta(2, {"text": "."}),
    {"contentBlockStop": {"contentBlockIndex": 2}},
    {"contentBlockStart": {"contentBlockIndex": 3, "start": {"toolUse": {"toolUseId": CALL_ID, "name": "report"}}}},
    _delta(3, {"toolUse": {"input": '{"c": 3}'}}),
    {"contentBlockStop": {"contentBlockIndex": 3}},
    {"messageStop": {"stopReason": "tool_use"}},
]
SENT_BACK = [
    {"text": "Today "},
    {"citationsContent": {"content": [{"text": "Oslo is at 3 C"}], "citations": [WEB, DOC]}},
    {"text": "."},
    {"toolUse": {"toolUseId": CALL_ID, "name": "report", "input": {"c": 3}}},
]


def _binary(events: list[dict[str, Any]]) -> bytes:
    from tests.test_litellm_bedrock import converse_stream

    return converse_stream([next(iter(event.items())) for event in events])


def _parts(result: fsm.Result) -> list[tuple[str, tuple[dict[str, Any], ...]]]:
    assert all(part.output_index is None for part in result.text_parts)  # its text goes before its calls
    return [(part.text, part.citations) for part in result.text_parts]


@pytest.mark.parametrize("form", FORMS)
def test_each_citation_goes_on_its_text_block_whole_and_in_order(form: str) -> None:
    pytest.importorskip("botocore")
    result = _fed(EVENTS, form)
    assert result.codes() == [] and result.text == "Today Oslo is at 3 C."
    assert _parts(result) == [("Today ", ()), ("Oslo is at 3 C", (WEB, DOC)), (".", ())]
    assert messages.assistant_message(result, "bedrock") == {"role": "assistant", "content": SENT_BACK}


@pytest.mark.parametrize("size", [1, 7, 64, 4093])
def test_the_binary_stream_read_in_pieces_gives_the_same_citations(size: int) -> None:
    pytest.importorskip("botocore")
    result = from_bytes(pieces(_binary(EVENTS), size), "bedrock")
    assert result.codes() == []
    assert _parts(result) == _parts(fsm.reassemble(EVENTS, "bedrock"))
    assert messages.assistant_message(result, "bedrock")["content"] == SENT_BACK


def test_boto3_reads_the_citations_and_sends_the_cited_block_back() -> None:
    client = converse_client(_binary(EVENTS))
    sent: list[dict[str, Any]] = []
    client.meta.events.register(
        "request-created.bedrock-runtime.ConverseStream", lambda request, **_: sent.append(json.loads(request.body))
    )
    result = fsm.reassemble(client.converse_stream(modelId="m", messages=ASK)["stream"])
    assert result.codes() == [] and _parts(result)[1] == ("Oslo is at 3 C", (WEB, DOC))
    answers = [messages.tool_result(call, {"ok": True}, "bedrock") for call in result.calls]
    turn = [*ASK, messages.assistant_message(result, "bedrock"), *messages.tool_results(answers, "bedrock")]
    client.converse_stream(modelId="m", messages=turn)  # botocore checks every block against its model
    assert sent[-1]["messages"][1]["content"] == SENT_BACK
    # fsm.history reads the cited turn as one whose call is answered.
    assert history.check(turn).findings == ()
    assert history.repair(turn) == (turn, [])


def test_a_turn_without_citations_still_sends_its_text_as_one_block() -> None:
    plain = [event for event in EVENTS if "citation" not in event.get("contentBlockDelta", {}).get("delta", {})]
    result = fsm.reassemble(plain, "bedrock")
    assert [part.citations for part in result.text_parts] == [(), (), ()]
    assert messages.assistant_message(result, "bedrock")["content"] == [{"text": "Today Oslo is at 3 C."}, SENT_BACK[3]]


def test_text_that_came_in_no_block_sends_all_the_text_once_with_every_citation() -> None:
    events = [*EVENTS[:2], _delta(None, {"text": "(so) "}), *EVENTS[2:]]
    result = fsm.reassemble(events, "bedrock")
    assert result.text == "Today (so) Oslo is at 3 C."
    cited = {"citationsContent": {"content": [{"text": result.text}], "citations": [WEB, DOC]}}
    assert messages.assistant_message(result, "bedrock")["content"] == [cited, SENT_BACK[3]]


# -- A citation no text block takes ---------------------------------------------------------------------------------

REASONING = {"reasoningContent": {"text": "Look it up.", "signature": "sig"}}
SERVER_RESULT = {"toolUseId": "srv1", "type": "nova_grounding_result", "status": "success"}


def _stray(opening: list[dict[str, Any]], at: int | None) -> list[dict[str, Any]]:
    """A stream whose block 5 is ``opening``, with a citation delta for block ``at`` after it."""
    return [
        {"messageStart": {"role": "assistant"}},
        _delta(4, {"text": "Cold."}),
        {"contentBlockStop": {"contentBlockIndex": 4}},
        *opening,
        _delta(at, {"citation": WEB}),
        {"contentBlockStop": {"contentBlockIndex": 5}},
        {"messageStop": {"stopReason": "end_turn"}},
    ]


STRAYS = {
    "no index": ([], None, "a citation that has no contentBlockIndex"),
    "tool block": (
        [
            {"contentBlockStart": {"contentBlockIndex": 5, "start": {"toolUse": {"toolUseId": "c9", "name": "f"}}}},
            _delta(5, {"toolUse": {"input": "{}"}}),
        ],
        5,
        "a citation that is in block 5, which is no text block",
    ),
    "server result block": (
        [{"contentBlockStart": {"contentBlockIndex": 5, "start": {"toolResult": SERVER_RESULT}}}],
        5,
        "a citation that is in block 5, which is no text block",
    ),
    "reasoning block": ([_delta(5, REASONING)], 5, "a citation that is in block 5, which is no text block"),
}


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("case", list(STRAYS))
def test_a_citation_no_text_block_takes_stays_reported_at_its_event(case: str, form: str) -> None:
    pytest.importorskip("botocore")
    opening, at, says = STRAYS[case]
    events = _stray(opening, at)
    result = _fed(events, form)
    where = next(
        n for n, event in enumerate(events, 1) if "citation" in event.get("contentBlockDelta", {}).get("delta", {})
    )
    told = [(d.event, d.code, d.message) for d in result.diagnostics if d.code != "finish-reason-mapped"]
    assert told == [  # (the tool block's call ends an end_turn stream: finish-reason-mapped, as ever)
        (where, "part-not-reassembled", f"{says}: it cites no text and is not kept")
    ]
    assert _parts(result) == [("Cold.", ())]
    sent = messages.assistant_message(result, "bedrock")["content"]
    assert {"text": "Cold."} in sent and not any("citationsContent" in block for block in sent)


@pytest.mark.parametrize("stopped", [True, False])
def test_the_citations_of_a_block_that_ended_with_no_text_are_reported_and_do_not_go_back(stopped: bool) -> None:
    events = [
        {"messageStart": {"role": "assistant"}},
        _delta(0, {"citation": WEB}),
        *([{"contentBlockStop": {"contentBlockIndex": 0}}] if stopped else []),
        _delta(1, {"text": "Cold."}),
        {"contentBlockStop": {"contentBlockIndex": 1}},
        {"messageStop": {"stopReason": "end_turn"}},
    ]
    result = fsm.reassemble(events, "bedrock")
    end = 3 if stopped else 5  # the block's stop, or the message's for a block that never stopped
    assert [(d.event, d.code, d.message) for d in result.diagnostics] == [
        (end, "part-not-reassembled", "block 0 ended with citations and no text: they go back on no text")
    ]
    assert _parts(result) == [("", (WEB,)), ("Cold.", ())]  # kept on its part, as it came
    assert messages.assistant_message(result, "bedrock")["content"] == [{"text": "Cold."}]


def test_a_citation_before_its_blocks_text_goes_on_that_text() -> None:
    events = [_delta(0, {"citation": DOC}), _delta(0, {"text": "Snow."}), {"messageStop": {"stopReason": "end_turn"}}]
    result = fsm.reassemble(events, "bedrock")
    assert (result.codes(), _parts(result)) == ([], [("Snow.", (DOC,))])


def test_the_citations_round_trip_for_random_turns() -> None:
    pytest.importorskip("botocore")
    rng = random.Random(20261203)
    for _ in range(60):
        blocks: list[tuple[str, list[dict[str, Any]]]] = []
        events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
        for at in range(rng.randint(1, 5)):
            said = "".join(rng.choice("ab cd.") for _ in range(rng.randint(1, 12)))
            cites = [{"title": f"t{at}.{k}", "sourceContent": [{"text": said[:3]}]} for k in range(rng.randint(0, 3))]
            cuts = (
                sorted(rng.sample(range(1, len(said)), min(len(said) - 1, rng.randint(0, 3)))) if len(said) > 1 else []
            )
            deltas = [{"text": said[i:j]} for i, j in zip([0, *cuts], [*cuts, len(said)], strict=True)]
            spots = sorted(rng.randint(1, len(deltas)) for _ in cites)  # each after some text, in order
            for k, spot in reversed(list(enumerate(spots))):
                deltas.insert(spot, {"citation": cites[k]})
            events += [_delta(at, delta) for delta in deltas] + [{"contentBlockStop": {"contentBlockIndex": at}}]
            blocks.append((said, cites))
        events.append({"messageStop": {"stopReason": "end_turn"}})
        for result in (fsm.reassemble(events, "bedrock"), fsm.reassemble(_binary(events), "bedrock")):
            assert result.codes() == []
            assert [TextPart(t, citations=tuple(c)) for t, c in blocks] == [
                TextPart(p.text, citations=p.citations) for p in result.text_parts
            ]
            sent = messages.assistant_message(result, "bedrock")["content"]
            if any(c for _, c in blocks):
                expected = [
                    {"citationsContent": {"content": [{"text": t}], "citations": c}} if c else {"text": t}
                    for t, c in blocks
                ]
            else:
                expected = [{"text": "".join(t for t, _ in blocks)}]
            assert sent == expected


# -- Another wire's citations, another format's message ------------------------------------------------------------


def test_claudes_citations_do_not_go_to_converse_nor_converses_to_claude() -> None:
    # A Converse Citation has no type and Claude's has one: neither API takes the other's, so a turn
    # sent in the other's format goes with its text and without them.
    claude_cited = {"type": "char_location", "cited_text": "3 C", "document_index": 0}
    events = [
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": claude_cited}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "3 C."}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
        {"type": "message_stop"},
    ]
    claude = fsm.reassemble(events, "anthropic")
    assert [part.citations for part in claude.text_parts] == [(claude_cited,)]
    assert messages.assistant_message(claude, "bedrock")["content"] == [{"text": "3 C."}]
    converse = fsm.reassemble(EVENTS, "bedrock")
    blocks = messages.assistant_message(converse, "anthropic")["content"]
    assert "citations" not in json.dumps(blocks) and "Oslo is at 3 C" in json.dumps(blocks)
