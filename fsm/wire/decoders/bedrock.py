"""Amazon Bedrock ``ConverseStream``: decoded events, one ``{eventType: body}`` object each.

``contentBlockStart.start.toolUse {toolUseId, name}`` opens a call at ``contentBlockIndex``,
``contentBlockDelta.delta.toolUse.input`` fragments append, ``contentBlockStop`` ends it;
``messageStop.stopReason`` ends the stream. Text, reasoning and tool-result deltas carry no call,
and the random ``p`` padding field is ignored. The raw binary event stream is unframed by
:mod:`fsm.wire.framing` (with botocore's decoder) into these same objects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fsm.events import (
    ArgumentsFragment,
    ArgumentsSnapshot,
    CallEnd,
    CallRef,
    CallSeen,
    Event,
    ReasoningDelta,
    StreamEnd,
    TextDelta,
    UsageReport,
)
from fsm.wire.decoders._wire import index, mapping, text

_FINISH = {
    "tool_use": "tool_calls",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}
_QUIET = {"messageStart", "metadata"}
_ERRORS = (
    "internalServerException",
    "modelStreamErrorException",
    "validationException",
    "throttlingException",
    "serviceUnavailableException",
)


class BedrockDecoder:
    name = "bedrock"

    def __init__(self) -> None:
        self._blocks: dict[int, tuple[CallRef, bool]] = {}  # index → (call, any input seen)

    def decode(self, payload: Mapping[str, Any], diagnose: Callable[[str, str], None]) -> list[Event]:
        events: list[Event] = []
        for kind, body in payload.items():
            body = mapping(body, kind)
            if kind == "contentBlockStart":
                tool = mapping(mapping(body.get("start"), "start").get("toolUse"), "toolUse")
                at = index(body.get("contentBlockIndex"), "contentBlockIndex")
                if tool and at is not None:
                    server = tool.get("type") == "server_tool_use"
                    ref = CallRef(
                        at, text(tool.get("toolUseId"), "toolUseId"), text(tool.get("name"), "name"), server=server
                    )
                    self._blocks[at] = (ref, False)
                    events.append(CallSeen(ref))
            elif kind == "contentBlockDelta":
                at = index(body.get("contentBlockIndex"), "contentBlockIndex")
                delta = mapping(body.get("delta"), "delta").get("toolUse")
                if delta is None:
                    events += _said(at, mapping(body.get("delta"), "delta"))
                elif at in self._blocks:
                    piece = text(mapping(delta, "toolUse").get("input"), "input")
                    if piece:
                        self._blocks[at] = (self._blocks[at][0], True)
                        events.append(ArgumentsFragment(self._blocks[at][0], piece))
            elif kind == "contentBlockStop":
                at = index(body.get("contentBlockIndex"), "contentBlockIndex")
                if at in self._blocks:
                    ref, seen = self._blocks.pop(at)
                    if not seen:
                        events.append(ArgumentsSnapshot(ref, "{}"))  # a tool without input takes {}
                    events.append(CallEnd(ref))
            elif kind == "messageStop":
                reason = str(body.get("stopReason"))
                events.append(StreamEnd(_FINISH.get(reason, reason), reason))
            elif kind == "metadata" and body.get("usage"):
                events.append(UsageReport(dict(mapping(body.get("usage"), "usage"))))
            elif kind in _ERRORS:
                events.append(StreamEnd("error", kind, str(body.get("message", kind))))
            elif kind not in _QUIET:
                diagnose("unknown-event", f"Bedrock event {kind!r}")
        return events


def _said(at: int | None, delta: Mapping[str, Any]) -> list[Event]:
    """Text, and reasoning with its signature or redacted content (Claude through Converse)."""
    piece = text(delta.get("text"), "delta.text")
    if piece:
        return [TextDelta(piece)]
    reasoning = mapping(delta.get("reasoningContent"), "reasoningContent")
    if not reasoning:
        return []
    redacted = reasoning.get("redactedContent")
    return [
        ReasoningDelta(
            at,
            text(reasoning.get("text"), "reasoningContent.text") or "",
            signature=text(reasoning.get("signature"), "reasoningContent.signature"),
            redacted=redacted if isinstance(redacted, str) else None,
        )
    ]
