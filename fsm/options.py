"""Policies (choices for cases the wire leaves ambiguous) and limits (bounds on memory and work).

Policy names, choices and defaults come from specs/identity.toml; an unknown choice is refused.
"""

from __future__ import annotations

from typing import Any

import attrs

from fsm.errors import InvalidOption
from fsm.spec import identity_spec


def _choice(name: str) -> Any:
    policy = next(p for p in identity_spec().policies if p.name == name)

    def check(_: object, attribute: attrs.Attribute[str], value: str) -> None:
        if not isinstance(value, str) or value not in policy.choices:
            raise InvalidOption(f"policy {name} must be one of {list(policy.choices)}, not {value!r}")

    return attrs.field(default=policy.default, validator=check, kw_only=True)


@attrs.frozen(slots=True)
class Policies:
    identical_text: str = _choice("identical_text")
    cumulative_arguments: str = _choice("cumulative_arguments")
    id_rotation: str = _choice("id_rotation")
    empty_arguments: str = _choice("empty_arguments")


MAX_DEPTH_CAP = 512
"""The deepest nesting ``Limits.max_depth`` may allow: JSON is parsed by recursive descent, and
deeper text would exhaust Python's recursion limit (1000 frames, shared with the caller's)."""

ENVELOPE_DEPTH = 32
"""Nesting a wire event may add around a call's arguments (Gemini puts them 7 levels deep)."""


def _positive(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if type(value) is not int:
        raise InvalidOption(f"limit {attribute.name} must be an int, not {type(value).__name__}")
    if value < 1:
        raise InvalidOption(f"limit {attribute.name} must be at least 1, not {value}")


def _depth(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    _positive(_, attribute, value)
    if value > MAX_DEPTH_CAP:
        raise InvalidOption(f"limit max_depth must be at most {MAX_DEPTH_CAP} (Python's recursion limit), not {value}")


@attrs.frozen(slots=True, kw_only=True)
class Limits:
    """Bounds on memory and work for one stream. Exceeding one raises :class:`~fsm.errors.LimitExceeded`
    naming the event (in lax mode too), except ``max_diagnostics_per_code``, which only stops storing."""

    max_calls: int = attrs.field(default=512, validator=_positive)
    """Calls (slots) in one stream."""
    max_argument_chars: int = attrs.field(default=8 * 1024 * 1024, validator=_positive)
    """Characters of argument text held for one call."""
    max_stream_argument_bytes: int = attrs.field(default=64 * 1024 * 1024, validator=_positive)
    """Bytes (UTF-8) of argument text held for all the calls of one stream together."""
    max_depth: int = attrs.field(default=256, validator=_depth)
    """Nesting depth of one call's arguments (at most :data:`MAX_DEPTH_CAP`). A wire event may nest
    :data:`ENVELOPE_DEPTH` levels more; deeper events are refused before any parse."""
    max_event_bytes: int = attrs.field(default=16 * 1024 * 1024, validator=_positive)
    """Bytes of one framed wire event (an SSE event's data, any one line, an NDJSON line, a JSON-array
    element, an AWS event-stream message), counted exactly however the bytes were chunked."""
    max_diagnostics_per_code: int = attrs.field(default=100, validator=_positive)
    """Diagnostics of one code kept in the result; later ones are only counted
    (``Result.suppressed_diagnostics``)."""

    @property
    def max_event_depth(self) -> int:
        """The deepest nesting accepted in one wire event."""
        return self.max_depth + ENVELOPE_DEPTH
