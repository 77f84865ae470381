"""Ground truth for the fuzzers: random calls (names, nested arguments with unicode, escapes, empty
objects, large values) and the cases that carry them, with helpers the shape renderers share."""

from __future__ import annotations

import itertools
import json
from typing import Any

import attrs
from hypothesis import strategies as st

from fsm.jsontext import dumps


@attrs.frozen
class TrueCall:
    name: str
    arguments: dict[str, Any] | None
    """None for a freeform call, whose truth is its ``input``."""
    id: str | None = None
    signature: str | None = None
    type: str = "function"
    input: str | None = None


@attrs.frozen
class Case:
    shape: str
    truth: tuple[TrueCall, ...]
    events: tuple[dict[str, Any], ...] = ()
    body: bytes | None = None
    cuts: tuple[int, ...] = ()

    @property
    def provider(self) -> str:
        return "gemini" if self.shape == "vertex" else self.shape


# -- ground truth --------------------------------------------------------------------------------------

_TRICKY = st.sampled_from(['"', "\\", '\\"', "}{", "][", "\n\t", "ñ🙂", "", "\u2028", '{"a": 1}'])
_TEXT = st.text(st.characters(codec="utf-8"), max_size=10) | _TRICKY
_LARGE = st.integers(200, 4000).map(lambda n: "long " * (n // 5))
_LEAF = (
    st.none()
    | st.booleans()
    | st.integers(-(10**15), 10**15)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT
    | _LARGE
)
_KEY = st.text(max_size=6) | _TRICKY
FREEFORM = st.lists(_TEXT | st.sampled_from(["  ", "\n", "{}", "*** Begin Patch\n", "SELECT *"]), max_size=6).map(
    "".join
)
"""Freeform input (a custom tool's): any text, often JSON-like or blank where JSON would close."""
_IDENT = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True)


def _values(key: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    return st.recursive(
        _LEAF, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(key, kids, max_size=3), max_leaves=8
    )


def arguments(key: st.SearchStrategy[str] = _KEY) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(key, _values(key), max_size=4)


NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)


def _distinct(calls: list[tuple[str, dict[str, Any]]]) -> bool:
    # Without ids, two calls with the same name and text are one call resent (policy identical_text).
    texts = [(n, json.dumps(a, sort_keys=True)) for n, a in calls]
    return len(set(texts)) == len(texts)


def _truth(draw: st.DrawFn, *, key: st.SearchStrategy[str] = _KEY) -> list[tuple[str, dict[str, Any]]]:
    calls = draw(st.lists(st.tuples(NAMES, arguments(key)), min_size=1, max_size=5).filter(_distinct))
    return calls


def _split(draw: st.DrawFn, text: str) -> list[str]:
    """Cut ``text`` anywhere (inside escapes, between surrogate-free code points)."""
    if len(text) < 2 or draw(st.integers(0, 3)) == 0:
        return [text]
    cuts = sorted(draw(st.sets(st.integers(1, len(text) - 1), max_size=12)))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def _split_utf16(draw: st.DrawFn, text: str) -> list[str]:
    """Cut ``text`` as a UTF-16 server does: by code unit, so a cut may fall between the halves of a
    surrogate pair and the pieces hold lone halves (sent JSON-escaped, joined by the engine). Cuts
    inside pairs are drawn on purpose, so the case is common rather than lucky."""
    units = text.encode("utf-16-le", "surrogatepass")
    count = len(units) // 2
    if count < 2:
        return [text]
    inside_pairs = [i for i in range(1, count) if 0xD8 <= units[2 * i - 1] <= 0xDB]
    cuts = set(draw(st.sets(st.integers(1, count - 1), max_size=6)))
    if inside_pairs:
        cuts |= draw(st.sets(st.sampled_from(inside_pairs), min_size=1, max_size=4))
    edges = [0, *sorted(cuts), count]
    return [units[2 * a : 2 * b].decode("utf-16-le", "surrogatepass") for a, b in itertools.pairwise(edges)]


def _dumps(draw: st.DrawFn, value: Any) -> str:
    compact = draw(st.booleans())
    return json.dumps(value, ensure_ascii=draw(st.booleans()), separators=(",", ":") if compact else None)


def _interleave(draw: st.DrawFn, queues: list[list[Any]], allowed: bool) -> list[Any]:
    if not allowed:
        return [op for q in queues for op in q]
    owners = [k for k, q in enumerate(queues) for _ in q]
    order = draw(st.permutations(owners))
    positions = [0] * len(queues)
    out = []
    for k in order:
        out.append(queues[k][positions[k]])
        positions[k] += 1
    return out


def first_appearance(entries: list[Any], queues: list[list[Any]]) -> list[int]:
    owner = {id(op): k for k, q in enumerate(queues) for op in q}
    seen: list[int] = []
    for e in entries:
        if owner[id(e)] not in seen:
            seen.append(owner[id(e)])
    return seen


def maybe_bytes(draw: st.DrawFn, case: Case) -> Case:
    """Sometimes deliver the events as raw SSE bytes, cut into chunks anywhere."""
    if not draw(st.booleans()):
        return case
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    # The writer escapes a lone surrogate half, as the UTF-16 server that cut it does.
    body = "".join(f"data: {dumps(e)}{newline}{newline}" for e in case.events).encode()
    cuts = tuple(sorted(draw(st.sets(st.integers(1, max(1, len(body) - 1)), max_size=20))))
    return attrs.evolve(case, events=(), body=body, cuts=cuts)
