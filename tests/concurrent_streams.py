"""One stream read the way a gateway reads it, for tests/test_hostile_audit75.py: its bytes fed in
pieces of 1 to 7 bytes (a plan drawn from the stream's name, so every run cuts it alike), each
piece's outputs re-emitted by a DeltaEmitter, then the result, its next request (``fsm.messages``)
and that history's check and repair, all written as one JSON text to compare byte for byte.

``steps`` yields after each piece, so one thread can interleave many streams, asyncio tasks can
await between pieces, and threads can run it to the end. It imports fsm only when first run (this
module imports nothing of it), so a fresh process whose threads all start here races every lazy
initialisation the package has."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

HISTORY_FORMAT = {
    "openai-chat": "openai",
    "openai-responses": "responses",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "ollama": "ollama",
    "cohere": "openai",  # Cohere v2 messages are OpenAI chat's shape
    "bedrock": "bedrock",
}


def _error(exc: BaseException) -> list[Any]:
    return [type(exc).__name__, str(exc), getattr(exc, "event", None)]


def steps(name: str, provider: str, body: bytes, strict: bool, limits: dict[str, int]) -> Iterator[str | None]:
    """Read the stream a piece at a time, yielding None after each; the last value yielded is the
    JSON text of everything it gave."""
    import fsm
    from fsm import messages
    from fsm.history import check, repair
    from fsm.results import Output
    from fsm.serialize import converter, result_to_json

    cuts = random.Random(name)
    reassembler = fsm.Reassembler(provider, strict=strict, limits=fsm.Limits(**limits), content_deltas=True)
    emitter = fsm.DeltaEmitter()
    said: list[Any] = []

    def took(outputs: list[Any]) -> None:
        said.append([converter().unstructure(output, Output) for output in outputs])
        said.append(emitter.chunks(outputs))

    raised = None
    at = 0
    try:
        while at < len(body):
            size = cuts.randint(1, 7)
            took(reassembler.feed_bytes(body[at : at + size]))
            at += size
            yield None
    except fsm.ToolcallFSMError as exc:
        raised = _error(exc)
    try:
        result = reassembler.close()
    except fsm.ToolcallFSMError as exc:  # strict: raised once the result is complete
        raised = raised or _error(exc)
        result = reassembler.close()
    took(reassembler.drain())
    said.append(emitter.finish(result))
    out: dict[str, Any] = {"said": said, "raised": raised, "result": result_to_json(result)}
    out["diagnostics"] = [repr(diagnostic) for diagnostic in result.diagnostics]
    turn = messages.assistant_message(result, provider, incomplete="include")
    answers = [messages.tool_result(call, {"ran": call.name}, provider) for call in result.calls]
    answers += messages.incomplete_answers(result, provider)
    history = [{"role": "user", "content": "go"}, *(turn if isinstance(turn, list) else [turn])]
    history += messages.tool_results(answers[:-1], provider)  # the last one left unanswered: repair has work
    out["history"] = history
    out["check"] = repr(check(history, HISTORY_FORMAT[provider]))
    out["repair"] = repr(repair(history, format=HISTORY_FORMAT[provider]))
    yield json.dumps(out, sort_keys=True, default=repr)


def read(name: str, provider: str, body: bytes, strict: bool, limits: dict[str, int]) -> str:
    """``steps`` run to its end: the stream's JSON text."""
    *_, last = steps(name, provider, body, strict, limits)
    assert last is not None
    return last
