"""Hostile audit 126 of helper 119's branch (``Result.source_provider``, policy langchain-joined-signature).

Policy langchain-joined-signature leaves out a ChatGoogleGenerativeAI signature that is several joined. Left out, it
still ends its run, as it did when it went on whole: a message summed from the first chunks of a run, fed before the
rest, kept the run open, so the next chunk's part joined the summed block and its one signature went back over text it
never signed (``A.B.C.`` under ``C.``'s), where main kept ``C.`` apart under its own."""

from __future__ import annotations

import pytest

import fsm
from fsm import messages

pytest.importorskip("langchain_google_genai")


@pytest.mark.parametrize("output_version", [None, "v1"])
@pytest.mark.parametrize("kind", ["thought", "text"])
def test_a_joined_signature_left_out_still_ends_its_run(kind: str, output_version: str | None) -> None:
    from tests.test_gemini_parts import said, sig, thought
    from tests.test_langchain_places import chat_google, gemini

    part = thought if kind == "thought" else said
    body = gemini([part("A.", sig("s1"))], [part("B.", sig("s2"))], [part("C.", sig("s3"))])
    chunks = list(chat_google(body, output_version).stream("go"))
    result = fsm.reassemble([chunks[0] + chunks[1], *chunks[2:]])  # the run's first two summed, then the rest
    signed = [(b.text, b.signature) for b in result.reasoning] + [(p.text, p.signature) for p in result.text_parts]
    assert signed == [("A.B.", None), ("C.", sig("s3"))]
    assert result.codes() == ["part-not-reassembled"]
    parts = messages.assistant_message(result, "gemini")["parts"]
    assert [p.get("thoughtSignature") for p in parts] == [None, sig("s3")]


def test_a_joined_signature_of_no_text_ends_the_run_it_came_after() -> None:
    """A block that brings joined signatures alone (its text came in an earlier chunk) signs nothing and ends the
    run: the next part's signature is not taken for the text before it."""
    from langchain_core.messages import AIMessageChunk

    from tests.test_gemini_parts import sig

    meta = {"model_provider": "google_genai"}

    def chunk(text: str, signature: str | None) -> AIMessageChunk:
        block = {"type": "thinking", "thinking": text, "index": 0, **({"signature": signature} if signature else {})}
        return AIMessageChunk(content=[block], response_metadata=dict(meta))

    result = fsm.reassemble([chunk("A.", None), chunk("", sig("s1") + sig("s2")), chunk("B.", sig("s3"))])
    assert [(b.text, b.signature) for b in result.reasoning] == [("A.", None), ("B.", sig("s3"))]
    assert result.codes() == ["part-not-reassembled", "no-finish-reason"]
