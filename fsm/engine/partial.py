"""The best value a prefix of JSON text promises so far, for live previews of streaming arguments.

Semantics are those of jiter's partial mode ``trailing-strings`` (what the SDKs use for previews):
open containers are closed where the text stops; a string value cut short is kept with what it has
(an escape or a surrogate pair cut in half is left out); a key without its value, and a number or a
literal that is not yet one (``-``, ``1.``, ``1e``, ``tru``) are left out, while one that already is
(``12``, ``true``) is kept. Once the top-level value closes, anything after it is ignored.

Work happens only when a preview is asked for, never per fragment: one pass over the text finds the
stack of open containers and the last point where the innermost one's members were whole, the text is
cut there (or kept, for a value cut short that is kept), the open containers are closed, and json's C
parser does the rest. The pass takes what it can in C: whole containers through json's scanner, runs
of members holding no container with one regular-expression match. Text that stops being JSON is
read up to the last whole member before the fault.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from json.scanner import make_scanner
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from fsm.engine.slot import Slot

_TOKEN: Final = re.compile(
    r"""[ \t\n\r]*+(?:
        (?P<string_start>")
      | (?P<open>[\[{])
      | (?P<close>[\]}])
      | (?P<colon>:)
      | (?P<comma>,)
      | (?P<scalar>[^ \t\n\r\[\]{}:,"]++)
    )""",
    re.VERBOSE,
)
_SCALAR_PATTERN: Final = r"-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?(?:[eE][+-]?[0-9]++)?|true|false|null|NaN|-?Infinity"
_SCALAR: Final = re.compile(_SCALAR_PATTERN)
_STRING_BODY_PATTERN: Final = r'(?:[^"\\\x00-\x1f]++|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*+'
_STRING_BODY: Final = re.compile(_STRING_BODY_PATTERN)
_PLAIN = rf'(?:"{_STRING_BODY_PATTERN}"|(?:{_SCALAR_PATTERN})(?![^ \t\n\r\]}},]))'
# Runs of members with no container in them, each followed by its comma: one match takes them all
# (in C), where the token loop would take five tokens a member. The group ends at the last value.
_ITEM_RUN: Final = re.compile(rf"(?:[ \t\n\r]*+({_PLAIN})[ \t\n\r]*+,)++")
_MEMBER_RUN: Final = re.compile(
    rf'(?:[ \t\n\r]*+"{_STRING_BODY_PATTERN}"[ \t\n\r]*+:[ \t\n\r]*+({_PLAIN})[ \t\n\r]*+,)++'
)
_PARTIAL_ESCAPE: Final = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?")
_HIGH_SURROGATE: Final = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}")
# Deeper than this, the scan stops asking json's scanner whether a container is whole: each
# failed ask at depth d reads on as deep as the text goes, so it is capped.
_WHOLE_CONTAINER_DEPTH: Final = 32
_INT_DIGITS_PYTHON_READS: Final = 4000  # below the interpreter's int-from-text limit (4300 digits)


def _int(text: str) -> int:
    # Past the interpreter's limit on reading ints from text, read through Decimal, which has none.
    if len(text) < _INT_DIGITS_PYTHON_READS:
        return int(text)
    import decimal  # only here, so a program that never meets such a number does not load it

    return int(decimal.Decimal(text))


_DECODER: Final = json.JSONDecoder()
# One whole value read at an offset, or a failure (typeshed types its argument as a scanner, not the decoder).
_SCAN_ONCE: Final = make_scanner(_DECODER)  # type: ignore[arg-type]
_BIG_INT_DECODER: Final = json.JSONDecoder(parse_int=_int)  # slower: a Python call per int


def _decode(text: str) -> Any:
    try:
        return _DECODER.decode(text)
    except ValueError:  # an int too long to read from text (or, rarely, text the scan let through)
        return _BIG_INT_DECODER.decode(text)


class _Open:
    """One open container: its closing bracket, where its members were last whole, what comes next."""

    __slots__ = ("closer", "empty", "expect", "whole")

    def __init__(self, bracket: str, whole: int) -> None:
        self.closer = "}" if bracket == "{" else "]"
        self.whole = whole  # text[:whole] followed by the closers is JSON
        self.expect = "key" if bracket == "{" else "value"  # then colon, value, more (a comma or the close)
        self.empty = True

    def member_whole(self, at: int) -> None:
        self.whole, self.expect, self.empty = at, "more", False


def partial_value(text: str) -> Any:
    """The value ``text`` (a prefix of JSON) stands for so far; None while it stands for nothing
    (empty, whitespace, a number or literal at the top not yet whole). Never raises."""
    return PartialReader().read(text)


class PartialReader:
    """Previews of one growing text. It keeps the stack of open containers where its last scan
    stopped (and how far into a string the text ends inside it has read), so a text that only grew
    is scanned from there: over a stream, each character is taken once however often a preview is
    asked for. Closing the preview is one parse by json's C decoder."""

    __slots__ = ("_done", "_pos", "_stack", "_string")

    def __init__(self) -> None:
        self._pos = 0  # where the scan resumes: the start of the first token not yet taken
        self._stack: list[_Open] = []
        self._done: int | None = None  # where the top-level value closed, once it has
        self._string: int | None = None  # in a string the text ended inside: where its reading stopped

    def read(self, text: str) -> Any:
        """The preview of ``text``, which must begin with the text this reader last read (the
        caller starts a new reader for a text that was replaced)."""
        try:
            if self._done is None:
                self._scan(text)
            if self._done is not None:
                return _decode(text[: self._done])
            return self._close(text)
        except (ValueError, RecursionError):  # only past what the scan checks: nesting deeper than json reads
            return None

    def _scan(self, text: str) -> None:
        """Take every whole token; stop before one the text ends inside, or one that is not JSON."""
        stack, pos, end = self._stack, self._pos, len(text)
        while pos < end:
            top = stack[-1] if stack else None
            expect = top.expect if top is not None else "value"
            if top is not None and self._string is None and expect == ("key" if top.closer == "}" else "value"):
                run = (_MEMBER_RUN if top.closer == "}" else _ITEM_RUN).match(text, pos)
                if run is not None:
                    top.whole, top.empty, pos = run.end(1), False, run.end()
                    continue
            if self._string is not None:  # go on reading the string the text ended inside last time
                kind, after = "string", _STRING_BODY.match(text, self._string).end()  # type: ignore[union-attr]
                if after == end or text[after] != '"':
                    self._string = after  # still open (or broken: _close tells)
                    break
                self._string, after = None, after + 1
            else:
                m = _TOKEN.match(text, pos)
                if m is None:  # only whitespace is left
                    break
                kind = m.lastgroup or ""
                after, token = m.end(), m.start(kind)
                if kind == "string_start":
                    if expect not in ("key", "value"):
                        break
                    self._string = after
                    continue  # read it as far as the text goes, above
                if kind == "scalar" and after == end:
                    break  # a number or literal may yet grow: _close decides
            if kind == "open":
                if expect != "value":
                    break
                whole = _whole_container(text, after - 1) if len(stack) < _WHOLE_CONTAINER_DEPTH else None
                if whole is None:
                    stack.append(_Open(text[after - 1], after))
                elif top is None:
                    self._done = whole
                    break
                else:
                    top.member_whole(whole)
                    after = whole
            elif kind == "close":
                if top is None or text[after - 1] != top.closer or not (expect == "more" or top.empty):
                    break  # the wrong bracket, or a close after a comma or a colon: not JSON
                stack.pop()
                if not stack:
                    self._done = after
                    break
                stack[-1].member_whole(after)
            elif kind == "colon":
                if top is None or expect != "colon":
                    break
                top.expect = "value"
            elif kind == "comma":
                if top is None or expect != "more":
                    break
                top.expect = "key" if top.closer == "}" else "value"
            elif kind == "string" and top is not None and expect == "key":
                top.expect, top.empty = "colon", False
            else:  # a whole string, a number or a literal, as a value
                if expect != "value" or (kind == "scalar" and _SCALAR.fullmatch(text, token, after) is None):
                    break
                if top is None:
                    self._done = after
                    break
                top.member_whole(after)
            pos = after
        self._pos = pos

    def _close(self, text: str) -> Any:
        """The text up to the last whole member, or up to a value cut short at the end where it
        is kept, with the open containers closed."""
        stack = self._stack
        kept = None
        if (stack[-1].expect if stack else "value") == "value":
            if self._string is not None:
                kept = _string_cut_short(text, self._string)
            else:
                m = _TOKEN.match(text, self._pos)
                if (
                    m is not None
                    and m.lastgroup == "scalar"
                    and m.end() == len(text)
                    and _SCALAR.fullmatch(text, m.start("scalar"))
                ):
                    kept = text  # it may yet grow, but as it stands it is whole: kept
        if kept is None:
            if not stack:
                return None  # nothing whole at the top yet
            kept = text[: stack[-1].whole]
        return _decode(kept + "".join(o.closer for o in reversed(stack)))


def _whole_container(text: str, at: int) -> int | None:
    """Where the container opening at ``at`` closes, if it does, as json's C scanner reads it. On
    a container the text ends inside, the scanner reads to the end before it fails: cheap while
    streaming, where such a container has just opened, and at most once per container."""
    try:
        return int(_SCAN_ONCE(text, at)[1])
    except (StopIteration, ValueError, RecursionError):
        return None


def _string_cut_short(text: str, stop: int) -> str | None:
    """The text up to a string value it ends inside, whose content reads whole up to ``stop``,
    closed with a quote; None when the string is not cut short but broken."""
    if stop < len(text) and _PARTIAL_ESCAPE.fullmatch(text, stop) is None:
        return None  # a character a string cannot hold, before the end
    start = stop - 6
    if start > 0 and _HIGH_SURROGATE.fullmatch(text, start, stop):
        backslashes = 0
        while text[start - 1 - backslashes] == "\\":
            backslashes += 1
        if backslashes % 2 == 0:  # its own backslash is not itself escaped
            stop = start  # half a surrogate pair: the other half is still to come
    return text[:stop] + '"'


def preview(slots: Sequence[Slot], index: int, readers: dict[int, tuple[int, PartialReader]]) -> Any:
    """Reassembler.partial: the preview of client call ``index`` among ``slots``. ``readers`` keeps
    each previewed call's reader with the revision of the text it read (a replaced text needs a new
    one; appended text is read on from where the reader stopped)."""
    for slot in slots:
        if slot.ordinal == index and not slot.server:
            if slot.freeform:
                return slot.text()  # freeform input is not JSON: what it holds is all it promises
            revision, reader = readers.get(index, (-1, None))
            if reader is None or revision != slot.revision:  # first asked, or the text was replaced
                reader = PartialReader()
                readers[index] = (slot.revision, reader)
            return reader.read(slot.text())
    return None
