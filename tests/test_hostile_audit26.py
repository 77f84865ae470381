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
