"""Audit of the next turn built from a Result whose places are odd: results read back from JSON or
built by callers (duplicate places, places past the parts, negative, None among ints, a text part and
a call at one output index, places of the wrong type, a dict where a part belongs), huge counts and
megabyte texts; and the same next turn however the stream was read (whole, 1 and 7 bytes at a time,
the Result round-tripped through fsm.serialize), over every capture and conformance vector.

Each builder gives every part and call exactly once, in the order the messages docstring states, or
raises InvalidInput naming the field; never another exception."""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from typing import Any

import attrs
import pytest

from fsm import Reassembler, messages
from fsm.errors import InvalidInput, LocalProtocolError, ToolcallFSMError
from fsm.events import TextDelta
from fsm.fieldcheck import fault
from fsm.history import check
from fsm.messages.gemini_code import DUMMY_SIGNATURE
from fsm.results import CallStatus, Reasoning, Result, TextPart, ToolCall
from fsm.serialize import converter, result_to_json
from tests.conftest import captures
from tests.test_messages import validate

PLACED = ("gemini", "anthropic", "openai-responses")
"""The formats that order a turn by its places: Gemini's ``place``, Claude's and Responses' ``output_index``."""


def call(n: int, **fields: Any) -> ToolCall:
    made = ToolCall(n, f"c{n}", f"c{n}", "f", {"n": n}, json.dumps({"n": n}), CallStatus.COMPLETE)
    return attrs.evolve(made, **fields)


def result(provider: str = "gemini", **fields: Any) -> Result:
    return Result(provider, "tool_calls", fields.pop("calls", ()), (), **fields)


def read_back(made: Result) -> Result:
    """The result as JSON text and back through the converter, as a caller who stored it reads it."""
    back: Result = converter().structure(json.loads(json.dumps(result_to_json(made))), Result)
    return back


def sent_ids(body: Any, format: str) -> list[str]:
    items = body if format == "openai-responses" else body["content"] if format == "anthropic" else body["parts"]
    ids = []
    for item in items:
        if "functionCall" in item:
            ids.append(item["functionCall"]["id"])
        elif item.get("type") in ("tool_use", "function_call"):
            ids.append(item.get("id") or item["call_id"])
    return ids


def said(body: Any, format: str) -> list[str]:
    """The texts of the parts, blocks or items that are no call, in the order they go back."""
    if format == "gemini":
        return [part["text"] for part in body["parts"] if "text" in part]
    if format == "anthropic":
        return [b.get("text", b.get("thinking")) for b in body["content"] if b["type"] != "tool_use"]
    return [
        item["id"] if item["type"] == "reasoning" else item["content"]
        for item in body
        if item["type"] != "function_call"
    ]


# -- a call or text the Gemini builder lost ------------------------------------------------------------


def test_gemini_sends_both_calls_that_share_an_index() -> None:
    """ToolCall.index is the call's position, but a result read back or built by hand may repeat
    one: the Gemini builder keyed the calls by it, so the second call stood in for the first, which
    was lost. Calls now take their places by their position in ``result.calls``."""
    twins = result(
        calls=(call(0), call(0, id="x", wire_id="x", arguments={"n": 9})), reasoning=(Reasoning("t", place=1),)
    )
    for made in (twins, read_back(twins)):
        parts = messages.assistant_message(made, "gemini")["parts"]
        assert parts == [
            {"functionCall": {"name": "f", "args": {"n": 0}, "id": "c0"}, "thoughtSignature": DUMMY_SIGNATURE},
            {"text": "t", "thought": True},
            {"functionCall": {"name": "f", "args": {"n": 9}, "id": "x"}},
        ]
    same = call(1)  # one object twice: two calls all the same
    assert sent_ids(messages.assistant_message(result(calls=(same, same)), "gemini"), "gemini") == ["c1", "c1"]


def test_gemini_text_that_came_in_no_part_goes_back_whole() -> None:
    """A decoded TextDelta fed without its part (or a result whose parts do not hold all its text)
    left text out of the Gemini message: only the parts went back. As for Claude, the text now goes
    back whole, at the first part's place, with the latest signature."""
    r = Reassembler("gemini")
    r.feed({"candidates": [{"content": {"parts": [{"text": "Hello ", "thoughtSignature": "S1"}]}}]})
    r.feed(TextDelta("world"))
    r.feed({"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": {}}}]}}]})
    r.feed({"candidates": [{"content": {"parts": [{"text": "!"}]}, "finishReason": "STOP"}]})
    streamed = r.close()
    assert streamed.text == "Hello world!"
    assert [part.text for part in streamed.text_parts] == ["Hello ", "!"]
    parts = messages.assistant_message(streamed, "gemini", dummy_signature=False)["parts"]  # the wire's signatures
    assert parts == [{"text": "Hello world!", "thoughtSignature": "S1"}, {"functionCall": {"name": "f", "args": {}}}]
    by_hand = result(calls=(call(0),), text="hello world", text_parts=(TextPart("hello", place=1),))
    assert messages.assistant_message(by_hand, "gemini")["parts"] == [
        {"functionCall": {"name": "f", "args": {"n": 0}, "id": "c0"}, "thoughtSignature": DUMMY_SIGNATURE},
        {"text": "hello world"},
    ]


# -- fields a builder cannot read ------------------------------------------------------------------------

UNREADABLE = [
    (dict(calls=({"id": "x"},)), r"result.calls\[0\] must be a ToolCall, not dict"),
    (dict(reasoning=({"text": "t"},)), r"result.reasoning\[0\] must be a Reasoning, not dict"),
    (dict(text="a", text_parts=({"text": "a"},)), r"result.text_parts\[0\] must be a TextPart, not dict"),
    (dict(text=5), "result.text must be a str, not int"),
    (dict(reasoning=(Reasoning(5, signature="s"),)), r"result.reasoning\[0\].text must be a str, not int"),
    (dict(text="a", text_parts=(TextPart(b"a"),)), r"result.text_parts\[0\].text must be a str, not bytes"),  # type: ignore[arg-type]
    (dict(calls=(call(0, output_index="1"), call(1, output_index=0))), r"calls\[0\].output_index must be an int"),
    (dict(reasoning=(Reasoning("t", place="1"), Reasoning("u", place=0))), r"reasoning\[0\].place must be an int"),
    (
        dict(reasoning=(Reasoning("t", output_index=1.5),)),
        r"reasoning\[0\].output_index must be an int or None, not float",
    ),
    (
        dict(text="a", text_parts=(TextPart("a", place=True),)),
        r"text_parts\[0\].place must be an int or None, not bool",
    ),
    (dict(text="a", text_parts=(TextPart("a", output_index=float("nan")),)), r"text_parts\[0\].output_index must"),
    (dict(text="a", text_output_index="0"), "result.text_output_index must be an int or None, not str"),
    (dict(reasoning=(Reasoning("t", signature=7),)), r"result.reasoning\[0\].signature must be a str or None, not int"),
    (dict(reasoning=(Reasoning("t", redacted=b"x"),)), r"result.reasoning\[0\].redacted must be a str or None"),
    (dict(reasoning=(Reasoning("t", item_id=1, summary=("s",)),)), r"result.reasoning\[0\].item_id must be a str"),
    (
        dict(reasoning=(Reasoning("t", item_id="rs", summary=(1,)),)),
        r"result.reasoning\[0\].summary\[0\] must be a str, not int",
    ),
    (dict(text="a", text_signature=["S"]), "result.text_signature must be a str or None, not list"),
    (dict(text="a", text_parts=(TextPart("a", signature={"s": 1}),)), r"text_parts\[0\].signature must be a str"),
    (dict(text="a", text_parts=(TextPart("a", item_id=7),)), r"text_parts\[0\].item_id must be a str or None"),  # type: ignore[arg-type]
    (dict(text="a", text_parts=(TextPart("a", status=["done"]),)), r"text_parts\[0\].status must be a str or None"),  # type: ignore[arg-type]
    (dict(calls=(call(0, thought_signature=5),)), r"result.calls\[0\].thought_signature must be a str or None"),
    (dict(calls=(call(0, id=5),)), r"result.calls\[0\].id must be a str, not int"),
    # once unchecked: sent out as they were, or (a shell_call's item) TypeError from the Responses builder
    (dict(calls=(call(0, name=5),)), r"result.calls\[0\].name must be a str or None, not int"),
    (dict(calls=(call(0, arguments_json=b"{}"),)), r"result.calls\[0\].arguments_json must be a str or None"),
    (dict(calls=(call(0, type="shell_call", item=[1]),)), r"result.calls\[0\].item must be a dict or None, not list"),
    (dict(calls=[call(0)]), r"result.calls must be a tuple of ToolCall, not list"),
]


@pytest.mark.parametrize("format", messages.FORMATS)
@pytest.mark.parametrize(("fields", "named"), UNREADABLE, ids=[f"{n}" for n in range(len(UNREADABLE))])
def test_a_field_no_builder_can_read_is_invalid_input_naming_it(
    format: str, fields: dict[str, Any], named: str
) -> None:
    """Before: AttributeError ('dict' object has no attribute 'status'), TypeError ('<' not
    supported between 'int' and 'str') or a float place sorted where no part was; now every format
    refuses it alike, naming the field, however the builder would have read it."""
    odd = result(**fields)
    for build in (
        lambda: messages.assistant_message(odd, format),  # type: ignore[call-overload]
        lambda: messages.incomplete_answers(odd, format),  # type: ignore[arg-type]
        lambda: messages.omitted(odd),
    ):
        with pytest.raises(InvalidInput, match=named):
            build()


# -- odd places: every part and call once, in the documented order ----------------------------------------


def _odd(provider: str) -> dict[str, Result]:
    key = "place" if provider == "gemini" else "output_index"
    r, t = (
        (lambda text, at, **kw: Reasoning(text, signature="s", item_id=f"rs_{text}", **{key: at}, **kw)),
        (lambda text, at: TextPart(text, **{key: at})),
    )
    c = (lambda n, at: call(n)) if provider == "gemini" else (lambda n, at: call(n, output_index=at))
    text_at = {} if provider == "gemini" else {"text_output_index": 0}
    return {
        "duplicate": result(
            provider,
            calls=(c(0, 0), c(1, 0)),
            reasoning=(r("t0", 0), r("t1", 0)),
            text="ab",
            text_parts=(t("a", 0), t("b", 0)),
            **text_at,
        ),
        "past-the-end": result(
            provider, calls=(c(0, 1),), reasoning=(r("t", 99),), text="a", text_parts=(t("a", 50),), **text_at
        ),
        "negative": result(
            provider, calls=(c(0, -5),), reasoning=(r("t", -3),), text="a", text_parts=(t("a", -1),), **text_at
        ),
        "none-among-ints": result(
            provider,
            calls=(c(0, None), c(1, 2)),
            reasoning=(r("t", None), r("u", 1)),
            text="ab",
            text_parts=(t("a", None), t("b", 3)),
            **text_at,
        ),
        "text-and-call-at-one-index": result(
            provider, calls=(c(0, 1),), reasoning=(r("t", 1),), text="hi", text_parts=(t("hi", 1),), text_output_index=1
        ),
    }


ORDERS = {
    # Gemini: parts without a place first; placed parts by place (thoughts before text at one place),
    # each call taking the next place no part holds, calls left over last.
    ("gemini", "duplicate"): ["t0", "t1", "a", "b", "c0", "c1"],
    ("gemini", "past-the-end"): ["c0", "a", "t"],
    ("gemini", "negative"): ["t", "a", "c0"],
    ("gemini", "none-among-ints"): ["t", "a", "c0", "u", "c1", "b"],
    ("gemini", "text-and-call-at-one-index"): ["c0", "t", "hi"],
    # Claude and Responses: by output index; at one index reasoning, then text, then calls; an item
    # without a place right after the one built before it.
    ("anthropic", "duplicate"): ["t0", "t1", "a", "b", "c0", "c1"],
    ("anthropic", "past-the-end"): ["c0", "a", "t"],
    ("anthropic", "negative"): ["c0", "t", "a"],
    ("anthropic", "none-among-ints"): ["t", "ab", "c0", "u", "c1"],  # a part without a place: the text whole
    ("anthropic", "text-and-call-at-one-index"): ["t", "hi", "c0"],
    ("openai-responses", "duplicate"): ["rs_t0", "rs_t1", "a", "b", "c0", "c1"],  # a message item per text part
    ("openai-responses", "past-the-end"): ["c0", "a", "rs_t"],
    ("openai-responses", "negative"): ["c0", "rs_t", "a"],
    ("openai-responses", "none-among-ints"): ["rs_t", "ab", "c0", "rs_u", "c1"],
    ("openai-responses", "text-and-call-at-one-index"): ["rs_t", "hi", "c0"],
}


@pytest.mark.parametrize("format", PLACED)
@pytest.mark.parametrize(
    "case", ["duplicate", "past-the-end", "negative", "none-among-ints", "text-and-call-at-one-index"]
)
def test_odd_places_give_every_part_and_call_once_in_the_documented_order(format: str, case: str) -> None:
    made = _odd(format)[case]
    body = messages.assistant_message(made, format)  # type: ignore[call-overload]
    assert body == messages.assistant_message(read_back(made), format)  # type: ignore[call-overload]
    assert Counter(sent_ids(body, format)) == Counter(c.id for c in made.calls)
    items = body if format == "openai-responses" else body["content"] if format == "anthropic" else body["parts"]
    order = []
    for item in items:
        ids = sent_ids([item] if format == "openai-responses" else {"content": [item], "parts": [item]}, format)
        order += ids or said([item] if format == "openai-responses" else {"content": [item], "parts": [item]}, format)
    assert order == ORDERS[(format, case)]


def _responses_turn() -> list[dict[str, Any]]:
    """reasoning, message (a preamble), function_call, twice over, as the Responses wire streams them."""
    events: list[dict[str, Any]] = []
    for k, at in ((0, 0), (1, 3)):
        reasoning = {"type": "reasoning", "id": f"rs_{k}", "summary": [], "encrypted_content": f"E{k}"}
        events += [
            {
                "type": "response.output_item.added",
                "output_index": at,
                "item": {**reasoning, "encrypted_content": None},
            },
            {"type": "response.output_item.done", "output_index": at, "item": reasoning},
            {
                "type": "response.output_item.added",
                "output_index": at + 1,
                "item": {"type": "message", "id": f"msg_{k}"},
            },
            {
                "type": "response.output_text.delta",
                "output_index": at + 1,
                "item_id": f"msg_{k}",
                "delta": f"Step {k}. ",
            },
        ]
        call = {"type": "function_call", "id": f"fc_{k}", "call_id": f"call_{k}", "name": "f", "arguments": "{}"}
        events += [
            {"type": "response.output_item.added", "output_index": at + 2, "item": {**call, "arguments": ""}},
            {"type": "response.output_item.done", "output_index": at + 2, "item": {**call, "status": "completed"}},
        ]
    return [*events, {"type": "response.completed", "response": {"status": "completed"}}]


def test_each_responses_message_goes_back_in_its_place_and_the_history_reads_one_turn() -> None:
    """The API pairs a reasoning item with the item after it: rs_1 was followed by its message
    (msg_1), but all the text went back as one message at the first one's place, so rs_1 came
    back followed by the call. Each message item is now a text part with its output_index and goes
    back in its place; and fsm.history read an assistant message among the calls as the end of
    the turn (the calls before it dangling, their outputs orphans): it is part of the turn."""
    r = Reassembler("openai-responses")
    for event in _responses_turn():
        r.feed(event)
    made = r.close()
    assert [(p.text, p.output_index) for p in made.text_parts] == [("Step 0. ", 1), ("Step 1. ", 4)]
    items = messages.assistant_message(made, "openai-responses")
    assert [(i["type"], i.get("id") or i.get("content") or i.get("call_id")) for i in items] == [
        ("reasoning", "rs_0"),
        ("message", "Step 0. "),
        ("function_call", "fc_0"),
        ("reasoning", "rs_1"),
        ("message", "Step 1. "),
        ("function_call", "fc_1"),
    ]
    outputs = [messages.tool_result(call, "ok", "openai-responses") for call in made.calls]
    validate("openai-responses", items, outputs)  # each item as openai's ResponseInputItemParam takes it
    history = [{"role": "user", "content": "go"}, *items, *outputs]
    assert check(history).findings == ()
    for item in ({"role": "assistant", "content": "Step 1. "}, {"type": "message", "role": "assistant", "content": []}):
        assert check([*history[:5], item, *history[6:]]).findings == ()  # an easy input message, a typed one
    late = [*history, {"type": "message", "role": "assistant", "content": "Done."}]
    assert check(late).findings == ()  # after the outputs: the next turn's
    cut = [*history[:-2], {"role": "user", "content": "stop"}, *history[-2:]]
    # A user message before the outputs: they still answer the calls, but go before it (result-after-text).
    assert {f.kind.value for f in check(cut).findings} == {"result-after-text"}
    assert {f.kind.value for f in check([*cut[:-2], late[-1], *cut[-2:]]).findings} == {"dangling", "orphan"}


# -- the turn read back by fsm.history --------------------------------------------------------------------------


def test_drop_call_repair_keeps_a_gemini_call_whose_part_carries_the_signature() -> None:
    """Gemini signs the first call of a step and wants the signature back on that part: repair with
    dangling="drop-call" dropped it, leaving the step's next call first and unsigned (Gemini 3
    refuses: "Function call is missing a thought_signature"). A signed call now gets a placeholder
    instead; an unsigned one is still dropped."""
    from fsm.history import RepairPolicy, repair

    signed = call(0, thought_signature="SIG")
    made = result(calls=(signed, call(1), call(2)), reasoning=(Reasoning("plan", signature="T", place=0),))
    turn = messages.assistant_message(made, "gemini")
    answers = messages.tool_results([messages.tool_result(made.calls[2], "ok", "gemini")], "gemini")
    history = [{"role": "user", "parts": [{"text": "go"}]}, turn, *answers]
    fixed, changes = repair(history, RepairPolicy(dangling="drop-call"))
    assert fixed[1]["parts"] == [turn["parts"][0], turn["parts"][1], turn["parts"][3]]  # c1 dropped, c0 kept signed
    assert fixed[1]["parts"][1]["thoughtSignature"] == "SIG"
    assert [(c.kind, c.id) for c in changes] == [("placeholder-result", "c0"), ("dropped-call", "c1")]
    assert [p["functionResponse"]["id"] for p in fixed[2]["parts"]] == ["c2", "c0"]
    assert not check(fixed).rejected
    assert repair(fixed, RepairPolicy(dangling="drop-call")) == (fixed, [])


# -- huge counts, megabytes ----------------------------------------------------------------------------------


def _huge(format: str, n: int) -> Result:
    calls = tuple(call(i, output_index=3 * i + 2) for i in range(n))
    text = "".join(f"x{i}" for i in range(n))
    if format == "gemini":
        reasoning = tuple(Reasoning(f"t{i}", signature="s", place=3 * i) for i in range(n))
        parts = tuple(TextPart(f"x{i}", signature="s", place=3 * i + 1) for i in range(n))
        return result(calls=calls, reasoning=reasoning, text=text, text_parts=parts)
    reasoning = tuple(Reasoning(f"t{i}", signature="s", item_id=f"rs{i}", output_index=3 * i) for i in range(n))
    parts = tuple(TextPart(f"x{i}", output_index=3 * i + 1) for i in range(n))
    return result(format, calls=calls, reasoning=reasoning, text=text, text_parts=parts, text_output_index=1)


@pytest.mark.parametrize("format", messages.FORMATS)
def test_a_hundred_thousand_parts_and_calls_go_back_each_once_in_order(format: str) -> None:
    n = 100_000
    made = _huge(format, n)
    body = messages.assistant_message(made, format)  # type: ignore[call-overload]
    if format in PLACED:
        items = body if format == "openai-responses" else body["content"] if format == "anthropic" else body["parts"]
        assert len(items) == 3 * n  # a part, block or item each
        assert sent_ids(body, format) == [f"c{i}" for i in range(n)]
        kinds = ["thought" in i or i.get("type") in ("thinking", "reasoning") for i in items[:6]]
        assert kinds == [True, False, False, True, False, False]  # thought, text, call, thought, ...
    elif format == "bedrock":  # Converse's stream gives no places: reasoning, the text, the calls
        uses = [block["toolUse"]["toolUseId"] for block in body["content"] if "toolUse" in block]
        assert uses == [f"c{i}" for i in range(n)]
    else:
        assert len(body["tool_calls"]) == n


@pytest.mark.parametrize("format", messages.FORMATS)
def test_ten_thousand_calls_answered_read_back_as_a_clean_history(format: str) -> None:
    """fsm.history reads the turn back: every call paired with its answer, thoughts and text between."""
    made = _huge(format, 10_000)
    body = messages.assistant_message(made, format)  # type: ignore[call-overload]
    answers = [messages.tool_result(c, "ok", format) for c in made.calls]  # type: ignore[arg-type]
    history = [*(body if isinstance(body, list) else [body]), *messages.tool_results(answers, format)]  # type: ignore[arg-type]
    ask = {"role": "user", "parts": [{"text": "go"}]} if format == "gemini" else {"role": "user", "content": "go"}
    if format == "bedrock":
        ask = {"role": "user", "content": [{"text": "go"}]}
        with pytest.raises(LocalProtocolError, match="message 2: a Bedrock Converse block in an Anthropic history"):
            check([ask, *history], format="anthropic")
    report = check([ask, *history])
    assert report.findings == () and report.format == {"cohere": "openai", "openai-chat": "openai"}.get(
        format, format.removeprefix("openai-")
    )


def test_megabyte_texts_and_signatures_go_back_unchanged() -> None:
    big = "y" * (1 << 20)
    sig = "S" * (1 << 20)
    gemini = result(
        calls=(call(0),),
        reasoning=(Reasoning(big, signature=sig, place=0),),
        text=big,
        text_signature=sig,
        text_parts=(TextPart(big, signature=sig, place=2),),
    )
    assert messages.assistant_message(gemini, "gemini", dummy_signature=False)["parts"] == [
        {"text": big, "thought": True, "thoughtSignature": sig},
        {"functionCall": {"name": "f", "args": {"n": 0}, "id": "c0"}},
        {"text": big, "thoughtSignature": sig},
    ]
    claude = result(
        "anthropic",
        calls=(call(0, output_index=1),),
        reasoning=(Reasoning(big, signature=sig, output_index=0),),
        text=big,
        text_parts=(TextPart(big, output_index=2),),
        text_output_index=2,
    )
    assert messages.assistant_message(claude, "anthropic")["content"] == [
        {"type": "thinking", "thinking": big, "signature": sig},
        {"type": "tool_use", "id": "c0", "name": "f", "input": {"n": 0}},
        {"type": "text", "text": big},
    ]


# -- the same next turn however the stream was read --------------------------------------------------------


def _read(data: bytes, provider: str, step: int, **options: Any) -> Result:
    r = Reassembler(provider, **options)
    try:
        for at in range(0, len(data), step):
            r.feed_bytes(data[at : at + step])
    except ToolcallFSMError:
        pass  # the result so far, as close() gives it (stream-failed)
    try:
        return r.close()
    except ToolcallFSMError:
        return r.close()


def next_turns(made: Result) -> dict[tuple[str, str], Any]:
    """Every format's next turn (with incomplete calls left out and kept), or the error it raised."""
    turns: dict[tuple[str, str], Any] = {}
    for format in messages.FORMATS:
        for incomplete in ("omit", "include"):
            try:
                body = messages.assistant_message(made, format, incomplete=incomplete)  # type: ignore[call-overload]
                turns[format, incomplete] = (body, messages.incomplete_answers(made, format))  # type: ignore[arg-type]
            except ToolcallFSMError as exc:
                turns[format, incomplete] = (type(exc).__name__, str(exc))
    return turns


def _streams() -> list[Any]:
    from fsm.harness.captures import PROVIDER_OF_SHAPE
    from fsm.harness.conformance import _policies
    from fsm.harness.vectors import load_vectors

    found = []
    for path in captures():
        if not path.name.endswith(".decoded.jsonl"):  # the .eventstream beside it is the wire
            found.append(pytest.param(path.read_bytes(), PROVIDER_OF_SHAPE[path.parent.name], {}, id=path.name))
    for vector in load_vectors():
        events = [json.dumps(e).encode() for e in vector.events]
        body = vector.body.encode() if vector.body is not None else b"".join(b"data: " + e + b"\n\n" for e in events)
        found.append(pytest.param(body, vector.shape, {"policies": _policies(vector)}, id=vector.name))
    return found


@pytest.mark.parametrize(("data", "provider", "options"), _streams())
def test_the_next_turn_is_the_same_however_the_stream_was_read(
    data: bytes, provider: str, options: dict[str, Any]
) -> None:
    whole = _read(data, provider, max(1, len(data)), **options)
    want = next_turns(whole)
    for step in (1, 7):
        made = _read(data, provider, step, **options)
        assert next_turns(made) == want
        assert fault(made, Result) is None  # the builders take the Reassembler's result unread (vouch)
    assert fault(whole, Result) is None
    stored = result_to_json(whole)
    with contextlib.suppress(TypeError):  # a Decimal (a number no float holds): no JSON text, the converter takes it
        stored = json.loads(json.dumps(stored))
    assert next_turns(converter().structure(stored, Result)) == want


def ahead_of_left_out(reasoning: Reasoning, made: Result, incomplete: str) -> bool:
    """Is the reasoning item right before a call the Responses next turn leaves out (nothing that
    goes back at the next output index, through a run of reasoning items)? It goes too."""
    at = reasoning.output_index
    while at is not None:
        after = [c for c in made.calls if c.output_index == at + 1]
        if any(c.status is CallStatus.COMPLETE or incomplete == "include" for c in after):
            return False  # an item that goes back follows it (a place shared by hand)
        if any(p.output_index == at + 1 for p in made.text_parts):
            return False
        if after:
            return True
        at = at + 1 if any(r.output_index == at + 1 for r in made.reasoning) else None
    return False


def test_random_odd_results_give_every_call_and_text_once_and_the_same_read_back() -> None:
    """2000 results of random places (None, negative, repeated, far past the parts), indexes shared
    by calls, parts whose text may not add up to the text, incomplete calls: every builder gives
    each call it sends once, every thought, text part (or, where the parts do not hold all the text,
    the text whole) once, and the same body for the result read back through fsm.serialize."""
    import random

    rng = random.Random(13)

    def place() -> int | None:
        return rng.choice([None, -2, 0, 1, 2, 3, 9, 10**12])

    for _ in range(2000):
        calls = tuple(
            call(rng.choice([n, 0]), id=f"c{n}", output_index=place(), status=rng.choice(list(CallStatus)))
            for n in range(rng.randint(0, 4))
        )
        reasoning = tuple(
            Reasoning(f"t{n}", signature="s", item_id=f"rs{n}", output_index=place(), place=place())
            for n in range(rng.randint(0, 3))
        )
        parts = tuple(TextPart(rng.choice(["", f"x{n}"]), output_index=place(), place=place()) for n in range(3))
        text = rng.choice(["".join(p.text for p in parts), "".join(p.text for p in parts) + "!"])
        gemini = result(calls=calls, reasoning=reasoning, text=text, text_parts=parts, text_output_index=place())
        for format in PLACED:
            # Claude reads its own signatures alone (policy signature-by-origin): its thoughts are Claude's there
            made = attrs.evolve(gemini, provider="anthropic") if format == "anthropic" else gemini
            # Gemini places every part; Claude and Responses those with an output index
            held = [p.text for p in parts if p.text and (format == "gemini" or p.output_index is not None)]
            texts = held if held and "".join(held) == text else [text] if text else []
            for incomplete in ("omit", "include"):
                body = messages.assistant_message(made, format, incomplete=incomplete)  # type: ignore[call-overload]
                assert body == messages.assistant_message(read_back(made), format, incomplete=incomplete)  # type: ignore[call-overload]
                sent = [c.id for c in made.calls if incomplete == "include" or c.status is CallStatus.COMPLETE]
                assert Counter(sent_ids(body, format)) == Counter(sent)
                said_back = said(body, format)
                thoughts = [t for t in said_back if t.startswith(("t", "rs"))]
                assert Counter(thoughts) == Counter(
                    r.item_id if format == "openai-responses" else r.text
                    for r in reasoning
                    if format != "openai-responses" or not ahead_of_left_out(r, made, incomplete)
                )
                assert Counter(t for t in said_back if t not in thoughts) == Counter(texts), (format, made)
