"""One route module per endpoint group; ``route_tables()`` lists them for the app and OpenAPI."""

from __future__ import annotations

from ftdesk.service.routes import health
from ftdesk.service.routing import RouteTable


def route_tables() -> list[RouteTable]:
    """Return every endpoint group of the API, in documentation order."""
    return [health.routes]
