"""toolcall-fsm: reassemble streamed LLM tool calls with an explicit finite-state machine.

Start with :class:`Reassembler`: feed it a provider's stream (bytes, wire dicts or SDK objects) and
``close()`` it for a :class:`Result`, or hand a whole stream to :func:`reassemble` (:func:`areassemble`).
:mod:`fsm.messages` builds the next request from the result; :mod:`fsm.history` checks and repairs the
conversation the calls go back into. Everything a user needs is importable from here; the subpackages are internals.
"""

__version__ = "0.1.0"
"""The package's version: the single source, read by the build (pyproject's dynamic version) and the CLI."""

from fsm import messages  # noqa: E402
from fsm.errors import (  # noqa: E402  (the version is declared first so the build can read it alone)
    FramingError,
    LimitExceeded,
    LocalProtocolError,
    RemoteProtocolError,
    SpecError,
    StateError,
    ToolcallFSMError,
    UnsupportedProvider,
)
from fsm.events import (  # noqa: E402
    ArgumentsFragment,
    ArgumentsSnapshot,
    CallEnd,
    CallRef,
    CallSeen,
    Event,
    StreamEnd,
)
from fsm.oneshot import areassemble, reassemble  # noqa: E402
from fsm.options import (  # noqa: E402
    CumulativeArguments,
    EmptyArguments,
    IdenticalText,
    IdRotation,
    Limits,
    Policies,
)
from fsm.reassembler import Reassembler  # noqa: E402
from fsm.reemit import DeltaEmitter, FlushPolicy  # noqa: E402
from fsm.results import (  # noqa: E402
    ArgumentsDelta,
    CallFinished,
    CallNamed,
    CallOpened,
    CallStatus,
    Diagnostic,
    Output,
    Reasoning,
    Result,
    Severity,
    ToolCall,
)

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
    "Reassembler",
    "RemoteProtocolError",
    "Result",
    "Severity",
    "SpecError",
    "StateError",
    "StreamEnd",
    "ToolCall",
    "ToolcallFSMError",
    "UnsupportedProvider",
    "__version__",
    "areassemble",
    "messages",
    "reassemble",
]
