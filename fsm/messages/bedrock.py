"""The ``"bedrock"`` next turn: Bedrock Converse messages, as boto3's ``converse`` and
``converse_stream`` take them.

The assistant turn is ``{"role": "assistant", "content": [...]}``: the reasoning first, as
``reasoningContent`` (a signed block as ``reasoningText`` with its ``signature``; Claude's redacted
one as ``redactedContent``, the bytes its base64 on the wire stands for, which boto3 writes as that
base64 again; a block that never got its signature is left out, since Claude refuses it and no
other model needs its reasoning back), then the text as a ``text`` block, then the calls as
``toolUse`` blocks (``toolUseId``, ``name``, ``input`` an object). Converse's stream gives no block's
place in the turn, so that is their order. A result answers a call as a ``toolResult`` block
(``toolUseId``, ``content``: an object output as ``json``, anything else as ``text``, an object
holding a NaN or an infinity too, which no JSON document holds;
``status: "error"`` for a failed tool), every answer of a turn in one user message
(:func:`fsm.messages.tool_results`). Converse carries function calls only.

Converse takes a ``toolUseId`` of 1 to 64 characters of ``[a-zA-Z0-9_.:-]`` (botocore's model),
while a call's id is the wire's, renamed ``<id>_d2`` where the wire repeated it: another provider's
ids, or a 64-character one renamed, can pass that. Such an id goes to Converse as
:func:`converse_id` maps it, in the call and in its answer alike; the call keeps its id, which every
other format sends as it is (ids feed prompt caches).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from fsm.errors import InvalidInput, LocalProtocolError
from fsm.messages.shared import Message, arguments_object, as_text, reply_id
from fsm.results import Result, ToolCall


def bedrock_message(result: Result, calls: tuple[ToolCall, ...]) -> Message:
    content: list[Message] = []
    for reasoning in result.reasoning:
        if reasoning.redacted is not None:
            content.append({"reasoningContent": {"redactedContent": _redacted_bytes(reasoning.redacted)}})
        elif reasoning.signature is not None:
            said = {"text": reasoning.text, "signature": reasoning.signature}
            content.append({"reasoningContent": {"reasoningText": said}})
    if result.text:
        content.append({"text": result.text})
    sent: dict[str, str] = {}
    for call in calls:
        own = reply_id(call)
        use_id = converse_id(own)
        if sent.setdefault(use_id, own) != own:  # only an id made to match another's mapping can
            raise LocalProtocolError(f"calls {sent[use_id]!r} and {own!r} would both go to Converse as {use_id!r}")
        use = {"toolUseId": use_id, "name": call.name or "", "input": arguments_object(call)}
        content.append({"toolUse": use})
    return {"role": "assistant", "content": content}


ID_MAX = 64
_ID_CHARS = re.compile(r"[a-zA-Z0-9_.:-]+")
_NOT_ID_CHAR = re.compile(r"[^a-zA-Z0-9_.:-]")
_DIGEST = 16  # hex digits of the id's SHA-256: 64 bits tell any two ids of a turn apart


def converse_id(call_id: str) -> str:
    """``call_id`` as Converse's ``toolUseId`` takes it: as it is where it fits (1 to 64 of
    ``[a-zA-Z0-9_.:-]``), else its first 47 characters (each one Converse refuses as ``_``), ``_``
    and 16 hex digits of its SHA-256: the same for the same id every time, so a call and its
    answer, built apart, still pair, and two ids that differ map apart."""
    if len(call_id) <= ID_MAX and _ID_CHARS.fullmatch(call_id):
        return call_id
    digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST]
    stem = _NOT_ID_CHAR.sub("_", call_id[: ID_MAX - _DIGEST - 1])
    return f"{stem}_{digest}"


def bedrock_result(call: ToolCall, output: Any, is_error: bool) -> Message:
    text = as_text(output)  # refused now if JSON cannot write it, whichever block it goes in
    answer: Message = {
        "toolUseId": converse_id(reply_id(call)),
        "content": [{"json": output} if isinstance(output, Mapping) and _strict_json(output) else {"text": text}],
    }
    if is_error:
        answer["status"] = "error"
    return {"toolResult": answer}


def _strict_json(output: Mapping[str, Any]) -> bool:
    """Whether a JSON document can hold ``output``: not with a NaN or an infinity in it, which boto3
    writes as Python does and Bedrock refuses as no JSON (the text block says them as JSON text)."""
    try:
        json.dumps(output, allow_nan=False)
    except ValueError:
        return False
    return True


def _redacted_bytes(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput(f"a redacted reasoning block's data is not base64: {data[:40]!r}") from None
