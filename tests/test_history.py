"""History hygiene in the three message formats: every case of the report and the repair."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fsm import history
from fsm.errors import LocalProtocolError
from fsm.history import Kind, RepairPolicy

# -- builders per format: a turn of calls, and results ------------------------------------------------


def openai_calls(*calls: tuple[str, str]) -> list[dict[str, Any]]:
    tool_calls = [{"id": i, "type": "function", "function": {"name": n, "arguments": "{}"}} for i, n in calls]
    return [{"role": "assistant", "content": None, "tool_calls": tool_calls}]


def openai_results(*ids: str) -> list[dict[str, Any]]:
    return [{"role": "tool", "tool_call_id": i, "content": f"result of {i}"} for i in ids]


def anthropic_calls(*calls: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": [{"type": "tool_use", "id": i, "name": n, "input": {}} for i, n in calls]}]


def anthropic_results(*ids: str) -> list[dict[str, Any]]:
    return [
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": i, "content": f"result of {i}"} for i in ids],
        }
    ]


def gemini_calls(*calls: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"role": "model", "parts": [{"functionCall": {"id": i, "name": n, "args": {}}} for i, n in calls]}]


def gemini_results(*ids: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "parts": [{"functionResponse": {"id": i, "name": "f", "response": {"r": i}}} for i in ids]}
    ]


FORMATS = {
    "openai": (openai_calls, openai_results),
    "anthropic": (anthropic_calls, anthropic_results),
    "gemini": (gemini_calls, gemini_results),
}
USER = {"role": "user", "content": "go on"}
GEMINI_USER = {"role": "user", "parts": [{"text": "go on"}]}
GEMINI_REPLY = {"role": "model", "parts": [{"text": "done"}]}


def user(fmt: str) -> dict[str, Any]:
    return GEMINI_USER if fmt == "gemini" else USER


def then(fmt: str) -> dict[str, Any]:
    """A message after a turn's results: the user's (Anthropic joins it to them; OpenAI's are tool
    messages), or Gemini's model reply (Gemini refuses a user content after another: user-after-user)."""
    return GEMINI_REPLY if fmt == "gemini" else USER


def between_turns(fmt: str) -> list[dict[str, Any]]:
    """What comes between a turn's results and the next turn's calls: :func:`then`, and after Gemini's
    model reply the user's next content (a model content right after another is assistant-after-assistant)."""
    return [then(fmt), GEMINI_USER] if fmt == "gemini" else [then(fmt)]


def ids(messages: list[dict[str, Any]], fmt: str) -> tuple[list[str], list[str]]:
    """The call ids and the result ids in a history, in order."""
    calls: list[str] = []
    results: list[str] = []
    for m in messages:
        if fmt == "openai":
            calls += [c["id"] for c in m.get("tool_calls") or []]
            results += [m["tool_call_id"]] if m.get("role") == "tool" else []
        elif fmt == "anthropic":
            blocks = m["content"] if isinstance(m["content"], list) else []
            calls += [b["id"] for b in blocks if b["type"] == "tool_use"]
            results += [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        else:
            calls += [p["functionCall"]["id"] for p in m["parts"] if "functionCall" in p]
            results += [p["functionResponse"]["id"] for p in m["parts"] if "functionResponse" in p]
    return calls, results


def kinds(report: history.Report) -> list[Kind]:
    return [f.kind for f in report.findings]


@pytest.fixture(params=sorted(FORMATS))
def fmt(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_a_whole_history_is_clean(fmt: str) -> None:
    calls, results = FORMATS[fmt]
    messages = [user(fmt), *calls(("a", "f"), ("b", "f")), *results("a", "b"), then(fmt)]
    report = history.check(messages)
    assert report.format == fmt and report.findings == () and not report.rejected
    assert history.repair(messages) == (messages, [])


def test_two_parallel_calls_with_one_id_keep_both_results(fmt: str) -> None:
    calls, results = FORMATS[fmt]
    messages = [user(fmt), *calls(("x", "f"), ("x", "g")), *results("x", "x"), then(fmt)]
    report = history.check(messages)
    assert report.rejected and Kind.DUPLICATE_CALL in kinds(report)
    fixed, changes = history.repair(messages)
    assert [c.kind for c in changes] == ["renamed-call", "renamed-result"]
    assert history.check(fixed).findings == ()
    assert ids(fixed, fmt) == (["x", "x_d2"], ["x", "x_d2"])  # both calls, both results kept


def test_a_constant_id_reused_every_turn_but_always_answered_is_valid(fmt: str) -> None:
    calls, results = FORMATS[fmt]
    messages = [user(fmt)]
    for _ in range(3):
        messages += [*calls(("0", "f")), *results("0"), *between_turns(fmt)]
    report = history.check(messages)
    assert not report.rejected
    assert kinds(report) == [Kind.REUSED, Kind.REUSED]


def test_a_result_for_an_unknown_id_is_orphaned_and_dropped(fmt: str) -> None:
    calls, results = FORMATS[fmt]
    messages = [user(fmt), *calls(("a", "f")), *results("a"), *results("ghost"), then(fmt)]
    report = history.check(messages)
    repeated = [Kind.USER_AFTER_USER] if fmt == "gemini" else []  # Gemini: one user content after another
    assert kinds(report) == [*repeated, Kind.ORPHAN] and report.of(Kind.ORPHAN)[0].id == "ghost"
    fixed, changes = history.repair(messages)
    emptied = {
        "openai": [],
        "anthropic": ["dropped-empty-message", "merged-messages"],
        "gemini": ["dropped-empty-message"],
    }
    assert [c.kind for c in changes] == ["dropped-orphan", *emptied[fmt]]
    assert changes[0].message == 4  # 1-based: the ghost's message
    assert history.check(fixed).findings == ()
    assert ids(fixed, fmt) == (["a"], ["a"])


def test_a_dangling_call_gets_a_placeholder_or_is_dropped(fmt: str) -> None:
    calls, results = FORMATS[fmt]
    messages = [user(fmt), *calls(("a", "f"), ("b", "g")), *results("a"), then(fmt)]
    report = history.check(messages)
    assert kinds(report) == [Kind.DANGLING] and report.findings[0].id == "b"
    assert history.anything_dangling(messages)
    fixed, changes = history.repair(messages)
    assert [c.kind for c in changes] == ["placeholder-result"]
    assert history.check(fixed).findings == ()
    dropped, changes = history.repair(messages, RepairPolicy(dangling="drop-call"))
    assert [c.kind for c in changes] == ["dropped-call"]
    assert history.check(dropped).findings == () and '"b"' not in json.dumps(dropped)


def test_a_second_call_under_one_id_left_unanswered_dangles(fmt: str) -> None:
    """The k-th result with an id answers the k-th call with it: with two calls under one id and one
    result, the second call is unanswered, though the check reports it as a duplicate call (the
    README's loop asks anything_dangling before it repairs; it used to answer no here)."""
    calls, results = FORMATS[fmt]
    one_result = [user(fmt), *calls(("a", "f"), ("a", "f")), *results("a"), then(fmt)]
    assert kinds(history.check(one_result)) == [Kind.DUPLICATE_CALL]
    assert history.anything_dangling(one_result)
    assert [c.kind for c in history.repair(one_result)[1]] == ["renamed-call", "placeholder-result"]
    both = [user(fmt), *calls(("a", "f"), ("a", "f")), *results("a", "a"), then(fmt)]
    assert history.check(both).rejected and not history.anything_dangling(both)  # paired; only the id clashes
    extra = [user(fmt), *calls(("a", "f")), *results("a"), then(fmt), *results("a")]
    assert kinds(history.check(extra)) == [Kind.DUPLICATE_RESULT] and history.anything_dangling(extra)


def test_a_duplicate_result_is_reported_and_dropped(fmt: str) -> None:
    calls, results = FORMATS[fmt]
    messages = [user(fmt), *calls(("a", "f")), *results("a"), then(fmt), *results("a")]
    report = history.check(messages)
    assert Kind.DUPLICATE_RESULT in kinds(report) or Kind.ORPHAN in kinds(report)
    fixed, _ = history.repair(messages)
    assert history.check(fixed).findings == ()


def test_reuse_of_an_id_whose_call_was_never_answered(fmt: str) -> None:
    calls, results = FORMATS[fmt]
    messages = [user(fmt), *calls(("a", "f")), user(fmt), *calls(("a", "f")), *results("a"), then(fmt)]
    assert kinds(history.check(messages)) == [Kind.DANGLING, Kind.REUSED_UNANSWERED]


def test_repair_never_touches_a_whole_turn(fmt: str) -> None:
    calls, results = FORMATS[fmt]
    whole = [user(fmt), *calls(("a", "f")), *results("a"), *between_turns(fmt)]
    broken = [*calls(("b", "g")), user(fmt)]
    fixed, _ = history.repair([*whole, *broken])
    assert fixed[: len(whole)] == whole


def test_an_unrelated_400_is_no_reason_to_touch_history(fmt: str) -> None:
    calls, results = FORMATS[fmt]
    messages = [user(fmt), *calls(("a", "f")), *results("a"), then(fmt)]
    error = "HTTP 400: this model's maximum context length is 8192 tokens"
    assert "400" in error and not history.anything_dangling(messages)


def test_gemini_calls_without_ids_pair_by_name_and_order() -> None:
    model = {
        "role": "model",
        "parts": [
            {"functionCall": {"name": "sum", "args": {"a": 1}}},
            {"functionCall": {"name": "sum", "args": {"a": 2}}},
        ],
    }
    one = {"role": "user", "parts": [{"functionResponse": {"name": "sum", "response": {"r": 1}}}]}
    two = {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "sum", "response": {"r": 1}}},
            {"functionResponse": {"name": "sum", "response": {"r": 2}}},
        ],
    }
    assert history.check([GEMINI_USER, model, two]).findings == ()
    report = history.check([GEMINI_USER, model, one])
    assert kinds(report) == [Kind.DANGLING] and report.findings[0].id == "sum#2"  # the 2nd, 1-based
    fixed, _ = history.repair([GEMINI_USER, model, one])
    assert history.check(fixed).findings == ()


def test_gemini_calls_without_ids_in_later_turns_are_new_calls_not_reused_ids() -> None:
    # `sum#1` names the first id-less sum call of its own turn: every Gemini 2.x conversation that
    # calls a tool again in a later turn was reported as reusing an id it never had.
    model = {"role": "model", "parts": [{"functionCall": {"name": "sum", "args": {"a": 1}}}]}
    answer = {"role": "user", "parts": [{"functionResponse": {"name": "sum", "response": {"r": 1}}}]}

    assert history.check([GEMINI_USER, model, answer, model, answer]).findings == ()
    report = history.check([GEMINI_USER, model, GEMINI_USER, model, answer])
    assert [(f.kind, f.id, f.message) for f in report.findings] == [(Kind.DANGLING, "sum#1", 2)]
    assert history.repair([GEMINI_USER, model, answer, model, answer])[1] == []


# -- uniquify -------------------------------------------------------------------------------------------------


def test_uniquify_uses_the_engine_rule_and_returns_the_renames() -> None:
    calls = [{"id": "x", "name": "f"}, {"id": "x", "name": "g"}, {"id": "", "name": "h"}, {"id": "y", "name": "k"}]
    out, renames = history.uniquify(calls, taken=["y"])
    assert [c["id"] for c in out] == ["x", "x_d2", "call_2", "y_d2"]
    assert [(r.position, r.old, r.new) for r in renames] == [(1, "x", "x_d2"), (2, None, "call_2"), (3, "y", "y_d2")]
    assert json.dumps(history.uniquify(calls, taken=["y"])[0]) == json.dumps(out)  # byte for byte


def test_uniquify_takes_the_engines_calls() -> None:
    from fsm import Reassembler

    r = Reassembler("openai-chat")
    r.feed(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}]},
                }
            ]
        }
    )
    calls = r.close().calls
    out, renames = history.uniquify(calls, taken=["c"])
    assert out[0].id == "c_d2" and out[0].wire_id == "c" and renames[0].new == "c_d2"


# -- command line ---------------------------------------------------------------------------------------------


def test_history_check_command(tmp_path: Any) -> None:
    import io
    import sys

    from fsm.cli import main

    good = tmp_path / "good.json"
    good.write_text(json.dumps([USER, *openai_calls(("a", "f")), *openai_results("a")]))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"messages": [USER, *openai_calls(("a", "f")), USER]}))
    out = io.StringIO()
    assert main(["history", "check", str(good)], stdout=out, stderr=sys.stderr) == 0
    out = io.StringIO()
    assert main(["history", "check", "--json", str(bad)], stdout=out, stderr=sys.stderr) == 1
    data = json.loads(out.getvalue())
    assert data["rejected"] is True and data["findings"][0]["kind"] == "dangling"
    # a Responses request whose input is the user's text alone is a conversation (it exited 2: none found)
    text_only = tmp_path / "text.json"
    text_only.write_text(json.dumps({"model": "m", "input": "What is the weather?"}))
    out = io.StringIO()
    assert main(["history", "check", str(text_only)], stdout=out, stderr=sys.stderr) == 0
    assert out.getvalue() == "history of 1 message tells no format: not judged (name one with --format)\n"
    # a call's argument of 5,000 digits (past Python's int-string limit) is read, as the engine reads
    # it (it was "cannot read", exit 1)
    huge = tmp_path / "huge.json"
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"n": "HUGE"}}]}
    answer = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}
    huge.write_text(json.dumps([USER, call, answer]).replace('"HUGE"', "9" * 5000))
    out = io.StringIO()
    assert main(["history", "check", str(huge)], stdout=out, stderr=sys.stderr) == 0
    assert "pairs up" in out.getvalue()


# -- Ollama: no ids, paired by tool name and order -----------------------------------------------------------


def ollama_calls(*names: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "tool_calls": [{"function": {"name": n, "arguments": {}}} for n in names]}]


def ollama_results(*names: str) -> list[dict[str, Any]]:
    return [{"role": "tool", "content": f"result {k} of {n}", "tool_name": n} for k, n in enumerate(names)]


def test_ollama_answers_pair_by_tool_name_and_order() -> None:
    messages = [USER, *ollama_calls("f", "g", "f"), *ollama_results("g", "f", "f"), USER]
    report = history.check(messages)
    assert report.format == "ollama" and report.findings == ()
    assert history.repair(messages) == (messages, [])
    # a later turn calling the same tools makes new calls: `f#1` is a place in its turn, not an id
    again = [*messages, *ollama_calls("f"), *ollama_results("f")]
    assert history.check(again).findings == ()
    assert history.check([USER, *ollama_results("f")]).format == "ollama"  # a tool message tells too


def test_ollama_two_calls_to_one_tool_and_one_answer_take_it_as_the_first_calls() -> None:
    # Without ids, the k-th answer naming a tool answers the k-th call of it: one answer is the
    # first call's, and the second call is the one left dangling, whatever the agent meant.
    messages = [USER, *ollama_calls("f", "f"), *ollama_results("f"), USER]
    report = history.check(messages)
    assert [(f.kind, f.id, f.message) for f in report.findings] == [(Kind.DANGLING, "f#2", 2)]
    fixed, changes = history.repair(messages)
    assert [(c.kind, c.id) for c in changes] == [("placeholder-result", "f#2")]
    assert fixed[:3] == messages[:3] and fixed[4:] == messages[3:]
    assert fixed[3] == {"role": "tool", "content": RepairPolicy().placeholder, "tool_name": "f"}
    assert not history.check(fixed).rejected and history.repair(fixed) == (fixed, [])
    fixed, changes = history.repair(messages, RepairPolicy(dangling="drop-call"))
    assert fixed[1] == ollama_calls("f")[0] and [c.kind for c in changes] == ["dropped-call"]


def test_ollama_orphan_and_duplicate_answers_are_dropped() -> None:
    messages = [USER, *ollama_calls("f"), *ollama_results("f", "f", "g"), USER]
    report = history.check(messages)
    assert [(f.kind, f.id) for f in report.findings] == [(Kind.ORPHAN, "f#2"), (Kind.ORPHAN, "g#1")]
    fixed, changes = history.repair(messages)
    assert fixed == [USER, *ollama_calls("f"), *ollama_results("f"), USER]
    assert [c.kind for c in changes] == ["dropped-orphan", "dropped-orphan"]
    unanswered = [USER, *ollama_calls("f"), USER]
    assert history.anything_dangling(unanswered) and not history.anything_dangling(fixed)


def test_ollama_names_are_required_to_pair() -> None:
    nameless = {"role": "tool", "content": "done"}
    with pytest.raises(LocalProtocolError, match=r"message 3: a tool message's tool_name is missing: Ollama pairs"):
        history.check([USER, *ollama_calls("f"), nameless], "ollama")
    with pytest.raises(LocalProtocolError, match=r"message 2: a tool call's function name is missing"):
        history.check([USER, {"role": "assistant", "tool_calls": [{"function": {"arguments": {}}}]}], "ollama")
    with pytest.raises(LocalProtocolError, match=r"message 2: a tool call's function must be an object"):
        history.repair([USER, {"role": "assistant", "tool_calls": [{"function": "f"}]}], format="ollama")
    with pytest.raises(LocalProtocolError, match=r"message 3: a tool message's tool_name must be a string, not int"):
        history.check([USER, *ollama_calls("f"), {**nameless, "tool_name": 5}])
    # an OpenAI-shaped history (ids, text arguments) is not taken for Ollama's
    assert history.check([USER, *openai_calls(("a", "f")), *openai_results("a")]).format == "openai"
    # a raw Ollama response's call may carry an id: its arguments (an object) still tell the format
    raw = {"role": "assistant", "tool_calls": [{"id": "call_1", "function": {"name": "f", "arguments": {}}}]}
    assert history.check([USER, raw, *ollama_results("f")]).findings == ()


def test_cohere_messages_read_as_openai_chat() -> None:
    # Cohere v2: tool_calls with ids and text arguments, a tool_plan, answers by tool_call_id
    call = {"id": "w_1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}
    said = {"role": "assistant", "tool_plan": "I will look it up.", "tool_calls": [call, {**call, "id": "w_2"}]}
    answer = {"role": "tool", "tool_call_id": "w_1", "content": [{"type": "document", "document": {"data": "-3"}}]}
    report = history.check([USER, said, answer])
    assert report.format == "openai" and [(f.kind, f.id) for f in report.findings] == [(Kind.DANGLING, "w_2")]
    fixed, _ = history.repair([USER, said, answer])
    assert fixed[3] == {"role": "tool", "tool_call_id": "w_2", "content": RepairPolicy().placeholder}
