"""LiteLLM's ``delta.provider_specific_fields`` keys that fsm does not read are said, once a stream,
at the event that first carries them (policy litellm-fields-said): the Responses bridge's
``openai_responses_replay`` and ``phase`` passed without a word (audit 92's G7). A key that copies
what the delta holds itself (the reasoning LiteLLM also writes as ``thinking_blocks``) is not said."""

from __future__ import annotations

from typing import Any

import fsm


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


CALL = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}
REPLAY = {"version": 1, "items": [{"type": "function_call", "index": 0}], "checksum": "f9c6"}


def said(stream: list[dict[str, Any]]) -> list[tuple[int | None, str, str]]:
    result = fsm.reassemble(stream, "openai-chat")
    assert [(call.name, call.arguments) for call in result.calls] == [("lookup", {"q": "x"})]
    return [(d.event, d.code, d.message) for d in result.diagnostics if d.code != "finish-reason-mapped"]


def test_the_bridges_replay_record_and_phase_are_said_once_where_they_first_came() -> None:
    stream = [
        chunk({"role": "assistant", "tool_calls": [CALL]}),
        chunk({"provider_specific_fields": {"phase": "commentary"}}),
        chunk({"provider_specific_fields": {"phase": "commentary", "openai_responses_replay": REPLAY}}),
        chunk({"provider_specific_fields": {"openai_responses_replay": REPLAY}}, "tool_calls"),
    ]
    assert said(stream) == [
        (2, "part-not-reassembled", "LiteLLM's provider_specific_fields.phase is not kept: no Result field holds it"),
        (
            3,
            "part-not-reassembled",
            "LiteLLM's provider_specific_fields.openai_responses_replay is not kept: no Result field holds it",
        ),
    ]


def test_copies_of_the_deltas_own_fields_read_fields_and_empty_values_are_not_said() -> None:
    block = {"type": "thinking", "thinking": "hm", "signature": "s"}
    stream = [
        chunk(
            {
                "reasoning_content": "hm",
                "thinking_blocks": [block],
                "provider_specific_fields": {"thinking_blocks": [block]},
            }
        ),
        chunk({"provider_specific_fields": {"reasoningContent": {"reasoningText": {"text": "hm"}}, "phase": None}}),
        chunk({"provider_specific_fields": {"citations": [], "tool_search_items": {}}}),
        chunk({"tool_calls": [CALL], "provider_specific_fields": {"server_tool_calls": [], "web_search_calls": {}}}),
        chunk({}, "tool_calls"),
    ]
    assert said(stream) == []


def test_strict_mode_reads_the_same_and_raises_nothing() -> None:
    r = fsm.Reassembler("openai-chat", strict=True)
    for event in [
        chunk({"tool_calls": [CALL], "provider_specific_fields": {"openai_responses_replay": REPLAY}}, "tool_calls")
    ]:
        r.feed(event)
    assert r.close().codes() == ["part-not-reassembled"]
