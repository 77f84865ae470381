"""Hostile audit 20: the last rounds' code (history's server blocks and Converse, LangChain's Gemini
resends, the next turn's messages) against input built to break it.

Each test failed before its fix. Work is counted, not timed."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

import fsm
from fsm import history, messages
from tests import test_hostile_audit15 as audit15
from tests.test_gemini_code_turns import call, code, gem, next_parts, ran
from tests.test_messages import builtin_vector_result, responses_item_stream, synthetic


def gemini_rolls(n: int) -> list[Any]:
    """Two ChatGoogleGenerativeAI chunks of n id-less calls of one tool with the same arguments (n
    dice rolled, then resent), each entry under a fresh uuid of LangChain's."""

    def rolls() -> list[dict[str, Any]]:
        return [{"index": i, "id": str(uuid.uuid4()), "name": "roll", "args": "{}"} for i in range(n)]

    return [audit15.lc_chunk("", rolls(), "google_genai"), audit15.lc_chunk("", rolls(), "google_genai")]


def test_langchain_gemini_resends_of_many_like_calls_cost_the_same_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    # each entry of the second chunk listed every earlier call of its name and arguments again to
    # leave out those the chunk took: n^2 work for n calls resent (4,000 dice: 2.2 s of CPU, 0.14 s now)
    limits = fsm.Limits(max_calls=1_000, max_diagnostics_per_code=1_000)
    result = fsm.reassemble(gemini_rolls(400), limits=limits)
    assert (len(result.calls), result.codes().count("resend")) == (400, 400)
    monkeypatch.setattr(audit15, "ADAPTER", ("fsm/wire/langchain_gemini_code.py",))
    small, large = (audit15.adapter_lines(gemini_rolls(n)) for n in (100, 400))
    assert large <= small * 4 * 1.25


# -- fsm.history on Bedrock Converse: server blocks beside client results -----------------------------------


def test_a_converse_placeholder_in_the_models_message_answers_the_client_call_not_a_server_one() -> None:
    # the answer to toolu_1 sent with the model's role, beside a server call under the id of the call
    # left unanswered: the placeholder went after the answer, behind the server call, and was read as
    # that call's result, so the repaired history was refused (dangling, reused-unanswered)
    def use(cid: str, **kind: str) -> dict[str, Any]:
        return {"toolUse": {"toolUseId": cid, "name": "look", "input": {}, **kind}}

    answer = {"toolResult": {"toolUseId": "toolu_1", "content": [{"text": "-3 C"}]}}
    conversation = [
        {"role": "user", "content": [{"text": "Weather?"}]},
        {"role": "assistant", "content": [use("toolu_1"), use("toolu_2")]},
        {"role": "assistant", "content": [use("toolu_2", type="server_tool_use"), answer]},
    ]
    # (Since audit 30 the answer, a result sent as the model, moves into a user message right after
    # the calls, the placeholder with it: the server call stays in the model's message after them.)
    fixed, changes = history.repair(conversation)
    assert [(c.kind, c.id) for c in changes] == [
        ("placeholder-result", "toolu_2"),
        ("moved-misplaced-result", "toolu_1"),
    ]
    assert not history.check(fixed).rejected and history.repair(fixed)[1] == []
    assert [b["toolResult"]["toolUseId"] for b in fixed[2]["content"]] == ["toolu_1", "toolu_2"]
    assert fixed[2]["content"][0] == answer and fixed[3]["content"] == conversation[2]["content"][:1]


def test_a_converse_drop_merges_the_models_messages_around_it_whatever_server_blocks_they_hold() -> None:
    # a server tool's call and result in the model's message were read as a client's call and its
    # answer, and a message that both calls and answers joins none: the two assistant messages a
    # dropped orphan brought together stayed apart, which Converse refuses (roles must alternate)
    served = [
        {"toolUse": {"toolUseId": "s1", "name": "nova_grounding", "input": {}, "type": "server_tool_use"}},
        {"toolResult": {"toolUseId": "s1", "content": [{"text": "sunny"}]}},
    ]
    orphan = {"toolResult": {"toolUseId": "ghost", "content": [{"text": "-"}]}}
    conversation = [
        {"role": "user", "content": [{"text": "Weather?"}]},
        {"role": "assistant", "content": [*served, {"text": "Sunny."}]},
        {"role": "user", "content": [orphan]},
        {"role": "assistant", "content": [{"text": "Anything else?"}]},
        {"role": "user", "content": [{"text": "No."}]},
    ]
    fixed, changes = history.repair(conversation)
    assert [(c.kind, c.message) for c in changes] == [
        ("dropped-orphan", 3),
        ("dropped-empty-message", 3),
        ("merged-messages", 4),
    ]
    assert [m["role"] for m in fixed] == ["user", "assistant", "user"]
    assert fixed[1]["content"] == [*served, {"text": "Sunny."}, {"text": "Anything else?"}]
    assert history.check(fixed).findings == () and history.repair(fixed)[1] == []
    # two messages making a server call under one id are one message too, the later call renamed, as
    # Claude's runs are (audit 52: they stayed apart, assistant after assistant, which Converse refuses
    # and a second repair merged)
    conversation[3]["content"] = [*served, {"text": "Again."}]
    fixed, changes = history.repair(conversation)
    assert [m["role"] for m in fixed] == ["user", "assistant", "user"]
    assert [b["toolUse"]["toolUseId"] for b in fixed[1]["content"] if "toolUse" in b] == ["s1", "s1_d2"]
    assert ("renamed-call", 4) in [(c.kind, c.message) for c in changes]
    assert history.check(fixed).findings == () and history.repair(fixed)[1] == []


# -- fsm.messages: a built-in call's output the API refuses -----------------------------------------------


@pytest.mark.parametrize(
    "output",
    [
        {"ok": True},
        [{"stdout": "a", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}, {"stdout": "b"}],
        {"stdout": "a", "stderr": "", "outcome": {"type": "exit"}},
        {"stdout": 1, "stderr": "", "outcome": {"type": "timeout"}},
        [7],
    ],
)
def test_a_shell_call_output_object_the_api_refuses_is_refused_here(output: Any) -> None:
    # an object or list given as a shell_call's output went out as it was, without the stdout,
    # stderr or outcome (an exit with its code, or a timeout) the Responses API requires
    pydantic = pytest.importorskip("pydantic")
    responses = pytest.importorskip("openai.types.responses")
    shell = next(call for call in builtin_vector_result().calls if call.type == "shell_call")
    with pytest.raises(fsm.LocalProtocolError, match=r"shell_call output .* not a chunk lacking them"):
        messages.tool_result(shell, output, "openai-responses")
    whole = [
        {"stdout": "a", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}},
        {"stdout": "", "stderr": "", "outcome": {"type": "timeout"}},
    ]
    answer = messages.tool_result(shell, whole, "openai-responses")
    assert answer["output"] == whole
    pydantic.TypeAdapter(responses.ResponseInputItemParam).validate_python(answer)


@pytest.mark.parametrize(
    "output",
    [
        {"image_url": 5},
        {"file_id": None},
        {"file_id": "f", "image_url": None},
        {"type": "png", "image_url": "https://x"},
    ],
)
def test_a_screenshot_object_the_api_refuses_is_refused_here(output: Any) -> None:
    # an image_url or file_id of no text, or a type of another name, went out as it was
    computer = next(call for call in builtin_vector_result().calls if call.type == "computer_call")
    with pytest.raises(fsm.LocalProtocolError, match="screenshot"):
        messages.tool_result(computer, output, "openai-responses")
    taken = messages.tool_result(computer, {"file_id": "file_1", "type": "computer_screenshot"}, "openai-responses")
    assert taken["output"] == {"type": "computer_screenshot", "file_id": "file_1"}


# -- Gemini: an executableCode part that cannot go back --------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"language": {"name": "PYTHON"}}, "language is dict, not a string"),
        ({"language": 1}, "language is int, not a string"),
        ({"code": 7}, "code is int, not a string"),
        ({"id": 3}, "id is int, not a string"),
    ],
)
def test_a_code_part_with_a_field_of_a_wrong_type_is_reported_and_does_not_go_back(
    fields: dict[str, Any], said: str
) -> None:
    # it was kept whole (a number read as text for the call's input) and went back with its result
    # as it came: a part google-genai's Content refuses (a language of no enum name raised
    # AttributeError in its validator), as its codeExecutionResult with such a field was
    genai = pytest.importorskip("google.genai.types")
    events = [gem(code("print(1)", fields=fields)), gem(ran("1\n")), gem(call("report"), finish="STOP")]
    for strict in (False, True):
        result = fsm.reassemble(events, "gemini", strict=strict)
        assert not result.server_tool_calls
        assert [(d.event, d.message) for d in result.diagnostics if d.code == "part-not-reassembled"] == [
            (1, f"parts[0].executableCode.{said}: the part is not read")
        ]
    parts = next_parts(events)
    assert parts == [call("report")]  # half a run (a result without its code) does not go back
    genai.Content.model_validate({"role": "model", "parts": parts})


# -- Responses: a computer_call's batch of actions ----------------------------------------------------------


@pytest.mark.parametrize("actions", [5, "wait", {}, {"type": "click", "x": 1, "y": 2}, [5], [{"type": "wait"}, "x"]])
def test_a_computer_call_whose_actions_are_no_list_of_objects_is_invalid_not_run_and_not_sent(actions: Any) -> None:
    # it was complete, its arguments {"actions": <that value>}, and went back holding it, which the
    # Responses API and its SDK's input item refuse (a batch is a list of action objects)
    item = {"type": "computer_call", "id": "cu_1", "call_id": "call_1", "pending_safety_checks": []}
    result = synthetic("openai-responses", responses_item_stream({**item, "actions": actions}, [], "-"))
    assert [(c.status, c.arguments) for c in result.calls] == [(fsm.CallStatus.INVALID, None)]
    assert "arguments-not-object" in result.codes() and not messages.assistant_message(result, "openai-responses")
    # a list of action objects is a batch
    batch = synthetic("openai-responses", responses_item_stream({**item, "actions": [{"type": "wait"}]}, [], "-"))
    assert [c.arguments for c in batch.complete_calls] == [{"actions": [{"type": "wait"}]}]
