"""SDK objects written as their dumps, without the dump: :func:`plain_dump` makes the dict pydantic's
``model_dump`` makes of a plain model (its fields as declared, no serializer, alias or exclusion of
its own), at a fraction of its cost, for :func:`fsm.wire.sdk.as_mapping`; :func:`plain_class` tells
such a model's class."""

from __future__ import annotations

import typing
from typing import Any


def plain_dump(item: Any, depth: int = 4) -> dict[str, Any] | None:
    """The dict ``model_dump`` makes of ``item`` for as_mapping, key for key and in its order, made
    without it (some 3.5 us an event) when ``item`` is a plain pydantic model: its fields set hold
    text, integers, booleans, None or (``depth`` levels down) plain models of the types their fields
    declare, or lists of those, and its extra fields, if any, text, numbers or None; no alias, no
    serializer or computed field, no ``model_dump`` of its own. None for anything else: the dump makes it
    (test_a_plain_dump_is_the_dump)."""
    cls = type(item)
    fields = _PLAIN_CLASSES.get(cls)
    if fields is None:
        fields = kept(_PLAIN_CLASSES, cls, _plain_fields(cls))
    if not fields:
        return None
    try:
        given, values, extra = item.__pydantic_fields_set__, item.__dict__, item.__pydantic_extra__
    except AttributeError:  # a model built without its __init__: the dump says what it makes of it
        return None
    # Fields the model does not declare (DeepSeek's reasoning_content) come last, read first: one
    # of another kind (Groq's x_groq object) leaves the whole object to the dump at once.
    if extra and any((value is not None and type(value) not in _SCALARS) for value in extra.values()):
        return None
    if extra and "snapshot" in extra:  # as_mapping leaves it out
        return None
    out: dict[str, Any] = {}
    for name, declared in fields:  # the dump's order: the fields as declared, those set
        if name not in given:
            continue
        value = values.get(name, _ABSENT)
        kind = type(value)
        if value is None or (kind in _SCALARS and (kind in declared.types or declared.anything)):
            out[name] = value  # _written's commonest case, without a call for it: most fields are text
            continue
        if kind is list and declared.listed and depth:
            written: Any = [_written(each, declared, depth) for each in value]
            if any(each is _ABSENT for each in written):
                return None
        else:
            written = _written(value, declared, depth)
            if written is _ABSENT:
                return None
        out[name] = written
    if extra:
        out.update(extra)
    return out


def _written(value: Any, declared: _Declared, depth: int) -> Any:
    """``value`` as plain_dump writes it for a field that declares ``declared`` (a list's item for
    a list), or _ABSENT when only the dump can write it."""
    kind = type(value)
    if value is None or (kind in _SCALARS and (kind in declared.types or declared.anything)):
        return value  # of a type its field declares: pydantic writes it as it is
    if depth and kind in declared.types and (inner := plain_dump(value, depth - 1)) is not None:
        return inner
    return _ABSENT


class _Declared:
    """What a field's annotation lets pydantic write as it is: values of these classes (a model of
    a subclass beyond them would lose the fields they lack; a bool in an int field is written as a
    number), any value at all (``Any``), a list."""

    __slots__ = ("anything", "listed", "types")

    def __init__(self, annotation: Any) -> None:
        self.anything = self.listed = False
        types: set[type] = set()
        todo: list[Any] = [annotation]
        seen: list[Any] = []
        while todo:
            each = todo.pop()
            if any(each is done for done in seen):
                continue
            seen.append(each)
            if each is typing.Any or each is object:
                self.anything = True
                continue
            origin = typing.get_origin(each)
            if origin is typing.Literal:
                types.update(type(value) for value in typing.get_args(each))
                continue
            self.listed = self.listed or origin is list
            if isinstance(each, type):
                types.add(each)
            todo += typing.get_args(each)
        self.types = frozenset(types)


def _plain_fields(cls: type) -> tuple[tuple[str, _Declared], ...]:
    """A plain model's fields in order, each with what its annotation declares; none for any other
    class."""
    if not plain_class(cls):
        return ()
    return tuple((name, _Declared(info.annotation)) for name, info in cls.__pydantic_fields__.items())  # type: ignore[attr-defined]


def plain_class(cls: type) -> bool:
    fields = getattr(cls, "__pydantic_fields__", None)
    decorators = getattr(cls, "__pydantic_decorators__", None)
    dumps = next((c for c in cls.__mro__ if "model_dump" in c.__dict__), None)
    return (
        isinstance(fields, dict)
        and bool(fields)
        and not getattr(cls, "__pydantic_root_model__", False)  # dumped as its root value, no dict
        and dumps is not None
        and dumps.__module__ == "pydantic.main"  # no model_dump of an SDK's own
        and decorators is not None
        and not decorators.field_serializers
        and not decorators.model_serializers
        and not getattr(cls, "__pydantic_computed_fields__", None)
        and "snapshot" not in fields  # left out of the dump
        and all(f.alias in (None, n) and f.serialization_alias in (None, n) for n, f in fields.items())
        and all(_as_declared(f) for f in fields.values())
    )


def _as_declared(info: Any) -> bool:
    """Does pydantic write this field as its annotation declares: not left out of the dump
    (``exclude``, ``exclude_if``: anthropic's ``ParsedTextBlock.parsed_output``), with no serializer
    of its own in its metadata or anywhere in its annotation (``Annotated[str, PlainSerializer(...)]``)?"""
    if info.exclude or getattr(info, "exclude_if", None) is not None:
        return False
    todo, walked = [info.annotation, *info.metadata], 0
    while todo and walked < 200:  # an annotation is a small tree; the bound only guards the walk
        each, walked = todo.pop(), walked + 1
        if type(each).__module__ == "pydantic.functional_serializers":
            return False
        todo += typing.get_args(each)
    return not todo


def kept(cache: dict[type, Any], cls: type, value: Any) -> Any:
    """``value``, kept in ``cache`` (what the SDK readers learnt of a class of objects fed) for
    ``cls``: a cache of a few classes, nearly always, but a program that makes its classes as it
    runs (pydantic's ``create_model``) would have it keep every one of them alive, so it is emptied
    when full (it learns the few again, once each)."""
    if len(cache) >= CLASSES_KEPT:
        cache.clear()
    cache[cls] = value
    return value


CLASSES_KEPT = 512
"""The classes each of the SDK readers' caches holds at the most."""
_PLAIN_CLASSES: dict[type, tuple[tuple[str, _Declared], ...]] = {}
"""Per class of object fed: its fields when it is a plain model (see _plain_fields), else none."""
_SCALARS = (str, int, bool)  # a float may be written otherwise (inf and nan as null)
_ABSENT = object()
