"""The engine's deterministic ``<id>_d<n>`` renaming, for a list of calls a caller holds."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import attrs

from fsm.engine.ids import IdAllocator
from fsm.errors import LocalProtocolError, kind
from fsm.foreign import answers_callers
from fsm.results import ToolCall

C = TypeVar("C", ToolCall, Mapping[str, Any])


@attrs.frozen
class Rename:
    """One call :func:`uniquify` gave a new id."""

    position: int
    """The call's index in the list given (the ``<position>`` of ``call_<position>``)."""
    old: str | None
    """The id the call had (None when it had none)."""
    new: str
    """The id it has now."""


@answers_callers
def uniquify(calls: Iterable[C], taken: Iterable[str] = ()) -> tuple[list[C], list[Rename]]:
    """Give every call a distinct id with the engine's rule: in order, a call keeps its id unless an
    earlier call holds it (as its own or as its rename), and then becomes ``<id>_d2``, ``<id>_d3``,
    ... (the first such id no earlier call holds: ``[a, a, a_d2]`` gives ``a``, ``a_d2``,
    ``a_d2_d2``, as a stream gives them); ids in ``taken`` (earlier turns) are avoided;
    a blank id becomes ``call_<position>``. Same input, same output. Returns the renames so results
    can be mapped back. A call is a ToolCall or a mapping with an ``id``; an OpenAI Responses call
    item (one with a ``call_id``, beside its own item ``id``) is renamed by its ``call_id``, and a
    ToolCall with a ``reply_id`` (the id it is answered by) by that. A mapping comes back as a new
    dict, its values the call's own (a ``function`` dict the same object: policy repair-keeps-objects)."""
    if isinstance(calls, (str, bytes)) or not isinstance(calls, Iterable):
        raise LocalProtocolError("calls must be a list of calls")
    taken = list(taken) if isinstance(taken, Iterable) and not isinstance(taken, (str, bytes)) else [taken]
    if not all(isinstance(t, str) for t in taken):
        raise LocalProtocolError("taken must be a list of id strings")
    allocator = IdAllocator(taken)
    out: list[Any] = []
    renames: list[Rename] = []
    for position, call in enumerate(calls):
        if not isinstance(call, (ToolCall, Mapping)):
            raise LocalProtocolError(f"call {position + 1}: a call must be a ToolCall or an object")
        field = "call_id" if isinstance(call, Mapping) and "call_id" in call else "id"
        # A ToolCall goes out under its reply_id where it has one (a late wire id): that is the id to keep unique.
        old = (call.reply_id or call.id) if isinstance(call, ToolCall) else (call.get(field) or None)
        if old is not None and not isinstance(old, str):
            raise LocalProtocolError(f"call {position + 1}: its id must be a string, not {kind(old)}")
        new = allocator.claim(old) if old else allocator.synthesize(position)
        if new != old:
            renames.append(Rename(position, old, new))
        if isinstance(call, ToolCall):
            out.append(attrs.evolve(call, reply_id=new) if call.reply_id else attrs.evolve(call, id=new))
        else:
            out.append({**call, field: new})
    return out, renames
