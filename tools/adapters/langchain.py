"""Adapter for ``toolcall-fsm conform --against``: LangChain's chunk merging, as ``ChatOpenAI``
streams. Each delta goes through langchain-openai's own conversion into an ``AIMessageChunk``; the
chunks are added with ``+``, and the merged message's ``tool_calls`` are the answer.

    toolcall-fsm conform --against "python tools/adapters/langchain.py"

Only the OpenAI chat shape is meaningful for it; other shapes answer ``{"unsupported": true}``.
"""

from __future__ import annotations

import json
import sys

from langchain_core.messages import AIMessageChunk, BaseMessageChunk
from langchain_openai.chat_models.base import _convert_delta_to_message_chunk


def main() -> None:
    header = json.loads(sys.stdin.readline())
    if header["shape"] != "openai-chat":
        json.dump({"unsupported": True}, sys.stdout)
        return
    merged: BaseMessageChunk | None = None
    for line in sys.stdin:
        if not line.strip():
            continue
        choices = json.loads(line).get("choices") or []
        if not choices:
            continue
        chunk = _convert_delta_to_message_chunk(choices[0].get("delta") or {}, AIMessageChunk)
        merged = chunk if merged is None else merged + chunk
    calls = getattr(merged, "tool_calls", []) if merged is not None else []
    json.dump([{"id": c.get("id"), "name": c.get("name"), "arguments": c.get("args")} for c in calls], sys.stdout)


if __name__ == "__main__":
    main()
