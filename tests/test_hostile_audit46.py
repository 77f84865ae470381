"""Audit 46: the next request's builders (fsm.messages) over every capture and vector and their
mutations, in all seven formats, each message checked with the provider SDK's own request types,
by fsm.history.check and by repair (a helper's harness; each finding re-checked).

* A computer_call whose wire item had no ``pending_safety_checks`` went back without it, and the
  Responses input item requires it (openai's ``ResponseComputerToolCallParam``): it goes back empty,
  as it already did for a call built by hand.
* A tool output holding a NaN or an infinity went to Gemini as a value whose JSON has none of them
  (google-genai sends null in its place): refused, as any output JSON cannot write is."""

from __future__ import annotations

import math

import pydantic
import pytest
from openai.types.responses import ResponseInputItemParam

from fsm import messages
from fsm.errors import InvalidInput
from fsm.harness.conformance import replay
from fsm.harness.vectors import load_vectors


def test_a_computer_call_goes_back_with_the_safety_checks_its_item_requires() -> None:
    vector = next(v for v in load_vectors() if v.name == "responses-builtin-unusable-action")
    result, _ = replay(vector)
    items = [item for item in messages.assistant_message(result, "openai-responses") if item["type"] == "computer_call"]
    assert items and all(item["pending_safety_checks"] == [] for item in items)
    for item in items:
        pydantic.TypeAdapter(ResponseInputItemParam).validate_python(item)  # raised: field required


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
def test_gemini_refuses_an_output_json_cannot_hold(value: float) -> None:
    vector = next(v for v in load_vectors() if v.shape == "gemini")
    result, _ = replay(vector)
    call = result.calls[0]
    with pytest.raises(InvalidInput, match="what JSON can write"):
        messages.tool_result(call, {"ratio": value}, "gemini")
    assert messages.tool_result(call, {"ratio": 0.5}, "gemini")["functionResponse"]["response"] == {
        "output": {"ratio": 0.5}
    }
    # The text formats keep it as a word in the text, which the model reads
    assert "NaN" in messages.tool_result(call, {"ratio": math.nan}, "openai-chat")["content"]
