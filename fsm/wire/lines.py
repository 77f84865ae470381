"""Line framings: SSE and NDJSON, read from bytes cut anywhere (see fsm/wire/framing.py).

A chunk with no lone CR (nearly all of them) is split into lines at C speed, the NDJSON framer
decodes a chunk's lines in one pass, and the SSE framer reads a run of the plainest events
(``data:`` then an empty line, each ``event:`` line before its data or none) in bulk;
``_LineFramer.fast = False`` keeps only the general loops, which the tests compare the shortcuts
with, output for output and fault for fault.
"""

from __future__ import annotations

from contextlib import suppress
from itertools import repeat
from operator import itemgetter
from typing import Final

from fsm.wire.detect import BOM, SSE_FIELDS
from fsm.wire.faults import Fault, Payload, decode_utf8, too_long


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

    def holding(self) -> bool:
        """Whether bytes of an event not yet ended are held (a line without its end)."""
        return bool(self._buf.strip())

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
                # No line is longer than the held line and the read together: then none is looked at.
                short = len(buf) + len(text) <= self._max_line
                if short or (held <= self._max_line and (not split or max(map(len, split)) <= self._max_line)):
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


_AFTER_PREFIX: Final = itemgetter(slice(6, None))
"""A ``data: `` line's value (sliced in C, as the decode after it runs: no Python step a line)."""


class SSEFramer(_LineFramer):
    """The limit bounds each event's data exactly; a line may be a field name longer than that."""

    _slack = len(b"retry: ")

    def __init__(self, max_bytes: int) -> None:
        super().__init__(max_bytes)
        # The event's data so far, its lines joined by LF as they come (None: no data line yet). A
        # list of the lines cost a pointer each, and their join 80 bytes more (a buffer view each):
        # an event of a million empty data lines, within the limit, took some 90 MB (audit 62).
        self._data: bytearray | None = None
        self._size = 0

    def feed(self, data: bytes, final: bool = False) -> list[Payload]:
        if self.fast and not final and not self._buf and self._data is None and data[-2:] == b"\n\n":
            one = self._one_event(data)
            if one is not None:
                return one
        out: list[Payload] = []
        lines, fault = self._lines(data, final)
        if self.fast and len(lines) >= 4:
            read = 0
            if self._data is not None:  # an event already begun: read up to its empty line one line at a time
                read = lines.index(b"") + 1 if b"" in lines else len(lines)
                if not self._read(lines[:read], out):
                    return out
            begun = self._data is not None
            if not begun and read + 2 < len(lines) and not lines[read + 1] and lines[read + 2][:6] == b"event:":
                # the chunk began after an event's event: line: the rest of that event one line at a
                # time, then the events with their event: lines in bulk
                if not self._read(lines[read : read + 2], out):
                    return out
                read += 2
            if self._data is None and read < len(lines):
                read += self._plain_events(lines, read, out)
            lines = lines[read:]
        if not self._read(lines, out):
            return out
        if fault is not None:
            out.append(fault)
            return out
        if final:
            before = len(out)
            self._dispatch(out)  # an event with no blank line after it
            self.cut = len(out) > before
        return out

    def _one_event(self, data: bytes) -> list[Payload] | None:
        """What the lines of ``data`` give when it is one whole event of the plainest kind, a
        ``data:`` line and an empty line, maybe an ``event:`` line before them, with nothing held
        before it (how most servers send each event, and so what most reads bring): the event's
        data, read without splitting it into lines; None, having read nothing, for anything else
        (a CR, a line or event past the limit, data that is not UTF-8): the line loop reads it."""
        start = 0
        if not data.startswith(b"data:"):
            if not data.startswith(b"event:"):
                return None
            start = data.find(b"\n") + 1
            if start > self._max_line or not data.startswith(b"data:", start):
                return None
        # its data line ends where the event does (the first line end after it is the last but one
        # byte: a read of many events stops at its first line), and no CR ends a line anywhere
        if data.find(b"\n", start) != len(data) - 2 or b"\r" in data:
            return None
        value = data[start + 6 : -2] if data[start + 5] == 32 else data[start + 5 : -2]  # 32: a space
        if len(value) > self._max:
            return None
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            return None
        self.work += 2 * len(data)  # what the split at C speed counts: the CR count and the split
        return [text] if value.strip() else []

    def _read(self, lines: list[bytes], out: list[Payload]) -> bool:
        """Read ``lines`` one at a time; False once an event passed the limit (its fault is out)."""
        fast = self.fast
        for line in lines:
            if not fast:
                value = self._field(line, out)
            # The two lines nearly every event is, first and unstripped: an empty line (nothing to
            # strip), and one starting "data:" (the field is "data" only if the line starts so, and
            # nothing stripped starts with "d").
            elif not line:
                if self._data is not None:  # _dispatch, inlined
                    raw = bytes(self._data)
                    self._data = None
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
            self._size += len(value) + (1 if self._data is not None else 0)  # the joining LF counts too
            if self._size > self._max:
                out.append(too_long("one event", self._max))
                return False
            if self._data is None:
                self._data = bytearray(value)
            else:
                self._data += b"\n"
                self._data += value
        return True

    def _plain_events(self, lines: list[bytes], start: int, out: list[Payload]) -> int:
        """How many of ``lines`` from ``start`` (an event's start) were read in bulk: all the whole
        events when every one is of the plainest kind, a ``data:`` line then an empty line, each
        ``event:`` line before its ``data:`` line or none of them (nearly every stream, whole chunks
        at a time); else none. C-level passes over the lines check the pattern, and the events are
        what the line loop would make of them (an ``event:`` line says nothing it keeps)."""
        period = 3 if lines[start].startswith(b"event:") else 2
        end = start + (len(lines) - start) // period * period
        data = lines[start + period - 2 : end : period]
        if any(lines[start + period - 1 : end : period]):
            return 0
        spaced = all(map(bytes.startswith, data, repeat(b"data: ")))  # nearly every server's way
        if not spaced and not all(map(bytes.startswith, data, repeat(b"data:"))):
            return 0
        if period == 3 and not all(map(bytes.startswith, lines[start:end:3], repeat(b"event:"))):
            return 0
        if not data:
            return 0
        if spaced:
            if max(map(len, data)) - 6 > self._max:
                return 0  # the loop reports the event past the limit, after the ones before it
            # Each value decoded alone: about half what joining them, decoding once and splitting
            # the text again costs, which builds one str of every event (four bytes a character
            # once any holds an emoji) and then scans it again for the cuts (a bad UTF-8 sequence:
            # the one by one way below says which).
            with suppress(UnicodeDecodeError):
                texts = list(map(bytes.decode, map(_AFTER_PREFIX, data)))  # UTF-8, strict: the loop's decode
                if all(map(str.strip, texts)):  # none blank (str.strip finds more blank than bytes.strip)
                    out += texts
                    return end - start
        values = [line[6:] if line[5:6] == b" " else line[5:] for line in data]
        if max(map(len, values)) > self._max:
            return 0  # the loop reports the event past the limit, after the ones before it
        try:
            out += [value.decode("utf-8") for value in values if value.strip()]
        except UnicodeDecodeError:
            return 0  # the loop reports it in its place
        return end - start

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
            if field not in SSE_FIELDS:
                # The SSE spec ignores a field it does not know; here such a line is what was lost (an
                # event without its "data:", junk glued before one, a proxy's bare keep-alive), so it
                # is reported in its place, as a junk line of NDJSON is, rather than dropped unseen.
                out.append(Fault(f"not an SSE field: the line begins {line[:40]!r}", skippable=True))
            return None
        return value[1:] if value[:1] == b" " else value

    def holding(self) -> bool:
        """Whether bytes of an event not yet ended are held (its data lines before the blank line)."""
        return self._data is not None or bool(self._buf.strip())

    def _dispatch(self, out: list[Payload]) -> None:
        if self._data is not None:
            data = bytes(self._data)
            self._data = None
            self._size = 0
            if data.strip():  # empty data is not an event (SSE spec: the buffer is empty)
                out.append(decode_utf8(data))

    def close(self) -> list[Payload]:
        return self.feed(b"", final=True)


class NDJSONFramer(_LineFramer):
    def feed(self, data: bytes, final: bool = False) -> list[Payload]:
        out: list[Payload] = []
        lines, fault = self._lines(data, final)
        with suppress(UnicodeDecodeError):  # all the lines at once; one not UTF-8 sends them one at a time
            out = [line.decode("utf-8") for line in lines if line.strip()] if self.fast else []
        if out:
            self.cut = self._unterminated
        else:
            for line in lines:
                if line.strip():
                    out.append(decode_utf8(line))
                    self.cut = self._unterminated
        if fault is not None:
            out.append(fault)
        return out

    def close(self) -> list[Payload]:
        return self.feed(b"", final=True)
