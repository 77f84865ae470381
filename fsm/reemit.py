"""Re-emit reassembled calls as a clean OpenAI chat-completions chunk stream.

The promise: fed to any consumer that accumulates chat chunks the usual way (openai-python's
``ChatCompletionStreamState``, or concatenating ``arguments`` per ``index``), the stream gives exactly the result's
calls: the same ids, names and argument text. So every chunk is a valid ``ChatCompletionChunk`` (it has ``id``,
``created`` and ``model``); every call has its own index (its position in the turn) and those indexes first appear in
order 0, 1, 2, ... (the SDK keeps tool calls in a list and looks them up by index); the id goes out once, in the
call's first chunk; the name goes out once, before any argument text; and nothing sent is ever retracted. A freeform
call (a custom tool) goes out with its text under ``custom.input``, as chat completions report custom calls; any other
call keeps the ``function`` body. Only a function call names its ``type``: a chunk's tool call may name no other
(``ChoiceDeltaToolCall.type`` is ``"function"`` or absent), so a custom call is told by its ``custom`` body, and a
built-in tool item (``shell_call``, ...) by nothing in the chunk (the result's ``ToolCall.type`` has it). Two flush
policies:

* ``incremental``: the header when a call opens, then argument text as soon as the engine reports it
  append-safe (``ArgumentsDelta``). The engine holds back text the provider may still replace (see
  ``Reassembler``): whitespace-only JSON text, which becomes ``{}``; snapshot text; and, on a wire
  whose final arguments win over the streamed ones (OpenAI Responses ``.done``), all of a call's text
  until the call is finished. Text of a call whose header had no name is held here until its name
  arrives (``CallNamed``) or the call finishes, so the name always goes out first.
* ``on-finish``: the header with empty arguments when a call opens, the final arguments when it finishes.

A call's chunks never give way to the next call's while it still owes its text: openai-python's stream helper
(``client.chat.completions.stream``) reads a chunk of a new index as the end of the call before it, and hands that
call's arguments on as done (parsing them, for a strict tool). So the next call waits, its chunks kept in their
order (a run of its deltas as one chunk of their text), until the call before it has sent text (``incremental``) or
has finished (``on-finish``, or a call whose text comes in the outputs it finishes in: Gemini's and Ollama's
snapshots, Responses calls, any in one list), and goes out right after it. Streams whose calls come one after
another go out as they came; a source that interleaves its calls' text, fed a piece at a time, is re-emitted
interleaved under ``incremental`` (``on-finish``, or the stream in one ``feed()``, serializes it).

The turn's text, reasoning and refusal go out too where the reassembler reports them
(``Reassembler(content_deltas=True)``: :class:`~fsm.results.ContentDelta` outputs), each piece in a chunk of its own
as it comes (``content``, ``reasoning_content``, ``refusal``), never held behind a call: a chunk holds no call's
place, and chat consumers join each field on its own. Without them, a gateway's client would get the calls and lose
what the model said beside them. Gemini's thought signatures go out too, as Gemini's own OpenAI endpoint sends them
(:mod:`fsm.reemit_signatures`). A Claude ``connector_text`` block goes out in none, and is listed (``unsent_blocks``,
policy connector-text-unsent: :mod:`fsm.reemit_reasoning`). LiteLLM's fields that go back (``Result.provider_fields``)
go out on the last chunk's delta, where LiteLLM sends them (policy litellm-fields-said).

A call that did not complete (truncated, invalid) must not be run, and a chunk has no field for a call's status, while
its text went out as any call's: so ``finish()`` ends such a stream in an error too (policy incomplete-calls-not-run),
which clients raise after the calls they accumulated; the error lists them (``incomplete_tool_calls``) for
toolcall-fsm's chat decoder, which reads each back as it ended. An id or name holding a lone surrogate goes out as its
``\\udXXX`` escape (policy emitted-lone-surrogate): no chunk holding it could be written as UTF-8. A call a model made
before it declined (Claude's server-side fallback: ``Result.declined_calls``) went out as any call's too, and is listed
so, ``declined``, or ``cut-by-decline`` where the decline cut its JSON (policy declines-read-back).
"""

from __future__ import annotations

import enum
from typing import Any, Final, Literal

from fsm.errors import InvalidInput, InvalidOption, LocalProtocolError, shown
from fsm.events import FREEFORM_TYPES
from fsm.fieldcheck import refuse_wrong
from fsm.foreign import answers_callers, caller_fault
from fsm.jsontext import has_surrogate
from fsm.reemit_outputs import checked
from fsm.reemit_reasoning import REASONING_BLOCKS, BlockEmitter, ReasoningBlocks, source_format, unsent_blocks
from fsm.reemit_signatures import Signatures, sendable
from fsm.results import (
    ArgumentsDelta,
    CallFinished,
    CallNamed,
    CallOpened,
    CallStatus,
    ContentDelta,
    Output,
    ReasoningData,
    Result,
)
from fsm.wire.decoders._listed_calls import DECLINES_NOTE, declined_statuses

SAID_FIELDS: Final = {"text": "content", "reasoning": "reasoning_content", "refusal": "refusal"}
"""The delta field each kind of :class:`~fsm.results.ContentDelta` goes out in: reasoning as the chat
dialects that stream it send it (DeepSeek, vLLM), and as toolcall-fsm's chat decoder reads it."""

CHAT_FINISH_REASONS: Final = frozenset({"stop", "length", "tool_calls", "content_filter"})
"""The finish reasons a chat-completions chunk can carry; any other (``error``) goes out as null."""


class FlushPolicy(enum.Enum):
    """When :class:`DeltaEmitter` sends argument text (see the module docstring)."""

    INCREMENTAL = "incremental"
    """Text as soon as it is append-safe."""
    ON_FINISH = "on-finish"
    """A header with empty arguments when a call opens, the final arguments when it finishes."""


class DeltaEmitter:
    """Turns a :class:`~fsm.Reassembler`'s outputs into OpenAI ``chat.completion.chunk`` dicts.

    Feed it each list ``feed()``/``feed_bytes()`` returned, then ``drain()``'s after ``close()``, and
    end with :meth:`finish`. One emitter per stream. ``completion_id``, ``model`` and ``created`` fill
    the envelope every chunk must have; the defaults are fixed so that the same stream always
    re-emits the same bytes (the engine reads no clock). ``choice`` numbers the chunks' one choice: a
    gateway re-emitting a stream of several choices runs a reassembler and an emitter per choice
    (``Reassembler(choice=k)``, ``DeltaEmitter(choice=k)``) and sends their chunks side by side.
    ``source`` names the provider the outputs were read from (``Reassembler.source_provider``; from a
    result, ``Result.source_provider or Result.provider``, the maker where LangChain chunks told one):
    the reasoning's blocks name its ``format`` (policy reasoning-format-by-source, :mod:`fsm.reemit_reasoning`).

    Misuse is refused, never sent: outputs that open a call already opened (another stream's, or the
    same list twice) are :class:`~fsm.errors.InvalidInput` and nothing of them goes out; so is a
    ``finish()`` given another stream's result (a call that went out is not its call under that
    index); after ``finish()`` the stream has ended, and ``chunks()``, ``start()`` and ``finish()``
    raise :class:`~fsm.errors.LocalProtocolError` (a chunk after the last one, or a second last one,
    reaches a client that read the stream as ended)."""

    @answers_callers
    def __init__(
        self,
        flush: FlushPolicy | Literal["incremental", "on-finish"] = FlushPolicy.INCREMENTAL,
        *,
        completion_id: str = "chatcmpl-toolcall-fsm",
        model: str = "toolcall-fsm",
        created: int = 0,
        choice: int = 0,
        reasoning_blocks: ReasoningBlocks | None = None,
        source: str | None = None,
    ) -> None:
        if reasoning_blocks is not None and reasoning_blocks not in REASONING_BLOCKS:
            raise InvalidOption(
                f"reasoning_blocks must be None or one of {list(REASONING_BLOCKS)}, not {shown(reasoning_blocks)}"
            )
        if not isinstance(flush, FlushPolicy):  # a choice's name ("on-finish") is taken; nothing else
            choices = [policy.value for policy in FlushPolicy]
            if flush not in choices:
                raise InvalidOption(f"flush must be a FlushPolicy or one of {choices}, not {flush!r}")
            flush = FlushPolicy(flush)
        for field, value in (("completion_id", completion_id), ("model", model)):
            if not isinstance(value, str):  # every chunk carries it, and a ChatCompletionChunk needs a str
                raise InvalidInput(f"{field} must be a str, not {type(value).__name__}")
            if has_surrogate(value):  # every chunk would carry what no UTF-8 writer can write
                raise InvalidInput(f"{field} holds a lone surrogate, which no chunk can carry as UTF-8: {shown(value)}")
        if type(created) is not int:
            raise InvalidInput(f"created must be an int (Unix seconds), not {type(created).__name__}")
        if type(choice) is not int or choice < 0:  # a bool is an int, but True is no index
            raise InvalidOption(f"choice must be an index (an int from 0), not {shown(choice)}")
        self.flush = flush
        """The flush policy chosen at construction."""
        self._choice = choice
        self._envelope = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model}
        self._named: set[int] = set()
        self._freeform: set[int] = set()
        self._held: dict[int, list[str]] = {}  # text of calls whose name has not gone out yet
        self._ready: set[int] = set()  # calls after which the next may go out: they sent text, or finished
        self._waiting: dict[int, list[dict[str, Any]]] = {}  # the chunks' tool calls of calls that wait
        # A waiting call's delta text since its last other entry, joined as it goes out (1 KB a delta else: audit 65)
        self._joining: dict[int, tuple[dict[str, Any], list[str]]] = {}
        self._gate: int | None = None  # the first call that waits (all after it wait too)
        self._last_out: int | None = None  # the call whose tool-call entry went out last
        self._finishing: set[int] = set()  # the calls the outputs chunks() was given finish
        self._opened: dict[int, str] = {}  # each call's id as its header went out: finish() checks the result by it
        self._finished = False  # finish() sent the last chunk: nothing goes after it
        formats = source_format(source, model)  # (checked with no reasoning_blocks too: a misspelt one is refused)
        self._blocks = BlockEmitter(reasoning_blocks, formats) if reasoning_blocks is not None else None
        details = self._blocks.call_signed if reasoning_blocks == "reasoning_details" and self._blocks else None
        self._signatures = Signatures(details)  # Gemini's, each once: fsm.reemit_signatures
        self._unsent_blocks: list[str] = []

    @property
    def unsent_reasoning(self) -> tuple[str, ...]:
        """What of the reasoning's blocks the ``reasoning_blocks`` dialect had no field for, one line
        each (policy reasoning-block-unsent: :mod:`fsm.reemit_reasoning`); empty without one."""
        return tuple(self._blocks.unsent) if self._blocks is not None else ()

    @property
    def unsent_blocks(self) -> tuple[str, ...]:
        """The result's blocks ``finish()`` had no chunk field for, one line each (policy connector-text-unsent)."""
        return tuple(self._unsent_blocks)

    @property
    def unsent_signatures(self) -> tuple[str, ...]:
        """The text parts' signatures ``finish()`` left out, one line each (:mod:`fsm.reemit_signatures`)."""
        return tuple(self._signatures.unsent)

    def start(self) -> dict[str, Any]:
        """A first chunk that says only the assistant's role, as OpenAI's streams begin. Optional for
        one choice; a gateway re-emitting a stream of several sends each choice's ``start()`` first,
        in choice order: openai-python's stream state builds its choices from the stream's first
        chunks, and refuses a chunk of choice 1 before choice 0 has one (``IndexError``), which the
        calls alone cannot promise (a choice of text alone sends no chunk until ``finish()``)."""
        self._open("start")
        first = self._chunk([], None)
        first["choices"][0]["delta"] = {"role": "assistant"}
        return first

    def chunks(self, outputs: list[Output]) -> list[dict[str, Any]]:
        """A chunk per output that has something to send now (an output may send nothing, e.g. a
        delta under ``on-finish``), then the chunks of later calls that waited for it (see the
        module docstring): the chunks of a call that waits come with a later ``chunks()``, or
        ``finish()``."""
        if not isinstance(outputs, list | tuple):
            raise InvalidInput(f"chunks takes the list feed() returned, not {type(outputs).__name__}")
        self._open("chunks")
        try:  # (not answers_callers: its wrapper would cost every event's call)
            self._finishing = checked(outputs, self._opened)  # refused before any output changes what was sent
            sent: list[dict[str, Any]] = []
            for item in outputs:
                if type(item) is ContentDelta:  # no call's: it goes out now, whatever call waits
                    blocks = self._blocks if item.kind == "reasoning" else None
                    delta = blocks.said(item) if blocks is not None else {SAID_FIELDS[item.kind]: item.text}
                    sent.append(self._chunk([], None, delta))
                    continue
                if type(item) is ReasoningData:  # what a block goes back with: out now too, in the dialect
                    kept = self._blocks.kept(item) if self._blocks is not None else None
                    if kept is not None:
                        sent.append(self._chunk([], None, kept))
                    continue
                entry = self._entry(item)
                for delta in self._signatures.taken():  # a call's signature as OpenRouter sends it, before the call
                    sent.append(self._chunk([], None, delta))
                if entry is not None or isinstance(item, CallFinished):  # (a call ended with nothing to send)
                    sent += [self._chunk([each], None) for each in self._in_turn(entry, item)]
            return sent
        except Exception as exc:  # policy caller-object-raises
            fault = caller_fault({"outputs": outputs}, exc, "DeltaEmitter.chunks()", self)
            if fault is None:
                raise
            raise fault from exc

    @answers_callers
    def finish(self, result: Result) -> dict[str, Any]:
        """The last chunk: no tool calls, the result's finish reason (null for one a chat chunk cannot carry:
        ``error``). Where the provider reported an error (``provider-error``: one that ended the turn, or one after
        it), the chunk also carries ``error: {"message", "type": "provider_error"}`` beside its choices, as
        OpenAI-compatible servers send one; else, where a call did not complete, ``error: {"message", "type":
        "incomplete_tool_call"}`` naming each (and what stopped the stream, for one the caller's side stopped:
        ``stream-interrupted``); else, for such a stream, ``error: {"message", "type": "stream_interrupted"}``."""
        if not isinstance(result, Result):
            raise InvalidInput(f"finish takes the Result close() returned, not {type(result).__name__}")
        refuse_wrong(result, Result, "result")  # one built by hand (close()'s own is vouched for: not read again)
        self._open("finish")
        ids = {call.index: call.id for call in (*result.calls, *result.declined_calls)}
        for index, sent_id in self._opened.items():
            if ids.get(index) != sent_id:  # the last chunk would name another stream's finish and calls
                raise InvalidInput(
                    f"finish takes the Result of the stream whose outputs went out: call {index} went out as"
                    f" {shown(sent_id)}, and this result's call {index} is "
                    + (shown(ids[index]) if index in ids else "missing")
                )
        self._finished, self._unsent_blocks = True, unsent_blocks(result)
        reason = result.finish_reason if result.finish_reason in CHAT_FINISH_REASONS else None
        # What still waits (outputs not passed to chunks(): every call finishes in close()) goes now
        self._joined(list(self._joining))
        waiting = [entry for index in sorted(self._waiting) for entry in self._waiting[index]]
        waiting += self._signatures.late  # after every call's text (policy late-signature-on-last-chunk)
        self._waiting, self._gate = {}, None
        last = self._chunk(waiting, reason)
        if self._blocks is not None:  # a block that never sent an entry holds its place (reasoning-blocks-in-order)
            self._blocks.unsaid(last["choices"][0]["delta"], len(result.reasoning))
        self._signatures.text(last, result)
        if result.provider_fields:  # LiteLLM's record of the turn's items (policy litellm-fields-said)
            last["choices"][0]["delta"]["provider_specific_fields"] = dict(result.provider_fields)
        said = [d.message for d in result.diagnostics if d.code == "provider-error"]
        if said:
            # A consumer must learn of the error as the provider's own stream told it: clients raise on
            # a chunk with an error object (openai-python's APIError), after the calls they accumulated.
            last["error"] = {"message": sendable("; ".join(said)), "type": "provider_error"}
            if result.finish_reason == "error" and result.raw_finish_reason is not None:
                last["error"]["code"] = sendable(result.raw_finish_reason)  # its kind (policy error-kind): to retry?
        # A call a declined model made went out as any call's (policy fallback-declined-calls): not to run either
        declined = declined_statuses(result)
        cut = [call for call in result.calls if call.status is not CallStatus.COMPLETE] + list(result.declined_calls)
        status = {call.index: call.status.value for call in cut} | declined
        what = DECLINES_NOTE if declined else "calls that did not complete, not to be run: "
        # A stream the caller's side stopped (close(interrupted=...)) did not end: no client may read it as ended
        stopped = [d.message for d in result.diagnostics if d.code == "stream-interrupted"]
        if cut and "error" not in last:
            # Its text went out as any call's, and a chunk has no field for a call's status: a client
            # must not run it (policy incomplete-calls-not-run), so the stream ends in an error too.
            listed = ", ".join(f"{sendable(call.id)} ({sendable(call.name)}): {status[call.index]}" for call in cut)
            last["error"] = {
                "message": sendable(f"{what}{listed}" + "".join(f"; {s}" for s in stopped)),
                "type": "incomplete_tool_call",
            }
        elif stopped and "error" not in last:
            last["error"] = {"message": sendable(stopped[0]), "type": "stream_interrupted"}
        if cut:
            # Which calls, and how each ended, for a reader that keeps a call's status (toolcall-fsm's
            # own chat decoder): a cut value that closed, or a whole one no tool can run, reads as
            # complete from its text alone.
            last["error"]["incomplete_tool_calls"] = [
                {"index": call.index, "id": sendable(call.id), "status": status[call.index]} for call in cut
            ]
        return last

    def _open(self, what: str) -> None:
        if self._finished:  # a chunk after the last would reach a client that read the stream as ended
            raise LocalProtocolError(f"{what}() after finish(): the last chunk went out; use a new DeltaEmitter")

    def _entry(self, item: Output) -> dict[str, Any] | None:
        if isinstance(item, CallOpened):
            self._opened[item.index] = item.id
            if item.type in FREEFORM_TYPES:
                self._freeform.add(item.index)
            body: dict[str, Any] = {self._text_key(item.index): ""}
            if item.name is not None:
                body["name"] = sendable(item.name)
                self._named.add(item.index)
            else:
                self._held[item.index] = []
            header = {"index": item.index, "id": sendable(item.id), self._body_key(item.index): body}
            if item.type == "function":  # the only type a chat chunk may name; the body tells the others
                header["type"] = "function"
            return self._signatures.sign(header, item.thought_signature, item.id)
        if isinstance(item, CallNamed):
            if item.index in self._named:
                return None
            self._named.add(item.index)
            body = {"name": sendable(item.name)}
            held = self._held.pop(item.index, None)
            if held:
                body[self._text_key(item.index)] = "".join(held)
            return {"index": item.index, self._body_key(item.index): body}
        if isinstance(item, ArgumentsDelta):
            if self.flush is FlushPolicy.ON_FINISH:
                return None
            held = self._held.get(item.index)
            if held is not None:
                held.append(item.text)
                return None
            return {"index": item.index, self._body_key(item.index): {self._text_key(item.index): item.text}}
        if isinstance(item, CallFinished):
            call = item.call
            body = {}
            if call.name is not None and call.index not in self._named:
                body["name"] = sendable(call.name)  # the name arrived after the header went out
                self._named.add(call.index)
            held = self._held.pop(call.index, None)
            if self.flush is FlushPolicy.ON_FINISH:
                body[self._text_key(call.index)] = call.input if call.index in self._freeform else call.arguments_json
            elif held:
                body[self._text_key(call.index)] = "".join(held)
            behind = self._last_out not in (None, call.index) and (self._gate is None or call.index < self._gate)
            return self._signatures.finished(call, body, call.index in self._freeform, behind)
        return None  # an output with nothing to send (chunks() refused any other item)

    def _in_turn(self, entry: dict[str, Any] | None, item: Output) -> list[dict[str, Any]]:
        """The tool-call entries that go out now that ``entry`` (of ``item``; None: a call finished
        with nothing to send) is made: none while its call waits for the one before it; it, and then
        those of the calls that waited for it."""
        index = item.call.index if isinstance(item, CallFinished) else entry["index"] if entry else -1
        if isinstance(item, CallFinished) or (
            isinstance(item, ArgumentsDelta) and self.flush is FlushPolicy.INCREMENTAL and index not in self._finishing
        ):
            self._ready.add(index)  # (one that finishes in these outputs too: once its last chunk, signed, is made)
        gate = self._gate
        if gate is None and isinstance(item, CallOpened) and index > 0 and index - 1 not in self._ready:
            gate = self._gate = index  # the call before it owes its text: this one waits
        if gate is not None and index >= gate:
            if entry is not None:
                self._wait(index, entry, isinstance(item, ArgumentsDelta))
            return []
        out = [entry] if entry is not None else []
        while self._gate is not None and self._gate - 1 in self._ready:  # the call it waited for is ready
            released = self._gate
            self._joined([released])
            out += self._waiting.pop(released, [])
            self._gate = released + 1 if self._waiting else None
        self._last_out = out[-1]["index"] if out else self._last_out
        return out

    def _wait(self, index: int, entry: dict[str, Any], text_only: bool) -> None:
        """Keep ``entry`` until its call goes out; a delta's text after another delta's joins its entry."""
        if text_only:
            joining = self._joining.get(index)
            if joining is not None:
                joining[1].append(entry[self._body_key(index)][self._text_key(index)])
                return
            self._joining[index] = (entry, [])
        else:
            self._joined([index])
        self._waiting.setdefault(index, []).append(entry)

    def _joined(self, indexes: list[int]) -> None:
        """The text of each of ``indexes``' joining entries, in its entry: it is about to go out, or an
        entry of another kind follows it."""
        for index in indexes:
            joining = self._joining.pop(index, None)
            if joining is not None and joining[1]:
                body = joining[0][self._body_key(index)]
                key = self._text_key(index)
                body[key] = "".join([body[key], *joining[1]])

    def _body_key(self, index: int) -> str:
        return "custom" if index in self._freeform else "function"

    def _text_key(self, index: int) -> str:
        return "input" if index in self._freeform else "arguments"

    def _chunk(
        self, tool_calls: list[dict[str, Any]], finish_reason: str | None, said: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        delta: dict[str, Any] = {"tool_calls": tool_calls} if tool_calls else said or {}
        return {**self._envelope, "choices": [{"index": self._choice, "delta": delta, "finish_reason": finish_reason}]}
