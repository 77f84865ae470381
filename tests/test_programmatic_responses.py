"""OpenAI's programmatic tool calling in the Responses API (beta), across turns (policy
program-goes-back).

A ``program`` output item holds the JavaScript the model wrote, its ``call_id`` and an opaque
``fingerprint``; each client call it makes is a ``function_call`` naming it in ``caller``
(``{"type": "program", "caller_id": ...}``). The turn ends with those calls; the client runs them
and sends their outputs, and OpenAI replays the program (openai ``types/beta``: "Opaque program
replay fingerprint that must be round-tripped"), whose ``program_output`` item comes in a later
response. Without stored state (``store: false``, which the feature supports) the request that
sends the outputs must carry the program back.

Before: the program's code was scanned as JSON (JavaScript is none), so the program came back
invalid (``unterminated-arguments``, a violation); ``fsm.messages`` left it out of the next request
(hosted calls never went back), and with it the reasoning before it; a ``program_output`` item was
read past and never went back; ``fsm.history`` read a program item between a direct call and the
program's calls as the end of the direct call's turn, so that call was ``dangling``, its output an
``orphan``, and repair wrote a placeholder and dropped the real output."""

from __future__ import annotations

import json
from typing import Any

import pytest

import fsm
from fsm import history, messages
from tests.test_clients import Replay

CODE = "const rows = await Promise.all(['West', 'East'].map((r) => tools.sales({region: r})));\ntext(rows)"
PROGRAM = {"type": "program", "id": "prog_1", "call_id": "call_prog", "code": CODE, "fingerprint": "fp_opaque_1"}
CALLER = {"type": "program", "caller_id": "call_prog"}
REASONING = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA_sealed"}
OUTPUT = {"type": "program_output", "id": "po_1", "call_id": "call_prog", "result": "West", "status": "completed"}
ASK: list[dict[str, Any]] = [{"role": "user", "content": "Which region sold most?"}]


def _response(n: int, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": f"resp_{n}", "object": "response", "created_at": 1, "model": "gpt-5.5", "status": status,
            "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}  # fmt: skip


def _call(n: int, caller: dict[str, Any] | None = CALLER) -> dict[str, Any]:
    call = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": "sales"}
    call |= {"arguments": json.dumps({"region": ["West", "East", "North"][n % 3]}), "status": "completed"}
    return call | ({"caller": caller} if caller else {})


def _events(n: int, items: list[dict[str, Any]], *, cut: bool = False) -> list[dict[str, Any]]:
    """A response's events: each item added (a call's arguments then streamed in two pieces) and
    done, then the response completed (``cut``: the stream stops inside the last item)."""
    events: list[dict[str, Any]] = [{"type": "response.created", "response": _response(n, "in_progress", [])}]
    for at, item in enumerate(items):
        opening = dict(item)
        if item["type"] == "function_call":
            opening |= {"arguments": "", "status": "in_progress"}
        elif item["type"] == "program":
            del opening["fingerprint"]  # (it comes with the item's end)
        elif item["type"] == "message":
            opening |= {"content": [], "status": "in_progress"}
        events.append({"type": "response.output_item.added", "output_index": at, "item": opening})
        for part in item.get("content", []) if item["type"] == "message" else []:
            delta = {"output_index": at, "item_id": item["id"], "content_index": 0, "delta": part["text"]}
            events.append({"type": "response.output_text.delta", **delta})
        if item["type"] == "function_call":
            half = len(item["arguments"]) // 2
            for piece in (item["arguments"][:half], item["arguments"][half:]):
                delta = {"output_index": at, "item_id": item["id"], "delta": piece}
                events.append({"type": "response.function_call_arguments.delta", **delta})
        if cut and at == len(items) - 1:
            break
        events.append({"type": "response.output_item.done", "output_index": at, "item": item})
    if not cut:
        events.append({"type": "response.completed", "response": _response(n, "completed", items)})
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


def sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


TURN_1 = [REASONING, PROGRAM, _call(1), _call(2)]
TURN_2 = [OUTPUT, {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": "West.", "annotations": []}]}]  # fmt: skip


def _read(events: list[dict[str, Any]]) -> fsm.Result:
    reader = fsm.Reassembler("openai-responses")
    for event in events:
        reader.feed(event)
    return reader.close()


def test_a_program_is_hosted_code_complete_at_its_end() -> None:
    result = _read(_events(1, TURN_1))
    (program,) = result.server_tool_calls
    assert (program.type, program.id, program.status) == ("program", "call_prog", fsm.CallStatus.COMPLETE)
    assert program.input == CODE and program.item == {
        "type": "program",
        "id": "prog_1",
        "call_id": "call_prog",
        "fingerprint": "fp_opaque_1",
    }
    assert [(c.id, c.item) for c in result.calls] == [
        ("call_1", {"type": "function_call", "id": "fc_1", "caller": CALLER}),
        ("call_2", {"type": "function_call", "id": "fc_2", "caller": CALLER}),
    ]
    assert [d.code for d in result.diagnostics if d.severity is fsm.Severity.VIOLATION] == []


def test_the_whole_bytes_and_one_byte_pieces_read_the_same() -> None:
    wire = sse(_events(1, TURN_1))
    whole = fsm.Reassembler("openai-responses")
    whole.feed_bytes(wire)
    pieces = fsm.Reassembler("openai-responses")
    for at in range(len(wire)):
        pieces.feed_bytes(wire[at : at + 1])
    assert whole.close() == pieces.close() == _read(_events(1, TURN_1))


def test_the_program_goes_back_in_its_place_with_its_fingerprint() -> None:
    items = messages.assistant_message(_read(_events(1, TURN_1)), "openai-responses")
    assert [item["type"] for item in items] == ["reasoning", "program", "function_call", "function_call"]
    assert items[1] == PROGRAM
    assert items[2]["caller"] == CALLER and items[2]["id"] == "fc_1"  # beside reasoning, by its item id


def test_a_program_output_goes_back_in_its_place() -> None:
    items = messages.assistant_message(_read(_events(2, TURN_2)), "openai-responses")
    assert [item["type"] for item in items] == ["program_output", "message"]
    assert items[0] == OUTPUT


def test_the_loop_through_the_beta_client_pairs_everything() -> None:
    """Three requests through openai's beta Responses client over a mock transport: each input is
    valid for the SDK's input item type, is what the SDK sent, and passes the history check."""
    pydantic = pytest.importorskip("pydantic")
    beta = pytest.importorskip("openai.types.beta")
    adapter = pydantic.TypeAdapter(beta.BetaResponseInputItemParam)
    replay = Replay(sse(_events(1, TURN_1)))
    client = pytest.importorskip("openai").OpenAI(api_key="t", base_url="http://mock/v1", http_client=replay.client())

    first = fsm.reassemble(client.beta.responses.create(model="gpt-5.5", input=ASK, stream=True, store=False))
    sent = [*ASK, *messages.assistant_message(first, "openai-responses")]
    sent += [messages.tool_result(call, {"total": 3}, "openai-responses") for call in first.complete_calls]
    replay.body = sse(_events(2, TURN_2))
    second = fsm.reassemble(client.beta.responses.create(model="gpt-5.5", input=sent, stream=True, store=False))
    assert replay.sent[-1]["input"] == sent
    sent += messages.assistant_message(second, "openai-responses")
    sent.append({"role": "user", "content": "Thanks"})
    client.beta.responses.create(model="gpt-5.5", input=sent, stream=True, store=False).close()

    assert replay.sent[-1]["input"] == sent
    for item in sent[1:-1]:
        adapter.validate_python(item)
    assert [item.get("type") for item in sent[1:-1]] == [
        "reasoning",
        "program",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
        "program_output",
        "message",
    ]
    assert history.check(sent).findings == ()


def test_a_program_between_a_direct_call_and_its_own_calls_keeps_the_turn_whole() -> None:
    """The model called a tool itself, then wrote a program that called two more: one turn, its
    outputs after it. Before, the program item ended the direct call's turn."""
    calls = [_call(0, caller=None), _call(1), _call(2)]
    outputs = [{"type": "function_call_output", "call_id": call["call_id"], "output": "r"} for call in calls]
    sent = [*ASK, calls[0], PROGRAM, *calls[1:], *outputs, OUTPUT, {"role": "assistant", "content": "West."}]
    assert history.check(sent).findings == ()
    fixed, changes = history.repair(sent)
    assert fixed == sent and changes == []


def test_a_program_the_stream_cut_does_not_go_back_nor_its_reasoning() -> None:
    """Cut before its end, the program has no fingerprint: it is truncated with its code, and
    neither it nor the reasoning the API would pair with it goes back."""
    result = _read(_events(1, [REASONING, PROGRAM], cut=True))
    (program,) = result.server_tool_calls
    assert program.status is fsm.CallStatus.TRUNCATED and program.input == CODE
    assert any(d.code == "truncated" for d in result.diagnostics)
    assert messages.assistant_message(result, "openai-responses") == []


def test_no_other_format_takes_a_program() -> None:
    result = _read(_events(1, TURN_1))
    for provider in ("openai-chat", "anthropic", "gemini"):
        assert "program" not in json.dumps(messages.assistant_message(result, provider))


# -- the multi-agent beta: hosted agents' calls, their outputs and messages; a subagent's client call


AGENT = {"agent_name": "researcher"}
SPAWN = {"type": "multi_agent_call", "id": "mac_1", "call_id": "call_spawn", "action": "spawn_agent",
         "arguments": '{"task": "find sales"}', "agent": {"agent_name": "main"}}  # fmt: skip
SPAWNED = {"type": "multi_agent_call_output", "id": "maco_1", "call_id": "call_spawn", "action": "spawn_agent",
           "output": [{"type": "output_text", "text": "spawned", "annotations": []}]}  # fmt: skip
SAID = {"type": "agent_message", "id": "am_1", "author": "main", "recipient": "researcher",
        "content": [{"type": "encrypted_content", "encrypted_content": "sealed"}]}  # fmt: skip


def test_the_multi_agent_items_are_hosted_and_a_subagents_call_keeps_its_agent() -> None:
    """Before, each of the three item types was an ``unknown-item``, and a subagent's function
    call went back without its ``agent``: as the main agent's call."""
    pydantic = pytest.importorskip("pydantic")
    beta = pytest.importorskip("openai.types.beta")
    result = _read(_events(1, [SPAWN, SPAWNED, SAID, _call(1, caller=None) | {"agent": AGENT}]))
    assert [d.code for d in result.diagnostics] == ["finish-reason-mapped"]
    (spawn,) = result.server_tool_calls
    assert (spawn.type, spawn.id, spawn.name, spawn.arguments) == (
        "multi_agent_call",
        "call_spawn",
        "spawn_agent",
        {"task": "find sales"},
    )
    items = messages.assistant_message(result, "openai-responses")
    assert [item["type"] for item in items] == ["function_call"] and items[0]["agent"] == AGENT
    pydantic.TypeAdapter(beta.BetaResponseInputItemParam).validate_python(items[0])
    outputs = [messages.tool_result(call, "r", "openai-responses") for call in result.complete_calls]
    assert history.check([*ASK, SPAWN, SPAWNED, SAID, *items, *outputs]).findings == ()


def test_langchain_yields_nothing_of_programmatic_tool_calling() -> None:
    """langchain-openai (1.8.1) has no block for a program or its output and keeps no ``caller`` on
    a function call: what fsm reads through ``ChatOpenAI`` is the model's own call (the README says
    to read such turns from the bytes or the openai client's events)."""
    pytest.importorskip("langchain_openai")
    from tests.test_sdk_loop import langchain_model

    body = sse(_events(1, TURN_1))
    got = fsm.reassemble(langchain_model("openai-responses", Replay(body)).stream("go"))
    assert (got.calls[0].id, got.calls[0].item) == ("call_1", {"type": "function_call", "id": "fc_1"})
    assert got.server_tool_calls == ()
    assert "program" not in json.dumps(messages.assistant_message(got, "openai-responses"))


@pytest.mark.parametrize("code", [None, ""], ids=["null", "empty"])
def test_a_program_without_code_is_said_and_does_not_go_back(code: str | None) -> None:
    """A program that gives no code has nothing to replay: before, it went back with ``code: ""``
    without a word. Nor do the calls it made (policy calls-stay-with-their-program, audit 94)."""
    program = {**PROGRAM, "code": code}
    result = _read(_events(1, [REASONING, program, _call(1)]))
    assert any(d.code == "part-not-reassembled" and "whose code is" in d.message for d in result.diagnostics)
    assert messages.assistant_message(result, "openai-responses") == []
    assert messages.omitted(result, "openai-responses") == result.calls
