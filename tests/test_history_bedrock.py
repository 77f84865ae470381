"""fsm.history reads Bedrock Converse messages: ``toolUse`` blocks are calls and ``toolResult`` blocks
their answers, paired by ``toolUseId``; the one user message after a turn answers it, and a repair
keeps user and assistant alternating as Converse wants. Before, such a history was refused."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

import fsm
from fsm import history, messages
from fsm.cli import main
from fsm.errors import LocalProtocolError
from fsm.history import Kind, RepairPolicy

ASK = {"role": "user", "content": [{"text": "weather in Oslo and Bergen?"}]}


def use(cid: str, city: str = "Oslo") -> dict[str, Any]:
    return {"toolUse": {"toolUseId": cid, "name": "weather", "input": {"city": city}}}


def answer(cid: str, text: str) -> dict[str, Any]:
    return {"toolResult": {"toolUseId": cid, "content": [{"text": text}]}}


def turn(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"text": "Let me look."}, *blocks]}


def results(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def test_a_paired_converse_history_is_clean_and_detected() -> None:
    conversation = [ASK, turn(use("t1"), use("t2", "Bergen")), results(answer("t2", "2 C"), answer("t1", "-3 C"))]
    report = history.check(conversation)
    assert report.format == "bedrock" and report.findings == ()
    assert not history.anything_dangling(conversation)
    assert history.repair(conversation) == (conversation, [])


def test_findings_name_the_converse_ids_and_messages() -> None:
    conversation = [
        ASK,
        turn(use("t1"), use("t1", "Bergen"), use("t3")),
        results(answer("t1", "-3 C"), answer("ghost", "?")),
        {"role": "assistant", "content": [{"text": "Done."}]},
    ]
    found = [(f.kind, f.id, f.message) for f in history.check(conversation).findings]
    assert found == [
        (Kind.DUPLICATE_CALL, "t1", 2),
        (Kind.ORPHAN, "ghost", 3),
        (Kind.DANGLING, "t3", 2),
    ]
    assert history.anything_dangling(conversation)


def test_repair_renames_the_second_call_and_answers_the_dangling_ones_in_the_results_message() -> None:
    conversation = [
        ASK,
        turn(use("t1"), use("t1", "Bergen"), use("t3")),
        results(answer("t1", "-3 C"), answer("t1", "2 C"), answer("ghost", "?")),
    ]
    fixed, changes = history.repair(conversation)
    assert sorted((c.message, c.kind, c.id) for c in changes) == [
        (2, "placeholder-result", "t3"),
        (2, "renamed-call", "t1"),
        (3, "dropped-orphan", "ghost"),
        (3, "renamed-result", "t1"),
    ]
    assert fixed[1]["content"][2] == use("t1_d2", "Bergen")
    said = fixed[2]["content"]
    assert said[:2] == [answer("t1", "-3 C"), answer("t1_d2", "2 C")]
    assert said[2] == {
        "toolResult": {
            "toolUseId": "t3",
            "content": [{"text": RepairPolicy().placeholder}],
            "status": "error",
        }
    }
    assert not history.check(fixed).rejected and history.repair(fixed) == (fixed, [])
    assert conversation[2]["content"][2] == answer("ghost", "?")  # the input is never mutated


def test_a_placeholder_goes_into_the_user_message_that_follows_before_its_text() -> None:
    conversation = [ASK, turn(use("t1")), {"role": "user", "content": [{"text": "well?"}]}]
    fixed, changes = history.repair(conversation)
    assert [c.kind for c in changes] == ["placeholder-result"]
    assert len(fixed) == 3 and fixed[2]["content"][1] == {"text": "well?"}
    assert fixed[2]["content"][0]["toolResult"]["toolUseId"] == "t1"
    # With no user message after it, one is made (Converse wants the answers right after the calls).
    fixed, _ = history.repair([ASK, turn(use("t1"))])
    assert fixed[2]["role"] == "user" and fixed[2]["content"][0]["toolResult"]["toolUseId"] == "t1"
    # drop-call takes the call out and keeps the text said beside it.
    fixed, changes = history.repair(conversation, RepairPolicy(dangling="drop-call"))
    assert [c.kind for c in changes] == ["dropped-call"]
    assert fixed[1] == {"role": "assistant", "content": [{"text": "Let me look."}]}


def test_an_emptied_message_goes_and_its_neighbours_merge_so_roles_still_alternate() -> None:
    conversation = [
        ASK,
        turn(use("t1")),
        results(answer("t1", "-3 C")),
        {"role": "assistant", "content": [{"text": "Anything else?"}]},
        results(answer("ghost", "?")),
        {"role": "assistant", "content": [{"text": "Done."}]},
    ]
    fixed, changes = history.repair(conversation)
    assert [c.kind for c in changes] == ["dropped-orphan", "dropped-empty-message", "merged-messages"]
    assert [m["role"] for m in fixed] == ["user", "assistant", "user", "assistant"]
    assert fixed[3]["content"] == [{"text": "Anything else?"}, {"text": "Done."}]


@pytest.mark.parametrize(
    ("block", "says"),
    [
        ({"toolUse": "t1"}, "message 2: toolUse must be an object, not str"),
        ({"toolUse": {"name": "f", "input": {}}}, "message 2: a toolUse block has no id"),
        ({"toolUse": {"toolUseId": 7, "name": "f"}}, "message 2: a toolUse block's id must be a string, not int"),
        ({"type": "tool_use", "id": "a", "name": "f", "input": {}}, "an Anthropic tool_use block in a Bedrock"),
    ],
)
def test_what_is_no_converse_conversation_is_refused_naming_the_message(block: Any, says: str) -> None:
    conversation = [ASK, {"role": "assistant", "content": [use("t0"), block]}]
    with pytest.raises(LocalProtocolError, match=says):
        history.check(conversation, "bedrock")
    with pytest.raises(LocalProtocolError, match=says):
        history.repair(conversation, format="bedrock")


def test_boto3_takes_the_repaired_history() -> None:
    """The repaired history is what boto3's own client validates and sends: every call answered."""
    pytest.importorskip("boto3")
    from tests.test_messages_bedrock import _thinking_stream
    from tests.test_sdk_loop import converse_client

    body = _thinking_stream()
    client = converse_client(body)
    sent: list[dict[str, Any]] = []
    client.meta.events.register(
        "request-created.bedrock-runtime.ConverseStream", lambda request, **_: sent.append(json.loads(request.body))
    )
    result = fsm.reassemble(client.converse_stream(modelId="m", messages=[ASK])["stream"])
    said = messages.assistant_message(result, "bedrock")
    # The agent crashed before the tool answered: the next request would be refused without a repair.
    broken = [ASK, said, {"role": "user", "content": [{"text": "Are you there?"}]}]
    assert history.check(broken).rejected
    fixed, _ = history.repair(broken)
    client.converse_stream(modelId="m", messages=fixed)
    wire = sent[-1]["messages"]
    assert [m["role"] for m in wire] == ["user", "assistant", "user"]
    uses = [b["toolUse"]["toolUseId"] for b in wire[1]["content"] if "toolUse" in b]
    answered = [b["toolResult"] for b in wire[2]["content"] if "toolResult" in b]
    assert uses == [a["toolUseId"] for a in answered] == ["tooluse_1"] and answered[0]["status"] == "error"
    assert not history.check(wire).rejected


def test_the_cli_checks_a_converse_request_body(tmp_path: Path) -> None:
    body = {"modelId": "m", "messages": [ASK, turn(use("t1"))]}
    path = tmp_path / "converse.json"
    path.write_text(json.dumps(body))
    out = io.StringIO()
    assert main(["history", "check", "--json", "--format", "bedrock", str(path)], stdout=out) == 1
    report = json.loads(out.getvalue())
    assert report["format"] == "bedrock" and [f["kind"] for f in report["findings"]] == ["dangling"]


def test_a_rename_keeps_within_converse_s_64_characters() -> None:
    # a 62-character toolUseId renamed <id>_d2 was 65 long: a history Bedrock refuses (ToolUseId:
    # at most 64 of [a-zA-Z0-9_-]). The stem is cut so the rename fits, the same every time.
    botocore = pytest.importorskip("botocore.session")
    shape = botocore.get_session().get_service_model("bedrock-runtime").shape_for("ToolUseId")
    limit = shape.metadata["max"]
    assert limit == 64
    for length in (60, 61, 62, 64):
        long = "t" + "x" * (length - 1)
        taken = long[:61] + "_d2"  # the first shortened name, already some other call's id: the next one is free
        conversation = [
            ASK,
            turn(use(taken, "Tromso")),
            results(answer(taken, "-9 C")),
            turn(*(use(long, city) for city in ("Oslo", "Bergen", "Molde"))),
            results(answer(long, "-3 C"), answer(long, "2 C"), answer(long, "4 C")),
        ]
        fixed, changes = history.repair(conversation)
        ids = [block["toolUse"]["toolUseId"] for block in fixed[3]["content"][1:]]
        answered = [block["toolResult"]["toolUseId"] for block in fixed[4]["content"]]
        assert ids == answered and len(set(ids)) == 3 and ids[0] == long
        assert all(len(i) <= limit and i.replace("_", "").replace("-", "").isalnum() for i in ids)
        # a stem is cut only as far as it must be (60 or 61 characters: not at all)
        assert ids[1:] == [long[:61] + "_d3", long[:61] + "_d4"]
        assert history.repair(conversation) == (fixed, changes)  # deterministic
        assert history.repair(fixed) == (fixed, [])  # and what it made needs no repair
    # formats with no such limit keep the whole stem
    long = "t" * 64
    chat = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [_chat_call(long), _chat_call(long)]},
        {"role": "tool", "tool_call_id": long, "content": "a"},
        {"role": "tool", "tool_call_id": long, "content": "b"},
    ]
    assert history.repair(chat)[0][1]["tool_calls"][1]["id"] == f"{long}_d2"


def _chat_call(cid: str) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": "weather", "arguments": "{}"}}


def served(cid: str) -> dict[str, Any]:
    return {"toolUse": {"toolUseId": cid, "name": "nova_grounding", "input": {"q": "oslo"}, "type": "server_tool_use"}}


def served_answer(cid: str) -> dict[str, Any]:
    return {"toolResult": {"toolUseId": cid, "content": [{"text": "sunny"}], "type": "nova_grounding_result"}}


def test_a_server_tools_call_and_result_in_the_models_own_message_are_a_turn_of_their_own() -> None:
    # botocore's model: a toolUse may be `type: server_tool_use`, and ConverseStream starts toolResult
    # blocks in the model's output. Such a message was refused ("cannot both make tool calls and answer
    # them") and its server call taken for one the client owed a result.
    said = {"role": "assistant", "content": [served("s1"), served_answer("s1"), {"text": "Sunny."}]}
    conversation = [ASK, said, {"role": "user", "content": [{"text": "thanks"}]}]
    assert history.check(conversation).findings == () and not history.anything_dangling(conversation)
    assert history.repair(conversation) == (conversation, [])
    # beside a client call, which the next message answers
    said["content"].append(use("t1"))
    conversation[2] = results(answer("t1", "-3 C"))
    assert history.check(conversation).findings == ()
    # without its result before a later message: dangling, and repair drops it whatever the policy
    said["content"][:2] = [served("s1")]
    assert [(f.kind, f.id) for f in history.check(conversation).findings] == [(Kind.DANGLING, "s1")]
    fixed, changes = history.repair(conversation, RepairPolicy(dangling="placeholder"))
    assert [(c.kind, c.id) for c in changes] == [("dropped-call", "s1")]
    assert fixed[1]["content"] == [{"text": "Sunny."}, use("t1")]
    assert history.check(fixed).findings == ()


def test_a_client_result_in_an_assistant_message_is_no_server_result() -> None:
    # only a toolResult naming a server call placed before it in the model's message is that call's:
    # reading every result of an assistant message so dropped a client's answer sent with the wrong role;
    # it is a misplaced result, which repair moves into a user message (Converse takes results there)
    conversation = [ASK, turn(use("t1")), {"role": "assistant", "content": [answer("t1", "-3 C")]}]
    assert [(f.kind, f.id, f.message) for f in history.check(conversation).findings] == [
        (Kind.ASSISTANT_AFTER_ASSISTANT, "", 3),  # Converse wants the roles to alternate
        (Kind.MISPLACED_RESULT, "t1", 3),
    ]
    fixed, _ = history.repair(conversation)
    assert fixed[2] == {"role": "user", "content": [answer("t1", "-3 C")]} and history.check(fixed).findings == ()
    # a server result before its call answers nothing there
    said = {"role": "assistant", "content": [served_answer("s1"), served("s1")]}
    report = history.check([ASK, said, {"role": "user", "content": [{"text": "ok"}]}])
    assert (Kind.ORPHAN, "s1") in [(f.kind, f.id) for f in report.findings]


def test_an_id_converse_refuses_is_mapped_in_the_call_and_its_result_as_the_next_turn_maps_it() -> None:
    # Converse takes a toolUseId of 1 to 64 of [a-zA-Z0-9_.:-]. Another provider's id, too long or
    # with a character outside that, was left as it was by repair: a history Bedrock refuses.
    from fsm.messages.bedrock import converse_id

    long, odd, fine = "call_" + "x" * 70, "call/one two", "t" * 64
    conversation = [
        ASK,
        turn(use(long), use(odd, "Bergen"), use(fine, "Molde")),
        results(answer(odd, "2 C"), answer(long, "-3 C"), answer(fine, "4 C")),
    ]
    report = history.check(conversation)
    assert report.rejected
    assert [(f.kind, f.id, f.message) for f in report.findings] == [
        (Kind.UNUSABLE_ID, long, 2),
        (Kind.UNUSABLE_ID, odd, 2),
        (Kind.UNUSABLE_ID, odd, 3),
        (Kind.UNUSABLE_ID, long, 3),
    ]
    fixed, changes = history.repair(conversation)
    assert [(c.kind, c.message, c.id) for c in changes] == [
        ("mapped-call", 2, long),
        ("mapped-call", 2, odd),
        ("mapped-result", 3, long),
        ("mapped-result", 3, odd),
    ]
    assert fixed[1]["content"][1:] == [use(converse_id(long)), use(converse_id(odd), "Bergen"), use(fine, "Molde")]
    # every result is still there, answering the same call: the same mapping, never a loss
    assert fixed[2]["content"] == [
        answer(converse_id(odd), "2 C"),
        answer(converse_id(long), "-3 C"),
        answer(fine, "4 C"),
    ]
    assert converse_id(long) != long and converse_id(odd) == "call_one_two" + converse_id(odd)[12:]
    usable = re.compile(r"[a-zA-Z0-9_.:-]{1,64}")
    assert all(usable.fullmatch(b["toolUse"]["toolUseId"]) for b in fixed[1]["content"][1:])
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])
    assert history.repair(conversation) == (fixed, changes)  # deterministic
    assert conversation[1]["content"][1] == use(long)  # the input is not mutated


def test_a_mapped_id_that_is_also_repeated_is_renamed_once_and_its_answer_follows() -> None:
    from fsm.messages.bedrock import converse_id

    odd = "a b"
    conversation = [ASK, turn(use(odd), use(odd, "Bergen"), use(odd, "Molde")), results(answer(odd, "-3 C"))]
    fixed, changes = history.repair(conversation)
    ids = [b["toolUse"]["toolUseId"] for b in fixed[1]["content"][1:]]
    assert ids == [converse_id(odd), converse_id("a b_d2"), converse_id("a b_d3")] and len(set(ids)) == 3
    assert fixed[2]["content"][0] == answer(ids[0], "-3 C")
    assert [(c.kind, c.message) for c in changes] == [
        ("mapped-call", 2),
        ("renamed-call", 2),
        ("placeholder-result", 2),
        ("renamed-call", 2),
        ("placeholder-result", 2),
        ("mapped-result", 3),
    ]
    assert [b["toolResult"]["toolUseId"] for b in fixed[2]["content"]] == ids
    assert history.check(fixed).findings == ()


def test_a_server_call_with_an_unusable_id_is_mapped_with_its_result() -> None:
    from fsm.messages.bedrock import converse_id

    odd = "srv#1"
    said = {"role": "assistant", "content": [served(odd), served_answer(odd), {"text": "Sunny."}]}
    conversation = [ASK, said, {"role": "user", "content": [{"text": "thanks"}]}]
    fixed, changes = history.repair(conversation)
    assert [c.kind for c in changes] == ["mapped-call", "mapped-result"]
    assert [fixed[1]["content"][j][k]["toolUseId"] for j, k in ((0, "toolUse"), (1, "toolResult"))] == [
        converse_id(odd)
    ] * 2
    assert history.check(fixed).findings == ()


def test_an_id_mapped_onto_one_already_in_its_turn_takes_another_and_no_result_changes_hands() -> None:
    from fsm.messages.bedrock import converse_id

    odd = "a b"
    taken = converse_id(odd)  # another call of the turn already goes by what "a b" maps to
    conversation = [
        ASK,
        turn(use(odd), use(taken, "Bergen")),
        results(answer(taken, "2 C"), answer(odd, "-3 C")),
    ]
    fixed, changes = history.repair(conversation)
    ids = [b["toolUse"]["toolUseId"] for b in fixed[1]["content"][1:]]
    assert ids[1] == taken and ids[0] not in (odd, taken) and ids[0] == taken + "_d2"
    answered = {b["toolResult"]["toolUseId"]: b["toolResult"]["content"][0]["text"] for b in fixed[2]["content"]}
    assert answered == {ids[0]: "-3 C", taken: "2 C"}  # each result still answers its own call
    assert [(c.kind, c.id) for c in changes] == [("mapped-call", odd), ("mapped-result", odd)]
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])
