"""What one stream's engine reports: output events, diagnostics, and which spec parts it used.

The ledger knows the current wire event number, so every diagnostic and limit error names the
event that caused it. In strict mode a diagnostic the spec marks as a violation raises at once
(while the stream is being closed, the first one is kept in ``deferred`` instead, so the result can
still be completed). Diagnostics are bounded: past ``max_diagnostics_per_code`` of one code, the
rest are only counted. It also keeps the per-stream total of argument bytes held by every call.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from fsm.errors import LimitExceeded, RemoteProtocolError, ToolcallFSMError, bounded
from fsm.events import StreamEnd
from fsm.options import Limits, Policies, default_limits
from fsm.results import Diagnostic, Output, Severity, build_diagnostic
from fsm.spec import identity_spec


class _Counts(Counter[str]):
    """The transitions' Counter, whose item assignment is dict's own, in C. Counter defines
    ``__delitem__`` in Python, and the one slot item assignment and deletion share then runs Python's
    lookup of ``__setitem__`` and a call through its wrapper: every ``+= 1`` of a taken transition
    (each fragment's) cost about ten times a dict's. Nothing deletes a count here. Made empty by
    dict's own ``__init__`` (C) too, where Counter's is Python code that only reads its arguments:
    a copy or a pickle passes it a dict of the counts, which both take alike."""

    __slots__ = ()
    __init__ = dict.__init__
    __setitem__ = dict.__setitem__
    __delitem__ = dict.__delitem__  # type: ignore[assignment]  # (Counter takes any key; only str is counted)


MESSAGE_CHARS = 1000
"""The most of a diagnostic's message kept: messages quote the wire (an event type, a name, an error
text), which may be as long as an event, and a message is one line a person reads."""


WORD_CHARS = 100
"""The most of a provider's finish word kept (a word is short; the wire may send anything there)."""


def shortened(text: str, room: int = MESSAGE_CHARS) -> str:
    """``text`` as a diagnostic keeps it: at most ``room`` characters, then how long it was."""
    return bounded(text, room)


_MEANS = {
    "length": "the output token limit",
    "content_filter": "a content filter",
    "model_context_window_exceeded": "the context window",
    "refusal": "the model refused",
    "guardrail_intervened": "a guardrail",
}
"""What a finish word means, for the words whose normalised reason does not say it all (by the
provider's word first: Anthropic's ``model_context_window_exceeded`` is a ``length`` finish, but
not the output token limit)."""


def cut_by(end: StreamEnd) -> str:
    """What cut a call, as its ``truncated`` diagnostic says it: the provider's own word for the
    finish, what it means where that is known, and what the provider said beside it (an error's
    message, Gemini's ``finishMessage``), shortened to half a message: the word stays, and the
    caller learns a token limit from a content filter without reading the normalised reason."""
    word = end.raw_finish_reason or end.finish_reason
    said = end.message or end.error
    if end.finish_reason == "error":
        why = "by the provider's error" + (f' "{shortened(word, WORD_CHARS)}"' if word and word != "error" else "")
    elif word:
        means = _MEANS.get(word) or _MEANS.get(end.finish_reason or "")
        why = f'by the finish "{shortened(word, WORD_CHARS)}"' + (f" ({means})" if means else "")
    else:
        why = "by a finish event that gave no reason"
    return f"{why}: {shortened(said, MESSAGE_CHARS // 2)}" if said else why


@functools.cache
def _no_rules() -> dict[str, int]:
    """Every rule of specs/identity.toml, counted zero times, in name order (copied per stream)."""
    return dict.fromkeys(sorted(identity_spec().rule_names), 0)


@functools.cache
def _codes() -> dict[str, tuple[str, Severity, bool]]:
    """Every diagnostic code of specs/identity.toml: its rule, severity and whether it is a violation."""
    return {d.code: (d.rule, Severity(d.severity), d.violation) for d in identity_spec().diagnostics}


class Ledger:
    # What most streams never write are class defaults, which a stream overrides in its own instance
    # when it writes one: every stream is made with a ledger, and most are short.
    suppressed: Mapping[str, int] = MappingProxyType({})
    """Per code, the diagnostics counted but not kept (a dict of the stream's own from the first)."""
    defer = False
    deferred: ToolcallFSMError | None = None
    event: int | None = None
    """The wire event being read (None: none, or the stream is closing): written with each event."""
    held_bytes = 0
    """The bytes of argument text the stream's calls hold (written by the first call's text)."""
    work = 0
    """Characters scanned and compared, and routing candidates visited: the fuzzer checks that
    this stays linear in the input."""
    parsed: dict[Any, tuple[str, dict[str, Any], list[str]]] | None = None
    """By call, the snapshot text its scan found one whole object by parsing it as the call's end
    would (Slot.scan_snapshot), with the value and the keys given twice: the end takes them while
    the call holds that very text, so a snapshot is parsed once (the stream's own dict from the first)."""

    def __init__(self, policies: Policies, *, strict: bool, limits: Limits | None = None) -> None:
        self.policies = policies
        self.strict = strict
        if limits is None:
            limits = default_limits()
        self.max_per_code = limits.max_diagnostics_per_code
        self.max_held_bytes = limits.max_stream_argument_bytes
        self.max_argument_chars = limits.max_argument_chars  # read by every call (not copied into each)
        self.per_code: dict[str, int] = {}
        # Five of the class defaults above written all the same: the first feed() reads the event,
        # close() the deferred error and the parses, and every call the other two, where a class
        # default read through the instance is an unspecialised load in Python 3.11 (some 200
        # instructions; the store, 80). (Not ``suppressed``: a fork copies the instance's own
        # fields, and a mappingproxy copies not.)
        self.event = self.deferred = self.parsed = None
        self.held_bytes = self.work = 0
        self.outputs: list[Output] = []
        self.diagnostics: list[Diagnostic] = []
        # An empty Counter without Counter.__init__ (see _Counts): a third of what making a ledger cost.
        self.transitions: Counter[str] = _Counts()
        # Pre-filled, so counting a rule is one dict update and an undeclared rule is a KeyError.
        self.rules: dict[str, int] = _no_rules().copy()
        self.ended_unfinished: list[int] = []
        """Where in ``diagnostics`` stands what was said of each call the provider ended unfinished
        before the turn's finish (``truncated``: a Responses item done ``incomplete``;
        ``unterminated-arguments``: its JSON never closed), until that finish says why (:meth:`explain`)."""
        self.withhold = False
        """Set for a wire whose final arguments may replace the streamed text (OpenAI Responses
        ``.done``): no call's text is output as append-safe before the call finishes."""
        self._decoder: object = None
        self.calls_indexed = False
        """Set for a stream whose call index is a Claude content block index though its decoder's is
        not (ChatAnthropic's chunks, read as OpenAI chat: fsm.wire.langchain_places)."""

    def adopt(self, decoder: object) -> None:
        """Take what a wire's decoder declares of its wire (see ``withhold`` and ``output_indexed``)."""
        self.withhold = getattr(decoder, "final_arguments_win", False)
        self._decoder = decoder

    @property
    def output_indexed(self) -> bool:
        """True for a wire whose call index is the item's place in the turn's output, shared with
        reasoning and text (OpenAI Responses ``output_index``, Anthropic's content block index):
        each call reports it as its ``output_index``, by which the turn goes back in order. Asked
        of the decoder when a call is built, not when it is adopted: a Bedrock InvokeModel
        stream's decoder learns which wire it carries from its first event."""
        return self.calls_indexed or bool(getattr(self._decoder, "output_indexed", False))

    def place_of(self, wire_id: str | None) -> int | None:
        """Where a call that came without its index sat in the turn's output, if the decoder could
        tell (an Anthropic tool block whose start had no index: see AnthropicDecoder.place_of)."""
        place_of = getattr(self._decoder, "place_of", None)
        return place_of(wire_id) if place_of is not None else None

    def emit(self, output: Output) -> None:
        self.outputs.append(output)

    def drain(self) -> list[Output]:
        out, self.outputs = self.outputs, []
        return out

    def diagnose(self, code: str, message: str) -> None:
        declared = _codes().get(code)
        if declared is None:
            raise KeyError(f"diagnostic {code!r} is not declared in specs/identity.toml")
        rule, severity, violation = declared
        message = shortened(message)
        count = self.per_code[code] = self.per_code.get(code, 0) + 1
        if count > self.max_per_code:
            self._suppress(code)
        else:
            self.diagnostics.append(build_diagnostic(self.event, code, message, severity))
        self.rules[rule] += 1
        if self.strict and violation:
            error = RemoteProtocolError(f"{code}: {message}", event=self.event, rule=rule)
            if not self.defer:
                raise error
            self.deferred = self.deferred or error

    def explain(self, why: str) -> None:
        """Complete what was said of every call the provider ended unfinished before the turn
        finished with ``why`` (what :func:`cut_by` says of a finish that is not normal): the call
        ended first (a Responses item done ``incomplete``, a block stopped with its JSON open), and
        only the finish that follows (``response.incomplete``, ``max_tokens``) tells the reason. The
        diagnostic keeps its event and place; its message is the one read from then on."""
        for at in self.ended_unfinished:
            said = self.diagnostics[at]
            self.diagnostics[at] = attrs.evolve(said, message=shortened(f"{said.message}; the turn then ended {why}"))
        self.ended_unfinished.clear()

    def recode(self, at: int, code: str, message: str) -> bool:
        """Say again what ``diagnostics[at]`` said, as ``code`` (of the same rule) with ``message``:
        a later event told what it was (a Claude tool block's open JSON, a decline's cut: policy
        decline-cut-waits). It keeps its event and place, and waits for no finish's why; past the per-code
        bound it is taken out and counted as suppressed (True), so the diagnostics after it move down one."""
        said, (_, severity, _) = self.diagnostics[at], _codes()[code]
        self.per_code[said.code] -= 1
        count = self.per_code[code] = self.per_code.get(code, 0) + 1
        if at in self.ended_unfinished:
            self.ended_unfinished.remove(at)
        if count <= self.max_per_code:
            self.diagnostics[at] = build_diagnostic(said.event, code, shortened(message), severity)
            return False
        # Past the per-code bound, as diagnose() keeps one: counted, not kept (hostile audit 95). What
        # holds a later diagnostic's place moves down with it (True: the caller's own places do too).
        del self.diagnostics[at]
        self.ended_unfinished[:] = [place - 1 if place > at else place for place in self.ended_unfinished]
        self._suppress(code)
        return True

    def _suppress(self, code: str) -> None:
        suppressed = self.suppressed
        if type(suppressed) is not dict:  # the class's read-only empty one: the stream's own from now
            suppressed = self.suppressed = {}
        suppressed[code] = suppressed.get(code, 0) + 1

    def hold(self, change: int) -> None:
        """Account for ``change`` more (or, negative, fewer) bytes of argument text held."""
        self.held_bytes += change
        if change > 0 and self.held_bytes > self.max_held_bytes:
            self.held_bytes -= change
            self.limit(f"the calls of this stream hold more than {self.max_held_bytes} bytes of arguments")

    def apply(self, rule: str) -> None:
        """Record that the registry decided by ``rule`` (for rule coverage)."""
        self.rules[rule] += 1  # KeyError: the rule is not declared in specs/identity.toml

    def limit(self, message: str) -> None:
        raise LimitExceeded(message, event=self.event, rule="limits")
