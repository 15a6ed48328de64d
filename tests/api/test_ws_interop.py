"""The quote WebSocket spoken to by a second, independent implementation: the `websockets` client.

The service's WebSocket is aiohttp's server; our other WebSocket tests use aiohttp's client, so a mistake
the two share (framing, the close handshake, compression, pings) would pass unnoticed. A trader's script
may use any client; `websockets` is the most widely used Python one. These tests drive the real service
through it: the handshake with the API key (and without it: 403 in the envelope), the
subscribe/ack/quote exchange with permessage-deflate on, protocol pings answered, and the GOING_AWAY
close at shutdown (on the canonical path and on the alias kept from before it moved under /api/v1).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from ftdesk.service.routes.streaming_ws import WS_QUOTES_ALIAS, WS_QUOTES_PATH
from tests.conftest import RunningService

WAIT = 5.0  # upper bound of every wait below; the frames come in well under a second


def ws_url(service: RunningService, path: str = WS_QUOTES_PATH) -> str:
    return service.base_url.replace("http://", "ws://", 1) + path


async def next_frame(ws: ClientConnection, wanted: Callable[[dict], bool]) -> dict:
    """Return the first JSON frame the predicate accepts (status and quote frames may come in between)."""
    async with asyncio.timeout(WAIT):
        while True:
            raw = await ws.recv()
            assert isinstance(raw, str), "every frame of the quote WebSocket is text"
            frame = json.loads(raw)
            if wanted(frame):
                return frame


async def test_a_websockets_client_subscribes_and_gets_quotes_over_a_compressed_connection(start_service) -> None:
    service = await start_service()
    await service.login()
    async with connect(ws_url(service), additional_headers=service.auth, compression="deflate") as ws:
        extensions = ws.response.headers.get("Sec-WebSocket-Extensions", "") if ws.response else ""
        assert "permessage-deflate" in extensions, "the server accepts the compression most clients offer"
        await ws.send(json.dumps({"action": "subscribe", "symbols": ["msft"]}))
        ack = await next_frame(ws, lambda f: f["type"] == "ack")
        assert ack["subscribed"] == ["MSFT"]
        quote = await next_frame(ws, lambda f: f["type"] == "quote")
        assert quote["symbol"] == "MSFT" and quote["last"] > 0


async def test_an_uncompressed_connection_reads_every_ready_made_frame_of_a_batch(start_service) -> None:
    # Without compression the server writes a batch's frames, made once for every socket, in one go: another
    # implementation's frame parser must read each as one whole JSON text frame.
    service = await start_service()
    await service.login()
    async with connect(ws_url(service), additional_headers=service.auth, compression=None) as ws:
        extensions = ws.response.headers.get("Sec-WebSocket-Extensions", "") if ws.response else ""
        assert "permessage-deflate" not in extensions
        symbols = ["MSFT", "AAPL", "SPY", "QQQ"]
        await ws.send(json.dumps({"action": "subscribe", "symbols": symbols}))
        seen: set[str] = set()
        while seen != set(symbols):
            quote = await next_frame(ws, lambda f: f["type"] == "quote")
            assert quote["last"] > 0
            seen.add(quote["symbol"])


async def test_protocol_pings_from_the_client_are_answered(start_service) -> None:
    service = await start_service()
    async with connect(ws_url(service), additional_headers=service.auth, ping_interval=None) as ws:
        for _ in range(3):
            pong = await ws.ping()
            latency = await asyncio.wait_for(pong, WAIT)
            assert latency >= 0
        await ws.send(json.dumps({"action": "ping"}))
        assert await next_frame(ws, lambda f: f["type"] != "status") == {"type": "pong"}


async def test_a_handshake_without_the_api_key_is_refused_in_the_envelope(start_service) -> None:
    service = await start_service()
    with pytest.raises(InvalidStatus) as refused:
        async with connect(ws_url(service)):
            pass
    assert refused.value.response.status_code == 403
    body = json.loads(refused.value.response.body or b"{}")
    assert body["error"]["code"] == "API_KEY_INVALID"


@pytest.mark.parametrize("path", [WS_QUOTES_PATH, WS_QUOTES_ALIAS], ids=["canonical", "alias"])
async def test_shutdown_closes_a_websockets_client_with_going_away(start_service, path: str) -> None:
    service = await start_service()
    async with connect(ws_url(service, path), additional_headers=service.auth) as ws:
        await next_frame(ws, lambda f: f["type"] == "status")
        await service.runtime.stop()
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), WAIT)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
