"""Policy gemini-dummy-signature: a ``"gemini"`` step that Gemini did not sign gets Google's dummy.

Gemini 3 validates the thought signatures of the current turn's function calls: the first
``functionCall`` part of each step (one model content) must carry the one it was given, else the
request is refused (400). A Claude or OpenAI turn's calls go to Gemini with no signature (policy
signature-by-origin), and calls built by hand or made by older Gemini models have none. For those,
Google documents a dummy value that skips the check (the Gemini API's thought-signatures FAQ:
``context_engineering_is_the_way_to_go`` or ``skip_thought_signature_validator``; Vertex AI's docs:
the latter). fsm puts ``skip_thought_signature_validator`` on the first call of a content when that
call carries no signature, never in place of a real one, and never in another format."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

import fsm
from fsm import Result, history, messages
from fsm.errors import InvalidOption
from fsm.messages.gemini_code import DUMMY_SIGNATURE
from fsm.results import CallStatus, Reasoning, ToolCall
from tests.conftest import CAPTURES

DUMMY = "skip_thought_signature_validator"
FORMATS = ("openai-chat", "openai-responses", "anthropic", "ollama", "cohere", "bedrock")


def _call(n: int, signature: str | None = None) -> ToolCall:
    return ToolCall(
        n,
        f"toolu_{n}",
        f"toolu_{n}",
        "add",
        {"a": n},
        json.dumps({"a": n}),
        CallStatus.COMPLETE,
        thought_signature=signature,
    )


def _claude_turn() -> Result:
    """A Claude turn: signed thinking, then two calls (parallel: one step)."""
    thinking = Reasoning(text="Two sums.", signature="Q2xhdWRlU2ln", output_index=0)
    calls = (_call(1), _call(2))
    return Result(finish_reason="tool_calls", calls=calls, diagnostics=(), provider="anthropic", reasoning=(thinking,))


def test_the_documented_value() -> None:
    assert DUMMY_SIGNATURE == DUMMY


def test_a_claude_turn_goes_to_gemini_with_the_dummy_on_its_first_call_alone() -> None:
    parts = messages.assistant_message(_claude_turn(), "gemini")["parts"]
    assert parts == [
        {"text": "Two sums.", "thought": True},  # Claude's signature is not Gemini's: policy signature-by-origin
        {"functionCall": {"name": "add", "args": {"a": 1}, "id": "toolu_1"}, "thoughtSignature": DUMMY},
        {"functionCall": {"name": "add", "args": {"a": 2}, "id": "toolu_2"}},
    ]


@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses", "bedrock", "ollama"])
def test_another_models_calls_get_the_dummy(provider: str) -> None:
    result = Result(finish_reason="tool_calls", calls=(_call(1),), diagnostics=(), provider=provider)
    (part,) = messages.assistant_message(result, "gemini")["parts"]
    assert part["thoughtSignature"] == DUMMY


def test_a_real_gemini_signature_is_kept_and_no_dummy_joins_it() -> None:
    signed = Result(finish_reason="stop", calls=(_call(1, "R2VtaW5p"), _call(2)), diagnostics=(), provider="gemini")
    parts = messages.assistant_message(signed, "gemini")["parts"]
    assert [p.get("thoughtSignature") for p in parts] == ["R2VtaW5p", None]
    # signed on a part before its first call (a thought): that signature stays on its part, and the
    # call, which Gemini 3 checks, takes the dummy (tests/test_gemini_dummy_first_call127.py)
    thought = Reasoning(text="t", signature="VGhvdWdodA==", place=0)
    earlier = Result(finish_reason="stop", calls=(_call(1),), diagnostics=(), provider="gemini", reasoning=(thought,))
    parts = messages.assistant_message(earlier, "gemini")["parts"]
    assert [p.get("thoughtSignature") for p in parts] == ["VGhvdWdodA==", DUMMY]


def test_the_dummy_can_be_turned_off_and_goes_nowhere_without_a_call() -> None:
    parts = messages.assistant_message(_claude_turn(), "gemini", dummy_signature=False)["parts"]
    assert all("thoughtSignature" not in p for p in parts)
    assert messages.assistant_message(_claude_turn(), "gemini", dummy_signature=True)["parts"][1]["thoughtSignature"]
    text_only = Result(finish_reason="stop", calls=(), diagnostics=(), provider="anthropic", text="Hi")
    assert messages.assistant_message(text_only, "gemini")["parts"] == [{"text": "Hi"}]


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_other_format_gets_the_dummy_nor_takes_the_option(fmt: str) -> None:
    for result in (_claude_turn(), Result(finish_reason="stop", calls=(_call(1),), diagnostics=(), provider="gemini")):
        assert DUMMY not in repr(messages.assistant_message(result, fmt))  # type: ignore[call-overload]
    with pytest.raises(InvalidOption, match="dummy_signature"):
        messages.assistant_message(_claude_turn(), fmt, dummy_signature=False)  # type: ignore[call-overload]


def test_the_option_is_a_bool() -> None:
    with pytest.raises(InvalidOption, match="dummy_signature"):
        messages.assistant_message(_claude_turn(), "gemini", dummy_signature="yes")  # type: ignore[arg-type]


# -- what google-genai sends --------------------------------------------------------------------------


def _sent(contents: list[Any]) -> dict[str, Any]:
    """The body google-genai writes for ``contents``, over a mock transport."""
    genai = pytest.importorskip("google.genai")
    httpx = pytest.importorskip("httpx")
    bodies: list[dict[str, Any]] = []

    def answer(request: Any) -> Any:
        bodies.append(json.loads(request.content))
        reply = {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}]}
        return httpx.Response(200, json=reply)

    options = genai.types.HttpOptions(
        base_url="http://mock", httpx_client=httpx.Client(transport=httpx.MockTransport(answer))
    )
    genai.Client(api_key="test", http_options=options).models.generate_content(model="g", contents=contents)
    (body,) = bodies
    return body


def _ask_and_answer(turn: Result) -> list[Any]:
    answers = [messages.tool_result(call, 3, "gemini") for call in turn.complete_calls]
    model = messages.assistant_message(turn, "gemini")
    return [{"role": "user", "parts": [{"text": "add"}]}, model, *messages.tool_results(answers, "gemini")]


def test_google_genai_sends_the_dummy_as_google_documents_it() -> None:
    """The REST JSON takes ``thoughtSignature`` as base64 text: the documented literal goes in it as
    it is. google-genai reads the dict's text as url-safe base64 (24 bytes) and writes those bytes back
    as url-safe base64, which is the literal again: the wire holds ``skip_thought_signature_validator``,
    through a ``types.Content`` too. (Given ``Part(thought_signature=b"skip_thought_signature_validator")``
    the SDK would send the base64 of those bytes instead, pinned below: not the documented text.)"""
    types = pytest.importorskip("google.genai.types")
    contents = _ask_and_answer(_claude_turn())
    for sent in (contents, [types.Content.model_validate(c) for c in contents]):
        model = _sent(sent)["contents"][1]
        assert model["role"] == "model"
        assert [p.get("thoughtSignature") for p in model["parts"]] == [None, DUMMY, None]
        assert "functionCall" in model["parts"][1] and model["parts"][1]["functionCall"]["id"] == "toolu_1"
    as_bytes = types.Part(function_call=types.FunctionCall(name="add", args={}), thought_signature=DUMMY.encode())
    (part,) = _sent([{"role": "user", "parts": [{"text": "add"}]}, types.Content(role="model", parts=[as_bytes])])[
        "contents"
    ][1]["parts"]
    assert part["thoughtSignature"] == base64.b64encode(DUMMY.encode()).decode() != DUMMY


def test_a_recorded_claude_turn_goes_to_gemini_signed_with_the_dummy() -> None:
    capture = CAPTURES / "anthropic" / "magentic-claude-3-opus-parallel-plus-minus.sse"
    if not capture.is_file():
        pytest.skip(f"{capture} is absent (the shared captures are not mounted)")
    turn = fsm.reassemble(capture.read_bytes(), "anthropic")
    assert len(turn.complete_calls) == 2
    model = _sent(_ask_and_answer(turn))["contents"][1]
    calls = [p for p in model["parts"] if "functionCall" in p]
    assert [p.get("thoughtSignature") for p in calls] == [DUMMY, None]
    assert history.check(_ask_and_answer(turn), "gemini").findings == ()
