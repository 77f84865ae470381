"""Repair a history so a strict provider accepts it, never losing, swapping or inventing a result.

The pairing truth is the order an agent runs calls in: within a turn, the k-th result carrying id ``x`` answers
the k-th call with id ``x`` (of its kind, Responses: result-answers-its-kind). Repair keeps each pair and changes only:

* the 2nd, 3rd, ... call under one id in a turn becomes ``<id>_d2``, ``<id>_d3`` (in order, skipping any id held up to
  and in its turn, rename-skips-held-ids; within a format's ``ID_LIMIT``), and its result gets the new id too; but
  not after a call repair drops, nor when dropped itself, though found dropped late (dropped-call-frees-id: _planned);
* a Converse ``toolUseId`` Bedrock refuses (over 64 characters, or a character outside ``[a-zA-Z0-9_.:-]``) is mapped
  as the ``"bedrock"`` next turn maps it (:func:`fsm.messages.bedrock.converse_id`), in its call and result alike;
* a Gemini response going on with one before it (``willContinue``) is dropped, renamed and moved with that one, as one
  result, in order; one sent in a model content goes after it, after the calls before it (:mod:`fsm.history.chains`);
* a result that answers no call of its turn (an orphan, or a second result for a call already answered) is dropped; a
  call that got no result at all gets a placeholder result, or with ``RepairPolicy(dangling="drop-call")`` is dropped
  (but a Gemini call whose part carries a ``thoughtSignature``, which must go back on that part, gets a placeholder);
* Claude's server tool calls (``server_tool_use``, ``mcp_tool_use``) pair with their ``*_tool_result`` blocks within
  their own message, a result only with a call before it (:mod:`fsm.history.server_blocks`); one without its result is
  dropped whatever the policy, as only Anthropic can give it (but not a paused turn's: :mod:`fsm.history.after_run`),
  and a client call naming code it lacks or that had finished is kept and said so (:mod:`fsm.history.program_callers`);
* a Responses call item dropped takes along the ``reasoning`` items right before it (the API pairs each with its item);
  one naming a program the history lacks is kept and said so (:mod:`fsm.history.program_callers`);
* what a declined model gave before an Anthropic message's last ``fallback`` block goes (:mod:`fsm.history.declined`);
* a result after text in its turn's user message (Anthropic, Gemini, Converse) goes first (:mod:`fsm.history.turns`),
  and what an Anthropic user message making calls after its run's first call leaves goes after the run;
* a result sent in the model's role (an Anthropic or Converse assistant message, a Gemini model content, an OpenAI
  chat or Ollama message other than ``tool``) moves where the API takes it: first into its turn's user results message
  (Gemini, Converse: after the user's results sent before it), else the user message after it (Anthropic), else a new
  user message (see :meth:`_Plan._home`); the OpenAI or Ollama message becomes a ``tool`` message; results sent so
  after the user's text (``Segment.held``) go before it: first into that user message, or (OpenAI, Ollama) right after
  the calls and the tool messages before it;
* results sent as results are after the user's text that followed their calls, before the model's next message
  (``result-after-text``), go before the text the same way (Responses: right after the call items and the outputs
  before it; Gemini, Converse: after the answering message's results);
* a server tool's result in a user message (Anthropic: only Claude's own message holds one) that answers a server call
  of the assistant run before it moves into that message, right after its call (but code execution's: code_waits);
* a message whose role its format lacks is kept as it is (only the caller knows the role meant), and said so, merged
  with none (``unknown-role-kept-apart``; holding no call or result, it is read as if absent,
  ``unknown-role-between``: :mod:`fsm.history.turns`, :mod:`fsm.history.joined_runs`); but a Gemini content of role
  ``function`` holding function responses and no call (older Gemini and Vertex AI examples send responses so; the API
  takes ``user`` or ``model`` alone) becomes the ``user`` content it stands for (``function-role-to-user``);
* a message left empty goes, as does one that came empty (``empty-message``), and Anthropic or Converse neighbours of
  one role this brings together merge (both want user and assistant to alternate), unless one makes calls and the
  other answers them (no message may do both); Converse and Gemini messages of one role in a row merge however they
  came (``user-after-user``, ``assistant-after-assistant``); a Gemini content without a role is the user's, or the
  model's when it makes calls (``roleless-as-user``);
* but a Gemini turn's function responses and the user's other parts are never written in one content
  (``results-beside-text``): the responses go in a user content, the other parts in one of their own after it, a
  placeholder model content between (``placeholder-model-turn``); the user's content beside the results of calls
  Claude's waiting code made goes after Claude's next message (:mod:`fsm.history.code_waits`).

Every edit is a :class:`Change`; the input is never mutated. What repair leaves alone comes back as the same objects
(policy repair-keeps-objects: a renamed call's ``function`` in a message it changed, say): ``copy.deepcopy`` the output
before editing it in place. One pass over the messages: linear."""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from fsm.engine.ids import IdAllocator
from fsm.foreign import answers_callers
from fsm.history.after_run import drop_paused, pauses, still_waits, user_content_after
from fsm.history.chains import after_calls, chained, going_on, home_strays
from fsm.history.changes import Change, RepairPolicy, checked_policy, kept_roles
from fsm.history.code_waits import after_their_calls, settle
from fsm.history.declined import dropped_declined
from fsm.history.detect import Named, resolve_format
from fsm.history.entries import Entry, Key, Paired, Roles, Segment
from fsm.history.findings import Format
from fsm.history.formats import CALLER, ID_LIMIT, MODEL_ROLE, shown
from fsm.history.item_ids import renumbered, settle_items, settled_changes
from fsm.history.joined_runs import Dropped, ServerRuns, joined_server_ids, kept_apart, left_empty
from fsm.history.placeholders import HeldIds, placeholder, signed
from fsm.history.program_callers import follow_renamed_code, kept_callers, kept_code_callers
from fsm.history.rewrite import ALTERNATING, FIELD, SERVER_WHY, Writer
from fsm.history.turns import segments


@answers_callers
def repair(
    messages: Sequence[Mapping[str, Any]], policy: RepairPolicy | None = None, format: Named = "auto"
) -> tuple[list[dict[str, Any]], list[Change]]:
    """The repaired messages and what changed (rules: the module's docstring). A history ``check`` accepts, or one
    repaired, comes back unchanged; ``format=None`` is ``"auto"``. Malformed input raises LocalProtocolError."""
    policy, (messages, fmt) = checked_policy(policy), resolve_format(messages, format)
    if fmt is None:  # "auto", and no message tells a format: nothing to pair or judge (auto-by-tool-content)
        return [m if isinstance(m, dict) else dict(m) for m in messages], []
    messages, kept, settled = settle_items(messages) if fmt == "responses" else dropped_declined(messages, fmt)
    plan = _planned(fmt, policy, messages, frozenset())
    dropped, renamed = ({c.id for c in plan.changes if c.kind == kind} for kind in ("dropped-call", "renamed-call"))
    if fmt in ALTERNATING and dropped & renamed:  # a rename maybe needless: the drops known first (frees-id)
        plan = _planned(fmt, policy, messages, frozenset(plan.drop))
    fixed = after_calls(plan, plan.rewrite())  # strays after the model's calls they came after
    plan.changes += kept_roles(plan.roles.odd, plan.emptied | plan.to_user, fmt)
    plan.changes += kept_callers(messages, plan.drop) if fmt == "responses" else []  # caller-program-first
    plan.changes += kept_code_callers(fixed, messages, plan.origins) if fmt == "anthropic" else []
    fixed = settle(fixed, plan.origins, plan.changes) if fmt == "anthropic" else fixed  # results-alone-while-code-waits
    return fixed, settled_changes(settled, renumbered(plan.changes, kept), fixed)


def _planned(fmt: Format, policy: RepairPolicy, messages: Sequence[Mapping[str, Any]], doomed: Dropped) -> _Plan:
    """Every turn paired, knowing (a second pass) the blocks the first dropped: paired later (task 162)."""
    plan = _Plan(fmt, policy, messages, doomed)
    for segment in segments(messages, fmt, plan.roles):
        plan.pair(segment)
    after_their_calls(plan, plan.codes)  # once every call's drop is known (code-result-after-its-calls)
    home_strays(plan)  # once every chain's drop or move with its first response is known
    drop_paused(plan)
    return plan


class _Plan(Writer):
    """What to change where, decided turn by turn, then written out in one pass (:class:`Writer`)."""

    def __init__(self, fmt: Format, policy: RepairPolicy, messages: Sequence[Mapping[str, Any]], doomed: Dropped):
        self.start_writing(fmt, messages)
        self.policy, self.roles = policy, Roles()
        self.ids = IdAllocator(limit=ID_LIMIT.get(fmt))  # avoids the ids up to its turn's, no later: renames alike
        self.held = HeldIds(fmt, messages, self.ids)  # every id the messages up to a turn's last hold
        self.answered_last: dict[Paired, bool] = {}  # did the id's latest turn answer it? (names a drop)
        self.server_runs = ServerRuns(doomed)  # Anthropic, Converse: the server blocks paired so far, their runs' ids
        self.carried: dict[int, tuple[tuple[Entry, ...], int]] = {}  # the calls waited past, found dropped
        self.codes: list[tuple[Segment, dict[tuple[Paired, int], Entry], list[Entry]]] = []  # server results users sent

    def _change(self, kind: str, entry: Entry, detail: str, key: Key | None = None) -> None:
        self.changes.append(Change(kind, entry.message + 1, shown(entry.key if key is None else key), detail))
        for each in self.chains.get((entry.message, entry.slot), ()):  # what befell a response befell its chain
            self.changes.append(going_on(self.model, kind, each, detail))

    def pair(self, segment: Segment) -> None:
        self.held.in_turn, segment = set(), user_content_after(self, segment)
        self.held.upto(max(segment.end, *(e.message for e in (*segment.calls, *segment.results, *segment.beside))))
        for entry in (*segment.calls, *segment.results, *segment.beside):
            if isinstance(entry.key, str):
                self.ids.take(entry.key)
                self.held.in_turn.add(entry.key)
        calls_of = Counter((call.key, call.kind) for call in segment.calls)  # result-answers-its-kind
        collide = joined_server_ids(self, segment, self.server_runs)
        answer_of: dict[tuple[Paired, int], Entry] = {}
        answered: dict[Paired, int] = {}
        for result in segment.results:
            k = answered.get(pair := (result.key, result.kind), 0)
            if k < calls_of.get(pair, 0):
                answered[pair] = k + 1
                answer_of[(pair, k)] = result
            else:
                self._drop_result(result, second=pair in calls_of)
        seen, held = Counter[Key | Paired](), Counter[Key]()  # calls so far by id, id and kind; kept
        placeholders: list[dict[str, Any]] = []
        for call in segment.calls:
            seen.update((call.key, pair := (call.key, call.kind)))
            k, answer = seen[call.key] - 1, answer_of.get((pair, seen[pair] - 1))
            dropped = segment.server or (
                self.policy.dangling == "drop-call" and not signed(self.fmt, self.messages, call)
            )
            waits = answer is None and still_waits(self, segment)  # the server may still run it: it goes back
            self.paused += pauses(self, segment, call, self.carried) if waits else []  # see paused-call-last-only
            if answer is None and not waits and (dropped or self._type(call) == "computer_call"):
                self._edit(call, self.drop)
                if self.fmt == "responses":
                    self._drop_reasoning_before(call)
                why = (
                    ": a server tool's result comes from the provider alone; none can stand in"
                    if segment.server
                    else ""
                    if self.policy.dangling == "drop-call"
                    else ": its only output is a screenshot; none can stand in"
                )
                self._change("dropped-call", call, f"the call had no result{why}")
                continue
            if call.message in self.roles.calling:  # made in the user's role: the model's message makes it
                self.split.add(call.message)
                why = f"a call made in another role than the model's: moved into a message of role {CALLER[self.fmt]}"
                self._change("moved-misplaced-call", call, why)
            gone = (call.message, call.slot) in self.server_runs.doomed  # dropped later (paused): kept no id
            wire_id, before = self.held.usable(call.key, call.message), held[call.key]
            held[call.key] += not gone  # a call dropped holds no id: the next keeps it (dropped-call-frees-id)
            if (before or call.key in collide) and isinstance(call.key, str) and not gone:
                wire_id = self.held.usable(self.held.claim(call.key), call.message)
                self._rename(call, answer, wire_id)
                why = f"call {k + 1} under {call.key!r} in its turn" if before else collide[call.key]
                self._change("renamed-call", call, f"{why} is now {wire_id!r}")
                if answer is not None:
                    self._change("renamed-result", answer, f"the result that answered it now answers {wire_id!r}")
            elif wire_id != call.key:  # Converse refuses the id: both go as the next turn's builder maps it
                self._rename(call, answer, wire_id)
                why = f"Converse refuses the toolUseId {call.key!r}: it is now {wire_id!r}, as the next turn maps it"
                self._change("mapped-call", call, why)
                if answer is not None:
                    self._change("mapped-result", answer, f"the result that answered it now answers {wire_id!r}")
            if answer is None and not waits:
                placeholders.append(self._placeholder(wire_id, call))
                why = "no result answered the call: a placeholder does"
                if self.policy.dangling == "drop-call":
                    why += " (its part carries the thoughtSignature Gemini wants back on that part)"
                # Named by the id it answers: the call's own, or the one a rename just gave it.
                self._change("placeholder-result", call, why, wire_id)
        answers = {(entry.message, entry.slot) for entry in answer_of.values()}
        self.answered_last.update((pair, pair in answered) for pair in calls_of)
        moved = [result for result in segment.misplaced if (result.message, result.slot) in answers]
        for result in moved:
            if self.fmt in ("openai", "ollama"):  # the message is the result: it takes the tool role
                self.touched.add(result.message)
                self.retool.add(result.message)
                why = "a result sent in another role: it is now a tool message"
            else:
                self._edit(result, self.drop)
                why = f"a result in a message of the model's role ({MODEL_ROLE[self.fmt]}): moved to the next user turn"
                why = SERVER_WHY if segment.server else why
            self._change("moved-misplaced-result", result, why)
        if segment.held >= 0 and self.fmt not in MODEL_ROLE:
            self._carry(segment, answers)
        if segment.server:
            self.codes.append((segment, answer_of, moved))
        elif segment.held >= 0 and self.fmt in MODEL_ROLE:
            self._before_held(segment, moved, placeholders, answers)
        elif segment.misplaced and self.fmt in MODEL_ROLE:
            self._home(segment, moved, placeholders, answers)
        elif placeholders:
            self._place(segment, placeholders)
        for result in segment.late:  # a result a call waits for goes first in its turn's user messages
            spot = (result.message, result.slot)  # (unless it went up with those sent as the model: _home)
            if spot in answers and spot not in self.drop and not 0 <= segment.held < result.message:
                self._edit(result, self.drop)
                self.touched.add(segment.host)
                self.move_into.setdefault(segment.host, []).append(result)
                why = "a result after text in its turn's user messages: moved before the text, as the API takes it"
                self._change("moved-result", result, why)

    def _carry(self, segment: Segment, answers: Any) -> None:
        """OpenAI, Ollama: results sent after the user's text (``Segment.held``) go, as tool messages in order,
        right after the turn's calls and the results before the text (a set of the misplaced: no scans)."""
        anchor = self._before_text(segment)
        sent = {(entry.message, entry.slot) for entry in segment.misplaced}
        for result in segment.results:
            if result.message > segment.held and (result.message, result.slot) in answers:
                carried = self._edited(self.messages[result.message], result.message)
                assert carried is not None  # a result message kept: it is its own result
                self._edit(result, self.drop)
                self.add_after.setdefault(anchor, []).append(carried)
                if (result.message, result.slot) not in sent:
                    why = "a result after the user's text: moved before it, right after its turn's calls"
                    self._change("moved-result", result, why)

    def _before_text(self, segment: Segment) -> int:
        """The last message of a turn's calls and results before the user's text (``Segment.held``)."""
        before = [r.message for r in segment.results if r.message < segment.held]
        return max(before, default=segment.end if segment.end >= 0 else segment.calls[-1].message)

    def _home(self, segment: Segment, moved: list[Entry], placeholders: list[dict[str, Any]], answers: Any) -> None:
        """Where a turn whose results came in the model's role gets them, and its placeholders: the
        turn's first results message of the user (first in it, or after its results for those the
        model's message right after it sent); else (Anthropic) the user message right after them;
        else a new user message, after them (Anthropic, whose assistant run they end) or right after
        the calls' message (Gemini, Converse: the one message after it answers a turn, so when the
        model's message keeps more than results, the user's results after it go up too)."""
        sent = {(entry.message, entry.slot) for entry in segment.misplaced}
        proper = [r for r in segment.results if (r.message, r.slot) not in sent]
        first = segment.misplaced[0].message
        if self.fmt != "anthropic" and proper and first < proper[0].message and not left_empty(self, sent):
            for result in proper:
                if (result.message, result.slot) in answers:
                    self._edit(result, self.drop)
                    moved.append(result)
                    why = "the turn's results sent as the model go right after its calls: this one goes with them"
                    self._change("moved-result", result, why)
            moved.sort(key=lambda entry: (entry.message, entry.slot))  # in the order sent: the k-th rule pairs
            proper = []
        if not (moved or placeholders):
            return
        host = proper[0].message if proper else -1
        # Anthropic: a user run with text before its results (late) is one turn, its results first in it
        if self.fmt == "anthropic" and 0 <= segment.host < host:
            host = segment.host
        if host < 0 and self.fmt == "anthropic" and self._can_host(segment.misplaced_end + 1):
            host = segment.misplaced_end + 1
        if host >= 0 and self.fmt != "anthropic":  # (the host is the first of the user's results messages)
            self._in_order(sorted({result.message for result in proper}), moved, placeholders)
            return
        if host >= 0:  # those sent before its results go first, those the model sent after them after them
            self.touched.add(host)
            self.front_into.setdefault(host, []).extend(entry for entry in moved if entry.message < host)
            later = self.moved(entry for entry in moved if entry.message > host)
            self.add_into.setdefault(host, []).extend([*later, *placeholders])
            return
        after = segment.misplaced_end if self.fmt == "anthropic" else segment.misplaced[0].message - 1
        blocks = [*self.moved(moved), *placeholders]
        self.add_after.setdefault(after, []).append({"role": "user", FIELD[self.fmt]: blocks})

    def _before_held(
        self, segment: Segment, moved: list[Entry], placeholders: list[dict[str, Any]], answers: Any
    ) -> None:
        """Anthropic, Converse, Gemini: a turn's results sent after the user's text (``Segment.held``),
        in the model's role (``moved``) or the user's, go first into that user message, in the order
        sent, its placeholders after them, before the text; or (Gemini, Converse) when the user's
        message answering the turn came before the text, into it, after its results (but as :meth:`_home`
        writes them when the model's message sending some stays apart from the calls': :func:`kept_apart`)."""
        sent = {(entry.message, entry.slot) for entry in segment.misplaced}
        mine = {r.message for r in segment.results if r.message <= segment.held and (r.message, r.slot) not in sent}
        if mine and kept_apart(self, segment, min(mine)):
            self._home(segment, moved, placeholders, answers)
            return
        for result in segment.results:
            spot = (result.message, result.slot)
            if spot in answers and spot not in sent and result.message > segment.held:
                self._edit(result, self.drop)
                moved.append(result)
                self._change("moved-result", result, "a result after the user's text: moved before it, with its turn's")
        moved.sort(key=lambda entry: (entry.message, entry.slot))  # in the order sent: the k-th rule pairs
        if self.fmt != "anthropic" and mine:  # the user's own results messages before the text
            self._in_order(sorted(mine), moved, placeholders)
            return
        answer = max((r.message for r in segment.results if r.message <= segment.held), default=-1)  # before the text
        host = segment.held if answer < 0 else answer
        self.touched.add(host)
        self.front_into.setdefault(host, []).extend(moved if answer < 0 else ())  # else after the results it holds:
        self.add_into.setdefault(host, []).extend([*self.moved(moved if answer >= 0 else ()), *placeholders])

    def _in_order(self, at: list[int], moved: list[Entry], placeholders: list[dict[str, Any]]) -> None:
        """Gemini, Converse: the user's results messages of a turn (``at``, in order) merge into one,
        so each result ``moved`` goes after the user's results sent before it (first, before those
        of the first message, when none was), and the placeholders last: the k-th rule pairs in the
        order sent, which is how Gemini pairs calls that have no ids."""
        for entry in moved:
            before = bisect_left(at, entry.message)
            into = at[max(before - 1, 0)]
            self.touched.add(into)
            if before:
                self.add_into.setdefault(into, []).extend(self.moved([entry]))
            else:
                self.front_into.setdefault(into, []).append(entry)
        self.touched.add(at[-1])
        self.add_into.setdefault(at[-1], []).extend(placeholders)

    def _drop_reasoning_before(self, call: Entry) -> None:
        """The reasoning items right before a Responses call item that goes: the API pairs a reasoning
        item with the item that followed it, and refuses one sent without it (400)."""
        at = call.message - 1
        while at >= 0 and self.messages[at].get("type") == "reasoning":
            item = Entry(at, -1, call.key, None)
            self._edit(item, self.drop)
            self._change("dropped-reasoning", item, "the call item that followed it was dropped")
            at -= 1

    def _rename(self, call: Entry, answer: Entry | None, wire_id: Key) -> None:
        """Give ``call``, the result that answered it (if any) and its code's calls (as caller) the id ``wire_id``."""
        assert isinstance(wire_id, str)  # only a wire id is renamed or mapped
        self.ids.take(wire_id)
        for entry in (call, answer) if answer is not None else (call,):
            self._edit(entry, self.rename, wire_id)
        follow_renamed_code(self, call, answer, wire_id, self.server_runs)
        self.server_runs.renamed(self, call, wire_id)  # its run holds the new name (task 165)

    def _edit(self, entry: Entry, into: Any, value: str | None = None) -> None:
        """Drop, rename or move ``entry`` with the Gemini responses going on with it (:mod:`fsm.history.chains`)."""
        for each in chained(self.chains, [entry]):
            self.touched.add(each.message)
            if value is None:
                into.add((each.message, each.slot))
            else:
                into[(each.message, each.slot)] = value

    def _drop_result(self, result: Entry, second: bool) -> None:
        self._edit(result, self.drop)
        if second or self.answered_last.get((result.key, result.kind), False):
            self._change("dropped-duplicate-result", result, "a second result for a call already answered")
        else:
            self._change("dropped-orphan", result, "no call of its turn is waiting for this result")

    def _type(self, entry: Entry) -> Any:
        return self.messages[entry.message].get("type") if self.fmt == "responses" else None

    def _placeholder(self, wire_id: Key, call: Entry) -> dict[str, Any]:
        return placeholder(self.fmt, self._type(call), wire_id, call.name, self.policy.placeholder)

    def _place(self, segment: Segment, placeholders: list[dict[str, Any]]) -> None:
        """OpenAI: new tool messages after the turn's last one. Anthropic, Converse, Gemini: into the turn's
        results message, else the user message that follows if it holds no call or result (not a user message
        in a row), else a new user message after the calls (after an Anthropic run of assistant messages)."""
        call_message = segment.end if segment.end >= 0 else segment.calls[-1].message
        if self.fmt in ("openai", "ollama", "responses"):
            last = max((r.message for r in segment.results), default=segment.calls[-1].message)
            last = last if segment.held < 0 else self._before_text(segment)
            self.add_after.setdefault(last, []).extend(placeholders)
            return
        first = segment.results[0].message if segment.results else call_message + 1
        host = segment.host if segment.host >= 0 else first  # Anthropic: the first of the turn's user messages
        if self.fmt in ("gemini", "bedrock") and segment.results:
            # The user's results messages merge into one in their order: the placeholders go after the
            # last one's results (not after a text the late ones go before), as the k-th rule pairs
            late = {(entry.message, entry.slot) for entry in segment.late}
            host = max((r.message for r in segment.results if (r.message, r.slot) not in late), default=host)
        if not segment.results and not (self.fmt in (*ALTERNATING, "gemini") and self._can_host(host)):
            self.add_after[call_message] = [{"role": "user", FIELD[self.fmt]: placeholders}]
            return
        self.touched.add(host)
        self.add_into.setdefault(host, []).extend(placeholders)
