"""Gemini responses going on with one before them (policy will-continue-responses).

A Gemini ``functionResponse`` that follows one to the same id saying ``willContinue: true`` goes on
with it: no result of its own, so the reader gives it no entry and notes it in the chain of the
response that began it (``Roles.chains``). Repair edits a chain as the one result it is: dropped,
renamed and moved with that first response, in order, each named in the changes as that one is
(else a chain's first response dropped alone left the rest an orphan, and one renamed alone left
the rest a second result to the old id: audit 103). The chains are read whole before repair pairs
a turn: a chain may go on past the turn holding its first response (the model's text between),
which the turns, read one at a time, have not reached yet.

A chain's response sent in a model content (a stray, policy chain-response-in-the-model-content; begun
there or in the user's) is a ``misplaced-result`` to check, naming its part (task 163: one of a chain
begun in a model content was read past). Repair moves it to the end of the responses the latest user
content before it keeps, when that comes after where the response of its chain before it goes; else
right after that response (a chain dropped or moved with its first response takes its strays along,
unless a later home comes between: then the chain is cut at the stray, task 136); but first in the
user content answering the model's calls it came after where none before it keeps a response after
them (policy stray-after-the-calls-answer), unless a call of its own id joins them. Where that puts it
back past the user's text or another model content (not calls) that came between, it goes in a user
content of its own right after the model content it came in (policy stray-where-it-came, task 163);
right before it where a call of its own id follows it there or in a model content joining it (after
it, it would answer that call; policy stray-before-a-call-of-its-id, task 170). Only a stray between
calls of another id and a call of its own in one run of model contents still goes back (no place is
between them: Gemini's model contents in a row are one, and their calls' answer comes after them all).
Each user content repair writes parts a stray from calls after it, also one written for a stray read later or one a
chain's cut puts back (task 173: past them, it came after a response the model got after it).
A chain whose first response repair moves is cut too at a response of it in a later user content that
the user's text or the model's content parts from where that first response goes (and from where the
response before it came): it stays where it came (policy chain-goes-on-where-it-came, task 145). So
the repaired history says the model saw it no sooner than it did (audits 111, 147).

A chain is told by its responses' ids: responses without ids never chain (policy
id-less-responses-unchained). ``willContinue`` applies to NON_BLOCKING functions alone, which the
Live API's ``BidiGenerateContent`` declares, and its calls carry ids the client answers by (Vertex AI
takes no ``willContinue`` at all); an id-less response pairs by name and order, so a second one of a
name answers the next call of that name, and read as going on with the first it would leave that
call unanswered: which it is, nothing on the wire tells. Read as a result of its own, it is
paired or reported (``orphan``, dropped by repair with a change), never swallowed in silence."""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from fsm.history.chain_cuts import Cut, StrayPlan
from fsm.history.changes import Change
from fsm.history.entries import Entry
from fsm.history.findings import Finding, Format, Kind
from fsm.history.formats import Reader, gemini_payload, gemini_role, read_role, shown

Chains = dict[tuple[int, int], list[Entry]]
"""Where each chain's first response sits (message, part), with the responses going on with it, in order."""

STRAY_WHY = "a functionResponse going on with one before it (willContinue), in a model content"
"""What check and repair say of a stray (policy chain-response-in-the-model-content)."""


def chains(messages: Sequence[Mapping[str, Any]], fmt: Format) -> Chains:
    """The history's chains (only Gemini's responses go on so)."""
    if fmt != "gemini":
        return {}
    reader = Reader(fmt)
    for at, message in enumerate(messages):
        reader.read(message, at)
    return reader.roles.chains


def chained(found: Chains, entries: Iterable[Entry]) -> Iterator[Entry]:
    """Each of ``entries``, then the responses going on with it."""
    for entry in entries:
        yield entry
        yield from found.get((entry.message, entry.slot), ())


def models(messages: Sequence[Mapping[str, Any]], found: Chains) -> set[int]:
    """The contents holding a chain's response that are read as the model's: of role ``model``, or
    without a role and making calls (``roleless-as-user``: only the model makes them; a response there
    is a stray as in a model content, fuzz129 seed 17679). Each content looked through once."""
    held = {entry.message for rest in found.values() for entry in rest} | {at for at, _ in found}
    return {at for at in held if gemini_role(messages[at]) == "model"}


def strays(found: Chains, model: set[int]) -> Iterator[tuple[Entry, bool]]:
    """Each response of a chain, with whether it sits in a model content (``model``: :func:`models`; a
    stray, or one going on with a first response sent there, moved with it until cut)."""
    for (at, slot), rest in found.items():
        anchor = Entry(at, slot, rest[0].key, rest[0].name)
        yield from ((entry, entry.message in model) for entry in [anchor, *rest])


def stray_findings(
    messages: Sequence[Mapping[str, Any]], found: Chains, told: Mapping[tuple[int, int], set[Kind]]
) -> Iterator[Finding]:
    """Check: each stray, named by what repair does with it: a ``misplaced-result``, moved alone or
    with its chain's first response (:func:`going_on`); but one whose chain is dropped with its first
    response is what that response is, an ``orphan`` or ``duplicate-result`` (policy
    chain-response-in-the-model-content). ``told``: the kinds found of each response read as a result
    (a chain's first), a ``duplicate-result`` only when repair drops it (past its turn's calls of its id:
    else it answers one of them, renamed)."""
    model = models(messages, found)
    for (at, slot), rest in found.items():
        began = "" if at in model else ", as its chain began"  # (begun in a model content: read past, task 163)
        why = f"{STRAY_WHY}: Gemini takes responses from a user content{began}"
        said = told.get((at, slot), set()) & {Kind.ORPHAN, Kind.DUPLICATE_RESULT}
        kind = min(said, key=lambda each: each.value) if said else None
        going = (
            f"{STRAY_WHY}: it goes with the response its chain began with (message {at + 1}), a {kind and kind.value}"
        )
        for entry in rest:
            if entry.message in model:
                place = f" (part {entry.slot + 1} of message {entry.message + 1})"
                shown_as = (entry.message + 1, (why if kind is None else going) + place, entry.name)
                yield Finding(kind or Kind.MISPLACED_RESULT, shown(entry.key), *shown_as)


def going_on(model: set[int], kind: str, entry: Entry, detail: str) -> Change:
    """Repair: what befell a chain's first response befell ``entry``, going on with it; but a stray
    (in a model content, ``model``: :func:`models`) moved with it is a ``moved-misplaced-result``, as
    check names it, and one in the user's content moved with a first response sent in a model content
    is a ``moved-result``: it was where a response goes (not said to be in the model's role)."""
    if kind == "moved-result" and entry.message in model:
        kind = "moved-misplaced-result"
    elif kind == "moved-misplaced-result" and entry.message not in model:
        kind, detail = "moved-result", "moved with the response its chain began with, sent in a model content"
    return Change(kind, entry.message + 1, shown(entry.key), f"{detail} (going on with it)")


class _Again(dict[Any, list[tuple[tuple[int, int], int]]]):
    """Each id's kept calls (message, part) in order (``ANY``: all), each with where the latest user content repair
    writes before it stands: 2 * its message, or 2 * the message it is written after + 1 (a new one); -1: none."""

    ANY = object()

    def __init__(self) -> None:
        super().__init__()
        self.late: list[int] = []  # user contents known once the calls were read (the same marks), in order


def home_strays(plan: StrayPlan) -> None:
    """Repair: each stray at the end of the responses kept by the latest user content before it, when that comes after
    where the response of its chain before it goes, else right after that response; but first in the user content
    answering the model's calls it came after, when those came later than both (``plan.trail``, :func:`after_calls`).
    Once every turn is paired: a chain dropped with its first response took it along; one moved with it too, unless
    that puts it back past such a content or calls (stray-after-the-calls-answer, task 136): then the chain is cut
    there (:class:`~fsm.history.chain_cuts.Cut`), the rest as they came. Put back past the user's text or another
    model content (not calls) between, it goes after its own (stray-where-it-came), in the answer to calls joining it
    (audit 164), or right before its own where a call of its id follows it there or joining it (it would answer that
    call: stray-before-a-call-of-its-id, task 170); a model content after the calls counts unless it joins them (one a
    content is written before, after a dropped orphan's, does not: audit 164, task 166)."""
    marks: tuple[list[tuple[int, int]], tuple[list[tuple[int, int]], _Again]] | None = None  # once, with a stray
    home: tuple[int, int] | None = None  # where the response of the chain before the stray goes
    called = False  # home is the model's calls (message, part): in the user content answering them
    cut, stays, staying, prev = Cut(plan), list[tuple[int, list[Entry]]](), False, (-1, -1)  # (prev: where one came)
    joined, late = list[tuple[Entry, int, int]](), cut.late  # strays in the answer to calls after them; see _Again
    for entry, stray in strays(plan.chains, plan.model):
        spot, prev, before_it = (entry.message, entry.slot), (entry.message, entry.slot), prev
        if spot in plan.chains:  # a chain's first response (strays yields it first)
            home, called, staying = cut.begin(spot), False, False  # staying: home is a stray's kept apart
            continue
        cut.index += 1
        if cut.carried and not stray and not cut.done and cut.past(entry, before_it):
            cut.take(entry)  # a user content after where its first response goes: it stays where it came
        if cut.carried and not stray:  # goes with its chain's first response, or where it came once cut
            home, called, staying = (cut.keep(entry, marks), False, False) if cut.done else (home, called, staying)
            continue
        if not stray or home is None:
            home = spot if spot not in plan.drop else None
            called = staying = False
            continue
        if marks is None:
            marks = (_kept_ends(plan), _kept_calls(plan))
            marks[1][1].late = late
        state = (home, called, staying)  # where the one before it went
        home, called, apart, ahead, joins = _place(cut, marks, entry, state, before_it)
        cuts = cut.carried and not cut.done and (home != state[0] or apart or joins)
        back = cut.returning() if cuts else []
        if back:  # cutting its chain puts responses back, which may part it from the calls after (task 173)
            home, called, apart, ahead, joins = _place(cut, marks, entry, state, before_it)
        staying = apart or joins
        if cut.carried and not cut.done and home == state[0] and not staying:
            for mark in back:  # (not cut after all)
                del late[bisect_left(late, mark)]
            cut.back = None
            continue  # right after its chain's response before it, moved with it: no later home
        cut.take(entry)
        plan.drop.add(spot)
        plan.touched.add(entry.message)
        if staying:  # put back where home is, it went past the user's text or the model's content after it
            home, called = spot, False
            held = (stays[-1][0], [*stays[-1][1], entry]) if joins else (entry.message - ahead, [entry])
            stays[-1:] = [held] if joins else [*stays[-1:], held]  # joins: in the last one's
            insort(late, 2 * held[0] + 1)  # a user content written: it parts a stray before it from calls after
            ahead = held[0] < held[1][0].message  # (a stray joining one written before its content goes there too)
            why = f"{STRAY_WHY}: moved into a user content of its own right {'before' if ahead else 'after'} the"
            why += " model content it came in, as the user's text or the model's content came between it and its"
            why += " chain's response before it" + (" (after it, it would answer the call of its id there)" * ahead)
        elif called:  # the model's calls came after the responses kept before it, or its chain's before it
            plan.trail.append((home[0], entry))
            joined += [(entry, home[0], len(plan.changes))] if home[0] > entry.message else []  # calls after it
            why = f"{STRAY_WHY}: moved first into the user content answering the model's calls it came after"
            why += f" (message {home[0] + 1}), which no user content before it keeps a response after"
        else:
            plan.touched.add(home[0])
            plan.after.setdefault(home, []).append(entry)
            why = f"{STRAY_WHY}: moved to the end of the responses of the latest user content before it"
            why += f" that comes no sooner than its chain's response before it (message {home[0] + 1})"
        plan.changes.append(Change("moved-misplaced-result", entry.message + 1, shown(entry.key), why))
    _parted(plan, joined, stays, late)
    cut.finish()
    for at, group in stays:  # (copied once the cut chains' copies are gone: finish takes out only theirs)
        plan.add_after.setdefault(at, []).append({"role": "user", "parts": plan.moved(group)})


def _parted(
    plan: StrayPlan, joined: list[tuple[Entry, int, int]], stays: list[tuple[int, list[Entry]]], late: list[int]
) -> None:
    """Strays placed first in the answer to calls after them (``joined``: each with the calls' message and its change)
    that a user content written later parts from those calls (a stray's of a chain read after theirs, kept apart:
    ``M[a2+ m2] M[b2+ m3] M[call b]`` writes ``b2``'s before ``M[b2+ m3]``): each goes in a user content of its own
    right after its model content instead (stray-where-it-came), not after the stray its model got after it (task
    173). The last first: the content one gets may part one before it. Then all strays' contents of their own in the
    order the strays came (a chain read first may write one after a later chain's stray's message)."""
    parted = set()
    for entry, at, said in sorted(joined, key=lambda each: each[0][:2], reverse=True):
        if bisect_right(late, 2 * at) > bisect_right(late, 2 * entry.message):  # a mark after it, not after the calls
            parted.add(entry)
            stays.append((entry.message, [entry]))
            insort(late, 2 * entry.message + 1)
            why = f"{STRAY_WHY}: moved into a user content of its own right after the model content it came in, as"
            why += " a user content repair writes for another stray parts it from the model's calls after it"
            plan.changes[said] = Change("moved-misplaced-result", entry.message + 1, shown(entry.key), why)
    if parted:
        plan.trail[:] = [each for each in plan.trail if each[1] not in parted]
    stays.sort(key=lambda held: (held[0], held[1][0][:2]))  # (chains are read by their first responses)


def _place(
    cut: Cut, marks: Any, entry: Entry, state: tuple[tuple[int, int], bool, bool], before_it: tuple[int, int]
) -> tuple[tuple[int, int], bool, bool, bool, bool]:
    """Where a stray goes (:func:`home_strays`), ``state`` where the one before it went (home, called, staying): its
    home; in the answer to the model's calls there; apart from it (stray-where-it-came), right before its own content
    (stray-before-a-call-of-its-id); in the content of its own of the stray before it."""
    (ends, (calls, again)), (home, called, staying), spot = marks, state, (entry.message, entry.slot)
    before = bisect_left(ends, entry.message, key=lambda end: end[0])  # in message order: no scan a stray
    latest, was = (ends[before - 1] if before else home), home
    home, called = (latest, False) if latest[0] > home[0] else (home, called)  # never before the one before it
    made = bisect_left(calls, spot)
    if made and calls[made - 1] > home and not _called_again(again, entry, calls[made - 1]):
        home, called = calls[made - 1], True
    start = max((home[0], -1) if home is latest and home[0] > was[0] else home, before_it)  # (see Cut.between)
    own = _called_again(again, entry, (entry.message, 0))  # after its content, it would answer that call
    first = bisect_left(calls, (entry.message, 0)) if own else made  # (its content's calls before it go after it)
    apart = not (first and calls[first - 1] > start) and cut.between(start, (entry.message, 0), users=called)
    if called and not apart:  # the model's contents after the calls join them, but not past one written apart
        apart = cut.between(max(start, (cut.apart_from(home[0]), -1)), (entry.message, 0))  # (audit 164)
    ahead = apart and own  # so right before its content (stray-before-a-call-of-its-id, task 170)
    if not ahead and apart and _called_again(again, entry, spot, _Again.ANY):  # a call joins it: in their answer
        apart, home, called = False, calls[made], True  # (audit 164: its content of its own parted them)
    joins = not called and staying and home == was and not apart  # right after the stray before it, kept apart
    return home, called, apart, ahead, joins


def after_calls(plan: StrayPlan, written: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The strays of ``plan.trail`` written first in the user content repair wrote right after the
    model content holding the calls each came after (their responses or placeholders: every call kept
    is answered there, past any content of a role Gemini lacks between, policy unknown-role-between),
    so never back past those calls; each content copied once."""
    if not plan.trail:
        return written
    holding: dict[int, int] = {}  # each message read, the last content written of its parts making calls
    for out, starts in enumerate(plan.origins):  # (a model content, or one of a role Gemini lacks kept as it came)
        if any(gemini_payload(part, "call") for part in written[out].get("parts") or ()):
            holding.update((at, out) for _, at in starts)
    first: dict[int, list[Any]] = {}
    for at, entry in plan.trail:
        first.setdefault(holding[at] + 1, []).extend(plan.moved([entry]))
    for out, parts in sorted(first.items(), reverse=True):
        while out < len(written) and gemini_role(written[out]) not in ("user", "model") and not _answers(written[out]):
            out += 1  # a content of a role Gemini lacks, kept as it came, parts no call from its answer
        if out < len(written) and gemini_role(written[out]) != "model":  # the user's, or one answering as it
            written[out] = {**written[out], "parts": [*parts, *(written[out].get("parts") or [])]}
        else:  # (every call kept is answered by the user content after it: not met, but never lost)
            written.insert(out, {"role": "user", "parts": parts})
    return written


def _answers(content: Mapping[str, Any]) -> bool:
    """Does a content repair wrote hold a response (one of a role Gemini lacks holding one is read as
    the user's answer, kept as it came)?"""
    return any(gemini_payload(part, "result") for part in content.get("parts") or ())


def _kept_ends(plan: StrayPlan) -> list[tuple[int, int]]:
    """The last response each user content keeps (message, part), in message order: where it is, or
    moved within it (before the user's text: a stray keyed after it goes with the content's responses)."""
    ends = []
    for at, message in enumerate(plan.messages):
        parts = message.get("parts") or []  # read as a list of objects already: not checked again
        role = read_role("gemini", message, any(gemini_payload(part, "call") for part in parts))
        within = {e.slot for e in (*plan.move_into.get(at, ()), *plan.front_into.get(at, ())) if e.message == at}
        kept = [
            slot
            for slot, part in enumerate(parts)
            if gemini_payload(part, "result") and ((at, slot) not in plan.drop or slot in within)
        ]
        ends += [(at, kept[-1])] if kept and role in ("user", "function") else []
    return ends


def _kept_calls(plan: StrayPlan) -> tuple[list[tuple[int, int]], _Again]:
    """Every call repair keeps (message, part), in order; and by id, each with where the latest content
    of the user's repair writes before it stands (:class:`_Again`)."""
    calls, again, user = [], _Again(), -1
    for at, message in enumerate(plan.messages):
        parts = message.get("parts") or []  # read as a list of objects already: not checked again
        kept = [slot for slot in range(len(parts)) if (at, slot) not in plan.drop]
        made = [slot for slot in kept if gemini_payload(parts[slot], "call")]
        left = len(made) < len(kept)  # a part kept besides the calls (counted: no scan of the calls a part)
        added = any(at in edits for edits in (plan.add_into, plan.front_into, plan.move_into))
        if read_role("gemini", message, bool(made)) != "model" and (left or added):
            user = 2 * at  # (a user content making calls too: what is left of it is written before them)
        for slot in made:
            said = gemini_payload(parts[slot], "call")
            cid = said[1].get("id") if said and isinstance(said[1], Mapping) else None
            for key in (cid, _Again.ANY):
                again.setdefault(key, []).append(((at, slot), user))
        calls += [(at, slot) for slot in made]
        user = 2 * at + 1 if at in plan.add_after else user
    return calls, again


def _called_again(again: _Again, entry: Entry, call: tuple[int, int], key: Any = None) -> bool:
    """Is a call of the stray's id (or ``key``'s) made after it, no content of the user's written between it and the
    calls the stray came after (``call``)? Their model contents join: put in the answer to their calls, the stray
    would answer that call instead of going on with its chain, so it goes right before its own content, or where no
    place is left before that call (calls of another id before it in their run), with the responses before it."""
    made = again.get(entry.key if key is None else key, [])
    after = bisect_left(made, (entry.message, entry.slot), key=lambda each: each[0])
    if after == len(made):
        return False
    (at, _), user = made[after]
    written = bisect_right(again.late, 2 * at)  # (a stray's content of its own, responses a chain's cut put back)
    return max(user, again.late[written - 1] if written else -1) <= 2 * call[0]
