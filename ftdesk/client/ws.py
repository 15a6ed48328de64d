"""The quote WebSocket (``/api/v1/ws/quotes``) with the ``websockets`` library, for the async and sync clients.

Both readers subscribe on connect and, after a drop (server restart, network cut, going-away close), reconnect
after a jittered backoff and subscribe again to every symbol they hold. A refused handshake (bad API key) is
raised, not retried. Control frames (ack, pong, status) are consumed here; the caller sees quotes (and books).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncGenerator, Iterator
from typing import Any

from websockets.asyncio.client import connect as async_connect
from websockets.exceptions import InvalidStatus, WebSocketException
from websockets.sync.client import connect as sync_connect

from ftdesk.client.backoff import Backoff
from ftdesk.client.errors import FtdeskApiError, api_error
from ftdesk.domain.market import OrderBook, Quote

log = logging.getLogger(__name__)

WS_PATH = "/api/v1/ws/quotes"
_OPEN_TIMEOUT = 10.0


def ws_url(base_url: str) -> str:
    """Return the quote WebSocket's URL for a service base URL (http -> ws, https -> wss)."""
    scheme, _, rest = base_url.rstrip("/").partition("://")
    return f"{'wss' if scheme == 'https' else 'ws'}://{rest}{WS_PATH}"


def subscribe_frame(symbols: list[str], depth: bool) -> str:
    """Return the subscribe control frame."""
    frame: dict[str, Any] = {"action": "subscribe", "symbols": symbols}
    if depth:
        frame["depth"] = True
    return json.dumps(frame)


def _refused(exc: InvalidStatus) -> FtdeskApiError:
    response = exc.response
    try:
        body: Any = json.loads(response.body or b"")
    except ValueError:
        body = None
    return api_error(response.status_code, body, response.headers.get("X-Request-ID"))


def parse_frame(text: str | bytes) -> Quote | OrderBook | None:
    """Return the quote or book a server frame carries; raise for an error frame about the subscription."""
    frame = json.loads(text)
    kind = frame.pop("type", None)
    if kind == "quote":
        return Quote.model_validate(frame, extra="ignore")
    if kind == "book":
        return OrderBook.model_validate(frame, extra="ignore")
    if kind == "error":
        if frame.get("symbol"):
            log.warning("Quote WebSocket: %s %s", frame.get("symbol"), frame.get("message"))
            return None
        # The refusal of our own frame (too many symbols, a malformed one): the same exception as over HTTP.
        raise api_error(0, {"error": frame}, None)
    return None  # ack, pong, status


async def async_ws_quotes(
    base_url: str, api_key: str, symbols: list[str], backoff: Backoff, *, depth: bool = False
) -> AsyncGenerator[Quote | OrderBook, None]:
    """Yield quotes from the WebSocket forever, reconnecting and re-subscribing after a drop."""
    headers = {"Authorization": f"Bearer {api_key}"}
    while True:
        try:
            async with async_connect(
                ws_url(base_url), additional_headers=headers, proxy=None, open_timeout=_OPEN_TIMEOUT
            ) as socket:
                await socket.send(subscribe_frame(symbols, depth))
                async for text in socket:
                    item = parse_frame(text)
                    if item is not None:
                        backoff.reset()
                        yield item
        except InvalidStatus as exc:
            if exc.response.status_code < 500:
                raise _refused(exc) from None
            log.info("Quote WebSocket refused (%s)", exc.response.status_code)
        except (OSError, TimeoutError, WebSocketException) as exc:
            log.info("Quote WebSocket dropped (%s)", type(exc).__name__)
        await asyncio.sleep(backoff.next_delay())


def sync_ws_quotes(
    base_url: str, api_key: str, symbols: list[str], backoff: Backoff, *, depth: bool = False
) -> Iterator[Quote | OrderBook]:
    """Yield quotes from the WebSocket forever (blocking), reconnecting and re-subscribing after a drop."""
    headers = {"Authorization": f"Bearer {api_key}"}
    while True:
        try:
            with sync_connect(
                ws_url(base_url), additional_headers=headers, proxy=None, open_timeout=_OPEN_TIMEOUT
            ) as socket:
                socket.send(subscribe_frame(symbols, depth))
                for text in socket:
                    item = parse_frame(text)
                    if item is not None:
                        backoff.reset()
                        yield item
        except InvalidStatus as exc:
            if exc.response.status_code < 500:
                raise _refused(exc) from None
            log.info("Quote WebSocket refused (%s)", exc.response.status_code)
        except (OSError, TimeoutError, WebSocketException) as exc:
            log.info("Quote WebSocket dropped (%s)", type(exc).__name__)
        time.sleep(backoff.next_delay())  # the backoff between reconnects, in the caller's thread
