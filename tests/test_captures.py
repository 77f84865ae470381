"""Every OpenAI-style capture in ../shared/captures reassembles, through the CLI, to its meta's
expected calls. The captures are other projects' recordings: read in place, never copied."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from fsm.cli import main
from tests.conftest import captures, meta_for, require_captures

OPENAI_SHAPES = (
    "openai_chat",
    "deepseek",
    "groq",
    "mistral",
    "openrouter",
    "gemini_openai_compat",
    "ollama_openai_compat",
)
STREAMS = captures(*OPENAI_SHAPES)


def replay(path: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["replay", *args, str(path)], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def meta_of(stream: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(meta_for(stream).read_text())
    return data


def test_captures_are_present_or_skipped() -> None:
    require_captures()
    assert len(STREAMS) >= 9


@pytest.mark.parametrize("stream", STREAMS, ids=[f"{p.parent.name}/{p.name}" for p in STREAMS])
def test_capture_reassembles_to_expected_calls(stream: Path) -> None:
    code, out, err = replay(stream)
    assert code == 0, err
    result = json.loads(out)
    expected = meta_of(stream)["expected_tool_calls"]
    got = [{"id": c["id"], "name": c["name"], "arguments": c["arguments"]} for c in result["calls"]]
    assert [c["status"] for c in result["calls"]] == ["complete"] * len(expected)
    assert len(got) == len(expected)
    for have, want in zip(got, expected, strict=True):
        assert have["name"] == want["name"]
        assert have["arguments"] == want["arguments"]  # dict equality: key order and 7 vs 7.0 do not matter
        if want["id"] is not None:
            assert have["id"] == want["id"]
    assert result["provider"] == "openai-chat"


@pytest.mark.parametrize("stream", STREAMS, ids=[f"{p.parent.name}/{p.name}" for p in STREAMS])
def test_capture_redelivered_as_deltas_concatenates_to_the_same_calls(stream: Path) -> None:
    code, out, _ = replay(stream, "--output", "deltas")
    assert code == 0
    merged: dict[int, str] = {}
    for line in out.splitlines():
        for entry in json.loads(line)["choices"][0]["delta"].get("tool_calls", []):
            merged[entry["index"]] = merged.get(entry["index"], "") + entry["function"].get("arguments", "")
    expected = meta_of(stream)["expected_tool_calls"]
    assert [json.loads(merged[i]) for i in sorted(merged)] == [c["arguments"] for c in expected]
