"""Which framing a byte stream uses, told from its first bytes.

A BOM and the whitespace before the first event are dropped as they arrive, never held. The first
line nearly always tells at once: ``{`` is NDJSON, ``[`` a JSON array, an SSE field (``data:``) SSE,
a zero byte an AWS event stream; a line that is ``{`` alone, once it ends, a pretty-printed JSON
document (an HTTP error body, or a response saved whole), read as the values it holds, unless the
next line opens another object (``{``), which no document can hold there: then NDJSON whose first
line is junk. A first line
that tells nothing, a proxy's ``keep-alive``, an SSE comment such as ``: ping``, or a line of other
whitespace, is looked past: the first later line that tells decides (``{`` NDJSON, where the skipped
line is then a bad event of its own; an SSE field SSE). Undecided at the end of the stream, or after
``max_bytes``, a stream that began with a comment is SSE (comments are SSE's own) and any other is
no framing (:class:`FramingError`).

Only the first ``max_bytes`` bytes are ever looked at (the line that tells must begin within them;
its first few bytes, which tell, may run past them), each byte once and never copied with the line
it is in, and no answer is given on a prefix that more bytes could change, so what is held is
bounded, the work is linear, and the answer does not depend on how the bytes were chunked.
"""

from __future__ import annotations

import enum
import re
from typing import Final

from fsm.errors import FramingError

BOM: Final = b"\xef\xbb\xbf"


class Framing(enum.Enum):
    SSE = "sse"
    NDJSON = "ndjson"
    JSON_ARRAY = "json-array"
    JSON_DOCUMENT = "json-document"
    AWS_EVENTSTREAM = "aws-eventstream"


FRAMING_NAMES: Final = {
    Framing.SSE: "SSE",
    Framing.NDJSON: "NDJSON",
    Framing.JSON_ARRAY: "a JSON array",
    Framing.JSON_DOCUMENT: "a JSON document",
    Framing.AWS_EVENTSTREAM: "an AWS event stream",
}
"""Each framing as a message names it."""

# Built from the enum itself: a framing added without a name fails at import, and the message that
# says what input is not names every framing the detector reads.
_NAMED: Final = [FRAMING_NAMES[framing] for framing in Framing]
NONE_OF: Final = f"{', '.join(_NAMED[:-1])} or {_NAMED[-1]}"
"""The framings, listed as the ``not-a-stream`` message says the input is none of them."""


_SSE_STARTS = (b"data:", b"event:", b"id:", b"retry:", b":")
SSE_FIELDS: Final = (b"data", b"event", b"id", b"retry")
"""The fields SSE defines (a line of any other field carries nothing SSE reads)."""
_LINE_END = re.compile(rb"[\r\n]")
_LEAD = re.compile(rb"[ \t]*")
_NOT_BLANK = re.compile(rb"[^ \t\r\n]")
_TELL = 7  # bytes of a line's text that tell all it can: "retry:" and one more to quote


class _Says(enum.Enum):
    WAIT = "wait"  # the line has not ended and may still tell
    COMMENT = "comment"
    NOTHING = "nothing"  # a whole line that tells nothing (junk, or blank)


def _line_says(text: bytes, *, ended: bool, first: bool, final: bool = False) -> Framing | _Says:
    """What one line (leading blanks stripped; empty if it is blank) says about the framing."""
    if text[:1] == b"{":
        # A line that is "{" alone opens a pretty-printed document (an HTTP error body, a response
        # saved whole), as every common pretty-printer writes one; an event of NDJSON is one line.
        if text == b"{":
            return Framing.JSON_DOCUMENT if ended or final else _Says.WAIT  # final: a document cut short
        return Framing.NDJSON
    if text[:1] == b"[":
        return Framing.JSON_ARRAY if first else _Says.NOTHING  # no array follows a junk line
    if text[:1] == b":":
        return _Says.COMMENT
    if text.startswith(_SSE_STARTS) or (ended and text in SSE_FIELDS):
        return Framing.SSE  # a field line with no colon: "data" alone is an empty data line
    return _Says.NOTHING if ended else _Says.WAIT


class Detector:
    """Feed it the stream's first bytes until it names the framing (see the module docstring)."""

    def __init__(self, max_bytes: int) -> None:
        self._held = bytearray()
        self._at_start = True  # no byte seen yet, so a BOM may still come
        self._max = max_bytes
        self._line = 0  # where the first line not yet looked past starts
        self._scan = 0  # how far that line's leading blanks are known to run
        self._text: int | None = None  # where its text (after the blanks) starts, once known
        self._searched = 0  # how far that line is known to hold no line end
        self._first: bytes | None = None  # the first line's first _TELL bytes
        self._comment_first = False
        self._after = 0  # past the line that is "{" alone: how far only blanks are known to run
        self.work = 0
        """Bytes looked at (tests check that this stays linear in the input)."""

    @property
    def held(self) -> bytes:
        return bytes(self._held)

    def holding(self) -> bool:
        """Whether bytes are held (the start of the first event, the framing not told yet)."""
        return bool(self._held)

    def forget(self) -> bytearray:
        """What was held, now let go (not copied: it may be the whole window): the bytes told no
        framing and are read no further."""
        held, self._held = self._held, bytearray()
        return held

    def feed(self, data: bytes, final: bool = False) -> tuple[Framing, bytes] | None:
        """The framing and the bytes its framer is to read first; None while the bytes do not tell
        yet. Raises :class:`FramingError` for a stream that is no framing."""
        self.work += len(data)
        if self._at_start:
            data = bytes(self._held) + data  # at most two bytes of a BOM were held
            if len(data) < len(BOM) and BOM.startswith(data) and not final:
                self._held = bytearray(data)
                return None
            data, self._held, self._at_start = data.removeprefix(BOM), bytearray(), False
        if not self._held:
            data = data.lstrip(b" \t\r\n")  # whitespace before the first event is dropped, not held
            if not data:
                return None
        self._held += data
        framing = self._decide(final)
        if framing is None:
            return None
        head, self._held = bytes(self._held), bytearray()
        return framing, head

    def _document_or_lines(self, after: int, final: bool) -> Framing | None:
        """The first line was ``{`` alone: a pretty-printed document goes on with a key or its close,
        so a next line that opens another object is NDJSON whose first line is junk (a bad event of its
        own), as any other junk line before NDJSON is. Undecided until a byte past the blanks comes;
        at the stream's end or past the window, a document (one cut short is its framer's to say)."""
        held = self._held
        start = max(after, self._after)
        found = _NOT_BLANK.search(held, start)
        self.work += (found.start() if found else len(held)) - start
        if found is None:
            self._after = len(held)
            return Framing.JSON_DOCUMENT if final or len(held) >= self._max else None
        return Framing.NDJSON if held[found.start()] == ord("{") else Framing.JSON_DOCUMENT

    def _decide(self, final: bool) -> Framing | None:
        held, size = self._held, len(self._held)
        if held[:1] == b"\x00":
            return Framing.AWS_EVENTSTREAM  # a binary message starts with its big-endian length
        pending = False  # a line begun in the window whose first bytes may still tell
        while self._line < min(size, self._max):
            start = self._line
            if self._text is None:  # its leading blanks, each looked at once
                self._scan = _LEAD.match(held, self._scan).end()  # type: ignore[union-attr]  # may match nothing
                self.work += self._scan - self._searched
                self._searched = self._scan
                if self._scan >= min(size, self._max):
                    pending = self._scan == size and size < self._max
                    break
                self._text = self._scan
            text_at = self._text
            # A line's first _TELL bytes tell all it can; those of one begun in the window are read
            # even past it, and only as far as its end is looked for beyond them.
            reach = min(size, max(self._max, text_at + _TELL))
            found = _LINE_END.search(held, self._searched, reach)
            end = found.start() if found else reach
            self.work += end - self._searched
            head = bytes(held[text_at : min(end, text_at + _TELL)])  # never more: no copy of a long line
            ended = found is not None
            says = _line_says(head, ended=ended, first=start == 0, final=final) if head.strip() else _Says.NOTHING
            if says is Framing.JSON_DOCUMENT and ended:
                return self._document_or_lines(end + 1, final)
            if isinstance(says, Framing):
                return says
            if start == 0:
                self._comment_first, self._first = head[:1] == b":", head
            if not ended:
                self._searched = reach
                pending = says is _Says.WAIT and len(head) < _TELL
                break
            self._line = self._scan = self._searched = end + 1
            self._text = None
        if not final and (size <= self._max or pending):
            return None
        if self._comment_first:
            return Framing.SSE
        first = self._first or b""
        # Quote only up to the first byte no framing could start with, so the message does not depend
        # on how many bytes happened to arrive in the first read.
        known = max(_shared_prefix(first, p) for p in (*_SSE_STARTS, *SSE_FIELDS))
        raise FramingError(f"input is not {NONE_OF} (starts with {first[: known + 1]!r})", event=1)


def cut_before_telling(held: bytes) -> bool:
    """Did the stream end while its bytes could still have begun a framing (half a BOM, ``da`` of
    ``data:``)? Such a stream was cut; any other that no framing reads is not a stream at all."""
    text = held.lstrip(b" \t\r\n")
    starts = (BOM, *_SSE_STARTS, *SSE_FIELDS)
    return bool(text) and any(len(text) < len(start) and start.startswith(text) for start in starts)


def _shared_prefix(a: bytes, b: bytes) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def detect_framing(head: bytes, *, final: bool = False) -> Framing | None:
    """The framing of a stream from its first bytes, all at hand; None while they do not tell yet."""
    told = Detector(max(len(head), 1)).feed(head, final)
    return told[0] if told is not None else None
