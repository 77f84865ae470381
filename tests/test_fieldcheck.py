"""One compiler checks an attrs instance against its annotations (fsm.fieldcheck): the events a
caller feeds and the Result a next turn is built from. Here: the annotation forms it knows, every
field of the Result and its parts checked (no list kept by hand beside the classes), and a result
the Reassembler made or one that passed once taken without reading it again, while a result built
by hand, even from one that passed, is read."""

# mypy: disable-error-code="arg-type"
from __future__ import annotations

import enum
from typing import Any, Literal, Optional

import attrs
import pytest

from fsm import Reassembler, messages
from fsm.errors import InvalidInput
from fsm.events import ArgumentsFragment, CallEnd, CallRef, CallSeen, ReasoningDelta, StreamEnd, TextDelta
from fsm.fieldcheck import compile_check, fault, said, vouched, where
from fsm.results import CallStatus, Diagnostic, Reasoning, Result, Severity, TextPart, ToolCall


class Colour(enum.Enum):
    RED = "red"


@attrs.frozen
class Leaf:
    n: int
    word: Literal["a", 1]
    maybe: Optional[str]  # noqa: UP045 - the typing form is one the compiler must know too
    colour: Colour = Colour.RED


@attrs.frozen
class Tree:
    leaf: Leaf
    leaves: tuple[Leaf, ...] = ()
    names: tuple[str, ...] = ()
    extra: dict[str, Any] | None = None
    anything: Any = None
    flag: bool = False


LEAF = Leaf(1, "a", None)


@pytest.mark.parametrize(
    ("tree", "path", "wanted"),
    [
        (Tree(LEAF), None, None),
        (Tree(Leaf(True, "a", None)), ("leaf", "n"), "an int"),
        (Tree(Leaf(1, 1.0, None)), ("leaf", "word"), "one of 'a', 1"),  # equal to 1, but no int
        (Tree(Leaf(1, True, None)), ("leaf", "word"), "one of 'a', 1"),
        (Tree(Leaf(1, "b", None)), ("leaf", "word"), "one of 'a', 1"),
        (Tree(Leaf(1, "a", 5)), ("leaf", "maybe"), "a str or None"),
        (Tree(Leaf(1, "a", None, "red")), ("leaf", "colour"), 'a Colour (Colour("red"), ...)'),
        (Tree({"n": 1}), ("leaf",), "a Leaf"),
        (Tree(LEAF, (LEAF, Leaf(1, "a", b"x"))), ("leaves", 1, "maybe"), "a str or None"),
        (Tree(LEAF, [LEAF]), ("leaves",), "a tuple of Leaf"),
        (Tree(LEAF, (LEAF, None)), ("leaves", 1), "a Leaf"),
        (Tree(LEAF, names=("a", 2)), ("names", 1), "a str"),
        (Tree(LEAF, extra=[("a", 1)]), ("extra",), "a dict or None"),
        (Tree(LEAF, flag=1), ("flag",), "a bool"),
        (Tree(LEAF, extra={"k": object()}, anything=object()), None, None),  # a dict's items and Any: unread
    ],
)
def test_each_annotation_form_is_checked_and_the_way_to_a_wrong_value_named(
    tree: Tree, path: tuple[Any, ...] | None, wanted: str | None
) -> None:
    wrong = fault(tree, Tree)
    assert (wrong and wrong.path) == path
    if wrong is not None:
        assert said(wrong.declared) == wanted
        assert where(wrong.path) == "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in path or ())


def test_an_annotation_form_it_does_not_know_fails_when_its_class_is_first_checked() -> None:
    @attrs.frozen
    class Odd:
        ratio: float

    with pytest.raises(TypeError, match="no type test"):
        compile_check(Odd)


def _call(**fields: Any) -> ToolCall:
    return attrs.evolve(ToolCall(0, "c0", "c0", "f", {}, "{}", CallStatus.COMPLETE), **fields)


def _parts() -> dict[type, Any]:
    return {
        Result: Result("gemini", "tool_calls", (_call(),), (Diagnostic(1, "late-id", "m", Severity.INFO),)),
        ToolCall: _call(),
        Reasoning: Reasoning("t", "sig", summary=("s",)),
        TextPart: TextPart("a", "sig"),
        Diagnostic: Diagnostic(1, "late-id", "m", Severity.INFO),
    }


def _in_a_result(cls: type, part: Any) -> Result:
    base = _parts()[Result]
    where = {ToolCall: "calls", Reasoning: "reasoning", TextPart: "text_parts", Diagnostic: "diagnostics"}
    return part if cls is Result else attrs.evolve(base, **{where[cls]: (part,)})


@pytest.mark.parametrize("cls", [Result, ToolCall, Reasoning, TextPart, Diagnostic], ids=lambda c: c.__name__)
def test_every_field_of_the_result_and_its_parts_is_checked(cls: type) -> None:
    """Before, a list by hand named the fields checked: a call's name, arguments_json, type, input or
    item of another type went out as it was (a shell_call's item that is no dict: TypeError from the
    Responses builder). Now each field is held to its annotation, and named when wrong."""
    good = _parts()[cls]
    messages.omitted(_in_a_result(cls, good))
    for field in attrs.fields(cls):
        if field.type in (Any, "Any"):
            continue
        odd = _in_a_result(cls, attrs.evolve(good, **{field.name: object()}))
        with pytest.raises(InvalidInput, match=rf"\.{field.name} must be .*, not object$"):
            messages.assistant_message(odd, "openai-responses")
        with pytest.raises(InvalidInput, match=rf"\.{field.name} must be .*, not object$"):
            messages.omitted(odd)


def _stream() -> Reassembler:
    r = Reassembler("openai-chat")
    r.feed(ReasoningDelta(0, "hm", signature="sig"))
    r.feed(TextDelta("hi"))
    r.feed(CallSeen(CallRef(0, "a", "f")))
    r.feed(ArgumentsFragment(CallRef(0), '{"n": 1}'))
    r.feed(CallEnd(CallRef(0)))
    r.feed(StreamEnd("tool_calls"))
    return r


def test_the_reassemblers_result_is_taken_unread_and_one_built_from_it_is_read() -> None:
    made = _stream().close()
    assert vouched(made) and fault(made, Result) is None  # what it vouches for holds
    copy = attrs.evolve(made)
    assert not vouched(copy)
    assert messages.assistant_message(copy, "anthropic") == messages.assistant_message(made, "anthropic")
    assert vouched(copy)  # it passed: the next build takes it unread
    for odd in (
        attrs.evolve(made, calls=({"id": "a"},)),
        attrs.evolve(made, calls=(attrs.evolve(made.calls[0], status="complete"),)),
        attrs.evolve(made, reasoning=(attrs.evolve(made.reasoning[0], signature=b"sig"),)),
    ):
        for _ in range(2):  # refused each time: a result that failed is never taken as sound
            with pytest.raises(InvalidInput, match=r"^result\.(calls|reasoning)\[0\]"):
                messages.assistant_message(odd, "openai-chat")
        assert not vouched(odd)


def test_what_is_no_result_is_refused_as_before() -> None:
    for odd in (None, {"calls": []}, _stream()):
        with pytest.raises(InvalidInput, match=r"^result must be a Result, not "):
            messages.assistant_message(odd, "gemini")


def test_the_record_of_vouched_results_stays_bounded_and_never_vouches_another(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every close() vouches its Result: the records of Results gone are dropped as they pile up (at
    # most twice the Results alive when they were last dropped, and a few), and a record whose
    # Result is gone vouches nothing, not even a new object at the same address. (A record of its
    # own: what earlier tests left alive sets where the shared one is dropped next.)
    from fsm import fieldcheck

    monkeypatch.setattr(fieldcheck, "_sound", {})
    monkeypatch.setattr(fieldcheck, "_prune_at", 1024)
    kept = [Reassembler("openai-chat").close() for _ in range(100)]
    for _ in range(20_000):
        Reassembler("openai-chat").close()
    assert len(fieldcheck._sound) <= 2 * (len(kept) + 10) + 1024
    assert all(fieldcheck.vouched(result) for result in kept)
    made = attrs.evolve(kept[0])
    assert not fieldcheck.vouched(made)
