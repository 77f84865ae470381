"""The package's layers, read from its import graph: imports run only down the layers, no module
imports itself through others, and a module over 400 lines says at its top why it is one room.

The layers, bottom up (the README's layout section says why they are cut this way):
vocabulary and spec loading, the engine, the wire, the facade and its outputs, conversation history,
the harness, the command line. The public package (``fsm/__init__.py``) sits above the facade.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "fsm"

LAYERS: list[tuple[str, set[str]]] = [
    (
        "vocabulary",
        {
            "fsm.errors",
            "fsm.spec",
            "fsm.spec_types",
            "fsm.spec_compiled",
            "fsm.events",
            "fsm.results",
            "fsm.positional",
            "fsm.options",
            "fsm.jsontext",
            "fsm.fieldcheck",
            "fsm.foreign",
        },
    ),
    ("engine", {"fsm.engine"}),
    ("wire", {"fsm.wire"}),
    (
        "facade",
        {
            "fsm.reassembler",
            "fsm.oneshot",
            "fsm.interrupted",
            "fsm.reemit",
            "fsm.reemit_outputs",
            "fsm.reemit_reasoning",
            "fsm.reemit_signatures",
            "fsm.serialize",
            "fsm.content",
            "fsm.content_parts",
            "fsm.messages",
        },
    ),
    ("public", {"fsm"}),
    ("history", {"fsm.history"}),
    ("harness", {"fsm.harness"}),
    ("cli", {"fsm.cli", "fsm.cli_conform", "fsm.cli_io", "fsm.__main__"}),
]
LONG_MODULE_LINES = 400


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int:
    best: tuple[int, int] | None = None  # (prefix length, layer): the longest matching prefix wins
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if prefix == "fsm" and module != "fsm":
                    continue
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), rank)
    if best is None:
        raise AssertionError(f"{module} belongs to no layer: add it to LAYERS and to the README's layout")
    return best[1]


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The package modules ``path`` imports, at any depth in the file (deferred imports count too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            if name in known:
                found.add(name)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports_of(path, known) - {name} for name, path in mods.items()}


def test_every_module_has_a_layer() -> None:
    for name in modules():
        layer_of(name)


def test_imports_run_only_down_the_layers() -> None:
    upward = [
        f"{mod} ({LAYERS[layer_of(mod)][0]}) imports {dep} ({LAYERS[layer_of(dep)][0]})"
        for mod, deps in graph().items()
        for dep in deps
        if layer_of(dep) > layer_of(mod) and not (mod.startswith(dep + ".") or dep == "fsm")
    ]
    assert upward == []


def test_nothing_below_the_public_package_imports_it() -> None:
    # ``import fsm`` pulls in the facade; a lower module importing ``fsm`` itself would be a cycle.
    assert [m for m, deps in graph().items() if "fsm" in deps and layer_of(m) <= layer_of("fsm")] == []


def test_no_import_cycles() -> None:
    g = graph()
    # a package's __init__ importing its own submodules is how packages re-export, not a cycle
    edges = {m: {d for d in deps if not d.startswith(m + ".")} for m, deps in g.items()}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in sorted(edges[node]):
            if state.get(dep) == 1:
                cycles.append([*path[path.index(dep) :], dep])
            elif dep not in state:
                visit(dep, [*path, dep])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert cycles == []


@pytest.mark.parametrize("name", sorted(modules()))
def test_a_long_module_says_why_it_is_one_room(name: str) -> None:
    path = modules()[name]
    lines = path.read_text().count("\n")
    if lines <= LONG_MODULE_LINES:
        return
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    assert "One room:" in doc, f"{path.name} has {lines} lines: split it, or say at its top why it is one room"


def test_the_checks_can_fail() -> None:
    assert layer_of("fsm.engine.registry") < layer_of("fsm.wire.framing") < layer_of("fsm.harness.fuzz.run")
    with pytest.raises(AssertionError):
        layer_of("fsm_elsewhere.module")
