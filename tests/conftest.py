from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
CAPTURES = SHARED / "captures"


def captures(*shapes: str) -> list[Path]:
    """Capture streams of the given wire shapes; empty when ../shared is absent."""
    if not CAPTURES.is_dir():
        return []
    found = []
    for shape in shapes:
        for meta in sorted((CAPTURES / shape).glob("*.meta.json")):
            stem = meta.name.removesuffix(".meta.json")
            stream = next(p for p in meta.parent.iterdir() if p.name.startswith(stem + ".") and p != meta)
            found.append(stream)
    return found


def require_captures() -> None:
    if not CAPTURES.is_dir():
        pytest.skip(f"recorded captures not found at {CAPTURES} (../shared is beside the project in CI)")


def meta_for(stream: Path) -> Path:
    """The ``<name>.meta.json`` beside a capture stream (names may contain dots themselves)."""
    stems = [m.name.removesuffix(".meta.json") for m in stream.parent.glob("*.meta.json")]
    stem = max((s for s in stems if stream.name.startswith(s + ".")), key=len)
    return stream.parent / f"{stem}.meta.json"
