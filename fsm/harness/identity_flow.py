"""The slot registry's identity spec drawn for a reviewer: its decision for one event as a flow
(Mermaid and Graphviz, each with a legend in the picture), and the page and tables of its rules,
policies and diagnostics. Everything comes from specs/identity.toml."""

from __future__ import annotations

from fsm.harness.markup import REGENERATE, dot, md, mermaid_text, node_id
from fsm.spec import SEVERITIES, FlowStep, IdentitySpec

SEVERITY_MARK = {"violation": "✖", "warning": "⚠", "info": "\u2139"}  # the last: INFORMATION SOURCE
"""How a diagnostic's severity shows in the identity diagrams (and their legend)."""
SEVERITY_COLOUR = {"violation": "#b00000", "warning": "#a05a00", "info": "#555555"}


def _flow_label(step: FlowStep) -> str:
    rules = ", ".join(step.rules)
    return step.text + (f" ⟨{rules}⟩" if rules else "")


def _diagnostic_lines(spec: IdentitySpec, step: FlowStep) -> list[tuple[str, str]]:
    """(severity, code) for each diagnostic the step may report."""
    return [(spec.diagnostic_by_code[code].severity, code) for code in step.diagnostics]


def _policy_label(spec: IdentitySpec, name: str) -> str:
    policy = next(p for p in spec.policies if p.name == name)
    others = " | ".join(c for c in policy.choices if c != policy.default)
    return f"policy {name}: {policy.default} (or {others})"


def identity_mermaid(spec: IdentitySpec) -> str:
    """The registry's decision for one event as a flowchart: questions are hexagons, what it does
    are boxes naming the rule that decides (⟨rule⟩), policies hang off the step they tune and
    diagnostics off the step that reports them, marked by severity; the legend is in the picture."""
    lines = ["flowchart TD", '    event(["a wire event"]) --> ' + node_id("S_", spec.flow[0].step)]
    for step in spec.flow:
        # Mermaid reads <id> as markup: angle quotation marks keep the text.
        text = mermaid_text(_flow_label(step)).replace("<", "\u2039").replace(">", "\u203a")
        node = node_id("S_", step.step)
        # A question is a hexagon: a diamond grows with its text until the flow no longer fits a page.
        lines.append(f'    {node}{{{{"{text}"}}}}' if step.ask else f'    {node}["{text}"]')
    for step in spec.flow:
        for label, target in step.targets():
            arrow = f"-- {label} -->" if label else "-->"
            lines.append(f"    {node_id('S_', step.step)} {arrow} {node_id('S_', target)}")
    for step in spec.flow:
        if step.policy:
            node = node_id("P_", step.step)
            lines.append(f'    {node}[/"{mermaid_text(_policy_label(spec, step.policy))}"/]')
            lines.append(f"    {node} -.- {node_id('S_', step.step)}")
        if step.diagnostics:
            node = node_id("D_", step.step)
            codes = "<br/>".join(f"{SEVERITY_MARK[sev]} {code}" for sev, code in _diagnostic_lines(spec, step))
            lines.append(f'    {node}(["{codes}"])')
            lines.append(f"    {node_id('S_', step.step)} -.- {node}")
    marks = " ".join(f"{mark} {sev}" for sev, mark in SEVERITY_MARK.items())
    lines += [
        "    subgraph legend [Legend]",
        "        direction LR",
        '        L_ask{{"a question"}}',
        '        L_does["what the registry does ⟨the rule that decides⟩"]',
        '        L_policy[/"policy: default (or other choice)"/]',
        f'        L_diag(["diagnostics it may report: {marks}"])',
        "    end",
        "    classDef policy fill:#ffffdd,stroke:#998",
        "    classDef diagnostics fill:#fff0f0,stroke:#b00",
        "    classDef legend fill:#f4f4f4,stroke:#999",
    ]
    policies = [node_id("P_", s.step) for s in spec.flow if s.policy]
    diagnostics = [node_id("D_", s.step) for s in spec.flow if s.diagnostics]
    lines.append(f"    class {','.join([*policies, 'L_policy'])} policy")
    lines.append(f"    class {','.join([*diagnostics, 'L_diag'])} diagnostics")
    return "\n".join(lines) + "\n"


def _wrap(text: str, width: int = 34) -> str:
    """Break a DOT label into lines of about ``width`` characters (DOT does not wrap)."""
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "\\n".join(dot(line) for line in lines)


def _severity_row(severity: str, text: str) -> str:
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return (
        f'<TR><TD ALIGN="LEFT"><FONT COLOR="{SEVERITY_COLOUR[severity]}">'
        f"{SEVERITY_MARK[severity]} {escaped}</FONT></TD></TR>"
    )


def identity_dot(spec: IdentitySpec) -> str:
    """The same flow as :func:`identity_mermaid`, for Graphviz, with its legend as a cluster."""
    lines = [
        "digraph identity {",
        "    rankdir=TB;",
        "    nodesep=0.35; ranksep=0.3;",
        '    node [fontname="Helvetica", fontsize=11];',
        '    edge [fontname="Helvetica", fontsize=10];',
    ]
    reasons = {r.name: r.reason for r in spec.rules}
    for step in spec.flow:
        shape = "hexagon" if step.ask else "box"
        style = "filled" if step.ask else "rounded,filled"
        fill = "#eef4ff" if step.ask else "#ffffff"
        tooltip = " | ".join(f"{r}: {reasons[r]}" for r in step.rules)
        lines.append(
            f'    "{node_id("S_", step.step)}" [shape={shape}, style="{style}", fillcolor="{fill}", '
            f'label="{_wrap(_flow_label(step), 30 if step.ask else 40)}", tooltip="{dot(tooltip)}"];'
        )
    for step in spec.flow:
        for label, target in step.targets():
            extra = f', label="{label}"' if label else ""
            back = ", constraint=false" if target == spec.flow[0].step or (target == "known-id" and label) else ""
            lines.append(f'    "{node_id("S_", step.step)}" -> "{node_id("S_", target)}" [weight=4{extra}{back}];')
    for step in spec.flow:
        if step.policy:
            policy = next(p for p in spec.policies if p.name == step.policy)
            node = node_id("P_", step.step)
            lines.append(
                f'    "{node}" [shape=parallelogram, style=filled, fillcolor="#ffffdd", '
                f'label="{_wrap(_policy_label(spec, step.policy), 30)}", tooltip="{dot(policy.reason)}"];'
            )
            lines.append(f'    "{node}" -> "{node_id("S_", step.step)}" [style=dashed, arrowhead=none, weight=0];')
            lines.append(f'    {{ rank=same; "{node}"; "{node_id("S_", step.step)}"; }}')
        if step.diagnostics:
            node = node_id("D_", step.step)
            cells = "".join(_severity_row(sev, code) for sev, code in _diagnostic_lines(spec, step))
            lines.append(
                f'    "{node}" [shape=note, fontsize=10, label=<<TABLE BORDER="0" CELLSPACING="0">{cells}</TABLE>>];'
            )
            lines.append(f'    "{node_id("S_", step.step)}" -> "{node}" [style=dotted, arrowhead=none, weight=0];')
            lines.append(f'    {{ rank=same; "{node_id("S_", step.step)}"; "{node}"; }}')
    marks = "".join(_severity_row(sev, sev) for sev in SEVERITY_MARK)
    lines += [
        "    subgraph cluster_legend {",
        '        label="Legend"; fontname="Helvetica"; fontsize=11; style=rounded; color="#999999";',
        '        "L_ask" [shape=hexagon, style=filled, fillcolor="#eef4ff", label="a question"];',
        '        "L_does" [shape=box, style="rounded", label="what the registry does\\n⟨the rule that decides⟩"];',
        '        "L_policy" [shape=parallelogram, style=filled, fillcolor="#ffffdd",'
        ' label="policy: default\\n(or other choice)"];',
        f'        "L_diag" [shape=note, fontsize=10, label=<<TABLE BORDER="0" CELLSPACING="0">'
        f'<TR><TD ALIGN="LEFT">diagnostics it may report</TD></TR>{marks}</TABLE>>];',
        '        "L_ask" -> "L_does" -> "L_policy" -> "L_diag" [style=invis];',
        "    }",
        "}",
    ]
    return "\n".join(lines) + "\n"


def identity_page(spec: IdentitySpec) -> str:
    rules = sorted(spec.rules, key=lambda r: r.order)
    out = [
        "# The slot registry's identity rules",
        "",
        f"<!-- Generated from specs/identity.toml by `{REGENERATE}`. Do not edit: change the spec and regenerate. -->",
        "",
        "What the registry decides for every wire event, as the flow a reviewer follows: each step names",
        "the rule that decides there, the policy that tunes it (a choice for a case the wire leaves",
        "ambiguous) and the diagnostics it may report, marked by severity: "
        + ", ".join(f"{SEVERITY_MARK[sev]} {sev}" for sev in SEVERITY_MARK)
        + " (see the table below; `--strict` refuses violations).",
        "",
        "```mermaid",
        identity_mermaid(spec).rstrip(),
        "```",
        "",
        "Graphviz rendering: [identity.svg](diagrams/identity.svg) (hover a step for its rules' reasons).",
        "",
        "## Rules",
        "",
        "| order | rule | reason |",
        "|---|---|---|",
        *[f"| {r.order} | `{r.name}` | {md(r.reason)} |" for r in rules],
        "",
        "## Policies",
        "",
        "| policy | tunes rule | default | choices | reason |",
        "|---|---|---|---|---|",
        *[
            f"| `{p.name}` | `{p.rule}` | `{p.default}` | {', '.join(f'`{c}`' for c in p.choices)} | {md(p.reason)} |"
            for p in spec.policies
        ],
        "",
        "## Diagnostics",
        "",
        *diagnostics_table(spec, with_rule=True),
        "",
    ]
    return "\n".join(out).rstrip() + "\n"


SEVERITY_MEANING = {
    "info": "how some providers always stream; nothing to act on",
    "warning": "the result is usable, but not what the provider meant to send whole",
    "violation": "the stream broke its protocol; `strict=True` / `--strict` refuses it",
}


def diagnostics_table(spec: IdentitySpec, *, with_rule: bool) -> list[str]:
    """Every diagnostic code with its severity, mildest first, as Markdown table lines."""
    order = {sev: n for n, sev in enumerate(SEVERITIES)}
    ranked = sorted(spec.diagnostics, key=lambda d: order[d.severity])
    rule_head, rule_rule = (" rule |", "---|") if with_rule else ("", "")
    lines = [f"| code | severity |{rule_head} what happened |", f"|---|---|{rule_rule}---|"]
    for d in ranked:
        rule = f" `{d.rule}` |" if with_rule else ""
        lines.append(f"| `{d.code}` | {d.severity} |{rule} {md(d.reason)} |")
    lines += ["", *[f"- **{sev}**: {SEVERITY_MEANING[sev]}." for sev in SEVERITIES]]
    return lines
