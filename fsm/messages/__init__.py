"""The next request, built: a reassembled turn as the assistant message each provider expects back,
and the tool results that answer its calls.

Formats: ``"openai-chat"`` (Chat Completions messages), ``"openai-responses"`` (Responses input
items), ``"anthropic"`` (Messages), ``"gemini"`` (``Content`` in the REST wire's camelCase, which
the google-genai SDK accepts as it is), ``"ollama"`` (native ``/api/chat`` messages) and
``"cohere"`` (v2 chat messages); how the last two carry a turn, and what Ollama cannot carry (ids),
is in :mod:`fsm.messages.ollama_cohere`; ``"bedrock"`` (Converse messages, as boto3 takes them) in
:mod:`fsm.messages.bedrock`. What goes back is what the provider sent, exactly:

* ids: the call's ``id`` (the wire id; renamed only where the wire repeated one, so that every result
  pairs with one call), or its ``reply_id`` where it has one: the wire id of a call that opened
  before its id arrived (``late-id``), which the provider issued and pairs the result by, in the call
  and in its result alike. Gemini gets an ``id`` only where its wire gave one (Gemini 3), since older
  models pair results by name and order; Converse gets one it would refuse (past 64 characters, say)
  as :func:`fsm.messages.bedrock.converse_id` maps it;
* reasoning first (unless the wire gave places: see below), with what must come back verbatim:
  Anthropic ``thinking`` blocks with their ``signature`` and ``redacted_thinking`` blocks; Gemini
  thought parts and every ``thoughtSignature`` on the part it came on (a call, a text part, or a
  thought), the thought and text parts each in its ``place`` among the calls (the wire's order:
  thought, call, thought, call; text that came in no part: all of it as one part at the first one's
  place); Responses ``reasoning`` items with their id, summary and ``encrypted_content``, and the
  function and custom calls with their item ``id`` (``fc_...``), which the API pairs with the
  reasoning item before it (sent without reasoning, calls have no item id: an id whose reasoning is
  missing is refused). A signature goes back only to a format that reads its maker's (policy
  signature-by-origin, :func:`fsm.messages.shared.signature_for`): Claude's to Anthropic, Bedrock
  and LiteLLM's ``thinking_blocks``, Gemini's to Gemini; the block's text then goes to Gemini as an
  unsigned thought, and stays out of Claude's formats, and a block of no text and no signature goes
  to Gemini as nothing. Responses items go back in the order of their ``output_index`` (reasoning,
  call, reasoning, call stays so); each message item's text goes back as a message in its place (the
  API pairs a reasoning item with the message after it, by the message's item id: beside reasoning,
  a message the stream gave its ``msg_...`` id and status goes back as that output message, its text
  as ``output_text``, and any message with the ``phase`` the stream gave it; text that came in no
  item: all of it as one plain message at the first one's
  place); an item without a place (a result built by hand) follows the
  one before it in the order reasoning, message, calls, and items that share a place go in that
  order. Anthropic content goes back the same way, by content block index: with interleaved
  thinking, thinking, tool_use, thinking, tool_use stays so (Anthropic wants the turn echoed as
  received), and each text block goes back as a block of its own in its place (text that came in no
  block: all the text as one block at the first one's place). A thinking block that never got its
  signature (a cut stream) is left out: Anthropic refuses it. A result built by hand or read back
  may hold any places: every part and call still goes back once (Gemini's calls each take the next
  place no part holds, by their position in ``result.calls``); a field not of the type its class
  declares (a place or output index that is no int, a dict where a call, reasoning block or text
  part belongs) is InvalidInput naming the field and what it must hold. Chat Completions has no
  field for reasoning: only signed or redacted blocks (Claude's, as LiteLLM yields them) go back,
  as LiteLLM's ``thinking_blocks``, which it hands on to Claude, who refuses a turn of calls
  without them, and OpenRouter's ``reasoning_details`` go back as they came
  (:mod:`fsm.messages.openai_chat`);
* Claude's own tool calls (``server_tool_use``, ``mcp_tool_use``) go back to Anthropic as their
  blocks came, each with the result blocks that answered it, and each text block with its
  citations, and each ``compaction`` block (the context's summary; a Responses compaction item
  goes back to Responses alike) as it last came, in their
  places (a call that did not complete, with none of its results; one still waiting for its
  result too, which the server runs when the turn goes back: after ``pause_turn``, or after the
  client results of calls beside it, as code execution calling client tools waits for them); a
  ``fallback`` block (Claude's server-side fallback) goes back in its place too, and what a declined
  model gave before the turn's last one (its thinking, a server call no result answered, its client
  calls: ``Result.declined_calls``) does not, as Anthropic's refusals-and-fallback guide says;
  Gemini's code runs go back to
  Gemini (each ``executableCode`` part with its ``codeExecutionResult``, each ``toolCall`` part with
  its ``toolResponse``); other providers' hosted
  tools (OpenAI's) are theirs and are not replayed;
* arguments: the raw text where the format takes text (OpenAI, Cohere), the parsed object where it
  takes an object (Anthropic ``input``, Gemini ``args``, Ollama ``arguments``). A number no float
  or int holds comes back from the parse as a ``decimal.Decimal`` (an integer past the int-string
  conversion limit, ``1e999``): the object holds it as that, and the SDKs cannot write it
  (anthropic's JSON encoder raises ``TypeError``; google-genai sends it as a string);
* OpenAI custom (freeform) calls go back as custom calls with their ``input`` text;
* Responses built-in client calls (``apply_patch_call``, ``shell_call``, ``local_shell_call``,
  ``computer_call``) go back as the item the provider sent (:attr:`~fsm.results.ToolCall.item`):
  its item ``id``, ``call_id``, ``operation``/``action``, ``status`` and, where the type has them,
  ``environment``, ``caller`` and ``pending_safety_checks``; fields the input item does not take
  (``created_by``) are dropped. Other formats cannot carry them: LocalProtocolError, never a
  wrong shape. Ollama and Cohere carry function calls only: a custom (freeform) call raises
  LocalProtocolError there too.

**Calls that did not complete** (status truncated or invalid) must not be executed, and a call sent
back must be answered. ``incomplete="omit"`` (the default) leaves them out of the assistant message:
the model never sees them, and :func:`omitted` lists them (the result's diagnostics say why each one
failed); in ``"openai-responses"`` the reasoning items right before one go with it, as they do
before a hosted call (the API refuses a reasoning item sent without the item that followed it).
``incomplete="include"`` keeps them, with their raw text where the format takes text and an empty
object where it takes an object; answer each with :func:`incomplete_answers`, which builds an error
result per call, so the model learns the call failed and can try again. A built-in client call that
did not complete is left out even then: its action may be missing, and not every built-in output can
say "not run" (a computer call is answered with a screenshot). So is a call that came without a name
(``missing-name``, status invalid): no provider takes a nameless call back.

The message is the caller's to edit (policy message-is-the-callers, :func:`~fsm.messages.shared.unshared`):
each dict and list in it is a new one, never the result's own (a call's ``arguments``, a block), so
editing it changes neither the result nor the next message built from it.

:func:`tool_result` builds the answer to one call: an OpenAI ``tool`` message, a Responses
``function_call_output`` item, an Anthropic ``tool_result`` block, a Gemini ``functionResponse``
part, or an Ollama or Cohere ``tool`` message. :func:`tool_results` wraps answers into what the
history takes: Anthropic and Gemini want every answer of a turn in one user message.
:func:`ids_sent` lists the ids a turn sends, for the next turn's ``Reassembler(taken=...)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, overload

from fsm.errors import InvalidOption, LocalProtocolError
from fsm.foreign import answers_callers
from fsm.messages.bedrock import bedrock_message, bedrock_result
from fsm.messages.built_in import BUILT_IN_OUTPUTS, built_in_output
from fsm.messages.claude_blocks import anthropic_text, placed_thinking, server_blocks
from fsm.messages.gemini_code import check_dummy_option, code_runs, sign_first_call, signatures_by_call
from fsm.messages.ollama_cohere import cohere_message, cohere_result, ollama_message, ollama_result
from fsm.messages.openai_chat import REASONING_FIELDS, ReasoningField, openai_chat_message
from fsm.messages.responses import openai_responses, stranded_calls
from fsm.messages.shared import (
    Message,
    as_text,
    check_call,
    check_result,
    in_output_order,
    need,
    placed_text,
    refuse_lone_surrogates,
    reply_id,
    signature_for,
    unshared,
)
from fsm.messages.shared import arguments_object as _arguments
from fsm.messages.shared import ids_sent as ids_sent
from fsm.messages.shared import kind as _kind
from fsm.results import CallStatus, Result, ToolCall
from fsm.wire.decoders._claude_fallback import before, final_fallback

Format = Literal["openai-chat", "openai-responses", "anthropic", "gemini", "ollama", "cohere", "bedrock"]
FORMATS: tuple[str, ...] = ("openai-chat", "openai-responses", "anthropic", "gemini", "ollama", "cohere", "bedrock")
Incomplete = Literal["omit", "include"]


def _check_format(format: str) -> None:
    if format not in FORMATS:
        raise LocalProtocolError(f"unknown message format {format!r} (known: {', '.join(FORMATS)})")


def _calls(result: Result, incomplete: str) -> tuple[ToolCall, ...]:
    check_result(result)
    if incomplete == "omit":
        return result.complete_calls
    if incomplete == "include":
        return tuple(call for call in result.calls if call.status is CallStatus.COMPLETE or _includable(call))
    raise LocalProtocolError(f"incomplete must be 'omit' or 'include', not {incomplete!r}")


def omitted(result: Result, format: Format | None = None) -> tuple[ToolCall, ...]:
    """The calls ``incomplete="omit"`` leaves out: every call whose status is not complete, and with
    ``format="openai-responses"`` each call a program made that cannot go back with it (policy
    calls-stay-with-their-program): neither is to be run nor answered."""
    check_result(result)
    if format is not None:
        _check_format(format)
    stranded = {id(call) for call in stranded_calls(result)} if format == "openai-responses" else set()
    return tuple(call for call in result.calls if call.status is not CallStatus.COMPLETE or id(call) in stranded)


def _built_in(call: ToolCall) -> bool:
    return call.type in BUILT_IN_OUTPUTS


def _includable(call: ToolCall) -> bool:
    """Whether ``incomplete="include"`` sends this call that did not complete back: not a built-in
    client call (its action may be missing), nor a call without a name (no provider takes one)."""
    return not _built_in(call) and call.name is not None


@overload
def assistant_message(
    result: Result,
    format: Literal["openai-chat", "anthropic", "gemini", "ollama", "cohere", "bedrock"],
    *,
    incomplete: Incomplete = "omit",
    reasoning_field: ReasoningField | None = None,
    dummy_signature: bool | None = None,
) -> Message: ...
@overload
def assistant_message(
    result: Result, format: Literal["openai-responses"], *, incomplete: Incomplete = "omit"
) -> list[Message]: ...
@answers_callers
def assistant_message(
    result: Result,
    format: Format,
    *,
    incomplete: Incomplete = "omit",
    reasoning_field: ReasoningField | None = None,
    dummy_signature: bool | None = None,
) -> Message | list[Message]:
    """The turn as the provider wants it back: one message, or for ``openai-responses`` the list of
    input items (reasoning, message, function calls) to append to the next request's input.
    ``reasoning_field`` (``openai-chat`` only) names the field the server takes the turn's plain
    reasoning back in (:mod:`fsm.messages.openai_chat`, policy reasoning-field-named).
    ``dummy_signature`` (``gemini`` only; on unless False): Google's dummy signature on the first call
    when it has none (policy gemini-dummy-signature, :func:`~fsm.messages.gemini_code.sign_first_call`)."""
    _check_format(format)
    calls = _calls(result, incomplete)
    if reasoning_field is not None and (format != "openai-chat" or reasoning_field not in REASONING_FIELDS):
        shown = f"{format!r} takes none" if format != "openai-chat" else f"not {reasoning_field!r}"
        raise InvalidOption(f"reasoning_field is one of {', '.join(REASONING_FIELDS)} for 'openai-chat' ({shown})")
    check_dummy_option(dummy_signature, format)
    if format == "openai-chat":
        built: Message | list[Message] = openai_chat_message(result, calls, reasoning_field)
    elif format == "openai-responses":
        built = openai_responses(result, calls)
    elif format == "anthropic":
        built = _anthropic(result, calls)
    elif format == "gemini":
        built = sign_first_call(_gemini(result, calls), dummy_signature)  # policy gemini-dummy-signature
    else:
        for call in calls:
            _kind(call, format)
        if format == "bedrock":
            built = bedrock_message(result, calls)
        else:
            built = ollama_message(result, calls) if format == "ollama" else cohere_message(result, calls)
    return unshared(built)  # the result's own values are in it, and the caller may edit what it gets


def _anthropic(result: Result, calls: tuple[ToolCall, ...]) -> Message:
    # In the order the blocks streamed (their content block index): interleaved thinking sits between
    # calls, and Anthropic refuses its thinking blocks rearranged. The thinking a declined model gave
    # before the turn's last fallback block does not go back (Anthropic's refusals-and-fallback guide).
    cut = final_fallback(result.server_tool_results)
    placed = [(at, block) for at, block in placed_thinking(result, "anthropic") if not before(at, cut)]
    placed += placed_text(result, anthropic_text) + server_blocks(result, cut)
    placed += [(compaction.output_index, dict(compaction.block)) for compaction in result.compactions]
    for call in calls:
        _kind(call, "anthropic")
        use = {"type": "tool_use", "id": reply_id(call), "name": call.name or "", "input": _arguments(call)}
        if call.item is not None and call.item.get("type") == "tool_use":  # its block's caller and toolset
            use |= {key: call.item[key] for key in ("caller", "toolset_name") if call.item.get(key) is not None}
        placed.append((call.output_index, use))
    return {"role": "assistant", "content": in_output_order(placed)}


def _gemini(result: Result, calls: tuple[ToolCall, ...]) -> Message:
    signs, moved = signatures_by_call(result, calls)  # policy gemini-signature-by-call-id
    said: list[tuple[int | None, Message | list[Message]]] = [
        (reasoning.place, _thought(reasoning.text, signature_for(reasoning, result, "gemini"), at in moved))
        for at, reasoning in enumerate(result.reasoning)  # policy signature-by-origin
    ]
    said += code_runs(result)
    parts = result.text_parts
    if parts and "".join(p.text for p in parts) == result.text:
        said += [(p.place, _signed({"text": p.text}, p.signature)) for p in parts if p.text or p.signature]
    elif result.text or result.text_signature:  # no parts, or text that came in none: all of it, once
        said.append((parts[0].place if parts else None, _signed({"text": result.text}, result.text_signature)))
    for call in calls:
        _kind(call, "gemini")
    # A part without a place (a result built by hand) goes first, as every part did before places:
    # thoughts, the text, then the calls. A placed part goes back where it sat: each call takes the
    # next place no part holds, so a signature stays beside the calls and text it came between.
    out = [part for place, part in said if place is None]
    placed = sorted([(place, part) for place, part in said if place is not None], key=lambda item: item[0])
    out = [piece for part in out for piece in (part if isinstance(part, list) else [part])]
    # Every call holds a place, sent back or not; calls are matched by position, not by index, which
    # a result built by hand or read back may repeat (one call must not stand for the other).
    sending = iter(calls)
    upcoming = next(sending, None)
    held: list[ToolCall | None] = []
    for call in result.calls:
        if call is upcoming:
            held.append(call)
            upcoming = next(sending, None)
        else:
            held.append(None)
    at = taken = 0
    for place, part in placed:
        while at < place and taken < len(held):
            next_call = held[taken]
            if next_call is not None:
                out.append(_gemini_call(next_call, signs))
            taken += 1
            at += 1
        if isinstance(part, list):  # a code part and its result: one place, the result's
            out += part
        else:
            out.append(part)
        at += 1
    out += [_gemini_call(call, signs) for call in held[taken:] if call is not None]
    return {"role": "model", "parts": out}


def _signed(part: Message, signature: str | None) -> Message:
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def _thought(text: str, signature: str | None, moved: bool) -> Message | list[Message]:
    if signature is not None and not moved:
        return {"text": text, "thought": True, "thoughtSignature": signature}
    # Nothing for Gemini to read (its signature went to its call, or was another model's, or it had
    # none: Claude's redacted block, a Responses item): an empty thought part is nothing, and keeps its place.
    return {"text": text, "thought": True} if text else []


def _gemini_call(call: ToolCall, signs: dict[int, str]) -> Message:
    function_call: Message = {"name": call.name or "", "args": _arguments(call)}
    if call.wire_id is not None:
        function_call["id"] = reply_id(call)
    return _signed({"functionCall": function_call}, call.thought_signature or signs.get(id(call)))


@answers_callers
def tool_result(call: ToolCall, output: Any, format: Format, *, is_error: bool = False) -> Message:
    """The answer to ``call``: ``output`` is the tool's return value (text, or anything JSON can
    write, which text formats receive as JSON text). ``is_error`` marks a failure where the format
    can say so (Anthropic ``is_error``, Gemini's ``error`` key); OpenAI, Ollama and Cohere have no
    such flag, so there the output itself must say it. An output holding a lone UTF-16 surrogate in
    any of its text (bytes decoded with ``surrogateescape``) is refused, naming the call (policy
    output-lone-surrogate): no request's UTF-8 can carry it.

    A Responses built-in client call is answered with its own output item, ``output`` mapped so:

    * ``apply_patch_call`` → ``apply_patch_call_output``: ``output`` as text (its log), ``status``
      ``failed`` when ``is_error`` else ``completed``;
    * ``shell_call`` → ``shell_call_output``: text becomes one chunk, as ``stdout`` with exit code 0,
      or with ``is_error`` as ``stderr`` with exit code 1; an object ``{stdout, stderr, outcome}``
      or a list of them (one per command) goes as it is (one lacking a field, or whose ``outcome`` is
      neither an exit with its ``exit_code`` nor a timeout, is refused: the API would refuse it); the
      action's ``max_output_length`` is echoed;
    * ``local_shell_call`` → ``local_shell_call_output``: ``output`` as text, paired by ``id`` (the
      SDK's input item has no ``call_id`` field: the id there is the call's);
    * ``computer_call`` → ``computer_call_output``: ``output`` is the screenshot taken after the
      action, an image URL (``https:`` or ``data:image/png;base64,...``) or an object with
      ``image_url`` or ``file_id`` text (one of no text is refused). Pending safety checks are
      never acknowledged for the caller: after a person has approved them, add
      ``acknowledged_safety_checks`` to the returned item.
    """
    _check_format(format)
    check_call(call)
    refuse_lone_surrogates(call, output)
    if format == "openai-chat":
        _kind(call, format, ("function", "custom"))
        return {"role": "tool", "tool_call_id": reply_id(call), "content": as_text(output)}
    if format == "openai-responses":
        kind = _kind(call, format, ("function", "custom", *BUILT_IN_OUTPUTS))
        if kind in BUILT_IN_OUTPUTS:
            return built_in_output(call, output, is_error)
        answer_type = "custom_tool_call_output" if kind == "custom" else "function_call_output"
        return {"type": answer_type, "call_id": reply_id(call), "output": as_text(output)}
    _kind(call, format)
    if format == "ollama":
        return ollama_result(call, output)
    if format == "cohere":
        return cohere_result(call, output)
    if format == "bedrock":
        return bedrock_result(call, output, is_error)
    if format == "anthropic":
        block: Message = {"type": "tool_result", "tool_use_id": reply_id(call), "content": as_text(output)}
        if is_error:
            block["is_error"] = True
        return block
    as_text(output, strict=True)  # Gemini takes the value itself, but it goes out as JSON: refused now if it cannot
    response: Message = {"name": call.name or "", "response": {"error" if is_error else "output": output}}
    if call.wire_id is not None:
        response["id"] = reply_id(call)
    return {"functionResponse": response}


def tool_results(answers: Iterable[Message], format: Format) -> list[Message]:
    """What to append to the history after the assistant message: OpenAI's, Ollama's and Cohere's answers
    as they are (Ollama's in the order of the calls they answer), Anthropic's ``tool_result`` blocks in
    one user message (Bedrock Converse's ``toolResult`` blocks too), Gemini's parts (or ``Part`` objects)
    in one user content."""
    _check_format(format)
    need(answers, Iterable, "answers must be an iterable of what tool_result gives")
    answers = list(answers)
    for answer in answers:
        if not (format == "gemini" and callable(getattr(answer, "model_dump", None))):  # a genai Part goes as it is
            need(answer, Mapping, "each answer must be a dict (what tool_result gives)")
    if format in ("anthropic", "bedrock"):
        return [{"role": "user", "content": answers}] if answers else []
    if format == "gemini":
        return [{"role": "user", "parts": answers}] if answers else []
    return answers


def incomplete_answers(result: Result, format: Format) -> list[Message]:
    """An error result for each call that did not complete, for ``incomplete="include"``: the model
    is told the call was not run, and why."""
    why = {
        CallStatus.TRUNCATED: "the response was cut off before its arguments were complete",
        CallStatus.INVALID: "its arguments are not a valid JSON object",
    }
    return [
        tool_result(call, f"Not run: {why[call.status]}. Call the tool again.", format, is_error=True)
        for call in omitted(result)
        if _includable(call)  # the others are left out of the assistant message even with incomplete="include"
    ]
