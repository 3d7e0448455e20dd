"""The client's models against the server's OpenAPI (``GET /openapi.json`` of a real
server): every field a model reads exists in the schema it names, with a type the model
accepts (everything the server may send there: a nullable field must be optional)."""

from __future__ import annotations

import types
import typing
from typing import Any, ClassVar

import httpx
import pytest
from lumina_client.models import RESPONSE_MODELS
from pydantic import BaseModel, Field

from tests.server import AppServer

pytestmark = pytest.mark.slow

_JSON = {str: {"string"}, int: {"integer"}, float: {"number", "integer"}, bool: {"boolean"}}


def accepted(annotation: Any) -> set[str]:
    """The JSON types a field's annotation accepts."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return set().union(*(accepted(arg) for arg in typing.get_args(annotation)))
    if annotation is type(None):
        return {"null"}
    if annotation is Any:
        return {"string", "integer", "number", "boolean", "object", "array", "null"}
    if origin is list or annotation is list:
        return {"array"}
    if origin is dict or annotation is dict:
        return {"object"}
    if origin is typing.Literal:
        return {"string"}
    return _JSON.get(annotation, set())


def sent(prop: dict[str, Any], schemas: dict[str, Any]) -> set[str]:
    """The JSON types the server may send for a property."""
    if "$ref" in prop:
        return sent(schemas[prop["$ref"].rsplit("/", 1)[-1]], schemas)
    if "anyOf" in prop:
        return set().union(*(sent(p, schemas) for p in prop["anyOf"]))
    if "type" in prop:
        return {prop["type"]} if isinstance(prop["type"], str) else set(prop["type"])
    return {"object"} if "properties" in prop or "additionalProperties" in prop else set()


def drift(model: type[BaseModel], schemas: dict[str, Any]) -> list[str]:
    """What of ``model`` the schema does not back, one line each (empty: none)."""
    name = model.schema_name  # type: ignore[attr-defined]
    schema = schemas.get(name)
    if schema is None or "properties" not in schema:
        return [f"{model.__name__}: the server has no schema {name!r} with fields"]
    problems = []
    for field_name, info in model.model_fields.items():
        if field_name == "event_id":
            continue
        wire = info.alias or field_name
        prop = schema["properties"].get(wire)
        if prop is None:
            problems.append(f"{model.__name__}.{field_name}: {name} has no {wire!r}")
            continue
        server = sent(prop, schemas)
        if "integer" in server and "number" in accepted(info.annotation):
            server = server - {"integer"}
        missing = server - accepted(info.annotation)
        if missing:
            problems.append(f"{model.__name__}.{field_name}: the server may send {missing}")
        if info.is_required() and wire not in schema.get("required", []):
            problems.append(f"{model.__name__}.{field_name}: required here, optional there")
    return problems


@pytest.fixture(scope="module")
def schemas(server: AppServer) -> dict[str, Any]:
    spec = httpx.get(server.url + "/openapi.json", timeout=30).json()
    return spec["components"]["schemas"]


def test_every_model_matches_the_servers_schema(schemas: dict[str, Any]) -> None:
    problems = [line for model in RESPONSE_MODELS for line in drift(model, schemas)]
    assert problems == []


def test_the_check_catches_drift(schemas: dict[str, Any]) -> None:
    """A model that reads a field the server lacks, or takes a nullable field as always
    there, is reported."""

    class Drifted(BaseModel):
        schema_name: ClassVar[str] = "RunOut"
        run_id: str = Field(alias="runId")
        renamed: str = Field(alias="conversationUuid")
        message_id: int = Field(alias="messageId")  # the server sends null before an answer

    problems = drift(Drifted, schemas)
    assert any("conversationUuid" in p for p in problems)
    assert any("message_id" in p and "null" in p for p in problems)
    assert not any("run_id" in p for p in problems)
