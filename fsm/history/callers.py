"""What an Anthropic client call's ``caller`` says (programmatic tool calling), policies
caller-by-its-type and malformed-caller-kept.

A ``tool_use`` Claude's code execution made names the ``server_tool_use`` that ran the code:
``"caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_..."}`` (``code_execution_20260120``
alike, the version with state kept between runs; Anthropic's SDKs type the caller as a union of a
direct caller, ``{"type": "direct"}``, and those server tool callers, each with a ``tool_id`` string).
A call Claude made itself has ``{"type": "direct"}`` or no ``caller`` (``null`` read as none). The set
of code types is the one the API lists for a tool's ``allowed_callers`` (``code_execution_20260521`` too),
and any other dated version, ``code_execution_`` and eight digits: the API names each new version so, and
one read as malformed would be refused and cut from its code (the code's wait, its result's order) by a
history the API takes.

caller-by-its-type: the ``type`` says who made the call, so only a code type's ``tool_id`` names code
(:func:`caller_code`, read by every rule that ties a call to its code); a ``direct`` caller's never does.

malformed-caller-kept: a caller the API does not type (not an object, a ``type`` that is not a string or
not one of those, a code type without a ``tool_id`` string, a ``direct`` one carrying a ``tool_id``
other than ``null``, which contradicts itself) is ``malformed-caller`` to ``check``, at the call's
message and block. It names no code, so the call is read as Claude's own; ``repair`` keeps it as it came and says so
(``kept-malformed-caller``): which half of a contradiction is wrong, or which code an unknown type meant,
only the caller knows, and writing it direct would say Claude called a tool its code may have called
(``allowed_callers`` may not let it); dropping it would lose the call and its result."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fsm.history.objects import is_object

CODE_TYPES = frozenset({"code_execution_20250825", "code_execution_20260120", "code_execution_20260521"})
"""The caller types of code execution the API lists, whose ``tool_id`` names the server call that ran the code."""
VERSIONED = "code_execution_"
"""What a dated version's type starts with, eight digits (its date) after it."""


def code_type(kind: str) -> bool:
    """Is a caller's ``type`` code execution's: one the API lists, or another dated version?"""
    date = kind[len(VERSIONED) :] if kind.startswith(VERSIONED) else ""
    return kind in CODE_TYPES or (len(date) == 8 and date.isascii() and date.isdigit())


def caller_code(block: Any) -> str | None:
    """The server call a client call names as its ``caller`` (None for Claude's own, or a malformed caller)."""
    caller = block.get("caller") if is_object(block) else None
    if caller is None or not is_object(caller) or type(caller.get("type")) is not str or not code_type(caller["type"]):
        return None  # (a type of no str may be unhashable)
    code = caller.get("tool_id")
    return code if type(code) is str else None


def malformed(block: Mapping[str, Any]) -> str | None:
    """Why a client call's ``caller`` is none the API types (None: it is one, or there is none)."""
    caller = block.get("caller")
    if caller is None:
        return None
    if not isinstance(caller, Mapping):
        return f"its caller is not an object (type {type(caller).__name__})"
    kind = caller.get("type")
    if type(kind) is not str:
        return f"its caller's type is not a string (type {type(kind).__name__})"
    if kind == "direct":
        # a tool_id of null names nothing (as a caller of null is none): a dump of every field of a caller writes it so
        return (
            None if caller.get("tool_id") is None else "its caller is direct yet names a tool_id: it contradicts itself"
        )
    if not code_type(kind):
        return f"its caller's type {kind!r} is neither direct nor code execution's"
    if type(caller.get("tool_id")) is not str:
        return f"its caller, code execution, names no tool_id string (type {type(caller.get('tool_id')).__name__})"
    return None
