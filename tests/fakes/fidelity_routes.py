"""The shape of a route the fake Fidelity upstream hands to a group module."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from tests.fakes.fidelity_server import FakeFidelity

# handler(upstream, request, parsed JSON body or None); reached only with a live session cookie.
GroupHandler = Callable[["FakeFidelity", web.Request, Any], Awaitable[web.StreamResponse]]
GroupRoutes = dict[tuple[str, str], GroupHandler]
