"""The command line's standard streams: a failed read says "cannot read", a failed write (a closed
pipe, a full disk) says "cannot write", whichever command was reading or writing, so the one-line
error never blames the wrong side and never comes with a traceback."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO, TextIO

from fsm.errors import ToolcallFSMError

if TYPE_CHECKING:
    from pathlib import Path  # (a start that writes no file loads no pathlib)

READ_SIZE = 64 * 1024


class ReadFailed(Exception):
    """The input could not be read; the message names it."""


class WriteFailed(Exception):
    """The output could not be written; the message says why."""


def open_input(path: str) -> BinaryIO:
    if path == "-":
        if sys.stdin is None:  # started with standard input closed (`<&-`)
            raise ReadFailed("cannot read standard input: it is closed")
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except OSError as exc:
        raise ReadFailed(f"cannot read {path}: {exc.strerror or exc}") from None


def unwritable_folder(folder: Path) -> str | None:
    """Why files cannot be written into ``folder`` (made when missing), or None when they can."""
    if folder.exists() and not folder.is_dir():  # mkdir would say only "File exists"
        return "it is a file, not a folder"
    import tempfile  # with shutil, bz2, lzma and random under it: only the commands that write files need it

    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def read_block(stream: BinaryIO) -> bytes:
    try:
        return stream.read(READ_SIZE)
    except OSError as exc:
        raise ReadFailed(f"cannot read {stream.name}: {exc.strerror or exc}") from None


class Output(io.TextIOBase):
    """Standard output whose failures (closed pipe, full disk) say "cannot write", whichever
    command was writing, so they are never mistaken for a read error."""

    def __init__(self, target: TextIO) -> None:
        self._target = target

    def write(self, text: str) -> int:
        try:
            raw = _unbuffered(self._target)
            if raw is None:
                return self._target.write(text)
            encoding = getattr(self._target, "encoding", None) or "utf-8"
            errors = getattr(self._target, "errors", None) or "strict"
            _write_all(raw, text.encode(encoding, errors))  # UnicodeEncodeError before a byte is written
            return len(text)
        except UnicodeEncodeError:  # raised before a byte is written: say it with escapes instead
            # Text the output's encoding cannot hold (a history's id with a lone surrogate, any
            # non-ASCII on an ASCII terminal) goes out as backslash escapes, as Python writes stderr.
            encoding = getattr(self._target, "encoding", None) or "utf-8"
            return self.write(text.encode(encoding, "backslashreplace").decode(encoding))
        except OSError as exc:
            raise WriteFailed(f"cannot write the output: {exc.strerror or exc}") from None

    def flush(self) -> None:
        if getattr(self._target, "closed", False):
            # Only when this object is collected (io's finalizer closes, so flushes, it) after its
            # caller closed the stream: nothing is left to write, and the error would be printed.
            return
        try:
            self._target.flush()
        except OSError as exc:
            raise WriteFailed(f"cannot write the output: {exc.strerror or exc}") from None


def _unbuffered(target: TextIO) -> io.RawIOBase | None:
    """The raw file under a text stream that writes straight through to it (standard output under
    ``PYTHONUNBUFFERED=1`` or ``python -u``), else None. A raw write may take only part of the
    bytes (a pipe whose reader left mid-write): the text layer drops the rest without a word, so
    :class:`Output` writes the bytes itself until all are taken or the write fails."""
    raw = getattr(target, "buffer", None)
    if isinstance(raw, io.RawIOBase) and getattr(target, "write_through", False):
        return raw
    return None


def _write_all(raw: io.RawIOBase, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = raw.write(view)
        if not written:  # None (would block) or 0: nothing more will be taken
            raise WriteFailed(f"cannot write the output: {len(view)} bytes were not taken")
        view = view[written:]


def silence_stdout() -> None:
    """After a failed write to the real stdout, point it at /dev/null, so the interpreter's own
    flush at exit neither fails again nor prints a traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def run_guarded(
    command: Callable[[TextIO, TextIO], int], stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run ``command(stdout, stderr)`` and turn every failure into one line on stderr and an exit
    status: 1 for the input, the output or the stream, 130 for Ctrl-C, 3 for a bug (no traceback,
    ever)."""
    stderr = stderr or sys.stderr or open(os.devnull, "w")  # noqa: SIM115  # stderr closed: say nothing
    stdout = stdout or sys.stdout
    if stdout is None:  # started with standard output closed (`>&-`)
        stderr.write("toolcall-fsm: cannot write the output: standard output is closed\n")
        return 1
    output = Output(stdout)
    try:
        code = command(output, stderr)  # type: ignore[arg-type]  # a TextIOBase is a text stream
        output.flush()  # a full disk shows only when the buffer is written
        return code
    except WriteFailed as exc:
        if stdout is sys.stdout:
            silence_stdout()
        stderr.write(f"toolcall-fsm: {exc}\n")
        return 1
    except ReadFailed as exc:
        stderr.write(f"toolcall-fsm: {exc}\n")
        return 1
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        stderr.write(f"toolcall-fsm: cannot use{where}: {exc.strerror or exc}\n")
        return 1
    except ToolcallFSMError as exc:
        stderr.write(f"toolcall-fsm: {exc}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the promise is no traceback, ever; say it is a bug
        stderr.write(f"toolcall-fsm: internal error (please report it): {type(exc).__name__}: {exc}\n")
        return 3


class Progress:
    """One self-overwriting status line on ``stream``, shown only when it is a terminal (a pipe or
    log file gets nothing, so output stays clean for scripts)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        isatty = getattr(stream, "isatty", None)
        self.shown = bool(isatty and isatty())

    def update(self, text: str) -> None:
        if self.shown:
            self.stream.write(f"\r\x1b[K{text}")
            self.stream.flush()

    def done(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
