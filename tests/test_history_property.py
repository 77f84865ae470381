"""Property: repair never loses, swaps or invents a tool result, in every message format.

Conversations are drawn with a small pool of ids (so ids collide within and across turns), with
missing, duplicated and orphaned results and result messages after the user's text (which answer
the calls of the turn before it still waiting, but where the model spoke in between). Every call and every result
carries a tag of its own, so the test can follow each one through repair. The truth the test holds
repair to is the rule, computed here independently: within a turn, the k-th result carrying id x
answers the k-th call with id x (for a Gemini call without an id, and for every Ollama call: the
k-th id-less response of its name answers the k-th id-less call of that name).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fsm import history
from fsm.errors import LocalProtocolError
from fsm.history import RepairPolicy

IDS = ["a", "b", "c", "a_d2"]  # a_d2: a rename must not collide with an id already in use
NAMES = ["f", "g"]
FORMATS = ["openai", "anthropic", "gemini", "responses", "ollama", "bedrock"]
IDLESS = {"gemini": [*IDS, None], "ollama": [None]}  # the ids a call or result may carry, where not IDS
# Responses: each id in the pool stands for one kind of call item, so an output always fits its call.
RESPONSES_CALL = {
    "a": "function_call",
    "b": "custom_tool_call",
    "c": "local_shell_call",
    "a_d2": "apply_patch_call",
    "d": "shell_call",
    "e": "computer_call",
    "ghost": "function_call",
}

Tagged = tuple[str | None, str, str]  # (id, name, tag)


def responses_call(cid: str, name: str, tag: str) -> dict[str, Any]:
    kind = RESPONSES_CALL[cid]
    item: dict[str, Any] = {"type": kind, "id": f"item_{tag}", "call_id": cid}
    if kind == "function_call":
        return {**item, "name": name, "arguments": "{}"}
    if kind == "custom_tool_call":
        return {**item, "name": name, "input": "*** Begin Patch"}
    if kind == "apply_patch_call":
        return {**item, "status": "completed", "operation": {"type": "delete_file", "path": "x.py"}}
    if kind == "shell_call":
        return {**item, "action": {"commands": ["ls"]}}
    if kind == "local_shell_call":
        return {**item, "status": "completed", "action": {"type": "exec", "command": ["ls"], "env": {}}}
    return {**item, "status": "completed", "pending_safety_checks": [], "action": {"type": "wait"}}


def responses_output(rid: str, tag: str) -> dict[str, Any]:
    kind = RESPONSES_CALL[rid] + "_output"
    if kind == "local_shell_call_output":  # the SDK's input shape keys it by id
        return {"type": kind, "id": rid, "output": tag}
    item: dict[str, Any] = {"type": kind, "call_id": rid}
    if kind == "shell_call_output":
        return {**item, "output": [{"stdout": tag, "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]}
    if kind == "computer_call_output":
        return {**item, "output": {"type": "computer_screenshot", "image_url": tag}}
    if kind == "apply_patch_call_output":
        return {**item, "status": "completed", "output": tag}
    return {**item, "output": tag}


def output_tag(item: dict[str, Any]) -> str | None:
    """The tag of a Responses output item (None for a placeholder)."""
    output = item.get("output")
    if item["type"] == "shell_call_output":
        output = output[0]["stdout"]
    elif item["type"] == "computer_call_output":
        output = output["image_url"]
    return output if isinstance(output, str) and output.startswith("r") else None


def call_item(fmt: str, cid: str | None, name: str, tag: str) -> dict[str, Any]:
    if fmt == "ollama":
        return {"function": {"name": name, "arguments": {"tag": tag}}}
    if fmt == "openai":
        return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps({"tag": tag})}}
    if fmt == "anthropic":
        return {"type": "tool_use", "id": cid, "name": name, "input": {"tag": tag}}
    if fmt == "bedrock":
        return {"toolUse": {"toolUseId": cid, "name": name, "input": {"tag": tag}}}
    call: dict[str, Any] = {"name": name, "args": {"tag": tag}}
    return {"functionCall": call if cid is None else {"id": cid, **call}}


def result_item(fmt: str, rid: str | None, name: str, tag: str) -> dict[str, Any]:
    if fmt == "ollama":
        return {"role": "tool", "content": tag, "tool_name": name}
    if fmt == "openai":
        return {"role": "tool", "tool_call_id": rid, "content": tag}
    if fmt == "anthropic":
        return {"type": "tool_result", "tool_use_id": rid, "content": tag}
    if fmt == "bedrock":
        return {"toolResult": {"toolUseId": rid, "content": [{"text": tag}]}}
    response: dict[str, Any] = {"name": name, "response": {"tag": tag}}
    return {"functionResponse": response if rid is None else {"id": rid, **response}}


def text(fmt: str, role: str, words: str) -> dict[str, Any]:
    if fmt == "gemini":
        return {"role": "model" if role == "assistant" else "user", "parts": [{"text": words}]}
    if fmt == "bedrock":  # Converse content is a list of blocks
        return {"role": role, "content": [{"text": words}]}
    return {"role": role, "content": words}


def calls_messages(fmt: str, calls: list[Tagged], preamble: bool) -> list[dict[str, Any]]:
    if fmt == "responses":
        reasoning = [{"type": "reasoning", "id": "rs_1", "summary": []}] if preamble else []
        return reasoning + [responses_call(cid, name, tag) for cid, name, tag in calls if cid is not None]
    items = [call_item(fmt, *c) for c in calls]
    if fmt in ("openai", "ollama"):
        return [{"role": "assistant", "content": "thinking" if preamble else None, "tool_calls": items}]
    if fmt == "anthropic":
        return [{"role": "assistant", "content": ([{"type": "text", "text": "thinking"}] if preamble else []) + items}]
    if fmt == "bedrock":
        return [{"role": "assistant", "content": ([{"text": "thinking"}] if preamble else []) + items}]
    return [{"role": "model", "parts": ([{"text": "thinking"}] if preamble else []) + items}]


def results_messages(fmt: str, results: list[Tagged]) -> list[dict[str, Any]]:
    if not results:
        return []
    if fmt == "responses":
        return [responses_output(rid, tag) for rid, _, tag in results if rid is not None]
    if fmt in ("openai", "ollama"):
        return [result_item(fmt, *r) for r in results]
    field = "content" if fmt in ("anthropic", "bedrock") else "parts"
    return [{"role": "user", field: [result_item(fmt, *r) for r in results]}]


@st.composite
def conversations(draw: st.DrawFn, fmt: str) -> tuple[list[dict[str, Any]], dict[str, str | None], set[str], set[str]]:
    """Messages, the truth (call tag -> the tag of the result that answers it, or None), the
    tags of every result in the input and the tags of the calls no placeholder can answer
    (Responses computer calls: their output is a screenshot)."""
    pool = {**IDLESS, "responses": [*IDS, "d", "e"]}.get(fmt, IDS)
    ids = st.sampled_from(pool)
    screens: set[str] = set()
    messages: list[dict[str, Any]] = [text(fmt, "user", "go")]
    truth: dict[str, str | None] = {}
    all_results: set[str] = set()
    serial = iter(range(10_000))
    run_calls: list[Tagged] = []  # Anthropic, Converse, Gemini: the calls of the model's messages in a row so far
    for _ in range(draw(st.integers(0, 4))):
        calls = [(draw(ids), draw(st.sampled_from(NAMES)), f"c{next(serial)}") for _ in range(draw(st.integers(1, 4)))]
        results: list[Tagged] = []
        for cid, name, _tag in calls:
            for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2]))):  # missing, answered, answered twice
                # A Gemini answer may leave its call's id out (google-genai's from_function_response).
                rid = draw(st.sampled_from([cid, None])) if fmt in IDLESS else cid
                results.append((rid, name, f"r{next(serial)}"))
        orphan_ids = {"gemini": [*IDS, "ghost", None], "ollama": [None]}.get(fmt, [*IDS, "ghost"])
        for _ in range(draw(st.integers(0, 2))):  # orphans, which may carry an id the turn calls
            results.append((draw(st.sampled_from(orphan_ids)), draw(st.sampled_from(NAMES)), f"r{next(serial)}"))
        results = draw(st.permutations(results))
        messages += calls_messages(fmt, calls, draw(st.booleans()))
        if fmt == "responses":
            screens |= {tag for cid, _, tag in calls if cid == "e"}
        if fmt == "anthropic" and results and draw(st.booleans()):  # text before results: repair moves them first
            messages.append(text(fmt, "user", "before"))
        messages += results_messages(fmt, results)
        all_results |= {tag for *_, tag in results}
        turn_calls = [*run_calls, *calls]  # the calls its results answer
        # Calls messages in a row are one turn (Anthropic's API combines them; Converse and Gemini
        # refuse them, and repair merges them): paired together.
        if fmt in ("anthropic", "bedrock", "gemini"):
            run_calls += calls
            if results:
                truth.update(pair(run_calls, results))
                run_calls = []
        else:
            truth.update(pair(calls, results))
        if draw(st.booleans()) or (fmt == "responses" and not results):  # else the next turn's calls join this one
            messages.append(text(fmt, "user", "next"))
            truth.update(pair(run_calls, []))
            run_calls = []
            if draw(st.booleans()):  # results after the user's text, before the model's next message
                if fmt == "anthropic":  # its API makes one turn of the user messages in a row: after another
                    messages.append(text(fmt, "assistant", "ok"))
                stray_ids = st.sampled_from([None] if fmt == "ollama" else IDS)
                stray = [(draw(stray_ids), "f", f"r{next(serial)}") for _ in range(draw(st.integers(1, 2)))]
                messages += results_messages(fmt, stray)
                all_results |= {tag for *_, tag in stray}
                # They answer the turn's calls still waiting (result-after-text): OpenAI's, Ollama's,
                # Responses', Gemini's and Converse's turn takes more results, before or after a
                # message that answered it. Anthropic's come after the model's next message: they
                # answer nothing.
                if fmt != "anthropic":
                    truth.update(pair(turn_calls, [*results, *stray]))
            if draw(st.booleans()):
                messages.append(text(fmt, "assistant", "ok"))
    truth.update(pair(run_calls, []))
    return messages, truth, all_results, screens


def pair(calls: list[Tagged], results: list[Tagged]) -> dict[str, str | None]:
    """The rule: the k-th result with a key answers the k-th call with that key."""
    call_keys = keyed([(cid, name) for cid, name, _ in calls])
    result_keys = by_name(list(zip(call_keys, [name for _, name, _ in calls], strict=True)), results)
    waiting: dict[Any, list[str]] = {}
    for key, (*_, tag) in zip(call_keys, calls, strict=True):
        waiting.setdefault(key, []).append(tag)
    answers: dict[str, str | None] = {tag: None for *_, tag in calls}
    for key, (*_, tag) in zip(result_keys, results, strict=True):
        queue = waiting.get(key)
        if queue:
            answers[queue.pop(0)] = tag
    return answers


def keyed(calls: list[tuple[str | None, str]]) -> list[str]:
    """A turn's call keys: the id, or ``name:<name>/<k>`` for the k-th id-less call of a name."""
    seen: dict[str, int] = {}
    keys = []
    for cid, name in calls:
        if cid is None:
            seen[name] = seen.get(name, 0) + 1
        keys.append(cid if cid is not None else f"name:{name}/{seen[name]}")
    return keys


def by_name(calls: list[tuple[str, str]], results: list[Tagged]) -> list[str]:
    """Each result's key. A Gemini response without an id takes the key of the first call of its
    name that is alone under its key and that no result answers (those with ids answer first);
    one left over answers nothing (``name:<name>``)."""
    alone = {key for key, _ in calls if [k for k, _ in calls].count(key) == 1}
    answered = {rid for rid, _, _ in results if rid is not None}
    keys = []
    for rid, name, _ in results:
        if rid is None:
            found = next((k for k, called in calls if called == name and k in alone and k not in answered), None)
            answered.add(found)
            keys.append(found or f"name:{name}")
        else:
            keys.append(rid)
    return keys


def read(
    fmt: str, messages: list[dict[str, Any]]
) -> tuple[list[tuple[str, str, int]], list[tuple[str, str | None, int]]]:
    """The calls (tag, key, turn) and the results (key, tag or None for a placeholder, turn) in order,
    a key being the id (or ``name:<name>`` for an id-less Gemini one), turns numbered by the call
    message that opened them: OpenAI's tool messages and Anthropic's and Gemini's one results
    message right after it belong to it. A result anywhere else fails the test."""
    if fmt == "responses":
        return read_responses(messages)
    calls: list[tuple[str, str, int]] = []
    results: list[tuple[str, str | None, int]] = []
    turn, open_turn = -1, False
    role, made_in_run = None, False  # Anthropic: the last message's role; whether its run made calls
    turn_calls: list[tuple[str, str]] = []  # Gemini, Ollama: the open turn's call keys and names
    turn_results: list[Tagged] = []  # Ollama: the open turn's results so far, one tool message each
    for m in messages:
        if fmt == "ollama":
            found = []
            if m["role"] == "tool":
                turn_results = [*turn_results, (None, m["tool_name"], m["content"])] if open_turn else []
                key = by_name(turn_calls, turn_results)[-1] if open_turn else f"name:{m['tool_name']}"
                found = [(key, m["content"])]
            fcalls = [c["function"] for c in m.get("tool_calls") or []]
            call_keys = keyed([(None, c["name"]) for c in fcalls])
            made = [(key, c["arguments"]["tag"]) for key, c in zip(call_keys, fcalls, strict=True)]
            if made:
                turn_calls, turn_results = [(key, c["name"]) for key, c in zip(call_keys, fcalls, strict=True)], []
        elif fmt == "openai":
            found = [(m["tool_call_id"], m["content"])] if m["role"] == "tool" else []
            made = [(c["id"], json.loads(c["function"]["arguments"])["tag"]) for c in m.get("tool_calls", [])]
        elif fmt == "anthropic":
            blocks = m["content"] if isinstance(m["content"], list) else []
            found = [(b["tool_use_id"], b["content"]) for b in blocks if b["type"] == "tool_result"]
            made = [(b["id"], b["input"]["tag"]) for b in blocks if b["type"] == "tool_use"]
        elif fmt == "bedrock":
            answers = [b["toolResult"] for b in m["content"] if "toolResult" in b]
            found = [(r["toolUseId"], r["content"][0]["text"]) for r in answers]
            made = [(b["toolUse"]["toolUseId"], b["toolUse"]["input"]["tag"]) for b in m["content"] if "toolUse" in b]
        else:
            responses = [p["functionResponse"] for p in m["parts"] if "functionResponse" in p]
            tagged = [(r.get("id"), r["name"], r["response"].get("tag")) for r in responses]
            keys = by_name(turn_calls, tagged) if open_turn else [rid or f"name:{name}" for rid, name, _ in tagged]
            found = [(key, tag) for key, (*_, tag) in zip(keys, tagged, strict=True)]
            fcalls = [p["functionCall"] for p in m["parts"] if "functionCall" in p]
            call_keys = keyed([(c.get("id"), c["name"]) for c in fcalls])
            made = [(key, c["args"]["tag"]) for key, c in zip(call_keys, fcalls, strict=True)]
            if made:
                turn_calls = [(key, c["name"]) for key, c in zip(call_keys, fcalls, strict=True)]
        # Anthropic's API makes one turn of the messages of one role in a row: the calls of an
        # assistant run, and the results of the user run after it (results first: repair moves them so)
        run = fmt == "anthropic" and m["role"] == role
        if found:
            assert open_turn, f"a result outside its turn: {m}"
            results += [(key, tag if tag and tag.startswith("r") else None, turn) for key, tag in found]
            open_turn = fmt in ("openai", "ollama", "anthropic")
        elif not (run and made_in_run):
            open_turn = False
        if made:
            turn += 0 if run and made_in_run else 1
            open_turn = made_in_run = True
            calls += [(tag, key, turn) for key, tag in made]
        elif not run:
            made_in_run = False
        role = m["role"]
    return calls, results


def read_responses(items: list[dict[str, Any]]) -> tuple[list[tuple[str, str, int]], list[tuple[str, str | None, int]]]:
    """The same for Responses items: a turn is a run of call items (reasoning among them) and the
    run of output items right after it."""
    calls: list[tuple[str, str, int]] = []
    results: list[tuple[str, str | None, int]] = []
    turn, phase = -1, ""
    outputs = {f"{kind}_output" for kind in RESPONSES_CALL.values()}
    for item in items:
        kind = item.get("type")
        if kind in RESPONSES_CALL.values():
            if phase != "calls":
                turn, phase = turn + 1, "calls"
            calls.append((item["id"].removeprefix("item_"), item["call_id"], turn))
        elif kind in outputs:
            assert phase, f"a result outside its turn: {item}"
            key = item["id"] if kind == "local_shell_call_output" else item["call_id"]
            results.append((key, output_tag(item), turn))
            phase = "results"
        elif not (kind == "reasoning" and phase == "calls"):
            phase = ""
    return calls, results


def empty(fmt: str, m: dict[str, Any]) -> bool:
    if fmt == "responses":
        return False  # each item is one call, output or message: repair drops whole items
    if fmt in ("openai", "ollama"):
        return ("tool_calls" in m and not m["tool_calls"]) or (
            m["role"] == "assistant" and not m.get("tool_calls") and not m.get("content")
        )
    return (m.get("content") if fmt in ("anthropic", "bedrock") else m.get("parts")) in ([], "", None)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), fmt=st.sampled_from(FORMATS), drop_calls=st.booleans())
def test_repair_keeps_every_answer_with_its_call(data: st.DataObject, fmt: str, drop_calls: bool) -> None:
    messages, truth, all_results, screens = data.draw(conversations(fmt))
    repaired_keeping_each_answer(fmt, messages, truth, all_results, screens, drop_calls)


def repaired_keeping_each_answer(
    fmt: str,
    messages: list[dict[str, Any]],
    truth: dict[str, str | None],
    all_results: set[str],
    screens: set[str],
    drop_calls: bool,
) -> None:
    """Repair keeps each call (but those ``drop-call`` drops) and the result that answered it (the
    ``truth``), in its turn; drops no result but those it says; leaves a history ``check`` accepts."""
    before = copy.deepcopy(messages)
    policy = RepairPolicy(dangling="drop-call" if drop_calls else "placeholder")
    fixed, changes = history.repair(messages, policy)
    assert messages == before  # the input is never mutated

    assert not history.check(fixed).rejected
    assert history.repair(fixed, policy) == (fixed, [])  # idempotent
    assert not any(empty(fmt, m) for m in fixed)

    calls, results = read(fmt, fixed)
    kept = {c for c, answer in truth.items() if answer is not None or not (drop_calls or c in screens)}
    assert sorted(tag for tag, _, _ in calls) == sorted(kept)  # none lost or invented; only drop-call drops
    real = [tag for _, tag, _ in results if tag is not None]
    assert len(set(real)) == len(real)  # every real result at most once ...
    assert set(real) == {a for a in truth.values() if a is not None}  # ... and each that answered a call
    for tag, key, turn in calls:
        assert "#" not in key  # no internal key written out
        same = [c for c in calls if c[1:] == (key, turn)]
        answering = [r for r in results if r[0] == key and r[2] == turn]
        assert len(answering) == len(same)  # one result per call under the key in its turn ...
        assert answering[same.index((tag, key, turn))][1] == truth[tag]  # ... the one that answered it
    assert len(results) == len(calls)
    dropped = [c for c in changes if c.kind in ("dropped-orphan", "dropped-duplicate-result")]
    assert len(dropped) == len(all_results) - len(real)
    placeholders = [c for c in changes if c.kind == "placeholder-result"]
    assert len(placeholders) == (0 if drop_calls else sum(a is None and c not in screens for c, a in truth.items()))
    assert all(1 <= c.message <= len(messages) for c in changes)  # 1-based input positions


JUNK = ["abc", "", 5, 1.5, None, True, [], {}, ["a"], {"id": "a"}, [{"x": 1}]]


def paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value a mutation can hit."""
    found = [at]
    if isinstance(value, dict):
        for k, v in value.items():
            found += paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += paths(v, (*at, i))
    return found


def mutated(value: Any, at: tuple[Any, ...], junk: Any) -> Any:
    if not at:
        return junk
    copied = copy.copy(value)
    copied[at[0]] = mutated(value[at[0]], at[1:], junk)
    return copied


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), fmt=st.sampled_from(FORMATS))
def test_malformed_input_gets_a_local_protocol_error_and_anything_else_a_repair_check_accepts(
    data: st.DataObject, fmt: str
) -> None:
    messages: Any = data.draw(conversations(fmt))[0]
    for _ in range(data.draw(st.integers(1, 3))):
        messages = mutated(messages, data.draw(st.sampled_from(paths(messages))), data.draw(st.sampled_from(JUNK)))
    try:
        report = history.check(messages)
    except LocalProtocolError:
        with pytest.raises(LocalProtocolError):
            history.repair(messages)
        return
    fixed, changes = history.repair(messages, format=report.format)  # type: ignore[arg-type]
    # but a role the format lacks, or a Responses item differing from an earlier one of its id, which only the
    # caller can settle: repair keeps it and says so
    left = history.check(fixed, report.format)  # type: ignore[arg-type]
    assert {f.kind for f in left.findings} <= {
        history.Kind.UNKNOWN_ROLE,
        history.Kind.REUSED,
        history.Kind.DUPLICATE_ITEM,
    }
    odd, twice = len(left.of(history.Kind.UNKNOWN_ROLE)), len(left.of(history.Kind.DUPLICATE_ITEM))
    assert [c.kind for c in changes].count("kept-unknown-role") == odd
    assert [c.kind for c in changes].count("kept-duplicate-item") == twice
    kept = history.repair(fixed, format=report.format)[1]  # type: ignore[arg-type]
    assert sorted(c.kind for c in kept) == sorted(["kept-unknown-role"] * odd + ["kept-duplicate-item"] * twice)
