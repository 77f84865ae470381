"""Task 119: a result read through LangChain names the provider whose model made it.

LangChain's chunks are read as the chat chunks they mirror, so the result's ``provider`` is
``openai-chat``; ``Reassembler.source_provider`` knew the integration (policy
langchain-source-provider) but the result did not, so policy signature-by-origin found no maker
and a Claude signature went to Gemini, a Gemini one to Claude. ``Result.source_provider`` keeps
it where it is not the wire's (None otherwise), goes into the JSON the CLI writes and comes back
through the converter, and ``signature_for`` reads it before ``provider``."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

import fsm
from fsm import messages
from fsm.errors import ToolcallFSMError
from fsm.results import Reasoning, Result
from fsm.serialize import converter, result_to_json

lc_messages = pytest.importorskip("langchain_core.messages")

CLAUDE_TARGETS = ("anthropic", "bedrock", "openai-chat")


def _chunks(provider: str | None) -> list[Any]:
    """A signed thinking block then text, as an integration that names ``provider`` gives them."""
    metadata = {"model_provider": provider} if provider else {}
    blocks = [
        [{"type": "thinking", "thinking": "Hmm.", "index": 0}],
        [{"type": "thinking", "signature": "SIGC", "index": 0}],
        [{"type": "text", "text": "Hi", "index": 1}],
    ]
    return [lc_messages.AIMessageChunk(content=b, response_metadata=dict(metadata)) for b in blocks]


READ_BY = {
    "anthropic": ("anthropic", CLAUDE_TARGETS),
    "google_genai": ("gemini", ("gemini",)),
    "bedrock_converse": ("bedrock", CLAUDE_TARGETS),
    "groq": (None, (*CLAUDE_TARGETS, "gemini")),  # a chat server's own: no maker told, goes as before
    None: (None, (*CLAUDE_TARGETS, "gemini")),  # langchain-core before 1.0 names no integration
}
"""Per integration: the result's source_provider, and the formats its signature goes back to."""


@pytest.mark.parametrize("integration", list(READ_BY))
def test_a_langchain_turn_names_its_maker_and_its_signature_goes_to_its_readers_alone(integration: str | None) -> None:
    source, readers = READ_BY[integration]
    for named in ("auto", "openai-chat"):
        result = fsm.reassemble(_chunks(integration), named)
        assert (result.provider, result.source_provider) == ("openai-chat", source)
        for format in (*CLAUDE_TARGETS, "gemini"):
            sent = repr(messages.assistant_message(result, format))  # type: ignore[call-overload]
            assert ("'SIGC'" in sent) == (format in readers), (format, sent)


def test_chat_openai_names_the_responses_api_once_an_item_came() -> None:
    item = {"type": "reasoning", "id": "rs_1", "summary": [], "index": 0}
    plain = [lc_messages.AIMessageChunk(content="Hi", response_metadata={"model_provider": "openai"})]
    assert fsm.reassemble(plain).source_provider is None
    items = [*plain, lc_messages.AIMessageChunk(content=[item], response_metadata={"model_provider": "openai"})]
    assert fsm.reassemble(items).source_provider == "openai-responses"


def test_bytes_and_dicts_name_no_other_maker() -> None:
    from tests.test_hostile_audit118 import STREAMS

    for wire, provider in STREAMS.values():
        result = fsm.reassemble(wire, provider)
        assert result.source_provider is None


@pytest.mark.parametrize("integration", ["anthropic", "google_genai", None])
def test_source_provider_goes_into_the_json_and_comes_back(integration: str | None) -> None:
    result = fsm.reassemble(_chunks(integration))
    data = result_to_json(result)
    assert list(data)[-1] == "source_provider"  # a later addition: after every key the CLI wrote before
    assert data["source_provider"] == READ_BY[integration][0]
    back = converter().structure(json.loads(json.dumps(data)), Result)
    assert back == result
    assert messages.assistant_message(back, "gemini") == messages.assistant_message(result, "gemini")


def test_the_cli_writes_source_provider_null_for_a_stream(tmp_path: Any) -> None:
    import io

    from fsm.cli import main
    from tests.test_hostile_audit118 import STREAMS

    path = tmp_path / "gemini.sse"
    path.write_bytes(STREAMS["gemini"][0])
    out, err = io.StringIO(), io.StringIO()
    assert main(["replay", str(path)], out, err) == 0, err.getvalue()
    assert json.loads(out.getvalue())["source_provider"] is None


class _Raising(str):
    def __hash__(self) -> int:
        raise RuntimeError("no hash")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no eq")


@pytest.mark.parametrize("source", [None, 3, ["x"], "", "zzz", "gemini", "anthropic", _Raising("gemini")])
def test_any_source_provider_gives_a_message_or_a_typed_error(source: Any) -> None:
    for provider in ("openai-chat", "gemini", "anthropic"):
        block = Reasoning(text="t", signature="SIG")
        result = attrs.evolve(Result(provider, "stop", (), ()), reasoning=(block,), source_provider=source)
        for format in messages.FORMATS:
            try:
                sent = repr(messages.assistant_message(result, format))  # type: ignore[call-overload]
            except ToolcallFSMError:
                assert type(source) not in (str, type(None))
                continue
            if type(source) is str and source in ("gemini", "anthropic") and format in (*CLAUDE_TARGETS, "gemini"):
                # the source tells the maker, whatever the wire: Gemini's go to gemini alone
                assert ("'SIG'" in sent) == ((format == "gemini") == (source == "gemini")), (source, format)


# -- Policy langchain-joined-signature: a message summed from ChatGoogleGenerativeAI's chunks ----------------------


@pytest.mark.parametrize("output_version", [None, "v1"])
@pytest.mark.parametrize("kind", ["thought", "text"])
def test_a_summed_run_s_joined_signatures_are_said_and_none_goes_back(kind: str, output_version: str | None) -> None:
    """LangChain's sum joins a run's blocks under its one index, signatures as text: ``s1`` + ``s2``, which
    Gemini reads as neither. Before: the joined string went back as one signature, and nothing was said."""
    import functools
    import operator

    from tests.test_gemini_parts import said, sig, thought
    from tests.test_langchain_places import chat_google, gemini

    pytest.importorskip("langchain_google_genai")
    part = thought if kind == "thought" else said
    body = gemini([part("A.", sig("s1"))], [part("B.", sig("s2"))])
    chunks = list(chat_google(body, output_version).stream("go"))
    one = fsm.reassemble(chunks)
    signed = [(b.text, b.signature) for b in one.reasoning] + [(p.text, p.signature) for p in one.text_parts]
    assert signed == [("A.", sig("s1")), ("B.", sig("s2"))] and one.codes() == []  # the chunks keep each
    whole = fsm.reassemble([functools.reduce(operator.add, chunks)])
    joined = sig("s1") + sig("s2")
    signatures = [b.signature for b in whole.reasoning] + [p.signature for p in whole.text_parts]
    assert signatures == [None] and whole.text_signature is None
    assert whole.codes() == ["part-not-reassembled"]
    assert "2 signatures joined" in whole.diagnostics[0].message
    assert joined not in repr(messages.assistant_message(whole, "gemini"))
    assert "A.B." in repr(messages.assistant_message(whole, "gemini"))  # the text goes back, unsigned


def test_a_signature_of_one_run_or_no_base64_goes_on_as_it_came() -> None:
    from fsm.wire.langchain_gemini_code import unjoined

    notes: list[tuple[str, str]] = []
    for signature in (None, "", "QUJD", "QUI=", "QQ==", "not=base64!=x", "a=b=c ="):
        assert unjoined(signature, "thinking", notes) == signature
    assert notes == []
    assert unjoined("QQ==QUJD", "text", notes) is None and len(notes) == 1
