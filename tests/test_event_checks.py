"""Events a caller builds are checked against their declared field types before anything is taken
in: a wrong value is refused with InvalidInput naming the event and the field, and the stream goes
on as if the event had not come (before the check, a tuple index could land in a lane of the
positional fallback, and a list index or a non-str text raised TypeError from feed or close)."""

# mypy: disable-error-code="arg-type"
from __future__ import annotations

from typing import Any

import attrs
import pytest

from fsm import Reassembler
from fsm.errors import InvalidInput
from fsm.events import (
    EVENT_TYPES,
    ArgumentsFragment,
    ArgumentsSnapshot,
    CallEnd,
    CallRef,
    CallSeen,
    CompactionBlock,
    ContainerReport,
    HeldPiece,
    ProviderFields,
    ReasoningDelta,
    ServerResultBlock,
    StreamEnd,
    TextDelta,
    UsageReport,
    event_fault,
)
from fsm.wire.decoders import make_decoder
from tests.test_conformance import VECTORS

WRONG: list[tuple[Any, str]] = [
    (ArgumentsFragment(CallRef(("position", 0)), '{"a": 1}'), "CallRef.index is tuple"),
    (ArgumentsFragment(CallRef([0]), "{}"), "CallRef.index is list"),
    (ArgumentsFragment(CallRef(True), "{}"), "CallRef.index is bool"),
    (ArgumentsFragment(CallRef(0), b"{}"), "ArgumentsFragment.text is bytes"),
    (ArgumentsSnapshot(CallRef(0), None), "ArgumentsSnapshot.text is NoneType"),
    (CallSeen(CallRef(0, 5, "f")), "CallRef.id is int"),
    (CallSeen(CallRef(0, "a", ["f"])), "CallRef.name is list"),
    (CallSeen(CallRef(0, "a", "f", position="1")), "CallRef.position is str"),
    (CallSeen(CallRef(0, "a", "f"), item=[1]), "CallSeen.item is list"),
    (CallSeen({"index": 0}), "CallSeen.ref is dict"),
    (CallEnd(CallRef(0), incomplete="no"), "CallEnd.incomplete is str"),
    (TextDelta(5), "TextDelta.text is int"),
    (ReasoningDelta(None, summary=("a", 1)), "ReasoningDelta.summary is tuple"),
    (UsageReport([1]), "UsageReport.usage is list"),
    (StreamEnd(1), "StreamEnd.finish_reason is int"),
]


@pytest.mark.parametrize(("event", "named"), WRONG, ids=[named for _, named in WRONG])
def test_a_wrong_field_is_refused_naming_it_and_the_stream_goes_on(event: Any, named: str) -> None:
    r = Reassembler("openai-chat")
    r.feed(CallSeen(CallRef(0, "a", "f")))
    with pytest.raises(InvalidInput, match=rf"^event 2: {named} \("):
        r.feed(event)
    r.feed(ArgumentsFragment(CallRef(0), '{"n": 1}'))
    r.feed(StreamEnd("tool_calls"))
    result = r.close()
    assert [(c.id, c.arguments, c.status.value) for c in result.calls] == [("a", {"n": 1}, "complete")]
    assert result.text == "" and result.codes() == []


def test_every_event_type_field_has_a_check() -> None:
    """Each field of each event type is tested against its annotation (the check reads them all)."""
    for cls in (*EVENT_TYPES, CallRef):
        for field in attrs.fields(cls):
            good = getattr(_an_instance(cls), field.name)
            assert event_fault(attrs.evolve(_an_instance(cls), **{field.name: good})) is None
            assert event_fault(attrs.evolve(_an_instance(cls), **{field.name: object()})) is not None, (cls, field)


def _an_instance(cls: type) -> Any:
    return {
        CallRef: CallRef(0, "a", "f"),
        CallSeen: CallSeen(CallRef(0, "a", "f"), "sig", {"type": "x"}),
        ArgumentsFragment: ArgumentsFragment(CallRef(0), "{", "sig"),
        ArgumentsSnapshot: ArgumentsSnapshot(CallRef(0), "{}", "sig", True),
        CallEnd: CallEnd(CallRef(0), True),
        StreamEnd: StreamEnd("stop", "stop", "boom"),
        TextDelta: TextDelta("hi", "sig"),
        ReasoningDelta: ReasoningDelta(0, "hm", "sig", "red", "item", ("s",), "enc"),
        UsageReport: UsageReport({"in": 1}, True),
        ServerResultBlock: ServerResultBlock({"type": "web_search_tool_result"}, 2),
        HeldPiece: HeldPiece(3, 2, True),
        ContainerReport: ContainerReport({"id": "container_1"}),
        CompactionBlock: CompactionBlock({"type": "compaction"}, 0),
        ProviderFields: ProviderFields({"phase": "commentary"}),
    }[cls]


def test_every_event_a_decoder_makes_passes_the_check() -> None:
    """A caller who feeds the decoders' own events (a trace, a replay) is never refused: over every
    conformance vector and fuzzed streams of every shape, each event each decoder makes has its
    declared field types."""
    from fsm.harness.fuzz.run import sample_vectors
    from fsm.harness.fuzz.shapes import CASES

    checked = 0
    for vector in [*VECTORS, *(v for shape in CASES for v in sample_vectors(shape, 50))]:
        decoder = make_decoder(vector.shape)
        for payload in vector.events:
            if type(payload) is not dict:
                continue
            try:
                events = decoder.decode(payload, lambda code, message: None)
            except Exception:  # a vector of a malformed event: the decoder refuses it, no event made
                continue
            for event in events:
                assert event_fault(event) is None, (vector.name, event)
                checked += 1
    assert checked > 3000


class _BadChunk:
    """A LangChain chunk as no LangChain makes it (its tool_call_chunks are no list)."""

    type = "AIMessageChunk"
    content = ""
    tool_call_chunks = "no list"


@pytest.mark.parametrize("refused", [WRONG[0][0], object(), _BadChunk()], ids=["event", "object", "sdk-object"])
def test_a_refused_event_is_not_counted_so_later_events_keep_their_numbers(refused: Any) -> None:
    """The diagnostics after a refused event name the same events as the stream without it (the
    refused one was counted before: every later event's number was one too many)."""

    def fed(with_refused: bool) -> list[tuple[int | None, str]]:
        r = Reassembler("openai-chat")
        r.feed(CallSeen(CallRef(0, "a", "f")))
        if with_refused:
            with pytest.raises(InvalidInput):
                r.feed(refused)
        r.feed(ArgumentsFragment(CallRef(0), '{"n": 1}'))
        r.feed(ArgumentsFragment(CallRef(0), "}"))  # past the value's close: reported at its event
        r.feed(StreamEnd("length"))
        return [(d.event, d.code) for d in r.close().diagnostics]

    assert fed(True) == fed(False)
    assert [event for event, _ in fed(True)][:1] == [3]
