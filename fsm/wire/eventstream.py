"""The AWS event stream framing (Bedrock over HTTP): binary messages, unframed by botocore's decoder
(the optional ``bedrock`` extra), with the same promises as the text framings in
fsm/wire/framing.py: faults in place, exact byte limits, linear work in small reads.

Two Bedrock streams share it. ``ConverseStream`` messages become ``{eventType: body}`` objects.
``InvokeModelWithResponseStream`` messages are ``chunk`` events whose ``bytes`` (base64) hold one
event of the model's own wire (a Claude model's are Anthropic's): the framer hands on that event
itself, and a chunk that holds none (no bytes, bytes not base64, not an object) is one bad event.
The first event that is not an exception tells which stream this is; an event of the other API
after it is a bad event, not read. An exception (``:exception-type``) or a service error
(``:message-type: error``, told by its headers) ends either stream, whatever its payload holds: it
is handed on as ``{"type": "error", "error": {"type": ..., "message": ...}}``, which the Anthropic,
OpenAI chat and Bedrock decoders all read as the stream's error.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from collections.abc import Mapping
from typing import Any

from fsm.errors import FramingError
from fsm.errors import kind as what_kind
from fsm.jsontext import TOO_DEEP_TO_READ, loads_event, nesting_exceeds
from fsm.wire.decoders._fields import exception_message
from fsm.wire.faults import Fault, Payload, decode_utf8, too_long

_AWS_SMALLEST = 16  # a prelude (12 bytes) and the message CRC (4)


class AWSEventStreamFramer:
    def __init__(self, max_bytes: int, max_depth: int = 256 + 32) -> None:
        try:
            from botocore.eventstream import EventStreamBuffer
        except ImportError:
            raise FramingError(
                "a binary AWS event stream needs botocore: pip install 'toolcall-fsm[bedrock]'", event=1
            ) from None
        self._buffer: Any = EventStreamBuffer()
        self._max = max_bytes
        self._max_depth = max_depth
        # Bytes of messages not yet whole. botocore's buffer re-joins and re-parses everything it
        # holds on every add (quadratic over a long message in small reads), so it is only ever
        # given whole messages, whose length the first four bytes tell.
        self._held = bytearray()
        self.cut = False
        self.invoke: bool | None = None
        """Whether the stream's first event was a ``chunk`` (InvokeModel) or another (ConverseStream);
        None until one came. Exceptions belong to both and tell neither."""
        self.work = 0
        """Bytes taken in and bytes handed to botocore: each once."""

    def feed(self, data: bytes, final: bool = False) -> list[Payload]:
        from botocore.eventstream import ParserError

        held = self._held
        held += data
        self.work += len(data)
        out: list[Payload] = []
        start = 0
        while len(held) - start >= 4:
            total = int.from_bytes(held[start : start + 4], "big")
            if total > self._max:
                out.append(too_long("one message", self._max))
                return out
            if total < _AWS_SMALLEST:
                out.append(Fault(f"not a valid AWS event stream message: {total} bytes long", skippable=False))
                return out
            if len(held) - start < total:
                break
            self._buffer.add_data(bytes(held[start : start + total]))
            self.work += total
            start += total
            try:
                for message in self._buffer:
                    out.append(self._payload(message.headers, message.payload))
            # botocore checks the CRCs, but parses the headers under them without guarding: a header of
            # an unknown type, a name that is not UTF-8 or a headers length past the message raise
            # KeyError, UnicodeDecodeError or struct.error from inside it.
            except (ParserError, LookupError, ValueError, struct.error) as exc:
                why = str(exc) if isinstance(exc, ParserError) else f"its headers do not parse ({exc!r})"
                out.append(Fault(f"not a valid AWS event stream message: {why}", skippable=False))
                return out
        del held[:start]
        return out

    def _payload(self, headers: dict[str, Any], payload: bytes) -> Payload:
        if headers.get(":message-type") == "error":  # a service error: its headers say all there is
            return _error(headers.get(":error-code"), headers.get(":error-message"), None)
        kind = headers.get(":event-type") or headers.get(":exception-type") or "unknown"
        if not isinstance(kind, str):  # a header may be typed bytes, a number or a uuid: no event name
            return Fault(f"the event type header is {what_kind(kind)}, not a string", skippable=True)
        exception = ":exception-type" in headers
        # An exception's payload is read whatever it holds: the frame ends the stream even so.
        text = payload.decode("utf-8", "replace") if exception else decode_utf8(payload or b"{}")
        if isinstance(text, Fault):
            return text
        if nesting_exceeds(text, self._max_depth):
            return Fault(f"{kind} payload nests deeper than {self._max_depth} levels", skippable=False, limit=True)
        if exception:
            return _error(kind, None, text)
        try:
            body = loads_event(text)  # an integer past the int-string limit kept, as any framing's event keeps it
        except ValueError as exc:
            return Fault(f"{kind} payload is not JSON: {exc}", skippable=True)
        except RecursionError:  # within the depth limit, read deep in the caller's stack (Python 3.11)
            return Fault(f"{kind} payload {TOO_DEEP_TO_READ}", skippable=False, limit=True)
        invoke = kind == "chunk"  # no ConverseStream event has this name
        if self.invoke is None:
            self.invoke = invoke
        elif invoke != self.invoke:
            return Fault(_MIXED[self.invoke].format(kind), skippable=True)
        if invoke:
            return invoke_event(body, self._max)
        return f"{{{json.dumps(kind)}: {text}}}"  # the payload as it came (not written anew), under its name

    def holding(self) -> bool:
        """Whether bytes of a message not yet whole are held."""
        return bool(self._held)

    def close(self) -> list[Payload]:
        if self._held:
            # A message cut short: passed on as text that is not JSON, so the reassembler reports
            # the cut (cut-event) and truncates the calls it left open.
            self.cut = True
            return [f"<{len(self._held)} bytes of an unfinished event-stream message>"]
        return []


_MIXED = {
    True: "a {!r} event in an InvokeModel stream, whose events are chunks: not read",
    False: "an InvokeModel chunk in a ConverseStream stream: not read",
}


def _error(kind: Any, message: Any, text: str | None) -> str:
    """An exception or error message as the event every reader takes for an error: ``{"type":
    "error", "error": {...}}`` (the Anthropic, OpenAI chat and Bedrock decoders all read it; one of
    Bedrock's own exceptions names Bedrock, see detect_provider). ``text`` is an exception's payload,
    usually ``{"message": ...}``; whatever it holds, it says the error's message as the same body in
    a ConverseStream event or among InvokeModel chunks says it (exception_message). Read as those
    are (loads_event), a number too long to write is named the same way."""
    kind = kind if isinstance(kind, str) and kind else "error"
    if text is not None:
        try:
            body = loads_event(text) if text.strip() else None
        except (ValueError, RecursionError):
            body = text  # not JSON: the text is what it says
        message = exception_message(kind, body)
    return json.dumps({"type": "error", "error": {"type": kind, "message": str(kind if message is None else message)}})


def invoke_event(chunk: Any, max_bytes: int) -> Payload:
    """The event an InvokeModelWithResponseStream ``chunk`` carries, as text, or the fault that keeps
    it from being read: its ``bytes`` are base64 on the wire, and raw bytes in the events boto3 gives."""
    if not isinstance(chunk, Mapping):
        return Fault(f"a chunk must be an object holding bytes, not {type(chunk).__name__}", skippable=True)
    data = chunk.get("bytes")
    if isinstance(data, str):
        try:
            data = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError) as exc:
            return Fault(f"a chunk's bytes are not base64: {exc}", skippable=True)
    elif isinstance(data, memoryview):
        data = data.tobytes()
    if not isinstance(data, bytes | bytearray):
        said = "a chunk has no bytes" if data is None else f"a chunk's bytes are {type(data).__name__}"
        return Fault(f"{said}, not base64 text or bytes", skippable=True)
    if len(data) > max_bytes:
        return too_long("the event a chunk carries", max_bytes)
    return decode_utf8(bytes(data))
