"""What :func:`fsm.history.repair` is told (:class:`RepairPolicy`) and what it reports (:class:`Change`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import attrs

from fsm.errors import InvalidInput, LocalProtocolError


@attrs.frozen
class RepairPolicy:
    """How :func:`repair` answers a call that got no result, and what it says for the model between a
    Gemini turn's responses and the user's text."""

    dangling: Literal["placeholder", "drop-call"] = "placeholder"
    """Answer a dangling call with a placeholder result, or drop the call from its turn."""
    placeholder: str = "The tool call was not completed; no result is available."
    """The text of a placeholder result."""
    between: str = "(no reply: the conversation went on before the model answered)"
    """Gemini: the text of the placeholder ``model`` content repair puts between a turn's function
    responses and the user's other parts, each in a user content of its own
    (``placeholder-model-turn``, see ``Kind.RESULTS_BESIDE_TEXT``)."""


@attrs.frozen
class Change:
    """One edit :func:`repair` made."""

    kind: str
    """``renamed-call``, ``renamed-result``, ``mapped-call``, ``mapped-result``, ``dropped-orphan``,
    ``dropped-duplicate-result``, ``placeholder-result``, ``dropped-call``, ``dropped-reasoning``,
    ``moved-result``, ``moved-misplaced-result``, ``moved-misplaced-call``, ``moved-user-content`` (what
    an Anthropic user message making calls after its run's first call leaves the user, moved after the
    run), ``dropped-empty-message``, ``merged-messages``, ``placeholder-model-turn``, ``function-role-to-user``,
    ``named-model-role`` (a Gemini content without a role left without the calls it was read as the model's
    for), ``kept-unknown-role``, ``kept-results-beside-text`` (the user's content beside the results of calls
    Claude's waiting code made), or for a Responses item id sent twice ``dropped-duplicate-item``,
    ``removed-item-id``, ``kept-duplicate-item`` (:mod:`fsm.history.item_ids`), ``kept-unknown-caller`` for a
    Responses call naming a program the history lacks (:mod:`fsm.history.program_callers`) or a Claude client
    call naming code the history lacks, ``kept-call-after-code-result`` for one naming code that had finished,
    ``renamed-caller`` for one naming code whose server call was renamed (it names the new id),
    ``kept-malformed-caller`` for one whose caller the API does not type (:mod:`fsm.history.callers`),
    or ``dropped-declined``
    (what a Claude model that declined gave before a fallback block: :mod:`fsm.history.declined`)."""
    message: int
    """1-based position in the input of the message changed (for a placeholder, the call's message)."""
    id: str | None
    """The call id concerned (``name#k`` for an id-less Gemini call or an Ollama call; for a placeholder, the id it
    answers, which a rename may just have given the call); None for a whole-message change."""
    detail: str
    """What was done and why, in words."""


@attrs.define
class Latest:
    """The latest change of one ``kind`` under each (message, id), read as the changes grow: a scan back
    over them all per look-up made repair's work grow with the square of the history's length."""

    kind: str
    read: int = 0
    at: dict[tuple[int, str | None], int] = attrs.field(factory=dict)

    def of(self, changes: list[Change], message: int, key: str | None) -> int | None:
        """Where in ``changes`` the latest such change of ``message`` (1-based) and ``key`` is, if any."""
        for n in range(self.read, len(changes)):
            if changes[n].kind == self.kind:
                self.at[(changes[n].message, changes[n].id)] = n
        self.read = len(changes)
        return self.at.get((message, key))


def checked_policy(policy: RepairPolicy | None) -> RepairPolicy:
    """The policy :func:`repair` was given (the default for None), once it is known to be one it can follow."""
    policy = RepairPolicy() if policy is None else policy
    if not isinstance(policy, RepairPolicy):
        raise InvalidInput(f"policy must be a RepairPolicy, not {type(policy).__name__}")
    if policy.dangling not in ("placeholder", "drop-call"):
        raise LocalProtocolError(f"unknown dangling policy {policy.dangling!r} (placeholder or drop-call)")
    for field, text in (("placeholder", policy.placeholder), ("between", policy.between)):
        if not isinstance(text, str):  # it becomes a part's text, which every format takes as a str
            raise InvalidInput(f"the {field} text must be a str, not {type(text).__name__}")
    return policy


def kept_roles(odd: Iterable[tuple[int, Any]], gone: set[int], fmt: str) -> list[Change]:
    """``kept-unknown-role`` for each message of a role its format lacks (``odd``, 0-based with its
    role) that repair keeps: only the caller knows which role was meant (unless its content all went,
    or it became the ``user`` content it stands for: ``gone``)."""
    why = "its role {!r} is not one " + fmt + " messages have: kept as it is, for the caller to name"
    return [Change("kept-unknown-role", at + 1, None, why.format(role)) for at, role in odd if at not in gone]
