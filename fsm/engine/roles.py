"""Marks a model's methods as the guards and actions a machine spec names, so code and spec can
be held equal (tests/test_spec_agreement.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def guard(fn: F) -> F:
    fn._fsm_role = "guard"  # type: ignore[attr-defined]
    return fn


def action(fn: F) -> F:
    fn._fsm_role = "action"  # type: ignore[attr-defined]
    return fn


def spec_members(model: type, role: str) -> set[str]:
    """Names of ``model``'s methods marked with ``role`` ("guard" or "action")."""
    return {name for name, fn in vars(model).items() if getattr(fn, "_fsm_role", None) == role}
