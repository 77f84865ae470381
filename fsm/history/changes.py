"""What :func:`fsm.history.repair` is told (:class:`RepairPolicy`) and what it reports (:class:`Change`)."""

from __future__ import annotations

from typing import Literal

import attrs


@attrs.frozen
class RepairPolicy:
    """How :func:`repair` answers a call that got no result."""

    dangling: Literal["placeholder", "drop-call"] = "placeholder"
    """Answer a dangling call with a placeholder result, or drop the call from its turn."""
    placeholder: str = "The tool call was not completed; no result is available."
    """The text of a placeholder result."""


@attrs.frozen
class Change:
    """One edit :func:`repair` made."""

    kind: str
    """``renamed-call``, ``renamed-result``, ``mapped-call``, ``mapped-result``, ``dropped-orphan``,
    ``dropped-duplicate-result``, ``placeholder-result``, ``dropped-call``, ``dropped-reasoning``,
    ``moved-result``, ``moved-misplaced-result``, ``moved-misplaced-call``, ``dropped-empty-message``,
    ``merged-messages``, ``function-role-to-user`` or ``kept-unknown-role``."""
    message: int
    """1-based position in the input of the message changed (for a placeholder, the call's message)."""
    id: str | None
    """The call id concerned (``name#k`` for an id-less Gemini call or an Ollama call; for a placeholder, the id it
    answers, which a rename may just have given the call); None for a whole-message change."""
    detail: str
    """What was done and why, in words."""
