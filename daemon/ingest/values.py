"""Decode and check input JSON so every value fits what the event models and SQLite hold (docs/architecture.md#untrusted-input).

Validation at the door: a value that would later fail a fold (an integer beyond 64 bits,
NaN, a lone surrogate, nesting that overflows a recursive serialiser) is refused here,
with a reason, before any event is written. No I/O.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson
from pydantic_core import from_json

INT_MIN, INT_MAX = -(2**63), 2**63 - 1
MAX_DEPTH = 32  # containers inside containers; real files nest 4 deep at most
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # the only way JSON text decodes to a surrogate
_REFUSED = object()  # what `_fast` returns for text the strict decoder must read
REFUSED = _REFUSED  # what `line` returns for a line `loads` must read, to take it or say why not
# A line's shape, by one C call: digits become "0", openers "[", the rest spaces. An integer of fewer than
# 19 digits always fits in 64 bits; no more openers than MAX_DEPTH cannot nest deeper (a regex took 5 us).
_SHAPE = bytes(48 if 48 <= i <= 57 else 91 if i in (91, 123) else 32 for i in range(256))
_LONG_INTEGER = b"0" * 19
_OPENER = bytes(91 if i == 123 else i for i in range(256))  # "{" becomes "[": openers, as `_SHAPE` counts them
_NOT_OPENER = bytes(i for i in range(256) if i not in (10, 91, 123))
_JSON_SPACE = " \t\n\r"  # what a JSON decoder skips before a value
_VALUE_STARTS = frozenset('"{[-0123456789tfnNI')  # a value's first character, NaN and Infinity included


class BadValue(ValueError):
    """Input that decodes but does not fit: `reason` says what and where."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _parse_int(text: str) -> int:
    value = int(text) if len(text) <= 20 else INT_MAX + 1  # 20 characters hold every 64-bit integer
    if not INT_MIN <= value <= INT_MAX:
        raise BadValue(f"integer {text[:24]}{'...' if len(text) > 24 else ''} is out of the 64-bit range")
    return value


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadValue(f"number {text[:24]} is not finite")
    return value


def _parse_constant(name: str) -> float:
    raise BadValue(f"{name} is not a number JSON allows")


# Numbers are checked as they are decoded (a Python call per number costs less than a walk).
_STRICT = json.JSONDecoder(parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
_LENIENT = json.JSONDecoder(parse_constant=_parse_constant)


def loads(text: str | bytes, max_depth: int = MAX_DEPTH, check_values: bool = True) -> Any:
    """`json.loads` that raises `BadValue` (with a reason) for anything a fold could not store.

    With `check_values=False` only the decoding is bounded (depth, NaN): the
    caller checks the parts it keeps with `fits`, so one bad entry need not cost the whole file.
    """
    if too_deep(text, max_depth):
        raise BadValue(f"nested deeper than {max_depth} levels")
    try:
        text = text if isinstance(text, str) else text.decode("utf-8")
        if text.lstrip(_JSON_SPACE)[:1] not in _VALUE_STARTS:  # garbage: said without two decoders' errors
            raise BadValue("not JSON: Expecting value")
        if check_values and (value := _fast(text)) is not _REFUSED:
            return value
        value = (_STRICT if check_values else _LENIENT).decode(text)
    except BadValue:
        raise
    except (ValueError, RecursionError) as exc:
        raise BadValue(f"not JSON: {getattr(exc, 'msg', None) or exc}"[:200]) from None
    if check_values and "\\u" in text and _SURROGATE_ESCAPE.search(text):
        check(value, max_depth)  # numbers and depth are checked already: this finds the surrogate
    return value


def line(raw: bytes, max_depth: int = MAX_DEPTH) -> Any:
    """An action line's value by orjson (it refuses NaN, infinities, lone surrogates and invalid UTF-8 itself),
    or `REFUSED` for a line `loads` must read: one orjson cannot, or one with an integer of 19 digits or more
    (orjson reads 2**63 to 2**64 as integers and longer ones as floats, where SQLite keeps 64-bit integers)."""
    shape = raw.translate(_SHAPE)
    if _LONG_INTEGER in shape or (shape.count(b"[") > max_depth and too_deep(raw, max_depth)):
        return _REFUSED
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _REFUSED


def has_long_integer(chunk: bytes) -> bool:
    """Whether any line of `chunk` has an integer of 19 digits or more (`line` refuses those lines): one
    C call for a read's lines, not one a line."""
    return _LONG_INTEGER in chunk.translate(_SHAPE)


def may_nest_deeper(chunk: bytes, max_depth: int = MAX_DEPTH) -> bool:
    """Whether some line of `chunk` has more openers than `max_depth` (so may nest deeper: `line` looks closer):
    one C call for a read's lines, not one a line (its openers and line ends kept, nothing else)."""
    return b"[" * (max_depth + 1) in chunk.translate(_OPENER, _NOT_OPENER)


def _fast(text: str) -> Any:
    """pydantic-core's parser (it refuses NaN and lone surrogates itself) and a walk over the numbers: 2.9 us
    a line where the strict decoder's hook per number took 4.4. `_REFUSED` for anything the strict decoder
    must read again, to accept it or to say why not."""
    try:
        value = from_json(text, allow_inf_nan=False, cache_strings="keys")
    except ValueError:
        return _REFUSED
    return value if _numbers_fit([value]) else _REFUSED


def _numbers_fit(container: Any) -> bool:
    """Whether every int in a decoded object or array is 64-bit and every float finite (its depth is
    checked already). A loop, not a call per value: most values are strings."""
    items: Any = container.values() if type(container) is dict else container
    for value in items:
        kind = type(value)
        if kind is str or kind is bool or value is None:
            continue
        if kind is int:
            if not INT_MIN <= value <= INT_MAX:
                return False
        elif kind is float:
            if not math.isfinite(value):
                return False
        elif not _numbers_fit(value):
            return False
    return True


def too_deep(text: str | bytes, max_depth: int = MAX_DEPTH) -> bool:
    """Whether `[`/`{` nest deeper than `max_depth` (brackets inside strings ignored); no recursion."""
    square, curly = ("[", "{") if isinstance(text, str) else (b"[", b"{")
    if text.count(square) + text.count(curly) <= max_depth:  # type: ignore[arg-type]
        return False  # cannot nest deeper than it has brackets: the common case costs two counts
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    depth = 0
    for token in _TOKENS.findall(data):
        if token in (b"[", b"{"):
            depth += 1
            if depth > max_depth:
                return True
        elif token in (b"]", b"}"):
            depth -= 1
    return False


_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def check(value: Any, max_depth: int = MAX_DEPTH) -> None:
    """Raise `BadValue` unless every int is 64-bit, every float finite, every string valid Unicode."""
    if not _fits(value, max_depth):
        raise BadValue(_problem(value, max_depth))


def _fits(value: Any, depth_left: int) -> bool:
    """The fast walk (no paths built); `_problem` walks again to say where, only for a bad value."""
    kind = type(value)
    if kind is str:
        return _SURROGATE.search(value) is None
    if kind is int:
        return bool(INT_MIN <= value <= INT_MAX)
    if kind is float:
        return math.isfinite(value)
    if kind is dict:
        return depth_left > 0 and all(_SURROGATE.search(k) is None if type(k) is str else _fits(k, 0)
                                      for k in value) and all(_fits(v, depth_left - 1) for v in value.values())
    if kind is list or kind is tuple:
        return depth_left > 0 and all(_fits(v, depth_left - 1) for v in value)
    return value is None or kind is bool or not isinstance(value, int | float | str | dict | list | tuple)


def _problem(value: Any, max_depth: int) -> str:
    """What is wrong with a value `_fits` refused, and where."""
    stack: list[tuple[Any, int, str]] = [(value, 0, "$")]
    while stack:
        item, depth, where = stack.pop()
        if isinstance(item, dict | list | tuple) and depth >= max_depth:
            return f"nested deeper than {max_depth} levels at {where}"
        if isinstance(item, bool) or item is None:
            continue
        if isinstance(item, int) and not INT_MIN <= item <= INT_MAX:
            return f"integer at {where} is out of the 64-bit range"
        if isinstance(item, float) and not math.isfinite(item):
            return f"number at {where} is not finite"
        if isinstance(item, str) and _SURROGATE.search(item):
            return f"text at {where} holds a lone surrogate (not valid UTF-8)"
        if isinstance(item, dict):
            for key, sub in item.items():
                if isinstance(key, str) and _SURROGATE.search(key):
                    return f"text at {where} holds a lone surrogate (not valid UTF-8)"
                stack.append((sub, depth + 1, f"{where}.{str(key)[:40]}"))
        elif isinstance(item, list | tuple):
            stack.extend((sub, depth + 1, f"{where}[{i}]") for i, sub in enumerate(item))
    return "a value that cannot be stored"


def clean_text(text: str) -> str:
    """`text` with lone surrogates replaced, so it can be written as UTF-8 (for reasons and excerpts)."""
    return _SURROGATE.sub("\ufffd", text)


def int64(value: Any) -> int | None:
    """`value` if it is an integer that SQLite can store, else None."""
    if isinstance(value, int) and not isinstance(value, bool) and INT_MIN <= value <= INT_MAX:
        return value
    return None


def number(value: Any) -> int | float | None:
    """`value` if it is a number SQLite can store (not a bool, not NaN), else None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return int64(value)


def fits(value: Any, max_depth: int = MAX_DEPTH) -> bool:
    """Whether `check` accepts the value."""
    return _fits(value, max_depth)
