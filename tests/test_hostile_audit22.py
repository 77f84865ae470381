"""Hostile audit 22: the fast paths (issue 17) against the general paths they skip, fed the same
streams as dicts, as bytes whole and in pieces, and as SDK objects, with hostile values where the
shortcuts look.

Each test failed before its fix. Work is counted, not timed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any

import pytest

from fsm import CallStatus, Reassembler
from fsm.errors import InvalidInput
from fsm.wire.decoders.bedrock import BedrockDecoder
from fsm.wire.decoders.openai_chat import OpenAIChatDecoder
from tests.helpers import replay_traced


def traced(shape: str, items: list[Any], *, as_bytes: bool = False, **options: Any) -> object:
    """Everything a replay shows (tests.helpers.replay_traced), the outputs of a piece that raised too."""

    def feed(r: Reassembler) -> Iterator[list[Any]]:
        try:
            if as_bytes:
                yield r.feed_bytes(b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in items))
            else:
                yield from (r.feed(item) for item in items)
        except Exception:
            yield r.drain()
            raise

    return replay_traced(Reassembler(shape, **options), feed)


def _chat_general(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every OpenAI chat chunk through the decoder."""
    monkeypatch.setattr(OpenAIChatDecoder, "shortcut", lambda self, *args: False)
    monkeypatch.setattr(OpenAIChatDecoder, "ending", lambda self, *args: False)
    monkeypatch.setattr("fsm.reassembler.lean_fragment_in", lambda payload: None)


# -- OpenAI chat: a text chunk the decoder refuses -------------------------------------------------------------------


def _said(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


REFUSED_TEXT = {
    "a refusal of no text": [_said({"content": "hi"}), _said({"refusal": ["no"]})],
    "a refusal of no text in the last chunk": [_said({"refusal": {"why": "no"}}, "stop")],
    "a text signature of no text": [_said({"extra_content": {"google": {"thought_signature": []}}})],
    "a text signature of no text beside the finish": [
        _said({"content": "x", "extra_content": {"google": {"thought_signature": {}}}}, "stop")
    ],
}


@pytest.mark.parametrize("as_bytes", [False, True])
@pytest.mark.parametrize("name", sorted(REFUSED_TEXT))
def test_a_text_chunk_the_decoder_refuses_fails_as_the_decoder_says(
    name: str, as_bytes: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The text chunk's shortcut (said_in, and finish_in for the last chunk) raised the decoder's
    # error without the rule the decoder's path names: "event 2: delta.refusal is list, not a
    # string" where the decoder says "... (rule openai-chat)".
    events = REFUSED_TEXT[name]
    fast = traced("openai-chat", events, as_bytes=as_bytes)
    assert isinstance(fast, tuple) and fast[0] == "RemoteProtocolError" and fast[1].endswith("(rule openai-chat)")
    _chat_general(monkeypatch)
    assert fast == traced("openai-chat", events, as_bytes=as_bytes)


# -- Bedrock: a tool input delta that holds more ---------------------------------------------------------------------


def _converse(extra: dict[str, Any]) -> list[dict[str, Any]]:
    start = {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "tu_0", "name": "f"}}}
    pieces = [{"toolUse": {"input": '{"a": '}}, {"toolUse": {"input": "1}"}, **extra}]
    return [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": start},
        *({"contentBlockDelta": {"contentBlockIndex": 0, "delta": delta}} for delta in pieces),
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "tool_use"}},
    ]


@pytest.mark.parametrize("extra", [{"citation": {"title": "t"}}, {"toolResult": {"content": []}}, {"text": "x"}])
@pytest.mark.parametrize("as_bytes", [False, True])
def test_a_converse_tool_delta_holding_more_is_read_as_the_decoder_reads_it(
    extra: dict[str, Any], as_bytes: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The shortcut took the input and dropped what stood beside it without a word, where the
    # decoder reports it (part-not-reassembled): the diagnostic depended on the path taken.
    events = _converse(extra)
    fast = traced("bedrock", events, as_bytes=as_bytes)
    monkeypatch.setattr(BedrockDecoder, "commonest_fragment", lambda self, payload: None)
    general = traced("bedrock", events, as_bytes=as_bytes)
    assert fast == general
    codes = Reassembler("bedrock")
    for event in events:
        codes.feed(event)
    found = codes.close().codes()
    assert found == ([] if "text" in extra else ["part-not-reassembled"])


# -- SDK objects: a model whose dump leaves a field out, or writes it its own way ------------------------------------


def _dump(item: Any) -> Any:
    """What fsm.wire.sdk.as_mapping asks of pydantic (plain_dump stands in for it)."""
    return item.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude={"snapshot"}, warnings=False)


def test_a_plain_dump_leaves_out_what_the_dump_leaves_out() -> None:
    # anthropic's stream helper yields text blocks whose parsed_output is excluded from their dump:
    # plain_dump wrote it all the same, and a field with a serializer of its own as it was held
    anthropic = pytest.importorskip("anthropic")
    ParsedContentBlockStopEvent = pytest.importorskip("anthropic.lib.streaming._types").ParsedContentBlockStopEvent
    ParsedTextBlock = pytest.importorskip("anthropic.types.parsed_message").ParsedTextBlock
    from pydantic import Field, PlainSerializer

    from fsm.wire.sdk import plain_dump

    class Noted(anthropic.types.RawContentBlockStopEvent):
        note: Annotated[str, PlainSerializer(lambda value: value.upper())] = ""
        hidden: str = Field(default="", exclude=True)
        maybe: Annotated[str, PlainSerializer(lambda value: value.upper())] | None = None

    block = ParsedTextBlock(type="text", text="hi", parsed_output=None)
    items = [
        block,
        ParsedContentBlockStopEvent(type="content_block_stop", index=0, content_block=block),
        Noted(type="content_block_stop", index=0, note="a"),
        Noted(type="content_block_stop", index=0, hidden="b"),
        Noted(type="content_block_stop", index=0, maybe="c"),
    ]
    for item in items:
        lean = plain_dump(item)
        assert lean is None or lean == _dump(item), item


def test_an_sdk_chat_chunk_whose_dump_leaves_its_choices_out_is_read_as_its_dump() -> None:
    # a chunk class of the caller's that keeps its choices out of its dump: the lean reader took
    # the call's fragment from them where the dump, a chunk of no choices, holds nothing to read
    chat_types = pytest.importorskip("openai.types.chat")
    kinds = pytest.importorskip("openai.types.chat.chat_completion_chunk")
    from pydantic import Field

    class Hidden(chat_types.ChatCompletionChunk):
        choices: list[kinds.Choice] = Field(default_factory=list, exclude=True)

    envelope = {"id": "x", "created": 1, "model": "m", "object": "chat.completion.chunk"}
    head = {"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": ""}}
    fragment = {"index": 0, "function": {"arguments": '{"a": 1}'}}
    chunks = [
        Hidden.model_validate({**envelope, "choices": [{"index": 0, "delta": {"tool_calls": [entry]}}]})
        for entry in (head, fragment)
    ]
    assert traced("openai-chat", chunks) == traced("openai-chat", [_dump(c) for c in chunks])


def test_an_sdk_object_that_looks_its_type_up_its_own_way_is_read_as_getattr_finds_it() -> None:
    # _type_of read a pydantic model's type from its fields and extras alone, and the lean chat
    # reader took its call: a class of the caller's whose own __getattr__ or __getattribute__
    # finds a type ("content.delta", a stream helper's event that repeats the raw ones) was read
    # as a chunk, where getattr(item, "type", None), which sdk_payload promises, skips it
    chat_types = pytest.importorskip("openai.types.chat")
    from fsm.wire.sdk import _type_of

    class Missing(chat_types.ChatCompletionChunk):
        def __getattr__(self, name: str) -> Any:
            return "content.delta" if name == "type" else super().__getattr__(name)  # type: ignore[misc]

    class Found(chat_types.ChatCompletionChunk):
        def __getattribute__(self, name: str) -> Any:
            return "content.delta" if name == "type" else super().__getattribute__(name)

    envelope = {"id": "x", "created": 1, "model": "m", "object": "chat.completion.chunk"}
    head = {"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": ""}}
    opened = chat_types.ChatCompletionChunk.model_validate(
        {**envelope, "choices": [{"index": 0, "delta": {"tool_calls": [head]}}]}
    )
    fragment = {"index": 0, "function": {"arguments": '{"a": 1}'}}
    for cls in (Missing, Found):
        derived = cls.model_validate({**envelope, "choices": [{"index": 0, "delta": {"tool_calls": [fragment]}}]})
        assert _type_of(derived) == getattr(derived, "type", None) == "content.delta"
        r = Reassembler("openai-chat")
        assert r.feed(opened) and r.feed(derived) == []  # skipped, as a stream helper's derived event
        result = r.close()
        assert (result.calls[0].arguments_json, result.calls[0].status.value) == ("", "truncated"), cls


def _groq_stream() -> list[Any]:
    groq_chat = pytest.importorskip("groq.types.chat")
    envelope = {"id": "x", "created": 1, "model": "m", "object": "chat.completion.chunk"}
    head = {"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": ""}}
    deltas = [
        {"role": "assistant", "tool_calls": [head]},
        *({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]} for piece in ('{"a"', ": 1}")),
        {"tool_calls": [{"index": 1, "id": "d", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
    ]
    chunks = [{"choices": [{"index": 0, "delta": delta, "finish_reason": None}]} for delta in deltas]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return [groq_chat.ChatCompletionChunk.model_validate({**envelope, **c}) for c in chunks]


@pytest.mark.parametrize("strict", [False, True])
def test_groq_sdk_chunks_are_read_as_their_dumps(strict: bool) -> None:
    # groq's ChoiceDelta has no refusal field: the lean chat reader asked for it, and every chunk
    # that opens a call raised AttributeError out of feed(), lax or strict
    chunks = _groq_stream()
    fed = traced("openai-chat", chunks, strict=strict)
    assert fed == traced("openai-chat", [_dump(c) for c in chunks], strict=strict)
    result = fed[0]
    assert [(c.id, c.name, c.arguments) for c in result.calls] == [("c", "f", {"a": 1}), ("d", "g", {})]  # type: ignore[index]


def test_a_chat_chunk_of_classes_lacking_the_usual_fields_is_read_as_its_dump() -> None:
    from pydantic import BaseModel, ConfigDict

    class Function(BaseModel):
        name: str | None = None
        arguments: str | None = None

    class Entry(BaseModel):
        index: int
        id: str | None = None
        function: Function | None = None

    class Delta(BaseModel):  # no content, refusal or role
        tool_calls: list[Entry] | None = None

    class Choice(BaseModel):  # no finish_reason
        index: int
        delta: Delta

    class Chunk(BaseModel):
        model_config = ConfigDict(extra="allow")
        choices: list[Choice]
        usage: dict[str, Any] | None = None

    def made(entry: dict[str, Any]) -> Chunk:
        return Chunk.model_validate({"choices": [{"index": 0, "delta": {"tool_calls": [entry]}}]})

    chunks = [made({"index": 0, "id": "c", "function": {"name": "f", "arguments": ""}})]
    chunks.append(made({"index": 0, "function": {"arguments": "{}"}}))
    assert traced("openai-chat", chunks) == traced("openai-chat", [_dump(c) for c in chunks])


@pytest.mark.parametrize("shortcuts", [True, False])
def test_an_sdk_model_built_without_its_init_is_refused_as_input(
    shortcuts: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # cls.__new__(cls) holds no fields set and no extras: _type_of, the lean chat reader and
    # plain_dump raised AttributeError out of feed(), and so did model_dump behind them
    chat_types = pytest.importorskip("openai.types.chat")
    anthropic = pytest.importorskip("anthropic")
    import fsm.reassembler
    import fsm.wire.sdk

    if not shortcuts:
        monkeypatch.setattr(fsm.wire.sdk, "take_chat_chunk", lambda *args: False)
        monkeypatch.setattr(fsm.wire.sdk, "plain_dump", lambda item, depth=4: None)
        monkeypatch.setattr(fsm.wire.sdk, "_type_of", lambda item: getattr(item, "type", None))
    opened = {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f"}}]}}]}
    for shape, cls in (
        ("openai-chat", chat_types.ChatCompletionChunk),
        ("anthropic", anthropic.types.RawContentBlockDeltaEvent),
    ):
        r = Reassembler(shape)
        if shape == "openai-chat":
            r.feed(opened)
        with pytest.raises(InvalidInput, match="cannot feed a"):
            r.feed(cls.__new__(cls))
        if shape == "openai-chat":  # the stream went on
            r.feed(
                {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}}]}
            )
            assert [(c.name, c.arguments) for c in r.close().calls] == [("f", {})]


# -- fragments held back over a read (Registry.hold): a text whose first character is not ASCII ---------------------


def _read_one_event_at_a_time(n: int, first: str) -> tuple[int, object]:
    """OpenAI chat bytes of one call, its text begun by ``first`` and grown by n fragments, fed
    one event per read (as a network hands a slow stream over): the work counted, the call."""
    from fsm import Limits

    def chunk(entry: dict[str, Any]) -> bytes:
        return b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [entry]}}]}).encode() + b"\n\n"

    head = {"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": ""}}
    pieces = [first] + ["x" * 50] * n
    r = Reassembler("openai-chat", limits=Limits(max_argument_chars=1 << 24))
    for event in [chunk(head), *(chunk({"index": 0, "function": {"arguments": p}}) for p in pieces)]:
        r.feed_bytes(event)
    call = r.close().calls[0]
    return r.ledger.work, (call.arguments_json, call.status)


def test_a_read_of_fragments_costs_the_same_whatever_the_texts_first_character() -> None:
    # Each read's run of held fragments asked the call for its text's first character, which for
    # a character that is not ASCII decoded the whole text held: n^2 for n reads (32,000 reads of
    # 50 characters: 6.7 s of CPU, 0.27 s now)
    for first in ("\u00e9", "\U0001f642", "{"):
        small, large = (_read_one_event_at_a_time(n, first)[0] for n in (500, 4000))
        assert large <= small * 8 * 1.25, (first, small, large)
    assert _read_one_event_at_a_time(3, "\u00e9")[1] == ("\u00e9" + "x" * 150, CallStatus.TRUNCATED)  # held as it came


# -- the SDK readers' caches of classes ------------------------------------------------------------------------------


def test_objects_of_classes_made_as_a_program_runs_are_not_kept_alive() -> None:
    # What _type_of, the lean chat reader and plain_dump learn of a class was kept per class in
    # a dict without bound: a program making its classes as it runs (create_model) had every
    # class it ever fed kept alive for good
    import gc
    import weakref

    from pydantic import BaseModel, create_model

    from fsm.wire import sdk, sdk_dump

    made = []
    for n in range(sdk_dump.CLASSES_KEPT * 2 + 10):
        model = create_model(f"Stop{n}", __base__=BaseModel, type=(str, "content_block_stop"), index=(int, 0))
        made.append(weakref.ref(model))
        r = Reassembler("anthropic")
        r.feed(model(type="content_block_stop", index=0))
        del model, r
    gc.collect()
    caches = (sdk._PLAIN_MODELS, sdk._CHAT_CHUNKS, sdk_dump._PLAIN_CLASSES)
    assert all(len(cache) <= sdk_dump.CLASSES_KEPT for cache in caches)
    assert sum(ref() is not None for ref in made) <= sdk_dump.CLASSES_KEPT
