"""Gemini wants the user content answering a turn to hold its function responses alone
(``results-beside-text``): as :class:`fsm.history.rewrite.Writer` writes a user content, its responses
and its other parts go apart, each joining the user content before it that holds its kind alone, and a
model content of ``RepairPolicy.between`` goes between responses and the user's other parts after them
(user contents in a row are refused: ``user-after-user``, ``placeholder-model-turn``). The turn's
responses come first wherever they came in it (``responses-before-the-users-parts``): those a later
content of the turn holds go before the user's other parts written already, as one content's do; but
not responses going on with a chain begun before the user's parts (``will-continue-responses``): a
NON_BLOCKING function answers on while the user speaks, and the history keeps them where they came."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from fsm.history.changes import Change, RepairPolicy
from fsm.history.formats import gemini_payload, gemini_role

WHY = "a turn's function responses and the user's other parts go in user contents of their own"
WHY += ": Gemini wants the responses alone in theirs, and user and model to alternate"


class _Writer(Protocol):
    """What of :class:`fsm.history.rewrite.Writer` this module reads and writes (no import: a cycle)."""

    tail: Any
    policy: RepairPolicy
    made_between: dict[int, dict[str, Any]]
    going_on: set[int]
    origins: list[list[tuple[int, int]]]
    changes: list[Change]

    def _append(self, out: list[dict[str, Any]], message: dict[str, Any], at: int, gap: bool) -> None: ...


def put_apart(plan: _Writer, out: list[dict[str, Any]], message: dict[str, Any], at: int, gap: bool) -> None:
    """Write Gemini user content ``message`` (input message ``at``) at the end of ``out``, its responses
    and other parts apart; responses of a turn whose user's other parts are written go before them."""
    parts = message["parts"]
    answers = [part for part in parts if gemini_payload(part, "result") is not None]
    others = [part for part in parts if gemini_payload(part, "result") is None]
    pieces: list[Any] = (
        [{**message, "parts": answers}, {**message, "parts": others}] if answers and others else [message]
    )
    if any(id(part) not in plan.going_on for part in answers):  # written again after them (held: with its origins)
        pieces[1:1] = _held(plan, out)
    for piece in pieces:
        content = piece[0] if isinstance(piece, tuple) else piece
        placing = gemini_role(content) == "user" and plan.tail == "user"
        if out and placing and {_answering(out[-1]), _answering(content)} == {True, False}:
            out.append({"role": "model", "parts": [{"text": plan.policy.between}]})
            plan.made_between[id(out[-1])] = out[-1]  # held: no other content takes its id
            plan.tail = "model"
            plan.origins.append([(0, at)])
            plan.changes.append(Change("placeholder-model-turn", at + 1, None, WHY))
        if isinstance(piece, tuple):
            out.append(content)
            plan.origins.append(piece[1])
            plan.tail = gemini_role(content)
        else:
            plan._append(out, piece, at, gap)


def _held(plan: _Writer, out: list[dict[str, Any]]) -> list[tuple[dict[str, Any], list[tuple[int, int]]]]:
    """The contents taken off the end of ``out`` for a turn's responses to go before them, each with
    where its parts came from: the user's other parts right after the model's calls (a placeholder
    model content goes between), or those and the placeholder model content before them after the
    turn's responses (which the new ones join). None when the last content written is no such part."""
    if plan.tail != "user" or not out or _answering(out[-1]) is not False or len(out) < 2:
        return []
    if id(out[-2]) in plan.made_between and len(out) > 2 and _answering(out[-3]):
        back = 2
    elif any(gemini_payload(p, "call") for p in out[-2].get("parts") or ()):  # the model's (or kept in a role it lacks)
        back = 1
    else:
        return []
    held = [(out.pop(), plan.origins.pop()) for _ in range(back)][::-1]
    plan.tail = gemini_role(out[-1])
    return held


def _answering(content: Mapping[str, Any]) -> bool | None:
    """Does a Gemini user content as repair writes it hold function responses (then nothing else), or
    the user's other parts (False)? Its first part says; None when it has none (it joins either kind)."""
    parts = content.get("parts")
    if not isinstance(parts, list) or not parts:
        return None
    return gemini_payload(parts[0], "result") is not None
