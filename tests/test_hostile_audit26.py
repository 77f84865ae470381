"""Hostile audit of LangChain's reading of Gemini calls under Gemini's own ids (ChatGoogleGenerativeAI):
streams where reading its chunks and reading the bytes must give the same calls, codes and next turn."""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from fsm import messages
from tests.test_langchain_reasoning import chat_google, event
from tests.test_langchain_reasoning import sse as gemini_sse

pytest.importorskip("httpx")


def _called(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": args, "id": call_id}}


def _seen(result: fsm.Result) -> list[Any]:
    calls = [(c.id, c.wire_id, c.name, c.arguments_json, c.status, c.thought_signature) for c in result.calls]
    return [calls, result.codes(), json.dumps(messages.assistant_message(result, "gemini"), sort_keys=True)]


# One id, two tools (Gemini gives the second call its first's id): each tool's call under it is
# resent on its own. Keyed by the id alone, the second tool's resend found the first tool's entry,
# another name, and so was a third call (`<id>_d3`) where the bytes read a resend of the second.
ONE_ID_TWO_TOOLS = {
    "batch-resent": [
        event("gemini-3-flash", [_called("look", "c2"), _called("find", "c2")]),
        event("gemini-3-flash", [_called("look", "c2"), _called("find", "c2")], "STOP"),
    ],
    "second-resent-later": [
        event("gemini-3-flash", [_called("look", "c1", city="Oslo")]),
        event("gemini-3-flash", [_called("find", "c1", q="x")]),
        event("gemini-3-flash", [_called("find", "c1", q="x")], "STOP"),
    ],
    "second-resent-changed": [
        event("gemini-3-flash", [_called("look", "c1", city="Oslo"), _called("find", "c1", q="x")]),
        event("gemini-3-flash", [_called("find", "c1", q="y")], "STOP"),
    ],
}


@pytest.mark.parametrize(("name", "version"), [(name, v) for name in ONE_ID_TWO_TOOLS for v in (None, "v1")])
def test_each_tool_under_one_gemini_id_resent_through_langchain_is_its_own_call_again(name: str, version: Any) -> None:
    reference = fsm.reassemble(body := gemini_sse(ONE_ID_TWO_TOOLS[name]), "gemini")
    got = fsm.reassemble(list(chat_google(body, version).stream("go")))
    assert _seen(got) == _seen(reference)
    assert len(got.calls) == 2 and "duplicate-id" in got.codes()  # two tools, two calls: no third


def _nameless(call_id: str, **args: Any) -> dict[str, Any]:
    return {"functionCall": {"args": args, "id": call_id}}


# A part without a name under an id: the decoder finds the id's call for it (a name agrees with
# none), and a call without a name takes the name that comes for it later under its id. Entries
# without a name were left as they were, each a call of its own (`<id>_d2`, `missing-name` twice).
NAMELESS = {
    "resent": [
        event("gemini-3-flash", [_nameless("c1", x=1)]),
        event("gemini-3-flash", [_nameless("c1", x=1)], "STOP"),
    ],
    "named-later": [
        event("gemini-3-flash", [_nameless("c1", x=1)]),
        event("gemini-3-flash", [_called("look", "c1", x=1)], "STOP"),
    ],
    "nameless-later": [
        event("gemini-3-flash", [_called("look", "c1", x=1), _called("find", "c1", x=2)]),
        event("gemini-3-flash", [_nameless("c1", x=2)], "STOP"),
    ],
    "named-twice-later": [
        event("gemini-3-flash", [_nameless("c1", x=1)]),
        event("gemini-3-flash", [_called("look", "c1", x=1), _called("find", "c1", x=2)], "STOP"),
    ],
}


@pytest.mark.parametrize(("name", "version"), [(name, v) for name in NAMELESS for v in (None, "v1")])
def test_a_gemini_call_without_a_name_under_an_id_through_langchain_is_the_bytes_call(name: str, version: Any) -> None:
    reference = fsm.reassemble(body := gemini_sse(NAMELESS[name]), "gemini")
    got = fsm.reassemble(list(chat_google(body, version).stream("go")))
    assert _seen(got) == _seen(reference)
    assert got.codes().count("duplicate-id") == reference.codes().count("duplicate-id") <= 1


def _gemini_chunk(entries: list[dict[str, Any]], finish: str | None = None) -> Any:
    """A hand-made ChatGoogleGenerativeAI chunk (its ``tool_call_chunks`` as given, unchecked)."""
    lc = pytest.importorskip("langchain_core.messages")
    metadata = {"model_provider": "google_genai", **({"finish_reason": finish} if finish else {})}
    return lc.AIMessageChunk(content=[], response_metadata=metadata).model_copy(update={"tool_call_chunks": entries})


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ('{"a": 1, "a": 2}', "duplicate-key"),  # Python's json kept the last key and said nothing
        ('{"a": 0.1000000000000000055511151231257827}', None),  # it rounded the number to a float's
        ('{"a": 1E5}', None),  # and wrote it anew, 100000.0
        ('{"a":1}', None),
    ],
)
def test_hand_made_gemini_argument_text_langchain_never_writes_is_read_as_written(text: str, code: str | None) -> None:
    # Only LangChain's own text (json.dumps of the args) is read as the object it writes; any other
    # is read as text, as the decoder reads argument text: each key and number as written
    for strict in (False, True):
        chunks = [_gemini_chunk([{"name": "f", "args": text, "id": "c1", "index": 0}]), _gemini_chunk([], "STOP")]
        if code is not None and strict:
            with pytest.raises(fsm.RemoteProtocolError, match=code):
                fsm.reassemble(chunks, strict=strict)
            continue
        got = fsm.reassemble(chunks, strict=strict)
        assert [c.arguments_json for c in got.calls] == [text]
        assert (code in got.codes()) if code else got.codes() == ["finish-reason-mapped"]


def test_langchain_own_gemini_argument_text_is_read_as_its_object() -> None:
    # json.dumps's text, non-ASCII escaped: the object, whose text is the decoder's (snapshot: a resend)
    text = json.dumps({"city": "Zürich 🌧", "n": 0.1, "big": 10**30})
    chunks = [_gemini_chunk([{"name": "f", "args": text, "id": "c1", "index": i}]) for i in range(2)]
    got = fsm.reassemble([*chunks, _gemini_chunk([], "STOP")])
    assert [c.arguments_json for c in got.calls] == [json.dumps(json.loads(text), ensure_ascii=False)]
    assert got.codes() == ["resend", "finish-reason-mapped"]
