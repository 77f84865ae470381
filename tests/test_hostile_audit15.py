"""Hostile audit 15: input that got a bare Python error out of the public API, or work that grew
faster than the input.

Each test failed before its fix. LangChain chunks are the duck-typed object the adapter reads (a
``SimpleNamespace``), which can hold what langchain-core would refuse. Work is counted, not timed."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import fsm


def lc_chunk(content: Any = "", parts: Any = (), provider: str | None = None, **fields: Any) -> Any:
    metadata = {"model_provider": provider} if provider else {}
    chunk = {"type": "AIMessageChunk", "content": content, "tool_call_chunks": list(parts)}
    return SimpleNamespace(**(chunk | {"response_metadata": metadata} | fields))


# -- LangChain's Responses items (ChatOpenAI) --------------------------------------------------------


def test_an_item_count_too_long_for_int_places_the_item_after_the_others() -> None:
    # v1's `lc_ns_<count>` with more digits than int() converts raised ValueError out of feed()
    custom = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_c", "name": "patch", "input": "x"}
    block = {"type": "non_standard", "value": custom, "index": "lc_ns_" + "9" * 5000}
    result = fsm.reassemble([lc_chunk([block], provider="openai")])
    assert [(c.id, c.type, c.input) for c in result.calls] == [("call_c", "custom", "x")]
