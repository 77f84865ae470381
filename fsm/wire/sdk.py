"""SDK objects as wire payloads, without importing any SDK: what the official clients and the
frameworks above them yield, read by duck typing.

* raw SDK events (``ChatCompletionChunk``, Responses and Anthropic events, google-genai
  ``GenerateContentResponse``, LiteLLM's ``ModelResponseStream``): their ``model_dump()`` or
  ``to_dict()``, in wire names, without the stream helpers' ``snapshot`` (the whole text so far,
  whose dumping on every event would make a stream cost quadratic time). A model's dump holds the
  fields the SDK read from the wire (those set), an explicit null among them: the payload the wire
  sent, where null can be the value (Vertex streams a null argument as ``"nullValue": null``).
  google-genai holds a ``thoughtSignature`` as bytes and writes it in url-safe base64 (``-`` and
  ``_``), so a signature read from its objects differs in text from the wire's standard base64
  while its bytes are the same (Gemini reads either). A model nested past what pydantic writes as
  JSON (some 250 levels) is an event too deep to read: ``LimitExceeded``, as for a dict that deep;
* openai's ``chat.completions.stream()`` events: a ``chunk`` event stands for the chunk it carries;
  the ``content.*``, ``refusal.*``, ``tool_calls.*`` and ``logprobs.*`` events are derived from those
  chunks, so they are skipped (and not numbered as wire events);
* anthropic's ``messages.stream()`` adds ``text``, ``input_json``, ``citation``, ``thinking`` and
  ``signature`` events derived from the raw events it also yields: skipped, unnumbered;
* LangChain's ``AIMessageChunk``: read by :mod:`fsm.wire.langchain_chunks` as the OpenAI chat chunk
  it mirrors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from fsm.errors import InvalidInput, ToolcallFSMError, shown
from fsm.wire.decoders.chat_chunks import PLAIN_SAID_KEYS
from fsm.wire.langchain_chunks import langchain_chunk
from fsm.wire.langchain_places import LangChainStream
from fsm.wire.sdk_dump import kept, plain_class, plain_dump

if TYPE_CHECKING:
    from fsm.engine.registry import Registry
    from fsm.wire.decoders._wire import TurnSaid
    from fsm.wire.decoders.openai_chat import OpenAIChatDecoder

DERIVED_EVENT_TYPES = frozenset(
    {
        # openai chat.completions.stream()
        "content.delta",
        "content.done",
        "refusal.delta",
        "refusal.done",
        "tool_calls.function.arguments.delta",
        "tool_calls.function.arguments.done",
        "logprobs.content.delta",
        "logprobs.content.done",
        "logprobs.refusal.delta",
        "logprobs.refusal.done",
        # anthropic messages.stream()
        "text",
        "input_json",
        "citation",
        "thinking",
        "signature",
    }
)
"""Stream-helper events that repeat what the raw events they come with already said."""


def sdk_payload(item: Any, held: LangChainStream | None = None) -> Mapping[str, Any] | None:
    """The wire payload an SDK object stands for, or None when it only repeats others. ``held`` is
    the stream's own record across its objects (see ``langchain_chunk``)."""
    if isinstance(item, Mapping):
        return item
    kind = _type_of(item)
    if isinstance(kind, str):
        if kind == "chunk" and hasattr(item, "chunk"):
            return as_mapping(item.chunk)
        if kind in DERIVED_EVENT_TYPES:
            return None
        if kind == "AIMessageChunk" and hasattr(item, "tool_call_chunks"):
            return langchain_chunk(item, held)
    return as_mapping(item)


LANGCHAIN_PROVIDERS = {
    "anthropic": "anthropic",
    "google_genai": "gemini",
    "google_vertexai": "gemini",
    "bedrock_converse": "bedrock",
    "bedrock": "bedrock",
}
"""The integrations (``response_metadata["model_provider"]``) each of which reads one provider's wire alone, and its
name (policy langchain-source-provider): ChatAnthropic Claude's, ChatGoogleGenerativeAI and ChatVertexAI (Vertex AI's
generateContent) Gemini's, ChatBedrockConverse Converse's, ChatBedrock InvokeModel's (signed blocks: Claude's alone).
ChatOpenAI reads the chat API or the Responses API (told by the Responses items among its blocks); every other names a
chat server's own (Ollama, Groq, DeepSeek, Mistral), read as the chat wire. ChatAnthropicVertex names none."""


def langchain_provider(item: Any, held: LangChainStream | None) -> str | None:
    """The provider whose wire a LangChain chunk (``item``) was made from, where what LangChain keeps tells it alone
    (policy langchain-source-provider): its ``response_metadata["model_provider"]`` as :data:`LANGCHAIN_PROVIDERS`
    maps it; ChatOpenAI's ``openai-responses`` once a Responses item came (``held``: what chunks left); else None."""
    named = model_provider(item)
    if named == "openai":
        return "openai-responses" if held is not None and held.items is not None else None
    return LANGCHAIN_PROVIDERS.get(named) if named is not None else None


def model_provider(item: Any) -> str | None:
    """The integration a LangChain chunk names (``response_metadata["model_provider"]``), where it names one in text."""
    metadata = getattr(item, "response_metadata", None)
    named = metadata.get("model_provider") if isinstance(metadata, Mapping) else None
    return named if isinstance(named, str) and named else None


def is_langchain_chunk(item: Any) -> bool:
    """Is ``item`` a LangChain ``AIMessageChunk``? Its chat models read a stream's first choice
    alone, so its chunks hold no other (Reassembler's ``choice``)."""
    return _type_of(item) == "AIMessageChunk" and hasattr(item, "tool_call_chunks")


def _type_of(item: Any) -> Any:
    """``getattr(item, "type", None)``, read without the failed lookup where it costs most: a
    pydantic model without that field (openai's chunks, google-genai's responses) raises and
    catches an AttributeError in its ``__getattr__`` for it, about 2 us, some half of what
    reassembling the chunk then costs. For such a model whose class has no ``type``, what that
    lookup finds is its field's value or else an extra field's (its ``__getattr__`` reads nothing
    else for a public name), unless a class of its own looks attributes up otherwise."""
    cls = type(item)
    plain = _PLAIN_MODELS.get(cls)
    if plain is None:
        plain = kept(
            _PLAIN_MODELS,
            cls,
            not hasattr(cls, "type")
            and isinstance(getattr(cls, "__pydantic_fields__", None), dict)
            and hasattr(cls, "__pydantic_extra__")
            and _pydantic_lookup(cls),
        )
    if not plain:
        return getattr(item, "type", None)
    found = item.__dict__.get("type")
    if found is None and "type" not in item.__dict__:
        try:
            extra = item.__pydantic_extra__
        except AttributeError:  # a model built without its __init__ has none
            return None
        found = extra.get("type") if extra else None
    return found


def _pydantic_lookup(cls: type) -> bool:
    """Are attributes of ``cls`` looked up as pydantic looks them up: no ``__getattr__`` but its
    own, no ``__getattribute__`` but object's (a subclass's own may find a ``type`` anywhere)?"""
    missing = next((c for c in cls.__mro__ if "__getattr__" in c.__dict__), None)
    found = next((c for c in cls.__mro__ if "__getattribute__" in c.__dict__), None)
    return (missing is None or missing.__module__ == "pydantic.main") and found is object


_PLAIN_MODELS: dict[type, bool] = {}
"""Per class of object fed: is it a pydantic model whose ``type`` _type_of reads directly?"""


def take_chat_chunk(item: Any, chat: OpenAIChatDecoder, registry: Registry, content: TurnSaid) -> bool:
    """Take ``item`` as ``chat.shortcut`` takes the dump ``as_mapping`` makes of it, when it is an
    SDK chunk of OpenAI chat (openai's ``ChatCompletionChunk``, a pydantic model) holding one
    tool-call entry and nothing else of note (a role, or empty text, beside it at the most), or
    text and reasoning alone, read from its attributes without that dump (some 3.5 us, most of what
    a chunk of a call's arguments then costs); False, having done nothing, for anything else: then
    the dump decides."""
    found = chat_entry(item)
    if found is None:
        return False
    entry, function = found
    if entry is _SAID:  # text or reasoning alone: what the shortcut does with plain_said's
        content.said(function[0], function[1])
        return True
    if entry is _BARE:  # the commonest chunk, one bare fragment: what entry() does with it
        chat.fragment(function["index"], function["arguments"], registry)
        return True
    if entry is _WHOLE:  # a whole call: what entry() does with it (whole_call_in)
        registry.whole_call(function[0], function[1], function[2], function[3])
        return True
    return chat.entry(entry, function, registry)


def chat_entry(item: Any) -> tuple[dict[str, Any], Any] | None:
    """The (entry, function) that ``one_entry(plain_delta(...))`` finds in the dump of ``item`` (see
    take_chat_chunk), the fields set as the dump has them; for a bare fragment (an entry of an index
    and a function of non-empty arguments alone), (``_BARE``, the two); for a whole call, (``_WHOLE``,
    what whole_call_in finds in the dump's); for a delta of text or reasoning alone, (``_SAID``, what
    plain_said finds in the dump's). None for any other object,
    and for a chunk where something more was set, an extra field came, or a value is not of its
    usual type (test_the_lean_sdk_reader_reads_as_the_dump_does). Values no reader reads (the
    envelope's ``id``, ``created``, ``model``, ...; a choice's ``logprobs``) are not looked at: a
    chunk built past validation holding there what its dump cannot write (an ``object()``) is read
    all the same, where the dump would refuse it (InvalidInput); looking costs a tenth of a chunk."""
    cls = type(item)
    known = _CHAT_CHUNKS.get(cls)
    if known is None:
        fields = getattr(cls, "__pydantic_fields__", None)
        known = kept(
            _CHAT_CHUNKS,
            cls,
            isinstance(fields, dict)
            and {"choices", "usage"} <= fields.keys()
            and "type" not in fields  # a typed event may be one a stream helper derived: sdk_payload reads it
            and not hasattr(cls, "type")
            and hasattr(cls, "__pydantic_extra__")
            and _pydantic_lookup(cls)  # a type found by a lookup of its own is sdk_payload's to read
            and plain_class(cls),  # dumped by pydantic's own model_dump, no serializer or alias of its own
        )
    if not known:
        return None
    # A field another SDK's classes lack (groq's ChoiceDelta has no refusal) is read as absent, as
    # the dump has it, or the chunk is left to the dump: no AttributeError reaches the caller (nor
    # one of a model built without its __init__, which has no fields set). Nor any other error: a
    # delta, entry or function built into the chunk may be of a class that reads an attribute its
    # own way (a property, a __getattr__ of its own), which the chunk's class tells nothing of.
    try:
        if item.__pydantic_extra__ or ("usage" in item.__pydantic_fields_set__ and item.usage is not None):
            return None
        choices = item.choices
        if type(choices) is not list or len(choices) != 1:
            return None
        choice = choices[0]
        # Each value's type before its value: model_construct takes anything, whose truth may raise.
        at, finish = (choice.index, choice.finish_reason) if _sets(choice, _CHOICE_FIELDS) else (None, None)
        if type(at) is not int or at != 0 or type(finish) not in _TEXT or finish:
            return None
        delta = choice.delta
        if not _sets(delta, _DELTA_FIELDS) or type(entries := delta.tool_calls) is not list:
            said = _plain_said(delta)  # no call: text or reasoning alone (reasoning an extra field), or the dump's
            return None if said is None else (_SAID, said)
        if len(entries) != 1:
            return None
        entry = entries[0]
        if not _sets(entry, _ENTRY_FIELDS) or type(entry.index) is not int:
            return None
        function = entry.function
        if not _sets(function, _FUNCTION_FIELDS):
            return None
        given, text = delta.__pydantic_fields_set__, function.arguments
        if (
            given == _TOOL_CALLS_ONLY
            and entry.__pydantic_fields_set__ == _BARE_ENTRY
            and function.__pydantic_fields_set__ == _ARGUMENTS_ONLY
        ):
            if type(text) is not str or not text:
                return None
            return _BARE, {"index": entry.index, "arguments": text}
        if "tool_calls" not in given or type(entry.id) not in _TEXT or type(entry.type) not in _TEXT:
            return None
        said, refused, role = delta.content, getattr(delta, "refusal", None), getattr(delta, "role", None)
        if type(said) not in _TEXT or type(refused) not in _TEXT or type(role) not in _TEXT or said or refused:
            return None  # text beside the call, or a value of another type: the dump's
        name = function.name
        if type(name) not in _TEXT or type(text) not in _TEXT:
            return None
        if name and text and entry.id and function.__pydantic_fields_set__ == _NAME_AND_ARGUMENTS:
            return _WHOLE, (entry.index, entry.id, name, text)  # what whole_call_in finds in the dump's entry
        read = {name: getattr(entry, name) for name in entry.__pydantic_fields_set__}
        read["function"] = called = {name: getattr(function, name) for name in function.__pydantic_fields_set__}
        return read, called
    except Exception:  # nothing is done before the reads end: the dump decides
        return None


def _sets(model: Any, fields: frozenset[str]) -> bool:
    """Is ``model`` a pydantic model with no extra field whose fields set are among ``fields``?"""
    try:
        given, extra = model.__pydantic_fields_set__, model.__pydantic_extra__
    except AttributeError:
        return False
    return not extra and given <= fields


def _plain_said(delta: Any) -> tuple[str, str] | None:
    """What plain_said finds in the dump of ``delta`` when it says text or reasoning alone: nothing
    set but its content, role and reasoning (``reasoning_content``, ``reasoning``: the extra fields
    some servers add, or fields of the SDK's own), each of them text or null, and maybe an extra
    ``index`` (Mistral's, unread, as plain_said reads it). None for any other."""
    try:
        given, extra = delta.__pydantic_fields_set__, delta.__pydantic_extra__
        if not given <= PLAIN_SAID_KEYS or (extra and not extra.keys() <= given):
            return None
        text, role, first, second = (getattr(delta, key) if key in given else None for key in _SAID_ORDER)
    except AttributeError:
        return None
    if type(text) not in _TEXT or type(role) not in _TEXT or type(first) not in _TEXT or type(second) not in _TEXT:
        return None
    return text or "", first or second or ""


_CHAT_CHUNKS: dict[type, bool] = {}
"""Per class of object fed: is it a pydantic model of OpenAI chat chunks chat_entry reads?"""
_CHOICE_FIELDS = frozenset({"index", "delta", "finish_reason", "logprobs"})
_DELTA_FIELDS = frozenset({"role", "content", "refusal", "tool_calls"})
_ENTRY_FIELDS = frozenset({"index", "id", "function", "type"})
_FUNCTION_FIELDS = frozenset({"name", "arguments"})
_TEXT = (str, type(None))
_TOOL_CALLS_ONLY, _BARE_ENTRY, _ARGUMENTS_ONLY = (
    frozenset({"tool_calls"}),
    frozenset({"index", "function"}),
    frozenset({"arguments"}),
)
_NAME_AND_ARGUMENTS = frozenset({"name", "arguments"})
_BARE: dict[str, Any] = {}
"""chat_entry's mark of a bare fragment, in the entry's place (its function holds the index too)."""
_SAID_ORDER = ("content", "role", "reasoning_content", "reasoning")
_SAID: dict[str, Any] = {}
"""chat_entry's mark of a delta of text or reasoning alone, in the entry's place; (text, reasoning)
in the function's."""
_WHOLE: dict[str, Any] = {}
"""chat_entry's mark of a whole call (an index, a non-empty id, name and argument text), in the
entry's place; the four, in that order, in the function's."""


def as_mapping(item: Any) -> Mapping[str, Any]:
    if isinstance(item, Mapping):
        return item
    plain = plain_dump(item)
    if plain is not None:
        return plain
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        # pydantic SDK models: wire names (google-genai's camelCase aliases), JSON-safe values. The
        # fields set, not the non-None ones: dropping every None also dropped the nulls the wire sent.
        # No serializer warnings: an SDK's model holding a subclass its union does not name (openai's
        # ParsedResponseOutputMessage) is written whole all the same, and the caller can do nothing.
        try:
            value = dump(mode="json", by_alias=True, exclude_unset=True, exclude={"snapshot"}, warnings=False)
        except TypeError:
            value = _foreign(dump, item, "model_dump()")
        except AttributeError as exc:  # a model built without its __init__ (cls.__new__): no fields set
            raise InvalidInput(f"cannot feed a {type(item).__name__}: its SDK cannot write it: {exc}") from None
        except ValueError as exc:
            if _nests_past(dump, SERIALIZER_DEPTH):
                # pydantic's JSON serializer stops at a depth guard of its own, as a recursive walk
                # stops at the stack: the event nests too deeply to read, as a dict that deep does.
                raise RecursionError("the SDK object nests too deeply to write") from None
            # A field holding what no JSON holds (an object, bytes that are not UTF-8): only a model
            # built past its validation (model_construct, an assignment) can, the caller's doing.
            raise InvalidInput(f"cannot feed a {type(item).__name__}: its SDK cannot write it as JSON: {exc}") from None
        except (RecursionError, MemoryError, ToolcallFSMError):
            raise
        except Exception as exc:  # the caller's own object, whatever it raised: said as input refused
            raise _refused(item, "model_dump()", exc) from None
        if isinstance(value, Mapping):
            return value
    to_dict = getattr(item, "to_dict", None)
    if callable(to_dict):
        value = _foreign(to_dict, item, "to_dict()")
        if isinstance(value, Mapping):
            return value
    raise InvalidInput(
        f"cannot feed a {type(item).__name__}: pass a dict, an SDK object with model_dump() or to_dict(), "
        "or an fsm event"
    )


def _foreign(dump: Callable[[], Any], item: Any, name: str) -> Any:
    """``dump()``, a method of an object fsm was fed (its SDK's, or the caller's own); whatever it
    raises but a depth or memory failure is the input refused (InvalidInput), as no exception of
    another library's may leave the API."""
    try:
        return dump()
    except (RecursionError, MemoryError, ToolcallFSMError):
        raise
    except Exception as exc:
        raise _refused(item, name, exc) from None


def _refused(item: Any, name: str, exc: Exception) -> InvalidInput:
    try:
        said = shown(exc)
    except Exception:  # an exception of the caller's that cannot even say itself
        said = "(unprintable)"
    return InvalidInput(f"cannot feed a {type(item).__name__}: its {name} raised {said}")


SERIALIZER_DEPTH = 200
"""Nesting past which a model pydantic cannot write as JSON is taken to have met its serializer's
depth guard (some 250 levels of models, lists and dicts), not some other refusal."""


def _nests_past(dump: Any, limit: int) -> bool:
    """Does the model's plain dump (which has no depth guard) nest deeper than ``limit``? Walked
    without recursion; False when even that dump fails."""
    try:
        value = dump(warnings=False)  # pydantic's warnings about the value would reach the caller
    except Exception:  # the original error is what the caller sees
        return False
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, Mapping):
            children: Any = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack += [(child, depth + 1) for child in children]
    return False
