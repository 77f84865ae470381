"""Keep every tool result paired across a conversation: id hygiene for what goes back to the model.

A reassembled turn is half the story: its calls run, their results come back, and the next request
replays the history. Two calls under one id make one result overwrite the other; strict providers
answer a history with a dangling or duplicate ``tool_call_id`` with HTTP 400. Each call id walks the
machine of specs/history.toml while the messages are read in order (OpenAI chat ``tool_calls`` /
``tool`` messages, which Cohere v2's are too, Anthropic ``tool_use`` / ``tool_result`` blocks, Gemini
``functionCall`` / ``functionResponse`` parts, OpenAI Responses call and output items, Ollama
``tool_calls`` / ``tool`` messages paired by tool name and order, Bedrock Converse ``toolUse`` /
``toolResult`` blocks); the findings its actions record are the report.

* :func:`uniquify`: the engine's deterministic ``<id>_d<n>`` renaming for a list of calls.
* :func:`check`: dangling calls, orphan results, duplicate results, ids reused within or across turns,
  messages that come empty where the API refuses them (``empty-message``).
* :func:`repair`: the change that makes a history acceptable without losing, swapping or inventing
  a result (within a turn, the k-th result with id x answers the k-th call with id x); returns
  what it changed.
* :func:`anything_dangling`: the one question an agent loop should ask before touching history.

Findings and changes number messages from 1. Malformed input raises
:class:`~fsm.errors.LocalProtocolError`, never a bare Python error.

The modules: ``findings`` (what a check reports), ``objects`` (SDK objects read as wire dicts),
``formats`` (reading each message format), ``detect`` (which format ``"auto"`` reads a history in:
policy auto-by-tool-content), ``empty`` (the messages that come empty), ``check`` (the
history machine's model and the walk), ``declined`` (what a Claude model that declined gave before a ``fallback``
block, left out), ``uniquify``, ``repair`` (deciding the edits), ``rewrite``
(writing them out) and ``changes`` (what repair is told and what it reports).
"""

from fsm.history import findings as _findings
from fsm.history.changes import Change, RepairPolicy
from fsm.history.check import CallId, anything_dangling, check, history_machine
from fsm.history.detect import detect_format
from fsm.history.findings import Finding, Format, Kind, Report
from fsm.history.repair import repair
from fsm.history.uniquify import Rename, uniquify

REJECTED = _findings.REJECTED
"""The kinds of finding a strict provider refuses a request for: every kind but ``reused``."""

__all__ = [
    "REJECTED",
    "CallId",
    "Change",
    "Finding",
    "Format",
    "Kind",
    "Rename",
    "RepairPolicy",
    "Report",
    "anything_dangling",
    "check",
    "detect_format",
    "history_machine",
    "repair",
    "uniquify",
]
