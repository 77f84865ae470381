"""SDK objects take the paths their dumps take (issue 17): an openai ``ChatCompletionChunk`` fed
as it is replays exactly as its dump fed as a dict, the OpenAI chat shortcuts included; the
commonest chunk, one bare fragment, is read from its attributes as its dump would be read; and an
object's ``type`` is read without the failed lookup pydantic makes costly, finding what
``getattr(item, "type", None)`` finds."""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from fsm import Reassembler
from fsm.errors import InvalidInput
from fsm.harness.fuzz.run import sample_vectors
from fsm.wire.decoders.chat_chunks import one_entry, plain_delta, plain_said, whole_call_in
from fsm.wire.decoders.openai_chat import OpenAIChatDecoder
from fsm.wire.langchain_places import LangChainStream
from fsm.wire.sdk import _BARE, _SAID, _WHOLE, _type_of, chat_entry, plain_dump, sdk_payload
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


def _said(**delta: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}


# Deltas of text and reasoning, as the dialects send them (reasoning as an extra field), and ones
# beside which something more stands.
SAID: dict[str, list[dict[str, Any]]] = {
    "text": [_said(role="assistant", content=""), _said(content="Hel"), _said(content="lo"), chunk(finish="stop")],
    "reasoning, then a call": [
        _said(role="assistant", content=None, reasoning_content=""),
        *(_said(content=None, reasoning_content=piece) for piece in ["The ", "user", " asks"]),
        _said(reasoning="and"),
        _said(content="ok", reasoning_content="", reasoning="both"),
        _said(content="a", reasoning_content="b", reasoning="c"),
        chunk(tc(0, "a", "f", '{"x": 1}')),
        chunk(finish="tool_calls"),
    ],
    "with more beside": [
        _said(content="x", refusal=None),
        _said(content="x", reasoning_content=7),
        _said(content="x", thinking_blocks=[]),
        _said(content="x", annotations=[]),
        _said(reasoning_content="r", extra_content={"google": {"thought_signature": "c2ln"}}),
        {**_said(content="u"), "usage": {"total_tokens": 3}},
        {**_said(content="late")},
        chunk(finish="stop"),
        _said(content="after"),
    ],
}


def _streams() -> list[tuple[str, list[Any]]]:
    vectors = [v for v in [*VECTORS, *sample_vectors("openai-chat", 200)] if v.shape == "openai-chat"]
    found = [(v.name, v.events) for v in vectors if v.body is None and all(type(e) is dict for e in v.events)]
    found += list(EDGES.items()) + list(SAID.items())
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


def _hostile_chunks() -> list[Any]:
    """Chunks a lean reader could misread: fields set beyond the usual ones, extras, nulls set
    explicitly, values of other types (model_construct skips validation, as a caller's code can)."""
    C = chat_types.ChatCompletionChunk
    choice_types = pytest.importorskip("openai.types.chat.chat_completion_chunk")
    Choice, Delta = choice_types.Choice, choice_types.ChoiceDelta
    Entry, Function = choice_types.ChoiceDeltaToolCall, choice_types.ChoiceDeltaToolCallFunction
    envelope = {"id": "x", "created": 1, "model": "m", "object": "chat.completion.chunk"}
    one = {"index": 0, "function": {"arguments": "a"}}

    def wire(choice: dict[str, Any], **top: Any) -> Any:
        return C.model_validate({**envelope, "choices": [choice], **top})

    def frag(**entry: Any) -> dict[str, Any]:
        return {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "ab"}, **entry}]}}

    def built(function: Any = None, entry: Any = None, delta: Any = None, choice: Any = None, **top: Any) -> Any:
        function = function if function is not None else Function.model_construct(arguments="ab")
        entry = entry if entry is not None else Entry.model_construct(index=0, function=function)
        delta = delta if delta is not None else Delta.model_construct(tool_calls=[entry])
        choice = choice if choice is not None else Choice.model_construct(index=0, delta=delta, finish_reason=None)
        return C.model_construct(**{**envelope, "choices": [choice], **top})

    one_f = Function.model_construct(arguments="ab")
    dict_function = built()
    dict_function.choices[0].delta.tool_calls[0].__dict__["function"] = {"arguments": "ab"}
    return [
        wire(frag()),  # the commonest chunk
        wire(frag(id="c")),
        wire(frag(id=None)),  # an explicit null: the dump holds it
        wire(frag(type="function")),
        wire({**frag(), "finish_reason": None, "logprobs": None}),
        wire({**frag(), "finish_reason": "length"}),
        wire({**frag(), "index": 1}),
        wire({"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "ab", "name": None}}]}}),
        wire({"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ""}}]}}),
        wire({"index": 0, "delta": {"content": None, "tool_calls": [one]}}),
        wire({"index": 0, "delta": {"role": "assistant", "tool_calls": [one]}}),
        wire({"index": 0, "delta": {"reasoning_content": "hm", "tool_calls": [one]}}),
        wire({**frag(), "extra": 1}),
        wire(frag(), usage=None),
        wire(frag(), usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}),
        wire(frag(), error={"message": "boom"}),
        wire(frag(), type="text"),  # an extra named type: a stream helper's event, as the dump path reads it
        built(),
        built(function=Function.model_construct(arguments=7)),
        built(function=Function.model_construct(arguments="ab", name="f")),
        dict_function,  # a dict where a model belongs
        built(entry=Entry.model_construct(index=True, function=Function.model_construct(arguments="ab"))),
        built(entry=Entry.model_construct(index="0", function=Function.model_construct(arguments="ab"))),
        built(delta=Delta.model_construct(tool_calls=({"index": 0},))),
        built(delta=Delta.model_construct(tool_calls=[])),
        built(choice=Choice.model_construct(index=False, delta=Delta.model_construct(), finish_reason=None)),
        built(choice=Choice.model_construct(index=0.0, delta=Delta.model_construct(), finish_reason=None)),
        built(delta=Delta.model_construct(content=[], tool_calls=[Entry.model_construct(index=0, function=one_f)])),
        built(delta=Delta.model_construct(refusal=0, tool_calls=[Entry.model_construct(index=0, function=one_f)])),
        built(delta=Delta.model_construct(role=1, tool_calls=[Entry.model_construct(index=0, function=one_f)])),
        built(entry=Entry.model_construct(index=0, id=5, function=one_f)),
        built(entry=Entry.model_construct(index=0, type=["function"], function=one_f)),
        built(choice=Choice.model_construct(index=0, delta=Delta.model_construct(), finish_reason=["stop"])),
        C.model_construct(**{**envelope, "choices": ()}),
        C.model_construct(**envelope),
    ]


def test_the_lean_sdk_reader_reads_as_the_dump_does() -> None:
    chunks = [o for _, objects in _streams() for o in objects] + _hostile_chunks()
    read = wholes = saids = 0
    for chunk_object in chunks:
        lean = chat_entry(chunk_object)
        if lean is not None and lean[0] is _BARE:  # a bare fragment: the entry the dump holds is these two
            index, text = lean[1]["index"], lean[1]["arguments"]
            lean = ({"index": index, "function": {"arguments": text}}, {"arguments": text})
        try:
            delta = plain_delta(_pydantic_dump(chunk_object))
            dumped = None if delta is None else one_entry(delta)
        except Exception:  # a dump that fails is the dump path's to report
            dumped = None
        if lean is not None and lean[0] is _SAID:  # text or reasoning alone: what plain_said finds in the dump's
            saids += 1
            assert delta is not None and plain_said(delta) == lean[1], chunk_object
            continue
        if lean is not None and lean[0] is _WHOLE:  # a whole call: what whole_call_in finds in the dump's
            wholes += 1
            assert dumped is not None and whole_call_in(*dumped) == lean[1], chunk_object
            continue
        # Where the lean reader reads a chunk it finds what the dump's readers find; where it
        # declines, the dump path reads the chunk (the replays above and below come out alike).
        assert lean is None or lean == dumped, chunk_object
        read += lean is not None
    assert read > 300 and wholes > 30 and saids > 10, (read, wholes, saids)  # it is taken, often
    hostile = _hostile_chunks()
    taken = [n for n, c in enumerate(hostile) if chat_entry(c) is not None]
    assert taken == [0, 1, 2, 3, 4, 7, 9, 10, 13, 17, 19]  # the rest are left to the dump
    for chunk_object in hostile:
        try:
            payload = sdk_payload(chunk_object, LangChainStream())
        except Exception:  # the dump path's to report
            continue
        if payload is None:  # a stream helper's event (an extra field named type): skipped, unread
            continue
        dumped_chunk = _pydantic_dump(chunk_object)
        opened = chunk(tc(0, "a", "f", ""))
        assert _trace([opened, chunk_object]) == _trace([opened, dumped_chunk]), chunk_object


def _as_sdk_events(shape: str, events: list[Any]) -> list[Any]:
    """Each event as its SDK's object where the SDK reads it, else the dict itself (a caller may
    feed both in one stream)."""
    from pydantic import TypeAdapter, ValidationError

    if shape == "anthropic":
        adapter: Any = TypeAdapter(pytest.importorskip("anthropic").types.RawMessageStreamEvent)
    else:
        adapter = TypeAdapter(pytest.importorskip("openai.types.responses").ResponseStreamEvent)
    out = []
    for number, event in enumerate(events):
        if shape == "openai-responses":  # the vectors leave out what the SDK requires and no reader reads
            event = {"sequence_number": number, **event}
            if str(event.get("type")).endswith((".delta", ".done")) and "output_index" in event:
                event.setdefault("item_id", f"it_{event['output_index']}")
        try:
            out.append(adapter.validate_python(event))
        except (ValidationError, TypeError):
            out.append(event)
    return out


@pytest.mark.parametrize("shape", ["anthropic", "openai-responses"])
def test_a_plain_dump_is_the_dump(shape: str) -> None:
    vectors = [v for v in [*VECTORS, *sample_vectors(shape, 120)] if v.shape == shape and v.body is None]
    streams = [(v.name, _as_sdk_events(shape, v.events)) for v in vectors if all(type(e) is dict for e in v.events)]
    objects = [o for _, stream in streams for o in stream if type(o) is not dict]
    plain = 0
    for item in objects:
        lean = plain_dump(item)
        if lean is not None:  # key for key, in the dump's order
            assert json.dumps(lean) == json.dumps(_pydantic_dump(item)), item
        plain += lean is not None
    assert plain > 150
    for name, stream in streams:  # the SDK objects replay as their dumps do, shortcuts and all
        dumps = [e if type(e) is dict else _pydantic_dump(e) for e in stream]
        assert _trace_as(shape, stream) == _trace_as(shape, dumps), name


def _trace_as(shape: str, items: list[Any]) -> object:
    return replay_traced(Reassembler(shape), lambda r: (r.feed(item) for item in items))


def test_a_plain_sdk_event_is_read_without_model_dump(monkeypatch: pytest.MonkeyPatch) -> None:
    anthropic = pytest.importorskip("anthropic")
    from pydantic import TypeAdapter

    adapter = TypeAdapter(anthropic.types.RawMessageStreamEvent)
    block = {"type": "tool_use", "id": "t", "name": "f", "input": {}}
    start = {"type": "content_block_start", "index": 0, "content_block": block}
    deltas = [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": p}}
        for p in ['{"q"', ": ", '"A"}']
    ]
    events = [adapter.validate_python(e) for e in [start, *deltas, {"type": "content_block_stop", "index": 0}]]
    from pydantic import BaseModel

    dumped: list[Any] = []
    real = BaseModel.model_dump
    monkeypatch.setattr(BaseModel, "model_dump", lambda self, **kw: dumped.append(self) or real(self, **kw))
    r = Reassembler("anthropic")
    for event in events:
        r.feed(event)
    assert [(c.id, c.name, c.arguments) for c in r.close().calls] == [("t", "f", {"q": "A"})]
    # the block's start holds a dict (its input), which only the dump writes; the rest are plain
    assert [getattr(e, "type", None) for e in dumped] == ["content_block_start"]


def test_an_sdk_event_whose_type_is_no_text_is_read_as_its_dump_is() -> None:
    # model_construct takes anything: a list for a type is no event type a shortcut takes (and no
    # key of a set), so the object goes the dump's way and is reported as the dict would be.
    anthropic = pytest.importorskip("anthropic")
    odd = anthropic.types.RawContentBlockDeltaEvent.model_construct(type=["content_block_delta"], index=0)
    got, want = Reassembler("anthropic"), Reassembler("anthropic")
    got.feed({"type": "message_start", "message": {"content": []}})
    want.feed({"type": "message_start", "message": {"content": []}})
    outcome = []
    for r, item in ((got, odd), (want, _pydantic_dump(odd))):
        try:
            r.feed(item)
            outcome.append(None)
        except fsm.ToolcallFSMError as exc:
            outcome.append(type(exc).__name__)
    assert outcome[0] == outcome[1]
    assert got.close().codes() == want.close().codes()


def test_random_hostile_sdk_objects_read_as_their_dumps() -> None:
    # model_construct'ed chunks and events holding values of every kind where the lean readers
    # look: each fed as it is raises no error but the project's and ends as its dump fed does.
    import random
    import warnings

    anthropic = pytest.importorskip("anthropic")
    kinds = pytest.importorskip("openai.types.chat.chat_completion_chunk")
    a = anthropic.types
    pool: list[Any] = [None, "", "x", "{", 0, 1, True, False, 1.5, [], {}, ["a"], {"a": 1}, object(), b"x", "\ud800"]
    rng = random.Random(17)

    def some(fields: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in fields.items() if rng.random() < 0.8}

    def chat() -> Any:
        f = kinds.ChoiceDeltaToolCallFunction.model_construct(
            **some({"name": rng.choice(pool), "arguments": rng.choice(["ab", "", None, 3])})
        )
        e = kinds.ChoiceDeltaToolCall.model_construct(
            **some(
                {
                    "index": rng.choice([0, 1, True, "0"]),
                    "id": rng.choice(pool),
                    "type": rng.choice(pool),
                    "function": f,
                }
            )
        )
        d = kinds.ChoiceDelta.model_construct(
            **some(
                {"role": rng.choice(pool), "content": rng.choice(pool), "tool_calls": rng.choice([[e], [e], [], (e,)])}
            )
        )
        choice = kinds.Choice.model_construct(
            **some(
                {"index": rng.choice([0, 0, 1, False]), "delta": d, "finish_reason": rng.choice([None, "", "stop", []])}
            )
        )
        envelope = {"id": "c", "created": 1, "model": "m", "object": "chat.completion.chunk"}
        return chat_types.ChatCompletionChunk.model_construct(
            **some({**envelope, "choices": rng.choice([[choice], [choice], []]), "usage": rng.choice([None, {}])})
        )

    def claude() -> Any:
        delta = a.InputJSONDelta.model_construct(
            **some({"type": rng.choice(["input_json_delta", "x", ["y"]]), "partial_json": rng.choice(pool)})
        )
        kind = rng.choice(["content_block_delta", "content_block_delta", None, 3, ["x"]])
        return a.RawContentBlockDeltaEvent.model_construct(
            **some({"type": kind, "index": rng.choice([0, 1, True]), "delta": delta})
        )

    heads = {
        "openai-chat": [chunk(tc(0, "h", "f", ""))],
        "anthropic": [
            {"type": "message_start", "message": {"content": []}},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "f"}},
        ],
    }

    def outcome(shape: str, item: Any) -> object:
        r = Reassembler(shape)
        try:
            for event in [*heads[shape], item]:
                r.feed(event)
            raised = None
        except fsm.ToolcallFSMError as exc:
            raised = type(exc).__name__
        result = r.close()
        return raised, [(c.id, c.name, c.arguments_json, c.status) for c in result.calls], result.codes()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pydantic's serializer warnings on the dumps of such objects
        for n in range(1500):
            shape, item = ("openai-chat", chat()) if n % 2 else ("anthropic", claude())
            fed = outcome(shape, item)
            try:
                dumped = _pydantic_dump(item)
            except Exception:  # what pydantic cannot write the object path reports (InvalidInput)
                continue
            assert fed == outcome(shape, dumped), repr(item)


def test_a_plain_dump_of_a_chat_chunk_is_its_dump() -> None:
    # lists of plain models too (a chunk's choices, a delta's tool calls), key for key and in order
    envelope = {"id": "x", "created": 1, "model": "m", "object": "chat.completion.chunk"}
    extras = [  # fields the SDK does not declare, as servers send them: kept after the declared ones
        {"choices": [{"index": 0, "delta": {"reasoning_content": "hm", "content": None}}]},
        {"choices": [{"index": 0, "delta": {"reasoning": None, "content": "a", "tool_calls": None}}], "n": 3},
        {"choices": [{"index": 0, "delta": {"annotations": [{"type": "url"}]}}]},  # a list: the dump's
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop", "snapshot": "s"}]},
        {"choices": [], "snapshot": "left out of the dump"},
        {"choices": [], "provider": {"name": "p"}},
    ]
    chunks = [chat_types.ChatCompletionChunk.model_validate({**envelope, **e}) for e in extras]
    plain, taken = 0, []
    for item in [o for _, objects in _streams() for o in objects] + chunks:
        lean = plain_dump(item)
        if lean is not None:
            assert json.dumps(lean) == json.dumps(_pydantic_dump(item)), item
        plain += lean is not None
        taken.append(lean is not None)
    assert plain > 1000
    assert taken[-len(chunks) :] == [True, True, False, False, False, False]


def _pydantic_dump(item: Any) -> Any:
    """What as_mapping asks of pydantic for ``item`` (plain_dump stands in for it)."""
    return item.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude={"snapshot"}, warnings=False)


class _Raising:
    """An object with a dump method that raises what the caller's own code might."""

    def __init__(self, method: str, exc: Exception) -> None:
        self.method, self.exc = method, exc

    def __getattr__(self, name: str) -> Any:
        if name != self.method:
            raise AttributeError(name)

        def dump(*args: Any, **kwargs: Any) -> Any:
            raise self.exc

        return dump


@pytest.mark.parametrize("method", ["model_dump", "to_dict"])
@pytest.mark.parametrize("exc", [RuntimeError("boom"), KeyError("k"), TypeError("t"), ZeroDivisionError()])
def test_an_object_whose_dump_raises_is_refused_as_input(method: str, exc: Exception) -> None:
    # What the object's model_dump() or to_dict() raised left feed() as it was (a RuntimeError, a
    # KeyError): no exception of another library's may leave the API. Refused now, as input that
    # cannot be read, and the stream reads on.
    r = fsm.Reassembler("openai-chat")
    with pytest.raises(InvalidInput, match=rf"its {method}\(\) raised {type(exc).__name__}"):
        r.feed(_Raising(method, exc))
    r.feed({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]})
    assert r.close().text == "hi"
