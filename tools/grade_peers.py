"""Grade other reassemblers on the conformance vectors and on fuzzed streams, and print the
Markdown table the README publishes.

    python tools/grade_peers.py [--fuzzed N]    (N from 0 to fsm.cli.MAX_FUZZED, as `conform --fuzzed`)

Needs the graded libraries: pip install openai langchain-core langchain-openai
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
from pathlib import Path

from fsm.cli import MAX_FUZZED, bounded_count
from fsm.harness import conformance
from fsm.harness.fuzz import run as fuzz
from fsm.harness.vectors import load_vectors

ADAPTERS = Path(__file__).resolve().parent / "adapters"
PEERS = [
    ("toolcall-fsm", "toolcall_fsm.py", "toolcall-fsm"),
    ("openai-python `ChatCompletionStreamState`", "openai_python.py", "openai"),
    ("LangChain `AIMessageChunk` merging (langchain-openai conversion)", "langchain.py", "langchain-openai"),
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # Bounded as `conform --fuzzed`: a negative count reached hypothesis (a traceback), and any large
    # one made streams until memory ran out.
    parser.add_argument(
        "--fuzzed",
        type=bounded_count(0, MAX_FUZZED),
        default=200,
        metavar="N",
        help=f"fuzzed OpenAI-chat streams (default 200, at most {MAX_FUZZED})",
    )
    return parser


def main() -> int:
    args = build_parser().parse_args()
    vectors = [v for v in load_vectors() if v.shape == "openai-chat"]
    fuzzed = fuzz.sample_vectors("openai-chat", args.fuzzed) if args.fuzzed else []
    print("| Implementation | Version | OpenAI-chat vectors passed | Fuzzed OpenAI-chat streams passed |")
    print("|---|---|---|---|")
    for label, script, package in PEERS:
        command = f"{sys.executable} {ADAPTERS / script}"
        on_vectors = [conformance.run_external(command, v) for v in vectors]
        on_fuzzed = [conformance.run_external(command, v) for v in fuzzed]
        version = importlib.metadata.version(package)
        passed_v, passed_f = sum(o.passed for o in on_vectors), sum(o.passed for o in on_fuzzed)
        print(f"| {label} | {version} | {passed_v} / {len(on_vectors)} | {passed_f} / {len(on_fuzzed)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
