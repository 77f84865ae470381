"""The commonest events of a Responses turn that talks, read without the decoder's events: pieces
of a message's text and of reasoning text, and a reasoning summary's pieces, of which the decoder
makes no event (``OpenAIResponsesDecoder.commonest_said``, and from the wire ``said_form_of`` and
``said_at`` for the reassembler's forms; tests/test_said_responses.py holds them to decode())."""

from __future__ import annotations

from typing import Any

from fsm.wire.decoders._wire import TurnSaid
from fsm.wire.decoders.chunk_form import FormSpec

_SUMMARY_DELTA = "response.reasoning_summary_text.delta"
"""A reasoning summary's piece, of which decode() makes no event (the summary comes whole with its
item's end): commonest_said takes it as none."""


class ResponsesTalk:
    """What OpenAIResponsesDecoder reads of a turn's talk before decode() (it keeps no state for it)."""

    def commonest_said(self, payload: dict[str, Any], content: TurnSaid) -> bool | None:
        """Take the commonest event of a turn that talks, a piece (not empty) of a message's text or
        of reasoning text at an integer ``output_index``, to ``content``, as decode() and
        Reassembler._apply would take its one event, without building it (decode() reads nothing
        else of it: ``item_id``, ``content_index``, ``logprobs``... beside change nothing); None for
        a reasoning summary's delta, the commonest event of an o-series turn, of which decode()
        makes no event at all (the summary comes whole with its item's end); False, changing
        nothing, for any other event (a test replays every vector and fuzzed stream with and
        without this shortcut, and events that nearly qualify)."""
        kind = payload.get("type")
        if type(kind) is not str:  # (written() spells any other: decode() reads it)
            return False
        if kind == _SUMMARY_DELTA:  # whatever else it holds: decode() reads only its type
            return None
        piece = payload.get("delta")
        return self.said_at(kind, payload.get("output_index"), piece, content) if type(piece) is str else False

    def said_form_of(self, payload: dict[str, Any]) -> tuple[FormSpec, str] | None:
        """Of an event commonest_said took: where its text sits, the place its form names (the
        item's output index, a hole of the form), the counter every event carries and its kind;
        None for an empty piece (a summary's may be), whose hole no probe tells apart."""
        if not payload.get("delta"):
            return None
        spec = FormSpec(("delta",), payload.get("output_index"), counter_at=("sequence_number",))
        return spec._replace(place_at=("output_index",)), payload["type"]

    def said_at(self, kind: str, at: Any, piece: str, content: TurnSaid) -> bool | None:
        """What commonest_said does with an event of ``kind`` at output index ``at`` holding
        ``piece``: False, changing nothing, for what decode() reads otherwise (empty text: no event;
        an index below 0 or past 63 bits, which index() reads with care)."""
        if kind == _SUMMARY_DELTA:
            return None
        if not piece or type(at) is not int or at >> 63:
            return False
        if kind == "response.output_text.delta":
            content.said_in_part(piece, at, at)  # each message item a text part
        elif kind == "response.reasoning_text.delta":
            content.reasoned(at, piece, at)
        else:
            return False
        return True
