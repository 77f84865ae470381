"""Coverage-guided fuzzing of framing and decoders with atheris (libFuzzer), where it installs.

    pip install atheris
    python tools/atheris_fuzz.py seed SEEDS ../shared/captures tests/streams   # a seed corpus
    python tools/atheris_fuzz.py -max_total_time=600 NEW SEEDS                 # or -atheris_runs=200000

Each input is split into a provider choice (its last byte), a chunk size (the byte before) and a byte
stream fed through the whole engine in chunks of that size, under tight limits. Only the project's
typed errors may escape; anything else is a crash that libFuzzer saves as a reproducer. ``seed``
writes each recorded stream under a folder as two inputs (provider ``auto``; chunks of 7 and of 64
bytes): from random bytes alone the fuzzer seldom gets past the framing.
"""

from __future__ import annotations

import hashlib
import importlib
import pkgutil
import sys
from pathlib import Path

import atheris

with atheris.instrument_imports():
    import fsm
    from fsm import Limits, Reassembler
    from fsm.errors import ToolcallFSMError
    from fsm.wire.decoders import PROVIDERS

    # fsm loads its modules on first use, which would be after this block and so uninstrumented:
    # coverage would then see only the few imported above. Import every runtime module here.
    for module in pkgutil.walk_packages(fsm.__path__, "fsm."):
        if not module.name.startswith(("fsm.harness", "fsm.cli", "fsm.__main__")):
            importlib.import_module(module.name)

LIMITS = Limits(max_calls=8, max_argument_chars=4096, max_depth=16, max_event_bytes=8192)
CHOICES = ("auto", *PROVIDERS)


def test_one_input(data: bytes) -> None:
    source = atheris.FuzzedDataProvider(data)
    provider = CHOICES[source.ConsumeIntInRange(0, len(CHOICES) - 1)]
    step = source.ConsumeIntInRange(1, 64)
    body = source.ConsumeBytes(source.remaining_bytes())
    try:
        r = Reassembler(provider, limits=LIMITS)
        for start in range(0, len(body), step):
            r.feed_bytes(body[start : start + step])
        r.close()
    except ToolcallFSMError:
        pass


def seed(out: Path, sources: list[Path]) -> int:
    """Write every recorded stream under ``sources`` (up to 64 KB each) into ``out`` as inputs."""
    out.mkdir(parents=True, exist_ok=True)
    written = 0
    for source in sources:
        for path in sorted(source.rglob("*")) if source.is_dir() else [source]:
            data = path.read_bytes() if path.is_file() else b""
            if not data or len(data) > 65536 or path.suffix in (".md", ".py", ".toml"):
                continue
            for step in (7, 64):
                # atheris reads its integers from the end: the last byte picks the provider (0 is
                # "auto"), the one before it the chunk size (1 more than the byte).
                blob = data + bytes([step - 1, 0])
                (out / hashlib.sha1(blob).hexdigest()).write_bytes(blob)
                written += 1
    print(f"{written} inputs written to {out}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["seed"]:
        raise SystemExit(seed(Path(sys.argv[2]), [Path(p) for p in sys.argv[3:]]))
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
