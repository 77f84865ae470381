"""What every stream makes and reads once (issue 17, the fixed cost of a short stream) is made the
cheaper way and is the same for it: the ledger made bare (its ``__init__`` called as a function),
the transitions' Counter made empty by dict's own ``__init__``, the last chunk taken to the turn's
content without its bound methods, and a close with no half surrogate held making nothing to say so.
"""

from __future__ import annotations

import copy
import pickle
import sys
from collections import Counter
from types import FrameType
from typing import Any, ClassVar

import pytest

from fsm import Limits, Policies, Reassembler
from fsm.content import TurnContent
from fsm.engine import ledger as ledger_module
from fsm.engine.ledger import Ledger, _Counts
from fsm.wire.decoders._wire import chat_finish
from fsm.wire.decoders.chat_chunks import PLAIN_ENDS
from tests.helpers import chunk, tc


class _Counting(type):
    calls = 0

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        _Counting.calls += 1
        return super().__call__(*args, **kwargs)


class _CountedLedger(Ledger, metaclass=_Counting):
    """A Ledger whose every call through its class is counted."""


@pytest.mark.parametrize(
    "options",
    [{}, {"strict": True}, {"limits": Limits(max_diagnostics_per_code=3)}, {"policies": Policies()}],
)
def test_the_stream_makes_its_ledger_bare_as_its_class_makes_it(
    monkeypatch: pytest.MonkeyPatch, options: dict[str, Any]
) -> None:
    """Reassembler makes its ledger without a call of the class (whose keywords went through a
    dict), holding every field and nothing else that Ledger(...) makes of the same arguments."""
    monkeypatch.setattr("fsm.reassembler.Ledger", _CountedLedger)
    _Counting.calls = 0
    r = Reassembler("openai-chat", **options)
    assert _Counting.calls == 0 and type(r.ledger) is _CountedLedger
    made = Ledger(r.ledger.policies, strict=r.strict, limits=r.limits)
    mine, theirs = vars(r.ledger), vars(made)
    assert mine.keys() == theirs.keys()
    for name in mine:
        assert type(mine[name]) is type(theirs[name]) and mine[name] == theirs[name], name
    r.feed(chunk(tc(0, "a", "f", '{"x": 1}'), finish="tool_calls"))
    assert [c.arguments for c in r.close().calls] == [{"x": 1}]


def test_the_transitions_counter_is_made_by_dicts_init_and_copies_as_a_counter() -> None:
    """The transitions' Counter is made empty in C; copied, deep-copied and pickled (a forked
    stream's ledger) it keeps its class and its counts, as Counter's own __init__ took them."""
    assert _Counts.__init__ is dict.__init__
    counts = _Counts()
    assert counts == Counter() and counts["never"] == 0
    counts["a"] += 2
    counts["b"] += 1
    for twin in (copy.copy(counts), copy.deepcopy(counts), pickle.loads(pickle.dumps(counts)), counts.copy()):
        assert type(twin) is _Counts and twin == Counter(a=2, b=1) and twin is not counts
    r = Reassembler("openai-chat")
    r.feed(chunk(tc(0, "a", "f", "{}"), finish="tool_calls"))
    fork = copy.deepcopy(r)
    assert type(fork.ledger.transitions) is _Counts and fork.ledger.transitions == r.ledger.transitions
    assert ledger_module.Ledger is Ledger


class _Watched(TurnContent):
    """A turn's content that counts the reads of the two methods the last chunk may use."""

    reads: ClassVar[Counter[str]] = Counter()

    def __getattribute__(self, name: str) -> Any:
        if name in ("apply", "usage_replaced"):
            _Watched.reads[name] += 1
        return super().__getattribute__(name)


def _watched(r: Reassembler) -> Reassembler:
    content = _Watched()
    vars(content).update(vars(r._content))
    r._content = content
    _Watched.reads = Counter()
    return r


def test_the_last_chunk_reads_the_contents_methods_only_for_what_it_says() -> None:
    """A last chunk that says nothing beside its finish (most) reads neither of the turn content's
    methods; one with text and usage beside the finish still takes both, as before."""
    r = _watched(Reassembler("openai-chat"))
    r.feed(chunk(tc(0, "a", "f", "{}")))
    r.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    assert _Watched.reads == Counter()
    assert r.close().finish_reason == "tool_calls"
    r = _watched(Reassembler("openai-chat"))
    r.feed({"choices": [{"index": 0, "delta": {"content": "bye"}, "finish_reason": "stop"}], "usage": {"t": 4}})
    assert _Watched.reads == Counter(apply=1, usage_replaced=1)
    result = r.close()
    assert (result.text, result.usage, result.finish_reason) == ("bye", {"t": 4}, "stop")


def test_a_close_with_no_half_surrogate_held_settles_at_once() -> None:
    """settle() returns at its first line when no high surrogate waits (every close, nearly: it
    made two dicts and a list to find nothing); one that waits is still U+FFFD at the close."""
    lines: list[int] = []

    def tracer(frame: FrameType, event: str, arg: object) -> Any:
        if frame.f_code is TurnContent.settle.__code__:
            if event == "line":
                lines.append(frame.f_lineno)
            return tracer
        return None

    r = Reassembler("openai-chat")
    r.feed({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]})
    if sys.gettrace() is not None:
        pytest.skip("a tracer is set already (coverage): the count needs its own")
    sys.settrace(tracer)
    try:
        r.close()
    finally:
        sys.settrace(None)
    assert len(lines) == 2  # the test and the return
    cut = Reassembler("openai-chat")
    cut.feed({"choices": [{"index": 0, "delta": {"content": "a\ud83d"}, "finish_reason": "stop"}]})
    result = cut.close()
    assert result.text == "a\ufffd" and "lone-surrogate" in [d.code for d in result.diagnostics]


class _Gets(dict[str, Any]):
    """A delta that counts the keys read from it one by one."""

    gets = 0

    def get(self, key: str, default: Any = None) -> Any:
        _Gets.gets += 1
        return super().get(key, default)


def test_said_beside_reads_the_deltas_own_keys_and_decides_as_every_said_key_read() -> None:
    """said_beside walks the delta's few keys, not the eleven SAID_KEYS one read each, and says
    what reading each of them says: any non-empty value, or a value of another type than str
    (falsy too), is said, and so is an empty string where a list or an object goes (policy
    side-values-by-type); other empty text and None are not; keys not among them say nothing."""
    from fsm.harness.fuzz.run import sample_vectors
    from fsm.wire.decoders._wire import SAID_KEYS
    from fsm.wire.decoders.chat_chunks import said_beside
    from tests.test_conformance import VECTORS

    def read_each(delta: dict[str, Any]) -> bool:
        typed = ("reasoning_details", "reasoning_items", "audio")  # an empty string there is no text: said
        return any(
            (said := delta.get(key)) or (said is not None and (type(said) is not str or key in typed))
            for key in SAID_KEYS
        )

    deltas: list[dict[str, Any]] = [
        {"role": "assistant", key: value, "tool_calls": []}
        for key in (*SAID_KEYS, "role", "other")
        for value in ("", None, "x", 0, False, {}, [], 1.5, ["a"])
    ]
    for vector in [*VECTORS, *sample_vectors("openai-chat", 100)]:
        for event in vector.events:
            choices = event.get("choices") if type(event) is dict else None
            for choice in choices if type(choices) is list else []:
                if type(choice) is dict and type(choice.get("delta")) is dict:
                    deltas.append(choice["delta"])
    assert len(deltas) > 300
    for delta in deltas:
        assert said_beside(delta) == read_each(delta), delta
    _Gets.gets = 0
    assert not said_beside(_Gets(role="assistant", content=None, tool_calls=[]))
    assert _Gets.gets == 0


@pytest.mark.parametrize("raw", sorted(PLAIN_ENDS))
def test_a_plain_last_choice_ends_as_chat_finish_reads_it(raw: str) -> None:
    """A last chunk whose choice holds nothing chat_finish reads beside its word takes the word's one
    shared end, equal to the end chat_finish builds; a choice with more beside it (OpenRouter's
    native word) is still read by chat_finish, and says it."""
    for choice in (
        {"index": 0, "delta": {}, "finish_reason": raw},
        {"index": 0, "delta": {}, "finish_reason": raw, "logprobs": None},
    ):
        assert chat_finish(choice, raw) == PLAIN_ENDS[raw]
        r = Reassembler("openai-chat")
        r.feed({"choices": [choice]})
        assert r._finish is not None and r._finish[0] is PLAIN_ENDS[raw]
        assert r.close().raw_finish_reason == raw
    native = Reassembler("openai-chat")
    native.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": raw, "native_finish_reason": "SAFETY"}]})
    assert native._finish is not None and native._finish[0] is not PLAIN_ENDS[raw]
    assert native.close().finish_message == 'native_finish_reason "SAFETY"'


def test_the_chat_said_readers_are_bound_only_for_a_stream_read_from_bytes() -> None:
    """An OpenAI chat stream of dicts never asks the decoder's readers of its plainest text chunk
    (the shortcut reads it): they are bound when the stream's framing is made, or when a stream
    read from bytes learns its decoder from its first event."""
    fed = Reassembler("openai-chat")
    fed.feed({"choices": [{"index": 0, "delta": {"content": "hi"}}]})
    assert "_said" not in vars(fed) and fed._said is None
    wire = b'data: {"choices": [{"index": 0, "delta": {"content": "hi"}}]}\n\n'
    for provider in ("openai-chat", "auto"):
        read = Reassembler(provider)
        read.feed_bytes(wire)
        assert read._said is not None and read._said_form_of is not None and read._said_at is not None
        assert read._chat is not None and read._said.__self__ is read._chat  # type: ignore[attr-defined]
        assert read.close().text == "hi"


def test_what_close_reads_of_every_stream_is_the_streams_own_field() -> None:
    """The fields close() reads of every stream are written by its construction (a class default
    read through an instance is an unspecialised load in Python 3.11), with the class defaults'
    values, and a fork still copies and pickles; the content's bound is the one given, or the class's."""
    r = Reassembler("openai-chat", limits=Limits(max_content_chars=100))
    content = vars(r._content)
    for name in ("_text", "_refusal", "_blocks", "_parts", "_server_results", "_compactions", "_high"):
        assert name in content and content[name] is None
    for name in ("text_signature", "text_output_index", "usage", "container", "provider_fields"):
        assert name in content and content[name] is getattr(TurnContent, name)
    assert (r._content.max_held, r._content.check_at, r._content.ledger) == (100, 100, r.ledger)
    assert (TurnContent().max_held, TurnContent().check_at) == (TurnContent.max_held, TurnContent.check_at)
    assert {k: vars(r.ledger)[k] for k in ("event", "deferred", "parsed")} == dict.fromkeys(
        ("event", "deferred", "parsed")
    )
    assert (vars(r.ledger)["held_bytes"], vars(r.ledger)["work"], content["held"], content["heard"]) == (0, 0, 0, None)
    assert "suppressed" not in vars(r.ledger)  # a mappingproxy: a fork could not copy it
    assert vars(r.registry)["_settled"] == 0
    mine = vars(r)
    assert all(mine[k] is None for k in ("_framer", "_detector", "_cut", "_langchain"))
    assert mine["_listed_declined"] == frozenset()
    r.feed({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]})
    for fork in (copy.deepcopy(r), pickle.loads(pickle.dumps(r))):
        assert fork.close() == r.close()
