"""Gemini's ``codeExecutionResult`` part as langchain-google-genai yields it, read back as that part:
v0 a ``code_execution_result`` block (the output under that name, the outcome as the enum's
number), v1 a ``server_tool_result`` whose ``extras`` name the ``block_type`` and hold the outcome."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fsm.events import Event, ServerResultBlock

OUTCOMES = {0: "OUTCOME_UNSPECIFIED", 1: "OUTCOME_OK", 2: "OUTCOME_FAILED", 3: "OUTCOME_DEADLINE_EXCEEDED"}
"""google-genai's ``Outcome`` by number, as the REST wire names it."""
CODE_RESULT = "code_execution_result"


def code_result(block: Mapping[str, Any], kind: Any, notes: list[tuple[str, str]]) -> list[Event] | None:
    """The part (``{"codeExecutionResult": {"outcome", "output"}}``) a block stands for, as its
    event; None when it is no code result. One the Gemini decoder would not read (an outcome or
    output of a wrong type) is reported into ``notes`` as the decoder reports it, and not read."""
    extras = block.get("extras")
    if kind == CODE_RESULT:
        output, outcome = block.get("code_execution_result"), block.get("outcome")
    elif kind == "server_tool_result" and isinstance(extras, Mapping) and extras.get("block_type") == CODE_RESULT:
        output, outcome = block.get("output"), extras.get("outcome")
    else:
        return None
    outcome = getattr(outcome, "value", outcome)  # an enum member, as a model may hold it
    if type(outcome) is int:
        outcome = OUTCOMES.get(outcome, outcome)
    ran = {"outcome": outcome} if outcome is not None else {}
    if output is not None:
        ran["output"] = output
    from fsm.wire.decoders.gemini import code_result_fault  # a stream of no Gemini code loads no Gemini decoder

    fault = code_result_fault(ran)
    if fault is not None:
        notes.append(("part-not-reassembled", f"a {kind!r} content block whose {fault}: it is not read"))
        return []
    return [ServerResultBlock({"codeExecutionResult": ran})]
