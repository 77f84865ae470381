from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# Property tests check behaviour, never time: speed is measured by the benchmarks in tools/. A
# deadline per example (hypothesis's default, 200 ms) fails a test when the machine is busy, not
# when the code is wrong (it failed test_scanner once on a shared machine, 232 ms).
settings.register_profile("toolcall-fsm", deadline=None)
settings.load_profile("toolcall-fsm")

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
CAPTURES = SHARED / "captures"


def captures(*shapes: str) -> list[Path]:
    """Capture streams (every file a meta lists) of the given wire shapes, or of all shapes when none
    is named; empty when ../shared is absent."""
    if not CAPTURES.is_dir():
        return []
    found = []
    folders = [CAPTURES / s for s in shapes] if shapes else sorted(p for p in CAPTURES.iterdir() if p.is_dir())
    for folder in folders:
        for meta in sorted(folder.glob("*.meta.json")):
            names = json.loads(meta.read_text())["capture_files"]
            found += [folder / name for name in names if not name.endswith(".decoded.jsonl") or len(names) > 1]
    return found


def require_captures() -> None:
    if not CAPTURES.is_dir():
        pytest.skip(f"recorded captures not found at {CAPTURES} (../shared is beside the project in CI)")


def meta_for(stream: Path) -> Path:
    """The ``<name>.meta.json`` beside a capture stream (names may contain dots themselves)."""
    stems = [m.name.removesuffix(".meta.json") for m in stream.parent.glob("*.meta.json")]
    stem = max((s for s in stems if stream.name.startswith(s + ".")), key=len)
    return stream.parent / f"{stem}.meta.json"


@pytest.fixture
def offline_litellm(monkeypatch: pytest.MonkeyPatch) -> Any:
    """LiteLLM with its bundled price list and no way onto the network."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")

    def refuse(sock: Any, address: Any) -> None:
        raise OSError(f"no network in tests ({address})")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    return pytest.importorskip("litellm")


@pytest.fixture
def litellm(offline_litellm: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Offline LiteLLM without its help banner on every error."""
    monkeypatch.setattr(offline_litellm, "suppress_debug_info", True)
    return offline_litellm
