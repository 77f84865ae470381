"""One choice of a stream that carries several: OpenAI chat's ``choices`` (a request with ``n`` > 1)
and Gemini's ``candidates`` (``candidateCount`` > 1), each entry numbered by its ``index``.

The engine reassembles one turn per stream. A caller who asked for several choices names the one a
reassembler reads (``Reassembler(choice=k)``, one reassembler per choice over the same stream), and
each payload is cut down to that choice before its decoder sees it: the chosen entry alone, given
index 0 so the decoder reads it as a one-choice stream's, every other entry skipped and reported
once (``choice-skipped``, info: the caller expects them). The decoder's own check stays for a stream
read without a named choice (``choice-ignored``, a violation: nobody expected a second choice).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from fsm.errors import InvalidOption, shown
from fsm.wire.decoders._fields import written

CHOICE_LISTS: Final = {"openai-chat": ("choices", "choice"), "gemini": ("candidates", "candidate")}
"""The providers whose streams may carry several choices: the list's key, and what one is called."""


def checked_choice(choice: object, provider: str) -> int:
    """A ``choice`` given to Reassembler: a choice's index, for a provider whose streams can carry
    several. InvalidOption for anything else."""
    if type(choice) is not int or choice < 0:  # a bool is an int, but True is no index
        raise InvalidOption(f"choice must be None or an index (an int from 0), not {shown(choice)}")
    if provider not in CHOICE_LISTS:
        named = " or ".join(CHOICE_LISTS)
        raise InvalidOption(f"choice is for a provider that streams several choices, named: {named}, not {provider!r}")
    return choice


class ChoicePicker:
    """Cuts each payload of a stream down to the choice its reassembler reads."""

    __slots__ = ("choice", "key", "named", "noun", "skipped")

    def __init__(self, provider: str, choice: int) -> None:
        self.choice = choice
        self.named = written(choice)  # a choice past the int-string limit has no str(): named as such
        self.key, self.noun = CHOICE_LISTS[provider]
        self.skipped: set[object] = set()  # the choices reported so far (see chosen): each once

    def chosen(self, payload: Mapping[str, Any], diagnose: Callable[[str, str], None]) -> Mapping[str, Any]:
        """``payload`` with only the chosen choice left in its list, as index 0. Each other choice is
        reported at its first chunk (``choice-skipped``): a stream of ``n`` choices would otherwise
        say the same of every other chunk. A payload without the list, or whose list is no list, is
        returned as it is (its decoder says what is wrong with it); an entry that is no object is
        kept for the decoder to refuse."""
        entries = payload.get(self.key)
        if type(entries) is not list or not entries:
            return payload
        kept: list[Any] = []
        for entry in entries:
            if not isinstance(entry, Mapping):
                kept.append(entry)
                continue
            index = entry.get("index")
            # OpenAI numbers every choice; Gemini leaves the first candidate's out. Whatever else
            # the decoders read as the first (their `not index`: False, 0.0, "") is choice 0 here
            # too, so choice=0 reads a one-choice stream exactly as no choice does (policy
            # first-choice-index, README).
            if not index:
                index = 0
            if type(index) is int and index == self.choice:
                kept.append({**entry, "index": 0})
                continue
            said = written(index)
            # Told apart by type as well (the text "1" is no choice 1), and an int by its value (two
            # past the int-string limit are written alike): each is reported.
            key: object = index if type(index) is int else f"{type(index).__name__}:{said}"
            if key not in self.skipped:
                if len(self.skipped) < _REMEMBERED:
                    self.skipped.add(key)
                noun, named = self.noun, repr(said) if type(index) is str else said
                diagnose("choice-skipped", f"{noun} {named} is skipped: this reassembler reads {noun} {self.named}")
        return {**payload, self.key: kept}


_REMEMBERED: Final = 64
"""Choices told apart, each reported once; past that many (no stream asks for more), every chunk of
another is reported, within the limit on diagnostics, rather than a set growing with the input."""
