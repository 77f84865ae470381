"""What a history is read as: calls and results where they sit (:class:`Entry`), grouped in turns
(:class:`Segment`), paired by a :data:`Key`."""

from __future__ import annotations

from typing import Any, NamedTuple

Key = str | tuple[str, int]
"""What pairs a call with its results: its wire id, or for a Gemini call without one and for any
Ollama call, ``(name, k)``: the k-th id-less call of that name in its turn. A Gemini response
without an id takes the key of the call of its name it answers (see ``_answer_by_name``). A tuple
can never equal a wire id, so an id that happens to read ``f#1`` is never mistaken for one."""


Paired = tuple[Key, str | None]
"""What pairs a result with a call: its key and :attr:`Entry.kind` (policy result-answers-its-kind)."""


class Entry(NamedTuple):
    """One call or one result, where it sits in the input."""

    message: int
    """0-based index of its message in the input."""
    slot: int
    """Index in the message's ``tool_calls``/``content``/``parts``; -1 when the message is the result."""
    key: Key
    name: str | None
    kind: str | None = None
    """Responses: the type of call item it is or answers (a ``function_call_output``'s is
    ``function_call``); None elsewhere. A result answers only a call of its kind under its key
    (policy result-answers-its-kind)."""


class Segment(NamedTuple):
    """A turn (``calls`` and the ``results`` read for it), or stray results (``calls`` empty)."""

    calls: list[Entry]
    results: list[Entry]
    server: bool = False
    """Claude's server tool blocks of one assistant message, which answers them itself
    (:mod:`fsm.history.server_blocks`): no result can be made up for one of them."""
    open_end: bool = False
    """Server blocks of the history's last message, a turn Claude may go on with (``pause_turn``):
    a call there may still wait for its result."""
    carried: tuple[Entry, ...] = ()
    """Server calls waiting past the client results of their message's calls where the history ends
    (``server-call-waits-across-results``), ``open_end`` too: the client calls they wait past last (of
    the latest message making such calls). They stay when repair writes a message after the last,
    while repair keeps one of those calls."""
    late: tuple[Entry, ...] = ()
    """Anthropic: the results after text in the turn's user messages (the API takes a turn's results
    first in it), which ``host``, the first of those messages, takes first in repair."""
    host: int = -1
    end: int = -1
    """The last message of the calls' unit (an Anthropic run of assistant messages may go on past
    its last call, a server call's result in a message after it): repair's new results message
    goes after it, not into the run."""
    beside: tuple[Entry, ...] = ()
    """Server blocks: the client calls of their message, read as a turn of their own after them.
    A server call renamed ``<id>_d2`` keeps clear of their ids: one message holds both."""
    misplaced: tuple[Entry, ...] = ()
    """The results sent in the model's role (``misplaced-result``), which repair moves where the API
    takes results: their turn's first results message of the user, else the user message after
    them (Anthropic) or a new one (see ``repair``'s ``_Plan._home``)."""
    misplaced_end: int = -1
    """The last message of the last unit holding misplaced results."""
    carries: bool = False
    """Anthropic: server calls an earlier turn made wait on past this turn's calls (the model's message
    after their client results making calls again, ``server-call-waits-across-results``): its run
    begins with its first message of the model's, which answered those results, and goes on with
    their wait, so what a user message read in it leaves goes after it (``user-content-after-the-run``)."""
    held: int = -1
    """The first message of the user's text that came between the calls and results that answer them
    all the same, sent in the model's role (``misplaced-result``) or as results are
    (``result-after-text``): repair moves the results before it, into it (Anthropic, Converse,
    Gemini) or right after the calls and the results before the text (OpenAI, Ollama, Responses).
    Gemini, Converse: when the user's message answering the turn came before the text (or holds
    it), the text's first message or that one; repair moves the results after it into the answer."""


class Roles:
    """What a history's reader found of its messages' roles, noted as it reads them."""

    def __init__(self) -> None:
        self.chains: dict[tuple[int, int], list[Entry]] = {}
        """Gemini: each response that said ``willContinue: true`` (where it sits), with the responses
        going on with it in order, which have no entry of their own (policy will-continue-responses):
        repair drops, renames and moves them with it, as one result. Not a role, but noted as they are."""
        self.odd: list[tuple[int, Any]] = []
        """Each message whose role its format lacks, with that role, in order (``unknown-role``)."""
        self.calling: set[int] = set()
        """The messages that make calls in a role other than the model's (``misplaced-call``)."""
        self.repeated: list[tuple[int, str]] = []
        """Each message right after another of its role where the format wants the roles to alternate,
        with that role: a Converse or Gemini user message (``user-after-user``), a Converse assistant
        message or Gemini model content (``assistant-after-assistant``)."""
        self.beside: list[int] = []
        """Each Gemini content of the user's holding function responses beside parts of another kind
        (``results-beside-text``), in order, until the check reports them."""
        self.mixed: set[int] = set()
        """Every such content: a response after the user's text there is that finding, not ``result-after-text``."""
        self.empty: dict[int, None] = {}
        """Each message empty as given that its format refuses (``empty-message``, see
        :mod:`fsm.history.empty`), in order: read as if it were gone, so no turn sees it. A dict, not
        a list: repair asks whether a message is among them once a turn or more, and a list's scan made
        that O(empty messages) each time (quadratic in a history of many, audit 62)."""
