"""The whole service with FTSERVICE_BROKER=fidelity against the fake upstreams (HTTP hosts, MDDS, AppSync).

Everything goes through the public API on a real socket, as a script would use it: login (with and
without a second factor), expiry then auto re-auth, portfolio reads, preview-then-place with live
trading on, cancel, SSE quotes from MDDS across a dropped connection, and BEPS events on the event stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import pyotp
import pytest

from ftdesk.service.push.state import StreamingOptions
from tests.api.test_streaming_api import SseFrame, SseReader
from tests.conftest import RunningService
from tests.fakes import fidelity_payloads as payloads
from tests.fakes.appsync_server import BEPS_HOST, STREAM_URL_TEMPLATE, FakeAppSync
from tests.fakes.fidelity_server import FakeFidelity
from tests.fakes.mdds_server import FakeMdds
from tests.fakes.waiting import wait_until

API = "/api/v1"
BEPS_TOKEN = "beps-jwt-for-tests"
TOTP_SECRET = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"


class Upstream:
    """The three fake upstream servers one Fidelity service talks to."""

    def __init__(self, *, totp_secret: str | None = None) -> None:
        self.mdds = FakeMdds()
        self.appsync = FakeAppSync(token=BEPS_TOKEN)
        self.fidelity = FakeFidelity(mdds=self.mdds, appsync=self.appsync, totp_secret=totp_secret)

    async def start(self) -> None:
        await self.mdds.start()
        await self.appsync.start()
        await self.fidelity.start()

    async def close(self) -> None:
        await self.fidelity.close()
        await self.appsync.close()
        await self.mdds.close()

    def env(self, **extra: str) -> dict[str, str]:
        """Return the FTSERVICE_* settings of a service fronting these fakes."""
        return {
            "broker": "fidelity",
            "fidelity_upstream": self.fidelity.base_url,
            "beps_token": BEPS_TOKEN,
            "beps_host": BEPS_HOST,
            "beps_stream_url": STREAM_URL_TEMPLATE,
            "beps_mid": "ee629881ce0a8830",
            "stream_backoff": "0.05",
            "fidelity_read_share": "0",  # the fake changes behind ftdesk's back: no answer reuse
            **extra,
        }


StartFidelity = Callable[..., Coroutine[Any, Any, tuple[RunningService, Upstream]]]


@pytest.fixture
def stream_options() -> StreamingOptions:
    """Heartbeat often so a dropped SSE client is noticed at once."""
    return StreamingOptions(heartbeat_seconds=0.05)


@pytest.fixture
async def start_fidelity(start_service: Callable[..., Any]) -> AsyncIterator[StartFidelity]:
    """Start the fakes and a service fronting them on the fake's clock; close the fakes after the service."""
    upstreams: list[Upstream] = []

    async def start(*, totp_secret: str | None = None, **env: str) -> tuple[RunningService, Upstream]:
        upstream = Upstream(totp_secret=totp_secret)
        await upstream.start()
        upstreams.append(upstream)
        service = await start_service(clock=upstream.fidelity.clock, **upstream.env(**env))
        return service, upstream

    yield start
    for upstream in upstreams:
        await upstream.close()


async def login(service: RunningService, **extra: object) -> tuple[int, dict[str, Any]]:
    """Log in to the fake Fidelity through the API."""
    body = {"username": "trader", "password": "correct-horse", **extra}
    return await service.call("POST", f"{API}/auth/login", json=body)


@contextlib.asynccontextmanager
async def open_sse(service: RunningService, path: str) -> AsyncIterator[SseReader]:
    """Open an SSE stream; leaving the block drops it."""
    response = await service.http.get(service.url(path), headers=service.auth)
    assert response.status == 200, await response.text()
    try:
        yield SseReader(response)
    finally:
        response.close()


def quote_of(symbol: str, **expected: float) -> Callable[[SseFrame], bool]:
    """Accept a quote frame of this symbol whose fields have these values."""

    def accepts(frame: SseFrame) -> bool:
        if frame.event != "quote":
            return False
        data = frame.data
        return bool(data["symbol"] == symbol and all(data.get(k) == v for k, v in expected.items()))

    return accepts


async def test_login_then_portfolio_reads(start_fidelity: StartFidelity) -> None:
    service, upstream = await start_fidelity()

    status, body = await login(service)
    assert status == 200, body
    assert body["data"]["state"] == "logged_in" and body["data"]["broker"] == "fidelity"

    status, accounts = await service.call("GET", f"{API}/accounts")
    assert status == 200
    assert payloads.MARGIN in [account["acct_num"] for account in accounts["data"]]
    status, positions = await service.call("GET", f"{API}/accounts/{payloads.MARGIN}/positions")
    assert status == 200, positions
    assert {"SPAXX", "AAPL"} <= {position["symbol"] for position in positions["data"]}
    assert upstream.fidelity.logins == 1


async def test_a_second_factor_is_asked_for_then_accepted(start_fidelity: StartFidelity) -> None:
    service, upstream = await start_fidelity(totp_secret=TOTP_SECRET)

    status, body = await login(service)
    assert status == 401 and body["error"]["code"] == "TOTP_REQUIRED", body

    status, body = await login(service, totp_code=pyotp.TOTP(TOTP_SECRET).at(upstream.fidelity.now()))
    assert status == 200 and body["data"]["state"] == "logged_in", body


async def test_an_expired_session_is_renewed_with_the_stored_credentials(start_fidelity: StartFidelity) -> None:
    service, upstream = await start_fidelity()
    status, body = await login(service, remember=True)
    assert status == 200, body

    upstream.fidelity.expire()
    status, positions = await service.call("GET", f"{API}/accounts/{payloads.MARGIN}/positions")

    assert status == 200, positions
    assert upstream.fidelity.logins == 2
    status, session = await service.call("GET", f"{API}/auth/status")
    assert session["data"]["state"] == "logged_in" and session["data"]["reauth_count"] == 1


async def test_preview_place_and_cancel_an_equity_order_with_live_trading_on(start_fidelity: StartFidelity) -> None:
    service, upstream = await start_fidelity(live_trading="true")
    await login(service)
    order = {
        "acctNum": payloads.MARGIN,
        "symbol": "AAPL",
        "orderActionCode": "B",
        "qty": 2,
        "priceTypeCode": "L",
        "limitPrice": 150.0,
        "tifCode": "G",
    }

    status, preview = await service.call("POST", f"{API}/orders/equity/preview", json=order)
    assert status == 200, preview
    conf_num = preview["data"]["conf_num"]
    status, placed = await service.call("POST", f"{API}/orders/equity/place", json={**order, "confNum": conf_num})
    assert status == 200, placed
    assert upstream.fidelity.hits_for("/orderentry/equity/place/v1") == 1  # exactly one upstream place

    status, canceled = await service.call(
        "POST",
        f"{API}/orders/{placed['data']['conf_num']}/cancel",
        json={"acct_num": payloads.MARGIN, "action_code": "B"},
    )
    assert status == 200 and canceled["data"]["is_accepted"] is True, canceled
    status, journal = await service.call("GET", f"{API}/orders/journal")
    assert [entry["action"] for entry in journal["data"]][:3] == ["cancel", "place", "preview"]


async def test_sse_quotes_come_from_mdds_and_survive_a_dropped_connection(start_fidelity: StartFidelity) -> None:
    service, upstream = await start_fidelity()
    await login(service)

    async with open_sse(service, f"{API}/streaming/quotes?symbols=RKLB") as stream:
        await stream.until(quote_of("RKLB", last=57.38, bid=56.6, ask=56.73))
        first = upstream.mdds.current
        assert first is not None and first.subscribed == {"RKLB"}

        await upstream.mdds.kill()
        await stream.until(lambda frame: frame.event == "status" and frame.data.get("state") == "reconnecting")
        await stream.until(lambda frame: frame.event == "status" and frame.data.get("state") == "connected")

        second = upstream.mdds.current
        assert second is not None and second.session_id != first.session_id
        assert second.subscribed == {"RKLB"}  # re-subscribed on the new connection
        assert await upstream.mdds.publish("RKLB", {"20": "57.10"}) == 1
        await stream.until(quote_of("RKLB", bid=57.10))


async def test_beps_events_reach_the_event_stream(start_fidelity: StartFidelity) -> None:
    service, upstream = await start_fidelity()
    await login(service)

    async with open_sse(service, f"{API}/streaming/events") as stream:
        await stream.until(lambda frame: frame.event == "status" and frame.data.get("state") == "connected")
        assert await upstream.appsync.push(
            {
                "eventId": "e-1",
                "subscribeId": "ee629881ce0a8830",
                "source": "BEPS",
                "eventCreatedTime": "2026-11-21T14:30:00Z",
                "eventType": "MFCEX",
                "hasError": False,
                "message": "{}",
                "desc": "Bought 2 AAPL @ 150.00",
                "consumerAppId": "ATN",
            }
        )
        frames = await stream.until(lambda frame: frame.event == "beps")
        # A code ftdesk does not know is passed on as OTHER, its code kept.
        assert await upstream.appsync.push({"eventId": "e-2", "eventType": "ZZ9XY", "message": "{}"}) == 1
        later = await stream.until(lambda frame: frame.event == "beps" and frame.data["desc"]["event_id"] == "e-2")
    event = frames[-1].data
    # The spec's name, the upstream's code beside it.
    assert (event["event_type"], event["category"], event["desc"]["upstream_code"]) == ("ORDER_FILL", "order", "MFCEX")
    assert "Bought 2 AAPL" in str(event["desc"])
    assert int(later[-1].fields["id"]) == int(frames[-1].fields["id"]) + 1  # numbered one after the other
    unknown = later[-1].data
    assert (unknown["event_type"], unknown["category"], unknown["desc"]["upstream_code"]) == ("OTHER", "other", "ZZ9XY")


async def test_without_the_beps_settings_events_are_live_after_login(start_service) -> None:
    upstream = Upstream()
    await upstream.start()
    try:
        env = upstream.env()
        for name in ("beps_token", "beps_host", "beps_stream_url", "beps_mid"):
            del env[name]
        service = await start_service(**env)
        _, before = await service.call("GET", f"{API}/streaming/status")
        assert before["data"]["beps"]["live"] is False
        assert "login" in before["data"]["beps"]["why_not"]
        await login(service)
        async with open_sse(service, f"{API}/streaming/events") as stream:
            await stream.until(lambda frame: frame.event == "status" and frame.data.get("state") == "connected")
            session = upstream.appsync.current
            assert session is not None and session.token in upstream.appsync.issued  # fetched at login
            assert await upstream.appsync.push({"eventId": "e-9", "eventType": "CXL01", "message": "{}"}) == 1
            frames = await stream.until(lambda frame: frame.event == "beps")
        cancel = frames[-1].data
        assert (cancel["event_type"], cancel["desc"]["upstream_code"], cancel["source"]) == (
            "ORDER_CANCELED",
            "CXL01",
            "beps",
        )
        _, after = await service.call("GET", f"{API}/streaming/status")
        beps = after["data"]["beps"]
        assert beps["live"] is True and beps["why_not"] is None
        assert "security context" in beps["detail"] and session.token not in json.dumps(after)
    finally:
        await upstream.close()


async def wait_for_status(service: RunningService, accept: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Poll GET /streaming/status (real time, bounded) until its beps part is accepted; return that part."""
    async with asyncio.timeout(10):
        while True:
            _, body = await service.call("GET", f"{API}/streaming/status")
            beps: dict[str, Any] = body["data"]["beps"]
            if accept(beps):
                return beps
            await asyncio.sleep(0.02)


async def test_with_beps_down_a_fill_comes_from_the_alert_history_and_once_only_when_beps_is_back(
    start_fidelity: StartFidelity,
) -> None:
    service, upstream = await start_fidelity(beps_fallback_interval="0.1")
    upstream.appsync.refuse(100_000, status=503)  # BEPS down
    await login(service)
    # The first poll of a session only notes the history that is already there.
    down = await wait_for_status(service, lambda beps: beps["fallback"]["polls"] >= 1)
    assert down["live"] is False and "alerts fallback" in down["why_not"]
    assert down["fallback"]["active"] is True

    async with open_sse(service, f"{API}/streaming/events") as stream:
        document = upstream.fidelity.alert_history.add_fill(
            acct=payloads.MARGIN, order="D02PTTQR", symbol="AAPL", qty=10, executed=4, price=190.5
        )
        frames = await stream.until(lambda frame: frame.event == "beps")
        fill = frames[-1].data
        # 4 of 10: the alert states the quantities, so it is a partial fill
        assert (fill["event_type"], fill["category"], fill["source"]) == ("ORDER_PARTIAL_FILL", "order", "alerts")
        assert fill["desc"]["upstream_code"] == "MFCEX"
        assert fill["desc"]["conf_num"] == "D02PTTQR" and fill["desc"]["fill_qty"] == 4
        assert fill["desc"]["price"] == 190.5 and fill["desc"]["acct_num"] == payloads.MARGIN

        upstream.appsync.stop_refusing()  # BEPS is back
        await stream.until(lambda frame: frame.event == "status" and frame.data.get("state") == "connected")
        back = await wait_for_status(service, lambda beps: beps["live"] and not beps["fallback"]["active"])
        polls = back["fallback"]["polls"]
        # BEPS now reports the same fill (its message carrying the ALERT document: ORDER_FILL, as a BEPS event does
        # not state the quantities), then a new one: the first is still recognised and dropped.
        sent = {"eventType": "MFCEX", "message": document}
        assert await upstream.appsync.push({"eventId": "b-1", **sent}) == 1
        assert await upstream.appsync.push({"eventId": "b-2", "eventType": "MFCEX", "message": '{"orderNum": "X1"}'})
        later = await stream.until(lambda frame: frame.event == "beps" and frame.data["desc"].get("event_id") == "b-2")
    fills = [frame.data for frame in frames + later if frame.event == "beps"]
    assert [(f["source"], f["desc"].get("conf_num") or f["desc"].get("event_id")) for f in fills] == [
        ("alerts", "D02PTTQR"),
        ("beps", "b-2"),
    ]
    after = await wait_for_status(service, lambda beps: beps["duplicates_dropped"] == 1)
    assert after["fallback"]["polls"] == polls  # no polling while BEPS is live


async def test_two_consumers_of_one_book_share_one_mdds_virtual_book(start_fidelity: StartFidelity) -> None:
    service, upstream = await start_fidelity()
    await login(service)
    headers = service.auth
    ws = await service.http.ws_connect(service.url("/ws/quotes"), headers=headers)
    try:
        async with open_sse(service, f"{API}/streaming/quotes?symbols=RKLB&depth=true") as stream:
            frames = await stream.until(lambda frame: frame.event == "book")
            book = frames[-1].data
            assert book["symbol"] == "RKLB" and len(book["bids"]) == 25 and len(book["asks"]) == 25
            best_bid, best_ask = book["bids"][0], book["asks"][0]
            assert (best_bid["price"], best_bid["size"], best_bid["venue"]) == (56.6, 100, "XNYS")
            assert best_ask["price"] == 56.73 and best_bid["time"] == "15:00:00.000"

            await ws.send_json({"action": "subscribe", "symbols": ["RKLB"], "depth": True})
            while True:  # the ack, the status, the quote, then the shared book's current state
                frame = json.loads((await ws.receive(timeout=5)).data)
                if frame["type"] == "book":
                    break
            assert frame["bids"][0]["price"] == 56.6
            session = upstream.mdds.current
            assert session is not None
            assert [c["Symbol"] for c in session.commands_named("subscribe_virtualbook")] == ["RKLB"]
            (command,) = session.commands_named("subscribe_virtualbook")
            assert command["IncludeArcaOnly"] is True  # as the app sends it

            # An update carries only the changed level; both consumers see the merged book.
            assert await upstream.mdds.publish_book("RKLB", {"462": "56.6500", "512": "700"}) == 1
            frames = await stream.until(lambda f: f.event == "book" and f.data["bids"][0]["price"] == 56.65)
            assert frames[-1].data["bids"][0]["size"] == 700 and len(frames[-1].data["bids"]) == 25
            while True:
                frame = json.loads((await ws.receive(timeout=5)).data)
                if frame["type"] == "book" and frame["bids"][0]["price"] == 56.65:
                    break
    finally:
        await ws.close()


async def test_a_rest_quote_is_one_short_mdds_snapshot_naming_unknown_symbols(start_fidelity: StartFidelity) -> None:
    service, upstream = await start_fidelity()
    upstream.mdds.unknown.add("ZZZZQ")
    await login(service)

    status, body = await service.call("GET", f"{API}/market-data/quotes", params={"symbols": "rklb,ZZZZQ"})
    assert status == 200, body
    (quote,) = body["data"]["quotes"]
    assert (quote["symbol"], quote["last"], quote["bid"], quote["ask"]) == ("RKLB", 57.38, 56.6, 56.73)
    assert body["data"]["unknown"] == ["ZZZZQ"] and body["data"]["streamed"] == []
    # One MDDS connection asked for both symbols once, and it is closed again: nothing stays subscribed.
    (session,) = upstream.mdds.sessions
    assert [command["Symbol"] for command in session.commands_named("subscribe")] == ["RKLB,ZZZZQ"]
    await wait_until(lambda: session.closed)
