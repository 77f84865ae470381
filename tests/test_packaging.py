"""What a user installing the package sees: typing that works in their own mypy run, one version
everywhere, documentation on every public name, and the ``transitions`` internals the machine
relies on still where it expects them."""

from __future__ import annotations

import importlib.metadata
import inspect
import io
import re
import subprocess
import sys
import tomllib
import typing
import zipfile
from pathlib import Path

import attrs
import pytest

import fsm
from fsm import history
from fsm.cli import main
from fsm.spec import identity_spec

ROOT = Path(__file__).resolve().parent.parent

USER_CODE = """\
import fsm

reassembler = fsm.Reassembler("openai-chat", policies=fsm.Policies(identical_text="new-call"))
result = reassembler.close()
first: fsm.ToolCall = result.calls[0]
print(first.nmae)
policies = fsm.Policies(id_rotation="rotate")
outputs: list[fsm.Output] = reassembler.drain()
level: fsm.Severity = result.diagnostics[0].severity
"""


def test_a_users_mypy_strict_run_reads_the_installed_package_types(tmp_path: Path) -> None:
    # Run from a folder outside the project, so mypy finds fsm where a user's would: installed in
    # site-packages, typed only because it ships py.typed.
    (tmp_path / "user.py").write_text(USER_CODE)
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), "user.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    report = proc.stdout + proc.stderr
    assert "py.typed" not in report and "missing library stubs" not in report, report
    assert re.search(r'user\.py:6: error: "ToolCall" has no attribute "nmae"', report), report
    assert re.search(r"user\.py:7: error: Argument \"id_rotation\" .*Literal\['rotate'\]", report), report
    assert "Found 2 errors" in report, report  # the rest (Output, Severity, the policy) type-checks


def test_the_wheel_ships_py_typed_the_specs_and_the_licence(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    (wheel,) = tmp_path.glob("toolcall_fsm-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "fsm/py.typed" in names
    assert {f"fsm/specs/{n}.toml" for n in ("slot", "scanner", "identity", "history")} <= set(names)
    assert any(n.endswith(".dist-info/licenses/LICENSE") or n.endswith("/LICENSE") for n in names)
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert f"Version: {fsm.__version__}" in metadata
    assert "Classifier: Typing :: Typed" in metadata and "Project-URL: Source," in metadata
    assert "Keywords:" in metadata


def test_one_version_everywhere() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", fsm.__version__)
    assert importlib.metadata.version("toolcall-fsm") == fsm.__version__
    out = io.StringIO()
    assert main(["--version"], stdout=out, stderr=io.StringIO()) == 0
    assert out.getvalue().strip() == f"toolcall-fsm {fsm.__version__}"
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" in pyproject["project"]["dynamic"] and "version" not in pyproject["project"]
    assert f"## {fsm.__version__}" in (ROOT / "CHANGELOG.md").read_text()
    assert "MIT License" in (ROOT / "LICENSE").read_text()


def test_policy_literals_spell_the_specs_choices() -> None:
    hints = typing.get_type_hints(fsm.Policies)
    for policy in identity_spec().policies:
        assert typing.get_args(hints[policy.name]) == policy.choices, policy.name
    assert {f.name for f in attrs.fields(fsm.Policies)} == {p.name for p in identity_spec().policies}


def test_every_public_type_is_exported() -> None:
    assert set(fsm.__all__) <= set(dir(fsm)) and set(history.__all__) <= set(dir(history))
    exported = {getattr(fsm, name) for name in fsm.__all__}
    # Every package class a public class's field mentions can be named from fsm itself.
    mentioned: set[object] = set()
    for item in exported:
        if inspect.isclass(item) and attrs.has(item):
            for field in attrs.fields(attrs.resolve_types(item)):
                mentioned |= {t for t in (field.type, *typing.get_args(field.type)) if inspect.isclass(t)}
    from_package = {t for t in mentioned if getattr(t, "__module__", "").startswith("fsm")}
    assert from_package and from_package <= exported, from_package - exported
    for name in ("Output", "Severity", "Event", "StateError", "IdenticalText", "__version__"):
        assert name in fsm.__all__


@pytest.mark.parametrize("module", [fsm, history], ids=["fsm", "fsm.history"])
def test_every_public_class_function_and_field_has_a_docstring(module: object) -> None:
    pdoc_doc = pytest.importorskip("pdoc.doc")
    # The package's names load on first use; pdoc looks each one up as a module, which fails for a
    # name not loaded yet (then reported as having no docstring): loaded here, whatever ran before.
    for name in module.__all__:  # type: ignore[attr-defined]
        getattr(module, name)
    missing = []

    def walk(doc: object, where: str) -> None:
        for member in doc.members.values():  # type: ignore[attr-defined]
            if member.name.startswith("_") and member.name != "__version__":
                continue
            if member.taken_from[0] not in (None,) and not member.taken_from[0].startswith("fsm"):
                continue  # inherited from the standard library (Enum, Exception)
            if not member.docstring.strip():
                missing.append(f"{where}.{member.name}")
            if isinstance(member, pdoc_doc.Class):
                walk(member, f"{where}.{member.name}")

    walk(pdoc_doc.Module(module), module.__name__)  # type: ignore[attr-defined]
    assert not missing, missing


def test_the_transitions_internals_the_machine_uses_are_still_there() -> None:
    """fsm/engine/machine.py overrides Transition._change_state and Event._trigger, builds
    EventData itself and calls Event._is_valid_source: private API. pyproject pins transitions below
    the next minor release; this test is what a bump of that bound must pass."""
    import transitions
    from transitions import Event, Machine, Transition
    from transitions.core import EventData

    bound = next(d for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])
    assert bound.startswith("transitions>=0.9,<"), "transitions must keep an upper bound"
    upper = tuple(int(p) for p in bound.split("<")[1].split("."))
    installed = tuple(int(p) for p in transitions.__version__.split(".")[:2])
    assert (0, 9) <= installed < upper, f"transitions {transitions.__version__} is outside the tested range {bound}"

    def params(func: object) -> list[str]:
        return list(inspect.signature(func).parameters)  # type: ignore[arg-type]

    assert params(Transition._change_state) == ["self", "event_data"], "Transition._change_state changed"
    assert params(Transition.execute) == ["self", "event_data"], "Transition.execute changed"
    assert params(Event._trigger) == ["self", "event_data"], "Event._trigger changed"
    assert params(Event._is_valid_source) == ["self", "state"], "Event._is_valid_source changed"
    assert params(EventData.__init__) == ["self", "state", "event", "machine", "model", "args", "kwargs"], (
        "EventData's constructor changed"
    )
    data = EventData(None, None, None, None, args=(), kwargs={})
    for attribute in ("state", "event", "machine", "model", "args", "kwargs", "transition", "result"):
        assert hasattr(data, attribute), f"EventData lost {attribute}"
    assert Machine.transition_cls is Transition and Machine.event_cls is Event, "the class hooks changed"
    machine = Machine(model=None, states=["a"], initial="a", auto_transitions=False)
    for attribute in ("model_attribute", "has_queue", "states", "events", "prepare_event", "on_exception"):
        assert hasattr(machine, attribute), f"Machine instances lost {attribute}"


def test_the_readme_reads_the_same_on_the_package_index() -> None:
    """PyPI shows Mermaid as raw code and cannot follow links relative to the repository."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "```mermaid" not in readme
    targets = re.findall(r"\]\(([^)]+)\)", readme)
    assert targets and [t for t in targets if not t.startswith(("https://", "#"))] == []
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
    home = urls["Source"]
    assert all(
        t.startswith((home, home.replace("github.com", "raw.githubusercontent.com")))
        for t in targets
        if "toolcall-fsm" in t
    )
    assert "docs/diagrams/slot.svg" in readme


def test_every_docstring_is_text_any_supported_python_compiles() -> None:
    """Python 3.13 writes each docstring as UTF-8 when it compiles a module, so one holding a lone
    surrogate (a ``\\ud83d`` escape in a plain string) made that module fail to import there while
    3.11 imported it: the fuzzer, and every test importing it, on 3.13."""
    import ast

    unwritable = []
    for path in sorted([*ROOT.glob("fsm/**/*.py"), *ROOT.glob("tools/**/*.py"), *ROOT.glob("tests/**/*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node, clean=False)
                try:
                    (doc or "").encode("utf-8")
                except UnicodeEncodeError:
                    unwritable.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 1)}")
    assert unwritable == []
