"""What a framer hands on in place of a wire event it could not read (shared by every framing)."""

from __future__ import annotations

import attrs


@attrs.frozen(slots=True)
class Fault:
    """A wire event the framer could not turn into text, in its place among the payloads.

    ``skippable``: only this event is unusable (not UTF-8, not JSON) and the stream goes on after it;
    otherwise the framing itself is lost or a limit was exceeded, and nothing after it can be read."""

    message: str
    skippable: bool
    limit: bool = False


Payload = str | Fault


def too_long(what: str, max_bytes: int) -> Fault:
    return Fault(f"{what} is longer than {max_bytes} bytes", skippable=False, limit=True)


def decode_utf8(raw: bytes) -> Payload:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Fault(f"not UTF-8: {exc}", skippable=True)
