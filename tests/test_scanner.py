"""The compiled scanner must behave exactly as its spec (specs/scanner.toml) reads."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from fsm.scanner import Scanner, spec_steps
from fsm.spec import scanner_spec


def reference(text: str) -> tuple[str, int | None]:
    """The spec's own table, stepped one character at a time: no compilation, no skipping."""
    terminal = {s.name for s in scanner_spec().states if s.terminal}
    state = scanner_spec().machine.initial
    for offset, _, state in spec_steps(text):
        if state in terminal:
            return state, offset + 1  # where the value closed
    return state, None


def compiled(parts: list[str]) -> tuple[str, int | None]:
    scanner, consumed = Scanner(), 0
    for part in parts:
        end = scanner.feed(part)
        if end is not None:
            return scanner.state, consumed + end
        consumed += len(part)
    return scanner.state, None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)
json_ish = st.text(alphabet='{}[]"\\ :,ab1\n', max_size=40)


@given(json_ish, st.lists(st.integers(min_value=0, max_value=40), max_size=6))
def test_compiled_scanner_agrees_with_the_spec_table(text: str, cuts: list[int]) -> None:
    points = sorted({min(c, len(text)) for c in cuts})
    parts = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    assert compiled(parts) == reference(text)


@given(json_values.filter(lambda v: isinstance(v, dict | list)), st.integers(min_value=1, max_value=7))
def test_every_json_container_completes_exactly_at_its_end(value: object, step: int) -> None:
    text = json.dumps(value, ensure_ascii=False)
    parts = [text[i : i + step] for i in range(0, len(text), step)]
    assert compiled([*parts, "  "]) == ("done", len(text))


def test_brackets_and_quotes_inside_strings_do_not_count() -> None:
    assert compiled(['{"a": "}]\\"{"', "}"]) == ("done", 14)


def test_top_level_scalars_never_complete() -> None:
    assert compiled(["123", " true"]) == ("scalar", None)
