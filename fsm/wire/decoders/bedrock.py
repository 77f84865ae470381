"""Amazon Bedrock ``ConverseStream``: decoded events, one ``{eventType: body}`` object each.

``contentBlockStart.start.toolUse {toolUseId, name}`` opens a call at ``contentBlockIndex``,
``contentBlockDelta.delta.toolUse.input`` fragments append, ``contentBlockStop`` ends it; ``messageStop.stopReason``
ends the stream. A start repeated for the block still open at its index (same id and name) changes nothing. Text and
reasoning deltas carry no call; the random ``p`` padding field is ignored. A server tool (Amazon Nova's
``nova_code_interpreter``, ``nova_grounding``) comes as a ``toolUse`` start of ``type: server_tool_use``, a call the
provider runs itself (:attr:`~fsm.results.Result.server_tool_calls`), and its result as a block of its own
(``contentBlockStart.start.toolResult {toolUseId, type, status}``, then ``contentBlockDelta.delta.toolResult``: a list
of ``{json}`` or ``{text}`` items, a run of text items joined), kept whole at its ``contentBlockStop`` as Converse's
``toolResult`` block (:class:`~fsm.events.ServerResultBlock`). A text block's text is a text part of its own (keyed by
its ``contentBlockIndex``), and each ``delta.citation`` in it (botocore's ``CitationsDelta``) a citation of that part,
kept whole and in order, as Claude's ``citations_delta`` is (the members of the ``Citation`` of the
``citationsContent`` block it goes back in). Reported (``part-not-reassembled``): a citation with no text block to go
on, the citations of a block that ended with no text, what else a block's start or delta holds (an ``image``, a result
item of another kind, a ``toolResult`` in a block no result's), a result block never stopped (by ``messageStop``, or
``close()``). :mod:`fsm.wire.framing` unframes the binary event stream.

An ``InvokeModelWithResponseStream`` carries the model's own events instead (a Claude model's are Anthropic's;
fsm/wire/eventstream.py unwraps them): named ``bedrock``, it is read by the decoder of the wire its first event shows.
An exception tells neither stream; once a ConverseStream event was read, an event of another wire, or a key beside an
exception, is not read (``unknown-event``).

Nothing is dropped in silence: a ``toolUse`` start without ``contentBlockIndex`` is kept as a call routed by its id
(``missing-routing-field``) and takes the next index no block opened; tool input at an index no block opened opens a
call of its own (``unopened-call``). ``malformed_*`` stop reasons are errors."""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any

from fsm.events import (
    CallEnd,
    CallRef,
    Event,
    ReasoningDelta,
    ServerResultBlock,
    StreamEnd,
    TextDelta,
    build_arguments_fragment,
    build_arguments_snapshot,
    build_call_ref,
    build_call_seen,
    build_stream_end,
    build_usage_report,
)
from fsm.wire.decoders import BEDROCK_ERRORS, BEDROCK_EVENTS, Decoder, detect_provider, error_message, make_decoder
from fsm.wire.decoders._converse_results import ConverseResult, unstopped
from fsm.wire.decoders._fields import exception_message, index, mapping, text
from fsm.wire.decoders._wire import TurnSaid
from fsm.wire.decoders.chunk_form import FormSpec

_FINISH = {
    "tool_use": "tool_calls",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
    **dict.fromkeys(("malformed_model_output", "malformed_tool_use"), "error"),  # unparsed, as Gemini's MALFORMED_*
}
_QUIET = {"messageStart", "metadata"}


class BedrockDecoder:
    name = "bedrock"

    def __init__(self) -> None:
        self._blocks: dict[int, tuple[CallRef, bool]] = {}  # index → (call, any input seen)
        self._unplaced: tuple[CallRef, bool] | None = None  # a tool block that came without its index
        self._carried: Decoder | None = None  # an InvokeModel stream's: the model's own wire's decoder
        self._converse = False  # a ConverseStream event was read: the stream is one
        self._results: dict[int, ConverseResult] = {}  # index → a server tool's result block being read
        self._cited: dict[int, bool] = {}  # a text block's index → any text yet (False: only citations)
        self._thought: set[int] = set()  # the reasoning blocks' indexes: no citation goes on them

    @property
    def output_indexed(self) -> bool:
        """An InvokeModel stream's calls take the places its model's wire gives them (a Claude
        model's content block index). ConverseStream's block index is not used as a place: the
        Converse turn goes back with its text before its calls (a text part is keyed by it only)."""
        return bool(getattr(self._carried, "output_indexed", False))

    @property
    def hands_over(self) -> bool:  # an InvokeModel stream of a Claude model's (policy decline-cut-waits)
        return bool(getattr(self._carried, "hands_over", False))

    def unstopped(self, diagnose: Callable[[str, str], None]) -> None:  # at the message's end, or close() before it
        unstopped(self._results, self._carried, diagnose)

    def place_of(self, wire_id: str | None) -> int | None:
        """An InvokeModel stream's call that came without its place: where its model's wire puts it."""
        place_of = getattr(self._carried, "place_of", None)
        return place_of(wire_id) if place_of is not None else None

    def decode(self, payload: Mapping[str, Any], diagnose: Callable[[str, str], None]) -> list[Event]:
        if self._converse:
            if "type" in payload or not payload:  # no Converse event has a type: an exception, another wire's
                return self._not_converse(payload, diagnose)
        elif (carried := self._carried or self._carrying(payload)) is not None:
            return carried.decode(payload, diagnose)  # (ConverseStream events fed among chunks: Reassembler)
        elif "type" in payload or BEDROCK_EVENTS.isdisjoint(payload):
            return self._not_converse(payload, diagnose)
        else:  # an exception belongs to both streams: it tells neither
            self._converse = not BEDROCK_ERRORS.issuperset(payload.keys())
        events: list[Event] = []
        for kind, body in payload.items():
            if kind in BEDROCK_ERRORS:  # read whatever its body holds, as from the AWS framing
                events.append(StreamEnd("error", kind, exception_message(kind, body)))
                continue
            body = mapping(body, kind)
            if kind == "contentBlockStart":
                start = mapping(body.get("start"), "start")
                tool = mapping(start.get("toolUse"), "toolUse")
                at = index(body.get("contentBlockIndex"), "contentBlockIndex")
                opened = not tool and self._open_result(at, start.get("toolResult"))
                _report_unread(start, "contentBlockStart.start", at, diagnose, _READ_RESULT if opened else _READ)
                if tool:
                    server = tool.get("type") == "server_tool_use"
                    ref = build_call_ref(
                        at, text(tool.get("toolUseId"), "toolUseId"), text(tool.get("name"), "name"), server=server
                    )
                    if at is None:
                        diagnose("missing-routing-field", "a toolUse start without contentBlockIndex; routed by its id")
                        self._unplaced = (ref, False)
                    elif self._blocks.get(at, (None,))[0] != ref:  # else this block's start repeated: keep what it saw
                        self._blocks[at] = (ref, False)
                    events.append(build_call_seen(ref))
            elif kind == "contentBlockDelta":
                at = index(body.get("contentBlockIndex"), "contentBlockIndex")
                said = mapping(body.get("delta"), "delta")
                delta = said.get("toolUse")
                result = self._results.get(at) if at is not None and delta is None else None
                took = result is not None and result.add(said.get("toolResult"), f"block {at}", diagnose, events)
                read = _READ_RESULT_DELTA if took else _READ_DELTA
                _report_unread(said, "contentBlockDelta.delta", at, diagnose, read)
                if "citation" in said:
                    events += self._citation(at, said["citation"], diagnose)
                if delta is None:
                    events += self._said(at, said)
                else:
                    piece = text(mapping(delta, "toolUse").get("input"), "input")
                    ref = self._placed(at, diagnose)
                    if piece:
                        self._keep(at, ref, seen=True)
                        events.append(build_arguments_fragment(ref, piece))
            elif kind == "contentBlockStop":
                at = index(body.get("contentBlockIndex"), "contentBlockIndex")
                if at is not None and self._cited.pop(at, True) is False:
                    _uncited(at, diagnose)
                if at is not None and at in self._results:
                    events.append(ServerResultBlock(self._results.pop(at).block(), at))
                    continue
                block = self._take(at)
                if block is not None:
                    ref, seen = block
                    if not seen:
                        events.append(build_arguments_snapshot(ref, "{}"))  # a tool without input takes {}
                    events.append(CallEnd(ref))
            elif kind == "messageStop":
                # as Anthropic's stop_reason: no reason, no finish reason (close() says so), never the word "None"
                reason = text(body.get("stopReason"), "stopReason")
                self.unstopped(diagnose)
                for at in [at for at, texted in self._cited.items() if not texted]:
                    _uncited(at, diagnose)
                self._cited.clear()
                if reason:
                    events.append(build_stream_end(_FINISH.get(reason, reason), reason, None, None))
            elif kind == "metadata" and body.get("usage"):
                events.append(build_usage_report(dict(mapping(body.get("usage"), "usage"))))
            elif kind not in _QUIET:
                diagnose("unknown-event", f"Bedrock event {kind!r}")
        return events

    def _said(self, at: int | None, delta: Mapping[str, Any]) -> list[Event]:
        said = _said(at, delta)
        if at is not None and said:
            if type(said[0]) is TextDelta:
                self._cited[at] = True
            else:
                self._thought.add(at)
        return said

    def _citation(self, at: int | None, cited: Any, diagnose: Callable[[str, str], None]) -> list[Event]:
        """A citation of the text block at ``at``, whole; reported where no text block is there to
        take it (it would go back on no text, or on another block's)."""
        cited = mapping(cited, "citation")
        if not cited:
            return []
        if at is None or at in self._blocks or at in self._results or at in self._thought:
            what = "has no contentBlockIndex" if at is None else f"is in block {at}, which is no text block"
            diagnose("part-not-reassembled", f"a citation that {what}: it cites no text and is not kept")
            return []
        self._cited.setdefault(at, False)
        return [TextDelta("", part=at, citation=dict(cited))]

    def _open_result(self, at: int | None, start: Any) -> bool:
        """Opens a server tool's result block at ``at``: one with no index or no ``toolUseId`` says
        nothing a result can be paired or placed by, and stays reported."""
        if at is None or not isinstance(start, Mapping) or not isinstance(start.get("toolUseId"), str):
            return False
        if not start["toolUseId"]:
            return False
        self._results[at] = ConverseResult(at, start)
        return True

    def _carrying(self, payload: Mapping[str, Any]) -> Decoder | None:
        """The decoder for an InvokeModel stream's events, made by the first event of another wire
        (never once a ConverseStream event was read)."""
        if BEDROCK_EVENTS & payload.keys():
            return None
        provider = detect_provider(payload)
        if provider is None or provider == "bedrock":
            return None
        self._carried = make_decoder(provider)
        return self._carried

    def _not_converse(self, payload: Mapping[str, Any], diagnose: Callable[[str, str], None]) -> list[Event]:
        """An event with a type (no ConverseStream event has one) or no ConverseStream event: an exception
        frame as the AWS framing hands it on (``{"type": "error", ...}``) ends the stream; once a Converse
        event was read, an event of another wire (an InvokeModel chunk's) is reported, not read."""
        if payload.get("type") == "error":
            if unread := [key for key in payload if key not in ("type", "error")]:  # as among InvokeModel chunks
                diagnose("unknown-event", f"Bedrock events {unread} beside an error event: not read")
            error = mapping(payload.get("error"), "error")
            kind = error.get("type")
            return [StreamEnd("error", kind if isinstance(kind, str) else None, error_message(error))]
        if self._converse and (other := detect_provider(payload)) is not None:
            diagnose("unknown-event", f"an event of {other}'s wire in a ConverseStream")
            return []
        for kind in payload or [None]:  # an empty event too: nothing vanishes without a word
            diagnose("unknown-event", f"Bedrock event {kind!r}" if kind is not None else "an empty Bedrock event")
        return []

    def commonest_fragment(self, payload: dict[str, Any]) -> tuple[CallRef, str] | None:
        """(ref, text) when the event is the commonest kind: a lone ``contentBlockDelta`` whose delta
        holds ``toolUse`` alone, with non-empty input, for a block open at an integer index. decode()
        makes exactly one ``ArgumentsFragment(ref, text)`` of it, with no diagnostic; this does what
        decode() does to the block and no more. None, changing nothing, for any other event (a test
        replays every vector and fuzzed stream with and without this shortcut)."""
        body = payload.get("contentBlockDelta")
        if type(body) is not dict or len(payload) != 1:
            return None
        at, delta = body.get("contentBlockIndex"), body.get("delta")
        if type(at) is not int or type(delta) is not dict or len(delta) != 1:
            return None  # anything beside toolUse in the delta: decode() may report it
        use = delta.get("toolUse")
        piece = use.get("input") if type(use) is dict else None
        if type(piece) is not str or not piece:
            return None
        return self.fragment_at(at, piece)

    def commonest_said(self, payload: dict[str, Any], content: TurnSaid) -> bool:
        """Take the commonest event of a ConverseStream turn that talks, a lone ``contentBlockDelta``
        whose delta holds only text (not empty) or only reasoning text, at an integer index, to
        ``content`` as decode() and Reassembler._apply would take its one event, marking its block as
        decode() does; False, changing nothing, for any other event (a test replays every vector and
        fuzzed stream with and without this shortcut, and events that nearly qualify)."""
        body = payload.get("contentBlockDelta")
        if type(body) is not dict or len(payload) != 1 or not self._converse:
            return False  # (not yet a ConverseStream, or an InvokeModel one: decode() tells)
        at, delta = body.get("contentBlockIndex"), body.get("delta")
        if type(at) is not int or at >> 63 or type(delta) is not dict or len(delta) != 1:
            return False  # (at >> 63: below 0 or past 63 bits, which index() reads with care)
        piece = delta.get("text")
        if type(piece) is str and piece:
            return self.said_at("text", at, piece, content)
        thought = delta.get("reasoningContent")
        piece = thought.get("text") if type(thought) is dict and len(thought) == 1 else None
        return type(piece) is str and self.said_at("reasoning", at, piece, content)

    def said_form_of(self, payload: dict[str, Any]) -> tuple[FormSpec, str] | None:
        """Of an event commonest_said took: its form's holes (the text, the block's index and the
        padding, as for tool input) and what it says (``text`` or ``reasoning``); None for an
        empty piece, whose hole no probe tells from its neighbours."""
        body = payload["contentBlockDelta"]
        delta = body["delta"]
        kind, piece = ("text", delta["text"]) if "text" in delta else ("reasoning", delta["reasoningContent"]["text"])
        if not piece:
            return None
        path = _SAID_TEXT if kind == "text" else _SAID_REASONING
        return FormSpec(path, body["contentBlockIndex"], _FORM_PADDING, None, _FORM_PLACE), kind

    def said_at(self, kind: str, at: int, piece: str, content: TurnSaid) -> bool:
        """What commonest_said does with a delta of block ``at`` (0 to 2**63) holding ``piece``
        (text, never empty, or reasoning), marking its block as decode() does."""
        if kind == "text":  # a text part keyed by its block, with no output_index
            content.said_in_part(piece, at, None)
            self._cited[at] = True
        else:
            content.reasoned(at, piece, None)
            self._thought.add(at)
        return True

    def form_of(self, payload: dict[str, Any]) -> FormSpec:
        """Of an event commonest_fragment took: where its text sits, the place its form names (the
        block's index, which any integer there may be: a hole of the form) and where Bedrock's
        random padding ``p`` sits."""
        return FormSpec(_FORM_TEXT, payload["contentBlockDelta"]["contentBlockIndex"], _FORM_PADDING, None, _FORM_PLACE)

    def fragment_at(self, at: int, piece: str) -> tuple[CallRef, str] | None:
        """What commonest_fragment does with such an event for block ``at`` holding ``piece`` (not
        empty): the call open there, kept as seen; None, changing nothing, if none is."""
        block = self._blocks.get(at)
        if block is None:
            return None
        self._keep(at, block[0], seen=True)
        return block[0], piece

    def _placed(self, at: int | None, diagnose: Callable[[str, str], None]) -> CallRef:
        """The call open at ``at``. A block that came without an index takes the first index no
        block opened (blocks are sent one after another); tool input for an index nothing opened
        opens a call of its own."""
        if at is not None and at in self._blocks:
            return self._blocks[at][0]
        if self._unplaced is not None:
            ref, seen = self._unplaced
        else:
            diagnose("unopened-call", f"toolUse input for block {at}, which no toolUse start opened")
            ref, seen = build_call_ref(at), False
        self._keep(at, ref, seen=seen)
        return ref

    def _keep(self, at: int | None, ref: CallRef, *, seen: bool) -> None:
        if at is None:
            self._unplaced = (ref, seen)
        else:
            self._blocks[at] = (ref, seen)
            if self._unplaced is not None and self._unplaced[0] is ref:
                self._unplaced = None

    def _take(self, at: int | None) -> tuple[CallRef, bool] | None:
        """The block a stop ends, no longer open."""
        if at is not None and at in self._blocks:
            return self._blocks.pop(at)
        block, self._unplaced = self._unplaced, None
        return block


_FORM_TEXT = ("contentBlockDelta", "delta", "toolUse", "input")
"""Where a tool input ``contentBlockDelta`` event holds its text."""
_SAID_TEXT = ("contentBlockDelta", "delta", "text")
_SAID_REASONING = ("contentBlockDelta", "delta", "reasoningContent", "text")
_FORM_PADDING = ("contentBlockDelta", "p")
"""Where Bedrock puts the random padding of an event (never read)."""
_FORM_PLACE = ("contentBlockDelta", "contentBlockIndex")
"""Where it names the block: a hole of the form (any integer there is read as the block's index)."""

_READ = frozenset({"text", "reasoningContent", "toolUse"})
"""What this decoder reads of a block's start; the rest (an ``image``, a ``toolResult`` outside a
result block) is reported, not dropped unseen."""
_READ_RESULT = _READ | {"toolResult"}
"""What it reads of a server tool's result block's start."""
_READ_DELTA, _READ_RESULT_DELTA = _READ | {"citation"}, _READ_RESULT | {"citation"}
"""What it reads of a block's delta: a ``citation`` too (reported apart where no text takes it)."""


def _report_unread(
    body: Mapping[str, Any],
    where: str,
    at: int | None,
    diagnose: Callable[[str, str], None],
    read: frozenset[str] = _READ,
) -> None:
    if body.keys() <= read:
        return
    if unread := [str(key) for key, value in body.items() if key not in read and value is not None]:
        diagnose(
            "part-not-reassembled", f"{where} of block {at} holds {', '.join(unread[:6])}, which is not reassembled"
        )


def _uncited(at: int, diagnose: Callable[[str, str], None]) -> None:
    diagnose("part-not-reassembled", f"block {at} ended with citations and no text: they go back on no text")


def _said(at: int | None, delta: Mapping[str, Any]) -> list[Event]:
    """Text (a part of its own: its block's citations go back on it), and reasoning with its
    signature or redacted content (Claude through Converse)."""
    piece = text(delta.get("text"), "delta.text")
    if piece:
        return [TextDelta(piece, part=at)]  # no output_index: a Converse turn's text goes back before its calls
    reasoning = mapping(delta.get("reasoningContent"), "reasoningContent")
    if not reasoning:
        return []
    redacted = reasoning.get("redactedContent")
    if isinstance(redacted, bytes | bytearray):  # boto3's events hold the wire's base64 blob decoded
        redacted = base64.b64encode(redacted).decode("ascii")
    return [
        ReasoningDelta(
            at,
            text(reasoning.get("text"), "reasoningContent.text") or "",
            signature=text(reasoning.get("signature"), "reasoningContent.signature"),
            redacted=text(redacted, "reasoningContent.redactedContent") or None,
        )
    ]
