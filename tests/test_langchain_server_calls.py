"""Tools a provider runs itself, through LangChain: the server calls the bytes give are the server
calls LangChain's chunks give, and what neither reading reassembles is reported, never dropped.

ChatAnthropic yields a ``server_tool_use`` (or ``mcp_tool_use``) block and the ``input_json_delta``
blocks of its input in ``content`` only, with no ``tool_call_chunks``; under ``output_version="v1"``
they are ``server_tool_call_chunk`` blocks (renaming Claude's ``code_execution`` tool
``code_interpreter``, an MCP tool ``remote_mcp`` with its name in ``extras.tool_name``), summed into one
``server_tool_call``. ChatGoogleGenerativeAI yields Gemini's ``executableCode`` part as an
``executable_code`` block (v1: a ``server_tool_call`` named ``code_interpreter``) and its
``codeExecutionResult`` as a ``code_execution_result`` block (v1: ``server_tool_result``). All of
these were read as nothing: the result had no server call and said nothing of one.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import pytest

import fsm
from fsm import CallStatus, messages
from tests.test_anthropic_block_order import said, sse, tool_use, turn
from tests.test_gemini_parts import call
from tests.test_gemini_parts import said as part
from tests.test_langchain_places import chat_anthropic, claude_chunk
from tests.test_langchain_reasoning import chat_google, event
from tests.test_langchain_reasoning import sse as gemini_sse

pytest.importorskip("httpx")


def server(at: int, call_id: str, name: str, pieces: list[str], kind: str = "server_tool_use") -> list[dict[str, Any]]:
    block = {"type": kind, "id": call_id, "name": name, "input": {}}
    if kind == "mcp_tool_use":
        block["server_name"] = "docs"
    events = [{"type": "content_block_start", "index": at, "content_block": block}]
    for piece in pieces:
        delta = {"type": "input_json_delta", "partial_json": piece}
        events.append({"type": "content_block_delta", "index": at, "delta": delta})
    return [*events, {"type": "content_block_stop", "index": at}]


def whole_block(at: int, block: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "index": at, "content_block": block},
        {"type": "content_block_stop", "index": at},
    ]


def search_result(at: int, call_id: str) -> list[dict[str, Any]]:
    found = [{"type": "web_search_result", "url": "https://x.example", "title": "X", "encrypted_content": "e"}]
    return whole_block(at, {"type": "web_search_tool_result", "tool_use_id": call_id, "content": found})


def cut_at_max_tokens(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The turn stopped by max_tokens inside its last block: that block's stop never came."""
    kept = [e for e in events if e["type"] not in ("message_delta", "message_stop")]
    assert kept[-1]["type"] == "content_block_stop"
    stopped = {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 64}}
    return [*kept[:-1], stopped, {"type": "message_stop"}]


SEARCH = turn(
    said(0, "Searching. "),
    server(1, "srvtoolu_1", "web_search", ['{"query": ', '"oslo weather"}']),
    search_result(2, "srvtoolu_1"),
    said(3, "Found it. "),
    tool_use(4, "toolu_4", '{"city": "Oslo"}'),
)
CLAUDE = {
    "web-search-then-a-call": SEARCH,
    "code-execution": turn(server(0, "srvtoolu_1", "code_execution", ['{"code": "print(1)"}']), said(1, "1.")),
    "mcp-tool": turn(server(0, "mcptoolu_1", "search_docs", ['{"q": "fsm"}'], "mcp_tool_use"), said(1, "Done.")),
    "server-call-with-no-input-text": turn(server(0, "srvtoolu_1", "web_fetch", []), said(1, "Fetched.")),
    "cut-in-the-server-call": cut_at_max_tokens(turn(said(0, "Hm. "), server(1, "srvtoolu_1", "web_search", ['{"qu']))),
    "cut-after-the-server-call": cut_at_max_tokens(
        turn(server(0, "srvtoolu_1", "web_search", ['{"q": 1}']), said(1, "A"))
    ),
}


def server_calls(result: fsm.Result) -> list[Any]:
    return [(c.id, c.name, c.type, c.arguments, c.arguments_json, c.input, c.status) for c in result.server_tool_calls]


@pytest.mark.parametrize("output_version", [None, "v1"])
@pytest.mark.parametrize("name", list(CLAUDE))
def test_claude_server_tools_through_chat_anthropic_are_the_bytes_server_calls(
    name: str, output_version: str | None
) -> None:
    body = sse(CLAUDE[name])
    reference = fsm.reassemble(body, "anthropic")
    assert reference.server_tool_calls  # what the stream is built to hold
    chunks = list(chat_anthropic(body, output_version)[1].stream("go"))
    for stream in (chunks, [functools.reduce(operator.add, chunks)]):
        got = fsm.reassemble(stream)
        assert server_calls(got) == server_calls(reference)
        assert [c.output_index for c in got.server_tool_calls] == [c.output_index for c in reference.server_tool_calls]
        assert [(c.id, c.arguments, c.status) for c in got.calls] == [
            (c.id, c.arguments, c.status) for c in reference.calls
        ]
        assert got.finish_reason == reference.finish_reason


def test_the_server_call_a_cut_stops_keeps_its_text_and_the_one_before_it_stands() -> None:
    cut = fsm.reassemble(sse(CLAUDE["cut-in-the-server-call"]), "anthropic").server_tool_calls
    assert [(c.status, c.arguments_json) for c in cut] == [(CallStatus.TRUNCATED, '{"qu')]
    ended = fsm.reassemble(sse(CLAUDE["cut-after-the-server-call"]), "anthropic").server_tool_calls
    assert [(c.status, c.arguments) for c in ended] == [(CallStatus.COMPLETE, {"q": 1})]


def without_nulls(value: Any) -> Any:
    """A message with the null fields an SDK model writes where the wire has none (a search result's
    ``page_age``, dumped by LangChain): Anthropic reads them as absent."""
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def mcp_failed(at: int, call_id: str) -> list[dict[str, Any]]:
    failed = [{"type": "text", "text": "no such page"}]
    return whole_block(at, {"type": "mcp_tool_result", "tool_use_id": call_id, "is_error": True, "content": failed})


NEXT_TURNS = {
    **CLAUDE,
    "mcp-tool-failed": turn(
        server(0, "mcptoolu_1", "search_docs", ['{"q": "fsm"}'], "mcp_tool_use"), mcp_failed(1, "mcptoolu_1")
    ),
}


@pytest.mark.parametrize("output_version", [None, "v1"])
@pytest.mark.parametrize("name", list(NEXT_TURNS))
def test_claude_server_blocks_through_chat_anthropic_go_back_as_the_bytes_send_them(
    name: str, output_version: str | None
) -> None:
    # v1's blocks rename Claude's and move fields into extras; they went back as nothing before
    body = sse(NEXT_TURNS[name])
    reference = messages.assistant_message(fsm.reassemble(body, "anthropic"), "anthropic")
    chunks = list(chat_anthropic(body, output_version)[1].stream("go"))
    for stream in (chunks, [functools.reduce(operator.add, chunks)]):
        got = messages.assistant_message(fsm.reassemble(stream), "anthropic")
        assert without_nulls(got) == without_nulls(reference)


@pytest.mark.parametrize("name", list(NEXT_TURNS))
def test_claude_server_blocks_in_chunks_naming_no_integration_go_back_too(name: str) -> None:
    # langchain-anthropic before 1.0 names no model_provider: its blocks keep no places, so the text
    # goes back as one block first; the server blocks went back as nothing, their results unread
    body = sse(NEXT_TURNS[name])
    reference = without_nulls(messages.assistant_message(fsm.reassemble(body, "anthropic"), "anthropic"))
    chunks = list(chat_anthropic(body, None)[1].stream("go"))
    for chunk in chunks:
        chunk.response_metadata.pop("model_provider", None)
    got = without_nulls(messages.assistant_message(fsm.reassemble(chunks), "anthropic"))

    def text(turn: dict[str, Any]) -> str:
        return "".join(block["text"] for block in turn["content"] if block["type"] == "text")

    def others(turn: dict[str, Any]) -> list[dict[str, Any]]:
        return [block for block in turn["content"] if block["type"] != "text"]

    assert (text(got), others(got)) == (text(reference), others(reference))


def test_a_v1_server_result_naming_no_claude_block_is_reported() -> None:
    block = {"type": "server_tool_result", "tool_call_id": "x1", "status": "success", "extras": {}, "index": 0}
    result = fsm.reassemble([claude_chunk(block), claude_chunk({"type": "text", "text": "ok", "index": 1})])
    assert result.server_tool_results == () and "unknown-event" in result.codes()
    assert "server_tool_result block at index 0" in " ".join(d.message for d in result.diagnostics)


def test_a_claude_block_of_a_call_kind_no_reading_knows_is_reported() -> None:
    # as the Anthropic decoder reports a `*_use` block it does not know: it may be a call
    chunks = [
        claude_chunk({"type": "future_tool_use", "id": "x1", "name": "f", "input": {}, "index": 0}),
        claude_chunk({"type": "text", "text": "Done.", "index": 1}, stop_reason="end_turn"),
    ]
    result = fsm.reassemble(chunks)
    assert "unknown-event" in result.codes()
    assert "'future_tool_use' content block at index 0" in " ".join(d.message for d in result.diagnostics)


@pytest.mark.parametrize("bad", [7, ["srvtoolu_1"], None])
def test_a_hand_made_server_block_whose_id_is_no_str_gets_an_id_of_its_own(bad: Any) -> None:
    chunks = [
        claude_chunk({"type": "server_tool_use", "id": bad, "name": 3, "input": {"q": 1}, "index": 0}),
        claude_chunk({"type": "text", "text": "ok", "index": 1}, stop_reason="end_turn"),
    ]
    (got,) = fsm.reassemble(chunks).server_tool_calls
    # Its name is no str either: kept with its input text, and invalid, as any call without a name.
    assert (got.name, got.arguments_json, got.status) == (None, '{"q": 1}', CallStatus.INVALID)
    assert got.id and got.wire_id is None


# -- Gemini's code execution through ChatGoogleGenerativeAI ---------------------------------------------------


def code(source: str) -> dict[str, Any]:
    return {"executableCode": {"language": "PYTHON", "code": source}}


def outcome(output: str) -> dict[str, Any]:
    return {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": output}}


GEMINI = {
    "code-then-a-call": gemini_sse(
        [
            event("gemini-2.5-flash", [part("Let me compute. ")]),
            event("gemini-2.5-flash", [code("print(2 + 3)")]),
            event("gemini-2.5-flash", [outcome("5\n")]),
            event("gemini-2.5-flash", [part("It is 5. "), call("report", "c1", value=5)], "STOP"),
        ]
    ),
    "two-code-parts-in-one-event": gemini_sse(
        [event("gemini-2.5-flash", [code("a = 1"), outcome("set\n"), code("print(a)"), outcome("1\n")], "STOP")]
    ),
    # the code part sent again in a later event: LangChain gives the resent block an id of its own
    "code-resent-in-a-later-event": gemini_sse(
        [
            event("gemini-2.5-flash", [code("print(2 + 3)")]),
            event("gemini-2.5-flash", [code("print(2 + 3)")]),
            event("gemini-2.5-flash", [code("print(7)"), outcome("5\n")]),
            event("gemini-2.5-flash", [part("It is 5. ")], "STOP"),
        ]
    ),
    # code streamed one part an event, then resent as one batch: the second was a third server call
    "code-resent-as-a-batch": gemini_sse(
        [
            event("gemini-2.5-flash", [code("print(1)")]),
            event("gemini-2.5-flash", [code("print(2)")]),
            event("gemini-2.5-flash", [code("print(1)"), code("print(2)")]),
            event("gemini-2.5-flash", [outcome("1\n")]),
            event("gemini-2.5-flash", [outcome("2\n")]),
            event("gemini-2.5-flash", [part("Done.")], "STOP"),
        ]
    ),
    # code and its result resent after other code ran: the result was kept twice
    "code-and-result-resent-after-other-code": gemini_sse(
        [
            event("gemini-2.5-flash", [code("print(1)")]),
            event("gemini-2.5-flash", [outcome("1\n")]),
            event("gemini-2.5-flash", [code("print(2)")]),
            event("gemini-2.5-flash", [outcome("2\n")]),
            event("gemini-2.5-flash", [code("print(1)")]),
            event("gemini-2.5-flash", [outcome("1\n")]),
            event("gemini-2.5-flash", [part("Done.")], "STOP"),
        ]
    ),
}


@pytest.mark.parametrize("output_version", [None, "v1"])
@pytest.mark.parametrize("name", list(GEMINI))
def test_gemini_code_execution_through_langchain_is_the_bytes_server_call(
    name: str, output_version: str | None
) -> None:
    body = GEMINI[name]
    reference = fsm.reassemble(body, "gemini")
    chunks = list(chat_google(body, output_version).stream("go"))
    got = fsm.reassemble(chunks)

    def kept(result: fsm.Result) -> list[Any]:
        return [(c.name, c.type, c.input, c.item, c.status) for c in result.server_tool_calls]

    assert kept(reference) and kept(got) == kept(reference)
    assert all(c.wire_id for c in got.server_tool_calls)  # LangChain's made-up id, taken as the wire's
    # each code result reported where the bytes report it; the bytes also name the id they made up
    assert [c for c in got.codes() if c != "synthesized-id"] == [c for c in reference.codes() if c != "synthesized-id"]
    assert [(c.id, c.arguments) for c in got.calls] == [(c.id, c.arguments) for c in reference.calls]
    assert got.text_parts == reference.text_parts
    # the code's results too, in their places: the next turn sends each after its code, as the bytes'
    assert got.server_tool_results == reference.server_tool_results and reference.server_tool_results
    assert messages.assistant_message(got, "gemini") == messages.assistant_message(reference, "gemini")


@pytest.mark.parametrize("output_version", [None, "v1"])
def test_gemini_code_resent_through_langchain_is_deduplicated_into_its_own_slot(output_version: str | None) -> None:
    # each block under a fresh uuid: the resent part was a second server call, where the bytes read
    # it as a resend of the first (the same part at the same position); other code there is a new call
    got = fsm.reassemble(list(chat_google(GEMINI["code-resent-in-a-later-event"], output_version).stream("go")))
    assert [(c.input, c.status) for c in got.server_tool_calls] == [
        ("print(2 + 3)", CallStatus.COMPLETE),
        ("print(7)", CallStatus.COMPLETE),
    ]
    assert got.codes().count("resend") == 1 and "duplicate-id" not in got.codes()


def test_a_gemini_block_no_reading_knows_is_reported_not_dropped() -> None:
    from langchain_core.messages import AIMessageChunk

    meta = {"model_provider": "google_genai"}
    chunks = [
        AIMessageChunk(
            content=[{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}], response_metadata=meta
        ),
        AIMessageChunk(
            content=[{"type": "server_tool_call", "name": "google_search", "args": {"q": "x"}, "id": "s1"}],
            response_metadata=meta,
        ),
        AIMessageChunk(content="", response_metadata={**meta, "finish_reason": "STOP"}),
    ]
    result = fsm.reassemble(chunks)
    assert result.codes() == ["part-not-reassembled"]
    assert "'image_url' content block" in result.diagnostics[0].message
    # a server_tool_call of a tool other than code is a Gemini toolCall part (tests/test_langchain_kept82.py)
    assert [(c.name, c.type, c.item) for c in result.server_tool_calls] == [
        ("GOOGLE_SEARCH", "tool_call", {"id": "s1", "toolType": "GOOGLE_SEARCH", "args": {"q": "x"}})
    ]


@pytest.mark.parametrize(
    ("block", "said"),
    [
        ({"type": "code_execution_result", "code_execution_result": "1\n", "outcome": 9}, "outcome is int"),
        ({"type": "code_execution_result", "code_execution_result": 1, "outcome": 1}, "output is int"),
        (
            {
                "type": "server_tool_result",
                "output": "1\n",
                "extras": {"block_type": "code_execution_result", "outcome": [1]},
            },
            "outcome is list",
        ),
    ],
)
def test_a_gemini_code_result_of_a_wrong_type_is_reported_as_the_decoder_reports_it(
    block: dict[str, Any], said: str
) -> None:
    # it was kept and went back as it came (an outcome of no enum name), a part Gemini refuses
    from langchain_core.messages import AIMessageChunk

    meta = {"model_provider": "google_genai"}
    chunks = [
        AIMessageChunk(
            content=[{"type": "executable_code", "executable_code": "print(1)", "language": "PYTHON"}],
            response_metadata=meta,
        ),
        AIMessageChunk(content=[block], response_metadata=meta),
        AIMessageChunk(content="", response_metadata={**meta, "finish_reason": "STOP"}),
    ]
    result = fsm.reassemble(chunks)
    assert not result.server_tool_results
    (note,) = [d for d in result.diagnostics if d.code == "part-not-reassembled"]
    assert (note.event, f"{said}, not a string: it is not read" in note.message) == (2, True)
    assert messages.assistant_message(result, "gemini")["parts"] == []


def _idless(name: str, **args: Any) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": args}}


IDLESS = {
    # Gemini 2.x: the same call, no id, sent again in a later event (hermes-agent#25046)
    "one-call-resent": [
        event("gemini-2.5-flash", [_idless("look", city="Oslo")]),
        event("gemini-2.5-flash", [_idless("look", city="Oslo")], "STOP"),
    ],
    # a batch, then its second call alone, then the batch whole: two calls
    "batch-and-parts-of-it-resent": [
        event("gemini-2.5-flash", [_idless("look", city="Oslo"), _idless("look", city="Rome")]),
        event("gemini-2.5-flash", [_idless("look", city="Rome")]),
        event("gemini-2.5-flash", [_idless("look", city="Oslo"), _idless("look", city="Rome")], "STOP"),
    ],
    # two identical calls in one event are two calls (two dice), and so they stay when resent
    "two-dice-resent": [
        event("gemini-2.5-flash", [_idless("roll"), _idless("roll")]),
        event("gemini-2.5-flash", [_idless("roll"), _idless("roll")], "STOP"),
    ],
    # another call with the same name is a call of its own
    "other-arguments": [
        event("gemini-2.5-flash", [_idless("look", city="Oslo")]),
        event("gemini-2.5-flash", [_idless("look", city="Rome")], "STOP"),
    ],
}


@pytest.mark.parametrize(("name", "version"), [(name, v) for name in IDLESS for v in (None, "v1")])
def test_an_idless_gemini_call_resent_through_langchain_is_one_call_as_from_the_bytes(name: str, version: Any) -> None:
    # LangChain gives an id-less Gemini call a fresh uuid in each chunk: the resent call was a
    # second call (two to run), where the bytes read it as a resend of the first
    reference = fsm.reassemble(body := gemini_sse(IDLESS[name]), "gemini")
    chunks = list(chat_google(body, version).stream("go"))
    got = fsm.reassemble(chunks)
    assert [(c.name, c.arguments, c.status) for c in got.calls] == [
        (c.name, c.arguments, c.status) for c in reference.calls
    ]
    assert got.codes().count("resend") == reference.codes().count("resend")
    # each call under the id LangChain gave it first, the one its AIMessage answers it by
    whole = functools.reduce(operator.add, chunks)
    assert sorted(c.id for c in got.calls) == sorted({c["id"] for c in whole.tool_calls} & {c.id for c in got.calls})


def _called(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": args, "id": call_id}}


WITH_IDS = {
    # Gemini 3 sends a call again under its own id: LangChain numbers it anew (it was `c1_d2`)
    "one-call-resent": [
        event("gemini-3-flash", [_called("look", "c1", city="Oslo")]),
        event("gemini-3-flash", [_called("look", "c1", city="Oslo")], "STOP"),
    ],
    "batch-resent": [
        event("gemini-3-flash", [_called("look", "c1", city="Oslo"), _called("look", "c2", city="Rome")]),
        event("gemini-3-flash", [_called("look", "c1", city="Oslo"), _called("look", "c2", city="Rome")], "STOP"),
    ],
    "resent-changed": [
        event("gemini-3-flash", [_called("look", "c1", city="Oslo")]),
        event("gemini-3-flash", [_called("look", "c1", city="Rome")], "STOP"),
    ],
    "twice-in-one-event": [event("gemini-3-flash", [_called("look", "c1", city="Oslo")] * 2, "STOP")],
    # another tool under the same id is another call, on the wire as through LangChain
    "same-id-another-name": [
        event("gemini-3-flash", [_called("look", "c1", city="Oslo")]),
        event("gemini-3-flash", [_called("find", "c1", city="Oslo")], "STOP"),
    ],
    # LangChain's json.dumps escapes every character past ASCII: the text is the decoder's
    "past-ascii-resent": [
        event("gemini-3-flash", [_called("look", "c1", city="Zürich 🌧")]),
        event("gemini-3-flash", [_called("look", "c1", city="Zürich 🌧")], "STOP"),
    ],
}


@pytest.mark.parametrize(("name", "version"), [(name, v) for name in WITH_IDS for v in (None, "v1")])
def test_a_gemini_call_resent_under_its_own_id_through_langchain_is_the_bytes_call(name: str, version: Any) -> None:
    reference = fsm.reassemble(body := gemini_sse(WITH_IDS[name]), "gemini")
    got = fsm.reassemble(list(chat_google(body, version).stream("go")))
    assert [(c.id, c.wire_id, c.name, c.arguments_json, c.status) for c in got.calls] == [
        (c.id, c.wire_id, c.name, c.arguments_json, c.status) for c in reference.calls
    ]
    assert got.codes() == reference.codes()


CITATIONS = {
    "web": {
        "type": "web_search_result_location",
        "cited_text": "Oslo: -3 C",
        "url": "https://example.org/oslo",
        "title": None,  # required, null where the page had none; v1 keeps no empty title
        "encrypted_index": "Eo8B",
    },
    "characters": {
        "type": "char_location",
        "cited_text": "It is cold.",
        "document_index": 0,
        "document_title": "Report",
        "start_char_index": 4,
        "end_char_index": 15,
    },
    "pages": {
        "type": "page_location",
        "cited_text": "Page two.",
        "document_index": 1,
        "document_title": None,
        "start_page_number": 2,
        "end_page_number": 3,
    },
    "blocks": {
        "type": "content_block_location",
        "cited_text": "A block.",
        "document_index": 2,
        "document_title": "Notes",
        "start_block_index": 0,
        "end_block_index": 1,
    },
    "search-result": {
        "type": "search_result_location",
        "cited_text": "Found.",
        "search_result_index": 0,
        "source": "https://example.org/kb",
        "title": "Knowledge base",
        "start_block_index": 0,
        "end_block_index": 2,
    },
}


@pytest.mark.parametrize("output_version", [None, "v1"])
def test_claude_citations_through_chat_anthropic_go_back_as_the_bytes_send_them(output_version: str | None) -> None:
    # v1 gives a text block's citations as annotations of its own shape (the citation's type dropped,
    # document_title as title, the rest in extras): the cited text went back without them
    blocks = []
    for at, cited in enumerate(CITATIONS.values()):
        start = {"type": "content_block_start", "index": at, "content_block": {"type": "text", "text": ""}}
        deltas = [{"type": "citations_delta", "citation": cited}, {"type": "text_delta", "text": f"Said {at}. "}]
        deltas_events = [{"type": "content_block_delta", "index": at, "delta": delta} for delta in deltas]
        blocks.append([start, *deltas_events, {"type": "content_block_stop", "index": at}])
    body = sse(turn(*blocks, tool_use(len(blocks), "toolu_1", '{"city": "Oslo"}')))
    reference = messages.assistant_message(fsm.reassemble(body, "anthropic"), "anthropic")
    assert [block.get("citations") for block in reference["content"][:-1]] == [[c] for c in CITATIONS.values()]
    chunks = list(chat_anthropic(body, output_version)[1].stream("go"))
    for stream in (chunks, [functools.reduce(operator.add, chunks)]):
        assert messages.assistant_message(fsm.reassemble(stream), "anthropic") == reference


def test_a_v1_citation_of_no_claude_shape_is_not_sent_and_a_non_standard_one_is_sent_whole() -> None:
    kept = {"type": "future_location", "cited_text": "x", "where": 3}
    annotations = [
        {"type": "non_standard_annotation", "value": kept},
        {"type": "citation", "cited_text": "y"},  # no url and no range: not one of Claude's
        {"type": "non_standard_annotation", "value": "no object"},
        "no block",
    ]
    chunk = claude_chunk({"type": "text", "text": "Hi", "annotations": annotations, "index": 0}, stop_reason="end_turn")
    result = fsm.reassemble([chunk])
    said = messages.assistant_message(result, "anthropic")
    assert said["content"] == [{"type": "text", "text": "Hi", "citations": [kept]}]
    # The three left out are said so, each by its place: nothing is dropped in silence.
    unread = [d.message for d in result.diagnostics if d.code == "part-not-reassembled"]
    assert [m.split(" (")[0] for m in unread] == ["annotation 1", "annotation 2", "annotation 3"]
    assert all("text block at index 0" in m for m in unread)


@pytest.mark.parametrize("language", [1, 2.5, False, ["PYTHON"], {"name": "PYTHON"}])
@pytest.mark.parametrize("v1", [False, True])
def test_gemini_code_whose_language_is_no_string_is_reported_as_the_decoder_reports_it(language: Any, v1: bool) -> None:
    # a language of a wrong type was dropped without a word and the code kept without it, where the
    # Gemini decoder reports the part (part-not-reassembled) and does not read it, nor send it back
    from langchain_core.messages import AIMessageChunk

    meta = {"model_provider": "google_genai"}
    if v1:
        args = {"code": "print(1)", "language": language}
        block: dict[str, Any] = {"type": "server_tool_call", "name": "code_interpreter", "args": args, "id": "x1"}
        said = {"type": "server_tool_result", "output": "1\n", "extras": {"block_type": "code_execution_result"}}
    else:
        block = {"type": "executable_code", "executable_code": "print(1)", "language": language}
        said = {"type": "code_execution_result", "code_execution_result": "1\n", "outcome": 1}
    report = {"type": "tool_call_chunk", "name": "report", "args": "{}", "id": "c1", "index": 2}
    chunks = [
        AIMessageChunk(content=[block], response_metadata=meta),
        AIMessageChunk(content=[said], response_metadata=meta),
        AIMessageChunk(content="", tool_call_chunks=[report], response_metadata={**meta, "finish_reason": "STOP"}),
    ]
    result = fsm.reassemble(chunks)
    kind = type(language).__name__
    notes = [(d.event, d.message) for d in result.diagnostics if d.code == "part-not-reassembled"]
    assert notes == [(1, f"a {block['type']!r} content block whose language is {kind}, not a string: it is not read")]
    assert not result.server_tool_calls
    assert [c.name for c in result.calls] == ["report"]  # the rest of the turn is kept
    # as from the bytes: the part reported at its event, and neither the code nor its result goes back
    body = gemini_sse(
        [
            event("gemini-2.5-flash", [{"executableCode": {"language": language, "code": "print(1)"}}]),
            event("gemini-2.5-flash", [outcome("1\n")]),
            event("gemini-2.5-flash", [call("report", "c1")], "STOP"),
        ]
    )
    reference = fsm.reassemble(body, "gemini")
    assert [d.event for d in reference.diagnostics if d.code == "part-not-reassembled"] == [1]
    assert (
        messages.assistant_message(result, "gemini")["parts"]
        == messages.assistant_message(reference, "gemini")["parts"]
    )
