"""Policies (choices for cases the wire leaves ambiguous) and limits (bounds on memory and work).

Policy names, choices and defaults come from specs/identity.toml; an unknown choice is refused. The
``Literal`` types below spell the same choices for type checkers: tests/test_packaging.py fails if
they and the spec ever disagree.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from fsm.spec import identity_spec

IdenticalText = Literal["resend", "new-call"]
"""Choices of policy ``identical_text``."""
CumulativeArguments = Literal["detect", "off"]
"""Choices of policy ``cumulative_arguments``."""
IdRotation = Literal["continue", "new-call"]
"""Choices of policy ``id_rotation``."""
EmptyArguments = Literal["empty-object", "invalid"]
"""Choices of policy ``empty_arguments``."""


def _policy(name: str) -> Any:
    return next(p for p in identity_spec().policies if p.name == name)


def _choice(name: str) -> Any:
    # The default and the choices are read from the spec when a Policies is first made, not at
    # import: importing the package loads no spec.
    def check(_: object, attribute: attrs.Attribute[str], value: str) -> None:
        choices = _policy(name).choices
        if value not in choices:
            raise ValueError(f"policy {name} must be one of {list(choices)}, not {value!r}")

    return attrs.field(factory=lambda: _policy(name).default, validator=check, kw_only=True)


@attrs.frozen(slots=True)
class Policies:
    """The named choices for wire cases that have two honest readings (specs/identity.toml, "policies").

    Every field is keyword-only and defaults to the spec's default; a choice the spec does not list
    raises ``ValueError``. Pass an instance as ``Reassembler(policies=...)``.
    """

    identical_text: IdenticalText = _choice("identical_text")  # noqa: RUF009  (an attrs field, read once)
    """The same name and argument text again with no id to tell them apart: ``"resend"`` (default,
    one call) or ``"new-call"`` (a second call)."""
    cumulative_arguments: CumulativeArguments = _choice("cumulative_arguments")  # noqa: RUF009  (an attrs field, read once)
    """A fragment that begins with all the text the call holds: ``"detect"`` (default: append only the
    new tail, diagnostic ``cumulative-arguments``) or ``"off"`` (append it all)."""
    id_rotation: IdRotation = _choice("id_rotation")  # noqa: RUF009  (an attrs field, read once)
    """A fresh id with no name on text for an unfinished call at the same index: ``"continue"``
    (default: the same call, diagnostic ``id-changed``) or ``"new-call"``."""
    empty_arguments: EmptyArguments = _choice("empty_arguments")  # noqa: RUF009  (an attrs field, read once)
    """A call that finished normally without argument text: ``"empty-object"`` (default: arguments
    ``{}``) or ``"invalid"`` (status invalid)."""


def _positive(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 1:
        raise ValueError(f"limit {attribute.name} must be at least 1, not {value}")


@attrs.frozen(slots=True, kw_only=True)
class Limits:
    """Bounds on what one stream may make the engine hold. Exceeding one raises
    :class:`fsm.LimitExceeded` naming the wire event; every limit must be at least 1."""

    max_calls: int = attrs.field(default=512, validator=_positive)
    """Calls (slots) in one stream."""
    max_argument_chars: int = attrs.field(default=8 * 1024 * 1024, validator=_positive)
    """Characters of argument text held for one call."""
    max_depth: int = attrs.field(default=256, validator=_positive)
    """Nesting depth of one call's arguments."""
    max_event_bytes: int = attrs.field(default=16 * 1024 * 1024, validator=_positive)
    """Bytes of one framed wire event (an SSE event, an NDJSON line, a JSON-array element)."""
