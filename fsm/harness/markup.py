"""Escaping text for the three places the diagrams put it: Markdown tables, Graphviz DOT labels,
and Mermaid labels; and the node ids both graph languages accept."""

from __future__ import annotations

import re

REGENERATE = "python tools/diagram.py"
"""The command that regenerates everything under docs/ (named in every generated page)."""


def md(text: str) -> str:
    """Text for a Markdown table cell."""
    return text.replace("|", "\\|")


def dot(text: str) -> str:
    """Text for a double-quoted DOT string."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def mermaid_text(text: str) -> str:
    """Text for a Mermaid label: only characters its grammar treats as plain text."""
    return text.replace('"', "'").replace(";", ",").replace("#", "")


def node_id(prefix: str, name: str) -> str:
    """A node id for ``name`` that DOT and Mermaid both take unquoted."""
    return prefix + re.sub(r"[^A-Za-z0-9]", "_", name)
