"""toolcall-fsm: reassemble streamed LLM tool calls with an explicit finite-state machine.

Start with :class:`Reassembler`: feed it a provider's stream (bytes, wire dicts or SDK objects) and
``close()`` it for a :class:`Result`, or hand a whole stream to :func:`reassemble` (:func:`areassemble`).
:mod:`fsm.messages` builds the next request from the result; :mod:`fsm.history` checks and repairs the
conversation the calls go back into. Everything a user needs is importable from here; the subpackages are internals.
"""

__version__ = "0.1.0"
"""The package's version: the single source, read by the build (pyproject's dynamic version) and the CLI."""

# The public names are loaded on first use (PEP 562), so `import fsm` costs next to nothing and a
# program pays only for what it touches: `from fsm import Reassembler` still imports the engine, and
# `from fsm import messages` the message builders. Type checkers, IDEs and pdoc read the imports
# below; at run time `__getattr__` resolves each name from the module _EXPORTS gives for it.
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing; type checkers and pdoc read it as true

if TYPE_CHECKING:
    from fsm import messages
    from fsm.errors import (
        FramingError,
        LimitExceeded,
        LocalProtocolError,
        RemoteProtocolError,
        SpecError,
        StateError,
        ToolcallFSMError,
        UnsupportedProvider,
    )
    from fsm.events import (
        ArgumentsFragment,
        ArgumentsSnapshot,
        CallEnd,
        CallRef,
        CallSeen,
        Event,
        StreamEnd,
    )
    from fsm.interrupted import result_so_far
    from fsm.oneshot import areassemble, reassemble
    from fsm.options import (
        CumulativeArguments,
        EmptyArguments,
        IdenticalText,
        IdRotation,
        Limits,
        Policies,
        StrayInput,
    )
    from fsm.reassembler import Reassembler
    from fsm.reemit import DeltaEmitter, FlushPolicy
    from fsm.results import (
        ArgumentsDelta,
        CallFinished,
        CallNamed,
        CallOpened,
        CallStatus,
        Compaction,
        ContentDelta,
        Diagnostic,
        Output,
        Reasoning,
        ReasoningData,
        Result,
        ServerToolResult,
        Severity,
        TextPart,
        ToolCall,
    )

_EXPORTS = {
    "messages": "fsm.messages",
    **dict.fromkeys(
        [
            "FramingError",
            "LimitExceeded",
            "LocalProtocolError",
            "RemoteProtocolError",
            "SpecError",
            "StateError",
            "ToolcallFSMError",
            "UnsupportedProvider",
        ],
        "fsm.errors",
    ),
    **dict.fromkeys(
        ["ArgumentsFragment", "ArgumentsSnapshot", "CallEnd", "CallRef", "CallSeen", "Event", "StreamEnd"],
        "fsm.events",
    ),
    "result_so_far": "fsm.interrupted",
    **dict.fromkeys(["areassemble", "reassemble"], "fsm.oneshot"),
    **dict.fromkeys(
        ["CumulativeArguments", "EmptyArguments", "IdenticalText", "IdRotation", "Limits", "Policies", "StrayInput"],
        "fsm.options",
    ),
    "Reassembler": "fsm.reassembler",
    **dict.fromkeys(["DeltaEmitter", "FlushPolicy"], "fsm.reemit"),
    **dict.fromkeys(
        [
            "ArgumentsDelta",
            "CallFinished",
            "CallNamed",
            "CallOpened",
            "CallStatus",
            "Compaction",
            "ContentDelta",
            "Diagnostic",
            "Output",
            "Reasoning",
            "ReasoningData",
            "Result",
            "ServerToolResult",
            "Severity",
            "TextPart",
            "ToolCall",
        ],
        "fsm.results",
    ),
}
"""Where each public name lives: the module to import the first time the name is used."""


if not TYPE_CHECKING:  # hidden from type checkers, which would otherwise accept any name as fsm.<name>

    def __getattr__(name: str) -> object:
        """Import a public name's module on first use and keep the name here, so later uses are plain
        attribute lookups."""
        where = _EXPORTS.get(name)
        if where is None:
            raise AttributeError(f"module 'fsm' has no attribute {name!r}")
        from importlib import import_module

        module = import_module(where)
        value = module if where == f"fsm.{name}" else getattr(module, name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})


__all__ = [
    "ArgumentsDelta",
    "ArgumentsFragment",
    "ArgumentsSnapshot",
    "CallEnd",
    "CallFinished",
    "CallNamed",
    "CallOpened",
    "CallRef",
    "CallSeen",
    "CallStatus",
    "Compaction",
    "ContentDelta",
    "CumulativeArguments",
    "DeltaEmitter",
    "Diagnostic",
    "EmptyArguments",
    "Event",
    "FlushPolicy",
    "FramingError",
    "IdRotation",
    "IdenticalText",
    "LimitExceeded",
    "Limits",
    "LocalProtocolError",
    "Output",
    "Policies",
    "Reasoning",
    "ReasoningData",
    "Reassembler",
    "RemoteProtocolError",
    "Result",
    "ServerToolResult",
    "Severity",
    "SpecError",
    "StateError",
    "StrayInput",
    "StreamEnd",
    "TextPart",
    "ToolCall",
    "ToolcallFSMError",
    "UnsupportedProvider",
    "__version__",
    "areassemble",
    "messages",
    "reassemble",
    "result_so_far",
]
