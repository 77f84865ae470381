"""The diagrams in docs/ are generated from specs/, current, deterministic, and they render."""

from __future__ import annotations

import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import attrs
import pytest

from fsm.harness import diagrams
from fsm.spec import history_spec, identity_spec, scanner_spec, slot_spec

ROOT = Path(__file__).resolve().parent.parent
HAVE_DOT = shutil.which("dot") is not None
needs_dot = pytest.mark.skipif(not HAVE_DOT, reason="Graphviz's dot is not installed (.ci/run installs it)")


def test_markdown_and_dot_are_current() -> None:
    files = diagrams.outputs(svg=False)
    files["README.md"] = diagrams.readme_with_diagram((ROOT / "README.md").read_text(encoding="utf-8"))
    stale = [rel for rel, text in files.items() if (ROOT / rel).read_text(encoding="utf-8") != text]
    assert not stale, f"stale: {stale}; run `{diagrams.REGENERATE}` and commit"


@needs_dot
def test_every_generated_file_is_current_including_svg() -> None:
    assert diagrams.generate(ROOT, check=True) == []


def test_output_is_deterministic() -> None:
    assert diagrams.outputs(svg=False) == diagrams.outputs(svg=False)


def test_every_state_transition_and_reason_comes_from_the_spec() -> None:
    spec = slot_spec()
    page = diagrams.machine_page(spec, "specs/slot.toml")
    for state in spec.states:
        assert f"`{state.name}`" in page and state.reason in page
    for _, t in spec.edges():
        assert t.reason in page
    for named in (*spec.guards, *spec.actions, *spec.triggers):
        assert named.reason in page
    mermaid = diagrams.machine_mermaid(spec)
    assert mermaid.count("-->") == len(diagrams.merged(spec)) + len(spec.initials()) + sum(
        s.terminal for s in spec.states
    )


def test_identity_page_lists_every_rule_policy_and_diagnostic() -> None:
    spec = identity_spec()
    page = diagrams.identity_page(spec)
    for item in (*spec.rules, *spec.policies):
        assert f"`{item.name}`" in page and item.reason in page
    for diag in spec.diagnostics:
        assert f"`{diag.code}`" in page and diag.code in diagrams.identity_mermaid(spec)


def test_a_spec_change_shows_as_a_small_readable_diff() -> None:
    spec = slot_spec()
    changed = attrs.evolve(
        spec, states=tuple(attrs.evolve(s, reason="Changed.") if s.name == "opened" else s for s in spec.states)
    )
    before = diagrams.machine_page(spec, "specs/slot.toml").splitlines()
    after = diagrams.machine_page(changed, "specs/slot.toml").splitlines()
    assert [a for a, b in zip(before, after, strict=True) if a != b] == [
        f"| `opened` |  | {slot_spec().states[0].reason} |"
    ]


@needs_dot
@pytest.mark.parametrize("name", ["slot", "scanner", "identity", "history"])
def test_svg_parses_as_xml_and_shows_every_node(name: str) -> None:
    svg = (ROOT / "docs" / "diagrams" / f"{name}.svg").read_text(encoding="utf-8")
    tree = ET.fromstring(svg)
    texts = {el.text for el in tree.iter() if el.text}
    if name == "identity":
        wanted = {f"{r.order}. {r.name}" for r in identity_spec().rules} | {d.code for d in identity_spec().diagnostics}
    else:
        spec = {"slot": slot_spec, "scanner": scanner_spec, "history": history_spec}[name]()
        wanted = set(spec.state_names())
    assert wanted <= texts


def test_diagram_check_command_reports_stale_files(tmp_path: Path) -> None:
    from fsm.cli import main

    (tmp_path / "README.md").write_text("# x\n")
    code = main(["diagram", "--root", str(tmp_path), "--check"], stdout=sys.stdout, stderr=sys.stderr)
    assert code == 1
    assert not (tmp_path / "docs").exists()  # --check writes nothing


MMDC = ROOT / ".cache" / "mermaid" / "node_modules" / ".bin" / "mmdc"


@pytest.mark.skipif(
    not ((MMDC.exists() or shutil.which("mmdc")) and Path("/usr/bin/chromium").exists()),
    reason="mermaid-cli and Chromium are not installed (tools/install_mermaid.sh installs them)",
)
def test_real_mermaid_accepts_every_block() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "check_mermaid.py")], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "0 rejected" in proc.stdout
