"""Walk every call id through the history machine (specs/history.toml); its actions record the findings."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fsm.engine.machine import SpecMachine
from fsm.engine.roles import action
from fsm.foreign import answers_callers
from fsm.history.chains import stray_findings
from fsm.history.code_waits import beside_waiting_code
from fsm.history.declined import declined_why, without_declined
from fsm.history.detect import Named, resolve_format
from fsm.history.empty import WHY as EMPTY_WHY
from fsm.history.empty import refused as refused_empty
from fsm.history.entries import Entry, Key, Paired, Roles, Segment
from fsm.history.findings import Finding, Format, Kind, Report, other_kinds_said
from fsm.history.formats import known_role, shown
from fsm.history.item_ids import duplicate_items
from fsm.history.placeholders import usable_id
from fsm.history.program_callers import code_callers, unknown_callers
from fsm.history.server_blocks import models_block
from fsm.history.turns import segments
from fsm.history.twins import CallIndex, Stretches, Twin, twin_calls
from fsm.spec import history_spec


class CallId:
    """One id's state in the conversation; ``state`` is written only by the history machine."""

    def __init__(self, key: str, findings: list[Finding]) -> None:
        self.key = key
        """The id as findings show it (``name#k`` for an id-less Gemini call)."""
        self.state = "unseen"
        """The history machine's state for this id."""
        self.findings = findings
        """The report's findings, shared by every id of the conversation."""
        self.call_message = -1
        """1-based position of the message that made the latest call under this id."""
        self.uses = 0
        """How many calls have used this id."""
        self.at = -1
        """1-based position of the message being read."""
        self.name: str | None = None
        """The tool name of the latest call under this id."""

    def covered(self, transition: str) -> None:
        """Transitions are not counted for history checks."""

    def _report(self, kind: Kind, detail: str, message: int | None = None) -> None:
        self.findings.append(Finding(kind, self.key, self.at if message is None else message, detail, self.name))

    @action
    def open_call(self, text: str) -> None:
        """A call under this id: remember where; a reuse after an answer is reported for information."""
        self.uses += 1
        if self.uses > 1:
            self._report(Kind.REUSED, f"id reused after its call (message {self.call_message}) was answered")
        self.call_message = self.at

    @action
    def report_duplicate_call(self, text: str) -> None:
        """A second call while the first is unanswered."""
        self._report(Kind.DUPLICATE_CALL, f"a second call while the one in message {self.call_message} is unanswered")
        self.uses += 1
        self.call_message = self.at

    @action
    def report_reuse_after_dangling(self, text: str) -> None:
        """A new call under an id whose earlier call never got its result."""
        self._report(Kind.REUSED_UNANSWERED, f"reused, but the call in message {self.call_message} was never answered")
        self.uses += 1
        self.call_message = self.at

    @action
    def answer(self, text: str) -> None:
        """The call has its result."""

    @action
    def report_duplicate_result(self, text: str) -> None:
        """A second result for a call already answered."""
        self._report(Kind.DUPLICATE_RESULT, f"the call in message {self.call_message} was already answered")

    @action
    def report_orphan(self, text: str) -> None:
        """A result no call is waiting for."""
        self._report(Kind.ORPHAN, "no call with this id is waiting for a result")

    @action
    def report_dangling(self, text: str) -> None:
        """The call's turn closed with no result: reported at the call's message."""
        self._report(Kind.DANGLING, "no result answered this call before its turn closed", self.call_message)


@functools.cache
def history_machine() -> SpecMachine:
    """The history machine, built from specs/history.toml with CallId as its model. Made once and
    shared by every :func:`check` and :func:`repair` (policy shared-machine): read it (its spec, its
    tables), never change it, or every later check walks the change."""
    return SpecMachine(history_spec(), CallId)


@answers_callers
def check(messages: Sequence[Mapping[str, Any]], format: Named = "auto") -> Report:
    """Walk every call id through the history machine; report what a strict provider would refuse.
    Findings name messages by 1-based position. Malformed input raises LocalProtocolError. A
    ``format`` of None is ``"auto"`` (a report's format passed back: unjudged-says-no-format)."""
    messages, fmt = resolve_format(messages, format)
    if fmt is None:  # format "auto", and no message tells one: nothing to pair or judge (auto-by-tool-content)
        return Report(None, ())  # judged by no format's rules, it names none (unjudged-says-no-format)
    machine = history_machine()
    findings: list[Finding] = []
    ids: dict[Paired, CallId] = {}  # a Responses id's calls of each kind apart (result-answers-its-kind)
    kinds: dict[Key, set[str | None]] = {}

    def walk(entry: Entry, trigger: str) -> CallId:
        call = ids.get(pair := (entry.key, entry.kind))
        if call is None:
            call = ids[pair] = CallId(shown(entry.key), findings)
            kinds.setdefault(entry.key, set()).add(entry.kind)
        call.at = entry.message + 1
        if trigger == "call" and len(kinds[entry.key]) > 1:  # one id for calls of two kinds at once is one too many
            _other_kinds(ids, kinds[entry.key], entry, call)
        if usable_id(fmt, entry.key) != entry.key:
            why = "Converse takes a toolUseId of 1 to 64 of [a-zA-Z0-9_.:-]; repair maps it as the next turn does"
            findings.append(Finding(Kind.UNUSABLE_ID, call.key, call.at, why, entry.name))
        if trigger == "call":
            call.name = entry.name
        machine.fire(call, trigger)
        return call

    roles = Roles()
    told: dict[tuple[int, int], set[Kind]] = {}
    repeated = _among(duplicate_items(messages), unknown_callers(messages)) if fmt == "responses" else []
    if fmt == "anthropic":
        sent = messages  # as the caller sent it: where code_callers names a block
        messages, declined = without_declined(messages)  # read as it goes back (policy fallback-declined-calls)
        repeated = [
            Finding(Kind.RESULTS_BESIDE_TEXT, "", at + 1, CODE_WAITS_WHY) for at in beside_waiting_code(messages)
        ]
        left_out = [
            Finding(Kind.DECLINED_CONTENT, call, at + 1, declined_why(said), name) for at, call, said, name in declined
        ]
        repeated = sorted([*left_out, *repeated, *code_callers(messages, sent)], key=lambda found: found.message)
    in_run = functools.partial(_in_claudes_run, messages, roles)  # (roles fill in as the segments are read)
    index = CallIndex(messages if fmt == "anthropic" else ())  # each id's calls, read once (not once a turn)
    stretches = Stretches()  # the runs' stretches walked so far: each turn steps over them (task 157)
    walked = set[tuple[int, int]]()  # each call walked, by its place: message and slot (tasks 165, 167)
    for segment in segments(messages, fmt, roles):
        _odd_roles(roles, findings, fmt)
        twins = _twins(messages, segment, index, in_run, stretches) if fmt == "anthropic" else ({}, range(0))
        made = [_walk_call(walk, ids, findings, entry, twins, walked) for entry in segment.calls]
        for entry in segment.calls:
            if entry.message in roles.calling:
                why = f"a call made in a {messages[entry.message].get('role')} message: only the model's makes calls"
                findings.append(Finding(Kind.MISPLACED_CALL, shown(entry.key), entry.message + 1, why, entry.name))
        late = {(entry.message, entry.slot) for entry in segment.late}
        calls_of, extra = Counter((entry.key, entry.kind) for entry in segment.calls), Counter[Paired]()
        moved = {(entry.message, entry.slot) for entry in segment.misplaced}
        for entry in segment.results:
            waiting = (pair := (entry.key, entry.kind)) in ids and ids[pair].state == "outstanding"
            start = len(findings)
            walk(entry, "result")
            spot = (entry.message, entry.slot)
            past = spot not in moved and 0 <= segment.held < entry.message  # sent as results are, past the text
            beside = entry.message in roles.mixed  # Gemini: text in its content is results-beside-text, once
            if waiting and ((spot in late and not beside) or past):  # one answering nothing is reported as such
                why = PAST_TEXT_WHY if past else LATE_WHY
                findings.append(Finding(Kind.RESULT_AFTER_TEXT, shown(entry.key), entry.message + 1, why, entry.name))
            called = segment.server and entry.message in roles.calling  # server-blocks-are-the-models
            if waiting and (spot in moved or called):
                why = SERVER_RESULT_WHY if segment.server else MISPLACED_WHY[fmt]
                if 0 <= segment.held < entry.message:
                    why += "; sent after the user's text, it still answers the calls before that text"
                findings.append(Finding(Kind.MISPLACED_RESULT, shown(entry.key), entry.message + 1, why, entry.name))
            said = told[spot] = {found.kind for found in findings[start:]}  # a chain's befalls it whole
            extra[pair] += 1  # the k-th result under an id: dropped as a second only past the turn's calls of it
            said -= {Kind.DUPLICATE_RESULT} if extra[pair] <= calls_of[pair] else set()  # (else renamed)
        for call in dict.fromkeys(made):  # the turn is over: each of its ids once, in call order
            if call.state == "outstanding":  # (a paused server call waits for the server alone)
                machine.fire(call, "pause" if segment.open_end else "close_turn")
        # An id-less Gemini call's key is its name and place within its own turn: the next turn's
        # `f#1` is another call, not this one's id used again.
        for entry in (*segment.calls, *segment.results):
            if not isinstance(entry.key, str):
                ids.pop((entry.key, entry.kind), None)
    _odd_roles(roles, findings, fmt)
    if fmt == "gemini":  # a chain's response the model's content holds (chain-response-in-the-model-content)
        repeated = sorted(stray_findings(messages, roles.chains, told), key=lambda found: found.message)
    return Report(fmt, tuple(_among(findings, repeated) if repeated else findings))


def _walk_call(
    walk: Callable[[Entry, str], CallId],
    ids: dict[Paired, CallId],
    findings: list[Finding],
    entry: Entry,
    twins: tuple[dict[Key, Twin], range],
    walked: set[tuple[int, int]],
) -> CallId:
    """Walk a call. A turn's first call under an id a call of the other kind in its run has too (its twin, policy
    client-and-server-call-one-id) is one ``duplicate-call`` with it, as repair renames one: walked after the twin
    was answered (known by place: another turn's call under the id may be walked between, task 167), no ``reused``,
    at the later of them; a twin coming later but walked first (a later message's server call, its turn read whole
    before this one's results; a client call before a code paired late), waiting or unanswered, at the twin."""
    previous = before.call_message - 1 if (before := ids.get((entry.key, entry.kind))) is not None else -1
    start, call = len(findings), walk(entry, "call")
    walked.add((entry.message, entry.slot))
    twin = twins[0].pop(entry.key, None)
    said = [found.kind for found in findings[start:]]
    after = twin is not None and (twin[1], twin[3]) in walked
    if twin is not None and (previous in twins[1] or after) and Kind.REUSED in said:  # its twin walked, answered
        del findings[start + said.index(Kind.REUSED)]
        at, name = (entry.message, entry.name) if twin[0] else twin[1:3]
        findings.append(Finding(Kind.DUPLICATE_CALL, call.key, at + 1, TWIN_WHY, name))
    elif twin is not None and not twin[0] and previous == twin[1] and {*said} & AHEAD:
        found = next(at for at, kind in enumerate(said) if kind in AHEAD)
        findings[start + found] = Finding(Kind.DUPLICATE_CALL, call.key, twin[1] + 1, TWIN_WHY, twin[2])
    return call


def _twins(
    messages: Sequence[Mapping[str, Any]],
    segment: Segment,
    index: CallIndex,
    in_run: Callable[[int], bool],
    stretches: Stretches,
) -> tuple[dict[Key, Twin], range]:
    """``twin_calls`` of ``segment``, stepping over the stretches of its run found before and noting those it finds:
    a message read in Claude's run only turns from no to yes as segments are read, so a stretch found stays one."""
    down = lambda at: stretches.down(at, index.back[at])  # noqa: E731
    up = lambda at: stretches.up(at, index.on[at])  # noqa: E731
    twins = twin_calls(messages, segment, index, in_run, down=down, up=up)
    if twins[1]:  # the turn's first call's message need not be read in its run: those around it are
        first = segment.calls[0].message
        stretches.note(twins[1].start, first - 1)
        stretches.note(first + 1, twins[1].stop - 1)
    return twins


def _other_kinds(ids: dict[Paired, CallId], kinds: set[str | None], entry: Entry, call: CallId) -> None:
    """A Responses call under an id calls of other kinds used: a duplicate, or a reuse (result-answers-its-kind)."""
    others = [(ids[(entry.key, kind)], kind) for kind in kinds - {entry.kind}]
    if said := other_kinds_said(others, call.state == "unseen"):
        call.findings.append(Finding(said[0], call.key, call.at, said[1], entry.name))


def _in_claudes_run(messages: Sequence[Mapping[str, Any]], roles: Roles, at: int) -> bool:
    """Is Anthropic message ``at`` read in the run of Claude's messages around it, as repair writes it
    (``client-and-server-call-one-id``)? An assistant message; one that came empty (read as gone); one
    making calls in the user's role (read as the model's); one of a role Anthropic lacks holding no call,
    result or server block (``unknown-role-between``: read as absent)."""
    message = messages[at]
    if (
        message.get("role") == "assistant"
        or at in roles.calling
        or refused_empty("anthropic", message, at, len(messages))
    ):
        return True
    if known_role("anthropic", message.get("role")):
        return False  # (asked before its blocks are read: a user message of many results bounds many runs)
    content = message.get("content")
    blocks = [block for block in (content if isinstance(content, list) else ()) if isinstance(block, Mapping)]
    return not any(block.get("type") == "tool_result" or models_block(block) for block in blocks)


AHEAD = frozenset({Kind.DUPLICATE_CALL, Kind.REUSED_UNANSWERED})
"""What the machine says of a call made while its id's call walked before it waits, or went unanswered."""

TWIN_WHY = (
    "a client tool_use and a server call under one id in one assistant turn: the API refuses it (tool_use ids"
    " must be unique) whatever their kinds; repair renames the later one"
)
"""What a ``duplicate-call`` finding says of a client call and a server call sharing an id in one run."""


def _among(findings: list[Finding], repeated: list[Finding]) -> list[Finding]:
    """The findings with each of ``repeated`` (in message order) before the first that came later."""
    merged, at = [], 0
    for found in findings:
        while at < len(repeated) and repeated[at].message < found.message:
            merged.append(repeated[at])
            at += 1
        merged.append(found)
    return merged + repeated[at:]


LATE_WHY = "a tool result after text in its turn's user messages: the API takes a turn's results first"
"""What a ``result-after-text`` finding says of an Anthropic result after text in its turn's user messages."""

PAST_TEXT_WHY = (
    "a tool result after the user's text that followed its call, before the model's next turn:"
    " it still answers the call, but the API takes results right after the calls"
)
"""What a ``result-after-text`` finding says of a result sent as results are, after a user message of
text alone that came between its call and it (``Segment.held``)."""

MISPLACED_WHY = {
    "openai": "a tool result sent as another role than tool: the API takes one from a tool message alone",
    "ollama": "a tool result sent as another role than tool: /api/chat reads a tool_name in a tool message alone",
    "anthropic": "a tool_result block in an assistant message: the API takes results from the next user turn",
    "bedrock": "a toolResult block in an assistant message: Converse takes results from the next user message",
    "gemini": "a functionResponse in a model content: Gemini takes responses from the user content after the calls",
}
"""What a ``misplaced-result`` finding says, per format that can have one."""

AFTER_ITSELF_WHY = {
    ("bedrock", "user"): (
        "a user message right after another: Converse wants user and assistant to alternate"
        " (ValidationException); repair merges them into one"
    ),
    ("bedrock", "assistant"): (
        "an assistant message right after another: Converse wants user and assistant to alternate"
        " (ValidationException); repair merges them into one, its calls one turn"
    ),
    ("gemini", "user"): (
        "a user content right after another: Gemini wants user and model to alternate (400), and a"
        " turn's function responses in one content; repair merges them into one (but responses and"
        " other parts, which get a placeholder model content between them)"
    ),
    ("gemini", "model"): (
        "a model content right after another: Gemini wants user and model to alternate (400; function calls"
        " must come right after a user content or a turn's responses); repair merges them into one, its"
        " calls one turn"
    ),
}
"""What a ``user-after-user`` or ``assistant-after-assistant`` finding says, per format and role."""

BESIDE_WHY = (
    "a user content holding function responses and other parts: Gemini wants a turn's responses alone in"
    " theirs (else an empty answer, or a 400); repair gives the other parts a user content of their own,"
    " after a placeholder model content"
)
"""What a ``results-beside-text`` finding says."""

AFTER_ITSELF = {
    "user": Kind.USER_AFTER_USER,
    "assistant": Kind.ASSISTANT_AFTER_ASSISTANT,
    "model": Kind.ASSISTANT_AFTER_ASSISTANT,
}

CODE_WAITS_WHY = (
    "a user message sending the results of calls Claude's code execution made while the code waits"
    " (programmatic tool calling) holds other content, or is followed by more of the user's: the API takes"
    " only tool_result blocks there; repair moves that content after Claude's next message"
)
"""What a ``results-beside-text`` finding says of an Anthropic user message answering waiting code."""

SERVER_RESULT_WHY = (
    "a server tool's result block in a user message: the API takes it from Claude's own message, after its call"
)
"""What a ``misplaced-result`` finding says of an Anthropic server tool's result a user message holds."""


def _odd_roles(roles: Roles, findings: list[Finding], fmt: Format) -> None:
    """Report the messages read so far whose role their format lacks (``unknown-role``), and the
    messages right after another of their role where the format wants the roles to alternate
    (``user-after-user``, ``assistant-after-assistant``), the Gemini user contents holding function
    responses beside other parts (``results-beside-text``) and the messages empty as given that their
    format refuses (``empty-message``), then forget them."""
    found = [Finding(AFTER_ITSELF[role], "", at + 1, AFTER_ITSELF_WHY[fmt, role]) for at, role in roles.repeated]
    found += [Finding(Kind.RESULTS_BESIDE_TEXT, "", at + 1, BESIDE_WHY) for at in roles.beside]
    found += [Finding(Kind.EMPTY_MESSAGE, "", at + 1, EMPTY_WHY[fmt]) for at in roles.empty]
    findings.extend(sorted(found, key=lambda finding: finding.message))  # in the order the messages were read
    roles.repeated.clear()
    roles.beside.clear()
    roles.empty.clear()
    odd_roles = roles.odd
    for at, role in odd_roles:
        what = f"the role {role!r}" if isinstance(role, str) else f"a role of type {type(role).__name__}"
        why = f"{what} is not one {fmt} messages have"
        if fmt == "gemini" and role == "function":
            why += ": Gemini takes function responses from a user content (repair makes one of it)"
        findings.append(Finding(Kind.UNKNOWN_ROLE, "", at + 1, why))
    odd_roles.clear()


@answers_callers
def anything_dangling(messages: Sequence[Mapping[str, Any]]) -> bool:
    """Is any call in this history unanswered, or any result unmatched? Ask this, not whether an
    error message mentions 400, before deciding to repair history: good turns stay untouched.

    Answered by the pairing :func:`~fsm.history.repair` keeps (the k-th result with an id answers
    the k-th call with it, within a turn), not by the check's findings: a second call under an id
    is a duplicate call there whether or not a result answers it, and a second result for it is a
    duplicate result whether or not it has a call to answer."""
    messages, fmt = resolve_format(messages, "auto")
    if fmt is None:  # no message tells a format: it holds no call or result (auto-by-tool-content)
        return False
    if fmt == "anthropic":  # a declined model's call goes back unanswered by nothing (policy fallback-declined-calls)
        messages = without_declined(messages)[0]
    for segment in segments(messages, fmt):
        calls = Counter((entry.key, entry.kind) for entry in segment.calls)
        results = Counter((entry.key, entry.kind) for entry in segment.results)
        if results - calls if segment.open_end else calls != results:  # open: its calls may still wait
            return True
    return False
