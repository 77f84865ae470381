"""Reading the message formats (OpenAI chat, Anthropic, Gemini, OpenAI Responses input items,
Ollama's native chat, Bedrock Converse), refusing malformed input. Cohere v2 messages are
OpenAI chat's shape (``tool_calls`` with ids, ``tool`` messages with a ``tool_call_id``) and are read
as ``openai``.

Each message is read into its calls and results (:class:`Reader`); :mod:`fsm.history.turns` groups
them in turns.

Ollama messages carry no ids (the ollama client keeps none, and an ``id`` a raw response gave a
call is not what a ``tool`` message answers by): a call is keyed by its name and place, ``(name,
k)`` for the k-th call of that name in its turn, and a ``tool`` message by its ``tool_name`` the
same way, so the k-th answer naming a tool answers the k-th call of it. A tool message without a
``tool_name`` cannot be paired and is refused, as a call without a name is. A message of another
role carrying a ``tool_name`` (and no calls) is a result sent in that role (``misplaced-result``):
``/api/chat`` reads a ``tool_name`` in a ``tool`` message alone.

A Gemini ``functionResponse`` that follows one to the same id saying ``willContinue: true`` (the
Live API's NON_BLOCKING functions stream their responses so) goes on with that response: it is no
result of its own (policy will-continue-responses), so no second result: the reader notes it with the
response it goes on with (``Roles.chains``), and repair drops, renames and moves the two as one.
One after a response that did not say so is a result again (``duplicate-result``).

Anything the reader cannot read as a conversation raises
:class:`~fsm.errors.LocalProtocolError` naming the message (1-based), never a bare Python error.

A history built from the SDKs' own objects is read as the wire dicts they stand for
(:mod:`fsm.history.objects`); which format ``"auto"`` reads it in, :mod:`fsm.history.detect` tells.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

from fsm.errors import kind as what_kind
from fsm.history.entries import Entry, Key, Roles, Segment
from fsm.history.findings import Format
from fsm.history.objects import fail as _fail
from fsm.history.objects import is_object as _is_object
from fsm.history.server_blocks import SERVER_CALLS, converse_payload, is_server_result

ANTHROPIC_CALLS = (*SERVER_CALLS, "tool_use", "tool_result")

FORMATS: tuple[Format, ...] = ("openai", "anthropic", "gemini", "responses", "ollama", "bedrock")

ID_LIMIT = {"bedrock": 64}
"""The longest call id a format takes (Converse's ToolUseId: 1 to 64 of ``[a-zA-Z0-9_.:-]``): a rename
repair makes past it cuts the id's stem as far as ``_d<n>`` needs (``<first 61>_d2``)."""

ROLES: dict[Format, frozenset[Any]] = {
    "openai": frozenset({"system", "developer", "user", "assistant", "tool", "function"}),
    "ollama": frozenset({"system", "user", "assistant", "tool"}),
    "anthropic": frozenset({"user", "assistant"}),
    "bedrock": frozenset({"user", "assistant"}),
    "gemini": frozenset({"user", "model", None}),
    "responses": frozenset({"user", "assistant", "system", "developer"}),
}
"""The roles a message of each format may have (Gemini's may go without; a Responses item that is
no message has none): any other is ``unknown-role``."""

MODEL_ROLE: dict[Format, str] = {"anthropic": "assistant", "bedrock": "assistant", "gemini": "model"}
"""The role of the model's own messages, where a tool result is ``misplaced-result`` (the APIs take
results from the user)."""

ALTERNATE: dict[Format, tuple[str, ...]] = {"bedrock": ("user", "assistant"), "gemini": ("user", "model")}
"""The roles a message may not have twice in a row (``user-after-user``, ``assistant-after-assistant``):
Bedrock refuses either (langchain-aws#130), Gemini either as well (NousResearch/hermes-agent#55623;
a model content making calls right after a model content is a 400, "function call turn comes
immediately after a user turn or after a function response turn", continuedev/continue#11805).
Anthropic combines a run of one role into one turn instead."""

CALLER: dict[Format, str] = {**MODEL_ROLE, "openai": "assistant", "ollama": "assistant", "responses": ""}
"""The role a message making calls has: in any other the format has, its calls are ``misplaced-call``."""

RESPONSES_OUTPUT_OF = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "apply_patch_call": "apply_patch_call_output",
    "shell_call": "shell_call_output",
    "local_shell_call": "local_shell_call_output",
    "computer_call": "computer_call_output",
}
"""OpenAI Responses input items: each call item type and the output item type that answers it, its
own with ``_output`` (which the reader takes as a result's kind: policy result-answers-its-kind)."""
RESPONSES_OUTPUTS = frozenset(RESPONSES_OUTPUT_OF.values())


def responses_key_field(item: Mapping[str, Any]) -> str:
    """Where a Responses item holds the id it pairs by: ``call_id``, except a
    ``local_shell_call_output``, whose ``id`` is the call's (the SDK's input shape has no call_id)."""
    if item.get("type") == "local_shell_call_output" and "call_id" not in item:
        return "id"
    return "call_id"


def shown(key: Key) -> str:
    """A key as findings and changes show it: the id, or ``name#k`` (k 1-based) for an id-less call."""
    return key if isinstance(key, str) else f"{key[0]}#{key[1] + 1}"


def is_ollama(message: Mapping[str, Any]) -> bool:
    """Does a message tell Ollama: a ``tool`` message answering by ``tool_name`` alone, or calls whose
    arguments are an object (OpenAI chat's are text)?"""
    if message.get("role") == "tool":
        return "tool_name" in message and "tool_call_id" not in message
    calls = message.get("tool_calls")
    if not isinstance(calls, list) or not calls or not _is_object(calls[0]):
        return False
    function = calls[0].get("function")
    return _is_object(function) and _is_object(function.get("arguments"))


def _wire_id(value: Any, message: int, what: str) -> str | None:
    """A call's or result's id: a non-empty string, or none at all (Gemini may omit it)."""
    if isinstance(value, str) and value:
        return value
    if value is None or value == "":
        return None
    raise _fail(message, f"{what}'s id must be a string, not {what_kind(value)}")


def _required_id(value: Any, message: int, what: str) -> str:
    """OpenAI and Anthropic pair by id only, so a call or result without one is malformed."""
    wire_id = _wire_id(value, message, what)
    if wire_id is None:
        raise _fail(message, f"{what} has no id")
    return wire_id


def _name(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def items(message: Mapping[str, Any], fmt: Format, at: int) -> list[Any]:
    """The list holding a message's calls and results: ``tool_calls``, ``content`` blocks or ``parts``."""
    if fmt == "responses":
        return []  # each item is a call, an output or neither
    field = "content" if fmt in ("anthropic", "bedrock") else "parts" if fmt == "gemini" else "tool_calls"
    value = message.get(field)
    if value is None or (fmt in ("anthropic", "bedrock") and isinstance(value, str)):
        return []
    if not isinstance(value, list):
        raise _fail(at, f"{field} must be a list, not {what_kind(value)}")
    for j, item in enumerate(value):
        if not _is_object(item):
            raise _fail(at, f"{field}[{j}] must be an object, not {what_kind(item)}")
    return value


def gemini_payload(part: Mapping[str, Any], kind: Literal["call", "result"]) -> tuple[str, Any] | None:
    """The field (camelCase or snake_case) and value of a part's function call or response."""
    for field in ("functionCall", "function_call") if kind == "call" else ("functionResponse", "function_response"):
        value = part.get(field)
        if value is not None:
            return field, value
    return None


def _beside(parts: list[Any]) -> bool:
    """Does a Gemini content holding function responses hold a part of another kind too?"""
    return any(gemini_payload(part, "result") is None for part in parts)


class Reader:
    """Keys id-less Gemini calls and responses, and Ollama's, by name and order within their turn."""

    def __init__(self, fmt: Format) -> None:
        self.fmt = fmt
        self.results_named: dict[str, int] = {}
        self.roles = Roles()
        """What the messages' roles say, noted as each is read."""
        self.last_role: Any = None
        """The role of the message read last."""
        self.misplaced = False
        """Were the results of the message read last sent in the model's role (``misplaced-result``)?"""
        self.served = Segment([], [], server=True)
        """The server tool calls and results of the message read last (Anthropic's): a turn of their own."""
        self.going_on: dict[Key | None, tuple[int, int]] = {}
        """Gemini: the ids whose latest response said ``willContinue: true``, each with where its chain's first is."""

    def _goes_on(self, payload: Mapping[str, Any], entry: Entry) -> bool:
        """Does a Gemini response with an id (``entry``, were it a result) go on with the latest to its
        id, which said ``willContinue``? Notes it in that chain, and whether this one says it (policy
        will-continue-responses)."""
        head = self.going_on.pop(entry.key, None)
        if payload.get("willContinue", payload.get("will_continue")) is True:
            self.going_on[entry.key] = head or (entry.message, entry.slot)
        if head is not None:
            self.roles.chains.setdefault(head, []).append(entry)
            self.went_on = True
        return head is not None

    def _key(self, wire_id: str | None, name: str | None, counts: dict[str, int], at: int) -> Key:
        if wire_id is not None:
            return wire_id
        if name is None:
            raise _fail(at, "a function call or response has neither an id nor a name")
        k = counts.get(name, 0)
        counts[name] = k + 1
        return (name, k)

    def read(self, message: Mapping[str, Any], at: int) -> tuple[list[Entry] | None, list[Entry]]:
        """The results a message holds (None when it is no results message) and the calls it makes."""
        fmt = self.fmt
        results: list[Entry] = []
        calls: list[Entry] = []
        role = message.get("role")
        itemed = fmt != "responses" or "role" in message or message.get("type") == "message"
        if itemed and not known_role(fmt, role) and not converse_aside(fmt, message):
            self.roles.odd.append((at, role))
        self.misplaced = self.went_on = False  # went_on: a Gemini response here goes on with one before it
        if fmt == "openai" and role == "tool":
            rid = _required_id(message.get("tool_call_id"), at, "a tool message")
            results.append(Entry(at, -1, rid, _name(message.get("name"))))
        elif (
            fmt == "openai" and message.get("tool_call_id") and not message.get("tool_calls") and known_role(fmt, role)
        ):
            # a result sent in another role (an assistant message carrying the tool_call_id it answers)
            rid = _required_id(message.get("tool_call_id"), at, "a message's tool_call_id")
            results.append(Entry(at, -1, rid, _name(message.get("name"))))
            self.misplaced = True
        elif fmt == "ollama" and (role == "tool" or self._answers_as_other(message, role)):
            what = "a tool message's tool_name" if role == "tool" else f"the {role} message's tool_name"
            tool = _ollama_name(message.get("tool_name"), at, what)
            results.append(Entry(at, -1, self._key(None, tool, self.results_named, at), tool))
            self.misplaced = role != "tool"
        elif fmt == "responses":
            kind = message.get("type")
            if not isinstance(kind, str):
                pass  # no call or output: those say which they are
            elif kind in RESPONSES_OUTPUT_OF:
                cid = _required_id(message.get("call_id"), at, f"the {kind} item")
                calls.append(Entry(at, -1, cid, _name(message.get("name")) or kind.removesuffix("_call"), kind))
            elif kind in RESPONSES_OUTPUTS:
                rid = _required_id(message.get(responses_key_field(message)), at, f"the {kind} item")
                results.append(Entry(at, -1, rid, _name(message.get("name")), kind.removesuffix("_output")))
        calls_named: dict[str, int] = {}  # one message makes a turn's calls
        self.served = served = Segment([], [], server=True)
        # the ids of a Converse message's server calls so far: only the model's own message answers them
        self.served_ids: set[Key] | None = set() if message.get("role") == "assistant" else None
        for slot, item in enumerate(items(message, fmt, at)):
            if fmt == "openai":
                function = item.get("function")
                if function is not None and not _is_object(function):
                    raise _fail(at, "a tool call's function must be an object")
                cid = _required_id(item.get("id"), at, "a tool call")
                calls.append(Entry(at, slot, cid, _name((function or {}).get("name"))))
            elif fmt == "ollama":
                function = item.get("function")
                if not _is_object(function):
                    raise _fail(at, "a tool call's function must be an object")
                tool = _ollama_name(function.get("name"), at, "a tool call's function name")
                calls.append(Entry(at, slot, self._key(None, tool, calls_named, at), tool))
            elif fmt == "anthropic":
                kind = item.get("type")
                if kind == "tool_use" or kind in SERVER_CALLS:
                    cid = _required_id(item.get("id"), at, f"a {kind} block")
                    (calls if kind == "tool_use" else served.calls).append(
                        Entry(at, slot, cid, _name(item.get("name")))
                    )
                elif kind == "tool_result" or is_server_result(kind):
                    rid = _required_id(item.get("tool_use_id"), at, f"a {kind} block")
                    (results if kind == "tool_result" else served.results).append(Entry(at, slot, rid, None))
                elif converse_payload(item) is not None:
                    raise _fail(at, "a Bedrock Converse block in an Anthropic history")
            elif fmt == "bedrock":
                self._read_converse(item, at, slot, calls, results)
            else:
                for kind, (field, payload) in _gemini_payloads(item):
                    if not _is_object(payload):
                        raise _fail(at, f"{field} must be an object")
                    name = _name(payload.get("name"))
                    wire_id = _wire_id(payload.get("id"), at, f"a {field}")
                    if kind == "call":
                        calls.append(Entry(at, slot, self._key(wire_id, name, calls_named, at), name))
                        self.going_on.pop(wire_id, None)
                    elif wire_id is None or not self._goes_on(payload, Entry(at, slot, wire_id, name)):
                        results.append(Entry(at, slot, self._key(wire_id, name, self.results_named, at), name))
        if calls and results:
            raise _fail(at, "a message cannot both make tool calls and answer them")
        if calls:
            self.results_named = {}
        if results and role == MODEL_ROLE.get(fmt, ""):
            self.misplaced = True
        # Claude's server calls are the model's as its client calls are (server-blocks-are-the-models)
        made = calls or (fmt == "anthropic" and served.calls)
        if made and fmt != "responses" and role != CALLER[fmt] and known_role(fmt, role) and role is not None:
            self.roles.calling.add(at)
        role = read_role(fmt, message, bool(calls))  # roleless-as-user
        if fmt == "gemini" and role == "function" and (results or self.went_on) and not calls:
            role = "user"  # the user content repair makes of it (function-role-to-user)
        if fmt == "gemini" and role == "user" and (results or self.went_on) and _beside(items(message, fmt, at)):
            self.roles.beside.append(at)  # responses beside the user's other parts (results-beside-text)
            self.roles.mixed.add(at)
        if at > 0 and role == self.last_role and role in ALTERNATE.get(fmt, ()):
            self.roles.repeated.append((at, role))  # Converse and Gemini want the roles to alternate
        # A user's calls go to a model message (repair moves them): a user message after it follows the model.
        self.last_role = CALLER[fmt] if at in self.roles.calling else role
        return (results or None), calls

    @staticmethod
    def _answers_as_other(message: Mapping[str, Any], role: Any) -> bool:
        """An Ollama message of another known role than ``tool`` carrying a ``tool_name`` (and no
        calls): a result sent in that role, which /api/chat reads as a tool's only in a tool message."""
        return bool(message.get("tool_name")) and not message.get("tool_calls") and known_role("ollama", role)

    def _read_converse(
        self, block: Mapping[str, Any], at: int, slot: int, calls: list[Entry], results: list[Entry]
    ) -> None:
        payload = converse_payload(block)
        if payload is None:
            if block.get("type") in ("tool_use", "tool_result"):
                raise _fail(at, f"an Anthropic {block['type']} block in a Bedrock Converse history")
            return  # text, reasoning, an image...: neither a call nor a result
        field, value = payload
        if field == "toolUse" and "toolResult" in block:  # a Converse block is one of its kinds (boto3 refuses it)
            raise _fail(at, "a Converse block holds both toolUse and toolResult")
        if not _is_object(value):
            raise _fail(at, f"{field} must be an object, not {what_kind(value)}")
        wire_id = _required_id(value.get("toolUseId"), at, f"a {field} block")
        entry = Entry(at, slot, wire_id, _name(value.get("name")))
        if field == "toolResult":  # in the model's own message, naming a server call of it before it: that call's
            (self.served.results if self.served_ids and wire_id in self.served_ids else results).append(entry)
        elif value.get("type") != "server_tool_use":
            calls.append(entry)
        else:
            self.served.calls.append(entry)
            if self.served_ids is not None:
                self.served_ids.add(wire_id)


def read_role(fmt: Format, message: Mapping[str, Any], calls: bool) -> Any:
    """The role a message is read in: its own; but a Gemini content without one is the user's
    (``roleless-as-user``: the API takes a content without a role as the user's,
    microsoft/semantic-kernel#13288, and the SDKs default to it, google-gemini/deprecated-generative-ai-android#67),
    or the model's when it makes function calls (``calls``) or holds a server-side ``toolCall`` part:
    only the model makes either. Repair keeps it without a role, as it came, unless what it joins to it
    (a user content holding a ``toolCall``) would change how it reads: then it writes the role it was read in."""
    role = message.get("role")
    if fmt == "gemini" and role is None:
        return "model" if calls or holds_tool_call(message) else "user"
    return role


def holds_tool_call(content: Mapping[str, Any]) -> bool:
    """Does a Gemini content hold a ``toolCall`` part (a server-side tool call of Gemini's built-in
    tools)? Only the model makes one, as only it makes function calls: without a role, the content
    is the model's, which goes back with the ``toolResponse`` beside it."""
    parts = content.get("parts")
    return isinstance(parts, list) and any(
        _is_object(part) and (part.get("toolCall") is not None or part.get("tool_call") is not None) for part in parts
    )


def gemini_role(content: Mapping[str, Any]) -> Any:
    """:func:`read_role` of a Gemini content repair writes (its parts already read: a list of objects),
    whose parts are looked through for a call only when it has no role."""
    role = content.get("role")
    if role is not None:
        return role
    return read_role("gemini", content, any(gemini_payload(part, "call") for part in content.get("parts") or ()))


def converse_aside(fmt: Format, message: Mapping[str, Any]) -> bool:
    """Is ``message`` a Converse ``system`` message holding no ``toolUse`` or ``toolResult`` (policy
    converse-system-aside)? botocore's ConversationRole has ``system`` beside ``user`` and
    ``assistant``: such a message adds or removes a tool mid-conversation (``toolAddition``,
    ``toolRemoval``). It is no turn's, so it is read as a message of a role the format lacks is
    (unknown-role-between: it parts no call from its result, merges with no neighbour and is kept
    where it is), but it is not reported, and repair says nothing of it."""
    content = message.get("content") if fmt == "bedrock" and message.get("role") == "system" else None
    return (
        type(content) is list
        and bool(content)
        and not any(isinstance(block, Mapping) and ("toolUse" in block or "toolResult" in block) for block in content)
    )


def known_role(fmt: Format, role: Any) -> bool:
    """Is ``role`` one a message of ``fmt`` may have? (Any value: a role may be a number, a list...)"""
    return (role is None or isinstance(role, str)) and role in ROLES[fmt]


def _ollama_name(value: Any, at: int, what: str) -> str:
    """The name an Ollama call or answer is paired by: it has no id, so without a name it pairs with nothing."""
    if isinstance(value, str) and value:
        return value
    if value is not None and value != "":
        raise _fail(at, f"{what} must be a string, not {what_kind(value)}")
    raise _fail(at, f"{what} is missing: Ollama pairs an answer with its call by tool name and order")


def _gemini_payloads(part: Mapping[str, Any]) -> Iterator[tuple[Literal["call", "result"], tuple[str, Any]]]:
    call = gemini_payload(part, "call")
    if call is not None:
        yield "call", call
    result = gemini_payload(part, "result")
    if result is not None:
        yield "result", result
