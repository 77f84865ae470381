"""toolcall-fsm: reassemble streamed LLM tool calls with an explicit finite-state machine."""

from fsm.errors import (
    FramingError,
    LimitExceeded,
    LocalProtocolError,
    RemoteProtocolError,
    SpecError,
    ToolcallFSMError,
    UnsupportedProvider,
)
from fsm.events import ArgumentsFragment, ArgumentsSnapshot, CallEnd, CallRef, CallSeen, StreamEnd
from fsm.options import Limits, Policies
from fsm.reassembler import Reassembler
from fsm.reemit import DeltaEmitter, FlushPolicy
from fsm.results import ArgumentsDelta, CallFinished, CallNamed, CallOpened, CallStatus, Diagnostic, Result, ToolCall

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
    "DeltaEmitter",
    "Diagnostic",
    "FlushPolicy",
    "FramingError",
    "LimitExceeded",
    "Limits",
    "LocalProtocolError",
    "Policies",
    "Reassembler",
    "RemoteProtocolError",
    "Result",
    "SpecError",
    "StreamEnd",
    "ToolCall",
    "ToolcallFSMError",
    "UnsupportedProvider",
]
