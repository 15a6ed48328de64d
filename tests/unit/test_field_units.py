"""Every number in the served OpenAPI description says what it is: its unit, or what it counts.

A script author (or a generated client) reading ``borrow_rate: 0.47`` or ``uptime_seconds`` cannot tell
percent from fraction, or dollars from dollars per share, unless the description says so. This walks every
schema the description serves (named components and inline request and response bodies, into arrays and
nullable ``anyOf``) and every parameter, and names each number or integer that has no description. The unit
itself comes from ``ftdesk/domain/field_meanings.py`` (by field name) or the field's own ``description``.
"""

from __future__ import annotations

import pytest

from tests.unit.openapi_walk import Schema, json_types, operations, properties, served_description


@pytest.fixture(scope="module")
def description() -> Schema:
    """Return the OpenAPI description the service serves at /docs/openapi.json."""
    return served_description()


def is_number(schema: Schema, components: dict[str, Schema]) -> bool:
    """Return whether a schema holds numbers: a number itself, or an array (of arrays) of them."""
    if "number" in json_types(schema, components):
        return True
    items = [schema.get("items")] + [part.get("items") for part in schema.get("anyOf", []) if isinstance(part, dict)]
    return any(isinstance(item, dict) and is_number(item, components) for item in items)


def is_described(schema: Schema, components: dict[str, Schema]) -> bool:
    """Return whether a schema, or the named schema it refers to, carries a description."""
    if schema.get("description"):
        return True
    target = components.get(str(schema.get("$ref", "")).rsplit("/", 1)[-1], {})
    return bool(target.get("description"))


def undescribed_numbers(description: Schema) -> list[str]:
    """Return "schema.property" (or "METHOD path parameter") of each number without a description."""
    components: dict[str, Schema] = description["components"]["schemas"]
    found = {
        f"{where}.{name}"
        for where, name, schema in properties(description)
        if is_number(schema, components) and not is_described(schema, components)
    }
    for operation_name, operation in operations(description):
        for parameter in operation.get("parameters", []):
            if is_number(parameter.get("schema", {}), components) and not parameter.get("description"):
                found.add(f"{operation_name} {parameter['in']} parameter {parameter['name']}")
    return sorted(found)


def test_every_number_the_description_serves_says_what_it_is(description: Schema) -> None:
    missing = undescribed_numbers(description)
    assert missing == [], f"{len(missing)} numbers without a description (unit, or what is counted): {missing}"


def test_the_walk_finds_a_number_without_a_description_wherever_it_is() -> None:
    # A made-up description: undescribed numbers in a nullable anyOf, an array, an inline response body and a
    # query parameter are found; described ones (directly or through their named schema) and strings are not.
    sample: Schema = {
        "components": {
            "schemas": {
                "Rate": {"type": "number", "description": "Annual rate, percent."},
                "Row": {
                    "type": "object",
                    "properties": {
                        "rate": {"anyOf": [{"type": "number"}, {"type": "null"}]},
                        "levels": {"type": "array", "items": {"type": "number"}},
                        "named": {"$ref": "#/components/schemas/Rate"},
                        "price": {"type": "number", "description": "US dollars per share."},
                        "symbol": {"type": "string"},
                    },
                },
            }
        },
        "paths": {
            "/things": {
                "get": {
                    "parameters": [
                        {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                        {"name": "symbol", "in": "query", "schema": {"type": "string"}},
                    ],
                    "responses": {
                        "200": {
                            "content": {
                                "application/json": {
                                    "schema": {"type": "object", "properties": {"count": {"type": "integer"}}}
                                }
                            }
                        }
                    },
                }
            }
        },
    }
    assert undescribed_numbers(sample) == [
        "GET /things query parameter limit",
        "GET /things.count",
        "Row.levels",
        "Row.rate",
    ]
