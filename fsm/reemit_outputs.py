"""What ``DeltaEmitter.chunks()`` takes: the outputs of one stream's reassembler, each once, each as
the reassembler makes it. Anything else is refused before any output changes what was sent
(``InvalidInput``, nothing of the list sent): an item that is no output; an output built by hand
whose fields are not of their declared types (a ``CallFinished`` of no call, a ``ContentDelta`` of
another kind, a piece of text that is no string), which would raise out of the emitter or go out in
a chunk no client reads (hostile audit 83); and a ``CallOpened`` of a call already opened (another
stream's outputs, or a list fed twice), which would give the client two ids under one index. A
field holding an object of the caller's own is left to be answered where it is read (policy
caller-object-raises), as before.

The commonest outputs (``ArgumentsDelta``, ``ContentDelta``: one a piece of the stream) are checked
in line, a few type tests each; the others, one a call, by :func:`fsm.fieldcheck.fault`."""

from __future__ import annotations

from typing import Any

from fsm.errors import InvalidInput, shown
from fsm.fieldcheck import fault, said, where
from fsm.results import ArgumentsDelta, CallFinished, CallOpened, ContentDelta, Output

_KINDS = ("text", "reasoning", "refusal")
_PLAIN = frozenset({str, int, float, bool, type(None), dict, list, tuple})


def _plain(value: Any) -> bool:
    """Whether ``value`` is plain data or this package's: an object of the caller's own is answered
    where it is read, as every reader answers one (:mod:`fsm.foreign`)."""
    return type(value) in _PLAIN or type(value).__module__.split(".")[0] == "fsm"


def checked(outputs: list[Any] | tuple[Any, ...], opened: dict[int, str]) -> set[int]:
    """The calls ``outputs`` finish, each output checked (see the module docstring); ``opened`` is
    the calls whose header went out, by index."""
    opening: set[int] | None = None  # the calls these outputs open
    finishing: set[int] = set()
    for at, item in enumerate(outputs):
        kind = type(item)
        if kind is ArgumentsDelta:
            if type(item.text) is str and type(item.index) is int:
                continue
        elif kind is ContentDelta:
            if type(item.text) is str and item.kind in _KINDS and (item.block is None or type(item.block) is int):
                continue
        elif not issubclass(kind, Output):  # (isinstance would ask a caller's object its __class__)
            raise InvalidInput(
                f"chunks takes outputs (CallOpened, ArgumentsDelta, ...), not {kind.__name__}"
                f" (outputs[{at}]); nothing was sent"
            )
        wrong = fault(item, kind)
        if wrong is not None and _plain(wrong.value):  # (a caller's own object: policy caller-object-raises)
            raise InvalidInput(
                f"outputs[{at}]{where(wrong.path)} must be {said(wrong.declared)}, not {type(wrong.value).__name__},"
                f" as a reassembler makes it; nothing was sent"
            )
        if isinstance(item, CallOpened):  # (an Output: no caller's __class__ to ask)
            if item.index in opened or (opening is not None and item.index in opening):
                # A stream opens each call once: a second header for its index would give the
                # client two ids and the text of two calls under one (two streams' outputs).
                raise InvalidInput(
                    f"outputs[{at}] opens call {item.index} again ({shown(item.id)}): one emitter takes"
                    " the outputs of one stream, each once; nothing was sent"
                )
            opening = opening or set()
            opening.add(item.index)
        elif isinstance(item, CallFinished):
            finishing.add(item.call.index)
    return finishing
