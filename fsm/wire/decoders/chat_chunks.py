"""The commonest OpenAI chat chunks, read without the decoder's events: what the shortcuts of
:class:`~fsm.wire.decoders.openai_chat.OpenAIChatDecoder` (and the lean reads of many events, and
SDK objects' readers in :mod:`fsm.wire.sdk`) find in a chunk, each reader for one kind of chunk, or
None for any other. Each names the test that replays every vector and fuzzed stream with and without
it and requires the same transitions, outputs, calls, diagnostics and rule counts. And what a delta
holds that no Result field holds, reported (:func:`unkept`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fsm.errors import RemoteProtocolError
from fsm.events import ReasoningDelta, TextDelta
from fsm.wire.decoders._wire import COMPAT_SIGNATURE, SAID_KEYS, chat_finish, chat_said
from fsm.wire.decoders.litellm_calls import LITELLM_FIELDS


def plain_delta(payload: dict[str, Any]) -> dict[str, Any] | None:
    """The delta of a chunk whose envelope says nothing else: one choice (index 0 or none, no
    finish reason), no usage, no error. The shortcuts below read only such a delta; for each, the test
    named in its docstring replays every vector and fuzzed stream with and without it and requires
    the same transitions, outputs, calls, diagnostics and rule counts."""
    choices = payload.get("choices")
    if type(choices) is not list or len(choices) != 1 or payload.get("error") or payload.get("usage"):
        return None
    choice = choices[0]
    if type(choice) is not dict or choice.get("index") or choice.get("finish_reason"):
        return None
    delta = choice.get("delta")
    return delta if type(delta) is dict else None


LEAN_TEXT_PATH = ("choices", 0, "delta", "tool_calls", 0, "function", "arguments")
"""Where lean_fragment_in finds the text in the chunks it reads."""
LEAN_INDEX_PATH = ("choices", 0, "delta", "tool_calls", 0, "index")
"""Where it finds the index, which it reads as any integer: a form's place (see FragmentForm)."""


def lean_fragment_in(payload: dict[str, Any]) -> tuple[int, str] | None:
    """(index, text) of a chunk that holds nothing but one bare fragment, as OpenAI sends nearly
    every chunk of a call's arguments: what one_entry and bare_fragment_in find in its plain delta,
    read with fewer tests (test_the_lean_fragment_reader_reads_as_the_shortcut_does); None for any
    other chunk."""
    delta = plain_delta(payload)
    if delta is None or len(delta) != 1:
        return None
    entries = delta.get("tool_calls")
    if type(entries) is not list or len(entries) != 1:
        return None
    entry = entries[0]
    if type(entry) is not dict or len(entry) != 2:
        return None
    index, function = entry.get("index"), entry.get("function")
    if type(index) is not int or type(function) is not dict or len(function) != 1:
        return None
    text = function.get("arguments")
    return (index, text) if type(text) is str and text else None


def bare_fragment_in(entry: dict[str, Any], function: dict[str, Any]) -> tuple[int, str] | None:
    """(index, text) when the one entry of a plain delta (see one_entry) is the commonest kind: an
    integer index, no id, no name (an empty string is none, as CallRef reads it) and non-empty
    argument text. OpenAIChatDecoder makes exactly one bare ArgumentsFragment of it
    (test_the_commonest_chunk_shortcut_decides_as_the_decoder)."""
    index, text = entry.get("index"), function.get("arguments")
    if type(index) is not int or type(text) is not str or not text:
        return None
    # The keys read so far are all a usual entry has; only a longer dict needs the others read.
    # empty_text written in line: a call per chunk costs more than the test.
    if len(entry) > 2 and (call_id := entry.get("id")) is not None and not (type(call_id) is str and not call_id):
        return None
    if len(function) > 1 and (name := function.get("name")) is not None and not (type(name) is str and not name):
        return None
    return index, text


def empty_text(value: Any) -> bool:
    """An empty string, which CallRef reads as no id or name at all; no caller's ``__eq__`` run."""
    return type(value) is str and not value


def said_in(delta: dict[str, Any]) -> list[TextDelta | ReasoningDelta] | None:
    """The events of a plain delta that only says text or reasoning (most chunks of a reasoning
    model's stream): no tool calls. OpenAIChatDecoder makes exactly these events of it
    (test_text_and_reasoning_chunks_decide_as_the_decoder); None for a delta it refuses."""
    if delta.get("tool_calls") is not None or delta.get("function_call") is not None or delta.get(LITELLM_FIELDS):
        return None
    events: list[TextDelta | ReasoningDelta] = []
    try:  # typed chunks (a list content) may need a diagnostic: the decoder reads them
        return events if chat_said(delta, events) else None
    except RemoteProtocolError:  # a refusal or signature of another type: the decoder raises it, naming its rule
        return None


def plain_said(delta: dict[str, Any]) -> tuple[str, str] | None:
    """(text, reasoning) of a plain delta that says text or reasoning in the plainest way (most
    chunks of most turns): no key but ``content``, ``reasoning_content``, ``reasoning``, ``role`` and
    ``index`` (Mistral's delta repeats its choice's; neither is read, by the decoder either), the
    first three text or null. said_in makes of it TextDelta(text) when
    there is text, then ReasoningDelta(None, reasoning) when there is reasoning (``reasoning_content``
    when it is not empty, else ``reasoning``): test_the_chunk_shortcut_decides_as_its_readers."""
    if not delta.keys() <= PLAIN_SAID_KEYS:
        return None
    content, first, second = delta.get("content"), delta.get("reasoning_content"), delta.get("reasoning")
    if (
        (content is not None and type(content) is not str)
        or (first is not None and type(first) is not str)
        or (second is not None and type(second) is not str)
    ):
        return None
    return content or "", first or second or ""


PLAIN_SAID_KEYS = frozenset({"content", "reasoning_content", "reasoning", "role", "index"})


def finish_in(payload: dict[str, Any]) -> tuple[list[TextDelta | ReasoningDelta], str, dict[str, Any] | None] | None:
    """(said, finish reason, usage) when a chunk is the commonest last chunk of a stream: one choice
    (index 0 or none) with a finish reason (a non-empty string) and a delta object that holds no
    tool call, maybe usage (an object) beside it, no error. OpenAIChatDecoder makes exactly the
    events ``said`` of the delta (as said_in), then chat_finish(choice, reason),
    then UsageReport(usage) when there is usage (None when there is none)
    (test_the_last_chunk_shortcut_decides_as_the_decoder)."""
    choices = payload.get("choices")
    if type(choices) is not list or len(choices) != 1 or payload.get("error"):
        return None
    choice = choices[0]
    if type(choice) is not dict or choice.get("index"):
        return None
    finish, delta, usage = choice.get("finish_reason"), choice.get("delta"), payload.get("usage")
    if type(finish) is not str or not finish or type(delta) is not dict or (usage and type(usage) is not dict):
        return None
    # An empty delta (most last chunks) says nothing, nor does one of a role and empty or null text
    # alone (Ollama's; Mistral's with its index): what said_in finds, without its reading of every
    # key chat_said reads.
    said = [] if not delta or plain_said(delta) == ("", "") else said_in(delta)
    return None if said is None else (said, finish, usage or None)


PLAIN_CHOICE = frozenset({"index", "delta", "finish_reason", "logprobs"})
"""The keys of a chat choice that has nothing beside its finish reason for chat_finish to read."""
PLAIN_ENDS = {raw: chat_finish({}, raw) for raw in ("stop", "tool_calls", "length", "content_filter")}
"""chat_finish of a PLAIN_CHOICE choice, by its commonest finish reasons: nearly every chat stream's
last chunk is such a choice, and its end depends on the word alone, so one frozen end serves them all."""


def usage_in(payload: dict[str, Any]) -> dict[str, Any] | None:
    """The usage (empty when there is none) of a chunk with no choices (an empty list), usage (an
    object) or none, and no error: what OpenAI sends after the last chunk when usage is asked for.
    OpenAIChatDecoder makes of it exactly UsageReport(usage) when usage is not empty, else nothing
    (test_the_usage_chunk_shortcut_decides_as_the_decoder)."""
    choices, usage = payload.get("choices"), payload.get("usage")
    if type(choices) is not list or choices or payload.get("error") or (usage and type(usage) is not dict):
        return None
    return usage or {}


def one_entry(delta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(entry, function) of a plain delta holding one tool-call entry with a function object, and
    no text or reasoning beside it (turn content rides beside a call on some servers: the decoder
    reads it, so no shortcut): the two the call shortcuts read, found once per chunk."""
    entries = delta.get("tool_calls")
    if type(entries) is not list or len(entries) != 1:
        return None
    # A usual delta holds the entries alone; only a longer one needs its other keys read.
    if len(delta) > 1 and said_beside(delta):
        return None
    entry = entries[0]
    if type(entry) is not dict or (len(entry) > 2 and COMPAT_SIGNATURE in entry):
        return None  # a signed entry (Gemini's OpenAI endpoint): the decoder reads its signature
    function = entry.get("function")
    return (entry, function) if type(function) is dict else None


def said_beside(delta: dict[str, Any]) -> bool:
    """Does ``delta`` say text or reasoning beside its tool calls? None says nothing, and so does
    an empty string under a key the decoder reads it as nothing under; any other value, falsy too
    (0, {}, ``""`` where a list or an object goes), is the decoder's to read, and maybe report
    (policy side-values-by-type). A loop over the delta's few keys, not any() of a generator over
    the eleven SAID_KEYS: making the generator, resuming it and reading each key cost more than
    the answer (every delta that carries ``role`` or ``content: null`` beside its call, as many
    servers send on every chunk)."""
    for key, said in delta.items():
        if key in SAID_KEY_SET and (said or (said is not None and (type(said) is not str or key in _NOT_TEXT))):
            return True
    return False


SAID_KEY_SET = frozenset(SAID_KEYS)
"""The keys chat_said reads: a delta with none of them says nothing."""
_NOT_TEXT = frozenset({"reasoning_details", "reasoning_items", "audio"})
"""The keys of SAID_KEYS whose empty string the decoder reports (``part-not-reassembled``): a
string where a list (OpenRouter's details, LiteLLM's items) or an audio object goes. Under the
others an empty string is no text, or a falsy value the decoder passes over
(test_every_side_value_beside_a_call_decides_alike_both_ways)."""


def header_in(entry: dict[str, Any], function: dict[str, Any]) -> tuple[int, str, str] | None:
    """(index, id, name) when the one entry of a plain delta (see one_entry) opens a call: an
    integer index, a non-empty id and name, no argument text (empty or absent). The first chunk of
    most OpenAI streams' calls. OpenAIChatDecoder makes exactly one CallSeen of it, with a CallRef
    of these three at position 0 (test_the_call_header_shortcut_decides_as_the_decoder)."""
    if function.get("arguments", "") != "":
        return None
    index, call_id, name = entry.get("index"), entry.get("id"), function.get("name")
    if type(index) is not int or type(call_id) is not str or type(name) is not str or not call_id or not name:
        return None
    return index, call_id, name


def whole_call_in(entry: dict[str, Any], function: dict[str, Any]) -> tuple[int, str, str, str] | None:
    """(index, id, name, text) when the one entry of a plain delta (see one_entry) has all four (an
    integer index, a non-empty id, name and argument text). A whole call in one chunk (vLLM,
    Ollama's and many proxies' OpenAI endpoints), or a call's first chunk carrying its first text.
    OpenAIChatDecoder makes exactly one ArgumentsFragment of it, with a CallRef of these four at
    position 0 (test_the_whole_call_shortcut_decides_as_the_decoder)."""
    index, call_id, name, text = entry.get("index"), entry.get("id"), function.get("name"), function.get("arguments")
    if type(index) is not int or type(call_id) is not str or type(name) is not str or type(text) is not str:
        return None
    if not call_id or not name or not text:
        return None  # an empty id or name is none at all (CallRef), and empty text is no fragment
    return index, call_id, name, text


def routed_entry_in(entry: dict[str, Any], function: dict[str, Any]) -> tuple[int | None, Any, Any, str] | None:
    """(index, id, name, text) when the one entry of a plain delta (see one_entry) is of none of
    the three kinds above but still one the decoder reads plainly: an index that is absent, null or
    an integer within 63 bits, an id and a name each a string or absent (empty counts as none, as
    CallRef reads it), argument text a string or absent (``""`` then). Gemini's OpenAI endpoint
    sends a whole call so, with no index and an id of ``""``. OpenAIChatDecoder makes exactly one
    event of it at position 0: ArgumentsFragment(ref, text) when there is text, else CallSeen(ref),
    its CallRef built of the four, or the bare one of the index when there is neither id nor name
    (test_an_entry_the_general_routing_takes_decides_as_the_decoder)."""
    index, call_id, name, text = entry.get("index"), entry.get("id"), function.get("name"), function.get("arguments")
    if index is not None and (type(index) is not int or index >> 63):
        return None
    if (call_id is not None and type(call_id) is not str) or (name is not None and type(name) is not str):
        return None
    if text is None:
        return index, call_id, name, ""
    return (index, call_id, name, text) if type(text) is str else None


def calls_ending_in(payload: dict[str, Any]) -> tuple[dict[str, Any], str, dict[str, Any] | None] | None:
    """(delta, finish reason, usage) when a chunk of one choice holds tool calls in its delta and,
    with that delta emptied, is a last chunk finish_in reads: a whole call and the finish in one
    chunk (Gemini's OpenAI endpoint). OpenAIChatDecoder makes of it exactly the events it makes of a
    chunk of that delta alone (one choice, nothing beside it), then those of the emptied chunk: no
    event of either part depends on the other, nor does any diagnostic it reports as it decodes
    (test_a_last_chunk_with_calls_decides_as_the_decoder)."""
    choices = payload.get("choices")
    if type(choices) is not list or len(choices) != 1 or type(choice := choices[0]) is not dict:
        return None
    if not choice.get("finish_reason"):  # (asked of every chunk the shortcut refuses: most have none)
        return None
    delta = choice.get("delta")
    if type(delta) is not dict or delta.get("tool_calls") is None:
        return None
    ending = finish_in({**payload, "choices": [{**choice, "delta": {}}]})  # (a rare chunk: copies cost little)
    return None if ending is None else (delta, ending[1], ending[2])


def unkept(delta: Mapping[str, Any], diagnose: Callable[[str, str], None]) -> None:
    """Report what a chat delta holds that no Result field holds (``part-not-reassembled``): a
    search model's ``annotations`` (url_citation: no chat message takes them back) and an audio
    model's ``audio`` (openai ``ChoiceDelta.audio``: a piece of its spoken answer)."""
    if cited := delta.get("annotations"):
        said = f"{len(cited)} of them" if type(cited) is list else type(cited).__name__
        diagnose("part-not-reassembled", f"delta.annotations ({said}) is not kept: no Result holds it")
    if (audio := delta.get("audio")) is not None:
        said = ", ".join(map(str, audio)) if isinstance(audio, Mapping) else type(audio).__name__
        diagnose("part-not-reassembled", f"delta.audio ({said}) is not kept: no Result holds it")
