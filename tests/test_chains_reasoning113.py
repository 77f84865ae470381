"""Follow-ups of audit 111 (task 113).

Gemini ``willContinue`` chains (policy chain-response-in-the-model-content): repair moved a chain's
response sent in a model content right after the chain's response before it, back past the model's
calls made in between, though the same response sent in the user's content after those calls is no
finding; it goes to the end of the responses the latest user content before it keeps now, when that
comes after where the chain's response before it goes. Check reported such a response as a
``misplaced-result`` while repair dropped it as an orphan or moved it with its chain's first
response; it is reported as that response is now.

Ollama and Cohere take a reasoning block's text alone (policy reasoning-data-not-sent): Claude's
``redacted_thinking`` data, a Responses item's encrypted content or summary are not sent, and a
block with no text sends nothing."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from fsm import Reassembler, Result, history, messages
from fsm.results import Reasoning
from tests.test_will_continue104 import ASK, model, repaired, resp, sent, user
from tests.test_will_continue104 import call as gemini_call

# -- 1. a stray goes no sooner than the model's calls it came after ---------------------------------


def test_a_stray_goes_after_the_models_calls_it_came_after() -> None:
    """Audit 111's reproducer: ``a2`` came after the model's call to ``b`` and its response; put
    right after ``a1`` it said the model saw ``a2`` before it called ``b``."""
    conversation = [ASK, model(gemini_call("a")), user(resp(1, True)), model(gemini_call("b"))]
    conversation += [user(resp(2, None, "b")), model(resp(3))]
    fixed, changes = repaired(conversation)
    sent_after_b = [*conversation[:4], user(resp(2, None, "b"), resp(3))]
    assert fixed == sent_after_b
    assert history.check(sent_after_b, "gemini").findings == ()  # where repair puts it is no finding
    assert [(c.kind, c.message, c.id) for c in changes] == [
        ("moved-misplaced-result", 6, "a"),
        ("dropped-empty-message", 6, None),
    ]


def test_strays_of_one_chain_keep_their_order_across_user_contents() -> None:
    conversation = [ASK, model(gemini_call("a"), gemini_call("b")), user(resp(1, True), resp(2, True, "b"))]
    conversation += [model(resp(3, True), {"text": "on"}), user(resp(4, None, "b")), model(resp(5))]
    fixed, _ = repaired(conversation)
    assert sent(fixed) == [("a", 1, True), ("a", 3, True), ("b", 2, True), ("b", 4, False), ("a", 5, False)]
    assert fixed[2] == user(resp(1, True), resp(3, True), resp(2, True, "b"))  # none later than a1's: after it
    assert fixed[4] == user(resp(4, None, "b"), resp(5))


def test_a_stray_after_user_text_alone_goes_after_it() -> None:
    """A user content of text alone takes no response (results-beside-text), and the latest one holding
    responses came before the model's text and the user's: put there, the stray went back past them (task
    163). It goes in a user content of its own where it came (policy stray-where-it-came)."""
    conversation = [ASK, model(gemini_call("a")), user(resp(1, True)), model({"text": "so"}), user({"text": "ok"})]
    conversation += [model(resp(2))]
    fixed, _ = repaired(conversation)
    between = model({"text": history.RepairPolicy().between})
    assert fixed == [*conversation[:5], between, user(resp(2))]


# -- 3. check says of a stray what repair does with it ----------------------------------------------


def test_a_stray_of_an_orphan_chain_is_an_orphan_to_check_as_repair_drops_it() -> None:
    conversation = [ASK, model({"text": "hm"}), user(resp(1, True)), model(resp(2))]
    found = [(f.kind, f.id, f.message) for f in history.check(conversation, "gemini").findings]
    assert found == [(history.Kind.ORPHAN, "a", 3), (history.Kind.ORPHAN, "a", 4)]
    _, changes = repaired(conversation)
    assert [(c.kind, c.message) for c in changes if c.id] == [("dropped-orphan", 3), ("dropped-orphan", 4)]


def test_a_stray_whose_chain_stays_is_still_misplaced() -> None:
    conversation = [ASK, model(gemini_call("a")), user(resp(1, True)), model(resp(2))]
    (found,) = history.check(conversation, "gemini").findings
    assert (found.kind, found.message) == (history.Kind.MISPLACED_RESULT, 4) and "willContinue" in found.detail


# -- 2. reasoning with no text goes to neither Ollama nor Cohere -------------------------------------


def claude_redacted_turn() -> Result:
    r = Reassembler("anthropic")
    start = {"id": "m", "type": "message", "role": "assistant", "content": [], "model": "claude"}
    for event in [
        {"type": "message_start", "message": {**start, "usage": {"input_tokens": 1, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "redacted_thinking", "data": "QUJD"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]:
        r.feed(event)
    return r.close()


@pytest.mark.parametrize("fmt", ["ollama", "cohere"])
def test_reasoning_data_with_no_text_goes_to_neither_ollama_nor_cohere(fmt: Any) -> None:
    """Policy reasoning-data-not-sent: neither API has a field for Claude's redacted data or a
    Responses item's encrypted content and summary; the block's text alone goes, and with none,
    nothing. ``omitted`` lists calls only."""
    result = claude_redacted_turn()
    assert result.reasoning == (Reasoning(redacted="QUJD", output_index=0),)
    assert messages.assistant_message(result, fmt) == {"role": "assistant", "content": "Hi"}
    assert messages.omitted(result, fmt) == ()
    encrypted = Reasoning(item_id="rs_1", summary=("looked it up",), encrypted_content="ENC", output_index=0)
    signed = Reasoning(text="Need it.", signature="sig", output_index=1)
    other = attrs.evolve(result, provider="openai-responses", reasoning=(encrypted, signed))
    built = messages.assistant_message(other, fmt)
    assert "ENC" not in str(built) and "sig" not in str(built) and "looked it up" not in str(built)
    assert "Need it." in str(built)  # the text of a block that has one goes
