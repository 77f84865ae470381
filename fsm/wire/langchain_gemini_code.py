"""Gemini through langchain-google-genai, read back as the Gemini decoder reads the bytes.

Its ``codeExecutionResult`` part: v0 a ``code_execution_result`` block (the output under that name,
the outcome as the enum's number), v1 a ``server_tool_result`` whose ``extras`` name the
``block_type`` and hold the outcome.

Its calls: each ``functionCall`` that came without an id gets a fresh ``uuid4`` of LangChain's in
each chunk. A call Gemini sends again in a later event (hermes-agent#25046) then comes under
another id, and would be a second call where the Gemini decoder reads the bytes as a resend: no id
tells the two apart there. So an entry whose id has LangChain's made-up form and whose name and
argument text repeat a call of an earlier chunk takes that call's id (:class:`GeminiSeen`), found
as the decoder finds the place of an id-less whole call: the call seen at its own position first,
else the first one not yet taken in this chunk. Two such entries in one chunk (two dice rolled)
stay two calls, and so do they when resent whole. The call goes back under the id LangChain gave
it first. A call under Gemini's own id comes under that id again when resent, but at another of
LangChain's indexes, where it would be a second call (``duplicate-id``, renamed ``<id>_d2``): an
entry under an id an earlier entry of the same name had takes that entry's index, so the id finds
the call, as the decoder finds it: each tool's call under one id is its own, one without a name is
the id's first call, and a call without a name is named by the next tool's entry under its id.
A call under Gemini's id resent without one (under a made-up id) is that call again where the
decoder finds it by position: at the place in its event the call opened, holding the same name and
argument text (:meth:`GeminiSeen._at_place`). Every call's arguments go on as the value they are
(:func:`whole_arguments`), a snapshot as the decoder reads a ``functionCall``'s ``args``: a call
resent the same is a ``resend``, one resent changed has its arguments replaced, and the text is the
decoder's (LangChain's ``json.dumps`` escapes every character past ASCII); text LangChain does not
write is read as text.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fsm.events import ArgumentsSnapshot, CallEnd, CallRef, CallSeen, Event, ServerResultBlock

if TYPE_CHECKING:  # loaded by a stream's first Gemini code block: most streams have none
    from fsm.options import Policies
    from fsm.wire.decoders._gemini_code import CodeRuns

OUTCOMES = {0: "OUTCOME_UNSPECIFIED", 1: "OUTCOME_OK", 2: "OUTCOME_FAILED", 3: "OUTCOME_DEADLINE_EXCEEDED"}
"""google-genai's ``Outcome`` by number, as the REST wire names it."""
CODE_RESULT = "code_execution_result"


def code_result(block: Mapping[str, Any], kind: Any, notes: list[tuple[str, str]]) -> list[Event] | None:
    """The part (``{"codeExecutionResult": {"outcome", "output"}}``) a block stands for, as its
    event; None when it is no code result. One the Gemini decoder would not read (an outcome or
    output of a wrong type) is reported into ``notes`` as the decoder reports it, and not read."""
    extras = block.get("extras")
    if kind == CODE_RESULT:
        output, outcome = block.get("code_execution_result"), block.get("outcome")
    elif kind == "server_tool_result" and isinstance(extras, Mapping) and extras.get("block_type") == CODE_RESULT:
        output, outcome = block.get("output"), extras.get("outcome")
    else:
        return None
    outcome = getattr(outcome, "value", outcome)  # an enum member, as a model may hold it
    if type(outcome) is int:
        outcome = OUTCOMES.get(outcome, outcome)
    ran = {"outcome": outcome} if outcome is not None else {}
    if output is not None:
        ran["output"] = output
    from fsm.wire.decoders._gemini_code import code_result_fault  # loaded by a stream's first code result

    fault = code_result_fault(ran)
    if fault is not None:
        notes.append(("part-not-reassembled", f"a {kind!r} content block whose {fault}: it is not read"))
        return []
    return [ServerResultBlock({"codeExecutionResult": ran})]


def code_item(code: str, language: Any, kind: Any, notes: list[tuple[str, str]]) -> dict[str, Any] | None:
    """The ``executableCode`` part a code block stands for (its ``language``, google-genai's enum as
    the wire writes it, its name); None when the Gemini decoder would not read that part (a language
    of a wrong type: a number, a list), reported into ``notes`` as the decoder reports it."""
    language = getattr(language, "value", language)
    item = {"code": code} if language is None else {"language": language, "code": code}

    from fsm.wire.decoders._gemini_code import code_part_fault

    fault = code_part_fault(item)
    if fault is not None:
        notes.append(("part-not-reassembled", f"a {kind!r} content block whose {fault}: it is not read"))
        return None
    return item


def call_events(ref: CallRef, resent: bool, signature: str | None, item: dict[str, Any], source: str) -> list[Event]:
    """A whole server call's events, as the decoder gives a code or tool part's: its text first (it
    decides the call), then, unless it resends a call, the part it carries, then its end."""
    if resent:  # under the call's own id: its text alone lets identical_text decide; a sighting opens another
        return [ArgumentsSnapshot(ref, source), CallEnd(ref)]
    return [ArgumentsSnapshot(ref, source), CallSeen(ref, signature, item), CallEnd(ref)]


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


_BASE64 = re.compile(r"[A-Za-z0-9+/_-]+=*")
"""A run of base64 (standard or url-safe, as google-genai writes it) and its padding: one signature's text."""


def unjoined(signature: str | None, kind: Any, notes: list[tuple[str, str]]) -> str | None:
    """Policy langchain-joined-signature: ``signature``, or None where it is several joined, as a message summed from
    ChatGoogleGenerativeAI's chunks joins them (LangChain's sum joins the blocks of a run under its one index, each
    block's signature as its text): no signature Gemini reads, said into ``notes``, so the text goes back unsigned.
    Padding (``=``) with more base64 after it ends one; a signature of no padding (bytes a multiple of three) joins
    the next one without a trace, and goes on as it came."""
    if signature is None or "=" not in signature.rstrip("="):  # one signature's padding ends it: the commonest
        return signature
    runs = _BASE64.findall(signature)
    if len(runs) < 2 or "".join(runs) != signature:
        return signature
    said = f"a {kind!r} block's signature is {len(runs)} signatures joined, as a message summed from the chunks joins"
    notes.append(("part-not-reassembled", f"{said} a run's: left out, its text goes unsigned (feed the chunks)"))
    return None


def whole_arguments(text: Any) -> Any:
    """A call entry's ``args`` (LangChain's ``json.dumps`` of the call's ``args``) as the object it
    writes, which the OpenAI chat decoder reads as a snapshot; anything else as it is. Text that
    ``json.dumps`` of its object does not give back is no text LangChain wrote (a hand-made chunk's:
    a key given twice, a number written with more digits than a float keeps, ``1E5``): read as text,
    as the decoder reads it (``duplicate-key`` reported, each number as written), not as the object
    Python's ``json`` makes of it, which keeps the last of the keys and rounds the numbers."""
    if type(text) is not str:
        return text
    try:
        value = json.loads(text)
        written = json.dumps(value) if type(value) is dict else None
    except (ValueError, RecursionError):  # not LangChain's own text (a hand-made chunk): read as text
        return text
    return value if written == text else text


MADE_UP = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
"""``str(uuid.uuid4())``, the id LangChain makes up; Gemini's own ids are short (``ycroch25``)."""


class _IdCall:
    """A call under one of Gemini's ids: its first entry, its name, the argument text it holds now
    (None until an entry of text came) and its place in the chunk that opened it."""

    __slots__ = ("args", "at", "entry", "name")

    def __init__(self, entry: Mapping[str, Any], name: str | None, at: int) -> None:
        self.entry, self.name, self.at = entry, name, at
        self.args: str | None = None


class GeminiSeen:
    """What a ChatGoogleGenerativeAI stream's earlier chunks leave to later ones: each code block's
    call, each call under a made-up id, and what the code results wait for."""

    __slots__ = ("_runs", "_starts", "_taken", "_under", "calls", "codes", "id_codes", "ids", "places", "policies")

    def __init__(self, policies: Policies | None = None) -> None:
        self.policies = policies  # the stream's: under identical_text new-call the same code again runs again
        # The calls of the code blocks under made-up ids (or none), by their code: in order, and
        # where each first sat (its number in that order, per position); as ``calls`` are kept.
        self.codes: dict[tuple[str, str], tuple[list[CallRef], dict[int, list[int]]]] = {}
        self.id_codes: set[tuple[str, str, str]] = set()  # (id, type, code) of each code or tool block under an id
        self._taken: set[tuple[tuple[str, str], int]] = set()  # the earlier code calls this chunk took
        self._starts: dict[tuple[tuple[str, str], int | None], int] = {}  # see _untaken
        self._runs: CodeRuns | None = None
        # (name, argument text) of each call under a made-up id: its first entries in order, and
        # where each of them sat (their numbers in that order, per position)
        self.calls: dict[tuple[str, str], tuple[list[Mapping[str, Any]], dict[int, list[int]]]] = {}
        # The first entry of each call under each of Gemini's own ids, by its tool's name (None: a
        # call without one, until a named entry names it), and the id's first call
        self.ids: dict[str, tuple[_IdCall, dict[str | None, _IdCall]]] = {}
        # The calls under Gemini's ids by where each opened (its place in its chunk) and the name and
        # argument text it holds now: where the decoder finds a call without an id that repeats one
        self.places: dict[tuple[int, str | None, str], dict[_IdCall, None]] = {}
        self._under: dict[int, _IdCall] = {}  # those of them ``calls`` holds, by their first entry's id()

    def first_entries(self, entries: Sequence[Mapping[str, Any]]) -> dict[int, Mapping[str, Any]]:
        """The chunk's ``tool_call_chunks`` entries (by position) that repeat a call of an earlier
        chunk under a new made-up id, or under a Gemini id an entry of the same name had before
        (earlier in this chunk too, as the decoder reads one event; see _under_id), each with that call's first
        entry (its id, and LangChain's index, which counts on across the chunks); the others are
        remembered."""
        # The last read of each chunk (after its blocks: read_in_places): what its code blocks took
        # of earlier code calls is taken no more.
        self._taken.clear()
        self._starts.clear()
        if self._runs is not None:
            self._runs.begin()
        found: dict[int, Mapping[str, Any]] = {}
        taken: set[tuple[tuple[str, str], int]] = set()  # the earlier calls this chunk's entries took
        # Where the search for an earlier call not taken yet starts, per call and per call and position:
        # each only moves past calls taken, so a chunk of many repeats of one call reads each once.
        starts: dict[tuple[tuple[str, str], int | None], int] = {}
        new: list[tuple[tuple[str, str], int, Mapping[str, Any]]] = []
        for at, entry in enumerate(entries):
            call_id, name, args = entry.get("id"), entry.get("name"), entry.get("args")
            if not (isinstance(call_id, str) and isinstance(name, str | None) and isinstance(args, str)):
                continue
            if not MADE_UP.fullmatch(call_id):
                call = self._under_id(call_id, name, entry, at)
                self._holds(call, call.name, args)  # what it holds now: a resend's text, or new arguments
                if call.entry is not entry:
                    found[at] = call.entry
                continue
            if name is None:
                continue
            key = (name, args)
            firsts, places = self.calls.get(key, ((), {}))
            earlier = _untaken(key, places.get(at, ()), at, taken, starts)  # the call seen at its own position
            if earlier is None:
                earlier = _untaken(key, range(len(firsts)), None, taken, starts)
            held = self._under.get(id(firsts[earlier])) if earlier is not None else None
            if earlier is not None and held is not None and (held.name, held.args) != key:
                # A call under Gemini's id that holds other arguments now: the bytes open a call of
                # this one's own in its place, which later calls like this one repeat instead.
                del self._under[id(held.entry)]
                firsts[earlier] = entry  # type: ignore[index]
                taken.add((key, earlier))
                continue
            if earlier is None:
                # None of the calls without an id: the decoder leaves it at its own place (unless one
                # like it of this chunk took a call seen there), where a call under Gemini's id may be
                under = self._at_place(key, at) if not places.get(at) else None
                if under is not None:
                    found[at] = under.entry
                    self._under[id(under.entry)] = under
                new.append((key, at, entry if under is None else under.entry))
            else:
                found[at] = firsts[earlier]
                taken.add((key, earlier))
        for key, at, entry in new:  # after the chunk: its own calls are no resends of each other
            firsts, places = self.calls.setdefault(key, ([], {}))
            places.setdefault(at, []).append(len(firsts))
            firsts.append(entry)
        return found

    def _under_id(self, call_id: str, name: str | None, entry: Mapping[str, Any], at: int) -> _IdCall:
        """The call an entry under a Gemini id (``call_id``, at ``at`` in its chunk) repeats, as the
        decoder finds it by that id: the call of its tool under the id, else one under the id that
        has no name yet (which takes this one's); an entry without a name repeats the id's first
        call. A call of its own (a new id, another tool under the id) has ``entry`` as its first."""
        held = self.ids.get(call_id)
        if held is None:
            call = _IdCall(entry, name, at)
            self.ids[call_id] = (call, {name: call})
            return call
        first, calls = held
        if name is None:
            return first
        found = calls.get(name)
        if found is None:
            found = calls.pop(None, None)  # a call without a name takes this one's (a late name)
            if found is None:
                found = _IdCall(entry, name, at)
            self._holds(found, name, found.args)
            calls[name] = found
        return found

    def _holds(self, call: _IdCall, name: str | None, args: str | None) -> None:
        """``call`` holds ``name`` and ``args`` now: found under them at its place (``places``)."""
        if (name, args) == (call.name, call.args) and call.args is not None:
            return
        if call.args is not None:
            place = (call.at, call.name, call.args)
            del self.places[place][call]
            if not self.places[place]:
                del self.places[place]
        call.name, call.args = name, args
        if args is not None:
            self.places.setdefault((call.at, name, args), {})[call] = None

    def _at_place(self, key: tuple[str, str], at: int) -> _IdCall | None:
        """The call under a Gemini id that a call without one (``key``: its name and argument text, at
        ``at`` in its chunk) repeats, as the bytes find it: the id's call opened at that place in
        its event (the decoder places a call without an id by its position, and a call under an id
        holds the place it opened at too) that holds that name and text now."""
        return next(iter(self.places.get((at, key[0], key[1]), ())), None)

    def code_call(self, code: str, made: CallRef) -> tuple[CallRef, bool]:
        """The call of a code block, or of a tool block (``made``: its own, at its place among the chunk's blocks of its
        type, ``code`` its text: the code, the tool call's arguments),
        and whether it resends one of an earlier chunk. Under LangChain's made-up id (or none), the
        block takes the call of an earlier block with the same code seen at its place, else the first
        such call this chunk has not taken, as the Gemini decoder places a code part without an id;
        with none left it is a call of its own. Under a Gemini id, the same id and code again is the
        resend (the registry finds it by the id)."""
        runs, tool = self._code_runs(), made.type == "tool_call"
        if made.id is not None and not MADE_UP.fullmatch(made.id):
            resent = (made.id, made.type, code) in self.id_codes
            self.id_codes.add((made.id, made.type, code))
            runs.expect(not resent, tool=tool)
            return made, resent and not runs.rerun
        key = (made.type, code)
        calls, places = self.codes.get(key, ((), {}))
        earlier = _untaken(key, places.get(made.index or 0, ()), made.index, self._taken, self._starts)
        if earlier is None:
            earlier = _untaken(key, range(len(calls)), None, self._taken, self._starts)
        if earlier is None:
            calls, places = self.codes.setdefault(key, ([], {}))
            earlier = len(calls)
            places.setdefault(made.index or 0, []).append(earlier)
            calls.append(made)
        self._taken.add((key, earlier))
        runs.expect(calls[earlier] is made, tool=tool)
        if runs.rerun:  # under identical_text new-call the same code again is another run, a call of its own
            return made, False
        return calls[earlier], calls[earlier] is not made

    def kept(self, results: list[Event], notes: list[tuple[str, str]]) -> list[Event]:
        """The code results of a block (``code_result``) that are results to keep (CodeRuns.fresh);
        one said again while no code waits is a resend, reported into ``notes``."""
        runs = self._code_runs()
        fresh = [event for event in results if type(event) is not ServerResultBlock or runs.fresh(event.block)]
        if len(fresh) < len(results):
            notes.append(("resend", "a code or tool result block, a result kept before, came again: not added"))
        return fresh

    def _code_runs(self) -> CodeRuns:
        if self._runs is None:
            from fsm.wire.decoders._gemini_code import CodeRuns

            self._runs = CodeRuns(self.policies)
        return self._runs


def shared_signatures(
    entries: Sequence[Mapping[str, Any]],
    resent: Mapping[int, Mapping[str, Any]],
    signatures: dict[str, str],
    notes: list[tuple[str, str]],
) -> None:
    """Take out of ``signatures`` (a chunk's, by call id) each one under an id two or more calls of
    the chunk carry (``entries``, each the call of its first entry in ``resent`` if it has one):
    LangChain keeps one signature an id, the last signed part's, so which part it came on is lost.
    Put on the first of them, it went on another tool's call than the bytes sign: it goes on none.
    Parts that are one call (resent in the same event) keep it, as it is that call's, but where two
    of them were signed the bytes keep the first part's. Either is reported into ``notes``
    (``part-not-reassembled``)."""
    owners: dict[str, dict[int, None]] = {}
    parts: dict[str, int] = {}
    for at, entry in enumerate(entries):
        call_id = entry.get("id")
        if isinstance(call_id, str) and call_id in signatures:
            owners.setdefault(call_id, {})[id(resent.get(at, entry))] = None
            parts[call_id] = parts.get(call_id, 0) + 1
    for call_id, calls in owners.items():
        if parts[call_id] < 2:
            continue
        kept = "LangChain keeps one signature an id, the last signed part's"
        if len(calls) > 1:
            del signatures[call_id]
            said = f"{len(calls)} calls carry: {kept}, so which call it signed is lost and it goes on none"
        else:
            said = f"{parts[call_id]} parts of one call carry: {kept}, where the bytes keep the first's"
        notes.append(("part-not-reassembled", f"a thought signature under the call id {call_id!r}, which {said}"))


def _untaken(
    key: tuple[str, str],
    numbers: Sequence[int],
    at: int | None,
    taken: set[tuple[tuple[str, str], int]],
    starts: dict[tuple[tuple[str, str], int | None], int],
) -> int | None:
    """The first of ``numbers`` (earlier calls of ``key``) this chunk has not taken yet, if any."""
    j = starts.get((key, at), 0)
    while j < len(numbers) and (key, numbers[j]) in taken:
        j += 1
    starts[(key, at)] = j
    return numbers[j] if j < len(numbers) else None
