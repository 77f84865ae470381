"""What :func:`fsm.history.repair` writes, in each format's shape: the result it puts where a call
got none (and which call keeps one whatever the policy), a call or result under a new id (clear of
every id the messages up to its turn hold: :class:`HeldIds`), and the ``toolUseId`` Converse takes
for an id it refuses."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from fsm.engine.ids import IdAllocator
from fsm.history.entries import Entry, Key
from fsm.history.findings import Format
from fsm.history.formats import RESPONSES_OUTPUT_OF, gemini_payload, responses_key_field
from fsm.history.server_blocks import converse_payload, is_server_result
from fsm.messages.bedrock import converse_id


def placeholder(fmt: Format, kind: Any, wire_id: Key, name: str | None, text: str) -> dict[str, Any]:
    """The result that says call ``wire_id`` (named ``name``; of item type ``kind`` in a Responses
    history) did not complete, with ``text`` as its content."""
    if fmt == "responses":
        return _responses_placeholder(RESPONSES_OUTPUT_OF[kind], wire_id, text)
    if fmt == "openai":
        return {"role": "tool", "tool_call_id": wire_id, "content": text}
    if fmt == "ollama":  # keyed by name, and placed last in the turn: it answers the last call of it
        return {"role": "tool", "content": text, "tool_name": name}
    if fmt == "anthropic":
        return {"type": "tool_result", "tool_use_id": wire_id, "content": text, "is_error": True}
    if fmt == "bedrock":
        return {"toolResult": {"toolUseId": wire_id, "content": [{"text": text}], "status": "error"}}
    response: dict[str, Any] = {"id": wire_id} if isinstance(wire_id, str) else {}
    if name is not None:
        response["name"] = name
    response["response"] = {"error": text}
    return {"functionResponse": response}


def _responses_placeholder(kind: str, call_id: Key, text: str) -> dict[str, Any]:
    """The output item of type ``kind`` that says the call did not complete, in the SDK's input shape."""
    if kind == "local_shell_call_output":
        return {"type": kind, "id": call_id, "output": json.dumps({"error": text})}
    if kind == "shell_call_output":
        failed = {"stdout": "", "stderr": text, "outcome": {"type": "exit", "exit_code": 1}}
        return {"type": kind, "call_id": call_id, "output": [failed]}
    if kind == "apply_patch_call_output":
        return {"type": kind, "call_id": call_id, "status": "failed", "output": text}
    return {"type": kind, "call_id": call_id, "output": text}


def signed(fmt: Format, messages: Sequence[Mapping[str, Any]], call: Entry) -> bool:
    """Does a Gemini call's part carry a thoughtSignature? Gemini wants the signature back on that very
    part (the first call of a step must bring it), so dropping the call would leave the step's next
    call unsigned, a turn Gemini 3 refuses: it gets a placeholder result whatever the policy."""
    if fmt != "gemini":
        return False
    # The parts were checked as the turn was read: checking all again per call would be quadratic.
    part = messages[call.message]["parts"][call.slot]
    return part.get("thoughtSignature") is not None or part.get("thought_signature") is not None


def usable_id(fmt: Format, key: Key) -> Key:
    """``key`` as the format takes it: a Converse ``toolUseId`` it refuses (over 64 characters, or
    one outside ``[a-zA-Z0-9_.:-]``) as the ``"bedrock"`` next turn maps it
    (:func:`fsm.messages.bedrock.converse_id`), so a call and its result map alike; else as it is."""
    return converse_id(key) if fmt == "bedrock" and isinstance(key, str) else key


def renamed_block(fmt: Format, item: Mapping[str, Any], new_id: str) -> dict[str, Any]:
    """A call or result block (an OpenAI tool call, an Anthropic or Converse block, a Gemini part)
    under the id ``new_id``."""
    if fmt == "openai":
        return {**item, "id": new_id}
    if fmt == "anthropic":
        answers = item.get("type") == "tool_result" or is_server_result(item.get("type"))
        return {**item, ("tool_use_id" if answers else "id"): new_id}
    if fmt == "bedrock":
        converse = converse_payload(item)
        assert converse is not None  # only calls and results are renamed
        return {**item, converse[0]: {**converse[1], "toolUseId": new_id}}
    payload = gemini_payload(item, "call") or gemini_payload(item, "result")
    assert payload is not None  # only calls and results are renamed
    return {**item, payload[0]: {**payload[1], "id": new_id}}


class HeldIds:
    """Every wire id the messages hold, taken into repair's allocator message by message as the turns
    reach them (policy rename-skips-held-ids). A turn's own calls and results are not all its messages
    hold: Claude's server blocks beside its client calls are paired as a segment of their own, after
    the client turn when the message is the last, and a code's caller names an id too; a rename taking
    one of those made two blocks of one id (task 152). Each message is read once: linear; and only when
    a name is claimed, so a repair that renames nothing reads none (it cost clean histories ~23%, task 158)."""

    def __init__(self, fmt: Format, messages: Sequence[Mapping[str, Any]], ids: IdAllocator) -> None:
        self.fmt, self.messages, self.ids, self.read, self.reach = fmt, messages, ids, 0, -1
        self.in_turn = set[Key]()  # the ids of the turn being paired (repair sets them)
        self.mapped_for: dict[str, tuple[Key, int]] = {}  # Converse: each mapping given, for which id, where

    def upto(self, last: int) -> None:
        """The ids of every message up to ``last`` (0-based) are held from now on: taken before the next claim."""
        self.reach = max(self.reach, last)

    def claim(self, wanted: str) -> str:
        """``wanted``, or the first ``<wanted>_d<n>`` free of every id held so far (:meth:`IdAllocator.claim`).
        The allocator's set only grows, so taking the held ids late, all before the claim, names as early did."""
        while self.read <= min(self.reach, len(self.messages) - 1):
            for held in _held(self.fmt, self.messages[self.read]):
                self.ids.take(held)
            self.read += 1
        return self.ids.claim(wanted)

    def usable(self, key: Key, at: int) -> Key:
        """``key`` as the format takes it; mapped (Converse), made unique against the ids in use as a
        rename is, but for the mapping an earlier message gave this very id, which it reuses as the id is."""
        mapped = usable_id(self.fmt, key)
        if mapped == key or not isinstance(mapped, str):
            return mapped
        given = self.mapped_for.get(mapped)
        if not (given is not None and given[0] == key and given[1] != at and mapped not in self.in_turn):
            mapped = self.claim(mapped)
        self.mapped_for[mapped] = (key, at)
        return mapped


def _held(fmt: Format, message: Mapping[str, Any]) -> Iterator[str]:
    """The ids a message's calls, results and (Anthropic) callers hold, where they hold them; only
    strings (the reader already refused a message holding another kind where an id goes)."""
    if fmt == "ollama":  # keyed by name and place: never renamed
        return iter(())
    if fmt == "responses":
        values: list[Any] = [message.get(responses_key_field(message))]
    elif fmt == "openai":
        calls = message.get("tool_calls")
        values = (
            [message.get("tool_call_id"), *(c.get("id") for c in calls if isinstance(c, Mapping))]
            if isinstance(calls, list)
            else [message.get("tool_call_id")]
        )
    else:
        blocks = message.get("parts" if fmt == "gemini" else "content")
        values = (
            [held for block in blocks if isinstance(block, Mapping) for held in _block_ids(fmt, block)]
            if isinstance(blocks, list)
            else []
        )
    return (value for value in values if isinstance(value, str))


def _block_ids(fmt: Format, block: Mapping[str, Any]) -> list[Any]:
    if fmt == "anthropic":
        caller = block.get("caller")
        return [
            block.get("id"),
            block.get("tool_use_id"),
            caller.get("tool_id") if isinstance(caller, Mapping) else None,
        ]
    payload = (
        converse_payload(block)
        if fmt == "bedrock"
        else gemini_payload(block, "call") or gemini_payload(block, "result")
    )
    if payload is None or not isinstance(payload[1], Mapping):
        return []
    return [payload[1].get("toolUseId" if fmt == "bedrock" else "id")]
