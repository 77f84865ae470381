"""Adapter for ``toolcall-fsm conform --against``: the openai-python SDK's own chat stream
accumulator (``ChatCompletionStreamState``, what ``client.chat.completions.stream()`` uses).

    toolcall-fsm conform --against "python tools/adapters/openai_python.py"

Only the OpenAI chat shape is meaningful for it; other shapes answer ``{"unsupported": true}``.
Whatever the SDK raises is left to end the process with an error: that is what its users get.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from openai.lib.streaming.chat._completions import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

DEFAULTS = {"id": "chatcmpl-conformance", "object": "chat.completion.chunk", "created": 0, "model": "conformance"}


def parsed(arguments: str | None) -> Any:
    try:
        return json.loads(arguments or "")
    except ValueError:
        return arguments  # graded as wrong arguments, as a caller parsing them would find


def main() -> None:
    header = json.loads(sys.stdin.readline())
    if header["shape"] != "openai-chat":
        json.dump({"unsupported": True}, sys.stdout)
        return
    state = ChatCompletionStreamState()
    for line in sys.stdin:
        if line.strip():
            state.handle_chunk(ChatCompletionChunk.model_validate({**DEFAULTS, **json.loads(line)}))
    message = state.get_final_completion().choices[0].message
    calls = [
        {"id": c.id, "name": c.function.name, "arguments": parsed(c.function.arguments)}
        for c in message.tool_calls or []
    ]
    json.dump(calls, sys.stdout)


if __name__ == "__main__":
    main()
