"""Deterministic call ids: unique within a turn and against ids already taken, never random.

Ids feed prompt caches, so the same stream must give the same ids, byte for byte, every time.
"""

from __future__ import annotations

from collections.abc import Iterable


class IdAllocator:
    # Every candidate below the last one claimed for a name stays taken (the set only grows), so
    # the search resumes there: claiming one name n times costs n steps, not n squared. Most
    # streams never claim a name twice: the stream's own dict is made by the first that does.
    _resume: dict[str, int] | None = None
    # The longest id the target format takes (Bedrock Converse's toolUseId: 64), or None: a
    # renamed id that would pass it has its stem cut so ``<stem>_d<n>`` fits.
    _limit: int | None = None

    def __init__(self, taken: Iterable[str] = (), limit: int | None = None) -> None:
        self._used: set[str] = set(taken)
        if limit is not None:
            self._limit = limit

    def take(self, used: str) -> None:
        """Mark ``used`` as taken (an id met after the allocator was made)."""
        self._used.add(used)

    def synthesize(self, position: int, server: bool = False) -> str:
        """An id for a call the wire gave none: ``call_<position>``, made unique; a server call's is
        ``server_call_<position>`` (its positions are counted apart, so it keeps out of the way of
        the client calls' ids)."""
        return self.claim(f"server_call_{position}" if server else f"call_{position}")

    def claim(self, wanted: str) -> str:
        """``wanted`` if free, else ``<wanted>_d2``, ``<wanted>_d3``, ...: the first that is free
        (with a ``limit``, ``wanted`` cut to fit as each number needs)."""
        used = self._used
        if wanted not in used:
            # Nearly every claim. A name with a resume point is taken already, and a resume point of
            # 1 is what an absent one means: only names claimed twice keep one (no entry per call).
            used.add(wanted)
            return wanted
        resume = self._resume
        if resume is None:
            resume = self._resume = {}
        n = resume.get(wanted, 1)
        candidate = wanted if n == 1 else self._numbered(wanted, n)
        while candidate in self._used:
            n += 1
            candidate = self._numbered(wanted, n)
        self._used.add(candidate)
        resume[wanted] = n
        return candidate

    def _numbered(self, wanted: str, n: int) -> str:
        suffix = f"_d{n}"
        if self._limit is None or len(wanted) + len(suffix) <= self._limit:
            return wanted + suffix
        return wanted[: max(self._limit - len(suffix), 1)] + suffix
