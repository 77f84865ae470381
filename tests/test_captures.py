"""Every capture in ../shared/captures reassembles, through the CLI with provider auto-detection, to
its meta's expected calls, with its expected extras (finish reason, truncated calls, thought
signatures). The captures are other projects' recordings: read in place, never copied."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from fsm.cli import main
from fsm.harness.captures import PROVIDER_OF_SHAPE
from tests.conftest import CAPTURES, captures, meta_for, require_captures

# The provider's own finish reason, as recorded in the metas, and what the engine reports for it.
FINISH = {"STOP": "tool_calls", "tool_use": "tool_calls", "max_tokens": "length"}

FOUND = captures()
MISSING = f"recorded captures not found at {CAPTURES} (../shared is beside the project in CI)"
STREAMS = FOUND or [pytest.param(None, marks=pytest.mark.skip(reason=MISSING))]
IDS = [f"{p.parent.name}/{p.name}" for p in FOUND] or ["no-captures"]


def replay(path: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["replay", *args, str(path)], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def meta_of(stream: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(meta_for(stream).read_text())
    return data


def test_captures_are_present_or_skipped() -> None:
    require_captures()
    assert {p.parent.name for p in FOUND} == set(PROVIDER_OF_SHAPE)


@pytest.mark.parametrize("stream", STREAMS, ids=IDS)
def test_capture_reassembles_to_expected_calls(stream: Path) -> None:
    code, out, err = replay(stream)
    assert code == 0, err
    result = json.loads(out)
    meta = meta_of(stream)
    assert result["provider"] == PROVIDER_OF_SHAPE[stream.parent.name]  # auto-detection chose right
    complete = [c for c in result["calls"] if c["status"] == "complete"]
    expected = meta["expected_tool_calls"]
    assert len(complete) == len(expected)
    for have, want in zip(complete, expected, strict=True):
        assert have["name"] == want["name"]
        assert have["arguments"] == want["arguments"]  # as JSON values: key order, 7 vs 7.0 do not matter
        if want["id"] is not None:
            assert have["id"] == want["id"]
        if "thought_signature_present" in want:
            assert bool(have["thought_signature"]) == want["thought_signature_present"]
    assert len({c["id"] for c in result["calls"]}) == len(result["calls"])


@pytest.mark.parametrize("stream", STREAMS, ids=IDS)
def test_capture_expected_extras(stream: Path) -> None:
    result = json.loads(replay(stream)[1])
    extra = meta_of(stream).get("expected_extra") or {}
    raw_finish = extra.get("finish_reason") or extra.get("stop_reason")
    if raw_finish:
        assert result["finish_reason"] == FINISH[raw_finish]
    incomplete = extra.get("incomplete_tool_calls", [])
    truncated = [c for c in result["calls"] if c["status"] == "truncated"]
    assert [(c["id"], c["name"], c["arguments_json"]) for c in truncated] == [
        (c["id"], c["name"], c["arguments_raw_so_far"]) for c in incomplete
    ]
    assert all(c["arguments"] is None for c in truncated)  # never {} in place of a cut call


@pytest.mark.parametrize("stream", STREAMS, ids=IDS)
def test_capture_redelivered_as_deltas_concatenates_to_the_same_calls(stream: Path) -> None:
    code, out, _ = replay(stream, "--output", "deltas")
    assert code == 0
    merged: dict[int, str] = {}
    for line in out.splitlines():
        for entry in json.loads(line)["choices"][0]["delta"].get("tool_calls", []):
            merged[entry["index"]] = merged.get(entry["index"], "") + entry["function"].get("arguments", "")
    result = json.loads(replay(stream)[1])
    for call in result["calls"]:
        if call["status"] == "complete":
            assert json.loads(merged[call["index"]]) == call["arguments"]
        else:
            assert merged[call["index"]] == call["arguments_json"]


@pytest.mark.parametrize("stream", STREAMS, ids=IDS)
def test_capture_in_strict_mode_is_clean_or_names_the_event(stream: Path) -> None:
    code, _, err = replay(stream, "--strict")
    assert code == 0 or (code == 1 and err.startswith("toolcall-fsm: event ") and "rule " in err)


@pytest.mark.parametrize("stream", STREAMS, ids=IDS)
def test_capture_gains_no_unknown_event_diagnostics(stream: Path) -> None:
    """Text deltas, role and usage chunks, pings, thinking blocks are ordinary, not unknown."""
    result = json.loads(replay(stream)[1])
    assert [d for d in result["diagnostics"] if d["code"] in ("unknown-event", "unopened-call")] == []


NORMAL_STREAMS = [p for p in FOUND if p.parent.name.startswith("gemini") or p.parent.name == "openai_responses"]


@pytest.mark.parametrize(
    "stream",
    NORMAL_STREAMS or [pytest.param(None, marks=pytest.mark.skip(reason=MISSING))],
    ids=[f"{p.parent.name}/{p.name}" for p in NORMAL_STREAMS] or ["no-captures"],
)
def test_normal_gemini_and_responses_streams_do_not_read_as_faulty(stream: Path) -> None:
    from fsm import Reassembler, Severity

    reassembler = Reassembler()
    reassembler.feed_bytes(stream.read_bytes())
    result = reassembler.close()
    # They do report (no ids on Gemini's wire; stop although tools were called), at info level only.
    assert result.diagnostics and {d.severity for d in result.diagnostics} == {Severity.INFO}
    assert result.problems() == ()
