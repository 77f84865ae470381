"""Hostile variants of a recorded capture, built from its events, for the SDK loop tests: the first
call's arguments grown past a megabyte, given a non-ASCII member, or that member's emoji split
between two events as the halves of its surrogate pair; its arguments emptied; the stream cut
right after a fragment that leaves a call unfinished. Each is rendered back to SSE (with the
``event:`` line Anthropic's SDK dispatches on) so the SDKs' own HTTP stack reads it."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MEGABYTE = "x" * (1 << 20)
EMOJI = "é\U0001f600中"
OBJECT_ARGUMENTS = ("gemini", "ollama")
"""The wires whose calls carry their arguments as a JSON object, never as text."""


def events(path: Path) -> list[dict[str, Any]]:
    """The capture's event payloads (SSE data, or one per JSONL line), ``[DONE]`` left out."""
    raw = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in raw.splitlines() if line.strip()]
    found = []
    for block in re.split(r"\r?\n\r?\n", raw):
        lines = re.split(r"\r?\n", block.strip())
        data = "\n".join(line[5:].removeprefix(" ") for line in lines if line.startswith("data:"))
        if data and data != "[DONE]":
            found.append(json.loads(data))
    return found


def render(payloads: list[dict[str, Any]], provider: str, *, ascii_only: bool = True) -> bytes:
    out = []
    for payload in payloads:
        named = f"event: {payload['type']}\n" if isinstance(payload.get("type"), str) else ""
        out.append(f"{named}data: {json.dumps(payload, ensure_ascii=ascii_only)}\n\n")
    if provider == "openai-chat":
        out.append("data: [DONE]\n\n")
    return "".join(out).encode("utf-8")


# A carrier: (event position, the dict holding the text, its key, the call it belongs to, whether the
# text is the call's whole arguments rather than a fragment).
Carrier = tuple[int, dict[str, Any], str, Any, bool]


def carriers(provider: str, payloads: list[dict[str, Any]]) -> list[Carrier]:
    found: list[Carrier] = []
    for i, p in enumerate(payloads):
        kind = p.get("type")
        if provider == "openai-chat":
            for choice in p.get("choices") or []:
                for j, call in enumerate((choice.get("delta") or {}).get("tool_calls") or []):
                    function = call.get("function") or {}
                    if isinstance(function.get("arguments"), str):
                        found.append((i, function, "arguments", call.get("index", j), False))
        elif provider == "openai-responses":
            if kind == "response.function_call_arguments.delta":
                found.append((i, p, "delta", p["output_index"], False))
            elif kind == "response.function_call_arguments.done":
                found.append((i, p, "arguments", p["output_index"], True))
            elif kind in ("response.output_item.added", "response.output_item.done") and (
                p["item"].get("type") == "function_call"
            ):
                found.append((i, p["item"], "arguments", p["output_index"], True))
        elif provider == "anthropic":
            if kind == "content_block_delta" and p["delta"].get("type") == "input_json_delta":
                found.append((i, p["delta"], "partial_json", p["index"], False))
        elif provider == "cohere":
            if kind in ("tool-call-start", "tool-call-delta"):
                function = p["delta"]["message"]["tool_calls"].get("function") or {}
                if isinstance(function.get("arguments"), str):
                    found.append((i, function, "arguments", p.get("index"), False))
        elif provider == "ollama":
            for j, call in enumerate((p.get("message") or {}).get("tool_calls") or []):
                if isinstance((call.get("function") or {}).get("arguments"), dict):
                    found.append((i, call["function"], "arguments", (i, j), True))
        elif provider == "gemini":
            for candidate in p.get("candidates") or []:
                for j, part in enumerate((candidate.get("content") or {}).get("parts") or []):
                    call = part.get("functionCall")
                    if call and "args" in call:
                        found.append((i, call, "args", (i, j), True))
    return found


def _first_call(provider: str, payloads: list[dict[str, Any]]) -> list[Carrier]:
    found = carriers(provider, payloads)
    return [c for c in found if c[3] == found[0][3]] if found else []


def _with_member(text: str, member: str) -> str:
    rest = text.strip()[1:]
    return "{" + member + ("" if rest.lstrip().startswith("}") else ", ") + rest


def with_member(
    provider: str, payloads: list[dict[str, Any]], key: str, value: str, split_at: int | None = None
) -> list[dict[str, Any]] | None:
    """The first call's arguments gain ``key: value`` first; with ``split_at``, the fragment that
    opens them is cut in two events there. None when the capture's first call has no object text."""
    payloads = copy.deepcopy(payloads)
    mine = _first_call(provider, payloads)
    member = f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}"
    opened: Carrier | None = None
    for carrier in mine:
        _, box, field, _, whole = carrier
        if provider in OBJECT_ARGUMENTS:
            box[field] = {key: value, **(box[field] or {})}
        elif whole and box[field].strip().startswith("{"):
            box[field] = _with_member(box[field], member)
        elif not whole and opened is None and box[field].strip().startswith("{"):
            box[field] = _with_member(box[field], member)
            opened = carrier
    if provider in OBJECT_ARGUMENTS:
        return payloads if mine else None
    if opened is None:
        return None
    if split_at is not None:
        payloads = _split(provider, payloads, opened, split_at)
    return payloads


def _split(provider: str, payloads: list[dict[str, Any]], carrier: Carrier, at: int) -> list[dict[str, Any]]:
    """The carrier's event twice: the first with the text up to ``at`` (in UTF-16 code units, so a
    surrogate pair can be parted), the second with the rest and nothing else that opens a call."""
    i, box, field, _, _ = carrier
    units = box[field].encode("utf-16-le", "surrogatepass")
    head = units[: 2 * at].decode("utf-16-le", "surrogatepass")
    tail = units[2 * at :].decode("utf-16-le", "surrogatepass")
    box[field] = tail
    second = copy.deepcopy(payloads[i])
    box[field] = head
    if provider == "openai-chat":  # the second chunk: that fragment alone, under its index
        choice = payloads[i]["choices"][0]
        (call,) = [c for c in choice["delta"]["tool_calls"] if c.get("function") is box]
        rest = {k: v for k, v in call.items() if k == "index"} | {"function": {"arguments": tail}}
        second = {k: v for k, v in payloads[i].items() if k != "usage"}
        second["choices"] = [
            {"index": 0, "delta": {"tool_calls": [rest]}, "finish_reason": choice.get("finish_reason")}
        ]
        choice["finish_reason"] = None
    return [*payloads[: i + 1], second, *payloads[i + 1 :]]


def emptied(provider: str, payloads: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The first call with no argument text at all (Gemini: ``args: {}``)."""
    payloads = copy.deepcopy(payloads)
    mine = _first_call(provider, payloads)
    for _, box, field, _, _ in mine:
        box[field] = {} if provider in OBJECT_ARGUMENTS else ""
    return payloads if mine else None


def cut_mid_call(provider: str, payloads: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The stream up to the first fragment after which a call's text is no whole JSON value (on
    Vertex, the first ``partialArgs`` whose string value is to continue)."""
    if provider == "gemini":
        for i, p in enumerate(payloads):
            for candidate in p.get("candidates") or []:
                for part in (candidate.get("content") or {}).get("parts") or []:
                    pieces = (part.get("functionCall") or {}).get("partialArgs") or []
                    if any(piece.get("willContinue") for piece in pieces):
                        return payloads[: i + 1]
        return None
    held: dict[Any, str] = {}
    for i, box, field, call, whole in carriers(provider, payloads):
        if whole:
            continue
        held[call] = held.get(call, "") + box[field]
        try:
            json.loads(held[call])
        except ValueError:
            if held[call].strip():
                return payloads[: i + 1]
    return None


def _id_holders(provider: str, payloads: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], str]]:
    """Every (dict, key) holding a call's wire id."""
    for p in payloads:
        if provider == "openai-chat":
            for choice in p.get("choices") or []:
                for call in (choice.get("delta") or {}).get("tool_calls") or []:
                    if call.get("id"):
                        yield call, "id"
        elif provider == "openai-responses":
            if isinstance(p.get("item"), dict) and p["item"].get("type") == "function_call":
                yield p["item"], "call_id"
        elif provider == "anthropic":
            if p.get("type") == "content_block_start" and p["content_block"].get("type") == "tool_use":
                yield p["content_block"], "id"
        elif provider == "cohere":
            if p.get("type") == "tool-call-start" and p["delta"]["message"]["tool_calls"].get("id"):
                yield p["delta"]["message"]["tool_calls"], "id"
        elif provider == "ollama":
            for call in (p.get("message") or {}).get("tool_calls") or []:
                if call.get("id"):
                    yield call, "id"
        else:
            for candidate in p.get("candidates") or []:
                for part in (candidate.get("content") or {}).get("parts") or []:
                    if (part.get("functionCall") or {}).get("id"):
                        yield part["functionCall"], "id"


def one_id(provider: str, payloads: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Every call under the first call's id (DeepSeek and GLM reuse one id in a turn); None when
    the capture has fewer than two ids to merge."""
    payloads = copy.deepcopy(payloads)
    holders = list(_id_holders(provider, payloads))
    if len({box[key] for box, key in holders}) < 2:
        return None
    for box, key in holders:
        box[key] = holders[0][0][holders[0][1]]
    return payloads


def variants(provider: str, payloads: list[dict[str, Any]]) -> Iterator[tuple[str, list[dict[str, Any]] | None]]:
    """(name, payloads or None where the capture gives no such variant), as-is first."""
    yield "as-is", payloads
    yield "megabyte", with_member(provider, payloads, "pad", MEGABYTE)
    yield "unicode", with_member(provider, payloads, "u", EMOJI)
    if provider not in OBJECT_ARGUMENTS:  # objects, never text to split
        yield "unicode-split", with_member(provider, payloads, "u", EMOJI, split_at=len('{"u": "é') + 1)
    yield "empty", emptied(provider, payloads)
    yield "one-id", one_id(provider, payloads)
    yield "cut", cut_mid_call(provider, payloads)
