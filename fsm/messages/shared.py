"""What every format's builder shares: the check of the result it is given, the id a call is answered
by, the check that a format can carry a call's type, its arguments as an object, a tool's output as
text, the order in which items with places go back (the text placed by its parts among them), and
which signatures a format can read (policy signature-by-origin: :func:`signature_for`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from fsm.errors import InvalidInput, LocalProtocolError, shown
from fsm.fieldcheck import refuse_wrong, vouched
from fsm.jsontext import has_surrogate
from fsm.results import CallStatus, Reasoning, Result, TextPart, ToolCall
from fsm.wire.decoders._claude_fallback import before, final_fallback
from fsm.wire.decoders.chat_reasoning import CLAUDE_FORMAT, GEMINI_FORMAT

Message = dict[str, Any]
T = TypeVar("T")


def need(value: Any, kind: Any, what: str) -> None:
    """A caller's argument of the wrong type: InvalidInput, not an AttributeError deep inside."""
    if not isinstance(value, kind):
        raise InvalidInput(f"{what}, not {type(value).__name__}")


def check_result(result: Any) -> None:
    """Refuse, naming the field and what it must hold, a result whose fields are not of the types
    :class:`~fsm.results.Result` and its parts declare (:mod:`fsm.fieldcheck`): a dict where a
    call, reasoning block or text part belongs (JSON read back by hand, not through fsm.serialize's
    converter), a status read back as text (which would drop its call in silence), a signature or
    id that is no str (it would go out as it is), a place or output index that is no int (it could
    not be sorted among ints, or would be sorted where no part of the wire was). A result the
    Reassembler made, or one that passed before, is not read again: see :func:`fsm.fieldcheck.vouch`.
    Refused too, whenever it comes: a result that holds among its calls a call made before its last
    Claude ``fallback`` block (one built by hand from a response's blocks): a declined model's,
    which is neither to run nor to go back, and which no result may answer (policy
    fallback-declined-calls). Left out of the message alone, its answer would be refused: it is
    named, to be moved to ``declined_calls``."""
    if not vouched(result):
        need(result, Result, "result must be a Result")
        refuse_wrong(result, Result, "result")
    if result.server_tool_results:  # asked of a vouched result too: a hand-built one vouched as it passed before
        cut = final_fallback(result.server_tool_results)
        for call in result.calls:
            if before(call.output_index, cut):
                made = f"call {shown(call.id)} ({shown(call.name)}) at content block {call.output_index}"
                raise InvalidInput(
                    f"{made} stands before the fallback block at {cut}: the model that made it declined, so it"
                    " is not to run nor go back; it belongs in declined_calls (policy fallback-declined-calls)"
                )


def check_call(call: Any) -> None:
    """Refuse a call given alone (to answer it) whose fields are not of their declared types, as
    :func:`check_result` refuses a result's: an id that is no str would go out as it is."""
    need(call, ToolCall, "call must be a ToolCall")
    refuse_wrong(call, ToolCall, "call")


def reply_id(call: ToolCall) -> str:
    """The id the provider pairs the call's result by: the late wire id where the call has one
    (:attr:`~fsm.results.ToolCall.reply_id`), else its id."""
    return call.reply_id or call.id


def ids_sent(result: Result) -> tuple[str, ...]:
    """Every id this turn holds in the next request, to pass on as the next turn's ``taken``: each
    call's id and, for a call whose id came late, its ``reply_id`` (the id the request sends, in the
    call and in its result), and each server call's id. ``[call.id for call in result.calls]`` misses
    a late id: a later turn's call under that id was not renamed, and the history held it twice."""
    check_result(result)
    ids = [call.id for call in result.calls]
    ids += [call.reply_id for call in result.calls if call.reply_id is not None]
    ids += [call.id for call in result.server_tool_calls]
    return tuple(dict.fromkeys(ids))


def as_text(output: Any, *, strict: bool = False) -> str:
    """A tool's output as the text formats send: text as it is, anything else as JSON text.
    ``strict``: for a format that sends the value itself as JSON, where a NaN or an infinity (which
    the text keeps as a word) is no JSON at all (Gemini's SDK would send null)."""
    if isinstance(output, str):
        return output
    try:
        return json.dumps(output, ensure_ascii=False, allow_nan=not strict)
    except (TypeError, ValueError, RecursionError) as exc:  # bytes, an object, a cycle, nesting past the stack
        raise InvalidInput(f"a tool's output must be text or what JSON can write: {exc}") from None


def refuse_lone_surrogates(call: ToolCall, output: Any) -> None:
    """InvalidInput for a tool's output holding a lone UTF-16 surrogate in any of its text (policy
    output-lone-surrogate): text decoded with ``surrogateescape``, a shell's output or a file name of
    bytes that are not UTF-8. A request's UTF-8 cannot carry it, so the SDK would fail as it sends
    (httpx writes its JSON unescaped) or, escaped, the provider would read an invalid string:
    refused here, naming the call, while the caller can still decode those bytes another way.
    Walked without recursion, each container once: an output may nest deeper than the stack, or
    hold itself (which the JSON writer refuses after)."""
    stack, walked = [output], set()
    while stack:
        value = stack.pop()
        if isinstance(value, dict | list | tuple):
            if id(value) in walked:
                continue
            walked.add(id(value))
        if isinstance(value, str):
            if has_surrogate(value):
                at = next(n for n, ch in enumerate(value) if "\ud800" <= ch <= "\udfff")
                raise InvalidInput(
                    f"call {call.id}: the tool's output holds a lone surrogate (U+{ord(value[at]):04X} at character "
                    f"{at} of {'it' if value is output else 'a string in it'}), which no request can send as "
                    "UTF-8: decode the tool's bytes with errors='replace' (or 'backslashreplace') first"
                )
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)


def unshared(message: T) -> T:
    """``message`` with each of its dicts and lists a new one (policy message-is-the-callers): the
    builders put the result's own values in it (a call's ``arguments`` as an ``input`` or ``args``,
    a server result's block, a built-in call's action), and a caller edits what it is given (a
    redaction before logging, a field popped before sending), which must not change the calls it
    runs nor the next message built from the result. Only dicts and lists of exactly those types
    are new; every other object (text, numbers, an object of the caller's own) is the one it was,
    so no object of the caller's runs here. A message is built once a turn: the copy costs some
    0.3 us a container (20 ms for a 1.2 MB argument object of 60,000), a third of what
    ``copy.deepcopy`` costs."""
    try:
        fresh: T = _fresh(message)
    except RecursionError:  # nested past the stack (a result built by hand), or holding itself
        fresh = _fresh_walked(message)
    return fresh


def _fresh(value: Any) -> Any:
    if type(value) is dict:
        return {key: _fresh(item) if type(item) is dict or type(item) is list else item for key, item in value.items()}
    if type(value) is list:
        return [_fresh(item) if type(item) is dict or type(item) is list else item for item in value]
    return value


def _fresh_walked(message: Any) -> Any:
    """:func:`_fresh` without recursion, each container once (one held twice stays one, one that
    holds itself is copied holding its copy)."""
    made: dict[int, Any] = {}
    stack: list[tuple[Any, Any]] = []

    def new(value: Any) -> Any:
        copy = made.get(id(value))
        if copy is None:
            copy = made[id(value)] = {} if type(value) is dict else []
            stack.append((value, copy))
        return copy

    top = new(message) if type(message) is dict or type(message) is list else message
    while stack:
        value, copy = stack.pop()
        if type(value) is dict:
            for key, item in value.items():
                copy[key] = new(item) if type(item) is dict or type(item) is list else item
        else:
            copy.extend([new(item) if type(item) is dict or type(item) is list else item for item in value])
    return top


def kind(call: ToolCall, format: str, kinds: tuple[str, ...] = ("function",)) -> str:
    """The call's type, where ``format`` can carry it; LocalProtocolError, never a wrong shape, elsewhere."""
    if call.type not in kinds:
        raise LocalProtocolError(
            f"call {call.id} is of type {call.type}, which {format} messages cannot carry back "
            f"(supported: {', '.join(kinds)})"
        )
    return call.type


def arguments_object(call: ToolCall) -> dict[str, Any]:
    """Arguments as an object, for formats that take one: an incomplete call's text is no object."""
    return call.arguments if call.status is CallStatus.COMPLETE and isinstance(call.arguments, dict) else {}


def in_output_order(placed: list[tuple[int | None, Message]]) -> list[Message]:
    """The items in the order the API gave them: the API pairs a reasoning item with the item that
    followed it (a call, or the message), so reasoning, call, reasoning, call must not become
    reasoning, reasoning, call, call. An item without a place keeps the one before it, so it
    follows that item; with no places at all the order is left as it is."""
    keys: list[tuple[int, int]] = []
    place = -1
    for rank, (output_index, _) in enumerate(placed):
        if output_index is not None:
            place = output_index
        keys.append((place, rank))
    order = sorted(range(len(placed)), key=keys.__getitem__)
    return [placed[n][1] for n in order]


def placed_text(result: Result, item: Callable[[str, TextPart | None], Message]) -> list[tuple[int | None, Message]]:
    """The text as ``item``s: one per text part in its place where the parts hold all of it (Claude's
    text blocks, Responses message items), else all of it once at the first one's place (no parts,
    or text that came in none: a delta without its index), as no part's but with every part's
    citations (a citation names its source, not a place in the text, for Claude; a Responses plain
    message carries none)."""
    parts = [part for part in result.text_parts if part.text and part.output_index is not None]
    if parts and "".join(part.text for part in parts) == result.text:
        return [(part.output_index, item(part.text, part)) for part in parts]
    if not result.text:
        return []
    cited = tuple(citation for part in result.text_parts if part.text for citation in part.citations)
    return [(result.text_output_index, item(result.text, TextPart(result.text, citations=cited) if cited else None))]


_MAKER_BY_FORMAT = {CLAUDE_FORMAT: "claude", GEMINI_FORMAT: "gemini"}
"""The model family whose signature an OpenRouter entry of each ``format`` carries (and a LiteLLM block its Gemini
route told: policy litellm-gemini-signature)."""
_MAKER_BY_PROVIDER = {"anthropic": "claude", "bedrock": "bedrock", "gemini": "gemini"}
"""The family whose signatures each provider's wire carries. Bedrock's is its own: Converse streams
Claude's reasoning and other makers' too (DeepSeek's, Nova's), and does not say whose; it is no
Gemini's. A chat result's blocks are none's: LiteLLM's ``thinking_blocks`` carry Claude's and
Gemini's alike (its Gemini route puts a thought part's ``thoughtSignature`` there when it streams a
whole response), and only its Gemini route says whose (policy litellm-gemini-signature: the block
then names Gemini's format); a Claude block through LiteLLM names no maker."""
_READERS = {
    "claude": frozenset({"anthropic", "bedrock", "openai-chat"}),
    "bedrock": frozenset({"anthropic", "bedrock", "openai-chat"}),
    "gemini": frozenset({"gemini"}),
}
"""The formats that take each family's signatures back. Claude's are read on the Anthropic API, on
Bedrock and on Vertex AI alike (Anthropic's extended-thinking docs: "Values generated on one
platform will be compatible with another"), and ``openai-chat``'s ``thinking_blocks`` go to LiteLLM,
which hands them to Claude. Gemini's go to Gemini: LiteLLM's Gemini route reads a call's signature
from the call's id, never from ``thinking_blocks``, and OpenRouter's entries go back in
``reasoning_details`` as they came, whoever made them (not through here)."""


def signature_for(block: Reasoning, result: Result, format: str) -> str | None:
    """Policy signature-by-origin: ``block``'s signature where ``format`` can read it, else None.

    A signature is its maker's proof that it wrote the block, and each maker checks its own alone:
    Gemini 3 refuses a ``thoughtSignature`` it cannot read (400), Claude a thinking block whose
    signature is not Claude's. The maker is the one the block's ``format`` names (OpenRouter's, or
    Gemini's for a LiteLLM block its Gemini route told: policy litellm-gemini-signature), else
    the one ``result.source_provider`` names where the result has one (a turn read through LangChain,
    whose wire is ``openai-chat``'s), else the one ``result.provider``'s wire carries
    (:data:`_MAKER_BY_PROVIDER`, for both); a signature whose maker none tells (a chat result's own
    blocks, an entry of another format, a source of no known maker) goes wherever it did.
    What the format does with a block left without its signature is the format's: its text as an
    unsigned thought part for Gemini, and the block left out of Claude's formats, which refuse a
    thinking block without a signature (as one cut before its signature is)."""
    signature = block.signature
    if signature is None:
        return None
    if block.format is not None:
        maker = _MAKER_BY_FORMAT.get(block.format)
    else:  # the turn's maker where the wire is not its own (LangChain's chunks, read as openai-chat's), else the wire's
        made = result.source_provider
        maker = _MAKER_BY_PROVIDER.get(made if made is not None else result.provider)
    return signature if maker is None or format in _READERS[maker] else None
