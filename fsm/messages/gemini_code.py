"""The ``"gemini"`` next turn's code runs: each ``executableCode`` part Gemini ran itself (a server
call of type ``executable_code``) goes back with the ``codeExecutionResult`` part that gave its
outcome, right before it, in the result's place among the parts, so the model keeps what its code
did (and a signature on either part goes back on it)."""

from __future__ import annotations

from collections.abc import Mapping

from fsm.messages.shared import Message
from fsm.results import Result, ToolCall


def code_runs(result: Result) -> list[tuple[int | None, Message | list[Message]]]:
    """(place, [code part, result part]) for each result that answers a code part: the one its
    ``id`` names, else the earliest code part no result answered yet. A code part no result
    answered (a stream cut between them) does not go back, nor does a result no code part is left
    for: Gemini runs the code within its turn, and one half alone says what did not happen. Such a
    result still holds its place, as ``(place, [])``: a call after it must not take it and move
    before the parts that came between them."""
    codes = [c for c in result.server_tool_calls if c.type == "executable_code" and isinstance(c.item, Mapping)]
    if not result.server_tool_results:
        return []
    # the decoder's own check of the part, loaded only by a turn that has results to send back
    from fsm.wire.decoders._gemini_code import code_result_fault

    by_id: dict[str, list[int]] = {}
    for n, code in enumerate(codes):
        code_id = code.item.get("id") if code.item is not None else None
        if isinstance(code_id, str):
            by_id.setdefault(code_id, []).append(n)
    answered = [False] * len(codes)
    earliest = 0  # no code part before it is left unanswered
    skipped: dict[str, int] = {}
    runs: list[tuple[int | None, Message | list[Message]]] = []
    for ran in result.server_tool_results:
        outcome = ran.block.get("codeExecutionResult")
        if not isinstance(outcome, Mapping) or code_result_fault(outcome) is not None:
            runs.append((ran.output_index, []))  # another provider's result block, or one Gemini would refuse
            continue
        named = outcome.get("id")
        if isinstance(named, str):
            under = by_id.get(named, [])
            k = skipped.get(named, 0)  # those before it under this id are answered
            while k < len(under) and answered[under[k]]:
                k += 1
            skipped[named] = k
            found = under[k] if k < len(under) else None
        else:
            while earliest < len(codes) and answered[earliest]:
                earliest += 1
            found = earliest if earliest < len(codes) else None
        if found is None:
            runs.append((ran.output_index, []))
            continue
        answered[found] = True
        runs.append((ran.output_index, [_code_part(codes[found]), dict(ran.block)]))
    return runs


def _code_part(code: ToolCall) -> Message:
    part: Message = {"executableCode": dict(code.item or {})}
    if code.thought_signature is not None:
        part["thoughtSignature"] = code.thought_signature
    return part
