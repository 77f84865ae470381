"""Sans-I/O framing: bytes in, one JSON payload text per wire event out.

Three framings are read incrementally, with chunk boundaries anywhere (inside a line, a CRLF pair or
a multi-byte character):

* SSE (``text/event-stream``): LF, CR or CRLF line ends; ``data:`` lines joined per event; comment
  lines, ``event:``/``id:``/``retry:`` fields; a stray space before a field name; a last event with
  no blank line after it (flushed by ``close()``). ``[DONE]`` is passed on as :data:`DONE`.
* NDJSON: one payload per line; blank lines skipped.
* JSON array: ``[ {...}, {...} ]`` streamed element by element (Gemini without ``alt=sse``); element
  ends are found with the completeness scanner, so no element is parsed twice.
* AWS event stream (Bedrock ``ConverseStream`` over HTTP): binary messages, unframed by botocore's
  decoder (the optional ``bedrock`` extra) into ``{eventType: body}`` objects.
"""

from __future__ import annotations

import codecs
import enum
import json
from typing import Any, Final

from fsm.engine.scanner import Scanner
from fsm.errors import FramingError, LimitExceeded

DONE: Final = "[DONE]"


class Framing(enum.Enum):
    SSE = "sse"
    NDJSON = "ndjson"
    JSON_ARRAY = "json-array"
    AWS_EVENTSTREAM = "aws-eventstream"


_SSE_STARTS = (b"data:", b"event:", b"id:", b"retry:", b":")


def detect_framing(head: bytes) -> Framing | None:
    """The framing of a stream from its first bytes; None if they are only whitespace so far."""
    if head[:1] == b"\x00":
        return Framing.AWS_EVENTSTREAM  # a binary message starts with its big-endian length
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text:
        return None
    if text[:1] == b"[":
        return Framing.JSON_ARRAY
    if text[:1] == b"{":
        return Framing.NDJSON
    if text.startswith(_SSE_STARTS) or any(p.startswith(text) for p in _SSE_STARTS):
        return Framing.SSE
    raise FramingError(f"input is not SSE, NDJSON or a JSON array (starts with {text[:20]!r})", event=1)


class _LineFramer:
    """Splits bytes into lines on LF, CR or CRLF, holding back a trailing partial line."""

    def __init__(self, max_bytes: int) -> None:
        self._buf = bytearray()
        self._max = max_bytes
        self.events = 0

    def _lines(self, data: bytes, final: bool) -> list[str]:
        self._buf += data
        buf = self._buf
        lines: list[str] = []
        start = 0
        n = len(buf)
        while True:
            lf = buf.find(b"\n", start)
            cr = buf.find(b"\r", start, lf if lf >= 0 else n)
            if cr >= 0:
                if cr + 1 == n and not final:
                    break  # a CR at the end may be the first half of CRLF
                end, nxt = cr, cr + 2 if cr + 1 < n and buf[cr + 1] == 0x0A else cr + 1
            elif lf >= 0:
                end, nxt = lf, lf + 1
            else:
                break
            lines.append(self._decode(bytes(buf[start:end])))
            start = nxt
        del buf[:start]
        if final and buf:
            lines.append(self._decode(bytes(buf)))
            buf.clear()
        if len(buf) > self._max:
            raise LimitExceeded(f"one line is longer than {self._max} bytes", event=self.events + 1, rule="limits")
        return lines

    def _decode(self, raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FramingError(f"not UTF-8: {exc}", event=self.events + 1) from None


class SSEFramer(_LineFramer):
    def __init__(self, max_bytes: int) -> None:
        super().__init__(max_bytes)
        self._data: list[str] = []
        self._size = 0

    def feed(self, data: bytes, final: bool = False) -> list[str]:
        out: list[str] = []
        for line in self._lines(data, final):
            line = line.lstrip(" \t\ufeff")  # a stray space before "data:" is seen in the wild
            if not line:
                self._dispatch(out)
                continue
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            if field == "data":
                value = value[1:] if value.startswith(" ") else value
                self._size += len(value)
                if self._size > self._max:
                    raise LimitExceeded(
                        f"one event is longer than {self._max} bytes", event=self.events + 1, rule="limits"
                    )
                self._data.append(value)
        if final:
            self._dispatch(out)
        return out

    def _dispatch(self, out: list[str]) -> None:
        if self._data:
            self.events += 1
            out.append("\n".join(self._data))
            self._data = []
            self._size = 0

    def close(self) -> list[str]:
        return self.feed(b"", final=True)


class NDJSONFramer(_LineFramer):
    def feed(self, data: bytes, final: bool = False) -> list[str]:
        out = []
        for line in self._lines(data, final):
            if line.strip():
                self.events += 1
                out.append(line)
        return out

    def close(self) -> list[str]:
        return self.feed(b"", final=True)


class JSONArrayFramer:
    def __init__(self, max_bytes: int) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._max = max_bytes
        self._pending = ""  # text not yet assigned to an element
        self._element: list[str] = []
        self._scanner: Scanner | None = None
        self._size = 0
        self._expect = "["  # "[", then "value" or "]", then "," or "]", then "end"
        self.events = 0

    def feed(self, data: bytes, final: bool = False) -> list[str]:
        try:
            text = self._pending + self._decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            raise FramingError(f"not UTF-8: {exc}", event=self.events + 1) from None
        self._pending = ""
        out: list[str] = []
        pos = 0
        while pos < len(text):
            if self._scanner is not None:
                end = self._scanner.feed(text, pos)
                stop = len(text) if end is None else end
                self._size += stop - pos
                if self._size > self._max:
                    raise LimitExceeded(
                        f"one element is longer than {self._max} bytes", event=self.events + 1, rule="limits"
                    )
                self._element.append(text[pos:stop])
                pos = stop
                if end is None:
                    break
                self.events += 1
                out.append("".join(self._element))
                self._element, self._scanner, self._size = [], None, 0
                self._expect = ","
                continue
            ch = text[pos]
            if ch in " \t\r\n":
                pos += 1
            elif self._expect == "[" and ch == "[":
                self._expect, pos = "value", pos + 1
            elif self._expect in ("value", ",") and ch == "]":
                self._expect, pos = "end", pos + 1
            elif self._expect == "," and ch == ",":
                self._expect, pos = "value", pos + 1
            elif self._expect == "value" and ch in "{[":
                self._scanner = Scanner()
            else:
                raise FramingError(f"unexpected {ch!r} in a JSON-array stream", event=self.events + 1)
        if final and self._element:
            # A stream cut inside an element: pass the partial text on; the reassembler reports it.
            self.events += 1
            out.append("".join(self._element))
            self._element, self._scanner = [], None
        return out

    def close(self) -> list[str]:
        return self.feed(b"", final=True)


class AWSEventStreamFramer:
    def __init__(self, max_bytes: int) -> None:
        try:
            from botocore.eventstream import EventStreamBuffer
        except ImportError:
            raise FramingError(
                "a binary AWS event stream needs botocore: pip install 'toolcall-fsm[bedrock]'", event=1
            ) from None
        self._buffer: Any = EventStreamBuffer()
        self._max = max_bytes
        self._pending = 0
        self.events = 0

    def feed(self, data: bytes, final: bool = False) -> list[str]:
        from botocore.eventstream import ParserError

        self._buffer.add_data(data)
        self._pending += len(data)
        out: list[str] = []
        try:
            for message in self._buffer:
                self.events += 1
                self._pending -= message.prelude.total_length
                out.append(self._payload(message.headers, message.payload))
        except ParserError as exc:
            raise FramingError(f"not a valid AWS event stream message: {exc}", event=self.events + 1) from None
        if self._pending > self._max:
            raise LimitExceeded(f"one message is longer than {self._max} bytes", event=self.events + 1, rule="limits")
        return out

    def _payload(self, headers: dict[str, Any], payload: bytes) -> str:
        kind = headers.get(":event-type") or headers.get(":exception-type") or "unknown"
        try:
            body = json.loads(payload or b"{}")
        except ValueError as exc:
            raise FramingError(f"{kind} payload is not JSON: {exc}", event=self.events) from None
        return json.dumps({kind: body})

    def close(self) -> list[str]:
        if self._pending:
            # A message cut short: passed on as text that is not JSON, so the reassembler reports
            # the cut (cut-event) and truncates the calls it left open.
            self.events += 1
            return [f"<{self._pending} bytes of an unfinished event-stream message>"]
        return []


Framer = SSEFramer | NDJSONFramer | JSONArrayFramer | AWSEventStreamFramer


def make_framer(framing: Framing, max_bytes: int) -> Framer:
    if framing is Framing.SSE:
        return SSEFramer(max_bytes)
    if framing is Framing.NDJSON:
        return NDJSONFramer(max_bytes)
    if framing is Framing.AWS_EVENTSTREAM:
        return AWSEventStreamFramer(max_bytes)
    return JSONArrayFramer(max_bytes)
