"""The quote hub on the real paper feed: ticking quotes, a dropped upstream, logout and login."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from ftdesk.brokers.paper.broker import PaperBroker
from ftdesk.brokers.paper.config import PaperConfig
from ftdesk.brokers.paper.feeds import PaperQuoteFeed
from ftdesk.domain.errors import AuthRequired
from ftdesk.domain.market import Quote
from ftdesk.domain.session import Credentials
from ftdesk.streaming.models import HubState
from tests.fakes.clock import ManualClock
from tests.fakes.paper_market import ScriptedMarket
from tests.unit.streaming.conftest import MakeRig
from tests.unit.streaming.helpers import BACKOFF, errors, prices, settle, take

TICK = 1.0


class PaperDesk:
    """A paper quote feed over a market the test moves, with a session the test switches."""

    def __init__(self) -> None:
        self.clock = ManualClock()
        self.market = ScriptedMarket(self.clock)
        for i, symbol in enumerate(["AAPL", "MSFT", "NVDA", "SPY"]):
            self.market.add_equity(symbol, 100.0 + i)
        self.logged_in = True
        self.feed = PaperQuoteFeed(self.market, self.clock, TICK, self.check_session)

    def check_session(self) -> None:
        if not self.logged_in:
            raise AuthRequired("Not logged in: log in to the brokerage first")


async def test_paper_quotes_fan_out_and_a_dropped_upstream_is_resubscribed(make_rig: MakeRig) -> None:
    desk = PaperDesk()
    rig = await make_rig(feed=desk.feed, clock=desk.clock)
    await rig.login()
    sse, ws = rig.hub.open_consumer("sse"), rig.hub.open_consumer("ws")
    sse.acquire(["AAPL", "MSFT"])
    ws.acquire(["MSFT", "NOPE"])
    await settle()
    assert prices(await take(sse)) == [("AAPL", 100.0), ("MSFT", 101.0)]
    ws_first = await take(ws)
    assert prices(ws_first) == [("MSFT", 101.0)] and [s for s, _ in errors(ws_first)] == ["NOPE"]

    desk.market.set_price("MSFT", 105.0)
    await rig.advance(TICK)
    assert prices(await take(sse)) == prices(await take(ws)) == [("MSFT", 105.0)]

    desk.feed.drop_connections()
    await settle()
    assert desk.feed.open_connection_count == 0 and rig.state() is HubState.RECONNECTING
    desk.market.set_price("AAPL", 99.0)
    await rig.advance(BACKOFF[0])
    assert desk.feed.open_connection_count == 1 and rig.state() is HubState.CONNECTED
    assert sorted(rig.hub.upstream_symbols) == ["AAPL", "MSFT"]
    # The paper feed quotes every fresh subscription at once: consumers catch up after the outage.
    assert prices(await take(sse)) == [("AAPL", 99.0), ("MSFT", 105.0)]


async def test_logout_closes_the_paper_connection_and_login_brings_the_symbols_back(make_rig: MakeRig) -> None:
    desk = PaperDesk()
    rig = await make_rig(feed=desk.feed, clock=desk.clock)
    await rig.login()
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["AAPL"])
    await settle()
    await take(consumer)
    assert desk.feed.open_connection_count == 1

    desk.logged_in = False
    await rig.logout()
    assert desk.feed.open_connection_count == 0
    assert rig.state() is HubState.WAITING_FOR_SESSION
    consumer.acquire(["SPY"])  # queued while logged out
    desk.market.set_price("AAPL", 90.0)
    await rig.advance(60, step=1)
    assert await take(consumer) == []  # nothing flows without a session

    desk.logged_in = True
    await rig.login()
    assert desk.feed.open_connection_count == 1
    assert rig.hub.upstream_symbols == ["AAPL", "SPY"]
    assert prices(await take(consumer)) == [("AAPL", 90.0), ("SPY", 103.0)]


async def test_the_hub_follows_a_paper_broker_session(make_rig: MakeRig, tmp_path: Path) -> None:
    clock = ManualClock()
    broker = PaperBroker(PaperConfig(db_path=tmp_path / "w.sqlite3", seed=11, tick_interval=TICK), clock)
    await broker.start()
    try:
        rig = await make_rig(feed=broker.quote_feed, clock=clock)
        consumer = rig.hub.open_consumer("shared")
        consumer.acquire(["SPY", "AAPL"])
        await rig.advance(5)
        assert rig.state() is HubState.WAITING_FOR_SESSION

        await broker.session.login(Credentials(username="trader", password=SecretStr("pw")))
        await rig.login()
        first = await take(consumer)
        assert {q.symbol for q in first if isinstance(q, Quote)} == {"SPY", "AAPL"}
        spy = next(q for q in first if isinstance(q, Quote) and q.symbol == "SPY")
        assert spy.last == broker.market.quote("SPY").last

        await broker.session.logout()  # the broker drops its connections itself, then the session listener fires
        await rig.logout()
        await rig.advance(10)
        assert rig.state() is HubState.WAITING_FOR_SESSION
        assert broker.quote_feed.open_connection_count == 0
        assert rig.hub.status().reconnect_count == 0  # a logout is no failure to retry
    finally:
        await broker.close()
