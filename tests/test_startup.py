"""Start-up mechanisms: lazy public names, per-command imports, specs built ahead of time.

What each start costs is measured by tools/bench.py (never here); these tests check that the
mechanisms behind those figures hold: which modules a start loads (read from ``sys.modules`` in a
fresh interpreter), that every public name still resolves, and that a spec built ahead of time is
the spec its TOML file says.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import fsm
from fsm import spec, spec_compiled
from tests.helpers import chunk, sse, tc

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("attr", "attrs", "cattrs", "transitions", "tomllib", "hashlib", "decimal", "inspect", "typing_extensions")
LOADERS = {"slot": spec.load_machine, "scanner": spec.load_machine, "history": spec.load_machine}
LOADERS |= {"identity": spec.load_identity}


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_import_fsm_loads_no_submodule_and_nothing_heavy() -> None:
    modules = loaded_after("import fsm")
    assert sorted(m for m in modules if m.startswith("fsm.")) == []
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY) == []


def test_every_public_name_resolves_on_first_use_in_a_fresh_interpreter() -> None:
    probe = """
import importlib, json, fsm
listed = set(dir(fsm))  # before any name is used
wrong = []
for name in fsm.__all__:
    namespace = {}
    exec(f"from fsm import {name}", namespace)
    where = fsm._EXPORTS.get(name)
    if where is not None:
        module = importlib.import_module(where)
        expected = module if where == "fsm." + name else getattr(module, name)
        if namespace[name] is not expected:
            wrong.append(name)
print(json.dumps({"missing": sorted(set(fsm.__all__) - listed), "wrong": wrong}))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(out.stdout) == {"missing": [], "wrong": []}
    star = subprocess.run(
        [sys.executable, "-c", "from fsm import *; print(Reassembler.__name__, messages.__name__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert star.stdout.split() == ["Reassembler", "fsm.messages"]


def test_the_lazy_table_and_the_type_checkers_imports_name_the_same_things() -> None:
    # mypy, IDEs and pdoc read the imports under TYPE_CHECKING; the run time reads _EXPORTS.
    tree = ast.parse((ROOT / "fsm" / "__init__.py").read_text())
    guarded = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    typed = {
        alias.name: node.module if node.module != "fsm" else f"fsm.{alias.name}"
        for node in guarded.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert typed == fsm._EXPORTS
    assert set(fsm._EXPORTS) == set(fsm.__all__) - {"__version__"}


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Reassembly'"):
        _ = fsm.Reassembly  # type: ignore[attr-defined]
    with pytest.raises(ImportError):
        exec("from fsm import Reassembly", {})


def test_a_reassembler_loads_no_spec_reader_converter_or_upper_layer() -> None:
    code = "from fsm import Reassembler\nr = Reassembler('openai-chat')\nr.feed({'choices': []})\nr.close()"
    modules = loaded_after(code)
    assert {"cattrs", "tomllib", "transitions"} & modules == set()
    # the specs' folder is found with os.path: pathlib (and urllib.parse under it) is not loaded
    assert {"pathlib", "urllib.parse"} & modules == set()
    upper = ("fsm.messages", "fsm.history", "fsm.harness", "fsm.serialize", "fsm.reemit", "fsm.cli", "fsm.oneshot")
    assert sorted(m for m in modules if m.startswith(upper)) == []
    assert "fsm.spec_compiled" in modules  # the specs came from the module built ahead of time
    # rare paths import their own: previews (fsm.engine.partial), numbers past float, unwritable values
    assert {"fsm.engine.partial", "decimal", "secrets"} & modules == set()
    assert sorted(m for m in modules if m.startswith(SDK_READERS)) == []  # dicts need no SDK object's reader


SDK_READERS = ("fsm.wire.sdk", "fsm.wire.langchain")
"""The modules that read SDK objects (LangChain's chunks among them): loaded with the first one fed."""


def test_the_sdk_readers_load_with_the_first_sdk_object() -> None:
    code = (
        "from fsm import Reassembler\n"
        "class Chunk:  # an SDK object: read by its dump\n"
        "    def model_dump(self, **options):\n"
        "        return {'choices': [{'index': 0, 'delta': {'content': 'hi'}}]}\n"
        "r = Reassembler('openai-chat')\nr.feed(Chunk())\nassert r.close().text == 'hi'"
    )
    assert "fsm.wire.sdk" in loaded_after(code)


def test_replay_loads_only_what_replay_needs(tmp_path: Path) -> None:
    stream = tmp_path / "chat.sse"
    stream.write_bytes(sse([chunk(tc(index=0, id="a", name="f", args="{}"), finish="tool_calls")]))
    code = f"import io\nfrom fsm.cli import main\nassert main(['replay', {str(stream)!r}], stdout=io.StringIO()) == 0"
    modules = loaded_after(code)
    assert {"cattrs", "tomllib", "transitions", "decimal", "secrets"} & modules == set()
    assert sorted(m for m in modules if m.startswith(("fsm.messages", "fsm.history", "fsm.oneshot"))) == []
    # the fuzz package's own module names the shapes for --help; none of the harness itself loads
    assert sorted(m for m in modules if m.startswith("fsm.harness")) == ["fsm.harness", "fsm.harness.fuzz"]
    others = ["anthropic", "bedrock", "cohere", "gemini", "ollama", "openai_responses"]
    assert "fsm.wire.decoders.openai_chat" in modules  # the stream's decoder, and no other provider's
    assert sorted({f"fsm.wire.decoders.{name}" for name in others} & modules) == []
    assert sorted(m for m in modules if m.startswith(SDK_READERS)) == []  # bytes need no SDK object's reader
    assert {"tempfile", "pathlib"} & modules == set()  # only the commands that write files load them


def test_every_spec_built_ahead_of_time_is_its_toml_file() -> None:
    """The module is current (built from the files specs/ holds now) and rebuilds the very objects
    loading and validating the TOML gives; if this fails, run `python tools/compile_specs.py`."""
    import zlib

    assert set(spec_compiled.BUILT_FROM) == set(LOADERS)
    for name, loader in LOADERS.items():
        data = (spec.SPEC_DIR / f"{name}.toml").read_bytes()
        assert spec_compiled.BUILT_FROM[name] == (len(data), zlib.crc32(data)), (
            f"{name}: stale: run python tools/compile_specs.py"
        )
        built = spec_compiled.load(name, spec.SPEC_DIR / f"{name}.toml", spec)
        assert built == loader(spec.SPEC_DIR / f"{name}.toml"), name
    assert spec.slot_spec() == spec.load_machine(spec.SPEC_DIR / "slot.toml")
    assert spec.identity_spec() == spec.load_identity(spec.SPEC_DIR / "identity.toml")


def test_an_edited_spec_is_read_from_its_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for path in spec.SPEC_DIR.glob("*.toml"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    assert spec_compiled.load("slot", tmp_path / "slot.toml", spec) == spec.slot_spec()  # unchanged: taken
    edited = tmp_path / "slot.toml"
    text = edited.read_text()
    reason = spec.slot_spec().machine.reason
    edited.write_text(text.replace(reason, "An edited reason."))
    assert spec_compiled.load("slot", edited, spec) is None
    assert spec_compiled.load("slot", tmp_path / "absent.toml", spec) is None  # the loader reports it
    monkeypatch.setattr(spec, "_SPEC_ROOT", str(tmp_path))
    spec.slot_spec.cache_clear()
    try:
        assert spec.slot_spec().machine.reason == "An edited reason."  # the TOML decides, not the module
    finally:
        monkeypatch.undo()
        spec.slot_spec.cache_clear()
    assert spec.slot_spec().machine.reason == reason
