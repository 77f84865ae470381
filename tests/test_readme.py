"""What README.md (and the hand-written pages of docs/) tell a user, held to the code: every
Python example runs as it stands from the project's root and prints what the README shows, every
command line it gives runs with the output and exit status it describes, and every list it gives
(options and their defaults, policies, rules, diagnostic codes, exported names, paths) is the one
the code and the specs have. The examples are read from README.md itself, so an edit that breaks
one fails here.

README.md marks its blocks for this file with HTML comments (invisible on the rendered page):

- ``<!-- readme-test: continues -->`` before a Python block: it runs in what the block before it
  left (its imports, its ``stream``); any other Python block starts afresh.
- ``<!-- readme-test: output -->`` before a text block: exactly what the Python block above prints.
- ``<!-- readme-test: fragment of tests/test_clients.py -->``: lines that need a live client; not
  run here, but every line of code in it must be a line of that file, whose tests run them.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.metadata
import inspect
import io
import json
import re
import shutil
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import attrs
import pytest

import fsm
from fsm import cli, messages
from fsm.engine.ledger import MESSAGE_CHARS
from fsm.harness.conformance import scanner_edge_labels
from fsm.harness.vectors import load_vectors
from fsm.history import Change, Kind, RepairPolicy
from fsm.options import ENVELOPE_DEPTH, MAX_DEPTH_CAP, Limits, Policies
from fsm.reemit import DeltaEmitter, FlushPolicy
from fsm.results import Diagnostic, Result, ToolCall
from fsm.spec import identity_spec, slot_spec
from fsm.wire.decoders import PROVIDERS
from fsm.wire.detect import Framing

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
PERFORMANCE = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
CLIENT_TESTS = ROOT / "tests" / "test_clients.py"


@attrs.frozen
class Block:
    line: int
    lang: str
    body: str
    marker: str | None


def blocks(text: str) -> list[Block]:
    fence = re.compile(
        r"(?:^<!-- readme-test: (?P<marker>[^>]*?) -->\n)?^```(?P<lang>\w*)\n(?P<body>.*?)^```$", re.S | re.M
    )
    return [
        Block(text.count("\n", 0, m.start("lang")) + 1, m["lang"], m["body"], m["marker"]) for m in fence.finditer(text)
    ]


BLOCKS = blocks(README)
MARKERS = {"continues", "output", "fragment of tests/test_clients.py"}


def sessions() -> list[list[tuple[Block, Block | None]]]:
    """The Python examples, each with the output shown after it, grouped into runs that share a namespace."""
    runs: list[list[tuple[Block, Block | None]]] = []
    for at, block in enumerate(BLOCKS):
        if block.lang != "python" or block.marker == "fragment of tests/test_clients.py":
            continue
        after = BLOCKS[at + 1] if at + 1 < len(BLOCKS) else None
        shown = after if after is not None and after.marker == "output" else None
        if block.marker == "continues":
            runs[-1].append((block, shown))
        else:
            runs.append([(block, shown)])
    return runs


# -- the Python examples ---------------------------------------------------------------------------


def test_every_block_marker_is_one_this_file_reads() -> None:
    assert {b.marker for b in BLOCKS} - {None} <= MARKERS
    assert all(b.lang == "text" for b in BLOCKS if b.marker == "output")
    assert all(b.lang == "python" for b in BLOCKS if b.marker in MARKERS - {"output"})
    assert sum(b.marker == "fragment of tests/test_clients.py" for b in BLOCKS) == 1  # fragments stay few
    assert "```python" not in ARCHITECTURE + PERFORMANCE  # were one added, it would need running here too


@pytest.mark.parametrize("run", sessions(), ids=lambda run: f"README.md:{run[0][0].line}")
def test_the_python_examples_run_and_print_what_the_readme_shows(
    run: list[tuple[Block, Block | None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # as a user runs them: from the project's root
    namespace: dict[str, Any] = {"__name__": "__readme__"}
    for block, shown in run:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(block.body, f"README.md:{block.line}", "exec"), namespace)
        if shown is not None:
            assert printed.getvalue() == shown.body, f"README.md:{shown.line} shows other output"


def test_every_run_example_shows_its_output() -> None:
    assert all(shown is not None for run in sessions() for block, shown in run if "print(" in block.body)


def test_the_client_snippets_are_lines_of_the_client_tests() -> None:
    (fragment,) = [b for b in BLOCKS if b.marker == "fragment of tests/test_clients.py"]
    compile(fragment.body, "README.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)  # valid, awaits and all
    tests = {" ".join(line.split("#")[0].split()) for line in CLIENT_TESTS.read_text(encoding="utf-8").splitlines()}
    code = [" ".join(line.split()) for line in fragment.body.splitlines() if line.strip() and line.lstrip()[0] != "#"]
    assert code and [line for line in code if line not in tests] == []


def test_the_preview_examples_in_the_prose() -> None:
    for text, preview in (('{"city": "Par', {"city": "Par"}), ('{"days": 1, "unit": tr', {"days": 1})):
        r = fsm.Reassembler("openai-chat")
        r.feed(
            {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f"}}]}}]}
        )
        r.feed({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": text}}]}}]})
        assert r.partial(0) == preview and r.partial(7) is None
        assert f"`{text}` gives `{json.dumps(preview)}`" in README


# -- the command lines -----------------------------------------------------------------------------


def toolcall_fsm(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """The installed command, as the README runs it (the module where no script is installed)."""
    script = shutil.which("toolcall-fsm", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "fsm"]
    return subprocess.run([*command, *args], cwd=ROOT, input=stdin, capture_output=True, timeout=60, check=False)


def in_process(*args: str) -> tuple[int, str, str]:
    """What the command's ``main`` returns and writes, for the cases that need no fresh process."""
    out, err = io.StringIO(), io.StringIO()
    return cli.main(list(args), stdout=out, stderr=err), out.getvalue(), err.getvalue()


def test_the_set_up_commands_name_what_exists() -> None:
    project = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'toolcall-fsm = "fsm.cli:main"' in project and 'requires-python = ">=3.11"' in project
    assert "Python 3.11 or newer" in README
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "python3 -m venv .venv" in ci and "-e '.[test]'" in ci
    for step in (
        "ruff check",
        "ruff format --check",
        "mypy",
        "tools/diagram.py --check",
        "tools/api_docs.sh",
        "pytest",
    ):
        assert step in ci, step
    assert "strict = true" in project.split("[tool.mypy]")[1].split("\n[")[0]  # "mypy --strict"
    assert "apt-get install" in ci and "graphviz" in ci and "sudo" in ci
    mermaid = (ROOT / "tools" / "install_mermaid.sh").read_text(encoding="utf-8")
    assert "chromium" in mermaid and ".cache/mermaid" in mermaid and "npm install" in mermaid
    assert "build/api" in (ROOT / "tools" / "api_docs.sh").read_text(encoding="utf-8")
    extras = set(re.findall(r"(?:toolcall-fsm|\.)\[(\w+)\]'", README)) | {"test"}
    assert extras >= {"test", "bench", "bedrock"}
    for extra in extras:
        assert re.search(rf"^{extra} = \[", project, re.M), extra


def test_the_first_command_reassembles_the_bundled_collision() -> None:
    assert ".venv/bin/toolcall-fsm replay tests/streams/gemini-compat-collision.sse" in README
    done = toolcall_fsm("replay", "tests/streams/gemini-compat-collision.sse")
    assert done.returncode == 0 and done.stderr == b""
    out = json.loads(done.stdout)
    # "two calls to one tool colliding at index 0, then a resend": two calls, the resend not added
    assert [(c["name"], c["arguments"]) for c in out["calls"]] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Oslo"}),
    ]
    assert [d["code"] for d in out["diagnostics"]].count("resend") == 1


def test_replay_prints_the_json_the_readme_shows() -> None:
    (shown,) = [b for b in BLOCKS if b.lang == "json"]
    assert "`toolcall-fsm replay\ntests/streams/responses-call-kinds.sse`" in README
    done = toolcall_fsm("replay", "tests/streams/responses-call-kinds.sse")
    assert done.returncode == 0 and json.loads(done.stdout) == json.loads(shown.body)


def test_the_version_and_each_commands_help() -> None:
    assert toolcall_fsm("--version").stdout.decode() == f"toolcall-fsm {fsm.__version__}\n"
    # "`toolcall-fsm COMMAND --help` gives each command's examples and exit status"
    for command in (words.split() for words in subcommands()):
        code, out, _ = in_process(*command, "--help")
        assert code == 0 and "examples:" in out, command
        assert "exit status:" in out, command
    # the framings the README says replay reads
    assert "(SSE, NDJSON, a JSON array, a pretty-printed JSON document, or AWS's binary event\nstream)" in README
    said = " ".join(in_process("replay", "--help")[1].split())
    assert "SSE, NDJSON, JSON array or document, AWS event stream" in said


def subcommands() -> dict[str, Any]:
    """Each command's parser, by its words (``replay``, ``history check``)."""
    found: dict[str, Any] = {}

    def walk(parser: Any, words: str) -> None:
        for action in parser._actions:
            for name, sub in getattr(action, "choices", None).items() if hasattr(action, "_name_parser_map") else ():
                found[f"{words} {name}".strip()] = sub
                walk(sub, f"{words} {name}")

    walk(cli.build_parser(), "")
    return found


def command_lines() -> list[str]:
    """Every command line the README gives: in code spans and in shell and plain blocks."""
    spans = re.findall(r"`([^`\n]+)`", README)
    fenced = [line for b in BLOCKS if b.lang in ("sh", "") for line in b.body.splitlines()]
    given = [re.sub(r"^\.venv/bin/", "", s.strip()) for s in [*spans, *fenced]]
    return [" ".join(line.split("#")[0].split()) for line in given if line.startswith("toolcall-fsm ")]


def test_every_option_the_readme_gives_a_command_is_one_it_has() -> None:
    parsers = subcommands()
    lines = command_lines()
    assert len(lines) > 15
    for line in lines:
        words = line.removeprefix("toolcall-fsm ")
        if words in ("--version", "COMMAND --help"):
            continue
        command = next((c for c in sorted(parsers, key=len, reverse=True) if words.startswith(c)), None)
        assert command is not None, line
        known = {o: a for a in parsers[command]._actions for o in a.option_strings}
        for option, value in re.findall(r"(--[\w-]+)(?: ([^\s\]]+))?", words):
            assert option in known, line
            choices = known[option].choices
            if choices is not None and value and "|" in value:
                assert set(value.split("|")) == set(choices) - {"auto"}, line
    # the options the prose names for replay
    replay = {o for a in parsers["replay"]._actions for o in a.option_strings}
    assert {"--provider", "--flush", "--strict", "--output"} <= replay


def test_the_concrete_command_lines_parse() -> None:
    """The lines with no placeholder in them are what a user may paste: the parser takes each."""
    for line in command_lines():
        if re.search(r"\[|[A-Z]{2,}|\|", line) or line.endswith("--version") or line.count(" ") < 2:
            continue
        cli.build_parser().parse_args(line.split()[1:])


def test_replay_exit_statuses(tmp_path: Path) -> None:
    # 1: unreadable input, one line on stderr, no traceback
    done = toolcall_fsm("replay", "no-such-stream.sse")
    assert done.returncode == 1 and done.stderr.count(b"\n") == 1 and b"cannot read" in done.stderr
    # 1: with --strict, a protocol violation; the result so far still goes to stdout
    other_choice = b'data: {"choices": [{"index": 1, "delta": {}}]}\n\n'
    stream = (ROOT / "tests" / "streams" / "parallel-fragments.sse").read_bytes().replace(b"data: [DONE]", b"")
    done = toolcall_fsm("replay", "--strict", "-", stdin=stream + other_choice)
    assert done.returncode == 1 and b"Traceback" not in done.stderr
    assert (
        done.stderr.decode() == "toolcall-fsm: event 7: choice-ignored: choice 1 is not reassembled (rule one-choice)\n"
    )
    assert [c["status"] for c in json.loads(done.stdout)["calls"]] == ["complete", "complete"]
    # 1: a provider the first event does not tell
    done = toolcall_fsm("replay", "-", stdin=b'{"hello": "world"}\n')
    assert done.returncode == 1 and b"cannot tell the provider" in done.stderr and b"--provider" in done.stderr
    # 0: that violation in lax mode, where it is a diagnostic
    path = tmp_path / "other-choice.sse"
    path.write_bytes(stream + other_choice)
    code, out, _ = in_process("replay", str(path))
    assert code == 0 and [d["code"] for d in json.loads(out)["diagnostics"]] == ["choice-ignored"]
    # 2: bad usage
    assert in_process("replay", "--output", "yaml", str(path))[0] == 2


def test_an_internal_error_exits_3(monkeypatch: pytest.MonkeyPatch) -> None:
    def bug(*_: Any) -> int:
        raise KeyError("a bug")

    monkeypatch.setattr(cli, "replay", bug)
    err = io.StringIO()
    assert cli.main(["replay", "x"], stdout=io.StringIO(), stderr=err) == 3
    assert "Traceback" not in err.getvalue() and err.getvalue().count("\n") == 1


def test_conform_runs_every_vector_and_reports_coverage() -> None:
    vectors = load_vectors()
    assert f"`specs/vectors/` holds {len(vectors)} language-neutral conformance vectors" in README
    done = toolcall_fsm("conform")
    out = done.stdout.decode()
    assert done.returncode == 0 and f"\n{len(vectors)} passed, 0 failed\n" in out
    kinds = (
        "slot transitions",
        "scanner transitions",
        "identity rules",
        "diagnostics",
        "policy choices",
        "wire shapes",
    )
    assert all(f"coverage: {kind}: all exercised" in out for kind in kinds)
    ident = identity_spec()
    today = (
        f"all {len(list(slot_spec().edges()))} slot transitions, {len(scanner_edge_labels())} scanner transitions, "
        f"{len(ident.rule_names)} rules, {len(ident.diagnostic_by_code)}\ndiagnostics, "
        f"{sum(len(p.choices) for p in ident.policies)} policy choices, {len(PROVIDERS)} shapes"
    )
    assert f"(today: {today})" in README


def test_diagram_check_passes_in_the_root() -> None:
    done = toolcall_fsm("diagram", "--check")
    assert done.returncode == 0, done.stdout + done.stderr


def test_history_check_exit_statuses(tmp_path: Path) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    paired = [{"role": "assistant", "tool_calls": [call]}, {"role": "tool", "tool_call_id": "call_1", "content": "ok"}]
    malformed = [{"role": "assistant", "tool_calls": 5}]
    cases = {
        "paired": (paired, 0),
        "dangling": (paired[:1], 1),
        "body": ({"messages": paired[:1]}, 1),
        "none": (7, 2),
        "malformed": (malformed, 2),
    }
    for name, (content, status) in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(content))
        code, out, err = in_process("history", "check", str(path), "--json")
        assert code == status, name
        if status == 2:
            assert err.count("\n") == 1 and out == ""
        else:
            assert json.loads(out)["format"] == "openai"
    assert in_process("history", "check", str(tmp_path / "missing.json"))[0] == 1
    (tmp_path / "not.json").write_text("{nope")
    assert in_process("history", "check", str(tmp_path / "not.json"))[0] == 1
    done = toolcall_fsm("history", "check", str(tmp_path / "dangling.json"))  # as a user runs it
    assert done.returncode == 1 and b"dangling" in done.stdout


# -- the lists the README gives --------------------------------------------------------------------


def readme_size(text: str) -> int:
    number, _, unit = text.partition(" ")
    return int(number) * {"": 1, "Mi": 2**20, "MiB": 2**20}[unit]


def test_the_limits_and_their_defaults() -> None:
    guarantees = README.split("**Limits bound memory, exactly**")[1].split("\n## ")[0]
    given = {name: value.split(",")[0] for name, value in re.findall(r"`(max_\w+)` \(([^)]*)\)", guarantees)}
    defaults = {f.name: f.default for f in attrs.fields(Limits)}
    assert {name: readme_size(value) for name, value in given.items()} == defaults
    assert f"(256, at most {MAX_DEPTH_CAP}; a wire event may nest\n  {ENVELOPE_DEPTH} levels more)" in guarantees
    assert f"keeps at most its first {MESSAGE_CHARS:,}\n  characters, then says how long it was" in guarantees


def test_the_policy_table_is_the_spec_and_the_options() -> None:
    rows = re.findall(r"^\| `(\w+)`[^|]* \| `([\w-]+)` \| `([\w-]+)` \|", README, re.M)
    spec = [(p.name, p.default, *(c for c in p.choices if c != p.default)) for p in identity_spec().policies]
    flush = [p.value for p in FlushPolicy]  # the re-emitter's own policy, not the spec's
    default_flush = inspect.signature(DeltaEmitter).parameters["flush"].default.value
    assert rows == [*spec, ("flush", default_flush, *(f for f in flush if f != default_flush))]
    assert [f.name for f in attrs.fields(Policies)] == [name for name, *_ in spec]
    assert 'policies=fsm.Policies(identical_text="new-call", ...)' in README


def test_the_rules_in_order() -> None:
    section = README.split("## Identity rules and policies")[1].split("| Policy |")[0]
    numbered = re.findall(r"(\d+)\.\s+\*\*([a-z-]+)\*\*", section)
    assert [(int(n), name) for n, name in numbered] == list(enumerate((r.name for r in identity_spec().rules), 1))


def test_the_diagnostic_table_is_the_spec() -> None:
    rows = re.findall(r"^\| `([a-z-]+)` \| (info|warning|violation) \|", README, re.M)
    assert sorted(rows) == sorted((d.code, d.severity) for d in identity_spec().diagnostics)


def kebab_names() -> set[str]:
    """Every name the README may give in backticks as a code, a rule, a choice or a kind."""
    ident = identity_spec()
    choices = {c for p in ident.policies for c in p.choices} | {p.value for p in FlushPolicy}
    parsers = subcommands().values()
    options = {str(c) for p in parsers for a in p._actions if a.choices for c in a.choices}
    repair_kinds = set(made_changes())
    return (
        set(ident.diagnostic_by_code)
        | set(ident.rule_names)
        | choices
        | options
        | {k.value for k in Kind}
        | repair_kinds
        | set(typing.get_args(typing.get_type_hints(RepairPolicy)["dangling"]))
        | {"toolcall-fsm"}
        | {f.value for f in Framing}
        | {v.name for v in load_vectors()}
    )


def test_every_code_rule_and_choice_named_in_backticks_exists() -> None:
    named = set(re.findall(r"`([a-z]+(?:-[a-z0-9]+)+)`", README))
    # not names the code defines: the SDKs' and providers' own words, files and finish reasons
    theirs = {"trailing-strings", "externally-managed-environment", "tool-call-start", "tool-plan-delta"}
    theirs |= {"keep-alive", "apt-get"}
    theirs |= {"anthropic-claude-v1", "google-gemini-v1", "openai-responses-v1"}  # OpenRouter's reasoning formats
    assert sorted(named - kebab_names() - theirs) == []


def made_changes() -> list[str]:
    """The kinds of Change repair makes, read off its source."""
    made = []
    # deciding the edits, writing them out
    for module in (
        "repair.py",
        "rewrite.py",
        "after_run.py",
        "item_ids.py",
        "code_waits.py",
        "changes.py",
        "program_callers.py",
        "declined.py",
        "responses_apart.py",
    ):
        source = (ROOT / "fsm" / "history" / module).read_text(encoding="utf-8")
        made += re.findall(r'(?:self\._change\(|Change\()"([a-z-]+)"', source)
    return sorted(set(made))  # a kind may be made in more than one place


def test_the_change_kinds_are_the_repairs() -> None:
    listed = README.split("Each edit is a `Change`\n(")[1].split(")")[0]
    assert sorted(re.findall(r"`([a-z-]+)`", listed)) == sorted(made_changes())
    documented = inspect.getsource(Change).split("kind: str")[1].split("message: int")[0]
    assert sorted(re.findall(r"``([a-z-]+)``", documented)) == sorted(made_changes())
    assert 'RepairPolicy(dangling="drop-call")' in README and RepairPolicy(dangling="drop-call").dangling == "drop-call"


def test_the_names_the_readme_qualifies_with_fsm_exist() -> None:
    for dotted in sorted(set(re.findall(r"`(fsm(?:\.\w+)+)", README + PERFORMANCE))):
        parts = dotted.split(".")
        value: Any = importlib.import_module("fsm")
        for at in range(1, len(parts)):
            try:
                value = importlib.import_module(".".join(parts[: at + 1]))
            except ModuleNotFoundError:
                value = getattr(value, parts[at])
    exported = set(fsm.__all__)
    for name in re.findall(r"`fsm\.([A-Z]\w+)", README + PERFORMANCE):
        assert name in exported, name


def test_the_attributes_the_readme_reads() -> None:
    holders: dict[str, type] = {"result": Result, "call": ToolCall, "d": Diagnostic, "Result": Result}
    for holder, attribute in re.findall(r"`[^`]*?(?<![\w/.-])(result|call|d|Result)\.(\w+)", README):
        if holder == "result" and attribute == "calls":
            continue
        assert hasattr(holders[holder], attribute), f"{holder}.{attribute}"
    assert "result.calls[0].nmae" in README and not hasattr(ToolCall, "nmae")  # the README's misspelling, on purpose


def test_the_options_and_signatures_the_readme_names() -> None:
    reassembler = inspect.signature(fsm.Reassembler).parameters
    assert {"policies", "limits", "taken", "strict"} <= set(reassembler)
    assert reassembler["strict"].default is False
    emitter = inspect.signature(DeltaEmitter).parameters
    assert {"completion_id", "model", "created", "flush"} <= set(emitter)
    assert callable(DeltaEmitter.chunks) and callable(DeltaEmitter.finish)
    built = inspect.signature(messages.assistant_message).parameters["incomplete"]
    assert built.default == "omit" and set(typing.get_args(messages.Incomplete)) == {"omit", "include"}
    for name in ("omitted", "incomplete_answers", "tool_result", "tool_results"):
        assert callable(getattr(messages, name)), name
    formats = set(
        re.findall(r'`"([\w-]+)"`', README.split("`fsm.messages` builds the next request")[1].split("\n\n")[0])
    )
    assert formats == set(typing.get_args(messages.Format))
    errors = importlib.import_module("fsm.errors")
    assert issubclass(errors.InvalidOption, ValueError) and issubclass(errors.InvalidInput, TypeError)
    for name in ("FramingError", "LimitExceeded"):
        assert issubclass(getattr(errors, name), errors.RemoteProtocolError)
    assert {"event", "rule"} <= set(vars(errors.RemoteProtocolError("x", event=1, rule="r")))


def test_the_wire_shapes_table_lists_every_provider() -> None:
    table = README.split("## Supported wire shapes")[1].split("\n## ")[0]
    listed = [name for name in re.findall(r"^\| `([\w-]+)` \|", table, re.M) if name != "--provider"]
    assert list(dict.fromkeys(listed)) == list(PROVIDERS)
    assert set(subcommands()["replay"]._option_string_actions["--provider"].choices) == {"auto", *PROVIDERS}


# -- the paths the docs name -----------------------------------------------------------------------


def named_paths(text: str) -> set[str]:
    linked = re.findall(r"\]\(https://github\.com/toolcall-fsm/toolcall-fsm/blob/main/([^)#]+)\)", text)
    spans = re.findall(r"`((?:fsm|tools|specs|tests|docs|\.ci)/[\w./-]*)`", text)
    return set(linked) | {s.rstrip("/") for s in spans}


@pytest.mark.parametrize("doc", ["README.md", "docs/architecture.md", "docs/performance.md"])
def test_every_path_the_docs_name_exists(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    paths = named_paths(text)
    assert len(paths) > 5 and sorted(p for p in paths if not (ROOT / p).exists()) == []
    # a bare module name (`registry.py`) must be a file of the package or of tools/
    files = {p.name for p in (ROOT / "fsm").rglob("*.py")} | {p.name for p in (ROOT / "tools").iterdir()}
    bare = set(re.findall(r"`([\w]+\.(?:py|sh))`", text))
    assert sorted(bare - files) == []
    # the diagrams' labels name modules by their path inside fsm/ (wire/framing.py)
    drawn = set(re.findall(r"(?<![\w/])((?:engine|wire|harness|history)/[\w/]+\.py)", text))
    assert sorted(p for p in drawn if not (ROOT / "fsm" / p).exists()) == []


def test_the_layout_names_every_module_of_the_engine_and_the_wire_and_every_tool() -> None:
    layout = README.split("## Layout")[1].split("\n## ")[0]
    layers = ARCHITECTURE.split("## The layers")[1].split("\n## ")[0]
    for folder in ("fsm/engine", "fsm/wire"):
        for module in sorted((ROOT / folder).glob("*.py")):
            assert module.name == "__init__.py" or f"`{module.name}`" in layout, module
            assert module.name == "__init__.py" or f"`{module.name}`" in layers, module
    for module in sorted((ROOT / "fsm" / "harness").glob("*.py")):
        assert module.name == "__init__.py" or f"`{module.name}`" in layout, module
    # every module of the package's own folder is in the architecture page's table of layers
    for module in sorted((ROOT / "fsm").glob("*.py")):
        assert module.name == "spec_compiled.py" or f"`{module.name}`" in layers or f"`fsm/{module.name}`" in layers
    for module in sorted((ROOT / "fsm").glob("*.py")):
        assert (
            module.name in ("__init__.py", "__main__.py")
            or f"`{module.name}`" in layout
            or f"`fsm/{module.name}`" in layout
        ), module
    for tool in sorted((ROOT / "tools").iterdir()):
        if not tool.name.startswith(("_", ".")):
            assert f"{tool.name}" in README, tool
    streams = sorted(p.name for p in (ROOT / "tests" / "streams").iterdir())
    assert all(f"tests/streams/{name}" in README for name in streams), streams


def test_the_qualified_names_in_backticks_exist() -> None:
    """``Class.attribute`` and ``module.function`` names the README and the hand-written pages give."""
    sources = {p: p.read_text(encoding="utf-8") for p in (ROOT / "fsm").rglob("*.py")}
    text = README + ARCHITECTURE + PERFORMANCE
    named = set(re.findall(r"`_?([A-Z]\w*|jsontext)\.(\w+)(?:\(\)| = \w+)?`", text)) - {("jsontext", "py")}
    theirs = {"ChunkProcessor", "Part"}  # LiteLLM's and google-genai's
    assert len(named) > 5
    for owner, attribute in sorted(named):
        if owner == "jsontext":
            assert re.search(rf"^def {attribute}\(", sources[ROOT / "fsm" / "jsontext.py"], re.M), attribute
        elif owner not in theirs:
            homes = [s for s in sources.values() if re.search(rf"^class _?{owner}\b", s, re.M)]
            found = any(re.search(rf"(def {attribute}\(|^\s+{attribute}\s*[:=])", s, re.M) for s in homes)
            assert homes and found, (owner, attribute)


def test_the_slot_states_and_triggers_the_docs_name() -> None:
    spec = slot_spec()
    assert "(`opened → accumulating →\nvalue_closed → flushed`, or `truncated` when the stream is cut)" in README
    chain = {"opened", "accumulating", "value_closed", "flushed", "truncated", "receiving"}
    assert chain == set(spec.state_names())
    assert {(k.name, k.initial) for k in spec.kinds} == {("json", "opened"), ("text", "receiving")}
    listed = ARCHITECTURE.split("fires a trigger of its machine (")[1].split(")")[0]
    assert re.findall(r"`(\w+)`", listed) == list(spec.trigger_names())
    assert "(guard value_complete)" in ARCHITECTURE and "value_complete" in {g.name for g in spec.guards}


def test_the_answers_to_built_in_calls_are_the_items_the_table_gives() -> None:
    table = README.split("`tool_result` answers each with its own output item")[1].split("\n\n")[1]
    rows = re.findall(r"^\| `(\w+)` \| `(\w+)` \|", table, re.M)
    vector = json.loads((ROOT / "specs" / "vectors" / "responses-builtin-client-calls.json").read_text())
    result = fsm.reassemble(vector["events"], provider="openai-responses")
    by_type = {call.type: call for call in result.calls}
    assert [call for call, _ in rows] == list(by_type)
    for call_type, answer_type in rows:
        output = "https://example.org/shot.png" if call_type == "computer_call" else "done"
        answer = messages.tool_result(by_type[call_type], output, "openai-responses")
        assert answer["type"] == answer_type
    shell = messages.tool_result(by_type["shell_call"], "no such file", "openai-responses", is_error=True)
    assert shell["output"][0]["stderr"] == "no such file" and shell["output"][0]["outcome"]["exit_code"] == 1
    patch = messages.tool_result(by_type["apply_patch_call"], "rejected", "openai-responses", is_error=True)
    assert patch["status"] == "failed"
    assert "id" in messages.tool_result(by_type["local_shell_call"], "ok", "openai-responses")


def test_the_guarantees_a_caller_can_try() -> None:
    errors = importlib.import_module("fsm.errors")
    r = fsm.Reassembler("openai-chat")
    for mistake in (lambda: r.feed_bytes("text"), lambda: r.feed(5), lambda: r.feed(fsm.CallSeen(fsm.CallRef("x")))):
        with pytest.raises(errors.InvalidInput):
            mistake()
    assert r.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}) == []  # it went on
    for mistake in (lambda: fsm.Limits(max_call=1), lambda: fsm.Limits(1), lambda: fsm.Policies(flush="on-finish")):
        with pytest.raises(errors.InvalidInput):
            mistake()
    for mistake in (
        lambda: fsm.Limits(max_calls=0),
        lambda: fsm.Limits(max_calls="1"),
        lambda: fsm.Policies(id_rotation="x"),
    ):
        with pytest.raises(errors.InvalidOption):
            mistake()
    for stream, options in ((None, {}), ({"choices": []}, {}), ([], {"strictly": True})):
        with pytest.raises(errors.InvalidInput):
            fsm.reassemble(stream, **options)
    limited = fsm.Reassembler("openai-chat", limits=fsm.Limits(max_calls=1))
    call = {"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}}
    limited.feed({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    with pytest.raises(errors.LimitExceeded) as raised:
        limited.feed({"choices": [{"index": 0, "delta": {"tool_calls": [dict(call, index=1, id="b")]}}]})
    assert (raised.value.event, raised.value.rule) == (2, "limits")
    with pytest.raises(errors.LocalProtocolError):
        limited.feed({"choices": []})  # after an error the stream takes no more input
    result = limited.close()
    assert result.codes() == ["stream-failed"] and [c.status.value for c in result.calls] == ["complete"]


def test_problems_leave_out_the_info_diagnostics_and_the_version_is_the_installed_one() -> None:
    result = fsm.reassemble((ROOT / "tests" / "streams" / "gemini-compat-collision.sse").read_bytes())
    assert {d.severity.value for d in result.diagnostics} == {"info"} and result.problems() == ()
    cut = fsm.reassemble((ROOT / "tests" / "streams" / "truncated-by-length.sse").read_bytes())
    assert [d.code for d in cut.problems()] == ["truncated"] and not cut.problems()[0].violation
    assert fsm.__version__ == importlib.metadata.version("toolcall-fsm")
    assert (ROOT / "fsm" / "py.typed").is_file()


# -- what the README says the engine does with a wire, case by case --------------------------------


def chunk(*calls: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"tool_calls": list(calls)} if calls else {}, "finish_reason": finish}]}


def tc(index: int | None = None, id: str | None = None, name: str | None = None, args: str | None = None) -> Any:
    call: dict[str, Any] = {"function": {}}
    for key, value in (("index", index), ("id", id)):
        if value is not None:
            call[key] = value
    for key, value in (("name", name), ("arguments", args)):
        if value is not None:
            call["function"][key] = value
    return call


def calls_of(*events: dict[str, Any], provider: str = "openai-chat") -> tuple[list[tuple[Any, ...]], list[str]]:
    result = fsm.reassemble(list(events), provider=provider)
    return [(c.id, c.name, c.arguments, c.status.value) for c in result.calls], result.codes()


FINISH = chunk(finish="tool_calls")


def test_the_opening_table_row_by_row() -> None:
    table = README.split("| What the wire does |")[1].split("\n\n")[0]
    assert len(re.findall(r"^\| ", table, re.M)) == 8  # the eight rows checked below
    # two calls to one tool, each in its own event, both at index 0: two calls
    calls, _ = calls_of(chunk(tc(0, "", "s", '{"q": "A"}')), chunk(tc(0, "", "s", '{"q": "B"}')), FINISH)
    assert [c[2] for c in calls] == [{"q": "A"}, {"q": "B"}]
    # events A, B, B: two calls, the resend in B's own slot
    a, b = tc(0, "", "a", '{"x": 1}'), tc(0, "", "b", '{"y": 2}')
    calls, codes = calls_of(chunk(a), chunk(b), chunk(b), FINISH)
    assert [c[1] for c in calls] == ["a", "b"] and "resend" in codes
    # the full id and name on every chunk: set once
    calls, _ = calls_of(chunk(tc(0, "c1", "llm_version", '{"a"')), chunk(tc(0, "c1", "llm_version", ": 1}")), FINISH)
    assert calls == [("c1", "llm_version", {"a": 1}, "complete")]
    # empty name and id on continuations: no evidence
    calls, _ = calls_of(chunk(tc(0, "c1", "get", '{"a"')), chunk(tc(0, "", "", ": 1}")), FINISH)
    assert calls == [("c1", "get", {"a": 1}, "complete")]
    # one id on two different calls: the later becomes <id>_d2
    calls, codes = calls_of(chunk(tc(0, "dup", "f", '{"a": 1}')), chunk(tc(1, "dup", "g", '{"b": 2}')), FINISH)
    assert [c[0] for c in calls] == ["dup", "dup_d2"] and codes == ["duplicate-id"]
    # no index at all, or index 1 first
    calls, _ = calls_of(chunk(tc(None, "x1", "f", '{"a": 1}')), chunk(tc(None, "x2", "g", '{"b": 2}')), FINISH)
    assert [c[0] for c in calls] == ["x1", "x2"]
    assert calls_of(chunk(tc(1, "x1", "f", '{"a": 1}')), FINISH)[0] == [("x1", "f", {"a": 1}, "complete")]
    # cumulative text in every delta, or a full replay at the end: the new tail, or a resend
    growing = [chunk(tc(0, "c", "f", '{"q":"a')), chunk(tc(0, args='{"q":"ab')), chunk(tc(0, args='{"q":"abc"}'))]
    assert calls_of(*growing, FINISH)[0] == [("c", "f", {"q": "abc"}, "complete")]
    replayed = [chunk(tc(0, "c", "f", '{"q":')), chunk(tc(0, args='"a"}')), chunk(tc(0, args='{"q":"a"}'))]
    assert calls_of(*replayed, FINISH) == ([("c", "f", {"q": "a"}, "complete")], ["resend"])
    # the stream stops mid-call: truncated, with the raw text
    for end in ([chunk(finish="length")], []):
        result = fsm.reassemble([chunk(tc(0, "c", "f", '{"q": "ab')), *end], provider="openai-chat")
        assert [(c.status.value, c.arguments_json) for c in result.calls] == [("truncated", '{"q": "ab')]


def test_the_rules_worked_examples() -> None:
    # rule 15 (its cumulative example is the opening table's): `{"filter": ` then `{"filter": "open"}}` appends
    assert '`{"q":"a`, `{"q":"ab`, `{"q":"abc"}` gives `{"q":"abc"}`' in README
    assert '`{"filter": ` then `{"filter": "open"}}` appends' in README
    appended = calls_of(chunk(tc(0, "c", "f", '{"filter": ')), chunk(tc(0, args='{"filter": "open"}}')), FINISH)
    assert appended == ([("c", "f", {"filter": {"filter": "open"}}, "complete")], [])
    # rule 16: surrogate halves in two events are one character; a lone one is kept as its escape
    halves = calls_of(chunk(tc(0, "c", "f", '{"e": "\ud83d')), chunk(tc(0, args='\ude00"}')), FINISH)
    assert halves == ([("c", "f", {"e": "\U0001f600"}, "complete")], ["surrogate-pair-joined"])
    lone = fsm.reassemble([chunk(tc(0, "c", "f", '{"e": "\ud83d"}')), FINISH], provider="openai-chat")
    assert lone.calls[0].arguments_json == '{"e": "\\ud83d"}' and lone.codes() == ["lone-surrogate"]
    # parsed once, strictly: NaN is invalid, a key twice is reported with the last value kept, 1e999 is exact
    assert calls_of(chunk(tc(0, "c", "f", '{"n": NaN}')), FINISH) == (
        [("c", "f", None, "invalid")],
        ["invalid-arguments"],
    )
    assert calls_of(chunk(tc(0, "c", "f", '{"k": 1, "k": 2}')), FINISH) == (
        [("c", "f", {"k": 2}, "complete")],
        ["duplicate-key"],
    )
    big = calls_of(chunk(tc(0, "c", "f", '{"big": 1e999}')), FINISH)[0][0][2]["big"]
    assert type(big).__name__ == "Decimal" and str(big) == "1E+999"
    # rule 14: a finish that promises calls with none, and a Gemini call without a name, are reported
    assert calls_of(FINISH) == ([], ["finish-without-calls"])
    nameless = {"candidates": [{"content": {"parts": [{"functionCall": {"args": {"a": 1}}}]}, "finishReason": "STOP"}]}
    assert "missing-name" in calls_of(nameless, provider="gemini")[1]


def test_the_architecture_pages_layers_are_the_ones_the_import_test_enforces() -> None:
    from tests.test_layers import LAYERS

    table = ARCHITECTURE.split("| Layer | Where | Job | Imported by |")[1].split("\n\n")[0]
    named = re.findall(r"^\| ([a-z ]+) \| ", table, re.M)
    spelled = {"cli": "command line", "public": "public names"}
    assert named == [spelled.get(name, name) for name, _ in LAYERS]
    assert "| public names | `fsm/__init__.py` |" in table


def test_the_grading_table_counts_the_openai_chat_vectors() -> None:
    """A measured table: when the OpenAI chat vectors change, ``python tools/grade_peers.py --fuzzed 0``
    grades the peers again."""
    chat = sum(v.shape == "openai-chat" for v in load_vectors())
    table = README.split("| Implementation | Version | OpenAI-chat vectors passed |")[1].split("\n\n")[0]
    rows = re.findall(r"^\| (.+?) \| ([\d.]+) \| (\d+) / (\d+) \|", table, re.M)
    assert len(rows) == 3 and rows[0][0] == "toolcall-fsm"
    assert rows[0][1:] == (fsm.__version__, str(chat), str(chat))
    assert {int(row[3]) for row in rows} == {chat}, "re-run python tools/grade_peers.py --fuzzed 0"
    assert f"On the {chat} OpenAI chat vectors" in README


def test_the_fuzzing_counts() -> None:
    budget = re.search(r"^BUDGET = (\d+)$", (ROOT / "tests" / "test_fuzz.py").read_text(encoding="utf-8"), re.M)
    assert budget is not None and f"The test suite runs {budget[1]} derandomized streams per shape and mode." in README
    found = [v.name for v in load_vectors() if v.name.startswith("fuzz-")]
    assert len(found) == 2 and "(two of today's vectors came straight from it," in README
