"""Work stays linear in hostile megabyte input on paths where it grew with the square of a count:
many Gemini code parts under one id, many calls renamed from one long id, a built-in call's action
holding a huge value its tool cannot take. Work is counted (the ledger's count of characters and
routing candidates visited, or the steps an id search takes), or, where nothing counts it, compared
loosely at 1x and 8x the input. What the registry keeps to route resends is bounded by the calls
and the texts they hold, not the events (a call replaced again and again), and routes as a walk of
the lane would."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from typing import Any

import pytest

import fsm
from fsm.engine.ids import IdAllocator
from fsm.engine.registry import Registry
from fsm.events import ArgumentsFragment, ArgumentsSnapshot, CallEnd, CallRef, CallSeen
from fsm.wire.decoders._built_in_actions import _shown, action_fault
from tests.helpers import chunk, count_finished_reads, tc


def code_parts(n: int, wire_id: str | None, *, resent: int = 0) -> list[dict[str, Any]]:
    """n Gemini events of one ``executableCode`` part each (``wire_id`` on every part, or none), a
    different code of ~250 characters in each, then the last event again ``resent`` times."""
    events = []
    for k in range(n):
        part: dict[str, Any] = {"language": "PYTHON", "code": f"print({k})  # " + "x" * 240}
        if wire_id is not None:
            part["id"] = wire_id
        events.append({"candidates": [{"content": {"role": "model", "parts": [{"executableCode": part}]}}]})
    return events + [events[-1]] * resent


def work_per_event(events: list[dict[str, Any]]) -> float:
    limits = fsm.Limits(max_calls=10_000, max_diagnostics_per_code=5)
    r = fsm.Reassembler("gemini", limits=limits)
    for event in events:
        r.feed(event)
    result = r.close()
    assert len(result.server_tool_calls) == len(
        {e["candidates"][0]["content"]["parts"][0]["executableCode"]["code"] for e in events}
    )
    return r.ledger.work / len(events)


@pytest.mark.parametrize("wire_id", ["code-1", "", None])
def test_many_code_parts_under_one_id_cost_the_same_per_part(wire_id: str | None) -> None:
    # each part's text was compared with every call held under its id before it opened another:
    # 500 parts cost 259 units of work each, 4,000 parts (1 MB) 2,010 each (5.8 s)
    small, large = work_per_event(code_parts(500, wire_id)), work_per_event(code_parts(4_000, wire_id))
    assert large <= small * 1.25, (small, large)


def finished_reads_per_event(events: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> float:
    """How often a call is asked whether it has finished, per event: each ask is a call visited."""
    reads = count_finished_reads(monkeypatch)
    work_per_event(events)
    monkeypatch.undo()
    return reads[0] / len(events)


def test_an_openai_call_resent_after_many_under_one_id_costs_the_same_per_resend() -> None:
    # within max_calls (512) too: each resend of a call whose value closed was offered all 511
    # calls under the id at its index (a million bytes of resends: 2.2 million units of work)
    def resent(n: int) -> list[dict[str, Any]]:
        return calls_under_one_id_at_index_0(511) + calls_under_one_id_at_index_0(1) * n

    def work(events: list[dict[str, Any]]) -> int:
        r = fsm.Reassembler("openai-chat", limits=fsm.Limits(max_diagnostics_per_code=5))
        for event in events:
            r.feed(event)
        assert len(r.close().calls) == 511
        return r.ledger.work

    per_resend = (work(resent(32_000)) - work(resent(0))) / 32_000
    assert per_resend <= 10, per_resend  # its text's 8 characters, and the one call holding it


def test_a_code_part_resent_after_many_under_one_id_costs_the_same_per_resend(monkeypatch: pytest.MonkeyPatch) -> None:
    # a resent part (the same part again: a resend of the call it opened) was compared with every
    # call under the id, and its end then looked through all of them for one still open: 4,000
    # parts each resent cost 3,127 units of work and 4,000 such looks per event, 500 cost 502 and 500
    small, large = (code_parts(n, "code-1", resent=n) for n in (500, 4_000))
    assert work_per_event(large) <= work_per_event(small) * 1.25
    small_reads = finished_reads_per_event(small, monkeypatch)
    large_reads = finished_reads_per_event(large, monkeypatch)
    assert large_reads <= small_reads * 1.25, (small_reads, large_reads)


def id_lookups_per_event(events: list[dict[str, Any]], provider: str, monkeypatch: pytest.MonkeyPatch) -> float:
    """How often a call's index is read, per event, while ``events`` are reassembled: each read is
    a call visited to learn whether it sits at an event's index."""
    from fsm.engine.slot import Slot

    reads = [0]
    original = Slot.__init__

    class Counted(int):
        def __eq__(self, other: object) -> bool:
            reads[0] += 1
            return int(self) == other

        __hash__ = int.__hash__

    def init(slot: Slot, ordinal: int, lane: Any, index: int | None, *rest: Any) -> None:
        original(slot, ordinal, lane, None if index is None else Counted(index), *rest)

    monkeypatch.setattr(Slot, "__init__", init)
    r = fsm.Reassembler(provider, limits=fsm.Limits(max_calls=10_000, max_diagnostics_per_code=5))
    for event in events:
        r.feed(event)
    r.close()
    monkeypatch.undo()
    return (reads[0] + r.ledger.work) / len(events)


def blocks_under_one_id(n: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for k in range(n):
        block = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
        events += [
            {"type": "content_block_start", "index": k, "content_block": block},
            {"type": "content_block_delta", "index": k, "delta": {"type": "input_json_delta", "partial_json": "{}"}},
            {"type": "content_block_stop", "index": k},
        ]
    return events


def calls_under_one_id(n: int) -> list[dict[str, Any]]:
    return [chunk(tc(index=k, id="call_1", name="f", args=f'{{"k": {k}}}')) for k in range(n)]


def calls_under_one_id_at_index_0(n: int) -> list[dict[str, Any]]:
    # OpenAI ends no call before the finish: each earlier call's value stays closed, not finished
    return [chunk(tc(index=0, id="call_1", name="f", args=f'{{"k": {k}}}')) for k in range(n)]


@pytest.mark.parametrize(
    ("events", "provider"),
    [
        (blocks_under_one_id, "anthropic"),
        (calls_under_one_id, "openai-chat"),
        (calls_under_one_id_at_index_0, "openai-chat"),
    ],
    ids=["anthropic-blocks", "openai-calls", "openai-calls-at-index-0"],
)
def test_many_calls_under_one_id_at_indexes_cost_the_same_per_event(
    events: Callable[[int], list[dict[str, Any]]], provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an event with an id and an index looked through every call under the id for those at its
    # index: 8,000 Anthropic blocks under one id took 1.1 s (37 ms for 1,000), 8,000 OpenAI calls
    # under one id (each at its own index) 0.88 s (42 ms for 1,000); and all at index 0, each
    # call's text was checked against every call before it whose value had closed: 26 s (0.55 s)
    small = id_lookups_per_event(events(500), provider, monkeypatch)
    large = id_lookups_per_event(events(4_000), provider, monkeypatch)
    assert large <= small * 1.25, (small, large)


class _Looked(set[tuple[int, int]]):
    """A set of places taken in an event that counts how often it is asked."""

    asked = 0

    def __contains__(self, place: object) -> bool:
        self.asked += 1
        return super().__contains__(place)


def place_lookups_per_call(n: int) -> float:
    # Gemini without ids: an event of n rolls, then one of 2n (the n resent, n more)
    def rolls(k: int) -> dict[str, Any]:
        return {"candidates": [{"content": {"parts": [{"functionCall": {"name": "roll", "args": {}}}] * k}}]}

    r = fsm.Reassembler("gemini", limits=fsm.Limits(max_calls=10_000, max_diagnostics_per_code=5))
    r._decoder._placed_now = looked = _Looked()  # type: ignore[attr-defined]
    r.feed(rolls(n))
    r.feed(rolls(2 * n))
    assert len(r.close().calls) == 2 * n
    return looked.asked / n


def test_gemini_calls_alike_beyond_those_seen_before_are_placed_without_a_rescan() -> None:
    # each roll past the n seen before looked again through all n places for one not yet taken
    # in its event: n*n/2 looks (4,000 rolls, then 8,000: 1.5 s; 500, then 1,000: 44 ms)
    small, large = place_lookups_per_call(500), place_lookups_per_call(4_000)
    assert large <= small * 1.25, (small, large)


class _Probed(set[str]):
    """A set of taken ids that counts the characters of the candidates looked up in it."""

    probed = 0

    def __contains__(self, candidate: object) -> bool:
        self.probed += len(candidate) if isinstance(candidate, str) else 0
        return super().__contains__(candidate)


def probed_per_claim(wanted: list[str], limit: int | None) -> float:
    ids = IdAllocator(limit=limit)
    ids._used = taken = _Probed()
    for each in wanted:
        ids.claim(each)
    return taken.probed / sum(map(len, wanted))


def test_ids_cut_to_one_stem_are_renamed_without_walking_the_names_taken() -> None:
    # Bedrock Converse (ids of 64 characters at most): k ids alike in their first 61 characters,
    # each used by two calls of a turn, gave every second call a search from <stem>_d2 through all
    # the names the earlier ones took: k*k/2 candidates (4,000 ids: 8 million, 18 s)
    def alike(k: int) -> list[str]:
        return [f"{'p' * 62}{n}" for n in range(k) for _ in (1, 2)]

    small, large = probed_per_claim(alike(500), 64), probed_per_claim(alike(4_000), 64)
    assert large <= small * 1.25, (small, large)


def test_many_calls_under_one_long_id_are_renamed_in_work_linear_in_the_ids() -> None:
    # k calls under one 100 KB id: <id>_d2, <id>_d3, ... each found without rebuilding those before
    small = probed_per_claim(["i" * 100_000] * 10, None)
    large = probed_per_claim(["i" * 100_000] * 80, None)
    assert large <= small * 1.25, (small, large)


def naive_claim(used: set[str], wanted: str, limit: int | None) -> str:
    """The name claim() gives, found the plain way: ``wanted``, else the first free ``<stem>_d<n>``."""
    n, candidate = 1, wanted
    while candidate in used:
        n += 1
        suffix = f"_d{n}"
        cut = len(wanted) if limit is None or len(wanted) + len(suffix) <= limit else max(limit - len(suffix), 1)
        candidate = wanted[:cut] + suffix
    used.add(candidate)
    return candidate


@pytest.mark.parametrize("limit", [None, 3, 6, 64])
def test_renamed_ids_are_the_names_the_plain_search_gives(limit: int | None) -> None:
    # ids feed prompt caches: the rename must stay the first free name, byte for byte
    import random

    rng = random.Random(limit)
    for _ in range(200):
        ids, used = IdAllocator(limit=limit), set[str]()
        for _ in range(rng.randrange(1, 60)):
            wanted = rng.choice(["a", "ab", "abc", "abcd", "a_d2", "ab_d3", "a_d1", "abcdef", "abcdefg_d9"])
            if rng.random() < 0.2:
                ids.take(wanted)
                used.add(wanted)
            else:
                assert ids.claim(wanted) == naive_claim(used, wanted, limit)


def fault_seconds(value: Any) -> float:
    """The least time of many to find what makes a shell action holding ``value`` unusable."""
    best = float("inf")
    for _ in range(15):
        start = time.process_time()
        for _ in range(5):
            said = action_fault("shell_call", {"commands": value})
        best = min(best, time.process_time() - start)
    assert said is not None and said.endswith("...") and len(said) < 120
    return best


@pytest.mark.parametrize(
    "huge",
    [
        lambda size: "x" * size,
        lambda size: list(range(size // 8)),
        lambda size: [{"k": "v" * 6} for _ in range(size // 16)],
    ],
    ids=["string", "numbers", "objects"],
)
def test_a_huge_action_value_is_shown_for_what_its_excerpt_costs(huge: Callable[[int], Any]) -> None:
    # the value a tool cannot take was written out whole (JSON) before its first 60 characters were
    # kept for the diagnostic: 1 MB written for each such call, 8 MB for 8 times the input
    small, large = fault_seconds(huge(1_000_000)), fault_seconds(huge(8_000_000))
    assert large < 4 * small, (small, large)


@pytest.mark.parametrize(
    "value",
    [
        ["ls", 5],
        {"a": float("nan"), "b": [True, None, 2.5, -float("inf")], "c": 'q"\n\u2028é'},
        {1: "one", None: "none", 2.5: (1, 2), False: []},
        ["x" * 59],
        ["x" * 58],
        "é" * 200,
        [{"k": "v"}] * 30,
        [object(), 1],
        {(1,): 2},
        [["a"] * 3, 1e300, -0.0],
    ],
)
def test_the_excerpt_reads_as_the_whole_value_written_and_cut(value: Any) -> None:
    try:
        said = json.dumps(value, ensure_ascii=False)
    except TypeError:  # not JSON: as Python says it
        said = repr(value)
    assert _shown(value) == (said if len(said) <= 60 else f"{said[:57]}...")


def test_a_value_within_itself_is_shown_as_python_says_it() -> None:
    looped: list[Any] = [1]
    looped.append(looped)
    assert _shown(looped) == "[1, [...]]"


def replaced_under_one_id(snapshots: int, *, alternating: bool) -> list[dict[str, Any]]:
    """Ten OpenAI calls under one id, each left open, then ``snapshots`` whole argument objects
    under that id (no index: the first call's place), each replacing what the first call held:
    a new value each time, or two values by turns."""
    opened = [chunk(tc(k, id="same", name="f", args='{"a": ')) for k in range(10)]
    values = [{"a": j % 2 if alternating else j} for j in range(snapshots)]
    return opened + [chunk({"id": "same", "function": {"arguments": value}}) for value in values]


def routing_entries(events: list[dict[str, Any]]) -> tuple[int, fsm.Result]:
    """The entries the registry keeps to route events under wire ids shared by many calls (every
    list _sorted_under reads), once the stream is read, and the result."""
    r = fsm.Reassembler("openai-chat", limits=fsm.Limits(max_diagnostics_per_code=5))
    for event in events:
        r.feed(event)
    result = r.close()
    kept = r.registry._under_ids.values()
    return sum(len(u.closed) + len(u.waiting) + sum(map(len, u.texts.values())) for u in kept), result


@pytest.mark.parametrize("alternating", [False, True], ids=["a-new-value-each-time", "two-values-by-turns"])
def test_a_call_replaced_again_and_again_under_a_shared_id_keeps_its_routing_bounded(alternating: bool) -> None:
    # each replacement listed the call once more among its id's closed calls and under the text it
    # then held, and every later event under the id read those lists: 32,000 snapshots took 13.4 s
    # (2,000: 0.10 s)
    small, _ = routing_entries(replaced_under_one_id(500, alternating=alternating))
    large, result = routing_entries(replaced_under_one_id(4_000, alternating=alternating))
    assert small == large == 10, (small, large)
    assert result.calls[0].arguments == {"a": 3_999 % 2 if alternating else 3_999}
    assert [c.id for c in result.calls] == ["same"] + [f"same_d{k}" for k in range(2, 11)]
    assert {d.code for d in result.diagnostics} >= {"arguments-replaced", "duplicate-id", "truncated"}


def _ollama(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"message": {"role": "assistant", "content": "", "tool_calls": list(calls)}, "done": False}


def _ollama_call(wire_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": wire_id, "function": {"index": 0, "name": "f", "arguments": arguments}}


def _item_done(item_id: str, arguments: str) -> dict[str, Any]:
    item = {"type": "function_call", "id": item_id, "call_id": f"c-{item_id}", "name": "f", "arguments": arguments}
    return {"type": "response.output_item.done", "output_index": 0, "item": item}


# Two calls in one lane (OpenAI's and Ollama's index 0, a Responses output index), the second (id
# "a") then replaced by a new value in each event.
REPLACED_IN_A_LANE: dict[str, tuple[list[dict[str, Any]], Callable[[int], dict[str, Any]]]] = {
    "openai-chat": (
        [chunk(tc(0, id="b", name="f", args="{}")), chunk(tc(0, id="a", name="f", args="{}"))],
        lambda j: chunk({"index": 0, "id": "a", "function": {"arguments": {"k": j}}}),
    ),
    "ollama": (
        [_ollama(_ollama_call("b", {}), _ollama_call("a", {}))],
        lambda j: _ollama(_ollama_call("a", {"k": j})),
    ),
    "openai-responses": (
        [_item_done("b", "{}"), _item_done("a", "{}")],
        lambda j: {
            "type": "response.function_call_arguments.done",
            "output_index": 0,
            "item_id": "a",
            "arguments": f'{{"k": {j}}}',
        },
    ),
}


def resend_index_after(provider: str, replacements: int) -> tuple[int, fsm.Result]:
    """The entries of the registry's resend index (_holding: the calls of a lane by the text they
    hold, counted over all its lists) once ``replacements`` events have each replaced the second
    call's value, and the result."""
    opened, replacing = REPLACED_IN_A_LANE[provider]
    r = fsm.Reassembler(provider, limits=fsm.Limits(max_diagnostics_per_code=5))
    for event in opened + [replacing(j) for j in range(replacements)]:
        r.feed(event)
    result = r.close()
    return sum(map(len, r.registry._holding.values())), result


@pytest.mark.parametrize("provider", sorted(REPLACED_IN_A_LANE))
def test_a_call_replaced_again_and_again_in_a_shared_lane_is_indexed_under_its_text_alone(provider: str) -> None:
    # each new value listed the call once more, and the texts it held before stayed: 100,000
    # OpenAI snapshots left 100,001 keys and 24.6 MB held (2 keys and 0.06 MB now)
    small, _ = resend_index_after(provider, 500)
    large, result = resend_index_after(provider, 4_000)
    assert small == large == 2, (small, large)
    assert [c.arguments for c in result.calls] == [{}, {"k": 3_999}]
    assert "arguments-replaced" in {d.code for d in result.diagnostics}


_TEXTS = ['{"x": 1}', '{"x": 2}', ' {"x": 1} ', '{"x":1}', "{}", '{"x": ', "1}", '{"x": 1}{"x": 2}', '"s"', " "]
_TEXTS += ["s\u3000", "\xa0s", '\u3000{"x": 1}']  # whitespace str.strip strips and JSON does not


def _crowded_lanes(seed: int, servers: bool = False) -> tuple[list[Any], dict[str, Any]]:
    """Events for a few lanes crowded with calls: sightings (headers held for a next call among
    them), fragments, snapshots and confirmations of a few texts (whole, partial, two values,
    spaced), ends, under a few indexes, ids and names (``servers``: a third of the function calls'
    events a server call's); and the options (strict, identical_text)."""
    rng = random.Random(seed)
    events: list[Any] = []
    for _ in range(rng.randint(3, 40)):
        index, wire_id = rng.choice([0, 0, 0, 1, None, None]), rng.choice([None, None, "a", "a", "b", "c"])
        name, position = rng.choice([None, "f", "f", "g"]), rng.choice([0, 0, 1])
        kind = "custom" if rng.random() < 0.05 else "function"
        server = servers and kind == "function" and rng.random() < 0.3
        ref = CallRef(index, wire_id, name, position=position, server=server, type=kind)
        roll, text = rng.random(), rng.choice(_TEXTS)
        if roll < 0.25:
            events.append(CallSeen(ref, announces=rng.random() < 0.1))
        elif roll < 0.35:
            events.append(CallEnd(ref, incomplete=rng.random() < 0.2))
        elif roll < 0.65:
            events.append(ArgumentsSnapshot(ref, text, confirms=rng.random() < 0.3))
        else:
            events.append(ArgumentsFragment(ref, text))
    options: dict[str, Any] = {"strict": rng.random() < 0.2}
    if rng.random() < 0.3:
        options["policies"] = fsm.Policies(identical_text="new-call")
    return events, options


def _replayed(events: list[Any], options: dict[str, Any]) -> object:
    r = fsm.Reassembler("anthropic", limits=fsm.Limits(max_diagnostics_per_code=50), **options)
    steps: list[object] = []
    try:
        for event in events:
            steps.append(r.feed(event))
    except fsm.ToolcallFSMError as exc:
        steps.append(repr(exc))
    try:
        result = repr(r.close())
    except fsm.ToolcallFSMError as exc:  # strict mode: raised once the result is complete
        result = repr(exc) + repr(r.close())
    return result, steps, dict(r.ledger.rules), dict(r.ledger.transitions)


class _WalkedLanes(dict[Any, Any]):
    """_holding for the reference: a lookup (the one that follows _look_up) walks the lane, every
    call of it in order, for those that hold the text looked up, its newest open call aside."""

    walks = 0

    def __init__(self, registry: Registry) -> None:
        super().__init__()
        self.registry = registry
        self.text: str | None = None

    def get(self, key: Any, default: Any = None) -> Any:
        text, self.text = self.text, None
        if text is None:
            return super().get(key, default)
        _WalkedLanes.walks += 1
        registry = self.registry
        calls = registry._lanes[key[0]]
        assert isinstance(calls, list)
        return [s for s in calls if not s.unfinished and registry._same_text(s, text)]


@pytest.mark.parametrize("servers", [False, True], ids=["client-calls", "server-calls-among-them"])
def test_the_resend_index_routes_as_a_walk_of_the_lane(monkeypatch: pytest.MonkeyPatch, servers: bool) -> None:
    # A call listed under each text it had held (replaced since) was still offered them: one
    # replaced into an open call took a fragment of its old text, one replaced under an id took
    # its old text as a snapshot again under a header held for the next call (which names that
    # call, by metadata-once). 78 of these 3,000 streams went otherwise than the lane walk.
    # With server calls among them, the index kept a lane's calls in the order of their ordinals,
    # counted apart for server and client calls, not in the order they opened (seeds 2,000 to
    # 7,000: 4 streams went otherwise).
    seeds = range(2_000, 7_000) if servers else range(3_000)
    streams = [_crowded_lanes(seed, servers) for seed in seeds]
    indexed = [_replayed(events, options) for events, options in streams]
    init, look_up = Registry.__init__, Registry._look_up

    def walking(self: Registry, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.__dict__["_holding"] = _WalkedLanes(self)

    def looked_up(self: Registry, text: str) -> bytes:
        self._holding.text = text  # type: ignore[attr-defined]
        return look_up(self, text)

    monkeypatch.setattr(_WalkedLanes, "walks", 0)
    monkeypatch.setattr(Registry, "__init__", walking)
    monkeypatch.setattr(Registry, "_look_up", looked_up)
    walked = [_replayed(events, options) for events, options in streams]
    assert _WalkedLanes.walks > 4_000  # the lookups of the index, each one a walk here
    differing = [seed for seed, (a, b) in enumerate(zip(indexed, walked, strict=True)) if a != b]
    assert differing == []


def test_a_resend_lands_in_the_first_call_of_its_lane_holding_it_server_calls_among_them() -> None:
    # Client call a opens after server call c's header, and server call a_d2 after it, in one lane;
    # both hold {}. The resend is the lane's first call's, a's, as walking the lane finds it: the
    # index had a_d2 first (ordinal 0 among server calls, where a is 1 among client calls).
    events = [
        CallSeen(CallRef(1, "c")),
        ArgumentsFragment(CallRef(0, "a", "f"), "{}"),
        ArgumentsFragment(CallRef(None, "a", "f", position=1, server=True), "1}"),
        ArgumentsSnapshot(CallRef(0, "c", "f"), " "),
        ArgumentsFragment(CallRef(0, "a", "f"), "{}"),
        ArgumentsFragment(CallRef(0, None, "f"), "{}"),
    ]
    r = fsm.Reassembler("anthropic")
    for event in events:
        r.feed(event)
    result = r.close()
    assert [(c.id, c.arguments_json) for c in (*result.calls, *result.server_tool_calls)] == [
        ("c", ""),
        ("a", "{}"),
        ("a_d2", " {}"),
    ]
    assert [d.message for d in result.diagnostics if d.code == "resend"] == [
        "call a: the same arguments again; not added"
    ]


@pytest.mark.parametrize("space", ["\u3000", "\xa0", "\x0b", " ", ""])
def test_a_freeform_call_resent_in_a_shared_lane_is_found_whatever_whitespace_ends_it(space: str) -> None:
    # The lane's index was looked up by the text as str.strip() strips it, while a freeform call is
    # listed by its text less JSON's whitespace alone: input ending in an ideographic or no-break
    # space, resent after another call in its lane, was a third call.
    ref = CallRef(0, None, "f", type="custom")
    r = fsm.Reassembler("openai-chat")
    for text in (f"hello{space}", "other", f"hello{space}"):
        r.feed(ArgumentsSnapshot(ref, text))
        r.feed(CallEnd(ref))
    result = r.close()
    assert [c.input for c in result.calls] == [f"hello{space}", "other"]
    assert result.codes().count("resend") == 1


@pytest.mark.parametrize("first", ['{"x": 1}', '{"x": 3}'], ids=["it-held-that-text-before", "it-never-did"])
def test_a_header_held_for_the_next_call_names_it_whatever_the_call_before_it_held(first: str) -> None:
    # a was listed under {"x": 1} still, once replaced: the snapshot after the header went back
    # into a (two calls) if a had ever held it, else opened the call the header names (three)
    events = [
        chunk(tc(0, id="b", name="f", args='{"y": 0}')),
        chunk(tc(0, id="a", name="f", args=first)),
        chunk({"index": 0, "id": "a", "function": {"arguments": {"x": 2}}}),
        chunk(tc(0, id="a", name="f")),  # after a's complete value: held for the next call (metadata-once)
        chunk({"index": 0, "function": {"arguments": {"x": 1}}}),
        chunk(finish="tool_calls"),
    ]
    r = fsm.Reassembler("openai-chat")
    for event in events:
        r.feed(event)
    calls = r.close().calls
    assert [(c.id, c.wire_id, c.arguments) for c in calls] == [
        ("b", "b", {"y": 0}),
        ("a", "a", {"x": 2}),
        ("a_d2", "a", {"x": 1}),
    ]


@pytest.mark.parametrize("text", ['{"x": 1}', '{"x": 2}'], ids=["the-text-it-held-before", "another"])
def test_text_after_a_call_replaced_by_an_open_value_goes_to_the_newest_call_alone(text: str) -> None:
    # a, replaced by a value still open, took the text as its own continuation (not the newest
    # call of its lane, b) only if it had once held that very text
    events = [
        ArgumentsFragment(CallRef(0, "a", "f"), '{"x": 1}'),
        ArgumentsFragment(CallRef(0, "b", "f"), '{"y": 0}'),
        ArgumentsSnapshot(CallRef(0, "a"), '{"x": '),
        ArgumentsFragment(CallRef(0), text),
    ]
    r = fsm.Reassembler("anthropic")
    for event in events:
        r.feed(event)
    calls = r.close().calls
    assert [(c.id, c.arguments_json) for c in calls] == [("a", '{"x": '), ("b", '{"y": 0}'), ("call_2", text)]
