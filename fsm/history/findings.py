"""What a history check reports: the kinds of finding, one finding, the report."""

from __future__ import annotations

import enum
from typing import Literal

import attrs

Format = Literal["openai", "anthropic", "gemini", "responses"]


class Kind(enum.Enum):
    DANGLING = "dangling"
    """A call no result answered before its turn closed."""
    ORPHAN = "orphan"
    """A result that answers no outstanding call."""
    DUPLICATE_RESULT = "duplicate-result"
    """A second result for a call already answered."""
    DUPLICATE_CALL = "duplicate-call"
    """Two calls under one id while the first is unanswered (within a turn, usually)."""
    REUSED_UNANSWERED = "reused-unanswered"
    """An id used again although its earlier call was never answered."""
    REUSED = "reused"
    """An id used again by a later turn after its call was answered: allowed, reported for information."""


REJECTED = frozenset(Kind) - {Kind.REUSED}
"""Findings a strict provider refuses the request for."""


@attrs.frozen
class Finding:
    kind: Kind
    id: str
    """The id, or ``name#k`` for a Gemini call without one (the k-th of that name in its turn, 1-based)."""
    message: int
    """1-based position of the message where it was found (the call's message, for a dangling call)."""
    detail: str
    name: str | None = None


@attrs.frozen
class Report:
    format: str
    findings: tuple[Finding, ...]

    @property
    def rejected(self) -> bool:
        """Would a strict provider refuse this history?"""
        return any(f.kind in REJECTED for f in self.findings)

    def of(self, kind: Kind) -> list[Finding]:
        return [f for f in self.findings if f.kind is kind]
