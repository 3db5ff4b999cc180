"""Decode and check input JSON so every value fits what the event models and SQLite hold (issue 12).

Validation at the door: a value that would later fail a fold (an integer beyond 64 bits,
NaN, a lone surrogate, nesting that overflows a recursive serialiser) is refused here,
with a reason, before any event is written. No I/O.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

INT_MIN, INT_MAX = -(2**63), 2**63 - 1
MAX_DEPTH = 32  # containers inside containers; real files nest 4 deep at most
MAX_INT_DIGITS = 20
_SURROGATE = re.compile("[\ud800-\udfff]")


class BadValue(ValueError):
    """Input that decodes but does not fit: `reason` says what and where."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise BadValue(f"integer of {len(text)} digits is out of the 64-bit range")
    return int(text)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadValue(f"number {text[:40]} is not finite")
    return value


def _parse_constant(name: str) -> float:
    raise BadValue(f"{name} is not a number JSON allows")


def loads(text: str | bytes, max_depth: int = MAX_DEPTH, check_values: bool = True) -> Any:
    """`json.loads` that raises `BadValue` (with a reason) for anything a fold could not store.

    With `check_values=False` only the decoding is bounded (depth, digits, finite numbers): the
    caller checks the parts it keeps with `fits`, so one bad entry need not cost the whole file.
    """
    if too_deep(text, max_depth):
        raise BadValue(f"nested deeper than {max_depth} levels")
    try:
        value = json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
    except BadValue:
        raise
    except (ValueError, RecursionError) as exc:
        raise BadValue(f"not JSON: {getattr(exc, 'msg', None) or exc}"[:200]) from None
    if check_values:
        check(value, max_depth)
    return value


def too_deep(text: str | bytes, max_depth: int = MAX_DEPTH) -> bool:
    """Whether `[`/`{` nest deeper than `max_depth` (brackets inside strings ignored); no recursion."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if data.count(b"[") + data.count(b"{") <= max_depth:
        return False  # cannot nest deeper than it has brackets: the common case costs two counts
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
    stack: list[tuple[Any, int, str]] = [(value, 0, "$")]
    while stack:
        item, depth, where = stack.pop()
        if depth > max_depth:
            raise BadValue(f"nested deeper than {max_depth} levels at {where}")
        if isinstance(item, bool) or item is None:
            continue
        if isinstance(item, int):
            if not INT_MIN <= item <= INT_MAX:
                raise BadValue(f"integer at {where} is out of the 64-bit range")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise BadValue(f"number at {where} is not finite")
        elif isinstance(item, str):
            _check_text(item, where)
        elif isinstance(item, dict):
            for key, sub in item.items():
                _check_text(str(key), where)
                stack.append((sub, depth + 1, f"{where}.{str(key)[:40]}"))
        elif isinstance(item, list | tuple):
            stack.extend((sub, depth + 1, f"{where}[{i}]") for i, sub in enumerate(item))


def _check_text(text: str, where: str) -> None:
    if _SURROGATE.search(text):
        raise BadValue(f"text at {where} holds a lone surrogate (not valid UTF-8)")


def clean_text(text: str) -> str:
    """`text` with lone surrogates replaced, so it can be written as UTF-8 (for reasons and excerpts)."""
    return _SURROGATE.sub("\ufffd", text)


def int64(value: Any) -> int | None:
    """`value` if it is an integer that SQLite can store, else None."""
    if isinstance(value, int) and not isinstance(value, bool) and INT_MIN <= value <= INT_MAX:
        return value
    return None


def fits(value: Any, max_depth: int = MAX_DEPTH) -> bool:
    """Whether `check` accepts the value."""
    try:
        check(value, max_depth)
    except BadValue:
        return False
    return True
