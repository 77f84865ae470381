"""The conformance vectors: every one passes, together they exercise every part of the spec, and
the format refuses malformed files."""

from __future__ import annotations

import io
import json
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fsm.cli import main
from fsm.errors import SpecError
from fsm.harness import conformance
from fsm.harness.vectors import VECTOR_DIR, load_vector, load_vectors

VECTORS = load_vectors()
ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("vector", VECTORS, ids=[v.name for v in VECTORS])
def test_vector_passes(vector: conformance.Vector) -> None:
    result, _ = conformance.replay(vector)
    assert conformance.check(vector, result) == []


def test_vectors_exercise_every_transition_rule_diagnostic_policy_and_shape() -> None:
    _, coverage = conformance.run_vectors(VECTORS)
    assert coverage.missing() == {kind: [] for kind in coverage.missing()}


def test_a_failing_vector_is_reported_with_its_problem(tmp_path: Path) -> None:
    data = json.loads((VECTOR_DIR / "openai-a-b-b.json").read_text())
    data["expect"]["calls"] = data["expect"]["calls"][:1]
    (tmp_path / "wrong.json").write_text(json.dumps(data))
    outcomes, _ = conformance.run_vectors(load_vectors(tmp_path))
    assert not outcomes[0].passed and "2 calls, expected 1" in outcomes[0].problems[0]


def test_a_vector_that_expects_another_finish_word_or_message_fails(tmp_path: Path) -> None:
    data = json.loads((VECTOR_DIR / "vertex-max-tokens-cut-with-finish-message.json").read_text())
    data["expect"].update(raw_finish_reason="SAFETY", finish_message="Blocked.")
    (tmp_path / "wrong.json").write_text(json.dumps(data))
    outcomes, _ = conformance.run_vectors(load_vectors(tmp_path))
    assert list(outcomes[0].problems) == [
        "raw_finish_reason 'MAX_TOKENS', expected 'SAFETY'",
        "finish_message 'The response reached the maximum output tokens.', expected 'Blocked.'",
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(colour="red"), "colour"),
        (lambda d: d.update(shape="carrier-pigeon"), "unknown shape"),
        (lambda d: d.update(policies={"identical_text": "maybe"}), "policy identical_text"),
        (lambda d: d["expect"].update(diagnostics=["nope"]), "undeclared diagnostics"),
        (lambda d: d.update(body="data: {}\n\n"), "either events or body"),
        (lambda d: d["expect"]["calls"][0].update(status="finished"), "status must be one of"),
        # cattrs' own hooks wrote any value as text: 5 was the name "5", a list the message "['x']"
        (lambda d: d.update(name=5), "attribute name: 5 is int, not str"),
        (lambda d: d.update(interrupted=["x"]), r"attribute interrupted: \['x'\] is list, not str"),
        (lambda d: d["expect"]["calls"][0].update(id=True), "attribute id: True is bool, not str"),
        (lambda d: d["expect"]["calls"][0].update(output_index="2"), "attribute output_index: '2' is str, not int"),
    ],
)
def test_malformed_vectors_are_refused(tmp_path: Path, change: object, message: str) -> None:
    data = json.loads((VECTOR_DIR / "openai-a-b-b.json").read_text())
    change(data)  # type: ignore[operator]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(SpecError, match=message):
        load_vector(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1]", "a vector is a JSON object, not list"),  # AttributeError from cattrs before
        ("null", "a vector is a JSON object, not NoneType"),
        ("[" * 100_000 + "]" * 100_000, "cannot read"),  # RecursionError from the parser before
        (
            json.dumps({**json.loads((VECTOR_DIR / "openai-a-b-b.json").read_text()), "events": [], "body": "\ud800"}),
            "the body is not UTF-8 text",  # UnicodeEncodeError when replayed before
        ),
    ],
    ids=["list", "null", "deep", "lone-surrogate-body"],
)
def test_vector_files_that_are_no_vector_are_spec_errors_and_conform_exits_1(
    tmp_path: Path, text: str, message: str
) -> None:
    (tmp_path / "bad.json").write_text(text)
    with pytest.raises(SpecError, match=message):
        load_vector(tmp_path / "bad.json")
    err = io.StringIO()
    assert main(["conform", "--vectors", str(tmp_path)], stdout=io.StringIO(), stderr=err) == 1
    assert message in err.getvalue() and len(err.getvalue().splitlines()) == 1


def test_conform_command_prints_the_table_and_coverage() -> None:
    out = io.StringIO()
    assert main(["conform"], stdout=out, stderr=sys.stderr) == 0
    text = out.getvalue()
    assert f"{len(VECTORS)} passed, 0 failed" in text
    assert "coverage: slot transitions: all exercised" in text


def test_conform_against_an_external_reassembler_by_the_protocol() -> None:
    command = f"{sys.executable} {ROOT / 'tools' / 'adapters' / 'toolcall_fsm.py'}"
    vectors = [v for v in VECTORS if v.events][:12]
    outcomes = [conformance.run_external(command, v) for v in vectors]
    assert all(o.passed for o in outcomes), [o for o in outcomes if not o.passed]


@pytest.mark.parametrize("name", ["openai-malformed-event-fails-the-stream", "openai-arguments-5000-digit-integer"])
def test_the_reference_adapter_passes_a_failed_stream_and_exact_numbers(name: str) -> None:
    """The adapter the README grades this engine by: a stream that fails part-way still gives the
    calls completed before it, and a number no float holds goes out digit for digit (it exited 1 on
    both, so the README's 48 / 48 was 61 / 63 once these vectors came)."""
    command = f"{sys.executable} {ROOT / 'tools' / 'adapters' / 'toolcall_fsm.py'}"
    (vector,) = [v for v in VECTORS if v.name == name]
    outcome = conformance.run_external(command, vector)
    assert outcome.passed, outcome.problems


def test_external_failures_are_graded_not_raised() -> None:
    vector = VECTORS[0]
    crashing = conformance.run_external(f"{sys.executable} -c 'raise SystemExit(3)'", vector)
    silent = conformance.run_external(f"{sys.executable} -c 'print(\"[]\")'", vector)
    assert not crashing.passed and "exit 3" in crashing.problems[0]
    assert not silent.passed and "0 calls" in silent.problems[0]
    for printed, problem in [
        ("print(1)", "output is not a list of call objects"),  # TypeError before
        ("print('{\"calls\": [1]}')", "output is not a list of call objects"),
        ("import sys; sys.stdout.buffer.write(bytes([0xff, 0x5b]))", "output is not JSON"),  # UnicodeDecodeError
        ("print('[' * 100_000)", "output nests too deeply to read"),  # RecursionError: `conform` exited 3
        ("print('{\"calls\": [{\"arguments\": ' + '[' * 990 + ']' * 990 + '}]}')", "output nests too deeply to read"),
        # Under any Python's own parsing limit (3.13's C parser reads 990 levels): the harness's bound.
        ("print('{\"calls\": [{\"arguments\": ' + '[' * 600 + ']' * 600 + '}]}')", "output nests too deeply to read"),
    ]:
        outcome = conformance.run_external(f"{sys.executable} -c {shlex.quote(printed)}", vector)
        assert not outcome.passed and outcome.problems == (problem,), printed


def test_output_within_the_depth_bound_is_read() -> None:
    """The bound is the harness's, not the parser's: arguments nested as deep as it allows are
    read and graded as calls (here one call where the vector wants two)."""
    depth = conformance.OUTPUT_DEPTH - 3  # {"calls": [{"arguments": ...}]} adds three levels
    printed = f"print('{{\"calls\": [{{\"arguments\": ' + '[' * {depth} + ']' * {depth} + '}}]}}')"
    outcome = conformance.run_external(f"{sys.executable} -c {shlex.quote(printed)}", VECTORS[0])
    assert not outcome.passed and outcome.problems[0].startswith("1 calls, expected"), outcome.problems


@pytest.mark.parametrize(("script", "module"), [("openai_python.py", "openai"), ("langchain.py", "langchain_openai")])
def test_peer_adapters_speak_the_protocol(script: str, module: str) -> None:
    pytest.importorskip(module)
    command = f"{sys.executable} {ROOT / 'tools' / 'adapters' / script}"
    plain = next(v for v in VECTORS if v.name == "openai-parallel-one-event")
    assert conformance.run_external(command, plain).passed  # the case every implementation handles
    other = next(v for v in VECTORS if v.shape == "anthropic")
    assert not conformance.run_external(command, other).applicable
    collision = next(v for v in VECTORS if v.name == "openai-two-calls-one-tool-index-reuse")
    assert not conformance.run_external(command, collision).passed  # the bug this project exists for


def _replay_fingerprint(vector: conformance.Vector) -> object:
    try:
        result, r = conformance.replay(vector)
    except Exception as exc:  # the same error either way is the same behaviour
        return (type(exc).__name__, str(exc))
    return (result, dict(r.ledger.rules), dict(r.ledger.transitions))


def test_the_continuation_fast_path_decides_and_counts_as_the_general_routing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Registry._continuation is a shortcut for the commonest event; without it every event takes
    the general routing. Same calls, diagnostics, rule counts and transitions either way."""
    from fsm.engine.registry import Registry
    from fsm.harness.fuzz.run import sample_vectors
    from fsm.harness.fuzz.shapes import CASES

    vectors = [*VECTORS, *(v for shape in CASES for v in sample_vectors(shape, 25))]
    fast = [_replay_fingerprint(v) for v in vectors]
    monkeypatch.setattr(Registry, "_continuation", lambda self, ref, text: None)
    general = [_replay_fingerprint(v) for v in vectors]
    for vector, a, b in zip(vectors, fast, general, strict=True):
        assert a == b, vector.name


def _replay_with_trace(vector: conformance.Vector) -> object:
    """A replay's result, every output it emitted, every transition each call took (in order) and
    the rule counts."""
    from fsm import Policies, Reassembler
    from tests.helpers import replay_traced

    def feed(r: Reassembler) -> Iterator[list[Any]]:
        if vector.body is not None:
            yield r.feed_bytes(vector.body.encode("utf-8"))
        for event in vector.events:
            yield r.feed(event)

    choice = getattr(vector, "choice", None)  # (a made stream has none)
    reassembler = Reassembler(vector.shape, policies=Policies(**vector.policies), choice=choice)
    return replay_traced(reassembler, feed)


def test_the_compiled_table_and_the_transitions_machine_execute_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine runs the slot spec from its compiled table; the transitions machine built from
    the same spec is the reference. Over every vector and a thousand fuzzed streams both take the
    same transitions in the same order, emit the same outputs and calls, and count the same rules."""
    from fsm.engine import registry
    from fsm.engine.machine import slot_machine
    from fsm.harness.fuzz.run import sample_vectors
    from fsm.harness.fuzz.shapes import CASES

    vectors = [*VECTORS, *(v for shape in CASES for v in sample_vectors(shape, 1000 // len(CASES) + 1))]
    assert len(vectors) > 1000
    table = [_replay_with_trace(v) for v in vectors]
    monkeypatch.setattr(registry, "slot_machine", lambda reference=False: slot_machine(reference=True))
    reference = [_replay_with_trace(v) for v in vectors]
    for vector, a, b in zip(vectors, table, reference, strict=True):
        assert a == b, vector.name


def test_the_commonest_chunk_shortcut_decides_as_the_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reassembler takes the commonest OpenAI chat chunk (one bare fragment) straight to the
    registry, and a chunk of text or reasoning alone straight to the turn's content; without the
    shortcuts every chunk goes through the decoder. Same transitions in
    order, outputs, calls, diagnostics and rule counts either way."""
    from fsm.harness.fuzz.run import sample_vectors
    from fsm.wire.decoders import chat_chunks
    from tests.helpers import without_reader

    vectors = [*VECTORS, *sample_vectors("openai-chat", 300)]
    deltas = [chat_chunks.plain_delta(e) or {} for v in vectors for e in v.events if type(e) is dict]
    taken = [chat_chunks.bare_fragment_in(*found) for d in deltas if (found := chat_chunks.one_entry(d))]
    assert sum(t is not None for t in taken) > 150  # the shortcut is taken, often (~200 of these)
    fast = [_replay_with_trace(v) for v in vectors]
    without_reader(monkeypatch, "bare_fragment_in")
    without_reader(monkeypatch, "said_in")
    general = [_replay_with_trace(v) for v in vectors]
    for vector, a, b in zip(vectors, fast, general, strict=True):
        assert a == b, vector.name


def test_text_reasoning_or_usage_beside_a_fragment_is_not_skipped_by_the_shortcut() -> None:
    from fsm import Reassembler

    def chunk(delta: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": delta}], **extra}

    def fragment(text: str) -> dict[str, Any]:
        return {"tool_calls": [{"index": 0, "function": {"arguments": text}}]}

    r = Reassembler("openai-chat")
    r.feed(chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": ""}}]}))
    r.feed(chunk({**fragment('{"a"'), "content": "hello"}))
    r.feed(chunk({**fragment(": 1"), "reasoning_content": "thinking"}))
    r.feed(chunk(fragment("}"), usage={"total_tokens": 7}))
    # a Gemini text part's signature (fsm.wire.sdk writes it on the delta), with no text beside it
    r.feed(chunk({**fragment(" "), "extra_content": {"google": {"thought_signature": "c2ln"}}}))
    result = r.close()
    assert result.calls[0].arguments == {"a": 1}
    assert result.text == "hello" and result.text_signature == "c2ln"
    assert [x.text for x in result.reasoning] == ["thinking"]
    assert result.usage == {"total_tokens": 7}


def test_bare_fragments_at_the_edges_decide_as_the_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registry.bare_fragment (the commonest chunk's route) on the fragments it must hand over to
    the general routing: one that closes the value and starts another, whitespace alone, a
    cumulative repeat, a fragment for a call not yet open or already closed, text past a depth or
    size limit. Same transitions, outputs, calls and rule counts as through the decoder."""
    from fsm import Limits, Reassembler
    from fsm.wire.decoders import chat_chunks
    from tests.helpers import without_reader

    def chunk(index: int, text: str, **head: Any) -> dict[str, Any]:
        entry: dict[str, Any] = {"index": index, "function": {"arguments": text}}
        if head:
            entry["id"] = head["id"]
            entry["function"]["name"] = head["name"]
        return {"choices": [{"index": 0, "delta": {"tool_calls": [entry]}}]}

    streams = [
        [chunk(0, "", id="a", name="f"), chunk(0, '{"q": [1'), chunk(0, ", 2]}"), chunk(0, '{"q": 3}'), chunk(0, " ")],
        [chunk(0, "", id="a", name="f"), chunk(0, '{"q": "x"'), chunk(0, '}{"r": 1'), chunk(0, "}")],
        [chunk(0, "", id="a", name="f"), chunk(0, '{"q"'), chunk(0, '{"q": 1}'), chunk(0, '{"q": 1}')],
        [chunk(0, "", id="a", name="f"), chunk(0, "  "), chunk(0, '{"q"'), chunk(0, ": 1}")],
        [chunk(1, '{"q": 1}'), chunk(0, "", id="a", name="f"), chunk(0, "[[[[[["), chunk(0, "]]]]]]")],
        [chunk(0, "", id="a", name="f"), chunk(0, '{"q": "' + "x" * 40), chunk(0, "y" * 40 + '"}')],
        [chunk(0, "", id="a", name="f"), chunk(0, '{"q": "\ud83d'), chunk(0, '\ude42"}'), chunk(0, "\t")],
    ]
    limits = Limits(max_depth=4, max_argument_chars=64)

    def replay(events: list[dict[str, Any]]) -> object:
        r = Reassembler("openai-chat", limits=limits)
        outputs: list[object] = []
        try:
            for event in events:
                outputs += r.feed(event)
        except Exception as exc:  # the same error either way is the same behaviour
            outputs.append((type(exc).__name__, str(exc)))
        return (r.close(), outputs, dict(r.ledger.rules), dict(r.ledger.transitions))

    bare = [e for s in streams for e in s if "id" not in e["choices"][0]["delta"]["tool_calls"][0]]
    found = [chat_chunks.one_entry(chat_chunks.plain_delta(e) or {}) for e in bare]
    assert all(f is not None and chat_chunks.bare_fragment_in(*f) is not None for f in found)
    fast = [replay(s) for s in streams]
    without_reader(monkeypatch, "bare_fragment_in")
    assert fast == [replay(s) for s in streams]


def _slot_state(slot: Any) -> tuple[object, ...]:
    """What a call holds inside: its state, its scan's, its text and how much of it went out."""
    scanner = slot.scanner
    return (
        slot.state,
        slot.status,
        scanner.state,
        scanner.depth,
        scanner.complete,
        bytes(slot._buf),
        slot._length,
        slot._emitted,
        slot._unscanned,
        slot._blank,
        slot._high,
    )


def test_transitions_taken_directly_decide_as_firing_append(monkeypatch: pytest.MonkeyPatch) -> None:
    """Some transitions are taken without the machine's dispatch when what they do is known:
    Slot.store_waiting (accumulating to accumulating, a fragment whose scan waits or leaves the
    value open, or to value_closed when it closes it), Slot.store_first (a call's first text, from
    opened), Slot.store_whole (opened to value_closed, a whole flat object as a call's first text
    in the event that opens it) and a closed value's normal end (value_closed to flushed,
    Slot.end_closed). Refusing them sends
    every trigger through fire(). Over every vector, fuzzed streams of every
    shape and fragments at the edges (limits, surrogate halves, brackets that wait or must be
    scanned, whitespace, whole calls that are nested, not JSON or too long): the same transitions
    in order, outputs, calls, diagnostics and rule counts either way."""
    from fsm import Limits, Reassembler
    from fsm.engine.registry import Registry
    from fsm.engine.slot import Slot
    from fsm.harness.fuzz.run import sample_vectors
    from fsm.harness.fuzz.shapes import CASES
    from tests.helpers import replay_traced

    def chunk(text: str, head: bool = False, index: int = 0) -> dict[str, Any]:
        entry: dict[str, Any] = {"index": index, "function": {"arguments": text}}
        if head:
            entry["id"], entry["function"]["name"] = f"a{index}", "f"
        return {"choices": [{"index": 0, "delta": {"tool_calls": [entry]}}]}

    pieces = ['{"q": "', "x" * 30, "\ud83d", "\ude42", "[[", "]]", "\t", "y" * 40, '"', "}", ": [1, {", "}], ", " "]
    edges = [[chunk("", head=True), *(chunk(p) for p in order)] for order in (pieces, pieces[::-1], pieces[2:])]
    wholes = ['{"q": 1}', '{"q": "\ud83d"}', '{"q": [1]}', '{"q": "' + "z" * 100 + '"}', '{"q": }', '{"q": NaN}']
    wholes += ["{}", '{"a": 1}{"b": 2}', ' {"q": 1}', '{"q": 1, "q": 2}', '{"q": "}"}', "[1]"]
    edges.append([chunk(text, head=True, index=k) for k, text in enumerate(wholes)])
    edges.append([chunk(text, head=True) for text in wholes[:3]])  # one index: resends and later calls
    # Scans that run at a bracket (Slot._scan_now): after a long waiting text, closing the value
    # with whitespace or with another value after it, and passing the depth limit.
    for close in ("]}", "]} \n", ']} {"r": 1}', "]]]}", "[[[[", "] ", "]}}"):
        for waiting in ("z" * 20, "z" * 20000):
            edges.append([chunk('{"q": [', head=True), chunk('"' + waiting + '"'), chunk(close)])
    # Calls that share index 0, each closed by a fragment whose scan runs now, then the last one's
    # text again (no id): a resend, found through the closed values' index (Registry._remember).
    lane = []
    for k in range(3):
        header = {"index": 0, "id": f"c{k}", "function": {"name": "f", "arguments": ""}}
        lane.append({"choices": [{"index": 0, "delta": {"tool_calls": [header]}}]})
        lane += [chunk(piece) for piece in ['{"a": [', f'"x{k}"', "]}"]]
    edges.append([*lane, chunk('{"a": ["x2"]}')])
    vectors = [*VECTORS, *(v for shape in CASES for v in sample_vectors(shape, 60))]

    def replays() -> list[object]:
        out = [_replay_with_trace(v) for v in vectors]
        for limits in (Limits(), Limits(max_depth=3, max_argument_chars=90)):
            for events in edges:

                def feed(r: Reassembler, events: list[dict[str, Any]] = events) -> Iterator[list[Any]]:
                    for event in events:
                        yield r.feed(event)

                r = Reassembler("openai-chat", limits=limits)
                out.append(replay_traced(r, feed))
                out.append([_slot_state(slot) for slot in r.registry.slots])  # not only what shows
        return out

    took: dict[str, int] = {}
    for method in ("store_waiting", "store_whole", "store_first"):
        real = getattr(Slot, method)

        def counted(slot: Slot, *args: Any, real: Any = real, method: str = method, **how: Any) -> Any:
            taken = real(slot, *args, **how)
            took[method] = took.get(method, 0) + bool(taken)
            if method != "store_whole" and str(taken).endswith("->value_closed"):
                took["closing"] = took.get("closing", 0) + 1  # the value closed: the other transition
            return taken

        monkeypatch.setattr(Slot, method, counted)
    ended = Slot.end_closed

    def ending(slot: Slot, label: str, dest: str) -> bool:
        took["end"] = took.get("end", 0) + 1
        return ended(slot, label, dest)

    monkeypatch.setattr(Slot, "end_closed", ending)
    direct = replays()
    assert took["store_waiting"] > 50 and took["store_whole"] > 20 and took["end"] > 100, took  # taken, often
    assert took["closing"] > 20 and took["store_first"] > 20, took
    monkeypatch.setattr(Slot, "store_waiting", lambda slot, text, label, closing, scan_now=False: "")
    monkeypatch.setattr(Slot, "store_whole", lambda slot, text, label, dest, closed: False)
    monkeypatch.setattr(Slot, "store_first", lambda slot, text, opening, closing, closed: "")
    monkeypatch.setattr(Registry, "end_directly", False)
    general = replays()
    assert len(direct) == len(general)
    for a, b in zip(direct, general, strict=True):
        assert a == b


def test_the_transitions_taken_directly_must_be_as_the_spec_says() -> None:
    """The code that takes two transitions without fire() does what the spec says they do: the
    hot one must stay in its state, and the first from opened be guarded by value_complete, both
    running store_fragment."""
    from fsm.engine.machine import slot_machine
    from fsm.errors import SpecError

    machine = slot_machine()
    assert machine.staying("append", "accumulating", "store_fragment") == "accumulating--append->accumulating"
    with pytest.raises(SpecError, match="store_snapshot"):
        machine.staying("append", "accumulating", "store_snapshot")
    with pytest.raises(SpecError):
        machine.staying("append", "opened", "store_fragment")  # it moves on to accumulating
    assert machine.otherwise("append", "opened", "store_fragment") == (
        "opened--append->accumulating",
        "accumulating",
    )
    with pytest.raises(SpecError, match="store_snapshot"):
        machine.otherwise("append", "opened", "store_snapshot")
    with pytest.raises(SpecError, match="one guarded transition"):
        machine.otherwise("append", "receiving", "store_fragment")  # its only one: no guarded one first
    assert machine.first("append", "opened", "value_complete", "store_fragment") == (
        "opened--append[value_complete]->value_closed",
        "value_closed",
    )
    with pytest.raises(SpecError, match="blank_fragment"):
        machine.first("append", "opened", "blank_fragment", "store_fragment")
    assert machine.sole("end", "value_closed", "parse_arguments") == ("value_closed--end->flushed", "flushed")
    with pytest.raises(SpecError, match="does not run"):
        machine.sole("end", "value_closed", "mark_truncated")
    with pytest.raises(SpecError, match="not one unguarded"):
        machine.sole("end", "accumulating", "mark_unterminated")  # no_text is tried first
    with pytest.raises(SpecError, match="not one unguarded"):
        machine.sole("append", "accumulating", "store_fragment")  # a prepare step, and a guarded one first


def test_text_and_reasoning_chunks_decide_as_the_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """said_in (the route of a chunk that only says text or reasoning) on the chunks it takes
    and those it must leave to the decoder: both fields at once, either reasoning key, a field that
    is not text, empty text, beside tool calls, usage, a finish reason, another choice, after the
    finish. Same content, outputs, diagnostics and rule counts as through the decoder."""
    from fsm import Reassembler
    from fsm.wire.decoders import chat_chunks
    from tests.helpers import without_reader

    def chunk(delta: dict[str, Any] | None, choice_index: int = 0, **extra: Any) -> dict[str, Any]:
        return {"choices": [{"index": choice_index, "delta": delta, **extra.pop("choice", {})}], **extra}

    call = {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": '{"a": 1}'}}]}
    stream = [
        chunk({"role": "assistant", "content": "", "reasoning_content": "think"}),
        chunk({"reasoning": " more"}),
        chunk({"content": "Hi", "reasoning_content": " and"}),
        chunk({"content": ["not", "text"], "reasoning": 7}),
        chunk({"content": " there", "tool_calls": []}),
        chunk({"content": "!", "function_call": None}),
        chunk({"content": " x"}, choice_index=1),
        chunk({"content": " y"}, usage={"total_tokens": 3}),
        chunk({"content": " z", **call}),
        chunk({"content": " signed", "extra_content": {"google": {"thought_signature": "c2lnMQ=="}}}),
        chunk({"extra_content": {"google": {"thought_signature": "c2lnMg=="}}}),
        chunk({"content": "", "extra_content": {"other": 1}}),
        chunk({"content": " end"}, choice={"finish_reason": "tool_calls"}),
        chunk({"content": " late"}),
        chunk(None),
    ]

    def replay() -> tuple[Any, ...]:
        r = Reassembler("openai-chat")
        outputs = [r.feed(event) for event in stream]
        result = r.close()
        return (result, result.text, result.reasoning, outputs, dict(r.ledger.rules))

    assert sum(bool(chat_chunks.said_in(chat_chunks.plain_delta(e) or {"tool_calls": []})) for e in stream) >= 7
    fast = replay()
    assert fast[0].text_signature == "c2lnMg=="
    without_reader(monkeypatch, "said_in")
    assert fast == replay()
