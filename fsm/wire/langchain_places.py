"""LangChain content blocks read in their places in the turn, for the integrations whose chunks say
where each block sat: what :mod:`fsm.wire.sdk` hands the reassembler for them instead of an OpenAI
chat delta's one text, last text signature and ``thinking_blocks`` (which keep no place).

Which integration made a chunk is its ``response_metadata["model_provider"]`` (langchain-core 1.x).
The first chunk that names one of these two fixes the stream's reading; a later chunk that names
none (langchain-google-genai's last, empty one) is read the same way, and one naming another is too
(one stream, one reading). Chunks that never name one are read as before, without places.

* ``anthropic`` (langchain-anthropic's ``ChatAnthropic``, both output versions): every content
  block carries ``index``, Claude's content block index, and so do its ``tool_call_chunks``. Each
  thinking, redacted thinking (v1: a ``non_standard`` block) and text block is read as the Anthropic
  decoder reads the bytes: keyed and placed (``output_index``) by that index, each text block a text
  part of its own; the calls are placed by their index too (:attr:`LangChainStream.wire` tells the
  reassembler so). No block needs to be ordered against the calls: the index orders them all.
* ``google_genai`` (langchain-google-genai's ``ChatGoogleGenerativeAI``): a block's ``index`` is
  LangChain's own count, not a part's: consecutive text (or thinking) blocks share one index however
  many Gemini parts, signed or not, they hold, and v0 gives unsigned text as a plain str with no
  index at all. Its chunks come in the wire's order, one a Gemini event, the event's thought and text
  parts as blocks before its calls (LangChain numbers them so, also where a call came first: that
  order is lost). So the runs are found part by part as the Gemini decoder finds them (a run of
  thought or of text parts ends at a signed part, or where another kind of part or a call comes),
  each signature kept on its part, and the reassembler places each run among the calls. Within one
  chunk (a message summed from the chunks holds the whole turn in one) a block goes after the calls
  that came before it: in v1 the ``tool_call`` blocks among the content say where; in v0 the calls'
  ``index``, which shares LangChain's count with the blocks, does (a call before a block whose index
  is greater). What LangChain merged when summing (blocks under one index, v0's str pieces) stays
  merged.

An ``index`` that is not an int, or a negative one, places nothing (LangChain's v1 gives its own
``tool_call`` blocks str indices such as ``lc_tc_2``): the block is read as one that came without
an index, as the Anthropic decoder reads a delta without one (its text joins the turn's text, its
reasoning the latest block). A huge one is a place like any other: the block goes after the others.
"""

from __future__ import annotations

import base64
import bisect
from collections.abc import Mapping
from typing import Any

from fsm.events import ReasoningDelta, TextDelta

PLACED = {"anthropic": "anthropic", "google_genai": "gemini"}
"""The integrations (``model_provider``) whose blocks are read in their places, and as which wire."""

CALL_BLOCKS = ("tool_call", "tool_call_chunk")
"""v1's content blocks that repeat a call the chunk's ``tool_call_chunks`` carry, in its place among
the blocks."""

CLAUDE_SAYS = ("text", "thinking", "reasoning", "redacted_thinking", "non_standard")
"""The ChatAnthropic blocks that may hold text or reasoning (v0's and v1's types)."""

Said = list[tuple[int, TextDelta | ReasoningDelta]]
"""A chunk's text and reasoning, each after how many of the chunk's calls it goes."""


class LangChainStream:
    """What a stream's LangChain chunks leave to later ones: the ``input`` of the Anthropic tool blocks
    no argument text has followed yet (by block index), the reading the first chunk to name its
    integration fixed (``wire``: ``anthropic``, ``gemini`` or None), the Gemini run the last part
    belongs to, and the chunk's text and reasoning events not yet taken (None: the chunk was read
    without places, its text in its delta)."""

    __slots__ = ("inputs", "run", "run_thought", "said", "wire")

    def __init__(self) -> None:
        self.inputs: dict[int, Any] = {}
        self.wire: str | None = None
        self.run = 0
        self.run_thought: bool | None = None
        self.said: Said | None = None

    def reading(self, metadata: Any) -> str | None:
        """The stream's reading, fixed by the first chunk whose metadata names an integration here."""
        if self.wire is None and isinstance(metadata, Mapping):
            named = metadata.get("model_provider")
            self.wire = PLACED.get(named) if isinstance(named, str) else None
        return self.wire

    def steps(self, payload: Mapping[str, Any]) -> list[Any]:
        """The chunk's text and reasoning events and its OpenAI chat ``payload``, in the turn's order:
        the payload split where a block came after some of its calls (each part a chunk of its own,
        the finish reason and usage on the last). Takes the events: the next chunk has its own."""
        said, self.said = self.said, None
        if not said:
            return [payload]
        choice = payload["choices"][0]
        calls = choice["delta"].get("tool_calls") or []
        steps: list[Any] = []
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


def read_in_places(content: Any, entries: Any, stream: LangChainStream) -> None:
    """The chunk's blocks (``content``, a str or a list) as text and reasoning events in their places,
    into ``stream.said``; ``entries`` are its ``tool_call_chunks`` (checked dicts)."""
    blocks = [content] if isinstance(content, str) else list(content or ())
    if stream.wire == "anthropic":
        stream.said = [(0, event) for block in blocks for event in _claude(block)]
        return
    said: Said = []
    v1 = any(isinstance(b, Mapping) and b.get("type") in CALL_BLOCKS for b in blocks)
    reached = None if v1 else _reached(entries)
    after = 0
    for block in blocks:
        kind = block.get("type") if isinstance(block, Mapping) else "text" if isinstance(block, str) else None
        if not isinstance(kind, str):  # no block LangChain makes: nothing said, nothing between
            continue
        if kind in CALL_BLOCKS:
            after = min(after + 1, len(entries))
            stream.run_thought = None  # a call came between
            continue
        if reached is not None and isinstance(block, Mapping) and (at := place_of(block.get("index"))) is not None:
            before = bisect.bisect_left(reached, at)  # how many of the chunk's calls, in order, came before it
            if before > after:
                after, stream.run_thought = before, None
        event = _gemini(block, kind, stream)
        if event is not None:
            said.append((after, event))
    if len(entries) > after:  # the chunk's calls after its last block
        stream.run_thought = None
    stream.said = said


def _reached(entries: Any) -> list[int]:
    """The greatest LangChain index among the chunk's calls up to each one, up to the first with no
    place: the calls that came before a block at index ``at`` are those before the first call whose
    index is ``at`` or more, which is where this running greatest first reaches ``at`` (found by
    bisection, once per block: a walk of the calls per block was quadratic in a summed turn)."""
    reached: list[int] = []
    for entry in entries:
        index = place_of(entry.get("index"))
        if index is None:
            break
        reached.append(max(index, reached[-1]) if reached else index)
    return reached


def _gemini(block: Any, kind: Any, stream: LangChainStream) -> TextDelta | ReasoningDelta | None:
    """One block as the Gemini decoder reads a part: its run (a new one where the last part was of
    another kind, was signed, or something else came between), None for a part that says nothing."""
    if isinstance(block, str):
        said, signature, thought = block, None, False
    elif kind == "text" or kind == "thinking" or (kind == "reasoning" and "reasoning" in block):
        said = block.get({"text": "text", "thinking": "thinking"}.get(kind, "reasoning"))
        said, signature, thought = said if isinstance(said, str) else "", block_signature(block), kind != "text"
    else:  # an image, code, a block of its own kind: a part between the runs
        stream.run_thought = None
        return None
    if not said and signature is None:
        return None
    if stream.run_thought is not thought:
        stream.run += 1
    stream.run_thought = None if signature is not None else thought
    if thought:
        return ReasoningDelta(stream.run, said, signature=signature)
    return TextDelta(said, signature, part=stream.run)


def _claude(block: Any) -> list[TextDelta | ReasoningDelta]:
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
    if kind == "text":
        said = block.get("text")
        return [TextDelta(said, output_index=at, part=at)] if isinstance(said, str) and said else []
    if kind == "redacted_thinking":
        data = block.get("data")
        return [ReasoningDelta(at, redacted=data if isinstance(data, str) and data else None, output_index=at)]
    if kind == "thinking" or (kind == "reasoning" and "reasoning" in block):
        said = block.get("thinking" if kind == "thinking" else "reasoning")
        text = said if isinstance(said, str) else ""
        return [ReasoningDelta(at, text, signature=block_signature(block), output_index=at)]
    return []


def block_signature(block: Mapping[str, Any]) -> str | None:
    """A content block's signature where LangChain's integrations keep one: ``signature`` (a
    thinking block), ``extras.signature`` (a Gemini text part, a v1 reasoning block), or
    ``thought_signature``; base64 text, as the wire has it (a signature held as bytes written so)."""
    extras = block.get("extras")
    for value in (
        block.get("signature"),
        extras.get("signature") if isinstance(extras, Mapping) else None,
        block.get("thought_signature"),
    ):
        if isinstance(value, bytes):
            value = base64.b64encode(value).decode("ascii")
        if isinstance(value, str) and value:
            return value
    return None
