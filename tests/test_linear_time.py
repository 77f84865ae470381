"""Time stays linear in the input on paths the ledger's work count does not see: each is measured
by what it writes or visits, counted through a monkeypatch, at 1x and 8x the input."""

from __future__ import annotations

from typing import Any

import pytest

import fsm
from tests.helpers import chunk, count_finished_reads, tc


def _gemini(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": list(parts)}, "index": 0}]}


def revisits(n: int) -> list[dict[str, Any]]:
    """A Vertex call streamed as ``partialArgs`` that goes back and forth ``n`` times between two
    objects (``$.o0.k0``, ``$.o1.k1``, ``$.o0.k2``, ...): each entry closes the other object, and
    comes back to its own, which a sibling closed (merged when the call closes)."""

    def part(call: dict[str, Any]) -> dict[str, Any]:
        return _gemini({"functionCall": call})

    entries = [{"jsonPath": f"$.o{k % 2}.k{k}", "numberValue": k} for k in range(n)]
    return [
        part({"name": "f", "willContinue": True}),
        *(part({"partialArgs": [entry], "willContinue": True}) for entry in entries),
        part({}),
    ]


def members_written_per_revisit(n: int, monkeypatch: pytest.MonkeyPatch) -> float:
    """The members each revisit writes when the call's arguments are merged: all those of a
    container made anew, or only those it adds to the one it revisits."""
    from fsm.wire.decoders import partial_args

    merge, written = partial_args._merge, [0]

    def counted(held: Any, value: Any) -> Any:
        out = merge(held, value)
        if isinstance(out, dict | list):
            written[0] += len(value) if out is held else len(out)
        return out

    monkeypatch.setattr(partial_args, "_merge", counted)
    r = fsm.Reassembler("gemini")
    for event in revisits(n):
        r.feed(event)
    r.close()
    monkeypatch.undo()
    return written[0] / n


def test_a_vertex_call_revisiting_its_objects_again_and_again_is_merged_in_linear_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # each revisit copied the object merged so far, whole: 64,000 revisits took 15.9 s to merge
    # (2,000: 0.04 s), now 1.3 s
    small, large = members_written_per_revisit(500, monkeypatch), members_written_per_revisit(4_000, monkeypatch)
    assert large <= small * 1.25, (small, large)
    r = fsm.Reassembler("gemini")
    for event in revisits(4_000):
        r.feed(event)
    [call] = r.close().calls
    assert call.arguments == {f"o{j}": {f"k{k}": k for k in range(j, 4_000, 2)} for j in (0, 1)}
    assert list(call.arguments["o1"])[:3] == ["k1", "k3", "k5"]


class _Walked(dict[int, Any]):
    """A decoder's items by output index that counts the items read by walking them all."""

    walked = 0

    def values(self) -> Any:
        for item in super().values():
            self.walked += 1
            yield item


def stray_deltas(n: int) -> list[dict[str, Any]]:
    """``n`` Responses function calls, all ended but the last, then ``n`` argument deltas that name
    no output index nor item id: each is the sole open call's (``stray-input``)."""

    def item(k: int, arguments: str) -> dict[str, Any]:
        return {"type": "function_call", "id": f"it_{k}", "call_id": f"call_{k}", "name": "f", "arguments": arguments}

    added = [{"type": "response.output_item.added", "output_index": k, "item": item(k, "")} for k in range(n)]
    done = [{"type": "response.output_item.done", "output_index": k, "item": item(k, "{}")} for k in range(n - 1)]
    stray = [{"type": "response.function_call_arguments.delta", "delta": "{}" if k == 0 else " "} for k in range(n)]
    return added + done + stray


def items_walked_per_stray_delta(n: int) -> tuple[float, fsm.Result]:
    r = fsm.Reassembler("openai-responses", limits=fsm.Limits(max_calls=10_000, max_diagnostics_per_code=5))
    r._decoder._items = walked = _Walked()  # type: ignore[attr-defined]
    for event in stray_deltas(n):
        r.feed(event)
    return walked.walked / n, r.close()


def test_responses_input_naming_no_place_finds_the_open_calls_without_walking_every_item() -> None:
    # each such delta walked every item held for the open calls of its type: 16,000 calls, then
    # 16,000 stray deltas took 5.4 s (2,000 and 2,000: 0.14 s), now 0.57 s
    small, _ = items_walked_per_stray_delta(500)
    large, result = items_walked_per_stray_delta(4_000)
    assert large <= small * 1.25, (small, large)
    assert len(result.calls) == 4_000
    assert result.calls[-1].arguments_json == "{}" + " " * 3_999
    assert result.suppressed_diagnostics["stray-input"] == 4_000 - 5


class _Looked(frozenset[int]):
    """The bytes that are whitespace, counting how often a byte is looked up in them."""

    looked = 0

    def __contains__(self, byte: object) -> bool:
        _Looked.looked += 1
        return super().__contains__(byte)


def bytes_looked_at_per_event(n: int, leading: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[float, fsm.Result]:
    """Two OpenAI calls at index 0, then ``n`` times a space and the second call's text again (a
    resend): the space is the second call's, after its value, and the resend finds it by its text.
    Or (``leading``) the second call's text after ``n`` spaces, then ``n`` resends of it."""
    from fsm.engine import slot

    monkeypatch.setattr(slot, "_WHITESPACE", _Looked(slot._WHITESPACE))
    _Looked.looked = 0
    text = '{"k": 1}'
    events = [chunk(tc(0, id="a", name="f", args="{}"))]
    if leading:
        events += [chunk(tc(0, id="b", name="f", args=" " * n + text)), *[chunk(tc(0, args=text))] * n]
    else:
        events += [chunk(tc(0, id="b", name="f", args=text)), *[chunk(tc(0, args=" ")), chunk(tc(0, args=text))] * n]
    r = fsm.Reassembler("openai-chat")
    for event in events:
        r.feed(event)
    result = r.close()
    monkeypatch.undo()
    return _Looked.looked / len(events), result


@pytest.mark.parametrize("leading", [False, True], ids=["spaces-after-the-value", "spaces-before-it"])
def test_whitespace_around_a_value_is_walked_once_however_often_the_call_is_read(
    leading: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each resend read the call's text less its surrounding whitespace, walking all the spaces
    # around it: 8,000 spaces and resends by turns took 2.6 s (1,000: 0.05 s), now 0.12 s; 16,000
    # resends of a text after 16,000 spaces 7.9 s, now 0.09 s
    small, _ = bytes_looked_at_per_event(500, leading, monkeypatch)
    large, result = bytes_looked_at_per_event(4_000, leading, monkeypatch)
    assert large <= small * 1.25, (small, large)
    spaces = " " * 4_000
    assert [c.arguments_json for c in result.calls] == ["{}", spaces + '{"k": 1}' if leading else '{"k": 1}' + spaces]
    assert len(result.calls) == 2
    assert {d.code for d in result.diagnostics} == {"resend", "no-finish-reason"}
    assert result.suppressed_diagnostics == {"resend": 4_000 - 100}


def code_resent_after_many(n: int) -> list[dict[str, Any]]:
    """``n`` Gemini code parts without an id, each its own code, then the second again ``n`` times
    after the last (a resend of a call its position ended long ago)."""

    def code(k: int) -> dict[str, Any]:
        return _gemini({"executableCode": {"language": "PYTHON", "code": f"print({k})"}})

    return [code(k) for k in range(n)] + [code(1)] * n


def finished_reads_per_event(events: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> tuple[float, Any]:
    """How often a call is asked whether it has finished, per event: each ask is a call visited."""
    reads = count_finished_reads(monkeypatch)
    r = fsm.Reassembler("gemini", limits=fsm.Limits(max_calls=10_000, max_diagnostics_per_code=5))
    for event in events:
        r.feed(event)
    result = r.close()
    monkeypatch.undo()
    return reads[0] / len(events), result


def test_a_code_part_resent_after_many_ended_at_its_position_ends_nothing_in_steps_of_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # each resend's end looked through every call its position had ended for one still open:
    # 8,000 code parts and 8,000 resends took 2.7 s (1,000 and 1,000: 0.07 s), now 0.26 s
    small, _ = finished_reads_per_event(code_resent_after_many(500), monkeypatch)
    large, result = finished_reads_per_event(code_resent_after_many(4_000), monkeypatch)
    assert large <= small * 1.25, (small, large)
    assert [c.input for c in result.server_tool_calls[:4_000]] == [f"print({k})" for k in range(4_000)]
    assert result.suppressed_diagnostics["resend"] == 4_000 - 5
