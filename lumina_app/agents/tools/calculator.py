"""A safe arithmetic evaluator for the ``calculator`` tool: Python's expression syntax
parsed with ``ast`` and walked by hand — numbers, + - * / // % **, parentheses and a few
math functions and constants. No names, attributes, calls or literals beyond those, no
``eval``. Every operation's inputs are sized before it runs (a power, ``round``'s digits),
and every value after, so each step is cheap; the tool still runs in a worker process
with a deadline (``sandbox.py``), in case a bound here is ever wrong."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable

from lumina_app.agents.tools.spec import ToolError, quoted

MAX_CHARS = 500
MAX_NODES = 200
MAX_DEPTH = 50  # of nested operations and calls
MAX_DIGITS = 1000  # of an integer, and of ``round``'s ndigits either way
_MAX_BITS = int(MAX_DIGITS * math.log2(10))  # below 2**this: at most MAX_DIGITS digits

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_OPERATORS = {
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.MatMult: "@",
    ast.Invert: "~",
    ast.Not: "not",
}


def _round(number: float, ndigits: int | None = None) -> float:
    """``round``, with ``ndigits`` bounded: ``round(1, -10**9)`` builds ``10**10**9``."""
    if ndigits is None:
        return round(number)
    if not isinstance(ndigits, int):
        raise ToolError("round: ndigits must be a whole number")
    if abs(ndigits) > MAX_DIGITS:
        raise ToolError(f"round: ndigits must be between -{MAX_DIGITS} and {MAX_DIGITS}")
    return round(number, ndigits)


_FUNCTIONS: dict[str, Callable[..., float]] = {
    "abs": abs,
    "round": _round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "log2": math.log2,
    "log10": math.log10,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "floor": math.floor,
    "ceil": math.ceil,
}
_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}


def evaluate(expression: str) -> int | float:
    """The value of ``expression``; ToolError (said for the model) for anything else."""
    if not isinstance(expression, str):
        raise ToolError("the expression must be a string")
    if len(expression) > MAX_CHARS:
        raise ToolError(f"expression too long ({len(expression)} characters, at most {MAX_CHARS})")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ToolError(f"not an arithmetic expression: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError):  # NUL bytes; the parser's own limits
        raise ToolError("not an arithmetic expression") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise ToolError("expression too complex")
    try:
        return _eval(tree.body, 0)
    except ZeroDivisionError:
        raise ToolError("division by zero") from None
    except (OverflowError, ValueError) as exc:
        raise ToolError(f"math error: {exc}") from None


def _eval(node: ast.expr, depth: int) -> int | float:
    if depth > MAX_DEPTH:
        raise ToolError(f"expression nested too deeply (at most {MAX_DEPTH} levels)")
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise ToolError(f"unsupported value {quoted(node.value)}")
        return _checked(node.value)
    if isinstance(node, ast.Name):
        if node.id not in _CONSTANTS:
            known = ", ".join(_CONSTANTS)
            raise ToolError(f"unknown name {quoted(node.id)} (constants: {known})")
        return _CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp | ast.BinOp) and type(node.op) in _OPERATORS:
        raise ToolError(f"unsupported operator {_OPERATORS[type(node.op)]}")
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand, depth + 1))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left, depth + 1), _eval(node.right, depth + 1)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        return _checked(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.Call):
        return _call(node, depth)
    raise ToolError(f"unsupported syntax: {type(node).__name__}")


def _call(node: ast.Call, depth: int) -> int | float:
    if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
        raise ToolError(f"unknown function (available: {', '.join(_FUNCTIONS)})")
    if node.keywords:
        raise ToolError("functions take positional arguments only")
    args = [_eval(arg, depth + 1) for arg in node.args]
    try:
        return _checked(_FUNCTIONS[node.func.id](*args))
    except TypeError as exc:
        raise ToolError(f"{node.func.id}: {exc}") from None


def _check_power(base: float, exponent: float) -> None:
    """An integer power is sized before it is computed (``9**9**9`` would take minutes)."""
    if not (isinstance(base, int) and isinstance(exponent, int)) or abs(base) <= 1:
        return  # a float power overflows at once; 0, 1 and -1 stay small
    if exponent > 0 and exponent * base.bit_length() > _MAX_BITS + exponent:
        raise ToolError(f"result too large (more than {MAX_DIGITS} digits)")


def _checked(value: int | float) -> int | float:
    if isinstance(value, complex):
        raise ToolError("the result is not a real number")
    if isinstance(value, int) and value.bit_length() > _MAX_BITS:
        raise ToolError(f"result too large (more than {MAX_DIGITS} digits)")
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError("the result is not a finite number")
    return value
