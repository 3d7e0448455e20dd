"""JSON Schema for tool arguments: a tool's schema is checked once when it is listed (a
tool with an unusable schema is unavailable, with why), and every call's arguments are
validated against it before the tool runs (errors go back to the model)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from referencing.exceptions import Unresolvable

from lumina_app.agents.tools.spec import ToolError, ToolSpec

# What OpenAI-compatible servers accept as a function name.
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def spec_problem(spec: ToolSpec) -> str | None:
    """Why a tool cannot be offered to a model, or None."""
    if not TOOL_NAME.fullmatch(spec.name):
        return "its name is not usable as a function name (letters, digits, _ and -, ≤ 64)"
    schema = spec.parameters
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return "its input schema does not describe an object"
    try:
        _validator(json.dumps(schema, sort_keys=True))
    except SchemaError as exc:
        return f"its input schema is invalid: {exc.message}"
    except (TypeError, ValueError) as exc:
        return f"its input schema is invalid: {exc}"
    return None


def parse_arguments(spec: ToolSpec, arguments: str) -> dict[str, Any]:
    """The call's arguments as an object valid for the tool's schema; ToolError says why not."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError as exc:
        raise ToolError(f"the arguments are not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ToolError("the arguments must be a JSON object")
    validator = _validator(json.dumps(spec.parameters, sort_keys=True))
    try:
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    except Unresolvable as exc:  # a $ref to elsewhere: nothing is ever fetched
        raise ToolError(f"the schema of {spec.name} refers to what it lacks: {exc}") from None
    if errors:
        problems = "; ".join(_describe(e) for e in errors[:3])
        raise ToolError(f"invalid arguments for {spec.name}: {problems}")
    return value


def _describe(error: Any) -> str:
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


@lru_cache(maxsize=512)
def _validator(schema_json: str) -> Validator:
    """Compiled once per distinct schema (compiling costs far more than validating)."""
    schema = json.loads(schema_json)
    cls = validator_for(schema, default=Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)
