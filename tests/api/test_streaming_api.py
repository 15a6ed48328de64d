"""Quote streaming over a real socket: SSE, the WebSocket, the shared REST set, status and shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import aiohttp
import pytest

from ftdesk.app import ServiceRuntime
from ftdesk.domain.clock import SystemClock
from ftdesk.logs import SecretRedactor
from ftdesk.service.push.quote_frames import MAX_STREAM_SYMBOLS
from ftdesk.service.push.state import StreamingOptions
from ftdesk.service.routes.streaming_ws import WS_QUOTES_ALIAS, WS_QUOTES_PATH
from ftdesk.streaming.models import ConsumerStatus
from tests.conftest import TEST_API_KEY, RunningService
from tests.fakes.quote_feed import FakeQuoteFeed
from tests.fakes.waiting import wait_until

WAIT = 5.0  # upper bound of every wait below; the events come in well under a second


@pytest.fixture
def stream_options() -> StreamingOptions:
    """Heartbeat often, so idle streams show it and a vanished SSE client is noticed at once."""
    return StreamingOptions(heartbeat_seconds=0.05)


SLOW_HEARTBEAT = StreamingOptions(heartbeat_seconds=30.0)


@dataclass
class SseFrame:
    """One SSE block: its fields, and its comment lines."""

    fields: dict[str, str] = field(default_factory=dict)
    comments: list[str] = field(default_factory=list)

    @property
    def event(self) -> str | None:
        return self.fields.get("event")

    @property
    def data(self) -> dict:
        return json.loads(self.fields["data"])


class SseReader:
    """Reads an SSE response block by block, line by line (so retry: and comments are visible)."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def next(self) -> SseFrame | None:
        """Return the next block, or None at the end of the stream."""
        frame = SseFrame()
        async with asyncio.timeout(WAIT):
            while True:
                line = await self.response.content.readline()
                if not line:
                    return None
                text = line.decode("utf-8").rstrip("\n")
                if not text:
                    if frame.fields or frame.comments:
                        return frame
                    continue
                if text.startswith(":"):
                    frame.comments.append(text[1:].strip())
                    continue
                name, _, value = text.partition(":")
                frame.fields[name] = value.removeprefix(" ")

    async def until(self, predicate: Callable[[SseFrame], bool]) -> list[SseFrame]:
        """Return the blocks read up to and including the first one the predicate accepts."""
        seen: list[SseFrame] = []
        while True:
            frame = await self.next()
            assert frame is not None, f"the stream ended first; read {seen}"
            seen.append(frame)
            if predicate(frame):
                return seen


def quote_of(symbol: str) -> Callable[[SseFrame], bool]:
    return lambda f: f.event == "quote" and f.data["symbol"] == symbol


@contextlib.asynccontextmanager
async def open_sse(
    service: RunningService, params: dict[str, str] | None = None, *, auth: bool = True
) -> AsyncIterator[aiohttp.ClientResponse]:
    """Open the SSE endpoint; leaving the block drops the connection, as a browser closing the page does."""
    headers = service.auth if auth else {}
    response = await service.http.get(service.url("/api/v1/streaming/quotes"), params=params, headers=headers)
    try:
        yield response
    finally:
        response.close()  # release() would read the never-ending body to reuse the connection


async def open_ws(
    service: RunningService, path: str = WS_QUOTES_PATH, *, auth: bool = True, **kwargs
) -> aiohttp.ClientWebSocketResponse:
    """Open the quote WebSocket (at its canonical path under /api/v1 unless told otherwise)."""
    headers = {**(service.auth if auth else {}), **kwargs.pop("headers", {})}
    return await service.http.ws_connect(service.url(path), headers=headers, **kwargs)


# The canonical path, and the alias kept from before the WebSocket moved under /api/v1: they must behave alike.
BOTH_WS_PATHS = pytest.mark.parametrize("ws_path", [WS_QUOTES_PATH, WS_QUOTES_ALIAS], ids=["canonical", "alias"])


async def ws_next(ws: aiohttp.ClientWebSocketResponse, wanted: Callable[[dict], bool]) -> dict:
    """Return the first JSON frame the predicate accepts (quotes and status frames may come in between)."""
    async with asyncio.timeout(WAIT):
        while True:
            message = await ws.receive()
            assert message.type is aiohttp.WSMsgType.TEXT, message
            frame = json.loads(message.data)
            if wanted(frame):
                return frame


def of_type(kind: str, **fields: object) -> Callable[[dict], bool]:
    return lambda f: f["type"] == kind and all(f.get(k) == v for k, v in fields.items())


# --- SSE -----------------------------------------------------------------------------------------------


async def test_sse_streams_quotes_of_the_asked_symbols_with_retry_and_ids(start_service) -> None:
    service = await start_service()
    await service.login()
    async with open_sse(service, {"symbols": "aapl,MSFT,ZZZZQ"}) as response:
        assert response.status == 200
        assert response.content_type == "text/event-stream"
        reader = SseReader(response)
        first = await reader.next()
        assert first is not None and first.fields == {"retry": "3000"}
        frames: list[SseFrame] = []
        wanted = {("quote", "AAPL"), ("quote", "MSFT"), ("error", "ZZZZQ")}
        while not wanted <= {(f.event, f.data.get("symbol")) for f in frames if f.event}:
            frame = await reader.next()
            assert frame is not None
            frames.append(frame)

    events = [f for f in frames if f.event]
    ids = [int(f.fields["id"]) for f in events]
    assert ids == list(range(1, len(events) + 1)), "ids count up per connection from 1"
    assert events[0].event == "status" and events[0].data["state"] in {"idle", "connecting", "connected"}
    aapl = next(f.data for f in events if f.event == "quote" and f.data["symbol"] == "AAPL")
    assert aapl["last"] > 0 and aapl["bid"] <= aapl["ask"]
    error = next(f.data for f in events if f.event == "error")
    assert error["code"] == "SYMBOL_UNAVAILABLE" and error["symbol"] == "ZZZZQ" and error["message"]


async def test_sse_subscription_before_login_streams_after_login(start_service) -> None:
    service = await start_service()
    async with open_sse(service, {"symbols": "AAPL"}) as response:
        reader = SseReader(response)
        await reader.next()  # retry
        status = await reader.next()
        assert status is not None and status.event == "status"
        assert status.data["state"] == "waiting_for_session"
        heartbeat = await reader.until(lambda f: "heartbeat" in f.comments)
        assert not any(f.event == "quote" for f in heartbeat), "no quotes before login"

        await service.login()
        frames = await reader.until(quote_of("AAPL"))
    states = [f.data["state"] for f in frames if f.event == "status"]
    assert states and states[-1] == "connected"


async def test_sse_without_symbols_follows_the_shared_set(start_service) -> None:
    service = await start_service()
    await service.login()
    status, _ = await service.call("POST", "/api/v1/streaming/subscribe", json={"symbols": ["AAPL"]})
    assert status == 200
    async with open_sse(service) as response:
        reader = SseReader(response)
        await reader.until(quote_of("AAPL"))
        status, _ = await service.call("POST", "/api/v1/streaming/subscribe", json={"symbols": ["MSFT"]})
        assert status == 200
        await reader.until(quote_of("MSFT"))
        _, subs = await service.call("GET", "/api/v1/streaming/subscriptions")
        msft = next(s for s in subs["data"] if s["symbol"] == "MSFT")
        assert msft["refcount"] == 2 and msft["kinds"] == ["shared", "sse"]


async def test_sse_accepts_the_api_key_in_the_query_and_only_there(start_service) -> None:
    service = await start_service()
    async with open_sse(service, {"symbols": "AAPL", "api_key": TEST_API_KEY}, auth=False) as response:
        assert response.status == 200 and response.content_type == "text/event-stream"
        first = await SseReader(response).next()
        assert first is not None and first.fields == {"retry": "3000"}
    async with open_sse(service, {"symbols": "AAPL", "api_key": "wrong-key"}, auth=False) as response:
        assert response.status == 403 and (await response.json())["error"]["code"] == "API_KEY_INVALID"
    async with open_sse(service, {"symbols": "AAPL"}, auth=False) as response:
        assert response.status == 403
    # JSON endpoints keep requiring the header.
    url = service.url("/api/v1/streaming/subscriptions")
    async with service.http.get(url, params={"api_key": TEST_API_KEY}) as response:
        assert response.status == 403


async def test_sse_refuses_bad_symbol_lists_before_streaming(start_service) -> None:
    service = await start_service()
    too_many = ",".join(f"S{i}" for i in range(201))
    for params, field_name in (({"symbols": too_many}, "symbols"), ({"symbols": "AA PL"}, "symbols.0")):
        async with open_sse(service, params) as response:
            assert response.status == 422
            body = await response.json()
            assert body["error"]["code"] == "VALIDATION_ERROR"
            assert [d["field"] for d in body["error"]["details"]] == [field_name]
    async with open_sse(service, {"symbol": "AAPL"}) as response:
        assert response.status == 422, "a misspelt parameter is refused, not ignored"


# --- WebSocket -------------------------------------------------------------------------------------------


@BOTH_WS_PATHS
async def test_ws_subscribe_is_acknowledged_then_quotes_flow(start_service, ws_path: str) -> None:
    service = await start_service()
    await service.login()
    ws = await open_ws(service, ws_path)
    try:
        await ws.send_json({"action": "subscribe", "symbols": ["aapl", "ZZZZQ"]})
        ack = await ws_next(ws, of_type("ack"))
        assert ack == {
            "type": "ack",
            "action": "subscribe",
            "symbols": ["AAPL", "ZZZZQ"],
            "books": [],
            "subscribed": ["AAPL", "ZZZZQ"],
            "depth": [],
        }
        seen: dict[tuple[str, str], dict] = {}
        while len(seen) < 2:  # the quote and the refusal, in either order
            frame = await ws_next(ws, lambda f: f["type"] in {"quote", "error"})
            seen[frame["type"], frame["symbol"]] = frame
        quote, error = seen["quote", "AAPL"], seen["error", "ZZZZQ"]
        assert quote["last"] > 0 and {"bid", "ask", "time"} <= set(quote)
        assert error["code"] == "SYMBOL_UNAVAILABLE" and error["message"]

        await ws.send_json({"action": "unsubscribe", "symbols": ["ZZZZQ", "MSFT"]})
        ack = await ws_next(ws, of_type("ack"))
        assert ack["action"] == "unsubscribe" and ack["symbols"] == ["ZZZZQ"] and ack["subscribed"] == ["AAPL"]
    finally:
        await ws.close()


async def test_ws_bad_frames_get_error_frames_and_the_connection_stays_usable(start_service) -> None:
    service = await start_service()
    ws = await open_ws(service)
    try:
        await ws.send_str("{not json")
        error = await ws_next(ws, of_type("error"))
        assert error["code"] == "MALFORMED_REQUEST"

        await ws.send_json({"action": "dance", "symbols": ["AAPL"]})
        error = await ws_next(ws, of_type("error"))
        assert error["code"] == "VALIDATION_ERROR" and error["details"][0]["field"] == "action"

        await ws.send_json({"action": "subscribe", "symbols": ["AA PL"]})
        error = await ws_next(ws, of_type("error"))
        assert error["code"] == "VALIDATION_ERROR" and error["details"][0]["field"] == "symbols.0"

        await ws.send_json({"action": "subscribe", "symbols": []})
        assert (await ws_next(ws, of_type("error")))["code"] == "VALIDATION_ERROR"

        await ws.send_json({"action": "ping"})
        assert await ws_next(ws, lambda f: f["type"] != "status") == {"type": "pong"}
        assert not ws.closed
        assert service.context.quotes.subscriptions() == [], "nothing bad was subscribed"
    finally:
        await ws.close()


async def test_ws_subscription_before_login_streams_after_login(start_service) -> None:
    service = await start_service()
    ws = await open_ws(service)
    try:
        status = await ws_next(ws, of_type("status"))
        assert status["state"] == "waiting_for_session"
        await ws.send_json({"action": "subscribe", "symbols": ["MSFT"]})
        await ws_next(ws, of_type("ack"))
        await service.login()
        quote = await ws_next(ws, of_type("quote"))
        assert quote["symbol"] == "MSFT"
    finally:
        await ws.close()


@BOTH_WS_PATHS
async def test_ws_handshake_from_a_foreign_origin_is_refused(start_service, ws_path: str) -> None:
    service = await start_service()
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await open_ws(service, ws_path, headers={"Origin": "http://evil.example"})
    assert refused.value.status == 403
    ws = await open_ws(service, ws_path, headers={"Origin": service.base_url})
    await ws.close()
    status, body = await service.call("GET", ws_path)
    assert status == 400 and body["error"]["code"] == "MALFORMED_REQUEST", "a plain GET is not a WebSocket"


@BOTH_WS_PATHS
async def test_ws_handshake_needs_the_api_key_in_the_header_or_the_query(start_service, ws_path: str) -> None:
    service = await start_service()
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await open_ws(service, ws_path, auth=False)
    assert refused.value.status == 403
    ws = await open_ws(service, f"{ws_path}?api_key={TEST_API_KEY}", auth=False)
    try:
        await ws.send_json({"action": "ping"})
        assert await ws_next(ws, lambda f: f["type"] != "status") == {"type": "pong"}
    finally:
        await ws.close()


# --- REST control and status -------------------------------------------------------------------------------


async def test_subscribe_unsubscribe_subscriptions_and_status_round_trip(start_service) -> None:
    service = await start_service()
    status, body = await service.call("POST", "/api/v1/streaming/subscribe", json={"symbols": ["AAPL", "msft"]})
    assert status == 200
    assert body["data"] == {"added": ["AAPL", "MSFT"], "already_held": [], "symbols": ["AAPL", "MSFT"]}
    _, body = await service.call("POST", "/api/v1/streaming/subscribe", json={"symbols": ["AAPL", "NVDA"]})
    assert body["data"] == {"added": ["NVDA"], "already_held": ["AAPL"], "symbols": ["AAPL", "MSFT", "NVDA"]}

    ws = await open_ws(service)
    try:
        await ws.send_json({"action": "subscribe", "symbols": ["AAPL"]})
        await ws_next(ws, of_type("ack"))
        _, body = await service.call("GET", "/api/v1/streaming/subscriptions")
        by_symbol = {s["symbol"]: s for s in body["data"]}
        assert sorted(by_symbol) == ["AAPL", "MSFT", "NVDA"]
        assert by_symbol["AAPL"]["refcount"] == 2 and by_symbol["AAPL"]["kinds"] == ["shared", "ws"]
        assert by_symbol["MSFT"]["refcount"] == 1 and by_symbol["MSFT"]["kinds"] == ["shared"]
        assert not by_symbol["AAPL"]["upstream"], "no session yet: queued, not subscribed upstream"

        _, body = await service.call("GET", "/api/v1/streaming/status")
        data = body["data"]
        assert data["mdds"]["state"] == "waiting_for_session"
        assert data["consumers_by_kind"] == {"sse": 0, "ws": 1, "shared": 1, "paper": 0}
        assert data["beps"]["state"] == "waiting_for_session" and data["beps"]["unavailable_reason"] is None
    finally:
        await ws.close()

    _, body = await service.call("POST", "/api/v1/streaming/unsubscribe", json={"symbols": ["MSFT", "TSLA"]})
    assert body["data"] == {"removed": ["MSFT"], "not_held": ["TSLA"], "symbols": ["AAPL", "NVDA"]}
    _, body = await service.call("GET", "/api/v1/streaming/subscriptions")
    msft = next(s for s in body["data"] if s["symbol"] == "MSFT")
    assert msft["refcount"] == 0 and msft["unsubscribe_in_seconds"] > 0, "the upstream unsubscribe is delayed"

    # Text where an array belongs is JSON of the wrong type (400); an empty or too long list a bad value (422).
    for bad, expected in (
        ({"symbols": []}, 422),
        ({"symbols": "AAPL"}, 400),
        ({"symbols": [f"S{i}" for i in range(201)]}, 422),
    ):
        status, body = await service.call("POST", "/api/v1/streaming/subscribe", json=bad)
        assert status == expected and body["error"]["code"] == "VALIDATION_ERROR"


async def test_after_clients_disconnect_every_refcount_returns_to_zero(start_service) -> None:
    service = await start_service()
    await service.login()
    hub = service.context.quotes
    ws = await open_ws(service)
    await ws.send_json({"action": "subscribe", "symbols": ["AAPL", "NVDA"]})
    await ws_next(ws, of_type("quote"))
    response = await service.http.get(
        service.url("/api/v1/streaming/quotes"), params={"symbols": "AAPL,MSFT"}, headers=service.auth
    )
    await SseReader(response).until(quote_of("MSFT"))
    assert {s.symbol: s.refcount for s in hub.subscriptions()} == {"AAPL": 2, "MSFT": 1, "NVDA": 1}

    await ws.close()
    response.close()
    await wait_until(lambda: all(s.refcount == 0 for s in hub.subscriptions()))
    await wait_until(lambda: hub.status().consumers_by_kind == {"sse": 0, "ws": 0, "shared": 0, "paper": 0})


# --- shutdown ------------------------------------------------------------------------------------------------


async def test_shutdown_with_an_open_sse_stream_and_websocket_is_prompt(start_service) -> None:
    service = await start_service()
    await service.login()
    response = await service.http.get(
        service.url("/api/v1/streaming/quotes"), params={"symbols": "AAPL"}, headers=service.auth
    )
    reader = SseReader(response)
    await reader.until(quote_of("AAPL"))
    ws = await open_ws(service)
    await ws_next(ws, of_type("status"))

    loop = asyncio.get_running_loop()
    started = loop.time()
    await service.runtime.stop()
    assert loop.time() - started < 2.0

    closing = await asyncio.wait_for(ws.receive(), WAIT)
    assert closing.type is aiohttp.WSMsgType.CLOSE and closing.data == aiohttp.WSCloseCode.GOING_AWAY
    while (frame := await reader.next()) is not None:
        assert frame.event != "error", frame
    response.close()


async def test_the_streams_are_documented_with_their_frames(start_service) -> None:
    service = await start_service()
    async with service.http.get(service.url("/docs/openapi.json")) as response:
        spec = await response.json()
    sse = spec["paths"]["/api/v1/streaming/quotes"]["get"]
    assert "text/event-stream" in sse["responses"]["200"]["content"]
    assert "event: quote" in sse["responses"]["200"]["description"]
    assert {p["name"] for p in sse["parameters"]} == {"symbols", "depth", "api_key"}
    assert "event: book" in sse["responses"]["200"]["description"]
    # The WebSocket is a channel of the AsyncAPI document (as a GET operation, generators make a broken call).
    assert "/api/v1/ws/quotes" not in spec["paths"] and "/ws/quotes" not in spec["paths"]
    async with service.http.get(service.url("/docs/asyncapi.json")) as response:
        ws = (await response.json())["channels"]["quotesWebSocket"]
    assert ws["address"] == "/api/v1/ws/quotes"
    assert '"type": "pong"' in ws["description"]
    assert '"depth": true' in ws["description"] and '"type": "book"' in ws["description"]
    assert "`/ws/quotes`" in ws["description"] and "/ws/quotes" in ws["summary"], "the channel names its alias"
    for path in ("/streaming/subscribe", "/streaming/unsubscribe", "/streaming/subscriptions", "/streaming/status"):
        assert f"/api/v1{path}" in spec["paths"]


# --- fast fan-out: direct delivery, back-pressure, clients that go away -------------------------------------


@pytest.fixture
async def fake_feed_service(
    make_settings, memory_keyring, stream_options: StreamingOptions
) -> AsyncIterator[tuple[RunningService, FakeQuoteFeed]]:
    """The service, logged in, on a scriptable upstream quote feed (the paper quote changes once a second)."""
    settings = make_settings(FTSERVICE_API_KEY=TEST_API_KEY, FTSERVICE_PAPER_SEED="20261121")
    runtime = ServiceRuntime(
        settings, keyring_backend=memory_keyring, redactor=SecretRedactor(), streaming=stream_options
    )
    feed = FakeQuoteFeed(SystemClock())
    runtime.broker.quote_feed = feed  # before start(): the quote hub is built there
    await runtime.start()
    http = aiohttp.ClientSession()
    service = RunningService(base_url=runtime.url, api_key=TEST_API_KEY, http=http, runtime=runtime)
    try:
        await service.login()
        yield service, feed
    finally:
        await http.close()
        await runtime.stop()


def small_receive_buffer(addr_info) -> socket.socket:
    """Make a client socket that holds little unread data, so a client that stops reading is felt soon."""
    family, kind, proto, _, _ = addr_info
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    return sock


class QuoteClient:
    """One SSE or WebSocket quote client; ``read_until`` reads frames in order and remembers every quote."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.quotes: list[tuple[str, float]] = []
        self.last: dict[str, float] = {}  # the latest price seen per symbol
        self.ids: list[int] = []  # SSE event ids, in order
        self.sse: SseReader | None = None
        self.ws: aiohttp.ClientWebSocketResponse | None = None

    @classmethod
    async def open(cls, http: aiohttp.ClientSession, service: RunningService, kind: str, symbols: list[str]):
        client = cls(kind)
        if kind == "sse":
            response = await http.get(
                service.url("/api/v1/streaming/quotes"), params={"symbols": ",".join(symbols)}, headers=service.auth
            )
            assert response.status == 200
            client.sse = SseReader(response)
        else:
            client.ws = await http.ws_connect(service.url(WS_QUOTES_PATH), headers=service.auth)
            await client.ws.send_json({"action": "subscribe", "symbols": symbols})
            ack = await ws_next(client.ws, lambda f: f["type"] != "status")
            assert ack["type"] == "ack", "the ack comes before any quote of the new symbols"
        await client.read_until(lambda: set(client.last) == set(symbols))
        return client

    async def read_until(self, done: Callable[[], bool], within: float = WAIT) -> None:
        """Read frames until ``done()``, checking SSE ids count up by one."""
        async with asyncio.timeout(within):
            while not done():
                for frame in await self._next():
                    if frame.get("type", "quote") == "quote" and "last" in frame:
                        self.quotes.append((frame["symbol"], frame["last"]))
                        self.last[frame["symbol"]] = frame["last"]

    async def _next(self) -> list[dict]:
        if self.sse is not None:
            block = await self.sse.next()
            assert block is not None, "the stream ended"
            if "id" in block.fields:
                self.ids.append(int(block.fields["id"]))
                assert self.ids[-1] == len(self.ids), "SSE ids count up by one from 1, none lost"
            return [block.data] if block.event in {"quote", "status"} else []
        assert self.ws is not None
        message = await self.ws.receive()
        assert message.type is aiohttp.WSMsgType.TEXT, message
        return [json.loads(message.data)]

    def assert_in_order(self) -> None:
        """Each symbol's prices only rise: the feed raises them, so a fall would be a frame out of order."""
        for symbol in {s for s, _ in self.quotes}:
            seen = [last for s, last in self.quotes if s == symbol]
            assert seen == sorted(set(seen)), f"{symbol} out of order or repeated: {seen}"

    async def close(self) -> None:
        if self.sse is not None:
            self.sse.response.close()
        if self.ws is not None:
            await self.ws.close()


def consumer_status(service: RunningService, kind: str) -> list[ConsumerStatus]:
    """Return the hub's figures for its open consumers of one kind, oldest first."""
    return [c for c in service.context.quotes.status().consumers if c.kind == kind]


# The clients are read one after the other: with 50 ms pings the WebSocket, unread while the SSE client is,
# misses its 25 ms pong deadline on a loaded machine and the server closes it.
@pytest.mark.parametrize("stream_options", [SLOW_HEARTBEAT], ids=["slow-heartbeat"])
async def test_fast_updates_reach_sse_and_ws_clients_in_order_and_every_one_is_counted(fake_feed_service) -> None:
    service, feed = fake_feed_service
    symbols = ["AAPL", "MSFT"]
    clients = [await QuoteClient.open(service.http, service, kind, symbols) for kind in ("sse", "ws")]

    for step in range(1, 301):
        feed.set_price(symbols[step % 2], 100.0 + step)
        if step % 7 == 0:
            await asyncio.sleep(0)  # bursts of a few updates, then the loop runs
    final = {"MSFT": 399.0, "AAPL": 400.0}
    for client in clients:
        await client.read_until(lambda client=client: client.last == final)
        client.assert_in_order()

    for client in clients:
        [status] = consumer_status(service, client.kind)
        received = len(client.quotes)
        assert (status.delivered, status.pending) == (received, 0), "every update read was counted as delivered"
        assert status.delivered + status.conflated == 2 + 300, "and every other one as conflated"
        await client.close()


# A slow heartbeat, else the server closes a WebSocket that reads no pings.
@pytest.mark.parametrize("stream_options", [SLOW_HEARTBEAT], ids=["slow-heartbeat"])
@pytest.mark.parametrize("kind", ["sse", "ws"])
async def test_a_client_that_stops_reading_costs_one_update_per_symbol_and_catches_up_in_order(
    fake_feed_service, kind: str
) -> None:
    service, feed = fake_feed_service
    symbols = [f"S{i:03d}" for i in range(MAX_STREAM_SYMBOLS)]  # many: the socket fills in a few rounds
    slow_http = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(socket_factory=small_receive_buffer), read_bufsize=4096
    )
    try:
        stalled = await QuoteClient.open(slow_http, service, kind, symbols)  # then it reads nothing
        reader = await QuoteClient.open(service.http, service, kind, symbols)
        reading = asyncio.create_task(reader.read_until(lambda: False, within=60))
        price = 100.0

        async def next_round() -> None:
            nonlocal price
            price += 1
            for symbol in symbols:
                feed.set_price(symbol, price)
            await asyncio.sleep(0)

        def held_back() -> bool:  # an update of every symbol waited 0.2 s: only a full socket explains that
            slow = consumer_status(service, kind)[0]
            return slow.pending == len(symbols) and slow.lag_seconds >= 0.2

        # Until the stalled client's socket and buffers are full and every symbol has an update waiting.
        async with asyncio.timeout(WAIT):
            while not held_back():
                await next_round()
        for _ in range(30):  # some more, all of them conflated for the stalled client
            await next_round()

        slow = consumer_status(service, kind)[0]
        assert slow.pending == len(symbols), "one waiting update per symbol, however many came"
        assert slow.conflated >= 30 * len(symbols)
        final = dict.fromkeys(symbols, price)
        async with asyncio.timeout(WAIT):
            while reader.last != final:  # noqa: ASYNC110 - the reader task fills it
                await asyncio.sleep(0.01)

        await stalled.read_until(lambda: stalled.last == final)  # it reads again
        stalled.assert_in_order()
        reader.assert_in_order()
        slow = consumer_status(service, kind)[0]
        assert (slow.pending, slow.delivered) == (0, len(stalled.quotes))
        reading.cancel()
        await stalled.close()
        await reader.close()
    finally:
        await slow_http.close()


@pytest.mark.parametrize("kind", ["sse", "ws"])
async def test_a_client_gone_mid_stream_ends_only_its_own_consumer(fake_feed_service, kind: str) -> None:
    service, feed = fake_feed_service
    hub = service.context.quotes
    gone = await QuoteClient.open(service.http, service, kind, ["AAPL"])
    staying = await QuoteClient.open(service.http, service, kind, ["AAPL"])

    await gone.close()
    async with asyncio.timeout(WAIT):
        step = 0
        while len(consumer_status(service, kind)) > 1:  # the next write to it fails and ends it
            step += 1
            feed.set_price("AAPL", 100.0 + step)
            await asyncio.sleep(0.01)
    await staying.read_until(lambda: staying.last == {"AAPL": 100.0 + step})
    staying.assert_in_order()
    assert [s.refcount for s in hub.subscriptions()] == [1]
    await staying.close()
