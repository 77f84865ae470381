"""Deterministic call ids: unique within a turn and against ids already taken, never random.

Ids feed prompt caches, so the same stream must give the same ids, byte for byte, every time.
"""

from __future__ import annotations

from collections.abc import Iterable


class IdAllocator:
    def __init__(self, taken: Iterable[str] = ()) -> None:
        self._used: set[str] = set(taken)

    def synthesize(self, position: int) -> str:
        """An id for a call the wire gave none: ``call_<position>``, made unique."""
        return self.claim(f"call_{position}")

    def claim(self, wanted: str) -> str:
        """``wanted`` if free, else ``<wanted>_d2``, ``<wanted>_d3``, ...: the first that is free."""
        candidate, n = wanted, 1
        while candidate in self._used:
            n += 1
            candidate = f"{wanted}_d{n}"
        self._used.add(candidate)
        return candidate
