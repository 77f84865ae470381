"""Hostile audit 21: the last round's code (nameless calls invalid, the Responses built-in action
checks, Gemini's id-less resends) against megabyte, malformed and split input.

Each test failed before its fix, or holds a path the audit fed and found sound. Work is counted, not timed."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

import fsm
from tests import test_hostile_audit15 as audit15


def gem(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


def fcall(name: str, **args: Any) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": args}}


# -- Gemini without ids: where a call resent at a new place goes ---------------------------------------------


def shifted_rolls(n: int) -> list[dict[str, Any]]:
    """n id-less dice rolled, then resent after n other calls: each resend sits where no roll was."""
    others = [fcall("look", i=i) for i in range(n)]
    return [gem([fcall("roll")] * n), gem([*others, *[fcall("roll")] * n], "STOP")]


def test_gemini_resends_at_new_places_cost_the_same_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    # each resend looked through every earlier place of its like from the first for one not taken in
    # this event: n^2 steps for n resends (8,000 dice: 2.9 s of CPU)
    limits = fsm.Limits(max_calls=10_000, max_diagnostics_per_code=10_000)
    result = fsm.reassemble(shifted_rolls(300), "gemini", limits=limits)
    assert (len(result.calls), result.codes().count("resend")) == (600, 300)
    monkeypatch.setattr(audit15, "ADAPTER", ("fsm/wire/decoders/gemini.py",))
    small, large = (audit15.adapter_lines(shifted_rolls(n)) for n in (100, 800))
    assert large <= small * 8 * 1.25


PROBE = """
import fsm
from tests.test_hostile_audit21 import fcall, gem
others = [fcall("look", i=i) for i in range(7)]
result = fsm.reassemble([gem([fcall("roll")] * 6), gem([*others, fcall("roll"), fcall("roll")], "STOP")], "gemini")
print([d.message for d in result.diagnostics if d.code == "resend"])
"""


def test_which_earlier_call_a_gemini_resend_repeats_does_not_hang_on_the_process_hash_seed() -> None:
    # the places a call held were kept in the order of a set of (hash of its name and text, place):
    # which earlier roll a resend repeated (and so the call its resend diagnostic names) changed with
    # PYTHONHASHSEED, from one run of the same stream to the next. The first places first now.
    said = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
        said.add(run.stdout)
    assert said == {
        str(["call call_0: the same arguments again; not added", "call call_1: the same arguments again; not added"])
        + "\n"
    }


# -- Responses built-in actions: what a fault shows ---------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ({"type": "click", "button": 10**5000, "x": 1, "y": 2}, "has button 1" + "0" * 56 + "..."),
        ({"type": "keypress", "keys": ["a", 10**5000]}, '(keypress) has keys ["a", 1' + "0" * 50 + "..."),
        ({"type": "type", "text": {"n": 10**5000}}, '(type) has text {"n": 1' + "0" * 50),
    ],
)
def test_an_unusable_action_holding_an_integer_python_writes_no_text_for_is_invalid_not_a_failed_stream(
    value: dict[str, Any], said: str
) -> None:
    # the fault was shown by writing the value, which raised ValueError past the int-string limit:
    # the whole stream failed (stream-failed) where a click of another button makes the call invalid
    from tests.test_built_in_actions import stream

    result = fsm.reassemble(stream("computer_call", value), "openai-responses")
    (call,) = result.calls
    assert call.status is fsm.CallStatus.INVALID and "stream-failed" not in result.codes()
    (why,) = [d.message for d in result.diagnostics if d.code == "unusable-action"]
    assert said in why
