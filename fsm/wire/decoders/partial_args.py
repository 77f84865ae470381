"""Turn Vertex AI's streamed function-call arguments (``functionCall.partialArgs``) into JSON text.

Vertex sends arguments as ``{jsonPath, stringValue | numberValue | boolValue | nullValue,
willContinue}`` entries, in document order; a string value continues over later entries for the same
path while ``willContinue`` is true. Writing them out as JSON text, as they come, lets the engine treat
them like any other argument fragments: completeness, truncation (a stream cut mid-value leaves the
text open, and the call comes back truncated with it) and append-safe deltas all work unchanged.

A path may come back to an object or array that a later sibling already closed (``$.a.b``, ``$.c``,
``$.a.d``). Text written in order cannot reopen it, so the text then names the key twice; the writer
notices, and when the call closes it gives the merged arguments (``a`` holding both ``b`` and
``d``; an array's items in order), which the decoder sends as the call's final snapshot. A call cut
before that keeps the text as written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from json.encoder import encode_basestring
from typing import Any

from fsm.errors import RemoteProtocolError
from fsm.jsontext import dumps, exact_float, exact_int
from fsm.wire.decoders._fields import spelled
from fsm.wire.decoders._fields import written as path_text
from fsm.wire.decoders._wire import dumps as wire_dumps

_SEGMENT = re.compile(r"""\.([^.\[\]]+)|\[(\d+)\]|\[\s*'((?:[^'\\]|\\.)*)'\s*\]|\[\s*"((?:[^"\\]|\\.)*)"\s*\]""")

Segment = str | int
_KEPT_PATHS = 1024
_MAX_INDEX_DIGITS = 18  # an array index past 10**18 could not be in order anyway


def parse_path(path: str) -> tuple[Segment, ...]:
    """``$.a.b[0]['c d']`` → ``("a", "b", 0, "c d")``."""
    if not path.startswith("$"):
        raise RemoteProtocolError(f"partialArgs jsonPath {path!r} does not start with $")
    segments: list[Segment] = []
    pos = 1
    while pos < len(path):
        m = _SEGMENT.match(path, pos)
        if m is None:
            raise RemoteProtocolError(f"partialArgs jsonPath {path!r} cannot be read at {path[pos:]!r}")
        dotted, number, single, double = m.groups()
        if number is not None:
            if len(number) > _MAX_INDEX_DIGITS:  # int() of thousands of digits raises ValueError
                raise RemoteProtocolError(f"partialArgs jsonPath array index has {len(number)} digits")
            segments.append(int(number))
        else:
            segments.append(dotted if dotted is not None else (single if single is not None else double) or "")
        pos = m.end()
    if not segments:
        raise RemoteProtocolError("partialArgs jsonPath addresses the root; values must be inside the object")
    return tuple(segments)


class _Frame:
    __slots__ = ("count", "is_array", "offset", "segment")

    def __init__(self, segment: Segment | None, is_array: bool) -> None:
        self.segment = segment
        self.is_array = is_array
        self.count = 0
        self.offset = 0  # items an array held before it was closed and came back to


class PartialArgsWriter:
    """Writes one call's arguments, entry by entry. ``mid_string`` tells whether a string is open."""

    def __init__(self) -> None:
        self._frames: list[_Frame] = []
        self._string_path: tuple[Segment, ...] | None = None
        self._paths: dict[str, tuple[Segment, ...]] = {}  # a string's pieces repeat its path
        self._closed: dict[tuple[Segment, ...], int] = {}  # containers a sibling closed: members written
        self._pieces: list[str] = []  # the text written so far, to merge revisited containers at close
        self.revisited = False

    def _path(self, path: str) -> tuple[Segment, ...]:
        parsed = self._paths.get(path)
        if parsed is None:
            parsed = parse_path(path)
            if len(self._paths) < _KEPT_PATHS:
                self._paths[path] = parsed
        return parsed

    @property
    def mid_string(self) -> bool:
        return self._string_path is not None

    def write(self, entries: list[Any]) -> str:
        out: list[str] = []
        for entry in entries:
            if not isinstance(entry, Mapping):
                raise RemoteProtocolError("a partialArgs entry is not an object")
            self._entry(entry, out)
        text = "".join(out)
        self._pieces.append(text)
        return text

    def continue_string(self, path: str, value: str, more: bool) -> str:
        """What write() gives for the one entry ``{jsonPath: path, stringValue: value, willContinue:
        more}`` when it goes on with the open string (its path, already read): its text, written;
        "" for any other entry or an empty piece, having written nothing."""
        if self._string_path is None or self._paths.get(path) != self._string_path:
            return ""
        piece = _escape(value)
        if not more:
            piece += '"'
            self._string_path = None
        elif not piece:
            return ""
        self._pieces.append(piece)
        return piece

    def close(self) -> str:
        """Close every open container (not an open string: that value never finished)."""
        if self.mid_string:
            return ""
        out = "".join("]" if f.is_array else "}" for f in reversed(self._frames))
        self._frames.clear()
        self._pieces.append(out)
        return out

    def merged(self) -> str | None:
        """After close(), when a path revisited a closed container: the arguments with every
        revisited container merged into its first appearance, as JSON text. None when the text
        cannot be read back (a value that is not JSON, nesting too deep to parse): the text as
        written stands, and its repeated key is reported when the call is parsed."""
        text = "".join(self._pieces)
        try:
            value = json.loads(text, object_pairs_hook=_merge_pairs, parse_int=exact_int, parse_float=exact_float)
        except (ValueError, RecursionError):
            return None
        return dumps(value)

    def _path_of(self, depth: int) -> tuple[Segment, ...]:
        return tuple(f.segment for f in self._frames[1 : depth + 1])  # type: ignore[misc]

    def _entry(self, entry: Mapping[str, Any], out: list[str]) -> None:
        path = self._path(path_text(entry.get("jsonPath", "")))
        more = bool(entry.get("willContinue"))
        if self._string_path is not None:
            if path == self._string_path and "stringValue" in entry:
                out.append(_escape(spelled(entry["stringValue"], "partialArgs stringValue")))
                if not more:
                    out.append('"')
                    self._string_path = None
                return
            out.append('"')  # a new path ends the open string
            self._string_path = None
        if not self._frames:
            out.append("{")
            self._frames.append(_Frame(None, is_array=False))
        parents, leaf = path[:-1], path[-1]
        open_path = tuple(f.segment for f in self._frames[1:])
        shared = 0
        while shared < min(len(open_path), len(parents)) and open_path[shared] == parents[shared]:
            shared += 1
        while len(self._frames) - 1 > shared:
            closing = self._path_of(len(self._frames) - 1)
            frame = self._frames.pop()
            self._closed[closing] = frame.count
            out.append("]" if frame.is_array else "}")
        for depth, segment in enumerate(parents[shared:], start=shared):
            self._member(segment, out)
            child_is_array = isinstance(path[depth + 1], int)
            out.append("[" if child_is_array else "{")
            frame = _Frame(segment, child_is_array)
            self._frames.append(frame)
            written = self._closed.get(path[: depth + 1])
            if written is not None:  # back in a container a sibling closed: merged at close()
                self.revisited = True
                if child_is_array:
                    frame.count = written  # its items go on where they stopped
                    frame.offset = written
        self._member(leaf, out)
        if "stringValue" in entry:
            out.append('"' + _escape(spelled(entry["stringValue"], "partialArgs stringValue")))
            if more:
                self._string_path = path
            else:
                out.append('"')
        elif "numberValue" in entry:
            out.append(_number(entry["numberValue"]))
        elif "boolValue" in entry:
            out.append("true" if entry["boolValue"] else "false")
        elif "nullValue" in entry:
            out.append("null")
        else:
            raise RemoteProtocolError(f"partialArgs entry for {entry.get('jsonPath')!r} has no value")

    def _member(self, segment: Segment, out: list[str]) -> None:
        """Write the separator and key (or check the array position) for the next member."""
        frame = self._frames[-1]
        if frame.is_array:
            if segment != frame.count:
                raise RemoteProtocolError(f"partialArgs array index {segment} arrived out of order")
        elif not isinstance(segment, str):
            raise RemoteProtocolError(f"partialArgs index [{segment}] addresses an object")
        if frame.count > frame.offset:
            out.append(", ")
        if not frame.is_array:
            out.append(json.dumps(segment, ensure_ascii=False) + ": ")
        frame.count += 1


def string_piece(payload: dict[str, Any]) -> tuple[str, str, bool] | None:
    """(jsonPath, stringValue, willContinue) of a Gemini event that says nothing else the decoder
    reads: no error or usage, one candidate at index 0 with no finish, one part, a functionCall of
    ``partialArgs`` (one entry, a string piece) and ``willContinue`` only. None for any other."""
    candidates = payload.get("candidates")
    if type(candidates) is not list or len(candidates) != 1:
        return None
    # A usage or finish under either name refuses the event (decode() reads the one it finds first).
    if len(payload) > 1 and (payload.get("error") or payload.get("usageMetadata") or payload.get("usage_metadata")):
        return None
    candidate = candidates[0]
    if type(candidate) is not dict or (candidate.get("index") or 0) != 0:
        return None
    if candidate.get("finishReason") or candidate.get("finish_reason"):
        return None
    content = candidate.get("content")
    parts = content.get("parts") if type(content) is dict else None
    if type(parts) is not list or len(parts) != 1:
        return None
    part = parts[0]
    call = part.get("functionCall") if type(part) is dict and len(part) == 1 else None
    if type(call) is not dict or not call.keys() <= _STREAMED_CALL_KEYS:
        return None
    entries = call.get("partialArgs")
    if type(entries) is not list or len(entries) != 1 or type(entry := entries[0]) is not dict:
        return None
    path, value = entry.get("jsonPath"), entry.get("stringValue")
    if type(path) is not str or type(value) is not str:
        return None
    return path, value, bool(entry.get("willContinue"))


_STREAMED_CALL_KEYS = frozenset({"partialArgs", "willContinue"})


def _number(value: Any) -> str:
    """A number as JSON text; NaN stays ``NaN`` for the strict parse to refuse, and an integer too
    long for Python's int-string conversion (or a Decimal) is written digit for digit."""
    return wire_dumps(value)


def _merge_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for key, value in pairs:
        held = merged.get(key)
        merged[key] = _merge(held, value) if key in merged else value
    return merged


def _merge(held: Any, value: Any) -> Any:
    """A revisited container and what the revisit added, added to the container itself (a parse's
    own, held nowhere else: copied at each revisit, one revisited again and again was copied whole
    each time, quadratic in the revisits); anything else: the later value wins."""
    if isinstance(held, dict) and isinstance(value, dict):
        for key, item in value.items():
            held[key] = _merge(held[key], item) if key in held else item
        return held
    if isinstance(held, list) and isinstance(value, list):
        held += value
        return held
    return value


def _escape(value: str) -> str:
    # The C string encoder json.dumps(value, ensure_ascii=False) ends in, without its setup.
    return encode_basestring(value)[1:-1]
