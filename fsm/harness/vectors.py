"""The conformance vector format: one JSON file per case in ``specs/vectors/``.

A vector holds a wire shape (a provider name), the provider's events in order (``events``, each a JSON
object as the provider sent it) or the raw response body (``body``, for framing cases), the policy
choices, for a stream of several choices the one to read (``choice``, an index; else the first), for
a stream the caller's side stopped after its events the error's message (``interrupted``), and the
expected result. It is language-neutral: any implementation can read it.

    {"name": "...", "description": "...", "shape": "gemini", "policies": {"identical_text": "resend"},
     "events": [...],
     "expect": {"finish_reason": "tool_calls",
                "calls": [{"name": "search", "arguments": {"q": "A"}, "status": "complete", "id": "c1"}],
                "diagnostics": ["resend"]}}

In an expected call, ``id``, ``type``, ``input``, ``arguments_json``, ``thought_signature``,
``wire_id``, ``reply_id``, ``output_index`` and ``item`` (what a call keeps of its Responses item)
are compared only when given; ``arguments`` is compared as a JSON value. ``diagnostics`` is the
exact set of codes expected. ``raw_finish_reason`` (the provider's own finish word) and
``finish_message`` (what it said beside it) are compared only when given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
from cattrs import Converter
from cattrs.errors import ClassValidationError

from fsm.errors import InvalidOption, SpecError, shown
from fsm.jsontext import dumps, parse_strict
from fsm.serialize import exact_scalars
from fsm.spec import SPEC_DIR, describe_validation, identity_spec
from fsm.wire.choices import checked_choice
from fsm.wire.decoders import PROVIDERS

VECTOR_DIR = SPEC_DIR / "vectors"
STATUSES = ("complete", "invalid", "truncated")


def _status(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if value not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, not {value!r}")


@attrs.frozen
class ExpectedCall:
    name: str | None
    arguments: Any = None
    status: str = attrs.field(default="complete", validator=_status)
    id: str | None = None
    arguments_json: str | None = None
    thought_signature: str | None = None
    type: str | None = None
    input: str | None = None
    wire_id: str | None = None
    reply_id: str | None = None
    output_index: int | None = None
    item: dict[str, Any] | None = None


@attrs.frozen
class Expectation:
    finish_reason: str | None
    calls: list[ExpectedCall]
    diagnostics: list[str] = attrs.field(factory=list)
    server_tool_calls: list[ExpectedCall] = attrs.field(factory=list)
    raw_finish_reason: str | None = None
    finish_message: str | None = None


@attrs.frozen
class Vector:
    name: str
    description: str
    shape: str
    expect: Expectation
    events: list[dict[str, Any]] = attrs.field(factory=list)
    body: str | None = None
    policies: dict[str, str] = attrs.field(factory=dict)
    choice: int | None = None
    """The choice to reassemble of a stream of several (``Reassembler(choice=k)``); None: the first."""
    interrupted: str | None = None
    """The message of the network error the caller's stream raised after the events (the reading ends
    with ``close(interrupted=ConnectionError(message))``); None: the stream ended."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = _converter.unstructure(self)
        for field in ("choice", "interrupted"):  # left out where unused, as in most vectors' files
            if data[field] is None:
                del data[field]
        return data


_converter = Converter(forbid_extra_keys=True)
exact_scalars(_converter)  # a vector's "name": 5 or "interrupted": ["x"] is refused, not written as text


def validate(vector: Vector, where: str) -> None:
    if vector.shape not in PROVIDERS:
        raise SpecError(f"{where}: unknown shape {vector.shape!r} (known: {', '.join(PROVIDERS)})")
    if bool(vector.events) == (vector.body is not None):
        raise SpecError(f"{where}: give either events or body")
    if vector.body is not None and not vector.body.isascii():
        try:  # a body stands for bytes, which a lone surrogate (an escape such as \ud800) cannot be
            vector.body.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise SpecError(f"{where}: the body is not UTF-8 text: {exc.reason} at character {exc.start}") from None
    if vector.choice is not None:
        try:
            checked_choice(vector.choice, vector.shape)  # Reassembler's own check
        except InvalidOption:
            raise SpecError(_choice_refused(where, vector.choice)) from None
    policies = {p.name: p for p in identity_spec().policies}
    for name, choice in vector.policies.items():
        if name not in policies or choice not in policies[name].choices:
            raise SpecError(f"{where}: policy {name}={choice!r} is not declared in specs/identity.toml")
    codes = set(identity_spec().diagnostic_by_code)
    unknown = set(vector.expect.diagnostics) - codes
    if unknown:
        raise SpecError(f"{where}: expects undeclared diagnostics {sorted(unknown)}")


def _choice_refused(where: str, choice: object) -> str:
    return f"{where}: choice {shown(choice)} is an index (from 0) of an openai-chat or gemini stream"


def load_vector(path: Path) -> Vector:
    try:
        data, _ = parse_strict(path.read_text(encoding="utf-8"))  # numbers exact, as the engine keeps them
    except OSError as exc:  # a file it may not read, a folder named *.json: the reason, not the errno's repr
        raise SpecError(f"{path.name}: cannot read: {exc.strerror or exc}") from None
    except (ValueError, RecursionError) as exc:  # RecursionError: nesting past the parser's stack
        raise SpecError(f"{path.name}: cannot read: {exc}") from None
    if not isinstance(data, dict):  # cattrs would fail on it with an AttributeError or TypeError
        raise SpecError(f"{path.name}: a vector is a JSON object, not {type(data).__name__}")
    if type(data.get("choice", 0)) is not int and data["choice"] is not None:  # cattrs makes "1", true, 1.9 a 1
        raise SpecError(_choice_refused(path.name, data["choice"]))
    try:
        vector: Vector = _converter.structure(data, Vector)
    except ClassValidationError as exc:
        raise SpecError(f"{path.name}: {describe_validation(exc)}") from None
    validate(vector, path.name)
    return vector


def load_vectors(folder: Path = VECTOR_DIR) -> list[Vector]:
    paths = sorted(folder.glob("*.json"))
    if not paths:
        raise SpecError(f"no vectors in {folder}")
    vectors = [load_vector(p) for p in paths]
    names = [v.name for v in vectors]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise SpecError(f"vector names used twice: {sorted(duplicates)}")
    return vectors


def write_vector(vector: Vector, folder: Path = VECTOR_DIR) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{vector.name}.json"
    path.write_text(dumps(vector.to_json(), indent=2) + "\n", encoding="utf-8")
    return path
