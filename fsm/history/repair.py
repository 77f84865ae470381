"""The minimal change that makes a history acceptable, and what it changed."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

from fsm.engine.ids import IdAllocator
from fsm.history.check import check
from fsm.history.findings import Finding, Format, Kind
from fsm.history.formats import _blocks, detect_format


@attrs.frozen
class RepairPolicy:
    dangling: Literal["placeholder", "drop-call"] = "placeholder"
    """Answer a dangling call with a placeholder result, or drop the call from its turn."""
    placeholder: str = "The tool call was not completed; no result is available."


@attrs.frozen
class Change:
    kind: str
    message: int
    id: str
    detail: str


def repair(
    messages: Sequence[Mapping[str, Any]], policy: RepairPolicy | None = None, format: Format | Literal["auto"] = "auto"
) -> tuple[list[dict[str, Any]], list[Change]]:
    """The minimal repair: touch only what the report names, never a turn that is whole. Duplicate
    calls in a turn are renamed ``<id>_d2`` (and the second result with that id goes with the second
    call, so both results are kept); orphan and duplicate results are dropped; a dangling call gets a
    placeholder result or is dropped, by ``policy``. Returns the new messages and what changed."""
    policy = policy or RepairPolicy()
    fmt: Format = detect_format(messages) if format == "auto" else format
    fixed = [copy.deepcopy(dict(m)) for m in messages]
    changes: list[Change] = []
    report = check(fixed, fmt)
    for finding in report.of(Kind.DUPLICATE_CALL):
        changes += _split_duplicate(fixed, fmt, finding)
    report = check(fixed, fmt)
    drops = [f for f in report.findings if f.kind in (Kind.ORPHAN, Kind.DUPLICATE_RESULT)]
    for finding in sorted(drops, key=lambda f: -f.message):
        changes.append(_drop_result(fixed, fmt, finding))
    inserts: list[tuple[int, dict[str, Any] | None, Finding]] = []
    for finding in check(fixed, fmt).of(Kind.DANGLING):
        if policy.dangling == "drop-call":
            changes.append(_drop_call(fixed, fmt, finding))
        else:
            inserts.append((_answer_position(fixed, fmt, finding.message), _placeholder(fmt, finding, policy), finding))
    for at, message, finding in sorted(inserts, key=lambda x: -x[0]):
        changes.append(_insert_placeholder(fixed, fmt, at, message, finding))
    return fixed, changes


def _entries(message: dict[str, Any], fmt: Format, kind: str) -> list[dict[str, Any]]:
    """The call (or result) entries of a message, as mutable dicts."""
    if fmt == "openai":
        return (
            message.get("tool_calls") or [] if kind == "call" else ([message] if message.get("role") == "tool" else [])
        )
    if fmt == "anthropic":
        return [b for b in _blocks(message) if b.get("type") == ("tool_use" if kind == "call" else "tool_result")]
    key = ("functionCall", "function_call") if kind == "call" else ("functionResponse", "function_response")
    return [p.get(key[0]) or p.get(key[1]) for p in message.get("parts") or [] if p.get(key[0]) or p.get(key[1])]


def _id_field(fmt: Format, kind: str) -> str:
    if fmt == "openai":
        return "id" if kind == "call" else "tool_call_id"
    if fmt == "anthropic":
        return "id" if kind == "call" else "tool_use_id"
    return "id"


def _split_duplicate(fixed: list[dict[str, Any]], fmt: Format, finding: Finding) -> list[Change]:
    taken = {str(e.get(_id_field(fmt, "call"))) for m in fixed for e in _entries(m, fmt, "call")}
    new = IdAllocator(taken).claim(finding.id)
    calls = [e for e in _entries(fixed[finding.message], fmt, "call") if e.get(_id_field(fmt, "call")) == finding.id]
    if not calls:
        return []
    calls[-1][_id_field(fmt, "call")] = new
    changes = [
        Change("renamed-call", finding.message, finding.id, f"the second call under {finding.id!r} is now {new!r}")
    ]
    results = [
        (i, e)
        for i, m in enumerate(fixed)
        if i > finding.message
        for e in _entries(m, fmt, "result")
        if e.get(_id_field(fmt, "result")) == finding.id
    ]
    if len(results) >= 2:
        i, entry = results[1]
        entry[_id_field(fmt, "result")] = new
        changes.append(Change("renamed-result", i, finding.id, f"its second result now answers {new!r}"))
    return changes


def _drop_result(fixed: list[dict[str, Any]], fmt: Format, finding: Finding) -> Change:
    message = fixed[finding.message]
    if fmt == "openai":
        del fixed[finding.message]  # drops run from the last message back, so indices hold
    elif fmt == "anthropic":
        message["content"] = [
            b for b in message["content"] if not (b.get("type") == "tool_result" and b.get("tool_use_id") == finding.id)
        ]
    else:
        message["parts"] = [p for p in message["parts"] if not _answers(p, finding.id)]
    return Change(f"dropped-{finding.kind.value}", finding.message, finding.id, finding.detail)


def _answers(part: Mapping[str, Any], key: str) -> bool:
    response = part.get("functionResponse") or part.get("function_response")
    if not response:
        return False
    rid = response.get("id")
    return bool(rid == key or (rid is None and key.startswith(f"{response.get('name')}#")))


def _drop_call(fixed: list[dict[str, Any]], fmt: Format, finding: Finding) -> Change:
    message = fixed[finding.message]
    field = _id_field(fmt, "call")
    if fmt == "openai":
        message["tool_calls"] = [c for c in message["tool_calls"] if c.get(field) != finding.id]
        if not message["tool_calls"]:
            del message["tool_calls"]
    elif fmt == "anthropic":
        message["content"] = [
            b for b in message["content"] if not (b.get("type") == "tool_use" and b.get(field) == finding.id)
        ]
    else:
        message["parts"] = [p for p in message["parts"] if (p.get("functionCall") or {}).get("id") != finding.id]
    return Change("dropped-call", finding.message, finding.id, "the call had no result")


def _answer_position(fixed: list[dict[str, Any]], fmt: Format, call_message: int) -> int:
    """Where a placeholder result goes: for OpenAI, after the tool messages that follow the call;
    for Anthropic and Gemini, the one message after the call (joined if it holds results)."""
    at = call_message + 1
    if fmt != "openai":
        return at
    while at < len(fixed) and _entries(fixed[at], fmt, "result"):
        at += 1
    return at


def _placeholder(fmt: Format, finding: Finding, policy: RepairPolicy) -> dict[str, Any] | None:
    if fmt == "openai":
        return {"role": "tool", "tool_call_id": finding.id, "content": policy.placeholder}
    if fmt == "anthropic":
        return {"type": "tool_result", "tool_use_id": finding.id, "content": policy.placeholder, "is_error": True}
    response: dict[str, Any] = {"name": finding.name, "response": {"error": policy.placeholder}}
    if "#" not in finding.id:  # the call had an id (Gemini 3); nameless keys are name#k
        response = {"id": finding.id, **response}
    return {"functionResponse": response}


def _insert_placeholder(
    fixed: list[dict[str, Any]], fmt: Format, at: int, entry: dict[str, Any] | None, finding: Finding
) -> Change:
    assert entry is not None
    if fmt == "openai":
        fixed.insert(at, entry)
    else:
        role, field = ("user", "content") if fmt == "anthropic" else ("user", "parts")
        host = fixed[at] if at < len(fixed) and _entries(fixed[at], fmt, "result") else None
        if host is None:
            fixed.insert(at, {"role": role, field: [entry]})
        else:
            host[field] = [*host[field], entry]
    return Change("placeholder-result", at, finding.id, "answered with a placeholder result")
