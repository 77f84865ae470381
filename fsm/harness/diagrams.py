"""Render every machine in specs/ as diagrams and tables, from the spec alone.

For each machine: Mermaid text (embedded in Markdown under ``docs/``, so it renders in a pull
request), Graphviz DOT (rendered to SVG with Graphviz's ``dot``), and tables of its states,
transitions, guards and actions with the spec's one-line reasons. The identity rules are drawn as a
decision map: the rules in the order the registry consults them, the policies that tune them and the
diagnostics they raise. Output is deterministic: spec order, no timestamps.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

import attrs

from fsm.spec import DiagnosticSpec, IdentitySpec, MachineSpec, history_spec, identity_spec, scanner_spec, slot_spec

REGENERATE = "python tools/diagram.py"
README_START = "<!-- generated: slot diagram (tools/diagram.py) -->"
README_END = "<!-- end of generated slot diagram -->"


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


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def _dot(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _mermaid_text(text: str) -> str:
    # Mermaid labels: keep to characters its grammar treats as plain text.
    return text.replace('"', "'").replace(";", ",").replace("#", "")


# -- state machines ----------------------------------------------------------------------------------


def machine_mermaid(spec: MachineSpec) -> str:
    lines = ["stateDiagram-v2", "    direction LR"]
    lines += [f"    [*] --> {state}" + (f" : {kind} input" if kind else "") for kind, state in spec.initials().items()]
    lines += [
        f"    {src} --> {dst} : {'<br/>'.join(_mermaid_text(e.label) for e in group)}"
        for src, dst, group in merged(spec)
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
        f'    tooltip="{_dot(spec.machine.reason)}";',
        '    node [shape=box, style="rounded,filled", fillcolor="#ffffff", fontname="Helvetica", fontsize=12];',
        '    edge [fontname="Helvetica", fontsize=10];',
    ]
    starts = [(f"__start_{kind}" if kind else "__start", state, kind) for kind, state in spec.initials().items()]
    lines += [f'    "{start}" [shape=point, width=0.15, label=""];' for start, _, _ in starts]
    for state in spec.states:
        extra = ', peripheries=2, fillcolor="#eeeeff"' if state.terminal else ""
        lines.append(f'    "{state.name}" [tooltip="{_dot(state.reason)}"{extra}];')
    lines += [
        f'    "{start}" -> "{state}"' + (f' [label="{kind} input"]' if kind else "") + ";"
        for start, state, kind in starts
    ]
    for src, dst, group in merged(spec):
        label = "\\n".join(_dot(e.label) for e in group)
        tooltip = " | ".join(_dot(e.reason) for e in group)
        lines.append(f'    "{src}" -> "{dst}" [label="{label}", tooltip="{tooltip}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _kinds_table(spec: MachineSpec) -> list[str]:
    if not spec.kinds:
        return []
    states = {k.name: ", ".join(f"`{s.name}`" for s in spec.states if s.kind == k.name) for k in spec.kinds}
    rows = [f"| `{k.name}` | {states[k.name]} | {'yes' if k.scanned else 'no'} | {_md(k.reason)} |" for k in spec.kinds]
    head = ["## Input kinds", "", "A call starts in its kind's first state; the others are shared.", ""]
    return [*head, "| kind | states | scanned | reason |", "|---|---|---|---|", *rows, ""]


def _named_table(title: str, items: Iterable[tuple[str, str]]) -> list[str]:
    rows = [f"| `{name}` | {_md(reason)} |" for name, reason in items]
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
        f"Graphviz rendering: [{spec.name}.svg](diagrams/{spec.name}.svg) (hover a state or edge for its reason).",
        "",
        *_kinds_table(spec),
        "## States",
        "",
        "| state | terminal | reason |",
        "|---|---|---|",
        *[f"| `{s.name}` | {'yes' if s.terminal else ''} | {_md(s.reason)} |" for s in spec.states],
        "",
        "## Transitions",
        "",
        "Tried in this order; for one source and trigger the first whose guard holds is taken.",
        "",
        "| source | trigger | guard | destination | action | reason |",
        "|---|---|---|---|---|---|",
        *[
            f"| `{e.source}` | `{e.trigger}` | {f'`{e.guard}`' if e.guard else ''} | `{e.dest}` | "
            f"{f'`{e.action}`' if e.action else ''} | {_md(e.reason)} |"
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


# -- identity rules --------------------------------------------------------------------------------------


def _node(prefix: str, name: str) -> str:
    return prefix + re.sub(r"[^A-Za-z0-9]", "_", name)


def _diagnostics_by_rule(spec: IdentitySpec) -> dict[str, list[DiagnosticSpec]]:
    by_rule: dict[str, list[DiagnosticSpec]] = {}
    for diag in spec.diagnostics:
        by_rule.setdefault(diag.rule, []).append(diag)
    return by_rule


def identity_mermaid(spec: IdentitySpec) -> str:
    rules = sorted(spec.rules, key=lambda r: r.order)
    by_rule = _diagnostics_by_rule(spec)
    lines = ["flowchart TD", '    event(["wire event"])']
    previous = "event"
    for rule in rules:
        node = _node("R_", rule.name)
        lines.append(f'    {node}["{rule.order}. {rule.name}"]')
        lines.append(f"    {previous} --> {node}")
        previous = node
    for policy in spec.policies:
        node = _node("P_", policy.name)
        lines.append(f'    {node}[/"policy {policy.name} = {policy.default}"/]')
        lines.append(f"    {node} -. tunes .-> {_node('R_', policy.rule)}")
    for rule in rules:
        diags = by_rule.get(rule.name)
        if diags:
            node = _node("D_", rule.name)
            codes = "<br/>".join(f"{d.code}{' !' if d.violation else ''}" for d in diags)
            lines.append(f'    {node}{{{{"{codes}"}}}}')
            lines.append(f"    {_node('R_', rule.name)} -. reports .-> {node}")
    lines += ["    classDef policy fill:#ffd", "    classDef diagnostics fill:#fee,stroke:#b00"]
    lines.append(f"    class {','.join(_node('P_', p.name) for p in spec.policies)} policy")
    lines.append(f"    class {','.join(_node('D_', r) for r in by_rule)} diagnostics")
    return "\n".join(lines) + "\n"


def identity_dot(spec: IdentitySpec) -> str:
    rules = sorted(spec.rules, key=lambda r: r.order)
    by_rule = _diagnostics_by_rule(spec)
    lines = [
        "digraph identity {",
        "    rankdir=TB;",
        "    nodesep=0.3; ranksep=0.25;",
        '    node [fontname="Helvetica", fontsize=11];',
        '    edge [fontname="Helvetica", fontsize=9];',
        '    "event" [shape=oval, label="wire event"];',
    ]
    previous = "event"
    for rule in rules:
        node = _node("R_", rule.name)
        label = f"{rule.order}. {rule.name}"
        lines.append(
            f'    "{node}" [shape=box, style=rounded, width=3, label="{label}", tooltip="{_dot(rule.reason)}"];'
        )
        lines.append(f'    "{previous}" -> "{node}" [weight=20];')
        previous = node
        row = [node]
        for policy in (p for p in spec.policies if p.rule == rule.name):
            pnode = _node("P_", policy.name)
            plabel = f"policy {policy.name} = {policy.default}"
            lines.append(
                f'    "{pnode}" [shape=parallelogram, style=filled, fillcolor="#ffffdd", '
                f'label="{plabel}", tooltip="{_dot(policy.reason)}"];'
            )
            lines.append(f'    "{pnode}" -> "{node}" [style=dashed, label="tunes"];')
            row.insert(0, pnode)
        diags = by_rule.get(rule.name)
        if diags:
            dnode = _node("D_", rule.name)
            colour = {True: "#bb0000", False: "#444444"}
            cells = "".join(
                f'<TR><TD ALIGN="LEFT"><FONT COLOR="{colour[d.violation]}">{d.code}</FONT></TD></TR>' for d in diags
            )
            lines.append(
                f'    "{dnode}" [shape=note, fontsize=10, label=<<TABLE BORDER="0" CELLSPACING="0">{cells}</TABLE>>];'
            )
            lines.append(f'    "{node}" -> "{dnode}" [style=dotted, arrowhead=none];')
            row.append(dnode)
        lines.append(f"    {{ rank=same; {'; '.join(chr(34) + n + chr(34) for n in row)}; }}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def identity_page(spec: IdentitySpec) -> str:
    rules = sorted(spec.rules, key=lambda r: r.order)
    out = [
        "# The slot registry's identity rules",
        "",
        f"<!-- Generated from specs/identity.toml by `{REGENERATE}`. Do not edit: change the spec and regenerate. -->",
        "",
        "The registry consults the rules in order for every event; policies tune the cases the wire leaves",
        "ambiguous; each diagnostic is raised under one rule (red in the SVG, `!` in the Mermaid diagram:",
        "a protocol violation, which `--strict` refuses).",
        "",
        "```mermaid",
        identity_mermaid(spec).rstrip(),
        "```",
        "",
        "Graphviz rendering: [identity.svg](diagrams/identity.svg) (hover a node for its reason).",
        "",
        "## Rules",
        "",
        "| order | rule | reason |",
        "|---|---|---|",
        *[f"| {r.order} | `{r.name}` | {_md(r.reason)} |" for r in rules],
        "",
        "## Policies",
        "",
        "| policy | tunes rule | default | choices | reason |",
        "|---|---|---|---|---|",
        *[
            f"| `{p.name}` | `{p.rule}` | `{p.default}` | {', '.join(f'`{c}`' for c in p.choices)} | {_md(p.reason)} |"
            for p in spec.policies
        ],
        "",
        "## Diagnostics",
        "",
        "| code | rule | violation | reason |",
        "|---|---|---|---|",
        *[f"| `{d.code}` | `{d.rule}` | {'yes' if d.violation else ''} | {_md(d.reason)} |" for d in spec.diagnostics],
        "",
    ]
    return "\n".join(out).rstrip() + "\n"


def index_page() -> str:
    return (
        "# Diagrams\n\n"
        f"<!-- Generated by `{REGENERATE}`. -->\n\n"
        "Every page here but one is generated from `specs/`: change a spec, run "
        f"`{REGENERATE}`, and commit the result with it (CI fails otherwise).\n\n"
        "- [Architecture](architecture.md), written by hand: the layers of `fsm/`, one chunk's path "
        "through them, and where a change goes.\n"
        "- [The slot machine](slot.md): one tool call's life, from `specs/slot.toml`.\n"
        "- [The argument-completeness scanner](scanner.md): from `specs/scanner.toml`.\n"
        "- [The identity rules](identity.md): the registry's rules, policies and diagnostics, from "
        "`specs/identity.toml`.\n"
        "- [The history machine](history.md): a tool-call id across a conversation, from `specs/history.toml`.\n"
    )


# -- files ---------------------------------------------------------------------------------------------------


def render_svg(dot_source: str) -> str:
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError("Graphviz's dot is not installed (Debian: apt-get install graphviz)")
    proc = subprocess.run([dot, "-Tsvg"], input=dot_source, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"dot failed: {proc.stderr.strip()}")
    # Drop the version banner so a Graphviz patch release does not show up as a diff.
    return re.sub(r"<!-- Generated by graphviz[^>]*-->\n", "", proc.stdout)


def outputs(svg: bool = True) -> dict[str, str]:
    """Every generated file, relative to the project's root, and its content."""
    slot, scanner, identity, hist = slot_spec(), scanner_spec(), identity_spec(), history_spec()
    files = {
        "docs/README.md": index_page(),
        "docs/slot.md": machine_page(slot, "specs/slot.toml"),
        "docs/scanner.md": machine_page(scanner, "specs/scanner.toml"),
        "docs/identity.md": identity_page(identity),
        "docs/history.md": machine_page(hist, "specs/history.toml"),
    }
    dots = {
        "slot": machine_dot(slot),
        "scanner": machine_dot(scanner),
        "identity": identity_dot(identity),
        "history": machine_dot(hist),
    }
    for name, source in dots.items():
        files[f"docs/diagrams/{name}.dot"] = source
        if svg:
            files[f"docs/diagrams/{name}.svg"] = render_svg(source)
    return files


def readme_with_diagram(readme: str) -> str:
    """The README with its generated slot-diagram block refreshed (left alone if it has no block)."""
    start, end = readme.find(README_START), readme.find(README_END)
    if start < 0 or end < start:
        return readme
    block = f"{README_START}\n```mermaid\n{machine_mermaid(slot_spec()).rstrip()}\n```\n"
    return readme[:start] + block + readme[end:]


def generate(root: Path, *, check: bool) -> list[str]:
    """Write (or, with ``check``, only compare) every generated file under ``root``.
    Returns the files that were stale."""
    files = outputs()
    readme = root / "README.md"
    if readme.exists():
        current = readme.read_text(encoding="utf-8")
        files["README.md"] = readme_with_diagram(current)
    stale = []
    for rel, content in files.items():
        path = root / rel
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old != content:
            stale.append(rel)
            if not check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(content, encoding="utf-8")
    return stale
