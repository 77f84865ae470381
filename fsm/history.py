"""Keep every tool result paired across a conversation: id hygiene for what goes back to the model.

A reassembled turn is half the story: its calls run, their results come back, and the next request
replays the history. Two calls under one id make one result overwrite the other; strict providers
answer a history with a dangling or duplicate ``tool_call_id`` with HTTP 400. Each call id walks the
machine of specs/history.toml while the messages are read in order (OpenAI chat ``tool_calls`` /
``tool`` messages, Anthropic ``tool_use`` / ``tool_result`` blocks, Gemini ``functionCall`` /
``functionResponse`` parts); the findings its actions record are the report.

* :func:`uniquify`: the engine's deterministic ``<id>_d<n>`` renaming for a list of calls.
* :func:`check`: dangling calls, orphan results, duplicate results, ids reused within or across turns.
* :func:`repair`: the minimal change that makes a history acceptable; returns what it changed.
* :func:`anything_dangling`: the one question an agent loop should ask before touching history.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, TypeVar

import attrs

from fsm.errors import LocalProtocolError
from fsm.ids import IdAllocator
from fsm.results import ToolCall
from fsm.roles import action

Format = Literal["openai", "anthropic", "gemini"]


class Kind(enum.Enum):
    DANGLING = "dangling"
    """A call no result answered before its turn closed."""
    ORPHAN = "orphan"
    """A result that answers no outstanding call."""
    DUPLICATE_RESULT = "duplicate-result"
    """A second result for a call already answered."""
    DUPLICATE_CALL = "duplicate-call"
    """Two calls under one id while the first is unanswered (within a turn, usually)."""
    REUSED_UNANSWERED = "reused-unanswered"
    """An id used again although its earlier call was never answered."""
    REUSED = "reused"
    """An id used again by a later turn after its call was answered: allowed, reported for information."""


REJECTED = frozenset(Kind) - {Kind.REUSED}
"""Findings a strict provider refuses the request for."""


@attrs.frozen
class Finding:
    kind: Kind
    id: str
    message: int
    """Index of the message where it was found (the call's message, for a dangling call)."""
    detail: str
    name: str | None = None


@attrs.frozen
class Report:
    format: str
    findings: tuple[Finding, ...]

    @property
    def rejected(self) -> bool:
        """Would a strict provider refuse this history?"""
        return any(f.kind in REJECTED for f in self.findings)

    def of(self, kind: Kind) -> list[Finding]:
        return [f for f in self.findings if f.kind is kind]


# -- reading the three message formats as calls, results and turn ends --------------------------------


@attrs.frozen
class _Call:
    message: int
    key: str
    id: str | None
    name: str | None


@attrs.frozen
class _Result:
    message: int
    key: str


@attrs.frozen
class _TurnEnd:
    message: int


def detect_format(messages: Sequence[Mapping[str, Any]]) -> Format:
    for m in messages:
        if "parts" in m:
            return "gemini"
        if m.get("role") == "tool" or m.get("tool_calls"):
            return "openai"
        content = m.get("content")
        if isinstance(content, list) and any(
            isinstance(b, Mapping) and b.get("type") in ("tool_use", "tool_result") for b in content
        ):
            return "anthropic"
    return "openai"


def _blocks(message: Mapping[str, Any]) -> list[Any]:
    """An Anthropic message's content blocks (none when the content is a plain string)."""
    content = message.get("content")
    return content if isinstance(content, list) else []


def _calls_in(message: Mapping[str, Any], fmt: Format) -> list[tuple[str | None, str | None]]:
    if fmt == "openai":
        return [(c.get("id") or None, (c.get("function") or {}).get("name")) for c in message.get("tool_calls") or []]
    if fmt == "anthropic":
        return [(b.get("id") or None, b.get("name")) for b in _blocks(message) if b.get("type") == "tool_use"]
    calls = [p.get("functionCall") or p.get("function_call") for p in message.get("parts") or []]
    return [(c.get("id") or None, c.get("name")) for c in calls if c]


def _results_in(message: Mapping[str, Any], fmt: Format) -> list[tuple[str | None, str | None]] | None:
    """The (id, name) each result in ``message`` answers; None when it is no result message."""
    if fmt == "openai":
        return [(message.get("tool_call_id") or None, message.get("name"))] if message.get("role") == "tool" else None
    if fmt == "anthropic":
        answered: list[tuple[str | None, str | None]] = [
            (b.get("tool_use_id") or None, None) for b in _blocks(message) if b.get("type") == "tool_result"
        ]
        return answered or None
    responses = [p.get("functionResponse") or p.get("function_response") for p in message.get("parts") or []]
    found: list[tuple[str | None, str | None]] = [(r.get("id") or None, r.get("name")) for r in responses if r]
    return found or None


def _read(messages: Sequence[Mapping[str, Any]], fmt: Format) -> Iterator[_Call | _Result | _TurnEnd]:
    """Calls, results and turn ends in order. A call without an id is keyed by its name and its
    position among same-name calls of its turn, which is how Gemini pairs responses without ids."""
    turn_open = False
    nameless: dict[str, int] = {}
    answered_names: dict[str, int] = {}
    for i, message in enumerate(messages):
        results = _results_in(message, fmt)
        if results is not None:
            for rid, name in results:
                if rid is None:
                    k = answered_names.get(name or "", 0)
                    answered_names[name or ""] = k + 1
                    yield _Result(i, f"{name}#{k}")
                else:
                    yield _Result(i, rid)
            if fmt != "openai":  # Anthropic and Gemini answer a turn in one message
                yield _TurnEnd(i)
                turn_open = False
            continue
        if turn_open:
            yield _TurnEnd(i)
            turn_open = False
        calls = _calls_in(message, fmt)
        if calls:
            nameless, answered_names = {}, {}
            for cid, name in calls:
                if cid is None:
                    k = nameless.get(name or "", 0)
                    nameless[name or ""] = k + 1
                    yield _Call(i, f"{name}#{k}", None, name)
                else:
                    yield _Call(i, cid, cid, name)
            turn_open = True
    if turn_open:
        yield _TurnEnd(len(messages))


# -- the machine's model: one call id -------------------------------------------------------------------------


class CallId:
    """One id's state in the conversation; ``state`` is written only by the history machine."""

    def __init__(self, key: str, findings: list[Finding]) -> None:
        self.key = key
        self.state = "unseen"
        self.findings = findings
        self.call_message = -1
        self.uses = 0
        self.at = -1  # the message being read
        self.name: str | None = None

    def covered(self, transition: str) -> None:
        """Transitions are not counted for history checks."""

    def _report(self, kind: Kind, detail: str, message: int | None = None) -> None:
        self.findings.append(Finding(kind, self.key, self.at if message is None else message, detail, self.name))

    @action
    def open_call(self, text: str) -> None:
        self.uses += 1
        if self.uses > 1:
            self._report(Kind.REUSED, f"id reused after its call (message {self.call_message}) was answered")
        self.call_message = self.at

    @action
    def report_duplicate_call(self, text: str) -> None:
        self._report(Kind.DUPLICATE_CALL, f"a second call while the one in message {self.call_message} is unanswered")
        self.uses += 1
        self.call_message = self.at

    @action
    def report_reuse_after_dangling(self, text: str) -> None:
        self._report(Kind.REUSED_UNANSWERED, f"reused, but the call in message {self.call_message} was never answered")
        self.uses += 1
        self.call_message = self.at

    @action
    def answer(self, text: str) -> None:
        """The call has its result."""

    @action
    def report_duplicate_result(self, text: str) -> None:
        self._report(Kind.DUPLICATE_RESULT, f"the call in message {self.call_message} was already answered")

    @action
    def report_orphan(self, text: str) -> None:
        self._report(Kind.ORPHAN, "no call with this id is waiting for a result")

    @action
    def report_dangling(self, text: str) -> None:
        self._report(Kind.DANGLING, "no result answered this call before its turn closed", self.call_message)


def check(messages: Sequence[Mapping[str, Any]], format: Format | Literal["auto"] = "auto") -> Report:
    """Walk every call id through the history machine; report what a strict provider would refuse."""
    from fsm.machine import history_machine

    if not isinstance(messages, Sequence) or not all(isinstance(m, Mapping) for m in messages):
        raise LocalProtocolError("messages must be a list of message objects")
    fmt: Format = detect_format(messages) if format == "auto" else format
    machine = history_machine()
    findings: list[Finding] = []
    ids: dict[str, CallId] = {}
    outstanding: dict[str, CallId] = {}
    for event in _read(messages, fmt):
        if isinstance(event, _TurnEnd):
            for call in list(outstanding.values()):
                call.at = event.message
                machine.fire(call, "close_turn")
            outstanding.clear()
            continue
        call = ids.setdefault(event.key, CallId(event.key, findings))
        call.at = event.message
        if isinstance(event, _Call):
            call.name = event.name
        machine.fire(call, "call" if isinstance(event, _Call) else "result")
        if call.state == "outstanding":
            outstanding[event.key] = call
        else:
            outstanding.pop(event.key, None)
    return Report(fmt, tuple(findings))


def anything_dangling(messages: Sequence[Mapping[str, Any]]) -> bool:
    """Is any call in this history unanswered, or any result unmatched? Ask this, not whether an
    error message mentions 400, before deciding to repair history: good turns stay untouched."""
    report = check(messages)
    return bool(report.of(Kind.DANGLING) or report.of(Kind.ORPHAN))


# -- uniquify ------------------------------------------------------------------------------------------------------

C = TypeVar("C", ToolCall, Mapping[str, Any])


@attrs.frozen
class Rename:
    position: int
    old: str | None
    new: str


def uniquify(calls: Iterable[C], taken: Iterable[str] = ()) -> tuple[list[C], list[Rename]]:
    """Give every call a distinct id with the engine's rule: the first occurrence keeps its id,
    later ones become ``<id>_d2``, ``<id>_d3``, ...; ids in ``taken`` (earlier turns) are avoided;
    a blank id becomes ``call_<position>``. Same input, same output. Returns the renames so results
    can be mapped back."""
    allocator = IdAllocator(taken)
    out: list[Any] = []
    renames: list[Rename] = []
    for position, call in enumerate(calls):
        old = call.id if isinstance(call, ToolCall) else (call.get("id") or None)
        new = allocator.claim(old) if old else allocator.synthesize(position)
        if new != old:
            renames.append(Rename(position, old, new))
        if isinstance(call, ToolCall):
            out.append(attrs.evolve(call, id=new))
        else:
            out.append({**call, "id": new})
    return out, renames


# -- repair ----------------------------------------------------------------------------------------------------------


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
