"""The diagrams in docs/ are generated from specs/, current, deterministic, and they render."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import attrs
import pytest

from fsm.harness import diagrams, identity_flow
from fsm.spec import history_spec, identity_spec, scanner_spec, slot_spec

ROOT = Path(__file__).resolve().parent.parent
HAVE_DOT = shutil.which("dot") is not None
needs_dot = pytest.mark.skipif(not HAVE_DOT, reason="Graphviz's dot is not installed (.ci/run installs it)")


def test_markdown_and_dot_are_current() -> None:
    files = diagrams.outputs()
    files["README.md"] = diagrams.readme_with_diagram((ROOT / "README.md").read_text(encoding="utf-8"))
    stale = [rel for rel, text in files.items() if (ROOT / rel).read_text(encoding="utf-8") != text]
    assert not stale, f"stale: {stale}; run `{diagrams.REGENERATE}` and commit"


def test_every_generated_file_is_current_including_svg() -> None:
    # Needs no Graphviz: an SVG is current when its stamp names the current DOT text.
    assert diagrams.generate(ROOT, check=True) == []


def test_output_is_deterministic() -> None:
    assert diagrams.outputs() == diagrams.outputs()


@needs_dot
def test_the_check_ignores_graphviz_version_differences_but_not_a_changed_dot(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    assert diagrams.generate(tmp_path, check=False)  # everything written
    assert diagrams.generate(tmp_path, check=True) == []
    svg = tmp_path / "docs" / "diagrams" / "slot.svg"
    # Another Graphviz renders the same DOT with other coordinates and attributes: still current.
    svg.write_text(svg.read_text(encoding="utf-8").replace('font-size="', 'font-size="1'), encoding="utf-8")
    assert diagrams.generate(tmp_path, check=True) == []
    # An SVG rendered from other DOT text (an older spec) is stale.
    other = diagrams.render_svg("digraph slot { a -> b; }\n")
    svg.write_text(other, encoding="utf-8")
    assert diagrams.generate(tmp_path, check=True) == ["docs/diagrams/slot.svg"]


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
    moves = [(src, dst) for src, dst, _ in diagrams.merged(spec) if src != dst]
    assert mermaid.count("-->") == len(moves) + len(spec.initials()) + sum(s.terminal for s in spec.states)
    for src, dst in moves:
        assert f"    {src} --> {dst} : " in mermaid
    for src, _, group in (g for g in diagrams.merged(spec) if g[0] == g[1]):  # self-loops: listed in the state
        for line in diagrams.mermaid_lines(group, action_below=False):
            assert f"    {src} : {diagrams.SELF_LOOP} {line}" in mermaid


def test_mermaid_edge_labels_cannot_wrap_onto_their_neighbours() -> None:
    # Mermaid sizes a label before the browser wraps it; a wrapped label overlapped the next one.
    for spec in (slot_spec(), scanner_spec(), history_spec()):
        for line in diagrams.machine_mermaid(spec).splitlines():
            if "-->" in line and " : " in line:
                assert " " not in line.split(" : ", 1)[1], line


def test_slot_state_names_cannot_be_read_as_call_statuses() -> None:
    from fsm.results import CallStatus

    statuses = {s.value for s in CallStatus}
    # truncated is both, and means the same: a truncated slot reports status truncated.
    assert set(slot_spec().state_names()) & statuses <= {"truncated"}


def test_identity_page_lists_every_rule_policy_and_diagnostic() -> None:
    spec = identity_spec()
    page = diagrams.identity_page(spec)
    for item in (*spec.rules, *spec.policies):
        assert f"`{item.name}`" in page and item.reason in page
    for diag in spec.diagnostics:
        assert f"| `{diag.code}` | {diag.severity} |" in page
        assert f"{identity_flow.SEVERITY_MARK[diag.severity]} {diag.code}" in diagrams.identity_mermaid(spec)


def test_identity_diagram_is_the_flow_with_a_legend() -> None:
    spec = identity_spec()
    mermaid, dot = diagrams.identity_mermaid(spec), diagrams.identity_dot(spec)
    for step in spec.flow:
        node = identity_flow.node_id("S_", step.step)
        for label, target in step.targets():
            arrow = f"-- {label} -->" if label else "-->"
            assert f"    {node} {arrow} {identity_flow.node_id('S_', target)}" in mermaid
            assert f'"{node}" -> "{identity_flow.node_id("S_", target)}"' in dot
    for rule in spec.rules:  # each rule is named at a step of the flow
        assert rule.name in mermaid and rule.name in dot
    assert "subgraph legend [Legend]" in mermaid and "subgraph cluster_legend" in dot
    for severity, mark in identity_flow.SEVERITY_MARK.items():
        assert f"{mark} {severity}" in mermaid and f"{mark} {severity}" in dot


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
        marks = identity_flow.SEVERITY_MARK
        wanted = {f"{marks[d.severity]} {d.code}" for d in identity_spec().diagnostics}
        wanted.add("Legend")
    else:
        spec = {"slot": slot_spec, "scanner": scanner_spec, "history": history_spec}[name]()
        wanted = set(spec.state_names())
    assert wanted <= texts


def test_diagram_check_command_reports_stale_files(tmp_path: Path) -> None:
    from fsm.cli import main

    (tmp_path / "README.md").write_text("# x\n")
    (tmp_path / "specs").mkdir()
    code = main(["diagram", "--root", str(tmp_path), "--check"], stdout=sys.stdout, stderr=sys.stderr)
    assert code == 1
    assert not (tmp_path / "docs").exists()  # --check writes nothing


@needs_dot
def test_diagram_command_writes_only_into_a_project_root_or_where_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fsm.cli import main

    scratch = tmp_path / "scratch"
    (scratch / "docs").mkdir(parents=True)
    (scratch / "docs" / "README.md").write_text("the user's own notes\n")
    (scratch / "README.md").write_text("the user's readme\n" + diagrams.README_START + "\n" + diagrams.README_END)
    monkeypatch.chdir(scratch)
    err = io.StringIO()
    assert main(["diagram"], stdout=io.StringIO(), stderr=err) == 2
    assert "holds no specs/" in err.getvalue()
    assert (scratch / "docs" / "README.md").read_text() == "the user's own notes\n"
    assert sorted(p.name for p in scratch.rglob("*")) == ["README.md", "README.md", "docs"]
    out = tmp_path / "out"
    assert main(["diagram", "--out", str(out)], stdout=io.StringIO(), stderr=sys.stderr) == 0
    assert (out / "docs" / "slot.md").exists() and not (out / "README.md").exists()


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
