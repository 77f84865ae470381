"""Hostile audit 23: this session's fast paths (the chunk shortcut read in line, whole calls opened
without the general opening, a closed value's lax end, one-event reads, SDK chunks of a whole call
or of text alone) against the general paths they skip.

Each test failed before its fix. Work is counted, not timed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from fsm import Reassembler

openai_chunk = pytest.importorskip("openai.types.chat.chat_completion_chunk")
pydantic = pytest.importorskip("pydantic")


def _traced(items: list[Any], **options: Any) -> object:
    from tests.helpers import replay_traced

    def feed(r: Reassembler) -> Iterator[list[Any]]:
        try:
            yield from (r.feed(item) for item in items)
        except Exception:
            yield r.drain()
            raise

    return replay_traced(Reassembler("openai-chat", **options), feed)


def _chunk(delta: Any) -> Any:
    """An SDK chunk of one choice holding ``delta`` as it is (model_construct keeps an object)."""
    choice = openai_chunk.Choice.model_construct(index=0, delta=delta, finish_reason=None)
    return openai_chunk.ChatCompletionChunk.model_construct(
        id="c", object="chat.completion.chunk", created=1, model="m", choices=[choice]
    )


class _PropertyOverExtra(openai_chunk.ChoiceDelta):  # type: ignore[misc,name-defined]
    """A delta whose extra ``reasoning`` field is hidden by a property that raises."""

    @property
    def reasoning(self) -> str:
        raise ValueError("read by a property of its own")


class _OwnLookup(pydantic.BaseModel):  # type: ignore[misc,name-defined]
    """A delta that looks up what it lacks its own way (groq's delta has no refusal; this one raises)."""

    model_config = pydantic.ConfigDict(extra="allow")
    content: str | None = None
    role: str | None = None
    tool_calls: list[openai_chunk.ChoiceDeltaToolCall] | None = None  # type: ignore[name-defined]

    def __getattr__(self, name: str) -> Any:
        raise KeyError(name)


def _whole_call_entries() -> list[Any]:
    function = openai_chunk.ChoiceDeltaToolCallFunction.model_validate({"name": "f", "arguments": '{"a": 1}'})
    return [openai_chunk.ChoiceDeltaToolCall.model_validate({"index": 0, "id": "x", "function": function})]


NESTED = {
    "text alone, an extra field under a property that raises": lambda: _PropertyOverExtra.model_validate(
        {"content": "x", "reasoning": "y"}
    ),
    "text alone, a lookup of its own that raises": lambda: _OwnLookup.model_validate(
        {"content": "x", "reasoning": "y"}
    ),
    "a whole call, a lookup of its own that raises": lambda: _OwnLookup(tool_calls=_whole_call_entries()),
}


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("name", sorted(NESTED))
def test_an_sdk_delta_of_a_class_with_its_own_lookup_is_read_as_the_dump_reads_it(
    name: str, strict: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The lean SDK reader (chat_entry: _plain_said for text alone, the refusal it looks for beside a
    # call) checked that the chunk's class looks attributes up as pydantic does, not the delta's: a
    # delta built into the chunk whose class reads an attribute its own way let that attribute's
    # error out of feed (a ValueError, a KeyError), where the dump reads the chunk.
    item = _chunk(NESTED[name]())
    fast = _traced([item], strict=strict)
    assert not (isinstance(fast, tuple) and fast[0] in ("ValueError", "KeyError")), fast
    dump = item.model_dump(mode="json", by_alias=True, exclude_unset=True, warnings=False)
    assert fast == _traced([dump], strict=strict)  # the text, reasoning and call the dump holds
    monkeypatch.setattr("fsm.wire.sdk.take_chat_chunk", lambda *args: False)
    assert fast == _traced([item], strict=strict)
