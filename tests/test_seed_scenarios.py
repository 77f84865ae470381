"""The seed scenarios: each a way real servers stream tool calls that naive reassemblers get wrong."""

from __future__ import annotations

from fsm import CallStatus, Policies
from tests.helpers import calls, chunk, run, tc


def test_two_calls_to_one_tool_in_separate_events_are_two_calls() -> None:
    # Gemini-style: every call at index 0, no ids. Naive concatenation gives {"q":"A"}{"q":"B"}.
    result = run(
        [
            chunk(tc(index=0, name="search", args='{"q": "A"}')),
            chunk(tc(index=0, name="search", args='{"q": "B"}')),
            chunk(finish="tool_calls"),
        ]
    )
    assert calls(result) == [("search", {"q": "A"}), ("search", {"q": "B"})]
    assert [c.status for c in result.calls] == [CallStatus.COMPLETE] * 2


def test_a_b_b_gives_two_calls_not_three() -> None:
    # The resend of B must land in B's slot, which was itself derived from a collision.
    result = run(
        [
            chunk(tc(index=0, name="search", args='{"q": "A"}')),
            chunk(tc(index=0, name="search", args='{"q": "B"}')),
            chunk(tc(index=0, name="search", args='{"q": "B"}')),
            chunk(finish="tool_calls"),
        ]
    )
    assert calls(result) == [("search", {"q": "A"}), ("search", {"q": "B"})]
    assert "resend" in result.codes()


def test_a_b_a_resend_lands_in_the_first_slot() -> None:
    result = run(
        [
            chunk(tc(index=0, name="search", args='{"q": "A"}')),
            chunk(tc(index=0, name="search", args='{"q": "B"}')),
            chunk(tc(index=0, name="search", args='{"q": "A"}')),
        ]
    )
    assert calls(result) == [("search", {"q": "A"}), ("search", {"q": "B"})]


def test_identical_resend_is_one_call_by_default() -> None:
    events = [
        chunk(tc(index=0, name="get_time", args="{}")),
        chunk(tc(index=0, name="get_time", args="{}")),
        chunk(finish="tool_calls"),
    ]
    assert calls(run(events)) == [("get_time", {})]


def test_identical_text_policy_new_call_counts_it_twice() -> None:
    events = [
        chunk(tc(index=0, name="get_time", args="{}")),
        chunk(tc(index=0, name="get_time", args="{}")),
        chunk(finish="tool_calls"),
    ]
    result = run(events, policies=Policies(identical_text="new-call"))
    assert calls(result) == [("get_time", {}), ("get_time", {})]
    assert len({c.id for c in result.calls}) == 2


def test_partial_json_continues_in_one_slot() -> None:
    result = run(
        [
            chunk(tc(index=0, id="call_1", name="weather", args="")),
            chunk(tc(index=0, args='{"loc')),
            chunk(tc(index=0, args='ation": "Par')),
            chunk(tc(index=0, args='is", "days": [1, ')),
            chunk(tc(index=0, args="2]}")),
            chunk(finish="tool_calls"),
        ]
    )
    assert calls(result) == [("weather", {"location": "Paris", "days": [1, 2]})]
    assert result.calls[0].id == "call_1"


def test_parallel_calls_in_one_event() -> None:
    result = run(
        [
            chunk(
                tc(index=0, id="a", name="add", args='{"x": 1}'),
                tc(index=1, id="b", name="sub", args='{"x": 2}'),
            ),
            chunk(finish="tool_calls"),
        ]
    )
    assert calls(result) == [("add", {"x": 1}), ("sub", {"x": 2})]


def test_parallel_calls_in_one_event_without_index_or_id_use_position() -> None:
    result = run(
        [
            chunk(tc(name="add", args='{"x": 1}'), tc(name="sub", args='{"x": 2}')),
            chunk(finish="tool_calls"),
        ]
    )
    assert calls(result) == [("add", {"x": 1}), ("sub", {"x": 2})]
    assert result.codes().count("synthesized-id") == 2


def test_index_reuse_with_new_ids_opens_new_calls() -> None:
    # Ollama: index 0 for the whole batch, a fresh id per call.
    result = run(
        [
            chunk(tc(index=0, id="call_a", name="ls", args='{"path": "/"}')),
            chunk(tc(index=0, id="call_b", name="ls", args="")),
            chunk(tc(index=0, args='{"path": "/tmp"}')),  # a bare index continues the newest call there
            chunk(finish="tool_calls"),
        ]
    )
    assert [(c.id, c.arguments) for c in result.calls] == [("call_a", {"path": "/"}), ("call_b", {"path": "/tmp"})]


def test_mixed_reuse_and_increment_gives_three_calls() -> None:
    result = run(
        [
            chunk(tc(index=0, id="a", name="f", args='{"n": 1}')),
            chunk(tc(index=0, id="b", name="f", args='{"n": 2}')),
            chunk(tc(index=1, id="c", name="f", args='{"n": 3}')),
            chunk(finish="tool_calls"),
        ]
    )
    assert [(c.id, c.arguments) for c in result.calls] == [("a", {"n": 1}), ("b", {"n": 2}), ("c", {"n": 3})]


def test_no_index_with_distinct_ids_per_event_is_one_call_per_id_in_order() -> None:
    result = run(
        [
            chunk(tc(id="x1", name="f", args='{"n": 1}')),
            chunk(tc(id="x2", name="g", args='{"n": 2}')),
            chunk(tc(id="x3", name="f", args='{"n": 3}')),
            chunk(finish="tool_calls"),
        ]
    )
    assert [(c.id, c.name, c.arguments) for c in result.calls] == [
        ("x1", "f", {"n": 1}),
        ("x2", "g", {"n": 2}),
        ("x3", "f", {"n": 3}),
    ]


def test_fragments_of_one_id_across_events_are_joined() -> None:
    result = run(
        [
            chunk(tc(id="x1", name="f", args='{"text": "hel')),
            chunk(tc(id="x2", name="g", args='{"n": ')),
            chunk(tc(id="x1", args='lo"}')),
            chunk(tc(id="x2", args="2}")),
            chunk(finish="tool_calls"),
        ]
    )
    assert [(c.id, c.arguments) for c in result.calls] == [("x1", {"text": "hello"}), ("x2", {"n": 2})]


def test_explicit_indices_are_labels_and_interleave_unchanged() -> None:
    # A first call at index 1 (a gateway fallback) and interleaved fragments per index.
    result = run(
        [
            chunk(tc(index=1, id="a", name="f", args='{"a": ')),
            chunk(tc(index=3, id="b", name="g", args='{"b": ')),
            chunk(tc(index=1, args="1}")),
            chunk(tc(index=3, args="2}")),
            chunk(finish="tool_calls"),
        ]
    )
    assert [(c.index, c.id, c.arguments) for c in result.calls] == [(0, "a", {"a": 1}), (1, "b", {"b": 2})]
    assert result.diagnostics == ()


def test_duplicate_ids_are_renamed_deterministically() -> None:
    events = [
        chunk(tc(index=0, id="call_X", name="f", args='{"n": 1}')),
        chunk(tc(index=1, id="call_X", name="f", args='{"n": 2}')),
        chunk(tc(index=2, id="call_X", name="f", args='{"n": 3}')),
        chunk(finish="tool_calls"),
    ]
    first, again = run(events), run(events)
    assert [c.id for c in first.calls] == ["call_X", "call_X_d2", "call_X_d3"]
    assert [c.wire_id for c in first.calls] == ["call_X"] * 3
    assert first == again  # same stream, same ids, byte for byte
    assert first.codes().count("duplicate-id") == 2


def test_taken_ids_from_earlier_turns_are_avoided() -> None:
    result = run([chunk(tc(index=0, id="call_1", name="f", args="{}"))], taken=["call_1", "call_1_d2"])
    assert result.calls[0].id == "call_1_d3"
    assert result.calls[0].wire_id == "call_1"


def test_same_id_different_arguments_later_is_a_second_call() -> None:
    # DeepSeek and GLM reuse ids; without an index to tell them apart, the text does.
    result = run(
        [
            chunk(tc(id="dup", name="f", args='{"n": 1}')),
            chunk(tc(id="dup", name="f", args='{"n": 2}')),
            chunk(finish="tool_calls"),
        ]
    )
    assert [(c.id, c.arguments) for c in result.calls] == [("dup", {"n": 1}), ("dup_d2", {"n": 2})]
