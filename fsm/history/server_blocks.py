"""Claude's server tool blocks in an Anthropic history: a ``server_tool_use`` or ``mcp_tool_use``
block is a call Anthropic ran itself, and the ``*_tool_result`` block naming its id
(``web_search_tool_result``, ``code_execution_tool_result``, ``mcp_tool_result``, ...) its answer,
both in the assistant message Claude wrote. So each message's server blocks are a turn of their own,
closed by the end of that message. Anthropic refuses a server call without its result unless it is
in the request's last message: a turn paused (``pause_turn``) after such a call goes back as it
came, as the last message, and the API runs the call (anthropic-sdk-python issues 961 and 1339:
with a message after it, the API answers 400). Nothing but the server can stand in for that result,
so repair drops such a call anywhere else."""

from __future__ import annotations

from typing import Any

SERVER_CALLS = ("server_tool_use", "mcp_tool_use")  # a tuple: a type of any value (a list) is looked up unhashed


def is_server_result(kind: Any) -> bool:
    """A block type of a server tool's result: any ``*_tool_result`` but the client's own ``tool_result``."""
    return type(kind) is str and kind.endswith("_tool_result") and kind != "tool_result"
