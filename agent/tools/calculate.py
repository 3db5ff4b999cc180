"""The `calculate` tool: arithmetic for the model, so ratios and percentages in a report are computed.

Pure. An AST walker over numbers and + - * / ** % and parentheses: no names, no calls, no
attributes, never `eval`. Length, exponents and magnitudes are bounded, so no expression can
take long or grow huge; every refusal is a result with an `error`, never an exception.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

MAX_LENGTH = 200  # characters of an expression
MAX_EXPONENT = 100  # |b| in a ** b
MAX_MAGNITUDE = 1e15  # |value| of any literal, intermediate or result

BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.Pow: operator.pow, ast.Mod: operator.mod}
UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}


class Refused(ValueError):
    """Why an expression is not computed, in words for the model."""


def calculate(expression: Any) -> dict[str, Any]:
    """`{"expression", "result"}`, or `{"expression", "error"}` saying what is allowed."""
    if not isinstance(expression, str) or not expression.strip():
        return {"expression": expression if isinstance(expression, str) else repr(expression),
                "error": "give `expression` as a non-empty string, e.g. \"(126 - 42) / 42 * 100\""}
    text = expression.strip()
    shown = text if len(text) <= MAX_LENGTH else text[:MAX_LENGTH] + "..."
    try:
        if len(text) > MAX_LENGTH:
            raise Refused(f"the expression is {len(text)} characters long; at most {MAX_LENGTH} are allowed")
        try:
            tree = ast.parse(text, mode="eval")
        except SyntaxError:
            raise Refused("not an arithmetic expression") from None
        value = _evaluate(tree.body)
    except Refused as exc:
        return {"expression": shown, "error": f"{exc}. Only numbers, + - * / ** % and parentheses are allowed."}
    return {"expression": text, "result": _tidy(value)}


def _evaluate(node: ast.expr) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return _bounded(node.value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
        return UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Div | ast.Mod) and right == 0:
            raise Refused("division by zero")
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        try:
            return _bounded(BINARY[type(node.op)](left, right))
        except (OverflowError, ZeroDivisionError) as exc:  # 0 ** -1, float overflow
            raise Refused(f"cannot compute: {exc}") from None
    raise Refused(f"{_described(node)} is not allowed")


def _check_power(base: float, exponent: float) -> None:
    if abs(exponent) > MAX_EXPONENT:
        raise Refused(f"the exponent {exponent:g} is too large (at most {MAX_EXPONENT})")
    if base < 0 and exponent != int(exponent):
        raise Refused("a negative number to a fractional power is not a real number")


def _bounded(value: float) -> float:
    if isinstance(value, complex) or math.isnan(value) or abs(value) > MAX_MAGNITUDE:
        raise Refused(f"the result is out of range (at most {MAX_MAGNITUDE:g} in magnitude)")
    return value


def _tidy(value: float) -> float | int:
    """Integers as integers; other values rounded to 10 significant digits (no float noise like 0.30000000000000004)."""
    if isinstance(value, int) or float(value).is_integer():
        return int(value)
    return float(f"{value:.10g}")


def _described(node: ast.expr) -> str:
    """What the model wrote, named: `a name (x)`, `a function call`, ..."""
    if isinstance(node, ast.Name):
        return f"a name ({node.id})"
    if isinstance(node, ast.Call):
        return "a function call"
    if isinstance(node, ast.Attribute):
        return "an attribute"
    if isinstance(node, ast.Constant):
        return f"the literal {node.value!r}"
    if isinstance(node, ast.BinOp | ast.UnaryOp):
        return f"the operator {type(node.op).__name__}"
    return f"a {type(node).__name__} expression"
