"""Common base of the domain records."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Record(BaseModel):
    """A domain record: plain data with the spec's field names, serialised unchanged to JSON."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, use_enum_values=False)


class UpstreamRecord(Record):
    """A record whose upstream shape is only partly known; the Fidelity adapter keeps the payload."""

    raw: dict[str, Any] | None = Field(
        default=None,
        # Present only when there is an upstream payload, so paper responses carry no empty field.
        exclude_if=lambda value: value is None,
        description="The upstream payload this record was mapped from (Fidelity broker only; absent on paper).",
    )
