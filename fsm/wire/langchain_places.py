"""LangChain content blocks read in their places in the turn, for the integrations whose chunks say where each block
sat: what :mod:`fsm.wire.langchain_chunks` hands the reassembler for them instead of an OpenAI chat delta's one text,
last text signature and ``thinking_blocks`` (which keep no place).

Which integration made a chunk is its ``response_metadata["model_provider"]`` (langchain-core 1.x). The first chunk
that names one of these two fixes the stream's reading; a later chunk that names none (langchain-google-genai's last,
empty one) is read the same way, and one naming another is too (one stream, one reading). Chunks that never name one
are read as before, without places.

* ``anthropic`` (langchain-anthropic's ``ChatAnthropic``, both output versions): every content block carries
  ``index``, Claude's content block index, and so do its ``tool_call_chunks``. Each thinking, redacted thinking (v1: a
  ``non_standard`` block) and text block is read as the Anthropic decoder reads the bytes: keyed and placed
  (``output_index``) by that index, each text block a text part of its own; the calls are placed by their index too
  (:attr:`LangChainStream.wire` tells the reassembler so). No block needs to be ordered against the calls: the index
  orders them all.
* ``google_genai`` (langchain-google-genai's ``ChatGoogleGenerativeAI``): a block's ``index`` is LangChain's own
  count, not a part's: consecutive text (or thinking) blocks share one index however many Gemini parts, signed or not,
  they hold, and v0 gives unsigned text as a plain str with no index at all. Its chunks come in the wire's order, one
  a Gemini event, the event's thought and text parts as blocks before its calls (LangChain numbers them so, also where
  a call came first: that order is lost). So the runs are found part by part as the Gemini decoder finds them (a run
  of thought or of text parts ends at a signed part, or where another kind of part or a call comes), each signature
  kept on its part, and the reassembler places each run among the calls. Within one chunk (a message summed from the
  chunks holds the whole turn in one) a block goes after the calls that came before it: in v1 the ``tool_call`` blocks
  among the content say where; in v0 the calls' ``index``, which shares LangChain's count with the blocks, does (a
  call before a block whose index is greater). What LangChain merged when summing (blocks under one index, v0's str
  pieces) stays merged.

Tools the provider runs itself come only as content blocks, with no ``tool_call_chunks``: Claude's ``server_tool_use``
and ``mcp_tool_use`` blocks (v1: ``server_tool_call_chunk`` / ``server_tool_call``) are read as the Anthropic decoder
reads those blocks, their ``input_json_delta`` blocks appended, each ended by a later block or by a stop reason that
ends the turn; Gemini's code and its result as the Gemini decoder reads those parts (``langchain_gemini_code``). A
block neither reading knows is reported as its decoder reports one (``unknown-event``, ``part-not-reassembled``).

An ``index`` that is not an int, or a negative one, places nothing (LangChain's v1 gives its own ``tool_call`` blocks
str indices such as ``lc_tc_2``): the block is read as one that came without an index, as the Anthropic decoder reads
a delta without one (its text joins the turn's text, its reasoning the latest block). A huge one is a place like any
other: the block goes after the others.
"""

from __future__ import annotations

import bisect
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

from fsm.events import (
    ArgumentsFragment,
    ArgumentsSnapshot,
    CallEnd,
    CallRef,
    CallSeen,
    Event,
    ReasoningDelta,
    ServerResultBlock,
    TextDelta,
)
from fsm.wire import langchain_claude_v1 as claude_v1
from fsm.wire.decoders._fields import written
from fsm.wire.decoders._wire import CLAUDE_SERVER_CALLS, Held, dumps, server_result_block
from fsm.wire.langchain_gemini_code import GeminiSeen, block_signature, call_events, code_item, code_result, unjoined
from fsm.wire.langchain_gemini_tools import tool_events, tool_part

PLACED = {"anthropic": "anthropic", "google_genai": "gemini"}
"""The integrations (``model_provider``) whose blocks are read in their places, and as which wire."""

CALL_BLOCKS = ("tool_call", "tool_call_chunk")
"""v1's content blocks that repeat a call the chunk's ``tool_call_chunks`` carry, in its place among
the blocks."""

CLAUDE_SAYS = ("text", "thinking", "reasoning", "redacted_thinking", "non_standard")
"""The ChatAnthropic blocks that may hold text or reasoning (v0's and v1's types)."""

Said = list[tuple[int, Event]]
"""A chunk's text, reasoning and server calls, each after how many of the chunk's calls it goes."""

TURN_ENDED = frozenset({"tool_use", "end_turn", "stop_sequence"})
"""Anthropic stop reasons after which every content block has ended (at ``max_tokens`` the open
block stays open: no ``content_block_stop`` comes)."""

CLAUDE_SERVER = (*CLAUDE_SERVER_CALLS, "server_tool_call", "server_tool_call_chunk")
"""The ChatAnthropic blocks of a tool Anthropic runs itself: v0 keeps Anthropic's block (its input
streamed by ``input_json_delta`` blocks at its index), v1 gives ``server_tool_call_chunk`` blocks
(the first with the id and name, then the argument text) or a whole ``server_tool_call``."""

CLAUDE_SERVER_STARTS = frozenset(CLAUDE_SERVER_CALLS)
"""The blocks that open a tool Anthropic runs itself, in ChatAnthropic's v0 chunks: Claude's alone."""

_NOT_KEPT = ("input", "index", "partial_json")  # the input goes back parsed; LangChain's index; a sum's text

GEMINI_SAYS = frozenset({"text", "thinking", "reasoning", *CALL_BLOCKS})
"""The ChatGoogleGenerativeAI blocks read as text, reasoning or calls; any other is a part this
reading does not reassemble, reported as the Gemini decoder reports such a part."""


class _Server:
    """A server tool block of Claude's still open: its call, the text its start input writes, and
    whether argument text streamed for it (then that text is its arguments, as on the wire)."""

    __slots__ = ("ref", "start", "streamed")

    def __init__(self, ref: CallRef, start: str) -> None:
        self.ref, self.start, self.streamed = ref, start, False

    def ended(self) -> list[Event]:
        return [CallEnd(self.ref)] if self.streamed else [ArgumentsSnapshot(self.ref, self.start), CallEnd(self.ref)]


class LangChainStream:
    """What a stream's LangChain chunks leave to later ones: the ``input`` of the Anthropic tool blocks no argument text
    has followed yet (by block index), the reading the first chunk to name its integration fixed (``wire``:
    ``anthropic``, ``gemini`` or None), the Gemini run the last part belongs to, and the chunk's text and reasoning
    events not yet taken (None: the chunk was read without places, its text in its delta)."""

    __slots__ = ("claude_top", "gemini", "inputs", "items", "notes", "run", "run_thought", "said", "servers", "wire")

    def __init__(self, policies: Any = None) -> None:
        self.inputs = Held()  # Anthropic tool blocks whose input no argument text has followed yet
        self.wire: str | None = None
        self.run = 0
        self.run_thought: bool | None = None
        self.said: Said | None = None
        self.servers = Held()  # Claude's server tool blocks still open (_Server), by index
        self.gemini = GeminiSeen(policies)  # Gemini's code blocks, and the calls LangChain made an id up for
        self.notes: list[tuple[str, str]] = []  # what the chunk holds that is not read: (code, message)
        self.items: Any = None  # ChatOpenAI's Responses items (langchain_items.ResponsesItems), once any came
        self.claude_top = -1  # the highest Claude content block index a ChatAnthropic block or call came at

    def read_items(self, content: Any, entries: Any, metadata: Mapping[str, Any], extra: Any, finished: bool) -> Any:
        """A ChatOpenAI Responses chunk's items, reasoning items and calls' item ids (:mod:`fsm.wire.langchain_items`)
        as events in ``said``, each after the chunk's calls LangChain counted before it, read where no places are, from
        the stream's first chunk that holds one on; returns the chunk's ``tool_call_chunks`` (``entries``) without those
        its custom tool calls replace. ``extra``: its ``additional_kwargs``; ``finished``: it ends the turn."""
        from fsm.wire.langchain_items import ResponsesItems, holds_items  # only for LangChain's chunks

        hosted = metadata.get("model_provider") == "openai"
        if self.wire is not None or (self.items is None and not holds_items(content, extra, hosted)):
            return entries
        if self.items is None:
            self.items = ResponsesItems()
        diagnose = self.notes.append
        counted, seen, entries = self.items.read_chunk(
            content, entries, extra, hosted, finished, lambda code, message: diagnose((code, message))
        )
        if not counted:  # most chunks (an argument or summary delta's) hold nothing to place
            self.said = seen  # each before its call: already a number of the chunk's calls
            return entries
        before = calls_before(entries)
        said: Said = [(before(at), event) for at, event in counted]
        said += seen
        said.sort(key=operator.itemgetter(0))  # stable: each kind keeps its order
        self.said = said
        return entries

    def reading(self, metadata: Any) -> str | None:
        """The stream's reading, fixed by the first chunk whose metadata names an integration here."""
        if self.wire is None and isinstance(metadata, Mapping):
            named = metadata.get("model_provider")
            self.wire = PLACED.get(named) if isinstance(named, str) else None
        return self.wire

    def steps(self, payload: Mapping[str, Any]) -> list[Any]:
        """What the chunk holds that is not read, as ``(code, message)`` diagnostics, then its text, reasoning and
        server call events and its OpenAI chat ``payload``, in the turn's order: the payload split where a block came
        after some of its calls (each part a chunk of its own, the finish reason and usage on the last). Takes them: the
        next chunk has its own."""
        said, self.said = self.said, None
        steps: list[Any] = list(self.notes)
        self.notes.clear()
        if not said:
            return [*steps, payload]
        choice = payload["choices"][0]
        calls = choice["delta"].get("tool_calls") or []
        done = 0
        for after, event in said:
            if after > done:
                steps.append(_calls_alone(calls[done:after]))
                done = after
            steps.append(event)
        if done:
            rest = {key: value for key, value in choice["delta"].items() if key != "tool_calls"}
            if calls[done:]:
                rest["tool_calls"] = calls[done:]
            payload = {**payload, "choices": [{**choice, "delta": rest}]}
        steps.append(payload)
        return steps


def _calls_alone(calls: list[Any]) -> dict[str, Any]:
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": calls}}]}


def place_of(value: Any) -> int | None:
    """A block's ``index`` as a place: a non-negative int; anything else is none (see the module)."""
    return value if type(value) is int and value >= 0 else None


def read_in_places(content: Any, entries: Any, stream: LangChainStream, finish: str | None = None) -> None:
    """The chunk's blocks (``content``, a str or a list) as text, reasoning and server call events in their places, into
    ``stream.said``; ``entries`` are its ``tool_call_chunks`` (checked dicts), ``finish`` its finish reason (Claude's
    server blocks still open end at one that ends the turn)."""
    blocks = [content] if isinstance(content, str) else list(content or ())
    if stream.wire == "anthropic":
        ids = {e["id"]: e["index"] for e in entries if isinstance(e.get("id"), str) and type(e.get("index")) is int}
        stream.said = [(0, event) for block in blocks for event in _claude_block(block, stream, ids)]
        if finish in TURN_ENDED:
            stream.said += [(0, event) for event in end_servers(stream, None)]
        return
    said: Said = []
    v1 = any(isinstance(b, Mapping) and b.get("type") in CALL_BLOCKS for b in blocks)
    counted = calls_before(entries)
    after, positions = 0, [0, 0]  # the chunk's code and tool calls so far: where the next sits among its kind's
    for block in blocks:
        kind = block.get("type") if isinstance(block, Mapping) else "text" if isinstance(block, str) else None
        if not isinstance(kind, str):  # no block LangChain makes: nothing said, nothing between
            continue
        if kind in CALL_BLOCKS:
            after = min(after + 1, len(entries))
            stream.run_thought = None  # a call came between
            continue
        if not v1 and isinstance(block, Mapping) and (at := place_of(block.get("index"))) is not None:
            before = counted(at)
            if before > after:
                after, stream.run_thought = before, None
        if kind not in GEMINI_SAYS and isinstance(block, Mapping):
            said += [(after, event) for event in _gemini_other(block, kind, stream, positions)]
            continue
        event = _gemini(block, kind, stream)
        if event is not None:
            said.append((after, event))
    if len(entries) > after:  # the chunk's calls after its last block
        stream.run_thought = None
    stream.said = said


def calls_before(entries: Any) -> Callable[[int], int]:
    """How many of the chunk's calls (``entries``, in order) came before a block at LangChain index ``at``: those before
    the first whose index is none or not below ``at``. Found by bisection over the running highest index (None: past
    every place), so a chunk summed from a long turn is read in n log n, not a pass over its calls per block."""
    highest: list[float] = []
    top = -1.0
    for entry in entries:
        index = place_of(entry.get("index"))
        top = math.inf if index is None else max(top, index)
        highest.append(top)
    return lambda at: bisect.bisect_left(highest, at)


def _gemini(block: Any, kind: Any, stream: LangChainStream) -> TextDelta | ReasoningDelta | None:
    """One block as the Gemini decoder reads a part: its run (a new one where the last part was of another kind, was
    signed, or something else came between), None for a part that says nothing."""
    if isinstance(block, str):
        said, signed, thought = block, None, False
    elif kind == "text" or kind == "thinking" or (kind == "reasoning" and "reasoning" in block):
        said = block.get({"text": "text", "thinking": "thinking"}.get(kind, "reasoning"))
        said, signed, thought = said if isinstance(said, str) else "", block_signature(block), kind != "text"
    else:  # a reasoning block with no text: a part between the runs
        stream.run_thought = None
        return None
    signature = unjoined(signed, kind, stream.notes)  # policy langchain-joined-signature
    if not said and signature is None:
        if signed is not None:  # joined signatures left out end their run still: what comes next is not signed by them
            stream.run_thought = None
        return None
    if stream.run_thought is not thought:
        stream.run += 1
    stream.run_thought = None if signed is not None else thought  # a signature ends its run, left out or not
    if thought:
        return ReasoningDelta(stream.run, said, signature=signature)
    return TextDelta(said, signature, part=stream.run)


def _gemini_other(block: Mapping[str, Any], kind: str, stream: LangChainStream, positions: list[int]) -> list[Event]:
    """A ChatGoogleGenerativeAI block that says no text: code Gemini ran itself is a server call, as the Gemini decoder
    reads an ``executableCode`` part (its input the code, the part its item, whole, so it ends with its block;
    LangChain's made-up id taken as the wire's, as for its calls; the same code again at its position a resend of that
    call, whatever new id LangChain gave it), its result the result, and so are its built-in tools' (``toolCall``,
    ``toolResponse``); any other block (an image) is reported, as the decoder reports a part it does not read."""
    stream.run_thought = None  # a part between the runs
    if (
        isinstance(merged := block.get("text"), str) and merged
    ):  # v1's sum merges blocks under one index: its place is lost
        said = f"a {kind!r} content block holds text ({len(merged)} characters) LangChain's sum merged into it"
        stream.notes.append(("part-not-reassembled", f"{said} from a text block under its index: not read"))
    if (outcome := code_result(block, kind, stream.notes)) is not None:
        return stream.gemini.kept(outcome, stream.notes)  # placed by the reassembler, as the decoder's
    if (tool := tool_part(block, kind)) is not None:
        positions[1] += tool[0] == "toolCall"
        return tool_events(tool, kind, stream.gemini, stream.notes, positions[1] - 1)
    args = block.get("args") if kind == "server_tool_call" else block
    ran = kind == "executable_code" or block.get("name") == "code_interpreter"
    positions[0] += ran
    args = args if ran and isinstance(args, Mapping) else {}
    code = args.get("executable_code" if kind == "executable_code" else "code")
    if not isinstance(code, str):
        stream.notes.append(("part-not-reassembled", f"a {kind!r} content block, which is not reassembled"))
        return []
    item = code_item(code, args.get("language"), kind, stream.notes)
    if item is None:
        return []
    made = CallRef(None, _str(block.get("id")), "code_execution", positions[0] - 1, True, "executable_code")
    return call_events(*stream.gemini.code_call(code, made), None, item, code)


def _claude_block(block: Any, stream: LangChainStream, ids: Mapping[str, int]) -> list[Event]:
    """One ChatAnthropic block: a later block ends the server blocks before it (Anthropic sends a message's blocks one
    after another), then what the block itself says (``ids``: the index of each of the chunk's calls, by its id)."""
    at = place_of(block.get("index")) if isinstance(block, Mapping) else None
    events = end_servers(stream, at) if at is not None and stream.servers else []
    kind = block.get("type") if isinstance(block, Mapping) else None
    if kind in CLAUDE_SERVER or (kind == "input_json_delta" and at in stream.servers):
        return events + claude_server(block, kind, at, stream)
    if server_result_block(kind) and kind != "server_tool_result":  # Claude's, whole, as v0 keeps it (not v1's)
        return [*events, ServerResultBlock({key: value for key, value in block.items() if key != "index"}, at)]
    if kind == "server_tool_result":  # v1's: read as the Claude block it was made from
        rebuilt = claude_v1.result_block(block)
        if rebuilt is None:
            stream.notes.append(("unknown-event", f"a server_tool_result block at index {written(at)}: no Claude type"))
        return events if rebuilt is None else [*events, ServerResultBlock(rebuilt, at)]
    if kind in claude_v1.CLIENT_BLOCKS:  # its tool_call_chunks carry the call; the block, what else it says
        return events + claude_v1.client_call(block, at, ids)
    if isinstance(kind, str) and kind.endswith("_use") and kind != "tool_use":  # call-shaped, of no known kind
        stream.notes.append(("unknown-event", f"a {kind!r} content block at index {written(at)}"))
    return events + _claude(block, stream.notes)


def claude_server(block: Mapping[str, Any], kind: str, at: int | None, stream: LangChainStream) -> list[Event]:
    """A block of a tool Anthropic runs, read as the Anthropic decoder reads its block events: opened by its start (its
    ``input`` the arguments unless argument text streams), the text appended."""
    held = stream.servers.get(at)
    opens = kind in CLAUDE_SERVER_STARTS or (kind != "input_json_delta" and "id" in block)
    events: list[Event] = []
    if opens:
        v1 = kind not in CLAUDE_SERVER_STARTS
        name = claude_v1.tool_name(block) if v1 else block.get("name")
        ref = CallRef(at, _str(block.get("id")), _str(name), server=True)
        whole = block.get("input") if kind != "server_tool_call" else block.get("args")
        held = stream.servers.hold(at, _Server(ref, dumps(whole or {})))
        # Claude's own block goes back as it came; v1's, in chunks naming Claude, as the block v1 was made from
        kept = None if v1 else {key: value for key, value in block.items() if key not in _NOT_KEPT}
        if v1 and stream.wire == "anthropic":
            kept = claude_v1.call_block(block)
        events.append(CallSeen(ref, item=kept))
    piece = block.get("partial_json" if kind in ("input_json_delta", "server_tool_use", "mcp_tool_use") else "args")
    if held is not None and isinstance(piece, str) and piece:
        held.streamed = True
        events.append(ArgumentsFragment(held.ref, piece))
    return events


def end_servers(stream: LangChainStream, before: int | None) -> list[Event]:
    """End Claude's server blocks still open at an index below ``before`` (every one: None)."""
    return [event for _, server in stream.servers.ended(before) for event in server.ended()]


def _str(value: Any) -> str | None:
    """A field that names something: a str, else nothing (a chunk LangChain did not make)."""
    return value if isinstance(value, str) else None


def _claude(block: Any, notes: list[tuple[str, str]]) -> list[TextDelta | ReasoningDelta]:
    """One ChatAnthropic block as the Anthropic decoder reads the block's event, at its index."""
    if isinstance(block, str):
        return [TextDelta(block)] if block else []
    if not isinstance(block, Mapping):
        return []
    kind = block.get("type")
    if kind not in CLAUDE_SAYS:  # a call's block (its tool_call_chunks carry it), or one no decoder reads
        return []
    at = place_of(block.get("index"))
    if kind == "non_standard":  # v1 keeps a block it has no type for as Anthropic wrote it, under its index
        value = block.get("value")
        if not isinstance(value, Mapping) or value.get("type") != "redacted_thinking":
            return []
        block, kind = value, "redacted_thinking"
    if kind == "text":  # v0 gives a citations_delta as a text block of its citation alone
        said = block.get("text")
        pieces: list[TextDelta | ReasoningDelta] = (
            [TextDelta(said, output_index=at, part=at)] if isinstance(said, str) and said else []
        )
        cited = block.get("citations")  # v1's: its annotations
        for citation in cited if isinstance(cited, list) else claude_v1.citations(block.get("annotations"), at, notes):
            if isinstance(citation, Mapping) and citation:
                pieces.append(TextDelta("", output_index=at, part=at, citation=dict(citation)))
        return pieces
    if kind == "redacted_thinking":
        data = block.get("data")
        return [ReasoningDelta(at, redacted=data if isinstance(data, str) and data else None, output_index=at)]
    if kind == "thinking" or (kind == "reasoning" and "reasoning" in block):
        said = block.get("thinking" if kind == "thinking" else "reasoning")
        text = said if isinstance(said, str) else ""
        return [ReasoningDelta(at, text, signature=block_signature(block), output_index=at)]
    return []
