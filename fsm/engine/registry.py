"""The slot registry: decides which call every event belongs to. Identity is decided here and
nowhere else, by the rules of specs/identity.toml, each cited by name where it applies.

Calls live in *lanes*: the calls that share one identity. A lane is keyed by the wire index
(``index-is-label``), else by the id (``id-without-index``), else by the position within the event
(``positional-fallback``). Calls opened in a lane after its first are its derived calls (``base#1``,
``base#2``, ...). Before opening another call, the registry looks among the lane's calls for the one
a resend or a continuation belongs to (events A, B, B give two calls, not three): only the newest
can still be open, and an index from complete text to the calls holding it finds a resend without
walking the lane.

One room: identity is decided in this one place, and the shortcuts (the continuation route, the
lazily built resend index) sit beside the general routing they must agree with.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal

import attrs

from fsm.engine.ids import IdAllocator
from fsm.engine.ledger import Ledger
from fsm.engine.machine import SpecMachine, slot_machine
from fsm.engine.scanner import closed_scanner, start_scanner
from fsm.engine.slot import Slot, text_digest
from fsm.errors import LimitExceeded, too_long
from fsm.events import FREEFORM_TYPES, NORMAL_FINISHES, CallRef, build_call_ref
from fsm.jsontext import dumps as exact_dumps
from fsm.jsontext import is_json_prefix, nesting_exceeds, parse_strict, unicode_utf8
from fsm.options import Limits
from fsm.positional import unfrozen
from fsm.results import CallFinished, CallOpened, CallStatus, ToolCall, build_arguments_delta, build_call_opened

# Where a call sits on the wire: a client call's index itself (nearly every call: a lane that costs
# no object of its own), or (kind, key) for a server call's index, an id or a position.
Lane = int | tuple[str, int | str]
# The calls of one lane or wire id, oldest first: the call itself while there is one (nearly
# always, and no object of its own), a list from the second on (never shorter again).
Calls = Slot | list[Slot]
Kind = Literal["fragment", "snapshot", "confirmation"]
_TRUNCATED = CallStatus.TRUNCATED


def _shortcut_index(index: int) -> None:
    """Refuse the index of an OpenAI chat entry the chat shortcuts took (whole_call, call_header,
    bare_fragment: one entry, at position 0) when it is a caller's int too long to write as text,
    as the decoder refuses it and the digits the event parser keeps of it read from the wire.
    Called where the index opens a call or takes the general routing, never on a call's next
    fragment: no lane is keyed by such an index, so a continuation can never hold one."""
    said = too_long(index)
    if said is not None:
        raise LimitExceeded(f"tool_calls[0].index is {said}", rule="limits")


_NONE: Mapping[Any, Any] = MappingProxyType({})


_new_object = object.__new__  # a bare Slot, for _open_new to fill in
_OpenedBeingBuilt = unfrozen(CallOpened)  # the outputs _open_new and _ended build in line
_FinishedBeingBuilt = unfrozen(CallFinished)
_ToolCallBeingBuilt = unfrozen(ToolCall)  # the call _ended builds in line (Slot.to_call's commonest)


class Registry:
    end_directly = True
    """Whether a closed value's normal end skips fire() (tests turn it off to compare)."""

    # The resend tables below are written only once a lane holds a second call, which most streams
    # never see: until then each is this read-only empty one, shared, and a stream's own is made
    # at its first write (_own).
    _holding: dict[tuple[Lane, bytes], list[Slot]] = _NONE  # type: ignore[assignment]
    """Which calls of a lane hold a given (stripped) complete text: a resend can only land in one
    of those, so routing never walks a lane's earlier calls one by one."""
    _slot_lanes: dict[Slot, tuple[Lane, Lane]] = _NONE  # type: ignore[assignment]
    """The calls in two lanes (no index), and their lanes."""
    _held_under: dict[Slot, bytes] = _NONE  # type: ignore[assignment]
    """The key each call is listed under in _holding: the text it holds now, one at a time (_unhold)."""
    _indexed: dict[Slot, tuple[int, int, bytes]] = _NONE  # type: ignore[assignment]
    """Each indexed call's text as last indexed: its length and revision (which together tell
    whether the text changed since: it only grows, or is replaced) and its digest."""
    _values: dict[Lane, tuple[Slot, int, int, dict[str, Any] | None]] = _NONE  # type: ignore[assignment]
    """Per lane, the newest call's parsed value for _replays: the call, the length and revision
    of its text when parsed, and the object (None: the text is no object). Kept from the replay
    check that read the text the call then opened with, so each text is parsed once; one per
    lane, since a replay is only ever compared with its lane's newest call."""
    _parsed: tuple[str, dict[str, Any] | None] | None = None
    """The text _replays last read, and its object."""
    _spelled: tuple[str, bytes] | None = None
    """The text _replays last read, and its letters (_letters): the held text of the next it reads."""
    _looked: tuple[str, bytes] | None = None
    """The text _route_text last looked up in _holding, and the key it looked under, when that key
    is the digest of the text as a call holds it (nothing stripped, UTF-8 as it came): a call that
    then holds this very text is indexed under it by _remember without reading the text again."""
    _ended_below: dict[Lane, int] = _NONE  # type: ignore[assignment]
    """Per lane of many calls, how many of its first calls call_end found finished (a call never
    becomes unfinished again, and calls only join a lane last): a call end looks above them alone."""
    _at_indexes: dict[str, _AtIndexes] = _NONE  # type: ignore[assignment]
    """Per wire id held by two calls or more and routed with an index, its calls by index."""
    _under_ids: dict[tuple[str, int | None], _IdCalls] = _NONE  # type: ignore[assignment]
    """Per wire id held by two calls or more, and index (None: all the id's calls), those calls
    sorted for routing without walking them (_sorted_under)."""
    _order: dict[Slot, int] | None = None
    """Each call's place among all the stream's calls, once the stream has a server call (server
    and client calls' ordinals are counted apart, so an ordinal no longer tells which opened
    first): the order a lane walks its calls in, which _holding's lists keep (_in_call_order).
    Until then an ordinal is that place."""
    _settled: int
    """How many calls, oldest first, had ended when finish() last walked them (it skips those).
    Written by every stream's construction: finish() reads it twice a stream, its finish and its
    close, where a class default read through the instance is an unspecialised load (Python 3.11)."""
    _closed_under: dict[Slot, list[tuple[_IdCalls, tuple[int, Slot], bytes]]] = _NONE  # type: ignore[assignment]
    """Each call whose value had closed, not finished, as _sorted_under sorted it by its text: where,
    and under which digest."""

    def __init__(self, ledger: Ledger, limits: Limits, taken: Iterable[str] = ()) -> None:
        self.ledger = ledger
        self.limits = limits
        self.machine = machine = slot_machine(reference=ledger.strict)  # strict mode runs on the reference executor
        self.slots: list[Slot] = []
        # The calls of each lane, and the calls each wire id names (see Calls).
        self._lanes: dict[Lane, Calls] = {}
        self._by_wire_id: dict[str, Calls] = {}
        # A header (a name, and the wire id it came with) seen after a complete value: it names the
        # next call in its lane if text that starts a new value follows (rule metadata-once).
        self._pending_header: dict[Lane, tuple[str, str | None]] = {}
        self._ids = IdAllocator(taken)
        self._counts = {False: 0, True: 0}  # calls opened so far: client, server
        self._max_calls = limits.max_calls
        self._run: _Run | None = None  # the fragments gather() held back
        self._settled = 0
        # Read from the machine and the depth limit once for every stream (_shared): each call's
        # start and end states, the scans' two shared ends (where every call's starts until its
        # first text, and the one state every closed value's scan ends in), the transitions taken
        # without the machine's dispatch, whether they may skip it, and the normal end of a closed
        # value taken without fire() (Registry._finish: its label, dest). One unpacking, not eleven
        # reads of a tuple: what every stream, however short, pays.
        (
            self._initial_json,
            self._initial_text,
            self._start,
            self._scanned,
            self._staying,
            self._closing,
            self._closes,
            self._opening,
            self._direct,
            self._ending,
        ) = _shared(machine, limits.max_depth, self.end_directly)

    # -- events -----------------------------------------------------------------------------------

    def call_seen(self, ref: CallRef, item: dict[str, Any] | None = None, *, announces: bool = False) -> Slot | None:
        """Route a sighting; return the call it belongs to (None when it is only held as the name
        of a call that may follow). ``item``, a built-in client item, is kept on that call. A
        sighting that ``announces`` a call its input opened names the newest call at its index."""
        landed = self._seen(ref, announces, header=item is None and not announces)
        if item is not None and landed is not None and not landed.finished:
            landed.item = item  # the latest word on the item wins, until the call is handed out at its end
            landed.reread()
        return landed

    def seen_on(self, slot: Slot, ref: CallRef, item: dict[str, Any]) -> Slot:
        """A sighting of the call ``slot`` that the text of the same part just landed in (the part's
        text decides the call: a resend of it): its metadata and ``item`` go on that call, as
        call_seen() puts them on the open call it finds, where call_seen() would open another after
        an ended one, or hold one without an id after a whole value as a next call's header."""
        self._metadata(slot, ref)
        self._pending_header.pop(slot.lane, None)
        slot.item = item
        slot.reread()
        return slot

    def _seen(self, ref: CallRef, announces: bool, *, header: bool = True) -> Slot | None:
        lane, chain = self._chain(ref, None, announces=announces)
        if not chain:
            return self._open(lane, ref)
        newest = chain[-1]
        if newest.unfinished or (
            ref.id is not None and ref.id in self._by_wire_id and not self._next_call_header(newest, ref, header)
        ):
            self._metadata(newest, ref)
            self._pending_header.pop(lane, None)
            return newest
        if newest.finished:
            # The provider ended that call (a call-end event): whatever is seen next is another call.
            self.ledger.apply("complete-value-starts-new-call")
            return self._open(lane, ref)
        if newest.name is None and ref.name is not None:
            # A name for the call it follows, which has none: its late name (metadata-once), not
            # the header of another call.
            self._metadata(newest, ref)
            self._pending_header.pop(lane, None)
            return newest
        if ref.name is None or ref.name == newest.name:
            # After a finished value the same name again is either repeated metadata (Kimi repeats
            # it on every chunk) or the header of a next call at this index. Hold it: it names the
            # next call only if text that starts a new value follows.
            if ref.name is not None:
                self._pending_header[lane] = (ref.name, ref.id)
            self.ledger.apply("metadata-once")
            # A nameless sighting names no next call: it is the newest's (a thought signature it carries
            # goes on that call, as on a re-emitted stream's last chunk of a call: fsm.reemit_signatures).
            return newest if ref.name is None and header else None
        self.ledger.apply("complete-value-starts-new-call")
        return self._open(lane, ref)

    def _next_call_header(self, newest: Slot, ref: CallRef, header: bool) -> bool:
        """Whether a header under a known id may name the next call rather than repeat the newest
        call's: the id's newest call, named, has a complete value and is the newest in its lane, and
        the header brings a name (DeepSeek and GLM give two calls one id; with the index reused, the
        second's header is the first's id and a name). Then it is held like a header without an id."""
        if not header or ref.name is None or newest.name is None or newest.finished:
            return False
        calls = self._lanes.get(newest.lane)
        return (calls if isinstance(calls, Slot) else calls[-1] if calls else None) is newest

    def arguments(self, ref: CallRef, text: str, kind: Kind) -> Slot | None:
        """Route argument text; return the call it landed in (the first, if it was split)."""
        landed = self._continuation(ref, text) if kind == "fragment" else None
        if landed is not None:
            text = self._extend(landed, text, kind)
            if not landed.unfinished:
                self._remember(landed)
        elif kind == "fragment" and not text.strip():
            return self._blank(ref, text)
        while text:  # the whole text, or what a split left after a closed value
            slot, text = self._route_text(ref, text, kind)
            self._remember(slot)
            landed = landed or slot
        return landed

    def fragment(self, ref: CallRef, text: str) -> None:
        """``arguments(ref, text, "fragment")`` for the commonest event of the other shapes (a
        tool block's or item's next piece of text, at its index): _continuation and _extend in
        line for the open call of the ref's lane that the ref's id and name agree with, with the
        same rules counted and the same trigger fired, as bare_fragment does for OpenAI chat;
        anything else goes the general way. Two calls fewer on each such event. The lane is found
        as _continuation finds it: by index, else by id, else by position (a Vertex streamed call)."""
        index = ref.index
        if ref.server or self._pending_header:
            calls = None
        elif index is not None:
            calls = self._lanes.get(index)
        else:
            calls = self._by_wire_id.get(ref.id) if ref.id is not None else self._lanes.get(("position", ref.position))
        if calls is not None:
            slot = calls if isinstance(calls, Slot) else calls[-1]
            state = slot.state
            held = slot._length
            if (
                (state == "accumulating" or state == "opened" or state == "receiving")  # Slot.unfinished
                and (ref.id is None or ref.id == slot.wire_id)
                and (ref.name is None or ref.name == slot.name)
                # Else it may read as cumulative (_reads_as_cumulative): _extend decides.
                and (not held or len(text) < held or text[0] != slot.first_character())
                and text
                and not text.isspace()
            ):
                ledger = self.ledger
                rules = ledger.rules
                if index is not None:
                    rules["index-is-label" if ref.id is None else "id-binds"] += 1
                else:
                    rules["id-without-index" if ref.id is not None else "positional-fallback"] += 1
                rules["metadata-once"] += 1
                ledger.work += len(text)
                if self._direct and self._stored(slot, state, text):
                    return
                rest = self._appended(slot, text)
                if rest:
                    self._route_rest(ref, rest)
                return
        self.arguments(ref, text, "fragment")

    def _appended(self, slot: Slot, text: str) -> str:
        """The fast paths' fragment for an open call, as _extend and arguments() take it once no
        cumulative resend is possible: the ``append`` trigger fired; the rest of a fragment its
        value closed in the middle of (reported), for _route_rest."""
        rest = self.machine.fire(slot, "append", text)
        if rest:
            self.ledger.diagnose(
                "split-fragment", f"call {slot.id}: its value closed mid-fragment; the rest opens another call"
            )
        if not slot.unfinished:
            self._remember(slot)
        return rest

    def _stored(self, slot: Slot, state: str, text: str) -> bool:
        """``append`` of ``text`` to ``slot`` (in ``state``) taken without the machine's dispatch
        where what it does is known (Slot.store_waiting, Slot.store_first), a call whose value it
        closed remembered as _appended remembers it; False, nothing done, where fire() decides."""
        if state == "accumulating":
            taken = slot.store_waiting(text, self._staying, self._closes)
        elif state == "opened":
            taken = slot.store_first(text, self._opening, self._closing, self._scanned)
        else:
            return False
        if taken and slot.state == "value_closed":
            self._remember(slot)
        return bool(taken)

    def _route_rest(self, ref: CallRef, rest: str) -> None:
        while rest:  # as in arguments()
            landed, rest = self._route_text(ref, rest, "fragment")
            self._remember(landed)

    def whole_call(self, index: int, wire_id: str, name: str, text: str) -> None:
        """``arguments(CallRef(index, wire_id, name), text, "fragment")`` for a call that names all
        of itself in one event. At an index and an id never seen, with no name held for a next call,
        the general routing opens a call there by rule index-is-label and gives it the text: done
        here without a CallRef or the routing's walk. Anything else takes the general routing.
        ``text`` is never empty (each caller's reader refuses empty text: no fragment)."""
        if self._pending_header or index in self._lanes or wire_id in self._by_wire_id or text.isspace():
            if index >> 63:  # as in _open_new
                _shortcut_index(index)
            self.arguments(build_call_ref(index, wire_id, name), text, "fragment")
            return
        ledger = self.ledger
        ledger.rules["index-is-label"] += 1
        if not self._direct:
            slot = self._open_new(index, wire_id, name)
        else:
            # Its text's fields left to store_whole, which writes them all or none (by position:
            # a keyword costs more): nearly every whole call's are then written once, not twice.
            slot = self._open_new(index, wire_id, name, True)
            closing = self._closing  # its label and dest, passed by position: a starred call costs more
            if slot.store_whole(text, closing[0], closing[1], self._scanned):
                # No _remember: it would do nothing to the lone call of a new lane (never indexed) whose
                # scanner is already the shared closed one (closed_scanner is one per depth limit).
                ledger.work += slot._length
                return
            self._no_text(slot)  # refused: a call with no text yet, as _open_new makes it, takes it
        rest = self._extend(slot, text, "fragment")
        self._remember(slot)
        if rest:  # the value closed mid-text: the rest is routed as arguments() routes it
            ref = build_call_ref(index, wire_id, name)
            while rest:
                slot, rest = self._route_text(ref, rest, "fragment")
                self._remember(slot)

    def call_header(self, index: int, wire_id: str, name: str) -> None:
        """``call_seen(CallRef(index, wire_id, name))`` for the header that opens a call (an
        index, an id and a name, no text yet). At an index and an id never seen, with no name held
        for a next call, the general routing opens a call there by rule index-is-label: done here
        without a CallRef or the routing's walk. Anything else takes the general routing."""
        if self._pending_header or index in self._lanes or wire_id in self._by_wire_id:
            if index >> 63:  # as in _open_new
                _shortcut_index(index)
            self.call_seen(build_call_ref(index, wire_id, name))
            return
        self.ledger.rules["index-is-label"] += 1
        self._open_new(index, wire_id, name)

    def bare_fragment(self, index: int, text: str, ref: Callable[[int], CallRef]) -> None:
        """``arguments(ref(index), text, "fragment")`` for a bare fragment (an index; no id, name
        or server flag), the commonest event of an OpenAI chat stream: the continuation route and
        _extend inlined for a call still open, with the same rules counted and the same trigger
        fired; anything else (and the rest of a split fragment) goes the general way."""
        calls = self._lanes.get(index)
        if calls is not None and not self._pending_header:
            slot = calls if isinstance(calls, Slot) else calls[-1]
            state = slot.state
            held = slot._length
            if (
                (state == "accumulating" or state == "opened" or state == "receiving")
                # Else it may read as cumulative (_reads_as_cumulative), which only a fragment
                # that begins with the held text's first character can: _extend decides.
                and (not held or len(text) < held or text[0] != slot.first_character())
                and not text.isspace()
            ):
                ledger = self.ledger
                rules = ledger.rules
                rules["index-is-label"] += 1
                rules["metadata-once"] += 1
                ledger.work += len(text)
                if self._direct and self._stored(slot, state, text):
                    return
                rest = self._appended(slot, text)
                if rest:
                    self._route_rest(ref(index), rest)
                return
        if index >> 63:  # as in _open_new: an index no lane has may be one
            _shortcut_index(index)
        self.arguments(ref(index), text, "fragment")

    def hold(self, index: int, text: str, ref: Callable[[int], CallRef]) -> None:
        """``bare_fragment(index, text, ref)``, held back when it can be (gather) until settle(),
        which the caller must run before anything else reaches this registry or its calls are read.
        For a read of many events (bytes): storing a run of fragments in one step costs a fraction
        of storing each."""
        if not self.gather(index, text):
            self.settle()
            self.bare_fragment(index, text, ref)

    def gather(self, index: int, text: str) -> bool:
        """Hold back a bare fragment for the open call at ``index`` when its ``append`` would take
        the hot transition with a scan that waits: nothing but the scanner's count of waiting
        brackets changes until settle() stores the run it joins, in one step, with the same
        rules, transitions and outputs, as many times as one by one would. A fragment whose scan
        must run now is stored at once after the run is, the direct way (Slot.store_waiting)
        where bare_fragment would take it. False, holding nothing back (the run before it may be
        stored), for any other fragment: the caller settles and gives it to bare_fragment."""
        run = self._run
        if run is None or run.index != index:
            if run is not None:
                self.settle()
            calls = self._lanes.get(index)
            if calls is None or self._pending_header or self.machine.reference:
                return False
            slot = calls if isinstance(calls, Slot) else calls[-1]
            if not slot.gatherable():
                return False
            run = _Run(slot, index, self.ledger)
        if text.isspace() or (len(text) >= run.reach and text[0] == run.first):
            return False  # whitespace alone, or text that may read as cumulative: _extend decides
        try:
            data = text.encode()  # UTF-8 (the default: no codec name read)
        except UnicodeEncodeError:
            return False  # a surrogate: store_fragment mends it
        size = run.size + len(data)
        if size > run.room:
            return False  # near a limit: store_fragment decides, and raises naming the limit and the event
        slot = run.slot
        if not slot.scanner.may_wait(text):
            # Its scan runs now: the run before it is stored first, then it, as bare_fragment
            # would store it (the same tests passed above, the same rules counted).
            self.settle()
            if not slot.store_waiting(text, self._staying, self._closes, scan_now=True):
                return False
            rules = self.ledger.rules
            rules["index-is-label"] += 1
            rules["metadata-once"] += 1
            self.ledger.work += len(text)
            if slot.state == "value_closed":
                self._remember(slot)
            return True
        if slot._unscanned is None:
            slot._unscanned = len(slot._buf) + run.size  # where scan_fragment would mark it
        run.texts.append(text)
        run.data.append(data)
        run.reach += len(text)
        run.size = size
        self._run = run
        return True

    def settle(self) -> None:
        """Store the fragments gather() held back, as one by one they would have been stored."""
        run, self._run = self._run, None
        if run is None:
            return
        n, chars = len(run.texts), run.reach - run.slot._length
        ledger = self.ledger
        ledger.rules["index-is-label"] += n
        ledger.rules["metadata-once"] += n
        ledger.work += chars
        run.slot.store_run(run.texts, b"".join(run.data), chars, self._staying)

    def _continuation(self, ref: CallRef, text: str) -> Slot | None:
        """The common case, decided without the general routing: a fragment for the unfinished
        newest call of its lane (by index, else by id, else by position), with no metadata that
        differs. _route_text would decide the same by the same rules; this counts them the same way."""
        if ref.server or self._pending_header or not text or text.isspace():
            return None
        if ref.index is not None:
            calls = self._lanes.get(ref.index)
            rule = "index-is-label" if ref.id is None else "id-binds"
        elif ref.id is not None:
            calls = self._by_wire_id.get(ref.id)
            rule = "id-without-index"
        else:
            calls = self._lanes.get(("position", ref.position))
            rule = "positional-fallback"
        if calls is None:
            return None
        slot = calls if isinstance(calls, Slot) else calls[-1]
        if (
            slot.unfinished
            and (ref.id is None or ref.id == slot.wire_id)
            and (ref.name is None or ref.name == slot.name)
        ):
            rules = self.ledger.rules
            rules[rule] += 1
            rules["metadata-once"] += 1
            return slot
        return None

    def call_end(self, ref: CallRef, trigger: str = "end", said: str = "") -> Slot | None:
        """End the newest unfinished call the evidence points to: ``end`` by the provider's word,
        ``abandon`` when the provider said the call is unfinished (``said``: in which words), or
        ``reject`` when the decoder finds it no call to run (``said``: why)."""
        lane, chain = self._chain(ref, None)
        below, whole_lane = 0, False  # the calls of ``chain`` known finished: its first ones
        if len(chain) > 1 and ref.id is not None and chain is self._under_id(ref.id, ref.index):
            chain = self._sorted_under(ref.id, ref.index, chain, None)  # those not finished
        elif len(chain) > 1 and chain is self._lanes.get(lane):
            below, whole_lane = self._ended_below.get(lane, 0), True
        for at in range(len(chain) - 1, below - 1, -1):  # the newest not finished
            slot = chain[at]
            if not slot.finished:
                self._metadata(slot, ref)
                self._finish(slot, trigger, said)
                self._pending_header.pop(lane, None)  # a header held there repeated the call that ended
                return slot
        if whole_lane:  # every one finished: none is looked at again
            self._own("_ended_below")[lane] = len(chain)
        return None

    def opened(self, ref: CallRef) -> bool:
        """Whether the stream opened a call of ``ref``'s wire id at its index (a question: no rule counts)."""
        owners = self._by_wire_id.get(ref.id) if ref.id is not None else None
        return any(slot.index == ref.index for slot in _listed(owners))

    def client_calls(self) -> int:
        """How many client calls (not the provider's own) have opened so far."""
        return self._counts[False]

    def server_calls(self) -> int:
        """How many of the provider's own calls have opened so far: 0, and no slot is a server call.
        (Each count is taken before its call is made: one whose opening raised, strict mode's
        duplicate-id say, is counted but not held, so the client count is no count of the slots.)"""
        return self._counts[True]

    def finish(self, finish_reason: str | None, cut_by: str = "") -> None:
        """End every call still open: normally for a normal finish reason, else as a cut, which
        each cut call's diagnostic explains by ``cut_by``. A call whose finishing bytes pass a limit
        ends with its status all the same (Slot._hold_at_finish); the calls after it are cut, and
        the first such error is raised once every call has ended."""
        self.ledger.rules["finish-ends-calls"] += 1  # Ledger.apply inlined: twice a stream (its finish, close)
        slots, settled = self.slots, self._settled
        if settled == len(slots):  # no call opened since the last finish (close() after the stream's)
            return
        trigger = "end" if finish_reason in NORMAL_FINISHES else "cut"
        # _finish's direct way through a closed value's normal end, decided here once, not per call.
        ending = self._ending if trigger == "end" else None
        label, dest = ending or ("", "")
        error: LimitExceeded | None = None
        # The calls ended as flat objects (Slot.end_closed said True) whose two counts wait: made
        # once, after the loop, not as two dict updates a call. The first such end counts at once,
        # so a transition counted here for the first time takes its place among the Counter's keys
        # where counting each end put it (test_a_finish_counts_its_flat_ends_as_each_end_did).
        flat = 0
        try:
            for slot in slots[settled:] if settled else slots:
                if slot.status is None:  # not finished (Slot.finished, without the property's call)
                    try:
                        if ending is not None and slot.state == "value_closed" and not slot._high:
                            # What _end_closed does, in line: with no surrogate half to settle, the end
                            # adds no byte; a parse out of Python's stack ends the call even so.
                            try:
                                if slot.end_closed(label, dest):
                                    flat += 1
                                    if flat == 1:
                                        self.ledger.rules["parse-once-at-finish"] += 1
                                        self.ledger.transitions[label] += 1
                            except LimitExceeded:
                                self._ended(slot)  # invalid, its raw text kept (Slot._out_of_stack)
                                raise
                            self._ended(slot)
                        else:
                            self._finish(slot, trigger, cut_by if trigger == "cut" else "")
                    except LimitExceeded as exc:
                        if error is None and trigger == "end":
                            cut_by = "when a limit stopped the stream as the calls ended"
                        error, trigger, ending = error or exc, "cut", None
        finally:
            if flat > 1:
                self.ledger.rules["parse-once-at-finish"] += flat - 1
                self.ledger.transitions[label] += flat - 1
        # Each call has a status now (every end and cut sets one, past a limit too), which it never
        # loses: the next finish (close() after the stream's finish) walks only calls opened since.
        self._settled = len(slots)
        if error is not None:
            raise error

    # -- routing ----------------------------------------------------------------------------------

    def _chain(self, ref: CallRef, kind: Kind | None, *, announces: bool = False) -> tuple[Lane, Sequence[Slot]]:
        """The lane the evidence points to, and the calls in it that may own this event."""
        if ref.id is not None:
            owners = _listed(self._by_wire_id.get(ref.id))
            if owners:
                if ref.index is None:
                    chain = owners
                elif len(owners) > 1:  # the list of them: its calls at the index, kept up as it grows
                    chain = self._at_index(ref.id, owners, ref.index)
                else:
                    chain = [s for s in owners if s.index == ref.index]
                if chain:
                    if ref.index is not None:
                        self.ledger.apply("id-binds")
                    else:
                        self.ledger.apply("id-without-index")
                    return chain[-1].lane, chain
                # A known id at another index: a different call reusing the id. It is renamed
                # when it opens (duplicate-id-renamed).
        side = "server-" if ref.server else ""
        if ref.index is not None:
            self.ledger.apply("index-is-label")
            lane: Lane = ("server-index", ref.index) if ref.server else ref.index
        elif ref.id is not None:
            self.ledger.apply("id-without-index")
            lane = (side + "id", ref.id)
        else:
            self.ledger.apply("positional-fallback")
            lane = (side + "position", ref.position)
        chain = _listed(self._lanes.get(lane))
        if ref.id is None or ref.id in self._by_wire_id:
            return lane, chain
        # An id never seen before.
        newest = chain[-1] if chain else None
        if newest is None and ref.index is None and self.slots and self.slots[-1].index is None:
            newest = self.slots[-1]  # with no index, the call this id may rotate from is the newest
            if newest.server != ref.server:
                newest = None
        if newest is None:
            return lane, []
        if newest.wire_id is None and (newest.unfinished or announces):
            # late-id: the call was opened without one (and the provider's announcement of a call
            # its input opened is that call's, even with its value closed)
            self._metadata(newest, ref)
            return newest.lane, [newest]
        if (
            kind == "fragment"
            and newest.unfinished
            and ref.name is None
            and self.ledger.policies.id_rotation == "continue"
        ):
            self.ledger.apply("index-reuse")
            self.ledger.diagnose("id-changed", f"call {newest.id}: text arrived under the new id {ref.id!r}; same call")
            self._add(self._by_wire_id, ref.id, newest)
            return newest.lane, [newest]
        if chain:
            self.ledger.apply("index-reuse")
        return lane, []

    def _route_text(self, ref: CallRef, text: str, kind: Kind) -> tuple[Slot, str]:
        """Put ``text`` where it belongs; return that call and any part of the text that starts
        another value."""
        lane, chain = self._chain(ref, kind)
        pending = self._pending_header.get(lane)
        if pending is not None and ref.name is None:
            # A header held for the next call at this lane names the text that follows it.
            ref = attrs.evolve(ref, name=pending[0], id=ref.id if ref.id is not None else pending[1])
        lane_has_calls = bool(chain)
        newest = chain[-1] if chain else None
        if kind == "fragment" and chain and chain[-1].unfinished:
            # Text for a call still open continues it, even if it happens to equal an earlier call.
            chain = chain[-1:]
        elif len(chain) > 1 and chain is self._lanes.get(lane):
            # A whole lane: only its newest call is asked whether it is open (the rules' flow), and
            # only calls holding this very text now can be resent. Same order as walking the lane,
            # without the walk.
            holding = self._holding.get((lane, self._look_up(text)), [])
            if self._looked is None and (whole := text.strip(" \t\r\n")) != text.strip():
                # Whitespace JSON does not strip around it (U+3000, U+00A0): a freeform call's key
                # keeps it (Slot.digest), and _same_text matches a freeform call's text whole.
                also = self._holding.get((lane, text_digest(unicode_utf8(whole))), ())
                if also:  # in call order, each once (a stable sort: equal ordinals as held)
                    listed = set(holding)
                    holding = sorted([*holding, *(s for s in also if s not in listed)], key=self._in_call_order())
            chain = [*holding, chain[-1]] if chain[-1].unfinished else holding
        elif len(chain) > 1 and ref.id is not None and chain is self._under_id(ref.id, ref.index):
            # The calls under one id (at one index): those not finished, the finished ones holding this text.
            chain = self._sorted_under(ref.id, ref.index, chain, text, kind)
        self.ledger.work += len(chain)
        for slot in chain:
            if slot.unfinished:
                self._metadata(slot, ref)
                self._pending_header.pop(lane, None)
                return slot, self._extend(slot, text, kind)
            if slot.state == "truncated" or not self._names_agree(slot, ref):
                continue
            if self._same_text(slot, text):
                if ref.id is not None or self.ledger.policies.identical_text == "resend":
                    self._resend(slot, ref, lane, quiet=kind == "confirmation")
                    return slot, ""
            elif kind != "fragment" and ref.id is not None and ref.id == slot.wire_id and not slot.finished:
                self._replace(slot, text, "a changed snapshot replaced the arguments")
                return slot, ""
        if lane_has_calls:
            self.ledger.apply("complete-value-starts-new-call")
            if newest is not None and kind != "confirmation" and self._replays(newest, ref, text, lane):
                self._resend(newest, ref, lane)
                return newest, ""
        slot = self._open(lane, ref)
        rest = self._extend(slot, text, kind)
        parsed = self._parsed
        if parsed is not None:
            self._parsed = None
            if parsed[0] is text and slot._text is text:  # held just as it came
                self._own("_values")[lane] = (slot, slot.length, slot.revision, parsed[1])
        return slot, rest

    def _look_up(self, text: str) -> bytes:
        """The key under which _holding holds the calls whose text is ``text`` stripped. When nothing
        is stripped and the text is UTF-8 as it is (no surrogate to mend), it is also the digest of
        the text a call holds once given this very ``text`` (Slot.digest strips only JSON's
        whitespace, which str.strip strips too): kept for _remember (_looked)."""
        stripped = text.strip()
        try:
            data = stripped.encode("utf-8")
        except UnicodeEncodeError:
            self._looked = None
            return text_digest(unicode_utf8(stripped))
        key = text_digest(data)
        self._looked = (text, key) if len(stripped) == len(text) else None
        return key

    def _at_index(self, wire_id: str, owners: Sequence[Slot], index: int) -> list[Slot]:
        """The calls under ``wire_id`` (``owners``, its list) at ``index``, in their order: one list
        per index, each call put in its own as it joins the id's list (a call's index never
        changes), so an event with an id and an index no longer looks through all the id's calls."""
        at = self._own("_at_indexes").get(wire_id)
        if at is None:
            at = self._at_indexes[wire_id] = _AtIndexes()
        lists = at.lists
        for slot in owners[at.read :]:  # calls only ever join the id's list last
            lists.setdefault(slot.index, []).append(slot)
        at.read = len(owners)
        return lists.setdefault(index, [])

    def _under_id(self, wire_id: str, index: int | None) -> list[Slot] | None:
        """The list _chain gives for ``wire_id`` and ``index`` when the id has two calls or more:
        the id's own list (no index), or its list of those at ``index`` (_at_index)."""
        if index is None:
            calls = self._by_wire_id.get(wire_id)
            return calls if type(calls) is list else None
        at = self._at_indexes.get(wire_id)
        return None if at is None else at.lists.get(index)

    def _sorted_under(
        self, wire_id: str, index: int | None, calls: Sequence[Slot], text: str | None, kind: Kind | None = None
    ) -> list[Slot]:
        """Of ``calls``, the list _under_id gives for ``wire_id`` and ``index``, those ``text`` (of
        ``kind``) can land in, in their order; with no text, those not finished. A call whose value
        closed can only take a fragment that is its very text (a resend), and its text changes only
        when replaced (or when whitespace follows it): it is found by its text's digest, kept for
        the calls that end too (a finished call's text never changes). The walk of _route_text
        over them decides as its walk over all of ``calls`` would, and each call is sorted once: many
        calls under one id (Gemini's code parts, all given one id; Anthropic blocks or OpenAI calls
        reusing one, never ended one by one) no longer cost a walk over all of them per event. A
        snapshot (or an end) is still offered every call not finished: it replaces (or ends) the
        first (the newest) it can."""
        key = (wire_id, index)
        under = self._own("_under_ids").get(key)
        if under is None:
            under = self._under_ids[key] = _IdCalls()
        waiting = under.waiting
        waiting.extend(enumerate(calls[under.read :], under.read))  # calls only ever join the list last
        under.read = len(calls)
        if any(slot.status is not None or slot.state == "value_closed" for _, slot in waiting):
            texts, kept = under.texts, []
            for entry in waiting:
                slot = entry[1]
                if slot.status is None and slot.state != "value_closed":
                    kept.append(entry)
                elif slot.state != "truncated":  # a truncated call takes nothing
                    digest = slot.digest()
                    insort(texts.setdefault(digest, []), entry, key=_first)
                    if slot.status is None:  # replaced, it goes back to waiting (_replace, _unsorted)
                        under.closed[entry[0]] = slot
                        self._own("_closed_under").setdefault(slot, []).append((under, entry, digest))
            waiting = under.waiting = kept
        found: list[tuple[int, Slot]] = [*waiting]
        if text is None or kind != "fragment":
            closed = under.closed
            if any(slot.status is not None for slot in closed.values()):
                closed = under.closed = {at: slot for at, slot in closed.items() if slot.status is None}
            found += closed.items()
        if text is not None:
            # The keys _same_text can match: a JSON call's text stripped as str.strip() strips it, a
            # freeform call's whole text (its digest strips JSON's whitespace, as Slot.digest does).
            stripped, whole = unicode_utf8(text.strip()), unicode_utf8(text).strip(b" \t\r\n")
            found += under.texts.get(text_digest(stripped), ())
            if whole != stripped:
                found += under.texts.get(text_digest(whole), ())
        if len(found) > 1:
            found = sorted(dict(found).items(), key=_first)  # once each (a replaced call may be listed twice)
        return [slot for _, slot in found]

    def _replays(self, slot: Slot, ref: CallRef, text: str, lane: Lane) -> bool:
        """Is ``text`` the arguments of ``slot``, the call it follows, formatted anew (a gateway
        replaying what it parsed: spaces after colons, escapes, an object)? Only as a whole value
        equal to the call's, keys in the same order, numbers and literals as they were, under the
        same name and id; without an id, only where identical_text takes the same text as a resend.
        Cheap tests first, each one only a necessary condition: the letters of the texts (nearly
        every next call differs there), then the parsed values; equal values are told apart by
        their canonical forms (1, 1.0 and true are equal in Python). Each text is parsed once at
        the most (see _values)."""
        if (
            slot.freeform
            or slot.state not in ("value_closed", "flushed")
            or slot.status is _TRUNCATED
            or not self._names_agree(slot, ref)
            or (ref.id is None and self.ledger.policies.identical_text != "resend")
            or (ref.id is not None and ref.id != slot.wire_id)
            or not text.lstrip().startswith("{")
        ):
            return False
        self.ledger.work += len(text) + slot.length
        held_text = slot.text()
        spelled, last = _letters(text), self._spelled
        self._spelled = (text, spelled)  # the next call's held text, when this text opens a call as it is
        if spelled != (last[1] if last is not None and last[0] is held_text else _letters(held_text)):
            return False  # a value's letters (less a number's e) read alike in any formatting
        value = _object(text, self.limits.max_depth)
        self._parsed = (text, value)
        if value is None:
            return False
        known = self._values.get(lane)
        if known is None or known[0] is not slot or known[1] != slot.length or known[2] != slot.revision:
            self.ledger.work += slot.length
            value_held = _object(slot.text(), self.limits.max_depth)
            known = self._own("_values")[lane] = (slot, slot.length, slot.revision, value_held)
        held = known[3]
        # Equal canonical forms hold equal values, so unequal values end it without writing either.
        return held is not None and held == value and _canonical_digest(held) == _canonical_digest(value)

    def _replace(self, slot: Slot, text: str, why: str | None) -> None:
        """Latest wins (snapshot-resend); when it overrides arguments the call held, say so."""
        if why is not None:
            self.ledger.apply("snapshot-resend")
            self.ledger.diagnose("arguments-replaced", f"call {slot.id}: {why}")
        if self._held_under:  # it no longer holds the text it is listed under
            self._unhold(slot)
        self.machine.fire(slot, "replace", text)
        if self._closed_under:  # sorted by a text it no longer holds: sorted again (_sorted_under)
            for under, entry, digest in self._closed_under.pop(slot, ()):
                _unsorted(under, entry, digest)

    def _remember(self, slot: Slot, lane: Lane | None = None) -> None:
        """Index a complete call under its text in each of its lanes that holds another call (or in
        ``lane``, which just got its second). A resend is routed through the index only in a lane
        of two calls or more, and most lanes never get a second: their lone call is never indexed.
        A call whose value closed also gives up its own scanner (Slot.scan_over)."""
        if slot.state not in ("value_closed", "flushed") or slot.status is _TRUNCATED:
            return
        slot.scan_over(self._scanned)
        if lane is not None:
            lanes: tuple[Lane, ...] = (lane,)
        else:
            both = self._slot_lanes.get(slot) if self._slot_lanes else None
            if both is None:
                if type(self._lanes[slot.lane]) is Slot:
                    return  # the lone call of its lane (nearly every call): never indexed
                lanes = (slot.lane,)
            else:
                lanes = tuple(each for each in both if type(self._lanes[each]) is list)
                if not lanes:
                    return
        indexed = self._indexed.get(slot)
        if indexed is not None and indexed[0] == slot.length and indexed[1] == slot.revision:
            if lane is None:
                return  # already indexed under this very text
            key = indexed[2]
        else:
            looked = self._looked
            if looked is not None and looked[0] is slot._text:  # this very text, just looked up (_look_up)
                key = looked[1]
                self._looked = None
            else:
                key = slot.digest()
            # Indexed in all its lanes: with none named, or in the one named where it has no other
            # (the lane that just got its second call): a later call to index it reads no text again.
            if lane is None or (lane == slot.lane and not (self._slot_lanes and slot in self._slot_lanes)):
                self._own("_indexed")[slot] = (slot.length, slot.revision, key)
        held = self._held_under.get(slot)
        if held != key:
            if held is not None:  # listed under a text it held before: left there, _holding grows with the events
                self._unhold(slot)
            self._own("_held_under")[slot] = key
        in_order = self._in_call_order() if self._counts[True] else _ordinal  # a call less, without servers
        for each in lanes:
            _hold(self._own("_holding").setdefault((each, key), []), slot, in_order)

    def _unhold(self, slot: Slot) -> None:
        """Take ``slot`` out of _holding's lists in each of its lanes, under the text it was listed
        by (_held_under): it holds another now, or is being replaced."""
        key = self._held_under.pop(slot, None)
        if key is None:
            return
        holding = self._holding
        both = self._slot_lanes.get(slot) if self._slot_lanes else None
        for each in both or (slot.lane,):
            holders = holding.get((each, key), ())
            if len(holders) == 1:  # nearly always: no other call holds the text
                if holders[0] is slot:
                    del holding[(each, key)]
            elif holders:
                in_order = self._in_call_order()
                at = bisect_left(holders, in_order(slot), key=in_order)
                if at < len(holders) and holders[at] is slot:
                    del holders[at]

    def _own(self, table: str) -> dict[Any, Any]:
        """This stream's own ``table`` (one of the resend tables), made at its first write."""
        own: dict[Any, Any] | None = self.__dict__.get(table)
        if own is None:
            own = self.__dict__[table] = {}
        return own

    def _extend(self, slot: Slot, text: str, kind: Kind) -> str:
        if kind != "fragment":
            if self._same_text(slot, text):
                self._resend(slot, None, None, quiet=kind == "confirmation")
            elif kind == "confirmation" and slot.length:
                self._replace(slot, text, "the final arguments differ from those streamed")
            else:
                self._replace(slot, text, None)  # a first snapshot: nothing held to differ from
            return ""
        held = slot.length
        # _reads_as_cumulative's first test, repeated: most fragments skip the call (~0.3 us each).
        if held and len(text) >= held and self._reads_as_cumulative(slot, text):
            if len(text) == held:
                self._resend(slot, None, None)
                return ""
            self.ledger.diagnose(
                "cumulative-arguments", f"call {slot.id}: a fragment repeated all {held} characters held"
            )
            text = text[held:]
        self.ledger.work += len(text)
        state = slot.state
        if self._direct and (
            slot.store_waiting(text, self._staying, self._closes)
            if state == "accumulating"
            else state == "opened" and slot.store_first(text, self._opening, self._closing, self._scanned)
        ):
            return ""  # (the caller remembers a call whose value closed, as after fire())
        rest = self.machine.fire(slot, "append", text)
        if rest:
            self.ledger.diagnose(
                "split-fragment", f"call {slot.id}: its value closed mid-fragment; the rest opens another call"
            )
        return rest

    def _reads_as_cumulative(self, slot: Slot, text: str) -> bool:
        """Rule cumulative-when-append-impossible: the fragment begins with all the held text, and
        appended it could never be JSON, alone it can. Known by position (only ``:[,`` or a string
        lets a bracket follow), else by the parser, paid only by fragments that begin so."""
        held = slot.length
        if not held or len(text) < held or self.ledger.policies.cumulative_arguments != "detect" or slot.freeform:
            return False  # freeform input may repeat itself: no way to tell a cumulative resend
        if text[0] != slot.first_character():
            return False  # the common case, decided without decoding the held text
        self.ledger.work += held
        if not text.startswith(slot.text()):
            return False
        if not slot.between_tokens() or slot.last_significant() in (":", "[", ","):
            self.ledger.work += held + len(text)
            if is_json_prefix(slot.text() + text, undecided=True) or not is_json_prefix(text):
                return False
        self.ledger.apply("cumulative-when-append-impossible")
        return True

    def _blank(self, ref: CallRef, text: str) -> Slot | None:
        """Whitespace-only text: evidence of a call, and raw text kept where a call can hold it."""
        slot = self.call_seen(ref)
        if slot is None:  # held as a possible next call's name: the text stays with the newest call
            _, chain = self._chain(ref, "fragment")
            slot = chain[-1] if chain else None
        if slot is not None and slot.state in ("opened", "accumulating", "value_closed", "receiving"):
            self.machine.fire(slot, "append", text)
        return slot

    def _resend(self, slot: Slot, ref: CallRef | None, lane: Lane | None, *, quiet: bool = False) -> None:
        self.ledger.apply("snapshot-resend")
        if ref is not None:
            self._metadata(slot, ref)
        if lane is not None:
            self._pending_header.pop(lane, None)
        if not quiet:
            self.ledger.diagnose("resend", f"call {slot.id}: the same arguments again; not added")
        self.machine.fire(slot, "resend")

    @staticmethod
    def _names_agree(slot: Slot, ref: CallRef) -> bool:
        return ref.name is None or slot.name is None or ref.name == slot.name

    @staticmethod
    def _same_text(slot: Slot, text: str) -> bool:
        if slot.freeform:  # whitespace is input: only the very same text is a resend
            return bool(text) and slot.length == len(text) and slot.text() == text
        # Length first (inside holds): text offered to a long finished call costs O(1) unless as long.
        stripped = text.strip()
        return bool(stripped) and slot.length > 0 and slot.holds(unicode_utf8(stripped))

    def _metadata(self, slot: Slot, ref: CallRef) -> None:
        self.ledger.apply("metadata-once")
        if ref.name is not None:
            if slot.name is None and slot.finished:  # handed out nameless (invalid): it stays as it went
                what = f"name {ref.name!r} arrived after it finished without one; not taken"
                self.ledger.diagnose("missing-name", f"call {slot.id}: {what}")
            elif slot.name is None:
                slot.name_late(ref.name)
            elif ref.name != slot.name:
                self.ledger.diagnose(
                    "name-conflict", f"call {slot.id}: name {ref.name!r} arrived for {slot.name!r}; kept {slot.name!r}"
                )
        if ref.id is not None and slot.wire_id is None:
            slot.wire_id = ref.id
            slot.reread()  # (and the reply id below)
            self._add(self._by_wire_id, ref.id, slot)
            self.ledger.diagnose("late-id", f"call {slot.id}: wire id {ref.id!r} arrived after it opened")
            if ref.id != slot.id:
                # The call keeps the id its deltas carried; the provider pairs its result by the id
                # it issued, claimed here like any wire id (renamed if another call holds it).
                reply_id = self._ids.claim(ref.id)
                if reply_id != ref.id:
                    self.ledger.apply("duplicate-id-renamed")
                    self.ledger.diagnose(
                        "duplicate-id", f"call {slot.id}: late id {ref.id!r} already in use; answered as {reply_id!r}"
                    )
                slot.reply_id = reply_id

    # -- opening and finishing ----------------------------------------------------------------------

    def _open(self, lane: Lane, ref: CallRef) -> Slot:
        return self._open_call(lane, ref.index, ref.id, ref.name, ref.position, ref.server, ref.type)

    def _open_new(self, index: int, wire_id: str, name: str | None, whole: bool = False) -> Slot:
        """What _open_call(index, index, wire_id, name, 0, False, "function") does for a client
        function call at an index and a wire id never seen, with no name held for a next call (a
        whole call's chunk, a call's header: nearly every call of an OpenAI chat stream), without
        the branches that cannot apply to it (test_the_whole_call_shortcut_decides_as_the_decoder,
        test_the_call_header_shortcut_decides_as_the_decoder). ``whole``: the caller gives the call
        its first text at once (Slot.store_whole), which writes the fields of its text and state:
        they are left unwritten here, and the caller writes them with _no_text if it refuses."""
        if index >> 63:  # past 63 bits, or below 0 (a shift costs less than a call of bit_length)
            _shortcut_index(index)
        slots = self.slots
        if len(slots) >= self._max_calls:
            self._too_many_calls()
        counts = self._counts
        ordinal = counts[False]
        counts[False] = ordinal + 1
        ids = self._ids
        used = ids._used
        if wire_id not in used:  # IdAllocator.claim's commonest case, in line: the id is free
            used.add(wire_id)
            call_id = wire_id
        else:
            call_id = ids.claim(wire_id)
            if call_id != wire_id:  # taken before the stream, or by an id made for a call without one
                self._renamed(ordinal, wire_id, call_id)
        ledger = self.ledger
        # Slot(ordinal, index, index, wire_id, call_id, name, ledger, self._start, self._initial_json)
        # made in line: a class with an __init__ of Python code is called through type_call and
        # slot_tp_init into a C-level frame of its own, which cost a call half as much again as
        # these assignments (test_the_commonest_call_opens_as_its_slot_class_makes_it).
        slot = _new_object(Slot)
        slot.ordinal = ordinal
        slot.lane = slot.index = index
        slot.wire_id = wire_id
        slot.id = call_id
        slot.name = name
        slot.ledger = ledger
        slot._high = ""
        slot.arguments = slot.status = slot._unscanned = slot._call = None
        if not whole:  # _no_text, in line (a call less on every call's header)
            slot.state = self._initial_json
            slot.scanner = self._start
            slot._buf = b""
            slot._text = ""
            slot._length = slot._emitted = 0
        slots.append(slot)
        self._lanes[index] = slot
        self._by_wire_id[wire_id] = slot
        # build_call_opened(ordinal, call_id, wire_id, name, "function") in line, a frame less on
        # nearly every call (positional.unfrozen; test_outputs_built_in_line_equal_attrs_built_ones).
        opened = _OpenedBeingBuilt()
        opened.index = ordinal
        opened.id = call_id
        opened.wire_id = wire_id
        opened.name = name
        opened.type = "function"
        opened.thought_signature = None
        opened.__class__ = CallOpened
        ledger.outputs.append(opened)
        return slot

    def _no_text(self, slot: Slot) -> None:
        """Write the state and text fields of a call _open_new opened with ``whole`` (a call with no
        text yet, as Slot(...) makes it), when its first text was not stored whole."""
        slot.state = self._initial_json
        slot.scanner = self._start
        slot._buf = b""
        slot._text = ""
        slot._length = slot._emitted = 0

    def _too_many_calls(self) -> None:
        self.ledger.limit(f"more than {self.limits.max_calls} calls in one stream")  # raises

    def _renamed(self, ordinal: int, wire_id: str, call_id: str) -> None:
        self.ledger.apply("duplicate-id-renamed")
        self.ledger.diagnose(
            "duplicate-id", f"call at index {ordinal}: id {wire_id!r} already in use; renamed {call_id!r}"
        )

    def _open_call(
        self,
        lane: Lane,
        index: int | None,
        wire_id: str | None,
        name: str | None,
        position: int,
        server: bool,
        kind: str,
    ) -> Slot:
        """Open a call in ``lane`` (a CallRef's fields, taken apart). The commonest call, at a new index
        under a new id, opens by _open_new, which must stay what this does for it: the general
        routing's too (a Claude tool block's, an Ollama call's), which Slot(...) made, a call
        through the class's __init__ that cost more than the rest of the opening."""
        if (
            lane is index  # a client call's lane, its index (so never None)
            and not server
            and kind == "function"
            and wire_id is not None
            and not self._pending_header
            and not index >> 63  # (_open_new would refuse it as the chat shortcuts' index)
            and lane not in self._lanes
            and wire_id not in self._by_wire_id
        ):
            return self._open_new(index, wire_id, name)
        slots = self.slots
        if len(slots) >= self._max_calls:
            self._too_many_calls()
        counts = self._counts
        ordinal = counts[server]
        counts[server] = ordinal + 1
        if wire_id is None:
            self.ledger.apply("synthesized-id")
            call_id = self._ids.synthesize(ordinal, server)
            self.ledger.diagnose("synthesized-id", f"call at index {ordinal}: no id on the wire; given {call_id!r}")
        else:
            call_id = self._ids.claim(wire_id)
            if call_id != wire_id:
                self._renamed(ordinal, wire_id, call_id)
        pending = self._pending_header
        if pending:
            held = pending.pop(lane, None)
            if held is not None:
                name = name or held[0]
        freeform = kind in FREEFORM_TYPES  # the input kind, decided once per call
        slot = Slot(
            ordinal,
            lane,
            index,
            wire_id,
            call_id,
            name,
            self.ledger,
            self._start,
            self._initial_text if freeform else self._initial_json,
            server,
            kind,
            freeform,
        )
        slots.append(slot)
        lanes = self._lanes
        if lane in lanes:
            self._join(lane, slot)
        else:  # a new lane's lone call (nearly every call): what _join does there, without its calls
            lanes[lane] = slot
        if index is None and isinstance(lane, tuple) and lane[0].endswith("id"):
            # Without an index, a later bare continuation at the same position means this call.
            # Only for a call in an id lane: one opened without an index under a known id sits in
            # its namesake's index lane, and joining it to another index lane would misroute text.
            second: Lane = (lane[0].replace("id", "position"), position)
            self._join(second, slot)
            self._own("_slot_lanes")[slot] = (lane, second)  # a call in one lane has no entry: its lane is slot.lane
        if wire_id is not None:
            by_id = self._by_wire_id
            if wire_id in by_id:
                self._add(by_id, wire_id, slot)
            else:
                by_id[wire_id] = slot
        if not server:
            self.ledger.outputs.append(build_call_opened(ordinal, call_id, wire_id, name, kind))
        return slot

    def _in_call_order(self) -> Callable[[Slot], int]:
        """The key that sorts calls in the order they opened, a lane's order: their ordinals while
        the stream has no server call, else their places among all calls (_order, brought up to
        date here: calls only ever join the list last)."""
        if not self._counts[True]:
            return _ordinal
        order = self._order
        if order is None:
            order = self._order = {}
        slots = self.slots
        for at in range(len(order), len(slots)):
            order[slots[at]] = at
        return order.__getitem__

    def _join(self, lane: Lane, slot: Slot) -> None:
        """Put ``slot`` last in ``lane``."""
        calls = self._add(self._lanes, lane, slot)
        if type(calls) is list and len(calls) == 2:
            self._remember(calls[0], lane)  # the lane's first call, not indexed alone

    @staticmethod
    def _add(table: dict[Any, Calls], key: Any, slot: Slot) -> Calls:
        """Put ``slot`` last in ``table[key]``; return the calls there now."""
        calls = table.get(key)
        if calls is None:
            calls = table[key] = slot
        elif isinstance(calls, Slot):
            calls = table[key] = [calls, slot]
        else:
            calls.append(slot)
        return calls

    def _finish(self, slot: Slot, trigger: str, cut_by: str = "") -> None:
        ending = self._ending
        if ending is not None and trigger == "end" and slot.state == "value_closed" and not slot._high:
            self._end_closed(slot, ending)  # (a surrogate half waiting: fire() settles it first)
            return
        ledger = self.ledger
        # A violation found as the call ends (a lone surrogate half, JSON that never closed, no name)
        # is raised once the call has its status and its end is reported: raised mid-action, it would
        # leave a call in a terminal state with none, which close() would then try to cut; raised
        # before _ended, the result would hold a finished call no CallFinished ever told.
        deferring = ledger.strict and not ledger.defer
        ledger.defer = ledger.defer or deferring
        try:
            self.machine.fire(slot, trigger, cut_by)
        except LimitExceeded:
            if slot.status is not None:  # its finishing bytes passed a limit: it ended even so
                self._ended(slot)
            raise
        else:
            self._ended(slot)
        finally:
            if deferring:
                ledger.defer = False
        if deferring and ledger.deferred is not None:
            error, ledger.deferred = ledger.deferred, None
            raise error

    def _end_closed(self, slot: Slot, ending: tuple[str, str]) -> None:
        """End ``slot``, whose value closed, normally: the transition fire() would take (``ending``,
        its label and destination: the state's one, unguarded, SpecMachine.sole) taken without
        its dispatch (Slot.end_closed). Never in strict mode (no _ending there), so nothing is
        deferred."""
        try:
            if slot.end_closed(ending[0], ending[1]):  # by position: a starred call costs more
                self.ledger.rules["parse-once-at-finish"] += 1  # a flat object's: its counts left to us
                self.ledger.transitions[ending[0]] += 1
        except LimitExceeded:
            if slot.status is not None:  # its finishing bytes passed a limit: it ended even so
                self._ended(slot)
            raise
        self._ended(slot)

    def _ended(self, slot: Slot) -> None:
        """Report a call that has just ended (its status is set)."""
        if self._slot_lanes or type(self._lanes[slot.lane]) is not Slot:
            self._remember(slot)
        elif slot.scanner is not self._scanned and slot.state == "flushed" and slot.status is not _TRUNCATED:
            slot.scan_over(self._scanned)  # what _remember does to a lane's lone call
        if slot.name is None:
            self.machine.fire(slot, "unnamed")  # the spec decides what a nameless call is reported as
        call = slot._call
        # None: the commonest call, neither a server call nor one whose text a snapshot replaced
        # after it went out (Slot._call): its ``server`` and ``_diverged``, class attributes whose
        # read through the call Python 3.11 does not specialize, are not read.
        if call is not None and slot.server:
            return
        outputs = self.ledger.outputs
        # Unless all of the text went out as it came (nearly every call: no tail, no text to read).
        if slot._emitted != slot._length or (call is not None and slot._diverged):
            tail = slot.unsent_tail()
            if tail:
                outputs.append(build_arguments_delta(slot.ordinal, tail))
        if call is None:  # signature, type, input, item and reply id: their class defaults (nearly every call)
            # Slot.to_call in line, a frame less on nearly every call's end; the frozen call built
            # as its assignable twin, a frame less again (positional.unfrozen;
            # test_outputs_built_in_line_equal_attrs_built_ones): every field, then the class.
            held = slot._text
            if held is None:  # not decoded yet (nearly every call's end decoded it)
                held = slot.text()
            ledger = self.ledger
            # With no decoder adopted (OpenAI chat's is not), Ledger.output_indexed is calls_indexed:
            # read without the property and its getattr, for every call of such a stream.
            if ledger.calls_indexed if ledger._decoder is None else ledger.output_indexed:
                output_index = slot.index if slot.index is not None else ledger.place_of(slot.wire_id)
            else:
                output_index = None
            slot._call = call = _ToolCallBeingBuilt()
            call.index = slot.ordinal
            call.id = slot.id
            call.wire_id = slot.wire_id
            call.name = slot.name
            call.arguments = slot.arguments
            call.arguments_json = held
            call.status = slot.status
            call.thought_signature = call.input = call.item = call.reply_id = None
            call.type = "function"
            call.output_index = output_index
            call.__class__ = ToolCall
        elif not call:  # a field past them written (Slot.reread): to_call makes it
            call = slot.to_call()
        finished = _FinishedBeingBuilt()  # build_call_finished(call) in line, as _open_new's
        finished.call = call
        finished.__class__ = CallFinished
        outputs.append(finished)


class _Run:
    """Fragments held back for one call (Registry.gather): their texts, their UTF-8, how long the
    call's text is with them (``reach``, in characters) and how many bytes they take (``size``),
    and the room the limits leave them, in bytes: a text never has more characters than UTF-8
    bytes, so a run within the tighter of the two limits is within both."""

    __slots__ = ("data", "first", "index", "reach", "room", "size", "slot", "texts")

    def __init__(self, slot: Slot, index: int, ledger: Ledger) -> None:
        self.slot, self.index, self.first = slot, index, slot.first_character()
        self.texts: list[str] = []
        self.data: list[bytes] = []
        self.reach, self.size = slot.length, 0
        self.room = min(ledger.max_argument_chars - slot.length, ledger.max_held_bytes - ledger.held_bytes)


class _AtIndexes:
    """The calls under one wire id by index (Registry._at_index), and how many of them are put."""

    __slots__ = ("lists", "read")

    def __init__(self) -> None:
        self.read = 0
        self.lists: dict[int | None, list[Slot]] = {}


class _IdCalls:
    """The calls under one wire id (at one index) as Registry._sorted_under sorts them, each with
    its place among them: how many it has read, those still open (or replaced) when last read, the
    finished ones (but truncated) and those whose value closed by the digest of their text
    (Slot.digest), each list in order, and those whose value closed, not finished when sorted."""

    __slots__ = ("closed", "read", "texts", "waiting")

    def __init__(self) -> None:
        self.read = 0
        self.closed: dict[int, Slot] = {}  # by place: a replaced call leaves it (_unsorted)
        self.waiting: list[tuple[int, Slot]] = []
        self.texts: dict[bytes, list[tuple[int, Slot]]] = {}


def _first(entry: tuple[int, Slot]) -> int:
    return entry[0]


def _unsorted(under: _IdCalls, entry: tuple[int, Slot], digest: bytes) -> None:
    """Take a replaced call out of where _sorted_under put it by the text it held, back to
    waiting: left there, each replacement of a call would list it once more, and every later
    event under its id would read the longer lists (quadratic in the events)."""
    under.closed.pop(entry[0], None)
    listed = under.texts.get(digest)
    if listed:
        at = bisect_left(listed, entry[0], key=_first)
        if at < len(listed) and listed[at] is entry:
            del listed[at]
            if not listed:
                del under.texts[digest]
    under.waiting.append(entry)


_NOT_LETTERS = bytes(b for b in range(256) if not (chr(b).isascii() and chr(b).isalpha()) or b in b"eE")
"""The bytes that are no ASCII letter, or are ``e``/``E`` (a number's exponent)."""
_ESCAPE = re.compile(rb"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)
_MAYBE_LETTER = re.compile(rb"\\u00[4-7]")


def _letters(text: str) -> bytes:
    """The ASCII letters but e and E that JSON text spells, in order: those of its strings as they
    read once unescaped (``\\u0041`` is an A; the n of ``\\n`` is none), its keys' and its literals'.
    Texts of one value in any formatting spell the same (a number's digits are no letters)."""
    data = text.encode("utf-8", "surrogatepass")
    if b"\\" in data:
        # Escapes read left to right in one pass (an escaped backslash before u0041 is no A); a
        # letter only comes out of \\u004_ to \\u007_, and without any, every escape is no letter.
        data = _ESCAPE.sub(_unescaped if _MAYBE_LETTER.search(data) else b"", data)
    return data.translate(None, _NOT_LETTERS)


def _unescaped(match: re.Match[bytes]) -> bytes:
    code = match[1]
    return bytes([int(code, 16)]) if code is not None and int(code, 16) < 128 else b""


def _object(text: str, max_depth: int) -> dict[str, Any] | None:
    """The object ``text`` is as strict JSON, or None when it is not one within the nesting limit."""
    if nesting_exceeds(text, max_depth):
        return None  # json.loads recurses: text nested past the limit is not parsed
    try:
        value, _ = parse_strict(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _canonical_digest(value: dict[str, Any]) -> bytes:
    """The digest of an object's JSON text in one form (keys in their order, numbers as parsed)."""
    return text_digest(exact_dumps(value).encode("utf-8", "surrogatepass"))


def _listed(calls: Calls | None) -> Sequence[Slot]:
    """The calls of a table entry as a sequence (a new tuple for a lone call: the routing's
    general path only; the shortcuts read an entry as it is)."""
    if calls is None:
        return ()
    return (calls,) if isinstance(calls, Slot) else calls


def _ordinal(slot: Slot) -> int:
    return slot.ordinal


def _hold(holders: list[Slot], slot: Slot, in_order: Callable[[Slot], int]) -> None:
    """Put ``slot`` among the calls holding one text, once, in the order they opened (``in_order``:
    Registry._in_call_order, no two calls alike). Nearly always it is the newest and goes last
    without a search: sorting the list on each insert made many calls of one text (Ollama's
    parallel calls at index 0 with ``{}``, Claude's tool blocks without an index) quadratic."""
    place = slot.ordinal if in_order is _ordinal else in_order(slot)
    if not holders or (holders[-1].ordinal if in_order is _ordinal else in_order(holders[-1])) < place:
        holders.append(slot)
        return
    at = bisect_left(holders, place, key=in_order)
    if at == len(holders) or holders[at] is not slot:
        holders.insert(at, slot)


@functools.cache
def _shared(machine: SpecMachine, max_depth: int, end_directly: bool) -> tuple[Any, ...]:
    """What every stream's registry reads from its (immutable, shared) machine and depth limit,
    read once: the initial states of a JSON and a text call, the start and the closed scanner, and
    the labels (and destination) of the transitions the registry takes without ``fire()``, each
    checked against the spec as ``SpecMachine.staying``, ``.first`` and ``.sole`` check it; then
    whether those may skip the machine's dispatch (not on the reference executor), and the normal
    end of a closed value taken without ``fire()`` (None: through it, as ``end_directly`` off asks)."""
    initials = machine.initials
    direct, ending = not machine.reference, machine.sole("end", "value_closed", "parse_arguments")
    return (
        initials["json"],
        initials["text"],
        start_scanner(max_depth),
        closed_scanner(max_depth),
        machine.staying("append", "accumulating", "store_fragment"),
        machine.first("append", "opened", "value_complete", "store_fragment"),
        machine.first("append", "accumulating", "value_complete", "store_fragment"),
        machine.otherwise("append", "opened", "store_fragment"),
        direct,
        ending if direct and end_directly else None,
    )
