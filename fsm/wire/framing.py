"""Sans-I/O framing: bytes in, one JSON payload text per wire event out.

Four framings are read incrementally, with chunk boundaries anywhere (inside a line, a CRLF pair or
a multi-byte character); the two line framings live in fsm/wire/lines.py:

* SSE (``text/event-stream``): LF, CR or CRLF line ends; ``data:`` lines joined per event; comment
  lines, ``event:``/``id:``/``retry:`` fields; a stray space before a field name; a last event with
  no blank line after it (flushed by ``close()``). An event whose data is empty is not dispatched
  (as the SSE spec says). ``[DONE]`` is passed on as :data:`DONE`.
* NDJSON: one payload per line; blank lines skipped.
* JSON array: ``[ {...}, {...} ]`` streamed element by element (Gemini without ``alt=sse``); element
  ends are found with the completeness scanner, so no element is parsed twice.
* JSON document: one pretty-printed value over many lines (what a provider sends as an HTTP error
  body, or a non-streamed response), or several one after another, each an event; read as the
  array's elements are, except that text between them which opens no value is junk up to its
  line's end (no comma or bracket ends it there).
* AWS event stream (Bedrock ``ConverseStream`` over HTTP): binary messages, unframed by botocore's
  decoder (the optional ``bedrock`` extra) into ``{eventType: body}`` objects (fsm/wire/eventstream.py).

A framer never raises: what it cannot use comes out as a :class:`Fault` in its place among the
payloads, so the events before it (even in the same chunk) are still processed, and the reassembler
decides (lax: report and skip the event; strict: raise). Sizes are counted in bytes, exactly, however
the input was chunked, and every scan resumes where the last one stopped, so the work is linear in
the input whatever the chunk sizes.
"""

from __future__ import annotations

import codecs
import re
from typing import Final, Protocol

from fsm.engine.scanner import Scanner
from fsm.errors import LimitExceeded
from fsm.wire.detect import BOM as BOM
from fsm.wire.detect import Detector as Detector
from fsm.wire.detect import Framing as Framing
from fsm.wire.detect import detect_framing as detect_framing
from fsm.wire.faults import Fault, Payload, decode_utf8, too_long
from fsm.wire.lines import NDJSONFramer as NDJSONFramer
from fsm.wire.lines import SSEFramer as SSEFramer

DONE: Final = "[DONE]"


# Bytes that are not UTF-8 are decoded to lone surrogates U+DC80..U+DCFF (surrogateescape), so the
# element they are in can be reported and skipped while the framing around it stays readable.
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
_BLANKS = re.compile(r"[ \t\r\n]*")


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogateescape"))


def _crossing(text: str, budget: int) -> int:
    """The index of the character of ``text`` whose UTF-8 bytes pass ``budget`` (they must)."""
    at = size = 0
    while size + (n := _utf8_size(text[at : at + 4096])) <= budget:
        size, at = size + n, at + 4096
    while (size := size + _utf8_size(text[at])) <= budget:
        at += 1
    return at


_JUNK_QUIET = re.compile(r'[^",\[\]{}]*')
_LINE_END = re.compile(r"[\r\n]")
_STRING_QUIET = re.compile(r'[^"\\]*')


class _Junk:
    """Reads an array element that is not an object or array (a scalar, a proxy's keep-alive, text
    that is not JSON) up to the comma or closing bracket that ends it: one outside any string and any
    bracket the element itself opened. Strings are read with their escapes, so ``"a,]"`` is one
    element. What cannot be recovered from: junk that opens a bracket it never closes runs on to the
    element limit or the end of the stream, as an unclosed object does."""

    __slots__ = ("depth", "escape", "in_string")

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escape = False

    def end(self, text: str, pos: int) -> int | None:
        """Where the element ends (its ``,`` or ``]``), or None if ``text`` ends first."""
        n = len(text)
        while pos < n:
            if self.escape:
                self.escape, pos = False, pos + 1
                continue
            if self.in_string:
                pos = _STRING_QUIET.match(text, pos).end()  # type: ignore[union-attr]  # may match nothing
                if pos < n:
                    self.escape = text[pos] == "\\"  # else it is the closing quote
                    self.in_string = self.escape
                    pos += 1
                continue
            pos = _JUNK_QUIET.match(text, pos).end()  # type: ignore[union-attr]
            if pos >= n:
                break
            ch = text[pos]
            if self.depth == 0 and ch in ",]":
                return pos
            if ch == '"':
                self.in_string = True
            elif ch in "[{":
                self.depth += 1
            elif ch in "]}" and self.depth:
                self.depth -= 1
            pos += 1
        return None


class JSONArrayFramer:
    """Elements that are objects or arrays are found by the completeness scanner; anything else
    between two commas (or after a complete element, before the next comma) is read by :class:`_Junk`
    and passed on as it is, so the reassembler reports it (lax) or raises (strict) under its own
    element number, and the elements after it are read."""

    def __init__(self, max_bytes: int, max_depth: int = 256, *, document: bool = False) -> None:
        self._document = document  # no brackets around the values, no commas between them
        self._what = "one document" if document else "one element"
        self._decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        self._max = max_bytes
        self._max_depth = max_depth
        self._element: list[str] = []
        self._scanner: Scanner | None = None
        self._junk: _Junk | None = None
        self._size = 0
        self._expect = "value" if document else "["  # "[", then "value" or "]", then "," or "]", then "end"
        self.cut = False
        self.work = 0
        """Characters read: each once, since held element text is never read again."""

    def feed(self, data: bytes, final: bool = False) -> list[Payload]:
        text = self._decoder.decode(data, final)
        self.work += len(text)
        out: list[Payload] = []
        pos = 0
        while pos < len(text):
            if self._junk is not None:
                end = self._junk_end(text, pos)
                stop = len(text) if end is None else end
                if not self._hold(text[pos:stop], out):
                    return out
                pos = stop
                if end is None:
                    break
                self._emit(out)
                self._expect, pos = ("value" if self._document or text[pos] == "," else "end"), pos + 1
                continue
            if self._scanner is not None:
                try:
                    end = self._scanner.feed(text, pos)
                except LimitExceeded:
                    out.append(self._first_limit(text, pos))
                    return out
                stop = len(text) if end is None else end
                if not self._hold(text[pos:stop], out):
                    return out
                pos = stop
                if end is None:
                    break
                self._emit(out)
                self._expect = "value" if self._document else ","
                continue
            pos = _BLANKS.match(text, pos).end()  # type: ignore[union-attr]  # may match nothing
            if pos >= len(text):
                break
            ch = text[pos]
            if self._expect == "[" and ch == "[":
                self._expect, pos = "value", pos + 1
            elif self._expect in ("value", ",") and ch == "]" and not self._document:
                self._expect, pos = "end", pos + 1
            elif self._expect == "," and ch == ",":
                self._expect, pos = "value", pos + 1
            elif self._expect == "value" and ch in "{[":
                self._scanner = Scanner(self._max_depth)
            elif self._expect in ("value", ","):
                self._junk = _Junk()
            else:
                shown = ch.encode("utf-8", "surrogateescape")
                kind = "a JSON document" if self._document else "a JSON-array stream"
                out.append(Fault(f"unexpected {shown!r} in {kind}", skippable=False))
                return out
        if final and (self._element or self._junk is not None):
            # A stream cut inside an element: pass the partial text on; the reassembler reports it.
            self._emit(out)
            self.cut = True
        return out

    def holding(self) -> bool:
        """Whether an element not yet ended is held (its text, or the first bytes of a character)."""
        started = self._element or self._scanner is not None or self._junk is not None
        return bool(started or self._decoder.getstate()[0])

    def _junk_end(self, text: str, pos: int) -> int | None:
        """Where the junk being read ends. Between documents nothing but a line end can end it:
        a bracket or comma there opens or separates nothing, and the next document begins a line."""
        if not self._document:
            return self._junk.end(text, pos)  # type: ignore[union-attr]  # only called while junk is read
        found = _LINE_END.search(text, pos)
        return found.start() if found else None

    def _first_limit(self, text: str, pos: int) -> Fault:
        """The limit the element passed first: its nesting, or its size if that was passed before the
        bracket too deep, however the bytes were chunked. The scanner reads all of a read before its
        size is counted, so when both are passed in one read, the element is scanned again up to
        the character that passed the size (once: the stream stops here)."""
        rest, budget = text[pos:], self._max - self._size
        if _utf8_size(rest) > budget:
            try:
                Scanner(self._max_depth).feed("".join(self._element) + rest[: _crossing(rest, budget) + 1])
            except LimitExceeded:
                pass  # the bracket too deep came first, or is the character that passed the size
            else:
                return too_long(self._what, self._max)
        # The scanner speaks of arguments; here it read a whole wire event, and says so as the other framings do.
        return Fault(f"the event nests deeper than {self._max_depth} levels", skippable=False, limit=True)

    def _hold(self, piece: str, out: list[Payload]) -> bool:
        """Take ``piece`` of the element being read; False (with the fault) past the size limit."""
        self._size += _utf8_size(piece)
        if self._size > self._max:
            out.append(too_long(self._what, self._max))
            return False
        self._element.append(piece)
        return True

    def _emit(self, out: list[Payload]) -> None:
        element = "".join(self._element)
        self._element, self._scanner, self._junk, self._size = [], None, None, 0
        if _ESCAPED_BYTE.search(element):
            raw = element.encode("utf-8", "surrogateescape")
            out.append(decode_utf8(raw))
        else:
            out.append(element)

    def close(self) -> list[Payload]:
        return self.feed(b"", final=True)


class Framer(Protocol):
    """What every framing offers the reassembler."""

    work: int
    cut: bool

    def feed(self, data: bytes, final: bool = False) -> list[Payload]: ...

    def close(self) -> list[Payload]: ...

    def holding(self) -> bool:
        """Whether bytes of an event not yet ended are held: an event fed as a dict now would be read
        ahead of it (Reassembler.feed refuses it)."""
        ...


def make_framer(framing: Framing, max_bytes: int, max_depth: int = 256 + 32) -> Framer:
    """``max_depth`` bounds the nesting of one whole wire event (only the framings that parse JSON
    themselves need it; the reassembler checks the others before parsing)."""
    if framing is Framing.SSE:
        return SSEFramer(max_bytes)
    if framing is Framing.NDJSON:
        return NDJSONFramer(max_bytes)
    if framing is Framing.AWS_EVENTSTREAM:
        from fsm.wire.eventstream import AWSEventStreamFramer  # botocore loads only for this framing

        return AWSEventStreamFramer(max_bytes, max_depth)
    return JSONArrayFramer(max_bytes, max_depth, document=framing is Framing.JSON_DOCUMENT)
