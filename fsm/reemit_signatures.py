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
  call's end in openai-python's stream helper, which is why the first chunk is the one; and a call
  whose text the engine holds until it finishes (a Gemini snapshot, a resend that brings the
  signature) keeps the next call waiting until its last chunk is out, signature and all.
* Policy late-signature-on-last-chunk: a signature that comes after another call's chunks went out
  (a source that interleaves its calls: a chat proxy, or a resend of an earlier call carrying it;
  no Gemini wire does, each signs a call's first part) goes out still, since Gemini 3 refuses the
  call sent back without it, but on the stream's last chunk (:meth:`DeltaEmitter.finish`), beside
  the finish reason: openai-python's stream helper reads a call's chunk after another's as that
  other call's end (its ``arguments.done``, with the text so far), and on the last chunk every
  call's text is in, so each call's done comes once with its whole text.
* Policy gemini-call-signature-as-openrouter: under ``DeltaEmitter(reasoning_blocks="reasoning_details")``
  (OpenRouter's dialect) a call's goes out as OpenRouter sends a Gemini 3 call's instead, a
  ``reasoning.encrypted`` entry of Gemini's format naming the call's id, under an index no block takes
  (:meth:`fsm.reemit_reasoning.BlockEmitter.call_signed`), in a chunk of its own as soon as it is
  known, before the call's chunks: that chunk holds no call, so it ends none in openai-python's
  stream helper, and the id, not the chunk's place, says whose it is (a late one too). Not in
  ``extra_content`` as well: read back, the call would be signed twice, once on itself and once by
  the block naming it. The chat decoder reads the entry as a block of that id, which
  :mod:`fsm.messages` puts on the call's part for Gemini (policy gemini-signature-by-call-id) and
  sends back to OpenRouter as it came.
* The text's, on the last chunk's delta (:meth:`DeltaEmitter.finish`): the latest signature the
  text carried (:attr:`Result.text_signature`), which is the one the chat decoder keeps when it reads
  several. The other text parts' signatures (a turn whose text was signed in several parts, each run
  of text with its own) are not sent, and listed (``DeltaEmitter.unsent_signatures``): the chat
  stream has one text, and no part to carry each on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, overload

from fsm.jsontext import escape_lone_surrogates, has_surrogate
from fsm.results import Result, ToolCall
from fsm.wire.decoders._wire import COMPAT_SIGNATURE, compat_signed


class Signatures:
    """One stream's signatures as they go out: which calls' went, what of the text's did not."""

    def __init__(self, details: Callable[[str, str], dict[str, Any]] | None = None) -> None:
        """``details``: under ``reasoning_details``, the delta of a call's signature (``BlockEmitter.call_signed``)."""
        self._signed: set[int] = set()  # the calls whose signature went out
        self.unsent: list[str] = []
        self.late: list[dict[str, Any]] = []  # entries that go on the last chunk (late-signature-on-last-chunk)
        # Under reasoning_details, a call's goes out as OpenRouter sends it, in a chunk of its own before the call's
        # (policy gemini-call-signature-as-openrouter): the deltas of those not yet out
        self._details = details
        self.apart: list[dict[str, Any]] = []

    def sign(self, entry: dict[str, Any], signature: str | None, call_id: str) -> dict[str, Any]:
        """``entry`` (a tool-call entry of the call ``call_id``) with its call's signature, unless there is
        none or it went; under ``reasoning_details``, the entry as it was, the signature in :attr:`apart`."""
        index = entry["index"]
        if signature is not None and index not in self._signed:
            self._signed.add(index)
            if self._details is not None:
                self.apart.append(self._details(call_id, signature))
            else:
                entry[COMPAT_SIGNATURE] = compat_signed(sendable(signature))
        return entry

    def taken(self) -> list[dict[str, Any]]:
        """The deltas of the calls' signatures that go apart, to go out now (each once)."""
        taken, self.apart = self.apart, []
        return taken

    def finished(self, call: ToolCall, body: dict[str, Any], freeform: bool, behind: bool) -> dict[str, Any] | None:
        """The entry of a call that finished with ``body`` left to send (a ``custom`` one, for a
        ``freeform`` call), with its signature where it is owed (it came after the call opened); None
        when nothing goes now. ``behind``: another call's chunk went out after this call's last, so an
        entry of the signature alone waits for the last chunk (policy late-signature-on-last-chunk)."""
        body_key, text_key = ("custom", "input") if freeform else ("function", "arguments")
        if not body:
            if call.thought_signature is None or call.index in self._signed:
                return None
            if self._details is not None:  # its signature goes apart, and the call has nothing to send
                self.sign({"index": call.index}, call.thought_signature, call.id)
                return None
            body = {text_key: ""}  # an entry of no body would read as no call's (toolcall-fsm's chat decoder)
            if behind:
                self.late.append(self.sign({"index": call.index, body_key: body}, call.thought_signature, call.id))
                return None
        return self.sign({"index": call.index, body_key: body}, call.thought_signature, call.id)

    def text(self, last: dict[str, Any], result: Result) -> None:
        """Put the text's signature on ``last``'s delta, and list the text parts' it leaves out."""
        signed = result.text_signature
        if signed is None:
            return
        last["choices"][0]["delta"][COMPAT_SIGNATURE] = compat_signed(sendable(signed))
        self.unsent = [
            f"text part {at}: its signature (a chat stream carries one signature of the text, the latest)"
            for at, part in enumerate(result.text_parts)
            if part.signature is not None and part.signature != signed
        ]


@overload
def sendable(text: str) -> str: ...
@overload
def sendable(text: None) -> None: ...
def sendable(text: str | None) -> str | None:
    """``text`` with each lone surrogate as its escape ``\\udXXX`` (six characters): a wire id, name or
    signature may hold one (JSON escapes allow it), and a chunk holding it cannot be written as UTF-8
    (policy emitted-lone-surrogate). Argument text holds none: the engine escaped it (``lone-surrogate``)."""
    return escape_lone_surrogates(text) if text is not None and has_surrogate(text) else text
