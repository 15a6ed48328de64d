"""Common base of the domain records."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema
from pydantic.config import JsonDict
from typing_extensions import TypeAliasType

from ftdesk.domain.field_meanings import describe_units

RawPayload = TypeAliasType(
    "RawPayload",
    Annotated[
        dict[str, Any],
        WithJsonSchema(
            {
                "type": "object",
                "additionalProperties": True,
                "description": "An object the broker sent, passed through as it came; its keys are the upstream's.",
            }
        ),
    ],
)
"""A broker's object passed through unchanged: one named schema, so generated clients get one mapping type."""

JsonObject = TypeAliasType(
    "JsonObject",
    Annotated[
        dict[str, Any],
        WithJsonSchema({"type": "object", "additionalProperties": True, "description": "A JSON object."}),
    ],
)
"""A free-form JSON object (fields kept as given): one named schema, like ``RawPayload``."""

# Dates and times travel as the ISO text they always were; these say so in the schema (``format``), so generated
# clients read them as dates. "OrEmpty": the Fidelity adapter answers "" when the upstream left the date out.
IsoDate = Annotated[str, WithJsonSchema({"type": "string", "format": "date"})]
"""A calendar date as ISO ``YYYY-MM-DD`` text."""
IsoDateTime = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]
"""A moment as ISO 8601 text with its UTC offset, e.g. ``2026-11-25T14:30:00+00:00``."""
IsoDateOrEmpty = Annotated[
    str, WithJsonSchema({"anyOf": [{"type": "string", "format": "date"}, {"type": "string", "maxLength": 0}]})
]
"""An ISO date, or "" when the broker did not give one."""
IsoDateTimeOrEmpty = Annotated[
    str, WithJsonSchema({"anyOf": [{"type": "string", "format": "date-time"}, {"type": "string", "maxLength": 0}]})
]
"""An ISO 8601 time, or "" when the broker did not give one."""


class Record(BaseModel):
    """A domain record: plain data with the spec's field names, serialised unchanged to JSON."""

    # json_schema_extra: a number's unit (dollars, per share, percent) from its name, where the field has no
    # description of its own
    model_config = ConfigDict(
        extra="forbid", populate_by_name=True, use_enum_values=False, json_schema_extra=describe_units
    )


def _absent_not_null(schema: JsonDict) -> None:
    # raw is left out of an answer rather than sent as null: the schema says "an object, when present".
    branches = schema.pop("anyOf", [])
    schema.pop("default", None)
    if isinstance(branches, list):
        schema.update(next(b for b in branches if isinstance(b, dict) and b.get("type") != "null"))


class UpstreamRecord(Record):
    """A record whose upstream shape is only partly known; the Fidelity adapter keeps the payload."""

    raw: RawPayload | None = Field(
        default=None,
        # Present only when there is an upstream payload, so paper responses carry no empty field.
        exclude_if=lambda value: value is None,
        description="The upstream payload this record was mapped from (Fidelity broker only; absent on paper).",
        json_schema_extra=_absent_not_null,
    )


_Item = TypeVar("_Item")


class SharedList(list[_Item]):
    """An answer handed as it is to every caller that asks while it is current: read it, never change it.

    A broker that reuses an answer (the paper ledger's positions within a market second) returns the same
    ``SharedList`` each time, and the web edge makes its response body once (``rendered``): every caller is
    served the same bytes instead of each serialising the answer again.
    """

    __slots__ = ("_rendered",)

    def rendered(self, render: Callable[[SharedList[_Item]], bytes]) -> bytes:
        """Return the answer as ``render`` writes it, made on the first call and kept (one renderer per list)."""
        body: bytes | None = getattr(self, "_rendered", None)
        if body is None:
            body = render(self)
            self._rendered = body
        return body
