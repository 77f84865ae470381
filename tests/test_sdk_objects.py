"""``Reassembler.feed`` takes the objects of the official SDKs without importing them at runtime.
Tested with the real SDK classes (test-only dependencies)."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import Reassembler
from tests.helpers import chunk, tc


def feed_all(objects: list[Any]) -> list[tuple[str, str | None, Any]]:
    r = Reassembler()
    for obj in objects:
        r.feed(obj)
    return [(c.id, c.name, c.arguments) for c in r.close().calls]


def test_openai_chat_completion_chunks() -> None:
    types = pytest.importorskip("openai.types.chat")
    wire = [
        {"id": "x", "created": 1, "model": "m", **chunk(tc(index=0, id="a", name="f", args='{"q": '))},
        {"id": "x", "created": 1, "model": "m", **chunk(tc(index=0, args='"A"}'))},
        {"id": "x", "created": 1, "model": "m", **chunk(tc(index=0, name="f", args='{"q": "B"}'), finish="tool_calls")},
    ]
    objects = [types.ChatCompletionChunk.model_validate(w) for w in wire]
    assert feed_all(objects) == [("a", "f", {"q": "A"}), ("call_1", "f", {"q": "B"})]


def test_anthropic_stream_events() -> None:
    anthropic = pytest.importorskip("anthropic")
    from pydantic import TypeAdapter

    adapter = TypeAdapter(anthropic.types.RawMessageStreamEvent)
    wire = [
        {
            "type": "message_start",
            "message": {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "model": "c",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
        },
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"a": 1}'}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
        {"type": "message_stop"},
    ]
    objects = [adapter.validate_python(w) for w in wire]
    assert feed_all(objects) == [("toolu_1", "f", {"a": 1})]


def test_google_genai_responses_keep_thought_signatures() -> None:
    genai_types = pytest.importorskip("google.genai.types")
    wire = [
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {"functionCall": {"name": "s", "args": {"q": "A"}, "id": "c1"}, "thoughtSignature": "U0lH"}
                        ],
                    }
                }
            ]
        },
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [{"functionCall": {"name": "s", "args": {"q": "B"}, "id": "c2"}}],
                    }
                }
            ]
        },
        {"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}]},
    ]
    objects = [genai_types.GenerateContentResponse.model_validate(w) for w in wire]
    r = Reassembler()
    for obj in objects:
        r.feed(obj)
    result = r.close()
    assert [(c.id, c.arguments, c.thought_signature) for c in result.calls] == [
        ("c1", {"q": "A"}, "U0lH"),
        ("c2", {"q": "B"}, None),
    ]
    assert result.provider == "gemini" and result.finish_reason == "tool_calls"


def test_objects_with_to_dict_are_accepted() -> None:
    class Legacy:
        def to_dict(self) -> dict[str, Any]:
            return chunk(tc(index=0, id="a", name="f", args="{}"), finish="tool_calls")

    assert feed_all([Legacy()]) == [("a", "f", {})]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("tool_call_chunks", 5),
        ("tool_call_chunks", ["not a dict"]),
        ("content", 5),
        ("content", {"type": "text", "text": "hi"}),
        ("usage_metadata", [("input_tokens", 1)]),
        ("usage_metadata", 7),
    ],
)
def test_a_langchain_chunk_with_a_field_of_the_wrong_kind_is_invalid_input(field: str, value: Any) -> None:
    from types import SimpleNamespace

    from fsm.errors import InvalidInput

    def message_chunk(**fields: Any) -> SimpleNamespace:
        base: dict[str, Any] = {"type": "AIMessageChunk", "content": "", "tool_call_chunks": []}
        return SimpleNamespace(**{**base, **fields})

    r = Reassembler()
    with pytest.raises(InvalidInput, match=f"AIMessageChunk's {field}"):
        r.feed(message_chunk(**{field: value}))
    part = {"index": 0, "id": "t1", "name": "f", "args": "{}"}
    r.feed(message_chunk(tool_call_chunks=[part], response_metadata={"finish_reason": "tool_calls"}))
    result = r.close()  # nothing of the refused chunk was taken in; the stream went on
    assert [(c.id, c.name, c.arguments) for c in result.calls] == [("t1", "f", {})]
    assert not result.text and not result.problems()


def test_google_genai_partial_args_with_a_null_value_read_as_the_wire_does() -> None:
    # Vertex streams a null argument as ``"nullValue": null``. google-genai keeps the field as set
    # with the value None; a dump without the None fields lost it, and the entry read as having no
    # value (the stream failed, the call cut).
    genai_types = pytest.importorskip("google.genai.types")

    def part(call: dict[str, Any], **candidate: Any) -> dict[str, Any]:
        return {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": call}]}, **candidate}]}

    values = [{"jsonPath": "$.a", "nullValue": None}, {"jsonPath": "$.b", "stringValue": "x"}]
    wire = [
        part({"name": "f", "willContinue": True}),
        part({"partialArgs": values, "willContinue": True}),
        part({}, finishReason="STOP"),
    ]
    objects = [genai_types.GenerateContentResponse.model_validate(w) for w in wire]
    assert feed_all(objects) == feed_all(wire) == [("call_0", "f", {"a": None, "b": "x"})]


def test_an_sdk_object_too_deep_for_its_serializer_is_an_event_too_deep_to_read() -> None:
    # pydantic refuses to write a model nested past its depth guard with a bare ValueError, which
    # escaped feed; the same event as a dict is refused as nesting too deeply (LimitExceeded).
    genai_types = pytest.importorskip("google.genai.types")
    from fsm.errors import LimitExceeded

    args: dict[str, Any] = {}
    inner = args
    for _ in range(300):
        inner["a"] = {}
        inner = inner["a"]
    wire = {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "f", "args": args}}]}}]}
    for item in (wire, genai_types.GenerateContentResponse.model_validate(wire)):
        r = Reassembler()
        r.feed({"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}}]})
        with pytest.raises(LimitExceeded) as raised:
            r.feed(item)
        assert raised.value.event == 2
        assert r.close().text == "hi"  # the result so far


@pytest.mark.parametrize(
    ("metadata", "args", "finish", "status"),
    [
        ({"status": "completed"}, '{"a": 1}', "tool_calls", "complete"),
        (
            {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}},
            '{"a": ',
            "length",
            "truncated",
        ),
    ],
)
def test_a_langchain_responses_chunk_ends_the_turn_by_its_status(
    metadata: dict[str, Any], args: str, finish: str, status: str
) -> None:
    # LangChain's ChatOpenAI(use_responses_api=True) ends a turn with a chunk whose metadata holds the
    # response's status (and incomplete_details), no finish_reason: read as none at all, every turn
    # got no-finish-reason and no finish reason, so a turn cut at max_output_tokens did not say so.
    from types import SimpleNamespace

    def message_chunk(parts: list[dict[str, Any]], **meta: Any) -> SimpleNamespace:
        return SimpleNamespace(type="AIMessageChunk", content=[], tool_call_chunks=parts, response_metadata=meta)

    r = Reassembler()
    r.feed(message_chunk([{"index": 1, "id": "c1", "name": "f", "args": args}]))
    r.feed(message_chunk([], model_provider="openai", **metadata))
    result = r.close()
    assert result.finish_reason == finish
    assert [(c.id, c.status.value) for c in result.calls] == [("c1", status)]
    assert "no-finish-reason" not in {d.code for d in result.diagnostics}
