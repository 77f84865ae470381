"""Render every machine in specs/ as diagrams and tables, from the spec alone.

For each machine: Mermaid text (embedded in Markdown under ``docs/``, so it renders in a pull
request), Graphviz DOT (rendered to SVG with Graphviz's ``dot``), and tables of its states,
transitions, guards and actions with the spec's one-line reasons. The identity rules are drawn as a
decision map: the rules in the order the registry consults them, the policies that tune them and the
diagnostics they raise. Output is deterministic: spec order, no timestamps.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

import attrs

from fsm.harness.identity_flow import (
    SEVERITY_MARK,
    diagnostics_table,
    identity_dot,
    identity_mermaid,
    identity_page,
)
from fsm.harness.markup import REGENERATE, dot, md, mermaid_text, node_id
from fsm.spec import MachineSpec, history_spec, identity_spec, scanner_spec, slot_spec

__all__ = [  # the identity pictures are rendered in identity_flow; generate() writes them with the rest
    "REGENERATE",
    "SEVERITY_MARK",
    "diagnostics_table",
    "generate",
    "identity_dot",
    "identity_mermaid",
    "identity_page",
    "machine_dot",
    "machine_mermaid",
    "machine_page",
    "node_id",
    "outputs",
    "readme_with_diagram",
]

README_START = "<!-- generated: slot diagram (tools/diagram.py) -->"
README_END = "<!-- end of generated slot diagram -->"
README_CODES_START = "<!-- generated: diagnostic codes (tools/diagram.py) -->"
README_CODES_END = "<!-- end of generated diagnostic codes -->"


@attrs.frozen
class Edge:
    source: str
    dest: str
    trigger: str
    guard: str
    action: str
    reason: str

    @property
    def label(self) -> str:
        guard = f" [{self.guard}]" if self.guard else ""
        action = f" / {self.action}" if self.action else ""
        return f"{self.trigger}{guard}{action}"


def edges(spec: MachineSpec) -> list[Edge]:
    """Every (source, transition) of the spec, in order; an unguarded transition that follows a
    guarded one for the same source and trigger is shown with guard ``else``."""
    out = []
    guarded: set[tuple[str, str]] = set()
    for src, t in spec.edges():
        key = (src, t.trigger)
        guard = " & ".join(t.guards) if t.guards else ("else" if key in guarded else "")
        if t.guards:
            guarded.add(key)
        out.append(Edge(src, t.destination(src), t.trigger, guard, t.action or "", t.reason))
    return out


def merged(spec: MachineSpec) -> list[tuple[str, str, list[Edge]]]:
    """Edges grouped by (source, destination), in order of first appearance: one drawn arrow each,
    labelled with one line per trigger, so parallel edges and self-loops stay legible."""
    groups: dict[tuple[str, str], list[Edge]] = {}
    for e in edges(spec):
        groups.setdefault((e.source, e.dest), []).append(e)
    return [(src, dst, group) for (src, dst), group in groups.items()]


# -- state machines ----------------------------------------------------------------------------------


NBSP = "\u00a0"
SELF_LOOP = "↻"
"""Marks, inside a state's box, a transition that stays in that state."""


def mermaid_lines(group: list[Edge], *, action_below: bool = True) -> list[str]:
    """One label line per (guard, action), naming every trigger that shares it: short enough that
    GitHub's Mermaid lays the labels out without overlaps."""
    shared: dict[tuple[str, str], list[str]] = {}
    for e in group:
        shared.setdefault((e.guard, e.action), []).append(e.trigger)
    lines = []
    for (guard, action), triggers in shared.items():
        text = ", ".join(dict.fromkeys(triggers))
        text += f" [{guard}]" if guard else ""
        # The action on a line of its own keeps labels narrow, so neighbouring edges' labels do not meet.
        below = "<br/>" if action_below else " "
        lines.append(mermaid_text(text) + (f"{below}/ {mermaid_text(action)}" if action else ""))
    return lines


def machine_mermaid(spec: MachineSpec) -> str:
    """A top-to-bottom state diagram. Self-loops are listed inside their state's box (marked
    ``↻``) rather than drawn: Mermaid stacks loop labels on the neighbouring edges' labels."""
    lines = ["stateDiagram-v2", "    direction TB"]
    lines += [
        f"    [*] --> {state}" + (f" : {kind}{NBSP}input" if kind else "") for kind, state in spec.initials().items()
    ]
    groups = merged(spec)
    for state in spec.states:
        loops = [
            line
            for src, dst, group in groups
            if src == dst == state.name
            for line in mermaid_lines(group, action_below=False)
        ]
        if loops:
            lines.append(f"    {state.name} : {state.name}")
            lines += [f"    {state.name} : {SELF_LOOP} {line}" for line in loops]
    # Non-breaking spaces: Mermaid sizes an edge label before the browser wraps it, and a label
    # wrapped after sizing spills onto its neighbour's.
    lines += [
        f"    {src} --> {dst} : {'<br/>'.join(line.replace(' ', NBSP) for line in mermaid_lines(group))}"
        for src, dst, group in groups
        if src != dst
    ]
    terminal = [s.name for s in spec.states if s.terminal]
    lines += [f"    {name} --> [*]" for name in terminal]
    if terminal:
        lines += ["    classDef terminal fill:#eef,stroke:#447", f"    class {','.join(terminal)} terminal"]
    return "\n".join(lines) + "\n"


def machine_dot(spec: MachineSpec) -> str:
    lines = [
        f"digraph {spec.name} {{",
        "    rankdir=LR;",
        f'    tooltip="{dot(spec.machine.reason)}";',
        '    node [shape=box, style="rounded,filled", fillcolor="#ffffff", fontname="Helvetica", fontsize=12];',
        '    edge [fontname="Helvetica", fontsize=10];',
    ]
    starts = [(f"__start_{kind}" if kind else "__start", state, kind) for kind, state in spec.initials().items()]
    lines += [f'    "{start}" [shape=point, width=0.15, label=""];' for start, _, _ in starts]
    for state in spec.states:
        extra = ', peripheries=2, fillcolor="#eeeeff"' if state.terminal else ""
        lines.append(f'    "{state.name}" [tooltip="{dot(state.reason)}"{extra}];')
    lines += [
        f'    "{start}" -> "{state}"' + (f' [label="{kind} input"]' if kind else "") + ";"
        for start, state, kind in starts
    ]
    for src, dst, group in merged(spec):
        label = "\\n".join(dot(e.label) for e in group)
        tooltip = " | ".join(dot(e.reason) for e in group)
        lines.append(f'    "{src}" -> "{dst}" [label="{label}", tooltip="{tooltip}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _kinds_table(spec: MachineSpec) -> list[str]:
    if not spec.kinds:
        return []
    states = {k.name: ", ".join(f"`{s.name}`" for s in spec.states if s.kind == k.name) for k in spec.kinds}
    rows = [f"| `{k.name}` | {states[k.name]} | {'yes' if k.scanned else 'no'} | {md(k.reason)} |" for k in spec.kinds]
    head = ["## Input kinds", "", "A call starts in its kind's first state; the others are shared.", ""]
    return [*head, "| kind | states | scanned | reason |", "|---|---|---|---|", *rows, ""]


def _named_table(title: str, items: Iterable[tuple[str, str]]) -> list[str]:
    rows = [f"| `{name}` | {md(reason)} |" for name, reason in items]
    if not rows:
        return []
    return [f"## {title}", "", f"| {title[:-1].lower()} | reason |", "|---|---|", *rows, ""]


def machine_page(spec: MachineSpec, source: str) -> str:
    titles = {
        "slot": "The slot machine",
        "scanner": "The argument-completeness scanner",
        "history": "The history machine (a call id across a conversation)",
    }
    title = titles.get(spec.name, spec.name)
    out = [
        f"# {title}",
        "",
        f"<!-- Generated from {source} by `{REGENERATE}`. Do not edit: change the spec and regenerate. -->",
        "",
        spec.machine.reason,
        "",
        "```mermaid",
        machine_mermaid(spec).rstrip(),
        "```",
        "",
        f"An edge is labelled `trigger [guard] / action`; `{SELF_LOOP}` inside a state lists the transitions that stay",
        "in it. Terminal states are shaded.",
        "",
        f"Graphviz rendering: [{spec.name}.svg](diagrams/{spec.name}.svg) (hover a state or edge for its reason).",
        "",
        *_kinds_table(spec),
        "## States",
        "",
        "| state | terminal | reason |",
        "|---|---|---|",
        *[f"| `{s.name}` | {'yes' if s.terminal else ''} | {md(s.reason)} |" for s in spec.states],
        "",
        "## Transitions",
        "",
        "Tried in this order; for one source and trigger the first whose guard holds is taken.",
        "",
        "| source | trigger | guard | destination | action | reason |",
        "|---|---|---|---|---|---|",
        *[
            f"| `{e.source}` | `{e.trigger}` | {f'`{e.guard}`' if e.guard else ''} | `{e.dest}` | "
            f"{f'`{e.action}`' if e.action else ''} | {md(e.reason)} |"
            for e in edges(spec)
        ],
        "",
    ]
    if spec.classes:
        out += ["## Character classes", "", "| class | characters |", "|---|---|"]
        out += [f"| `{k}` | `{chars.encode('unicode_escape').decode()}` |" for k, chars in spec.classes.items()]
        out += ["| `other` | every character no class names |", ""]
    triggers = [(t.name, t.reason + (f" Prepared by `{t.prepare}`." if t.prepare else "")) for t in spec.triggers]
    out += _named_table("Triggers", triggers)
    out += _named_table("Guards", [(g.name, g.reason) for g in spec.guards])
    out += _named_table("Actions", [(a.name, a.reason) for a in spec.actions])
    return "\n".join(out).rstrip() + "\n"


def index_page() -> str:
    return (
        "# Diagrams\n\n"
        f"<!-- Generated by `{REGENERATE}`. -->\n\n"
        "Every page here but two is generated from `specs/`: change a spec, run "
        f"`{REGENERATE}`, and commit the result with it (CI fails otherwise).\n\n"
        "- [Architecture](architecture.md), written by hand: the layers of `fsm/`, one chunk's path "
        "through them, and where a change goes.\n"
        "- [Performance](performance.md), written by hand: what toolcall-fsm costs, how it is measured, "
        "and why each target is met or missed.\n"
        "- [The slot machine](slot.md): one tool call's life, from `specs/slot.toml`.\n"
        "- [The argument-completeness scanner](scanner.md): from `specs/scanner.toml`.\n"
        "- [The identity rules](identity.md): the registry's rules, policies and diagnostics, from "
        "`specs/identity.toml`.\n"
        "- [The history machine](history.md): a tool-call id across a conversation, from `specs/history.toml`.\n"
    )


# -- files ---------------------------------------------------------------------------------------------------

REPOSITORY = "https://github.com/toolcall-fsm/toolcall-fsm"
"""The project's home (pyproject's project URLs); the README links through it so it reads the same
on the package index as on the forge."""
RAW = "https://raw.githubusercontent.com/toolcall-fsm/toolcall-fsm/main"


def render_svg(dot_source: str) -> str:
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError("Graphviz's dot is not installed (Debian: apt-get install graphviz)")
    proc = subprocess.run([dot, "-Tsvg"], input=dot_source, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"dot failed: {proc.stderr.strip()}")
    # Drop the version banner so a Graphviz patch release does not show up as a diff.
    svg = re.sub(r"<!-- Generated by graphviz[^>]*-->\n", "", proc.stdout)
    return svg.replace("<svg", svg_stamp(dot_source) + "\n<svg", 1)


def svg_stamp(dot_source: str) -> str:
    """The comment an SVG carries naming the DOT text it was rendered from. The freshness check reads
    it instead of comparing SVG bytes, which differ between Graphviz versions for the same DOT."""
    return f"<!-- rendered from DOT sha256:{hashlib.sha256(dot_source.encode()).hexdigest()[:16]} -->"


def outputs() -> dict[str, str]:
    """Every generated text file (pages and DOT), relative to the project's root, and its content."""
    files = {
        "docs/README.md": index_page(),
        "docs/slot.md": machine_page(slot_spec(), "specs/slot.toml"),
        "docs/scanner.md": machine_page(scanner_spec(), "specs/scanner.toml"),
        "docs/identity.md": identity_page(identity_spec()),
        "docs/history.md": machine_page(history_spec(), "specs/history.toml"),
    }
    files |= {f"docs/diagrams/{name}.dot": source for name, source in dot_sources().items()}
    return files


def dot_sources() -> dict[str, str]:
    return {
        "slot": machine_dot(slot_spec()),
        "scanner": machine_dot(scanner_spec()),
        "identity": identity_dot(identity_spec()),
        "history": machine_dot(history_spec()),
    }


def readme_with_diagram(readme: str) -> str:
    """The README with its generated blocks refreshed (each left alone if the README lacks it): the
    slot diagram and the table of diagnostic codes.

    The README is also the package index's project page, which shows Mermaid as raw code and cannot
    follow relative links: it shows the Graphviz SVG by absolute URL and links to docs/ the same way."""
    slot = (
        "![The slot machine: opened, accumulating, value_closed, then flushed or truncated]"
        f"({RAW}/docs/diagrams/slot.svg)\n\n"
        "The same machine in Mermaid, with its transition table: "
        f"[docs/slot.md]({REPOSITORY}/blob/main/docs/slot.md).\n"
    )
    codes = "\n".join(diagnostics_table(identity_spec(), with_rule=False)) + "\n"
    readme = _replace_block(readme, README_START, README_END, slot)
    return _replace_block(readme, README_CODES_START, README_CODES_END, codes)


def _replace_block(text: str, start_marker: str, end_marker: str, body: str) -> str:
    start, end = text.find(start_marker), text.find(end_marker)
    if start < 0 or end < start:
        return text
    return text[:start] + start_marker + "\n" + body + text[end:]


def generate(root: Path, *, check: bool, readme: bool = True) -> list[str]:
    """Write (or, with ``check``, only compare) every generated file under ``root``; return the
    files that were stale. Pages, DOT and the README block are compared as text; an SVG is stale
    when it was not rendered from the current DOT (its stamp), so checking needs no Graphviz."""
    files = outputs()
    readme_path = root / "README.md"
    if readme and readme_path.exists():
        files["README.md"] = readme_with_diagram(readme_path.read_text(encoding="utf-8"))
    stale = []
    for rel, content in files.items():
        path = root / rel
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old != content:
            stale.append(rel)
            if not check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(content, encoding="utf-8")
    for name, source in dot_sources().items():
        path = root / "docs" / "diagrams" / f"{name}.svg"
        if path.exists() and svg_stamp(source) in path.read_text(encoding="utf-8"):
            continue
        stale.append(f"docs/diagrams/{name}.svg")
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(render_svg(source), encoding="utf-8")
    return stale
