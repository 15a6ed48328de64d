"""Preferences: your key/value store at the brokerage (string keys, string values)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints
from pydantic.config import JsonDict

from ftdesk.service.routes.common import in_user_data
from ftdesk.service.web.routing import BodyModel, Call, QueryModel, RouteTable

routes = RouteTable(tag="preferences")

MAX_PREFERENCES = 500
MAX_KEY_CHARS = 100
MAX_VALUE_CHARS = 10_000

KEY_PATTERN = r"^[A-Za-z0-9._-]+$"

PreferenceKey = Annotated[str, StringConstraints(min_length=1, max_length=MAX_KEY_CHARS, pattern=KEY_PATTERN)]
PreferenceValue = Annotated[str, StringConstraints(max_length=MAX_VALUE_CHARS)]


def _typed_map(schema: JsonDict) -> None:
    # The key rule on the key names (propertyNames) and the value rule on every value (additionalProperties) say
    # what patternProperties says, in the form generators turn into a typed map (dict[str, str]) rather than an
    # object of unknown values.
    for value_schema in list(schema.pop("patternProperties", {}).values()):  # type: ignore[union-attr]
        schema["additionalProperties"] = value_schema
    names = schema.setdefault("propertyNames", {})
    assert isinstance(names, dict)
    names["pattern"] = KEY_PATTERN


class PreferencesBody(BodyModel):
    """Preferences to add or overwrite; keys not named keep their values."""

    values: dict[PreferenceKey, PreferenceValue] = Field(
        max_length=MAX_PREFERENCES,
        description=f"Key -> value. Keys are 1 to {MAX_KEY_CHARS} letters, digits, '.', '_' or '-'; values are "
        f"strings of at most {MAX_VALUE_CHARS:,} characters (encode anything else as JSON text). The store "
        f"holds at most {MAX_PREFERENCES} keys.",
        json_schema_extra=_typed_map,
    )


class PreferencesDeleteQuery(QueryModel):
    """Which preferences to delete."""

    keys: list[PreferenceKey] | None = Field(
        default=None,
        min_length=1,  # an empty `keys=` is a mistake, never "delete every preference"
        max_length=MAX_PREFERENCES,
        description="Keys to delete (unknown keys are ignored). Omitted: delete every preference.",
    )


@routes.get("/preferences", summary="Preferences", response=dict[str, str], needs_session=True)
async def get_preferences(call: Call[None, None]) -> dict[str, str]:
    """Return the whole preference store as one JSON object, keys in order."""
    return await in_user_data(call, lambda user_data: user_data.get_preferences())


@routes.put(
    "/preferences", summary="Merge preferences", body=PreferencesBody, response=dict[str, str], needs_session=True
)
async def put_preferences(call: Call[PreferencesBody, None]) -> dict[str, str]:
    """Add or overwrite the keys in `values` (others are kept) and return the whole store."""
    values = dict(call.body.values)
    return await in_user_data(call, lambda user_data: user_data.put_preferences(values))


@routes.delete(
    "/preferences",
    summary="Delete preferences",
    query=PreferencesDeleteQuery,
    response=dict[str, str],
    needs_session=True,
)
async def delete_preferences(call: Call[None, PreferencesDeleteQuery]) -> dict[str, str]:
    """Delete the preferences named in `keys`, or all of them when `keys` is omitted; return what remains."""
    keys = call.query.keys
    return await in_user_data(call, lambda user_data: user_data.delete_preferences(keys))
