"""Audit 77: the docs tell the truth, and the spec holds every behaviour that matters, checked
mechanically where tests/test_readme.py and tests/test_diagrams.py did not look.

- Every named policy (a case with one answer and no option: ``policy error-beside-finish``) the
  code, the specs or the tests name is in the README's list of them, each there is named by the code,
  told in the README's prose too, and held by a test that exists. Before, the list was nowhere: each
  was told where it applies, and one (shared-machine) nowhere at all.
- The diagrams say what the specs say, read back from the pages and the DOT files on their own:
  tests/test_diagrams.py compared them with what the renderer's own grouping (diagrams.merged) gives,
  so a grouping that lost an edge lost it in both.
- Every transition of the history machine is taken by one of the histories below: the conformance
  report counts the slot and scanner transitions, and nothing counted the history machine's
  (CallId.covered is a no-op), so a transition no history reached would have gone unseen.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest

from fsm import history
from fsm.spec import MachineSpec, history_spec, identity_spec, scanner_spec, slot_spec
from tests.helpers import feed_vector

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")

# -- named policies -------------------------------------------------------------------------------

NAMED_POLICY = re.compile(r"\b[Pp]olic(?:y|ies)\b[:,]?\s+(?:the\s+)?[`'\"]{0,2}([a-z][a-z0-9]*(?:-[a-z0-9]+)+)")
"""A policy named in prose: ``policy error-beside-finish``, ``Policies: ``unknown-role-between````."""


def named_policy_table() -> dict[str, tuple[str, str]]:
    """The README's list of named policies: each name with where it is and the test that holds it."""
    table = README.split("| Named policy | Where | What it decides | Held by |")[1].split("\n\n")[0]
    rows = re.findall(r"^\| \*\*([a-z0-9-]+)\*\* \| `([^`]+)`[^|]* \| [^\n]+ \| `([^`]+)` \|$", table, re.M)
    return {name: (where, test) for name, where, test in rows}


def sources(*folders: str) -> dict[Path, str]:
    return {
        path: path.read_text(encoding="utf-8")
        for folder in folders
        for path in sorted((ROOT / folder).rglob("*"))
        if path.suffix in (".py", ".toml") and path.name != "spec_compiled.py"
    }


def test_every_named_policy_the_code_specs_or_tests_use_is_in_the_readmes_list() -> None:
    used: dict[str, set[str]] = {}
    for path, text in sources("fsm", "specs", "tests", "tools").items():
        for match in NAMED_POLICY.finditer(text):
            used.setdefault(match[1], set()).add(str(path.relative_to(ROOT)))
    spec = identity_spec()
    options = {p.name.replace("_", "-") for p in spec.policies} | {c for p in spec.policies for c in p.choices}
    listed = named_policy_table()
    assert len(listed) >= 19
    orphans = {name: sorted(where) for name, where in used.items() if name not in listed and name not in options}
    assert orphans == {}, "name each in the README's list of named policies, with the test that holds it"


@pytest.mark.parametrize("name", sorted(named_policy_table()))
def test_each_listed_policy_is_the_codes_told_in_the_prose_and_held_by_a_test(name: str) -> None:
    where, held_by = named_policy_table()[name]
    assert (ROOT / where).exists(), where
    implemented = sources("fsm")
    assert any(name in text for text in implemented.values()), f"no module of fsm/ names {name}"
    homes = [where] if where.endswith(".py") else [str(p.relative_to(ROOT)) for p in (ROOT / where).rglob("*.py")]
    assert any(name in (ROOT / home).read_text(encoding="utf-8") for home in homes), (name, where)
    assert README.count(name) >= 2, f"{name} is listed but told nowhere it applies"
    file, _, test = held_by.partition("::")
    module = (ROOT / file).read_text(encoding="utf-8")
    assert re.search(rf"^(?:async )?def {test}\(", module, re.M), held_by


def test_the_history_machine_is_built_once_and_shared() -> None:
    check = importlib.import_module("fsm.history.check")
    machine = check.history_machine()
    table = {trigger: dict(by_state) for trigger, by_state in machine.table.items()}
    history.check([{"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]}])
    assert check.history_machine() is machine  # policy shared-machine
    assert {trigger: dict(by_state) for trigger, by_state in machine.table.items()} == table  # read, not changed


# -- the diagrams, read back ----------------------------------------------------------------------

Edge = tuple[str, str, tuple[str, ...], str, str | None]
"""source, trigger, guards, destination, action"""

ITEM = re.compile(r"(?P<triggers>\w+(?:, \w+)*)(?: \[(?P<guard>[^\]]+)\])?(?: ?/ (?P<action>\w+))?")


def items(source: str, dest: str, texts: list[str]) -> set[Edge]:
    found: set[Edge] = set()
    for text in texts:
        item = ITEM.fullmatch(text.strip())
        assert item is not None, text
        guard = item["guard"]
        guards = () if guard in (None, "else") else tuple(guard.split(" & "))
        for trigger in item["triggers"].split(", "):
            found.add((source, trigger, guards, dest, item["action"]))
    return found


def mermaid_edges(page: str) -> tuple[set[str], set[Edge]]:
    """The states and transitions a page's Mermaid state diagram draws."""
    block = page.split("```mermaid\n", 1)[1].split("```", 1)[0].replace("\u00a0", " ")
    states: set[str] = set()
    edges: set[Edge] = set()
    for line in (line.strip() for line in block.splitlines()):
        moved = re.fullmatch(r"(\w+) --> (\w+)(?: : (.+))?", line)
        stays = re.fullmatch(r"(\w+) : ↻ (.+)", line)
        named = re.fullmatch(r"(\w+) : (\w+)", line)
        if moved:
            states |= {moved[1], moved[2]}
            parts: list[str] = []
            for part in (moved[3] or "").split("<br/>"):
                if part.startswith("/ ") and parts:
                    parts[-1] += " " + part
                elif part:
                    parts.append(part)
            edges |= items(moved[1], moved[2], parts)
        elif stays:
            states.add(stays[1])
            edges |= items(stays[1], stays[1], [stays[2]])
        elif named and named[1] == named[2]:
            states.add(named[1])
    return states, edges


def dot_edges(dot: str) -> tuple[set[str], set[Edge]]:
    """The states and transitions a DOT file draws (its start points aside)."""
    states = set(re.findall(r'^    "(\w+)" \[tooltip=', dot, re.M))
    edges: set[Edge] = set()
    for source, dest, label in re.findall(r'^    "(\w+)" -> "(\w+)" \[label="([^"]*)"', dot, re.M):
        if not source.startswith("__start"):
            edges |= items(source, dest, label.split("\\n"))
    return states, edges


def spec_edges(spec: MachineSpec) -> set[Edge]:
    return {(src, t.trigger, t.guards, t.destination(src), t.action) for src, t in spec.edges()}


@pytest.mark.parametrize(
    ("name", "spec"), [("slot", slot_spec()), ("scanner", scanner_spec()), ("history", history_spec())]
)
def test_each_diagram_read_back_is_its_spec(name: str, spec: MachineSpec) -> None:
    wanted = spec_edges(spec)
    assert len(wanted) > 5
    page = (ROOT / "docs" / f"{name}.md").read_text(encoding="utf-8")
    dot = (ROOT / "docs" / "diagrams" / f"{name}.dot").read_text(encoding="utf-8")
    for states, edges in (mermaid_edges(page), dot_edges(dot)):
        assert states == set(spec.state_names())
        assert sorted(edges - wanted, key=str) == [] and sorted(wanted - edges, key=str) == []
    initials = set(spec.initials().values())
    assert {s for s in initials if f"[*] --> {s}" in page} == initials


# -- the history machine's transitions, each taken --------------------------------------------------


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}


def _calls(*ids: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [_call(i) for i in ids]}


def _answer(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "r"}


HISTORIES: list[tuple[str, list[dict[str, Any]]]] = [
    ("openai", [_calls("a"), _answer("a"), _answer("a"), _calls("a"), _answer("a")]),  # answered, twice; reused
    ("openai", [_calls("b", "b"), _answer("b")]),  # two calls under one id
    ("openai", [_calls("c"), {"role": "user", "content": "?"}, _calls("d"), _answer("c"), _calls("c")]),
    ("openai", [_answer("e")]),  # no call ever made
    (  # a paused server call, last: a client result under its id answers nothing
        "anthropic",
        [
            {"role": "user", "content": [{"type": "tool_use", "id": "s", "name": "f", "input": {}}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_result", "tool_use_id": "b", "content": "R"},
                    {"type": "mcp_tool_use", "id": "b", "name": "m", "server_name": "x", "input": {}},
                ],
            },
        ],
    ),
    (  # a client call under a paused server call's id
        "anthropic",
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "b", "name": "f", "input": {}}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_result", "tool_use_id": "s", "content": "R"},
                    {"type": "mcp_tool_use", "id": "b", "name": "m", "server_name": "x", "input": {}},
                ],
            },
        ],
    ),
]


def test_every_history_transition_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    check = importlib.import_module("fsm.history.check")
    taken: set[str] = set()
    monkeypatch.setattr(check.CallId, "covered", lambda self, label: taken.add(label))
    for fmt, messages in HISTORIES:
        history.check(messages, format=fmt)
    labels = {t.label(src) for src, t in history_spec().edges()}
    assert sorted(labels - taken) == []


# -- a call listed invalid reads back invalid, whatever it holds ------------------------------------


@pytest.mark.parametrize("flush", ["incremental", "on-finish"])
def test_an_invalid_call_of_whitespace_alone_reads_back_invalid(flush: str) -> None:
    # README: a re-emitted stream's incomplete_tool_calls ends each listed call as it says, "and no
    # call of it reads back complete". A call of whitespace alone, invalid under empty_arguments=invalid,
    # went out with its whitespace; read back, the registry ended it with end (outside the spec), and
    # empty_arguments' default made it complete {}. The spec's reject now leaves accumulating too.
    from fsm import DeltaEmitter, Policies, Reassembler

    call = {"index": 0, "id": "a", "function": {"name": "f", "arguments": "  "}}
    events = [
        {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    r = Reassembler("openai-chat", policies=Policies(empty_arguments="invalid"))
    emitter = DeltaEmitter(flush=flush)  # type: ignore[arg-type]
    chunks = [chunk for event in events for chunk in emitter.chunks(r.feed(event))]
    result = r.close()
    chunks += [*emitter.chunks(r.drain()), emitter.finish(result)]
    assert [(c.status.value, c.arguments_json) for c in result.calls] == [("invalid", "  ")]
    again = Reassembler("openai-chat")
    for chunk in chunks:
        again.feed(chunk)
    back = again.close()
    assert [(c.status.value, c.arguments) for c in back.calls] == [("invalid", None)]
    assert "unusable-action" in back.codes()


# -- what --strict refuses ------------------------------------------------------------------------


def test_strict_mode_refuses_a_stream_exactly_when_lax_mode_reports_a_violation() -> None:
    """README: "violation: the stream broke its protocol; strict=True / --strict refuses it", and the
    others are not refused. Every vector, read lax and strict: strict raises a RemoteProtocolError
    exactly when lax reported a violation, naming the first of them (a framing fault, FramingError,
    names no code; a field of the wrong type is an error in both modes). A Responses item that ended
    incomplete is truncated, a warning, which strict mode reads on past (the README said each of the
    cases of rule 14 is an error under --strict)."""
    from fsm import Reassembler
    from fsm.errors import FramingError, RemoteProtocolError
    from fsm.harness.conformance import _policies
    from fsm.harness.vectors import load_vectors

    def run(vector: Any, strict: bool) -> tuple[Any, RemoteProtocolError | None]:
        r = Reassembler(vector.shape, strict=strict, policies=_policies(vector), choice=vector.choice)
        error = None
        try:
            feed_vector(r, vector)
        except RemoteProtocolError as exc:
            error = exc
        stopped = ConnectionError(vector.interrupted) if vector.interrupted is not None else None
        try:
            return r.close(interrupted=stopped), error
        except RemoteProtocolError as exc:
            return r.close(), error or exc

    checked = 0
    for vector in load_vectors():
        lax, lax_error = run(vector, strict=False)
        _, strict_error = run(vector, strict=True)
        violations = [d.code for d in lax.diagnostics if d.violation]
        if lax_error is not None:  # an error in both modes (stream-failed): not a strict refusal
            continue
        assert bool(violations) == (strict_error is not None), (vector.name, violations, strict_error)
        if strict_error is not None and not isinstance(strict_error, FramingError):
            named = re.match(r"(?:event \d+: )?([a-z-]+): ", str(strict_error))
            assert named is not None and named[1] == violations[0], (vector.name, str(strict_error))
        checked += 1
    assert checked > 100
    incomplete = next(v for v in load_vectors() if v.name == "responses-items-incomplete")
    result, error = run(incomplete, strict=True)
    assert error is None and {c.status.value for c in result.calls} == {"truncated"}
