"""Gemini's thought signatures in a re-emitted chat stream (``DeltaEmitter``), where Gemini's own
OpenAI-compatible endpoint puts them: ``extra_content: {"google": {"thought_signature": ...}}`` on a
call's tool-call entry, and on the delta for the text's. A client behind a gateway in front of
Gemini sends each call's back on its ``tool_calls`` entry (Gemini 3 refuses a call sent back without
its signature), as :mod:`fsm.messages.openai_chat` does, and toolcall-fsm's chat decoder reads them
back onto the same calls and text.

Policy gemini-signatures-reemitted, always on (only Gemini signs calls and text, and a strict client
sees what Gemini's endpoint sends it; openai-python's chunk types take the extra field): each
signature goes out once, since chat consumers join a string sent twice under one key
(openai-python's ``accumulate_delta``), and a client would send back two signatures joined.

* A call's, on its first chunk (the header) when the call opened with it (:attr:`CallOpened.thought_signature`:
  every Gemini wire signs a call's first part, and Gemini's endpoint sends the call whole in one
  entry); else on the call's last chunk, when it finishes, as an entry of empty text if the call
  has nothing else left to send. A chunk of the call after a later call's would read as that later
  call's end in openai-python's stream helper, which is why the first chunk is the one.
* The text's, on the last chunk's delta (:meth:`DeltaEmitter.finish`): the latest signature the
  text carried (:attr:`Result.text_signature`), which is the one the chat decoder keeps when it reads
  several. The other text parts' signatures (a turn whose text was signed in several parts, each run
  of text with its own) are not sent, and listed (``DeltaEmitter.unsent_signatures``): the chat
  stream has one text, and no part to carry each on.
"""

from __future__ import annotations

from typing import Any

from fsm.jsontext import escape_lone_surrogates, has_surrogate
from fsm.results import Result, ToolCall
from fsm.wire.decoders._wire import COMPAT_SIGNATURE, compat_signed


class Signatures:
    """One stream's signatures as they go out: which calls' went, what of the text's did not."""

    def __init__(self) -> None:
        self._signed: set[int] = set()  # the calls whose signature went out
        self.unsent: list[str] = []

    def sign(self, entry: dict[str, Any], signature: str | None) -> dict[str, Any]:
        """``entry`` (a tool-call entry) with its call's signature, unless there is none or it went."""
        index = entry["index"]
        if signature is not None and index not in self._signed:
            self._signed.add(index)
            entry[COMPAT_SIGNATURE] = compat_signed(_sendable(signature))
        return entry

    def finished(self, call: ToolCall, body: dict[str, Any], body_key: str, text_key: str) -> dict[str, Any] | None:
        """The entry of a call that finished with ``body`` left to send (under ``body_key``), with its
        signature where it is owed (it came after the call opened); None when nothing goes."""
        if not body:
            if call.thought_signature is None or call.index in self._signed:
                return None
            body = {text_key: ""}  # an entry of no body would read as no call's (toolcall-fsm's chat decoder)
        return self.sign({"index": call.index, body_key: body}, call.thought_signature)

    def text(self, last: dict[str, Any], result: Result) -> None:
        """Put the text's signature on ``last``'s delta, and list the text parts' it leaves out."""
        signed = result.text_signature
        if signed is None:
            return
        last["choices"][0]["delta"][COMPAT_SIGNATURE] = compat_signed(_sendable(signed))
        self.unsent = [
            f"text part {at}: its signature (a chat stream carries one signature of the text, the latest)"
            for at, part in enumerate(result.text_parts)
            if part.signature is not None and part.signature != signed
        ]


def _sendable(text: str) -> str:
    """As ``fsm.reemit._sendable`` (policy emitted-lone-surrogate): a signature is a wire string too,
    and a chunk holding a lone surrogate cannot be written as UTF-8."""
    return escape_lone_surrogates(text) if has_surrogate(text) else text
