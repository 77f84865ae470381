"""Policies (choices for cases the wire leaves ambiguous) and limits (bounds on memory and work).

Policy names, choices and defaults come from specs/identity.toml; an unknown choice is refused. The
``Literal`` types below spell the same choices for type checkers: tests/test_packaging.py fails if
they and the spec ever disagree.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any, Literal

import attrs

from fsm.errors import InvalidInput, InvalidOption
from fsm.spec import identity_spec

IdenticalText = Literal["resend", "new-call"]
"""Choices of policy ``identical_text``."""
CumulativeArguments = Literal["detect", "off"]
"""Choices of policy ``cumulative_arguments``."""
IdRotation = Literal["continue", "new-call"]
"""Choices of policy ``id_rotation``."""
EmptyArguments = Literal["empty-object", "invalid"]
"""Choices of policy ``empty_arguments``."""
StrayInput = Literal["sole-open-call", "own-call"]
"""Choices of policy ``stray_input``."""


def _policy(name: str) -> Any:
    return _policies_by_name()[name]


@functools.cache
def _policies_by_name() -> dict[str, Any]:
    return {p.name: p for p in identity_spec().policies}


def _choice(name: str) -> Any:
    # The default and the choices are read from the spec when a Policies is first made, not at
    # import: importing the package loads no spec.
    def check(_: object, attribute: attrs.Attribute[str], value: str) -> None:
        choices = _policy(name).choices
        if not isinstance(value, str) or value not in choices:
            raise InvalidOption(f"policy {name} must be one of {list(choices)}, not {value!r}")

    return attrs.field(factory=lambda: _policy(name).default, validator=check, kw_only=True)


_Options = Any  # a class of named options (Policies, Limits)


def _named_options(cls: type[_Options]) -> type[_Options]:
    """Refuse, as the caller's mistake (InvalidInput, also a TypeError, as Python's own would be), an
    option the class does not have or an option passed by position, naming the class's options: a
    misspelt limit would otherwise read as Python's bare signature error."""
    made = cls.__init__
    names = tuple(field.name for field in attrs.fields(cls))

    @functools.wraps(made)
    def __init__(self: Any, *args: Any, **options: Any) -> None:
        unknown = [name for name in options if name not in names]
        if args or unknown:
            wrong = f"option {unknown[0]!r}" if unknown else "options by position"
            raise InvalidInput(f"{cls.__name__} takes no {wrong}; its options, by name: {', '.join(names)}")
        made(self, **options)

    cls.__init__ = __init__
    return cls


@_named_options
@attrs.frozen(slots=True)
class Policies:
    """The named choices for wire cases that have two honest readings (specs/identity.toml, "policies").

    Every field is keyword-only and defaults to the spec's default; a choice the spec does not list
    raises :class:`fsm.errors.InvalidOption` (also a ``ValueError``). Pass an instance as ``Reassembler(policies=...)``.
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
    stray_input: StrayInput = _choice("stray_input")  # noqa: RUF009  (an attrs field, read once)
    """A Responses input event with no ``output_index`` and no known ``item_id`` while calls of its
    type are open: ``"sole-open-call"`` (default: input of the only one open, else a call of its own)
    or ``"own-call"`` (always a call of its own); diagnostic ``stray-input`` either way."""


@functools.cache
def default_policies() -> Policies:
    """``Policies()``, made once: every stream that names no policies shares it (it is frozen)."""
    return Policies()


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


@_named_options
@attrs.frozen(slots=True, kw_only=True)
class Limits:
    """Bounds on what one stream may make the engine hold. Exceeding one raises
    :class:`fsm.LimitExceeded` naming the wire event (in lax mode too), except
    ``max_diagnostics_per_code``, which only stops storing; every limit must be an int of at least 1
    (else :class:`fsm.errors.InvalidOption`, also a ``ValueError``)."""

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
    max_content_chars: int = attrs.field(default=16 * 1024 * 1024, validator=_positive)
    """Characters of what the turn says beside its calls, held for one stream together, each piece
    counted as it came: its text, reasoning and refusal, the strings beside them (signatures,
    citations), its server tool results and compaction blocks (see ``TurnContent.take``)."""

    @property
    def max_event_depth(self) -> int:
        """The deepest nesting accepted in one wire event."""
        return self.max_depth + ENVELOPE_DEPTH


@functools.cache
def default_limits() -> Limits:
    """``Limits()``, made once: every stream that names no limits shares it (it is frozen)."""
    return Limits()


def taken_ids(taken: Any) -> tuple[str, ...]:
    """The ids a ``Reassembler`` is told are ``taken``, or InvalidInput (nothing is built): a str
    would be taken letter by letter, and an id of another type could never match one the stream gives."""
    if type(taken) is tuple and not taken:  # the default: nothing to check
        return taken
    if isinstance(taken, str | bytes) or not isinstance(taken, Iterable):
        raise InvalidInput(f"taken must be an iterable of str ids, not {type(taken).__name__}")
    ids = tuple(taken)
    for used in ids:
        if not isinstance(used, str):
            raise InvalidInput(f"taken must hold str ids, not {type(used).__name__} ({used!r})")
    return ids
