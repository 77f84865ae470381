"""The agent loop end to end with the real SDK clients, over every capture their wire covers and
hostile variants of it (tests/capture_variants.py): each SDK reads the stream through its own HTTP
stack (an httpx mock transport), ``fsm.reassemble`` takes what it yields, and the result must be
the bytes path's on the same stream; then ``fsm.messages`` builds the next request, the same client
sends it, and the body it wrote must carry every call and pair every result, which
``fsm.history`` confirms. Where an SDK itself loses or refuses something, the test pins that
behaviour (README, "What the SDKs themselves do")."""

from __future__ import annotations

import base64
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

import fsm
from fsm import history, messages
from fsm.harness.captures import PROVIDER_OF_SHAPE
from tests import capture_variants as cv
from tests.conftest import CAPTURES, captures, require_captures
from tests.test_clients import Replay, anthropic_http

httpx = pytest.importorskip("httpx")

ASK: dict[str, list[dict[str, Any]]] = {
    "openai-chat": [{"role": "user", "content": "go"}],
    "openai-responses": [{"role": "user", "content": "go"}],
    "anthropic": [{"role": "user", "content": "go"}],
    "gemini": [{"role": "user", "parts": [{"text": "go"}]}],
}
# The official SDKs' wires; ollama's and cohere's clients run in tests/test_more_clients.py
SDK_SHAPES = [shape for shape, provider in PROVIDER_OF_SHAPE.items() if provider in ASK]
BODY_FIELD = {"openai-chat": "messages", "openai-responses": "input", "anthropic": "messages", "gemini": "contents"}


def _cases() -> Iterator[Any]:
    grown: set[str] = set()  # a megabyte of arguments once per provider: the SDKs' own parsing is slow
    for path in captures(*SDK_SHAPES):
        provider = PROVIDER_OF_SHAPE[path.parent.name]
        for variant, payloads in cv.variants(provider, cv.events(path)):
            if variant == "megabyte" and payloads is not None:
                if provider in grown:
                    continue
                grown.add(provider)
            if payloads is not None:
                yield pytest.param(path, provider, variant, payloads, id=f"{path.parent.name}/{path.stem}-{variant}")


CASES = list(_cases())
if not CASES:  # ../shared is absent: one case, which skips with the reason
    CASES = [pytest.param(None, "", "", [], id="no-captures")]


def body_of(path: Path, provider: str, variant: str, payloads: list[dict[str, Any]]) -> bytes:
    """What the server sends: the capture's own bytes where it is SSE and unchanged, else rendered."""
    if variant == "as-is" and path.suffix == ".sse":
        return path.read_bytes()
    return cv.render(payloads, provider)


# -- the clients -------------------------------------------------------------------------------------


def openai_client(replay: Replay) -> Any:
    openai = pytest.importorskip("openai")
    return openai.OpenAI(api_key="test", base_url="http://mock/v1", http_client=replay.client())


def replay_for(provider: str, body: bytes, replay_type: type[Replay] = Replay) -> Replay:
    """The mock server for the provider's SDK (Anthropic's may build on another httpx)."""
    return replay_type(body, anthropic_http()) if provider == "anthropic" else replay_type(body)


def client_for(provider: str, body: bytes, replay_type: type[Replay] = Replay) -> tuple[Replay, Any]:
    replay = replay_for(provider, body, replay_type)
    if provider == "anthropic":
        anthropic = pytest.importorskip("anthropic")
        return replay, anthropic.Anthropic(api_key="test", base_url="http://mock", http_client=replay.client())
    if provider == "gemini":
        genai = pytest.importorskip("google.genai")
        options = genai.types.HttpOptions(base_url="http://mock", httpx_client=replay.client())
        return replay, genai.Client(api_key="test", http_options=options)
    return replay, openai_client(replay)


def send(provider: str, client: Any, conversation: list[Any], **options: Any) -> fsm.Result:
    """One turn through the SDK's raw stream: the request is the conversation, the answer the capture."""
    if provider == "openai-chat":
        stream = client.chat.completions.create(model="m", messages=conversation, stream=True)
    elif provider == "openai-responses":
        stream = client.responses.create(model="m", input=conversation, stream=True)
    elif provider == "anthropic":
        stream = client.messages.create(model="m", max_tokens=64, messages=conversation, stream=True)
    else:
        stream = client.models.generate_content_stream(model="g", contents=conversation)
    return fsm.reassemble(stream, **options)


def helper_stream(provider: str, client: Any) -> Any:
    """The SDK's stream helper, unopened (reassemble enters and closes it), where it has one."""
    if provider == "openai-chat":
        return client.chat.completions.stream(model="m", messages=ASK[provider])
    if provider == "openai-responses":
        return client.responses.stream(model="m", input="go")
    if provider == "anthropic":
        return client.messages.stream(model="m", max_tokens=64, messages=ASK[provider])
    return None


def langchain_model(provider: str, replay: Replay) -> Any:
    """LangChain's ChatOpenAI over the replay, sync (``stream``) and async (``astream``)."""
    langchain_openai = pytest.importorskip("langchain_openai")
    return langchain_openai.ChatOpenAI(
        model="m",
        api_key="test",
        base_url="http://mock/v1",
        http_client=replay.client(),
        http_async_client=replay.async_client(),
        use_responses_api=provider == "openai-responses",
    )


def langchain_stream(provider: str, replay: Replay) -> Any:
    return langchain_model(provider, replay).stream("go")


# -- what must agree ------------------------------------------------------------------------------------


def _signature(text: str | None) -> bytes | None:
    """A signature's bytes: google-genai writes url-safe base64 where the wire had the standard one."""
    return None if text is None else base64.urlsafe_b64decode(text.replace("+", "-").replace("/", "_") + "==")


def numbered(result: fsm.Result) -> list[tuple[str, int | None]]:
    return [(d.code, d.event) for d in result.diagnostics]


def seen(result: fsm.Result, *, usage: bool = True, reasoning: bool = True) -> dict[str, Any]:
    """Everything a caller acts on, but the diagnostics' event numbers (see ``numbered``)."""
    return {
        "finish_reason": result.finish_reason,
        "calls": [
            (c.index, c.id, c.wire_id, c.name, c.arguments_json, c.arguments, c.status, c.type, c.input, c.item)
            for c in result.calls
        ],
        "server_tool_calls": [(c.id, c.name, c.type, c.input, c.arguments_json) for c in result.server_tool_calls],
        "codes": result.codes(),
        "signatures": [_signature(c.thought_signature) for c in result.calls],
        "text": (result.text, _signature(result.text_signature)),
        "reasoning": result.reasoning if reasoning else None,
        "usage": result.usage if usage else None,
    }


def placeless(result: fsm.Result) -> fsm.Result:
    """The result as a wire without places gives it: LiteLLM's chunks (OpenAI chat chunks) carry no
    Claude content block index, so their reasoning and text have no output_index."""
    reasoning = tuple(attrs.evolve(block, output_index=None) for block in result.reasoning)
    calls = tuple(attrs.evolve(call, output_index=None) for call in result.calls)
    return attrs.evolve(result, reasoning=reasoning, calls=calls, text_output_index=None)


def _without(seen_: dict[str, Any], *codes: str) -> dict[str, Any]:
    return {**seen_, "codes": [c for c in seen_["codes"] if c not in codes]}


def _has_indexless_call(payloads: list[dict[str, Any]]) -> bool:
    return any(
        "index" not in call
        for p in payloads
        for choice in p.get("choices") or []
        for call in (choice.get("delta") or {}).get("tool_calls") or []
    )


@pytest.mark.parametrize(("path", "provider", "variant", "payloads"), CASES)
def test_the_sdk_stream_gives_what_the_bytes_give(path: Path, provider: str, variant: str, payloads: Any) -> None:
    if path is None:
        require_captures()
    body = body_of(path, provider, variant, payloads)
    expected = seen(fsm.reassemble(body, provider))
    _, client = client_for(provider, body)

    raw = send(provider, client, ASK[provider])
    assert seen(raw) == expected
    if provider != "anthropic":  # whose SDK never yields the pings the bytes count
        assert numbered(raw) == numbered(fsm.reassemble(body, provider))
    helper = helper_stream(provider, client)
    if helper is None:
        return
    if provider == "openai-chat" and _has_indexless_call(payloads):
        # openai's ChatCompletionStreamState indexes a list by the call's index: the SDK's own crash
        with pytest.raises(TypeError, match="list indices"):
            fsm.reassemble(helper)
    elif provider == "anthropic" and variant == "unicode-split":
        # anthropic's helper encodes each partial_json to UTF-8 for its snapshot: a surrogate half fails
        with pytest.raises(UnicodeEncodeError):
            fsm.reassemble(helper)
    else:
        helped = fsm.reassemble(helper)
        # the helper's derived events (content.delta, input_json, ...) are no wire events: not counted
        assert seen(helped) == expected and numbered(helped) == numbered(raw)


LANGCHAIN_CASES = [c for c in CASES if c.values[0] is None or c.values[1] in ("openai-chat", "openai-responses")]


@pytest.mark.parametrize(("path", "provider", "variant", "payloads"), LANGCHAIN_CASES)
def test_langchain_chunks_give_what_the_bytes_give(path: Path, provider: str, variant: str, payloads: Any) -> None:
    if path is None:
        require_captures()
    body = body_of(path, provider, variant, payloads)
    reference = fsm.reassemble(body, provider)
    chunks = list(langchain_stream(provider, Replay(body)))
    got = fsm.reassemble(chunks)
    if provider == "openai-chat":
        # LangChain reports usage in its own keys; its ChatOpenAI keeps no reasoning_content
        assert seen(got, usage=False, reasoning=False) == seen(reference, usage=False, reasoning=False)
        return
    # Responses through LangChain: its chunks carry the argument deltas, not the item ids. The
    # arguments a server sent in `.done` alone (LM Studio) only newer langchain-openai releases
    # carry (1.8.1 does, older ones did not): where its chunks hold none, the call comes out
    # empty, and says so.
    deltas = any(p.get("type") == "response.function_call_arguments.delta" for p in payloads)
    carried = any(part.get("args") for c in chunks for part in c.tool_call_chunks)
    assert [(c.id, c.name, c.status) for c in got.calls] == [(c.id, c.name, c.status) for c in reference.calls]
    # the finish in the provider's words, which LangChain's chunks hold only as the response's status
    assert (got.finish_reason, got.raw_finish_reason) == (reference.finish_reason, reference.raw_finish_reason)
    if deltas or carried:
        assert [c.arguments_json for c in got.calls] == [c.arguments_json for c in reference.calls]
        assert got.codes() == reference.codes()
    else:
        assert [c.arguments for c in got.complete_calls] == [{}] * len(got.complete_calls)
        assert "empty-arguments" in got.codes()


# -- the next turn, through the same client ---------------------------------------------------------------


def answer(call: fsm.ToolCall) -> dict[str, Any]:
    return {"tool": call.name, "ran": call.index}


def next_request(provider: str, result: fsm.Result, incomplete: str, *, genai_parts: bool = False) -> list[Any]:
    """The conversation an agent sends next: the ask, the assistant turn, the answers (with
    ``genai_parts``, Gemini's as google-genai's ``Part.from_function_response`` builds them)."""
    said = messages.assistant_message(result, provider, incomplete=incomplete)  # type: ignore[call-overload]
    conversation = [*ASK[provider], *(said if isinstance(said, list) else [said])]
    if genai_parts:
        types = pytest.importorskip("google.genai").types
        answers: list[Any] = [
            types.Part.from_function_response(name=c.name, response=answer(c)) for c in result.complete_calls
        ]
    else:
        answers = [messages.tool_result(c, answer(c), provider) for c in result.complete_calls]  # type: ignore[arg-type]
    if incomplete == "include":
        answers += messages.incomplete_answers(result, provider)  # type: ignore[arg-type]
    return conversation + messages.tool_results(answers, provider)  # type: ignore[arg-type]


def sent_calls(provider: str, body: list[dict[str, Any]]) -> list[tuple[str | None, str, Any]]:
    """(id, name, arguments) of every call the request body carries, in order."""
    if provider == "openai-chat":
        return [
            (c["id"], c["function"]["name"], c["function"]["arguments"])
            for m in body
            for c in m.get("tool_calls") or []
        ]
    if provider == "openai-responses":
        return [(i["call_id"], i["name"], i["arguments"]) for i in body if i.get("type") == "function_call"]
    if provider == "anthropic":
        return [
            (b["id"], b["name"], b["input"])
            for m in body
            if isinstance(m["content"], list)
            for b in m["content"]
            if b["type"] == "tool_use"
        ]
    return [
        (p["functionCall"].get("id"), p["functionCall"]["name"], p["functionCall"].get("args", {}))
        for m in body
        for p in m["parts"]
        if "functionCall" in p
    ]


def sent_answers(provider: str, body: list[dict[str, Any]]) -> list[tuple[str | None, Any]]:
    """(the id or, for an id-less Gemini response, the name it answers; the output) of every result."""
    if provider == "openai-chat":
        return [(m["tool_call_id"], m["content"]) for m in body if m["role"] == "tool"]
    if provider == "openai-responses":
        return [(i["call_id"], i["output"]) for i in body if i.get("type") == "function_call_output"]
    if provider == "anthropic":
        return [
            (b["tool_use_id"], b["content"])
            for m in body
            if isinstance(m["content"], list)
            for b in m["content"]
            if b["type"] == "tool_result"
        ]
    return [
        (p["functionResponse"].get("id") or p["functionResponse"]["name"], p["functionResponse"]["response"])
        for m in body
        for p in m["parts"]
        if "functionResponse" in p
    ]


def wire_arguments(provider: str, call: fsm.ToolCall) -> Any:
    """A call's arguments as its format carries them: text for OpenAI, an object elsewhere, where a
    call that did not complete goes as ``{}`` (only with incomplete="include", answered as not run)."""
    if provider in ("openai-chat", "openai-responses"):
        return call.arguments_json
    return call.arguments if call.status is fsm.CallStatus.COMPLETE else {}


def _answers_for(provider: str, result: fsm.Result, incomplete: str, genai_parts: bool) -> list[tuple[Any, Any]]:
    ran = [(c, answer(c)) for c in result.complete_calls]
    if incomplete == "include":
        ran += [(c, "not run") for c in messages.omitted(result)]
    if provider in ("openai-chat", "openai-responses", "anthropic"):
        return [(c.id, None) for c, _ in ran]
    return [(c.name if genai_parts or c.wire_id is None else c.id, None) for c, _ in ran]


TURNS = [pytest.param(*case.values, "omit", id=f"{case.id}-omit") for case in CASES] + [
    pytest.param(*case.values, "include", id=f"{case.id}-include")
    for case in CASES
    if case.values[2] in ("as-is", "cut")  # where calls can be cut, for incomplete="include" to answer
]


@pytest.mark.parametrize(("path", "provider", "variant", "payloads", "incomplete"), TURNS)
def test_the_next_turn_goes_through_the_same_sdk_with_every_call_paired(
    path: Path, provider: str, variant: str, payloads: Any, incomplete: str
) -> None:
    if path is None:
        require_captures()
    replay, client = client_for(provider, body_of(path, provider, variant, payloads))
    result = send(provider, client, ASK[provider])
    for genai_parts in (False, True) if provider == "gemini" else (False,):
        conversation = next_request(provider, result, incomplete, genai_parts=genai_parts)
        send(provider, client, conversation)  # the SDK takes the request: no validation error
        body = replay.sent[-1][BODY_FIELD[provider]]

        went = [c for c in result.calls if c.status is fsm.CallStatus.COMPLETE or incomplete == "include"]
        assert sent_calls(provider, body) == [
            (c.id if provider != "gemini" or c.wire_id else None, c.name, wire_arguments(provider, c)) for c in went
        ]
        if provider == "gemini":  # each signature goes back on its call, the same bytes
            signed = [p.get("thoughtSignature") for m in body for p in m["parts"] if "functionCall" in p]
            assert [_signature(s) for s in signed] == [_signature(c.thought_signature) for c in went]
        answered = [key for key, _ in sent_answers(provider, body)]
        assert answered == [key for key, _ in _answers_for(provider, result, incomplete, genai_parts)]
        # a cut call never goes as one that ran: left out, or (include) answered "not run"
        outputs = dict(sent_answers(provider, body))
        for call in messages.omitted(result):
            if incomplete == "omit":
                assert call.id not in json.dumps(body)
            else:
                assert "Not run" in json.dumps(outputs[call.id if provider != "gemini" or call.wire_id else call.name])
        report = history.check(body)
        # A turn that left nothing to send back (no text, every call cut and omitted) goes to Gemini as a
        # model content of no parts, which it refuses (gemini-cli#317): empty-message, the one finding,
        # which repair drops. OpenAI chat gets content "" there, which it takes (a null content without
        # tool_calls it refuses, vercel/ai#14950).
        bare = provider == "gemini" and not went and not result.text
        empty = [f.message for f in report.of(history.Kind.EMPTY_MESSAGE)]
        assert len(empty) == bare and all(f.kind is history.Kind.EMPTY_MESSAGE for f in report.findings), report
        # the user's own list too, google-genai Part objects and all
        assert history.check(conversation).rejected == bare
        fixed, changes = history.repair(body)
        assert [c.kind for c in changes] == ["dropped-empty-message"] * bare
        assert fixed == [m for at, m in enumerate(body, 1) if at not in empty]
        repaired_keeps_every_answer(provider, body)


def _answer_holders(provider: str, body: list[dict[str, Any]]) -> list[tuple[list[Any], int]]:
    """(the list holding it, its position) of every answer: a message in the body, or a block or part."""
    if provider in ("openai-chat", "openai-responses"):
        answer_of = {
            "openai-chat": lambda m: m.get("role") == "tool",
            "openai-responses": lambda m: m.get("type") == "function_call_output",
        }[provider]
        return [(body, i) for i, m in enumerate(body) if answer_of(m)]
    field, kind = ("content", "tool_result") if provider == "anthropic" else ("parts", "functionResponse")
    return [
        (m[field], j)
        for m in body
        if isinstance(m.get(field), list)
        for j, b in enumerate(m[field])
        if (b.get("type") == kind if provider == "anthropic" else kind in b)
    ]


def repaired_keeps_every_answer(provider: str, body: list[dict[str, Any]]) -> None:
    """Damage the history as agent loops do (an answer lost, another sent twice): repair gives a
    placeholder for the lost one, drops the second copy, and keeps every real answer once, paired."""
    damaged = json.loads(json.dumps(body))
    holders = _answer_holders(provider, damaged)
    if not holders:
        return
    answers = sent_answers(provider, body)
    first_list, first = holders[0]
    # An id-less Gemini response sent twice is, by the pairing rule, the answer to the next call of
    # its name: only a response with an id can be seen to be a second copy.
    twice = provider != "gemini" or "id" in first_list[first]["functionResponse"]
    if twice:
        first_list.insert(first + 1, json.loads(json.dumps(first_list[first])))
    lost = None
    if len(holders) > 1:
        last_list, last = holders[-1]
        last_list.pop(last + (twice and last_list is first_list))  # the insert moved it on by one
        lost = answers[-1]
    real = answers[:-1] if lost else answers

    fixed, changes = history.repair(damaged)

    assert not history.check(fixed).rejected
    after = sent_answers(provider, fixed)
    assert [a for a in after if a in real] == real  # each real answer once, in order, under its call's id
    placeholders = [key for key, output in after if (key, output) not in real]
    assert len(placeholders) == (lost is not None)
    if lost and provider != "gemini":  # a Gemini placeholder goes under the call's id, if it has one
        assert placeholders == [lost[0]]
    expected = {kind for kind, done in (("dropped-duplicate-result", twice), ("placeholder-result", lost)) if done}
    assert {c.kind for c in changes} == expected


@pytest.mark.parametrize(
    ("path", "provider", "variant", "payloads"), [c for c in CASES if c.values[0] is None or c.values[2] == "as-is"]
)
def test_two_turns_with_the_first_turns_ids_taken_pair_up(
    path: Path, provider: str, variant: str, payloads: Any
) -> None:
    if path is None:
        require_captures()
    replay, client = client_for(provider, body_of(path, provider, variant, payloads))
    first = send(provider, client, ASK[provider])
    conversation = next_request(provider, first, "include")
    second = send(provider, client, conversation, taken=messages.ids_sent(first))
    said = messages.assistant_message(second, provider, incomplete="include")  # type: ignore[call-overload]
    conversation += said if isinstance(said, list) else [said]
    answers = [messages.tool_result(c, answer(c), provider) for c in second.complete_calls]  # type: ignore[arg-type]
    conversation += messages.tool_results(answers + messages.incomplete_answers(second, provider), provider)  # type: ignore[arg-type]
    send(provider, client, conversation)

    body = replay.sent[-1][BODY_FIELD[provider]]
    assert not {c.id for c in first.calls} & {c.id for c in second.calls}
    report = history.check(body)
    # The same capture twice: a Responses turn's item ids come again (policy one-item-one-id), and repair settles them.
    assert {f.kind for f in report.findings} <= {history.Kind.DUPLICATE_ITEM}, report
    fixed, _ = history.repair(body)
    assert history.check(fixed).findings == () and history.repair(fixed) == (fixed, [])


@pytest.mark.parametrize(
    ("path", "provider", "variant", "payloads"),
    [c for c in CASES if c.values[0] is None or (c.values[1] == "openai-chat" and c.values[2] in ("as-is", "cut"))],
)
def test_langchain_sends_the_next_turn_paired(path: Path, provider: str, variant: str, payloads: Any) -> None:
    if path is None:
        require_captures()
    replay = Replay(body_of(path, provider, variant, payloads))
    model = langchain_model(provider, replay)
    result = fsm.reassemble(model.stream("go"))

    conversation = next_request(provider, result, "omit")
    list(model.stream(conversation))  # LangChain takes OpenAI-shaped dicts as its messages
    body = replay.sent[-1]["messages"]
    # it parses each call's arguments and writes them again: the same value, its own spacing
    assert [(i, n, json.loads(a)) for i, n, a in sent_calls(provider, body)] == [
        (c.id, c.name, c.arguments) for c in result.complete_calls
    ]
    assert sent_answers(provider, body) == sent_answers(provider, conversation)
    assert not history.check(body).rejected
    if messages.omitted(result):
        # a cut call's raw text is no JSON, and LangChain parses what it is given: keep the default, omit
        with pytest.raises(json.JSONDecodeError):
            list(model.stream(next_request(provider, result, "include")))


# -- fsm.history over the SDKs' own objects ---------------------------------------------------------------

OPENAI_CHAT = "openai_chat/openai-python-parallel-two-tools.sse"
RESPONSES = "openai_responses/pydantic-ai-responses-get-capital.sse"
ANTHROPIC = "anthropic/magentic-claude-3-opus-parallel-plus-minus.sse"
GEMINI = "gemini/adk-go-gemini-3-flash-preview-parallel-sum.sse"


def test_history_reads_the_sdks_own_message_objects() -> None:
    # What each SDK's docs append to the history: its own objects, not dicts.
    replay = Replay(OPENAI_CHAT)
    with openai_client(replay).chat.completions.stream(model="m", messages=ASK["openai-chat"]) as stream:
        said = stream.get_final_completion().choices[0].message  # a ParsedChatCompletionMessage
    chat = [*ASK["openai-chat"], said]
    chat += [{"role": "tool", "tool_call_id": c.id, "content": "done"} for c in said.tool_calls or ()]

    replay = Replay(RESPONSES)
    with openai_client(replay).responses.stream(model="m", input="go") as stream:
        output = stream.get_final_response().output  # ResponseFunctionToolCall items among them
    items = [*ASK["openai-responses"], *output]
    items += [
        {"type": "function_call_output", "call_id": o.call_id, "output": "Paris"}
        for o in output
        if o.type == "function_call"
    ]

    anthropic = pytest.importorskip("anthropic")
    replay = Replay(ANTHROPIC, anthropic_http())
    client = anthropic.Anthropic(api_key="test", base_url="http://mock", http_client=replay.client())
    with client.messages.stream(model="m", max_tokens=64, messages=ASK["anthropic"]) as stream:
        blocks = stream.get_final_message().content  # ToolUseBlock objects, in a message dict
    answers = [{"type": "tool_result", "tool_use_id": b.id, "content": "3"} for b in blocks if b.type == "tool_use"]
    claude = [*ASK["anthropic"], {"role": "assistant", "content": blocks}, {"role": "user", "content": answers}]

    types = pytest.importorskip("google.genai").types
    result = fsm.reassemble(Replay(GEMINI).body, "gemini")
    model_turn = types.Content.model_validate(messages.assistant_message(result, "gemini"))
    parts = [types.Part.from_function_response(name=c.name, response={"sum": 1}) for c in result.calls]
    gemini = [types.Content(role="user", parts=[types.Part(text="go")]), model_turn, {"role": "user", "parts": parts}]

    for conversation, fmt in ((chat, "openai"), (items, "responses"), (claude, "anthropic"), (gemini, "gemini")):
        report = history.check(conversation)
        assert report.format == fmt and report.findings == ()
        fixed, changes = history.repair(conversation)
        assert changes == [] and len(fixed) == len(conversation)
        # unanswered, the same objects are found dangling and repaired with a placeholder
        unanswered = (
            conversation[:-1]
            if fmt != "responses"
            else [i for i in conversation if not isinstance(i, dict) or i.get("type") != "function_call_output"]
        )
        assert history.anything_dangling(unanswered)
        fixed, changes = history.repair(unanswered)
        assert {c.kind for c in changes} == {"placeholder-result"} and not history.check(fixed).rejected


def test_history_refuses_langchain_messages_naming_the_converter() -> None:
    langchain_messages = pytest.importorskip("langchain_core.messages")
    said = langchain_messages.AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c1"}])

    with pytest.raises(fsm.LocalProtocolError, match=r"message 2: .*LangChain AIMessage.*convert_to_openai_messages"):
        history.check([{"role": "user", "content": "go"}, said])
    with pytest.raises(fsm.LocalProtocolError, match=r"message 1: a message must be an object, not object"):
        history.repair([object()])


# -- LiteLLM, boto3, and a last event cut part-way ---------------------------------------------------------


LITELLM_CASES = [c for c in CASES if c.values[0] is not None and c.values[1:3] == ("openai-chat", "as-is")]


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
def test_litellm_chunks_give_what_the_bytes_give(offline_litellm: Any) -> None:
    if not LITELLM_CASES:
        require_captures()
    for case in LITELLM_CASES:
        path, provider, variant, payloads = case.values
        body = body_of(path, provider, variant, payloads)
        reference = fsm.reassemble(body, provider)
        client = openai_client(Replay(body))
        stream = offline_litellm.completion(model="openai/m", messages=ASK[provider], stream=True, client=client)
        if reference.finish_reason is None:
            # LiteLLM refuses a stream that ends without a finish reason (Kimi through OpenRouter)
            with pytest.raises(Exception, match="finish_reason"):
                fsm.reassemble(stream)
            continue
        got = fsm.reassemble(stream)
        # LiteLLM turns a `stop` that came with calls into `tool_calls` itself, so nothing is mapped here
        assert seen(got, usage=False) == _without(seen(reference, usage=False), "finish-reason-mapped"), case.id


def test_an_sdk_drops_a_last_event_cut_part_way() -> None:
    """Cut inside its last event, a stream read by openai's or Anthropic's SDK simply ends one event
    early (the bytes path also reports `cut-event`); google-genai raises on the piece of JSON."""
    require_captures()
    for capture, provider in ((OPENAI_CHAT, "openai-chat"), (ANTHROPIC, "anthropic"), (GEMINI, "gemini")):
        whole = Replay(capture).body
        last = whole.rstrip().rfind(b"data:")
        body = whole[: last + (len(whole) - last) // 2]
        reference = fsm.reassemble(body, provider)
        assert "cut-event" in reference.codes()
        _, client = client_for(provider, body)
        if provider == "gemini":
            errors = pytest.importorskip("google.genai.errors")
            with pytest.raises(errors.UnknownApiResponseError):
                send(provider, client, ASK[provider])
            continue
        assert seen(send(provider, client, ASK[provider])) == _without(seen(reference), "cut-event")


def converse_client(body: bytes, operation: str = "ConverseStream") -> Any:
    """boto3's own bedrock-runtime client, its ``operation`` answered with ``body`` (in 512-byte reads)."""
    boto3 = pytest.importorskip("boto3")
    from botocore.awsrequest import AWSResponse

    class Raw:
        def close(self) -> None:
            pass

        def stream(self, **_: Any) -> Iterator[bytes]:
            yield from (body[i : i + 512] for i in range(0, len(body), 512))

    client = boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b")
    client.meta.events.register(
        f"before-send.bedrock-runtime.{operation}",
        lambda request, **_: AWSResponse(
            request.url, 200, {"content-type": "application/vnd.amazon.eventstream"}, Raw()
        ),
    )
    return client


def test_boto3_converse_stream_events_give_what_the_bytes_give() -> None:
    require_captures()
    body = (CAPTURES / "bedrock/pydantic-ai-nova-micro-text-then-tool.eventstream").read_bytes()
    client = converse_client(body)
    response = client.converse_stream(modelId="m", messages=[{"role": "user", "content": [{"text": "go"}]}])

    assert seen(fsm.reassemble(response["stream"])) == seen(fsm.reassemble(body, "bedrock"))


def test_sdk_objects_are_read_without_serializer_warnings() -> None:
    # openai's responses.stream() ends with a response whose output holds ParsedResponseOutputMessage,
    # which its own union does not name: dumping it warned on every stream, a noise no caller can act on.
    require_captures()
    body = cv.render(cv.events(CAPTURES / "openai_responses/vercel-lmstudio-glm-done-without-deltas.jsonl"), "")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = fsm.reassemble(openai_client(Replay(body)).responses.stream(model="m", input="go"))
    assert [c.arguments for c in result.calls] == [{"location": "San Francisco"}]
