"""OpenAPI description of the freshness headers a read may carry (``ftdesk.domain.freshness``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def cached_read_openapi(fidelity_max_age: int, why: str) -> Mapping[str, Any]:
    """Return the ``extra_openapi`` of a read Fidelity mode serves from its reference cache."""
    return {
        "headers": {
            "Cache-Control": {
                "description": (
                    f"Fidelity mode: `max-age={fidelity_max_age}` ({why}): the answer may come from ftdesk's "
                    "reference cache and may be reused until then. Absent in paper mode, whose answers are "
                    "computed when asked."
                ),
                "schema": {"type": "string", "examples": [f"max-age={fidelity_max_age}"]},
            },
            "Age": {
                "description": (
                    "Whole seconds since Fidelity gave the answer, when it came from the cache (RFC 9111); "
                    "absent when the answer is fresh from Fidelity, and in paper mode."
                ),
                "schema": {"type": "integer", "minimum": 0},
            },
        }
    }
