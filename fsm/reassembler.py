"""``Reassembler``: one stream in, its tool calls out. The public face of the engine.

Feed it raw bytes (``feed_bytes``), wire payloads (dicts), SDK objects (anything with
``model_dump()`` or ``to_dict()``) or already-decoded events, in order. Each call returns the output
events it caused (call opened, argument delta, call finished); ``close()`` returns the result.

Guarantees: only :mod:`fsm.errors` exceptions escape. A wire event that cannot be used (not UTF-8, not JSON, not an
object, such as a proxy's ``data: keep-alive``) is reported as ``bad-event`` and skipped in lax mode, raised as
:class:`FramingError` in strict mode. After any raised error the stream takes no more input, and ``close()`` returns the
result so far: the calls completed before the fault, the open ones truncated with their text (``stream-failed``).

A whole stream in one call: :func:`fsm.reassemble` / :func:`fsm.areassemble` (``fsm/oneshot.py``).

One room: every kind of input meets the framer, decoder, registry and ledger here, and the order in
which they are told (each event's number, fragments held back settled before anything else is read)
is what this class is for; split up, that order would be kept in several places.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

from fsm.content import TurnContent
from fsm.engine.ledger import MESSAGE_CHARS, WORD_CHARS, Ledger, cut_by, shortened
from fsm.engine.registry import Registry
from fsm.errors import (
    FramingError,
    InvalidInput,
    LimitExceeded,
    LocalProtocolError,
    RemoteProtocolError,
    ToolcallFSMError,
    UnsupportedProvider,
    shown,
)
from fsm.events import (
    EVENT_TYPES,
    NORMAL_FINISHES,
    TURN_CONTENT_TYPES,
    ArgumentsFragment,
    ArgumentsSnapshot,
    CallEnd,
    CallRef,
    CallSeen,
    Event,
    StreamEnd,
    UsageReport,
    event_fault,
)
from fsm.fieldcheck import vouch
from fsm.jsontext import TOO_DEEP_TO_READ, loads_event, nesting_exceeds
from fsm.options import Limits, Policies, default_limits, default_policies, taken_ids
from fsm.results import CallOpened, Diagnostic, Output, Result, ServerToolResult, ToolCall, build_result
from fsm.wire.decoders import (
    BEDROCK_ERRORS,
    BEDROCK_EVENTS,
    Decoder,
    detect_provider,
    error_in,
    make_decoder,
)
from fsm.wire.decoders._claude_fallback import (
    UNTERMINATED,
    declined_cut,
    final_fallback,
    handed_over_at,
    set_apart,
)
from fsm.wire.decoders._fields import exception_message
from fsm.wire.decoders.chat_chunks import LEAN_INDEX_PATH, LEAN_TEXT_PATH, lean_fragment_in
from fsm.wire.decoders.chunk_form import FormSpec, FragmentForm
from fsm.wire.decoders.openai_chat import OpenAIChatDecoder
from fsm.wire.detect import cut_before_telling
from fsm.wire.faults import Fault, Payload
from fsm.wire.framing import DONE, Detector, Framer, make_framer

if TYPE_CHECKING:
    from types import ModuleType

    from fsm.engine.partial import PartialReader  # imported when a preview is first asked for
    from fsm.engine.slot import Slot
    from fsm.wire.choices import ChoicePicker
    from fsm.wire.langchain_places import LangChainStream

_sdk: ModuleType | None = None
"""fsm.wire.sdk once an SDK object was fed (see _sdk_readers)."""


def _sdk_readers() -> ModuleType:
    """The SDK objects' readers, loaded with the first SDK object: they bring LangChain's, whose
    loading costs about as much as the rest of a replay's reading, and a stream of dicts or
    bytes never needs them."""
    global _sdk
    from fsm.wire import sdk

    _sdk = sdk
    return sdk


_FREE_LEARNINGS: Final = 8
"""Forms of events learnt before learning is held to one per _EVENTS_A_LEARNING events."""
_EVENTS_A_LEARNING: Final = 8
_LEAN_FORM: Final = FormSpec(LEAN_TEXT_PATH, None, place_at=LEAN_INDEX_PATH)
"""The form of an OpenAI chat bare fragment: its index is a hole, so one form reads every call's."""
_new_object = object.__new__
"""Every stream's ledger is made bare and its ``__init__`` called as a function: what calling the
class does (type.__call__ makes the object, then finds and calls ``__init__``, its keywords passed
through a dict), at some 1,150 fewer instructions, 1.4% of a stream with no call. (The registry,
called with no keyword, gained nothing so.)"""
_ledger_init = Ledger.__init__
"""Read once: an attribute of a class, read in a function, is an unspecialised load (Python 3.11)."""
_CHAT_WIRE: Final = OpenAIChatDecoder.name
_NONE_LISTED: Final[frozenset[int]] = frozenset()
_TOO_DEEP: Final = f"the event {TOO_DEEP_TO_READ}"
"""Why an event that ran out of Python's stack as it was read is a limit (LimitExceeded): nested
deeper than a recursive walk goes, or read from deep in the caller's own stack (Python 3.11)."""


def _busy() -> LocalProtocolError:
    """The refusal of a feed(), feed_bytes(), close() or fork made while another call of the same
    stream is at work (policy one-call-at-a-time). Nothing was taken in; the call at work goes on."""
    return LocalProtocolError(
        "this reassembler is reading an event (another thread's call, or an object of the caller's own fed to it"
        " calling it back): feed(), feed_bytes() and close() take one call at a time; nothing was taken in"
    )


class Reassembler:
    """One stream's tool calls, reassembled: feed it the stream in order, then ``close()`` it.

    ``provider`` names the wire (``openai-chat``, ``openai-responses``, ``anthropic``, ``gemini``,
    ``ollama``, ``bedrock``, ``cohere``) or is ``"auto"``: detected from the first event (and, for
    bytes, the framing from the first bytes). ``strict=True`` raises :class:`fsm.RemoteProtocolError`
    at the first diagnostic of severity ``violation``. ``policies`` chooses the readings of ambiguous
    wire cases, ``limits`` bounds memory and work, ``taken`` lists ids used by earlier turns of the
    conversation, which new calls must not reuse. ``choice`` names the one choice to reassemble
    of an ``openai-chat`` or ``gemini`` stream that carries several (``n`` or ``candidateCount``
    above 1; one reassembler per choice, each fed the whole stream): the others are skipped
    (``choice-skipped``, info). Without it, only choice 0 is read and any other is a violation
    (``choice-ignored``). ``content_deltas=True`` adds the turn's text, reasoning and refusal to the
    outputs as they arrive (:class:`fsm.ContentDelta`, among the calls' outputs in the stream's order),
    for a gateway that re-emits them (:class:`fsm.DeltaEmitter`); the result holds them either way. One
    instance per stream, one call at a time: a ``feed``, ``feed_bytes``, ``close`` or fork made while
    another is at work (another thread's, or a call back from an object being read) is refused with
    LocalProtocolError, nothing taken in (policy one-call-at-a-time). ``copy.copy``, ``copy.deepcopy``
    and ``pickle`` fork it: an independent reassembler holding the stream so far, which goes on from there.
    """

    _chat: OpenAIChatDecoder | None  # an OpenAI chat stream's decoder, for its shortcuts (written by every stream)
    # Written by every stream's construction, though most never change them, because close() reads
    # each: a class default read through the instance is an unspecialised attribute load in Python
    # 3.11 (some 200 instructions), where the store costs some 80 and the read after it a few.
    _langchain: str | None  # the provider LangChain chunks tell they were made from (source_provider)
    _framer: Framer | None
    _detector: Detector | None  # made by the first bytes: holds them until they tell the framing
    # Claude tool blocks that stopped with their JSON open, until the next block tells whether a decline
    # cut them (policy decline-cut-waits): their diagnostics' places, and the first's strict error held back.
    _cut: tuple[list[int], RemoteProtocolError | None] | None
    # The calls a re-emitted stream's error listed as a declined model's (policy declines-read-back), by index
    _listed_declined: frozenset[int]
    # Fields most streams never write (a stream of dicts reads no bytes and holds no SDK object) are
    # class defaults, which a stream overrides in its own instance only when it writes one.
    _sdk_held: LangChainStream | None = None  # what the stream's SDK objects leave to a later one
    _langchain_named: str | None = None  # the integration the first LangChain chunk to name one named
    _unreadable = False  # the bytes are no framing (not-a-stream): the rest is not read
    _previews: dict[int, tuple[int, PartialReader]] | None = None  # per call asked: its text's revision, reader
    _placed: tuple[CallRef, Slot] | None = None  # a snapshot's ref and the call it landed in, for the next event
    _picker: ChoicePicker | None = None  # cuts each payload down to the choice the caller named (fsm.wire.choices)
    # Written by _use (for the decoder the provider names, or the first event detects) before any
    # event reads them, or read rarely: no write of each in every stream's construction.
    _decoder: Decoder | None = None
    _commonest: Callable[[dict[str, Any]], tuple[CallRef, str] | None] | None = None  # the shapes but OpenAI chat's
    _said: Callable[[dict[str, Any], TurnContent], bool | None] | None = None  # their commonest text, reasoning
    _said_form_of: Callable[[dict[str, Any]], tuple[FormSpec, Any] | None] | None = None  # such an event's form
    _said_at: Callable[[Any, Any, str, TurnContent], bool | None] | None = None  # what it does with a form's read
    _said_form: tuple[FragmentForm, Any] | None = None  # the form of the last one learnt from the wire, its kind
    _said_learnt = 0  # the forms of those learnt (see _ingest_said)
    _said_parsed = 0  # those parsed since the last learning
    _said_paid = True  # the form last learnt read an event (or none was learnt yet)
    _form_of: Callable[[dict[str, Any]], FormSpec] | None = None  # the decoder's (see _use)
    _fragment_at: Callable[[Any, str], tuple[CallRef, str] | None] | None = None
    # What _learning counts (each written by its first use: wire bytes only).
    _forms_learned = 0
    _parsed = 0  # the wire events parsed (see _learning)
    _unlearnt = 0  # the commonest events parsed since the last learning (see _learning)
    _learnt_at = (0, 0)  # the events and the parsed events at the last learning
    _unformed: Any = None  # the place of the last such event parsed: see _learning

    def __init__(
        self,
        provider: str = "auto",
        *,
        strict: bool = False,
        policies: Policies | None = None,
        limits: Limits | None = None,
        taken: Iterable[str] = (),
        choice: int | None = None,
        content_deltas: bool = False,
    ) -> None:
        # A caller's own object among the options that raises as it is read (policy caller-object-raises)
        # is answered below: a try costs nothing until something raises, where a wrapper would cost
        # every stream a call.
        try:
            if limits is not None and not isinstance(limits, Limits):
                raise InvalidInput(f"limits must be a Limits, not {type(limits).__name__}")
            if policies is not None and not isinstance(policies, Policies):
                raise InvalidInput(f"policies must be a Policies, not {type(policies).__name__}")
            if not isinstance(provider, str) or type(strict) is not bool or type(content_deltas) is not bool:
                # strict="no" would be true, silently
                wrong = (
                    ("provider", provider, "str")
                    if not isinstance(provider, str)
                    else ("strict", strict, "bool")
                    if type(strict) is not bool
                    else ("content_deltas", content_deltas, "bool")
                )
                raise InvalidInput(f"{wrong[0]} must be a {wrong[2]}, not {type(wrong[1]).__name__}")
            self.provider = provider
            """The provider as named at construction (``"auto"`` until the result names the detected one)."""
            self.strict = strict
            """Whether violations raise (see the module's docstring for what lax mode does instead)."""
            self.limits = limits = limits or default_limits()
            """The limits in force."""
            ledger = _new_object(Ledger)
            _ledger_init(ledger, policies or default_policies(), strict=strict, limits=limits)
            self.ledger = ledger
            """Internal: the engine's record of outputs, diagnostics and rule counts (for tests and tools)."""
            self.registry = Registry(ledger, limits, taken if type(taken) is tuple and not taken else taken_ids(taken))
            """Internal: the slot registry that decides which call each event belongs to."""
            self._content = TurnContent(ledger, limits.max_content_chars)
            if content_deltas:  # the text, reasoning and refusal pieces go out among the calls' outputs
                self._content.heard = ledger.emit
            self._form: FragmentForm | None = None  # the form of the last commonest event learnt from the wire
            if provider == "openai-chat" and choice is None:  # the commonest stream: what _use makes of it, in line
                self._decoder = self._chat = OpenAIChatDecoder()
            else:
                self._chat = None
                if choice is not None:
                    from fsm.wire.choices import ChoicePicker, checked_choice  # only for a stream of several choices

                    self._picker = ChoicePicker(provider, checked_choice(choice, provider))  # auto is refused
                if provider != "auto":
                    self._use(make_decoder(provider, ledger.policies))
            self._invoked = False  # a boto3 InvokeModel chunk was fed: Bedrock's own events are not the model's
            self._framer = self._detector = self._cut = self._langchain = None
            self._listed_declined = _NONE_LISTED
            self._events = 0
            self._finish: tuple[StreamEnd, int] | None = None  # the first finish reason, and its event
            self._closed: Result | None = None
            self._fault: ToolcallFSMError | None = None
            # Closed, failed, or read from bytes: what feed() asks before reading (one look on every event).
            self._gated = False
            # One token, taken by feed(), feed_bytes() and close() while they work and put back when they
            # return (policy one-call-at-a-time): a list's pop is atomic, so of two calls at once (two
            # threads, or an object of the caller's calling back) one finds it gone and is refused.
            self._turn = [True]
        except ToolcallFSMError:
            raise
        except Exception as exc:
            from fsm.foreign import caller_fault  # only once something raised

            given = {"provider": provider, "strict": strict, "policies": policies, "limits": limits, "taken": taken}
            given.update(choice=choice, content_deltas=content_deltas)
            fault = caller_fault(given, exc, "Reassembler.__init__()", self)
            if fault is None:
                raise
            raise fault from exc

    def __copy__(self) -> Reassembler:
        """A fork of the stream, as ``copy.deepcopy`` makes it: a shallow copy would share the calls,
        the framing and the ledger with this one, so that feeding either changed both and closing
        one left the other taking input into a finished stream. (``pickle`` forks it too.)"""
        from copy import deepcopy

        fork: Reassembler = deepcopy(self)
        return fork

    def __getstate__(self) -> dict[str, Any]:
        """What a fork (``copy``, ``deepcopy``, ``pickle``) takes: refused while a call is at work
        (another thread's feed, say), whose stream is half read and whose token is out."""
        if not self._turn:
            raise _busy()
        return self.__dict__

    # -- input ------------------------------------------------------------------------------------

    def feed(self, item: Any) -> list[Output]:
        """Feed one wire payload, SDK object or decoded event; return the outputs it caused. While
        ``feed_bytes`` holds the bytes of an event not yet ended, InvalidInput, nothing taken in: the
        event would be read ahead of them."""
        turn = self._turn
        try:
            turn.pop()
        except IndexError:
            raise _busy() from None
        try:
            if self._gated:  # closed, failed, or fed bytes
                self._check_open()  # raises when closed or failed
                if self._holding():  # the calls out of order, the events misnumbered
                    raise InvalidInput(
                        "feed() while feed_bytes() holds the bytes of an event not yet ended:"
                        f" {type(item).__name__} fed now would be read ahead of it; feed the rest of the bytes first"
                    )
            ledger = self.ledger
            counted, current = self._events, ledger.event
            try:
                if type(item) is dict:  # _ingest of a dict, in line: a call less on every event of most streams
                    ledger.event = self._events = counted + 1
                    chat = self._chat
                    if chat is None:
                        self._unshortcut(item)
                    elif (self._finish is not None or not chat.shortcut(item, self.registry, self._content)) and (
                        # _unshortcut's first question, asked here: a call less on every stream's last chunk
                        not chat.ending(item, self._content, None if self._finish else self._finished, self.registry)
                    ):
                        self._unshortcut(item, asked=True)
                else:  # an SDK object, whose methods are the caller's: one that feeds or closes it is refused (_busy)
                    self._ingest(item)
            except RecursionError:  # a caller's own deeply nested dict, seen by a recursive walk (or a deep caller)
                self._failed(LimitExceeded(_TOO_DEEP, event=self._events, rule="limits"))
            except InvalidInput:
                # Nothing was taken in and the stream goes on: the events after it are numbered as if
                # it had never come, so their diagnostics name the same events as the stream without it.
                self._events, self.ledger.event = counted, current
                raise
            except ToolcallFSMError as exc:
                self._failed(exc)
            except MemoryError:
                raise
            except Exception as exc:  # after the errors of ours that are ValueErrors too (InvalidOption)
                # A caller's own dict may hold an int no JSON text does (the parser refuses it): one past
                # the int-string conversion limit, which every str() of it meets (an id, a finish, a message).
                said = exc.args[0] if type(exc) is ValueError and exc.args else None  # (a caller's own words may raise)
                if type(said) is str and "integer string conversion" in said:
                    why = "the event holds a number with more digits than Python writes as text"
                    self._failed(LimitExceeded(why, event=self._events, rule="limits"))
                from fsm.foreign import caller_fault  # only once something raised

                # A caller's own object in the event raised (policy caller-object-raises): how much of
                # the event was taken in before it did is not known, so the stream stops there. On
                # plain data, the error is the engine's own: it goes up as it is.
                fault = caller_fault(item, exc, f"event {self._events}", self)
                if fault is None:
                    raise
                fault.event = self._events
                self._failed(fault)
            out, ledger.outputs = ledger.outputs, []  # Ledger.drain inlined: a call less on every event
            return out
        finally:
            turn.append(True)

    def feed_bytes(self, data: bytes) -> list[Output]:
        """Feed raw response bytes (SSE, NDJSON, a JSON array or document, or an AWS event stream: the first bytes
        tell)."""
        if not issubclass(type(data), bytes | bytearray | memoryview):  # (isinstance asks the object's __class__)
            raise InvalidInput(f"feed_bytes takes bytes, not {type(data).__name__} (use feed() for parsed events)")
        turn = self._turn
        try:
            turn.pop()
        except IndexError:
            raise _busy() from None
        try:
            self._check_open()
            try:
                data = bytes(data)
            except Exception as exc:  # a bytes subclass of the caller's, its __bytes__ raising: nothing taken in
                from fsm.foreign import caller_fault

                fault = caller_fault(data, exc, "feed_bytes()")
                if fault is None:
                    raise
                raise fault from exc
            if data:
                self._gated = True  # feed() asks whether an event's bytes are held
            try:
                self._feed_bytes(data)
            except ToolcallFSMError as exc:
                self._failed(exc)
            except RecursionError:  # a decoder's walk of an event read deep in the caller's stack
                self._failed(LimitExceeded(_TOO_DEEP, event=self._events, rule="limits"))
            return self.ledger.drain()
        finally:
            turn.append(True)

    def drain(self) -> list[Output]:
        """Outputs not yet handed out: those ``close()`` caused, or the event whose error was raised."""
        return self.ledger.drain()

    def close(self, *, interrupted: BaseException | None = None) -> Result:
        """End the stream: flush framing, finish every open call, return the result. The output events this causes are
        kept for ``drain()``.

        In strict mode a violation found while closing (an unterminated call, a cut last event), or a limit passed
        there, is raised after the result is complete; from then on ``close()`` returns that result (lax mode reports
        such a limit as ``stream-failed``: ``close()`` always returns). The last event, when its end never came, is
        read as ``feed_bytes`` would read an ended one: a violation in it stops the stream there (``stream-failed``).
        After an error raised earlier, ``close()`` returns the result so far and raises nothing. What the finish
        reason says of the calls names its event.

        ``interrupted``: the error that stopped the caller's stream before it ended (a network error, a
        cancellation). The result says so (``stream-interrupted``, naming it, in place of ``no-finish-reason``), its
        unfinished calls are cut by it, and nothing is raised, in strict mode too: the caller's error is what goes
        up (so a violation in the last event read as it closes, cut by the interruption, is reported as lax mode
        reports it). This package's own error raised earlier (``stream-failed``) is not the caller's: given here, it
        changes nothing."""
        turn = self._turn
        try:
            turn.pop()
        except IndexError:
            raise _busy() from None
        try:
            if self._closed is not None:
                return self._closed
            if interrupted is not None:
                from fsm.interrupted import described  # only for a stream the caller's side stopped

                stopped = None if interrupted is self._fault else described(interrupted)
                return self._close(stopped)
            return self._close(None)
        finally:
            turn.append(True)

    def _declined(
        self, calls: tuple[ToolCall, ...], kept: tuple[ServerToolResult, ...]
    ) -> tuple[tuple[ToolCall, ...], tuple[ToolCall, ...]]:
        """The calls to run, and those a declined model made before the turn's last ``fallback``
        block (policy fallback-declined-calls), each reported: the stream handed them out already."""
        cut, listed = final_fallback(kept), self._listed_declined
        if cut is None and not listed:
            return calls, ()
        calls, declined = set_apart(calls, cut) if cut is not None else (calls, ())
        if listed:  # a re-emitted stream's, its error listing them (policy declines-read-back)
            declined = tuple(sorted((*declined, *(c for c in calls if c.index in listed)), key=lambda c: c.index))
            calls = tuple(call for call in calls if call.index not in listed)
        ledger = self.ledger
        at, ledger.event = ledger.event, None
        for call in declined:
            if call.index in listed:
                made = f"call {shown(call.id)} ({shown(call.name)}),"
                why = "which the stream's error listed as a declined model's, is not to run nor go back"
            else:
                made = f"call {shown(call.id)} ({shown(call.name)}) at content block {call.output_index}"
                why = f"came before the fallback block at {cut}: its model declined, so it is not to run nor go back"
            ledger.diagnose("declined-call", f"{made} {why} (Result.declined_calls)")
        ledger.event = at
        return calls, declined

    def _close(self, stopped: str | None) -> Result:
        ledger = self.ledger
        failed_before = self._fault is not None
        if stopped is not None:  # the last event the interruption cut is no violation to stop at
            ledger.defer = True
        if not failed_before and (self._framer is not None or self._detector is not None):  # bytes were fed
            try:  # the events still held are read as feed() would read them: a violation stops the stream there
                self._flush()
            except ToolcallFSMError as exc:
                self._closing_fault(exc)
            except RecursionError:  # the last event, read deep in the caller's stack
                self._closing_fault(LimitExceeded(_TOO_DEEP, event=self._events, rule="limits"))
        if self._cut is not None:  # no block came after the cut one: no decline cut it
            held, self._cut = self._cut[1], None
            # unless the caller's interruption came first: what came next is not known, so it is said as lax says it
            if held is not None and not failed_before and stopped is None:
                self._closing_fault(held)
        ledger.defer = True  # finish everything first; a strict violation is raised at the end
        self._content.settle()  # half a surrogate pair that ended the text
        ledger.event = None
        # Blocks kept only at their stop (no OpenAI chat decoder keeps one)
        if self._chat is None and (unstopped := getattr(self._decoder, "unstopped", None)) is not None:
            unstopped(ledger.diagnose)
        finished = self._finish
        word: str | None  # the first finish in the provider's words (it stands), each bounded
        said: str | None
        if finished is None:
            end = finish_at = finish = word = said = None
        else:
            end, finish_at = finished
            finish, word, said = end.finish_reason, end.raw_finish_reason, end.message or end.error
            # shortened() only for a long one: nearly every stream's is a short word, nothing said beside it
            if not word:
                word = None
            elif len(word) > WORD_CHARS:
                word = shortened(word, WORD_CHARS)
            if not said:
                said = None
            elif len(said) > MESSAGE_CHARS:
                said = shortened(said)
        if self._fault is not None:
            self._report_fault()
            cut = "when the stream stopped at an error"
        elif stopped is not None and end is None:
            cut = f"when {stopped}"
        elif end is None:
            ledger.diagnose("no-finish-reason", "the stream ended without a finish reason")
            cut = "when the stream ended without a finish reason"
        else:  # a normal finish cuts no call (Registry.finish), so its words are not needed
            cut = "" if finish in NORMAL_FINISHES else cut_by(end)
        if stopped is not None:
            ledger.event = self._events or None  # the last event read
            after = "after the finish" if end is not None else "before the finish"
            ledger.diagnose("stream-interrupted", f"the stream stopped {after}, when {stopped}")
            ledger.event = None
        try:  # open calls, or opened after the finish
            self.registry.finish(None if self._fault is not None else finish, cut)
        except ToolcallFSMError as exc:  # a limit passed while calls ended: each has its status even so
            if not failed_before:  # else the stream's fault is the first error, already reported
                self._closing_fault(exc)
                self._report_fault()
        slots, ledger.event = self.registry.slots, finish_at
        if ledger.parsed:  # what no call's end took (a call cut, or no call left to end): let go
            ledger.parsed = None
        calls: tuple[ToolCall, ...]
        server_calls: tuple[ToolCall, ...] = ()
        if not self.registry.server_calls():  # no server call (nearly every stream): no flag to read
            # A call made at its end is current until metadata drops it (Slot.to_call): read as it is.
            calls = tuple([slot._call or slot.to_call() for slot in slots]) if slots else ()
        else:
            calls = tuple([slot.to_call() for slot in slots if not slot.server])
            server_calls = tuple([slot.to_call() for slot in slots if slot.server])
        content = self._content
        text, reasoning, text_parts, refusal, server_results, compactions = content.frozen()
        declined: tuple[ToolCall, ...] = ()
        if calls and (server_results or self._listed_declined):  # a fallback model went on: the declined
            calls, declined = self._declined(calls, server_results)  # model's calls are not to run
        if finish == "stop" and calls:
            ledger.diagnose("finish-reason-mapped", "finish reason stop, but tools were called")
            finish = "tool_calls"
        elif finish == "tool_calls" and not slots:
            ledger.diagnose("finish-without-calls", "the finish reason says tool calls, but none arrived")
        self._gated = True
        # (an OpenAI chat decoder's class attribute read as a constant: see _ledger_init)
        wire = _CHAT_WIRE if self._chat is not None else self._decoder.name if self._decoder else self.provider
        source = self._langchain  # the maker, where LangChain chunks told one other than the wire (source_provider)
        self._closed = build_result(  # by position (provider, finish_reason, calls, diagnostics, server calls, ...)
            wire,
            finish if finish is None or len(finish) <= WORD_CHARS else shortened(finish, WORD_CHARS),  # as the raw word
            calls,
            tuple(ledger.diagnostics),
            server_calls,
            text,
            content.text_signature,
            reasoning,
            content.usage,
            dict(suppressed) if (suppressed := ledger.suppressed) else {},
            content.text_output_index,
            text_parts,
            word,
            said,
            refusal,
            server_results,
            content.container,
            compactions,
            declined,
            content.provider_fields,
            source if source is not None and source != wire else None,
        )
        vouch(self._closed)  # made of decoded and checked events only: fsm.messages need not read it again
        if ledger.deferred is not None and not failed_before:
            self._fault = ledger.deferred
            if stopped is None:  # else the caller's error goes up, not a violation found after it
                raise ledger.deferred
        return self._closed

    def partial(self, index: int) -> Any:
        """The best value call ``index``'s argument text promises so far, for a live preview: what jiter's partial mode
        ``trailing-strings`` makes of it (open containers closed, a string value cut short kept, a key, number or
        literal cut short left out). None while the text promises nothing yet, or when no call has that index. Never
        raises (but InvalidInput for an index of the caller's own whose comparison raises: policy
        caller-object-raises); the work (one pass over the text) is done only when asked, never as fragments arrive.
        A fresh value each time. A freeform call (a custom tool) previews as the input text it holds."""
        from fsm.engine.partial import preview  # loaded when a preview is first asked for

        if self._previews is None:
            self._previews = {}
        try:
            return preview(self.registry.slots, index, self._previews)
        except Exception as exc:  # a numpy array for the index, say: its comparison with a call's raised
            from fsm.foreign import caller_fault

            fault = caller_fault({"index": index}, exc, "partial()")
            if fault is None:
                raise
            raise fault from exc

    @property
    def framing_work(self) -> int:
        """Bytes (or characters) the framing layer has read, counting every re-read: tests check
        that this stays linear in the input however it was chunked."""
        return (self._detector.work if self._detector else 0) + (self._framer.work if self._framer is not None else 0)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """The diagnostics so far, while the stream is still running."""
        return list(self.ledger.diagnostics)

    @property
    def detected_provider(self) -> str | None:
        """The provider whose wire is being read, as the result will name it: the one named at
        construction, or under ``"auto"`` the one the first event told (None until then). A
        ``DeltaEmitter`` built once it is known names its reasoning's format by it (its ``source``)."""
        return self._decoder.name if self._decoder is not None else None

    @property
    def source_provider(self) -> str | None:
        """The provider whose model made the turn, as far as the stream tells it: :attr:`detected_provider`, but for
        LangChain chunks (read as the chat chunks they mirror, ``openai-chat``) the provider their integration reads,
        where what LangChain keeps tells it alone (policy langchain-source-provider: ``response_metadata``'s
        ``model_provider``, ``anthropic`` for ChatAnthropic's, ``gemini`` for ChatGoogleGenerativeAI's and
        ChatVertexAI's, ``bedrock`` for ChatBedrockConverse's and ChatBedrock's, ``openai-responses`` for ChatOpenAI's
        that carry Responses items; a later chunk naming another integration is said, and the first stands). A
        ``DeltaEmitter`` re-emitting the turn takes it as its ``source``, so its reasoning names the format OpenRouter
        names for it."""
        return self._langchain or self.detected_provider

    # -- internals ----------------------------------------------------------------------------------

    def _langchain_told(self, item: Any, held: Any) -> None:
        """Policy langchain-source-provider: the provider a LangChain chunk tells, where none did before. A chunk
        naming another integration than the first to name one is said (``part-not-reassembled``, at its event),
        and the first stands: the turn is one model's, and what was read of it was read as the first one's."""
        sdk = _sdk or _sdk_readers()
        named, first = sdk.model_provider(item), self._langchain_named
        if named is not None and first is not None and named != first:
            said = f"a LangChain chunk names the integration {named!r}, not the {first!r} an earlier chunk named"
            self.ledger.diagnose("part-not-reassembled", f"{said}: the first stands (source_provider)")
            return
        self._langchain_named = first or named
        if self._langchain is None:
            self._langchain = sdk.langchain_provider(item, held)

    def _check_open(self) -> None:
        if self._closed is not None:
            raise LocalProtocolError("the stream is closed; use a new Reassembler")
        if self._fault is not None:
            raise LocalProtocolError(f"the stream already failed ({self._fault}); close() gives the result so far")

    def _holding(self) -> bool:
        """Whether the bytes fed hold part of an event (feed() would read its own ahead of it)."""
        if self._unreadable:  # not-a-stream: the bytes are read no further
            return False
        if self._framer is not None:
            return self._framer.holding()
        return self._detector is not None and self._detector.holding()

    def _closing_fault(self, exc: ToolcallFSMError) -> None:
        exc = self._first(exc)
        self._fault, self._gated = exc, True
        if self.strict:  # raised once the result is complete
            self.ledger.deferred = self.ledger.deferred or exc

    def _report_fault(self) -> None:
        self.ledger.event = getattr(self._fault, "event", None)
        self.ledger.diagnose("stream-failed", f"stopped at an error, so unfinished calls are cut: {self._fault}")
        self.ledger.event = None

    def _first(self, exc: ToolcallFSMError) -> ToolcallFSMError:
        """The error that stops the stream: a strict violation held back at a Claude tool block's stop
        (policy decline-cut-waits) came before ``exc``, and no decline excused it."""
        cut = self._cut
        if cut is None or cut[1] is None:
            return exc
        self._cut = None
        return cut[1]

    def _failed(self, exc: ToolcallFSMError) -> None:
        exc = self._first(exc)
        if isinstance(exc, RemoteProtocolError) and exc.event is None and (event := self.ledger.event) is not None:
            exc = type(exc)(exc.detail, event=event, rule=exc.rule)  # raised below the ledger: the depth limit
        self._fault, self._gated = exc, True  # the first error that ended the stream
        raise exc

    def _feed_bytes(self, data: bytes) -> None:
        if self._framer is None:
            if self._unreadable:
                return  # reported once, as not-a-stream
            try:
                data = self._framing_told(data, final=False)
            except FramingError as exc:  # max_event_bytes read and still no framing
                self._no_framing(exc, final=False)
                return
        payloads = self._framer.feed(data) if self._framer is not None else ()
        if len(payloads) == 1:  # one event a read (a server's flush each): nothing to store with its text
            self._ingest_payload(payloads[0], last=False, hold=False)
            return
        self._ingest_read(payloads)

    def _ingest_read(self, payloads: Sequence[Payload]) -> None:
        """The events of one read of many, each as _ingest_payload takes it, but a bare fragment of
        the form last learnt (FragmentForm) is held back here, with no call for it."""
        form, chat, registry = self._form, self._chat, self.registry
        gather = registry.gather
        for payload in payloads:
            if (
                form is not None
                and chat is not None
                and type(payload) is str
                and (text := form.read(payload)) is not None
            ):
                self.ledger.event = self._events = self._events + 1
                if not gather(form.place, text):  # chat.hold(), its first step in line
                    registry.settle()
                    chat.fragment(form.place, text, registry)
            else:
                self._ingest_payload(payload, last=False)
                form = self._form  # learnt, or dropped at the finish
        registry.settle()

    def _framing_told(self, data: bytes, *, final: bool) -> bytes:
        """Feed the framing detector; once it tells, make the framer and return what it is to read."""
        if self._detector is None:
            self._detector = Detector(self.limits.max_event_bytes)
        told = self._detector.feed(data, final)
        if told is None:
            return b""
        self._framer = make_framer(told[0], self.limits.max_event_bytes, self.limits.max_event_depth)
        if self._chat is not None:
            self._said_from_wire(self._chat)
        return told[1]

    def _flush(self) -> None:
        if self._framer is None and not self._unreadable and self._detector and self._detector.work:
            try:  # (no byte fed: nothing to tell)
                head = self._framing_told(b"", final=True)
            except FramingError as exc:
                self._no_framing(exc, final=True)
                return
            if self._framer is not None:
                for payload in self._framer.feed(head):
                    self._ingest_payload(payload, last=False)
        if self._framer is not None:
            payloads = self._framer.close()
            for n, payload in enumerate(payloads, start=1):
                self._ingest_payload(payload, last=n == len(payloads) and self._framer.cut)
        self.registry.settle()

    def _no_framing(self, exc: FramingError, *, final: bool) -> None:
        """No framing reads the bytes: a stream cut while it could still have told (cut-event), or no
        stream at all, such as an error page (not-a-stream): one event, reported once, the same
        however long it is; nothing after it is read."""
        assert self._detector is not None
        held, self._unreadable = self._detector.forget(), True
        self._events += 1
        self.ledger.event = self._events
        head = bytes(held[:64])  # held bytes never begin with whitespace: these tell a cut as well as all would
        if final and cut_before_telling(head):
            self.ledger.diagnose("cut-event", f"the stream is only {len(held)} bytes, {head[:60]!r}: {exc.detail}")
            return
        if self.strict:
            raise exc
        # Past the window, what was held beyond it is however much the read that crossed it carried:
        # the message names and quotes only the window, so it is the same however the bytes came.
        window = self.limits.max_event_bytes
        read = f"the input, {len(held)} bytes," if final else f"no framing in the first {window} bytes: not read,"
        self.ledger.diagnose("not-a-stream", f"{exc.detail}; {read} begins {head[: min(60, window)]!r}")

    def _ingest(self, item: Any, wire: bool = False) -> None:
        """One event: fed as it is (a dict, SDK object or event), or read from the wire (``wire``)."""
        self._events += 1
        self.ledger.event = self._events
        if type(item) is not dict:
            chat, held, sdk = self._chat, self._sdk_held, _sdk or _sdk_readers()
            if (
                chat is not None
                and self._finish is None
                and (held is None or held.said is None)
                and not self._invoked
                and sdk.take_chat_chunk(item, chat, self.registry, self._content)  # one call's entry, or text alone
            ):
                return
            if isinstance(item, EVENT_TYPES):
                fault = event_fault(item)
                if fault is not None:
                    raise InvalidInput(f"event {self._events}: {fault}")
                self._told_by_no_block()
                self._apply(item)  # type: ignore[arg-type]
                self._told_by_no_block()
                return
            if self._picker is not None and self._picker.choice and sdk.is_langchain_chunk(item):
                raise InvalidInput(
                    f"event {self._events}: a LangChain chunk holds the first choice alone (its chat models read "
                    f"no other): choice {self._picker.named} is not in it; read the provider's own chunks or bytes"
                )
            held = self._sdk_held
            if held is None:  # made for the first SDK object: a stream of dicts or bytes never needs one
                held = self._sdk_held = sdk.LangChainStream(self.ledger.policies)
            payload = sdk.sdk_payload(item, held)
            if payload is None:  # a stream helper's event that repeats the raw ones: no wire event, not counted
                self.ledger.event = self._events = self._events - 1
                return
            if sdk.is_langchain_chunk(item):  # what its integration reads (source_provider): the first to tell it
                self._langchain_told(item, held)
            if held.said is not None:
                self._in_places(payload, held)
                return
            if type(payload) is not dict:
                self._decode(payload)
                return
            item = payload  # an SDK object's dump is the wire's payload: read as a fed dict is, shortcuts too
        chat = self._chat
        if chat is not None and self._finish is None and chat.shortcut(item, self.registry, self._content):
            return  # what the decoder and _apply would do with the commonest chunks, without their events
        self._unshortcut(item, wire)

    def _unshortcut(self, item: dict[str, Any], wire: bool = False, asked: bool = False) -> None:
        """The rest of _ingest, for a dict the chat shortcut did not take (or a stream with none);
        ``asked``: the chat decoder's ``ending`` has refused it already (feed asks it in line)."""
        chat, content, unfinished = self._chat, self._content, self._finish is None
        if (
            not asked
            and chat is not None
            and chat.ending(item, content, self._finished if unfinished else None, self.registry)
        ):
            return  # the last chunk, or usage alone: as the decoder and _apply would take them
        # The other shapes' commonest event (the wire path asked already), as it goes from the wire.
        if not wire and unfinished and self._commonest is not None and not self._invoked:
            fragment = self._commonest(item)
            if fragment is not None:
                self.registry.fragment(fragment[0], fragment[1])
                return
        if not wire and unfinished and self._said is not None and chat is None and not self._invoked:
            took = self._said(item, content)
            if took is not False:
                if took:  # its events were taken in: as _apply of each (None: decode() makes none of it)
                    self._placed = None
                return
        self._decode(item, wire)

    def _in_places(self, payload: Mapping[str, Any], held: LangChainStream) -> None:
        """A LangChain chunk whose blocks keep their places (fsm.wire.langchain_places): its text and
        reasoning events and its calls, in the turn's order. Claude's blocks, calls included, are
        placed by their content block index; Gemini's runs by the calls and runs before them."""
        if held.wire == "gemini":
            self._content.place_by(self.registry.client_calls)
        elif held.wire == "anthropic" or held.items is not None:  # Claude's block index, LangChain's Responses count
            self.ledger.calls_indexed = True
        for step in held.steps(payload):
            if isinstance(step, Mapping):
                self._decode(step)
            elif isinstance(step, tuple):  # what the chunk holds that is not read
                self.ledger.diagnose(*step)
            else:
                self._apply(step)

    def _ingest_payload(self, payload: Payload, *, last: bool, hold: bool = True) -> None:
        # The commonest OpenAI chat chunks of a read are held back and stored together (see
        # Registry.hold): whatever else comes settles them first, and so does the read's end.
        # Not ``hold``: the read has this one event (and nothing held from before), stored at once.
        registry = self.registry
        if type(payload) is not str:
            registry.settle()
            assert isinstance(payload, Fault)
            self.ledger.event = self._events = self._events + 1
            if payload.skippable:
                self._bad_event(payload.message)
                return
            kind = LimitExceeded if payload.limit else FramingError
            raise kind(payload.message, event=self._events, rule="limits" if payload.limit else None)
        form, chat = self._form, self._chat
        # An event of the form of one read before (see FragmentForm) is not parsed. (Of a read of
        # many OpenAI chat events, _ingest_read asked already.)
        if form is not None and (not hold or chat is None) and (text := form.read(payload)) is not None:
            if chat is not None:
                self.ledger.event = self._events = self._events + 1
                chat.fragment(form.place, text, registry)
                return
            found = self._fragment_at(form.place, text) if self._fragment_at is not None else None
            if found is not None:  # (else its call is no longer open: the decoder says what it is)
                self.ledger.event = self._events = self._events + 1
                registry.fragment(found[0], found[1])
                return
        said = self._said_form  # (the form of the commonest text or reasoning event last learnt)
        if said is not None and self._finish is None and (text := said[0].read(payload)) is not None:
            registry.settle()
            ledger = self.ledger
            before, ledger.event = ledger.event, self._events + 1  # (a lone surrogate is reported at it)
            took = self._said_at(said[1], said[0].place, text, self._content)  # type: ignore[misc]
            if took is not False:  # as _ingest_said would take the event parsed
                self._said_paid = True
                self._events += 1
                if took:
                    self._placed = None
                return
            ledger.event = before
        if payload.strip() == DONE:
            self._events += 1
            return
        if nesting_exceeds(payload, self.limits.max_event_depth):
            registry.settle()
            self.ledger.event = self._events = self._events + 1
            raise LimitExceeded(
                f"the event nests deeper than {self.limits.max_event_depth} levels", event=self._events, rule="limits"
            )
        try:
            value = loads_event(payload)
            self._parsed += 1
        except ValueError as exc:
            registry.settle()
            self.ledger.event = self._events = self._events + 1
            if last:
                self.ledger.diagnose("cut-event", f"the last event is cut short: {exc}")
            else:
                self._bad_event(f"not valid JSON: {exc}")
            return
        except RecursionError:  # within max_event_depth, read deep in the caller's stack (Python 3.11)
            registry.settle()
            self.ledger.event = self._events = self._events + 1
            raise LimitExceeded(_TOO_DEEP, event=self._events, rule="limits") from None
        if type(value) is dict:  # what json gives for an object (the Mapping check costs more)
            if chat is not None and self._finish is None and (lean := lean_fragment_in(value)) is not None:
                self.ledger.event = self._events = self._events + 1
                if self._learning(lean[0], True):  # (its form has the index as a hole: any call's)
                    self._form = FragmentForm.learn(payload, value, *_LEAN_FORM._replace(place=lean[0])) or form
                if hold:
                    chat.hold(lean[0], lean[1], registry)
                else:
                    chat.fragment(lean[0], lean[1], registry)
                return
            registry.settle()
            fragment = self._commonest(value) if self._commonest is not None and self._finish is None else None
            if fragment is not None:  # what _ingest, the decoder and _apply would do, without the event
                self.ledger.event = self._events = self._events + 1
                if self._form_of is not None:
                    spec = self._form_of(value)
                    if self._learning(spec.place, spec.place_at is not None):
                        self._form = FragmentForm.learn(payload, value, *spec) or form
                registry.fragment(fragment[0], fragment[1])
                return
            if (
                self._said is not None
                and self._finish is None
                and not self._invoked
                and self._ingest_said(payload, value)
            ):
                return
        else:
            registry.settle()
            if not isinstance(value, Mapping):
                self.ledger.event = self._events = self._events + 1
                self._bad_event(f"an event must be a JSON object, not {type(value).__name__}")
                return
        self._ingest(value, wire=True)

    def _ingest_said(self, payload: str, value: dict[str, Any]) -> bool:
        """What _ingest does with a wire event its decoder's commonest_said takes (_unshortcut asks
        it of fed dicts), learning its form (when the decoder gives one) to read the next such
        events unparsed. A learning costs about four parses: a form is learnt at the second such
        event parsed since the last, and, once a form learnt read no event before the next was
        needed (the events differ in more than their text, place and counter), at most once in 32
        events, so such a stream pays a few parses at the most."""
        ledger = self.ledger
        before, ledger.event = ledger.event, self._events + 1  # (a lone surrogate is reported at it)
        took = self._said(value, self._content)  # type: ignore[misc]
        if took is False:
            ledger.event = before
            return False
        self._events += 1
        if took:
            self._placed = None  # as _apply of its events
        if self._said_form_of is not None:
            self._said_parsed += 1
            learnt = self._said_learnt
            if self._said_parsed >= 2 and (self._said_paid or learnt * 32 <= self._events):
                found = self._said_form_of(value)  # (None: no form to learn from this one, an empty piece)
                if found is not None:
                    self._said_learnt, self._said_parsed, self._said_paid = learnt + 1, 0, False
                    form = FragmentForm.learn(payload, value, *found[0])
                    if form is not None:
                        self._said_form = (form, found[1])
        return True

    def _learning(self, place: Any, shared: bool) -> bool:
        """May the form of this event, for the call at ``place``, be learnt? A learning parses the
        event once more (and more), about four parses' worth, so only once an event for that call
        was parsed just before it (a call of one such event, ``{}`` say, needs no form), and again
        for each call where its place is part of the form. Where the place is a hole of the form
        (``shared``: OpenAI chat's, Anthropic's, ...), one form reads every call's, so the third
        such event parsed since the last learning is learnt from too, whatever its call: a stream
        of many calls of one fragment each repays it, one of two never would. The first few
        learnings are free while each form learnt reads an event before the next is learnt; once
        one read none (the stream's events differ in more than their strings, such as Anthropic's
        padding of spaces), learning is held to once in eight events."""
        again, self._unformed = place == self._unformed, place
        self._unlearnt += 1
        if not (again or (shared and self._unlearnt >= 3)):
            return False
        learned, events, parsed = self._forms_learned, self._events, self._parsed
        paid = events - self._learnt_at[0] > parsed - self._learnt_at[1]  # the last form read an event
        if (paid and learned < _FREE_LEARNINGS) or learned * _EVENTS_A_LEARNING <= events:
            self._forms_learned = learned + 1
            self._learnt_at = (events, parsed)
            self._unlearnt = 0
            return True
        return False

    def _bad_event(self, why: str) -> None:
        """One wire event cannot be used: strict mode raises; lax mode reports it and reads on."""
        if self.strict:
            raise FramingError(why, event=self._events, rule="unknown-events-reported")
        self.ledger.diagnose("bad-event", f"skipped: {why}")

    def _use(self, decoder: Decoder) -> Decoder:
        self._decoder = decoder
        if isinstance(decoder, OpenAIChatDecoder):  # its shortcuts; no final arguments, no commonest fragment
            if self._picker is None:  # (they read choice 0 of a one-choice chunk: a named choice has none)
                self._chat = decoder
                if self._framer is not None:  # else the framer's making binds them (_said_from_wire)
                    self._said_from_wire(decoder)
            return decoder
        self.ledger.adopt(decoder)
        if self._picker is None:  # each payload of a named choice is cut down first (_decode)
            self._commonest = getattr(decoder, "commonest_fragment", None)
            self._said = getattr(decoder, "commonest_said", None)
            self._said_form_of = getattr(decoder, "said_form_of", None)
            self._said_at = getattr(decoder, "said_at", None)
            self._form_of = getattr(decoder, "form_of", None)  # a decoder whose commonest events have forms
            self._fragment_at = getattr(decoder, "fragment_at", None)
        if getattr(decoder, "parts_placed", False):  # its thought and text parts go back in their places
            self._content.place_by(self.registry.client_calls)
        return decoder

    def _said_from_wire(self, chat: OpenAIChatDecoder) -> None:
        """An OpenAI chat stream's plainest text chunk, asked from the wire alone (a fed dict meets the
        shortcut), to learn that chunk's form: bound once the stream is read from bytes, never for
        a stream of dicts."""
        self._said, self._said_form_of, self._said_at = chat.commonest_said, chat.said_form_of, chat.said_at

    def _decode(self, payload: Mapping[str, Any], wire: bool = False) -> None:
        if not wire:  # what a chunk carries is never unwrapped
            if len(payload) == 1 and "chunk" in payload:
                from fsm.wire.eventstream import invoke_event

                self._invoked = True
                self._read_carried(invoke_event(payload["chunk"], self.limits.max_event_bytes))
                return
            if self._invoked and not BEDROCK_EVENTS.isdisjoint(payload):
                self._beside_chunks(payload)
                return
        decoder = self._decoder
        if decoder is None:
            provider = detect_provider(payload)
            if provider is None and (words := error_in(payload)) is not None:
                self._apply(StreamEnd("error", *words))  # a provider's error, whichever provider sent it
                return
            if provider is None and self._finish is not None:  # after an error that came before the provider
                self.ledger.diagnose("event-after-finish", "an event that names no provider, after the error")
                return
            if provider is None:
                why = "cannot tell the provider from this event; name it (--provider)"
                raise UnsupportedProvider(why, event=self._events)
            decoder = self._use(make_decoder(provider, self.ledger.policies))
        if self._picker is not None:
            payload = self._picker.chosen(payload, self.ledger.diagnose)
        if self._cut is not None:
            self._handed_over(payload)
        try:
            events = decoder.decode(payload, self.ledger.diagnose)
        except RemoteProtocolError as exc:
            if exc.event is not None:
                raise
            raise type(exc)(exc.detail, event=self._events, rule=exc.rule or decoder.name) from None
        for event in events:
            self._apply(event)

    def _handed_over(self, payload: Mapping[str, Any]) -> None:
        """What the event after a Claude tool block that stopped with its JSON open tells of it (policy
        decline-cut-waits): a fallback block says a decline cut it (``cut-by-decline``, no violation);
        another block or the message's end, that it is what it said (``unterminated-arguments``,
        raised in strict mode naming the stop's event); a delta, a stop or a ping, nothing yet."""
        told, cut = handed_over_at(payload), self._cut
        if told is None or cut is None:
            return
        (places, held), self._cut = cut, None
        if told:
            ledger = self.ledger
            gone = 0  # recoded past the per-code bound, so taken out: the places after each move down (Ledger.recode)
            for at in places:
                at -= gone
                gone += ledger.recode(at, "cut-by-decline", declined_cut(ledger.diagnostics[at].message, payload))
        elif held is not None:
            raise held

    def _told_by_no_block(self) -> None:
        """Around a decoded event fed as it is: it is no Claude block's start, so it tells of no decline,
        and what waits is raised now (policy decline-cut-waits): before it, a cut a wire event left; after
        it, its own CallEnd's, as a CallEnd fed raised before the wait was."""
        if self._cut is not None:
            self._handed_over({"type": None})

    def _end_block(self, ref: CallRef) -> None:
        """End a Claude tool block at its stop; one whose JSON never closed may be a decline's cut,
        which only the next block tells (policy decline-cut-waits): its strict raise waits for it."""
        _, at, held = self._ended_open(ref, "end", "")
        if at is not None:
            if self._cut is None:
                self._cut = ([at], held)
            else:  # another block stopped cut before the next one began: the first's error stands
                self._cut[0].append(at)
            return
        if held is not None:
            raise held

    def _end_declined(self, event: CallEnd) -> None:
        """End a call a re-emitted stream's error listed as a declined model's (DeltaEmitter.finish's;
        policy declines-read-back) as its source ended it: by its text, to be set apart at close. One
        listed ``cut-by-decline`` whose JSON never closed is the decline's cut its source said (policy
        decline-cut-waits), said so here too, no violation; a ``declined`` one's open JSON stays the
        violation its source said; one listed ``declined-truncated`` (its stream cut it) is truncated."""
        ended, at, held = self._ended_open(event.ref, "abandon" if event.incomplete else "end", event.said)
        if ended is not None:
            self._listed_declined = self._listed_declined | {ended.ordinal}
        if at is not None and event.declined == "cut-by-decline":
            said = self.ledger.diagnostics[at].message
            self.ledger.recode(at, "cut-by-decline", f"{said}, cut when its model declined, as the stream's error says")
        elif held is not None:
            raise held

    def _ended_open(
        self, ref: CallRef, trigger: str, said: str
    ) -> tuple[Slot | None, int | None, RemoteProtocolError | None]:
        """End the call of ``ref``, a strict raise held: the call, and where its JSON never closed,
        the place of its ``unterminated-arguments`` and that raise (None: lax), else no place and
        what was held (a raise another violation made)."""
        ledger = self.ledger
        waiting, holding = len(ledger.ended_unfinished), ledger.strict and not ledger.defer
        if holding:
            ledger.defer = True
        try:
            ended = self.registry.call_end(ref, trigger, said)
        finally:
            if holding:
                ledger.defer = False
        held, ledger.deferred = (ledger.deferred, None) if holding else (None, ledger.deferred)
        if held is not None and not isinstance(held, RemoteProtocolError):
            raise held  # (a limit passed, say: never the decline's to excuse)
        if ended is not None and len(ledger.ended_unfinished) > waiting:
            at = ledger.ended_unfinished[-1]
            if ledger.diagnostics[at].code == UNTERMINATED and (held is None or held.detail.startswith(UNTERMINATED)):
                return ended, at, held
        return ended, None, held

    def _read_carried(self, carried: Payload) -> None:
        """A boto3 InvokeModel event, ``{"chunk": {"bytes": ...}}``, holds one event of the model's own
        wire as bytes: it is read as that event would be from the wire (counted once, by that reading)."""
        self.ledger.event = self._events = self._events - 1
        self._ingest_payload(carried, last=False)
        self.registry.settle()

    def _beside_chunks(self, payload: Mapping[str, Any]) -> None:
        """A ConverseStream event fed among boto3's InvokeModel chunks, which the model's decoder would
        misread: Bedrock's exception ends the stream, saying what it says on every path
        (exception_message), and any other key is reported and not read, beside an exception too
        (audit 74: they went unsaid). The event is read in its own order, as the ConverseStream
        decoder reads one: the first exception ends the stream, each later one is reported after it
        (the set of their names iterated in str-hash order, which PYTHONHASHSEED draws anew in each
        process: audit 70), and keys before or after one are reported in their place."""
        unread: list[Any] = []
        for kind, body in payload.items():
            if kind in BEDROCK_ERRORS:
                self._unread_beside_chunks(unread)
                self._apply(StreamEnd("error", kind, exception_message(kind, body)))
            else:
                unread.append(kind)
        self._unread_beside_chunks(unread)

    def _unread_beside_chunks(self, kinds: list[Any]) -> None:
        if kinds:
            self.ledger.diagnose("unknown-event", f"a ConverseStream event {kinds} among InvokeModel chunks")
            kinds.clear()

    def _apply(self, event: Event) -> None:
        registry = self.registry
        placed = self._placed
        if placed is not None:  # it names the call of the event right after it only
            self._placed = None
        if self._finish is not None and not isinstance(event, StreamEnd | UsageReport):
            self.ledger.diagnose("event-after-finish", f"{type(event).__name__} after the finish reason")
        # Most events of most streams: one exact type test instead of the union isinstance below.
        if type(event) is ArgumentsFragment and event.signature is None:
            registry.arguments(event.ref, event.text, "fragment")
        elif type(event) is StreamEnd:  # exactly the class: none of the others below (a subclass goes on)
            self._finished(event)
        elif type(event) is UsageReport:  # one of TURN_CONTENT_TYPES, exactly, as above
            self._content.apply(event)
        elif isinstance(event, ArgumentsFragment | CallSeen | ArgumentsSnapshot):
            opened_at = len(self.ledger.outputs)  # what this event outputs comes after it
            if isinstance(event, ArgumentsFragment):
                landed = registry.arguments(event.ref, event.text, "fragment")
            elif isinstance(event, CallSeen):
                if (
                    placed is not None
                    and placed[0] is event.ref
                    and event.item is not None
                    and (placed[1].finished or event.ref.id is None)
                ):
                    # The item of the part whose text just landed in a call (Gemini's code and tool
                    # parts: the text decides the call) goes on that call: not on another opened for
                    # it after the calls its lane has ended (a resent part's), nor, without an id, on
                    # none where the text made the call whole and the sighting would be held as the
                    # header of a next call (an id-less toolCall's JSON arguments). A sighting under
                    # an id is routed by it, as any is (a Responses item's done after its added).
                    landed = registry.seen_on(placed[1], event.ref, event.item)
                else:
                    landed = registry.call_seen(event.ref, event.item, announces=event.announces)
            else:
                landed = registry.arguments(event.ref, event.text, "confirmation" if event.confirms else "snapshot")
                self._placed = (event.ref, landed) if landed is not None else None
            if event.signature and landed is not None and landed.signature is None:
                landed.signature = event.signature  # not identity: it rides on the call it came with
                landed.reread()
                self._signed_opening(landed.ordinal, event.signature, opened_at)
        elif isinstance(event, CallEnd):
            if event.unmatched and not registry.opened(event.ref):  # an error's entry naming no call opened at
                self.ledger.diagnose("part-not-reassembled", event.unmatched)  # its index by its id ends none:
                return  # routing would end the index's call, another id's, which the entry does not name
            if event.declined:  # (a re-emitted stream's: the chat decoder's list of calls left unfinished)
                self._end_declined(event)
                return
            plain = not (event.incomplete or event.unusable or event.unmatched)
            if plain and getattr(self._decoder, "hands_over", False):  # a Claude tool block's stop
                self._end_block(event.ref)
                return
            if event.incomplete or not event.unusable:
                registry.call_end(event.ref, "abandon" if event.incomplete else "end", event.said)
            else:
                registry.call_end(event.ref, "reject", event.unusable)
        elif isinstance(event, StreamEnd):
            self._finished(event)
        elif isinstance(event, TURN_CONTENT_TYPES):
            self._content.apply(event)

    def _signed_opening(self, ordinal: int, signature: str, opened_at: int) -> None:
        """Give the call's CallOpened its signature where the event that carried it opened the call
        (every Gemini wire signs a call's first part): a gateway re-emitting the stream sends it on
        the call's first chunk, before a later call's (DeltaEmitter), where one sent with the call's
        last would come after them. Only this event's outputs are looked through."""
        outputs = self.ledger.outputs
        for at in range(opened_at, len(outputs)):
            opened = outputs[at]
            if type(opened) is CallOpened and opened.index == ordinal:
                outputs[at] = attrs.evolve(opened, thought_signature=signature)
                return

    def _finished(self, event: StreamEnd) -> None:
        if self._finish is not None:  # the first finish reason stands; a different one is reported
            first, at = self._finish
            error = event.finish_reason == "error"
            if error and (first.finish_reason != "error" or event.error not in (None, first.error)):
                # The turn had ended and its calls stand, but what the provider said must reach the
                # caller as what it is: a provider's error (raised in strict mode), not a finish reason.
                # The provider's part is cut, so the ledger's cut of a long message leaves what follows it.
                after = f"after the turn finished at event {at}: its finish reason and calls stand"
                self.ledger.diagnose("provider-error", f"{reported(event, MESSAGE_CHARS // 2)} ({after})")
            elif event.finish_reason != first.finish_reason:
                second = f"{event.finish_reason!r} after {first.finish_reason!r}, kept"
                self.ledger.diagnose("second-finish-reason", second)
            return
        self._finish = event, self._events
        self._form = None  # a fragment after the finish is late: the general path reports it
        if event.finish_reason == "error":
            self.ledger.diagnose("provider-error", reported(event))
        if event.finish_reason in NORMAL_FINISHES:  # it cuts nothing, so nothing needs its words
            self.registry.finish(event.finish_reason)
            return
        cut = cut_by(event)
        if self.ledger.ended_unfinished:
            self.ledger.explain(cut)
        self.registry.finish(event.finish_reason, cut)


def reported(error: StreamEnd, room: int | None = None) -> str:
    """What ``provider-error`` says of an error finish: the provider's word for its kind (its raw
    finish reason, policy error-kind: ``overloaded_error``, ``RESOURCE_EXHAUSTED``, ``error:
    rate_limit_exceeded``), first and bounded, so that a cut message, and strict mode's exception,
    still say whether to retry; then its message (cut at ``room`` characters as the ledger cuts one),
    or "no message". A second error after the finish has no other place for its kind. Not a bare
    ``error`` (a chunk's ``finish_reason: "error"``, a Responses error with no code): it names no kind."""
    word = error.raw_finish_reason
    kind = f' "{shortened(word, WORD_CHARS)}"' if word and word != "error" else ""
    said = error.error
    if said is None or said == word:  # a Bedrock exception that said nothing is said by its name alone
        said = "no message"
    elif room is not None:
        said = shortened(said, room)
    return f"the provider reported an error{kind}: {said}"
