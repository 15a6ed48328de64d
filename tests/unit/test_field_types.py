"""One type per field: a property name has one JSON type in every schema the OpenAPI description serves.

A script author (or a client generator) who meets ``option_level`` in two answers should get the same kind of
value from both. This walks every schema of the served description, nested and inline ones included, and
collects the JSON types each property name takes. ``null`` is not a type of its own here (an optional field
may be null anywhere), and ``integer`` counts as ``number``: JSON has one number type, and ``integer`` only
says a value is whole (option contracts are whole, shares need not be).
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from tests.unit.openapi_walk import Schema, json_types, properties, served_description

TWO_MEANINGS: dict[str, str] = {
    "data": "the payload of an envelope or of a stream event: each operation's own answer",
    "id": "a stream frame's `id:` line (an increasing number) and a stream consumer's name (`sse-3`)",
    "error": "the error envelope's error object and one symbol's error text in /streaming/subscriptions",
    "removed": "DELETE /auth/credentials' yes/no and the symbols an unsubscribe took out of the shared set",
}
"""The only names allowed more than one type, each because it names two different things."""


@pytest.fixture(scope="module")
def description() -> Schema:
    """Return the OpenAPI description the service serves at /docs/openapi.json."""
    return served_description()


def property_types(description: Schema) -> dict[str, dict[str, set[str]]]:
    """Return, for each property name, each JSON type it takes and the schemas where it does."""
    components: dict[str, Schema] = description["components"]["schemas"]
    types: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for where, name, schema in properties(description):
        for kind in json_types(schema, components):
            types[name][kind].add(where)
    return types


def test_every_property_name_has_one_json_type_everywhere(description: Schema) -> None:
    types = property_types(description)
    mixed = {
        name: {kind: sorted(where)[:4] for kind, where in kinds.items()}
        for name, kinds in types.items()
        if len(kinds) > 1 and name not in TWO_MEANINGS
    }
    assert mixed == {}, f"a field with more than one JSON type: {mixed}"


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("option_level", "string"),  # "0" to "5", the spec's type, on /accounts and /accounts/{acct}/features
        ("acct_num", "string"),
        ("conf_num", "string"),
        ("qty", "number"),
        ("quantity", "number"),
        ("price", "number"),
        ("symbol", "string"),
    ],
)
def test_the_fields_scripts_use_most_have_the_type_a_script_expects(description: Schema, name: str, kind: str) -> None:
    assert set(property_types(description)[name]) == {kind}


def test_every_indicator_is_a_boolean_never_a_y_or_n_string(description: Schema) -> None:
    indicators = {name: set(kinds) for name, kinds in property_types(description).items() if name.endswith("_ind")}
    assert indicators and all(kinds == {"boolean"} for kinds in indicators.values()), indicators


def test_the_walk_sees_a_second_type_where_there_is_one() -> None:
    # A made-up description in which option_level is a number in one schema and a string in another.
    sample: Schema = {
        "paths": {},
        "components": {
            "schemas": {
                "A": {"type": "object", "properties": {"option_level": {"type": "integer"}}},
                "B": {
                    "type": "object",
                    "properties": {"option_level": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
                },
                "C": {"type": "object", "properties": {"nested": {"type": "array", "items": {"$ref": "#/x/A"}}}},
            }
        },
    }
    assert {name: set(kinds) for name, kinds in property_types(sample).items()} == {
        "option_level": {"number", "string"},
        "nested": {"array"},
    }
