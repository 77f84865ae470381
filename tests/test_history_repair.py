"""Regressions of issue 13: repair lost, swapped or invented tool results. One test per bug seen."""

from __future__ import annotations

import copy
import importlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from fsm import history
from fsm.cli import main
from fsm.engine.ids import IdAllocator
from fsm.errors import InvalidInput, LocalProtocolError
from fsm.history import Kind, RepairPolicy


def openai_turn(ids: list[str], answers: list[tuple[str, str]]) -> list[dict[str, Any]]:
    calls = [
        {"id": i, "type": "function", "function": {"name": "f", "arguments": f'{{"n": {n}}}'}}
        for n, i in enumerate(ids)
    ]
    return [
        {"role": "assistant", "content": None, "tool_calls": calls},
        *({"role": "tool", "tool_call_id": i, "content": text} for i, text in answers),
    ]


def call_ids(messages: list[dict[str, Any]]) -> list[str]:
    return [c["id"] for m in messages for c in m.get("tool_calls") or []]


def answers(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(m["tool_call_id"], m["content"]) for m in messages if m["role"] == "tool"]


USER = {"role": "user", "content": "go"}


def test_three_calls_under_one_id_keep_their_own_results_in_order() -> None:
    messages = [USER, *openai_turn(["a", "a", "a"], [("a", "r1"), ("a", "r2"), ("a", "r3")])]
    fixed, changes = history.repair(messages)
    assert call_ids(fixed) == ["a", "a_d2", "a_d3"]
    assert answers(fixed) == [("a", "r1"), ("a_d2", "r2"), ("a_d3", "r3")]
    assert [(c.kind, c.message, c.id) for c in changes] == [
        ("renamed-call", 2, "a"),
        ("renamed-call", 2, "a"),
        ("renamed-result", 4, "a"),
        ("renamed-result", 5, "a"),
    ]


def test_a_rename_never_takes_an_id_the_conversation_already_used() -> None:
    messages = [
        USER,
        *openai_turn(["a_d2"], [("a_d2", "r0")]),
        USER,
        *openai_turn(["a", "a"], [("a", "r1"), ("a", "r2")]),
    ]
    fixed, _ = history.repair(messages)
    assert call_ids(fixed) == ["a_d2", "a", "a_d3"]
    assert answers(fixed) == [("a_d2", "r0"), ("a", "r1"), ("a_d3", "r2")]


def test_a_duplicate_call_never_takes_the_next_turns_answer() -> None:
    turn1 = openai_turn(["a", "a"], [("a", "r1")])
    turn2 = openai_turn(["a"], [("a", "r2")])
    fixed, changes = history.repair([USER, *turn1, USER, *turn2])
    assert call_ids(fixed) == ["a", "a_d2", "a"]
    placeholder = RepairPolicy().placeholder
    assert answers(fixed) == [("a", "r1"), ("a_d2", placeholder), ("a", "r2")]
    assert fixed[3]["tool_call_id"] == "a_d2"  # the placeholder sits in turn 1, not turn 2
    assert [(c.kind, c.id) for c in changes] == [("renamed-call", "a"), ("placeholder-result", "a_d2")]


@pytest.mark.parametrize("fmt", ["anthropic", "gemini"])
def test_a_duplicate_result_in_one_message_keeps_the_real_one(fmt: str) -> None:
    if fmt == "anthropic":
        call = {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]}
        blocks = [{"type": "tool_result", "tool_use_id": "a", "content": r} for r in ("real", "again")]
        results = {"role": "user", "content": blocks}
    else:
        call = {"role": "model", "parts": [{"functionCall": {"id": "a", "name": "f", "args": {}}}]}
        parts = [{"functionResponse": {"id": "a", "name": "f", "response": {"r": r}}} for r in ("real", "again")]
        results = {"role": "user", "parts": parts}
    messages = [
        {"role": "user", "content": "go"} if fmt == "anthropic" else {"role": "user", "parts": [{"text": "go"}]}
    ]
    messages += [call, results]
    fixed, changes = history.repair(messages)
    assert [c.kind for c in changes] == ["dropped-duplicate-result"]
    assert "real" in json.dumps(fixed[2]) and "again" not in json.dumps(fixed) and len(fixed) == 3
    assert history.check(fixed).findings == ()


def test_an_emptied_anthropic_message_goes_and_its_neighbours_merge() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "r"}]},
        {"role": "assistant", "content": "thinking"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "ghost", "content": "?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ]
    fixed, changes = history.repair(messages)
    assert [(c.kind, c.message) for c in changes] == [
        ("dropped-orphan", 5),
        ("dropped-empty-message", 5),
        ("merged-messages", 6),
    ]
    assert [m["role"] for m in fixed] == ["user", "assistant", "user", "assistant"]
    assert fixed[3]["content"] == [{"type": "text", "text": "thinking"}, {"type": "text", "text": "done"}]


def test_a_long_chain_of_anthropic_merges_copies_each_block_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every other message an orphan that goes: each user message joins the one before, so one
    # message grows by a block per merge. Copying it whole at each merge made repair quadratic.
    n = 2_000
    messages: list[dict[str, Any]] = []
    for i in range(n):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"t{i}"}]})
        orphan = {"type": "tool_result", "tool_use_id": f"ghost{i}", "content": "?"}
        messages.append({"role": "user", "content": [orphan]})
    repair_module = importlib.import_module("fsm.history.rewrite")  # where repair writes its messages out
    copied = 0
    blocks = repair_module._blocks

    def counted(message: Any, fmt: str) -> list[Any]:
        nonlocal copied
        found = blocks(message, fmt)
        copied += len(found)
        return found

    monkeypatch.setattr(repair_module, "_blocks", counted)
    fixed, changes = history.repair(messages)
    assert [m["content"] for m in fixed] == [[{"type": "text", "text": f"t{i}"} for i in range(n)]]
    assert sum(c.kind == "merged-messages" for c in changes) == n - 1
    assert copied <= 2 * n


def test_an_anthropic_placeholder_joins_the_user_message_that_follows() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
        {"role": "user", "content": "what happened?"},
    ]
    fixed, _ = history.repair(messages)
    assert len(fixed) == 3 and fixed[2]["content"][0]["tool_use_id"] == "a"
    assert fixed[2]["content"][1] == {"type": "text", "text": "what happened?"}


@pytest.mark.parametrize("field", ["functionCall", "function_call"])
@pytest.mark.parametrize("with_id", [True, False])
def test_gemini_drop_call_removes_the_call(field: str, with_id: bool) -> None:
    call = {"name": "f", "args": {}, **({"id": "a"} if with_id else {})}
    messages = [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"text": "let me see"}, {field: call}]},
        {"role": "user", "parts": [{"text": "well?"}]},
    ]
    fixed, changes = history.repair(messages, RepairPolicy(dangling="drop-call"))
    assert [c.kind for c in changes] == ["dropped-call"]
    assert fixed[1] == {"role": "model", "parts": [{"text": "let me see"}]}


def test_gemini_responses_without_ids_answer_calls_with_ids_by_name() -> None:
    # Gemini 3 gives each call an id; google-genai's Part.from_function_response(name=, response=)
    # writes the answer without one, and Gemini pairs it by name. Repair replaced both real
    # results with error placeholders.
    def call(cid: str, name: str) -> dict[str, Any]:
        return {"functionCall": {"id": cid, "name": name, "args": {}}}

    def response(name: str, value: int, cid: str | None = None) -> dict[str, Any]:
        return {"functionResponse": {**({"id": cid} if cid else {}), "name": name, "response": {"r": value}}}

    go = {"role": "user", "parts": [{"text": "go"}]}
    messages = [
        go,
        {"role": "model", "parts": [call("c1", "f"), call("c2", "g"), call("c3", "f")]},
        {"role": "user", "parts": [response("g", 2), response("f", 1), response("f", 3)]},
    ]
    assert history.check(messages).findings == ()
    assert history.repair(messages) == (messages, [])
    # One answered by its id: the response without one answers the other call of its name.
    messages[2] = {"role": "user", "parts": [response("f", 3, "c3"), response("g", 2), response("f", 1)]}
    assert history.check(messages).findings == ()
    assert history.repair(messages) == (messages, [])
    # One more response of the name than calls of it: that one answers nothing.
    messages[2] = {"role": "user", "parts": [response("f", 1), response("g", 2), response("f", 3), response("f", 4)]}
    fixed, changes = history.repair(messages)
    assert [(c.kind, c.message) for c in changes] == [("dropped-orphan", 3)]
    assert fixed[2]["parts"] == messages[2]["parts"][:3]


def test_a_gemini_call_without_an_id_gets_a_placeholder_without_one() -> None:
    messages = [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
    ]
    report = history.check(messages)
    assert [(f.kind, f.id, f.message) for f in report.findings] == [(Kind.DANGLING, "f#1", 2)]
    fixed, changes = history.repair(messages)
    assert "f#" not in json.dumps(fixed)
    assert (
        fixed[2]["parts"][0]["functionResponse"]["name"] == "f" and "id" not in fixed[2]["parts"][0]["functionResponse"]
    )
    assert [(c.kind, c.id) for c in changes] == [("placeholder-result", "f#1")]


def test_an_id_that_reads_like_an_internal_key_is_just_an_id() -> None:
    messages = [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"id": "f#1", "name": "f", "response": {}}}]},
    ]
    kinds = [f.kind for f in history.check(messages).findings]
    assert kinds == [Kind.ORPHAN, Kind.DANGLING]


MALFORMED: list[Any] = [
    ["x"],
    "not a list",
    5,
    [{"role": "assistant", "tool_calls": "abc"}],
    [{"role": "assistant", "tool_calls": ["abc"]}],
    [{"role": "assistant", "tool_calls": [{"id": ["a"], "function": {"name": "f"}}]}],
    [{"role": "assistant", "tool_calls": [{"id": "a", "function": "f"}]}],
    [{"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}],
    [{"role": "tool", "tool_call_id": {"a": 1}, "content": "r"}],
    # (a tool message without a tool_call_id alone tells no format: auto-by-tool-content; so a call does)
    [{"role": "tool", "content": "r"}, {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f"}}]}],
    [{"role": "assistant", "content": [{"type": "tool_use", "id": 7, "name": "f"}]}],
    [{"role": "user", "content": [{"type": "tool_result"}]}],
    [{"role": "user", "content": ["text"]}, {"role": "assistant", "content": [{"type": "tool_use", "id": "a"}]}],
    [{"role": "model", "parts": "abc"}],
    [{"role": "model", "parts": [{"functionCall": "f"}]}],
    [{"role": "model", "parts": [{"functionCall": {"args": {}}}]}],
    [{"role": "user", "parts": [{"functionResponse": {"id": ["a"], "name": "f"}}]}],
    [{"role": "model", "parts": [{"functionCall": {"id": "a", "name": "f"}}, {"functionResponse": {"id": "a"}}]}],
]


@pytest.mark.parametrize("messages", MALFORMED)
def test_malformed_input_raises_local_protocol_error_only(messages: Any) -> None:
    for call in (history.check, history.repair, history.anything_dangling):
        with pytest.raises(LocalProtocolError):
            call(messages)


def test_malformed_arguments_raise_local_protocol_error_only() -> None:
    with pytest.raises(LocalProtocolError):
        history.check([], format="xml")  # type: ignore[arg-type]
    with pytest.raises(LocalProtocolError):
        history.repair([], RepairPolicy(dangling="ignore"))  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="policy must be a RepairPolicy, not str"):
        history.repair([], "drop-call")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="placeholder text must be a str, not int"):
        history.repair([], RepairPolicy(placeholder=0))  # type: ignore[arg-type]
    with pytest.raises(LocalProtocolError):
        history.uniquify([{"id": ["a"]}])
    with pytest.raises(LocalProtocolError):
        history.uniquify(["x"])  # type: ignore[list-item]
    with pytest.raises(LocalProtocolError):
        history.uniquify([], taken=[["a"]])  # type: ignore[list-item]


def test_repair_leaves_its_input_alone() -> None:
    messages = [USER, *openai_turn(["a", "a"], [("a", "r1")]), USER]
    before = copy.deepcopy(messages)
    fixed, _ = history.repair(messages)
    assert messages == before and fixed[0] is messages[0]


def test_the_allocator_resumes_where_it_stopped_and_gives_the_same_ids() -> None:
    allocator = IdAllocator(["a", "a_d3"])
    assert [allocator.claim("a") for _ in range(3)] == ["a_d2", "a_d4", "a_d5"]
    assert allocator.claim("a_d2") == "a_d2_d2" and allocator.claim("b") == "b"


def run_cli(tmp_path: Path, content: str) -> tuple[int, str, str]:
    path = tmp_path / "history.json"
    path.write_text(content)
    out, err = io.StringIO(), io.StringIO()
    code = main(["history", "check", str(path)], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_history_check_of_no_conversation_says_so_and_exits_2(tmp_path: Path) -> None:
    code, out, err = run_cli(tmp_path, '{"foo": 1}')
    assert code == 2 and out == "" and "no conversation found" in err


@pytest.mark.parametrize("messages", MALFORMED[:1] + MALFORMED[3:])
def test_history_check_of_a_malformed_file_is_one_line_and_exit_2(tmp_path: Path, messages: Any) -> None:
    code, out, err = run_cli(tmp_path, json.dumps(messages))
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err and "message 1" in err


def test_history_check_numbers_messages_from_one(tmp_path: Path) -> None:
    code, out, _ = run_cli(tmp_path, json.dumps([USER, *openai_turn(["a"], [])]))
    assert code == 1 and out.startswith("message 2: dangling a:")


@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
def test_history_check_writes_ids_its_output_cannot_encode_as_escapes(tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "history.json"  # ids with a lone surrogate (JSON escapes allow it) and a non-ASCII one
    path.write_text(json.dumps([USER, *openai_turn(["\ud800", "é"], [("\udfff", "r")])]))
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding=encoding)  # strict, as a real stdout (StringIO takes any text)
    err = io.StringIO()
    code = main(["history", "check", str(path)], stdout=out, stderr=err)  # UnicodeEncodeError, exit 3 before
    out.flush()
    written = raw.getvalue().decode(encoding)
    assert code == 1 and err.getvalue() == ""
    assert "dangling \\ud800:" in written and "orphan \\udfff:" in written and "would be rejected" in written


# -- OpenAI Responses input items ------------------------------------------------------------------------


def test_responses_items_are_detected_and_duplicate_call_ids_keep_their_outputs() -> None:
    items = [
        {"role": "user", "content": "go"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "id": "fc_1", "call_id": "a", "name": "f", "arguments": "{}"},
        {"type": "custom_tool_call", "id": "ctc_2", "call_id": "a", "name": "patch", "input": "*** Begin"},
        {"type": "function_call_output", "call_id": "a", "output": "r1"},
        {"type": "custom_tool_call_output", "call_id": "a", "output": "r2"},
    ]
    report = history.check(items)
    assert report.format == "responses" and Kind.DUPLICATE_CALL in [f.kind for f in report.findings]
    fixed, changes = history.repair(items)
    assert [(i.get("call_id"), i.get("output")) for i in fixed[2:]] == [
        ("a", None),
        ("a_d2", None),
        ("a", "r1"),
        ("a_d2", "r2"),
    ]
    assert [c.kind for c in changes] == ["renamed-call", "renamed-result"]
    assert history.check(fixed).findings == ()


def test_responses_placeholders_fit_their_call_and_a_computer_call_without_output_goes() -> None:
    items = [
        {
            "type": "apply_patch_call",
            "call_id": "p",
            "status": "completed",
            "operation": {"type": "delete_file", "path": "x"},
        },
        {"type": "shell_call", "call_id": "s", "action": {"commands": ["ls"]}},
        {
            "type": "local_shell_call",
            "id": "lsh_1",
            "call_id": "l",
            "status": "completed",
            "action": {"type": "exec", "command": ["ls"], "env": {}},
        },
        {
            "type": "computer_call",
            "id": "cu_1",
            "call_id": "c",
            "status": "completed",
            "pending_safety_checks": [],
            "action": {"type": "wait"},
        },
        {"type": "local_shell_call_output", "id": "ghost", "output": "{}"},
        {"role": "user", "content": "and?"},
    ]
    fixed, changes = history.repair(items)
    assert [(c.kind, c.id) for c in changes] == [
        ("placeholder-result", "p"),
        ("placeholder-result", "s"),
        ("placeholder-result", "l"),
        ("dropped-call", "c"),
        ("dropped-orphan", "ghost"),
    ]
    outputs = [i for i in fixed if i.get("type", "").endswith("_output")]
    assert [(o["type"], o.get("call_id", o.get("id"))) for o in outputs] == [
        ("apply_patch_call_output", "p"),
        ("shell_call_output", "s"),
        ("local_shell_call_output", "l"),  # the SDK's input shape keys this one by id
    ]
    assert outputs[0]["status"] == "failed" and outputs[1]["output"][0]["outcome"] == {"type": "exit", "exit_code": 1}
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


def test_uniquify_renames_a_responses_item_by_its_call_id() -> None:
    items = [
        {"type": "function_call", "id": "fc_1", "call_id": "a"},
        {"type": "function_call", "id": "fc_2", "call_id": "a"},
    ]
    out, renames = history.uniquify(items)
    assert [(i["id"], i["call_id"]) for i in out] == [("fc_1", "a"), ("fc_2", "a_d2")] and renames[0].new == "a_d2"


def test_history_check_reads_a_responses_request_body(tmp_path: Path) -> None:
    body = {"input": [{"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"}]}
    code, out, _ = run_cli(tmp_path, json.dumps(body))
    assert code == 1 and out.startswith("message 1: dangling a:") and "responses history" in out


def test_history_check_of_a_file_that_is_not_json_exits_1_like_every_command(tmp_path: Path) -> None:
    code, out, err = run_cli(tmp_path, "[[[")
    assert code == 1 and out == "" and err.startswith("toolcall-fsm: cannot read")
