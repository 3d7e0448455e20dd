"""A safe arithmetic evaluator for the ``calculator`` tool: Python's expression syntax
parsed with ``ast`` and walked by hand — numbers, + - * / // % **, parentheses and a few
math functions and constants. No names, attributes, calls or literals beyond those, no
``eval``; sizes are bounded so no input can take long."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable

from lumina_app.agents.tools.spec import ToolError

MAX_CHARS = 500
MAX_NODES = 200
MAX_DIGITS = 1000  # of an integer result (a power is checked before it is computed)

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
_FUNCTIONS: dict[str, Callable[..., float]] = {
    "abs": abs,
    "round": round,
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
    if len(expression) > MAX_CHARS:
        raise ToolError(f"expression too long ({len(expression)} characters, at most {MAX_CHARS})")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ToolError(f"not an arithmetic expression: {exc.msg}") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise ToolError("expression too complex")
    try:
        return _eval(tree.body)
    except ZeroDivisionError:
        raise ToolError("division by zero") from None
    except (OverflowError, ValueError) as exc:
        raise ToolError(f"math error: {exc}") from None


def _eval(node: ast.expr) -> int | float:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise ToolError(f"unsupported value {node.value!r}")
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in _CONSTANTS:
            raise ToolError(f"unknown name {node.id!r} (constants: {', '.join(_CONSTANTS)})")
        return _CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        return _checked(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.Call):
        return _call(node)
    raise ToolError(f"unsupported syntax: {type(node).__name__}")


def _call(node: ast.Call) -> int | float:
    if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
        raise ToolError(f"unknown function (available: {', '.join(_FUNCTIONS)})")
    if node.keywords:
        raise ToolError("functions take positional arguments only")
    try:
        return _checked(_FUNCTIONS[node.func.id](*(_eval(arg) for arg in node.args)))
    except TypeError as exc:
        raise ToolError(f"{node.func.id}: {exc}") from None


def _check_power(base: float, exponent: float) -> None:
    """An integer power is sized before it is computed (``9**9**9`` would take minutes)."""
    whole = isinstance(base, int) and isinstance(exponent, int)
    if whole and abs(base) > 1 and exponent > 0 and exponent * math.log10(abs(base)) > MAX_DIGITS:
        raise ToolError(f"result too large (more than {MAX_DIGITS} digits)")


def _checked(value: int | float) -> int | float:
    if isinstance(value, complex):
        raise ToolError("the result is not a real number")
    if isinstance(value, int) and value.bit_length() > MAX_DIGITS * 3.33:
        raise ToolError(f"result too large (more than {MAX_DIGITS} digits)")
    return value
