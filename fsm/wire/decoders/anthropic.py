"""Anthropic Messages streaming.

``content_block_start`` (a ``tool_use`` block with id and name) opens a call at its block index, ``input_json_delta``
fragments append to it, ``content_block_stop`` ends it (a start repeated for the block still open at its index, same
id and name, changes nothing). By the protocol, a block with no input text has the input it started with (``{}``
unless pre-filled); a whole ``tool_use`` may also come inside ``message_start``. ``server_tool_use`` blocks are run by
Anthropic: they are reassembled the same way but marked as server calls. A stream cut by ``max_tokens`` before
``content_block_stop`` leaves the call open, so it comes back truncated with its raw text (the ``stop_reason`` says
why, with a refusal's ``stop_details``: its category and explanation). Thinking, text and tool blocks share the
content block index, which each reports as its ``output_index`` (each text block is a text part of its own): the turn
goes back in the order it streamed (interleaved thinking). A server tool's result block (any ``*_tool_result``), and a
``container_upload`` or ``mcp_tool_listing`` block (:data:`~fsm.wire.decoders._wire.CLAUDE_KEPT_BLOCKS`), comes whole
in its start and is kept whole, as is each citation of a text block (``citations_delta``, or a whole block's
``citations``), and a ``compaction`` block (context management: the summary of the context before it), with what each
``compaction_delta`` sets on it, and a ``connector_text`` block, built by its deltas until it stops
(:mod:`~fsm.wire.decoders._claude_streamed`): the turn goes back with them. So does a ``fallback`` block
(``model-fallback``: :mod:`~fsm.wire.decoders._claude_fallback`). A block of a type no reading knows is an
``unknown-event``.

Nothing is dropped in silence: a ``tool_use`` block without ``index`` is kept as a call routed by its id
(``missing-routing-field``), and the next block events at an index no block opened are matched to it. Its place in the
turn (:meth:`AnthropicDecoder.place_of`) is the index such an event names, else one past the highest index the blocks
before it had: blocks stream one after another, each at its index in the message's content, so it goes back between
the blocks it came between. For the same reason the block events without an index (a proxy's that leaves it off every
event of a block, of any kind) are the block's opened last without one, until its stop: its deltas all go to it and
its stop ends it, its text or thinking is a part at its place (read as later blocks', its second delta opened a call
of its own and a server block's text joined the call before it). ``input_json_delta`` text at an index that no block
opened opens a call of its own (``unopened-call``); an unknown delta type inside a tool block is an ``unknown-event``;
a ``citations_delta`` without index names no text block to go back on (``part-not-reassembled``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fsm.events import (
    CallEnd,
    CallRef,
    ContainerReport,
    Event,
    ReasoningDelta,
    StreamEnd,
    TextDelta,
    build_arguments_fragment,
    build_arguments_snapshot,
    build_call_ref,
    build_call_seen,
    build_stream_end,
    build_usage_report,
)
from fsm.wire.decoders import error_words
from fsm.wire.decoders._claude_fallback import FALLBACK_BLOCK, fallback_said
from fsm.wire.decoders._claude_kept import kept_block
from fsm.wire.decoders._claude_streamed import StreamedBlocks
from fsm.wire.decoders._fields import index, items, mapping, text
from fsm.wire.decoders._wire import CLAUDE_FINISH, TurnSaid, claude_kept_block, dumps, stop_details_said
from fsm.wire.decoders.chunk_form import FormSpec

_CALL_BLOCKS = {"tool_use": False, "server_tool_use": True, "mcp_tool_use": True}
CLIENT_CONTEXT = ("caller", "toolset_name")
"""What a client ``tool_use`` block says beside its id, name and input (anthropic ``ToolUseBlock``)."""
NOTHING_SAID = (None, {"type": "direct"})  # a direct caller, the default, says nothing (Claude sends it)
_SDK_HELPER_EVENTS = {"text", "input_json", "citation", "thinking", "signature"}
"""Events the anthropic SDK's ``messages.stream()`` derives from the raw ones it also yields: they
repeat what the raw events said, so they are recognised and skipped."""
_QUIET = {"ping", "message_stop", *_SDK_HELPER_EVENTS}
_FINISH = CLAUDE_FINISH


class _Block:
    __slots__ = ("prefill", "ref", "streamed")

    def __init__(self, ref: CallRef, prefill: Any) -> None:
        self.ref = ref
        self.prefill = prefill
        self.streamed = False


_FORM_TEXT = ("delta", "partial_json")
"""Where an ``input_json_delta`` event holds its text."""


class AnthropicDecoder:
    name = "anthropic"
    output_indexed = True
    """Thinking, text and tool blocks share one content block index: the order the turn goes back in
    (interleaved thinking puts thinking between calls, and Anthropic refuses it rearranged)."""
    hands_over = True
    """A decline may cut a tool block, a ``fallback`` block next (policy decline-cut-waits)."""

    def __init__(self) -> None:
        self._blocks: dict[int, _Block] = {}
        self._unplaced: _Block | None = None  # a tool block that came without its index
        # The block opened last without an index, while open: where its index-less events go (its
        # place; its tool block, if it is one). Read as a later block's, they joined the wrong call.
        self._bare_at: int | None = None
        self._bare: _Block | None = None
        self._diagnose: Callable[[str, str], None] = _ignore
        self._top = -1  # the highest content block index seen
        self._places: dict[str, int] = {}  # by wire id: where each tool block that came without an index sat
        self._streamed = StreamedBlocks()  # compaction and connector_text blocks, as they stand

    def place_of(self, wire_id: str | None) -> int | None:
        """Where the call under ``wire_id`` that came without its block index sat in the content
        (see the module docstring); None for any other call."""
        return self._places.get(wire_id) if wire_id is not None else None

    def unstopped(self, diagnose: Callable[[str, str], None]) -> None:  # close() with no message_delta read
        self._streamed.unstopped(diagnose)

    def _seen(self, at: int | None) -> None:
        if at is not None and at > self._top:
            self._top = at

    def decode(self, payload: Mapping[str, Any], diagnose: Callable[[str, str], None]) -> list[Event]:
        self._diagnose = diagnose
        kind = text(payload.get("type"), "type")
        if kind in ("content_block_start", "content_block_delta", "content_block_stop"):
            at = index(payload.get("index"), "index")
            self._seen(at)
            if kind == "content_block_start":
                return self._start(at, mapping(payload.get("content_block"), "content_block"))
            if kind == "content_block_delta":
                return self._delta(at, mapping(payload.get("delta"), "delta"))
            return self._stop(at)
        if kind == "message_delta":
            self._streamed.unstopped(diagnose)
            delta = mapping(payload.get("delta"), "delta")
            reason = text(delta.get("stop_reason"), "stop_reason")
            said = stop_details_said(delta.get("stop_details"))
            ended: list[Event] = [build_stream_end(_FINISH.get(reason, reason), reason, None, said)] if reason else []
            # the container first: it is the turn's, told beside its end, never data after it
            return _container(delta) + ended + _usage(payload.get("usage"), cumulative=True)
        if kind == "message_start":
            message = mapping(payload.get("message"), "message")
            events: list[Event] = _container(message) + _usage(message.get("usage"), cumulative=False)
            content = items(message.get("content"), "message.content")
            for i, block in enumerate(content):
                self._seen(i)
                events += self._start(i, mapping(block, f"content[{i}]"))
                events += self._stop(i)
            return events
        if kind == "error":
            # As error_in reads it before the provider is known (a string error, none beside a message)
            return [StreamEnd("error", *error_words(payload.get("error") or payload, payload))]
        if kind not in _QUIET:
            diagnose("unknown-event", f"Anthropic event type {kind!r}")
        return []

    def commonest_fragment(self, payload: dict[str, Any]) -> tuple[CallRef, str] | None:
        """(ref, text) when the event is the commonest kind: non-empty ``input_json_delta`` text for
        a tool block open at an integer index. decode() makes exactly one ``ArgumentsFragment(ref,
        text)`` of it, with no diagnostic; this does what decode() does to the block and no more.
        None, changing nothing, for any other event (a test replays every vector and fuzzed stream
        with and without this shortcut)."""
        if payload.get("type") != "content_block_delta":
            return None
        delta, at = payload.get("delta"), payload.get("index")
        if type(delta) is not dict or type(at) is not int or delta.get("type") != "input_json_delta":
            return None
        piece = delta.get("partial_json")
        if type(piece) is not str or not piece:
            return None
        return self.fragment_at(at, piece)

    def commonest_said(self, payload: dict[str, Any], content: TurnSaid) -> bool:
        """Take the commonest event of a turn that talks, a text delta (not empty) or a thinking
        delta of a block at an integer index where no tool block is, to ``content``, as decode()
        and Reassembler._apply would take its one event, without building it; False, changing
        nothing, for any other event (a test replays every vector and fuzzed stream with and
        without this shortcut, and events that nearly qualify)."""
        if payload.get("type") != "content_block_delta":
            return False
        delta, at = payload.get("delta"), payload.get("index")
        if type(delta) is not dict or type(at) is not int or at >> 63:
            return False  # (at >> 63: below 0 or past 63 bits, which index() reads with care)
        kind = delta.get("type")
        key = _SAID_KEYS.get(kind) if type(kind) is str else None  # (a list is no key: unhashable)
        if key is None:
            return False
        piece = delta.get(key)
        return type(piece) is str and self.said_at(key, at, piece, content)

    def said_form_of(self, payload: dict[str, Any]) -> tuple[FormSpec, str] | None:
        """Of an event commonest_said took: where its text sits, the place its form names (the
        block's index, a hole of the form) and what it says (``text`` or ``thinking``); None for
        an empty piece, whose hole no probe tells from its neighbours."""
        key = _SAID_KEYS[payload["delta"]["type"]]
        if not payload["delta"][key]:
            return None
        return FormSpec(("delta", key), payload["index"], place_at=("index",)), key

    def said_at(self, key: str, at: int, piece: str, content: TurnSaid) -> bool:
        """What commonest_said does with such a delta of block ``at`` (0 to 2**63) holding ``piece``
        under ``key`` (``text`` or ``thinking``): False, changing nothing, when decode() would make
        no event of it here (empty text) or read it otherwise (a tool block at ``at``)."""
        if at in self._blocks or (key == "text" and not piece) or at in self._streamed.unknown_types:
            return False  # (empty text: decode() makes no event; in a block of a type no reading knows: said)
        if key == "text":
            content.said_in_part(piece, at, at)
        else:
            content.reasoned(at, piece, at)
        if at > self._top:  # _seen(at)
            self._top = at
        return True

    def form_of(self, payload: dict[str, Any]) -> FormSpec:
        """Of an event commonest_fragment took: where its text sits and the place its form names
        (the block's index, which any integer there may be: a hole of the form)."""
        return FormSpec(_FORM_TEXT, payload["index"], place_at=("index",))

    def fragment_at(self, at: int, piece: str) -> tuple[CallRef, str] | None:
        """What commonest_fragment does with such an event for block ``at`` holding ``piece``
        (not empty): the tool block open there, marked streamed; None, changing nothing, if none is."""
        block = self._blocks.get(at)
        if block is None:
            return None
        block.streamed = True
        return block.ref, piece

    def _start(self, at: int | None, block: Mapping[str, Any]) -> list[Event]:
        place, self._bare = at, None
        if at is None:  # blocks stream one after another: it takes the place after the last opened one
            place = self._top = self._top + 1
        self._bare_at = None if at is not None else place
        kind = text(block.get("type"), "content_block.type") or ""
        server = _CALL_BLOCKS.get(kind)
        if server is None:
            streamed = self._streamed.start(kind, at, place, block)
            if streamed is not None:
                return streamed
            if claude_kept_block(kind):  # a server tool's result, or a block of its doing: it goes back
                if kind == FALLBACK_BLOCK:  # the caller learns another model went on from here
                    fallback_said(block, at, self._diagnose)
                return kept_block(kind, block, place, self._diagnose)
            if kind not in _SAID_BLOCKS:  # call-shaped or not, of a kind this decoder does not know
                self._streamed.unknown(kind, at, self._diagnose)
            return _said_at_start(place, block)  # text and thinking blocks carry no call
        ref = build_call_ref(at, text(block.get("id"), "id"), text(block.get("name"), "name"), server=server)
        if at is None:
            self._diagnose("missing-routing-field", f"a {block.get('type')} block without index; routed by its id")
            self._unplaced = self._bare = _Block(ref, block.get("input"))
            if ref.id is not None:
                self._places[ref.id] = self._top
        else:
            open_block = self._blocks.get(at)
            if open_block is None or open_block.ref != ref:
                self._blocks[at] = _Block(ref, block.get("input"))
            # else the start of the block still open here, repeated (a proxy's replay): the block
            # keeps its state, so input that streamed is not replaced by the start's placeholder.
        if server:  # the block as it goes back, but its input (an MCP call's server_name, a caller)
            return [build_call_seen(ref, item={key: value for key, value in block.items() if key != "input"})]
        # Who made the call (Claude's code execution, under programmatic tool calling) and the
        # toolset it is a member of: the block goes back with them (ToolUseBlockParam takes both).
        context = {key: block[key] for key in CLIENT_CONTEXT if block.get(key) not in NOTHING_SAID}
        return [build_call_seen(ref, item={"type": "tool_use", **context} if context else None)]

    def _placed(self, at: int | None) -> _Block | None:
        """The block at ``at``; a block that came without an index takes the first index that no
        block opened (blocks of a message are sent one after another)."""
        block = self._blocks.get(at) if at is not None else None
        if block is None and self._unplaced is not None:
            block, self._unplaced = self._unplaced, None
            if at is not None:
                self._blocks[at] = block
                self._placed_at(block, at)
        return block

    def _index_less(self, block: _Block | None) -> None:
        """``block`` is no longer where the block events without an index go: a later event of it
        named its index, or it stopped."""
        if block is not None and block is self._bare:
            self._bare = self._bare_at = None

    def _placed_at(self, block: _Block, at: int) -> None:
        """A tool block that came without its index is at ``at``, which a later event of it named."""
        self._index_less(block)
        if block.ref.index is None and block.ref.id is not None:
            self._places[block.ref.id] = at

    def _delta(self, at: int | None, delta: Mapping[str, Any]) -> list[Event]:
        kind = delta.get("type")
        if type(kind) is not str:  # checked only then: this runs for every delta the shortcut leaves
            kind = text(kind, "delta.type")
        streamed = self._streamed.delta(kind, at, delta, self._diagnose)
        if streamed is not None:
            return streamed
        bare = self._bare if at is None else None
        block: _Block | None = bare
        if bare is not None and kind == "input_json_delta":  # the tool block opened last without an index
            self._unplaced = None
        else:
            at = self._bare_at if at is None and bare is None else at  # that of a text or thinking block
            block = self._placed(at) if kind == "input_json_delta" or at in self._blocks else None
        if block is None:
            if kind != "input_json_delta":
                if kind not in _SAID_DELTAS:  # a delta of a kind no reading knows: said, not dropped unseen
                    self._diagnose("unknown-event", f"a {kind!r} delta in block {at}, of no kind read")
                said = _said_in_delta(at, delta)  # text, thinking, signature, citation deltas
                if at is None and kind == "citations_delta" and said:
                    self._diagnose("part-not-reassembled", "a citations_delta without index: no text block to go on")
                    return []
                return said
            self._diagnose("unopened-call", f"input_json_delta for block {at}, where no tool_use block is open")
            block = _Block(build_call_ref(at), None)
            if at is not None:
                self._blocks[at] = block
            else:
                self._unplaced = block
        if kind != "input_json_delta":
            self._diagnose("unknown-event", f"a {kind!r} delta in tool block {at}")
            return []
        piece = text(delta.get("partial_json"), "partial_json")
        if not piece:
            return []  # an empty fragment adds nothing; a block with only these has input {}
        block.streamed = True
        return [build_arguments_fragment(block.ref, piece)]

    def _stop(self, at: int | None) -> list[Event]:
        if (streamed := self._streamed.stop(at)) is not None:
            return streamed
        if at is None and self._bare_at is not None:  # the end of the block opened last without an index
            block = self._bare
            self._bare_at = self._bare = None
            self._unplaced = None if block is self._unplaced else self._unplaced
        else:
            block = self._blocks.pop(at, None) if at is not None else None
            self._index_less(block)
            if block is None and self._unplaced is not None:
                block, self._unplaced = self._unplaced, None
                if at is not None:
                    self._placed_at(block, at)
        if block is None:
            return []
        events: list[Event] = []
        if not block.streamed:
            events.append(build_arguments_snapshot(block.ref, dumps(block.prefill or {})))
        events.append(CallEnd(block.ref))
        return events


def _ignore(code: str, message: str) -> None:
    """The diagnose callback until decode() brings the caller's."""


_SAID_BLOCKS = frozenset({"text", "thinking", "redacted_thinking"})


def _said_at_start(at: int | None, block: Mapping[str, Any]) -> list[Event]:
    """What a text or thinking block says as it opens (usually nothing yet; a whole block in
    ``message_start``, all of it)."""
    kind = block.get("type")
    if kind == "text":
        opening = text(block.get("text"), "content_block.text")
        said: list[Event] = [TextDelta(opening, output_index=at, part=at)] if opening else []
        for j, citation in enumerate(items(block.get("citations"), "content_block.citations")):
            cited = dict(mapping(citation, f"content_block.citations[{j}]"))
            said.append(TextDelta("", output_index=at, part=at, citation=cited))
        return said
    if kind == "thinking":
        thought = text(block.get("thinking"), "content_block.thinking") or ""
        signature = text(block.get("signature"), "content_block.signature")
        return [ReasoningDelta(at, thought, signature=signature, output_index=at)]
    if kind == "redacted_thinking":
        return [ReasoningDelta(at, redacted=text(block.get("data"), "content_block.data"), output_index=at)]
    return []


_SAID_KEYS = {"text_delta": "text", "thinking_delta": "thinking"}
"""The deltas commonest_said takes, and the key of each one's piece."""
_SAID_DELTAS = frozenset({"text_delta", "thinking_delta", "signature_delta", "citations_delta"})
"""The deltas of a block that is no tool block: its text, its thinking and signature, and the
citations a text block gives (each whole in its delta)."""


def _said_in_delta(at: int | None, delta: Mapping[str, Any]) -> list[Event]:
    kind = delta.get("type")
    if kind == "text_delta":
        piece = text(delta.get("text"), "text")
        return [TextDelta(piece, output_index=at, part=at)] if piece else []
    if kind == "thinking_delta":
        return [ReasoningDelta(at, text(delta.get("thinking"), "thinking") or "", output_index=at)]
    if kind == "signature_delta":
        return [ReasoningDelta(at, signature=text(delta.get("signature"), "signature"), output_index=at)]
    if kind == "citations_delta":
        cited = mapping(delta.get("citation"), "citation")
        return [TextDelta("", output_index=at, part=at, citation=dict(cited))] if cited else []
    return []


def _container(holder: Mapping[str, Any]) -> list[Event]:
    """The code execution container a message or its delta names (null where none was used)."""
    container = mapping(holder.get("container"), "container")
    return [ContainerReport(dict(container))] if container else []


def _usage(value: Any, *, cumulative: bool) -> list[Event]:
    usage = mapping(value, "usage")
    return [build_usage_report(dict(usage), cumulative=cumulative)] if usage else []
