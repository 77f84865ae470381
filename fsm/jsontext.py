"""JSON text, strictly: how argument text is parsed and judged, and how JSON is written out.

Three promises the rest of the package leans on:

* **Parsing is strict, all of it.** ``NaN``, ``Infinity`` and ``-Infinity`` are not JSON and are
  refused. Duplicate keys are found (the last one wins, as in every mainstream parser) so the caller
  can report them. Numbers are kept exactly: an integer longer than Python's int-string conversion
  limit, or a number too large for a float, comes back as a :class:`decimal.Decimal` holding its
  digits, instead of an error (the limit is read, never changed: it is process-wide). The one
  number refused is one whose exponent no decimal holds (past about 10**18): a ValueError, as
  RFC 8259 lets an implementation bound the range of numbers.
* **Writing never yields invalid or unencodable JSON.** :func:`dumps` refuses nothing it is handed:
  exact numbers are written digit for digit, non-finite floats (which no strict parse produces) as
  strings, and a lone UTF-16 surrogate as its ``\\udXXX`` escape, so the text always encodes as UTF-8.
* **Text is Unicode.** :func:`mend_surrogates` joins surrogate pairs that arrived as two code points
  and escapes the ones without a partner; the slot uses it where a UTF-16 server's code-unit slices
  meet (specs/identity.toml, rule ``text-is-unicode``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from json.encoder import c_make_encoder as _C_ENCODER  # type: ignore[attr-defined]
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from decimal import Decimal

# decimal and secrets serve rare paths only (numbers past int or float, values json cannot write): imported there.

_LONE: Final = re.compile("[\ud800-\udfff]")


class NotJSON(ValueError):
    """Text that Python's json module accepts but JSON does not (``NaN``, ``Infinity``)."""


def _refuse_constant(name: str) -> Any:
    raise NotJSON(f"{name} is not JSON")


def exact_int(digits: str) -> int | Decimal:
    try:
        return int(digits)
    except ValueError:  # longer than the int-string conversion limit: keep the digits
        from decimal import Decimal

        return Decimal(digits)


def exact_float(text: str) -> float | Decimal:
    value = float(text)
    if math.isfinite(value):
        return value
    from decimal import Decimal, InvalidOperation

    try:
        return Decimal(text)
    except InvalidOperation:  # an ArithmeticError: JSON puts no bound on an exponent, but decimal does
        raise ValueError(f"the number {text[:40]} has an exponent beyond what a decimal holds") from None


class _Duplicate(Exception):
    """An object gave a key twice: parse again, noting which."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    built = dict(pairs)
    if len(built) != len(pairs):
        raise _Duplicate
    return built


class _Keys:
    """An ``object_pairs_hook`` that builds dicts like json does and notes the keys given twice."""

    __slots__ = ("duplicates",)

    def __init__(self) -> None:
        self.duplicates: list[str] = []

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        built = dict(pairs)
        if len(built) != len(pairs):
            seen: set[str] = set()
            self.duplicates += [k for k, _ in pairs if k in seen or seen.add(k)]  # type: ignore[func-returns-value]
        return built


# Built once: json.loads with arguments builds a decoder per call, which costs more than a small parse.
_STRICT = json.JSONDecoder(parse_constant=_refuse_constant, object_pairs_hook=_unique_keys, parse_float=exact_float)
_STRICT_SCAN: Callable[[str, int], tuple[Any, int]] = _STRICT.scan_once  # type: ignore[attr-defined]


def parse_strict(text: str) -> tuple[Any, list[str]]:
    """Parse ``text`` as strict JSON; return the value and the keys some object gave twice.

    Raises ValueError (``json.JSONDecodeError``, or :class:`NotJSON` for ``NaN``/``Infinity``).
    Numbers a Python int or float cannot hold exactly come back as ``Decimal``.

    A short flat object (most arguments) is read by :func:`flat_object` first; anything else, or
    what it leaves undecided, takes the general path."""
    value = flat_object(text)
    if value is not None:
        return value, []
    return parse_general(text)


def flat_object(text: str) -> dict[str, Any] | None:
    """What :func:`parse_strict` gives for ``text`` when it is a flat object (no ``[``, no object
    among its values: most arguments) with no key given twice, read by the C parser with no hook
    of ours (a hook costs a Python call per object and per float); else None, for
    :func:`parse_general` to decide. The parse is kept only when it is provably the strict one's:
    it read one object (from offset 0, the C parser skips no whitespace, so the text starts with
    its ``{``) that ends where the text does, it holds as many keys as the text has colons, and
    its values hold no object and no infinity. Every key, nested ones too, brings one colon and a
    repeated one is lost in the dict, so equal counts mean no key was given twice and no object
    among the values holds a key (a colon inside a string only makes the counts differ); an
    empty object among them is unhashable, which the test of the values says (TypeError). No
    float overflowed: a flat object's floats are its values, and none is infinite. Flat, it nests
    one level: within any depth limit. Nested text (no ``[`` in it) is read by the C parser before
    parse_general reads it again: a count of its braces first cost every call's end more than
    that parse costs the few calls it spares.
    test_the_flat_object_reading_decides_as_the_general_parse holds it to parse_general."""
    if "[" not in text:
        try:
            value, end = _SCAN(text, 0)
        except Exception:  # whatever it is, the general path says it properly
            return None
        if type(value) is dict and end == len(text) and len(value) == text.count(":"):
            # isdisjoint compares the values with the infinities in C: only an overflowed float
            # equals one.
            try:
                if _INFINITIES.isdisjoint(value.values()):
                    return value
            except TypeError:  # an empty object among the values (unhashable): not flat
                return None
    return None


# The decoder's own scanner (C), called at offset 0: decode() around it adds two regex matches.
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder(parse_constant=_refuse_constant).scan_once  # type: ignore[attr-defined]
_QUICK_CHARS: Final = 4096
"""Longer text is no flat object for is_flat_object (its counts cost a pass each)."""
_INFINITY: Final = float("inf")
_INFINITIES: Final = frozenset((_INFINITY, -_INFINITY))


def is_flat_object(text: str) -> bool:
    """Is ``text`` exactly one JSON object holding no object or array (a whole call's usual
    arguments)? Read by the C parser, for short text only; False when unsure (NaN, too long)."""
    if len(text) > _QUICK_CHARS or text[:1] != "{" or text[-1:] != "}" or text.count("{") != 1 or "[" in text:
        return False
    return _one_value(text)


def _one_value(text: str) -> bool:
    """Does the C parser read one value that ends where ``text`` does?"""
    try:
        _, end = _SCAN(text, 0)
    except Exception:  # not JSON, or a constant the strict reading refuses
        return False
    return bool(end == len(text))


def parse_general(text: str) -> tuple[Any, list[str]]:
    """:func:`parse_strict` without its quick first try (:func:`flat_object`). Integers take the C
    parser's own path, floats are checked one by one (an overflow to infinity cannot be seen later
    without a walk). A repeated key, or an integer past the conversion limit, starts the parse over
    on the slower path that notes keys and keeps digits."""
    try:
        if text.startswith("{"):  # nearly every text (written from a value): read as loads_event reads
            try:
                value, end = _STRICT_SCAN(text, 0)
            except StopIteration:
                end = -1  # no value there: decode() says so, in its own words
            if end == len(text):
                return value, []
        return _STRICT.decode(text), []
    except (json.JSONDecodeError, NotJSON):
        raise
    except (_Duplicate, ValueError):  # ValueError: an integer beyond the int-string conversion limit
        keys = _Keys()
        value = json.loads(
            text, parse_constant=_refuse_constant, object_pairs_hook=keys, parse_int=exact_int, parse_float=exact_float
        )
        return value, keys.duplicates


_SAFE_INT_BITS: Final = 4096
"""Integers this short have fewer digits than any int-string conversion limit Python allows."""
_HEX4: Final = re.compile(r"\\?u[0-9a-fA-F]{0,4}(?:\\(?:u[0-9a-fA-F]{0,3})?)?")
_NUMBER_TAIL: Final = re.compile(r"\.|[eE][+-]?")
_NUMBER: Final = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LITERALS: Final = ("true", "false", "null")


TOO_DEEP_TO_READ: Final = "nests too deeply to read (Python's recursion limit, which the caller's stack shares)"
"""What an event that ran out of Python's stack as it was read is said to do (a limit: LimitExceeded)."""

_EVENT_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # configured as json.loads's own decoder


def loads_event(text: str) -> Any:
    """``json.loads(text)``, the same value or the same error, for a wire event, but for an integer
    longer than Python's int-string conversion limit: valid JSON, kept as a :class:`decimal.Decimal`
    of its digits (:func:`exact_int`), as argument text keeps it, where json.loads refuses the
    event. Text that is one object from its first character to its last (nearly every event) is
    scanned directly, without the layers json.loads puts around its scanner (BOM and whitespace
    checks, which such text passes); anything else, or any error, is left to json.loads itself."""
    if text.startswith("{"):
        try:
            value, end = _EVENT_SCAN(text, 0)
        except (ValueError, StopIteration):
            pass  # json.loads says what is wrong, in its own words
        else:
            if end == len(text):
                return value
    try:
        return json.loads(text)
    except ValueError as exc:
        if "integer string conversion" not in str(exc):
            raise
    return json.loads(text, parse_int=exact_int)  # the digits kept, read only for such an event


_PREFIX = json.JSONDecoder(parse_constant=_refuse_constant)


def is_json_prefix(text: str, *, undecided: bool = False) -> bool:
    """Could ``text`` be the beginning of a JSON document (or all of one)?

    Decided by the C parser: a prefix of valid JSON fails only where the text runs out, so the
    error's position is checked against what is left there (part of a literal, a number or an
    escape). Text the parser cannot judge (nesting deeper than it recurses, an integer longer than
    the int-string conversion limit) gets ``undecided``: the caller picks the safe answer."""
    try:
        _PREFIX.decode(text)
    except NotJSON:
        return False
    except json.JSONDecodeError as exc:
        return _fails_at_end(text, exc)
    except (ValueError, RecursionError):
        return undecided
    return True


def _fails_at_end(text: str, exc: json.JSONDecodeError) -> bool:
    tail = text[exc.pos :]
    message = exc.msg
    if message == "Unterminated string starting at":
        return True  # the string's content was read to the end: it had nothing invalid
    if message.startswith("Invalid \\uXXXX escape"):
        return _HEX4.fullmatch(tail) is not None
    if message == "Expecting value":
        return not tail or any(word.startswith(tail) for word in _LITERALS) or tail == "-"
    if message.startswith("Expecting") and message.endswith("delimiter"):
        # After a number the parser stops at a '.' or an exponent with no digit after it yet.
        return not tail or _number_goes_on(text[: exc.pos], tail)
    if message == "Expecting property name enclosed in double quotes":
        return not tail
    return False


def _number_goes_on(before: str, tail: str) -> bool:
    """Can ``tail`` (a '.', or an exponent mark and its sign) continue the number ``before`` ends with?"""
    number = before[len(before.rstrip("0123456789.eE+-")) :]
    if _NUMBER.fullmatch(number) is None or _NUMBER_TAIL.fullmatch(tail) is None:
        return False
    taken = ".eE" if tail == "." else "eE"
    return not any(ch in number for ch in taken)


# -- writing ----------------------------------------------------------------------------------------


def escape_lone_surrogates(text: str) -> str:
    """Every surrogate code point in ``text`` as its JSON escape ``\\udXXX`` (valid only inside a
    JSON string, where json.dumps puts every non-ASCII character)."""
    return _LONE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def has_surrogate(text: str) -> bool:
    """Does ``text`` hold a surrogate code point (which cannot be encoded as UTF-8)?"""
    return not text.isascii() and _LONE.search(text) is not None


def mend_surrogates(text: str, *, json_text: bool = True) -> tuple[str, int, int]:
    """``text`` with surrogate pairs (two code points) joined into their character and every other
    surrogate replaced: by its JSON escape in JSON text (the same value inside a string), by
    U+FFFD in freeform text (where an escape would be literal characters); also how many pairs
    were joined and how many lone surrogates replaced."""
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    pairs = len(text) - len(joined)
    if json_text:
        mended, lone = _LONE.subn(lambda m: f"\\u{ord(m.group()):04x}", joined)
    else:
        mended, lone = _LONE.subn("\ufffd", joined)
    return mended, pairs, lone


def unicode_utf8(text: str) -> bytes:
    """``text`` as UTF-8 after :func:`mend_surrogates`: the bytes a slot holds for it."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return mend_surrogates(text)[0].encode("utf-8")


def _exact(value: Any, numbers: list[str], marker: str) -> Any:
    """``value`` with every number json.dumps cannot write (strictly) swapped for a placeholder."""
    from decimal import Decimal

    if isinstance(value, dict):
        return {k: _exact(v, numbers, marker) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_exact(v, numbers, marker) for v in value]
    if isinstance(value, Decimal) or (type(value) is int and value.bit_length() > _SAFE_INT_BITS):
        numbers.append(_number_text(value))
        return f"{marker}{len(numbers) - 1}{marker}"
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # no strict parse produces one; a string keeps the output JSON
    return value


def _number_text(value: Decimal | int) -> str:
    from decimal import Decimal

    if isinstance(value, int):
        value = Decimal(value)  # Decimal(int) is not bound by the int-string conversion limit
    if not value.is_finite():
        return json.dumps(str(value))
    return str(value)


def _plain_dumps(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)``, text or error alike: the C encoder it makes (a new
    one each call, with its own table of the containers entered, so a value that holds itself is
    still found), called without the two Python calls json wraps it in."""
    return "".join(_C_ENCODER({}, *_ENCODER_ARGS)(value, 0))


_ENCODER = json.JSONEncoder(ensure_ascii=False)
_ENCODER_ARGS = (_ENCODER.default, encode_basestring, None, ": ", ", ", False, False, True)
"""encode()'s C encoder arguments: default, string writer, indent, separators, sort_keys, skipkeys, allow_nan."""
plain_dumps: Callable[[Any], str] = _ENCODER.encode if _C_ENCODER is None else _plain_dumps


def dumps(value: Any, *, indent: int | None = None) -> str:
    """``json.dumps(value, ensure_ascii=False)`` that always gives valid JSON encodable as UTF-8."""
    try:
        out = json.dumps(value, ensure_ascii=False, allow_nan=False, indent=indent)
    except (ValueError, TypeError):
        import secrets

        numbers: list[str] = []
        marker = secrets.token_hex(8)  # a placeholder no string in ``value`` can be mistaken for
        out = json.dumps(_exact(value, numbers, marker), ensure_ascii=False, allow_nan=False, indent=indent)
        out = re.sub(f'"{marker}(\\d+){marker}"', lambda m: numbers[int(m.group(1))], out)
    if has_surrogate(out):
        out = escape_lone_surrogates(out)
    return out


# A whole string (escapes included) or one bracket. An unterminated string does not match, so its
# brackets are counted: the pre-scan can only overestimate the depth, never miss it.
_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def nesting_exceeds(text: str, limit: int) -> bool:
    """Does JSON ``text`` nest deeper than ``limit``? Checked before ``json.loads``, whose recursive
    descent would raise RecursionError on deep input. Text no longer than ``limit`` costs nothing;
    with at most ``limit`` opening brackets (nearly every other event), two C-level counts; else
    strings are skipped by one regex and only the brackets outside them are walked."""
    if len(text) <= limit or text.count("[") + text.count("{") <= limit:
        return False
    return bracket_walk_exceeds(text, limit)


def bracket_walk_exceeds(text: str, limit: int) -> bool:
    """:func:`nesting_exceeds` without its shortcuts (what they must agree with)."""
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        ch = text[match.start()]
        if ch == "[" or ch == "{":
            depth += 1
            if depth > limit:
                return True
        elif ch != '"':
            depth -= 1
    return False
