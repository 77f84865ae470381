"""Sans-I/O framing: bytes in, one JSON payload text per wire event out.

Four framings are read incrementally, with chunk boundaries anywhere (inside a line, a CRLF pair or
a multi-byte character):

* SSE (``text/event-stream``): LF, CR or CRLF line ends; ``data:`` lines joined per event; comment
  lines, ``event:``/``id:``/``retry:`` fields; a stray space before a field name; a last event with
  no blank line after it (flushed by ``close()``). An event whose data is empty is not dispatched
  (as the SSE spec says). ``[DONE]`` is passed on as :data:`DONE`.
* NDJSON: one payload per line; blank lines skipped.
* JSON array: ``[ {...}, {...} ]`` streamed element by element (Gemini without ``alt=sse``); element
  ends are found with the completeness scanner, so no element is parsed twice.
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

DONE: Final = "[DONE]"


class _LineFramer:
    """Splits bytes into lines on LF, CR or CRLF, holding back a trailing partial line.

    ``_scanned`` remembers how much of the held partial line is known to hold no line end, so a
    long line fed in small pieces is searched once, not once per piece."""

    _unterminated = False  # the last line read had no line end (only at close)
    _slack = 0  # bytes a line may have beyond its event's limit (an SSE field name)
    fast = True
    """Split a chunk with no CR in it at C speed, and read a line that starts with ``data:`` before
    anything else (False: only the general code, which tests compare with)."""

    def __init__(self, max_bytes: int) -> None:
        self._buf = bytearray()
        self._scanned = 0
        self._max = max_bytes
        self._max_line = max_bytes + self._slack
        self.cut = False
        """Set by ``close()``: its last payload had no end (no line end, no blank line after it),
        so if it does not parse, the stream was cut there rather than sending a bad event."""
        self.work = 0
        """Bytes searched for line ends (tests check that this stays linear in the input)."""

    def _lines(self, data: bytes, final: bool) -> tuple[list[bytes], Fault | None]:
        """The complete lines ``data`` brings (the held partial line first), and the fault that
        stopped them, if one did."""
        buf = self._buf
        # Most chunks have no CR, or CRs only in CRLF pairs, and the held partial line no CR at its
        # end waiting for an LF: then lines end at LF (CRLF made LF first) and one C-level split
        # finds them all.
        if self.fast and not final and self._scanned == len(buf):
            text, passes = data, 2  # the CR count and the split
            crs = data.count(b"\r")
            if crs and data.count(b"\r\n") == crs:  # (a CR at the end pairs with nothing)
                text, passes = data.replace(b"\r\n", b"\n"), 4
            if text is not data or not crs:
                split = text.split(b"\n")
                tail = split.pop()
                if buf and split:
                    split[0] = bytes(buf) + split[0]
                held = len(tail) if split else len(buf) + len(tail)
                if held <= self._max_line and (not split or max(map(len, split)) <= self._max_line):
                    self.work += passes * len(data)
                    if split:
                        buf.clear()
                    buf += tail
                    self._scanned = len(buf)
                    return split, None
            # a lone CR, or a line past the limit: the general loop, which says where
        buf += data
        lines: list[bytes] = []
        start, search = 0, self._scanned
        n = len(buf)
        lf = -2  # where the next LF is; -1: none before n; -2: not looked for yet
        while True:
            if lf != -1 and lf < search:
                lf = buf.find(b"\n", search)
                self.work += (lf + 1 if lf >= 0 else n) - search
            stop = lf if lf >= 0 else n
            cr = buf.find(b"\r", search, stop)
            self.work += (cr + 1 if cr >= 0 else stop) - search
            if cr >= 0:
                if cr + 1 == n and not final:
                    search = cr  # a CR at the end may be the first half of CRLF
                    break
                end, nxt = cr, cr + 2 if cr + 1 < n and buf[cr + 1] == 0x0A else cr + 1
            elif lf >= 0:
                end, nxt = lf, lf + 1
            else:
                search = n
                break
            if end - start > self._max_line:
                return lines, too_long("one line", self._max_line)
            lines.append(bytes(buf[start:end]))
            start = search = nxt
        if search - start > self._max_line:
            return lines, too_long("one line", self._max_line)
        del buf[:start]
        self._scanned = search - start
        if final and buf:
            lines.append(bytes(buf))
            buf.clear()
            self._scanned = 0
            self._unterminated = True
        return lines, None


class SSEFramer(_LineFramer):
    """The limit bounds each event's data exactly; a line may be a field name longer than that."""

    _slack = len(b"retry: ")

    def __init__(self, max_bytes: int) -> None:
        super().__init__(max_bytes)
        self._data: list[bytes] = []
        self._size = 0

    def feed(self, data: bytes, final: bool = False) -> list[Payload]:
        out: list[Payload] = []
        lines, fault = self._lines(data, final)
        fast = self.fast
        for line in lines:
            if not fast:
                value = self._field(line, out)
            # The two lines nearly every event is, first and unstripped: an empty line (nothing to
            # strip), and one starting "data:" (the field is "data" only if the line starts so, and
            # nothing stripped starts with "d").
            elif not line:
                if self._data:  # _dispatch, inlined
                    raw = b"\n".join(self._data)
                    self._data = []
                    self._size = 0
                    if raw.strip():
                        try:
                            out.append(raw.decode("utf-8"))
                        except UnicodeDecodeError:
                            out.append(decode_utf8(raw))
                continue
            elif line.startswith(b"data:"):
                value = line[6:] if line[5:6] == b" " else line[5:]
            else:
                value = self._field(line, out)
            if value is None:
                continue
            self._size += len(value) + (1 if self._data else 0)  # the joining LF counts too
            if self._size > self._max:
                out.append(too_long("one event", self._max))
                return out
            self._data.append(value)
        if fault is not None:
            out.append(fault)
            return out
        if final:
            before = len(out)
            self._dispatch(out)  # an event with no blank line after it
            self.cut = len(out) > before
        return out

    def _field(self, line: bytes, out: list[Payload]) -> bytes | None:
        """The value of a ``data`` line; None for any other line (a blank one dispatches)."""
        line = line.lstrip(b" \t")  # a stray space before "data:" is seen in the wild
        if line.startswith(BOM):  # streams glued together each keep their BOM
            line = line[3:].lstrip(b" \t")
        if not line:
            self._dispatch(out)
            return None
        if line[:1] == b":":
            return None
        field, _, value = line.partition(b":")
        if field != b"data":
            return None
        return value[1:] if value[:1] == b" " else value

    def _dispatch(self, out: list[Payload]) -> None:
        if self._data:
            data = b"\n".join(self._data)
            self._data = []
            self._size = 0
            if data.strip():  # empty data is not an event (SSE spec: the buffer is empty)
                out.append(decode_utf8(data))

    def close(self) -> list[Payload]:
        return self.feed(b"", final=True)


class NDJSONFramer(_LineFramer):
    def feed(self, data: bytes, final: bool = False) -> list[Payload]:
        out: list[Payload] = []
        lines, fault = self._lines(data, final)
        for line in lines:
            if line.strip():
                out.append(decode_utf8(line))
                self.cut = self._unterminated
        if fault is not None:
            out.append(fault)
        return out

    def close(self) -> list[Payload]:
        return self.feed(b"", final=True)


# Bytes that are not UTF-8 are decoded to lone surrogates U+DC80..U+DCFF (surrogateescape), so the
# element they are in can be reported and skipped while the framing around it stays readable.
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
_BLANKS = re.compile(r"[ \t\r\n]*")


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogateescape"))


_JUNK_QUIET = re.compile(r'[^",\[\]{}]*')
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

    def __init__(self, max_bytes: int, max_depth: int = 256) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        self._max = max_bytes
        self._max_depth = max_depth
        self._element: list[str] = []
        self._scanner: Scanner | None = None
        self._junk: _Junk | None = None
        self._size = 0
        self._expect = "["  # "[", then "value" or "]", then "," or "]", then "end"
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
                end = self._junk.end(text, pos)
                stop = len(text) if end is None else end
                if not self._hold(text[pos:stop], out):
                    return out
                pos = stop
                if end is None:
                    break
                self._emit(out)
                self._expect, pos = ("value" if text[pos] == "," else "end"), pos + 1
                continue
            if self._scanner is not None:
                try:
                    end = self._scanner.feed(text, pos)
                except LimitExceeded as exc:
                    out.append(Fault(exc.detail, skippable=False, limit=True))
                    return out
                stop = len(text) if end is None else end
                if not self._hold(text[pos:stop], out):
                    return out
                pos = stop
                if end is None:
                    break
                self._emit(out)
                self._expect = ","
                continue
            pos = _BLANKS.match(text, pos).end()  # type: ignore[union-attr]  # may match nothing
            if pos >= len(text):
                break
            ch = text[pos]
            if self._expect == "[" and ch == "[":
                self._expect, pos = "value", pos + 1
            elif self._expect in ("value", ",") and ch == "]":
                self._expect, pos = "end", pos + 1
            elif self._expect == "," and ch == ",":
                self._expect, pos = "value", pos + 1
            elif self._expect == "value" and ch in "{[":
                self._scanner = Scanner(self._max_depth)
            elif self._expect in ("value", ","):
                self._junk = _Junk()
            else:
                shown = ch.encode("utf-8", "surrogateescape")
                out.append(Fault(f"unexpected {shown!r} in a JSON-array stream", skippable=False))
                return out
        if final and (self._element or self._junk is not None):
            # A stream cut inside an element: pass the partial text on; the reassembler reports it.
            self._emit(out)
            self.cut = True
        return out

    def _hold(self, piece: str, out: list[Payload]) -> bool:
        """Take ``piece`` of the element being read; False (with the fault) past the size limit."""
        self._size += _utf8_size(piece)
        if self._size > self._max:
            out.append(too_long("one element", self._max))
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
    return JSONArrayFramer(max_bytes, max_depth)
