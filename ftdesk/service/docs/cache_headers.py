"""OpenAPI description of the freshness headers a read may carry (``ftdesk.domain.freshness``)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
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


REUSED_ACCOUNT_READ_OPENAPI: Mapping[str, Any] = MappingProxyType(
    {
        "headers": {
            "Cache-Control": {
                "description": (
                    "Fidelity mode: `max-age=1` (`FTSERVICE_FIDELITY_READ_SHARE`) when the answer is kept for "
                    "identical reads, which ftdesk does only while it can prove the answer current: the "
                    "account-event stream (BEPS) is live and no account event (a fill, an order status, a "
                    "cancel) and no write (an order, a cancel) came since Fidelity gave it; any event or write "
                    "drops it at once. Absent when nothing is kept (BEPS down, a quick upstream), and in paper "
                    "mode."
                ),
                "schema": {"type": "string", "examples": ["max-age=1"]},
            },
            "Age": {
                "description": (
                    "Whole seconds since Fidelity gave the answer, when the read got an answer kept for "
                    "identical reads (RFC 9111; `0` for one under a second old); absent when the answer is "
                    "fresh from Fidelity, and in paper mode."
                ),
                "schema": {"type": "integer", "minimum": 0},
            },
        }
    }
)
"""The ``extra_openapi`` of an account read Fidelity mode may answer with an answer kept while events are live."""
