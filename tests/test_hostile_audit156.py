"""Audit 156: forks of an OpenAI chat stream after task 150, which binds the decoder's readers of its
plainest text chunk only once the stream is read from bytes. A fork must take readers bound to its own
decoder (never the original's), and a fork made before the framing binds its own when it meets bytes.
"""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from fsm import Reassembler

_Fork = Callable[[Reassembler], Reassembler]
_TEXT = [{"choices": [{"index": 0, "delta": {"content": piece}}]} for piece in ("Hel", "lo", " there")]
_LAST = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
_FORKS: list[_Fork] = [
    copy.copy,
    copy.deepcopy,
    lambda r: pickle.loads(pickle.dumps(r)),
]


def _sse(*payloads: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(p).encode() + b"\n\n" for p in payloads)


@pytest.mark.parametrize("fork", _FORKS)
@pytest.mark.parametrize("provider", ["openai-chat", "auto"])
def test_a_fork_mid_stream_reads_with_its_own_decoder(provider: str, fork: _Fork) -> None:
    wire = _sse(*_TEXT, _LAST)
    half = len(_sse(*_TEXT[:2])) + 5  # past two text chunks, inside the third
    original = Reassembler(provider)
    original.feed_bytes(wire[:half])
    forked = fork(original)
    assert forked._chat is not None and forked._chat is not original._chat
    assert forked._said is not None and forked._said.__self__ is forked._chat  # type: ignore[attr-defined]
    forked.feed_bytes(wire[half:])
    assert forked.close().text == "Hello there"
    original.feed_bytes(wire[half:-3])  # the original goes on apart: the fork took nothing of it
    original.feed_bytes(wire[-3:])
    assert original.close() == forked.close()


@pytest.mark.parametrize("fork", _FORKS)
def test_a_fork_made_before_any_bytes_binds_its_readers_at_its_framing(fork: _Fork) -> None:
    original = Reassembler("openai-chat")
    original.feed(_TEXT[0])
    forked = fork(original)
    assert forked._said is None  # a stream of dicts never asks them
    forked.feed_bytes(_sse(*_TEXT[1:], _LAST))
    assert forked._said is not None and forked._said.__self__ is forked._chat  # type: ignore[attr-defined]
    assert original._said is None
    assert forked.close().text == "Hello there"
    original.feed(_TEXT[1])
    assert original.close().text == "Hello"
