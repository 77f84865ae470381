"""Hostile audit 24: this morning's fast paths (a fed dict read in line, the other shapes' fragment
in line, routing under a shared id, a call's end in line, a whole call's text kept) and what main
gained after them, run against 30358e1 on random hostile streams of every shape: each must decide
as the code before it did.

Each test failed before its fix. Nothing is timed."""

from __future__ import annotations

from typing import Any

from fsm import Reassembler
from fsm.harness.vectors import load_vectors

_CLICK = {
    "type": "computer_call",
    "id": "it_0",
    "call_id": "call_0",
    "action": {"type": "click", "button": "left", "x": 3, "y": 4},
    "status": "completed",
}


def _stray_between_added_and_done() -> list[dict[str, Any]]:
    """A built-in item whole at its ``added``, a stray delta at its place, then its ``done``."""
    return [
        {"type": "response.output_item.added", "output_index": 0, "item": _CLICK},
        {"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "it_1", "delta": "\n}"},
        {"type": "response.output_item.done", "output_index": 0, "item": _CLICK},
    ]


def test_a_responses_item_done_after_its_added_is_routed_as_any_sighting() -> None:
    # The Gemini code part's sighting goes on the call its part's text just landed in (71c2726);
    # that was kept across events, so a Responses item's done (same ref as its added, whose whole
    # input landed in the first call) went on that call and not on the open one the stray delta
    # opened under the same id, which lost the item: before 71c2726 (and now) the sighting
    # finds the newest open call under the id, as every sighting does.
    r = Reassembler("openai-responses")
    for event in _stray_between_added_and_done():
        r.feed(event)
    result = r.close()
    assert [(c.id, c.arguments_json, c.item) for c in result.calls] == [
        ("call_0", '{"type": "click", "button": "left", "x": 3, "y": 4}', _CLICK),
        ("call_0_d2", "\n}", _CLICK),
    ]
    assert r.ledger.rules["id-binds"] == 5


def test_the_built_in_calls_vector_counts_its_rules_as_before() -> None:
    # Its items' done events came after their added ones: each sighting was put on the call its
    # added's input landed in without the routing that counts id-binds (12 where 14 were counted).
    (vector,) = [v for v in load_vectors() if v.name == "responses-builtin-client-calls"]
    r = Reassembler(vector.shape)
    for event in vector.events:
        r.feed(event)
    r.close()
    assert r.ledger.rules["id-binds"] == 14


def test_a_gemini_code_part_resent_still_goes_on_its_call_fed_as_bytes_in_pieces() -> None:
    # The fix keeps the sighting with the text of its own event: the part's snapshot and sighting
    # come from one event however the bytes are cut.
    import json

    def gem(part: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part] if part else []}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        return {"candidates": [candidate]}

    first, second = ({"executableCode": {"language": "PYTHON", "code": code}} for code in ("print(1)", "print(2)"))
    events = [gem(first), gem(second), gem({**first, "thoughtSignature": "sig"}), gem(finish="STOP")]
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()
    r = Reassembler("gemini")
    for at in range(0, len(body), 7):
        r.feed_bytes(body[at : at + 7])
    result = r.close()
    assert [(c.input, c.item) for c in result.server_tool_calls] == [
        ("print(1)", first["executableCode"]),
        ("print(2)", second["executableCode"]),
    ]
