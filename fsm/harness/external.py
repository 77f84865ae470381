"""Running another implementation for grading, with bounds: its time, and what it may print.

An adapter under grade is code we do not trust: it may print without end, or leave a child behind
that holds its output open. It runs in a process group of its own; past the time allowed, or past
``OUTPUT_LIMIT`` bytes on stdout or stderr, the whole group is killed, and what it printed beyond
the limit is read and dropped, never kept, so memory stays bounded whatever it prints.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from typing import IO

import attrs

OUTPUT_LIMIT = 64 * 1024 * 1024
READ_SIZE = 64 * 1024


@attrs.frozen
class Ran:
    returncode: int | None
    """None when it was stopped: ``timed_out`` or ``overflowed``."""
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    overflowed: bool = False
    """It printed more than the limit on stdout or stderr."""


def run_bounded(argv: list[str], data: bytes, timeout: float, limit: int = OUTPUT_LIMIT) -> Ran:
    """``argv`` fed ``data`` on stdin; OSError when it cannot be started."""
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    overflow = threading.Event()
    kept: dict[str, bytearray] = {"stdout": bytearray(), "stderr": bytearray()}

    def drain(stream: IO[bytes], into: bytearray) -> None:
        while chunk := stream.read1(READ_SIZE):  # type: ignore[attr-defined]
            if len(into) + len(chunk) > limit:
                overflow.set()
                _kill(proc)
                continue  # read on to the end, so a killed group's last writes never block
            into += chunk

    def feed() -> None:
        assert proc.stdin is not None
        with contextlib.suppress(OSError):  # it need not read its input, nor all of it
            proc.stdin.write(data)
        with contextlib.suppress(OSError):
            proc.stdin.close()

    threads = [threading.Thread(target=feed, daemon=True)]
    threads += [threading.Thread(target=drain, args=(getattr(proc, name), kept[name]), daemon=True) for name in kept]
    for thread in threads:
        thread.start()
    timed_out = False
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    _kill(proc)  # its children too: one left behind would hold the output open
    proc.wait()
    for thread in threads:
        thread.join(timeout=5)  # a child that left the group may hold a pipe: it is not waited for
    stopped = timed_out or overflow.is_set()
    return Ran(
        None if stopped else proc.returncode, bytes(kept["stdout"]), bytes(kept["stderr"]), timed_out, overflow.is_set()
    )


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # no process groups (Windows): the adapter alone
            proc.kill()
