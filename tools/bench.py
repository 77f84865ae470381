"""Benchmark toolcall-fsm against the floors and its peers (a script, not a test).

    python tools/bench.py [--quick] [--json FILE] [--processes N] [--rounds N]
    python tools/bench.py --markdown FILE      # the README's table from a --json run

The report ends with the framers' growth ratios (whitespace trickled in before the first event, one
long event in small reads; tools/bench_framing.py's inputs and clock): linear work grows by the scale.

One room: the implementations, the measuring and the report are read together, and splitting them
would scatter what makes the figures honest; the streams live in tools/bench_streams.py.

How it measures (see issue 17):

* Every implementation's calls are checked against the expected ones (from how a synthetic stream was
  made, or from a capture's meta) before anything is timed; a wrong one is reported with the reason
  and never timed.
* Two starting points, each with its floor: *from parsed dicts* (the payloads are parsed before the
  clock starts; the floor is the simplest correct loop for the shape: fragments by index, joined,
  ``json.loads``) and *from wire bytes* (framing and ``json.loads`` of every event inside the
  clock; the floor splits the lines, decodes each event and runs the same loop).
* CPU time (``time.process_time``). Rounds are interleaved: each round runs one sample of every
  implementation, in a shuffled order, so a busy moment hits all of them; every implementation gets
  the same number of samples (a sample repeats a fast run enough times to be measurable).
* Several processes, one after another; a figure is the median over processes of each process's
  median, and its spread is (max - min) / median over processes.
* Memory: the ``tracemalloc`` peak of one run with its result still held, for every implementation,
  over the argument bytes; toolcall-fsm's state per call is its peak before the last event.
* Import time: best-of-N wall clock and CPU time of ``python -c 'import fsm'``, of its first use
  (``from fsm import Reassembler``: the names load lazily, so ``import fsm`` alone hides the cost)
  and of ``toolcall-fsm replay`` on a capture, against ``python -c 'import json'`` (targets judged
  on CPU), every one with its bytecode cached as an installed package has it.

Peers (OpenAI chat shape only, each where installed): openai-python's ``ChatCompletionStreamState``,
pydantic-ai's parts manager, LangChain's bulk merge (``add_ai_message_chunks``), LiteLLM's combiner
(``ChunkProcessor.get_combined_tool_content``). Install them with ``pip install -e '.[bench]'``.

A third starting point, where most callers are: *from SDK objects*, openai's ``ChatCompletionChunk``
(built before the clock starts, for OpenAI chat streams whose every chunk the SDK reads), fed to
toolcall-fsm as they are and read by pydantic-ai as its OpenAI chat stream reads them (the
reasoning and annotation fields it looks up by name, the text, each tool-call entry's attributes)
into the same parts manager.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_framing import growth_rows
from bench_streams import CAPTURES, Call, Scenario, captures, synthetic

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # LiteLLM fetches a price list at import

FSM, FSM_WIRE, FLOOR, FLOOR_WIRE = "toolcall-fsm", "toolcall-fsm from wire bytes", "floor", "floor from wire bytes"
FSM_READS = "toolcall-fsm from wire bytes, one event a read"
FSM_SDK, PYDANTIC_SDK = "toolcall-fsm from SDK objects", "pydantic-ai from SDK objects"
PEER_MODULES = {
    "pydantic-ai": "pydantic_ai",
    "openai-python": "openai",
    "langchain": "langchain_openai",
    "litellm": "litellm",
}
SLOW_PEER_EVENTS = {"openai-python": 600, "langchain": 6000, "litellm": 6000}
"""Peers far slower than toolcall-fsm are not sampled on longer streams (a run would take seconds,
and the whole benchmark must stay within minutes). pydantic-ai, the targets' peer, runs on every stream."""

Run = Callable[[], Any]

# -- toolcall-fsm --------------------------------------------------------------------------------


def _limits() -> Any:
    from fsm import Limits

    return Limits(max_calls=1 << 20)


def fsm_from_dicts(scn: Scenario) -> Run:
    return fsm_feeding(scn.payloads, scn)


def fsm_feeding(items: list[Any], scn: Scenario) -> Run:
    """toolcall-fsm fed ``items`` (the stream's payloads, or objects standing for them) one by one."""
    from fsm import Reassembler

    provider, limits = scn.provider, _limits()

    def run() -> Any:
        r = Reassembler(provider, limits=limits)
        feed = r.feed
        for item in items:
            feed(item)
        return r.close()

    return run


def fsm_from_wire(scn: Scenario) -> Run:
    return _feeding_bytes([scn.wire[i : i + 16384] for i in range(0, len(scn.wire), 16384)], scn)


def event_reads(wire: bytes) -> list[bytes] | str:
    """The wire cut after each event, as a server that flushes every event sends it and most reads
    then bring it (SSE: up to each blank line; NDJSON: each line), or why it is not cut so."""
    if wire.startswith((b"data:", b"event:", b":")):
        end = b"\n\n"
    elif wire.lstrip().startswith(b"{"):
        end = b"\n"
    else:
        return "one event a read: SSE and NDJSON only"
    return [piece + end for piece in wire.split(end) if piece]


def fsm_from_reads(scn: Scenario) -> Run | str:
    reads = event_reads(scn.wire)
    return reads if isinstance(reads, str) else _feeding_bytes(reads, scn)


def _feeding_bytes(reads: list[bytes], scn: Scenario) -> Run:
    from fsm import Reassembler

    provider, limits = scn.provider, _limits()

    def run() -> Any:
        r = Reassembler(provider, limits=limits)
        for read in reads:
            r.feed_bytes(read)
        return r.close()

    return run


def sdk_chunks(scn: Scenario) -> list[Any] | str:
    """The stream as openai's ``ChatCompletionChunk`` objects, or why there are none."""
    if scn.provider != "openai-chat":
        return "SDK objects of the OpenAI chat shape only"
    if not _installed("openai"):
        return "openai not installed (pip install -e '.[bench]')"
    from openai.types.chat import ChatCompletionChunk
    from pydantic import ValidationError

    envelope = {"id": "c", "created": 1, "model": "m", "object": "chat.completion.chunk"}
    try:
        return [ChatCompletionChunk.model_validate({**envelope, **p}) for p in scn.payloads]
    except ValidationError:
        return "a chunk the SDK does not read"


def fsm_calls(result: Any) -> list[Call]:
    return [(c.id, c.name, c.arguments) for c in result.calls if c.status.value == "complete"]


# -- floors: the simplest correct loop per shape ------------------------------------------------------


def _floor_openai(payloads: list[dict[str, Any]]) -> list[Call]:
    calls: dict[int, list[Any]] = {}
    for p in payloads:
        for choice in p.get("choices") or ():
            for tc in (choice.get("delta") or {}).get("tool_calls") or ():
                call = calls.get(tc["index"])
                if call is None:
                    call = calls[tc["index"]] = [tc.get("id"), None, []]
                fn = tc.get("function") or {}
                if fn.get("name"):
                    call[1] = fn["name"]
                if fn.get("arguments"):
                    call[2].append(fn["arguments"])
    return [(i, n, json.loads("".join(a) or "{}")) for i, n, a in calls.values()]


def _floor_anthropic(payloads: list[dict[str, Any]]) -> list[Call]:
    calls: dict[int, list[Any]] = {}
    for p in payloads:
        kind = p.get("type")
        if kind == "content_block_start" and p["content_block"].get("type") == "tool_use":
            block = p["content_block"]
            calls[p["index"]] = [block["id"], block["name"], []]
        elif kind == "content_block_delta" and p["delta"].get("type") == "input_json_delta":
            calls[p["index"]][2].append(p["delta"]["partial_json"])
    return [(i, n, json.loads("".join(a) or "{}")) for i, n, a in calls.values()]


def _floor_gemini(payloads: list[dict[str, Any]]) -> list[Call]:
    calls: list[list[Any]] = []
    for p in payloads:
        for cand in p.get("candidates") or ():
            for part in (cand.get("content") or {}).get("parts") or ():
                fn = part.get("functionCall")
                if fn is None:
                    continue
                if "partialArgs" in fn:
                    for arg in fn["partialArgs"]:
                        key = arg["jsonPath"].removeprefix("$.")
                        calls[-1][2][key] = calls[-1][2].get(key, "") + arg.get("stringValue", "")
                elif "name" in fn:
                    call = [fn.get("id"), fn["name"], fn.get("args", {})]
                    if not calls or calls[-1] != call:  # a whole call resent
                        calls.append(call)
    return [(i, n, a) for i, n, a in calls]


def _floor_responses(payloads: list[dict[str, Any]]) -> list[Call]:
    calls: dict[int, list[Any]] = {}
    for p in payloads:
        kind = p.get("type")
        if kind == "response.output_item.added" and p["item"].get("type") == "function_call":
            calls[p["output_index"]] = [p["item"]["call_id"], p["item"]["name"], []]
        elif kind == "response.function_call_arguments.delta":
            calls[p["output_index"]][2].append(p["delta"])
    return [(i, n, json.loads("".join(a) or "{}")) for i, n, a in calls.values()]


def _floor_bedrock(payloads: list[dict[str, Any]]) -> list[Call]:
    calls: dict[int, list[Any]] = {}
    for p in payloads:
        if "contentBlockStart" in p and "toolUse" in p["contentBlockStart"].get("start", {}):
            use = p["contentBlockStart"]["start"]["toolUse"]
            calls[p["contentBlockStart"]["contentBlockIndex"]] = [use["toolUseId"], use["name"], []]
        elif "contentBlockDelta" in p and "toolUse" in p["contentBlockDelta"]["delta"]:
            delta = p["contentBlockDelta"]
            calls[delta["contentBlockIndex"]][2].append(delta["delta"]["toolUse"]["input"])
    return [(i, n, json.loads("".join(a) or "{}")) for i, n, a in calls.values()]


def _floor_cohere(payloads: list[dict[str, Any]]) -> list[Call]:
    calls: dict[int, list[Any]] = {}
    for p in payloads:
        kind = p.get("type")
        if kind == "tool-call-start":
            tc = p["delta"]["message"]["tool_calls"]
            calls[p["index"]] = [tc["id"], tc["function"]["name"], [tc["function"].get("arguments") or ""]]
        elif kind == "tool-call-delta":
            calls[p["index"]][2].append(p["delta"]["message"]["tool_calls"]["function"]["arguments"])
    return [(i, n, json.loads("".join(a) or "{}")) for i, n, a in calls.values()]


def _floor_ollama(payloads: list[dict[str, Any]]) -> list[Call]:
    calls: list[Call] = []
    for p in payloads:
        for tc in (p.get("message") or {}).get("tool_calls") or ():
            calls.append((tc.get("id"), tc["function"]["name"], tc["function"]["arguments"]))
    return calls


FLOORS: dict[str, Callable[[list[dict[str, Any]]], list[Call]]] = {
    "openai-chat": _floor_openai,
    "anthropic": _floor_anthropic,
    "gemini": _floor_gemini,
    "openai-responses": _floor_responses,
    "bedrock": _floor_bedrock,
    "cohere": _floor_cohere,
    "ollama": _floor_ollama,
}


def floor_from_dicts(scn: Scenario) -> Run:
    loop, payloads = FLOORS[scn.provider], scn.payloads
    return lambda: loop(payloads)


def floor_from_wire(scn: Scenario) -> Run | str:
    loop, wire, loads = FLOORS[scn.provider], scn.wire, json.loads
    if wire.startswith((b"data:", b"event:", b":")):

        def run() -> Any:
            payloads = []
            for line in wire.split(b"\n"):
                if line.startswith(b"data:"):
                    data = line[5:].strip()
                    if data != b"[DONE]":
                        payloads.append(loads(data))
            return loop(payloads)

        return run
    if wire.lstrip().startswith(b"{"):
        return lambda: loop([loads(line) for line in wire.splitlines() if line.strip()])
    return "the simplest loop reads SSE and NDJSON only"


# -- peers (OpenAI chat shape) -----------------------------------------------------------------------


def openai_python(scn: Scenario) -> Run:
    from openai._models import construct_type
    from openai.lib.streaming.chat._completions import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    payloads = scn.payloads

    def run() -> Any:
        state = ChatCompletionStreamState()
        for p in payloads:
            state.handle_chunk(construct_type(type_=ChatCompletionChunk, value=p))
        return state.get_final_completion()

    return run


def openai_python_calls(result: Any) -> list[Call]:
    calls = result.choices[0].message.tool_calls or []
    return [(c.id, c.function.name, json.loads(c.function.arguments or "{}")) for c in calls]


def pydantic_ai(scn: Scenario) -> Run:
    from pydantic_ai._parts_manager import ModelResponsePartsManager
    from pydantic_ai.models import ModelRequestParameters

    payloads = scn.payloads

    def run() -> Any:
        manager = ModelResponsePartsManager(ModelRequestParameters())
        for p in payloads:
            for choice in p.get("choices") or ():
                delta = choice.get("delta") or {}
                # Text and reasoning too, as pydantic-ai's own OpenAI chat stream does (toolcall-fsm
                # keeps them as well): a stream of reasoning chunks is not free for either side.
                for field in ("reasoning", "reasoning_content"):
                    if delta.get(field):
                        thought = delta[field]
                        for _ in manager.handle_thinking_delta(vendor_part_id=("reasoning", field), content=thought):
                            pass
                if delta.get("content"):
                    for _ in manager.handle_text_delta(vendor_part_id="content", content=delta["content"]):
                        pass
                for tc in delta.get("tool_calls") or ():
                    fn = tc.get("function") or {}
                    manager.handle_tool_call_delta(
                        vendor_part_id=tc.get("index"),
                        tool_name=fn.get("name"),
                        args=fn.get("arguments"),
                        tool_call_id=tc.get("id"),
                    )
        return manager.get_parts()

    return run


def pydantic_ai_from_sdk(chunks: list[Any]) -> Run:
    from pydantic_ai._parts_manager import ModelResponsePartsManager
    from pydantic_ai.models import ModelRequestParameters

    def run() -> Any:
        manager = ModelResponsePartsManager(ModelRequestParameters())
        for chunk in chunks:
            for choice in chunk.choices:
                delta = choice.delta
                # What its OpenAI chat stream reads of each chunk: reasoning under two names, the
                # text, the annotations (an extra field), then every tool-call entry.
                for field in ("reasoning", "reasoning_content"):
                    thought = getattr(delta, field, None)
                    if thought and isinstance(thought, str):
                        for _ in manager.handle_thinking_delta(vendor_part_id=("reasoning", field), content=thought):
                            pass
                        break
                if isinstance(delta.content, str) and delta.content:
                    for _ in manager.handle_text_delta(vendor_part_id="content", content=delta.content):
                        pass
                getattr(delta, "annotations", None)
                for tc in delta.tool_calls or ():
                    fn = tc.function
                    manager.handle_tool_call_delta(
                        vendor_part_id=tc.index,
                        tool_name=fn.name if fn is not None else None,
                        args=fn.arguments if fn is not None else None,
                        tool_call_id=tc.id,
                    )
        return manager.get_parts()

    return run


def pydantic_ai_calls(parts: Any) -> list[Call]:
    calls = [p for p in parts if type(p).__name__ == "ToolCallPart"]
    return [(c.tool_call_id, c.tool_name, c.args_as_dict()) for c in calls]


def langchain(scn: Scenario) -> Run:
    from langchain_core.messages import AIMessageChunk
    from langchain_core.messages.ai import add_ai_message_chunks
    from langchain_openai.chat_models.base import _convert_delta_to_message_chunk

    payloads = scn.payloads

    def run() -> Any:
        chunks = [
            _convert_delta_to_message_chunk(choice["delta"], AIMessageChunk)
            for p in payloads
            for choice in p.get("choices") or ()
        ]
        return add_ai_message_chunks(chunks[0], *chunks[1:])

    return run


def langchain_calls(message: Any) -> list[Call]:
    return [(c["id"], c["name"], c["args"]) for c in message.tool_calls]


def litellm(scn: Scenario) -> Run:
    from litellm.litellm_core_utils.streaming_chunk_builder_utils import ChunkProcessor

    payloads = scn.payloads

    def run() -> Any:
        # The chunks its stream_chunk_builder hands the combiner: those with tool calls.
        chunks = [p for p in payloads if any((c.get("delta") or {}).get("tool_calls") for c in p.get("choices") or ())]
        return ChunkProcessor(payloads).get_combined_tool_content(chunks)

    return run


def litellm_calls(calls: Any) -> list[Call]:
    return [(c.id, c.function.name, json.loads(c.function.arguments)) for c in calls]


PEERS: dict[str, tuple[Callable[[Scenario], Run], Callable[[Any], list[Call]]]] = {
    "pydantic-ai": (pydantic_ai, pydantic_ai_calls),
    "openai-python": (openai_python, openai_python_calls),
    "langchain": (langchain, langchain_calls),
    "litellm": (litellm, litellm_calls),
}
IMPLEMENTATIONS = [FSM, FSM_WIRE, FSM_READS, FLOOR, FLOOR_WIRE, *PEERS, FSM_SDK, PYDANTIC_SDK]


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def runner(name: str, scn: Scenario) -> tuple[Run | None, Callable[[Any], list[Call]] | None, str | None]:
    """What runs ``name`` on ``scn``, how to read its calls, or why it does not run there."""
    if name == FSM:
        return fsm_from_dicts(scn), fsm_calls, None
    if name == FSM_WIRE:
        return fsm_from_wire(scn), fsm_calls, None
    if name == FSM_READS:
        reading = fsm_from_reads(scn)
        return (None, None, reading) if isinstance(reading, str) else (reading, fsm_calls, None)
    if name == FLOOR:
        return floor_from_dicts(scn), list, None
    if name == FLOOR_WIRE:
        run = floor_from_wire(scn)
        return (None, None, run) if isinstance(run, str) else (run, list, None)
    if name in (FSM_SDK, PYDANTIC_SDK):
        chunks = sdk_chunks(scn)
        if isinstance(chunks, str):
            return None, None, chunks
        if name == FSM_SDK:
            return fsm_feeding(chunks, scn), fsm_calls, None
        if not _installed("pydantic_ai"):
            return None, None, "not installed (pip install -e '.[bench]')"
        return pydantic_ai_from_sdk(chunks), pydantic_ai_calls, None
    if scn.provider != "openai-chat":
        return None, None, "speaks the OpenAI chat shape only"
    if not _installed(PEER_MODULES[name]):
        return None, None, "not installed (pip install -e '.[bench]')"
    if scn.events > SLOW_PEER_EVENTS.get(name, scn.events):
        return None, None, f"not sampled over {SLOW_PEER_EVENTS[name]} events (too slow for the time budget)"
    make, read = PEERS[name]
    return make(scn), read, None


def mismatch(have: list[Call], want: list[Call]) -> str | None:
    """Why ``have`` is not the expected calls (None when it is)."""
    if len(have) != len(want):
        return f"{len(have)} calls, expected {len(want)}"
    for k, ((hid, hname, hargs), (wid, wname, wargs)) in enumerate(zip(have, want, strict=True)):
        if hname != wname:
            return f"call {k}: name {hname!r}, expected {wname!r}"
        if hargs != wargs:
            return f"call {k}: arguments differ"
        if wid is not None and hid != wid:
            return f"call {k}: id {hid!r}, expected {wid!r}"
    return None


def verify(name: str, scn: Scenario) -> tuple[Run | None, str]:
    """Run once and check the calls: (the run, "ok") or (None, why it is wrong or skipped)."""
    run, read, skipped = runner(name, scn)
    if run is None or read is None:
        return None, f"skipped: {skipped}"
    try:
        why = mismatch(read(run()), scn.expected)
    except Exception as exc:  # a peer failing on a stream is a finding, reported as such
        why = f"raised {type(exc).__name__}: {str(exc)[:80]}"
    return (run, "ok") if why is None else (None, f"wrong: {why}")


# -- measuring ----------------------------------------------------------------------------------------


def peak_memory(run: Run) -> int:
    """Peak traced bytes of one run, its result still held."""
    gc.collect()
    tracemalloc.start()
    result = run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del result
    return peak


def fsm_state_bytes(scn: Scenario) -> int:
    """toolcall-fsm's peak before the last event: the state it keeps while calls stream in."""
    from fsm import Reassembler

    gc.collect()
    tracemalloc.start()
    r = Reassembler(scn.provider, limits=_limits())
    for p in scn.payloads[:-1]:
        r.feed(p)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del r
    return peak


def scenarios(quick: bool) -> tuple[list[Scenario], str | None]:
    captured, absent = captures()
    return synthetic(quick) + captured, absent


def worker(plan_path: str, rounds: int, sample_seconds: float, seed: int) -> dict[str, dict[str, float]]:
    """Time the implementations the plan lists; returns scenario -> implementation -> median us/event."""
    with open(plan_path) as fh:
        plan: dict[str, list[str]] = json.load(fh)["timed"]
    quick = json.loads(Path(plan_path).read_text())["quick"]
    found, _ = scenarios(quick)
    rng = random.Random(seed)
    out: dict[str, dict[str, float]] = {}
    for scn in found:
        names = plan.get(scn.label, [])
        runs: dict[str, Run] = {}
        repeats: dict[str, int] = {}
        for name in names:
            run = runner(name, scn)[0]
            assert run is not None
            run()  # warm: imports, compiled specs, caches
            start = time.process_time()
            run()
            once = max(time.process_time() - start, 1e-6)
            runs[name], repeats[name] = run, max(1, math.ceil(sample_seconds / once))
        # The peers' modules are large object graphs: frozen, they cost each collection nothing.
        gc.collect()
        gc.freeze()
        samples: dict[str, list[float]] = {name: [] for name in names}
        for _ in range(rounds):
            order = list(names)
            rng.shuffle(order)
            for name in order:
                run, n = runs[name], repeats[name]
                gc.collect()
                start = time.process_time()
                for _ in range(n):
                    run()
                samples[name].append((time.process_time() - start) / n / scn.events * 1e6)
        out[scn.label] = {name: statistics.median(s) for name, s in samples.items()}
    return out


FIRST_USE = "from fsm import Reassembler"
"""The start-up row beside ``import fsm``: the package's names load on first use, so ``import fsm``
alone costs next to nothing and this row is what a program that uses it pays."""


def import_times(tries: int) -> dict[str, Any]:
    """Best-of-``tries`` wall clock (and CPU time, steadier on a busy machine) of starting Python to
    import fsm, to use its first name (``from fsm import Reassembler``), to replay a capture, and to
    import json (the baseline every Python program pays). The targets are judged on CPU time: on a
    shared machine the wall clock mostly measures the other processes.

    Every command runs once untimed first, with its bytecode cached in a temporary folder
    (``PYTHONPYCACHEPREFIX``), so each start reads compiled modules as an installed package does
    (pip compiles them at install): with ``PYTHONDONTWRITEBYTECODE`` set and no cache, a checkout
    would compile fsm's sources on every start while json comes compiled."""
    capture = CAPTURES / "openai_chat" / "openai-python-parallel-two-tools.sse"
    scratch = tempfile.TemporaryDirectory()
    if not capture.is_file():
        from bench_streams import small_calls

        capture = Path(scratch.name) / "two-calls.sse"
        capture.write_bytes(small_calls("tiny", 2).wire)
    commands = {
        "import json": [sys.executable, "-c", "import json"],
        "import fsm": [sys.executable, "-c", "import fsm"],
        FIRST_USE: [sys.executable, "-c", FIRST_USE],
        "replay": [sys.executable, "-m", "fsm", "replay", str(capture)],
    }
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(Path(scratch.name) / "bytecode")
    for cmd in commands.values():
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    best = {name: math.inf for name in commands}
    cpu = {name: math.inf for name in commands}
    for _ in range(tries):
        for name, cmd in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
            best[name] = min(best[name], time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            cpu[name] = min(cpu[name], used)
    scratch.cleanup()
    ms = {name: value * 1e3 for name, value in best.items()}
    cpu_ms = {name: value * 1e3 for name, value in cpu.items()}
    return {
        "ms": ms,
        "cpu_ms": cpu_ms,
        "import fsm / import json": cpu_ms["import fsm"] / cpu_ms["import json"],
        "first use / import json": cpu_ms[FIRST_USE] / cpu_ms["import json"],
        "replay / import json": cpu_ms["replay"] / cpu_ms["import json"],
        "replayed": capture.name,
        "bytecode": "cached (PYTHONPYCACHEPREFIX, warmed by one untimed run)",
    }


def measure(quick: bool, processes: int, rounds: int, sample_seconds: float) -> dict[str, Any]:
    found, absent = scenarios(quick)
    rows: list[dict[str, Any]] = []
    plan: dict[str, list[str]] = {}
    for scn in found:
        gc.collect()
        gc.freeze()
        row: dict[str, Any] = {
            "scenario": scn.label,
            "provider": scn.provider,
            "capture": scn.capture,
            "fragments": scn.fragments,
            "events": scn.events,
            "calls": len(scn.expected),
            "argument_bytes": scn.argument_bytes,
            "verdict": {},
            "peak_bytes": {},
        }
        for name in IMPLEMENTATIONS:
            run, verdict = verify(name, scn)
            row["verdict"][name] = verdict
            if run is not None:
                plan.setdefault(scn.label, []).append(name)
                if name in PEERS or name in (FSM, FLOOR):  # memory is compared from parsed dicts
                    row["peak_bytes"][name] = peak_memory(run)
        row["fsm_state_bytes"] = fsm_state_bytes(scn)
        rows.append(row)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump({"timed": plan, "quick": quick}, fh)
    per_process = []
    try:
        for k in range(processes):
            cmd = [sys.executable, __file__, "--worker", fh.name, "--rounds", str(rounds)]
            cmd += ["--sample", str(sample_seconds), "--seed", str(k)]
            done = subprocess.run(cmd, check=True, capture_output=True, text=True)
            per_process.append(json.loads(done.stdout))
    finally:
        os.unlink(fh.name)
    for row in rows:
        row["us_per_event"], row["spread"] = {}, {}
        for name in plan.get(row["scenario"], []):
            values = [p[row["scenario"]][name] for p in per_process]
            middle = statistics.median(values)
            row["us_per_event"][name] = middle
            row["spread"][name] = (max(values) - min(values)) / middle if middle else 0.0
    report = {
        "settings": {"processes": processes, "rounds": rounds, "sample_seconds": sample_seconds, "quick": quick},
        "captures": absent or f"{sum(r['capture'] for r in rows)} capture streams",
        "rows": rows,
        "import": import_times(3 if quick else 9),
        # The framers' growth ratios (tools/bench_framing.py): linear work grows by about the scale.
        "framing": growth_rows(4, 2_000, 20_000) if quick else growth_rows(),
    }
    report["targets"] = targets(report)
    return report


# -- reporting ------------------------------------------------------------------------------------------


def _ratio(row: dict[str, Any], top: str, bottom: str) -> float | None:
    times = row["us_per_event"]
    if top in times and bottom in times and times[bottom] > 0:
        return float(times[top] / times[bottom])
    return None


def _per_call_us(row: dict[str, Any], name: str) -> float:
    return float(row["us_per_event"][name] * row["events"] / row["calls"])


def targets(report: dict[str, Any]) -> dict[str, tuple[bool, str]]:
    rows = report["rows"]
    by = {r["scenario"]: r for r in rows}
    out: dict[str, tuple[bool, str]] = {}

    def listing(pairs: list[tuple[str, float]]) -> str:
        return ", ".join(f"{label}: {value:.2f}" for label, value in pairs)

    against_pyd = [
        (r["scenario"], v)
        for r in rows
        if (r["fragments"] or r["capture"]) and (v := _ratio(r, "pydantic-ai", FSM)) is not None
    ]
    if against_pyd:
        out["from parsed dicts: no slower than pydantic-ai on every fragment stream and capture"] = (
            min(v for _, v in against_pyd) >= 1,
            "pydantic-ai time / toolcall-fsm time; " + listing(against_pyd),
        )
    tiny = next(
        (
            r
            for r in rows
            if r["scenario"].endswith("tiny calls")
            and r["calls"] >= 100
            and "pydantic-ai" in r["us_per_event"]
            and r["calls"] < 5000
        ),
        None,
    )
    if tiny is not None:
        ratio = _per_call_us(tiny, FSM) / _per_call_us(tiny, "pydantic-ai")
        out["per call within 2x of pydantic-ai"] = (
            ratio <= 2,
            f"{tiny['scenario']}: toolcall-fsm / pydantic-ai = {ratio:.2f}",
        )
    wire = [(r["scenario"], v) for r in rows if r["fragments"] and (v := _ratio(r, FSM_WIRE, FLOOR_WIRE)) is not None]
    if wire:
        out["from wire bytes: within 2x of the decode floor on fragment streams"] = (
            max(v for _, v in wire) <= 2,
            "toolcall-fsm / floor; " + listing(wire),
        )
    memory = [
        (r["scenario"], r["peak_bytes"][FSM] / r["argument_bytes"])
        for r in rows
        if r["fragments"] and FSM in r["peak_bytes"]
    ]
    if memory:
        out["memory with the result under 3x the argument bytes on fragment streams"] = (
            max(v for _, v in memory) < 3,
            listing(memory),
        )
    if tiny is not None:
        per_call = tiny["fsm_state_bytes"] / tiny["calls"]
        out["under 400 bytes of state per call"] = (per_call < 400, f"{tiny['scenario']}: {per_call:.0f} B per call")
    imports = report["import"]
    cpu = imports["cpu_ms"]
    imports["import fsm / import json"] = cpu["import fsm"] / cpu["import json"]
    imports["replay / import json"] = cpu["replay"] / cpu["import json"]
    first_use = ""
    if FIRST_USE in cpu:  # reports from before the row was added have none
        imports["first use / import json"] = cpu[FIRST_USE] / cpu["import json"]
        first_use = f"; first use ({FIRST_USE}) {cpu[FIRST_USE]:.0f} ms, {imports['first use / import json']:.2f}x"
    out["import fsm under 50 ms"] = (
        imports["cpu_ms"]["import fsm"] < 50,
        f"{imports['cpu_ms']['import fsm']:.0f} ms CPU, {imports['import fsm / import json']:.2f}x import json"
        + first_use,
    )
    out["replay of a capture under 2x python -c 'import json'"] = (
        imports["replay / import json"] < 2,
        f"{imports['replay / import json']:.2f}x ({imports['replayed']})",
    )
    small, large = by.get("openai 1 call x 1 KB"), by.get("openai 1 call x 256 KB")
    if small and large and FSM in large["us_per_event"]:
        per_byte = [r["us_per_event"][FSM] * r["events"] / r["argument_bytes"] for r in (large, small)]
        out["linear: per byte 256 KB vs 1 KB within 1.25x"] = (
            per_byte[0] / per_byte[1] <= 1.25,
            f"{per_byte[0] / per_byte[1]:.2f}",
        )
    few, many = by.get("openai 10 tiny calls"), by.get("openai 10000 tiny calls")
    if few and many and FSM in many["us_per_event"]:
        per_call = _per_call_us(many, FSM) / _per_call_us(few, FSM)
        out["linear: per call 10,000 vs 10 within 1.25x"] = (per_call <= 1.25, f"{per_call:.2f}")
    return out


def _cell(row: dict[str, Any], name: str, against: str | None = None) -> str:
    """A ratio (``name``'s time over ``against``'s, or toolcall-fsm's over ``name``'s), or why none."""
    verdict = row["verdict"][name]
    if verdict != "ok":
        if not verdict.startswith("wrong"):
            return "-"
        return "floor wrong" if name in (FLOOR, FLOOR_WIRE) else "wrong"  # never read as fsm being wrong
    value = _ratio(row, FSM, name) if against is None else _ratio(row, name, against)
    return "-" if value is None else f"{value:.2f}x"


def _line(row: dict[str, Any]) -> str:
    cells = [f"{row['scenario'][:58]:<58}", f"{row['events']:>6} ev"]
    for name in IMPLEMENTATIONS:
        verdict = row["verdict"][name]
        if name in row["us_per_event"]:
            cells.append(f"{name} {row['us_per_event'][name]:.2f} us ±{row['spread'][name] * 50:.0f}%")
        elif verdict.startswith("wrong"):
            cells.append(f"{name} {verdict}")
    if FSM in row["peak_bytes"] and row["argument_bytes"]:
        cells.append(f"mem {row['peak_bytes'][FSM] / row['argument_bytes']:.2f}x args")
    return " | ".join(cells)


def markdown(report: dict[str, Any]) -> str:
    """The README's table (ratios only) and target lines, from a ``--json`` report."""
    head = ["Stream", "Events", "fsm ÷ floor, dicts", "fsm ÷ floor, wire", "fsm ÷ floor, wire, one event a read"]
    head += ["pydantic-ai ÷ fsm", "openai-python ÷ fsm"]
    head += ["LangChain ÷ fsm", "LiteLLM ÷ fsm", "SDK objects: pydantic-ai ÷ fsm", "SDK objects ÷ dicts, fsm"]
    head += ["fsm memory ÷ args", "peers' memory ÷ args"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in report["rows"]:
        args = row["argument_bytes"] or 1
        peers = [f"{p} {row['peak_bytes'][p] / args:.1f}x" for p in PEERS if p in row["peak_bytes"]]
        cells = [
            row["scenario"].removeprefix("capture "),
            str(row["events"]),
            _cell(row, FLOOR),
            "-" if _ratio(row, FSM_WIRE, FLOOR_WIRE) is None else f"{_ratio(row, FSM_WIRE, FLOOR_WIRE):.2f}x",
            "-" if _ratio(row, FSM_READS, FLOOR_WIRE) is None else f"{_ratio(row, FSM_READS, FLOOR_WIRE):.2f}x",
            *(_cell(row, p, FSM) for p in PEERS),
            _cell(row, PYDANTIC_SDK, FSM_SDK),
            "-" if _ratio(row, FSM_SDK, FSM) is None else f"{_ratio(row, FSM_SDK, FSM):.2f}x",
            f"{row['peak_bytes'][FSM] / args:.1f}x" if FSM in row["peak_bytes"] else "-",
            ", ".join(peers) or "-",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if report.get("framing"):
        lines += ["", "| Framing | Input | Sizes (bytes) | Growth (linear ~ scale) |", "|---|---|---|---|"]
        for row in report["framing"]:
            sizes = f"{row['small_bytes']:,} → {row['large_bytes']:,}"
            lines.append(
                f"| {row['framing']} | {row['input']} | {sizes} | {row['ratio']:.1f}x (scale {row['scale']}) |"
            )
    imports = report["import"]
    lines.append("")
    first_use = imports.get("first use / import json")
    lines.append(
        f"Start-up (CPU time, best of N): `import fsm` {imports['import fsm / import json']:.2f}x, "
        + (f"first use (`{FIRST_USE}`) {first_use:.2f}x " if first_use is not None else "")
        + f"and `toolcall-fsm replay` {imports['replay / import json']:.2f}x `python -c 'import json'`."
    )
    lines += ["", *target_lines(report["targets"])]
    return "\n".join(lines)


def target_lines(judged: dict[str, tuple[bool, str]], how: str = "") -> list[str]:
    """The README's line per target: met or missed (``how``: judged on what), and the figures."""
    return [f"- **{'met' if ok else 'missed'}**{how}: {name} ({detail})" for name, (ok, detail) in judged.items()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, few samples: a smoke test")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--markdown", metavar="FILE", help="print a --json run as the README's table, and exit")
    parser.add_argument("--processes", type=int, help="timing processes, run one after another (default 3)")
    parser.add_argument("--rounds", type=int, help="interleaved samples per implementation per process (default 5)")
    parser.add_argument("--sample", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--worker", metavar="PLAN", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.markdown:
        with open(args.markdown) as fh:
            report = json.load(fh)
        report["targets"] = targets(report)  # judged by the current rules
        print(markdown(report))
        return 0
    rounds = args.rounds or (2 if args.quick else 5)
    sample = args.sample or (0.0005 if args.quick else 0.004)
    if args.worker:
        json.dump(worker(args.worker, rounds, sample, args.seed), sys.stdout)
        return 0
    report = measure(args.quick, args.processes or (2 if args.quick else 3), rounds, sample)
    for row in report["rows"]:
        print(_line(row))
    ms, cpu = report["import"]["ms"], report["import"]["cpu_ms"]
    for name in ms:
        ratio = cpu[name] / cpu["import json"]
        print(f"{name}: best {ms[name]:.0f} ms wall clock, {cpu[name]:.0f} ms CPU ({ratio:.2f}x import json)")
    print(f"start-up bytecode: {report['import']['bytecode']}")
    for row in report["framing"]:
        growth = f"{row['small_s']:.3f} s -> {row['large_s']:.3f} s at {row['scale']}x the bytes: {row['ratio']:.1f}x"
        print(f"framing {row['framing']:<16} {row['input']:<34} {growth}")
    print(f"captures: {report['captures']}\n")
    for name, (ok, detail) in report["targets"].items():
        print(f"{'MET   ' if ok else 'MISSED'}  {name}: {detail}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
