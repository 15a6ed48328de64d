"""/docs: the OpenAPI description for programs and a documentation page for browsers, all served locally.

The streams (SSE and the quote WebSocket) are described by an AsyncAPI 3.0 document at /docs/asyncapi.json,
linked from the page and from the OpenAPI description.

The page is Swagger UI from the ``swagger-ui-bundle-v2`` package; its assets are served from this
process and a Content-Security-Policy of ``'self'`` keeps the browser from fetching anything else, so
the page works offline and leaks nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web
from swagger_ui_bundle import swagger_ui_path

from ftdesk.service.context import CONTEXT, ENDPOINTS, OPENAPI
from ftdesk.service.docs.asyncapi import AsyncApiDocument
from ftdesk.service.push.frames import ASYNCAPI_PATH
from ftdesk.service.web.routing import Endpoint

DOCS_PATH = "/docs"
OPENAPI_PATH = "/docs/openapi.json"
ASSETS_PATH = "/docs/assets"
ASSET_FILES = ("swagger-ui.css", "swagger-ui-bundle.js", "favicon-32x32.png")
ASYNCAPI = web.AppKey("ftdesk_asyncapi", AsyncApiDocument)

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>ftdesk API</title>
  <link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <p style="font-family: sans-serif; margin: 12px 20px">Streams (Server-Sent Events and the quote WebSocket
    <code>/api/v1/ws/quotes</code>): channels, messages and control frames in the
    <a href="/docs/asyncapi.json">AsyncAPI 3.0 document</a>.</p>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>
"""

_INIT_JS = """window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: "/docs/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    persistAuthorization: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout"
  });
};
"""

_CSP = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'"


def wants_html(request: web.Request) -> bool:
    """Say whether the caller is a browser asking for a page rather than a program asking for JSON."""
    return "text/html" in request.headers.get("Accept", "")


async def docs(request: web.Request) -> web.Response:
    """Serve the documentation page to browsers and the OpenAPI JSON to everything else."""
    if wants_html(request):
        return web.Response(text=_PAGE, content_type="text/html", headers={"Content-Security-Policy": _CSP})
    return await openapi_json(request)


async def openapi_json(request: web.Request) -> web.Response:
    """Serve the OpenAPI description as JSON."""
    return web.Response(text=await request.app[OPENAPI].text(), content_type="application/json")


async def asyncapi_json(request: web.Request) -> web.Response:
    """Serve the AsyncAPI document of the streams as JSON, its servers at the address the client used."""
    return web.Response(text=await request.app[ASYNCAPI].text(request.host), content_type="application/json")


async def init_js(_request: web.Request) -> web.Response:
    """Serve the script that starts Swagger UI on the local description."""
    return web.Response(text=_INIT_JS, content_type="application/javascript")


def _asset_handler(path: Path, content_type: str) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def serve(_request: web.Request) -> web.StreamResponse:
        return web.FileResponse(path, headers={"Content-Type": content_type, "Cache-Control": "max-age=86400"})

    return serve


def add_docs_routes(app: web.Application) -> None:
    """Register /docs, /docs/openapi.json, /docs/asyncapi.json and the page's assets."""
    endpoints: list[Endpoint] = app[ENDPOINTS]
    app[ASYNCAPI] = AsyncApiDocument(endpoints, version=app[CONTEXT].version)
    app.router.add_get(DOCS_PATH, docs)
    app.router.add_get(OPENAPI_PATH, openapi_json)
    app.router.add_get(ASYNCAPI_PATH, asyncapi_json)
    app.router.add_get("/docs/init.js", init_js)
    base = Path(str(swagger_ui_path))
    types = {".css": "text/css", ".js": "application/javascript", ".png": "image/png"}
    for name in ASSET_FILES:
        app.router.add_get(f"{ASSETS_PATH}/{name}", _asset_handler(base / name, types[Path(name).suffix]))
