"""Hostile audit 43: objects of the caller's own inside what it hands in, whose methods raise.

Attacked: at every field position of every bundled conformance vector fed as dicts (ids, names,
indexes, argument text, argument objects, finish reasons, usage, roles, types, whole entries and
lists), objects whose ``__bool__``, ``__eq__``, ``__ne__``, ``__hash__``, ``__len__``, ``__iter__``,
``__getitem__``, ``__contains__``, ``__index__``, ``__int__``, ``__float__``, ``__lt__``, ``__str__``,
``__repr__``, ``__format__`` or ``__getattr__`` raises (one at a time, and all at once), subclasses of
str, int, dict and list whose every such method raises, and numpy arrays (whose ``__bool__`` raises a
ValueError); errors of a class of the caller's own, ValueError, TypeError, RecursionError,
MemoryError and KeyboardInterrupt; SDK objects whose attributes, ``model_dump`` or ``type`` raise, and
openai chunks holding an object whose every attribute raises; the history functions (``check``,
``repair``, ``anything_dangling``, ``detect_format``, ``uniquify``) given such objects in messages of
every format; ``DeltaEmitter``'s options and the outputs it is given.

Found and fixed (policy caller-object-raises, fsm/foreign.py; README "Guarantees"):
- The caller's error left ``Reassembler.feed`` as it was at some 35 places of the decoders, the chat
  shortcut, the choice picker, the registry and the content (an index's ``__bool__`` or ``__hash__``,
  a finish reason's ``__bool__``, a type's ``__eq__``, ``shown()``'s ``repr`` of a wrong value, the
  writer's walk of an argument object, ...), and from SDK objects whose attribute reads raise (a
  property, ``__getattr__``, ``__getattribute__``). It is InvalidInput now, naming the event, the way
  to the object and its type, the caller's error as ``__cause__``; the stream stops there (lax mode
  too: how much of the event was taken in is not known), and ``close()`` returns the result so far.
- An object the engine kept from one event raised at a later one (an Anthropic ``input`` object
  written when its block stops, a Responses item's name compared when the item is done again, an
  Anthropic block index compared with the next): the later event now answers it the same way.
- ``fsm.history``'s functions and ``DeltaEmitter`` let the caller's error out (a block's ``type``
  compared, an id hashed, ``flush`` compared with its choices, an output's index hashed), and so did
  ``fsm.messages.assistant_message`` for a result holding such an object (a server tool result
  block, kept whole); they answer it with InvalidInput too. So do ``Reassembler(...)`` for its
  options (``provider != "auto"``, ``taken``'s ids hashed, ``choice`` checked), ``feed_bytes`` (its
  ``isinstance`` asked the object's ``__class__``; ``bytes()`` ran a subclass's ``__bytes__``) and
  ``reassemble``/``areassemble`` (their ``isinstance`` of each item), and ``Reassembler.partial``
  for an index whose comparison raises.

Left: an error raised on plain data (no object of the caller's) is the engine's own bug and goes up
as it is; a RecursionError a caller's method raises reads as the depth limit (LimitExceeded), as a
deep event does; ``DeltaEmitter.chunks`` refused for a caller's object inside its n-th output keeps
what the outputs before it did to its state, though their chunks are not returned (an item that is
no output at all is refused before any is taken in: test_reemit.py).
"""

from __future__ import annotations

import copy
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from fsm import DeltaEmitter, Reassembler, history
from fsm.errors import InvalidInput, LimitExceeded, LocalProtocolError, ToolcallFSMError
from fsm.harness.vectors import Vector, load_vectors
from fsm.options import Policies
from fsm.results import Result
from tests.test_history_property import call_item, responses_call, responses_output, result_item, text


class Boom(Exception):
    """An error of the caller's own, derived from nothing of fsm's."""


METHODS = (
    "__bool__",
    "__eq__",
    "__ne__",
    "__hash__",
    "__len__",
    "__iter__",
    "__getitem__",
    "__contains__",
    "__index__",
    "__int__",
    "__float__",
    "__lt__",
    "__str__",
    "__repr__",
    "__format__",
    "__getattr__",
)


def _hostile(base: type, methods: tuple[str, ...], error: type[BaseException] = Boom) -> type:
    def raising(self: Any, *args: Any) -> Any:
        raise error("hostile")

    def named(method: str) -> Any:  # the function named as the method, as a class's own would be
        code = raising.__code__.replace(co_name=method)
        function = types.FunctionType(code, globals(), method, None, raising.__closure__)
        function.__qualname__ = method
        return function

    spec: dict[str, Any] = {method: named(method) for method in methods}
    if "__eq__" in methods and "__hash__" not in methods:
        spec["__hash__"] = base.__hash__  # (a class that defines __eq__ alone is unhashable)
    return type(f"Hostile{base.__name__.title()}", (base,), spec)


def _of(base: type, methods: tuple[str, ...], error: type[BaseException] = Boom) -> Callable[[Any], Any]:
    cls = _hostile(base, methods, error)
    if base is object:
        return lambda _: cls()
    return lambda value: cls(value if type(value) is base else base())


ALL = tuple(m for m in METHODS if m != "__getattr__")
KINDS: dict[str, Callable[[Any], Any]] = {
    "all": _of(object, METHODS),
    "str": _of(str, ALL),
    "int": _of(int, ALL),
    "dict": _of(dict, ALL),
    "list": _of(list, ALL),
    "numpy": lambda _: np.array([0, 1]),
    **{method: _of(object, (method,)) for method in METHODS},
}
VECTORS = [v for v in load_vectors() if v.events]
SHAPES = sorted({v.shape for v in VECTORS})


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    items = value.items() if type(value) is dict else enumerate(value) if type(value) is list else ()
    for key, inner in items:
        yield (*prefix, key)
        yield from _paths(inner, (*prefix, key))


def _put(value: Any, path: tuple[Any, ...], make: Callable[[Any], Any]) -> Any:
    value = copy.deepcopy(value)
    node = value
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = make(node[path[-1]])
    return value


def _stream(vector: Vector, events: list[Any], strict: bool) -> tuple[InvalidInput | None, Result]:
    """Feed ``events``; the policy's error if one was raised (checked), and the result close() gives."""
    r = Reassembler(vector.shape, strict=strict, policies=Policies(**vector.policies), choice=vector.choice)
    answered = None
    for n, event in enumerate(events, start=1):
        try:
            r.feed(event)
        except InvalidInput as exc:
            if "caller-object-raises" not in str(exc):
                continue  # a wrong type refused before any method of it ran: the stream goes on
            assert exc.event == n and str(exc).startswith(f"event {n}: "), (vector.name, str(exc))
            assert type(exc.__cause__) in (Boom, ValueError, TypeError), (vector.name, repr(exc.__cause__))
            answered = exc
            with pytest.raises(LocalProtocolError, match="already failed"):
                r.feed(event)
            break
        except ToolcallFSMError:
            break  # any other fault stops the stream too
    try:
        result = r.close()
    except ToolcallFSMError:  # strict mode: a violation close() found, raised once the result is complete
        assert strict
        result = r.close()
    assert isinstance(result, Result)
    if answered is not None:
        assert any(d.code == "stream-failed" and d.event == answered.event for d in result.diagnostics)
    return answered, result


def _answered(shapes: list[str], kinds: list[str], strict: bool = False) -> int:
    """Streams of the vectors of ``shapes``, each with one position given an object of each of
    ``kinds``: how many the policy answered (each checked by _stream)."""
    answered = 0
    for vector in (v for v in VECTORS if v.shape in shapes):
        for at, event in enumerate(vector.events):
            for path, kind in ((path, kind) for path in _paths(event) for kind in kinds):
                events = list(vector.events)
                events[at] = _put(event, path, KINDS[kind])
                answered += _stream(vector, events, strict)[0] is not None
    return answered


@pytest.mark.parametrize("shape", SHAPES)
def test_a_callers_object_at_any_position_of_any_provider_is_answered(shape: str) -> None:
    # Found: the object's own error left feed() as it was, at some 35 places (15,605 streams).
    assert _answered([shape], ["all", "str", "int", "dict", "list", "numpy"])


# (An object whose __hash__, __iter__, __getitem__, __contains__, __index__, __int__, __float__, __lt__,
# __format__ or __getattr__ alone raises is refused by its type before any of those is called.)
@pytest.mark.parametrize("kind", ["__bool__", "__eq__", "__ne__", "__len__", "__str__", "__repr__"])
def test_an_object_whose_one_method_raises_is_answered_wherever_it_is_called(kind: str) -> None:
    assert _answered(SHAPES, [kind])


@pytest.mark.parametrize("shape", SHAPES)
def test_strict_mode_answers_the_same_and_close_returns_the_result(shape: str) -> None:
    assert _answered([shape], ["all"], strict=True)


def _chunk(choice: Any = 0, finish: Any = None) -> dict[str, Any]:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    return {"choices": [{"index": choice, "delta": {"tool_calls": [call]}, "finish_reason": finish}]}


def test_the_message_names_the_event_the_way_to_the_object_its_type_and_method() -> None:
    r = Reassembler("openai-chat")
    r.feed(_chunk())
    with pytest.raises(InvalidInput) as raised:
        r.feed(_chunk(choice=KINDS["__bool__"](None)))
    assert str(raised.value) == (
        "event 2: choices[0].index is the caller's own object of type HostileObject, "
        "not plain data; its __bool__ raised Boom (policy caller-object-raises)"
    )
    assert isinstance(raised.value.__cause__, Boom) and raised.value.event == 2
    result = r.close()  # the call completed before the fault stands
    assert [c.arguments for c in result.calls] == [{"a": 1}]
    assert [(d.code, d.event) for d in result.diagnostics] == [("stream-failed", 2)]


def test_a_numpy_array_index_is_named_with_numpys_own_error_kept() -> None:
    # The known gap audit 42 left: numpy's ValueError ("truth value ... is ambiguous") escaped.
    r = Reassembler("gemini")
    event = {"candidates": [{"index": np.array([0, 1]), "content": {"parts": [{"text": "hi"}]}}]}
    with pytest.raises(InvalidInput, match=r"^event 1: candidates\[0\]\.index .* type ndarray") as raised:
        r.feed(event)
    assert type(raised.value.__cause__) is ValueError
    assert r.close().diagnostics[0].code == "stream-failed"


def test_an_object_kept_from_an_earlier_event_is_answered_at_the_event_it_raises_in() -> None:
    # Found: an Anthropic tool_use input object is written when its block stops, events later.
    r = Reassembler("anthropic")
    r.feed({"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}})
    block = {"type": "tool_use", "id": "t", "name": "f", "input": KINDS["dict"]({"a": 1})}
    r.feed({"type": "content_block_start", "index": 0, "content_block": block})
    with pytest.raises(InvalidInput, match=r"^event 3: an object of the caller's own of type HostileDict") as raised:
        r.feed({"type": "content_block_stop", "index": 0})
    assert isinstance(raised.value.__cause__, Boom)
    assert isinstance(r.close(), Result)


@pytest.mark.parametrize("error", [KeyboardInterrupt, MemoryError])
def test_what_is_no_callers_mistake_goes_up_as_it_is(error: type[BaseException]) -> None:
    r = Reassembler("openai-chat")
    with pytest.raises(error):
        r.feed(_chunk(choice=_of(object, ("__bool__",), error)(None)))


def test_a_recursion_error_of_the_callers_reads_as_the_depth_limit() -> None:
    r = Reassembler("openai-chat")
    with pytest.raises(LimitExceeded, match="nests too deeply"):
        r.feed(_chunk(choice=_of(object, ("__bool__",), RecursionError)(None)))
    assert isinstance(r.close(), Result)


@pytest.mark.parametrize("error", [ValueError, TypeError])
def test_a_builtin_error_of_the_callers_is_answered_too(error: type[Exception]) -> None:
    r = Reassembler("openai-chat")
    with pytest.raises(InvalidInput, match="its __bool__ raised " + error.__name__) as raised:
        r.feed(_chunk(finish=_of(str, ("__bool__", "__eq__", "__hash__"), error)("stop")))
    assert type(raised.value.__cause__) is error


def test_on_plain_data_an_error_is_the_engines_own_and_is_not_dressed_as_the_callers() -> None:
    from fsm.foreign import caller_fault

    try:
        raise KeyError("x")  # as an engine bug would, on an event of JSON's own types
    except KeyError as exc:
        assert caller_fault({"a": [1, 2.5, "x", None, True, {"b": (1,)}]}, exc, "event 1") is None


class _Raising:
    def __getattr__(self, name: str) -> Any:
        raise Boom(name)


class _RaisingAll:
    def __getattribute__(self, name: str) -> Any:
        raise Boom(name)


class _DumpRaises:
    @property
    def model_dump(self) -> Any:
        raise Boom("model_dump")


class _TypeRaises:
    @property
    def type(self) -> Any:
        raise Boom("type")

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return {"type": "message_stop"}


def _openai_chunk_holding(value: Any) -> Any:
    from openai.types.chat import ChatCompletionChunk

    chunk = ChatCompletionChunk.model_validate(
        {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", **_chunk()}
    )
    object.__setattr__(chunk.choices[0].delta.tool_calls[0], "index", value)  # type: ignore[index]
    return chunk


SDK = {
    "getattr": (_Raising, "__getattr__"),
    "getattribute": (_RaisingAll, "__getattribute__"),
    "model_dump": (_DumpRaises, "model_dump"),
    "type": (_TypeRaises, "type"),
    "chunk-holding": (lambda: _openai_chunk_holding(_RaisingAll()), "__getattribute__"),
}


@pytest.mark.parametrize("provider", ["openai-chat", "anthropic", "gemini", "auto"])
@pytest.mark.parametrize("name", sorted(SDK))
def test_an_sdk_object_whose_reading_raises_is_answered(provider: str, name: str) -> None:
    # Found: sdk.py's attribute reads (getattr(item, "model_dump", None), _type_of, chat_entry) let it out.
    make, method = SDK[name]
    r = Reassembler(provider)
    with pytest.raises(InvalidInput, match=f"^event 1: .*'?s? {method} raised Boom") as raised:
        r.feed(make())
    assert isinstance(raised.value.__cause__, Boom)
    assert isinstance(r.close(), Result)


FORMATS = ["openai", "anthropic", "gemini", "responses", "ollama", "bedrock"]


def _history(fmt: str) -> list[dict[str, Any]]:
    """A user message, a turn of three calls (one id twice), one result and one orphan."""
    if fmt == "responses":
        calls: list[Any] = [responses_call("a", "f", "1"), responses_call("b", "g", "2")]
        return [{"role": "user", "content": "hi"}, *calls, responses_output("a", "r1"), responses_output("b", "r2")]
    calls = [call_item(fmt, cid, "f", tag) for cid, tag in (("a", "1"), ("a", "2"), ("b", "3"))]
    results = [result_item(fmt, rid, "f", tag) for rid, tag in (("a", "r1"), ("c", "r2"))]
    if fmt in ("openai", "ollama"):
        return [text(fmt, "user", "hi"), {"role": "assistant", "content": None, "tool_calls": calls}, *results]
    if fmt == "gemini":
        return [text(fmt, "user", "hi"), {"role": "model", "parts": calls}, {"role": "user", "parts": results}]
    return [text(fmt, "user", "hi"), {"role": "assistant", "content": calls}, {"role": "user", "content": results}]


HISTORY: dict[str, Callable[[Any], Any]] = {
    "check": history.check,
    "repair": history.repair,
    "repair-drop": lambda m: history.repair(m, history.RepairPolicy("drop-call")),
    "anything_dangling": history.anything_dangling,
    "detect_format": history.detect_format,
}


@pytest.mark.parametrize("kind", ["all", "str", "int", "dict", "list", "numpy", "__eq__"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_history_functions_answer_a_callers_object_in_the_messages(fmt: str, kind: str) -> None:
    # Found: 1,819 escapes over these formats (a block's type compared, a role, an id hashed, ...).
    base = _history(fmt)
    answered = 0
    for path in _paths(base):
        messages = _put(base, path, KINDS[kind])
        for name, function in HISTORY.items():
            try:
                function(messages)
            except InvalidInput as exc:
                if "caller-object-raises" in str(exc):
                    assert str(exc).startswith(f"{function.__name__}(): messages[{path[0]}]") or name in (
                        "repair-drop",
                    ), str(exc)
                    assert exc.__cause__ is not None
                    answered += 1
            except ToolcallFSMError:
                pass
    assert answered, "no position read the object"


def test_uniquify_answers_an_id_whose_hash_raises() -> None:
    # Found: set(taken) hashed a str subclass of the caller's, and its error left uniquify.
    with pytest.raises(InvalidInput, match=r"^uniquify\(\): taken\[0\] is the caller's own object of type HostileStr"):
        history.uniquify([{"id": "a"}], taken=[KINDS["str"]("b")])


def _outputs() -> tuple[list[Any], Result]:
    r = Reassembler("openai-chat")
    outputs = r.feed(_chunk(finish="tool_calls"))
    return outputs, r.close()


@pytest.mark.parametrize("kind", ["str", "int", "dict", "list", "__hash__", "__eq__"])
@pytest.mark.parametrize("flush", ["incremental", "on-finish"])
def test_delta_emitter_answers_a_callers_object_in_an_output(flush: str, kind: str) -> None:
    import attrs

    outputs, result = _outputs()
    answered = 0
    for at, output in enumerate(outputs):
        for field in attrs.fields(type(output)):
            bad = attrs.evolve(output, **{field.name: KINDS[kind](getattr(output, field.name))})
            try:
                DeltaEmitter(flush).chunks([*outputs[:at], bad, *outputs[at + 1 :]])
            except InvalidInput as exc:
                answered += "caller-object-raises" in str(exc)
                assert str(exc).startswith("DeltaEmitter.chunks(): outputs[")
            except ToolcallFSMError:
                pass
    DeltaEmitter(flush).finish(result)
    if kind in ("str", "int", "__hash__"):
        assert answered


@pytest.mark.parametrize("option", ["flush", "choice"])
def test_delta_emitter_answers_an_option_whose_comparison_raises(option: str) -> None:
    # Found: `flush not in choices` and `choice < 0` ran the caller's __eq__ and __lt__.
    with pytest.raises(InvalidInput, match=rf"^DeltaEmitter.__init__\(\): {option} is the caller's own object"):
        DeltaEmitter(**{option: KINDS["int"](1)})


@pytest.mark.parametrize("kind", ["str", "int"])
def test_assistant_message_answers_a_callers_object_the_result_kept(kind: str) -> None:
    # Found: a server tool result block is kept whole, so a str subclass of its tool_use_id (or an
    # int subclass of its index) reached fsm.messages, whose comparison of it let the error out.
    from fsm import messages

    vector = next(v for v in VECTORS if v.name == "anthropic-server-tool-use-apart")
    path = ("content_block", "tool_use_id") if kind == "str" else ("index",)
    events = [*vector.events[:4], _put(vector.events[4], path, KINDS[kind]), *vector.events[5:]]
    answered, result = _stream(vector, events, strict=False)
    del answered  # (the stream may stop at a later event that compares it: the result holds it all the same)
    with pytest.raises(InvalidInput, match=r"^assistant_message\(\): result\.server_tool_results\[0\]\.") as raised:
        messages.assistant_message(result, "anthropic")
    assert isinstance(raised.value.__cause__, Boom)


@pytest.mark.parametrize("one_shot", ["reassemble", "areassemble"])
def test_the_one_shot_functions_hand_a_callers_object_to_the_policy(one_shot: str) -> None:
    # Found: their isinstance(item, bytes) asked the item's own __class__, whose error left them.
    import asyncio

    from fsm import areassemble, reassemble

    with pytest.raises(InvalidInput, match=r"^event 1: it is the caller's own object of type _RaisingAll") as raised:
        if one_shot == "reassemble":
            reassemble([_RaisingAll()], "openai-chat")
        else:
            asyncio.run(areassemble([_RaisingAll()], "openai-chat"))
    assert isinstance(raised.value.__cause__, Boom)


OPTIONS: dict[str, Callable[[], dict[str, Any]]] = {
    "provider": lambda: {"provider": KINDS["str"]("openai-chat")},
    "taken": lambda: {"taken": [KINDS["str"]("a")]},
    "taken-itself": lambda: {"taken": KINDS["list"](["a"])},
    "choice": lambda: {"provider": "openai-chat", "choice": KINDS["int"](0)},
}


@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_reassembler_options_answer_a_callers_object(option: str) -> None:
    # Found: provider != "auto", taken's ids hashed and choice checked let the object's error out.
    with pytest.raises(InvalidInput, match=r"^Reassembler\.__init__\(\): .*caller-object-raises") as raised:
        Reassembler(**OPTIONS[option]())
    assert isinstance(raised.value.__cause__, Boom)


@pytest.mark.parametrize("data", ["raising-class", "raising-bytes"])
def test_feed_bytes_answers_a_callers_object_and_the_stream_goes_on(data: str) -> None:
    # Found: isinstance(data, bytes) asked the object's __class__; bytes(data) ran a subclass's __bytes__.
    r = Reassembler("openai-chat")
    if data == "raising-class":
        with pytest.raises(InvalidInput, match="feed_bytes takes bytes, not _RaisingAll"):
            r.feed_bytes(_RaisingAll())  # type: ignore[arg-type]
    else:
        with pytest.raises(InvalidInput, match=r"^feed_bytes\(\): it is the caller's own object of type Hostile"):
            r.feed_bytes(_hostile(bytes, ("__bytes__",))(b"x"))
    r.feed_bytes(b'data: {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}\n\n')
    assert r.close().text == "hi"  # nothing of it was taken in: the stream went on


@pytest.mark.parametrize("kind", ["int", "all", "numpy", "__eq__"])
def test_partial_answers_an_index_whose_comparison_raises(kind: str) -> None:
    # Found: `slot.ordinal == index` ran the index's own __eq__ (a numpy array's truth value raised).
    r = Reassembler("openai-chat")
    r.feed(_chunk())
    with pytest.raises(InvalidInput, match=r"^partial\(\): index is the caller's own object") as raised:
        r.partial(KINDS[kind](0))
    assert raised.value.__cause__ is not None
    assert r.partial(0) == {"a": 1}  # the stream and its previews go on
