"""A history's calls and results (read by :class:`fsm.history.formats.Reader`) grouped in turns.

A turn is the message that makes calls and the results that come back for it: for OpenAI and
Ollama, every ``tool`` message right after it; for Gemini and Converse, the one message right after
it, if that message holds results (and the user's after it, below); for Responses, a run of call
items (with the reasoning and assistant messages among them) and the run of output items after it
(:mod:`fsm.history.responses_turns`).
A message holding results read outside any turn gives a stray segment (its results answer nothing).

Anthropic combines consecutive messages of one role into one turn (its Messages API says so), so
there a run of assistant messages makes a turn's calls and the run of user messages after it holds
their results: a turn continued after ``pause_turn`` and kept as a second assistant message, its
server call in the first and the result in the second, is one turn, as are results sent in two
user messages. A run stops where a message would answer calls the run made, or make calls after
results it holds: no turn both makes calls and answers them. The API takes a turn's results first
in it: a result after text in the user messages (in one message or across them) is ``late``, which
the check reports and repair moves before the text.

A result sent in the model's role (``misplaced``: an assistant message's, a Gemini model content's)
answers the turn it follows as any result would, and is reported; the turn goes on past such a
unit into the user's results after it, so results split between the two stay one turn's; and a
turn the user answered takes the results of the model's unit right after (then it is over). An
Anthropic user message making calls is read as the assistant message repair moves them into, and
one of a role the format lacks as the model's (only the model makes calls). The user's text alone
(units of the user's holding no call, result or server block) after a turn's calls, before any
result of the user's (OpenAI, Ollama: before any sent in the model's role), leaves the turn open
for the unit after it: when that holds results, in the model's role or the user's, they answer the
calls (``Segment.held``; repair moves them before the text), else the turn is over: results after
the model's next message answer nothing. Gemini and Converse: the user's text after the message
answering a turn (or in it) leaves the turn open the same way: the user's results next answer the
calls still waiting (``Segment.held``; repair moves them into that message, after its results); and
the user's results in a row answer the turn (repair merges the messages: user after user is
``user-after-user``, which both APIs refuse; Gemini's responses and the user's other parts it writes
apart: ``results-beside-text``). Like Anthropic's, their results go first in the
message answering a turn: a result after text there (or after the text of a message of them in a
row) is ``late``, reported and moved before it. A Converse or Gemini run of the model's messages is
one turn (``assistant-after-assistant``: repair merges them), its calls answered by the user's message
after it; a Gemini content without a role is read as the user's, or as the model's when it makes calls
(``roleless-as-user``, see :func:`~fsm.history.formats.read_role`). A message of a role its format
lacks that holds no call, result or server block (``unknown-role``, kept by repair for the caller to
name) is read as if it were absent (policy ``unknown-role-between``): it ends no turn, the results
after it answering the calls before it, and parts no Anthropic run, so the assistant messages either
side of it are one turn's, as the user's are (only the caller knows the role meant; read so, what
repair writes around it reads the same once it is written). One that came empty (``empty-message``)
is read as gone.

An Anthropic user's run right after an assistant run making server calls may send a server tool's
result back: it answers those calls with the server blocks of that run (``misplaced``, see
:mod:`fsm.history.server_blocks`), and is no text before the client results after it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from fsm.history.empty import refused as refused_empty
from fsm.history.entries import Entry, Key, Roles, Segment
from fsm.history.findings import Format
from fsm.history.formats import ALTERNATE, MODEL_ROLE, Reader, gemini_payload, items, known_role, read_role
from fsm.history.responses_turns import responses_segments
from fsm.history.server_blocks import Waiting, converse_payload, in_order, is_server_result, models_block


def segments(messages: Sequence[Mapping[str, Any]], fmt: Format, roles: Roles | None = None) -> Iterator[Segment]:
    """The conversation as turns and stray results, in order, each yielded once it is whole. A
    generator, so a long history's entries die young instead of piling up for the garbage collector.
    What the messages' roles say is noted in ``roles`` as each is read."""
    if fmt == "responses":
        yield from responses_segments(messages, roles)
        return
    taking: Segment | None = None  # the turn whose results may still come
    moved: list[Entry] = []  # the turn's results sent in the model's role (misplaced-result)
    moved_end = -1
    answered = False  # the user's results came: the model's unit right after goes on the turn if it holds results
    held = -1  # the user's text came after the calls, none of their results yet: the unit after may send them
    left = False  # a user message of the calls' unit leaves content after it (user-content-after-the-run)
    # Gemini, Converse: the user's text came after the turn's answer (its first message, or the answer's
    # own when it holds text too): the user's results next still answer the calls (``Segment.held``).
    after, after_answer = -1, fmt in ("gemini", "bedrock")
    # The server blocks of the unit read last, out once the next is read: the user's may send their results.
    pending: _Pending = ([], -1, [], False, False, None, "")
    waiting = Waiting(fmt)  # server calls waiting past the client results of their message's calls
    for last, results, calls, served, late, misplaced, said, users, leaves in _units(messages, fmt, roles):
        if users and pending[1] >= 0:
            served = _answer_server_calls(pending, served, waiting)
        yield from _served(pending, False, waiting)  # a unit came after it
        taking = waiting.carry(taking, pending[1])
        pending = ([], -1, [], False, False, None, "")
        # results sent in the model's role go after the model's run they are in, or first in the user's text before
        # (or in what a user message of the calls' run leaves after it: user-content-after-the-run)
        goes = ("text" if (held >= 0 or left) and taking is not None else "run") if misplaced else ""
        if held >= 0 and taking is not None:
            if said >= 0:
                continue  # more of the user's text: the turn still waits for the unit after it
            if results is not None:  # the turn goes on past the user's text, whatever role sent them
                taking = taking._replace(held=held)
            else:
                yield _with(taking, moved, moved_end, fmt)
                taking, moved = None, []
            held = -1
        if answered and after_answer and taking is not None:
            if said >= 0:  # the user's text after the turn's answer: results next still answer its calls
                after = said if after < 0 or after == taking.results[-1].message else after
                continue
            if after >= 0 and results is not None and not misplaced:  # they do: the answer takes them, and
                taking = taking._replace(held=after if taking.held < 0 else taking.held)  # those of the user's
                taking.results.extend(results)  # messages after them too, up to the model's next message
                pending = (served, last, calls, leaves, users, results, goes)
                continue
            if after < 0 and results is not None and not misplaced:  # the user's, in a row: they answer the turn,
                if late is not None:  # in one message once repair merges them; those after its text go before it
                    taking = taking._replace(late=late[1], host=late[0])
                taking.results.extend(results)
                after = last if _texted(messages[last], fmt, last) else -1
                pending = (served, last, calls, leaves, users, results, goes)
                continue
            if after >= 0 and after != taking.results[-1].message:  # the model's results after text: the turn is over
                yield _with(taking, moved, moved_end, fmt)
                taking, moved, answered = None, [], False
            after = -1
        if answered and taking is not None and not (results is not None and misplaced):
            yield _with(taking, moved, moved_end, fmt)
            taking, moved, answered = None, [], False
        if taking is not None and results is not None:
            taking.results.extend(results)
            if misplaced:
                moved.extend(results)
                moved_end = last
            if late is not None:
                taking = taking._replace(late=late[1], host=late[0])
            # Anthropic, Gemini and Converse answer a turn in one unit; but a turn whose results were
            # sent in the model's role goes on into the user's results after them, and one answered
            # by the user takes the results the model's unit right after sends (then it is over).
            if fmt in ("openai", "ollama"):
                pass
            elif answered or (not misplaced and any(chunk.calls or chunk.results for chunk in served)):
                yield _with(taking, moved, moved_end, fmt)
                taking, moved, answered = None, [], False
            elif not misplaced:
                answered = True
                after = last if after_answer and _texted(messages[last], fmt, last) else -1
        elif taking is not None and said >= 0 and not (answered or moved):
            held = said if taking.held < 0 else taking.held  # the turn waits on: results next still answer it
            continue
        elif taking is not None:
            yield _with(taking, moved, moved_end, fmt)
            taking, moved = None, []
        elif results is not None:
            yield _with(Segment([], results), results if misplaced else [], last)
        pending = (served, last, calls, leaves, users, results, goes)
        if calls:
            taking, left = Segment(calls, [], end=last), leaves
    yield from _served(pending, True, waiting)  # the last: what follows is empty or absent (unknown-role-between)
    taking = waiting.carry(taking, pending[1])
    if taking is not None:
        yield _with(taking, moved, moved_end, fmt)
    yield from waiting.over(open_end=True)  # where the history ends, the server may still run them (after the
    # calls beside them: repair keeps them only while it keeps one of those, see after_run.still_waits)


def _texted(message: Mapping[str, Any], fmt: Format, at: int) -> bool:
    """Does a Gemini or Converse message hold a part or block that is neither a call nor a result (text)?"""
    if fmt == "gemini":
        return any(
            gemini_payload(p, "result") is None and gemini_payload(p, "call") is None for p in items(message, fmt, at)
        )
    return any(converse_payload(block) is None for block in items(message, fmt, at))


def _answer_server_calls(unit: _Pending, served: list[Segment], waiting: Waiting) -> list[Segment]:
    """Anthropic: the server tools' results a user's unit sends (``misplaced``: the API takes one from the
    model's message, right after its call) go with the server blocks of the model's run before (``unit``),
    which they answer, or which answers the code's wait (:meth:`Waiting.answer_later`); its own, without them."""
    if not any(chunk.calls for chunk in unit[0]):
        return served if unit[4] else waiting.answer_later(unit[0], served)
    if sent := [result for chunk in served for result in chunk.results]:
        unit[0][-1] = unit[0][-1]._replace(results=[*unit[0][-1].results, *sent], misplaced=tuple(sent))
    return [chunk._replace(results=[]) for chunk in served]


_Pending = tuple[list[Segment], int, list[Entry], bool, bool, list[Entry] | None, str]
"""A unit read, its server blocks out once the next is read: what ``_served`` reads."""


def _served(unit: _Pending, ends: bool, waiting: Waiting) -> Iterator[Segment]:
    """A unit's server blocks, a segment each (and one of the results placed before their calls);
    the server calls waiting past the client results before it first, which it may answer
    (``server-call-waits-across-results``). An empty unit (the user's text alone) is none. ``ends``: the last."""
    served, last, calls, leaves, users, results, goes = unit
    if last < 0:
        return
    if goes == "text":  # (they answer as the user's message they go to, the model's message after them)
        yield from waiting.meet([], results, True, [])
        results = None
    yield from waiting.meet(served, results, users, calls, goes == "run", ends)
    for n, chunk in enumerate(served, 1):
        if not (chunk.calls or chunk.results):
            continue
        early, chunk = in_order(chunk)
        if early:
            yield Segment([], early, server=True)
        # A unit that makes client calls is followed by their results, one a user message in it leaves
        # content after (user-content-after-the-run) by that content: its server calls cannot wait
        # in the last message; the model's own wait past those results instead.
        open_end = n == len(served) and ends and not calls and not leaves
        chunk = chunk._replace(open_end=open_end, beside=tuple(calls), end=last)
        if not (n == len(served) and calls and not users and waiting.hold(chunk)):
            yield chunk


def _with(turn: Segment, moved: list[Entry], end: int, fmt: Format | None = None) -> Segment:
    """The whole turn, with the results of it sent in the model's role, if any."""
    if fmt == "gemini":
        _answer_by_name(turn)
    return turn._replace(misplaced=tuple(moved), misplaced_end=end) if moved else turn


_Unit = tuple[
    int, list[Entry] | None, list[Entry], list[Segment], tuple[int, tuple[Entry, ...]] | None, bool, int, bool, bool
]


def _units(messages: Sequence[Mapping[str, Any]], fmt: Format, roles: Roles | None = None) -> Iterator[_Unit]:
    """The history read a unit at a time: a message, or for Anthropic a run of messages of one role
    (see the module's docstring). Each unit as its last message's position, the results it holds
    (None: no results message), the calls it makes, its server blocks (a segment each, see
    :meth:`_Run.add`), its results after text with the position of its first message (None: no
    result comes after text), whether its results were sent in the model's role, and, when it is
    the user's text alone (no call, no result, no server block), the position of its first message
    (else -1), whether it is an Anthropic run of the user's (a server tool's result there was
    sent in the wrong role), and whether a user message read in it leaves content of the user's after
    it (``user-content-after-the-run``). A message of a role its format lacks holding no call, result or server
    block is in no unit (``unknown-role-between``): it stands between no
    calls and their results, and parts no Anthropic run (elsewhere it still ends the model's run,
    which repair merges only when nothing stands between)."""
    reader = Reader(fmt)
    if roles is not None:
        reader.roles = roles
    joins = fmt == "anthropic"
    run: _Run | None = None
    for at, message in enumerate(messages):
        if refused_empty(fmt, message, at, len(messages)):  # read as if gone, as repair leaves it (empty-message)
            reader.roles.empty[at] = None
            continue
        results, calls = reader.read(message, at)
        served = reader.served
        odd = not known_role(fmt, message.get("role"))
        if odd and results is None and not (calls or served.calls or served.results):
            if run is not None and not joins:  # unknown-role-between: it still ends a Converse or Gemini model run
                yield run.unit()
                run = None
            continue
        # a user message making calls is read as the model message repair moves them into; one of a
        # role the format lacks as the model's (kept as it is: only the model makes calls). One holding
        # Claude's server calls beside the user's results is read as repair writes it: the user's message
        # answering the turn, then the model's of its server blocks (server-blocks-are-the-models).
        role = read_role(fmt, message, bool(calls))
        parts = [(role, results, served)]
        if at in reader.roles.calling and results is not None:
            parts = [(role, results, Segment([], [], server=True)), ("assistant", None, served)]
        elif at in reader.roles.calling or (joins and calls and not known_role(fmt, role)):
            parts = [("assistant", results, served)]
        # its server calls are calls too: it goes on no run holding results, as one making client calls
        made = [*calls, *served.calls] if at in reader.roles.calling else calls
        for role, results, served in parts:
            if run is not None:
                if (joins or run.joins_assistant(message, results, calls)) and run.takes(role, results, made):
                    run.add(message, at, results, calls, served)
                    continue
                yield run.unit()
            run = _Run(message, role, at, results, calls, served, joins, fmt)
            run.misplaced = reader.misplaced
            run.odd = odd
    if run is not None:
        yield run.unit()


class _Run:
    """A unit: one message, or Anthropic's messages of one role in a row, read as the one turn the
    API makes of them, with the results that come after text in it (``late``: the API takes a turn's
    results first)."""

    def __init__(
        self,
        message: Mapping[str, Any],
        role: Any,
        at: int,
        results: list[Entry] | None,
        calls: list[Entry],
        served: Segment,
        ordered: bool,
        fmt: Format = "anthropic",
    ) -> None:
        self.role, self.first = role, at
        self.last, self.results, self.calls = at, None if results is None else [*results], [*calls]
        self.served = [Segment([*served.calls], [*served.results], server=True)]
        self.texted = False  # text (or any block but a result) came in the run: results after it are late
        self.late: list[Entry] = []
        self.misplaced = False  # its results were sent in the model's role (one role: all of them, or none)
        self.odd = False  # its role is none its format has
        self.made = bool(calls or served.calls)  # a call came in the run
        self.leaves = False  # a user message after its first call leaves content of the user's after it
        self.ordered = ordered  # Anthropic's
        self.fmt = fmt
        # Where the model may not send twice in a row (Converse, Gemini), a run of its messages is one turn once
        # repair merges them (assistant-after-assistant); a user's message, its calls read as the model's, is none
        self.model_run = MODEL_ROLE.get(fmt) in ALTERNATE.get(fmt, ()) and self._model(message, calls, results)
        if ordered or fmt in ("gemini", "bedrock"):  # Gemini and Converse, like Anthropic, take results first
            self._order(message, at, results)

    def joins_assistant(self, message: Mapping[str, Any], results: list[Entry] | None, calls: list[Entry]) -> bool:
        """Converse, Gemini: does this message of the model's go on the run of the model's messages
        before it? Both as given (not a user's calls read as the model's), neither holding results
        (sent in the model's role, they go to the user's message: see ``misplaced``)."""
        return self.model_run and self._model(message, calls, results)

    def _model(self, message: Mapping[str, Any], calls: list[Entry], results: list[Entry] | None) -> bool:
        return read_role(self.fmt, message, bool(calls)) == MODEL_ROLE[self.fmt] and results is None

    def takes(self, role: Any, results: list[Entry] | None, calls: list[Entry]) -> bool:
        """Does a message of ``role`` go on this run? Of its role, and neither answering calls the run made
        nor making calls after results it holds."""
        if role != self.role or (self.calls and results is not None):
            return False
        return not (self.results is not None and calls)

    def add(
        self, message: Mapping[str, Any], at: int, results: list[Entry] | None, calls: list[Entry], served: Segment
    ) -> None:
        if results is not None:
            if self.results is None:
                self.results = [*results]
            else:
                self.results.extend(results)
        self.last = at
        self.calls += calls
        if self.ordered and self.made and message.get("role") == "user":  # its calls read as the model's
            self.leaves = self.leaves or not all(models_block(block) for block in items(message, self.fmt, at))
        self.made = self.made or bool(calls or served.calls)
        # The API combines the run in one turn: a server call under an id one before it in the run
        # has is a second call under it, renamed as within one message (its result with it).
        self.served[-1].calls.extend(served.calls)
        self.served[-1].results.extend(served.results)
        if self.ordered:
            self._order(message, at, results)

    def _order(self, message: Mapping[str, Any], at: int, results: list[Entry] | None) -> None:
        if isinstance(message.get("content"), str):  # text alone: no result can follow it in this message
            self.texted = self.texted or bool(message["content"])
            return
        by_slot = {entry.slot: entry for entry in results or ()}
        for slot, item in enumerate(items(message, self.fmt, at)):
            entry = by_slot.get(slot)
            if entry is not None:
                self.late += (entry,) if self.texted else ()
            elif self.fmt == "bedrock" and "cachePoint" in item:
                pass  # a cache checkpoint marks where a prefix ends: it is no text
            elif self.fmt == "gemini" and gemini_payload(item, "result"):
                pass  # a response going on with one before it (policy will-continue-responses): no text
            elif not (
                self.role == "user" and (models_block(item) if self.ordered else is_server_result(item.get("type")))
            ):
                self.texted = True  # a server block the user sent is no text: it goes to its call, or the model

    def unit(self) -> _Unit:
        # results sent as the assistant all move to the user turn: none is late there
        late = (self.first, tuple(self.late)) if self.late and not self.misplaced else None
        blocks = any(chunk.calls or chunk.results for chunk in self.served)
        text = self.role == "user" and not self.odd and self.results is None and not self.calls and not blocks
        said = self.first if text else -1
        users = self.ordered and self.role == "user" and not self.odd
        return self.last, self.results, self.calls, self.served, late, self.misplaced, said, users, self.leaves


def _answer_by_name(turn: Segment) -> None:
    """Gemini pairs a response without an id by name, so one answers a call with an id as well: it
    takes the key of the first call of its name (in call order) that no result answers, the
    responses with ids having answered theirs first. Only a call alone under its key can be taken
    so: under a key two calls share, the k-th rule decides which call a result answers, and it
    could be one of another name. A response left over keeps its own key, which answers nothing."""
    if all(isinstance(result.key, str) for result in turn.results):
        return
    calls_under: dict[Key, int] = {}
    for call in turn.calls:
        calls_under[call.key] = calls_under.get(call.key, 0) + 1
    answered = {result.key for result in turn.results if isinstance(result.key, str)}
    open_keys: dict[str | None, list[Key]] = {}  # per name, in call order: the keys that can be taken
    for call in turn.calls:
        if calls_under[call.key] == 1 and call.key not in answered:
            open_keys.setdefault(call.name, []).append(call.key)
    taken: dict[str | None, int] = {}  # per name, how many of its open keys are taken
    for j, result in enumerate(turn.results):
        if isinstance(result.key, str):
            continue
        keys = open_keys.get(result.name, [])
        n = taken.get(result.name, 0)
        if n < len(keys):
            taken[result.name] = n + 1
            turn.results[j] = result._replace(key=keys[n])
