"""One route module per endpoint group; ``route_tables()`` lists them for the app and OpenAPI."""

from __future__ import annotations

from ftdesk.service.routes import (
    accounts,
    alerts,
    app_window,
    auth,
    health,
    market_data,
    order_changes,
    order_entry,
    orders,
    preferences,
    reference,
    research,
    safety,
    streaming_sse,
    streaming_status,
    streaming_ws,
    watchlists,
)
from ftdesk.service.web.routing import RouteTable


def route_tables() -> list[RouteTable]:
    """Return every endpoint group of the API, in documentation order."""
    return [
        health.routes,
        auth.routes,
        accounts.routes,
        orders.routes,
        order_entry.routes,
        order_changes.routes,
        safety.routes,
        market_data.routes,
        streaming_sse.routes,
        streaming_ws.routes,
        streaming_status.routes,
        research.routes,
        watchlists.routes,
        alerts.routes,
        preferences.routes,
        reference.routes,
        app_window.routes,
    ]
