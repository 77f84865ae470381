"""The ``"bedrock"`` next turn: Bedrock Converse messages, as boto3's ``converse`` and
``converse_stream`` take them.

The assistant turn is ``{"role": "assistant", "content": [...]}``: the reasoning first, as
``reasoningContent`` (a signed block as ``reasoningText`` with its ``signature``; Claude's redacted
one as ``redactedContent``, the bytes its base64 on the wire stands for, which boto3 writes as that
base64 again; a block that never got its signature is left out, since Claude refuses it and no
other model needs its reasoning back), then the text as a ``text`` block (where its text parts
carry citations, each part, a cited one as Converse's ``citationsContent``: see :func:`_text`), then
the calls as ``toolUse`` blocks (``toolUseId``, ``name``, ``input`` an object). A server tool the provider ran
itself (Amazon Nova's ``nova_code_interpreter``, ``nova_grounding``) goes back before the client's
calls, as ConverseStream gives it, block for block: its ``toolUse`` of ``type: server_tool_use``,
then the ``toolResult`` block that answered it (``toolUseId``, ``type``, ``status``, ``content`` as
the stream gave them), in the order the stream gave the server calls; the k-th result naming an id
answers the k-th call under it. A server call that did not complete or that no result answered is
not sent (a result stands for the run; none is the client's to make), nor a result that no server
call of this turn is left to answer, nor another provider's server call. The text goes
before them, as it did when Converse's next turn kept it in one block. A result answers a call as a ``toolResult`` block
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
from fsm.messages.shared import Message, arguments_object, as_text, reply_id, signature_for
from fsm.results import CallStatus, Result, ServerToolResult, ToolCall


def bedrock_message(result: Result, calls: tuple[ToolCall, ...]) -> Message:
    content: list[Message] = []
    for reasoning in result.reasoning:
        if reasoning.redacted is not None:
            content.append({"reasoningContent": {"redactedContent": _redacted_bytes(reasoning.redacted)}})
        elif (signature := signature_for(reasoning, result, "bedrock")) is not None:  # policy signature-by-origin
            said = {"text": reasoning.text, "signature": signature}
            content.append({"reasoningContent": {"reasoningText": said}})
    content += _text(result)
    sent: dict[str, str] = {}
    for call, answer in _served(result):
        content.append({"toolUse": _use(call, sent, type="server_tool_use")})
        content.append({"toolResult": {**answer.block, "toolUseId": converse_id(reply_id(call))}})
    for call in calls:
        content.append({"toolUse": _use(call, sent)})
    return {"role": "assistant", "content": content}


def _text(result: Result) -> list[Message]:
    """The text as Converse takes it back. Without a Converse citation, one ``text`` block. With
    them, each text block the stream gave, in its order, a cited one as ``citationsContent``
    (``content``: its text as one ``{"text"}`` item; ``citations``: each citation whole, as the
    stream's ``CitationsDelta`` gave it, whose members are those of the ``Citation`` botocore's model
    takes there), as Converse itself answers a cited turn. Text that came in no block (a delta
    without its index) leaves the parts short of it: then all of it goes as one block, with every
    part's citations. Another wire's citations (Claude's, a Responses annotation: each has a
    ``type``, which no Converse citation has) are not Converse's to take, so they are left out, as
    is a part with citations and no text (the decoder reported it)."""
    parts = [part for part in result.text_parts if part.text]
    cited = [[c for c in part.citations if _converse_citation(c)] for part in parts]
    if not any(cited):
        return [{"text": result.text}] if result.text else []
    if "".join(part.text for part in parts) != result.text:
        return [_cited(result.text, [c for each in cited for c in each])]
    return [_cited(part.text, each) for part, each in zip(parts, cited, strict=True)]


def _cited(text: str, citations: list[dict[str, Any]]) -> Message:
    if not citations:
        return {"text": text}
    return {"citationsContent": {"content": [{"text": text}], "citations": [dict(c) for c in citations]}}


_CITATION = frozenset({"title", "source", "sourceContent", "location"})
"""The members of botocore's ``Citation`` (and of the ``CitationsDelta`` the stream gives)."""


def _converse_citation(citation: Mapping[str, Any]) -> bool:
    return bool(citation) and citation.keys() <= _CITATION


def _use(call: ToolCall, sent: dict[str, str], **extra: str) -> Message:
    own = reply_id(call)
    use_id = converse_id(own)
    if sent.setdefault(use_id, own) != own:  # only an id made to match another's mapping can
        raise LocalProtocolError(f"calls {sent[use_id]!r} and {own!r} would both go to Converse as {use_id!r}")
    return {"toolUseId": use_id, "name": call.name or "", "input": arguments_object(call), **extra}


def _served(result: Result) -> list[tuple[ToolCall, ServerToolResult]]:
    """Each server call ConverseStream gave that completed, with the ``toolResult`` block that
    answered it, in the stream's order. Claude's server calls hold their block (``item``) and its
    results name their call by ``tool_use_id``: they are another turn's to send."""
    answers: dict[str, list[ServerToolResult]] = {}
    for answer in result.server_tool_results:
        wire_id = answer.block.get("toolUseId")  # Claude's and Gemini's result blocks hold none
        if isinstance(wire_id, str) and "tool_use_id" not in answer.block:
            answers.setdefault(wire_id, []).append(answer)
    served: list[tuple[ToolCall, ServerToolResult]] = []
    taken: dict[str, int] = {}
    for call in result.server_tool_calls:
        if call.item is not None or call.wire_id is None or call.type != "function":
            continue
        k = taken.get(call.wire_id, 0)
        under = answers.get(call.wire_id, [])
        if k < len(under):
            taken[call.wire_id] = k + 1
            if call.status is CallStatus.COMPLETE:
                served.append((call, under[k]))
    return served


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
