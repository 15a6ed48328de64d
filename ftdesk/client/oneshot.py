"""The blocking ``Client``'s requests: the async client's methods, each request sent with ``http.client``.

A script (or an ``ftdesk`` subcommand) making a few requests should not pay for aiohttp, an event loop and a
thread: importing aiohttp alone costs more than a whole quote request. ``OneShotClient`` is an ``AsyncClient``
whose ``request`` sends over the standard library and never suspends, so each of the async client's methods
(the same paths, bodies, answer models and errors) runs to its end in one step with ``finish``; no event loop
is involved. The streams stay on aiohttp (``Client`` starts it only when a stream is opened).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Coroutine, Mapping
from http.client import HTTPConnection, HTTPException, HTTPSConnection
from typing import Any, TypeVar
from urllib.parse import quote, urlencode, urlsplit

from ftdesk.client.async_client import API_PREFIX, AsyncClient
from ftdesk.client.errors import envelope_data, unreachable
from ftdesk.client.iterators import awaited

T = TypeVar("T")

# The shortest socket timeout once a request's total time is nearly spent: the next wait then ends at once.
_LAST_MOMENT = 0.001


def finish(awaitable: Awaitable[T]) -> T:
    """Run one of ``OneShotClient``'s coroutines to its end without an event loop and return its result."""
    coroutine: Coroutine[Any, Any, T] = awaitable if isinstance(awaitable, Coroutine) else awaited(awaitable)
    try:
        coroutine.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    coroutine.close()
    raise RuntimeError("a one-shot request waited on an event loop; use AsyncClient for this")


class OneShotClient(AsyncClient):
    """``AsyncClient`` whose requests block on ``http.client`` (a new loopback connection each) and never suspend."""

    async def aclose(self) -> None:
        """Nothing to close: each request closes its own connection."""

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """Send one request to ``/api/v1<path>`` and return the envelope's ``data``; raise on an error answer."""
        url = self.base_url + API_PREFIX + path
        sent = {**self._headers, "Authorization": f"Bearer {self._api_key}", **(headers or {})}
        try:
            status, request_id, body = self._exchange(method, url, params, json, sent)
        except (OSError, HTTPException, ValueError) as exc:  # refused, reset, timed out, a malformed URL
            raise unreachable(method, url, headers, exc) from None
        return envelope_data(status, body, request_id)

    def _exchange(
        self, method: str, url: str, params: Mapping[str, str] | None, payload: Any, headers: dict[str, str]
    ) -> tuple[int, str | None, Any]:
        # A fresh connection per request: a kept-alive one the service closed while idle would fail the next
        # request, and a place is never retried, so it would fail for nothing. A loopback connect costs ~0.1 ms.
        parts = urlsplit(url)
        # Non-ASCII in a path is percent-encoded, as aiohttp does; what is already escaped stays as it is.
        target = quote(parts.path or "/", safe="/%:@!$&'()*+,;=-._~")
        query = "&".join(part for part in (parts.query, urlencode(params or {})) if part)
        if query:
            target += "?" + query
        body = None
        if payload is not None:
            body = json.dumps(payload).encode()
            headers = {**headers, "Content-Type": "application/json"}
        connection_class = HTTPSConnection if parts.scheme == "https" else HTTPConnection
        deadline = time.monotonic() + self._timeout  # the whole request's time, as the async client's total
        connection = connection_class(parts.hostname or "", parts.port, timeout=self._timeout)
        try:
            connection.request(method, target, body=body, headers=headers)
            self._left_until(deadline, connection)
            response = connection.getresponse()
            self._left_until(deadline, connection)
            raw = response.read()
        finally:
            connection.close()
        try:
            answer: Any = json.loads(raw)
        except ValueError:
            answer = None
        return response.status, response.getheader("X-Request-ID"), answer

    @staticmethod
    def _left_until(deadline: float, connection: HTTPConnection) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request's time ran out")
        if connection.sock is not None:
            connection.sock.settimeout(max(left, _LAST_MOMENT))
