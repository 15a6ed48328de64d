"""Find a request's JSON endpoint without aiohttp's application layer, the way aiohttp's router would.

aiohttp's ``Application._handle`` resolves the route, records the app on the match, checks for ``Expect``
and only then calls the handler; a small read spent a tenth of its cost there. The front door asks
``EndpointDispatch`` instead: it resolves with the app's own router (so a path means what it means to
aiohttp: the same resources, the same percent-decoding, the same order) and remembers what a method and
path resolved to, which never changes once the app is built. What is not a JSON endpoint (a stream, a
``/docs`` page, a path nothing matches) is left to the application, whose answer is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from aiohttp import web

from ftdesk.service.web.routing import AiohttpHandler, Serve

Found = tuple[Serve, Mapping[str, str]]
"""An endpoint's handler and the request's path parameters."""


class EndpointDispatch:
    """The JSON endpoints of one app, found by method and path."""

    REMEMBERED = 1024
    """Most method-and-path pairs kept: a script asks for the same few paths; a scan of random ones is not kept."""

    def __init__(self, router: web.UrlDispatcher, direct: Mapping[AiohttpHandler, Serve]) -> None:
        self._router = router
        self._direct = direct
        self._found: dict[tuple[str, str], Found] = {}

    def remembered(self, request: web.BaseRequest) -> Found | None:
        """Return what this method and path resolved to before, if it was a JSON endpoint."""
        return self._found.get((request.method, request.rel_url.path_safe))

    async def find(self, request: web.Request) -> Found | None:
        """Resolve a request with the app's router; return its JSON endpoint (None: leave it to the app)."""
        match_info = await self._router.resolve(request)
        serve = self._direct.get(match_info.handler)  # an endpoint's, or not ours
        if serve is None:
            return None
        found: Found = (serve, MappingProxyType(dict(match_info)))
        if len(self._found) < self.REMEMBERED:
            self._found[(request.method, request.rel_url.path_safe)] = found
        return found
