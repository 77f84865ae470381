"""A caller's own object that raised while what it handed in was read (policy ``caller-object-raises``).

A caller who feeds its own dicts, SDK objects, messages or outputs may put its own objects in them:
a numpy array for an index, a str subclass, a lazy proxy. The readers compare, hash and test such
values as they would JSON's, and the object's method may raise (a numpy array's ``__bool__``). That
error is the caller's input failing, not the engine's: it is answered with
:class:`~fsm.errors.InvalidInput` naming where the object sits and its type, the object's own error
kept as ``__cause__``.

What the readers raise on plain data (dicts, lists, tuples, str, int, float, bool, None, the
``Decimal`` the event parser keeps long numbers in, each of exactly that type, and this package's own
events and results) is the engine's own bug: :func:`caller_fault` leaves it to be raised as it is,
so no bug is dressed as the caller's. ``MemoryError`` is never answered (the caller has no mistake to
mend), nor what is no ``Exception`` (``KeyboardInterrupt``). Everything here but the wrapper's
``try`` runs only once something raised: no reader pays for it.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from fsm.errors import InvalidInput, ToolcallFSMError

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_OURS = frozenset({"fsm", "attrs", "attr", *sys.stdlib_module_names})
"""Whose objects are no caller's: this package's, the library it makes its types with, Python's."""
_STARRED = 0x04  # inspect.CO_VARARGS, without loading inspect

P = ParamSpec("P")
R = TypeVar("R")


def answers_callers(func: Callable[P, R]) -> Callable[P, R]:
    """``func``, a public function the caller hands its own objects to, with an error one of them
    raises answered as :func:`caller_fault` says (the function's arguments, by name, are what was
    handed in)."""

    @functools.wraps(func)
    def answered(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except ToolcallFSMError:
            raise
        except Exception as exc:
            import inspect

            try:
                given: dict[str, Any] | None = dict(inspect.signature(func).bind_partial(*args, **kwargs).arguments)
            except TypeError:  # the call itself is wrong (an unknown keyword): Python's own error stands
                given = None
            kept = given.pop("self", None) if given is not None else None
            fault = caller_fault(given, exc, f"{func.__qualname__}()", kept) if given is not None else None
            if fault is None:
                raise
            raise fault from exc

    return answered


def caller_fault(item: Any, exc: BaseException, where: str, kept: Any = None) -> InvalidInput | None:
    """The error that answers ``exc``, raised while ``item`` (what the caller handed in) was read,
    ``where`` being how the message names it (``event 3``), ``kept`` what the reader keeps from
    earlier input (a reassembler, an emitter): None when the error is no caller's (not an
    ``Exception``, a ``MemoryError``, or raised neither by an object of the caller's own nor where
    ``item`` or ``kept`` holds one)."""
    if not isinstance(exc, Exception) or isinstance(exc, MemoryError | ToolcallFSMError):
        return None
    raiser = _raiser(exc)
    found = _foreign(item, raiser, strict=True)
    if found is None:  # plain data now: an object of the caller's came before, and was kept
        before = (None, raiser[0]) if raiser is not None else _foreign(kept, None, strict=False)
        if before is None:
            return None
        said = f"{where}: an object of the caller's own of type {type(before[1]).__name__}, handed in before"
        method = f"its {raiser[1]}" if raiser is not None else "reading it"
    else:
        path, value = found
        said = f"{where}: {path or 'it'} is the caller's own object of type {type(value).__name__}, not plain data"
        method = (
            "reading it"
            if raiser is None
            else f"its {raiser[1]}"
            if raiser[0] is value
            else f"a {type(raiser[0]).__name__}'s {raiser[1]}"  # one it holds, or an attribute of it
        )
    fault = InvalidInput(f"{said}; {method} raised {type(exc).__name__} (policy caller-object-raises)")
    fault.__cause__ = exc  # the caller's own error, as it was
    return fault


def _raiser(exc: BaseException) -> tuple[Any, str] | None:
    """The object of the caller's own whose method the error came out of, and the method's name:
    the first frame of the traceback, outside this package, whose first argument is such an object
    (of no type of this package's, the standard library's or plain data's)."""
    tb = exc.__traceback__
    while tb is not None:
        frame, code = tb.tb_frame, tb.tb_frame.f_code
        if not code.co_filename.startswith(_PACKAGE) and (code.co_argcount or code.co_flags & _STARRED):
            this = frame.f_locals.get(code.co_varnames[0])  # self, or (def m(*args)) the args
            if not code.co_argcount:
                this = this[0] if type(this) is tuple and this else None
            if type(this).__module__.partition(".")[0] not in _OURS:
                return this, code.co_name
        tb = tb.tb_next
    return None


def _foreign(item: Any, raiser: tuple[Any, str] | None, *, strict: bool) -> tuple[str, Any] | None:
    """The object that raised when it is in ``item``, else the first of the caller's own, with the
    way to it (``choices[0].index``; empty for ``item`` itself); None when there is none. ``strict``:
    any value that is no plain data is the caller's (what it handed in); else only one of no type of
    this package's, the standard library's or plain data's (what a reader kept, among its own).
    Only dicts, lists, tuples, sets and this package's objects are looked into, by their types' own
    methods: none of the caller's code runs, however deep or hostile ``item`` is."""
    from decimal import Decimal

    import attrs

    data = {str, int, float, bool, type(None), Decimal}
    first: tuple[str, Any] | None = None
    # Each entry: a value, and the entry of the container it sits in and its key (for its path).
    nodes: list[tuple[Any, int, Any]] = [(item, -1, None)]
    seen: set[int] = set()  # the containers looked into: a dict that holds itself is looked into once
    n = 0
    while n < len(nodes):
        value, _, _ = nodes[n]
        kind = type(value)
        home = kind.__module__.partition(".")[0]
        if kind in (dict, list, tuple, set, frozenset) or home == "fsm":
            if id(value) not in seen:
                seen.add(id(value))
                nodes.extend((inner, n, key) for key, inner in _inside(value, kind, attrs.has(kind)))
                if kind is dict and first is None:
                    key = next((key for key in value if type(key) is not str), None)
                    first = (_path(nodes, n), key) if key is not None else None  # a key of its own: its dict
        elif kind not in data if strict else home not in _OURS:
            if raiser is not None and value is raiser[0]:
                return _path(nodes, n), value
            if first is None:
                first = (_path(nodes, n), value)
        n += 1
    return first


def _inside(value: Any, kind: type, made_by_attrs: bool) -> Any:
    """The (key, value) pairs a container or an object of this package's holds."""
    if kind is dict:
        return value.items()
    if kind in (list, tuple, set, frozenset):
        return enumerate(value)
    if made_by_attrs:
        import attrs

        return ((field.name, getattr(value, field.name)) for field in attrs.fields(kind))
    slots = [name for cls in kind.__mro__ for name in cls.__dict__.get("__slots__", ())]
    held = [(name, getattr(value, name)) for name in slots if name != "__weakref__" and hasattr(value, name)]
    return [*held, *getattr(value, "__dict__", {}).items()]


def _path(nodes: list[tuple[Any, int, Any]], n: int) -> str:
    parts: list[str] = []
    while nodes[n][1] >= 0:
        _, up, key = nodes[n]
        parts.append(f"[{key}]" if type(key) is int else f".{key}" if type(key) is str else "[...]")
        n = up
    path = "".join(reversed(parts)).lstrip(".")
    return path if len(path) <= 200 else f"{path[:200]}..."
