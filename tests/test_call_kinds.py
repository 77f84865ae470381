"""Every kind of tool call is reassembled and reported, never dropped: freeform custom tools (the
slot spec's ``text`` input kind), built-in client tools, hosted tools, and unknown items."""

from __future__ import annotations

import io
import json
import re
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from fsm import Limits, Reassembler
from fsm.cli import main
from fsm.engine.machine import slot_machine
from fsm.errors import RemoteProtocolError, SpecError
from fsm.events import ArgumentsFragment, ArgumentsSnapshot, CallEnd, CallRef, CallSeen, StreamEnd
from fsm.harness.vectors import VECTOR_DIR
from fsm.reemit import DeltaEmitter
from fsm.results import CallStatus
from fsm.serialize import result_to_json
from fsm.spec import SPEC_DIR, load_machine, slot_spec
from fsm.wire.decoders._responses_items import UnknownItems

CREATED = {"type": "response.created", "response": {}}
COMPLETED = {"type": "response.completed", "response": {}}


def custom_item(status: str = "in_progress", text: str = "", at_id: str = "ctc_1") -> dict[str, Any]:
    return {"type": "custom_tool_call", "id": at_id, "call_id": "call_c", "name": "apply_diff", "input": text}


def added(at: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.added", "output_index": at, "item": item}


def item_done(at: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.done", "output_index": at, "item": item}


def delta(at: int, text: str) -> dict[str, Any]:
    return {"type": "response.custom_tool_call_input.delta", "output_index": at, "item_id": "ctc_1", "delta": text}


def done(at: int, text: str) -> dict[str, Any]:
    return {"type": "response.custom_tool_call_input.done", "output_index": at, "item_id": "ctc_1", "input": text}


def run(events: list[dict[str, Any]], **options: Any) -> Any:
    r = Reassembler("openai-responses", **options)
    for event in events:
        r.feed(event)
    return r.close()


# -- the report: replay used to print calls: [] with no diagnostic -------------------------


def test_replay_prints_a_custom_tool_call(tmp_path: Path) -> None:
    events = json.loads((VECTOR_DIR / "responses-custom-tool-call.json").read_text())["events"]
    path = tmp_path / "custom.sse"
    path.write_text("".join(f"data: {json.dumps(e)}\n\n" for e in events))
    out = io.StringIO()
    assert main(["replay", str(path)], stdout=out, stderr=io.StringIO()) == 0
    (call,) = json.loads(out.getvalue())["calls"]
    assert (call["type"], call["id"], call["name"], call["status"]) == (
        "custom",
        "call_patch",
        "apply_diff",
        "complete",
    )
    assert call["input"].startswith("*** Begin Patch\n") and call["input"].endswith("*** End Patch\n")
    assert call["arguments"] is None and call["arguments_json"] is None


# -- freeform input: the text kind ---------------------------------------------------------------


def test_freeform_input_is_never_scanned_nor_split() -> None:
    # As JSON, "{}" closes a value and "{}" after it would open another call (split-fragment).
    text = '{}{} not json\n  "'
    result = run(
        [
            CREATED,
            added(0, custom_item()),
            delta(0, "{}"),
            delta(0, "{} not"),
            delta(0, " json\n  "),
            delta(0, '"'),
            COMPLETED,
        ]
    )
    (call,) = result.calls
    assert (call.type, call.input, call.status) == ("custom", text, CallStatus.COMPLETE)
    assert "split-fragment" not in result.codes()


def test_whitespace_only_fragments_are_input() -> None:
    result = run([CREATED, added(0, custom_item()), delta(0, "a"), delta(0, "  \n"), delta(0, "b"), COMPLETED])
    assert result.calls[0].input == "a  \nb"


def test_a_repeat_of_the_input_is_not_a_cumulative_resend() -> None:
    result = run([CREATED, added(0, custom_item()), delta(0, "ab"), delta(0, "ab"), done(0, "abab"), COMPLETED])
    assert result.calls[0].input == "abab"
    assert "cumulative-arguments" not in result.codes() and "arguments-replaced" not in result.codes()


def test_a_final_word_differing_only_in_whitespace_replaces_the_input() -> None:
    result = run([CREATED, added(0, custom_item()), delta(0, "x = 1"), done(0, "x = 1\n"), COMPLETED])
    assert result.calls[0].input == "x = 1\n"
    assert "arguments-replaced" in result.codes()


INCOMPLETE = {"type": "response.incomplete", "response": {"incomplete_details": {"reason": "max_output_tokens"}}}


@pytest.mark.parametrize(
    ("after", "status"),
    [
        # OpenAI ends an item cut by max_output_tokens still in_progress (or incomplete), its input's
        # .done already sent: the input may be a prefix, so the call is no call to run
        ([item_done(0, custom_item(text="SELECT 1") | {"status": "in_progress"}), INCOMPLETE], CallStatus.TRUNCATED),
        ([item_done(0, custom_item(text="SELECT 1") | {"status": "incomplete"}), INCOMPLETE], CallStatus.TRUNCATED),
        ([INCOMPLETE], CallStatus.TRUNCATED),  # the turn cut before the item's end
        ([], CallStatus.TRUNCATED),  # the stream cut before it
        ([item_done(0, custom_item(text="SELECT 1") | {"status": "completed"}), INCOMPLETE], CallStatus.COMPLETE),
        ([COMPLETED], CallStatus.COMPLETE),  # a normal finish is the provider's word that it is whole
    ],
)
def test_the_done_event_gives_a_freeform_call_its_input_and_the_items_end_ends_it(
    after: list[dict[str, Any]], status: CallStatus
) -> None:
    # The input's .done ended the call: a custom tool's input cut by max_output_tokens, which OpenAI
    # closes with .done and then an item done `in_progress`, came out complete, a call to run
    result = run([CREATED, added(0, custom_item()), delta(0, "SELECT 1"), done(0, "SELECT 1"), *after])
    assert (result.calls[0].status, result.calls[0].input) == (status, "SELECT 1")
    assert ("truncated" in result.codes()) is (status is CallStatus.TRUNCATED)


def test_a_cut_freeform_call_keeps_its_raw_input() -> None:
    result = run([CREATED, added(0, custom_item()), delta(0, "SELECT")])
    assert (result.calls[0].status, result.calls[0].input) == (CallStatus.TRUNCATED, "SELECT")
    assert "truncated" in result.codes()


def test_text_kind_comes_from_the_call_type_on_any_wire() -> None:
    # The engine does not care which decoder said so: a custom-typed ref makes a text slot.
    r = Reassembler()
    ref = CallRef(index=0, id="c", name="grammar", type="custom")
    for event in (CallSeen(ref), ArgumentsFragment(ref, "}"), ArgumentsSnapshot(ref, "}", confirms=True), CallEnd(ref)):
        r.feed(event)
    r.feed(StreamEnd("stop"))
    assert r.close().calls[0].input == "}"


def test_the_text_kind_has_no_prepare_step_and_the_json_kind_scans() -> None:
    table = slot_machine().table
    assert table["append"]["receiving"][0] is None
    assert table["append"]["opened"][0] is not None and table["append"]["accumulating"][0] is not None
    assert slot_machine().initials == {"json": "opened", "text": "receiving"}
    assert {k.name: k.scanned for k in slot_spec().kinds} == {"json": True, "text": False}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s.replace('initial = "receiving"', 'initial = "nowhere"'), "starts in undeclared state 'nowhere'"),
        (lambda s: s.replace('kind = "text"', 'kind = "yaml"'), "undeclared input kind 'yaml'"),
        (
            lambda s: (
                s + '\n[[transitions]]\nsource = ["receiving"]\ntrigger = "end"\ndest = "value_closed"\nreason = "x"\n'
            ),
            "from input kind 'text' to another kind",
        ),
        (lambda s: s.replace('name = "text"', 'name = "json"'), "input kind 'json' is declared twice"),
    ],
)
def test_malformed_input_kinds_are_refused(tmp_path: Path, edit: Any, message: str) -> None:
    bad = tmp_path / "slot.toml"
    bad.write_text(edit((SPEC_DIR / "slot.toml").read_text()))
    with pytest.raises(SpecError, match=re.escape(message)):
        load_machine(bad)


# -- built-in client tools, hosted tools, unknown items ----------------------------------------------


def test_built_in_items_are_calls_named_for_their_tool_with_their_call_id() -> None:
    action = {"commands": ["ls"], "timeout_ms": 1000}
    item = {"type": "shell_call", "id": "sh_1", "call_id": "call_s", "action": action, "status": "completed"}
    operation = {"type": "delete_file", "path": "old.txt"}
    patch = {"type": "apply_patch_call", "id": "ap_1", "call_id": "call_p", "operation": operation}
    result = run([CREATED, item_done(0, item), item_done(1, dict(patch, status="completed")), COMPLETED])
    rows = [(c.type, c.name, c.id, c.arguments, c.input) for c in result.calls]
    assert rows == [
        ("shell_call", "shell", "call_s", action, None),
        ("apply_patch_call", "apply_patch", "call_p", operation, None),
    ]
    assert json.loads(result.calls[1].arguments_json or "") == operation


def test_a_batch_of_computer_actions_is_kept_under_its_key() -> None:
    actions = [{"type": "click", "button": "left", "x": 1, "y": 2}, {"type": "wait"}]
    item = {"type": "computer_call", "id": "cu", "call_id": "call_k", "actions": actions, "pending_safety_checks": []}
    result = run([CREATED, item_done(0, dict(item, status="completed")), COMPLETED])
    assert (result.calls[0].name, result.calls[0].arguments) == ("computer", {"actions": actions})


def test_hosted_tools_are_server_calls_not_client_calls() -> None:
    mcp = {"type": "mcp_call", "id": "mcp_1", "name": "lookup", "server_label": "s", "arguments": '{"k": 1}'}
    result = run([CREATED, item_done(0, mcp), COMPLETED])
    assert result.calls == ()
    assert [(c.type, c.name, c.id, c.arguments) for c in result.server_tool_calls] == [
        ("mcp_call", "lookup", "mcp_1", {"k": 1})
    ]
    assert result.finish_reason == "stop"  # no client call, so nothing for the client to run


def test_unknown_items_are_reported_once_naming_the_type() -> None:
    item = {"type": "teleport_call", "id": "t", "call_id": "call_t"}
    result = run([CREATED, added(3, item), item_done(3, item), COMPLETED])
    assert result.codes() == ["unknown-item"]
    assert "'teleport_call'" in result.diagnostics[0].message and "3" in result.diagnostics[0].message
    with pytest.raises(RemoteProtocolError, match="teleport_call"):
        run([CREATED, added(3, item)], strict=True)


@pytest.mark.parametrize("at", [[3], {"i": 3}, "3"])
def test_an_unknown_item_at_an_output_index_that_is_no_integer_is_still_reported_once(at: Any) -> None:
    item = {"type": "teleport_call", "id": "t"}
    result = run([CREATED, {**added(0, item), "output_index": at}, {**item_done(0, item), "output_index": at}])
    assert [(d.event, d.code) for d in result.problems() if d.code == "unknown-item"] == [(2, "unknown-item")]
    assert f"at output_index {at}" in result.diagnostics[0].message


def test_unknown_items_are_held_only_while_open() -> None:
    # The output indexes of unknown items were kept for the whole stream, so it grew with every
    # item of a type no reading knows. An item's done takes it out; the items still open are held
    # up to a bound, past which one may be reported twice.
    item = {"type": "teleport_call", "id": "t"}
    r = Reassembler("openai-responses", limits=Limits(max_diagnostics_per_code=10**6))
    r.feed(CREATED)
    for at in range(5000):
        r.feed(added(at, item))
        r.feed(added(at, item))  # resent: said once
        r.feed(item_done(at, item))
    assert len(r._decoder._unknown._open) == 0  # type: ignore[union-attr]
    for at in range(5000, 10000):
        r.feed(added(at, item))
    assert len(r._decoder._unknown._open) <= UnknownItems.OPEN  # type: ignore[union-attr]
    result = r.close()
    assert result.codes().count("unknown-item") == 10000


def test_items_that_call_nothing_are_quiet() -> None:
    items = [{"type": "message", "id": "m", "content": []}, {"type": "function_call_output", "call_id": "c"}]
    result = run([CREATED, *[item_done(i, item) for i, item in enumerate(items)], COMPLETED])
    assert (result.calls, result.codes()) == ((), [])


# -- the output contract -----------------------------------------------------------------------------


def test_every_call_in_the_json_result_has_a_type_and_an_input() -> None:
    vector = json.loads((VECTOR_DIR / "responses-builtin-client-calls.json").read_text())
    data = result_to_json(run(vector["events"]))
    assert [(c["type"], c["name"], c["input"]) for c in data["calls"]] == [
        ("apply_patch_call", "apply_patch", None),
        ("shell_call", "shell", None),
        ("local_shell_call", "local_shell", None),
        ("computer_call", "computer", None),
    ]
    function = result_to_json(
        run([CREATED, item_done(0, {"type": "function_call", "call_id": "f", "name": "g", "arguments": "{}"})])
    )
    assert (function["calls"][0]["type"], function["calls"][0]["input"]) == ("function", None)


def test_re_emitted_deltas_carry_freeform_input_as_custom() -> None:
    r = Reassembler("openai-responses")
    emitter = DeltaEmitter()
    chunks = []
    for event in (CREATED, added(0, custom_item()), delta(0, "a{"), done(0, "a{b"), COMPLETED):
        chunks += emitter.chunks(r.feed(event))
    entries = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks]
    # No "type": a chat chunk's tool call may only name "function"; the custom body says what it is.
    assert entries[0] == {"index": 0, "id": "call_c", "custom": {"input": "", "name": "apply_diff"}}
    assert "".join(e["custom"]["input"] for e in entries[1:]) == "a{b"
    assert r.close().calls[0].input == "a{b"


def test_the_sdk_event_and_item_shapes_are_the_ones_decoded() -> None:
    """The openai SDK's own models, fed as objects: its field names are the ones the decoder reads."""
    responses = pytest.importorskip("openai.types.responses")
    from pydantic import TypeAdapter

    adapter = TypeAdapter(responses.ResponseStreamEvent)
    patch = {"type": "create_file", "path": "a.txt", "diff": "+hi\n"}
    wire = [
        added(0, dict(custom_item(), status="in_progress")),
        dict(delta(0, "line 1\n"), sequence_number=1),
        dict(done(0, "line 1\n"), sequence_number=2),
        item_done(0, dict(custom_item(text="line 1\n"), status="completed")),
        item_done(
            1, {"type": "apply_patch_call", "id": "ap", "call_id": "call_p", "operation": patch, "status": "completed"}
        ),
        {"type": "response.mcp_call_arguments.delta", "item_id": "m", "output_index": 2, "delta": "{}"},
    ]
    objects = []
    for n, event in enumerate(wire):
        event = dict(event, sequence_number=n)
        if event["type"].startswith("response.output_item"):
            event["item"].setdefault("status", "completed")
        objects.append(adapter.validate_python(event))
    r = Reassembler()
    for obj in objects:
        r.feed(obj)
    r.feed(COMPLETED)
    calls = r.close().calls
    assert [(c.type, c.name, c.input, c.arguments) for c in calls] == [
        ("custom", "apply_diff", "line 1\n", None),
        ("apply_patch_call", "apply_patch", None, patch),
    ]


# -- nothing vanishes: input for an item never announced, items the provider gave up on ---------------


def unannounced_delta(at: int, text: str) -> dict[str, Any]:
    return {"type": "response.custom_tool_call_input.delta", "output_index": at, "item_id": "ctc_9", "delta": text}


def test_input_for_an_unannounced_item_opens_the_call_and_a_cut_keeps_its_text() -> None:
    result = run([CREATED, unannounced_delta(0, "*** Begin"), unannounced_delta(0, " Patch")])
    (call,) = result.calls
    assert (call.type, call.status, call.input, call.name) == ("custom", CallStatus.TRUNCATED, "*** Begin Patch", None)
    assert result.codes()[0] == "unopened-call" and "truncated" in result.codes()
    assert "'ctc_9'" in result.diagnostics[0].message and "output_index 0" in result.diagnostics[0].message
    with pytest.raises(RemoteProtocolError, match=r"no output_item\.added opened"):
        run([CREATED, unannounced_delta(0, "x")], strict=True)


def test_an_unannounced_item_gets_its_call_id_and_name_at_its_end() -> None:
    whole = dict(custom_item(text="a+b"), id="ctc_9", status="completed")
    done_event = {"type": "response.custom_tool_call_input.done", "output_index": 0, "item_id": "ctc_9", "input": "a+b"}
    result = run(
        [CREATED, unannounced_delta(0, "a"), unannounced_delta(0, "+b"), done_event, item_done(0, whole), COMPLETED]
    )
    (call,) = result.calls
    assert (call.type, call.wire_id, call.name, call.input, call.status) == (
        "custom",
        "call_c",
        "apply_diff",
        "a+b",
        CallStatus.COMPLETE,
    )
    assert result.codes().count("unopened-call") == 1  # reported once, for the item, not per event


def test_function_arguments_for_an_unannounced_item_are_kept_when_cut() -> None:
    piece = {
        "type": "response.function_call_arguments.delta",
        "output_index": 2,
        "item_id": "fc_9",
        "delta": '{"q": "o',
    }
    result = run([CREATED, piece])
    (call,) = result.calls
    assert (call.type, call.status, call.arguments_json) == ("function", CallStatus.TRUNCATED, '{"q": "o')


@pytest.mark.parametrize("announced_after_input", [False, True])
def test_a_function_item_announced_after_its_closed_input_is_one_call(announced_after_input: bool) -> None:
    """Its input closed a JSON object before the item said whose it is: the announcement (added
    after the input, or only the item's end) names that call, never a second one beside it."""
    item = {"type": "function_call", "id": "fc_9", "call_id": "call_w", "name": "w", "arguments": '{"a": 1}'}
    piece = {"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc_9"}
    piece["delta"] = '{"a": 1}'
    announcement = [added(0, dict(item, arguments=""))] if announced_after_input else []
    result = run([CREATED, piece, *announcement, item_done(0, item), COMPLETED])
    (call,) = result.calls
    assert (call.wire_id, call.name, call.arguments, call.status) == ("call_w", "w", {"a": 1}, CallStatus.COMPLETE)
    assert call.item == {"type": "function_call", "id": "fc_9"}
    assert result.codes().count("late-id") == 1


def test_input_without_an_output_index_is_still_a_call() -> None:
    piece = {"type": "response.function_call_arguments.delta", "item_id": "fc_9", "delta": '{"a": 1}'}
    result = run([CREATED, piece, COMPLETED])
    # Kept with its text; no item ever named it, so it is invalid (missing-name): nothing can run it.
    kept = [(c.type, c.arguments_json, c.status) for c in result.calls]
    assert kept == [("function", '{"a": 1}', CallStatus.INVALID)]
    assert "unopened-call" in result.codes() and "'fc_9'" in result.diagnostics[0].message
    assert "missing-name" in result.codes()


@pytest.mark.parametrize(
    ("item_type", "field", "value"),
    [
        ("apply_patch_call", "operation", {"type": "delete_file", "path": "a.txt"}),
        ("shell_call", "action", {"commands": ["rm -rf build"]}),
        ("local_shell_call", "action", {"type": "exec", "command": ["ls"], "env": {}}),
        ("computer_call", "action", {"type": "click", "button": "left", "x": 1, "y": 2}),
        ("function_call", "arguments", '{"a": 1}'),
    ],
)
def test_an_item_finished_incomplete_is_truncated_never_complete(item_type: str, field: str, value: Any) -> None:
    item = {"type": item_type, "id": "it_1", "call_id": "call_i", "name": "f", field: value}
    result = run(
        [CREATED, added(0, dict(item, status="in_progress")), item_done(0, dict(item, status="incomplete")), COMPLETED]
    )
    (call,) = result.calls
    assert call.status is CallStatus.TRUNCATED and result.complete_calls == ()
    assert call.arguments is None and json.loads(call.arguments_json or "") == (
        json.loads(value) if isinstance(value, str) else value
    )
    (why,) = [d for d in result.diagnostics if d.code == "truncated"]
    assert "incomplete" in why.message


def test_an_announcement_after_the_input_names_the_call_it_opened() -> None:
    result = run([CREATED, unannounced_delta(0, "a"), added(0, custom_item()), delta(0, "b"), done(0, "ab"), COMPLETED])
    (call,) = result.calls
    assert (call.wire_id, call.name, call.input, call.status) == ("call_c", "apply_diff", "ab", CallStatus.COMPLETE)
    assert result.codes().count("unopened-call") == 1


def test_the_built_in_item_is_kept_on_the_call_and_in_traces() -> None:
    from fsm.serialize import event_from_json, event_to_json

    vector = json.loads((VECTOR_DIR / "responses-builtin-client-calls.json").read_text())
    result = run(vector["events"])
    shell = result.calls[1]
    assert shell.item is not None and shell.item["environment"] == {"type": "local"}
    assert shell.item["id"] == "sh_1" and shell.item["status"] == "completed"
    assert result_to_json(result)["calls"][1]["item"] == shell.item
    seen = CallSeen(CallRef(0, "call_s", "shell", type="shell_call"), item=shell.item)
    assert event_from_json(event_to_json(seen)) == seen
    hosted = run([CREATED, item_done(0, {"type": "web_search_call", "id": "ws", "action": {"query": "q"}}), COMPLETED])
    assert hosted.server_tool_calls[0].item is None  # the provider's own: never sent back


@pytest.mark.parametrize("status", [{"a": 1}, ["incomplete"]])
def test_an_item_status_of_no_text_fails_the_stream_there(status: Any) -> None:
    # `status in UNFINISHED` raised TypeError (unhashable) from feed()
    item = {**custom_item(text="x"), "status": status}
    r = Reassembler("openai-responses")
    with pytest.raises(RemoteProtocolError, match=r"item\.status"):
        r.feed(item_done(0, item))
    assert r.close().codes()[-1] == "stream-failed"


@pytest.mark.parametrize(
    "index",
    ["x" * 1_000_000, ["x" * 1_000_000], 10**1000, 1 << 70, {"at": "x" * 1_000_000}],
    ids=["long-string", "list", "past-int-string-limit", "past-64-bits", "object"],
)
def test_an_unknown_item_at_an_index_of_any_size_is_held_in_a_few_bytes(index: object) -> None:
    # An unknown item's output index that was no int was held by its full repr: 1,000 items open,
    # each at a megabyte index, held a gigabyte. Each is held by a digest now, and still said once.
    item = {"type": "teleport_call", "id": "t"}
    r = Reassembler("openai-responses", limits=Limits(max_diagnostics_per_code=10**6))
    r.feed(CREATED)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(64):
            at = index if n == 0 else [n, index]
            r.feed(added(at, item))
            r.feed(added(at, item))  # resent: said once
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 200_000  # 64 MB held before
    r.feed(item_done(index, item))
    r.feed(item_done(index, item))  # its done resent: said no more
    assert r.close().codes().count("unknown-item") == 64
