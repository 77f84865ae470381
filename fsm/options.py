"""Policies (choices for cases the wire leaves ambiguous) and limits (bounds on memory and work).

Policy names, choices and defaults come from specs/identity.toml; an unknown choice is refused.
"""

from __future__ import annotations

from typing import Any

import attrs

from fsm.spec import identity_spec


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
    identical_text: str = _choice("identical_text")
    cumulative_arguments: str = _choice("cumulative_arguments")
    id_rotation: str = _choice("id_rotation")
    empty_arguments: str = _choice("empty_arguments")


def _positive(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 1:
        raise ValueError(f"limit {attribute.name} must be at least 1, not {value}")


@attrs.frozen(slots=True, kw_only=True)
class Limits:
    max_calls: int = attrs.field(default=512, validator=_positive)
    """Calls (slots) in one stream."""
    max_argument_chars: int = attrs.field(default=8 * 1024 * 1024, validator=_positive)
    """Characters of argument text held for one call."""
    max_depth: int = attrs.field(default=256, validator=_positive)
    """Nesting depth of one call's arguments."""
    max_event_bytes: int = attrs.field(default=16 * 1024 * 1024, validator=_positive)
    """Bytes of one framed wire event (an SSE event, an NDJSON line, a JSON-array element)."""
