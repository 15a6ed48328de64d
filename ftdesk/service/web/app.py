"""Build the aiohttp application from the service context and the route tables."""

from __future__ import annotations

from aiohttp import web

from ftdesk.service.context import CONTEXT, DESKTOP_WINDOW, ENDPOINTS, OPENAPI, DesktopWindow, ServiceContext
from ftdesk.service.docs.openapi import OpenApiDocument
from ftdesk.service.docs.pages import add_docs_routes
from ftdesk.service.push.state import STREAMING, StreamingOptions, StreamingState
from ftdesk.service.safety.sweep import SWEEP_HOLD_SECONDS
from ftdesk.service.web.dispatch import EndpointDispatch
from ftdesk.service.web.front_door import FRONT_DOOR, EndpointGuards, FrontDoor, SecurityPolicy
from ftdesk.service.web.routing import RouteTable, add_routes


def create_web_app(
    ctx: ServiceContext,
    tables: list[RouteTable],
    *,
    streaming: StreamingOptions | None = None,
    window: DesktopWindow | None = None,
) -> web.Application:
    """Return the application serving the route tables under /api/v1, and /docs (a window: the tray's).

    It is served behind its ``FRONT_DOOR`` (``ServiceServer`` puts it there): the Host, Origin and body-size
    checks, the error envelope and the direct call of a JSON endpoint live there; each endpoint's handler checks
    its own API key.
    """
    settings = ctx.settings
    policy = SecurityPolicy(
        api_key=ctx.api_key,
        api_key_required=settings.api_key_required,
        bind_host=settings.host,
        allowed_origins=frozenset(o.lower() for o in settings.allowed_origins),
        max_body_bytes=settings.max_body_bytes,
    )
    app = web.Application(client_max_size=settings.max_body_bytes)
    app[CONTEXT] = ctx
    app[STREAMING] = StreamingState(ctx.quotes, streaming or StreamingOptions())
    if window is not None:
        app[DESKTOP_WINDOW] = window
    routed = add_routes(app, tables, EndpointGuards(policy, ctx.safety, SWEEP_HOLD_SECONDS).guard)
    app[FRONT_DOOR] = FrontDoor(policy, EndpointDispatch(app.router, routed.direct))
    app[ENDPOINTS] = routed.endpoints
    app[OPENAPI] = OpenApiDocument(routed.endpoints, version=ctx.version)
    add_docs_routes(app)
    app.on_shutdown.append(ctx.streams.close_all)
    return app
