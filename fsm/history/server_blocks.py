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

# The wire's own names for these blocks, under the names the history reads them by.
from fsm.wire.decoders._wire import CLAUDE_SERVER_CALLS as SERVER_CALLS
from fsm.wire.decoders._wire import server_result_block as is_server_result

__all__ = ["SERVER_CALLS", "is_server_result"]
