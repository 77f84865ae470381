"""Checks of an attrs instance's fields against their annotations: the events a caller feeds
(:func:`fsm.events.event_fault`) and the Result a next turn is built from
(:func:`fsm.messages.shared.check_result`) are held to the types their classes declare, by one
compiler, so a field's type is known in one place: its annotation.

A check is written out as Python from the annotations once per class (as attrs writes
``__init__``), so checking an instance costs a few type tests a field. Where a value is wrong, it
gives the way to it from the instance checked: field names, and positions in tuples.

The annotation forms known: ``Any``, ``None``, ``str`` (a subclass too: a str enum), ``int`` and
``bool`` (exactly: a bool is no int, a float no int), an enum (exactly), ``Literal[...]``,
``X | Y`` and ``Optional[X]``, ``dict[...]`` (any Mapping; its items unchecked), ``tuple[X, ...]``
(exactly a tuple; each item checked) and an attrs class (exactly; its fields checked, recursively).
A new form fails loudly when its class is first checked.
"""

from __future__ import annotations

import enum
import types
import typing
import weakref
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import attrs

from fsm.errors import InvalidInput

Path = tuple[str | int, ...]
"""The way from the instance checked to a wrong value: a field's name, or a position in a tuple.
Empty: the instance itself is not of the class."""

Check = Callable[[Any], Path | None]


class Wrong(NamedTuple):
    """A value that is not of its declared type, found by :func:`fault`."""

    path: Path
    """The way to it from the instance checked (see :data:`Path`)."""
    value: Any
    """The value itself."""
    declared: Any
    """What the annotation wants there (an item's type, for a position in a tuple)."""
    owner: Any
    """The innermost attrs instance on the way: its field holds the value, or the tuple that does."""
    field: str
    """That field's name (the field as a whole, where the value is an item of its tuple)."""


def fault(instance: Any, cls: type) -> Wrong | None:
    """The first value in ``instance`` (meant to be a ``cls``) that is not of its declared type, or
    None when every field is."""
    path = (_checks.get(cls) or compile_check(cls))(instance)
    return None if path is None else _walk(instance, cls, path)


def refuse_wrong(instance: Any, cls: type, name: str) -> None:
    """InvalidInput naming the first value in ``instance`` (a ``cls``, which the caller calls
    ``name``) that is not of its declared type, and what it must hold; an instance that passed
    before is not read again (see :func:`vouch`)."""
    if vouched(instance):
        return
    wrong = fault(instance, cls)
    if wrong is not None:
        said_type = said(wrong.declared)
        raise InvalidInput(f"{name}{where(wrong.path)} must be {said_type}, not {type(wrong.value).__name__}")
    vouch(instance)


def vouched(instance: Any) -> bool:
    """Whether :func:`vouch` was called for this very instance (not for an equal one)."""
    held = _sound.get(id(instance))
    return held is not None and held() is instance


def vouch(instance: Any) -> None:
    """Record that every field of ``instance`` is of its declared type: it passed :func:`fault`, or
    was made only of values that would. Kept while the instance lives; sound for frozen classes,
    whose fields cannot change (object.__setattr__ aside). Every Reassembler's close() calls this,
    so it takes no callback per instance: the records of instances gone are dropped once they are
    half of all (amortised constant work, and at most twice the live records plus a few)."""
    global _prune_at
    _sound[id(instance)] = weakref.ref(instance)
    if len(_sound) >= _prune_at:
        # Over a copy: another thread's close() may add a record while this one prunes, and a loop
        # over the dict itself would then raise RuntimeError. So would list(_sound.items()), whose
        # allocations can start a collection whose finalizers let another thread run mid-loop;
        # dict.copy() clones the table before it allocates anything that can. A record that thread
        # put under a dead one's id since is left alone.
        for key, held in _sound.copy().items():
            if held() is None and _sound.get(key) is held:
                _sound.pop(key, None)
        _prune_at = 2 * len(_sound) + 1024


_sound: dict[int, weakref.ref[Any]] = {}
_prune_at = 1024
_checks: dict[type, Check] = {}


def compile_check(cls: type) -> Check:
    """The check of ``cls``: a function of an instance giving the :data:`Path` to its first wrong
    value, or None. Written out from the annotations (the source is built here from them alone)."""
    attrs.resolve_types(cls)
    scope: dict[str, Any] = {"Mapping": Mapping}
    lines = ["def check(o):", f"    if type(o) is not {_named(scope, cls)}:", "        return ()"]
    for field in attrs.fields(cls):
        name, declared = field.name, field.type
        if declared is Any:
            continue
        lines.append(f"    v = o.{name}")
        if attrs.has(declared):  # a nested instance: the way goes on into it
            inner = _named(scope, _checks.get(declared) or compile_check(declared))
            lines += [f"    w = {inner}(v)", "    if w is not None:", f"        return ({name!r}, *w)"]
        elif typing.get_origin(declared) is tuple and attrs.has(_item(declared)):
            inner = _named(scope, _checks.get(_item(declared)) or compile_check(_item(declared)))
            lines += ["    if type(v) is not tuple:", f"        return ({name!r},)"]
            lines += ["    for i, x in enumerate(v):", f"        w = {inner}(x)", "        if w is not None:"]
            lines.append(f"            return ({name!r}, i, *w)")
        elif typing.get_origin(declared) is tuple:
            test = _test(_item(declared), "x", scope)
            lines += ["    if type(v) is not tuple:", f"        return ({name!r},)"]
            lines += ["    for i, x in enumerate(v):", f"        if not ({test}):", f"            return ({name!r}, i)"]
        else:
            lines += [f"    if not ({_test(declared, 'v', scope)}):", f"        return ({name!r},)"]
    lines.append("    return None")
    exec("\n".join(lines), scope)  # the source is built above from the annotations alone
    check: Check = scope["check"]
    _checks[cls] = check
    return check


def _named(scope: dict[str, Any], value: Any) -> str:
    name = f"k{len(scope)}"
    scope[name] = value
    return name


def _item(declared: Any) -> Any:
    args = typing.get_args(declared)
    if len(args) != 2 or args[1] is not Ellipsis:
        raise TypeError(f"no type test for {declared!r}: only tuple[X, ...]")
    return args[0]


def _options(declared: Any) -> tuple[Any, ...] | None:
    if isinstance(declared, types.UnionType) or typing.get_origin(declared) is typing.Union:
        return typing.get_args(declared)
    return None


def _test(declared: Any, v: str, scope: dict[str, Any]) -> str:
    """A Python expression true when the value named ``v`` is of the annotation ``declared``."""
    options = _options(declared)
    if options is not None:  # None first: it is the common value, and an ABC's isinstance is slow
        options = tuple(sorted(options, key=lambda option: option is not type(None)))
        return " or ".join(f"({_test(option, v, scope)})" for option in options)
    if declared is Any:
        return "True"
    if declared is type(None) or declared is None:
        return f"{v} is None"
    origin = typing.get_origin(declared)
    if origin is typing.Literal:  # of the very type as well as equal: True is no 1
        allowed = _named(scope, typing.get_args(declared))
        return f"any(type({v}) is type(a) and {v} == a for a in {allowed})"
    if origin in (dict, Mapping):
        return f"type({v}) is dict or isinstance({v}, Mapping)"
    if declared is str:
        return f"isinstance({v}, str)"
    if declared in (int, bool) or (isinstance(declared, type) and issubclass(declared, enum.Enum)):
        return f"type({v}) is {_named(scope, declared)}"
    raise TypeError(f"no type test for {declared!r}")  # a new annotation form (or an attrs class in a union)


def _walk(instance: Any, cls: type, path: Path) -> Wrong:
    """The wrong value at the end of ``path``, with what was declared there."""
    value, owner, field = instance, instance, ""
    declared: Any = cls
    for step in path:
        if isinstance(step, str):
            owner, field = value, step
            declared = attrs.fields_dict(type(value))[step].type
            value = getattr(value, step)
        else:
            declared, value = _item(declared), value[step]
    return Wrong(path, value, declared, owner, field)


def said(declared: Any) -> str:
    """The annotation ``declared`` in words, for a message: ``an int or None``, ``a tuple of str``."""
    options = _options(declared)
    if options is not None:
        named = [said(option) for option in options if option is not type(None)]
        return " or ".join(named + ["None"] * (len(named) < len(options)))
    if declared is Any:
        return "anything"
    origin = typing.get_origin(declared)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(declared))
    if origin is tuple:
        return f"a tuple of {said(_item(declared)).removeprefix('a ').removeprefix('an ')}"
    if origin in (dict, Mapping):
        return "a dict"
    name = getattr(declared, "__name__", str(declared))
    if isinstance(declared, type) and issubclass(declared, enum.Enum):
        return f'a {name} ({name}("{next(iter(declared)).value}"), ...)'
    return f"{'an' if name[0] in 'aeiouAEIOU' else 'a'} {name}"


def where(path: Path) -> str:
    """The path as Python would reach it: ``.calls[0].output_index``."""
    return "".join(f".{step}" if isinstance(step, str) else f"[{step}]" for step in path)
