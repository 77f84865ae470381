"""One scenario per identity rule of specs/identity.toml: the rule decides it, and the calls are right."""

from __future__ import annotations

from typing import Any

import pytest

from fsm import Reassembler
from fsm.events import ArgumentsSnapshot, CallRef
from fsm.spec import identity_spec
from tests.helpers import chunk, tc

A = '{"q": "A"}'
B = '{"q": "B"}'

SCENARIOS: dict[str, tuple[list[Any], list[tuple[str, Any]]]] = {
    "index-is-label": ([chunk(tc(index=7, id="a", name="f", args=A))], [("a", {"q": "A"})]),
    "id-binds": (
        [chunk(tc(index=0, id="a", name="f", args='{"q": ')), chunk(tc(index=0, id="a", args='"A"}'))],
        [("a", {"q": "A"})],
    ),
    "id-without-index": (
        [
            chunk(tc(id="a", name="f", args='{"q": ')),
            chunk(tc(id="b", name="g", args=B)),
            chunk(tc(id="a", args='"A"}')),
        ],
        [("a", {"q": "A"}), ("b", {"q": "B"})],
    ),
    "index-reuse": (
        [chunk(tc(index=0, id="a", name="f", args=A)), chunk(tc(index=0, id="b", name="f", args=B))],
        [("a", {"q": "A"}), ("b", {"q": "B"})],
    ),
    "metadata-once": (
        [chunk(tc(index=0, id="a", name="f", args="")), chunk(tc(index=0, id="a", name="f", args=A))],
        [("a", {"q": "A"})],
    ),
    "complete-value-starts-new-call": (
        [
            chunk(tc(index=0, name="f", args=A)),
            chunk(tc(index=0, name="f", args=B)),
            chunk(tc(index=0, name="f", args=B)),
        ],
        [("call_0", {"q": "A"}), ("call_1", {"q": "B"})],
    ),
    "snapshot-resend": (
        [ArgumentsSnapshot(CallRef(0, "a", "f"), A), ArgumentsSnapshot(CallRef(0, "a", "f"), A)],
        [("a", {"q": "A"})],
    ),
    "positional-fallback": (
        [chunk(tc(name="f", args=A), tc(name="g", args=B))],
        [("call_0", {"q": "A"}), ("call_1", {"q": "B"})],
    ),
    "duplicate-id-renamed": (
        [chunk(tc(index=0, id="x", name="f", args=A)), chunk(tc(index=1, id="x", name="f", args=B))],
        [("x", {"q": "A"}), ("x_d2", {"q": "B"})],
    ),
    "synthesized-id": ([chunk(tc(index=0, name="f", args=A))], [("call_0", {"q": "A"})]),
    "parse-once-at-finish": ([chunk(tc(index=0, id="a", name="f", args=A), finish="tool_calls")], [("a", {"q": "A"})]),
    "finish-ends-calls": ([chunk(tc(index=0, id="a", name="f", args='{"q": '), finish="length")], [("a", None)]),
    "unknown-events-reported": (
        [{"type": "message_start", "message": {"content": []}}, {"type": "content_block_wobble", "index": 0}],
        [],
    ),
    "cumulative-when-append-impossible": (
        [
            chunk(tc(index=0, id="a", name="f", args='{"q": "A')),
            chunk(tc(index=0, args='{"q": "AB')),
            chunk(tc(index=0, args='{"q": "AB"}')),
        ],
        [("a", {"q": "AB"})],
    ),
    "text-is-unicode": (
        [chunk(tc(index=0, id="a", name="f", args='{"q": "\ud83d')), chunk(tc(index=0, args='\ude00"}'))],
        [("a", {"q": "\U0001f600"})],
    ),
    "one-choice": ([{"choices": [{"index": 1, "delta": {"tool_calls": [tc(index=0, name="f", args=A)]}}]}], []),
}


def test_every_rule_has_a_scenario() -> None:
    assert set(SCENARIOS) == identity_spec().rule_names


@pytest.mark.parametrize("rule", sorted(SCENARIOS))
def test_rule_decides_its_scenario(rule: str) -> None:
    events, expected = SCENARIOS[rule]
    r = Reassembler()
    for event in events:
        r.feed(event)
    result = r.close()
    assert r.ledger.rules[rule] > 0
    assert [(c.id, c.arguments) for c in result.calls] == expected
