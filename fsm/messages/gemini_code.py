"""The ``"gemini"`` next turn's parts that need more than their own fields: its server runs, each
``executableCode`` part Gemini ran itself (a server call of type ``executable_code``) goes back with
the ``codeExecutionResult`` part that gave its outcome, and each ``toolCall`` part of its built-in
tools (a server call of type ``tool_call``) with the ``toolResponse`` part that answered it, the
call right before its result, in the result's place among the parts, so the model keeps what its
code and tools did (and a signature on either part goes back on it). The API wants a tool call
passed back "along with the corresponding ToolResponse" (js-genai ``ToolCall``). And each call's
thought signature that OpenRouter sent under ``reasoning_details`` (:func:`signatures_by_call`), and
the documented dummy on a step's first call that has none (:func:`sign_first_call`)."""

from __future__ import annotations

from collections.abc import Mapping

from fsm.errors import InvalidOption
from fsm.messages.shared import Message
from fsm.results import Result, ToolCall
from fsm.wire.decoders.chat_reasoning import GEMINI_FORMAT

DUMMY_SIGNATURE = "skip_thought_signature_validator"
"""The value Google documents for a ``functionCall`` Gemini did not make, which skips Gemini 3's check
of its thought signature: the Gemini API's FAQ names this one and ``context_engineering_is_the_way_to_go``,
Vertex AI's docs this one alone, so it is the one both take. It goes in the REST JSON as it is, as
gemini-cli sends it; google-genai reads it as url-safe base64 and writes the same text back."""

_KINDS = {"codeExecutionResult": ("executable_code", "executableCode"), "toolResponse": ("tool_call", "toolCall")}
"""Each result part's key: the type of the server call it answers, and that call's part key."""


def code_runs(result: Result) -> list[tuple[int | None, Message | list[Message]]]:
    """(place, [call part, result part]) for each result that answers a call of its kind: the one
    its ``id`` names, else the earliest call of that kind no result answered yet. A call no result
    answered (a stream cut between them) does not go back, nor does a result no call is left for:
    Gemini runs its code and tools within its turn, and one half alone says what did not happen.
    Such a result still holds its place, as ``(place, [])``: a call after it must not take it and
    move before the parts that came between them."""
    if not result.server_tool_results:
        return []
    # the decoder's own checks of the parts, loaded only by a turn that has results to send back
    from fsm.wire.decoders._gemini_code import code_result_fault, tool_part_fault

    runs = {key: _Calls(result, call_type) for key, (call_type, _) in _KINDS.items()}
    out: list[tuple[int | None, Message | list[Message]]] = []
    for ran in result.server_tool_results:
        key = next((key for key in _KINDS if key in ran.block), None)
        said = ran.block.get(key) if key is not None else None
        if key == "codeExecutionResult" and isinstance(said, Mapping) and code_result_fault(said) is not None:
            said = None  # one Gemini would refuse
        if key == "toolResponse" and isinstance(said, Mapping) and tool_part_fault(said, "response") is not None:
            said = None
        found = runs[key].answered_by(said.get("id")) if key is not None and isinstance(said, Mapping) else None
        if key is None or found is None:
            out.append((ran.output_index, []))  # another provider's result block, or one with no call left
            continue
        out.append((ran.output_index, [_call_part(found, _KINDS[key][1]), dict(ran.block)]))
    return out


class _Calls:
    """The server calls of one kind in a turn, and which of them a result answered."""

    def __init__(self, result: Result, call_type: str) -> None:
        self.calls = [c for c in result.server_tool_calls if c.type == call_type and isinstance(c.item, Mapping)]
        self.by_id: dict[str, list[int]] = {}
        for n, call in enumerate(self.calls):
            call_id = call.item.get("id") if call.item is not None else None
            if isinstance(call_id, str):
                self.by_id.setdefault(call_id, []).append(n)
        self.answered = [False] * len(self.calls)
        self.earliest = 0  # no call before it is left unanswered
        self.skipped: dict[str, int] = {}

    def answered_by(self, named: object) -> ToolCall | None:
        """The call a result naming ``named`` (its ``id``, if text) answers, now answered; None if none is left."""
        if isinstance(named, str):
            under = self.by_id.get(named, [])
            k = self.skipped.get(named, 0)  # those before it under this id are answered
            while k < len(under) and self.answered[under[k]]:
                k += 1
            self.skipped[named] = k
            found = under[k] if k < len(under) else None
        else:
            while self.earliest < len(self.calls) and self.answered[self.earliest]:
                self.earliest += 1
            found = self.earliest if self.earliest < len(self.calls) else None
        if found is None:
            return None
        self.answered[found] = True
        return self.calls[found]


def _call_part(call: ToolCall, key: str) -> Message:
    part: Message = {key: dict(call.item or {})}
    if call.thought_signature is not None:
        part["thoughtSignature"] = call.thought_signature
    return part


def signatures_by_call(result: Result, calls: tuple[ToolCall, ...]) -> tuple[dict[int, str], set[int]]:
    """Policy gemini-signature-by-call-id: OpenRouter sends a Gemini call's thought signature as a
    ``reasoning.encrypted`` entry naming the call's id, read as the signature of a reasoning block
    whose ``item_id`` is that id (its ``reasoning.text`` entries, if any, are the block's text).
    Gemini 3 wants it back on the ``functionCall`` part it came on (as OpenRouter puts it back), not
    on a thought part. So a Gemini-format block whose ``item_id`` is the wire id of exactly one call
    sent, and that call signed by nothing else, gives that call its signature, and its thought goes
    back unsigned. Where the id names no call sent, or several (a wire that repeated the id), or a
    call with a signature of its own (kept), the signature stays on the thought, as read: nothing is
    dropped, and no call takes a signature that may be another's. The first such block of a call signs it.

    Returns the signature each call takes (keyed by ``id()`` of the call in ``calls``) and the
    positions in ``result.reasoning`` of the blocks whose signature went to a call."""
    by_id: dict[str, list[ToolCall]] = {}
    for call in calls:
        for wire_id in dict.fromkeys(n for n in (call.wire_id, call.reply_id) if n is not None):
            by_id.setdefault(wire_id, []).append(call)
    signs: dict[int, str] = {}
    moved: set[int] = set()
    for at, block in enumerate(result.reasoning):
        if block.format != GEMINI_FORMAT or block.signature is None or block.item_id is None:
            continue
        named = by_id.get(block.item_id, [])
        if len(named) == 1 and named[0].thought_signature is None and id(named[0]) not in signs:
            signs[id(named[0])] = block.signature
            moved.add(at)
    return signs, moved


def check_dummy_option(value: object, format: str) -> None:
    """``assistant_message``'s ``dummy_signature``: None (the default), or True or False for ``gemini``."""
    if value is not None and (format != "gemini" or not isinstance(value, bool)):
        raise InvalidOption(f"dummy_signature is True or False for 'gemini' alone, not {value!r} for {format!r}")


def sign_first_call(content: Message, dummy: bool | None = None) -> Message:
    """Policy gemini-dummy-signature: in a ``"gemini"`` model content (one response: one step) whose
    first ``functionCall`` part carries no ``thoughtSignature``, that part gets :data:`DUMMY_SIGNATURE`,
    unless ``dummy`` is False. Gemini 3 checks function calls: it refuses (400, "missing a
    thought_signature in functionCall parts") a step whose first call comes back unsigned, and signs
    that part itself whenever a step makes calls, so a signature on another part does not stand in for
    it: a thought's from a chat result that does not say its maker (LiteLLM's ``thinking_blocks``, a
    Claude turn's: policy signature-by-origin sends it as it came), a step's whose signed first call is
    left out (``incomplete="omit"``). Another model's calls (a Claude or OpenAI turn), older Gemini's,
    or calls built by hand have none to give. A real signature is never replaced and stays on its
    part; the step's other calls stay unsigned (Gemini signs a step's first call)."""
    first = next((part for part in content["parts"] if "functionCall" in part), None)
    if dummy is not False and first is not None and not first.get("thoughtSignature"):
        first["thoughtSignature"] = DUMMY_SIGNATURE
    return content
