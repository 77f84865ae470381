"""Hostile audit 25: today's changes on main after 68c9f84 (Gemini code parts and their LangChain
reading, integers past the int-string limit, unknown Responses items, freeform text in a shared
lane), run against hostile streams.

Each test failed before its fix. Nothing is timed."""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from tests.test_langchain_reasoning import event
from tests.test_langchain_reasoning import sse as gemini_sse


def _code(source: str) -> dict[str, Any]:
    return {"executableCode": {"language": "PYTHON", "code": source}}


def _ran(output: str) -> dict[str, Any]:
    return {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": output}}


def _outputs(result: fsm.Result) -> tuple[list[str], list[str]]:
    calls = [c.input or "" for c in result.server_tool_calls]
    return calls, [r.block["codeExecutionResult"]["output"] for r in result.server_tool_results]


# Code A ran and gave its result, code B was sent, then the whole turn so far came again as one
# batch, B's result in it: A's result (following A's resent part) was kept a second time, as B's
# result was still awaited (the decoder counted results waited for, not whose they were).
_BATCH_RESENT_WHILE_B_WAITS = [
    event("gemini-2.5-flash", [_code("print(1)")]),
    event("gemini-2.5-flash", [_ran("1\n")]),
    event("gemini-2.5-flash", [_code("print(2)")]),
    event("gemini-2.5-flash", [_code("print(1)"), _ran("1\n"), _code("print(2)"), _ran("2\n")]),
    event("gemini-2.5-flash", [{"text": "Done."}], "STOP"),
]


def test_a_gemini_result_resent_with_its_code_while_other_code_waits_is_a_resend() -> None:
    body = gemini_sse(_BATCH_RESENT_WHILE_B_WAITS)
    for fed in (_BATCH_RESENT_WHILE_B_WAITS, [body], [body[k : k + 1] for k in range(len(body))]):
        result = fsm.reassemble(fed, "gemini")
        assert _outputs(result) == (["print(1)", "print(2)"], ["1\n", "2\n"])
        assert result.codes().count("resend") == 3  # both code parts and A's result
    # Under identical_text new-call the resent code is another run, and the result after it its own.
    rerun = fsm.reassemble(_BATCH_RESENT_WHILE_B_WAITS, "gemini", policies=fsm.Policies(identical_text="new-call"))
    assert _outputs(rerun)[1] == ["1\n", "1\n", "2\n"]


@pytest.mark.parametrize("output_version", [None, "v1"])
def test_the_same_batch_through_langchain_is_the_bytes_reading(output_version: str | None) -> None:
    pytest.importorskip("langchain_google_genai")
    from tests.test_langchain_reasoning import chat_google

    body = gemini_sse(_BATCH_RESENT_WHILE_B_WAITS)
    reference = fsm.reassemble(body, "gemini")
    got = fsm.reassemble(list(chat_google(body, output_version).stream("go")))
    assert _outputs(got) == _outputs(reference) == (["print(1)", "print(2)"], ["1\n", "2\n"])
    assert [c for c in got.codes() if c != "synthesized-id"] == [c for c in reference.codes() if c != "synthesized-id"]
    assert json.dumps(got.server_tool_results, default=str) == json.dumps(reference.server_tool_results, default=str)


def test_an_unknown_responses_item_whose_done_is_resent_is_reported_once() -> None:
    # Since unknown items were held only while open, a resent output_item.done (or the whole
    # item resent after its done) found the item gone and reported it a second time.
    from fsm.wire.decoders._responses_items import UnknownItems

    item = {"type": "teleport_call", "id": "t"}
    r = fsm.Reassembler("openai-responses", limits=fsm.Limits(max_diagnostics_per_code=10**6))
    r.feed({"type": "response.created", "response": {}})
    for at in range(10_000):
        added = {"type": "response.output_item.added", "output_index": at, "item": item}
        done = {"type": "response.output_item.done", "output_index": at, "item": item}
        for payload in (added, done, done, added, done):
            r.feed(payload)
    unknown = r._decoder._unknown  # type: ignore[union-attr]
    assert not unknown._open and len(unknown._done) <= UnknownItems.OPEN  # bounded, whatever the stream's length
    assert r.close().codes().count("unknown-item") == 10_000


@pytest.mark.parametrize("output_version", [None, "v1"])
def test_gemini_code_run_again_under_new_call_through_langchain_is_the_bytes_reading(
    output_version: str | None,
) -> None:
    # LangChain's reading ignored the stream's policies: under identical_text new-call the same
    # code again (a second run, its result waited for) was a resend of the first there, one server
    # call and one result, where the bytes read two of each.
    pytest.importorskip("langchain_google_genai")
    from tests.test_langchain_reasoning import chat_google

    parts = [[_code("print(1)")], [_ran("1\n")], [_code("print(1)")], [_ran("1\n")], [{"text": "Done."}]]
    body = gemini_sse([event("gemini-2.5-flash", p, "STOP" if k == 4 else None) for k, p in enumerate(parts)])
    policies = fsm.Policies(identical_text="new-call")
    reference = fsm.reassemble(body, "gemini", policies=policies)
    got = fsm.reassemble(list(chat_google(body, output_version).stream("go")), policies=policies)
    assert _outputs(got) == _outputs(reference) == (["print(1)", "print(1)"], ["1\n", "1\n"])
    assert all(c.item is not None for c in got.server_tool_calls)
    assert [c for c in got.codes() if c != "synthesized-id"] == [c for c in reference.codes() if c != "synthesized-id"]
