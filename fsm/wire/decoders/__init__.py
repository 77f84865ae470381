"""Provider decoders: one wire payload (a parsed JSON object) in, typed events out.

A decoder knows one provider's wire format and nothing about identity: it passes on the evidence
the wire carries (index, id, name, position) and leaves every decision to the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import TYPE_CHECKING, Any, Protocol

from fsm.errors import UnsupportedProvider, bounded, too_long
from fsm.wire.decoders._fields import written

if TYPE_CHECKING:
    from fsm.events import Event
    from fsm.options import Policies

Diagnose = Callable[[str, str], None]


class Decoder(Protocol):
    name: str

    def decode(self, payload: Mapping[str, Any], diagnose: Diagnose) -> list[Event]: ...


PROVIDERS: tuple[str, ...] = (
    "openai-chat",
    "openai-responses",
    "anthropic",
    "gemini",
    "ollama",
    "bedrock",
    "cohere",
)
"""Every provider name the command line and ``Reassembler`` accept (plus ``auto``)."""

_DECODERS: dict[str, tuple[str, str]] = {
    "openai-chat": ("openai_chat", "OpenAIChatDecoder"),
    "openai-responses": ("openai_responses", "OpenAIResponsesDecoder"),
    "anthropic": ("anthropic", "AnthropicDecoder"),
    "gemini": ("gemini", "GeminiDecoder"),
    "ollama": ("ollama", "OllamaDecoder"),
    "bedrock": ("bedrock", "BedrockDecoder"),
    "cohere": ("cohere", "CohereDecoder"),
}
"""Each provider's decoder, as (module in this package, class): a module is imported only when its
provider is first met, so a program (or ``toolcall-fsm replay``) loads the decoders it uses."""

_ANTHROPIC_TYPES = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
    }
)
BEDROCK_ERRORS = frozenset(
    {
        "internalServerException",
        "modelStreamErrorException",
        "validationException",
        "throttlingException",
        "serviceUnavailableException",
    }
)
"""The exceptions a Bedrock stream may end with, each a frame of its own (``:exception-type``)."""
BEDROCK_EVENTS = frozenset(
    {"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata"}
    | BEDROCK_ERRORS  # a throttled stream's only frame names its provider as well as any other
)
"""The event types of a ConverseStream (each event an object with one of them as its key)."""


def detect_provider(payload: Mapping[str, Any]) -> str | None:
    """The provider whose wire shape ``payload`` has, or None when this payload cannot tell."""
    kind = payload.get("type")
    if "choices" in payload or str(payload.get("object", "")).startswith("chat.completion"):
        return "openai-chat"
    if isinstance(kind, str):
        if kind.startswith("response."):
            return "openai-responses"
        if kind in _ANTHROPIC_TYPES:
            return "anthropic"
        if kind == "error" and _bedrock_exception(payload.get("error")):
            return "bedrock"
        if kind.startswith(("message-", "tool-call-", "tool-plan-", "content-", "citation-")):
            return "cohere"
    if "candidates" in payload or "usageMetadata" in payload:
        return "gemini"
    if "message" in payload and "done" in payload:
        return "ollama"
    if BEDROCK_EVENTS & payload.keys():
        return "bedrock"
    return None


def _bedrock_exception(error: Any) -> bool:
    """Whether an error event is one of Bedrock's exceptions, as its event-stream framing hands
    them on (fsm/wire/eventstream.py): one names Bedrock, as its frame does."""
    kind = error.get("type") if isinstance(error, Mapping) else None
    return isinstance(kind, str) and kind in BEDROCK_ERRORS


def error_words(error: Any, event: Mapping[str, Any] | None = None) -> tuple[str | None, str]:
    """The raw finish reason and message of the error object ``error`` (policy error-kind): its kind
    (:func:`error_kind`), the word a caller decides on (an ``overloaded_error`` or a rate limit is
    retried, an ``invalid_request_error`` is not; Anthropic says a message's wording may change, so
    match on its type), and its message (error_message), with the ``request_id`` the ``event`` that
    holds it carries beside it (Anthropic's error body), which support asks for."""
    said = error_message(error)
    request = event.get("request_id") if event is not None else None
    if isinstance(request, str) and request:
        said = f"{said} (request_id {request})"
    return error_kind(error), said


_KIND_KEYS = ("code", "status", "type")
"""Where an error object names its kind, the most specific first: OpenAI's ``code``
(``rate_limit_exceeded``, beside its broader ``type``), Gemini's ``status`` (``RESOURCE_EXHAUSTED``,
beside its HTTP ``code``), Anthropic's ``type`` (``overloaded_error``) and a Bedrock exception's name."""


def error_kind(error: Any) -> str | None:
    """What kind of error ``error`` is, in the provider's word: the first non-empty string of its
    :data:`_KIND_KEYS` (but ``"type": "error"``, the event's own type where the event is the error,
    which says no kind), else an integer ``code`` as written (OpenRouter's HTTP status, ``502``; one
    too long to write named as such, read from bytes or fed, audit 88); None for an error that names
    no kind (a string, an object with a message alone)."""
    if not isinstance(error, Mapping):
        return None
    for key in _KIND_KEYS:
        word = error.get(key)
        if type(word) is str and word and word != "error":
            return word
    code = error.get("code")
    return written(code) if type(code) is int or too_long(code) else None


def error_message(error: Any) -> str:
    """What a provider's error says: the ``message`` of an error object that has one, with its
    ``details`` beside it, bounded (Anthropic's ``{"error_code": "ramp_limit_exceeded"}``, the cause
    its SDK says to branch on, and what it names: an image's size limit, the paths at fault; Google's
    ``RetryInfo``), else the whole value (a string, or an object with no message: its fields but a
    null or empty message, or "no message" when it has none, never the word None)."""
    if not isinstance(error, Mapping):
        return written(error) if error is not None else "no message"
    message = error.get("message")
    if message is None or message == "":
        rest = {key: value for key, value in error.items() if key != "message" and value is not None}
        return written(rest) if rest else "no message"
    details = error.get("details")
    if details is None or details == "" or details == {} or details == []:
        return written(message)
    return f"{written(message)} (details {bounded(written(details), DETAILS_CHARS)})"


DETAILS_CHARS = 300
"""The most of an error's ``details`` its message keeps: a cause and a few of its fields, not a
megabyte the provider (or a proxy) put there."""


def error_in(payload: Mapping[str, Any]) -> tuple[str | None, str] | None:
    """The kind and message (:func:`error_words`) of an error event in any provider's shape (an
    ``error`` object or string, or ``"type": "error"``, or an OpenAI-compatible server's ``"object":
    "error"``), or None. Read only while no event has told the provider, so a stream that is nothing
    but a rate-limit or overload error still says what the provider said, as its decoder would."""
    error = payload.get("error")
    if not error and payload.get("type") != "error" and payload.get("object") != "error":
        return None
    kind, said = error_words(error or payload, payload)  # without an error field, the event is the error
    if not error and payload.get("type") == "error" and not _RESPONSES_MARKS.isdisjoint(payload):
        return responses_error_word("error", kind), said  # as the Responses decoder words it
    return kind, said


_RESPONSES_MARKS = frozenset({"sequence_number", "code"})
"""What tells a bare ``{"type": "error"}`` event (no ``error`` object) as Responses' own: its
``sequence_number``, or its ``code`` at the top (Anthropic's, OpenAI chat's and Gemini's errors put
theirs in an ``error`` object)."""


def responses_error_word(event: str, kind: str | None) -> str:
    """A Responses error's raw finish reason: its event type, then its code where it gave one
    (``error: rate_limit_exceeded``, ``response.failed: server_error``), as an incomplete response's
    reason is worded (policy error-kind)."""
    return f"{event}: {kind}" if kind else event


_factories: dict[str, tuple[Callable[[], Decoder], bool]] = {}
"""Each provider's decoder class once its module is imported (every stream makes one), and whether
it takes the stream's policies (asked of the class once: a failed ``hasattr`` of every new decoder
raised and caught an AttributeError per stream)."""


def make_decoder(provider: str, policies: Policies | None = None) -> Decoder:
    """A new decoder for ``provider``'s wire. ``policies`` reach a decoder that applies one itself
    (one with a ``policies`` attribute: the Responses decoder's ``stray_input``)."""
    factory, takes_policies = _factories.get(provider) or _factory(provider)
    decoder = factory()
    if policies is not None and takes_policies:
        decoder.policies = policies  # type: ignore[attr-defined]
    return decoder


def _factory(provider: str) -> tuple[Callable[[], Decoder], bool]:
    where = _DECODERS.get(provider)
    if where is not None:
        module, name = where
        made: Callable[[], Decoder] = getattr(import_module(f"{__name__}.{module}"), name)
        found = _factories[provider] = made, hasattr(made, "policies")
        return found
    if provider in PROVIDERS:
        raise UnsupportedProvider(f"provider {provider!r} is not supported yet (supported: {', '.join(_DECODERS)})")
    raise UnsupportedProvider(f"unknown provider {provider!r} (known: auto, {', '.join(PROVIDERS)})")
