"""One tool call's slot: the model the slot machine (specs/slot.toml) drives.

Every method marked ``@guard`` or ``@action`` is named in the spec, and nothing else is: the spec
agreement test holds the two lists equal. Guards are pure; actions are the only code that changes a
slot's argument text or status, and they run only as part of a transition (fsm/engine/machine.py),
but for the registry's direct ways through the commonest transitions (``store_first``,
``store_waiting``, ``store_whole``, ``store_run``, ``end_closed``): each does what its transition's
prepare step, guards and action would, and a test holds it to firing the trigger.

One room: every guard and action of the spec is a method of this one class (the agreement test
reads them from it), and the text they keep (buffer, scan, emitted part, a pending surrogate half)
is one state that only they change; split, it would be one class in several files.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from fsm.engine.roles import action, guard
from fsm.engine.scanner import Scanner, StartScanner, closed_scanner, flat_match
from fsm.errors import LimitExceeded
from fsm.jsontext import (
    NotJSON,
    flat_object,
    is_flat_object,
    mend_surrogates,
    nesting_exceeds,
    parse_general,
    parse_strict,
)
from fsm.positional import unfrozen
from fsm.results import ArgumentsDelta, CallNamed, CallStatus, ToolCall, build_arguments_delta, build_tool_call

if TYPE_CHECKING:
    from fsm.engine.ledger import Ledger

_WHITESPACE = frozenset(b" \t\r\n")
_COMPLETE = CallStatus.COMPLETE
_DeltaBeingBuilt = unfrozen(ArgumentsDelta)


class _Reread:
    """What Slot._call holds, in place of a call, once a field past the common ones was written
    (Slot.reread): falsy, as None is, for no current call."""

    __slots__ = ()

    def __bool__(self) -> Literal[False]:  # (so that a type checker narrows ``if call`` to a call)
        return False


_REREAD = _Reread()
_CATCH_UP_BYTES = 16384
_UNKEPT_WHITESPACE = 64
"""The most whitespace around a call's text that _bounds walks again at each read, unkept."""
_OPENS_CONTAINER = re.compile(r"[ \t\r\n]*[{\[]")


_WHOLE_CHARS = 1 << 16
"""Longer snapshot text is not parsed to close its scan (_whole_object): its parse, kept until the
call ends, must not hold much; the scanner reads it, and the end parses it."""


def _whole_object(text: str, max_depth: int) -> tuple[dict[str, Any], list[str]] | None:
    """What parse_arguments would take from ``text`` when it is one JSON object with nothing
    around it, within ``max_depth`` and _WHOLE_CHARS: its value and the keys given twice, read as
    parse_arguments reads them (parse_general); None for any other text, left to the scanner
    (test_a_snapshot_that_is_a_whole_object_skips_its_scan_alike)."""
    if len(text) > _WHOLE_CHARS or text[:1] != "{" or text[-1:] != "}" or nesting_exceeds(text, max_depth):
        return None
    try:
        found, duplicates = parse_general(text)
    except ValueError:  # not JSON, strictly (NotJSON, json.JSONDecodeError and the others are ValueErrors)
        return None
    except RecursionError:  # read deep in the caller's stack: the scan reads it, and the end says why it cannot
        return None
    return (found, duplicates) if type(found) is dict else None


def text_digest(data: bytes | memoryview) -> bytes:
    """The key under which the registry indexes a call's complete text."""
    import hashlib  # loaded by the first lane that holds a second call (~2.5 ms of OpenSSL at start-up otherwise)

    return hashlib.blake2b(data, digest_size=16).digest()


class Slot:
    """The state of one tool call. ``state`` is written only by the slot machine (and store_whole,
    for the transition it takes in the machine's place)."""

    # Fields every call writes are slots. The rest keep their default on nearly every call, so
    # they are class attributes that a call overrides in its own __dict__, which costs memory only
    # once it is written: the slot object is 192 bytes instead of 272, and a gateway holds one per
    # call in flight (tests/test_per_call_paths.py keeps the common streams from writing them).
    # But _high, read by every fragment stored and every end: a class attribute read through an
    # instance is not specialized (Python 3.11), and cost a fragment twenty times a slot's read.
    __slots__ = (
        "__dict__",
        "_buf",
        "_call",
        "_emitted",
        "_high",
        "_length",
        "_text",
        "_unscanned",
        "arguments",
        "id",
        "index",
        "lane",
        "ledger",
        "name",
        "ordinal",
        "scanner",
        "state",
        "status",
        "wire_id",
    )

    _blank = False
    """The held text is whitespace only, held back: alone it becomes {}."""
    _diverged = False
    """A snapshot replaced text that had already gone out."""
    revision = 0
    """How often the held text was replaced rather than appended to."""
    _bounded: tuple[int, int, int, int] | None = None
    """The held text's length and revision when _bounds last kept what it found, and where the text
    less its surrounding whitespace then started and ended. Kept once that whitespace is long."""
    _past_close = False
    """The held text, a snapshot, goes on past where its value closed: the scanner did not read it all."""
    server = False
    signature: str | None = None
    item: dict[str, Any] | None = None
    """A built-in client item as last sent, for replay."""
    reply_id: str | None = None
    """The late wire id the next request answers the call by (see ToolCall.reply_id)."""
    type = "function"
    freeform = False
    """Its input is freeform text (the spec's ``text`` kind): no scanner, no JSON."""

    def __init__(
        self,
        ordinal: int,
        lane: int | tuple[str, int | str],  # the registry's Lane
        index: int | None,
        wire_id: str | None,
        call_id: str,
        name: str | None,
        ledger: Ledger,
        scanner: Scanner,
        initial: str,
        server: bool = False,
        call_type: str = "function",
        freeform: bool = False,
    ) -> None:
        self.state = initial
        self.ordinal = ordinal
        self.lane = lane
        self.index = index
        self.wire_id = wire_id
        self.id = call_id
        self.name = name
        self.ledger = ledger
        self.scanner = scanner  # the shared StartScanner: a call scans with one of its own (scan_fragment)
        # The held text as UTF-8: the first fragment's bytes as they are (a whole call's text is
        # often one fragment), then one growing buffer, about a byte a character, where a list of
        # fragments would cost a str object (~50 bytes) per fragment. Decoded only when needed.
        self._buf: bytes | bytearray = b""
        self._text: str | None = ""
        self._length = 0
        self._emitted = 0  # how much of the held text went out as append-safe deltas
        # A high surrogate that ended the last fragment, waiting for the low half that may start the
        # next (rule text-is-unicode). Not in the buffer, not counted, not emitted yet.
        self._high = ""
        self.arguments: Any = None
        self.status: CallStatus | None = None
        self._unscanned: int | None = None  # where held text the scanner has not seen yet starts (bytes)
        # The call made at its end; None before, while the call wrote none of the rarely written
        # fields to_call reads (the commonest call: it reads none of them); _REREAD once one was,
        # or once a snapshot replaced text that had gone out (_diverged): Registry._ended reads
        # neither ``server`` nor ``_diverged`` (class attributes, a slow read) of a call whose is None.
        self._call: ToolCall | _Reread | None = None
        if server:
            self.server = True
            self._call = _REREAD
        if call_type != "function":
            self.type = call_type
            self._call = _REREAD
        if freeform:
            self.freeform = True
            self._call = _REREAD

    # -- reading ------------------------------------------------------------------------------

    def covered(self, transition: str) -> None:
        self.ledger.transitions[transition] += 1

    @property
    def length(self) -> int:
        return self._length

    def text(self) -> str:
        if self._text is None:
            self.ledger.work += self._length
            self._text = self._buf.decode("utf-8", "surrogatepass")
        return self._text

    def _bounds(self) -> tuple[int, int]:
        """Where the held text starts and ends once surrounding whitespace is left out. Only the
        bytes held since the bounds were last kept (_bounded) are read: whitespace sent after a
        closed value, a byte an event, was walked whole at each digest of the call (quadratic)."""
        buf, size = self._buf, len(self._buf)
        read, start, end = 0, 0, 0  # the bounds of the text held up to ``read`` (none: all read anew)
        known = self._bounded
        if known is not None and known[1] == self.revision and known[0] <= size:
            read, _, start, end = known  # the same text since (not replaced), maybe more after it
            if read == size:
                return start, end
        if start == read:  # whitespace alone so far (or nothing)
            while start < size and buf[start] in _WHITESPACE:
                start += 1
            end = size
            while end > start and buf[end - 1] in _WHITESPACE:
                end -= 1
        else:
            top = size
            while top > read and buf[top - 1] in _WHITESPACE:
                top -= 1
            if top > read:
                end = top
        if known is not None or size - end + start > _UNKEPT_WHITESPACE:
            self._bounded = (size, self.revision, start, end)
        return start, end

    def digest(self) -> bytes:
        """A digest of the held text without surrounding whitespace: it keys the registry's resend
        index without keeping a second copy of the text (the registry keeps it while it holds)."""
        start, end = self._bounds()
        self.ledger.work += end - start
        return text_digest(memoryview(self._buf)[start:end])

    def holds(self, stripped: bytes) -> bool:
        """Does the call hold exactly ``stripped`` (UTF-8, no surrounding whitespace)?"""
        start, end = self._bounds()
        return end - start == len(stripped) and memoryview(self._buf)[start:end] == stripped

    def first_character(self) -> str:
        """The first character of the held text ("" when there is none); whitespace counts. Read
        from its own bytes, not by decoding the whole text: a read of many events asks it once per
        read (Registry.gather), and a long text whose first character is not ASCII would be
        decoded again each time."""
        buf = self._buf
        if not buf:
            return ""
        lead = buf[0]
        if lead < 0x80:
            return chr(lead)
        size = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4  # the character's UTF-8 bytes
        return bytes(buf[:size]).decode("utf-8", "surrogatepass")

    def last_significant(self) -> str:
        """The last character of the held text that is not whitespace ("" when there is none)."""
        _, end = self._bounds()
        return chr(self._buf[end - 1]) if end else ""

    @property
    def unfinished(self) -> bool:
        state = self.state
        return state == "accumulating" or state == "opened" or state == "receiving"

    @property
    def finished(self) -> bool:
        return self.status is not None

    def to_call(self) -> ToolCall:
        """The finished call. The status is set once, by the transition into a terminal state, and
        text and arguments never change after it; only metadata can still arrive (a late name, id,
        signature or item), so a call made earlier is reused until such metadata arrives: every
        write of it, and of any rarely written field this reads, calls reread(), which drops the
        call (close() reads every call again, and comparing that metadata each time cost a tenth
        of a whole call's work). Nearly every call is first made as it ends, in line by
        Registry._ended, with the class defaults of the fields a call that never wrote one holds
        (test_a_call_made_at_its_end_is_what_its_slot_makes_at_the_close); this makes the rest."""
        call = self._call
        if call:
            return call
        assert self.status is not None, "only a finished slot is a call"  # a call made was one
        held = self._text
        if held is None:  # not decoded yet
            held = self.text()
        ledger = self.ledger
        if ledger.output_indexed:
            output_index = self.index if self.index is not None else ledger.place_of(self.wire_id)
        else:
            output_index = None
        freeform = self.freeform
        self._call = call = build_tool_call(  # by position (index, id, wire_id, name, arguments, arguments_json, ...)
            self.ordinal,
            self.id,
            self.wire_id,
            self.name,
            self.arguments,
            None if freeform else held,
            self.status,
            self.signature,
            self.type,
            held if freeform else None,
            self.item,
            output_index,
            self.reply_id,
        )
        return call

    def reread(self) -> None:
        """A field to_call reads past the common ones was written (a signature, an item, a reply
        id), or metadata changed after the call was made (a late name or id): to_call makes the
        call anew, reading every field. Every such write outside __init__ calls this."""
        self._call = _REREAD

    def name_late(self, name: str) -> None:
        """The name arrived after the call opened without one; re-emitted deltas need it before
        any argument text, so it is an output of its own."""
        self.name = name
        self.reread()
        if not self.server:
            self.ledger.emit(CallNamed(self.ordinal, name))

    # -- prepare (run once per trigger, before guards) ------------------------------------------

    @action
    def scan_fragment(self, text: str) -> tuple[str, str]:
        """Returns (the part of ``text`` that belongs here, the rest that starts another value).

        A fragment that cannot close the value or pass the depth limit is not scanned yet: it
        is scanned later, with the next fragment that can (or when a decision needs the
        scanner), straight from the held bytes, so waiting scans nothing twice. A fragment
        without brackets can never (Scanner.may_wait); one with brackets cannot while, counted
        with those waiting, they stay within the depth last scanned (Scanner.defer). So most
        fragments go by without a scan of their own."""
        # _check_room inlined: this runs for nearly every fragment of a stream.
        ledger = self.ledger
        if self._length + len(text) > ledger.max_argument_chars:
            self._check_size(self._length + len(text))
        if ledger.held_bytes + len(text) * 4 > ledger.max_held_bytes:  # at most 4 bytes a character
            self._check_room(self._length + len(text), _utf8_length(text))
        scanner = self.scanner
        if (
            not self._length
            and self._unscanned is None
            and scanner.state == scanner._c.initial
            and is_flat_object(text)
        ):
            # A whole flat object as the call's first text (a whole call in one chunk): the scan
            # would end closed at its last character, where the scanners of closed values are.
            self.scanner = closed_scanner(scanner.max_depth)
            return text, ""
        if not self._length and type(scanner) is StartScanner:  # only a call with no text yet has it
            scanner = self.scanner = Scanner(scanner.max_depth)
        if scanner.may_wait(text):
            if self._unscanned is None:
                self._unscanned = len(self._buf)  # store_fragment puts the text there next
            return text, ""
        start = self._unscanned
        if start is not None and len(self._buf) - start <= _CATCH_UP_BYTES:
            # The waiting text and this fragment in one scan: the waiting part cannot close the
            # value (Scanner.may_wait said so of each piece), so where the value closes is in ``text``.
            self._unscanned = None
            waiting = self._buf[start:].decode("utf-8", "surrogatepass")
            try:
                end = scanner.feed(waiting + text)
            except LimitExceeded:
                self._unscanned = start  # refused, the scan is undone: the held text still waits
                raise
            if end is not None:
                end -= len(waiting)
        else:
            self._catch_up()
            end = scanner.feed(text)
        if end is None or end == len(text) or not text[end:].strip():
            return text, ""
        return text[:end], text[end:]

    def gatherable(self) -> bool:
        """Does every ``append`` of fragment text to this call, while nothing else happens to it,
        take the hot transition (accumulating to accumulating) with the text stored as it came and
        all of it sent out, as long as its scan waits and the limits hold? Then such fragments
        may be stored together (Registry.gather, store_run)."""
        return (
            self.state == "accumulating"
            and not self._high
            and not self._blank
            and not self.server
            and not self.ledger.withhold
            and self._emitted == self._length
            and type(self.scanner) is not StartScanner
        )

    def store_waiting(self, text: str, label: str, closing: tuple[str, str], *, scan_now: bool = False) -> str:
        """The transition ``append`` takes from accumulating for one fragment, without the machine's
        dispatch when what it would do is known: what scan_fragment, the guard value_complete and
        store_fragment would do with it, for a fragment that needs none of their other branches.
        The hot one (``label``, staying) when the scan waits or, run now (_scan_now), leaves the
        value open; ``closing`` (its label and destination, value_closed) when the scan closes the
        value with nothing but whitespace after it. Returns the label taken: "" for any other
        fragment (empty, a limit, a surrogate, whitespace held back, text after the value closed,
        the depth limit passed), with nothing changed but what scan_fragment would do first (a
        long waiting scan caught up): the caller fires ``append``. ``scan_now``: the caller asked
        Scanner.may_wait of ``text`` already and was told no (it changed nothing then), so the
        scan runs without the question asked again."""
        ledger = self.ledger
        quiet = ledger.withhold or self.server  # nothing goes out as it arrives (see store_fragment)
        if (
            not text
            or self._high
            or type(self.scanner) is StartScanner
            or (not quiet and self._emitted != self._length)  # whitespace held back (_blank) is unsent text too
        ):
            return ""
        try:
            data = text.encode()  # UTF-8 (the default: no codec name read)
        except UnicodeEncodeError:
            return ""
        length = self._length + len(text)
        if length > ledger.max_argument_chars or ledger.held_bytes + len(data) > ledger.max_held_bytes:
            return ""
        buf = self._buf
        if not scan_now and self.scanner.may_wait(text):  # when it says yes it counts the waiting brackets
            if self._unscanned is None:
                self._unscanned = len(buf)
        else:
            still_open = self._scan_now(text)
            if still_open is None:
                return ""
            if not still_open:
                label, self.state = closing
        if type(buf) is bytearray:
            buf += data
        else:
            self._append(data)
        ledger.held_bytes += len(data)
        self._length = length
        self._text = None
        ledger.transitions[label] += 1
        if not quiet:
            self._emitted = length
            ledger.outputs.append(build_arguments_delta(self.ordinal, text))
        return label

    def store_first(self, text: str, opening: tuple[str, str], closing: tuple[str, str], closed: Scanner) -> str:
        """A JSON call's first text (``append`` from opened) without the machine's dispatch, when
        what it would do is known: what scan_fragment, the guard value_complete and store_fragment
        would do with it. ``opening`` (to accumulating) while the value is still open after it,
        ``closing`` (to value_closed) when it closes with nothing but whitespace after it; each
        given as its label and destination. Returns the label taken: "", with nothing changed,
        for any other text (empty or whitespace, a limit, a surrogate, the depth limit passed, a
        value that closed with more after it): the caller fires ``append``. A whole flat object
        (closes_flat: ``{}``, ``{"city": "Paris"}``, the first text of most short calls) ends in
        ``closed``, the shared closed scanner of the call's depth limit, without a scanner of its
        own made and fed: where the caller's _remember (scan_over) would put the scan anyway."""
        ledger = self.ledger
        if not text or text.isspace():
            return ""  # whitespace first is held back unsent (store_fragment's _blank)
        try:
            data = text.encode()  # UTF-8 (the default: no codec name read)
        except UnicodeEncodeError:
            return ""
        if len(text) > ledger.max_argument_chars or ledger.held_bytes + len(data) > ledger.max_held_bytes:
            return ""
        if flat_match(text) is not None:  # closes_flat: a scan would close it at its last character
            scanner = closed
            label, dest = closing
        elif (scanner := Scanner(self.scanner.max_depth)).may_wait(text):  # its own, in place of the shared start
            self._unscanned = 0
            label, dest = opening
        else:
            try:
                end = scanner.feed(text)
            except LimitExceeded:
                return ""
            if end is None:
                label, dest = opening
            elif end < len(text) and text[end:].strip():
                return ""
            else:
                label, dest = closing
        self.scanner = scanner
        self.state = dest
        ledger.held_bytes += len(data)
        self._length = len(text)
        self._buf = data  # what _append does with a call's first text
        self._text = text  # what decoding ``data`` gives (it encoded: no surrogate)
        ledger.transitions[label] += 1
        if not (ledger.withhold or self.server):
            self._emitted = self._length
            ledger.outputs.append(build_arguments_delta(self.ordinal, text))
        return label

    def _scan_now(self, text: str) -> bool | None:
        """Scan the held text whose scan waited and ``text`` after it, as scan_fragment would, for
        store_waiting: True when the value is still open after ``text``, False when it closed with
        nothing but whitespace after it. None, with the scan as it was before ``text`` (the waiting
        text may be caught up, as scan_fragment's first step would do too), for a call's first
        text or a value closed already (scan_fragment's other branches), the depth limit passed
        or text left after the value closed (a split): fire() decides those."""
        scanner = self.scanner
        if not self._length or scanner.state in scanner._c.done:
            return None
        start = self._unscanned
        if start is not None and len(self._buf) - start > _CATCH_UP_BYTES:
            self._catch_up()  # it cannot close the value
            start = None
        state, depth, pushes, pops = scanner.state, scanner.depth, scanner._pushes_waiting, scanner._pops_waiting
        try:
            if start is None:
                end = scanner.feed(text)
            else:
                waiting = self._buf[start:].decode("utf-8", "surrogatepass")
                end = scanner.feed(waiting + text)
                if end is not None:
                    end -= len(waiting)
        except LimitExceeded:
            return None  # the scanner put itself back
        if end is not None and end < len(text) and text[end:].strip():
            scanner.state, scanner.depth, scanner._pushes_waiting, scanner._pops_waiting = state, depth, pushes, pops
            return None
        self._unscanned = None
        return end is None

    def store_whole(self, text: str, label: str, dest: str, closed: Scanner) -> bool:
        """The first ``append`` to a call, when ``text`` is one whole flat object (a whole call in
        one chunk) as the scanner reads it (see closes_flat: the scanner does not validate, the
        parse at the finish does; parsed now and kept, the value would double what a call in
        flight holds): the transition ``label`` (from opened to ``dest``, guarded by
        value_complete) taken without the machine's dispatch when what it would do is known: what
        scan_fragment, the guard and store_fragment would do with it, the scan ending in
        ``closed`` (the shared closed scanner of the call's depth limit). Only for a call just
        opened (Registry.whole_call opens it and calls this at once): no text, no scan, nothing
        held back; opened without its state and text fields (Registry._open_new's ``whole``), all
        of which this writes. False, with nothing changed, for any other text (a limit, a
        surrogate, nested, escapes): the caller writes those fields (Registry._no_text) and fires
        ``append``."""
        ledger = self.ledger
        length = len(text)
        if length > ledger.max_argument_chars or flat_match(text) is None:  # closes_flat
            return False
        try:
            data = text.encode()  # UTF-8 (the default: no codec name read)
        except UnicodeEncodeError:
            return False
        size = ledger.held_bytes + len(data)
        if size > ledger.max_held_bytes:
            return False
        self.scanner = closed  # where scanning it would end
        self.state = dest
        ledger.held_bytes = size
        self._length = length
        self._buf = data  # what _append does with a call's first text
        self._text = text  # what decoding ``data`` gives (it encoded: no surrogate), kept for the end
        ledger.transitions[label] += 1
        if ledger.withhold:
            self._emitted = 0
        else:  # (a call _open_new opened is a client call: no server flag to read)
            self._emitted = length
            delta = _DeltaBeingBuilt()  # build_arguments_delta(self.ordinal, text) in line, as to_call's
            delta.index = self.ordinal
            delta.text = text
            delta.__class__ = ArgumentsDelta
            ledger.outputs.append(delta)
        return True

    def store_run(self, texts: list[str], data: bytes, chars: int, label: str) -> None:
        """The hot transition (``label``) with store_fragment of each of ``texts`` in turn (``data``
        their UTF-8, joined; ``chars`` their length), each found to wait (Registry.gather): taken
        as many times, each text stored as it came, all of it sent out."""
        self.ledger.transitions[label] += len(texts)
        self.ledger.held_bytes += len(data)
        self._length += chars
        self._append(data)
        self._text = None
        self._emitted = self._length
        ordinal = self.ordinal
        self.ledger.outputs += [build_arguments_delta(ordinal, text) for text in texts]

    def _catch_up(self) -> None:
        """Scan the held text whose scan waited. It cannot close the value nor pass the depth
        limit (see Scanner.may_wait). Decoded a piece at a time straight from the buffer, so
        catching up with one long string costs no copy of it."""
        start = self._unscanned
        if start is None:
            return
        self._unscanned = None
        buf, end = self._buf, len(self._buf)
        with memoryview(buf) as view:
            while start < end:
                stop = min(start + _CATCH_UP_BYTES, end)
                while start < stop < end and buf[stop] & 0xC0 == 0x80:
                    stop -= 1  # not inside a character's UTF-8 bytes
                if stop == start:  # a piece smaller than the character: take the whole character
                    stop += 1
                    while stop < end and buf[stop] & 0xC0 == 0x80:
                        stop += 1
                self.scanner.feed(str(view[start:stop], "utf-8", "surrogatepass"))
                start = stop

    def scan_over(self, scanned: Scanner) -> None:
        """Keep ``scanned`` (a scanner whose value closed, with the same depth limit) in place of
        this call's own once its value closed too: a closed value's scan is over, in the one final
        state, where feeding it changes nothing. A call of many saves its scanner's memory."""
        scanner = self.scanner
        if scanner is not scanned and scanner.complete:
            self.scanner = scanned

    def between_tokens(self) -> bool:
        """Is the held text inside its top-level container and outside any string?"""
        self._catch_up()
        return self.scanner.between_tokens

    def _check_room(self, length: int, more_bytes: int) -> None:
        """Limits are checked before the scanner or the machine moves: a refused text leaves the
        call as it was, so the result so far (close() after the error) is still consistent."""
        if length > self.ledger.max_argument_chars:
            self._check_size(length)
        if self.ledger.held_bytes + more_bytes > self.ledger.max_held_bytes:
            self.ledger.hold(more_bytes)  # raises, naming the limit

    @action
    def scan_snapshot(self, text: str) -> tuple[str, str]:
        self._check_room(len(text), _utf8_length(text) - len(self._buf))
        self._unscanned = None
        max_depth = self.scanner.max_depth
        # A fresh scan of one whole object, within the depth limit, would end closed at its end with
        # nothing past it: the C parser says so at a fraction of the scan's cost. Snapshots are most
        # often written from a parsed value (Gemini's and Ollama's calls), so whole. One of a flat
        # object's shape is read again at its end (flat_object, as every call's end reads its text
        # first: the calls that have no snapshot are asked nothing more); the parse of any other is
        # the one its end needs, kept for it (by the stream, not the call: a call's own field costs
        # it a dict).
        parsed = None
        if is_flat_object(text) or (parsed := _whole_object(text, max_depth)) is not None:
            self.scanner = closed_scanner(max_depth)
            if self._past_close:
                self._past_close = False
        else:
            self.scanner = Scanner(self.scanner.max_depth)
            end = self.scanner.feed(text)
            past_close = end is not None and bool(text[end:].strip())
            if past_close is not self._past_close:
                self._past_close = past_close
        kept = self.ledger.parsed
        if parsed is not None and ("[" in text or text.count("{") != 1):  # no flat object's shape
            if kept is None:
                kept = self.ledger.parsed = {}
            kept[self] = (text, parsed[0], parsed[1])  # for the call's end, while it holds this very text
        elif kept:
            kept.pop(self, None)  # a parse kept for the text this snapshot replaces
        return text, ""

    # -- guards ---------------------------------------------------------------------------------

    @guard
    def value_complete(self, text: str) -> bool:
        # Exact even while a scan waits: text whose scan waits cannot have closed the value.
        scanner = self.scanner
        return scanner.state in scanner._c.done

    @guard
    def blank_fragment(self, text: str) -> bool:
        return not text.strip()

    @guard
    def no_text(self, text: str) -> bool:
        return not self._high and (self._length == 0 or not self.text().strip())

    # -- actions --------------------------------------------------------------------------------

    def _append(self, data: bytes) -> None:
        buf = self._buf
        if not buf:
            self._buf = data
            return
        if type(buf) is bytes:  # the first text, kept as it came: from now on it grows
            buf = self._buf = bytearray(buf)
        buf += data

    def _check_size(self, length: int) -> None:
        limit = self.ledger.max_argument_chars
        if length > limit:
            self.ledger.limit(f"call {self.id}: arguments longer than {limit} characters")

    @action
    def store_fragment(self, text: str) -> None:
        try:
            data = text.encode()  # UTF-8 (the default: no codec name read)
        except UnicodeEncodeError:
            data = None
        if data is None or self._high:
            text = self._mend(text)
            data = text.encode()  # UTF-8 (the default: no codec name read)
        held = self._length
        ledger = self.ledger
        if held + len(text) > ledger.max_argument_chars:
            self._check_size(held + len(text))
        if ledger.held_bytes + len(data) > ledger.max_held_bytes:
            ledger.hold(len(data))  # raises, naming the limit
        ledger.held_bytes += len(data)
        self._length += len(text)
        self._append(data)
        self._text = None
        # Nothing goes out as it arrives for a server's call, nor where the wire's final arguments
        # may still replace the streamed text (withhold): all of it goes out when the call finishes.
        if ledger.withhold or self.server or not text:
            return
        if self._emitted == held:
            if not held and not self.freeform and text.isspace():  # freeform whitespace is input
                self._blank = True
                return
            self._emitted = self._length
            ledger.outputs.append(build_arguments_delta(self.ordinal, text))
        elif self._blank and not text.isspace():
            self._blank = False
            self._emitted = self._length
            self.ledger.emit(ArgumentsDelta(self.ordinal, self.text()))

    @action
    def store_snapshot(self, text: str) -> None:
        if self._high:
            self._high = ""  # the snapshot is the whole text: a half held from a fragment is superseded
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            text = self._mend(text, whole=True)
            data = text.encode("utf-8")
        self._check_size(len(text))
        if self._emitted and not text.startswith(self.text()[: self._emitted]):
            self._diverged = True
            if self._call is None:  # no longer the commonest call, which Registry._ended reads as unreplaced
                self._call = _REREAD
        self.ledger.hold(len(data) - len(self._buf))
        if self._buf:  # a snapshot where there was no text extends it, as a fragment would
            self.revision += 1
        self._buf = data
        if self._blank:
            self._blank = False
        self._text = text
        self._length = len(text)
        # A snapshot can itself be replaced later, so it goes out only when the call finishes.
        self._emitted = min(self._emitted, self._length)

    def end_closed(self, label: str, dest: str) -> bool:
        """The normal end of a closed value (``label``: value_closed to ``dest``, unguarded, running
        parse_arguments) taken without the machine's dispatch (Registry._end_closed): the state
        change, the action and the count, as fire() does them. parse_arguments' commonest case, a
        flat object (flat_object), is read in line, a call less on every such call's end; its two
        counts (the rule parse-once-at-finish and ``label``) are then the caller's to make, and
        True says so: Registry.finish makes them once for all the calls a finish ends so, not
        two dict updates a call. Never with a surrogate half waiting (``_high``): its callers
        leave that end to fire(), where parse_arguments settles the half first.
        test_a_closed_value_ends_alike_in_line_and_through_fire holds it to fire()."""
        self.state = dest
        ledger = self.ledger
        raw = self._text
        if raw is None:  # text(), in line: a call's fragments are decoded here, once
            ledger.work += self._length
            raw = self._text = self._buf.decode("utf-8", "surrogatepass")
        value = flat_object(raw)  # (None for a snapshot whose parse was kept: parse_arguments takes it)
        if value is None:
            self.parse_arguments("")  # (counts its rule)
            ledger.transitions[label] += 1  # covered(), in line
            return False
        self.arguments = value  # what parse_arguments does with such text, but count its rule
        self.status = _COMPLETE
        return True

    @action
    def parse_arguments(self, text: str) -> None:
        self.ledger.rules["parse-once-at-finish"] += 1
        if self._high:
            self._settle(CallStatus.INVALID)
        raw = self._text
        if raw is None:  # not decoded yet: text() decodes it (read in line, a call less when it is)
            raw = self.text()
        kept = self.ledger.parsed
        if kept:
            parsed = kept.pop(self, None)
            if parsed is not None and parsed[0] is raw:  # the snapshot it holds, parsed as it came
                self._parsed_value(parsed[1], parsed[2])
                return
        # Most arguments: a flat object with no key given twice, which nests one level (the depth
        # limit is at least 1), read as parse_strict would read it, without its tuple.
        value = flat_object(raw)
        if value is not None:
            self.arguments = value
            self.status = _COMPLETE
            return
        # json.loads recurses: text nested past the limit is refused before it is parsed.
        if not self._nesting_scanned(raw) and nesting_exceeds(raw, self.scanner.max_depth):
            self._fail(CallStatus.INVALID, "invalid-arguments", f"nest deeper than {self.scanner.max_depth} levels")
            return
        try:
            value, duplicates = parse_general(raw)  # what parse_strict does once flat_object said None
        except NotJSON as exc:
            self._fail(CallStatus.INVALID, "invalid-arguments", f"arguments are not strict JSON: {exc}")
            return
        except ValueError as exc:
            self._fail(CallStatus.INVALID, "invalid-arguments", f"arguments do not parse: {exc}")
            return
        except RecursionError:
            self._out_of_stack()
        self._parsed_value(value, duplicates)

    def _out_of_stack(self) -> NoReturn:
        """The parse ran out of Python's stack: text within the depth limit, read from deep in the
        caller's own stack (the recursion limit is shared). A limit, as an event too deep to read
        is: the call ends invalid, its raw text kept, before the error is raised (the machine has
        moved it to its end), so close() reports it as it stands."""
        self.status = CallStatus.INVALID
        why = "its arguments nest too deeply to parse this far down the caller's stack (Python's recursion limit)"
        raise LimitExceeded(f"call {self.id} ({self.name}): {why}", event=self.ledger.event, rule="limits")

    def _parsed_value(self, value: Any, duplicates: list[str]) -> None:
        """The end of parse_arguments once the text parsed: ``value`` is the arguments if an object,
        and the keys given twice are reported."""
        if not isinstance(value, dict):
            self._fail(CallStatus.INVALID, "arguments-not-object", f"arguments are a {type(value).__name__}")
            return
        self.arguments = value
        self.status = _COMPLETE  # before the report: strict mode raises it on a finished call
        if duplicates:
            shown = ", ".join(repr(k) for k in dict.fromkeys(duplicates))
            self.ledger.diagnose(
                "duplicate-key", f"call {self.id}: key {shown} given twice in one object; the last kept"
            )

    def _nesting_scanned(self, raw: str) -> bool:
        """Has the scanner already seen that ``raw`` nests within the limit? Yes when it read all
        of it to a closed value: its push refuses text past the limit, and it reads strings and
        brackets as nesting_exceeds does, save a backslash before a line break (which nesting_exceeds
        takes as ending the escape; no valid JSON has one). Then nesting_exceeds would say no, and
        its walk (a Python step per string and bracket of long nested text) is spared.
        test_the_scanned_nesting_shortcut_decides_as_the_walk replays streams with and without it."""
        scanner = self.scanner
        return scanner.state in scanner._c.done and not self._past_close and "\\\n" not in raw

    @action
    def default_empty_arguments(self, text: str) -> None:
        if self.ledger.policies.empty_arguments == "invalid":
            self._fail(CallStatus.INVALID, "empty-arguments", "no argument text (policy empty_arguments=invalid)")
            return
        self.ledger.diagnose("empty-arguments", f"call {self.id}: no argument text, so {{}}")
        self._hold_at_finish(2 - len(self._buf), CallStatus.INVALID)
        self._buf = b"{}"
        self.revision += 1
        self._unscanned = None
        self._text = "{}"
        self._length = 2
        self.arguments = {}
        self.status = CallStatus.COMPLETE

    @action
    def accept_text(self, text: str) -> None:
        self._settle(CallStatus.INVALID)
        self.status = CallStatus.COMPLETE

    @action
    def mark_unterminated(self, text: str) -> None:
        self._settle(CallStatus.INVALID)
        raw = self.text()
        if not _OPENS_CONTAINER.match(raw):
            # The scanner reads for an object: a number, string or literal never closes one. Whole
            # at the provider's end, such text is a value that is no object, not one cut short.
            try:
                value = parse_strict(raw)[0]
            except ValueError:
                pass
            else:
                self._fail(CallStatus.INVALID, "arguments-not-object", f"arguments are a {type(value).__name__}")
                return
        self._fail(CallStatus.INVALID, "unterminated-arguments", "the JSON never closed", awaits_why=True)

    @action
    def mark_unusable(self, text: str) -> None:
        """``text`` is the reject trigger's input: what its tool cannot take in the call's value."""
        self._settle(CallStatus.INVALID)
        self._fail(CallStatus.INVALID, "unusable-action", text)

    @action
    def mark_truncated(self, text: str) -> None:
        """``text`` is the cut trigger's input: what cut the call, in the provider's words where it
        gave any (the registry's finish says it), so the caller learns why, not only that."""
        cut_between_halves = bool(self._high)
        self._settle(CallStatus.TRUNCATED, report=False)  # a cut between a pair's halves is the cut's doing, said below
        why = f"cut after {self._length} characters"
        if cut_between_halves:
            why += ", between the halves of a surrogate pair (the first kept as its escape),"
        self._fail(CallStatus.TRUNCATED, "truncated", f"{why} {text}" if text else why)

    # -- Unicode (rule text-is-unicode) -----------------------------------------------------------

    def _mend(self, text: str, *, whole: bool = False) -> str:
        """``text`` as Unicode the held text can take: the high surrogate held from the last
        fragment joined with a low one that starts this one, pairs that arrived as two code points
        joined, and every surrogate with no partner kept as its JSON escape ``\\udXXX`` (the same
        value inside a JSON string, and encodable), or as U+FFFD in freeform text. A high
        surrogate that ends a fragment waits for the next (unless ``whole``: a snapshot has none)."""
        text, self._high = self._high + text, ""
        if not whole and text and "\ud800" <= text[-1] <= "\udbff":
            text, self._high = text[:-1], text[-1]
        mended, pairs, lone = mend_surrogates(text, json_text=not self.freeform)
        self.ledger.apply("text-is-unicode")
        if pairs:
            self.ledger.diagnose(
                "surrogate-pair-joined", f"call {self.id}: {pairs} UTF-16 surrogate pair(s) sent as halves, joined"
            )
        if lone:
            kept = "U+FFFD" if self.freeform else "escaped as \\udXXX"
            self.ledger.diagnose("lone-surrogate", f"call {self.id}: {lone} surrogate(s) with no partner, {kept}")
        return mended

    def _settle(self, failed: CallStatus, *, report: bool = True) -> None:
        """The text is final: a high surrogate still waiting for its partner has none (``failed``:
        the status the call ends with if its escape passes the stream's byte limit)."""
        high = self._high
        if not high:
            return
        self._high = ""
        kept = "\ufffd" if self.freeform else f"\\u{ord(high):04x}"
        if report:
            self.ledger.diagnose("lone-surrogate", f"call {self.id}: the text ended in half a surrogate pair")
        data = kept.encode("utf-8")
        self._hold_at_finish(len(data), failed)
        self._append(data)
        self._length += len(kept)
        self._text = None

    @action
    def mark_abandoned(self, text: str) -> None:
        said = f"the provider ended it {text or 'incomplete'} after {self._length} characters"
        self._fail(CallStatus.TRUNCATED, "truncated", said, awaits_why=True)

    @action
    def mark_nameless(self, text: str) -> None:
        so = ""
        if self.status is _COMPLETE:  # no tool to run it with, and no provider takes a nameless call back
            self.status, self.arguments, so = CallStatus.INVALID, None, ", so invalid"
        self.ledger.diagnose("missing-name", f"call {self.id}: finished without a name{so}")

    def _hold_at_finish(self, more_bytes: int, failed: CallStatus) -> None:
        """Hold the bytes a finishing action adds (an escaped surrogate half, the ``{}`` of no text).
        The machine has already moved to a terminal state then: if they pass the stream's byte
        limit, the call ends with status ``failed`` before the error is raised, so close() after it
        reports the call as it stands (a terminal call without a status has no way out)."""
        try:
            self.ledger.hold(more_bytes)
        except LimitExceeded:
            self.status = failed
            raise

    def _fail(self, status: CallStatus, code: str, why: str, *, awaits_why: bool = False) -> None:
        """Set the call's failed ``status`` and say ``why``; ``awaits_why``: the provider ended the
        call unfinished, and a turn's finish that is not normal, after it, will say why (Ledger.explain)."""
        self.status = status
        ledger = self.ledger
        at = len(ledger.diagnostics)
        ledger.diagnose(code, f"call {self.id} ({self.name}): {why}")
        if awaits_why and len(ledger.diagnostics) > at:  # kept, not past the per-code bound
            ledger.ended_unfinished.append(at)

    def unsent_tail(self) -> str | None:
        """The final text not yet sent as deltas, or None when deltas already sent disagree with
        the final text (a snapshot replaced them): re-emitted deltas cannot retract text."""
        return None if self._diverged else self.text()[self._emitted :]


def _utf8_length(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
