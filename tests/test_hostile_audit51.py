"""Audit 51: fsm.history before and after policy server-blocks-are-the-models (merge 3896ca0), a
helper's differential over 87,574 histories of every format. Every difference but 7 was the policy's
own (a server block in a user message, a client result under a paused server call's id); the 7 came
from two regressions, both on hostile input, each failing here before its fix:

* A client ``tool_use`` and a paused server call under one id: ``check`` lost its ``duplicate-call``
  (the paused call's id was forgotten at its turn's end, and its segment is read first), so nothing
  named what ``repair`` drops.
* A block with an Anthropic ``type`` (``server_tool_use``) before a result in a Converse or Gemini
  user message was read as no text, as only Anthropic's are: the result after it lost its
  ``result-after-text`` and ``moved-result``.
"""

from __future__ import annotations

from fsm import history


def test_a_client_call_under_a_paused_server_calls_id_is_a_duplicate() -> None:
    h = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "b", "name": "f", "input": {}}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_result", "tool_use_id": "s", "content": "R3"},
                {"type": "mcp_tool_use", "id": "b", "name": "m", "server_name": "x", "input": {}},
            ],
        },
    ]
    found = [(f.kind.value, f.id, f.message) for f in history.check(h, "anthropic").findings]
    # at the later call, the server's, which repair drops (client-and-server-call-one-id; task 144: at 2 before,
    # the client call's, as the machine named it walking the paused server call's turn first)
    assert ("duplicate-call", "b", 3) in found
    _, changes = history.repair(h, format="anthropic")
    assert ("dropped-call", 3, "b") in [(c.kind, c.message, c.id) for c in changes]


def test_an_anthropic_block_before_a_result_elsewhere_is_text() -> None:
    for kind in ("server_tool_use", "mcp_tool_use"):
        converse = [
            {"role": "user", "content": [{"text": "go"}]},
            {"role": "assistant", "content": [{"toolUse": {"toolUseId": "tu5", "name": "f", "input": {}}}]},
            {
                "role": "user",
                "content": [{"type": kind}, {"toolResult": {"toolUseId": "tu5", "content": [{"text": "R"}]}}],
            },
        ]
        assert [(f.kind.value, f.id) for f in history.check(converse, "bedrock").findings] == [
            ("result-after-text", "tu5")
        ]
        assert [c.kind for c in history.repair(converse, format="bedrock")[1]] == ["moved-result"]
        gemini = [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "f", "args": {}}}]},
            {
                "role": "user",
                "parts": [{"type": kind}, {"functionResponse": {"id": "c1", "name": "f", "response": {}}}],
            },
        ]
        assert "moved-result" in [c.kind for c in history.repair(gemini, format="gemini")[1]]
