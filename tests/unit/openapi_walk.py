"""Walk the OpenAPI description the service serves: every property of every schema, named or inline."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ftdesk.service.docs.openapi import build_openapi
from ftdesk.service.routes import route_tables

Schema = dict[str, Any]


def served_description() -> Schema:
    """Return the OpenAPI description the service serves at /docs/openapi.json."""
    return build_openapi([endpoint for table in route_tables() for endpoint in table.endpoints], version="test")


def json_types(schema: Schema, components: dict[str, Schema]) -> set[str]:
    """Return the JSON types a schema allows (null left out, integer as number)."""
    if "$ref" in schema:
        target = components[schema["$ref"].rsplit("/", 1)[-1]]
        return {"object"} if "properties" in target else json_types(target, components)
    found: set[str] = set()
    for key in ("anyOf", "oneOf", "allOf"):
        for part in schema.get(key, []):
            found |= json_types(part, components)
    declared = schema.get("type")
    for kind in declared if isinstance(declared, list) else [declared] if declared else []:
        if kind != "null":
            found.add("number" if kind == "integer" else kind)
    if not found and "enum" in schema:
        found |= {"string" if isinstance(v, str) else "number" for v in schema["enum"] if v is not None}
    return found


def operations(description: Schema) -> Iterator[tuple[str, Schema]]:
    """Yield ("METHOD path", operation) for every operation of the description."""
    for path, item in description["paths"].items():
        for method, operation in item.items():
            if isinstance(operation, dict):
                yield f"{method.upper()} {path}", operation


def properties(description: Schema) -> Iterator[tuple[str, str, Schema]]:
    """Yield (where, name, schema) for every property: in named schemas and in inline request and response bodies.

    ``where`` is the schema's name (dotted into nested objects) or the operation's "METHOD path"; the walk goes
    into arrays, maps and ``anyOf``/``oneOf``/``allOf`` parts.
    """

    def walk(schema: Any, where: str) -> Iterator[tuple[str, str, Schema]]:
        if not isinstance(schema, dict):
            return
        for name, sub in (schema.get("properties") or {}).items():
            if isinstance(sub, dict):
                yield where, name, sub
            yield from walk(sub, f"{where}.{name}")
        for key in ("items", "additionalProperties"):
            yield from walk(schema.get(key), where)
        for key in ("anyOf", "oneOf", "allOf"):
            for part in schema.get(key, []):
                yield from walk(part, where)

    for name, schema in description["components"]["schemas"].items():
        yield from walk(schema, name)
    for operation_name, operation in operations(description):
        contents = [operation.get("requestBody", {}).get("content", {})]
        contents += [answer.get("content", {}) for answer in operation.get("responses", {}).values()]
        for content in contents:
            for media in content.values():
                yield from walk(media.get("schema"), operation_name)
