"""Constructors that build frozen attrs objects by position, at a fraction of what attrs' own
``__init__`` costs: the engine's outputs and results (:mod:`fsm.results`) and its events
(:mod:`fsm.events`) are built with them on the hot path."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

_T = TypeVar("_T", bound=attrs.AttrsInstance)


def positional(cls: type[_T], converted: Mapping[str, str] | None = None) -> Callable[..., _T]:
    """A constructor of the frozen class ``cls`` taking every field by position: it builds the very
    object ``cls(...)`` builds (test_results_built_by_position_equal_attrs_built_ones). attrs' own
    ``__init__`` goes through ``object.__setattr__`` for each field, because the class refuses
    assignment, and a slot's descriptor called from Python costs nearly as much; on the hot path
    (four of these per call, nineteen fields a stream's Result) that was most of what building
    the outputs cost. So the object is made as a private subclass that adds no field and allows
    assignment (the same memory layout), its slots set by plain assignments, and then given its
    class, ``cls``: from then on it is frozen like any other. Only for classes with no validator,
    converter or post-init hook, which would be skipped here (checked), except the converters
    ``converted`` writes out: field name -> the expression of the argument that does what the
    field's converter does (``"id or None"``), each held to the converter by a test. The
    expression is the caller's own source, never data's."""
    fields = attrs.fields(cls)
    converted = converted or {}
    if any(bool(f.converter) != (f.name in converted) for f in fields) or not converted.keys() <= {
        f.name for f in fields
    }:
        raise TypeError(f"{cls.__name__} does more in __init__ than set its fields")
    names = [f.name for f in fields]
    being_built = unfrozen(cls, converted=True)
    scope: dict[str, Any] = {"being_built": being_built, "cls": cls}
    # The last fields that have a plain default take it as the argument's (a factory's would be
    # one object shared by every call: such a field, and those before it, are always given).
    params = list(names)
    for at in range(len(fields) - 1, -1, -1):
        default = fields[at].default
        if default is attrs.NOTHING or isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            break
        scope[f"default_{names[at]}"] = default
        params[at] = f"{names[at]}=default_{names[at]}"
    lines = [f"def build({', '.join(params)}):", "    made = being_built()"]
    lines += [f"    made.{name} = {converted.get(name, name)}" for name in names]
    lines += ["    made.__class__ = cls", "    return made"]
    exec("\n".join(lines), scope)  # the source is made here, from the fields' own names
    built: Callable[..., _T] = scope["build"]
    return built


_UNFROZEN: dict[type, Callable[[], Any]] = {}


def unfrozen(cls: type[attrs.AttrsInstance], *, converted: bool = False) -> Callable[[], Any]:
    """The assignable twin of the frozen class ``cls`` that :func:`positional`'s constructors
    build in: a private subclass that adds no field (the same memory layout) and allows
    assignment. A hot caller may build one of ``cls`` in line, a Python frame less than the
    constructor's call: make the twin, assign every field of ``cls`` (an unset slot has no value,
    and attrs' methods would raise on it), then assign ``cls`` to its ``__class__``, from which
    on it is frozen like any other (test_outputs_built_in_line_equal_attrs_built_ones). Only for
    classes whose ``__init__`` only sets its fields (checked): no validator, no converter (unless
    ``converted``: positional's caller writes them out), no post-init hook."""
    fields = attrs.fields(cls)
    if (
        any(f.validator or not f.init or (f.converter and not converted) for f in fields)
        or hasattr(cls, "__attrs_post_init__")
        or cls.__new__ is not object.__new__
    ):
        raise TypeError(f"{cls.__name__} does more in __init__ than set its fields")
    twin = _UNFROZEN.get(cls)
    if twin is None:  # (typed as a maker of Any: mypy would hold the twin's fields frozen as cls's)
        # Both hooks undone: with either one left, every assignment would go through Python code.
        # And object's own __init__ (C, taking nothing), so that calling the class makes the bare
        # object: a call of object.__new__ on it goes through its argument-checking wrapper, which
        # cost more.
        undone = {
            "__slots__": (),
            "__setattr__": object.__setattr__,
            "__delattr__": object.__delattr__,
            "__init__": object.__init__,
            "__module__": cls.__module__,
        }
        twin = _UNFROZEN[cls] = type(f"{cls.__name__}BeingBuilt", (cls,), undone)
    return twin
