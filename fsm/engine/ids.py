"""Deterministic call ids: unique within a turn and against ids already taken, never random.

Ids feed prompt caches, so the same stream must give the same ids, byte for byte, every time.
"""

from __future__ import annotations

from collections.abc import Iterable


class IdAllocator:
    # Where the search for a free ``<stem>_d<n>`` resumes, per stem and count of digits in n (the
    # two decide the names searched: with a limit, a stem is cut as n needs, and ids alike in their
    # first characters share the cut stem): every name below it is taken (the set only grows), so
    # no claim looks at a taken name twice. Claiming one name k times, or k names cut to one stem,
    # costs k steps, not k squared. Most streams never claim a name twice: the stream's own dict is
    # made by the first that does.
    _resume: dict[tuple[str, int], int] | None = None
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
            # Nearly every claim: the name itself.
            used.add(wanted)
            return wanted
        resume = self._resume
        if resume is None:
            resume = self._resume = {}
        limit, n, digits = self._limit, 2, 1
        while True:  # n from 2 up, a count of digits at a time (n is the first number of that count)
            top = 10**digits
            stem = wanted
            if limit is not None and len(wanted) + 2 + digits > limit:
                stem = wanted[: max(limit - 2 - digits, 1)]
            key = (stem, digits)
            n = resume.get(key, n)
            while n < top:
                candidate = f"{stem}_d{n}"
                if candidate not in used:
                    used.add(candidate)
                    resume[key] = n + 1
                    return candidate
                n += 1
            resume[key] = n
            digits += 1
