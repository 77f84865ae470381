"""Re-emitted deltas concatenate per index, the naive way, to exactly the reassembled calls."""

from __future__ import annotations

import json

import pytest

from fsm import Reassembler
from fsm.events import ArgumentsSnapshot, CallRef
from fsm.reemit import DeltaEmitter, FlushPolicy
from tests.helpers import chunk, reemitted, tc

SCENARIOS = {
    "collision": [chunk(tc(index=0, name="s", args='{"q": "A"}')), chunk(tc(index=0, name="s", args='{"q": "B"}'))],
    "a-b-b": [chunk(tc(index=0, name="s", args='{"q": "A"}'))] + [chunk(tc(index=0, name="s", args='{"q": "B"}'))] * 2,
    "fragments": [chunk(tc(index=0, id="a", name="f", args='{"x": ')), chunk(tc(index=0, args="[1, 2]}"))],
    "cumulative": [chunk(tc(index=0, id="c", name="f", args='{"a"')), chunk(tc(index=0, args='{"a": 1}'))],
    "duplicate-ids": [chunk(tc(index=0, id="X", name="f", args="{}")), chunk(tc(index=1, id="X", name="g", args="{}"))],
    "empty-args": [chunk(tc(index=0, id="e", name="now", args="")), chunk(finish="tool_calls")],
}


@pytest.mark.parametrize("flush", list(FlushPolicy))
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_concatenated_deltas_equal_the_calls(name: str, flush: FlushPolicy) -> None:
    r = Reassembler("openai-chat")
    for c in SCENARIOS[name]:
        r.feed(c)
    result = r.close()
    merged = reemitted(SCENARIOS[name], flush)
    assert sorted(merged) == [c.index for c in result.calls]
    for call in result.calls:
        got = merged[call.index]
        assert (got["id"], got["name"]) == (call.id, call.name)
        assert json.loads(got["arguments"]) == call.arguments


def test_replaced_snapshot_goes_out_only_once_final() -> None:
    r = Reassembler()
    emitter = DeltaEmitter(FlushPolicy.INCREMENTAL)
    ref = CallRef(index=0, id="g", name="f")
    out = emitter.chunks(r.feed(ArgumentsSnapshot(ref, '{"a": 1}')))
    out += emitter.chunks(r.feed(ArgumentsSnapshot(ref, '{"a": 2}')))
    result = r.close()
    out += emitter.chunks(r.drain())
    texts = [e["function"].get("arguments") for c in out for e in c["choices"][0]["delta"]["tool_calls"]]
    assert "".join(t for t in texts if t) == '{"a": 2}'
    assert result.calls[0].arguments == {"a": 2}
