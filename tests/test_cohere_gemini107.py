"""Cohere and Gemini-chain leftovers (task 107).

Cohere's decoder kept only the text of a content piece holding both ``text`` and ``thinking`` (the
SDK's delta and start types have a field for each), the thinking lost without a word: both are kept
now, the thinking first (policy cohere-thinking-beside-text), by decode() and its shortcut alike.
Cohere's next turn left a tool plan with no calls out without a word (policy cohere-plan-without-calls:
it is text now), and sent another provider's reasoning without a content index as Cohere's own plan
(policy cohere-foreign-reasoning: thinking items now).

Gemini's ``willContinue`` chains: a chain's response sent in a model content while its chain began
in the user's was read past, no finding, and repair left the ``functionResponse`` in the model's
content; it is a ``misplaced-result`` now, and repair moves it right after the response of its
chain before it (policy chain-response-in-the-model-content). Responses without ids do not chain
(policy id-less-responses-unchained): each pairs by name and order, as before, now a named rule."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fsm import Reassembler, Result, history, messages
from fsm.results import CallStatus, Reasoning, ToolCall
from fsm.wire.decoders.cohere import CohereDecoder
from tests.test_cohere_thinking import fed
from tests.test_will_continue104 import ASK, holds_for, model, repaired, resp, sent, user
from tests.test_will_continue104 import call as gemini_call

# -- 1. a content piece holding both thinking and text ----------------------------------------------


def piece(kind: str = "content-delta", index: int | None = 0, **said: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"type": kind, "delta": {"message": {"content": said}}}
    if index is not None:
        event["index"] = index
    return event


END = {"type": "message-end", "delta": {"finish_reason": "COMPLETE"}}


@pytest.mark.parametrize("form", ["dicts", "bytes whole", "bytes in 3-byte pieces"])
@pytest.mark.parametrize("kind", ["content-delta", "content-start"])
def test_a_piece_holding_thinking_and_text_keeps_both_thinking_first(kind: str, form: str) -> None:
    """Policy cohere-thinking-beside-text: the piece gives its thinking (a block at its content
    index) and its text; the text alone was kept, ``result.reasoning`` empty."""
    events = [piece(text="ok", index=0), piece(kind, 1, thinking="so ", text="Hi"), piece(text="!", index=1), END]
    result = fed(events, form)
    assert [(b.text, b.output_index) for b in result.reasoning] == [("so ", 1)]
    assert result.text == "okHi!" and result.diagnostics == ()


def test_the_decoder_gives_the_thinking_then_the_text() -> None:
    said = CohereDecoder().decode(piece(index=2, thinking="hm", text="Hi"), lambda *_: None)
    assert [type(event).__name__ for event in said] == ["ReasoningDelta", "TextDelta"]
    assert (said[0].block, said[0].text, said[0].output_index, said[1].text) == (2, "hm", 2, "Hi")  # type: ignore[attr-defined]


def test_the_shortcut_leaves_a_piece_with_thinking_to_decode() -> None:
    """``commonest_said`` took the piece as text alone (changing the turn as decode() did): it
    leaves any piece holding ``thinking`` to decode() now."""
    from fsm.content import TurnContent

    decoder = CohereDecoder()
    content = TurnContent()
    assert decoder.commonest_said(piece(thinking="hm", text="Hi"), content) is False
    assert decoder.commonest_said(piece(thinking=None, text="Hi"), content) is True  # none to keep: as before
    assert decoder.commonest_said(piece(text="Hi"), content) is True


def test_a_thinking_of_the_wrong_type_beside_text_is_refused_as_alone() -> None:
    """Its type was never read beside text: it is refused now as it is alone (a typed error)."""
    from fsm.errors import RemoteProtocolError

    for beside in ({"text": "Hi"}, {}):
        for strict in (True, False):
            with pytest.raises(RemoteProtocolError, match=r"content\.thinking is list"):
                fed([piece(thinking=["a"], **beside), END], "dicts", strict)


# -- 2. what Cohere's next turn carries of a plan and of another provider's reasoning -----------------


def call(cid: str = "w_1") -> ToolCall:
    return ToolCall(0, cid, cid, "weather", {"c": 1}, '{"c": 1}', CallStatus.COMPLETE)


def result(provider: str, *reasoning: Reasoning, text: str = "", calls: tuple[ToolCall, ...] = ()) -> Result:
    return Result(provider, "stop", calls, (), text=text, reasoning=tuple(reasoning))


PLAN = [
    {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "I will call weather."}}},
    {
        "type": "tool-call-start",
        "index": 0,
        "delta": {"message": {"tool_calls": {"id": "w_1", "function": {"name": "weather", "arguments": '{"c'}}}},
    },
    {"type": "message-end", "delta": {"finish_reason": "MAX_TOKENS"}},
]


def test_a_plan_whose_calls_are_left_out_goes_back_as_text() -> None:
    """Policy cohere-plan-without-calls: the call was cut (truncated, left out), its plan went
    nowhere; it is the message's text now, which cohere's own type takes."""
    cohere = pytest.importorskip("cohere")
    cut = fed(PLAN, "dicts", strict=False)
    assert [c.status.value for c in cut.calls] == ["truncated"]
    message = messages.assistant_message(cut, "cohere")
    assert message == {"role": "assistant", "content": "I will call weather."}
    assert cohere.AssistantChatMessageV2.model_validate(message).content == "I will call weather."


def test_a_plan_without_calls_goes_before_the_text_and_after_the_thinking() -> None:
    planned = result("cohere", Reasoning("hm", output_index=0), Reasoning("I will call weather."), text="It is sunny.")
    assert messages.assistant_message(planned, "cohere")["content"] == [
        {"type": "thinking", "thinking": "hm"},
        {"type": "text", "text": "I will call weather.\n\nIt is sunny."},
    ]
    alone = result("cohere", Reasoning("I will call weather."), text="It is sunny.")
    assert messages.assistant_message(alone, "cohere")["content"] == "I will call weather.\n\nIt is sunny."


def test_the_plan_beside_calls_is_as_before() -> None:
    planned = result("cohere", Reasoning("I will call weather."), text="Let me look.", calls=(call(),))
    message = messages.assistant_message(planned, "cohere")
    assert message["tool_plan"] == "I will call weather.\n\nLet me look." and "content" not in message


@pytest.mark.parametrize("provider", ["openai-chat", "gemini", "ollama", "anthropic", "bedrock"])
@pytest.mark.parametrize("calls", [(), (call(),)])
def test_another_providers_reasoning_goes_back_as_thinking_not_as_a_plan(
    provider: str, calls: tuple[ToolCall, ...]
) -> None:
    """Policy cohere-foreign-reasoning: a chat delta's ``reasoning_content`` (no content index)
    went in ``tool_plan``, Cohere's plan; it is a thinking item, as Claude's with an index was."""
    cohere = pytest.importorskip("cohere")
    turn = result(provider, Reasoning("Let me think."), Reasoning("More.", output_index=3), text="Hi", calls=calls)
    message = messages.assistant_message(turn, "cohere")
    thinking = [{"type": "thinking", "thinking": "Let me think."}, {"type": "thinking", "thinking": "More."}]
    if calls:
        assert message["content"] == thinking and message["tool_plan"] == "Hi"
    else:
        assert message["content"] == [*thinking, {"type": "text", "text": "Hi"}] and "tool_plan" not in message
    cohere.AssistantChatMessageV2.model_validate(message)


def test_a_streamed_chat_turns_reasoning_is_no_plan() -> None:
    """End to end: a DeepSeek-style chat stream's ``reasoning_content``, sent to Cohere next."""
    chunks = [
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"reasoning_content": "Think."}}]},
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "Done."}}]},
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    r = Reassembler("openai-chat")
    for chunk in chunks:
        r.feed(chunk)
    message = messages.assistant_message(r.close(), "cohere")
    assert message["content"] == [{"type": "thinking", "thinking": "Think."}, {"type": "text", "text": "Done."}]


def test_a_hand_built_result_of_no_provider_named_cohere_has_no_plan() -> None:
    """The plan is told by the result's provider: the same block under another's name is thinking."""
    turn = result("cohere", Reasoning("I will call weather."), calls=(call(),))
    assert messages.assistant_message(turn, "cohere")["tool_plan"] == "I will call weather."
    other = attrs.evolve(turn, provider="auto")
    assert messages.assistant_message(other, "cohere")["content"] == [
        {"type": "thinking", "thinking": "I will call weather."}
    ]


# -- 3. Gemini chains: a chain's response in the model's content; responses without ids ----------------


def test_a_chains_response_in_the_models_content_is_misplaced_and_moves_after_the_one_before_it() -> None:
    """Policy chain-response-in-the-model-content: no finding, and repair left it in the model's
    content (a history Gemini refuses: responses come from a user content)."""
    conversation = [ASK, model(gemini_call("a")), user(resp(1, True)), model(resp(2))]
    found = history.check(conversation, "gemini").findings
    assert [(f.kind, f.id, f.message) for f in found] == [(history.Kind.MISPLACED_RESULT, "a", 4)]
    fixed, changes = repaired(conversation)
    assert fixed == [ASK, model(gemini_call("a")), user(resp(1, True), resp(2))]
    assert [(c.kind, c.message, c.id) for c in changes] == [
        ("moved-misplaced-result", 4, "a"),
        ("dropped-empty-message", 4, None),
    ]


def test_a_stray_beside_the_models_text_goes_after_the_last_response_kept_where_it_was() -> None:
    conversation = [
        ASK,
        model(gemini_call("a")),
        user(resp(1, True)),
        model({"text": "working"}),
        user(resp(2, True)),
        model({"text": "still"}, resp(3, True), resp(4)),
        user({"text": "thanks"}),
    ]
    fixed, changes = repaired(conversation)
    assert sent(fixed) == [("a", 1, True), ("a", 2, True), ("a", 3, True), ("a", 4, False)]
    assert fixed[4] == user(resp(2, True), resp(3, True), resp(4)) and fixed[5] == model({"text": "still"})
    assert [(c.kind, c.message) for c in changes][:2] == [("moved-misplaced-result", 6)] * 2


def test_a_stray_of_a_dropped_chain_goes_with_it_and_of_a_renamed_one_is_renamed() -> None:
    orphan = [ASK, model({"text": "hm"}), user(resp(1, True)), model(resp(2))]
    fixed, changes = repaired(orphan)
    assert sent(fixed) == [] and [c.kind for c in changes].count("dropped-orphan") == 2
    twice = [ASK, model(gemini_call("a"), gemini_call("a")), user(resp(1), resp(2, True)), model(resp(3))]
    fixed, _ = repaired(twice)
    assert sent(fixed) == [("a", 1, False), ("a_d2", 2, True), ("a_d2", 3, False)]
    assert sent(fixed[-1:]) == sent(fixed)  # the stray renamed with its chain, and moved after it


STRAYS = st.lists(
    st.tuples(
        st.sampled_from(["user", "model"]),
        st.lists(
            st.one_of(
                st.tuples(st.just("resp"), st.sampled_from("ab"), st.sampled_from([True, True, None])),
                st.tuples(st.just("text")),
            ),
            min_size=1,
            max_size=3,
        ),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(STRAYS)
def test_random_chains_answering_calls_with_responses_in_either_role(
    drawn: list[tuple[str, list[tuple[Any, ...]]]],
) -> None:
    """After calls to ``a`` and ``b``, responses to them going on or not, in user or model contents:
    tests/test_will_continue104.py's rules hold (the chains there seldom stayed with a response
    in the model's content, this one's case)."""
    holds_for([("model", [("call", "a"), ("call", "b")]), *drawn])


def test_responses_without_ids_pair_by_name_and_order_and_never_chain() -> None:
    """Policy id-less-responses-unchained: two calls to ``f`` without ids, answered by two
    responses, the first saying ``willContinue``: each answers its call (chained, the second call
    would be dangling and get a placeholder); with one call, the second is an orphan, said and
    dropped, never taken in silence."""

    def bare(x: int, more: bool | None = None) -> dict[str, Any]:
        said = resp(x, more)
        del said["functionResponse"]["id"]
        return said

    called = {"functionCall": {"name": "f", "args": {}}}
    two = [ASK, model(called, called), user(bare(1, True), bare(2))]
    assert history.check(two, "gemini").findings == ()
    assert history.repair(two, format="gemini") == (two, [])
    one = [ASK, model(called), user(bare(1, True), bare(2))]
    assert [(f.kind, f.id) for f in history.check(one, "gemini").findings] == [(history.Kind.ORPHAN, "f#2")]
    fixed, changes = history.repair(one, format="gemini")
    assert fixed == [ASK, model(called), user(bare(1, True))]
    assert [(c.kind, c.id) for c in changes] == [("dropped-orphan", "f#2")]
