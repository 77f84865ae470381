"""Gemini native ``streamGenerateContent`` (SSE or the streamed JSON array), and Vertex AI's
streamed function-call arguments.

Each event is a whole ``GenerateContentResponse``; a ``functionCall`` part is a complete call, sent
here as an :class:`ArgumentsSnapshot`. Identity evidence: ``functionCall.id`` when present (Gemini
3); otherwise the call's position among the event's function-call parts, with its name. So two calls
to one tool in separate events (each at position 0) are two calls, an identical resend is one (policy
``identical_text``), and a resend of the second lands in the second's slot. ``thoughtSignature`` is
not identity: it rides on the event and stays with the call the event lands on.

A whole call without an id that repeats, name and arguments, one seen in an earlier event is given
the position it was seen at, so the registry's resend rules (policy ``identical_text``) see it
beside that call: calls streamed one per event (each at position 0) and then resent as one batch,
or a batch followed by one of its calls alone, are not doubled. Two identical calls in one event
keep their own positions (two dice rolled are two calls), and so does a batch resent whole.

Vertex ``partialArgs`` calls open with a ``functionCall`` that has a name and ``willContinue``, stream
their arguments (written out as JSON text by :mod:`fsm.wire.decoders.partial_args`), and close with an
empty ``functionCall {}``. When the stream finishes without that closing part, a call whose values all
finished is closed; one cut inside a string value is left open, so it comes back truncated. Another
call's part (an opening or a whole call) ends it too: closed, or, cut inside a string, truncated.

An ``executableCode`` part is code Gemini runs itself (its code-execution tool): a server call of
type ``executable_code`` named ``code_execution``, whose input is the code (the part kept whole as
its ``item``), at its position among the event's code parts; the part is whole, so the call ends
with it. Without an id, the same code as a part of an earlier event takes that part's position, as a
whole call does, so a resend is one call wherever it sits (policy ``identical_text``), its result
not waited for again. Its ``codeExecutionResult`` part is that call's result
(:class:`ServerResultBlock`, kept whole, placed among the parts), which the next turn sends back
after its code (:mod:`fsm.wire.decoders._gemini_code`). A ``toolCall`` part (a call of Gemini's
built-in tools, under tool combination) is read the same way, a server call of type ``tool_call``,
and its ``toolResponse`` its result. Any other part that is not text, a thought or a call (inline
or file data) is not reassembled and is reported by its keys (``part-not-reassembled``).

Thought and text parts go back as parts of their own, each signature on the part it came on (Gemini
refuses a signature moved off its part, and a call's must not be merged into another part): a run of
thought parts, or of text parts, is one part until a signed one ends it or another part comes
between (a call, a thought amid text, code); streamed pieces of one part join. Each run is keyed
(``ReasoningDelta.block``, ``TextDelta.part``) and the decoder asks for places
(``parts_placed``), so the turn goes back in the wire's order of thoughts, text and calls. An empty
piece without a signature (the last event's ``{"text": ""}``) is nothing.

The candidate's ``finishMessage`` is kept with any finish (a call the finish cuts is reported with
it); a finish that is an error (``MALFORMED_FUNCTION_CALL``, ``UNEXPECTED_TOOL_CALL``) also takes it
as its error message (``provider-error`` says it, after its own word).

A payload with none of the response's fields is not this wire shape: ``unknown-event``. An ``error``
ends the stream; beside a response's fields it comes after what they say, which is read first
(policy error-beside-finish, as an OpenAI chat error beside choices). A
``functionCall`` with arguments but no name is still a call (reported ``missing-name`` when it
finishes), never dropped.

One room: every part of an event, of whichever kind, moves the same runs, positions and open call (a
call ends a run of text, a code part takes a call's place by the same search), and the shortcuts
(``commonest_fragment``, ``commonest_said``) must change them exactly as decode() does; split, that
state would be read and written in several files.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fsm.errors import kind
from fsm.events import (
    CallEnd,
    CallRef,
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
from fsm.options import Policies
from fsm.wire.decoders import error_words
from fsm.wire.decoders._fields import field, items, mapping, text, written
from fsm.wire.decoders._gemini_code import CodeRuns, code_part_fault, code_result_fault, tool_part_fault
from fsm.wire.decoders._wire import GEMINI_FINISH, TurnSaid, dumps
from fsm.wire.decoders.chunk_form import FormSpec
from fsm.wire.decoders.partial_args import PartialArgsWriter, string_piece

_FINISH = GEMINI_FINISH


_RESPONSE_FIELDS = frozenset(
    {
        "candidates",
        "usageMetadata",
        "usage_metadata",
        "promptFeedback",
        "prompt_feedback",
        "modelVersion",
        "model_version",
        "responseId",
        "response_id",
        "createTime",
        "create_time",
        "sdkHttpResponse",
        "sdk_http_response",
        "automaticFunctionCallingHistory",
        "automatic_function_calling_history",
    }
)


class _Streaming:
    """A Vertex call whose arguments are still arriving."""

    def __init__(self, ref: CallRef) -> None:
        self.ref = ref
        self.writer = PartialArgsWriter()


_FORM_TEXT = ("candidates", 0, "content", "parts", 0, "functionCall", "partialArgs", 0, "stringValue")
"""Where a Vertex streamed call's string piece sits (partial_args.string_piece)."""
_SAID_TEXT = ("candidates", 0, "content", "parts", 0, "text")
"""Where an event of one text or thought part holds its text."""
_SaidForm = tuple[bool, dict[str, Any], tuple[str, ...]]
"""What said_form_of says an event of a form says: a thought or not, its usage, the usage's counts' keys."""


class GeminiDecoder:
    name = "gemini"
    final_arguments_win = True
    """A Vertex path may come back to an object a sibling closed: the merged arguments then replace
    the streamed text, so streamed text is not final until the call ends (whole calls are
    snapshots, which wait for the end anyway)."""

    shortcuts = True
    """Whether a part of one call alone, a call of a name and arguments alone and a whole call never
    seen skip the reads of keys they lack and the search for its like (tests turn it off to compare)."""

    parts_placed = True
    """Its thought and text parts go back apart, in their places among the calls (TurnContent.place_by)."""

    _token = False
    """A candidate carried a ``continuationToken``: a checkpoint (the raw wire sends them mid-stream,
    google-genai's automatic continuation leaves them on the chunks it yields), said only where the
    turn ends ``CONTINUATION`` (policy gemini-checkpoint-tokens). A class default: most streams have none."""

    policies: Policies | None = None
    """The stream's policies (``make_decoder`` sets them): ``identical_text`` says whether a code
    part resent is another run, whose result is then waited for."""

    def __init__(self) -> None:
        self._run = 0  # the key of the latest run of thought or text parts
        self._run_thought: bool | None = None  # the kind of that run while it goes on; None: ended
        self._open: _Streaming | None = None
        self._runs: CodeRuns | None = None  # made by the first code part or result (most streams have none)
        # Where each whole call without an id (by the hash of its name and arguments: only a hint,
        # the registry compares the text) was seen in earlier events, and where in this event.
        self._seen_at: dict[int, dict[int, None]] = {}  # positions in order, each looked up at once
        self._placed_now: set[tuple[int, int]] = set()
        # Per hash, how far into its seen places this event's search for one not taken has come:
        # places are only taken within an event, so each is passed once, not once per like call.
        self._passed: dict[int, int] = {}
        self._seen_order: dict[int, list[int]] = {}  # the seen places of each hash, as a list
        self._top: dict[int, int] = {}  # the highest place a call of each key has held

    def decode(self, payload: Mapping[str, Any], diagnose: Callable[[str, str], None]) -> list[Event]:
        error = payload.get("error")
        if error:  # what a response beside it says is read first (policy error-beside-finish, as chat's)
            rest = {key: value for key, value in payload.items() if key != "error"}
            beside = [] if _RESPONSE_FIELDS.isdisjoint(rest) else self.decode(rest, diagnose)
            return [*beside, *self._close_open(), StreamEnd("error", *error_words(error, payload))]
        if _RESPONSE_FIELDS.isdisjoint(payload):
            shown = ", ".join(repr(k) for k in list(payload)[:6]) or "none"
            diagnose("unknown-event", f"a Gemini payload with no response fields (keys: {shown})")
            return []
        events: list[Event] = []
        self._placed_now.clear()
        self._passed.clear()
        if self._runs is not None:
            self._runs.begin()
        for n, candidate in enumerate(items(payload.get("candidates"), "candidates")):
            if type(candidate) is not dict:  # what json.loads gives is one: no message written for it
                candidate = mapping(candidate, f"candidates[{n}]")
            if (candidate.get("index") or 0) != 0:
                diagnose("choice-ignored", f"candidate {written(candidate.get('index'))} is not reassembled")
                continue
            if field(candidate, "continuationToken", "continuation_token") is not None:
                self._token = True  # a checkpoint: it matters only if the turn ends CONTINUATION (below)
            content = mapping(candidate.get("content"), "content")
            position = code_position = tool_position = 0
            for p, part in enumerate(items(content.get("parts"), "parts")):
                if type(part) is not dict:
                    part = mapping(part, f"parts[{p}]")
                elif self.shortcuts and len(part) == 1 and type(call := part.get("functionCall")) is dict:
                    # One call and nothing else (a call's commonest part): what the reads below make
                    # of it, without them (no other key, so no result, code or signature to read).
                    self._run_thought = None
                    events += self._call(call, position, None)
                    position += 1
                    continue
                if not part.keys() <= _READ_KEYS:
                    _report_unread(part, p, diagnose)
                if len(part) > 1:
                    _report_beside(part, p, diagnose)
                ran = field(part, "codeExecutionResult", "code_execution_result")
                if ran is not None:
                    signature = text(field(part, "thoughtSignature", "thought_signature"), "thoughtSignature")
                    if not isinstance(ran, Mapping):  # what code gave, no call: read past, as before it was read
                        unread = f"parts[{p}].codeExecutionResult is {kind(ran)}, not an object, is not read"
                        diagnose("part-not-reassembled", unread)
                    elif (fault := code_result_fault(ran)) is not None:  # kept, it would go back as Gemini refuses it
                        unread = f"parts[{p}].codeExecutionResult.{fault}: the part is not read"
                        diagnose("part-not-reassembled", unread)
                    elif not self._code_runs().ran(ran, signature, events):
                        diagnose("resend", f"parts[{p}], a codeExecutionResult kept before, came again: not added")
                    self._run_thought = None
                    continue
                response = field(part, "toolResponse", "tool_response")
                if response is not None:  # what a server-side tool call gave: it goes back after that call
                    signature = text(field(part, "thoughtSignature", "thought_signature"), "thoughtSignature")
                    if not isinstance(response, Mapping) or (fault := tool_part_fault(response, "response")):
                        why = (
                            f" is {kind(response)}, not an object,"
                            if not isinstance(response, Mapping)
                            else f".{fault}:"
                        )
                        diagnose("part-not-reassembled", f"parts[{p}].toolResponse{why} the part is not read")
                    elif not self._code_runs().ran(response, signature, events, tool=True):
                        diagnose("resend", f"parts[{p}], a toolResponse kept before, came again: not added")
                    self._run_thought = None
                    continue
                served = field(part, "toolCall", "tool_call")
                if served is not None:  # a call Gemini's own tool makes (a server call), whole
                    signature = text(field(part, "thoughtSignature", "thought_signature"), "thoughtSignature")
                    if not isinstance(served, Mapping) or (fault := tool_part_fault(served, "args")):
                        why = f" is {kind(served)}, not an object," if not isinstance(served, Mapping) else f".{fault}:"
                        diagnose("part-not-reassembled", f"parts[{p}].toolCall{why} the part is not read")
                    else:
                        runs = self._code_runs()
                        events += runs.part(served, tool_position, signature, self._resend_position, tool=True)
                    tool_position += 1
                    self._run_thought = None
                    continue
                code = field(part, "executableCode", "executable_code")
                if code is not None:
                    signature = text(field(part, "thoughtSignature", "thought_signature"), "thoughtSignature")
                    code = mapping(code, f"parts[{p}].executableCode")
                    if (fault := code_part_fault(code)) is not None:  # kept, it would go back as Gemini refuses it
                        diagnose("part-not-reassembled", f"parts[{p}].executableCode.{fault}: the part is not read")
                    else:
                        events += self._code_runs().part(code, code_position, signature, self._resend_position)
                    code_position += 1
                    self._run_thought = None
                    continue
                call = field(part, "functionCall", "function_call")
                if call is None:
                    events += self._said(part)
                    continue
                self._run_thought = None
                if type(call) is not dict:
                    call = mapping(call, f"parts[{p}].functionCall")
                signature = text(field(part, "thoughtSignature", "thought_signature"), "thoughtSignature")
                events += self._call(call, position, signature)
                position += 1
            finish = field(candidate, "finishReason", "finish_reason")
            if finish:
                raw = written(finish)
                normal = _FINISH.get(raw, raw.lower())
                if raw == "CONTINUATION" and self._token:  # policy gemini-checkpoint-tokens
                    kept = "candidate.continuationToken is not kept: no Result field holds it (the turn goes on"
                    diagnose("part-not-reassembled", f"{kept} only by a request that sends it back)")
                if normal in ("stop", "tool_calls"):
                    events += self._close_open()
                said = field(candidate, "finishMessage", "finish_message")
                # Only an error's message is required to be text; another finish is not failed over its note.
                said = (text(said, "finishMessage") if normal == "error" or isinstance(said, str) else None) or None
                error = said if normal == "error" else None  # (provider-error names the word first)
                events.append(build_stream_end(normal, raw, error, said))
        usage = field(payload, "usageMetadata", "usage_metadata")
        if usage:
            events.append(build_usage_report(dict(mapping(usage, "usageMetadata"))))
        # Sorted: a set's order follows the hashes of str, which change from process to process, and
        # which earlier call a resend repeats must not (the first places first).
        for key, position in sorted(self._placed_now):
            seen = self._seen_at.setdefault(key, {})
            if position not in seen:
                seen[position] = None
                self._seen_order.setdefault(key, []).append(position)
        return events

    def commonest_fragment(self, payload: dict[str, Any]) -> tuple[CallRef, str] | None:
        """(ref, text) when the event is a Vertex streamed call's commonest (string_piece): a piece
        of the string value open at that path. decode() makes exactly one ``ArgumentsFragment(ref,
        text)`` of it, with no diagnostic; this does to the decoder and the call's writer what
        decode() does and no more. None, changing nothing, for any other event (a test replays
        every vector and fuzzed stream with and without this shortcut)."""
        found = string_piece(payload) if self._open is not None else None
        return None if found is None else self.fragment_at((found[0], found[2]), found[1])

    def commonest_said(self, payload: dict[str, Any], content: TurnSaid) -> bool:
        """Take the commonest event of a turn that talks, one candidate whose parts are all text or
        thought parts (no signature, no other key) and the usage beside it, to ``content``, as
        decode() and Reassembler._apply would take its events, without building them; False,
        changing nothing, for any other event (a test replays every vector and fuzzed stream with
        and without this shortcut, and events that nearly qualify)."""
        if not self.shortcuts or self._open is not None or self._runs is not None:
            return False  # (a streamed call open, or code runs to begin: decode() keeps those)
        candidates, usage = payload.get("candidates"), payload.get("usageMetadata")
        if type(candidates) is not list or len(candidates) != 1 or "error" in payload or "usage_metadata" in payload:
            return False
        candidate = candidates[0]
        if type(candidate) is not dict or "finishReason" in candidate or "finish_reason" in candidate:
            return False
        body = candidate.get("content")
        if candidate.get("index") or type(body) is not dict:  # an index decode() reads as 0 is falsy
            return False
        parts = body.get("parts")
        if type(parts) is not list or (usage is not None and type(usage) is not dict):
            return False
        for part in parts:
            if type(part) is not dict or not part.keys() <= _SAID_KEYS or type(part.get("text")) is not str:
                return False
            if (thought := part.get("thought")) is not None and thought is not True and thought is not False:
                return False
        if ("continuationToken" in candidate or "continuation_token" in candidate) and field(
            candidate, "continuationToken", "continuation_token"
        ) is not None:  # (tested by key first: a call less on every chunk of text)
            self._token = True  # as decode() notes a checkpoint
        for part in parts:
            said = part["text"]
            if said:  # (else decode() makes no event of it, and leaves the run as it is)
                self._said_part(said, part.get("thought") is True, content)
        self._said_event(usage, content)
        return True

    def said_form_of(self, payload: dict[str, Any]) -> tuple[FormSpec, _SaidForm] | None:
        """Of an event commonest_said took: for one of a single part with text, where the text
        sits and, as holes whose counts its reader reads, each count of the usage beside it (they
        grow with every chunk); with what it says (a thought or not), the usage and its counts'
        keys. None for an event of several parts (a form has one text hole) or of no text."""
        parts = payload["candidates"][0]["content"]["parts"]
        if len(parts) != 1 or not parts[0]["text"]:
            return None
        usage: dict[str, Any] = payload.get("usageMetadata") or {}  # (a dict or nothing: commonest_said took it)
        keys = tuple(key for key, count in usage.items() if type(count) is int)
        spec = FormSpec(
            _SAID_TEXT, tuple(usage[key] for key in keys), counts_at=tuple(("usageMetadata", key) for key in keys)
        )
        return spec, (parts[0].get("thought") is True, usage, keys)

    def said_at(self, kind: _SaidForm, counts: tuple[int, ...], piece: str, content: TurnSaid) -> bool:
        """What commonest_said does with an event of said_form_of's form holding ``piece`` (never
        empty) and the usage ``counts``; False, changing nothing, while decode() keeps a streamed
        call or code runs (the form cannot tell)."""
        if not self.shortcuts or self._open is not None or self._runs is not None:
            return False
        thought, usage, keys = kind
        self._said_part(piece, thought, content)
        self._said_event({**usage, **dict(zip(keys, counts, strict=True))} if usage else usage, content)
        return True

    def _said_part(self, said: str, thought: bool, content: TurnSaid) -> None:
        """A text or thought part's ``said`` (not empty) to ``content``, in its run (as _said)."""
        if self._run_thought is not thought:  # _said: a new run
            self._run += 1
            self._run_thought = thought
        if thought:
            content.reasoned(self._run, said, None)
        else:
            content.said_in_part(said, self._run, None)

    def _said_event(self, usage: dict[str, Any] | None, content: TurnSaid) -> None:
        """The rest of what decode() and _apply do with an event of text or thought parts alone."""
        if self._placed_now:  # what decode() clears at each event's start (no call here to place)
            self._placed_now.clear()
        if self._passed:
            self._passed.clear()
        if usage:
            content.usage_replaced(usage)

    def form_of(self, payload: dict[str, Any]) -> FormSpec:
        """Of an event commonest_fragment took: where its string piece sits and the place its form
        names (the entry's path and whether the string goes on)."""
        entry = payload["candidates"][0]["content"]["parts"][0]["functionCall"]["partialArgs"][0]
        return FormSpec(_FORM_TEXT, (entry["jsonPath"], bool(entry.get("willContinue"))))

    def fragment_at(self, place: tuple[str, bool], value: str) -> tuple[CallRef, str] | None:
        """What commonest_fragment does with such an event: the piece ``value`` of the string open
        at the path ``place`` names, written; None, changing nothing, for any other."""
        streaming = self._open
        if streaming is None or self._runs is not None or not self.shortcuts:
            return None
        piece = streaming.writer.continue_string(place[0], value, place[1])
        if not piece:
            return None
        # What a functionCall part does to the run of thought and text parts. (decode() also
        # clears what it places whole calls by at each event's start: nothing reads that between.)
        self._run_thought = None
        return streaming.ref, piece

    def _said(self, part: Mapping[str, Any]) -> list[Event]:
        """A text part: a thought (``thought: true``) is reasoning, anything else the visible text. Either
        may carry the ``thoughtSignature`` that has to go back on it, and ends its run when it does."""
        said = text(part.get("text"), "text")
        signature = text(field(part, "thoughtSignature", "thought_signature"), "thoughtSignature")
        if said is None and signature is None:
            self._run_thought = None  # inline data and the like (reported by _report_unread) come between
            return []
        if not said and signature is None:
            return []
        thought = bool(part.get("thought"))
        if self._run_thought is not thought:
            self._run += 1
        self._run_thought = None if signature is not None else thought
        if thought:
            return [ReasoningDelta(self._run, said or "", signature=signature)]
        return [TextDelta(said or "", signature, part=self._run)]

    def _call(self, call: Mapping[str, Any], position: int, signature: str | None) -> list[Event]:
        name = text(call.get("name"), "functionCall.name")
        if self.shortcuts and type(call) is dict and len(call) == 2 and "name" in call and "args" in call:
            call_id = partial = None  # a whole call's commonest keys: none of the others to read
            more = False
        else:
            call_id = text(call.get("id"), "functionCall.id")
            partial = field(call, "partialArgs", "partial_args")
            more = bool(field(call, "willContinue", "will_continue"))
        args = call.get("args")
        events: list[Event] = []
        if not name and call_id is None and partial is None and args is None and not more:
            return self._close_open()  # the empty functionCall {} that ends a streamed call
        if self._open is not None and (name or (partial is None and not more)):
            # Another call's part (opening, or whole): the streamed call before it has ended.
            events += self._end_open()
        if name and (more or partial is not None):
            ref = build_call_ref(None, call_id, name, position)
            self._open = _Streaming(ref)
            events.append(build_call_seen(ref, signature))
            signature = None
        if partial is not None:
            if self._open is None:
                self._open = _Streaming(build_call_ref(None, call_id, name, position))
            piece = self._open.writer.write(items(partial, "partialArgs"))
            if piece:
                events.append(build_arguments_fragment(self._open.ref, piece, signature))
            return events
        if not more:  # a whole call (one without a name is still a call: missing-name reports it)
            if not isinstance(args, Mapping | None):
                args = mapping(args, "functionCall.args")
            arguments = dumps(args or {})
            if call_id is None:
                position = self._resend_position(hash((name, arguments)), position)
            ref = build_call_ref(None, call_id, name, position)
            events.append(build_arguments_snapshot(ref, arguments, signature))
        return events  # a part with only willContinue is a keep-alive

    def _resend_position(self, key: int, position: int) -> int:
        """The position that identifies a whole call without an id: its own, unless the same call
        was seen in an earlier event only elsewhere; then the first such place not yet taken by
        its like in this event (where it can be a resend). With every such place taken, a call
        like those already placed in this event is another call (two identical calls in one event
        stay two): a place none of its like has held, so it is no resend of any."""
        placed = self._placed_now
        if self.shortcuts and key not in self._top:  # never placed (_top has every key placed): its own
            placed.add((key, position))
            self._top[key] = position
            return position
        seen = self._seen_at.get(key, {})
        if position not in seen or (key, position) in placed:
            order, j = self._seen_order.get(key, ()), self._passed.get(key, 0)
            while j < len(order) and (key, order[j]) in placed:
                j += 1
            self._passed[key] = j
            position = order[j] if j < len(order) else position
            if (key, position) in placed:  # past every place its like held: new, and after them
                position = self._top[key] + 1
        placed.add((key, position))
        if position > self._top.get(key, -1):
            self._top[key] = position
        return position

    def _code_runs(self) -> CodeRuns:
        if self._runs is None:
            self._runs = CodeRuns(self.policies)
        return self._runs

    def _end_open(self) -> list[Event]:
        """End the streamed call, if any, as another call's part arrives: closed as the empty
        ``functionCall {}`` closes it, or, cut inside a string value, given up (truncated with its
        text). Left open, it took the next call's name and text as its own."""
        events = self._close_open()
        if self._open is not None:
            events.append(CallEnd(self._open.ref, incomplete=True))
            self._open = None
        return events

    def _close_open(self) -> list[Event]:
        streaming, self._open = self._open, None
        if streaming is None or streaming.writer.mid_string:
            self._open = streaming  # cut inside a value: leave it open, to be truncated
            return []
        events: list[Event] = []
        tail = streaming.writer.close()
        merged = streaming.writer.merged() if streaming.writer.revisited else None
        if merged is not None:  # the text names a container twice: the merged value replaces it
            events.append(build_arguments_snapshot(streaming.ref, merged))
        elif tail:
            events.append(build_arguments_fragment(streaming.ref, tail))
        events.append(CallEnd(streaming.ref))
        return events


_READ_KEYS = frozenset(
    {
        "text",
        "thought",
        "thoughtSignature",
        "thought_signature",
        "functionCall",
        "function_call",
        "executableCode",
        "executable_code",
        "codeExecutionResult",
        "code_execution_result",
        "toolCall",
        "tool_call",
        "toolResponse",
        "tool_response",
    }
)
"""The keys of a part this decoder reads; a part with any other is reported (part-not-reassembled)."""

_SAID_KEYS = frozenset({"text", "thought"})
"""The keys of a text or thought part commonest_said takes (a signed one goes to decode())."""


_DATA_KEYS = (
    ("codeExecutionResult", "code_execution_result"),
    ("toolResponse", "tool_response"),
    ("toolCall", "tool_call"),
    ("executableCode", "executable_code"),
    ("functionCall", "function_call"),
    ("text", "text"),
)
"""A part's data (one of them a part, in google-genai's ``Part``), in the order decode() looks for them."""


def _report_beside(part: Mapping[str, Any], p: int, diagnose: Callable[[str, str], None]) -> None:
    """A part holding more than one kind of data: decode() reads the first it looks for, and the
    rest is reported, not lost in silence (a toolCall beside its toolResponse, text beside a call)."""
    held = [names[0] for names in _DATA_KEYS if any(part.get(name) is not None for name in names)]
    if held[-1:] == ["text"] and part["text"] == "":  # an empty text says nothing
        held.pop()
    if len(held) > 1:
        beside = ", ".join(held[1:])
        diagnose("part-not-reassembled", f"parts[{p}] holds {beside} beside {held[0]}, which is read: not read")


def _report_unread(part: Mapping[str, Any], p: int, diagnose: Callable[[str, str], None]) -> None:
    unread = [str(key) for key, value in part.items() if key not in _READ_KEYS and value is not None]
    if unread:
        shown = ", ".join(unread[:6])
        diagnose("part-not-reassembled", f"parts[{p}] holds {shown}, which is not reassembled")
