"""``Reassembler``: one stream in, its tool calls out. The public face of the engine.

Feed it raw bytes (``feed_bytes``), wire payloads (dicts), SDK objects (anything with
``model_dump()`` or ``to_dict()``) or already-decoded events, in order. Each call returns the output
events it caused (call opened, argument delta, call finished); ``close()`` returns the result.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from fsm.content import TurnContent
from fsm.engine.ledger import Ledger
from fsm.engine.partial import PartialReader
from fsm.engine.registry import Registry
from fsm.errors import FramingError, LocalProtocolError, RemoteProtocolError, UnsupportedProvider
from fsm.events import (
    EVENT_TYPES,
    TURN_CONTENT_TYPES,
    ArgumentsFragment,
    ArgumentsSnapshot,
    CallEnd,
    CallSeen,
    Event,
    StreamEnd,
    UsageReport,
)
from fsm.options import Limits, Policies
from fsm.results import Diagnostic, Output, Result
from fsm.wire.decoders import Decoder, detect_provider, make_decoder
from fsm.wire.decoders._wire import BareRefs
from fsm.wire.decoders.openai_chat import OpenAIChatDecoder
from fsm.wire.framing import DONE, Framer, detect_framing, make_framer
from fsm.wire.sdk import sdk_payload


class Reassembler:
    """One stream's tool calls, reassembled: feed it the stream in order, then ``close()`` it.

    ``provider`` names the wire (``openai-chat``, ``openai-responses``, ``anthropic``, ``gemini``,
    ``ollama``, ``bedrock``, ``cohere``) or is ``"auto"``: detected from the first event (and, for
    bytes, the framing from the first bytes). ``strict=True`` raises :class:`fsm.RemoteProtocolError`
    at the first diagnostic of severity ``violation``. ``policies`` chooses the readings of ambiguous
    wire cases, ``limits`` bounds memory and work, ``taken`` lists ids used by earlier turns of the
    conversation, which new calls must not reuse. One instance per stream; not thread-safe.
    """

    def __init__(
        self,
        provider: str = "auto",
        *,
        strict: bool = False,
        policies: Policies | None = None,
        limits: Limits | None = None,
        taken: Iterable[str] = (),
    ) -> None:
        self.provider = provider
        """The provider as named at construction (``"auto"`` until the result names the detected one)."""
        self.limits = limits or Limits()
        """The limits in force."""
        self.ledger = Ledger(policies or Policies(), strict=strict)
        """Internal: the engine's record of outputs, diagnostics and rule counts (for tests and tools)."""
        self.registry = Registry(self.ledger, self.limits, taken)
        """Internal: the slot registry that decides which call each event belongs to."""
        self._decoder: Decoder | None = None
        self._bare_refs: BareRefs | None = None  # set for OpenAI chat streams: their fast path
        if provider != "auto":
            self._use(make_decoder(provider))
        self._framer: Framer | None = None
        self._head = b""
        self._events = 0
        self._finish: StreamEnd | None = None
        self._closed: Result | None = None
        self._content = TurnContent()
        self._previews: dict[int, tuple[int, PartialReader]] = {}  # per call asked: its text's revision, reader

    # -- input ------------------------------------------------------------------------------------

    def feed(self, item: Any) -> list[Output]:
        """Feed one wire payload, SDK object or decoded event; return the outputs it caused."""
        if self._closed is not None:
            self._check_open()
        self._ingest(item)
        return self.ledger.drain()

    def feed_bytes(self, data: bytes) -> list[Output]:
        """Feed raw response bytes (SSE, NDJSON or a JSON array, detected from the first bytes)."""
        self._check_open()
        if self._framer is None:
            self._head += data
            framing = detect_framing(self._head)
            if framing is None:
                return []
            self._framer = make_framer(framing, self.limits.max_event_bytes)
            data, self._head = self._head, b""
        for payload in self._framer.feed(data):
            self._ingest_text(payload, last=False)
        return self.ledger.drain()

    def drain(self) -> list[Output]:
        """Outputs not yet handed out: those ``close()`` caused (the last calls finishing)."""
        return self.ledger.drain()

    def close(self) -> Result:
        """End the stream: flush framing, finish every open call, return the result. The output
        events this causes are kept for ``drain()``."""
        if self._closed is not None:
            return self._closed
        if self._framer is not None:
            for payload in self._framer.close():
                self._ingest_text(payload, last=True)
        self.ledger.event = None
        registry = self.registry
        if self._finish is None:
            self.ledger.diagnose("no-finish-reason", "the stream ended without a finish reason")
            registry.finish(None)
        else:
            registry.finish(self._finish.finish_reason)  # calls opened after the finish
        finish = self._finish.finish_reason if self._finish else None
        if finish == "stop" and any(not slot.server for slot in registry.slots):
            self.ledger.diagnose("finish-reason-mapped", "finish reason stop, but tools were called")
            finish = "tool_calls"
        self._closed = Result(
            provider=self._decoder.name if self._decoder else self.provider,
            finish_reason=finish,
            calls=tuple(slot.to_call() for slot in registry.slots if not slot.server),
            diagnostics=tuple(self.ledger.diagnostics),
            server_tool_calls=tuple(slot.to_call() for slot in registry.slots if slot.server),
            text=self._content.text,
            text_signature=self._content.text_signature,
            reasoning=self._content.reasoning,
            usage=self._content.usage,
        )
        return self._closed

    def partial(self, index: int) -> Any:
        """The best value call ``index``'s argument text promises so far, for a live preview: what
        jiter's partial mode ``trailing-strings`` makes of it (open containers closed, a string value
        cut short kept, a key, number or literal cut short left out). None while the text promises
        nothing yet, or when no call has that index. Never raises; the work (one pass over the text)
        is done only when asked, never as fragments arrive. A fresh value each time. A freeform
        call (a custom tool) previews as the input text it holds."""
        for slot in self.registry.slots:
            if slot.ordinal == index and not slot.server:
                if slot.freeform:
                    return slot.text()  # freeform input is not JSON: what it holds is all it promises
                revision, reader = self._previews.get(index, (-1, None))
                if reader is None or revision != slot.revision:  # first asked, or the text was replaced
                    reader = PartialReader()
                    self._previews[index] = (slot.revision, reader)
                return reader.read(slot.text())
        return None

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """The diagnostics so far, while the stream is still running."""
        return list(self.ledger.diagnostics)

    # -- internals ----------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed is not None:
            raise LocalProtocolError("the stream is closed; use a new Reassembler")

    def _ingest(self, item: Any) -> None:
        self._events += 1
        self.ledger.event = self._events
        if type(item) is dict:
            if self._bare_refs is not None and self._finish is None:
                fragment = commonest_chunk(item)
                if fragment is not None:
                    # What the decoder and _apply would do with it, without the event in between.
                    self.registry.arguments(self._bare_refs.ref(fragment[0]), fragment[1], "fragment")
                    return
            self._decode(item)
        elif isinstance(item, EVENT_TYPES):
            self._apply(item)  # type: ignore[arg-type]
        else:
            payload = sdk_payload(item)
            if payload is not None:  # None: a stream helper's event that repeats the raw ones
                self._decode(payload)

    def _ingest_text(self, payload: str, *, last: bool) -> None:
        if payload.strip() == DONE:
            self._events += 1
            return
        try:
            value = json.loads(payload)
        except ValueError as exc:
            if last:
                self._events += 1
                self.ledger.event = self._events
                self.ledger.diagnose("cut-event", f"the last event is cut short: {exc}")
                return
            raise FramingError(f"not valid JSON: {exc}", event=self._events + 1) from None
        if not isinstance(value, Mapping):
            raise FramingError(f"an event must be a JSON object, not {type(value).__name__}", event=self._events + 1)
        self._ingest(value)

    def _use(self, decoder: Decoder) -> Decoder:
        self._decoder = decoder
        # A wire that ends each call with final arguments winning over its deltas (Responses
        # ``.done``) makes no streamed text append-safe before the call finishes.
        self.ledger.withhold = getattr(decoder, "final_arguments_win", False)
        if isinstance(decoder, OpenAIChatDecoder):
            self._bare_refs = decoder._bare
        return decoder

    def _decode(self, payload: Mapping[str, Any]) -> None:
        decoder = self._decoder
        if decoder is None:
            provider = detect_provider(payload)
            if provider is None:
                raise UnsupportedProvider(
                    f"event {self._events}: cannot tell the provider from this event; name it (--provider)"
                )
            decoder = self._use(make_decoder(provider))
        try:
            events = decoder.decode(payload, self.ledger.diagnose)
        except RemoteProtocolError as exc:
            if exc.event is not None:
                raise
            raise type(exc)(exc.detail, event=self._events, rule=exc.rule or decoder.name) from None
        for event in events:
            self._apply(event)

    def _apply(self, event: Event) -> None:
        registry = self.registry
        if self._finish is not None and not isinstance(event, StreamEnd | UsageReport):
            self.ledger.diagnose("event-after-finish", f"{type(event).__name__} after the finish reason")
        # Most events of most streams: one exact type test instead of the union isinstance below.
        if type(event) is ArgumentsFragment and event.signature is None:
            registry.arguments(event.ref, event.text, "fragment")
        elif isinstance(event, ArgumentsFragment | CallSeen | ArgumentsSnapshot):
            if isinstance(event, ArgumentsFragment):
                landed = registry.arguments(event.ref, event.text, "fragment")
            elif isinstance(event, CallSeen):
                landed = registry.call_seen(event.ref)
            else:
                landed = registry.arguments(event.ref, event.text, "confirmation" if event.confirms else "snapshot")
            if event.signature and landed is not None and landed.signature is None:
                landed.signature = event.signature  # not identity: it rides on the call it came with
        elif isinstance(event, CallEnd):
            registry.call_end(event.ref)
        elif isinstance(event, StreamEnd):
            if self._finish is not None:
                return  # the first finish reason stands
            self._finish = event
            if event.finish_reason == "error":
                self.ledger.diagnose("provider-error", f"the provider reported an error: {event.error}")
            registry.finish(event.finish_reason)
        elif isinstance(event, TURN_CONTENT_TYPES):
            self._content.apply(event)


def _chunks(stream: Any) -> Any:
    if isinstance(stream, bytes | bytearray | memoryview | str):
        return (stream,)  # a whole body
    return stream


def _feed_any(reassembler: Reassembler, item: Any) -> None:
    if isinstance(item, bytes | bytearray | memoryview):
        reassembler.feed_bytes(bytes(item))
    elif isinstance(item, str):
        reassembler.feed_bytes(item.encode("utf-8"))
    else:
        reassembler.feed(item)


def reassemble(stream: Any, provider: str = "auto", **options: Any) -> Result:
    """Reassemble a whole stream in one call: an iterable of raw bytes or text (body chunks), wire
    payloads, SDK objects or stream-helper events, or a stream manager (``client.chat.completions.
    stream(...)``, ``client.messages.stream(...)``), which is entered and closed here. ``options``
    are :class:`Reassembler`'s (``strict``, ``policies``, ``limits``, ``taken``)."""
    reassembler = Reassembler(provider, **options)
    if not hasattr(stream, "__iter__") and hasattr(stream, "__enter__"):
        with stream as entered:
            for item in _chunks(entered):
                _feed_any(reassembler, item)
    else:
        for item in _chunks(stream):
            _feed_any(reassembler, item)
    return reassembler.close()


async def areassemble(stream: Any, provider: str = "auto", **options: Any) -> Result:
    """:func:`reassemble` for an async stream (``AsyncStream``, an async stream manager, an async
    generator); a plain iterable is taken too."""
    reassembler = Reassembler(provider, **options)
    if not hasattr(stream, "__aiter__") and hasattr(stream, "__aenter__"):
        async with stream as entered:
            async for item in entered:
                _feed_any(reassembler, item)
    elif hasattr(stream, "__aiter__"):
        async for item in stream:
            _feed_any(reassembler, item)
    else:
        for item in _chunks(stream):
            _feed_any(reassembler, item)
    return reassembler.close()


def commonest_chunk(payload: dict[str, Any]) -> tuple[int, str] | None:
    """(index, text) when an OpenAI chat chunk is the commonest kind: one choice (index 0, no
    finish reason) whose delta holds one tool-call entry with an integer index, no id, no name and
    non-empty argument text, and no usage, text or reasoning beside it. OpenAIChatDecoder makes
    exactly one bare ArgumentsFragment of such a chunk; a test replays every vector and fuzzed
    stream with and without this shortcut."""
    choices = payload.get("choices")
    if type(choices) is not list or len(choices) != 1 or payload.get("error") or payload.get("usage"):
        return None
    choice = choices[0]
    if type(choice) is not dict or choice.get("index") or choice.get("finish_reason"):
        return None
    delta = choice.get("delta")
    # turn content rides beside a fragment on some servers: the decoder reads it, so no shortcut
    if type(delta) is not dict or delta.get("content") or delta.get("reasoning_content") or delta.get("reasoning"):
        return None
    entries = delta.get("tool_calls")
    if type(entries) is not list or len(entries) != 1:
        return None
    entry = entries[0]
    if type(entry) is not dict or entry.get("id") is not None:
        return None
    function = entry.get("function")
    if type(function) is not dict or function.get("name") is not None:
        return None
    index, text = entry.get("index"), function.get("arguments")
    if type(index) is not int or type(text) is not str or not text:
        return None
    return index, text
