"""SDK objects take the paths their dumps take (issue 17): an openai ``ChatCompletionChunk`` fed
as it is replays exactly as its dump fed as a dict, the OpenAI chat shortcuts included, and an
object's ``type`` is read without the failed lookup pydantic makes costly, finding what
``getattr(item, "type", None)`` finds."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import Reassembler
from fsm.harness.fuzz.run import sample_vectors
from fsm.wire.decoders.openai_chat import OpenAIChatDecoder
from fsm.wire.sdk import _type_of
from tests.helpers import chunk, replay_traced, tc
from tests.test_conformance import VECTORS
from tests.test_per_call_paths import EDGES

chat_types = pytest.importorskip("openai.types.chat")


def _as_chunks(events: list[Any]) -> list[Any] | None:
    """The events as the openai SDK would hand them over, or None if one is not a chunk it reads."""
    from pydantic import ValidationError

    envelope = {"id": "x", "created": 1, "model": "m", "object": "chat.completion.chunk"}
    try:
        return [chat_types.ChatCompletionChunk.model_validate({**envelope, **e}) for e in events]
    except (ValidationError, TypeError):
        return None


def _streams() -> list[tuple[str, list[Any]]]:
    vectors = [v for v in [*VECTORS, *sample_vectors("openai-chat", 200)] if v.shape == "openai-chat"]
    found = [(v.name, v.events) for v in vectors if v.body is None and all(type(e) is dict for e in v.events)]
    found += list(EDGES.items())
    return [(name, objects) for name, events in found if (objects := _as_chunks(events)) is not None]


def _trace(items: list[Any]) -> object:
    return replay_traced(Reassembler("openai-chat"), lambda r: (r.feed(item) for item in items))


def test_an_sdk_chunk_replays_as_its_dump_does() -> None:
    streams = _streams()
    assert len(streams) > 150  # most vectors are chunks the SDK reads
    for name, objects in streams:
        dumps = [o.model_dump(mode="json", by_alias=True, exclude_unset=True) for o in objects]
        assert _trace(objects) == _trace(dumps), name


def test_sdk_chunks_take_the_shortcuts_dicts_take(monkeypatch: pytest.MonkeyPatch) -> None:
    # A stream of fragments: the decoder sees only what the shortcuts leave, for objects as for dicts.
    wire = [chunk(tc(0, "a", "f", ""))] + [chunk(tc(0, args=p)) for p in ['{"q"', ": ", '"A"', "}"]]
    wire.append(chunk(finish="tool_calls"))
    decoded: list[int] = []
    real = OpenAIChatDecoder.decode

    def counted(self: OpenAIChatDecoder, payload: Any, diagnose: Any) -> Any:
        decoded.append(1)
        return real(self, payload, diagnose)

    monkeypatch.setattr(OpenAIChatDecoder, "decode", counted)
    calls = []
    for items in (wire, _as_chunks(wire)):
        decoded.clear()
        r = Reassembler("openai-chat")
        for item in items or ():
            r.feed(item)
        calls.append([(c.id, c.name, c.arguments) for c in r.close().calls])
        assert decoded == [], "every chunk of this stream is one a shortcut takes"
    assert calls == [[("a", "f", {"q": "A"})]] * 2


class _WithProperty:
    @property
    def type(self) -> str:
        return "chunk"


class _WithClassAttribute:
    type = "content.delta"


class _Bare:
    pass


def test_the_type_of_an_object_is_what_getattr_finds() -> None:
    anthropic = pytest.importorskip("anthropic")
    genai_types = pytest.importorskip("google.genai.types")
    from pydantic import TypeAdapter

    envelope = {"id": "x", "created": 1, "model": "m", "object": "chat.completion.chunk", "choices": []}
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{"}}
    items: list[Any] = [
        chat_types.ChatCompletionChunk.model_validate(envelope),  # no type at all
        chat_types.ChatCompletionChunk.model_validate({**envelope, "type": "text"}),  # an extra field named type
        chat_types.ChatCompletionChunk.model_validate({**envelope, "type": 3}),
        chat_types.ChatCompletionChunk.model_construct(),  # built past validation: no extras at all
        TypeAdapter(anthropic.types.RawMessageStreamEvent).validate_python(delta),  # a type field
        genai_types.GenerateContentResponse.model_validate({"candidates": []}),
        _WithProperty(),
        _WithClassAttribute(),
        _Bare(),
        object(),
    ]
    found = [_type_of(item) for item in items]
    assert found == [getattr(item, "type", None) for item in items]
    assert found[:5] == [None, "text", 3, None, "content_block_delta"]
