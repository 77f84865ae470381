"""What a Gemini whole call costs the registry, and that the saving decides nothing differently.

Every Gemini event sends its calls whole, and in a lane of two calls or more the registry looks a
call's text up by its digest (a resend lands in a call holding it). A call that opens with the
text just looked up is indexed under that same digest (Registry._look_up keeps it) instead of
reading its text a second time. Proven against the lookup that keeps nothing, over every vector,
fuzzed streams of every shape and hostile ones (lone surrogates, whitespace around a whole text).
"""

from __future__ import annotations

import json
import random
from types import SimpleNamespace
from typing import Any

import pytest

from fsm import Reassembler
from fsm.engine import registry as registry_module
from fsm.engine import slot as slot_module
from fsm.harness.vectors import load_vectors
from fsm.jsontext import unicode_utf8
from tests.helpers import chunk, tc


def gemini_event(*calls: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": [{"functionCall": c} for c in calls]},
        "index": 0,
    }
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


def _counting_digests(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many texts are digested from now on (the lookup's and Slot.digest's), each by its size."""
    sizes: list[int] = []
    real = slot_module.text_digest

    def counted(data: bytes | memoryview) -> bytes:
        sizes.append(len(data))
        return real(data)

    monkeypatch.setattr(slot_module, "text_digest", counted)
    monkeypatch.setattr(registry_module, "text_digest", counted)
    return sizes


def test_each_whole_call_text_is_digested_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 60
    events = [gemini_event({"name": "sum", "args": {"n": k, "say": "caf\u00e9"}}) for k in range(calls)]
    events += [events[-1], gemini_event(finish="STOP")]  # the last call resent, then the end
    sizes = _counting_digests(monkeypatch)
    r = Reassembler("gemini")
    for event in events:
        r.feed(event)
    result = r.close()
    assert [c.arguments["n"] for c in result.calls] == list(range(calls))
    assert [d.code for d in result.diagnostics].count("resend") == 1
    # The second call indexes the first and itself; each later call is digested once, as it is
    # looked up (it was twice: looked up, then indexed), and so is the resend.
    assert len(sizes) == 2 + (calls - 2) + 1, len(sizes)


def _lookup_keeping_nothing(self: registry_module.Registry, text: str) -> bytes:
    """The lookup before it kept its digest: every call indexed reads its text again."""
    self._looked = None
    return registry_module.text_digest(unicode_utf8(text.strip()))


def _hostile() -> list[Any]:
    """Streams where the text looked up is not the text a call holds, byte for byte: lone
    surrogates (mended as the call stores them), whitespace around a whole text (str.strip strips
    more than JSON's), the same text resent, reformatted or under another name."""
    lone = {"name": "f", "args": {"s": "\ud83d", "t": "x\ude42y"}}
    pair = {"name": "f", "args": {"s": "\ud83d\ude42"}}
    plain = {"name": "f", "args": {"a": 1}}
    gemini = [
        [gemini_event(plain), gemini_event(lone), gemini_event(lone), gemini_event(pair), gemini_event(lone)],
        [gemini_event(lone), gemini_event(lone, lone), gemini_event(pair, lone), gemini_event(lone, finish="STOP")],
        [
            gemini_event(plain),
            gemini_event({"name": "g", "args": {"a": 1}}),
            gemini_event(plain, plain),
            gemini_event(plain),
        ],
    ]
    spaced = ['{"a": 1}', ' {"a": 1}', '{"a": 1}\x0b', '\u00a0{"a": 1}', '{"a": 1} ', '{"a":1}', '{"a": "\ud83d"}']
    chat = []
    for k in range(len(spaced)):
        texts = spaced[k:] + spaced[:k]
        events = [chunk(tc(0, f"c{n}" if n % 2 else None, "f", text)) for n, text in enumerate(texts)]
        chat.append([*events, *events[:3], chunk(finish="tool_calls")])
    # Code parts (server calls whose text is kept as it came, spaces and all) at one place.
    codes = ["print(1)", "print(1)\x0b", " print(1)", "print(1)\u00a0", "print(1)\n", "print(2)", "\ud83d"]
    for k in range(len(codes)):
        order = codes[k:] + codes[:k]
        parts = [{"executableCode": {"language": "PYTHON", "code": code}} for code in order + order[::2]]
        gemini.append([{"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}]} for part in parts])
    # Many whole calls at a few places from a small pool (resends, reorderings, ids now and then).
    pool = [plain, lone, pair, {"name": "g", "args": {"a": 1}}, {"name": "f", "args": {"a": 1.0}}, {"name": "f"}]
    pool += [{"name": "f", "args": {"k": [n, {"s": " x "}]}} for n in range(3)]
    for seed in range(60):
        rng = random.Random(seed)
        events = []
        for _ in range(rng.randint(3, 9)):
            picked = [dict(rng.choice(pool)) for _ in range(rng.randint(1, 3))]
            for call in picked:
                if rng.random() < 0.15:
                    call["id"] = rng.choice(["a", "b"])
            events.append(gemini_event(*picked))
        gemini.append([*events, gemini_event(finish=rng.choice(["STOP", "MAX_TOKENS"]))])
    # What _replay_with_trace reads of a vector.
    streams = [("gemini", events) for events in gemini] + [("openai-chat", events) for events in chat]
    return [
        SimpleNamespace(name=f"hostile-{shape}-{n}", shape=shape, events=events, body=None, policies={})
        for n, (shape, events) in enumerate(streams)
    ]


def test_the_kept_digest_indexes_every_call_as_reading_its_text_would(monkeypatch: pytest.MonkeyPatch) -> None:
    from fsm.harness.fuzz.run import sample_vectors
    from fsm.harness.fuzz.shapes import CASES
    from tests.test_conformance import _replay_with_trace

    vectors = [*load_vectors(), *_hostile()]
    vectors += [v for shape in CASES for v in sample_vectors(shape, 120 if shape == "gemini" else 40)]
    kept = [0]
    real = registry_module.Registry._remember

    def remember(self: registry_module.Registry, slot: Any, lane: Any = None) -> None:
        looked = self._looked
        real(self, slot, lane)
        kept[0] += looked is not None and self._looked is None  # the kept digest was taken

    monkeypatch.setattr(registry_module.Registry, "_remember", remember)
    fast = [_replay_with_trace(v) for v in vectors]
    assert kept[0] > 100, kept  # taken, often
    monkeypatch.setattr(registry_module.Registry, "_look_up", _lookup_keeping_nothing)
    general = [_replay_with_trace(v) for v in vectors]
    for vector, a, b in zip(vectors, fast, general, strict=True):
        assert a == b, vector.name


def test_the_decoder_shortcuts_decide_as_its_general_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    """A part that is one call alone, and a call of a name and arguments alone, skip the reads of
    the keys they lack (GeminiDecoder.shortcuts). Over every Gemini and Vertex vector, fuzzed
    streams and the hostile ones above, with parts and calls that only nearly qualify (a
    signature, an id, a null call, a call that is a list, a dict subclass): the same transitions in
    order, outputs, calls, diagnostics and rule counts, or the same error, either way."""
    from fsm.harness.fuzz.run import sample_vectors
    from fsm.wire.decoders.gemini import GeminiDecoder
    from tests.test_conformance import _replay_with_trace

    class Part(dict):  # type: ignore[type-arg]
        pass

    near = [
        [gemini_event({"name": "f", "args": {"a": 1}}), {"candidates": [{"content": {"parts": [part]}}]}]
        for part in [
            {"functionCall": None},
            {"functionCall": [1]},
            {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "s"},
            {"functionCall": {"name": "f", "args": {"a": 1}}, "function_call": {"name": "g"}},
            {"function_call": {"name": "f", "args": {"a": 1}}},
            Part(functionCall={"name": "f", "args": {"a": 1}}),
            {"functionCall": Part(name="f", args={"a": 1})},
            {"functionCall": {"name": "f", "args": None}},
            {"functionCall": {"name": "", "args": {}}},
            {"functionCall": {"name": 7, "args": {}}},
            {"functionCall": {"name": "f", "args": [1]}},
            {"functionCall": {"name": "f", "id": "x"}},
            {"functionCall": {"name": "f", "willContinue": True}},
            {"functionCall": {"args": {"a": 1}, "partialArgs": []}},
            {"functionCall": {}},
        ]
    ]
    near = [
        [{"candidates": [{"content": {"parts": [{"functionCall": {"name": "w", "willContinue": True}}]}}]}, *e]
        for e in near
    ] + near
    streams = [
        SimpleNamespace(name=f"near-{n}", shape="gemini", events=e, body=None, policies={}) for n, e in enumerate(near)
    ]
    vectors = [v for v in [*load_vectors(), *_hostile()] if v.shape in ("gemini", "vertex")]
    vectors += [*streams, *sample_vectors("gemini", 150), *sample_vectors("vertex", 50)]
    taken = [0]
    real = GeminiDecoder._call

    def counted(self: GeminiDecoder, call: Any, position: int, signature: str | None) -> Any:
        taken[0] += self.shortcuts and type(call) is dict and call.keys() == {"name", "args"}
        return real(self, call, position, signature)

    monkeypatch.setattr(GeminiDecoder, "_call", counted)
    fast = [_replay_with_trace(v) for v in vectors]
    assert taken[0] > 300, taken  # taken, often
    monkeypatch.setattr(GeminiDecoder, "shortcuts", False)
    general = [_replay_with_trace(v) for v in vectors]
    for vector, a, b in zip(vectors, fast, general, strict=True):
        assert a == b, vector.name


class _Loop(dict):  # type: ignore[type-arg]
    pass


def _written(dumps: Any, value: Any) -> object:
    try:
        return ("text", dumps(value))
    except Exception as exc:  # the same error, word for word, is the same behaviour
        return (type(exc).__name__, str(exc))


def test_arguments_are_written_as_json_dumps_writes_them() -> None:
    """The decoders' dumps calls the C encoder json.dumps makes, without its Python wrappers: the
    same text, or the same error, for any value (one that holds itself, NaN, a huge integer, a
    Decimal, a set, a dict subclass, a key of another type, a bare string)."""
    import decimal
    import sys

    from fsm.jsontext import plain_dumps

    loop = _Loop(a=1)
    loop["self"] = loop
    deep: Any = []
    for _ in range(sys.getrecursionlimit() + 10):
        deep = [deep]
    values: list[Any] = [
        {},
        {"a": 1, "b": [1.5, None, True], "c": {"d": 'caf\u00e9 \U0001f642 \ud83d "q" \\ \n'}},
        "plain \u2028 text",
        [float("nan"), float("inf"), -0.0, 1e300, 10**5000],
        {"n": decimal.Decimal("1.10")},
        {"s": {1, 2}},
        {1: "a", None: "b", 2.5: "c", False: "d"},
        {("t",): 1},
        _Loop(x=[_Loop(y=2)]),
        loop,
        deep,
        b"bytes",
    ]
    rng = random.Random(7)
    for _ in range(300):
        values.append(
            {f"k{n}": rng.choice([rng.random(), rng.randint(-9, 9), "x\u00e9", None, [1, {}]]) for n in range(5)}
        )
    for value in values:
        assert _written(plain_dumps, value) == _written(json.JSONEncoder(ensure_ascii=False).encode, value)
        assert _written(plain_dumps, value) == _written(lambda v: json.dumps(v, ensure_ascii=False), value)
