"""OpenAI Responses API streaming.

``response.output_item.added`` opens a call at its ``output_index``; ``.done`` of its input and
``response.output_item.done`` close it. Identity is the output index and ``call_id`` (the id a
result must answer; hosted tools have none, so their item id): item ids may change between events,
so they are only used to find the output index of an input event that lacks one. Every kind of item
that calls a tool is reassembled:

* ``function_call``: JSON arguments streamed by ``response.function_call_arguments.delta``;
* ``custom_tool_call``: freeform input streamed by ``response.custom_tool_call_input.delta``; its
  ``.done`` gives the final input, and the item's end (or the turn's finish) ends the call;
* ``apply_patch_call``, ``shell_call``, ``local_shell_call``, ``computer_call``: built-in tools the
  client runs, whole items whose ``operation``/``action`` object is the arguments, final at
  ``output_item.done`` (an item cut before it is truncated); a shell call's commands stream before
  it (``response.shell_call_command.*``), kept as its text so a cut one carries them
  (:mod:`~fsm.wire.decoders._shell_commands`);
* hosted tools (``mcp_call``, ``code_interpreter_call``, ``web_search_call``, ...) are run by
  OpenAI: reassembled the same way but reported as server calls.

The final input is the provider's word: equal to the streamed text it changes nothing; different,
it replaces it (``arguments-replaced``); with no deltas at all (LM Studio), it is the input. The
item's own input at ``output_item.done`` is the last word, after the input's ``.done`` (sent again
once the call has ended, it is only compared: ``item-done-again`` if it says otherwise). Items
that call nothing (messages, reasoning, tool outputs) are no calls: of a reasoning item what must
go back (its id, summary, encrypted content) and of a message item its id and status are kept
beside its text; an item type this decoder does not know is reported (``unknown-item``), never
dropped in silence.

Nothing vanishes either way: input for an item never announced (a delta or ``.done`` before any
``output_item.added``) opens the call from its ``output_index`` (``unopened-call``), so a cut
still reports it, truncated with its text; the item's end brings its ``call_id`` and name to that
call (``CallSeen.announces``: even with its value closed, it is not the header of a next call). Input
naming only an item id that two items carry (a server's fault) goes to the latest of them still open
(``stray-input`` when a later one has ended), not to a call of its own. An item
the provider ends with ``status: "incomplete"``, or ends at ``response.output_item.done`` still
``"in_progress"`` (OpenAI closes a call cut by ``max_output_tokens`` so), is given up
(``CallEnd(incomplete=True)``): truncated with its raw text, never complete, however whole its
input looks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fsm.errors import RemoteProtocolError
from fsm.events import (
    CallEnd,
    CallRef,
    CompactionBlock,
    Event,
    ReasoningDelta,
    StreamEnd,
    TextDelta,
    build_arguments_fragment,
    build_arguments_snapshot,
    build_call_ref,
    build_call_seen,
    build_stream_end,
    build_usage_report,
)
from fsm.options import Policies, default_policies
from fsm.wire.decoders import error_kind, error_message, responses_error_word
from fsm.wire.decoders._fields import index, mapping, text, written
from fsm.wire.decoders._responses_items import (
    CALL_ITEMS,
    DELTAS,
    DONES,
    QUIET_ITEMS,
    QUIET_PREFIXES,
    STREAMED_TEXT,
    UNFINISHED,
    Item,
    ItemKind,
    OpenItems,
    UnknownItems,
    done_again,
    final_word,
    item_fault,
    item_key,
    kept,
    message_item,
    program_output,
    reasoning_item,
    unusable,
    whole_input,
)
from fsm.wire.decoders._responses_talk import ResponsesTalk
from fsm.wire.decoders._shell_commands import ShellCalls
from fsm.wire.decoders._wire import responses_incomplete
from fsm.wire.decoders.chunk_form import FormSpec


class OpenAIResponsesDecoder(ResponsesTalk):
    name = "openai-responses"
    final_arguments_win = True
    """``.done`` may differ from the deltas and then replaces them: streamed text is not final."""
    output_indexed = True
    """Reasoning, messages and calls share one ``output_index``: the order the turn goes back in."""

    policies: Policies | None = None
    """The stream's policies (``make_decoder`` sets them): ``stray_input`` is this decoder's to apply."""

    def __init__(self) -> None:
        self._items: dict[int, Item] = {}
        self._open = OpenItems()  # those of _items not ended nor finalized, by call type (_stray)
        # Each item id's output indices, the latest last: two items may share one (a fault of the
        # server's), and input naming only that id goes to the latest of them still open
        self._index_of_item: dict[str, dict[int, None]] = {}
        self._unknown = UnknownItems()
        self._shells = ShellCalls()

    def decode(self, payload: Mapping[str, Any], diagnose: Callable[[str, str], None]) -> list[Event]:
        kind = written(payload.get("type", ""))  # its text: a number too long to write, named
        streamed = DELTAS.get(kind)
        if streamed is not None:
            item_type, field = streamed
            piece = text(payload.get(field), field)
            if not piece:
                return []
            item = self._item(payload, diagnose) or self._unannounced(payload, item_type, kind, diagnose)
            return [build_arguments_fragment(item.ref, piece)]
        streamed = DONES.get(kind)
        if streamed is not None:
            item_type, field = streamed
            item = self._item(payload, diagnose) or self._unannounced(payload, item_type, kind, diagnose)
            item.finalized = True
            self._open.drop(item)
            # Not the call's end, even for freeform input (which no scanner can tell is whole): it can
            # close input a limit cut, and OpenAI ends such an item unfinished (`in_progress` or
            # `incomplete`) after it. The item's end, or the turn's finish, tells.
            return [build_arguments_snapshot(item.ref, text(payload.get(field), field) or "", confirms=True)]
        if kind.startswith("response.shell_call_command."):  # a shell call's commands: its text so far
            item = self._item(payload, diagnose) or self._unannounced(payload, "shell_call", kind, diagnose)
            return self._shells.read(item, payload, kind, diagnose)
        if kind == "response.output_item.added":
            return self._added(payload, diagnose) or message_item(payload)
        if kind == "response.output_item.done":
            return self._item_done(payload, diagnose) or reasoning_item(payload) or message_item(payload)
        if kind == "response.output_text.delta":
            piece = text(payload.get("delta"), "delta")
            at = index(payload.get("output_index"), "output_index")
            return [TextDelta(piece, output_index=at, part=at)] if piece else []  # each message item a text part
        if kind == "response.output_text.annotation.added":  # a citation of the message's text: kept on it
            cited = mapping(payload.get("annotation"), "annotation")
            at = index(payload.get("output_index"), "output_index")
            if at is None and cited:
                diagnose("part-not-reassembled", "an output_text annotation without output_index: no message to go on")
                return []
            return [TextDelta("", output_index=at, part=at, citation=dict(cited))] if cited else []
        if kind == "response.refusal.delta":  # of the message item at its output index: it goes back there
            piece = text(payload.get("delta"), "delta")
            at = index(payload.get("output_index"), "output_index")
            return [TextDelta(piece, output_index=at, part=at, refusal=True)] if piece else []
        if kind == "response.reasoning_text.delta":
            piece = text(payload.get("delta"), "delta")
            at = index(payload.get("output_index"), "output_index")
            return [ReasoningDelta(at, piece, output_index=at)] if piece else []
        if kind == "response.completed":
            return [build_stream_end("stop", "completed", None, None), *_usage(payload)]
        if kind == "response.incomplete":
            response = mapping(payload.get("response"), "response")
            finish, word = responses_incomplete(
                mapping(response.get("incomplete_details"), "incomplete_details").get("reason")
            )
            return [build_stream_end(finish, word, None, None), *_usage(payload)]
        if kind in ("response.failed", "error"):
            error = payload.get("error") or mapping(payload.get("response"), "response").get("error") or {}
            if kind == "error" and not error:  # the stream's own error event: its message is at the top
                error = payload
            # Its code beside the event's type, as an incomplete response's reason (policy error-kind)
            word = responses_error_word(kind, error_kind(error))
            return [StreamEnd("error", word, error_message(error) if error else None)]  # no error: none said
        if not kind.startswith(QUIET_PREFIXES):
            diagnose("unknown-event", f"Responses event type {kind!r}")
        return []

    def commonest_fragment(self, payload: dict[str, Any]) -> tuple[CallRef, str] | None:
        """(ref, text) when the event is the commonest kind: non-empty input delta text for an item
        announced at an integer ``output_index``. decode() makes exactly one ``ArgumentsFragment(ref,
        text)`` of it, with no diagnostic and no change to its items. None for any other event (a
        test replays every vector and fuzzed stream with and without this shortcut)."""
        kind = payload.get("type")
        streamed = DELTAS.get(kind) if type(kind) is str else None
        if streamed is None:
            return None
        piece, at = payload.get(streamed[1]), payload.get("output_index")
        if type(piece) is not str or not piece or type(at) is not int:
            return None
        return self.fragment_at(at, piece)

    def form_of(self, payload: dict[str, Any]) -> FormSpec:
        """Of an event commonest_fragment took: where its text sits, the place its form names (the
        item's output index) and the counter every event carries (``sequence_number``, not read)."""
        return FormSpec((DELTAS[payload["type"]][1],), payload["output_index"], counter_at=("sequence_number",))

    def fragment_at(self, at: int, piece: str) -> tuple[CallRef, str] | None:
        """What commonest_fragment gives for such an event at output index ``at`` holding ``piece``
        (not empty): None when no item was announced there (decode() says what it is)."""
        item = self._items.get(at)
        return None if item is None else (item.ref, piece)

    def _known(
        self, payload: Mapping[str, Any], diagnose: Callable[[str, str], None], *, done: bool = False
    ) -> tuple[Any, ItemKind | None]:
        """The item of an output_item event (``done``: its last) and what kind of call it is (None:
        it calls nothing)."""
        item = mapping(payload.get("item"), "item")
        item_type = written(item.get("type"))
        kind = CALL_ITEMS.get(item_type)
        if kind is not None and item_type == "tool_search_call" and item.get("execution") == "client":
            kind = kind._replace(server=False)
        if kind is None and item_type not in QUIET_ITEMS:
            at = payload.get("output_index")
            if self._unknown.first_word(item_key(at), done):  # once per item, though it is announced and finished
                diagnose("unknown-item", f"Responses output item type {item_type!r} at output_index {written(at)}")
        return item, kind

    def _added(self, payload: Mapping[str, Any], diagnose: Callable[[str, str], None]) -> list[Event]:
        item, kind = self._known(payload, diagnose)
        if kind is None:
            return []
        at = index(payload.get("output_index"), "output_index")
        if at is None:
            raise RemoteProtocolError(f"a {item.get('type')} item without output_index")
        call_id = text(item.get("call_id"), "call_id") or text(item.get("id"), "id")
        name = kind.name(item)
        ref = build_call_ref(at, call_id, name, server=kind.server, type=kind.call_type)
        opened = self._items.get(at)
        if opened is not None and not opened.announced:  # its input came first: this names it
            opened.ref, opened.announced = ref, True
            self._open.retyped(opened)
            return [build_call_seen(ref, item=kept(item, kind), announces=True)]
        if opened is not None:
            self._open.drop(opened)
        self._items[at] = self._open.add(Item(ref))
        self._shells.announced(self._items[at], item)
        if item.get("id"):
            self._remember(written(item["id"]), at)
        seen = build_call_seen(ref, item=kept(item, kind))
        if kind.call_type in STREAMED_TEXT:
            prefilled = text(item.get(kind.field or ""), kind.field or "input")
            # Input already in the item (some compatible servers send it there) follows the
            # sighting: the fragment alone would open the call without its item id (fc_...).
            return [seen, build_arguments_fragment(ref, prefilled)] if prefilled else [seen]
        # A built-in item's input is whole only when the item is: a cut before then truncates it.
        if item.get("status") == "completed":
            return [seen, build_arguments_snapshot(ref, whole_input(item, kind))]
        return [seen]

    def _item(self, payload: Mapping[str, Any], diagnose: Callable[[str, str], None]) -> Item | None:
        at = index(payload.get("output_index"), "output_index")
        if at is not None:
            return self._items.get(at)
        item_id = payload.get("item_id")
        places = self._index_of_item.get(str(item_id)) if item_id is not None else None
        if not places:
            return None
        # Several items under the id, the latest ended: the latest still open takes the input (an ended
        # item takes none: routed there, it would open a call no item announced); with none open, the
        # latest. The ended ones passed but the latest are forgotten, so each is passed once.
        found, passed = None, []
        for at in reversed(places):
            if not (self._items[at].ended or self._items[at].finalized):
                found = self._items[at]
                break
            passed.append(at)
        for at in passed[1:]:
            del places[at]
        if found is None or not passed:
            return found or self._items[passed[0]]
        diagnose(
            "stray-input",
            f"{payload.get('type')} with no output_index and item_id {item_id!r}, which the ended item at "
            f"output_index {passed[0]} carries too: taken as input of the latest item still open under it, "
            f"at output_index {found.ref.index}",
        )
        return found

    def _unannounced(
        self, payload: Mapping[str, Any], item_type: str, kind: str, diagnose: Callable[[str, str], None]
    ) -> Item:
        """An input event for an item no ``output_item.added`` announced: the call is opened from
        it, so a cut before the item's end still reports it (truncated, with its text). Its
        ``call_id`` and name come with the item's end; until then it has a synthesized id."""
        at = index(payload.get("output_index"), "output_index")
        item_id = text(payload.get("item_id"), "item_id")
        call = CALL_ITEMS[item_type]
        if at is None:
            sole = self._stray(item_id, call.call_type, kind, diagnose)
            if sole is not None:
                return sole
        else:
            diagnose(
                "unopened-call", f"{kind} for item {item_id!r} at output_index {at}, which no output_item.added opened"
            )
        item = Item(build_call_ref(at, None, call.tool, server=call.server, type=call.call_type), announced=False)
        if at is not None:
            self._items[at] = self._open.add(item)
            if item_id is not None:
                self._remember(item_id, at)
        return item

    def _remember(self, item_id: str, at: int) -> None:
        places = self._index_of_item.setdefault(item_id, {})
        places.pop(at, None)  # announced again there: the latest
        places[at] = None

    def _stray(
        self, item_id: str | None, call_type: str, kind: str, diagnose: Callable[[str, str], None]
    ) -> Item | None:
        """Input that names no place (no ``output_index``; its ``item_id`` absent or never seen): the
        open call it continues under policy ``stray_input``, or None to open a call of its own.
        With no call of its type open, nothing else could own it (``unopened-call``); with one,
        ``sole-open-call`` appends to it; with more, which one is a guess, so it stands apart."""
        open_items = self._open.of(call_type)  # not a walk over every item at each stray event
        named = f"item_id {item_id!r}, unknown" if item_id is not None else "no item_id"
        if not open_items:
            diagnose("unopened-call", f"{kind} with no output_index and {named}, while no call is open")
            return None
        policy = (self.policies or default_policies()).stray_input
        if policy == "sole-open-call" and len(open_items) == 1:
            sole = next(iter(open_items))
            diagnose(
                "stray-input",
                f"{kind} with no output_index and {named}: taken as input of the only open call, "
                f"at output_index {sole.ref.index} (policy stray_input)",
            )
            return sole
        why = f"{len(open_items)} calls are open" if policy == "sole-open-call" else "policy stray_input is own-call"
        diagnose("stray-input", f"{kind} with no output_index and {named}: it opens a call of its own ({why})")
        return None

    def _item_done(self, payload: Mapping[str, Any], diagnose: Callable[[str, str], None]) -> list[Event]:
        item, kind = self._known(payload, diagnose, done=True)
        if kind is None:
            if item.get("type") == "compaction":  # the context's summary: it goes back in its place
                return [CompactionBlock(dict(item), index(payload.get("output_index"), "output_index"))]
            if item.get("type") == "program_output":  # what a program the client's results resumed gave
                return program_output(item, index(payload.get("output_index"), "output_index"), diagnose)
            return []
        known = self._item(payload, diagnose)
        events: list[Event] = []
        if known is None:  # never announced: the whole call arrives here, opened first (its input may be empty)
            events = self._added(payload, diagnose)
            known = self._item(payload, diagnose)
            if known is None:
                return events
        if not known.announced:  # the item brings what its input events could not: call_id and name
            call_id = text(item.get("call_id"), "call_id") or text(item.get("id"), "id")
            known.ref = build_call_ref(
                known.ref.index,
                call_id,
                kind.name(item),
                server=kind.server,
                type=kind.call_type,
            )
            known.announced = True
            self._open.retyped(known)
            events.append(build_call_seen(known.ref, item=kept(item, kind), announces=True))
        word = final_word(item, kind)
        if known.ended:
            if known.said is not None and word != known.said:  # the call was handed out at the first
                who = f"call {known.ref.id}" if known.ref.id else f"the call at output_index {known.ref.index}"
                diagnose("item-done-again", f"{who}: {done_again(known.said, word)}: not read, the first stands")
            return events
        known.said = word
        if (fault := item_fault(item, kind, known.ref.index)) is not None:
            diagnose("part-not-reassembled", fault)
        if not known.finalized:
            if kind.call_type in STREAMED_TEXT:
                final = text(item.get(kind.field or ""), kind.field or "input") or ""
                if kind.call_type == "program" and known.announced:  # its fingerprint comes with its end
                    events.append(build_call_seen(known.ref, item=kept(item, kind)))
            else:
                final = word[0]
                whole_item = kept(item, kind)
                if whole_item is not None:
                    events.append(build_call_seen(known.ref, item=whole_item))
            # A shell call's streamed commands: its action replaces their text, said only if they differ
            events.append(build_arguments_snapshot(known.ref, final, confirms=not self._shells.agreed(known, item)))
        elif kind.call_type in STREAMED_TEXT and kind.field and item.get(kind.field) is not None:
            # The item's input after the input's own .done: the later final word (equal, it changes
            # nothing; different, it replaces and says so), not dropped in silence.
            events.append(build_arguments_snapshot(known.ref, text(item[kind.field], kind.field) or "", confirms=True))
        known.ended = True
        self._open.drop(known)
        # An item the provider finished as incomplete, or ended while still in progress (OpenAI's way
        # with a call cut by max_output_tokens), is not a call to run, whole as its input may look.
        status = text(item.get("status"), "item.status")
        said = "with status in_progress" if status == "in_progress" else ""
        events.append(CallEnd(known.ref, incomplete=status in UNFINISHED, said=said, unusable=unusable(item, kind)))
        return events


def _usage(payload: Mapping[str, Any]) -> list[Event]:
    usage = mapping(mapping(payload.get("response"), "response").get("usage"), "usage")
    return [build_usage_report(dict(usage))] if usage else []
