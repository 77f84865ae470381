"""Coverage-guided fuzzing of framing and decoders with atheris (libFuzzer), where it installs.

    pip install atheris
    python tools/atheris_fuzz.py -atheris_runs=200000        # or -max_total_time=600

Each input is split into a provider choice and a byte stream fed through the whole engine in random
chunks, under tight limits. Only the project's typed errors may escape; anything else is a crash
that libFuzzer saves as a reproducer.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    from fsm import Limits, Reassembler
    from fsm.errors import ToolcallFSMError
    from fsm.wire.decoders import PROVIDERS

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


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
