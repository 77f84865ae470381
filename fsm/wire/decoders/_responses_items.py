"""What each OpenAI Responses output item and input event is to the decoder
(``openai_responses.py``): which items call a tool and where each carries its input, which call
nothing, which events stream a call's input, what a call keeps of its item, and what a finished
reasoning or message item gives back."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from fsm.errors import kind as kind_of
from fsm.errors import shown
from fsm.events import CallRef, Event, ReasoningDelta, ServerResultBlock, TextDelta
from fsm.wire.decoders._built_in_actions import action_fault
from fsm.wire.decoders._fields import index, items, mapping, text
from fsm.wire.decoders._wire import dumps

QUIET_PREFIXES = (
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.content_part.",
    "response.output_text.",
    "response.refusal.",
    "response.reasoning",
    "response.web_search_call.",
    "response.file_search_call.",
    "response.code_interpreter_call",
    "response.image_generation_call.",
    "response.mcp_",
    "response.shell_call_output_content.",
    "response.compaction.",
)
"""Events with no call input in them (text, reasoning, a hosted tool's progress, a compaction's:
its item comes whole at its end): read past without a word, where any other unknown event is reported."""


class ItemKind(NamedTuple):
    call_type: str
    """The call's type in the result."""
    tool: str | None
    """The tool's name for a built-in item; None: the item's own ``name``."""
    field: str | None
    """Where the item carries the call's input (None: it shows none)."""
    server: bool = False
    named_by: str = "name"
    """The item's field that names the call, where ``tool`` is None."""

    def name(self, item: Mapping[str, Any]) -> str | None:
        """The call's name: the built-in tool's, else the one the item gives."""
        return self.tool or text(item.get(self.named_by), self.named_by)


CALL_ITEMS = {
    "function_call": ItemKind("function", None, "arguments"),
    "custom_tool_call": ItemKind("custom", None, "input"),
    "apply_patch_call": ItemKind("apply_patch_call", "apply_patch", "operation"),
    "shell_call": ItemKind("shell_call", "shell", "action"),
    "local_shell_call": ItemKind("local_shell_call", "local_shell", "action"),
    "computer_call": ItemKind("computer_call", "computer", "action"),
    "mcp_call": ItemKind("mcp_call", None, "arguments", server=True),
    "mcp_approval_request": ItemKind("mcp_approval_request", None, "arguments", server=True),
    "code_interpreter_call": ItemKind("code_interpreter_call", "code_interpreter", "code", server=True),
    "web_search_call": ItemKind("web_search_call", "web_search", "action", server=True),
    "file_search_call": ItemKind("file_search_call", "file_search", "queries", server=True),
    "image_generation_call": ItemKind("image_generation_call", "image_generation", None, server=True),
    "tool_search_call": ItemKind("tool_search_call", "tool_search", "arguments", server=True),
    "program": ItemKind("program", "program", "code", server=True),
    "multi_agent_call": ItemKind("multi_agent_call", None, "arguments", server=True, named_by="action"),
}
"""Every item type that calls a tool, by its ``type``."""
STREAMED_TEXT = frozenset({"function", "custom", "mcp_call", "code_interpreter_call", "program"})
"""Call types whose input is text on the wire (JSON text or freeform), streamed or whole."""
QUIET_ITEMS = frozenset(
    {
        "message",
        "reasoning",
        "compaction",
        "additional_tools",
        "mcp_list_tools",
        "mcp_approval_response",
        "program_output",
        "multi_agent_call_output",
        "agent_message",
        "function_call_output",
        "custom_tool_call_output",
        "computer_call_output",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
        "tool_search_output",
    }
)
"""Item types that call nothing: skipped, where an unknown item type is reported (``unknown-item``)."""
UNFINISHED = frozenset({"incomplete", "in_progress"})
"""The statuses at an item's ``response.output_item.done`` that say it did not finish: its call is
given up (truncated with its raw text). OpenAI ends a call cut by ``max_output_tokens`` with either."""
# Input events: the item type they stream into and the field holding the text (a delta's piece,
# a done event's whole input).
DELTAS = {
    "response.function_call_arguments.delta": ("function_call", "delta"),
    "response.custom_tool_call_input.delta": ("custom_tool_call", "delta"),
    "response.mcp_call_arguments.delta": ("mcp_call", "delta"),
    "response.code_interpreter_call_code.delta": ("code_interpreter_call", "delta"),
}
DONES = {
    "response.function_call_arguments.done": ("function_call", "arguments"),
    "response.custom_tool_call_input.done": ("custom_tool_call", "input"),
    "response.mcp_call_arguments.done": ("mcp_call", "arguments"),
    "response.code_interpreter_call_code.done": ("code_interpreter_call", "code"),
}


CALL_CONTEXT = ("namespace", "caller", "async", "agent")
"""What a function or custom call item says of the tool beside its name, which its input item takes
back: the ``namespace`` of a tool in a namespace tool group (the name alone may be another group's
tool), the ``caller`` (``direct``, or the ``program`` item that made the call), ``async``
(openai ``ResponseFunctionToolCall`` / ``ResponseCustomToolCall``) and, under the multi-agent beta,
the ``agent`` whose call it is (openai ``types/beta``: "The agent that produced this item"). Kept
where the item gives them (but a ``direct`` caller, the default, which says nothing): dropped, the
call was run, and sent back, as another tool's (or agent's)."""


def kept(item: Mapping[str, Any], kind: ItemKind) -> dict[str, Any] | None:
    """What a call keeps of its item to be sent back: a built-in client call's whole item, as it
    came; a function or custom call's type and item id (``fc_...``), by which the request pairs the
    call with the reasoning item before it, and its :data:`CALL_CONTEXT`; nothing for a hosted call,
    which is not sent back."""
    if kind.call_type == "program":
        return _program(item)
    if kind.server:
        return None
    if kind.call_type in STREAMED_TEXT:
        item_id = item.get("id")
        context = {key: item[key] for key in CALL_CONTEXT if item.get(key) not in (None, {"type": "direct"})}
        if _agent_fault(item) is not None:  # said at the item's end (item_fault): the API refuses it back
            del context["agent"]
        if type(item_id) is str and item_id:
            return {"type": item.get("type"), "id": item_id, **context}
        return {"type": item.get("type"), **context} if context else None
    return dict(item)


PROGRAM_KEPT = ("id", "call_id", "fingerprint", "agent")
"""What a ``program`` item (OpenAI's programmatic tool calling) must go back with beside its code:
its item id, the ``call_id`` its client calls name as their ``caller``, its opaque ``fingerprint``,
by which OpenAI replays the program when the results of the client calls it made come (openai
``types/beta``: "Opaque program replay fingerprint that must be round-tripped"), and the agent
that wrote it."""


def _program(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a program item keeps to be sent back (:data:`PROGRAM_KEPT`), or None when it has none
    of it yet (its ``output_item.added`` may come before its fingerprint does)."""
    held = {key: item[key] for key in PROGRAM_KEPT if item.get(key) is not None}
    if _agent_fault(item) is not None:
        del held["agent"]
    return {"type": "program", **held} if held else None


def item_fault(item: Mapping[str, Any], kind: ItemKind, at: Any) -> str | None:
    """What makes the call item ``item`` at output index ``at``, at its end, one that cannot go back
    as it came, in words (said, ``part-not-reassembled``; audit 88), or None: a ``program`` whose
    item id, call id, fingerprint or code is no text, or empty (:mod:`fsm.messages` leaves it out, so
    a request without stored state cannot resume it); an ``agent`` the call keeps not (:func:`_agent_fault`)."""
    where = f"a {kind.call_type} item at output_index {at}"
    if kind.call_type == "program":
        for key in ("id", "call_id", "fingerprint", "code"):
            if type(item.get(key)) is not str or not item[key]:
                said = "null or missing" if item.get(key) is None else shown(item[key])
                return f"{where} whose {key} is {said}, not text: it cannot go back to be resumed"
    agent = _agent_fault(item)
    return f"{where} whose {agent}: not kept" if agent else None


def program_output(item: Mapping[str, Any], at: int | None, diagnose: Callable[[str, str], None]) -> list[Event]:
    """A ``program_output`` item (what a program the client's results resumed gave), kept whole to go
    back in its place; nothing, said (``part-not-reassembled``; audit 88), for one the API refuses
    back (:func:`program_output_fault`)."""
    if (fault := program_output_fault(item)) is not None:
        diagnose("part-not-reassembled", f"a program_output item at output_index {at} whose {fault}: not kept")
        return []
    return [ServerResultBlock(dict(item), at)]


def program_output_fault(item: Mapping[str, Any]) -> str | None:
    """What makes a ``program_output`` item one the API refuses back, or None: its ``id``,
    ``call_id`` or ``result`` no text (openai ``types/beta`` ``ProgramOutput`` requires each)."""
    for key in ("id", "call_id", "result"):
        if type(item.get(key)) is not str:
            return f"{key} is {'null or missing' if item.get(key) is None else kind_of(item[key])}, not text"
    return None


def _agent_fault(item: Mapping[str, Any]) -> str | None:
    """Why an item's ``agent`` is none the API takes back (``types/beta``: an object, ``agent_name`` text)."""
    agent = item.get("agent")
    if type(agent) is dict:
        return None if type(agent.get("agent_name")) is str else "agent names no agent_name in text"
    return None if agent is None else f"agent is {kind_of(agent)}, not an object"


def _input(item: Mapping[str, Any], kind: ItemKind) -> Any:
    """Where the item carries the call's input: its field's value, else a computer call's batch
    as ``{"actions": [...]}``; None when it shows none."""
    value = item.get(kind.field) if kind.field else None
    actions = item.get("actions") if value is None and kind.call_type == "computer_call" else None
    # a batch is a list of action objects: any other (a number, one object) is no batch to run, nor to send back
    if isinstance(actions, list) and all(isinstance(action, Mapping) for action in actions):
        return {"actions": actions}
    return value


def whole_input(item: Mapping[str, Any], kind: ItemKind) -> str:
    """A built-in or hosted item's input as JSON object text: its ``operation`` or ``action`` object;
    a list (file search ``queries``, a batch of computer ``actions``) under its own key; ``{}`` when
    a hosted item shows no input (``null`` for a client's, which is then no call to run)."""
    value = _input(item, kind)
    if value is None:  # a client's call with no operation or action is no call to run: its input no object
        return "{}" if kind.server else "null"
    if isinstance(value, Mapping):
        return dumps(value)
    if not kind.server:  # a client's operation or action is one object: anything else is no call to run
        return dumps(value)
    if isinstance(value, str):  # already JSON text (a client tool_search_call sends an object)
        return value
    return dumps({kind.field: value})


def unusable(item: Mapping[str, Any], kind: ItemKind) -> str:
    """Why a built-in client call's whole action object is none its tool can run (see
    ``_built_in_actions``), or ``""``; an action that is no object is not one (whole_input made its
    input no object, and the call ends invalid for that)."""
    if kind.server or kind.call_type in STREAMED_TEXT:
        return ""
    value = _input(item, kind)
    return (action_fault(kind.call_type, value) or "") if isinstance(value, Mapping) else ""


Word = tuple[Any, Any, Any, Any]  # what an output_item.done says of its call (final_word)


def final_word(item: Mapping[str, Any], kind: ItemKind) -> Word:
    """What an ``output_item.done`` says of its call: the input (as the item holds it for a streamed
    one, else as :func:`whole_input` writes it), the status, the name and a program's fingerprint
    (what the program goes back with: another at a later end is not read, so it is said)."""
    said = item.get(kind.field or "") if kind.call_type in STREAMED_TEXT else whole_input(item, kind)
    fingerprint = item.get("fingerprint") if kind.call_type == "program" else None
    return said, item.get("status"), item.get("name"), fingerprint


def done_again(first: Word, later: Word) -> str:
    """How a later ``output_item.done`` of an ended item differs from the one that ended it."""
    other = "other input" if first[0] != later[0] else f"status {shown(later[1])}" if first[1] != later[1] else None
    if other is None and first[2] == later[2]:
        other = f"fingerprint {shown(later[3])}"
    return f"output_item.done again, with {other or f'name {shown(later[2])}'}"


class Item:
    """A call item the decoder holds at its output index."""

    __slots__ = ("announced", "ended", "finalized", "ref", "said")

    def __init__(self, ref: CallRef, *, announced: bool = True) -> None:
        self.ref = ref
        self.announced = announced
        """False: opened from an input event, so its call_id and name are still to come."""
        self.finalized = False
        self.ended = False
        self.said: Word | None = None
        """The input, status and name its ``output_item.done`` gave, which ended it."""


class OpenItems:
    """The items held at their output index that have neither ended nor been finalized, by call
    type, kept as they change: input that names no place asks for those of its type at each event,
    and walking every item held for them made a flood of such input cost the items times the events."""

    def __init__(self) -> None:
        self._by_type: dict[str, dict[Item, None]] = {}
        self._typed: dict[Item, str] = {}  # the type each is kept under

    def add(self, item: Item) -> Item:
        """``item``, now held at its output index (it has neither ended nor been finalized)."""
        self._by_type.setdefault(item.ref.type, {})[item] = None
        self._typed[item] = item.ref.type
        return item

    def drop(self, item: Item) -> None:
        """``item`` ended, was finalized, or another item took its output index."""
        kind = self._typed.pop(item, None)
        if kind is not None:
            del self._by_type[kind][item]

    def retyped(self, item: Item) -> None:
        """``item``'s reference changed: kept under its type now, if it is kept."""
        if item in self._typed:
            self.drop(item)
            self.add(item)

    def of(self, call_type: str) -> Mapping[Item, None]:
        """The open items of ``call_type``, in no order that matters (only a sole one is taken)."""
        return self._by_type.get(call_type) or {}


def item_key(at: Any) -> int | str | None:
    """What :class:`UnknownItems` holds for an item's ``output_index``: the index itself when it is
    None or an int of at most 64 bits, else a digest of it (a list, an object, a long string or a
    huge number, which no real stream sends), so the set holds a few bytes an item whatever came.
    A list or object index must not raise here, nor an int past the int-string limit."""
    if at is None or (type(at) is int and -(1 << 63) <= at < 1 << 63):
        return at
    if type(at) is int:
        said = at.to_bytes((at.bit_length() + 8) // 8, "little", signed=True)
    else:
        try:
            text = repr(at)
        except ValueError:  # an int past the int-string limit inside a list or object
            text = dumps(at)
        said = text.encode("utf-8", "surrogatepass")
    return "#" + hashlib.blake2b(said, digest_size=16).hexdigest()


class UnknownItems:
    """The output indexes of the items of unknown type announced and not yet done, so each such
    item is reported once, though it is announced and finished. Its done takes it out: the set
    holds only what the stream has open, and at most ``OPEN`` of that (past it, it starts again,
    and an item may be reported twice; the diagnostics of one code are bounded anyway). The latest
    ``OPEN`` items done are remembered too, so a done resent is not reported again."""

    OPEN = 1024

    def __init__(self) -> None:
        self._open: set[int | str | None] = set()
        self._done: dict[int | str, None] = {}  # the latest items done, the oldest first

    def first_word(self, at: int | str | None, done: bool) -> bool:
        """Whether the event of the item at ``at`` (``done``: its last) is the first word of it."""
        if at in self._open:
            if done:
                self._open.discard(at)
                self._ended(at)
            return False
        if at is not None and at in self._done:  # an event of an item done already: a resend
            return False
        if not done:
            if len(self._open) >= self.OPEN:
                self._open.clear()
            self._open.add(at)
        else:
            self._ended(at)
        return True

    def _ended(self, at: int | str | None) -> None:
        # No index: each such item is one of its own (none could be told from a resend of it).
        if at is not None:
            self._done[at] = None
            if len(self._done) > self.OPEN:
                del self._done[next(iter(self._done))]


def reasoning_item(payload: Mapping[str, Any]) -> list[Event]:
    """A finished reasoning item: what must go back with it (its id, summary, encrypted content).
    Its text came in ``response.reasoning_text.delta`` events, so it is not taken again here."""
    item = mapping(payload.get("item"), "item")
    if item.get("type") != "reasoning":
        return []
    summary = tuple(
        text(mapping(part, "summary[]").get("text"), "summary[].text") or ""
        for part in items(item.get("summary"), "summary")
    )
    at = index(payload.get("output_index"), "output_index")
    return [
        ReasoningDelta(
            at,
            output_index=at,
            item_id=text(item.get("id"), "item.id"),
            summary=summary,
            encrypted_content=text(item.get("encrypted_content"), "item.encrypted_content"),
        )
    ]


def message_item(payload: Mapping[str, Any]) -> list[Event]:
    """A message item's id, status and phase, at its start and at its end: what it goes back with
    (the API pairs a reasoning item with the message after it by that id). Its text came in
    ``response.output_text.delta`` events, so it is not taken again here."""
    item = mapping(payload.get("item"), "item")
    if item.get("type") != "message":
        return []
    item_id, status = text(item.get("id"), "item.id"), text(item.get("status"), "item.status")
    phase = text(item.get("phase"), "item.phase")
    if not item_id and not status and not phase:
        return []
    at = index(payload.get("output_index"), "output_index")
    return [
        TextDelta("", output_index=at, part=at, item_id=item_id or None, status=status or None, phase=phase or None)
    ]
