"""Running the fuzzers under hypothesis, and turning a failing case into a conformance vector."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as with_seed
from hypothesis.configuration import set_hypothesis_home_dir, storage_directory
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

from fsm.harness.fuzz.invariants import check, run_case
from fsm.harness.fuzz.robust import hostile_input, survive
from fsm.harness.fuzz.shapes import CASES
from fsm.harness.fuzz.truth import Case
from fsm.harness.vectors import Expectation, ExpectedCall, Vector
from fsm.spec import identity_spec

# -- running -----------------------------------------------------------------------------------------------------------


@attrs.define
class Report:
    shape: str
    mode: str
    streams: int = 0
    failure: Any = None
    problems: list[str] = attrs.field(factory=list)


def fuzz(shape: str, mode: str, examples: int, seed: int | None, data_dir: Path | None = None) -> Report:
    """Run ``examples`` generated streams; on failure, the shrunk case and its problems.

    A ``seed`` gives the same streams in any process, whatever it imported before (hypothesis's
    local constants are kept out, as in sample_vectors), so a seed in a report reproduces it.
    With ``data_dir``, everything hypothesis keeps (its caches, a seeded run's example database)
    goes under it, not into the current folder."""
    report = Report(shape, mode)
    strategy = CASES[shape]() if mode == "property" else hostile_input(shape)
    database: ExampleDatabase | None = None
    if data_dir is not None and seed is not None:  # a derandomized run replays nothing: no database
        database = DirectoryBasedExampleDatabase(str(data_dir / "examples"))

    @settings(
        max_examples=examples,
        deadline=None,
        database=database,
        derandomize=seed is None,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(strategy)
    def property_holds(sample: Any) -> None:
        report.streams += 1
        problems = check(sample) if mode == "property" else survive(sample)
        if problems:
            report.failure, report.problems = sample, problems
            raise AssertionError("; ".join(problems))

    runner = with_seed(seed)(property_holds) if seed is not None else property_holds
    with _hypothesis_home(data_dir), _without_local_constants(), contextlib.suppress(AssertionError):
        runner()  # on failure hypothesis re-ran the shrunk case last: report holds it
    return report


@contextlib.contextmanager
def _hypothesis_home(data_dir: Path | None) -> Iterator[None]:
    """Point hypothesis's storage (a process-wide setting) at ``data_dir`` for one run, then back."""
    if data_dir is None:
        yield
        return
    previous = storage_directory(intent_to_write=False).home_directory
    set_hypothesis_home_dir(data_dir)
    try:
        yield
    finally:
        set_hypothesis_home_dir(previous)


def sample_vectors(shape: str, count: int) -> list[Vector]:
    """``count`` generated streams of ``shape`` as vectors expecting their ground truth (a fixed,
    derandomized sample), for grading other implementations on fuzzed input.

    Tests hold thresholds over this sample, so it must be a function of (shape, count) and the
    hypothesis version alone. ``derandomize`` seeds the engine from the test function, and without
    a database nothing earlier is replayed; no ``deadline`` and no health checks because a slow
    draw under load must neither fail nor cut the sample short (none of hypothesis's timers steers
    generation in a run that passes). What else varied is hypothesis's pool of "local constants":
    literals it scrapes from every project module in ``sys.modules`` and sometimes draws instead of
    a random value. The pool grows as the process imports more of fsm, so the same call gave other
    streams (a quarter fewer events) after other tests ran; ``_without_local_constants`` keeps it
    empty for this run."""
    cases: list[Case] = []

    @settings(
        max_examples=count, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(CASES[shape]())
    def collect(case: Case) -> None:
        cases.append(case)

    with _without_local_constants():
        collect()
    return [to_vector(case, f"fuzzed-{shape}-{n}") for n, case in enumerate(cases[:count], 1)]


@contextlib.contextmanager
def _without_local_constants() -> Iterator[None]:
    """Hypothesis (6.131.1 on) with an empty local-constants pool, and its own cache of allowed
    constants, for one run. No setting turns the pool off, so the swap goes through its private
    names; the cache is swapped too because it keeps constants drawn from the pool as it stood
    before, and this run's entries, made from the empty pool, must not starve later runs. A
    hypothesis without the pool has nothing to swap."""
    from hypothesis.internal.conjecture import providers

    if not hasattr(providers, "_get_local_constants"):
        yield
        return
    from hypothesis.internal.constants_ast import Constants

    empty = Constants()
    with (
        mock.patch.object(providers, "_get_local_constants", lambda: empty),
        mock.patch.object(providers, "CONSTANTS_CACHE", {}),
    ):
        yield


def to_vector(case: Case, name: str) -> Vector:
    """A case as a conformance vector, expecting its ground truth's calls. The property asks nothing
    of diagnostics but that none be a violation, and nothing of server calls (a hosted item among
    Responses calls): the vector expects the info diagnostics and the server calls this engine gives
    on the case (none if it raises), so a case the engine gets right passes ``conform``, and a
    failing one fails it for its calls alone."""
    calls = [
        ExpectedCall(
            name=t.name,
            arguments=t.arguments,
            id=t.id,
            thought_signature=t.signature,
            type=None if t.type == "function" else t.type,
            input=t.input,
        )
        for t in case.truth
    ]
    infos, servers = _beside_the_calls(case)
    body = case.body.decode("utf-8") if case.body is not None else None
    cut = f" The fuzzer fed the body in pieces, cut at bytes {list(case.cuts)}." if case.cuts and body else ""
    return Vector(
        name=name,
        description=f"Found by toolcall-fsm fuzz ({case.shape}); expects the ground truth it was rendered from.{cut}",
        shape=case.provider,
        expect=Expectation(finish_reason="tool_calls", calls=calls, diagnostics=infos, server_tool_calls=servers),
        events=[dict(e) for e in case.events],
        body=body,
    )


def _beside_the_calls(case: Case) -> tuple[list[str], list[ExpectedCall]]:
    try:
        result = run_case(case)[0]
    except Exception:  # the finding itself: the vector expects the truth alone
        return [], []
    info = {d.code for d in identity_spec().diagnostics if d.severity == "info"}
    servers = [
        ExpectedCall(name=c.name, arguments=c.arguments, status=c.status.value, id=c.id, type=c.type, input=c.input)
        for c in result.server_tool_calls
    ]
    return sorted(set(result.codes()) & info), servers
