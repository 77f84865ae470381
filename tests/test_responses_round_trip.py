"""A Responses turn read from the wire and sent back as the next request's input: the items in the
order the API gave them, each call under the item id and the ``call_id`` the wire gave it."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import Policies, Reassembler, Result, messages
from fsm.results import Reasoning, ToolCall
from fsm.serialize import converter, result_to_json
from tests.conftest import CAPTURES, require_captures
from tests.test_messages import validate

COMPLETED = {"type": "response.completed", "response": {"id": "r"}}


def run(wire: list[dict[str, Any]], **options: Any) -> Result:
    r = Reassembler("openai-responses", **options)
    for event in wire:
        r.feed(event)
    return r.close()


def reasoning(at: int) -> list[dict[str, Any]]:
    item = {"type": "reasoning", "id": f"rs_{at}", "summary": [{"type": "summary_text", "text": f"step {at}"}]}
    return [
        {"type": "response.output_item.added", "output_index": at, "item": {**item, "summary": []}},
        {"type": "response.output_item.done", "output_index": at, "item": item},
    ]


def call_item(at: int, call_id: str, arguments: str = "") -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{at}", "call_id": call_id, "name": "w", "arguments": arguments}


def function_call(at: int, call_id: str, arguments: str) -> list[dict[str, Any]]:
    return [
        {"type": "response.output_item.added", "output_index": at, "item": call_item(at, call_id)},
        {
            "type": "response.function_call_arguments.delta",
            "output_index": at,
            "item_id": f"fc_{at}",
            "delta": arguments,
        },
        {"type": "response.output_item.done", "output_index": at, "item": call_item(at, call_id, arguments)},
    ]


def text(at: int, words: str) -> list[dict[str, Any]]:
    return [{"type": "response.output_text.delta", "output_index": at, "item_id": f"msg_{at}", "delta": words}]


def shape(items: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(item["type"], item.get("id") or item.get("call_id")) for item in items]


# -- 1. the output order --------------------------------------------------------------------------


def interleaved() -> list[dict[str, Any]]:
    return [
        *reasoning(0),
        *function_call(1, "call_a", '{"city": "Oslo"}'),
        *reasoning(2),
        *text(3, "Checking both."),
        *function_call(4, "call_b", '{"city": "Rome"}'),
        COMPLETED,
    ]


def test_reasoning_calls_and_message_go_back_in_their_output_order() -> None:
    result = run(interleaved())
    items = messages.assistant_message(result, "openai-responses")
    # Each reasoning item is followed by the item it produced, as the API sent them.
    assert shape(items) == [
        ("reasoning", "rs_0"),
        ("function_call", "fc_1"),
        ("reasoning", "rs_2"),
        ("message", None),
        ("function_call", "fc_4"),
    ]
    answers = [messages.tool_result(call, "sunny", "openai-responses") for call in result.calls]
    validate("openai-responses", items, answers)


def test_positions_are_kept_on_the_results() -> None:
    result = run(interleaved())
    assert [call.output_index for call in result.calls] == [1, 4]
    assert [block.output_index for block in result.reasoning] == [0, 2]
    assert result.text_output_index == 3


def test_a_result_without_positions_keeps_the_former_order() -> None:
    """A result built by hand or read back from an older JSON: reasoning, the message, the calls."""
    call = ToolCall(
        0, "call_a", "call_a", "w", {}, "{}", messages.CallStatus.COMPLETE, item={"type": "function_call", "id": "fc_9"}
    )
    result = Result("openai-responses", "tool_calls", (call,), (), text="Hi", reasoning=(Reasoning(item_id="rs_1"),))
    assert shape(messages.assistant_message(result, "openai-responses")) == [
        ("reasoning", "rs_1"),
        ("message", None),
        ("function_call", "fc_9"),
    ]


def test_an_item_without_a_position_follows_the_one_before_it_in_the_former_order() -> None:
    calls = (
        ToolCall(0, "a", "a", "w", {}, "{}", messages.CallStatus.COMPLETE, output_index=3),
        ToolCall(1, "b", "b", "w", {}, "{}", messages.CallStatus.COMPLETE),
    )
    blocks = (Reasoning(item_id="rs_0", output_index=0), Reasoning(item_id="rs_5", output_index=5))
    result = Result("openai-responses", "tool_calls", calls, (), reasoning=blocks)
    assert shape(messages.assistant_message(result, "openai-responses")) == [
        ("reasoning", "rs_0"),
        ("function_call", "a"),
        ("function_call", "b"),
        ("reasoning", "rs_5"),
    ]


def test_positions_survive_json_and_cattrs() -> None:
    result = run(interleaved())
    data = result_to_json(result)
    assert [c["output_index"] for c in data["calls"]] == [1, 4]
    assert data["text_output_index"] == 3
    assert converter().structure(data, Result) == result
    # JSON written before these fields existed still reads, as a result without positions.
    for row in data["calls"]:
        del row["output_index"], row["reply_id"]
    for row in data["reasoning"]:
        del row["output_index"]
    del data["text_output_index"]
    old = converter().structure(data, Result)
    assert [c.output_index for c in old.calls] == [None, None]


# -- 2. a call whose item came with its arguments ---------------------------------------------------


def test_a_prefilled_call_keeps_its_item_id_beside_reasoning() -> None:
    whole = call_item(1, "call_a", '{"city": "Oslo"}')
    wire = [
        *reasoning(0),
        {"type": "response.output_item.added", "output_index": 1, "item": whole},
        {"type": "response.output_item.done", "output_index": 1, "item": whole},
        COMPLETED,
    ]
    result = run(wire)
    assert result.calls[0].item == {"type": "function_call", "id": "fc_1"}
    assert shape(messages.assistant_message(result, "openai-responses")) == [
        ("reasoning", "rs_0"),
        ("function_call", "fc_1"),
    ]


# -- 3. a call whose call_id came after its arguments --------------------------------------------------


def late_call(call_id: str = "call_real") -> list[dict[str, Any]]:
    return [
        *reasoning(0),
        {"type": "response.function_call_arguments.delta", "output_index": 1, "item_id": "fc_1", "delta": '{"a": 1}'},
        {"type": "response.output_item.done", "output_index": 1, "item": call_item(1, call_id, '{"a": 1}')},
        COMPLETED,
    ]


def test_a_late_call_id_is_what_goes_back_in_the_call_and_its_answer() -> None:
    r = Reassembler("openai-responses")
    opened = [out for event in late_call() for out in r.feed(event) if type(out).__name__ == "CallOpened"]
    result = r.close()
    call = result.calls[0]
    # The id handed out when the call opened stays: deltas already carried it.
    assert [o.id for o in opened] == [call.id] == ["call_0"]
    assert (call.wire_id, call.reply_id) == ("call_real", "call_real")
    items = messages.assistant_message(result, "openai-responses")
    answer = messages.tool_result(call, "ok", "openai-responses")
    assert items[-1]["call_id"] == answer["call_id"] == "call_real"
    assert items[-1]["id"] == "fc_1"
    validate("openai-responses", items, [answer])


def test_a_late_call_id_another_call_holds_is_renamed_as_any_repeated_id() -> None:
    wire = [*function_call(0, "call_x", "{}"), *late_call("call_x")[2:]]
    result = run(wire)
    first, late = result.calls
    assert (first.id, late.id, late.wire_id, late.reply_id) == ("call_x", "call_1", "call_x", "call_x_d2")
    assert "duplicate-id" in result.codes()
    assert messages.tool_result(late, "ok", "openai-responses")["call_id"] == "call_x_d2"


def test_a_late_id_equal_to_the_synthesized_one_needs_no_reply_id() -> None:
    call = run(late_call("call_0")).calls[0]
    assert (call.id, call.wire_id, call.reply_id) == ("call_0", "call_0", None)


# -- 4. an argument delta that names no item -------------------------------------------------------------


def stray(delta: str) -> dict[str, Any]:
    return {"type": "response.function_call_arguments.delta", "delta": delta}


def test_a_stray_delta_continues_the_only_open_call() -> None:
    start = function_call(0, "call_a", '{"city": ')[:2]
    wire = [
        *start,
        stray('"Oslo"}'),
        {"type": "response.output_item.done", "output_index": 0, "item": call_item(0, "call_a", '{"city": "Oslo"}')},
        COMPLETED,
    ]
    result = run(wire)
    assert [(c.id, c.arguments) for c in result.calls] == [("call_a", {"city": "Oslo"})]
    stray_report = [d for d in result.diagnostics if d.code == "stray-input"]
    assert len(stray_report) == 1 and stray_report[0].event == 3
    assert "response.function_call_arguments.delta" in stray_report[0].message
    assert "output_index 0" in stray_report[0].message
    assert "arguments-replaced" not in result.codes()


def test_a_stray_delta_with_two_calls_open_opens_its_own() -> None:
    wire = [*function_call(0, "call_a", '{"a": ')[:2], *function_call(1, "call_b", '{"b": ')[:2], stray("1}")]
    result = run(wire)
    assert len(result.calls) == 3
    assert "(2 calls are open)" in next(d.message for d in result.diagnostics if d.code == "stray-input")


def test_policy_own_call_keeps_a_stray_delta_apart() -> None:
    wire = [*function_call(0, "call_a", '{"a": ')[:2], stray("1}"), COMPLETED]
    result = run(wire, policies=Policies(stray_input="own-call"))
    assert [c.arguments_json for c in result.calls] == ['{"a": ', "1}"]
    assert "stray-input" in result.codes()


@pytest.mark.parametrize("strict", [False, True])
def test_a_stray_delta_is_a_violation(strict: bool) -> None:
    from fsm.errors import RemoteProtocolError

    wire = [*function_call(0, "call_a", '{"a": ')[:2], stray("1}")]
    if strict:
        with pytest.raises(RemoteProtocolError) as caught:
            run(wire, strict=True)
        assert caught.value.event == 3
    else:
        assert run(wire).diagnostics


def test_uniquify_renames_the_id_a_late_call_goes_back_under() -> None:
    from fsm.history import uniquify

    late = run(late_call()).calls[0]
    (renamed,), renames = uniquify([late], taken=["call_real"])
    assert (renamed.id, renamed.reply_id) == ("call_0", "call_real_d2")
    assert [(r.old, r.new) for r in renames] == [("call_real", "call_real_d2")]
    assert messages.tool_result(renamed, "ok", "openai-responses")["call_id"] == "call_real_d2"


def test_a_recorded_turn_goes_back_in_the_order_it_came() -> None:
    """LM Studio's recording: reasoning at output_index 0, the message at 1, the call at 2."""
    require_captures()
    r = Reassembler("openai-responses")
    r.feed_bytes((CAPTURES / "openai_responses/vercel-lmstudio-glm-done-without-deltas.jsonl").read_bytes())
    result = r.close()
    assert ([b.output_index for b in result.reasoning], result.text_output_index) == ([0], 1)
    assert [c.output_index for c in result.calls] == [2]
    items = messages.assistant_message(result, "openai-responses")
    assert [i["type"] for i in items] == ["reasoning", "message", "function_call"]
    # the message goes back as the item the stream gave: its id and status, its text as output_text
    said = "I'll get the current weather information for San Francisco for you."
    assert items[1] == {
        "type": "message",
        "role": "assistant",
        "id": "msg_y4g4x99xneifrr153t0y4g",
        "status": "completed",
        "content": [{"type": "output_text", "text": said, "annotations": []}],
    }
    validate("openai-responses", items, [messages.tool_result(result.calls[0], "sunny", "openai-responses")])


def test_a_stray_done_with_an_unknown_item_id_confirms_the_only_open_call() -> None:
    done = {"type": "response.function_call_arguments.done", "item_id": "fc_rotated", "arguments": '{"a": 1}'}
    result = run([*function_call(0, "call_a", '{"a": ')[:2], done, COMPLETED])
    assert [(c.id, c.arguments) for c in result.calls] == [("call_a", {"a": 1})]
    (report,) = [d for d in result.diagnostics if d.code == "stray-input"]
    assert "response.function_call_arguments.done" in report.message and "'fc_rotated'" in report.message


def test_stray_input_of_another_call_type_never_joins_an_open_call() -> None:
    piece = {"type": "response.custom_tool_call_input.delta", "delta": "ls"}
    result = run([*function_call(0, "call_a", '{"a": ')[:2], piece])
    assert [(c.type, c.status.value) for c in result.calls] == [("function", "truncated"), ("custom", "truncated")]
    assert "unopened-call" in result.codes() and "stray-input" not in result.codes()


# -- 5. a message item goes back under its id and status -------------------------------------------------


def message(at: int, words: str, *, ended: bool = True) -> list[dict[str, Any]]:
    """A message item as OpenAI streams it: announced in progress, its text, ended completed."""
    item = {"type": "message", "id": f"msg_{at}", "role": "assistant", "content": []}
    events = [{"type": "response.output_item.added", "output_index": at, "item": {**item, "status": "in_progress"}}]
    events += text(at, words) if words else []
    if ended:
        said = [{"type": "output_text", "text": words, "annotations": []}] if words else []
        done = {**item, "status": "completed", "content": said}
        events.append({"type": "response.output_item.done", "output_index": at, "item": done})
    return events


def said(at: int, words: str, status: str = "completed") -> dict[str, Any]:
    content = [{"type": "output_text", "text": words, "annotations": []}]
    return {"type": "message", "role": "assistant", "id": f"msg_{at}", "status": status, "content": content}


def test_a_message_item_goes_back_with_its_id_and_status_beside_reasoning() -> None:
    """The message went back as a plain assistant message, without the msg_ id and status the
    stream gave: the API finds the item that followed a reasoning item by its id."""
    result = run([*reasoning(0), *message(1, "Checking."), *function_call(2, "call_a", "{}"), COMPLETED])
    assert [(p.item_id, p.status) for p in result.text_parts] == [("msg_1", "completed")]
    items = messages.assistant_message(result, "openai-responses")
    assert items[1] == said(1, "Checking.")
    assert shape(items) == [("reasoning", "rs_0"), ("message", "msg_1"), ("function_call", "fc_2")]
    validate("openai-responses", items, [messages.tool_result(result.calls[0], "ok", "openai-responses")])


def test_a_message_cut_before_its_end_keeps_the_status_the_stream_gave() -> None:
    result = run([*reasoning(0), *message(1, "Check", ended=False)])
    items = messages.assistant_message(result, "openai-responses")
    assert items[1] == said(1, "Check", "in_progress")
    validate("openai-responses", items, [])


def test_without_reasoning_a_message_goes_back_without_its_id() -> None:
    # as a call's fc_ id: an id whose reasoning item is not sent is refused ("provided without its
    # required 'reasoning' item"), so it goes back as before
    result = run([*message(0, "Checking."), *function_call(1, "call_a", "{}"), COMPLETED])
    items = messages.assistant_message(result, "openai-responses")
    assert items[0] == {"type": "message", "role": "assistant", "content": "Checking."}
    validate("openai-responses", items, [messages.tool_result(result.calls[0], "ok", "openai-responses")])


def test_a_message_item_without_text_is_not_where_the_text_goes() -> None:
    result = run([*reasoning(0), *message(1, ""), *reasoning(2), *message(3, "Done."), COMPLETED])
    assert result.text_output_index == 3
    assert [(p.text, p.item_id, p.output_index) for p in result.text_parts] == [("", "msg_1", 1), ("Done.", "msg_3", 3)]
    items = messages.assistant_message(result, "openai-responses")
    assert shape(items) == [("reasoning", "rs_0"), ("reasoning", "rs_2"), ("message", "msg_3")]


def test_a_message_items_id_and_status_survive_json_and_cattrs() -> None:
    result = run([*reasoning(0), *message(1, "Checking."), COMPLETED])
    data = result_to_json(result)
    assert [(p["item_id"], p["status"]) for p in data["text_parts"]] == [("msg_1", "completed")]
    assert converter().structure(data, Result) == result
    for part in data["text_parts"]:  # JSON written before these fields existed still reads
        del part["item_id"], part["status"]
    old = converter().structure(data, Result)
    assert messages.assistant_message(old, "openai-responses")[1] == {
        "type": "message",
        "role": "assistant",
        "content": "Checking.",
    }
